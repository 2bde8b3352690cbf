//! The SQLite backend (the default): one file under the data directory and its write-ahead
//! log (WAL).
//!
//! Durability: SQLite runs with `synchronous = NORMAL`, which syncs the WAL before every
//! checkpoint, the database after it, and the WAL header when the WAL is reused, but not at
//! each commit. The commit-time sync that `synchronous = FULL` would do inside `COMMIT` is
//! done instead by the `Syncer` thread (`fdatasync` of the same WAL file), and nothing is
//! acknowledged before it returns, so an acknowledged transaction survives a crash or power
//! loss exactly as under FULL. The difference is only who waits: the authority's thread goes
//! on deciding the next batch while the device flushes. Checkpoints (copying the WAL into the
//! database, with their two syncs) run on a third thread with its own connection
//! (`checkpointer.rs`), so the authority's thread does not wait for them either.

use super::checkpointer::Checkpointer;
use super::syncer::Syncer;
use super::{
    Mark, SnapshotWriter, Store, StoreError, StoredAdmission, StoredEvent, StoredSnapshot, Ticket,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;

pub struct SqliteStore {
    conn: Connection,
    /// `(organizationId, signingHash)` → row of its admission record. The Admission Log has
    /// one writer (this store's owner), so this index is authoritative; keeping it in memory
    /// keeps the table append-only (no random B-tree inserts, so the cost of a write does not
    /// grow with history).
    admissions: AdmissionIndex,
    /// Each Group's Events by sequence: `groups[g][s - 1]` is the row of sequence `s`
    /// (sequences are gapless from 1, §15.2). Kept in memory instead of a SQL index on
    /// `(group_id, sequence)`, whose B-tree pages each commit rewrote whole.
    groups: std::collections::HashMap<String, Vec<i64>>,
    /// Makes committed transactions durable (`Drop` waits for it before the connection
    /// closes).
    syncer: Syncer,
    /// Copies the WAL into the database on its own thread (`None` in memory).
    checkpointer: Option<Checkpointer>,
    /// Bytes committed since the last checkpoint was asked for.
    unchecked_bytes: usize,
    /// The row of the last Event (its [`Mark`]).
    last_event: i64,
    /// The snapshots' own database beside this one (`None` in memory): see [`snapshot_path`].
    snapshots: Option<std::path::PathBuf>,
}

/// Where the snapshots of the store at `path` live: a database of their own beside it
/// (`authority.sqlite` → `authority.snapshots.sqlite`), with its own WAL. Written into the log's
/// database, a snapshot of hundreds of MB would go through the log's WAL, and the next
/// commit's `fdatasync` (which every answer waits for) would flush it.
pub fn snapshot_path(path: &Path) -> std::path::PathBuf {
    path.with_extension("snapshots.sqlite")
}

/// The snapshots table: the newest only (older ones are deleted in the transaction that adds
/// a new one, so a complete snapshot is there at every moment).
const SNAPSHOT_TABLE: &str = "CREATE TABLE IF NOT EXISTS snapshot (
     through INTEGER PRIMARY KEY, -- the Mark: the log position of the last Event covered
     events  INTEGER NOT NULL,    -- how many Events it covers
     bytes   BLOB NOT NULL        -- wasm_core::authority::snapshot::encode
 )";

fn open_snapshots(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(err)?;
    conn.execute_batch(&format!(
        "PRAGMA page_size = 65536;
         PRAGMA journal_mode = WAL;
         PRAGMA synchronous = NORMAL;
         PRAGMA journal_size_limit = 67108864;
         {SNAPSHOT_TABLE};"
    ))
    .map_err(err)?;
    Ok(conn)
}

/// The snapshot thread's connection to the snapshots' database.
struct SqliteSnapshotWriter {
    conn: Connection,
}

impl SnapshotWriter for SqliteSnapshotWriter {
    fn put_snapshot(&mut self, snapshot: &StoredSnapshot) -> Result<(), StoreError> {
        let through = i64::try_from(snapshot.through.0)
            .map_err(|_| StoreError("mark out of range".into()))?;
        let events =
            i64::try_from(snapshot.events).map_err(|_| StoreError("count out of range".into()))?;
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute(
            "INSERT OR REPLACE INTO snapshot (through, events, bytes) VALUES (?1, ?2, ?3)",
            params![through, events, snapshot.bytes],
        )
        .map_err(err)?;
        tx.execute("DELETE FROM snapshot WHERE through < ?1", params![through])
            .map_err(err)?;
        tx.commit().map_err(err)?;
        // Copy the WAL into the database now (this thread's time, not a later writer's).
        self.conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(err)
    }
}

/// Ask for a background checkpoint after about this much committed data: 64 WAL pages of
/// 16 KiB, so each checkpoint's two syncs are short, and rare when traffic is light.
const CHECKPOINT_BYTES: usize = 1 << 20;

