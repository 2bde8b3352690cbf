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
    let mut waited = 0;
    let registry = loop {
        if let Some(r) = crate::components::session::registry() {
            break r;
        }
        if waited >= REGISTRY_WAIT_MS {
            return Err("no Registry to read the visitor key against".to_owned());
        }
        crate::web::sleep_ms(100).await;
        waited += 100;
    };
    let key = crate::custody::demo::read_visitor(&body, &registry)
        .map_err(|e| format!("the visitor key was refused: {e:?}"))?;
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
