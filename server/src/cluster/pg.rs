//! The cluster's shared store on PostgreSQL (docs/cluster.md): the schema and its migrations,
//! the writer's [`PgStore`] (every append fenced by the writer's lease epoch in the same
//! transaction), and the reads every node makes (the log's tail, a Group's page, Cursors).
//!
//! The sync `postgres` client is used from the store's own threads only (the owner thread,
//! the tailer, the ACK writer, the blocking pool of the replay reader), never on an async
//! task: it runs its own small runtime per connection.

use crate::store::{StoreError, StoredAdmission, StoredEvent, Ticket};
use postgres::{Client, NoTls, Statement};
use std::collections::HashSet;
use std::time::Duration;

/// The migrations, in order; each runs once, in one transaction (`mwp_schema` records them).
const MIGRATIONS: [(i32, &str); 2] = [
    (1, include_str!("../../migrations/0001_cluster.sql")),
    (2, include_str!("../../migrations/0002_commands.sql")),
];

/// The key of the advisory lock under which migrations run (one node migrates; the others
/// wait, then find them applied).
const MIGRATION_LOCK: i64 = 0x6d77_705f_6d69_6772; // "mwp_migr"

/// The channel each append notifies with its last position (the tailers' wake-up).
pub const CHANNEL: &str = "mwp_events";

/// The Organization log's pseudo-Group (`group_key`; SQL NULLs are not unique).
use crate::store::ORGANIZATION_LOG as ORG;

pub fn err(e: postgres::Error) -> StoreError {
    // The server's message (a constraint, a terminated session) says more than the client's.
    match e.as_db_error() {
        Some(db) => StoreError(format!("postgres: {} ({})", db.message(), db.code().code())),
        None => StoreError(format!("postgres: {e}")),
    }
}

