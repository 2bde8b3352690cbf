//! The static demo read before anyone signs in (docs/static-demo.md, "Visitor view"; issue 30):
//! with no key stored, the console asks the page's authority for its visitor key (`GET
//! /api/demo/visitor`), a key of the demo's human that the Organization's Registry does not
//! bind, and opens a read-only session with it (HELLO, then `SUBSCRIBE` to the Groups
//! `/api/groups/{principal}` lists, as any session). The board fills and the Approvals view
//! lists each decision awaiting the human, each asking to sign in: the node refuses any
//! `COMMAND` or `ACK` on that session (`AUTH_FORBIDDEN`), and no `Signer` of the console holds
//! the key (`Console::signer` stays empty, so nothing is ever signed with it).
//!
//! This code runs from a split point of its own (`routes::lazy`, chunk `split_visitor`): a
//! server's first view does not carry it.

use crate::state::Console;

/// Opens the visitor's read-only session in the background, unless someone signs in first.
pub fn start(console: Console) {
    #[cfg(target_arch = "wasm32")]
    leptos::task::spawn_local(async move {
        if let Err(e) = open(console).await {
            web_sys::console::warn_1(&format!("the demo's visitor session: {e}").into());
        }
    });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = console;
}

/// How long the visitor waits for the Registry (fetched at start-up by `app.rs`) before giving
/// up: the key is read against it.
#[cfg(target_arch = "wasm32")]
const REGISTRY_WAIT_MS: i32 = 30_000;

#[cfg(target_arch = "wasm32")]
async fn open(console: Console) -> Result<(), String> {
    use crate::state::KeyState;
    use leptos::prelude::{GetUntracked, Set};
    let body = crate::web::get_bytes("/api/demo/visitor").await?;
    let registry = registry_settled(console)
        .await
        .ok_or_else(|| "no Registry to read the visitor key against".to_owned())?;
    let key = crate::custody::demo::read_visitor(&body, &registry).map_err(|e| {
        // Told to the person too (the header, `components::header::visitor_refused`).
        console.visitor_refused.set(Some(e));
        format!("the visitor key was refused: {e:?}")
    })?;
    // Someone signed in meanwhile (the demo key): their session stays, no visitor's opens.
    if console.key.get_untracked() != KeyState::None {
        return Ok(());
    }
    let signer = std::sync::Arc::new(wasm_core::crypto::ed25519::Signer::from_seed(&key.seed));
    drop(key.seed);
    console.key.set(KeyState::Visiting {
        principal_id: key.principal_id.clone(),
        key_id: key.key_id.clone(),
    });
    crate::components::session::start(console, key.principal_id, key.key_id, signer);
    Ok(())
}

/// The Registry the key is read against, as soon as the console's `registry` signal leaves
/// `Loading` (`app.rs` keeps the Registry for `session::registry` before it sets the signal),
/// or `None` if it is unavailable or has not come within [`REGISTRY_WAIT_MS`]. An effect on the
/// signal resolves one promise, a single timeout the other; whichever settles first ends the
/// wait, and both the effect and the timeout are cleared then.
#[cfg(target_arch = "wasm32")]
async fn registry_settled(
    console: Console,
) -> Option<wasm_core::crypto::registry::ValidatedRegistry> {
    use crate::state::RegistryState;
    use leptos::prelude::{Dispose, Effect, With};
    use wasm_bindgen::JsValue;
    let mut effect = None;
    let settled = js_sys::Promise::new(&mut |resolve, _| {
        effect = Some(Effect::new(move |_| {
            if console
                .registry
                .with(|r| !matches!(r, RegistryState::Loading))
            {
                let _ = resolve.call0(&JsValue::NULL);
            }
        }));
    });
    let window = web_sys::window();
    let mut timeout = None;
    let bound = js_sys::Promise::new(&mut |resolve, _| {
        timeout = window.as_ref().and_then(|w| {
            w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, REGISTRY_WAIT_MS)
                .ok()
        });
    });
    let _ = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::race(&js_sys::Array::of2(
        &settled, &bound,
    )))
    .await;
    if let Some(e) = effect {
        e.dispose();
    }
    if let (Some(w), Some(t)) = (window, timeout) {
        w.clear_timeout_with_handle(t);
    }
    crate::components::session::registry()
}
