//! Copying the write-ahead log back into the database off the authority's thread.
//!
//! Left to itself, SQLite checkpoints on the committing connection once the WAL holds 1,000
//! pages: it copies them into the database file and, under `synchronous = NORMAL`, waits for
//! an `fsync` of the WAL and then of the database (about 17 ms for 16 MiB here, every ~6,000
//! Commands: about 3 µs per Command during which the authority decides nothing; `strace -T`,
//! 2026-12-01).
//!
//! This thread runs `PRAGMA wal_checkpoint(PASSIVE)` on its own connection whenever the owner
//! asks (every few batches). A passive checkpoint never blocks the writer, and SQLite's own
//! protocol keeps it safe whoever runs it: pages are copied only from the durable part of the
//! WAL (this connection syncs the WAL first), and a frame counts as copied only after the
//! database file is synced. When a checkpoint has copied everything, the writer's next
//! transaction rewinds the WAL. The writer's own automatic checkpoint stays on as a backstop,
//! raised to [`WRITER_CHECKPOINT_PAGES`], for when the WAL cannot be rewound for a while.
//!
//! Measured (`bench authority`, 1k Events, three interleaved rounds): the write step went from
//! 16.6-19.2 µs to 8.5-10.1 µs per Command. Each background checkpoint copied about 150 pages
//! in 5-13 ms.
//!
//! A failed checkpoint loses nothing (the frames stay in the WAL, and the writer's checkpoint
//! retries them); it is reported once on stderr.

use super::StoreError;
use super::shared::{Shared, Stop};
use rusqlite::Connection;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

/// The writer's automatic checkpoint (SQLite's default is 1,000 pages): 64 MiB of WAL.
pub const WRITER_CHECKPOINT_PAGES: u32 = 4000;

#[derive(Default)]
struct State {
    /// Checkpoints asked for, and run; a request while one runs is served by the next.
    requested: u64,
    done: u64,
    stop: bool,
}

impl Stop for State {
    fn stop(&mut self) {
        self.stop = true;
    }
}

pub struct Checkpointer {
    shared: Arc<Shared<State>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Opens a second connection to the database at `path` (already in WAL mode) and starts
    /// the thread.
    pub fn start(path: &Path) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open(path)
            .and_then(|c| {
                // NORMAL: sync the WAL before copying and the database after (the default,
                // FULL, would add nothing here: this connection never commits).
                c.execute_batch("PRAGMA synchronous = NORMAL;")?;
                Ok(c)
            })
            .map_err(|e| StoreError(format!("checkpoint connection: {e}")))?;
        let shared = Arc::new(Shared::<State>::default());
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("wal-checkpoint".into())
            .spawn(move || run(&s, &conn))
            .map_err(|e| StoreError(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    /// Asks for a checkpoint of everything committed so far; never blocks.
    pub fn request(&self) {
        let mut st = self.shared.lock();
        st.requested += 1;
        self.shared.notify();
    }

    /// Blocks until every checkpoint asked for so far has run (tests).
    #[cfg(test)]
    pub fn wait_idle(&self) {
        let mut st = self.shared.lock();
        while st.done < st.requested {
            st = self.shared.wait(st);
        }
    }
}

fn run(shared: &Shared<State>, conn: &Connection) {
    let mut reported = false;
    let mut st = shared.lock();
    loop {
        while st.done == st.requested && !st.stop {
            st = shared.wait(st);
        }
        if st.stop {
            return;
        }
        let target = st.requested;
        drop(st);
        // (busy, frames in the WAL, frames copied); busy only means another checkpoint (the
        // writer's backstop) ran at the same moment.
        let result = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0));
        if let Err(e) = result
            && !reported
        {
            eprintln!("store: background checkpoint failed (the writer's own will retry): {e}");
            reported = true;
        }
        st = shared.lock();
        st.done = target;
        shared.notify();
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.stop_and_join(self.thread.take());
    }
}
