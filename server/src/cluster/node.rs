//! One node of a cluster (docs/cluster.md): a follower that folds the shared log into its own
//! state and fans it out to its subscribers, and that becomes the writer when the lease is
//! free; the writer runs the same owner thread as a single node, over a fenced [`PgStore`].
//!
//! ```text
//!            ┌──────────────── try_acquire every lease/4 ────────────────┐
//!            ▼                                                           │
//!   Follower: tail (NOTIFY or 100 ms) → fold → publish ──lease taken──▶ Writer(epoch):
//!            ▲                                     catch up to the head, owner thread,
//!            │                                     renew every lease/3
//!            └── step down: renew refused or late, or an append fenced / failed ──┘
//! ```
//!
//! What a node has published (to its hub and the demo) only grows: after stepping down it
//! rebuilds its state from the log without publishing again what it already had.

use super::forward::{Route, Router};
use super::lease;
use super::pg::{self, Fence, PgReader, PgStore};
use crate::authority::AuthorityService;
use crate::devorg::OrgSetup;
use crate::runtime::{EventHook, Publish};
use crate::store::StoreError;
use postgres::Client;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasm_core::authority::state::EventRef;
use wasm_core::authority::{Authority, AuthorityConfig, Micros, SignedEvent, Submitted};
use wasm_core::json;
use wasm_core::model::common::Actor;

/// A node's place in the cluster.
#[derive(Clone)]
pub struct ClusterConfig {
    /// `postgres://…`
    pub url: String,
    /// This node's name (unique in the cluster; in the lease row and the log).
    pub node: String,
    /// Where the other nodes forward Commands to this one (`http://HOST:PORT`): set once the
    /// server listens (its port may be chosen then); the node stands for writer only after.
    pub advertise: Arc<std::sync::OnceLock<String>>,
    /// The writer's lease: a writer that has not renewed it for this long is replaced.
    pub lease: Duration,
    /// Sees the writer's batches only, started at each takeover (the notifier of
    /// `--notify-webhook`: one node announces, docs/notifications.md).
    pub writer_publisher: Option<Arc<dyn Publish>>,
}

/// The clock the owner decides at, shared across the node's terms as writer.
pub type SharedClock = Arc<dyn Fn() -> Micros + Send + Sync>;

/// Rows read per query while folding.
const PAGE: i64 = 2000;

/// Positions between two reads of the admission records by a follower.
const INDEX_STEP: i64 = 20_000;

/// How long a follower lets commits gather after a notification before it reads them: a
/// millisecond when the last read was small; under load (a read of [`BUSY_ROWS`] or more),
/// ten, for fewer and larger reads (`bench gateway --nodes 3`: the followers' reads were a
/// third of their cost). A Command's sender is not kept waiting by it: its own Events reach it
/// from the writer's answer (`Hub::deliver_own`).
const COALESCE: Duration = Duration::from_millis(1);
const COALESCE_BUSY: Duration = Duration::from_millis(10);
const BUSY_ROWS: u64 = 16;

/// What a running node hands to the server.
pub struct Started {
    pub handle: crate::runtime::AuthorityHandle,
    pub router: Arc<Router>,
}

/// Everything the node's thread holds.
struct Node {
    cfg: ClusterConfig,
    config: AuthorityConfig,
    authority: Authority,
    /// The last position folded into `authority`.
    folded: i64,
    /// The First-Admission Records' hashes through `indexed` (handed to the store at
    /// takeover, which reads the rest).
    admissions: pg::AdmissionIndex,
    indexed: i64,
    /// The last position this node has published (to its hub and the demo).
    published: Arc<AtomicI64>,
    registry: crate::live_registry::LiveRegistry,
    admission_service: Actor,
    dev: Option<crate::devorg::DevOrganization>,
    /// The service keys a writer signs with, by the time of each batch (a rotation).
    keys: Option<crate::service_keys::ServiceKeys>,
    clock: SharedClock,
    publisher: Option<Arc<dyn Publish>>,
    hook: Option<Arc<Mutex<EventHook>>>,
    router: Arc<Router>,
    tail: Client,
    lease: Client,
    reader: PgReader,
}