/// The in-memory Admission Log index, compact because it holds one entry per accepted Command
/// (a million at 1M Events): Organizations are interned (a store usually serves one) and a
/// `sha256:` signing hash is kept as its 32 bytes, not as two heap strings.
#[derive(Default)]
struct AdmissionIndex {
    organizations: Vec<String>,
    positions: std::collections::HashMap<(u32, HashKey), i64>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum HashKey {
    Sha256([u8; 32]),
    /// Anything else is kept as given (only tests and foreign data take this path).
    Other(Box<str>),
}

impl HashKey {
    fn of(signing_hash: &str) -> HashKey {
        let decoded = signing_hash.strip_prefix("sha256:").and_then(|hex| {
            let hex = hex.as_bytes();
            if hex.len() != 64 {
                return None;
            }
            let nibble = |c: u8| match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            };
            let mut out = [0u8; 32];
            for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
                *o = (nibble(pair[0])? << 4) | nibble(pair[1])?;
            }
            Some(out)
        });
        match decoded {
            Some(bytes) => HashKey::Sha256(bytes),
            None => HashKey::Other(signing_hash.into()),
        }
    }
}

impl AdmissionIndex {
    fn key(&self, organization_id: &str, signing_hash: &str) -> Option<(u32, HashKey)> {
        let org = self
            .organizations
            .iter()
            .position(|o| o == organization_id)?;
        Some((u32::try_from(org).ok()?, HashKey::of(signing_hash)))
    }

    fn key_or_add(&mut self, organization_id: &str, signing_hash: &str) -> (u32, HashKey) {
        let key = self.key_or_new(organization_id, signing_hash);
        self.intern(organization_id, key)
    }

    /// The key, with `u32::MAX` standing for an Organization not interned yet (`intern`).
    fn key_or_new(&self, organization_id: &str, signing_hash: &str) -> (u32, HashKey) {
        self.key(organization_id, signing_hash)
            .unwrap_or_else(|| (u32::MAX, HashKey::of(signing_hash)))
    }

    /// Interns the Organization of a key made by `key_or_new`.
    fn intern(&mut self, organization_id: &str, key: (u32, HashKey)) -> (u32, HashKey) {
        if key.0 != u32::MAX {
            return key;
        }
        if let Some(org) = self.organizations.iter().position(|o| o == organization_id) {
            return (u32::try_from(org).unwrap_or(u32::MAX), key.1);
        }
        self.organizations.push(organization_id.to_owned());
        let org = u32::try_from(self.organizations.len() - 1).unwrap_or(u32::MAX);
        (org, key.1)
    }

    fn get(&self, organization_id: &str, signing_hash: &str) -> Option<i64> {
        let key = self.key(organization_id, signing_hash)?;
        self.positions.get(&key).copied()
    }
}

fn err(e: rusqlite::Error) -> StoreError {
    StoreError(e.to_string())
}

