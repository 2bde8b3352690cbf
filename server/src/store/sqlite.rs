//! The SQLite backend (the default): one file under the data directory, WAL journal,
//! `synchronous = FULL` so that a committed transaction survives a crash or power loss.

use super::{Store, StoreError, StoredAdmission, StoredEvent};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;

pub struct SqliteStore {
    conn: Connection,
    /// `(organizationId, signingHash)` → row of its admission record. The Admission Log has
    /// one writer (this store's owner), so this index is authoritative; keeping it in memory
    /// keeps the table append-only (no random B-tree inserts, so the cost of a write does not
    /// grow with history).
    admissions: std::collections::HashMap<(String, String), i64>,
}

fn err(e: rusqlite::Error) -> StoreError {
    StoreError(e.to_string())
}

/// The Organization log's pseudo-Group in the `events` table (SQL NULLs are not unique).
const ORG: &str = "";

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open(path).map_err(err)?;
        Self::init(conn)
    }

    /// A throwaway in-memory store (tests).
    #[cfg(test)]
    pub fn in_memory() -> Result<SqliteStore, StoreError> {
        Self::init(Connection::open_in_memory().map_err(err)?)
    }

    fn init(conn: Connection) -> Result<SqliteStore, StoreError> {
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             PRAGMA cache_size = -65536;
             CREATE TABLE IF NOT EXISTS events (
                 position  INTEGER PRIMARY KEY,
                 group_id  TEXT NOT NULL,
                 sequence  INTEGER NOT NULL,
                 kind      TEXT NOT NULL,
                 jcs       BLOB NOT NULL,
                 UNIQUE (group_id, sequence)
             );
             CREATE TABLE IF NOT EXISTS admissions (
                 position        INTEGER PRIMARY KEY,
                 organization_id TEXT NOT NULL,
                 signing_hash    TEXT NOT NULL,
                 record          BLOB NOT NULL
             );",
        )
        .map_err(err)?;
        let mut admissions = std::collections::HashMap::new();
        {
            let mut stmt = conn
                .prepare("SELECT position, organization_id, signing_hash FROM admissions")
                .map_err(err)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })
                .map_err(err)?;
            for row in rows {
                let (pos, org, hash) = row.map_err(err)?;
                if admissions
                    .insert((org.clone(), hash.clone()), pos)
                    .is_some()
                {
                    return Err(StoreError(format!(
                        "two admission records for ({org}, {hash}): the log is corrupt"
                    )));
                }
            }
        }
        Ok(SqliteStore { conn, admissions })
    }
}