/// Starts a node: the schema migrated, the log folded, the node's thread started. Its router
/// has no thread: it takes each Command on its sender's.
pub fn start(
    cfg: ClusterConfig,
    org: OrgSetup,
    clock: SharedClock,
    publisher: Option<Arc<dyn Publish>>,
    hook: Option<EventHook>,
    rt: tokio::runtime::Handle,
) -> Result<Started, String> {
    let t = Instant::now();
    let mut tail = pg::connect(&cfg.url).map_err(|e| e.to_string())?;
    let version = pg::migrate(&mut tail).map_err(|e| e.to_string())?;
    tail.batch_execute(&format!("LISTEN {}", pg::CHANNEL))
        .map_err(|e| pg::err(e).to_string())?;
    let lease = pg::connect(&cfg.url).map_err(|e| e.to_string())?;
    let reader = PgReader::open(&cfg.url).map_err(|e| e.to_string())?;
    let registry = crate::live_registry::LiveRegistry::new(org.registry);
    let router = Router::new(rt, cfg.lease);
    let mut node = Node {
        authority: Authority::new(org.config.duplicate()),
        config: org.config,
        folded: 0,
        admissions: pg::AdmissionIndex::default(),
        indexed: 0,
        published: Arc::new(AtomicI64::new(0)),
        registry: registry.clone(),
        admission_service: org.admission_service,
        dev: org.dev,
        keys: org.service_keys,
        clock,
        publisher,
        hook: hook.map(|h| Arc::new(Mutex::new(h))),
        router: Arc::clone(&router),
        tail,
        lease,
        reader,
        cfg,
    };
    // The newest snapshot and the log after it, silently: the hub starts from the state
    // they lead to.
    let from_snapshot = node.load_snapshot(i64::MAX);
    let n = node.fold(false).map_err(|e| e.to_string())?;
    node.published.store(node.folded, Ordering::SeqCst);
    println!(
        "weave-console: cluster node {} (schema {version}): {from_snapshot} Events from a \
         snapshot + {n} folded from {} in {} ms, projection {}",
        node.cfg.node,
        redact(&node.cfg.url),
        t.elapsed().as_millis(),
        node.authority.state.projection_hash()
    );
    if let Some(p) = &node.publisher {
        p.start(&node.authority.state, &node.reader);
    }
    std::thread::Builder::new()
        .name("cluster-node".into())
        .spawn(move || node.run())
        .map_err(|e| format!("cannot start the node: {e}"))?;
    Ok(Started {
        handle: crate::runtime::AuthorityHandle::over(
            Arc::new(super::forward::Intake(Arc::clone(&router))),
            Arc::new(org.public),
            registry,
        ),
        router,
    })
}

/// `postgres://user:secret@host/db` without the secret, for logs.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..s + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

impl Node {
    /// Folds the log after `folded` into the state; Events past `published` are published
    /// (when `publish`). Returns how many Events were folded.
    fn fold(&mut self, publish: bool) -> Result<u64, StoreError> {
        let mut count = 0;
        loop {
            let rows = pg::tail(&mut self.tail, self.folded, PAGE)?;
            if rows.is_empty() {
                return Ok(count);
            }
            let mut fresh: Vec<SignedEvent> = Vec::new();
            let published = self.published.load(Ordering::SeqCst);
            for row in rows {
                let value = json::parse(&row.jcs)
                    .map_err(|e| StoreError(format!("position {}: {e}", row.position)))?;
                self.authority
                    .replay(&value)
                    .map_err(|e| StoreError(format!("position {}: {e}", row.position)))?;
                self.folded = row.position;
                count += 1;
                if publish && row.position > published {
                    fresh.push(SignedEvent {
                        at: EventRef {
                            group_id: row.group_id,
                            sequence: row.sequence,
                        },
                        value,
                        jcs: row.jcs,
                    });
                }
            }
            // The admission index follows in large steps (one query per step, not per page);
            // a takeover reads what is left.
            if self.folded - self.indexed >= INDEX_STEP {
                self.admissions
                    .extend(&mut self.tail, self.indexed, self.folded)?;
                self.indexed = self.folded;
            }
            if !fresh.is_empty() {
                self.publish(fresh);
            }
        }
    }

    /// Publishes Events the writer appended to this node's subscribers and its demo.
    fn publish(&mut self, events: Vec<SignedEvent>) {
        let jcs: Vec<Vec<u8>> = events.iter().map(|e| e.jcs.clone()).collect();
        let outcome = Ok(Submitted::Appended(events));
        if let Some(p) = &self.publisher {
            p.publish(&self.authority.state, &self.reader, &[(&outcome, None)]);
        }
        if let Some(h) = &self.hook {
            let h = h.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            h(jcs);
        }
        self.published.store(self.folded, Ordering::SeqCst);
    }

