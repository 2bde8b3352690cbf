//! Waiting for the disk off the authority's thread: a thread that calls `fdatasync` on the
//! write-ahead log when asked, and tells waiters how far the log is durable.
//!
//! The owner writes a transaction (visible at once, not yet durable), calls `request` to get
//! its ticket, and goes on deciding the next batch; `wait` blocks until one `fdatasync` that
//! began after the ticket was issued has returned. Requests made while a sync runs are
//! covered by the next one (group commit across batches). The thread does almost no work of
//! its own: it sleeps in the kernel while the device flushes.
//!
//! A failed `fdatasync` is final (as in PostgreSQL since 2018): the kernel may already have
//! dropped the dirty pages, so a retry could report success for data that is gone. Every
//! later wait fails, and the owner must restart and rebuild from what is on disk.

use super::shared::{Shared, Stop};
use super::{StoreError, SyncedHook, Ticket};
use std::fs::File;
use std::sync::Arc;
use std::thread::JoinHandle;

#[derive(Default)]
struct State {
    /// The highest ticket issued.
    requested: u64,
    /// Everything up to this ticket is durable.
    durable: u64,
    failed: Option<String>,
    stop: bool,
    /// Called after each sync, outside the lock (`Syncer::on_synced`).
    synced: Option<SyncedHook>,
}

impl Stop for State {
    fn stop(&mut self) {
        self.stop = true;
    }
}

pub struct Syncer {
    shared: Arc<Shared<State>>,
    thread: Option<JoinHandle<()>>,
}

impl Syncer {
    /// Starts the sync thread over `file` (`None`: nothing to sync, every ticket is durable
    /// when issued, as for an in-memory database).
    pub fn start(file: Option<File>) -> Result<Syncer, StoreError> {
        let shared = Arc::new(Shared::<State>::default());
        let thread = match file {
            None => None,
            Some(file) => {
                let s = Arc::clone(&shared);
                Some(
                    std::thread::Builder::new()
                        .name("wal-sync".into())
                        .spawn(move || run(&s, &file))
                        .map_err(|e| StoreError(format!("cannot start the sync thread: {e}")))?,
                )
            }
        };
        Ok(Syncer { shared, thread })
    }

    /// Issues the ticket of everything written so far and asks for it to be made durable.
    pub fn request(&self) -> Ticket {
        let mut st = self.shared.lock();
        st.requested += 1;
        if self.thread.is_none() {
            st.durable = st.requested;
        }
        self.shared.notify();
        Ticket(st.requested)
    }

    pub fn last(&self) -> Ticket {
        Ticket(self.shared.lock().requested)
    }

    /// Whether `ticket` is durable already (never blocks; a failure reads as not durable and
    /// is reported by `wait`).
    pub fn is_durable(&self, ticket: Ticket) -> bool {
        self.shared.lock().durable >= ticket.0
    }

    /// Has `wake` called after every sync that ends, successful or not (the owner thread then
    /// answers what became durable without blocking in `wait`).
    pub fn on_synced(&self, wake: SyncedHook) {
        self.shared.lock().synced = Some(wake);
    }

    /// Whether a sync failed (final).
    pub fn failed(&self) -> bool {
        self.shared.lock().failed.is_some()
    }

    /// Blocks until `ticket` is durable, or fails for good.
    pub fn wait(&self, ticket: Ticket) -> Result<(), StoreError> {
        let mut st = self.shared.lock();
        loop {
            if st.durable >= ticket.0 {
                return Ok(());
            }
            if let Some(e) = &st.failed {
                return Err(StoreError(format!(
                    "the write-ahead log could not be made durable: {e}"
                )));
            }
            if ticket.0 > st.requested {
                return Err(StoreError(format!("no such ticket {}", ticket.0)));
            }
            st = self.shared.wait(st);
        }
    }
}

fn run(shared: &Shared<State>, file: &File) {
    let fsync = metrics::histogram!("mwp_fsync_seconds", "store" => "sqlite");
    let mut st = shared.lock();
    loop {
        while st.requested == st.durable && !st.stop {
            st = shared.wait(st);
        }
        if st.requested == st.durable {
            return; // stopping, nothing left to sync
        }
        // Everything written before this point is covered by the sync that starts now.
        let target = st.requested;
        drop(st);
        let t = std::time::Instant::now();
        let result = file.sync_data();
        fsync.record(t.elapsed().as_secs_f64());
        st = shared.lock();
        match result {
            Ok(()) => st.durable = st.durable.max(target),
            Err(e) => st.failed = Some(e.to_string()),
        }
        shared.notify();
        let failed = st.failed.is_some();
        if let Some(wake) = st.synced.clone() {
            drop(st);
            wake();
            st = shared.lock();
        }
        if failed {
            return;
        }
    }
}

impl Drop for Syncer {
    /// Finishes the syncs already asked for, then stops the thread.
    fn drop(&mut self) {
        self.shared.stop_and_join(self.thread.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_grow_and_become_durable_in_order() {
        let path = std::env::temp_dir().join(format!("weave-sync-{}", std::process::id()));
        let file = File::create(&path).expect("file");
        let s = Syncer::start(Some(file)).expect("start");
        assert_eq!(s.last(), Ticket(0));
        let tickets: Vec<Ticket> = (0..50).map(|_| s.request()).collect();
        assert!(tickets.windows(2).all(|w| w[0] < w[1]));
        // Waiting for the last covers every earlier one; earlier waits return at once.
        s.wait(tickets[49]).expect("durable");
        for t in &tickets {
            s.wait(*t).expect("durable");
        }
        assert!(
            s.wait(Ticket(51)).is_err(),
            "a ticket never issued is refused"
        );
        drop(s);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn every_sync_that_ends_calls_the_hook_after_the_ticket_is_durable() {
        let path = std::env::temp_dir().join(format!("weave-sync-hook-{}", std::process::id()));
        let file = File::create(&path).expect("file");
        let s = Syncer::start(Some(file)).expect("start");
        let (tx, rx) = std::sync::mpsc::channel();
        // The hook looks at the syncer's state (not at the syncer, in which it lives).
        let seen = Arc::clone(&s.shared);
        let tx = std::sync::Mutex::new(tx);
        s.on_synced(Arc::new(move || {
            let durable = {
                let st = seen.lock();
                st.durable >= st.requested
            };
            let _ = tx.lock().map(|t| t.send(durable));
        }));
        let t = s.request();
        let woke = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the hook is called");
        assert!(woke, "durable when the hook runs");
        assert!(s.is_durable(t));
        assert!(!s.failed());
        drop(s);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn without_a_file_every_ticket_is_durable_when_issued() {
        let s = Syncer::start(None).expect("start");
        let t = s.request();
        s.wait(t).expect("durable");
        assert_eq!(s.last(), t);
    }

    #[cfg(unix)]
    #[test]
    fn a_failed_sync_fails_that_wait_and_every_later_one() {
        // fdatasync on a pipe fails (EINVAL): a stand-in for a device that reports EIO.
        let (_reader, writer) = std::io::pipe().expect("pipe");
        let s = Syncer::start(Some(File::from(std::os::fd::OwnedFd::from(writer)))).expect("start");
        let first = s.request();
        let e = s.wait(first).expect_err("a pipe cannot be synced");
        assert!(e.0.contains("could not be made durable"), "{e}");
        assert!(s.failed());
        let later = s.request();
        assert!(s.wait(later).is_err(), "a failure is final");
    }
}
