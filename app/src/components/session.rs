//! The page's one socket client (browser only), created on first use; its notices update the
//! console state.

use crate::state::Console;
use std::sync::Arc;
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::registry::ValidatedRegistry;

#[cfg(target_arch = "wasm32")]
mod imp {
    use crate::socket::browser::Client;
    use std::cell::RefCell;

    thread_local! {
        pub static CLIENT: RefCell<Option<Client>> = const { RefCell::new(None) };
        pub static REGISTRY: RefCell<Option<wasm_core::crypto::registry::ValidatedRegistry>> =
            const { RefCell::new(None) };
        /// Groups opened before the client existed (watched as soon as it does).
        pub static WATCHED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }
}

/// Connects as the unlocked key's Principal.
pub fn start(console: Console, principal_id: String, key_id: String, signer: Arc<Signer>) {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::socket::RegistryCheck;
        use crate::socket::browser::Client;
        use crate::socket::machine::Identity;
        let client = imp::CLIENT.with(|c| {
            c.borrow_mut()
                .get_or_insert_with(|| Client::new(move |n| console.apply(n)))
                .clone()
        });
        for g in imp::WATCHED.with(|w| w.borrow().clone()) {
            client.watch(g);
        }
        let registry = imp::REGISTRY.with(|r| r.borrow().clone());
        client.set_registry(RegistryCheck { registry });
        client.start(
            Identity {
                principal_id,
                key_id,
            },
            signer,
        );
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (console, principal_id, key_id, signer);
}

pub fn stop() {
    #[cfg(target_arch = "wasm32")]
    imp::CLIENT.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.stop();
        }
    });
}

/// Follows a Group (e.g. the Mission view's), now or as soon as a session starts.
pub fn watch(group_id: String) {
    #[cfg(target_arch = "wasm32")]
    {
        imp::WATCHED.with(|w| {
            let mut w = w.borrow_mut();
            if !w.contains(&group_id) {
                w.push(group_id.clone());
            }
        });
        imp::CLIENT.with(|c| {
            if let Some(c) = c.borrow().as_ref() {
                c.watch(group_id);
            }
        });
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = group_id;
}

/// Keeps the Registry for verification (also for a client created later).
pub fn set_registry(registry: ValidatedRegistry) {
    #[cfg(target_arch = "wasm32")]
    {
        imp::REGISTRY.with(|r| *r.borrow_mut() = Some(registry.clone()));
        imp::CLIENT.with(|c| {
            if let Some(c) = c.borrow().as_ref() {
                c.set_registry(crate::socket::RegistryCheck {
                    registry: Some(registry),
                });
            }
        });
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = registry;
}