    /// Follower and writer in turn, until the process ends.
    fn run(mut self) {
        loop {
            match self.follow() {
                Ok(epoch) => {
                    if let Err(e) = self.write(epoch) {
                        tracing::warn!(node = %self.cfg.node, cause = %e, "stepped down as writer");
                        println!(
                            "weave-console: cluster node {} stepped down as writer (epoch \
                             {epoch}): {e}",
                            self.cfg.node
                        );
                    }
                    self.router.set(Route::Nobody);
                    if let Err(e) = self.rebuild() {
                        tracing::error!(cause = %e, "cannot rebuild the state; retrying");
                    }
                }
                Err(e) => {
                    tracing::warn!(node = %self.cfg.node, cause = %e, "the shared store failed; reconnecting");
                    self.router.set(Route::Nobody);
                    std::thread::sleep(Duration::from_millis(500));
                    self.reconnect();
                }
            }
        }
    }

    /// Reconnects after the database went away (restarted, unreachable): errors are logged,
    /// the next round tries again.
    fn reconnect(&mut self) {
        match pg::connect(&self.cfg.url).and_then(|mut c| {
            c.batch_execute(&format!("LISTEN {}", pg::CHANNEL))
                .map_err(pg::err)?;
            Ok(c)
        }) {
            Ok(c) => self.tail = c,
            Err(e) => tracing::warn!(cause = %e, "cannot reconnect the tailer"),
        }
        match pg::connect(&self.cfg.url) {
            Ok(c) => self.lease = c,
            Err(e) => tracing::warn!(cause = %e, "cannot reconnect the elector"),
        }
        match PgReader::open(&self.cfg.url) {
            Ok(r) => self.reader = r,
            Err(e) => tracing::warn!(cause = %e, "cannot reconnect the reader"),
        }
    }

    /// A fresh state from the log (after a term as writer: the owner held the state),
    /// publishing only what this node had not published: a snapshot past that is not used.
    fn rebuild(&mut self) -> Result<(), StoreError> {
        self.authority = Authority::new(self.config.duplicate());
        self.folded = 0;
        self.indexed = 0;
        self.admissions = pg::AdmissionIndex::default();
        self.load_snapshot(self.published.load(Ordering::SeqCst));
        self.fold(true).map(|_| ())
    }

    /// Loads the newest snapshot through at most position `limit` into the (fresh) state;
    /// how many Events it covers (0: none used; the log is folded from the start).
    fn load_snapshot(&mut self, limit: i64) -> u64 {
        use crate::store::Store;
        let snapshot = match self.reader.latest_snapshot() {
            Ok(Some(s)) => s,
            Ok(None) => return 0,
            Err(e) => {
                tracing::warn!(cause = %e, "no snapshot read: folding the whole log");
                return 0;
            }
        };
        let through = i64::try_from(snapshot.through.0).unwrap_or(i64::MAX);
        if through > limit {
            return 0;
        }
        match wasm_core::authority::snapshot::decode(&snapshot.bytes) {
            Ok(state) => {
                self.authority.state = state;
                self.folded = through;
                snapshot.events
            }
            Err(e) => {
                tracing::warn!(cause = %e, "the snapshot does not decode: folding the whole log");
                0
            }
        }
    }

    /// Follows the log until this node takes the lease; returns its epoch.
    fn follow(&mut self) -> Result<i64, StoreError> {
        let mut last_try: Option<Instant> = None;
        loop {
            let read = self.fold(true)?;
            if last_try.is_none_or(|t| t.elapsed() >= self.cfg.lease / 4) {
                last_try = Some(Instant::now());
                if let Some(address) = self.cfg.advertise.get()
                    && let Some(epoch) = lease::try_acquire(
                        &mut self.lease,
                        &self.cfg.node,
                        address,
                        self.cfg.lease,
                    )?
                {
                    return Ok(epoch);
                }
                match lease::current(&mut self.lease)? {
                    Some(w) if w.node != self.cfg.node => self.router.set(Route::Remote(w.address)),
                    _ => self.router.set(Route::Nobody),
                }
            }
            // Woken by the writer's NOTIFY, or after 100 ms (a notification lost while the
            // connection was down is caught up by the next fold).
            use postgres::fallible_iterator::FallibleIterator;
            let mut notes = self.tail.notifications();
            if notes
                .timeout_iter(Duration::from_millis(100))
                .next()
                .map_err(pg::err)?
                .is_some()
            {
                std::thread::sleep(if read >= BUSY_ROWS {
                    COALESCE_BUSY
                } else {
                    COALESCE
                });
            }
            // Every waiting notification is covered by the next fold.
            while notes.iter().next().map_err(pg::err)?.is_some() {}
        }
    }

