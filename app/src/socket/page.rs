//! The page's one socket client and what it needs before it exists (the Registry, the Groups
//! to follow), kept per page (browser only). `components::session` drives it; anything may stop
//! it.

#[cfg(target_arch = "wasm32")]
mod cells {
    use crate::socket::browser::Client;
    use std::cell::RefCell;

    thread_local! {
        pub static CLIENT: RefCell<Option<Client>> = const { RefCell::new(None) };
        pub static REGISTRY: RefCell<Option<wasm_core::crypto::registry::ValidatedRegistry>> =
            const { RefCell::new(None) };
        /// Groups opened before the client existed (watched as soon as it does).
        pub static WATCHED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
        /// Bumped by every session start: an earlier session's Groups poll sees it and ends.
        pub static POLL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
}
#[cfg(target_arch = "wasm32")]
pub(crate) use cells::*;

/// Stops the page's session, if there is one.
pub fn stop() {
    #[cfg(target_arch = "wasm32")]
    CLIENT.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.stop();
        }
    });
}
