//! A second, read-only connection to the authority's store, for the gateway's replay (§16):
//! subscribers read history without going through the owner thread. It keeps its own index
//! of each Group's log positions (8 bytes an Event, like the store's), extended from the
//! primary key before each read, so a page is a few point lookups rather than a scan, and the
//! authority's write path is unchanged (no extra SQL index to maintain per Event).

use super::StoreError;
use rusqlite::{Connection, OpenFlags, params};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

fn err(e: rusqlite::Error) -> StoreError {
    StoreError(e.to_string())
}

struct Inner {
    conn: Connection,
    /// Log positions of each Group's Events, in sequence order (index 0 is sequence 1).
    groups: HashMap<String, Vec<i64>>,
    /// The last log position indexed.
    last: i64,
}

/// Where a Group's pages are read from: the store file ([`SqliteEvents`]) or a cluster's
/// shared log (`cluster::pg::PgEvents`).
pub trait GroupPages: Send + Sync {
    /// Offers the Group's Events after `after_sequence`, at most `limit`, in order, to `take`,
    /// stopping early when it answers false.
    fn read(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
        take: &mut dyn FnMut(Vec<u8>) -> bool,
    ) -> Result<(), StoreError>;
}

/// Reads Group Events while the authority writes them, for replay (§16).
pub struct EventReader {
    pages: Box<dyn GroupPages>,
}

/// The store file, read while the authority writes it (WAL).
struct SqliteEvents(Mutex<Inner>);

impl EventReader {
    pub fn open(path: &Path) -> Result<EventReader, StoreError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        Ok(EventReader::over(Box::new(SqliteEvents(Mutex::new(
            Inner {
                conn,
                groups: HashMap::new(),
                last: 0,
            },
        )))))
    }

    /// A reader of `pages`.
    pub fn over(pages: Box<dyn GroupPages>) -> EventReader {
        EventReader { pages }
    }

    /// A Group's Events after `after_sequence`, at most `limit`, as stored (JCS bytes). The
    /// caller bounds `limit` by the durable head it was told of, so nothing undurable is read.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn group_events(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        self.group_events_within(group_id, after_sequence, limit, usize::MAX, 0, true)
    }

    /// [`EventReader::group_events`], stopping before the Events (each counted with
    /// `overhead` more bytes) would pass `max_bytes`; the first one is read even past it when
    /// `first_always` (none is read otherwise).
    pub fn group_events_within(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
        max_bytes: usize,
        overhead: usize,
        first_always: bool,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut out = Vec::new();
        let mut bytes = 0usize;
        self.pages
            .read(group_id, after_sequence, limit, &mut |jcs: Vec<u8>| {
                bytes = bytes.saturating_add(jcs.len() + overhead);
                if bytes > max_bytes && !(out.is_empty() && first_always) {
                    return false;
                }
                out.push(jcs);
                true
            })?;
        Ok(out)
    }
}

impl GroupPages for SqliteEvents {
    fn read(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
        take: &mut dyn FnMut(Vec<u8>) -> bool,
    ) -> Result<(), StoreError> {
        let mut inner = self
            .0
            .lock()
            .map_err(|_| StoreError("the replay reader was poisoned".into()))?;
        let from = usize::try_from(after_sequence).unwrap_or(usize::MAX);
        let have = inner.groups.get(group_id).map_or(0, Vec::len);
        if have < from.saturating_add(limit) {
            inner.refresh()?;
        }
        let Some(positions) = inner.groups.get(group_id) else {
            return Ok(());
        };
        let wanted: Vec<i64> = positions.iter().skip(from).take(limit).copied().collect();
        let mut stmt = inner
            .conn
            .prepare_cached("SELECT jcs FROM log WHERE position = ?1")
            .map_err(err)?;
        for pos in wanted {
            let jcs = stmt
                .query_row(params![pos], |r| r.get::<_, Vec<u8>>(0))
                .map_err(err)?;
            if !take(jcs) {
                break;
            }
        }
        Ok(())
    }
}

