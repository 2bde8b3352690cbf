//! `ACK` Cursors written by one writer (§16): the reader of each connection only records the
//! Cursor it was told of, and one thread takes every pending Cursor at once and writes them
//! in one SQLite transaction (one sync) per batch. While a batch is written the next one
//! gathers, so a flood of ACKs costs a few transactions instead of a task and a sync each; a
//! later ACK of the same (principal, Group) replaces the pending one when it is higher, and
//! the store keeps the highest ever written, so Cursors only move forward.
//!
//! An ACK is durable once its batch commits (no frame answers an ACK in 0.1); a Cursor still
//! pending when the process stops is lost, which at-least-once delivery allows (the client
//! ACKs again after its next SUBSCRIBE). A batch that cannot be written gets an
//! `INTERNAL_ERROR` on each connection that contributed to it.

use super::error_frame;
use super::hub::Conn;
use crate::store::cursors::CursorStore;
use crate::wire::WireError;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use wasm_core::model::error::ErrorCode;

#[derive(Default)]
struct Pending {
    /// The highest Cursor asked for per (principal, Group) since the last batch.
    cursors: HashMap<(String, String), u64>,
    /// Who to tell if the batch fails: each contributing connection and its last ACK frame.
    senders: HashMap<u64, (Weak<Conn>, String)>,
    /// Set when the gateway is dropped: the writer writes what is pending and stops.
    closed: bool,
    /// Test seam: the writer takes nothing while set.
    paused: bool,
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
}

fn lock(m: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The single writer of `ACK` Cursors.
pub struct AckWriter {
    shared: Arc<Shared>,
    store: Arc<CursorStore>,
}

impl AckWriter {
    /// Starts the writer thread over `store`.
    pub fn start(store: Arc<CursorStore>) -> Result<AckWriter, String> {
        let shared = Arc::new(Shared {
            pending: Mutex::default(),
            wake: Condvar::new(),
        });
        let (s, st) = (Arc::clone(&shared), Arc::clone(&store));
        std::thread::Builder::new()
            .name("ack-writer".into())
            .spawn(move || write_loop(&s, &st))
            .map_err(|e| format!("cannot start the ACK writer: {e}"))?;
        Ok(AckWriter { shared, store })
    }

    /// Records Cursors of `conn`'s principal (already authorized) for the next batch.
    pub fn record(&self, conn: &Arc<Conn>, frame_id: &str, cursors: Vec<(String, u64)>) {
        let mut p = lock(&self.shared.pending);
        for (group, seq) in cursors {
            let at = p
                .cursors
                .entry((conn.principal.id.clone(), group))
                .or_insert(seq);
            *at = (*at).max(seq);
        }
        p.senders
            .insert(conn.id, (Arc::downgrade(conn), frame_id.to_owned()));
        drop(p);
        self.shared.wake.notify_one();
    }

    /// Write transactions the Cursor store committed.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn transactions(&self) -> u64 {
        self.store.transactions()
    }

    /// Test seam: hold every ACK back from the store until [`AckWriter::resume`].
    #[cfg(test)]
    pub fn pause(&self) {
        lock(&self.shared.pending).paused = true;
    }

    #[cfg(test)]
    pub fn resume(&self) {
        lock(&self.shared.pending).paused = false;
        self.shared.wake.notify_one();
    }
}

impl Drop for AckWriter {
    fn drop(&mut self) {
        let mut p = lock(&self.shared.pending);
        p.closed = true;
        p.paused = false;
        drop(p);
        self.shared.wake.notify_one();
    }
}

fn write_loop(shared: &Shared, store: &CursorStore) {
    loop {
        let mut p = lock(&shared.pending);
        while (p.cursors.is_empty() || p.paused) && !p.closed {
            p = shared
                .wake
                .wait(p)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if p.cursors.is_empty() && p.closed {
            return;
        }
        let cursors = std::mem::take(&mut p.cursors);
        let senders = std::mem::take(&mut p.senders);
        drop(p);
        let rows: Vec<(String, String, u64)> = cursors
            .into_iter()
            .map(|((principal, group), seq)| (principal, group, seq))
            .collect();
        if let Err(e) = store.advance_all(&rows) {
            tracing::error!(error = %e, cursors = rows.len(), "ACK Cursors could not be stored");
            for (conn, frame_id) in senders.into_values() {
                if let Some(c) = conn.upgrade() {
                    c.control(error_frame(
                        &WireError::new(ErrorCode::InternalError, "the Cursor could not be stored")
                            .about_frame(Some(&frame_id)),
                    ));
                }
            }
        }
    }
}