/// Opens a connection to `url` (`postgres://user@host:port/db`), with a connect timeout.
pub fn connect(url: &str) -> Result<Client, StoreError> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e: postgres::Error| StoreError(format!("{url}: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    config.application_name("weave-console");
    config.connect(NoTls).map_err(err)
}

/// Applies the migrations not yet applied, under an advisory lock; returns the schema version.
pub fn migrate(client: &mut Client) -> Result<i32, StoreError> {
    let mut tx = client.transaction().map_err(err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS mwp_schema (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .map_err(err)?;
    let applied: HashSet<i32> = tx
        .query("SELECT version FROM mwp_schema", &[])
        .map_err(err)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut version = applied.iter().copied().max().unwrap_or(0);
    for (v, sql) in MIGRATIONS {
        if applied.contains(&v) {
            continue;
        }
        tx.batch_execute(sql)
            .map_err(|e| StoreError(format!("migration {v}: {}", err(e).0)))?;
        tx.execute("INSERT INTO mwp_schema (version) VALUES ($1)", &[&v])
            .map_err(err)?;
        version = version.max(v);
    }
    tx.commit().map_err(err)?;
    Ok(version)
}

/// The writer's lease as this node holds it: every append checks it (and extends it) in its
/// own transaction, so a writer that lost it can never append again.
#[derive(Clone, Debug)]
pub struct Fence {
    pub node: String,
    pub epoch: i64,
    pub ttl: Duration,
}

/// The fence statement: true only while `node` holds the unexpired lease at `epoch`. It takes
/// the lease row's lock, so a takeover waits for this transaction and then sees the lease
/// extended (and gives up), or commits first and this append is refused.
/// One group commit in one statement, so one round trip (the implicit transaction commits at
/// its end, `synchronous_commit = on`): the fence first, then the appends and the wake-up of
/// the followers, each joined with the fence's row, so that nothing is written and nobody is
/// woken unless the lease is still ours. The `UPDATE` takes the lease row's lock, which orders
/// this commit with any takeover (docs/cluster.md, "Election and fencing"). It returns one row
/// when the fence held, none when it did not.
const COMMIT_SQL: &str = "WITH fence AS (
         UPDATE mwp_writer
         SET expires_at = clock_timestamp() + make_interval(secs => $3)
         WHERE id = 1 AND holder = $1 AND epoch = $2 AND expires_at > clock_timestamp()
         RETURNING epoch),
     appended AS (
         INSERT INTO mwp_events (position, group_key, sequence, kind, jcs, epoch)
         SELECT t.p, t.g, t.s, t.k, t.j, fence.epoch
         FROM fence,
              unnest($4::bigint[], $5::text[], $6::bigint[], $7::text[], $8::bytea[])
                  AS t(p, g, s, k, j)),
     admitted AS (
         INSERT INTO mwp_admissions (organization_id, signing_hash, record, position, command)
         SELECT t.o, t.h, t.r, t.p, t.c
         FROM fence,
              unnest($9::text[], $10::text[], $11::bytea[], $12::bigint[], $13::bytea[])
                  AS t(o, h, r, p, c))
     SELECT pg_notify($14, $15) FROM fence";

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Signing hashes known to be in `mwp_admissions`, by their first 8 bytes: an absence is
/// answered without a query (the common case); a hit is confirmed by one.
#[derive(Clone, Debug, Default)]
pub struct AdmissionIndex(HashSet<u64>);

impl AdmissionIndex {
    /// Adds the records appended at positions in `(after, through]` (a follower keeps the
    /// index as it folds the log, so that a takeover does not read every record again).
    pub fn extend(
        &mut self,
        client: &mut Client,
        after: i64,
        through: i64,
    ) -> Result<(), StoreError> {
        for row in client
            .query(
                "SELECT signing_hash FROM mwp_admissions WHERE position > $1 AND position <= $2",
                &[&after, &through],
            )
            .map_err(err)?
        {
            self.0.insert(AdmissionIndex::key(row.get(0)));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn key(signing_hash: &str) -> u64 {
        let hex = signing_hash.strip_prefix("sha256:").unwrap_or(signing_hash);
        let prefix = hex.get(..16).unwrap_or(hex);
        u64::from_str_radix(prefix, 16).unwrap_or_else(|_| {
            // Not hex: any stable key will do (a hit is confirmed by a query).
            prefix
                .bytes()
                .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b))
        })
    }
}

/// The writer's store. Appends are pipelined as on SQLite (`store::sqlite`): `append_pending`
/// queues a batch and returns at once; the committer thread writes every queued batch in ONE
/// fenced transaction (a group commit), durable at commit (`synchronous_commit = on`), then
/// wakes the owner (`on_synced`). One connection commits in order, so the log's positions
/// become visible in order (the tailers rely on it). A failed commit is final: the node steps
/// down (`append_failure_is_final`) and rebuilds from what the database holds.
pub struct PgStore {
    shared: std::sync::Arc<Shared>,
    /// Reads made through `&self` (a duplicate's Events, an admission record, a snapshot) on
    /// a connection of their own, as a follower makes them.
    reads: PgReader,
    /// The position the next Event takes.
    next: i64,
    ticket: u64,
    admissions: AdmissionIndex,
    /// For the snapshot writer's own connection.
    url: String,
}

/// A batch on its way to the database.
struct Batch {
    ticket: u64,
    first: i64,
    events: Vec<StoredEvent>,
    admissions: Vec<StoredAdmission>,
}

#[derive(Default)]
struct Queue {
    batches: std::collections::VecDeque<Batch>,
    durable: u64,
    failed: Option<String>,
    closed: bool,
    hook: Option<crate::store::SyncedHook>,
    /// Admission records appended but not committed, by signing hash: found by `admission`
    /// before they are in the database (an exact retry in the next batch).
    pending: std::collections::HashMap<String, (String, Vec<u8>)>,
}

struct Shared {
    queue: std::sync::Mutex<Queue>,
    changed: std::sync::Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The committer: its connection, statements and fence.
struct Committer {
    client: Client,
    fence: Fence,
    /// [`COMMIT_SQL`], prepared.
    commit_stmt: Statement,
    /// The last position committed, shared with the node (what it has published).
    committed: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

impl Committer {
    fn run(mut self, shared: &Shared) {
        loop {
            let (batches, hook) = {
                let mut q = shared.lock();
                while q.batches.is_empty() && !q.closed {
                    q = shared
                        .changed
                        .wait(q)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                if q.batches.is_empty() {
                    return;
                }
                (q.batches.drain(..).collect::<Vec<_>>(), q.hook.clone())
            };
            let result = self.commit(&batches);
            {
                let mut q = shared.lock();
                match &result {
                    Ok(last) => {
                        q.durable = batches.last().map_or(q.durable, |b| b.ticket);
                        for b in &batches {
                            for a in &b.admissions {
                                q.pending.remove(&a.signing_hash);
                            }
                        }
                        self.committed
                            .store(*last, std::sync::atomic::Ordering::SeqCst);
                    }
                    Err(e) => {
                        q.failed = Some(e.0.clone());
                    }
                }
            }
            shared.changed.notify_all();
            if let Some(h) = hook {
                h();
            }
            if result.is_err() {
                return;
            }
        }
    }

    /// Every batch in one fenced transaction, one statement; returns the last position
    /// committed.
    fn commit(&mut self, batches: &[Batch]) -> Result<i64, StoreError> {
        let mut positions = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        let mut sequences = Vec::new();
        let mut kinds: Vec<&str> = Vec::new();
        let mut bytes: Vec<&[u8]> = Vec::new();
        let mut orgs: Vec<&str> = Vec::new();
        let mut hashes: Vec<&str> = Vec::new();
        let mut records: Vec<&[u8]> = Vec::new();
        let mut commands: Vec<Option<&[u8]>> = Vec::new();
        let mut at: Vec<i64> = Vec::new();
        let mut last = 0;
        for b in batches {
            let mut p = b.first;
            for e in &b.events {
                positions.push(p);
                groups.push(e.group_id.as_deref().unwrap_or(ORG));
                sequences.push(
                    i64::try_from(e.sequence)
                        .map_err(|_| StoreError("sequence too large".into()))?,
                );
                kinds.push(e.kind.as_str());
                bytes.push(e.jcs.as_slice());
                p += 1;
            }
            last = p - 1;
            for a in &b.admissions {
                orgs.push(a.organization_id.as_str());
                hashes.push(a.signing_hash.as_str());
                records.push(a.record.as_slice());
                commands.push(a.command.as_deref());
                at.push(last);
            }
        }
        let woken = last.to_string();
        // Durable when the statement returns (`synchronous_commit = on`): the round trip is
        // this store's fsync.
        let t = std::time::Instant::now();
        let held = self
            .client
            .query(
                &self.commit_stmt,
                &[
                    &self.fence.node,
                    &self.fence.epoch,
                    &secs(self.fence.ttl),
                    &positions,
                    &groups,
                    &sequences,
                    &kinds,
                    &bytes,
                    &orgs,
                    &hashes,
                    &records,
                    &at,
                    &commands,
                    &CHANNEL,
                    &woken,
                ],
            )
            .map_err(err)?;
        if held.len() != 1 {
            // The lease is no longer ours: nothing of this statement was written.
            return Err(StoreError(FENCED.into()));
        }
        metrics::histogram!("mwp_fsync_seconds", "store" => "postgres")
            .record(t.elapsed().as_secs_f64());
        metrics::histogram!("mwp_commit_batch_events", "store" => "postgres")
            .record(positions.len() as f64);
        Ok(last)
    }
}

impl PgStore {
    /// Opens the writer's store once it holds the lease as `fence` says, with the admission
    /// index of the log through `folded` (the follower's). The committer's session has
    /// `idle_in_transaction_session_timeout` set to the lease's length: a writer stopped
    /// inside a transaction (SIGSTOP, a pause) holds the lease row's lock no longer than that.
    pub fn open(
        url: &str,
        fence: Fence,
        committed: std::sync::Arc<std::sync::atomic::AtomicI64>,
        admissions: AdmissionIndex,
        folded: i64,
    ) -> Result<PgStore, StoreError> {
        let mut client = connect(url)?;
        let idle_ms = u64::try_from(fence.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(100);
        client
            .batch_execute(&format!(
                "SET idle_in_transaction_session_timeout = {idle_ms}; \
                 SET synchronous_commit = on"
            ))
            .map_err(err)?;
        let last: Option<i64> = client
            .query_one("SELECT max(position) FROM mwp_events", &[])
            .map_err(err)?
            .get(0);
        // Records appended after the follower's index (none, unless it was behind).
        let mut admissions = admissions;
        admissions.extend(&mut client, folded, last.unwrap_or(0))?;
        let commit_stmt = client.prepare(COMMIT_SQL).map_err(err)?;
        let shared = std::sync::Arc::new(Shared {
            queue: std::sync::Mutex::default(),
            changed: std::sync::Condvar::new(),
        });
        let committer = Committer {
            client,
            fence,
            commit_stmt,
            committed,
        };
        let s = std::sync::Arc::clone(&shared);
        std::thread::Builder::new()
            .name("cluster-committer".into())
            .spawn(move || committer.run(&s))
            .map_err(|e| StoreError(format!("cannot start the committer: {e}")))?;
        Ok(PgStore {
            shared,
            reads: PgReader::open(url)?,
            next: last.unwrap_or(0) + 1,
            ticket: 0,
            admissions,
            url: url.to_owned(),
        })
    }

    /// The position of the last Event appended (0: none).
    pub fn head(&self) -> i64 {
        self.next - 1
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // The committer writes what is queued, then ends.
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
    }
}

/// Why an append was refused: the fence (another node holds the lease) or the database.
pub const FENCED: &str = "fenced: this node no longer holds the writer's lease";

impl crate::store::Store for PgStore {
    fn append_pending(
        &mut self,
        events: &[StoredEvent],
        admissions: &[StoredAdmission],
    ) -> Result<Ticket, StoreError> {
        let n = i64::try_from(events.len()).map_err(|_| StoreError("batch too large".into()))?;
        let mut q = self.shared.lock();
        if let Some(why) = &q.failed {
            return Err(StoreError(why.clone()));
        }
        self.ticket += 1;
        for a in admissions {
            self.admissions
                .0
                .insert(AdmissionIndex::key(&a.signing_hash));
            q.pending.insert(
                a.signing_hash.clone(),
                (a.organization_id.clone(), a.record.clone()),
            );
        }
        q.batches.push_back(Batch {
            ticket: self.ticket,
            first: self.next,
            events: events.to_vec(),
            admissions: admissions.to_vec(),
        });
        drop(q);
        self.shared.changed.notify_all();
        self.next += n;
        Ok(Ticket(self.ticket))
    }

    fn last_ticket(&self) -> Ticket {
        Ticket(self.ticket)
    }

    fn wait_durable(&self, ticket: Ticket) -> Result<(), StoreError> {
        let mut q = self.shared.lock();
        loop {
            if q.durable >= ticket.0 {
                return Ok(());
            }
            if let Some(why) = &q.failed {
                return Err(StoreError(why.clone()));
            }
            q = self
                .shared
                .changed
                .wait(q)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    fn is_durable(&self, ticket: Ticket) -> bool {
        self.shared.lock().durable >= ticket.0
    }

    fn on_synced(&self, wake: crate::store::SyncedHook) {
        self.shared.lock().hook = Some(wake);
    }

    fn sync_failed(&self) -> bool {
        self.shared.lock().failed.is_some()
    }

    fn for_each_event(
        &self,
        f: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, StoreError> {
        self.reads.for_each_event(f)
    }

    fn group_events(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        self.reads.group_events(group_id, after_sequence, limit)
    }

    /// Absent from the index: absent (no query). Appended but not committed: the pending
    /// record. Otherwise the database's.
    fn admission(
        &self,
        organization_id: &str,
        signing_hash: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        if !self
            .admissions
            .0
            .contains(&AdmissionIndex::key(signing_hash))
        {
            return Ok(None);
        }
        if let Some((org, record)) = self.shared.lock().pending.get(signing_hash)
            && org == organization_id
        {
            return Ok(Some(record.clone()));
        }
        self.reads.admission(organization_id, signing_hash)
    }

    fn event_count(&self) -> Result<u64, StoreError> {
        Ok(u64::try_from(self.head()).unwrap_or(0))
    }

    fn append_failure_is_final(&self) -> bool {
        true
    }

    fn last_mark(&self) -> crate::store::Mark {
        crate::store::Mark(u64::try_from(self.head()).unwrap_or(0))
    }

    fn for_each_event_after(
        &self,
        after: crate::store::Mark,
        f: &mut crate::store::EventVisitor<'_>,
    ) -> Result<u64, StoreError> {
        self.reads.for_each_event_after(after, f)
    }

    fn latest_snapshot(&self) -> Result<Option<crate::store::StoredSnapshot>, StoreError> {
        self.reads.latest_snapshot()
    }

    fn snapshot_writer(&self) -> Result<Option<Box<dyn crate::store::SnapshotWriter>>, StoreError> {
        Ok(Some(Box::new(PgSnapshotWriter(connect(&self.url)?))))
    }
}

/// A Group's Events after `after_sequence`, at most `limit`, in sequence order.
pub fn group_page(
    client: &mut Client,
    group_id: &str,
    after_sequence: u64,
    limit: usize,
) -> Result<Vec<Vec<u8>>, StoreError> {
    let after = i64::try_from(after_sequence).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = client
        .query(
            "SELECT jcs FROM mwp_events WHERE group_key = $1 AND sequence > $2
             ORDER BY sequence LIMIT $3",
            &[&group_id, &after, &limit],
        )
        .map_err(err)?;
    Ok(rows.into_iter().map(|r| r.get(0)).collect())
}

/// One row of the log as a tailer reads it.
pub struct Row {
    pub position: i64,
    /// `None` for the Organization log.
    pub group_id: Option<String>,
    pub sequence: u64,
    pub jcs: Vec<u8>,
}

/// The log after `after`, at most `limit` rows, in position order.
pub fn tail(client: &mut Client, after: i64, limit: i64) -> Result<Vec<Row>, StoreError> {
    let rows = client
        .query(
            "SELECT position, group_key, sequence, jcs FROM mwp_events WHERE position > $1
             ORDER BY position LIMIT $2",
            &[&after, &limit],
        )
        .map_err(err)?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let group: String = r.get(1);
            Row {
                position: r.get(0),
                group_id: Some(group).filter(|g| g != ORG),
                sequence: u64::try_from(r.get::<_, i64>(2)).unwrap_or(0),
                jcs: r.get(3),
            }
        })
        .collect())
}

/// A read-only view of the log for a node that does not write (the hub's start-up and its
/// duplicates' lookups): appends are refused.
pub struct PgReader {
    client: std::cell::RefCell<Client>,
}

impl PgReader {
    pub fn open(url: &str) -> Result<PgReader, StoreError> {
        Ok(PgReader {
            client: std::cell::RefCell::new(connect(url)?),
        })
    }
}

impl crate::store::Store for PgReader {
    fn append_pending(
        &mut self,
        _events: &[StoredEvent],
        _admissions: &[StoredAdmission],
    ) -> Result<Ticket, StoreError> {
        Err(StoreError("this node is not the writer".into()))
    }
    fn last_ticket(&self) -> Ticket {
        Ticket(0)
    }
    fn wait_durable(&self, _ticket: Ticket) -> Result<(), StoreError> {
        Ok(())
    }
    fn is_durable(&self, _ticket: Ticket) -> bool {
        true
    }
    fn for_each_event(
        &self,
        f: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, StoreError> {
        events_after(&mut self.client.borrow_mut(), 0, &mut |_, jcs| f(jcs))
    }
    fn group_events(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        group_page(
            &mut self.client.borrow_mut(),
            group_id,
            after_sequence,
            limit,
        )
    }
    fn admission(
        &self,
        organization_id: &str,
        signing_hash: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let row = self
            .client
            .borrow_mut()
            .query_opt(
                "SELECT record FROM mwp_admissions
                 WHERE organization_id = $1 AND signing_hash = $2",
                &[&organization_id, &signing_hash],
            )
            .map_err(err)?;
        Ok(row.map(|r| r.get(0)))
    }
    fn last_mark(&self) -> crate::store::Mark {
        let last: Option<i64> = self
            .client
            .borrow_mut()
            .query_one("SELECT max(position) FROM mwp_events", &[])
            .ok()
            .and_then(|r| r.get(0));
        crate::store::Mark(last.and_then(|l| u64::try_from(l).ok()).unwrap_or(0))
    }

    fn for_each_event_after(
        &self,
        after: crate::store::Mark,
        f: &mut crate::store::EventVisitor<'_>,
    ) -> Result<u64, StoreError> {
        let after = i64::try_from(after.0).unwrap_or(i64::MAX);
        events_after(&mut self.client.borrow_mut(), after, &mut |p, jcs| {
            f(crate::store::Mark(u64::try_from(p).unwrap_or(0)), jcs)
        })
    }

    fn latest_snapshot(&self) -> Result<Option<crate::store::StoredSnapshot>, StoreError> {
        latest_snapshot(&mut self.client.borrow_mut())
    }

    fn event_count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .client
            .borrow_mut()
            .query_one("SELECT count(*) FROM mwp_events", &[])
            .map_err(err)?
            .get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

/// The newest snapshot in `mwp_snapshots` (the writer's, in the background).
pub fn latest_snapshot(
    client: &mut Client,
) -> Result<Option<crate::store::StoredSnapshot>, StoreError> {
    let row = client
        .query_opt(
            "SELECT through, events, bytes FROM mwp_snapshots ORDER BY through DESC LIMIT 1",
            &[],
        )
        .map_err(err)?;
    Ok(row.map(|r| crate::store::StoredSnapshot {
        through: crate::store::Mark(u64::try_from(r.get::<_, i64>(0)).unwrap_or(0)),
        events: u64::try_from(r.get::<_, i64>(1)).unwrap_or(0),
        bytes: r.get(2),
    }))
}

/// Writes the writer's snapshots on the snapshot thread's own connection; keeps the newest.
struct PgSnapshotWriter(Client);

impl crate::store::SnapshotWriter for PgSnapshotWriter {
    fn put_snapshot(&mut self, snapshot: &crate::store::StoredSnapshot) -> Result<(), StoreError> {
        let through = i64::try_from(snapshot.through.0)
            .map_err(|_| StoreError("mark out of range".into()))?;
        let events =
            i64::try_from(snapshot.events).map_err(|_| StoreError("count out of range".into()))?;
        let mut tx = self.0.transaction().map_err(err)?;
        tx.execute(
            "INSERT INTO mwp_snapshots (through, events, bytes) VALUES ($1, $2, $3)
             ON CONFLICT (through) DO NOTHING",
            &[&through, &events, &snapshot.bytes],
        )
        .map_err(err)?;
        tx.execute("DELETE FROM mwp_snapshots WHERE through < $1", &[&through])
            .map_err(err)?;
        tx.commit().map_err(err)
    }
}

/// What [`events_after`] calls with each Event: its position and bytes.
type PositionedVisitor<'a> = dyn FnMut(i64, &[u8]) -> Result<(), String> + 'a;

/// Calls `f` with every Event after position `after`, in order, a page at a time; how many.
fn events_after(
    client: &mut Client,
    mut after: i64,
    f: &mut PositionedVisitor<'_>,
) -> Result<u64, StoreError> {
    let mut count = 0u64;
    loop {
        let rows = tail(client, after, 10_000)?;
        let Some(last) = rows.last() else {
            return Ok(count);
        };
        after = last.position;
        for row in &rows {
            f(row.position, &row.jcs).map_err(StoreError)?;
            count += 1;
        }
    }
}

/// A client used from one thread at a time, connected again when its last use found the
/// connection broken (a database restart costs the next call a reconnection, not the node).
pub struct Reconnecting {
    client: std::sync::Mutex<Client>,
    url: String,
}

impl Reconnecting {
    pub fn connect(url: &str) -> Result<Reconnecting, StoreError> {
        Ok(Reconnecting {
            client: std::sync::Mutex::new(connect(url)?),
            url: url.to_owned(),
        })
    }

    /// The client, reconnected if the last use found it broken.
    pub fn client(&self) -> Result<std::sync::MutexGuard<'_, Client>, StoreError> {
        let mut guard = self
            .client
            .lock()
            .map_err(|_| StoreError("a PostgreSQL client was poisoned".into()))?;
        if guard.is_closed() {
            *guard = connect(&self.url)?;
        }
        Ok(guard)
    }
}

/// ACK Cursors in the shared database (`mwp_cursors`), so a client resumes on any node.
/// Used from the ACK writer's thread and the blocking pool only (a sync client).
pub struct PgCursors(pub Reconnecting);

impl crate::store::cursors::CursorBackend for PgCursors {
    fn advance_all(&self, cursors: &[(String, String, u64)]) -> Result<(), StoreError> {
        let principals: Vec<&str> = cursors.iter().map(|c| c.0.as_str()).collect();
        let groups: Vec<&str> = cursors.iter().map(|c| c.1.as_str()).collect();
        let sequences = cursors
            .iter()
            .map(|c| i64::try_from(c.2))
            .collect::<Result<Vec<i64>, _>>()
            .map_err(|_| StoreError("sequence too large".into()))?;
        // One statement, one transaction; the same pair twice in a batch keeps the highest.
        self.0
            .client()?
            .execute(
                "INSERT INTO mwp_cursors (principal_id, group_id, sequence)
                 SELECT p, g, max(s) FROM unnest($1::text[], $2::text[], $3::bigint[])
                      AS t(p, g, s) GROUP BY p, g
                 ON CONFLICT (principal_id, group_id)
                 DO UPDATE SET sequence = GREATEST(mwp_cursors.sequence, excluded.sequence)",
                &[&principals, &groups, &sequences],
            )
            .map_err(err)?;
        Ok(())
    }

    fn get(&self, principal: &str, group: &str) -> Result<Option<u64>, StoreError> {
        let row = self
            .0
            .client()?
            .query_opt(
                "SELECT sequence FROM mwp_cursors WHERE principal_id = $1 AND group_id = $2",
                &[&principal, &group],
            )
            .map_err(err)?;
        Ok(row.and_then(|r| u64::try_from(r.get::<_, i64>(0)).ok()))
    }
}

/// Group pages of the shared log, for a node's replay (used on the blocking pool only).
pub struct PgEvents(pub Reconnecting);

impl crate::store::reader::GroupPages for PgEvents {
    fn read(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
        take: &mut dyn FnMut(Vec<u8>) -> bool,
    ) -> Result<(), StoreError> {
        let mut client = self.0.client()?;
        for jcs in group_page(&mut client, group_id, after_sequence, limit)? {
            if !take(jcs) {
                break;
            }
        }
        Ok(())
    }
}

/// The log as `weave-console export --store postgres://…` reads it (docs/audit.md): every
/// Event in position order, then the First-Admission Records `wanted` picks with the Commands
/// kept beside them, in ONE `REPEATABLE READ READ ONLY` transaction: one snapshot of the
/// database while the nodes go on writing (a reader never blocks the writer, and the writer's
/// later commits are not seen, so the Events and their records agree).
pub fn read_for_export(
    url: &str,
    wanted: &mut crate::store::reader::AdmissionKeys<'_>,
) -> Result<crate::store::reader::LogExport, StoreError> {
    let mut client = connect(url)?;
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(err)?;
    let mut out = crate::store::reader::LogExport::default();
    for row in tx
        .query(
            "SELECT group_key, jcs FROM mwp_events ORDER BY position",
            &[],
        )
        .map_err(err)?
    {
        let group: String = row.get(0);
        out.events
            .push(((group != ORG).then_some(group), row.get::<_, Vec<u8>>(1)));
    }
    let keys = wanted(&out.events);
    let hashes: Vec<&str> = keys.iter().map(|(_, h)| h.as_str()).collect();
    // A database not yet migrated to schema 2 (no node of this version has started on it)
    // has no `command` column: its records kept no Command.
    let has_command: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns
                 WHERE table_name = 'mwp_admissions' AND column_name = 'command')",
            &[],
        )
        .map_err(err)?
        .get(0);
    let sql = format!(
        "SELECT organization_id, signing_hash, record, {} FROM mwp_admissions
         WHERE signing_hash = ANY($1::text[])",
        if has_command {
            "command"
        } else {
            "NULL::bytea"
        }
    );
    for row in tx.query(&sql, &[&hashes]).map_err(err)? {
        let key: (String, String) = (row.get(0), row.get(1));
        if !keys.contains(&key) {
            continue;
        }
        if let Some(c) = row.get::<_, Option<Vec<u8>>>(3) {
            out.commands.insert(key.clone(), c);
        }
        out.admissions.insert(key, row.get(2));
    }
    tx.commit().map_err(err)?;
    Ok(out)
}