impl Store for SqliteStore {
    fn append(
        &mut self,
        events: &[StoredEvent],
        admissions: &[StoredAdmission],
    ) -> Result<(), StoreError> {
        // At most one record per logical key (S-9), checked before anything is written.
        let mut batch_keys = std::collections::HashSet::new();
        for a in admissions {
            let key = (a.organization_id.clone(), a.signing_hash.clone());
            if self.admissions.contains_key(&key) || !batch_keys.insert(key) {
                return Err(StoreError(format!(
                    "an admission record for {} already exists",
                    a.signing_hash
                )));
            }
        }
        let mut new_rows = Vec::with_capacity(admissions.len());
        let tx = self.conn.transaction().map_err(err)?;
        {
            let mut ins = tx
                .prepare_cached(
                    "INSERT INTO events (group_id, sequence, kind, jcs) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(err)?;
            for e in events {
                let seq = i64::try_from(e.sequence)
                    .map_err(|_| StoreError("sequence out of range".into()))?;
                ins.execute(params![
                    e.group_id.as_deref().unwrap_or(ORG),
                    seq,
                    e.kind,
                    e.jcs
                ])
                .map_err(err)?;
            }
            let mut adm = tx
                .prepare_cached(
                    "INSERT INTO admissions (organization_id, signing_hash, record) VALUES (?1, ?2, ?3)",
                )
                .map_err(err)?;
            for a in admissions {
                adm.execute(params![a.organization_id, a.signing_hash, a.record])
                    .map_err(err)?;
                new_rows.push((
                    (a.organization_id.clone(), a.signing_hash.clone()),
                    tx.last_insert_rowid(),
                ));
            }
        }
        tx.commit().map_err(err)?;
        self.admissions.extend(new_rows);
        Ok(())
    }

    fn for_each_event(
        &self,
        f: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT jcs FROM events ORDER BY position")
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        let mut n = 0u64;
        while let Some(row) = rows.next().map_err(err)? {
            let bytes: Vec<u8> = row.get(0).map_err(err)?;
            f(&bytes).map_err(|e| StoreError(format!("replaying event {}: {e}", n + 1)))?;
            n += 1;
        }
        Ok(n)
    }

    fn group_events(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT jcs FROM events WHERE group_id = ?1 AND sequence > ?2 ORDER BY sequence LIMIT ?3",
            )
            .map_err(err)?;
        let after = i64::try_from(after_sequence).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![group_id, after, limit], |r| r.get::<_, Vec<u8>>(0))
            .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }

    fn admission(
        &self,
        organization_id: &str,
        signing_hash: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        // The in-memory index answers an absence without touching the database.
        let Some(pos) = self
            .admissions
            .get(&(organization_id.to_owned(), signing_hash.to_owned()))
        else {
            return Ok(None);
        };
        self.conn
            .query_row(
                "SELECT record FROM admissions WHERE position = ?1",
                params![pos],
                |r| r.get::<_, Vec<u8>>(0),
            )
            .optional()
            .map_err(err)
    }

    fn event_count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get::<_, i64>(0))
            .map(|n| u64::try_from(n).unwrap_or(0))
            .map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(g: Option<&str>, seq: u64) -> StoredEvent {
        StoredEvent {
            group_id: g.map(str::to_owned),
            sequence: seq,
            kind: "k.k".into(),
            jcs: format!("{{\"s\":{seq}}}").into_bytes(),
        }
    }

    #[test]
    fn appends_in_order_and_refuses_a_duplicate_position_atomically() {
        let mut s = SqliteStore::in_memory().expect("store");
        s.append(&[ev(Some("g"), 1), ev(Some("g"), 2), ev(None, 1)], &[])
            .expect("append");
        // A batch with a duplicate (group, sequence) fails whole: nothing from it is stored.
        assert!(
            s.append(&[ev(Some("g"), 3), ev(Some("g"), 2)], &[])
                .is_err()
        );
        assert_eq!(s.event_count().expect("count"), 3);
        assert_eq!(s.group_events("g", 1, 10).expect("page").len(), 1);
        let mut seen = Vec::new();
        s.for_each_event(&mut |b| {
            seen.push(String::from_utf8_lossy(b).into_owned());
            Ok(())
        })
        .expect("replay");
        assert_eq!(seen, ["{\"s\":1}", "{\"s\":2}", "{\"s\":1}"]);
    }

    #[test]
    fn admissions_are_keyed_by_organization_and_hash() {
        let mut s = SqliteStore::in_memory().expect("store");
        let a = StoredAdmission {
            organization_id: "urn:o".into(),
            signing_hash: "sha256:00".into(),
            record: b"{}".to_vec(),
        };
        s.append(&[], std::slice::from_ref(&a)).expect("append");
        assert_eq!(
            s.admission("urn:o", "sha256:00").expect("get"),
            Some(b"{}".to_vec())
        );
        assert_eq!(s.admission("urn:p", "sha256:00").expect("get"), None);
        assert!(s.append(&[], &[a]).is_err(), "one record per logical key");
    }

    #[test]
    fn the_admission_index_is_rebuilt_on_reopen() {
        let path = std::env::temp_dir().join(format!("weave-adm-{}.sqlite", std::process::id()));
        let _ = std::fs::remove_file(&path);
        {
            let mut s = SqliteStore::open(&path).expect("store");
            let a = StoredAdmission {
                organization_id: "urn:o".into(),
                signing_hash: "sha256:01".into(),
                record: b"{\"r\":1}".to_vec(),
            };
            s.append(&[], &[a]).expect("append");
        }
        let s = SqliteStore::open(&path).expect("reopen");
        assert_eq!(
            s.admission("urn:o", "sha256:01").expect("get"),
            Some(b"{\"r\":1}".to_vec())
        );
        assert_eq!(s.admission("urn:o", "sha256:02").expect("get"), None);
        drop(s);
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
    }
}
