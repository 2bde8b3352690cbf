//! The browser side of the socket client: a `web_sys::WebSocket` transport on
//! `/ws?principal=human` of the page's own origin (binding.md "Humans"), the timer that feeds
//! [`Input::Tick`] at the machine's next deadline, and the glue that hands notices to the UI.
//! Each socket's callbacks are detached when the machine closes it, so a stale socket can never
//! feed the machine.

use super::machine::{Identity, Input, Output};
use super::{ChallengeSigner, Driver, NoSigner, RegistryCheck, Transport};
use crate::web::{now_ms, random_bytes, window};
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use wasm_core::crypto::ed25519::Signer;

type Notify = Rc<dyn Fn(Vec<Output>)>;

struct Inner {
    driver: Driver<WsTransport>,
    check: RegistryCheck,
    signer: Option<Arc<Signer>>,
    notify: Notify,
    timer: Option<i32>,
}

/// The WebSocket transport. `me` points back at the client so callbacks can feed it.
struct WsTransport {
    ws: Option<web_sys::WebSocket>,
    me: Weak<RefCell<Inner>>,
}

fn url() -> Option<String> {
    let loc = window()?.location();
    let scheme = if loc.protocol().ok()? == "https:" {
        "wss"
    } else {
        "ws"
    };
    Some(format!(
        "{scheme}://{}/ws?principal=human",
        loc.host().ok()?
    ))
}

impl Transport for WsTransport {
    fn open(&mut self) {
        let me = self.me.clone();
        let ws = url().and_then(|u| web_sys::WebSocket::new(&u).ok());
        let Some(ws) = ws else {
            // Could not even start: treated as a failed connection (backoff).
            schedule_feed(me, Input::Closed);
            return;
        };
        let m = self.me.clone();
        let onopen = Closure::<dyn FnMut()>::new(move || {
            let nonce = random_bytes::<16>().unwrap_or([7; 16]);
            feed(&m, Input::Opened { nonce });
        });
        let m = self.me.clone();
        let onmessage =
            Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
                if let Some(text) = e.data().as_string() {
                    feed(&m, Input::Text(text));
                }
            });
        let m = self.me.clone();
        let onclose = Closure::<dyn FnMut()>::new(move || feed(&m, Input::Closed));
        ws.set_onopen(Some(onopen.as_ref().unchecked_ref()));
        ws.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        ws.set_onclose(Some(onclose.as_ref().unchecked_ref()));
        // The closures live as long as the page: a handful per connection attempt.
        onopen.forget();
        onmessage.forget();
        onclose.forget();
        self.ws = Some(ws);
    }

    fn send(&mut self, text: &str) {
        if let Some(ws) = &self.ws {
            let _ = ws.send_with_str(text);
        }
    }

    fn close(&mut self) {
        if let Some(ws) = self.ws.take() {
            ws.set_onopen(None);
            ws.set_onmessage(None);
            ws.set_onclose(None);
            let _ = ws.close();
        }
    }
}

/// Feeds `input` later (never re-entering the client from inside its own call).
fn schedule_feed(me: Weak<RefCell<Inner>>, input: Input) {
    let cb = Closure::once_into_js(move || feed(&me, input));
    if let Some(w) = window() {
        let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(cb.unchecked_ref(), 0);
    }
}

fn feed(me: &Weak<RefCell<Inner>>, input: Input) {
    let Some(rc) = me.upgrade() else { return };
    let (notices, notify) = {
        let Ok(mut inner) = rc.try_borrow_mut() else {
            schedule_feed(me.clone(), input);
            return;
        };
        let Inner {
            driver,
            check,
            signer,
            ..
        } = &mut *inner;
        let signer: &dyn ChallengeSigner = match signer.as_deref() {
            Some(s) => s,
            None => &NoSigner,
        };
        let notices = driver.handle(now_ms(), input, check, signer);
        rearm(&mut inner, me);
        (notices, inner.notify.clone())
    };
    if !notices.is_empty() {
        notify(notices);
    }
}

fn rearm(inner: &mut Inner, me: &Weak<RefCell<Inner>>) {
    let Some(w) = window() else { return };
    if let Some(t) = inner.timer.take() {
        w.clear_timeout_with_handle(t);
    }
    if let Some(at) = inner.driver.machine.next_deadline() {
        let delay = at.saturating_sub(now_ms()).min(i32::MAX as u64) as i32;
        let me = me.clone();
        let cb = Closure::once_into_js(move || feed(&me, Input::Tick));
        inner.timer = w
            .set_timeout_with_callback_and_timeout_and_arguments_0(cb.unchecked_ref(), delay)
            .ok();
    }
}

/// The console's socket client (one per page).
#[derive(Clone)]
pub struct Client {
    inner: Rc<RefCell<Inner>>,
}

impl Client {
    pub fn new(notify: impl Fn(Vec<Output>) + 'static) -> Client {
        let seed = random_bytes::<8>().map(u64::from_le_bytes).unwrap_or(1);
        let inner = Rc::new_cyclic(|me: &Weak<RefCell<Inner>>| {
            RefCell::new(Inner {
                driver: Driver::new(
                    WsTransport {
                        ws: None,
                        me: me.clone(),
                    },
                    seed,
                ),
                check: RegistryCheck::default(),
                signer: None,
                notify: Rc::new(notify),
                timer: None,
            })
        });
        Client { inner }
    }

    fn feed(&self, input: Input) {
        feed(&Rc::downgrade(&self.inner), input);
    }

    /// Sets the Registry every Event is verified against.
    pub fn set_registry(&self, check: RegistryCheck) {
        if let Ok(mut i) = self.inner.try_borrow_mut() {
            i.check = check;
        }
    }

    /// Connects as `identity`, answering the challenge with `signer`.
    pub fn start(&self, identity: Identity, signer: Arc<Signer>) {
        if let Ok(mut i) = self.inner.try_borrow_mut() {
            i.signer = Some(signer);
        }
        self.feed(Input::Start(identity));
    }

    pub fn stop(&self) {
        if let Ok(mut i) = self.inner.try_borrow_mut() {
            i.signer = None;
        }
        self.feed(Input::Stop);
    }

    pub fn watch(&self, group_id: String) {
        self.feed(Input::Watch(group_id));
    }

    /// Whether a `COMMAND` would go out now (the session is live).
    pub fn is_live(&self) -> bool {
        self.inner
            .try_borrow()
            .is_ok_and(|i| i.driver.machine.is_live())
    }

    /// Sends a signed Command (kept and re-sent unchanged after a reconnect until its outcome).
    pub fn command(&self, action_id: String, text: String) {
        self.feed(Input::Command { action_id, text });
    }

    /// Stops tracking a Command settled over HTTP.
    pub fn forget(&self, action_id: String) {
        self.feed(Input::Forget(action_id));
    }
}
