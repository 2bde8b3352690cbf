//! The browser side of the socket client: a `web_sys::WebSocket` transport on
//! `/ws?principal=human` of the page's own origin (binding.md "Humans") — or, when the page
//! runs the authority itself (the static demo, [`crate::web::page_authority`]), the page's
//! in-page socket with the same members, which carries the same frames over the authority
//! Worker's postMessage (docs/static-demo.md) — the timer that feeds
//! [`Input::Tick`] at the machine's next deadline, and the glue that hands notices to the UI.
//! Each socket's callbacks are detached when the machine closes it, so a stale socket can never
//! feed the machine.
//!
//! A large backlog (more than [`crate::replay::POOL_THRESHOLD`] frames in one resume) is
//! verified on the Worker pool ([`crate::pool`]): frames are held in [`Backlog`], cut into
//! chunks (up to [`crate::replay::CHUNK`], or when the socket is idle: a zero-delay timeout),
//! verified by the workers, and fed to the machine unchanged, in arrival order, each with its
//! arrival time ([`Input::Arrived`]) and a [`PreVerified`] check over its chunk's verdicts.
//! While anything is held, every later socket input queues behind it and the machine's timer
//! ticks wait (the quiet rule counts from each frame's arrival). The threshold and chunk size can be lowered for
//! tests with the `localStorage` keys `missionweave.console.backlogThreshold` and
//! `missionweave.console.backlogChunk` (they change only which thread verifies, never what).

use super::backlog::{Backlog, Held, PreVerified, Route};
use super::machine::{Identity, Input, Output};
use super::{ChallengeSigner, Driver, NoSigner, RegistryCheck, Transport};
use crate::pool::{FramesAnswer, Pool, Replies};
use crate::web::{now_ms, random_bytes, window};
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use wasm_bindgen::JsCast;
use wasm_bindgen::JsValue;
use wasm_bindgen::prelude::{Closure, wasm_bindgen};
use wasm_core::crypto::ed25519::Signer;

#[wasm_bindgen]
extern "C" {
    /// What the transport uses of a socket, by member name: the browser's `WebSocket`, or the
    /// static demo page's in-page socket (`send`, `close`, `onopen`, `onmessage` given `{data}`,
    /// `onclose`). The machine, its checks and the views see no difference.
    type Socket;
    #[wasm_bindgen(method, catch)]
    fn send(this: &Socket, text: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch)]
    fn close(this: &Socket) -> Result<(), JsValue>;
    #[wasm_bindgen(method, setter)]
    fn set_onopen(this: &Socket, f: Option<&js_sys::Function>);
    #[wasm_bindgen(method, setter)]
    fn set_onmessage(this: &Socket, f: Option<&js_sys::Function>);
    #[wasm_bindgen(method, setter)]
    fn set_onclose(this: &Socket, f: Option<&js_sys::Function>);
}

/// A new socket to the console's authority: the page's own (`socket()`) when the page runs it,
/// else a WebSocket on the origin's `/ws`.
fn new_socket() -> Option<Socket> {
    if let Some(page) = crate::web::page_authority() {
        let socket: js_sys::Function = js_sys::Reflect::get(&page, &JsValue::from_str("socket"))
            .ok()?
            .dyn_into()
            .ok()?;
        let s = socket.call0(&page).ok()?;
        return s.is_object().then(|| s.unchecked_into());
    }
    let ws = web_sys::WebSocket::new(&url()?).ok()?;
    Some(ws.unchecked_into())
}

type Notify = Rc<dyn Fn(Vec<Output>)>;
/// Told how many socket inputs are held for the pool (the progress bar counts them).
type OnHeld = Rc<dyn Fn(usize)>;

/// The Worker pool for the socket's backlog.
enum PoolState {
    Off,
    Starting,
    Ready(Pool),
    /// It could not start: frames are fed as without a pool from now on.
    Failed,
}

struct Inner {
    driver: Driver<WsTransport>,
    check: RegistryCheck,
    signer: Option<Arc<Signer>>,
    notify: Notify,
    on_held: OnHeld,
    timer: Option<i32>,
    backlog: Backlog,
    pool: PoolState,
    /// The zero-delay timeout that cuts held frames into a chunk when the socket is idle.
    idle: Option<i32>,
}

/// The socket transport. `me` points back at the client so callbacks can feed it.
struct WsTransport {
    ws: Option<Socket>,
    me: Weak<RefCell<Inner>>,
    /// Bumped on every open and close: an input held from an older socket is never fed.
    epoch: u64,
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
        self.epoch += 1;
        let me = self.me.clone();
        let Some(ws) = new_socket() else {
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
        let onmessage = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
            if let Some(text) = js_sys::Reflect::get(&e, &JsValue::from_str("data"))
                .ok()
                .and_then(|d| d.as_string())
            {
                arrive(&m, Some(text));
            }
        });
        let m = self.me.clone();
        let onclose = Closure::<dyn FnMut()>::new(move || arrive(&m, None));
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
            let _ = ws.send(text);
        }
    }

    fn close(&mut self) {
        self.epoch += 1;
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
        if input == Input::Tick && inner.backlog.pending() {
            // Held frames come first; the timer is re-armed once they are fed.
            return;
        }
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
        settle_pool(&mut inner);
        (notices, inner.notify.clone())
    };
    if !notices.is_empty() {
        notify(notices);
    }
}

