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
const MIGRATIONS: [(i32, &str); 1] = [(1, include_str!("../../migrations/0001_cluster.sql"))];

/// The key of the advisory lock under which migrations run (one node migrates; the others
/// wait, then find them applied).
const MIGRATION_LOCK: i64 = 0x6d77_705f_6d69_6772; // "mwp_migr"

/// The channel each append notifies with its last position (the tailers' wake-up).
pub const CHANNEL: &str = "mwp_events";

/// The Organization log's pseudo-Group (`group_key`; SQL NULLs are not unique).
const ORG: &str = "";

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
const FENCE_SQL: &str = "UPDATE mwp_writer
     SET expires_at = clock_timestamp() + make_interval(secs => $3)
     WHERE id = 1 AND holder = $1 AND epoch = $2 AND expires_at > clock_timestamp()";

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

/// The writer's store: appends in fenced transactions, durable at commit (PostgreSQL's
/// `synchronous_commit`), so every ticket is durable when issued.
pub struct PgStore {
    client: Client,
    /// Reads made through `&self` (a duplicate's Events, an admission record, a replay): the
    /// store is used by one thread at a time (`Store: Send`), never concurrently.
    reads: std::cell::RefCell<Client>,
    fence: Fence,
    /// The position the next Event takes.
    next: i64,
    /// The last position committed, shared with the node (what it has published).
    committed: std::sync::Arc<std::sync::atomic::AtomicI64>,
    ticket: u64,
    admissions: AdmissionIndex,
    append_events: Statement,
    append_admissions: Statement,
    fence_stmt: Statement,
}

impl PgStore {
    /// Opens the writer's store once it holds the lease as `fence` says, with the admission
    /// index of the log through `folded` (the follower's). The session's
    /// `idle_in_transaction_session_timeout` is the lease's length: a writer stopped inside
    /// a transaction (SIGSTOP, a pause) holds the lease row's lock no longer than that.
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
        let append_events = client
            .prepare(
                "INSERT INTO mwp_events (position, group_key, sequence, kind, jcs, epoch)
                 SELECT p, g, s, k, j, $6
                 FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bytea[])
                      AS t(p, g, s, k, j)",
            )
            .map_err(err)?;
        let append_admissions = client
            .prepare(
                "INSERT INTO mwp_admissions (organization_id, signing_hash, record, position)
                 SELECT o, h, r, $4
                 FROM unnest($1::text[], $2::text[], $3::bytea[]) AS t(o, h, r)",
            )
            .map_err(err)?;
        let fence_stmt = client.prepare(FENCE_SQL).map_err(err)?;
        Ok(PgStore {
            client,
            reads: std::cell::RefCell::new(connect(url)?),
            fence,
            next: last.unwrap_or(0) + 1,
            committed,
            ticket: 0,
            admissions,
            append_events,
            append_admissions,
            fence_stmt,
        })
    }

    /// The position of the last Event appended (0: none).
    pub fn head(&self) -> i64 {
        self.next - 1
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
        let mut tx = self.client.transaction().map_err(err)?;
        let held = tx
            .execute(
                &self.fence_stmt,
                &[&self.fence.node, &self.fence.epoch, &secs(self.fence.ttl)],
            )
            .map_err(err)?;
        if held != 1 {
            // Nothing of this transaction is kept (dropped: rolled back).
            return Err(StoreError(FENCED.into()));
        }
        let n = i64::try_from(events.len()).map_err(|_| StoreError("batch too large".into()))?;
        if n > 0 {
            let positions: Vec<i64> = (self.next..self.next + n).collect();
            let groups: Vec<&str> = events
                .iter()
                .map(|e| e.group_id.as_deref().unwrap_or(ORG))
                .collect();
            let sequences = events
                .iter()
                .map(|e| i64::try_from(e.sequence))
                .collect::<Result<Vec<i64>, _>>()
                .map_err(|_| StoreError("sequence too large".into()))?;
            let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
            let bytes: Vec<&[u8]> = events.iter().map(|e| e.jcs.as_slice()).collect();
            tx.execute(
                &self.append_events,
                &[
                    &positions,
                    &groups,
                    &sequences,
                    &kinds,
                    &bytes,
                    &self.fence.epoch,
                ],
            )
            .map_err(err)?;
        }
        if !admissions.is_empty() {
            let orgs: Vec<&str> = admissions
                .iter()
                .map(|a| a.organization_id.as_str())
                .collect();
            let hashes: Vec<&str> = admissions.iter().map(|a| a.signing_hash.as_str()).collect();
            let records: Vec<&[u8]> = admissions.iter().map(|a| a.record.as_slice()).collect();
            let at = self.next + n - 1;
            tx.execute(&self.append_admissions, &[&orgs, &hashes, &records, &at])
                .map_err(err)?;
        }
        let last = (self.next + n - 1).to_string();
        tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &last])
            .map_err(err)?;
        tx.commit().map_err(err)?;
        self.next += n;
        self.committed
            .store(self.next - 1, std::sync::atomic::Ordering::SeqCst);
        for a in admissions {
            self.admissions
                .0
                .insert(AdmissionIndex::key(&a.signing_hash));
        }
        self.ticket += 1;
        Ok(Ticket(self.ticket))
    }

    fn last_ticket(&self) -> Ticket {
        Ticket(self.ticket)
    }

    /// Committed is durable (`synchronous_commit = on`): nothing to wait for.
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
        let mut client = self.reads.borrow_mut();
        let mut after = 0i64;
        let mut count = 0u64;
        loop {
            let rows = client
                .query(
                    "SELECT position, jcs FROM mwp_events WHERE position > $1
                     ORDER BY position LIMIT 10000",
                    &[&after],
                )
                .map_err(err)?;
            let Some(last) = rows.last() else {
                return Ok(count);
            };
            after = last.get(0);
            for row in &rows {
                f(row.get::<_, &[u8]>(1)).map_err(StoreError)?;
                count += 1;
            }
        }
    }

    fn group_events(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        group_page(
            &mut self.reads.borrow_mut(),
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
        if !self
            .admissions
            .0
            .contains(&AdmissionIndex::key(signing_hash))
        {
            return Ok(None);
        }
        let row = self
            .reads
            .borrow_mut()
            .query_opt(
                "SELECT record FROM mwp_admissions
                 WHERE organization_id = $1 AND signing_hash = $2",
                &[&organization_id, &signing_hash],
            )
            .map_err(err)?;
        Ok(row.map(|r| r.get(0)))
    }

    fn event_count(&self) -> Result<u64, StoreError> {
        Ok(u64::try_from(self.head()).unwrap_or(0))
    }

    fn append_failure_is_final(&self) -> bool {
        true
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
        let mut after = 0;
        let mut count = 0;
        loop {
            let rows = tail(&mut self.client.borrow_mut(), after, 10_000)?;
            let Some(last) = rows.last() else {
                return Ok(count);
            };
            after = last.position;
            for r in &rows {
                f(&r.jcs).map_err(StoreError)?;
                count += 1;
            }
        }
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
