//! Durable `ACK` Cursors (§16): the highest contiguous sequence each principal reports as
//! durably processed, per Group, in the gateway's own small database (`gateway.sqlite`
//! beside the authority's store) so that they survive a restart without touching the
//! authority's write path.

use super::StoreError;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

fn err(e: rusqlite::Error) -> StoreError {
    StoreError(e.to_string())
}

/// Where Cursors are kept: this node's `gateway.sqlite`, or a cluster's shared database
/// (`cluster::pg::PgCursors`). Each raises Cursors only, in one transaction per batch.
pub trait CursorBackend: Send + Sync {
    /// Raises each `(principal, group)` Cursor to its sequence (never lowers one), all in one
    /// transaction; durable when this returns; on an error none of them is stored.
    fn advance_all(&self, cursors: &[(String, String, u64)]) -> Result<(), StoreError>;
    /// The stored Cursor of `(principal, group)`, if any.
    fn get(&self, principal: &str, group: &str) -> Result<Option<u64>, StoreError>;
}

/// The Cursors in one SQLite file.
struct SqliteCursors(Mutex<Connection>);

impl SqliteCursors {
    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
        self.0
            .lock()
            .map_err(|_| StoreError("the cursor store was poisoned".into()))
    }
}

impl CursorBackend for SqliteCursors {
    fn advance_all(&self, cursors: &[(String, String, u64)]) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction().map_err(err)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO cursors (principal_id, group_id, sequence) VALUES (?1, ?2, ?3)
                     ON CONFLICT (principal_id, group_id)
                     DO UPDATE SET sequence = MAX(sequence, excluded.sequence)",
                )
                .map_err(err)?;
            for (principal, group, sequence) in cursors {
                let seq = i64::try_from(*sequence)
                    .map_err(|_| StoreError("sequence too large".into()))?;
                stmt.execute(params![principal, group, seq]).map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    fn get(&self, principal: &str, group: &str) -> Result<Option<u64>, StoreError> {
        let v: Option<i64> = self
            .conn()?
            .query_row(
                "SELECT sequence FROM cursors WHERE principal_id = ?1 AND group_id = ?2",
                params![principal, group],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)?;
        Ok(v.and_then(|s| u64::try_from(s).ok()))
    }
}

pub struct CursorStore {
    backend: Box<dyn CursorBackend>,
    /// Write transactions committed (each one a sync: tests and benchmarks count them).
    transactions: AtomicU64,
}

impl CursorStore {
    pub fn open(path: &Path) -> Result<CursorStore, StoreError> {
        let conn = Connection::open(path).map_err(err)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS cursors (
                 principal_id TEXT NOT NULL,
                 group_id     TEXT NOT NULL,
                 sequence     INTEGER NOT NULL,
                 PRIMARY KEY (principal_id, group_id)
             ) WITHOUT ROWID;",
        )
        .map_err(err)?;
        Ok(CursorStore::over(Box::new(SqliteCursors(Mutex::new(conn)))))
    }

    /// Cursors kept by `backend`.
    pub fn over(backend: Box<dyn CursorBackend>) -> CursorStore {
        CursorStore {
            backend,
            transactions: AtomicU64::new(0),
        }
    }

    /// Raises the Cursor of `(principal, group)` to `sequence` (never lowers it) and returns
    /// the Cursor now stored; durable when this returns. The gateway writes batches instead
    /// ([`CursorStore::advance_all`]).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn advance(&self, principal: &str, group: &str, sequence: u64) -> Result<u64, StoreError> {
        self.advance_all(&[(principal.to_owned(), group.to_owned(), sequence)])?;
        Ok(self.get(principal, group)?.unwrap_or(sequence))
    }

    /// Raises each `(principal, group)` Cursor to its sequence (never lowers one), all in one
    /// transaction: one sync for a whole batch of ACKs (`gateway::acks`). Durable when this
    /// returns; on an error none of them is stored.
    pub fn advance_all(&self, cursors: &[(String, String, u64)]) -> Result<(), StoreError> {
        self.backend.advance_all(cursors)?;
        self.transactions.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Write transactions committed since opening.
    pub fn transactions(&self) -> u64 {
        self.transactions.load(Ordering::Relaxed)
    }

    /// The stored Cursor of `(principal, group)`, if any.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn get(&self, principal: &str, group: &str) -> Result<Option<u64>, StoreError> {
        self.backend.get(principal, group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_only_rise_and_survive_reopening() {
        let dir = std::env::temp_dir().join(format!("weave-cursors-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("gateway.sqlite");
        {
            let c = CursorStore::open(&path).expect("open");
            assert_eq!(c.get("urn:a", "urn:g").expect("get"), None);
            assert_eq!(c.advance("urn:a", "urn:g", 5).expect("advance"), 5);
            assert_eq!(c.advance("urn:a", "urn:g", 3).expect("advance"), 5);
            assert_eq!(c.advance("urn:b", "urn:g", 1).expect("advance"), 1);
        }
        let c = CursorStore::open(&path).expect("reopen");
        assert_eq!(c.get("urn:a", "urn:g").expect("get"), Some(5));
        assert_eq!(c.get("urn:b", "urn:g").expect("get"), Some(1));
        // A batch: one transaction, and still never lower.
        let batch = [
            ("urn:a".to_owned(), "urn:g".to_owned(), 4),
            ("urn:b".to_owned(), "urn:g".to_owned(), 9),
            ("urn:c".to_owned(), "urn:h".to_owned(), 2),
        ];
        let before = c.transactions();
        c.advance_all(&batch).expect("batch");
        assert_eq!(c.transactions(), before + 1);
        assert_eq!(c.get("urn:a", "urn:g").expect("get"), Some(5));
        assert_eq!(c.get("urn:b", "urn:g").expect("get"), Some(9));
        assert_eq!(c.get("urn:c", "urn:h").expect("get"), Some(2));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
