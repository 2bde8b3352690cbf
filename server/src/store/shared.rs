//! What the store's owner shares with one of its threads (the WAL sync, the checkpoint):
//! counters behind a mutex, and a condition variable signalled on every change.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// State with a flag that tells its thread to finish and return.
pub trait Stop {
    fn stop(&mut self);
}

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

impl<S: Stop> Shared<S> {
    /// Tells the thread to stop and waits for it (what each owner's `Drop` does).
    pub fn stop_and_join(&self, thread: Option<JoinHandle<()>>) {
        self.lock().stop();
        self.notify();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}