impl Inner {
    /// Indexes the Group Events appended since the last refresh (primary-key range).
    fn refresh(&mut self) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT position, group_id, sequence FROM log
                 WHERE position > ?1 AND signing_hash IS NULL AND group_id <> ''
                 ORDER BY position",
            )
            .map_err(err)?;
        let mut rows = stmt.query(params![self.last]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let pos: i64 = row.get(0).map_err(err)?;
            let group: String = row.get(1).map_err(err)?;
            let seq: i64 = row.get(2).map_err(err)?;
            let list = self.groups.entry(group).or_default();
            // Sequences are contiguous from 1 (the store refuses a gap).
            if usize::try_from(seq).ok() == Some(list.len() + 1) {
                list.push(pos);
            }
            self.last = pos;
        }
        Ok(())
    }
}

/// The log as an audit export reads it (`weave-console export`): every Event in append order
/// (its Group, `None` for the Organization's) and the First-Admission Records `wanted` picks,
/// with the signed Commands kept beside them (a human's), read at one consistent point of the
/// log while the authority goes on writing: one read transaction of a read-only connection
/// here (WAL: readers never block the writer), one REPEATABLE READ transaction on a cluster's
/// PostgreSQL (`cluster::pg::read_for_export`).
#[derive(Default)]
pub struct LogExport {
    pub events: Vec<(Option<String>, Vec<u8>)>,
    /// `(organizationId, signingHash)` → the record's bytes.
    pub admissions: HashMap<(String, String), Vec<u8>>,
    /// `(organizationId, signingHash)` → the signed Command's bytes as received (only the
    /// records that kept one: a human's Command admitted since Commands are kept).
    pub commands: HashMap<(String, String), Vec<u8>>,
}

/// Picks, given the Events, the `(organizationId, signingHash)` keys of the records to read.
pub type AdmissionKeys<'a> =
    dyn FnMut(&[(Option<String>, Vec<u8>)]) -> std::collections::HashSet<(String, String)> + 'a;

/// Reads the store file at `path` for an export: the Events first, then, in the same
/// transaction, the admission records whose key `wanted` accepts (given the Events).
pub fn read_for_export(
    path: &Path,
    wanted: &mut AdmissionKeys<'_>,
) -> Result<LogExport, StoreError> {
    if !path.is_file() {
        return Err(StoreError(format!("{} does not exist", path.display())));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    let tx = conn.unchecked_transaction().map_err(err)?;
    let mut events = Vec::new();
    {
        let mut stmt = tx
            .prepare("SELECT group_id, jcs FROM log WHERE signing_hash IS NULL ORDER BY position")
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let group: Option<String> = row.get(0).map_err(err)?;
            let jcs: Vec<u8> = row.get(1).map_err(err)?;
            events.push((group.filter(|g| !g.is_empty()), jcs));
        }
    }
    let keys = wanted(&events);
    let mut admissions = HashMap::new();
    let mut commands = HashMap::new();
    {
        // A data directory the current server has not opened yet has no `command` column:
        // its records kept no Command (read-only here, so it is not added).
        let command = if super::sqlite::has_command_column(&tx)? {
            "command"
        } else {
            "NULL"
        };
        let mut stmt = tx
            .prepare(&format!(
                "SELECT organization_id, signing_hash, jcs, {command} FROM log
                 WHERE signing_hash IS NOT NULL ORDER BY position"
            ))
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let key: (String, String) = (row.get(0).map_err(err)?, row.get(1).map_err(err)?);
            if keys.contains(&key) {
                if let Some(c) = row.get::<_, Option<Vec<u8>>>(3).map_err(err)? {
                    commands.insert(key.clone(), c);
                }
                admissions.insert(key, row.get(2).map_err(err)?);
            }
        }
    }
    tx.commit().map_err(err)?;
    Ok(LogExport {
        events,
        admissions,
        commands,
    })
}
