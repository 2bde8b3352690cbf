//! One Registry shared by the authority's verify stage, the binding's HELLO and the development
//! enrolment (issue 13): a key enrolled from a browser (`POST /api/enrol`) verifies at once,
//! in a human session's HELLO and in the Commands it signs, without a restart. Readers take a
//! cheap snapshot (`current`) per batch or per HELLO; the writer swaps in a whole Registry that
//! has already passed the core's Organization-wide checks (§6.4), so a reader never sees a
//! half-updated one.

use std::sync::{Arc, RwLock};
use wasm_core::crypto::registry::ValidatedRegistry;

#[derive(Clone, Debug)]
pub struct LiveRegistry(Arc<RwLock<Arc<ValidatedRegistry>>>);

impl LiveRegistry {
    pub fn new(registry: ValidatedRegistry) -> LiveRegistry {
        LiveRegistry(Arc::new(RwLock::new(Arc::new(registry))))
    }

    /// The Registry as of now.
    pub fn current(&self) -> Arc<ValidatedRegistry> {
        match self.0.read() {
            Ok(r) => Arc::clone(&r),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Replaces the Registry (already validated as a whole).
    pub fn replace(&self, registry: ValidatedRegistry) {
        let next = Arc::new(registry);
        match self.0.write() {
            Ok(mut w) => *w = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }
}