    /// One term as the writer at `epoch`: returns why it ended.
    fn write(&mut self, epoch: i64) -> Result<(), String> {
        let fence = Fence {
            node: self.cfg.node.clone(),
            epoch,
            ttl: self.cfg.lease,
        };
        // Everything the last writer committed is folded (and published) before deciding.
        let t = Instant::now();
        let caught = self.fold(true).map_err(|e| e.to_string())?;
        let store = PgStore::open(
            &self.cfg.url,
            fence.clone(),
            Arc::clone(&self.published),
            std::mem::take(&mut self.admissions),
            self.indexed,
        )
        .map_err(|e| e.to_string())?;
        if self.folded != store.head() {
            return Err(format!(
                "the log's head moved under the lease ({} folded, {} stored)",
                self.folded,
                store.head()
            ));
        }
        let authority =
            std::mem::replace(&mut self.authority, Authority::new(self.config.duplicate()));
        let mut svc = AuthorityService::over(
            Box::new(store),
            authority,
            self.registry.clone(),
            self.admission_service.clone(),
        );
        if let Some(keys) = &self.keys {
            svc.use_service_keys(keys.clone());
        }
        if self.folded == 0
            && let Some(dev) = &self.dev
        {
            crate::runtime::bootstrap(&mut svc, dev)?;
        }
        // The writer snapshots the State in the background; a node that starts (or steps
        // down) loads the newest one and folds only the log after it.
        let every = crate::runtime::snapshot_every()?;
        if every > 0 {
            svc.enable_snapshots(every).map_err(|e| e.to_string())?;
        }
        let clock = Arc::clone(&self.clock);
        let hook: Option<EventHook> = self.hook.as_ref().map(|h| {
            let h = Arc::clone(h);
            Box::new(move |events: Vec<Vec<u8>>| {
                let h = h.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                h(events);
            }) as EventHook
        });
        // The writer's own publisher sees the State it takes over (what was pending then is
        // not announced again) and every batch it decides from now on.
        let publisher = match (&self.publisher, &self.cfg.writer_publisher) {
            (p, None) => p.clone(),
            (None, Some(w)) => {
                w.start(&svc.authority.state, svc.store());
                Some(Arc::clone(w))
            }
            (Some(p), Some(w)) => {
                w.start(&svc.authority.state, svc.store());
                Some(Arc::new(crate::notify::Both(Arc::clone(p), Arc::clone(w))) as Arc<dyn Publish>)
            }
        };
        let (tx, owner) =
            crate::runtime::spawn_owner(svc, Box::new(move || clock()), publisher, hook, true)?;
        self.router.set(Route::Local(tx));
        println!(
            "weave-console: cluster node {} is the writer (epoch {epoch}; {caught} Events caught \
             up in {} ms)",
            self.cfg.node,
            t.elapsed().as_millis()
        );
        let mut renewed = Instant::now();
        let why = loop {
            std::thread::sleep(Duration::from_millis(50));
            if owner.is_finished() {
                break "the store refused an append (fenced, or the database failed)".to_owned();
            }
            if renewed.elapsed() >= self.cfg.lease / 3 {
                match lease::renew(&mut self.lease, &fence) {
                    Ok(true) => {
                        renewed = Instant::now();
                        self.router.renewed();
                    }
                    Ok(false) => break "the lease was lost".to_owned(),
                    Err(e) if renewed.elapsed() >= self.cfg.lease => {
                        break format!("the lease could not be renewed: {e}");
                    }
                    Err(e) => {
                        tracing::warn!(cause = %e, "renewing the lease failed; retrying");
                        self.reconnect();
                    }
                }
            }
        };
        // No new Command reaches the owner; it answers what it holds and ends.
        self.router.set(Route::Nobody);
        let _ = owner.join();
        Err(why)
    }
}
