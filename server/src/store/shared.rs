//! What the store's owner shares with one of its threads (the WAL sync, the checkpoint):
//! counters behind a mutex, and a condition variable signalled on every change.

use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Default)]
pub struct Shared<S> {
    state: Mutex<S>,
    changed: Condvar,
}

impl<S> Shared<S> {
    /// A panic while holding the lock leaves only counters behind: still consistent.
    pub fn lock(&self) -> MutexGuard<'_, S> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Releases the lock until the next change, then takes it again.
    pub fn wait<'a>(&self, guard: MutexGuard<'a, S>) -> MutexGuard<'a, S> {
        self.changed.wait(guard).unwrap_or_else(|p| p.into_inner())
    }

    pub fn notify(&self) {
        self.changed.notify_all();
    }
}