/// The Organization log's pseudo-Group in the `events` table (SQL NULLs are not unique).
use crate::store::ORGANIZATION_LOG as ORG;

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open(path).map_err(err)?;
        Self::init(conn, Some(path))
    }

    /// Calls `f` with every Event of the store at `path`, in append order, over a second,
    /// read-only connection: tools (`dev approve`) fold the history of a running authority
    /// without going through its owner (WAL readers never block the writer).
    pub fn read_events_at(
        path: &Path,
        f: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, StoreError> {
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(err)?;
        let mut stmt = conn
            .prepare("SELECT jcs FROM log WHERE kind IS NOT NULL ORDER BY position")
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        let mut n = 0u64;
        while let Some(row) = rows.next().map_err(err)? {
            let bytes: Vec<u8> = row.get(0).map_err(err)?;
            f(&bytes).map_err(|e| StoreError(format!("reading event {}: {e}", n + 1)))?;
            n += 1;
        }
        Ok(n)
    }

    /// The number of Events in the store at `path`, read over a second, read-only connection
    /// (tests watch the store of a running authority without going through its owner).
    #[cfg(test)]
    pub fn event_count_at(path: &Path) -> Result<u64, StoreError> {
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(err)?;
        let n: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM log WHERE signing_hash IS NULL",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// A throwaway in-memory store (tests): nothing to sync.
    #[cfg(test)]
    pub fn in_memory() -> Result<SqliteStore, StoreError> {
        Self::init(Connection::open_in_memory().map_err(err)?, None)
    }

    fn init(conn: Connection, path: Option<&Path>) -> Result<SqliteStore, StoreError> {
        // A small page cache (2 MiB, 128 pages): appends touch only the right edge of each
        // B-tree and admission lookups use the in-memory index, so a larger cache only kept
        // written pages, each a fresh heap page to fault in and zero while the database grew
        // (about 3 µs per Command under `perf` with 64 MiB; write 15.1-17.5 µs -> 12.8-13.7 µs).
        conn.execute_batch(
            "PRAGMA page_size = 16384;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA cache_size = -2048;",
        )
        .map_err(err)?;
        create_or_migrate(&conn)?;
        let mut admissions = AdmissionIndex::default();
        let mut groups: std::collections::HashMap<String, Vec<i64>> = Default::default();
        let mut last_event = 0i64;
        {
            let mut stmt = conn
                .prepare(
                    "SELECT position, group_id, sequence, organization_id, signing_hash FROM log
                     ORDER BY position",
                )
                .map_err(err)?;
            let mut rows = stmt.query([]).map_err(err)?;
            while let Some(row) = rows.next().map_err(err)? {
                let pos: i64 = row.get(0).map_err(err)?;
                let group: Option<String> = row.get(1).map_err(err)?;
                let sequence: Option<i64> = row.get(2).map_err(err)?;
                let org: Option<String> = row.get(3).map_err(err)?;
                let hash: Option<String> = row.get(4).map_err(err)?;
                match (group, sequence, org, hash) {
                    (Some(group), Some(sequence), None, None) => {
                        let seqs = groups.entry(group).or_default();
                        if usize::try_from(sequence).ok() != Some(seqs.len() + 1) {
                            return Err(StoreError(format!(
                                "row {pos}: sequence {sequence} after {} in its Group: the log is corrupt",
                                seqs.len()
                            )));
                        }
                        seqs.push(pos);
                        last_event = pos;
                    }
                    (None, None, Some(org), Some(hash)) => {
                        let key = admissions.key_or_add(&org, &hash);
                        if admissions.positions.insert(key, pos).is_some() {
                            return Err(StoreError(format!(
                                "two admission records for ({org}, {hash}): the log is corrupt"
                            )));
                        }
                    }
                    _ => {
                        return Err(StoreError(format!(
                            "row {pos} is neither an Event nor an admission record: the log is corrupt"
                        )));
                    }
                }
            }
        }
        let syncer = Syncer::start(match path {
            Some(path) => Some(wal_file(&conn, path)?),
            None => None,
        })?;
        let checkpointer = match path {
            Some(path) => {
                conn.pragma_update(
                    None,
                    "wal_autocheckpoint",
                    super::checkpointer::WRITER_CHECKPOINT_PAGES,
                )
                .map_err(err)?;
                Some(Checkpointer::start(path)?)
            }
            None => None,
        };
        Ok(SqliteStore {
            conn,
            admissions,
            groups,
            syncer,
            checkpointer,
            unchecked_bytes: 0,
            last_event,
            snapshots: path.map(snapshot_path),
        })
    }
}

/// The one table of the log: Events and admission records in append order, each row one or
/// the other. One B-tree, appended at its right edge: each commit rewrites fewer pages whole
/// than with a table per kind and a `(group_id, sequence)` index.
const LOG_TABLE: &str = "CREATE TABLE IF NOT EXISTS log (
     position        INTEGER PRIMARY KEY,
     group_id        TEXT,    -- an Event's Group ('' for the Organization); NULL for a record
     sequence        INTEGER, -- an Event's sequence in its Group
     kind            TEXT,    -- an Event's kind
     organization_id TEXT,    -- an admission record's key; NULL for an Event
     signing_hash    TEXT,
     jcs             BLOB NOT NULL,
     command         BLOB     -- an admission record's signed Command (a human's); else NULL
 )";

/// Adds the `command` column to a log written before Commands were kept: SQLite adds a
/// nullable column without rewriting a row, so the old records simply have none.
fn add_command_column(conn: &Connection) -> Result<(), StoreError> {
    if has_command_column(conn)? {
        return Ok(());
    }
    conn.execute_batch("ALTER TABLE log ADD COLUMN command BLOB")
        .map_err(|e| StoreError(format!("adding the log's command column: {e}")))
}

/// Whether the log has the `command` column (a read-only export of a data directory the
/// current server has not opened yet may not).
pub(crate) fn has_command_column(conn: &Connection) -> Result<bool, StoreError> {
    let mut stmt = conn.prepare("PRAGMA table_info(log)").map_err(err)?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .map_err(err)?
        .collect::<Result<_, _>>()
        .map_err(err)?;
    Ok(names.iter().any(|n| n == "command"))
}

