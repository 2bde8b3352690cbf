//! One Registry shared by the authority's verify stage, the binding's HELLO and the development
//! enrolment (issue 13): a key enrolled from a browser (`POST /api/enrol`) verifies at once,
//! in a human session's HELLO and in the Commands it signs, without a restart. Readers take a
//! cheap snapshot (`current`) per batch or per HELLO; the writer swaps in a whole Registry that
//! has already passed the core's Organization-wide checks (§6.4), so a reader never sees a
//! half-updated one.

use std::sync::{Arc, RwLock};
use wasm_core::crypto::registry::ValidatedRegistry;

#[derive(Clone, Debug)]
pub struct LiveRegistry {
    current: Arc<RwLock<Arc<ValidatedRegistry>>>,
    /// Bumped by every [`LiveRegistry::replace`]: open sessions look at their key again (a key
    /// revoked or ended now closes the socket it holds, issue 26).
    changed: Arc<tokio::sync::watch::Sender<u64>>,
}

impl LiveRegistry {
    pub fn new(registry: ValidatedRegistry) -> LiveRegistry {
        LiveRegistry {
            current: Arc::new(RwLock::new(Arc::new(registry))),
            changed: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }

    /// The Registry as of now.
    pub fn current(&self) -> Arc<ValidatedRegistry> {
        match self.current.read() {
            Ok(r) => Arc::clone(&r),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Replaces the Registry (already validated as a whole).
    pub fn replace(&self, registry: ValidatedRegistry) {
        let next = Arc::new(registry);
        match self.current.write() {
            Ok(mut w) => *w = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Told after each [`LiveRegistry::replace`].
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}