/// A frame (or the socket's close, `None`) arrived: fed at once, or held for the pool.
fn arrive(me: &Weak<RefCell<Inner>>, text: Option<String>) {
    let Some(rc) = me.upgrade() else { return };
    let (route, drained) = {
        let Ok(mut inner) = rc.try_borrow_mut() else {
            // Socket callbacks never run inside the client's own call; kept total.
            schedule_feed(me.clone(), text.map_or(Input::Closed, Input::Text));
            return;
        };
        let resuming = inner.driver.machine.is_resuming();
        let epoch = inner.driver.transport.epoch;
        let route = inner.backlog.arrive(resuming, text, now_ms(), epoch);
        let drained = (route == Route::Held).then(|| {
            hold(&mut inner, me);
            Drained::take(&mut inner, me)
        });
        (route, drained)
    };
    match (route, drained) {
        (Route::Feed(h), _) => feed(me, h.text.map_or(Input::Closed, Input::Text)),
        (Route::Held, Some(drained)) => drained.deliver(),
        (Route::Held, None) => {}
    }
}

/// A frame was held: the idle cut is armed, and the pool started or given the cut chunks.
fn hold(inner: &mut Inner, me: &Weak<RefCell<Inner>>) {
    if inner.idle.is_none()
        && let Some(w) = window()
    {
        let m = me.clone();
        let cb = Closure::once_into_js(move || on_idle(&m));
        inner.idle = w
            .set_timeout_with_callback_and_timeout_and_arguments_0(cb.unchecked_ref(), 0)
            .ok();
    }
    match inner.pool {
        PoolState::Off => {
            inner.pool = PoolState::Starting;
            start_pool(me.clone());
        }
        PoolState::Ready(_) => dispatch(inner),
        PoolState::Starting => {}
        // Not held after a failed start (`Backlog::give_up`); kept total.
        PoolState::Failed => inner.backlog.give_up(),
    }
}

/// The socket has been idle since frames were held: they go as a chunk now.
fn on_idle(me: &Weak<RefCell<Inner>>) {
    let Some(rc) = me.upgrade() else { return };
    let (notices, notify) = {
        let Ok(mut inner) = rc.try_borrow_mut() else {
            return;
        };
        inner.idle = None;
        inner.backlog.idle();
        dispatch(&mut inner);
        (drain(&mut inner, me), inner.notify.clone())
    };
    if !notices.is_empty() {
        notify(notices);
    }
}

/// Hands every cut chunk to a worker; a chunk no worker takes is checked on the page.
fn dispatch(inner: &mut Inner) {
    let Inner { backlog, pool, .. } = inner;
    let PoolState::Ready(pool) = pool else {
        return;
    };
    let mut refused = Vec::new();
    for (n, texts) in backlog.unsent() {
        if !pool.send_frames(n, &texts) {
            refused.push(n);
        }
    }
    refused.extend(pool.orphans());
    for n in refused {
        backlog.check_here(n);
    }
}

/// Starts the Worker pool with the page's Registry; its replies are read by [`receive`].
fn start_pool(me: Weak<RefCell<Inner>>) {
    leptos::task::spawn_local(async move {
        let started = match (
            crate::pool::worker_url(),
            crate::components::registry::last_fixture(),
        ) {
            (Some(url), Some(registry)) => {
                Pool::start(&url, crate::pool::default_size(), &registry).await
            }
            _ => Err("no worker script or no Registry".into()),
        };
        let Some(rc) = me.upgrade() else { return };
        let drained = {
            let Ok(mut inner) = rc.try_borrow_mut() else {
                return;
            };
            if !matches!(inner.pool, PoolState::Starting) {
                return; // stopped meanwhile
            }
            match started {
                Ok(pool) => {
                    web_sys::console::info_1(
                        &format!("socket backlog: {} Web Workers verify", pool.alive()).into(),
                    );
                    let replies = pool.replies();
                    inner.pool = PoolState::Ready(pool);
                    dispatch(&mut inner);
                    leptos::task::spawn_local(receive(me.clone(), replies));
                }
                Err(e) => {
                    web_sys::console::warn_1(
                        &format!("socket backlog: no Worker pool ({e}); verified on the page")
                            .into(),
                    );
                    inner.pool = PoolState::Failed;
                    inner.backlog.give_up();
                }
            }
            Drained::take(&mut inner, &me)
        };
        drained.deliver();
    });
}