/// Creates the log table, moving a store of the earlier layout (an `events` table with a
/// `(group_id, sequence)` index and an `admissions` table) into it in one transaction: Events
/// first, in their order, then the records.
fn create_or_migrate(conn: &Connection) -> Result<(), StoreError> {
    let old: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('events', 'admissions')",
            [],
            |r| r.get(0),
        )
        .map_err(err)?;
    if old == 0 {
        conn.execute_batch(LOG_TABLE).map_err(err)?;
        return add_command_column(conn);
    }
    // A large store takes a while to copy: say what is happening.
    let count = |table: &str| -> i64 {
        conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap_or(0)
    };
    eprintln!(
        "store: moving {} Events and {} admission records into the one-table log (once)",
        count("events"),
        count("admissions")
    );
    conn.execute_batch(&format!(
        "BEGIN IMMEDIATE;
         {LOG_TABLE};
         CREATE TABLE IF NOT EXISTS events (position INTEGER PRIMARY KEY, group_id TEXT NOT NULL,
             sequence INTEGER NOT NULL, kind TEXT NOT NULL, jcs BLOB NOT NULL);
         CREATE TABLE IF NOT EXISTS admissions (position INTEGER PRIMARY KEY,
             organization_id TEXT NOT NULL, signing_hash TEXT NOT NULL, record BLOB NOT NULL);
         INSERT INTO log (group_id, sequence, kind, jcs)
             SELECT group_id, sequence, kind, jcs FROM events ORDER BY position;
         INSERT INTO log (organization_id, signing_hash, jcs)
             SELECT organization_id, signing_hash, record FROM admissions ORDER BY position;
         DROP TABLE events;
         DROP TABLE admissions;
         COMMIT;"
    ))
    .map_err(|e| StoreError(format!("moving the store to the one-table log: {e}")))?;
    add_command_column(conn)
}

/// The WAL file of the database at `path`, for the sync thread. SQLite keeps it (the same
/// inode, rewound after checkpoints) while a connection is open, and this store keeps its one
/// connection open for its whole life. The directory is synced once so that the WAL's own
/// name survives a power loss.
fn wal_file(conn: &Connection, path: &Path) -> Result<std::fs::File, StoreError> {
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .map_err(err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError(format!(
            "{}: journal mode is {mode}, not WAL",
            path.display()
        )));
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let file = std::fs::File::open(&wal)
        .map_err(|e| StoreError(format!("{}: {e}", std::path::Path::new(&wal).display())))?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError(format!("{}: {e}", dir.display())))?;
    Ok(file)
}

impl Drop for SqliteStore {
    /// Whatever was committed is made durable before the store goes away.
    fn drop(&mut self) {
        let _ = self.syncer.wait(self.syncer.last());
    }
}

