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

enum Backend {
    Sqlite(Mutex<Connection>),
    /// The client and the URL it reconnects to.
    Postgres(Box<Mutex<postgres::Client>>, String),
}

pub struct CursorStore {
    backend: Backend,
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
        Ok(CursorStore {
            backend: Backend::Sqlite(Mutex::new(conn)),
            transactions: AtomicU64::new(0),
        })
    }

    /// Cursors in a cluster's shared database (`mwp_cursors`, docs/cluster.md): a client
    /// resumes on any node. Used from the ACK writer's thread and the blocking pool only.
    pub fn postgres(url: &str) -> Result<CursorStore, StoreError> {
        Ok(CursorStore {
            backend: Backend::Postgres(
                Box::new(Mutex::new(crate::cluster::pg::connect(url)?)),
                url.into(),
            ),
            transactions: AtomicU64::new(0),
        })
    }

    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, StoreError> {
        match &self.backend {
            Backend::Sqlite(c) => c
                .lock()
                .map_err(|_| StoreError("the cursor store was poisoned".into())),
            Backend::Postgres(..) => Err(StoreError("not a SQLite cursor store".into())),
        }
    }

    /// The PostgreSQL client, reconnected if the last use found it broken.
    fn pg(&self) -> Option<Result<std::sync::MutexGuard<'_, postgres::Client>, StoreError>> {
        let Backend::Postgres(c, url) = &self.backend else {
            return None;
        };
        let mut guard = match c.lock() {
            Ok(g) => g,
            Err(_) => return Some(Err(StoreError("the cursor store was poisoned".into()))),
        };
        if guard.is_closed() {
            match crate::cluster::pg::connect(url) {
                Ok(fresh) => *guard = fresh,
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(guard))
    }

    /// Raises the Cursor of `(principal, group)` to `sequence` (never lowers it) and returns
    /// the Cursor now stored; durable when this returns. The gateway writes batches instead
    /// ([`CursorStore::advance_all`]).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn advance(&self, principal: &str, group: &str, sequence: u64) -> Result<u64, StoreError> {
        let seq = i64::try_from(sequence).map_err(|_| StoreError("sequence too large".into()))?;
        let conn = self.conn()?;
        conn.execute(
            "INSERT INTO cursors (principal_id, group_id, sequence) VALUES (?1, ?2, ?3)
             ON CONFLICT (principal_id, group_id)
             DO UPDATE SET sequence = MAX(sequence, excluded.sequence)",
            params![principal, group, seq],
        )
        .map_err(err)?;
        self.transactions.fetch_add(1, Ordering::Relaxed);
        let stored: i64 = conn
            .query_row(
                "SELECT sequence FROM cursors WHERE principal_id = ?1 AND group_id = ?2",
                params![principal, group],
                |r| r.get(0),
            )
            .map_err(err)?;
        Ok(u64::try_from(stored).unwrap_or(0))
    }

    /// Raises each `(principal, group)` Cursor to its sequence (never lowers one), all in one
    /// transaction: one sync for a whole batch of ACKs (`gateway::acks`). Durable when this
    /// returns; on an error none of them is stored.
    pub fn advance_all(&self, cursors: &[(String, String, u64)]) -> Result<(), StoreError> {
        if let Some(client) = self.pg() {
            let mut client = client?;
            let principals: Vec<&str> = cursors.iter().map(|c| c.0.as_str()).collect();
            let groups: Vec<&str> = cursors.iter().map(|c| c.1.as_str()).collect();
            let sequences = cursors
                .iter()
                .map(|c| i64::try_from(c.2))
                .collect::<Result<Vec<i64>, _>>()
                .map_err(|_| StoreError("sequence too large".into()))?;
            // One statement, one transaction; the same pair twice in a batch keeps the highest.
            client
                .execute(
                    "INSERT INTO mwp_cursors (principal_id, group_id, sequence)
                     SELECT p, g, max(s) FROM unnest($1::text[], $2::text[], $3::bigint[])
                          AS t(p, g, s) GROUP BY p, g
                     ON CONFLICT (principal_id, group_id)
                     DO UPDATE SET sequence = GREATEST(mwp_cursors.sequence, excluded.sequence)",
                    &[&principals, &groups, &sequences],
                )
                .map_err(crate::cluster::pg::err)?;
            self.transactions.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
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
        tx.commit().map_err(err)?;
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
        if let Some(client) = self.pg() {
            let row = client?
                .query_opt(
                    "SELECT sequence FROM mwp_cursors WHERE principal_id = $1 AND group_id = $2",
                    &[&principal, &group],
                )
                .map_err(crate::cluster::pg::err)?;
            return Ok(row.and_then(|r| u64::try_from(r.get::<_, i64>(0)).ok()));
        }
        let conn = self.conn()?;
        let v: Option<i64> = conn
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
        c.advance_all(&batch).expect("batch");
        assert_eq!(c.transactions(), 1);
        assert_eq!(c.get("urn:a", "urn:g").expect("get"), Some(5));
        assert_eq!(c.get("urn:b", "urn:g").expect("get"), Some(9));
        assert_eq!(c.get("urn:c", "urn:h").expect("get"), Some(2));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