/// Reads the pool's replies until the pool is dropped.
async fn receive(me: Weak<RefCell<Inner>>, replies: Replies) {
    loop {
        let (i, reply) = replies.next().await;
        if i == usize::MAX {
            return; // this pool was dropped
        }
        let Some(rc) = me.upgrade() else { return };
        let drained = {
            let Ok(mut inner) = rc.try_borrow_mut() else {
                // Never inside the client's own call (a promise continuation); kept total.
                continue;
            };
            let Inner { backlog, pool, .. } = &mut *inner;
            let PoolState::Ready(pool) = pool else {
                return;
            };
            match pool.frames_reply(i, reply) {
                FramesAnswer::Chunk(n, verdicts) => {
                    if backlog.arrived(n, verdicts).is_err() {
                        backlog.check_here(n);
                    }
                    crate::web::set_root_attr("data-backlog-pooled", &backlog.pooled.to_string());
                }
                FramesAnswer::Lost(lost) => {
                    for n in lost {
                        backlog.check_here(n);
                    }
                }
                FramesAnswer::Nothing => {}
            }
            if pool.alive() == 0 {
                inner.pool = PoolState::Failed;
                inner.backlog.give_up();
            }
            Drained::take(&mut inner, &me)
        };
        drained.deliver();
    }
}

/// Feeds every answered chunk in arrival order: each held input on its socket with its arrival
/// time, Events checked by the chunk's [`PreVerified`]. A socket the machine closed meanwhile
/// drops the rest (the binding replays it from the last contiguous position).
/// What a held-frames step leaves to do once the client is no longer borrowed: tell the page
/// how many inputs are held and hand over the machine's outputs (callbacks may call back into
/// the client, so they never run inside the borrow).
struct Drained {
    notices: Vec<Output>,
    notify: Notify,
    held: usize,
    on_held: OnHeld,
}

impl Drained {
    /// Drains the answered chunks into the machine ([`drain`]) and takes what to tell.
    fn take(inner: &mut Inner, me: &Weak<RefCell<Inner>>) -> Drained {
        let notices = drain(inner, me);
        Drained {
            notices,
            notify: inner.notify.clone(),
            held: inner.backlog.held(),
            on_held: inner.on_held.clone(),
        }
    }

    /// Runs the callbacks (outside the borrow).
    fn deliver(self) {
        (self.on_held)(self.held);
        if !self.notices.is_empty() {
            (self.notify)(self.notices);
        }
    }
}

fn drain(inner: &mut Inner, me: &Weak<RefCell<Inner>>) -> Vec<Output> {
    let mut notices = Vec::new();
    while let Some((items, verdicts)) = inner.backlog.take_ready() {
        let Inner {
            driver,
            check,
            signer,
            backlog,
            ..
        } = &mut *inner;
        let signer: &dyn ChallengeSigner = match signer.as_deref() {
            Some(s) => s,
            None => &NoSigner,
        };
        let texts: Vec<&[u8]> = items.iter().map(Held::bytes).collect();
        let pre = PreVerified::from_frames(&texts, &verdicts, &*check);
        let mut stale = false;
        for h in items {
            if h.epoch != driver.transport.epoch {
                stale = true;
                continue;
            }
            let input = match h.text {
                Some(text) => Input::Arrived {
                    text,
                    at_ms: h.at_ms,
                },
                None => Input::Closed,
            };
            notices.extend(driver.handle(now_ms(), input, &pre, signer));
        }
        if stale {
            backlog.clear();
        }
    }
    rearm(inner, me);
    settle_pool(inner);
    notices
}

/// Stops the pool once nothing is held and the machine no longer replays.
fn settle_pool(inner: &mut Inner) {
    if matches!(inner.pool, PoolState::Ready(_))
        && !inner.backlog.pending()
        && !inner.driver.machine.is_resuming()
    {
        inner.pool = PoolState::Off;
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

/// A test override from `localStorage` (module documentation).
fn setting(key: &str, default: usize) -> usize {
    crate::web::local_get(key)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

impl Client {
    /// `notify` gets the machine's notices; `on_held` the number of socket inputs held for the
    /// Worker pool (the progress bar counts them as not yet verified).
    pub fn new(
        notify: impl Fn(Vec<Output>) + 'static,
        on_held: impl Fn(usize) + 'static,
    ) -> Client {
        let seed = random_bytes::<8>().map(u64::from_le_bytes).unwrap_or(1);
        let backlog = Backlog::new(
            setting(
                "missionweave.console.backlogThreshold",
                crate::replay::POOL_THRESHOLD,
            ),
            setting("missionweave.console.backlogChunk", crate::replay::CHUNK),
        );
        let inner = Rc::new_cyclic(|me: &Weak<RefCell<Inner>>| {
            RefCell::new(Inner {
                driver: Driver::new(
                    WsTransport {
                        ws: None,
                        me: me.clone(),
                        epoch: 0,
                    },
                    seed,
                ),
                check: RegistryCheck::default(),
                signer: None,
                notify: Rc::new(notify),
                on_held: Rc::new(on_held),
                timer: None,
                backlog,
                pool: PoolState::Off,
                idle: None,
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
            // The next pool starts with this Registry; a failed start may be tried again.
            if matches!(i.pool, PoolState::Failed) {
                i.pool = PoolState::Off;
                i.backlog.allow();
            }
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
            // Nothing held is fed after a stop; the workers are ended.
            i.backlog.clear();
            if !matches!(i.pool, PoolState::Failed) {
                i.pool = PoolState::Off;
            }
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