impl Store for SqliteStore {
    fn append_pending(
        &mut self,
        events: &[StoredEvent],
        admissions: &[StoredAdmission],
    ) -> Result<Ticket, StoreError> {
        // At most one record per logical key (S-9), checked before anything is written. Each
        // key is decoded once and kept for the index update after the commit.
        let mut keys: Vec<(u32, HashKey)> = Vec::with_capacity(admissions.len());
        for a in admissions {
            let key = self
                .admissions
                .key_or_new(&a.organization_id, &a.signing_hash);
            // Earlier in this batch: compared by Organization name, since new Organizations
            // share the placeholder index until interned.
            let twice = admissions
                .iter()
                .zip(&keys)
                .any(|(b, k)| k.1 == key.1 && b.organization_id == a.organization_id);
            if self.admissions.positions.contains_key(&key) || twice {
                return Err(StoreError(format!(
                    "an admission record for {} already exists",
                    a.signing_hash
                )));
            }
            keys.push(key);
        }
        // Each Event continues its Group's sequence without a gap (checked before anything is
        // written, so a refused batch leaves nothing behind).
        let mut next: std::collections::HashMap<&str, u64> = Default::default();
        for e in events {
            let group = e.group_id.as_deref().unwrap_or(ORG);
            let expected = next
                .entry(group)
                .or_insert_with(|| self.groups.get(group).map_or(0, |seqs| seqs.len() as u64) + 1);
            if e.sequence != *expected {
                return Err(StoreError(format!(
                    "Event {} of Group {group:?} does not follow sequence {}",
                    e.sequence,
                    *expected - 1
                )));
            }
            *expected += 1;
        }
        let mut event_rows = Vec::with_capacity(events.len());
        let mut new_rows = Vec::with_capacity(admissions.len());
        let tx = self.conn.transaction().map_err(err)?;
        {
            let mut ins = tx
                .prepare_cached(
                    "INSERT INTO log (group_id, sequence, kind, jcs) VALUES (?1, ?2, ?3, ?4)",
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
                event_rows.push(tx.last_insert_rowid());
            }
            let mut adm = tx
                .prepare_cached(
                    "INSERT INTO log (organization_id, signing_hash, jcs, command)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(err)?;
            for a in admissions {
                adm.execute(params![
                    a.organization_id,
                    a.signing_hash,
                    a.record,
                    a.command
                ])
                .map_err(err)?;
                new_rows.push((a, tx.last_insert_rowid()));
            }
        }
        tx.commit().map_err(err)?;
        let ticket = self.syncer.request();
        // One record per transaction (a batch), not per Event.
        metrics::histogram!("mwp_commit_batch_events", "store" => "sqlite")
            .record(events.len() as f64);
        self.unchecked_bytes += events.iter().map(|e| e.jcs.len()).sum::<usize>()
            + admissions
                .iter()
                .map(|a| a.record.len() + a.command.as_ref().map_or(0, Vec::len))
                .sum::<usize>();
        if self.unchecked_bytes >= CHECKPOINT_BYTES
            && let Some(c) = &self.checkpointer
        {
            c.request();
            self.unchecked_bytes = 0;
        }
        if let Some(last) = event_rows.last() {
            self.last_event = *last;
        }
        for (e, pos) in events.iter().zip(event_rows) {
            let group = e.group_id.as_deref().unwrap_or(ORG);
            match self.groups.get_mut(group) {
                Some(seqs) => seqs.push(pos),
                None => {
                    self.groups.insert(group.to_owned(), vec![pos]);
                }
            }
        }
        for ((a, pos), key) in new_rows.into_iter().zip(keys) {
            let key = self.admissions.intern(&a.organization_id, key);
            self.admissions.positions.insert(key, pos);
        }
        Ok(ticket)
    }

    fn last_ticket(&self) -> Ticket {
        self.syncer.last()
    }

    fn wait_durable(&self, ticket: Ticket) -> Result<(), StoreError> {
        self.syncer.wait(ticket)
    }

    fn is_durable(&self, ticket: Ticket) -> bool {
        self.syncer.is_durable(ticket)
    }

    fn on_synced(&self, wake: super::SyncedHook) {
        self.syncer.on_synced(wake);
    }

    fn sync_failed(&self) -> bool {
        self.syncer.failed()
    }

    fn for_each_event(
        &self,
        f: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT jcs FROM log WHERE kind IS NOT NULL ORDER BY position")
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

    fn for_each_event_after(
        &self,
        after: Mark,
        f: &mut crate::store::EventVisitor<'_>,
    ) -> Result<u64, StoreError> {
        let after = i64::try_from(after.0).map_err(|_| StoreError("mark out of range".into()))?;
        let mut stmt = self
            .conn
            .prepare("SELECT position, jcs FROM log WHERE kind IS NOT NULL AND position > ?1 ORDER BY position")
            .map_err(err)?;
        let mut rows = stmt.query(params![after]).map_err(err)?;
        let mut n = 0u64;
        while let Some(row) = rows.next().map_err(err)? {
            let pos: i64 = row.get(0).map_err(err)?;
            let bytes: &[u8] = row
                .get_ref(1)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(err)?;
            f(Mark(u64::try_from(pos).unwrap_or(0)), bytes)
                .map_err(|e| StoreError(format!("replaying the Event at {pos}: {e}")))?;
            n += 1;
        }
        Ok(n)
    }

    fn last_mark(&self) -> Mark {
        Mark(u64::try_from(self.last_event).unwrap_or(0))
    }

    /// The newest snapshot, checked against this log: its Mark must be an Event of the log and
    /// it must cover exactly the Events up to it (a snapshots file left beside another log, or
    /// a log cut short, is refused: the caller replays the whole log).
    fn latest_snapshot(&self) -> Result<Option<StoredSnapshot>, StoreError> {
        let Some(path) = &self.snapshots else {
            return Ok(None);
        };
        if !path.exists() {
            return Ok(None);
        }
        let conn = open_snapshots(path)?;
        let row = conn
            .query_row(
                "SELECT through, events, bytes FROM snapshot ORDER BY through DESC LIMIT 1",
                [],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, Vec<u8>>(2)?,
                    ))
                },
            )
            .optional()
            .map_err(err)?;
        let Some((through, events, bytes)) = row else {
            return Ok(None);
        };
        let covered: u64 = self
            .groups
            .values()
            .map(|rows| rows.partition_point(|p| *p <= through) as u64)
            .sum();
        let is_event = self
            .groups
            .values()
            .any(|rows| rows.binary_search(&through).is_ok());
        if !is_event || u64::try_from(events).ok() != Some(covered) {
            return Err(StoreError(format!(
                "the snapshot through row {through} ({events} Events) does not match this log \
                 ({covered} Events up to that row)"
            )));
        }
        Ok(Some(StoredSnapshot {
            through: Mark(u64::try_from(through).unwrap_or(0)),
            events: covered,
            bytes,
        }))
    }

    fn snapshot_writer(&self) -> Result<Option<Box<dyn SnapshotWriter>>, StoreError> {
        match &self.snapshots {
            Some(path) => Ok(Some(Box::new(SqliteSnapshotWriter {
                conn: open_snapshots(path)?,
            }))),
            None => Ok(None),
        }
    }

    fn group_events(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let Some(seqs) = self.groups.get(group_id) else {
            return Ok(Vec::new());
        };
        let from = usize::try_from(after_sequence).unwrap_or(usize::MAX);
        let mut stmt = self
            .conn
            .prepare_cached("SELECT jcs FROM log WHERE position = ?1")
            .map_err(err)?;
        seqs.iter()
            .skip(from)
            .take(limit)
            .map(|pos| {
                stmt.query_row(params![pos], |r| r.get::<_, Vec<u8>>(0))
                    .map_err(err)
            })
            .collect()
    }

    fn admission(
        &self,
        organization_id: &str,
        signing_hash: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        // The in-memory index answers an absence without touching the database.
        let Some(pos) = self.admissions.get(organization_id, signing_hash) else {
            return Ok(None);
        };
        self.conn
            .query_row(
                "SELECT jcs FROM log WHERE position = ?1",
                params![pos],
                |r| r.get::<_, Vec<u8>>(0),
            )
            .optional()
            .map_err(err)
    }

    fn event_count(&self) -> Result<u64, StoreError> {
        Ok(self.groups.values().map(|seqs| seqs.len() as u64).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends and waits until durable (what the authority does in two steps).
    fn append(
        s: &mut SqliteStore,
        events: &[StoredEvent],
        admissions: &[StoredAdmission],
    ) -> Result<(), StoreError> {
        let ticket = s.append_pending(events, admissions)?;
        s.wait_durable(ticket)
    }

    /// A database path in the temporary directory, leftovers of an earlier run removed.
    fn temp_db(name: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("weave-{name}-{}.sqlite", std::process::id()));
        remove_db(&path);
        path
    }

    /// Removes a database with its WAL and shared-memory files.
    fn remove_db(path: &Path) {
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
    }

    /// Every Event's bytes as text, in replay order.
    fn replayed(s: &SqliteStore) -> Vec<String> {
        let mut seen = Vec::new();
        s.for_each_event(&mut |b| {
            seen.push(String::from_utf8_lossy(b).into_owned());
            Ok(())
        })
        .expect("replay");
        seen
    }

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
        append(
            &mut s,
            &[ev(Some("g"), 1), ev(Some("g"), 2), ev(None, 1)],
            &[],
        )
        .expect("append");
        // A batch with a duplicate (group, sequence) fails whole: nothing from it is stored.
        assert!(append(&mut s, &[ev(Some("g"), 3), ev(Some("g"), 2)], &[]).is_err());
        assert_eq!(s.event_count().expect("count"), 3);
        assert_eq!(s.group_events("g", 1, 10).expect("page").len(), 1);
        assert_eq!(replayed(&s), ["{\"s\":1}", "{\"s\":2}", "{\"s\":1}"]);
    }

    #[test]
    fn admissions_are_keyed_by_organization_and_hash() {
        let mut s = SqliteStore::in_memory().expect("store");
        let a = StoredAdmission {
            organization_id: "urn:o".into(),
            signing_hash: "sha256:00".into(),
            record: b"{}".to_vec(),
            command: None,
        };
        append(&mut s, &[], std::slice::from_ref(&a)).expect("append");
        assert_eq!(
            s.admission("urn:o", "sha256:00").expect("get"),
            Some(b"{}".to_vec())
        );
        assert_eq!(s.admission("urn:p", "sha256:00").expect("get"), None);
        assert!(
            append(&mut s, &[], &[a]).is_err(),
            "one record per logical key"
        );
    }

    #[test]
    fn sha256_keys_are_compact_and_exact() {
        let mut s = SqliteStore::in_memory().expect("store");
        let h = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let rec = |org: &str, hash: String| StoredAdmission {
            organization_id: org.into(),
            signing_hash: hash,
            record: b"{}".to_vec(),
            command: None,
        };
        append(&mut s, &[], &[rec("urn:o", h('a')), rec("urn:o", h('b'))]).expect("append");
        assert!(matches!(HashKey::of(&h('a')), HashKey::Sha256(_)));
        assert!(s.admission("urn:o", &h('a')).expect("get").is_some());
        assert!(s.admission("urn:o", &h('b')).expect("get").is_some());
        assert!(s.admission("urn:o", &h('c')).expect("get").is_none());
        // Another Organization, or the same hex in upper case (another string), is another key.
        assert!(s.admission("urn:p", &h('a')).expect("get").is_none());
        assert!(s.admission("urn:o", &h('A')).expect("get").is_none());
        assert!(matches!(HashKey::of(&h('A')), HashKey::Other(_)));
        // The same logical key again, alone or twice in one batch, is refused whole.
        assert!(append(&mut s, &[], &[rec("urn:o", h('a'))]).is_err());
        assert!(append(&mut s, &[], &[rec("urn:p", h('c')), rec("urn:p", h('c'))]).is_err());
        assert!(s.admission("urn:p", &h('c')).expect("get").is_none());
        append(&mut s, &[], &[rec("urn:p", h('a'))]).expect("other org");
        assert!(s.admission("urn:p", &h('a')).expect("get").is_some());
    }

    #[test]
    fn one_hash_under_two_new_organizations_in_one_batch_is_two_keys() {
        let mut s = SqliteStore::in_memory().expect("store");
        let rec = |org: &str| StoredAdmission {
            organization_id: org.into(),
            signing_hash: format!("sha256:{}", "d".repeat(64)),
            record: org.as_bytes().to_vec(),
            command: None,
        };
        append(&mut s, &[], &[rec("urn:x"), rec("urn:y")]).expect("two Organizations");
        let h = format!("sha256:{}", "d".repeat(64));
        assert_eq!(
            s.admission("urn:x", &h).expect("get"),
            Some(b"urn:x".to_vec())
        );
        assert_eq!(
            s.admission("urn:y", &h).expect("get"),
            Some(b"urn:y".to_vec())
        );
    }

    #[test]
    fn a_new_store_uses_16_kib_pages_and_wal() {
        let path = temp_db("page");
        let s = SqliteStore::open(&path).expect("store");
        let page: i64 = s
            .conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .expect("page size");
        assert_eq!(page, 16_384);
        let mode: String = s
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .expect("mode");
        assert_eq!(mode, "wal");
        drop(s);
        remove_db(&path);
    }

    #[test]
    fn committed_data_reaches_the_database_file_through_the_background_checkpoint() {
        let path = temp_db("ckpt");
        let mut s = SqliteStore::open(&path).expect("store");
        let autocheckpoint: i64 = s
            .conn
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .expect("pragma");
        assert_eq!(
            autocheckpoint, 4000,
            "the writer's checkpoint is only the backstop"
        );
        let db_len = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let before = db_len();
        // 40 batches of 16 Events of 2 KiB: 1.25 MiB, past CHECKPOINT_BYTES once.
        for b in 0..40u64 {
            let events: Vec<StoredEvent> = (1..=16)
                .map(|i| StoredEvent {
                    jcs: vec![b'x'; 2048],
                    ..ev(Some("g"), b * 16 + i)
                })
                .collect();
            append(&mut s, &events, &[]).expect("append");
        }
        s.checkpointer
            .as_ref()
            .expect("a file store has one")
            .wait_idle();
        // The writer's backstop (4,000 pages) never ran, so only the background thread can
        // have copied the pages into the database file.
        assert!(
            db_len() >= before + (1 << 20),
            "database file {} bytes after the checkpoint, {before} before",
            db_len()
        );
        drop(s);
        // Reopened, everything is there exactly once.
        let s = SqliteStore::open(&path).expect("reopen");
        assert_eq!(s.event_count().expect("count"), 640);
        assert_eq!(s.group_events("g", 600, 100).expect("page").len(), 40);
        drop(s);
        remove_db(&path);
    }

    #[test]
    fn a_gap_in_a_group_sequence_is_refused_whole() {
        let mut s = SqliteStore::in_memory().expect("store");
        append(&mut s, &[ev(Some("g"), 1), ev(None, 1)], &[]).expect("append");
        // g jumps from 1 to 3: the whole batch is refused, h's Event included.
        let e = append(&mut s, &[ev(Some("h"), 1), ev(Some("g"), 3)], &[]).expect_err("gap");
        assert!(e.0.contains("does not follow sequence 1"), "{e}");
        assert!(
            append(&mut s, &[ev(Some("k"), 2)], &[]).is_err(),
            "a Group starts at 1"
        );
        assert_eq!(s.event_count().expect("count"), 2);
        assert!(s.group_events("h", 0, 10).expect("page").is_empty());
        append(
            &mut s,
            &[ev(Some("h"), 1), ev(Some("g"), 2), ev(Some("g"), 3)],
            &[],
        )
        .expect("gapless");
        assert_eq!(s.group_events("g", 1, 10).expect("page").len(), 2);
        assert_eq!(s.group_events("g", 3, 10).expect("page").len(), 0);
        assert_eq!(s.event_count().expect("count"), 5);
    }

    #[test]
    fn a_store_of_the_two_table_layout_is_moved_into_the_log_on_open() {
        let path = temp_db("migrate");
        {
            // The layout of stores written before the one-table log.
            let c = Connection::open(&path).expect("db");
            c.execute_batch(
                "CREATE TABLE events (position INTEGER PRIMARY KEY, group_id TEXT NOT NULL,
                     sequence INTEGER NOT NULL, kind TEXT NOT NULL, jcs BLOB NOT NULL,
                     UNIQUE (group_id, sequence));
                 CREATE TABLE admissions (position INTEGER PRIMARY KEY,
                     organization_id TEXT NOT NULL, signing_hash TEXT NOT NULL,
                     record BLOB NOT NULL);
                 INSERT INTO events (group_id, sequence, kind, jcs) VALUES
                     ('g', 1, 'k.k', CAST('{\"s\":1}' AS BLOB)),
                     ('', 1, 'k.k', CAST('{\"o\":1}' AS BLOB)),
                     ('g', 2, 'k.k', CAST('{\"s\":2}' AS BLOB));
                 INSERT INTO admissions (organization_id, signing_hash, record) VALUES
                     ('urn:o', 'sha256:01', CAST('{\"r\":1}' AS BLOB));",
            )
            .expect("old layout");
        }
        let mut s = SqliteStore::open(&path).expect("moved");
        assert_eq!(replayed(&s), ["{\"s\":1}", "{\"o\":1}", "{\"s\":2}"]);
        assert_eq!(
            s.group_events("g", 1, 10).expect("page"),
            [b"{\"s\":2}".to_vec()]
        );
        assert_eq!(
            s.admission("urn:o", "sha256:01").expect("get"),
            Some(b"{\"r\":1}".to_vec())
        );
        let tables: i64 = s
            .conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('events', 'admissions')",
                [],
                |r| r.get(0),
            )
            .expect("tables");
        assert_eq!(tables, 0, "the old tables are gone");
        // It goes on from where the old layout stopped, and reopens as the new one.
        append(&mut s, &[ev(Some("g"), 3)], &[]).expect("append");
        drop(s);
        let s = SqliteStore::open(&path).expect("reopen");
        assert_eq!(s.event_count().expect("count"), 4);
        drop(s);
        remove_db(&path);
    }

    #[test]
    fn a_humans_command_is_kept_beside_its_record_and_an_old_log_gains_the_column() {
        let path = temp_db("command");
        {
            // The log as written before Commands were kept: no `command` column.
            let c = Connection::open(&path).expect("db");
            c.execute_batch(
                "CREATE TABLE log (position INTEGER PRIMARY KEY, group_id TEXT, sequence INTEGER,
                     kind TEXT, organization_id TEXT, signing_hash TEXT, jcs BLOB NOT NULL);
                 INSERT INTO log (organization_id, signing_hash, jcs) VALUES
                     ('urn:o', 'sha256:01', CAST('{\"r\":1}' AS BLOB));",
            )
            .expect("old log");
        }
        // Read before the server opened it (read-only: the column is not added): no Command.
        let mut all = |_: &[(Option<String>, Vec<u8>)]| {
            ["sha256:01", "sha256:02", "sha256:03"]
                .iter()
                .map(|h| ("urn:o".to_owned(), (*h).to_owned()))
                .collect()
        };
        let read = super::super::reader::read_for_export(&path, &mut all).expect("read");
        assert_eq!(read.admissions.len(), 1);
        assert!(read.commands.is_empty());
        let mut s = SqliteStore::open(&path).expect("opened");
        assert!(has_command_column(&s.conn).expect("columns"));
        let rec = |hash: &str, command: Option<&[u8]>| StoredAdmission {
            organization_id: "urn:o".into(),
            signing_hash: hash.into(),
            record: b"{}".to_vec(),
            command: command.map(<[u8]>::to_vec),
        };
        append(
            &mut s,
            &[],
            &[
                rec("sha256:02", Some(b"{\"kind\":\"mission.approve\"}")),
                rec("sha256:03", None),
            ],
        )
        .expect("append");
        drop(s);
        let read = super::super::reader::read_for_export(&path, &mut all).expect("read");
        assert_eq!(read.admissions.len(), 3);
        let key = ("urn:o".to_owned(), "sha256:02".to_owned());
        assert_eq!(
            read.commands.get(&key).map(Vec::as_slice),
            Some(&b"{\"kind\":\"mission.approve\"}"[..])
        );
        assert_eq!(
            read.commands.len(),
            1,
            "the old record and the Agent's have none"
        );
        // Reopened (the column is there already) and the index rebuilt.
        let s = SqliteStore::open(&path).expect("reopen");
        assert!(s.admission("urn:o", "sha256:02").expect("get").is_some());
        drop(s);
        remove_db(&path);
    }

    #[test]
    fn the_admission_index_is_rebuilt_on_reopen() {
        let path = temp_db("adm");
        {
            let mut s = SqliteStore::open(&path).expect("store");
            let a = StoredAdmission {
                organization_id: "urn:o".into(),
                signing_hash: "sha256:01".into(),
                record: b"{\"r\":1}".to_vec(),
                command: None,
            };
            append(&mut s, &[], &[a]).expect("append");
        }
        let s = SqliteStore::open(&path).expect("reopen");
        assert_eq!(
            s.admission("urn:o", "sha256:01").expect("get"),
            Some(b"{\"r\":1}".to_vec())
        );
        assert_eq!(s.admission("urn:o", "sha256:02").expect("get"), None);
        drop(s);
        remove_db(&path);
    }
}
