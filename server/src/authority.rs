//! The embedded Group Authority service: the sans-IO reducer of wasm-core wrapped with the
//! durable store. One owner (a single thread or task) drives it, so the per-Group order is the
//! order of `submit_batch` calls.
//!
//! The path of one Command: six-stage verification (§6.4) → first admission against the
//! Admission Log (S-10; the record is staged, kept only if the Command is accepted) →
//! `Authority::submit` (decide, seal, evolve) → the batch's Events and admission records are
//! written in ONE transaction → once it is durable, the outcomes are returned (acknowledged).
//! If the write fails, in-memory state is rebuilt from the store, so nothing unacknowledged
//! survives.
//!
//! Pipelining: `begin_batch` writes a batch and returns its outcomes held back with a durability
//! ticket; `finish_batch` waits for the ticket and releases them. The owner may begin the next
//! batch in between, so the disk flushes one batch while the next is decided. Every batch's
//! ticket covers everything written before it, so no answer (an acceptance, a duplicate's
//! receipt, or a rejection decided against newer state) leaves before what it depends on is
//! durable. A failed sync is final: the service then refuses everything until restarted.

use crate::store::Ticket;

use crate::store::{
    Mark, SnapshotWriter, Store, StoreError, StoredAdmission, StoredEvent, StoredSnapshot,
};
use wasm_core::admission::{
    AdmissionLog, AppendOutcome, LookupOutcome, TrustedContext, first_admission,
};
use wasm_core::authority::{Accepted, Authority, AuthorityConfig, Micros, Rejection, Submitted};
use wasm_core::crypto::{DocumentKind, ValidatedRegistry, Verified, VerifyError, verify_batch};
use wasm_core::json;
use wasm_core::model::common::Actor;
use wasm_core::model::error::ErrorCode;

/// The outcome of one submitted Command, returned only after its batch is durable.
pub type Outcome = Result<Submitted, Rejection>;

/// Where the time of accepted Commands goes (read by `bench authority`).
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimes {
    pub verify: std::time::Duration,
    pub admission: std::time::Duration,
    pub decide_seal_evolve: std::time::Duration,
    /// Signing the batch's Events (one pass per batch).
    pub sign: std::time::Duration,
    /// Writing the batch's transaction (not yet durable).
    pub store: std::time::Duration,
    /// Waiting for the disk in `finish_batch` (zero when the flush overlapped other work).
    pub durable_wait: std::time::Duration,
}

/// Written batches waiting for the disk, answered in order: a batch is released as soon as it
/// is durable, and the owner blocks only when `MAX_IN_FLIGHT` are waiting (a slow flush then
/// holds back the next batches instead of stalling the owner at once). `T` travels with each
/// batch (the server's reply channels).
pub struct Pipeline<T> {
    waiting: std::collections::VecDeque<(PendingBatch, T)>,
}

impl<T> Default for Pipeline<T> {
    fn default() -> Self {
        Pipeline {
            waiting: std::collections::VecDeque::new(),
        }
    }
}

impl<T> Pipeline<T> {
    /// Batches written but not yet answered, at most. Eight batches of 64 are about 40 ms of
    /// deciding: with four (20 ms), `bench authority` showed rows where the owner waited 8-15 µs
    /// per Command for the disk, during flushes held up by the device or by a checkpoint's sync
    /// of the database (2026-12-01); answers wait for durability either way.
    pub const MAX_IN_FLIGHT: usize = 8;

    /// Adds a begun batch and returns the outcomes of every batch now releasable, oldest first.
    pub fn push(
        &mut self,
        svc: &mut AuthorityService,
        batch: PendingBatch,
        tag: T,
    ) -> Vec<(Vec<Outcome>, T)> {
        self.waiting.push_back((batch, tag));
        let mut released = Vec::new();
        while let Some((front, _)) = self.waiting.front() {
            if self.waiting.len() <= Self::MAX_IN_FLIGHT && !svc.store.is_durable(front.ticket) {
                break;
            }
            if let Some(done) = self.finish_oldest(svc) {
                released.push(done);
            }
        }
        released
    }

    /// Releases every batch already durable, oldest first, without blocking (the owner answers
    /// them before deciding anything new, so that no answer waits for the next batch).
    pub fn release_durable(&mut self, svc: &mut AuthorityService) -> Vec<(Vec<Outcome>, T)> {
        let mut released = Vec::new();
        while let Some((front, _)) = self.waiting.front() {
            if !svc.store.is_durable(front.ticket) {
                break;
            }
            if let Some(done) = self.finish_oldest(svc) {
                released.push(done);
            }
        }
        released
    }

    /// Waits for the oldest batch and releases it (`None` when nothing waits).
    pub fn finish_oldest(&mut self, svc: &mut AuthorityService) -> Option<(Vec<Outcome>, T)> {
        let (batch, tag) = self.waiting.pop_front()?;
        Some((svc.finish_batch(batch), tag))
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// A decided and written batch whose outcomes wait for durability (`finish_batch`).
#[must_use = "the outcomes are released by finish_batch"]
pub struct PendingBatch {
    outcomes: Vec<Outcome>,
    ticket: Ticket,
}

pub struct AuthorityService {
    pub authority: Authority,
    pub times: PhaseTimes,
    store: Box<dyn Store>,
    registry: crate::live_registry::LiveRegistry,
    /// Threads that verify Commands and sign Events (pure, independent per item); deciding,
    /// sealing and writing stay on the owner, in the Group's serial order.
    threads: usize,
    /// The Organization service that writes First-Admission Records.
    admission_service: Actor,
    /// Set when the store could not make a batch durable: the service refuses everything
    /// until restarted (state in memory may be ahead of the disk).
    failed: Option<String>,
    /// How the State was rebuilt at open.
    pub restored: Restored,
    /// Events in the store (the snapshot's count plus those appended since).
    events: u64,
    /// Snapshots in the background, once [`AuthorityService::enable_snapshots`] was called.
    snapshots: Option<Snapshots>,
    /// The service keys to choose from at each batch's time (`org key rotate service`);
    /// `None`: the configuration's one key signs everything.
    keys: Option<crate::service_keys::ServiceKeys>,
}

/// How [`restore`] rebuilt the State: from a snapshot and the Events after it, or by replaying
/// the whole log.
#[derive(Clone, Debug, Default)]
pub struct Restored {
    /// Events covered by the snapshot loaded (0: none loaded).
    pub from_snapshot: u64,
    /// Events replayed through the reducer.
    pub replayed: u64,
    /// Reading and decoding the snapshot (its projection hash checked).
    pub decode: std::time::Duration,
    /// Replaying `replayed` Events.
    pub replay: std::time::Duration,
    /// Why a stored snapshot was not used (the whole log was replayed instead).
    pub refused: Option<String>,
}

impl Restored {
    /// For the start-up line.
    pub fn summary(&self) -> String {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        format!(
            "{} Events from a snapshot ({:.0} ms) + {} replayed ({:.0} ms)",
            self.from_snapshot,
            ms(self.decode),
            self.replayed,
            ms(self.replay)
        )
    }
}

/// Background snapshots: every `every` Events the owner clones the State (rpds: a few reference
/// counts, the tables shared until changed) and, once every Event the clone covers is durable,
/// hands it to the snapshot thread, which encodes and writes it. The owner never waits: a
/// snapshot due while the thread is still busy with the previous one is skipped.
struct Snapshots {
    every: u64,
    /// Events appended since the last snapshot was taken.
    since: u64,
    /// Taken, waiting for its batch to be durable.
    waiting: Option<(Ticket, Job)>,
    tx: std::sync::mpsc::SyncSender<Job>,
    /// What the thread last did (tests and the bench read it).
    last: std::sync::Arc<std::sync::Mutex<Option<Result<SnapshotWritten, String>>>>,
}

struct Job {
    state: wasm_core::authority::State,
    through: Mark,
    events: u64,
}

/// A snapshot the thread wrote.
#[derive(Clone, Debug)]
pub struct SnapshotWritten {
    pub through: Mark,
    pub events: u64,
    pub bytes: usize,
    pub encode: std::time::Duration,
    pub write: std::time::Duration,
}

/// Snapshot every this many Events unless configured otherwise (`MWP_SNAPSHOT_EVERY`): see
/// `docs/authority.md`, "Snapshots", for the measurement behind it.
pub const DEFAULT_SNAPSHOT_EVERY: u64 = 200_000;

fn snapshot_thread(
    rx: std::sync::mpsc::Receiver<Job>,
    mut writer: Box<dyn SnapshotWriter>,
    last: std::sync::Arc<std::sync::Mutex<Option<Result<SnapshotWritten, String>>>>,
) {
    for job in rx {
        let t = std::time::Instant::now();
        let bytes = wasm_core::authority::snapshot::encode(&job.state);
        drop(job.state);
        let encode = t.elapsed();
        let t = std::time::Instant::now();
        let stored = StoredSnapshot {
            through: job.through,
            events: job.events,
            bytes,
        };
        let outcome = match writer.put_snapshot(&stored) {
            Ok(()) => Ok(SnapshotWritten {
                through: job.through,
                events: job.events,
                bytes: stored.bytes.len(),
                encode,
                write: t.elapsed(),
            }),
            Err(e) => {
                eprintln!(
                    "weave-console: warning: the snapshot of {} Events was not written: {e}",
                    job.events
                );
                Err(e.to_string())
            }
        };
        if let Ok(mut l) = last.lock() {
            *l = Some(outcome);
        }
    }
}

/// Stages 1-6 of §6.4 for batches of Command bytes: pure, independent per Command, and
/// independent of the authority's state, so it runs ahead of the owner on its own thread
/// (`runtime::run`, `bench authority`) while the owner decides the previous batch.
#[derive(Clone)]
pub struct Verifier {
    registry: crate::live_registry::LiveRegistry,
    threads: usize,
    /// Time spent verifying, in nanoseconds (read by `bench authority`).
    busy: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Verifier {
    /// Verifies `commands` on up to `threads` threads; results in the order of `commands`.
    pub fn verify(&self, commands: &[Vec<u8>]) -> Vec<Result<Verified, VerifyError>> {
        let t = std::time::Instant::now();
        let docs: Vec<&[u8]> = commands.iter().map(Vec::as_slice).collect();
        let current = self.registry.current();
        let registry = current.as_ref();
        let verified = par_chunks(&docs, self.threads, &|chunk| {
            verify_batch(chunk, DocumentKind::Command, registry)
        });
        let nanos = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.busy
            .fetch_add(nanos, std::sync::atomic::Ordering::Relaxed);
        verified
    }

    /// Total time spent in [`Verifier::verify`] by this verifier and its clones.
    pub fn busy(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.busy.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Shows the authority (its configuration prints no key byte: `SecretSeed`), the thread count
/// and whether the service has failed; not the store.
impl std::fmt::Debug for AuthorityService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorityService")
            .field("authority", &self.authority)
            .field("threads", &self.threads)
            .field("admission_service", &self.admission_service)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

/// The Admission Log over the store plus the records staged in the current batch.
struct StagedLog<'a> {
    store: &'a dyn Store,
    staged: &'a [StoredAdmission],
    tentative: Option<StoredAdmission>,
    service: Actor,
}

impl AdmissionLog for StagedLog<'_> {
    fn lookup(&mut self, organization_id: &str, signing_hash: &str) -> LookupOutcome {
        if let Some(a) = self
            .staged
            .iter()
            // The hash first: hashes differ within a few bytes, Organizations rarely.
            .find(|a| a.signing_hash == signing_hash && a.organization_id == organization_id)
        {
            return LookupOutcome::Found {
                record: a.record.clone(),
                authenticated_service: self.service.clone(),
            };
        }
        match self.store.admission(organization_id, signing_hash) {
            Ok(Some(record)) => LookupOutcome::Found {
                record,
                authenticated_service: self.service.clone(),
            },
            Ok(None) => LookupOutcome::AuthoritativeAbsence,
            Err(_) => LookupOutcome::Unavailable,
        }
    }

    fn append_or_return_existing(
        &mut self,
        organization_id: &str,
        signing_hash: &str,
        candidate: &[u8],
    ) -> AppendOutcome {
        // Staged now; committed with the Command's Events, or dropped with a rejection.
        self.tentative = Some(StoredAdmission {
            organization_id: organization_id.to_owned(),
            signing_hash: signing_hash.to_owned(),
            record: candidate.to_vec(),
            command: None,
        });
        AppendOutcome::Committed {
            record: candidate.to_vec(),
            authenticated_service: self.service.clone(),
        }
    }
}

impl AuthorityService {
    /// Opens the service over `store`, replaying its whole history into the reducer.
    pub fn open(
        store: Box<dyn Store>,
        config: AuthorityConfig,
        registry: ValidatedRegistry,
        admission_service: Actor,
    ) -> Result<AuthorityService, StoreError> {
        let mut authority = Authority::new(config);
        let restored = restore(store.as_ref(), &mut authority)?;
        let events = restored.from_snapshot + restored.replayed;
        Ok(AuthorityService {
            authority,
            times: PhaseTimes::default(),
            store,
            registry: crate::live_registry::LiveRegistry::new(registry),
            threads: available_threads(),
            admission_service,
            failed: None,
            restored,
            events,
            snapshots: None,
            keys: None,
        })
    }

    /// Starts writing a snapshot in the background every `every` Events (at least 1), if the
    /// store keeps snapshots (`Store::snapshot_writer`); whether it does.
    pub fn enable_snapshots(&mut self, every: u64) -> Result<bool, StoreError> {
        let Some(writer) = self.store.snapshot_writer()? else {
            return Ok(false);
        };
        // One snapshot waiting at most: the owner skips a snapshot rather than wait.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(1);
        let last = std::sync::Arc::default();
        let shared = std::sync::Arc::clone(&last);
        std::thread::Builder::new()
            .name("authority-snapshot".into())
            .spawn(move || snapshot_thread(rx, writer, shared))
            .map_err(|e| StoreError(format!("cannot start the snapshot thread: {e}")))?;
        self.snapshots = Some(Snapshots {
            every: every.max(1),
            since: 0,
            waiting: None,
            tx,
            last,
        });
        Ok(true)
    }

    /// What the snapshot thread last did (`None`: nothing yet, or snapshots are off).
    pub fn last_snapshot(&self) -> Option<Result<SnapshotWritten, String>> {
        self.snapshots
            .as_ref()
            .and_then(|s| s.last.lock().ok().and_then(|l| l.clone()))
    }

    /// Counts `appended` Events written under `ticket` and takes a snapshot when one is due.
    fn count_appended(&mut self, appended: u64, ticket: Ticket) {
        self.events += appended;
        let Some(s) = &mut self.snapshots else {
            return;
        };
        s.since += appended;
        if s.since >= s.every && s.waiting.is_none() {
            s.since = 0;
            let job = Job {
                state: self.authority.state.clone(),
                through: self.store.last_mark(),
                events: self.events,
            };
            s.waiting = Some((ticket, job));
        }
    }

    /// Hands the waiting snapshot to the thread once everything it covers is durable.
    fn release_snapshot(&mut self, durable: Ticket) {
        let Some(s) = &mut self.snapshots else {
            return;
        };
        if s.waiting.as_ref().is_some_and(|(t, _)| *t <= durable)
            && let Some((_, job)) = s.waiting.take()
        {
            // Busy with the previous one: skip this one (the next is due in `every` Events).
            let _ = s.tx.try_send(job);
        }
    }

    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Events in the store, written or durable (the `mwp_events` gauge).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The service over `store` with `authority` already holding the state of everything the
    /// store holds (a cluster node's follower state, docs/cluster.md): no replay.
    pub fn over(
        store: Box<dyn Store>,
        authority: Authority,
        registry: crate::live_registry::LiveRegistry,
        admission_service: Actor,
    ) -> AuthorityService {
        let events = store.last_mark().0;
        AuthorityService {
            authority,
            times: PhaseTimes::default(),
            store,
            registry,
            threads: available_threads(),
            admission_service,
            failed: None,
            restored: Restored::default(),
            events,
            snapshots: None,
            keys: None,
        }
    }

    /// Whether the service refuses everything until restarted (its store failed).
    /// Why the service refuses everything, if it does.
    pub fn failure(&self) -> Option<String> {
        self.failed.clone()
    }

    pub fn has_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Sets how many threads verify (in [`AuthorityService::begin_batch`]) and sign (at least
    /// one; the default is every core).
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// The Registry this service verifies with, shared: a development enrolment swaps it
    /// (`crate::live_registry`).
    pub fn live_registry(&self) -> crate::live_registry::LiveRegistry {
        self.registry.clone()
    }

    /// Signs each batch with the key of `keys` valid at the batch's time (a rotation of the
    /// service key switches the signer without a restart).
    pub fn use_service_keys(&mut self, keys: crate::service_keys::ServiceKeys) {
        self.keys = Some(keys);
    }

    /// Makes the authority sign with the service key valid at `now` (§6.4: an Event's
    /// signature is checked against the key valid at its `occurredAt`, which is `now`).
    /// Refused when no held key is valid at `now`: nothing is then signed rather than signed
    /// by a key the Registry does not hold valid.
    fn select_key(&mut self, now: Micros) -> Result<(), String> {
        let Some(keys) = &self.keys else {
            return Ok(());
        };
        let Some(key) = keys.at(now) else {
            return Err(format!(
                "no service key is valid at {} (held: {}); see docs/operations.md, \
                 \"The authority's key\"",
                now.format(),
                keys.key_ids().join(", ")
            ));
        };
        if key.key_id != self.authority.config.key_id {
            tracing::info!(
                from = %self.authority.config.key_id,
                to = %key.key_id,
                "the authority signs with the service key now valid"
            );
            self.authority
                .set_signing_key(key.key_id.clone(), key.seed.duplicate());
        }
        Ok(())
    }

    /// A verifier over this service's Registry, using `threads` threads, for verifying
    /// batches ahead of [`AuthorityService::begin_verified`].
    pub fn verifier(&self, threads: usize) -> Verifier {
        Verifier {
            registry: self.registry.clone(),
            threads: threads.max(1),
            busy: std::sync::Arc::default(),
        }
    }

    /// Verifies, admits and decides each Command at `now`, signs the accepted Commands' Events
    /// in one pass, then makes the batch durable in one transaction (group commit) and returns
    /// the outcomes.
    pub fn submit_batch(&mut self, commands: &[Vec<u8>], now: Micros) -> Vec<Outcome> {
        let pending = self.begin_batch(commands, now);
        self.finish_batch(pending)
    }

    /// Waits until `pending` is durable and releases its outcomes. If the store cannot make
    /// it durable, every outcome becomes `INTERNAL_ERROR` (retryable: nothing was
    /// acknowledged) and the service stops accepting.
    pub fn finish_batch(&mut self, pending: PendingBatch) -> Vec<Outcome> {
        let t = std::time::Instant::now();
        let durable = self.store.wait_durable(pending.ticket);
        self.times.durable_wait += t.elapsed();
        match durable {
            Ok(()) => {
                self.release_snapshot(pending.ticket);
                pending.outcomes
            }
            Err(e) => {
                let why = format!("{e}; the authority must be restarted");
                self.failed.get_or_insert(why.clone());
                pending
                    .outcomes
                    .into_iter()
                    .map(|_| Err(Rejection::new(ErrorCode::InternalError, why.clone())))
                    .collect()
            }
        }
    }

    /// A batch of `n` Commands all refused `INTERNAL_ERROR` with `why`: nothing decided or
    /// written (a failed store, no service key valid now).
    fn refuse_all(&self, n: usize, why: &str) -> PendingBatch {
        PendingBatch {
            outcomes: (0..n)
                .map(|_| Err(Rejection::new(ErrorCode::InternalError, why.to_owned())))
                .collect(),
            ticket: self.store.last_ticket(),
        }
    }

    /// Everything `submit_batch` does except waiting for the disk.
    pub fn begin_batch(&mut self, commands: &[Vec<u8>], now: Micros) -> PendingBatch {
        if let Some(why) = self.failed.clone() {
            return self.refuse_all(commands.len(), &why);
        }
        // Stages 1-6 for the whole batch, spread over the threads (§6.4; pure per Command).
        let t = std::time::Instant::now();
        let verified = self.verifier(self.threads).verify(commands);
        self.times.verify += t.elapsed();
        self.begin_verified(verified, commands, now)
    }

    /// [`AuthorityService::begin_batch`] for a batch already verified (by a [`Verifier`] of
    /// this service, so with the same Registry), in the batch's order; `commands` are the
    /// bytes that were verified, in the same order (a human's are stored with its admission
    /// record, for the audit export: docs/audit.md).
    pub fn begin_verified(
        &mut self,
        verified: Vec<Result<Verified, VerifyError>>,
        commands: &[Vec<u8>],
        now: Micros,
    ) -> PendingBatch {
        if let Some(why) = self.failed.clone() {
            return self.refuse_all(verified.len(), &why);
        }
        if let Err(why) = self.select_key(now) {
            // Retryable: nothing was decided or written.
            return self.refuse_all(verified.len(), &why);
        }
        let mut admissions: Vec<StoredAdmission> = Vec::new();
        let decided: Vec<Result<Accepted, Rejection>> = verified
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                let raw = commands.get(i).map(Vec::as_slice);
                self.accept_one(v, raw, now, &mut admissions)
            })
            .collect();
        let t = std::time::Instant::now();
        // Rejections keep their place; accepted Commands are signed together.
        let mut accepted = Vec::new();
        let rejections: Vec<Option<Rejection>> = decided
            .into_iter()
            .map(|d| match d {
                Ok(a) => {
                    accepted.push(a);
                    None
                }
                Err(r) => Some(r),
            })
            .collect();
        let signer = self.authority.signer();
        let threads = self.threads;
        let signed = self.authority.sign_with(accepted, &|messages| {
            par_chunks(messages, threads, &|chunk| {
                chunk.iter().map(|m| signer.sign(m)).collect()
            })
        });
        // One signed outcome per accepted Command, in order; anything else (cannot happen:
        // `sign_with` answers per Command or not at all) forgets the whole batch, because the
        // state already applied Events that would then never be written.
        let placed = match signed {
            Ok(signed) => place(rejections, signed),
            Err(r) => Err((rejections, r)),
        };
        let (outcomes, events) = match placed {
            Ok(placed) => placed,
            Err((rejections, r)) => {
                self.times.sign += t.elapsed();
                let outcomes = rejections
                    .into_iter()
                    .map(|o| o.map_or_else(|| Err(r.clone()), Err))
                    .collect();
                return self.forget_batch(outcomes, format!("signing failed: {}", r.message));
            }
        };
        self.times.sign += t.elapsed();
        if events.is_empty() && admissions.is_empty() {
            // Nothing new, but the answers may rest on earlier, still pending batches.
            return PendingBatch {
                outcomes,
                ticket: self.store.last_ticket(),
            };
        }
        let t = std::time::Instant::now();
        let appended = self.store.append_pending(&events, &admissions);
        self.times.store += t.elapsed();
        let ticket = match appended {
            Ok(ticket) => ticket,
            Err(e) => {
                return self.forget_batch(outcomes, format!("the store refused the batch: {e}"));
            }
        };
        self.count_appended(events.len() as u64, ticket);
        PendingBatch { outcomes, ticket }
    }

    /// A batch that cannot be written (the store refused it, or its Events could not be
    /// signed): nothing of it is written, so it is forgotten in memory too (rebuilt from the
    /// store) and its acceptances become `INTERNAL_ERROR`.
    fn forget_batch(&mut self, outcomes: Vec<Outcome>, cause: String) -> PendingBatch {
        if self.store.append_failure_is_final() {
            // A fenced or disconnected writer (a cluster node): the node steps down and
            // rebuilds its state from the shared log; nothing here is kept.
            self.failed.get_or_insert(cause.clone());
            let outcomes = outcomes
                .into_iter()
                .map(|o| match o {
                    Ok(Submitted::Appended(_)) => {
                        Err(Rejection::new(ErrorCode::InternalError, cause.clone()))
                    }
                    other => other,
                })
                .collect();
            return PendingBatch {
                outcomes,
                ticket: self.store.last_ticket(),
            };
        }
        self.authority.reset_state();
        let rebuilt = restore(self.store.as_ref(), &mut self.authority);
        let why = match rebuilt {
            Ok(r) => {
                self.events = r.from_snapshot + r.replayed;
                cause
            }
            Err(r) => {
                // The state may now be anything: refuse everything until restarted.
                let why = format!("{cause}; replaying the store failed ({r})");
                self.failed.get_or_insert(why.clone());
                why
            }
        };
        let outcomes = outcomes
            .into_iter()
            .map(|o| match o {
                Ok(Submitted::Appended(_)) => {
                    Err(Rejection::new(ErrorCode::InternalError, why.clone()))
                }
                other => other,
            })
            .collect();
        PendingBatch {
            outcomes,
            ticket: self.store.last_ticket(),
        }
    }

    /// First admission of a verified Command (its record staged in `admissions` only if the
    /// Command is accepted, with `raw`, the Command's bytes as received, when a human signed
    /// it), then decide, seal and apply (signatures come later, for the whole batch).
    fn accept_one(
        &mut self,
        verified: Result<Verified, VerifyError>,
        raw: Option<&[u8]>,
        now: Micros,
        admissions: &mut Vec<StoredAdmission>,
    ) -> Result<Accepted, Rejection> {
        let verified = verified.map_err(|e| {
            use wasm_core::crypto::Stage;
            match e.stage {
                // Syntax and shape errors help the sender fix its Command and reveal nothing
                // about keys: they are reported in full.
                Stage::Parse | Stage::Schema | Stage::Canonicalization => Rejection::new(
                    e.wire_code(),
                    format!("{}: {}", wire_message(e.wire_code()), e.reason),
                ),
                // Which signature, key or interval check failed stays in the audit log (S-18).
                _ => Rejection::new(e.wire_code(), wire_message(e.wire_code())),
            }
        })?;
        let t = std::time::Instant::now();
        let mut log = StagedLog {
            store: self.store.as_ref(),
            staged: admissions,
            tentative: None,
            service: self.admission_service.clone(),
        };
        let service = self.admission_service.clone();
        let record_id = format!(
            "urn:missionweaveprotocol:admission-record:{}",
            &verified.signing_hash[7..]
        );
        let mut trusted = || TrustedContext {
            admission_record_id: record_id.clone(),
            trusted_accepted_at: now.format(),
            accepted_by: service.clone(),
        };
        first_admission(&verified, &mut log, &mut trusted)
            .map_err(|e| Rejection::new(e.wire_code(), wire_message(e.wire_code())))?;
        let mut tentative = log.tentative.take();
        // A human's decision keeps its signed bytes (one copy, of a rare Command); an Agent's
        // does not (docs/audit.md).
        if verified.principal.actor_type == wasm_core::model::common::ActorType::Human
            && let Some(a) = &mut tentative
        {
            a.command = raw.map(<[u8]>::to_vec);
        }
        self.times.admission += t.elapsed();
        let t = std::time::Instant::now();
        let outcome = self.authority.accept(verified, now);
        self.times.decide_seal_evolve += t.elapsed();
        let outcome = outcome?;
        if matches!(outcome, Accepted::Appended(_)) {
            admissions.extend(tentative);
        }
        Ok(outcome)
    }
}

/// Puts the signed outcomes back between the rejections (`None` marks an accepted Command),
/// with the Events to write. Fails, returning the rejections, unless there is exactly one
/// signed outcome per accepted Command.
#[allow(clippy::type_complexity)]
fn place(
    rejections: Vec<Option<Rejection>>,
    signed: Vec<Submitted>,
) -> Result<(Vec<Outcome>, Vec<StoredEvent>), (Vec<Option<Rejection>>, Rejection)> {
    let accepted = rejections.iter().filter(|r| r.is_none()).count();
    if accepted != signed.len() {
        let why = Rejection::new(
            ErrorCode::InternalError,
            format!(
                "{} signed outcomes for {accepted} accepted Commands",
                signed.len()
            ),
        );
        return Err((rejections, why));
    }
    let mut signed = signed.into_iter();
    let mut events = Vec::new();
    let mut outcomes = Vec::with_capacity(rejections.len());
    for r in rejections {
        outcomes.push(match r {
            Some(r) => Err(r),
            None => match signed.next() {
                Some(submitted) => {
                    if let Submitted::Appended(es) = &submitted {
                        events.extend(es.iter().map(stored));
                    }
                    Ok(submitted)
                }
                // Counted above: every `None` has its signed outcome.
                None => Err(Rejection::new(
                    ErrorCode::InternalError,
                    "an accepted Command lost its signed Events",
                )),
            },
        });
    }
    Ok((outcomes, events))
}

/// Every core the process may use (1 if unknown).
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// `f` over contiguous chunks of `items` on up to `threads` threads (the calling thread takes
/// the first chunk), results concatenated in the order of `items`. Below two items per
/// thread the work stays on the calling thread.
pub fn par_chunks<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: &(dyn Fn(&[T]) -> Vec<R> + Sync),
) -> Vec<R> {
    let threads = threads.clamp(1, (items.len() / 2).max(1));
    if threads == 1 {
        return f(items);
    }
    let size = items.len().div_ceil(threads);
    let mut chunks = items.chunks(size);
    let first = chunks.next().unwrap_or_default();
    std::thread::scope(|scope| {
        let others: Vec<_> = chunks.map(|c| scope.spawn(move || f(c))).collect();
        let mut out = f(first);
        for h in others {
            match h.join() {
                Ok(part) => out.extend(part),
                // A worker that panicked is a defect; re-raise it on the owner.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        out
    })
}

fn stored(e: &wasm_core::authority::SignedEvent) -> StoredEvent {
    StoredEvent {
        group_id: e.at.group_id.clone(),
        sequence: e.at.sequence,
        kind: e
            .value
            .pointer("/kind")
            .and_then(json::Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        jcs: e.jcs.clone(),
    }
}

fn wire_message(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::ProtocolViolation => "the Command is not strict JSON or not canonicalizable",
        ErrorCode::SchemaValidationFailed => "the Command does not match its schema",
        _ => "signed document rejected",
    }
}

/// Replays every stored Event into `authority` (restart, §5: projections are rebuildable).
pub fn replay(store: &dyn Store, authority: &mut Authority) -> Result<u64, StoreError> {
    store.for_each_event(&mut |bytes| {
        let v = json::parse(bytes).map_err(|e| e.to_string())?;
        authority.replay(&v).map_err(|e| e.to_string())
    })
}

/// Rebuilds `authority`'s State (which must be empty) from the store: the newest snapshot, then
/// the Events after it (§5: projections are rebuildable, so a snapshot only shortens the
/// replay). A snapshot that cannot be read, does not decode (`snapshot::decode` checks its
/// digest, format version and projection hash) or that the Events after it do not continue is
/// never used: a warning is printed and the whole log is replayed.
pub fn restore(store: &dyn Store, authority: &mut Authority) -> Result<Restored, StoreError> {
    let mut restored = Restored::default();
    let t = std::time::Instant::now();
    let snapshot = match store.latest_snapshot() {
        Ok(s) => s,
        Err(e) => {
            restored.refused = Some(e.to_string());
            None
        }
    };
    let mut after = Mark(0);
    if let Some(s) = snapshot {
        match wasm_core::authority::snapshot::decode(&s.bytes) {
            Ok(state) => {
                authority.state = state;
                after = s.through;
                restored.from_snapshot = s.events;
            }
            Err(e) => restored.refused = Some(format!("snapshot through {:?}: {e}", s.through)),
        }
    }
    restored.decode = t.elapsed();
    let t = std::time::Instant::now();
    let apply = |authority: &mut Authority, bytes: &[u8]| -> Result<(), String> {
        let v = json::parse(bytes).map_err(|e| e.to_string())?;
        authority.replay(&v).map_err(|e| e.to_string())
    };
    let replayed = store.for_each_event_after(after, &mut |_, bytes| apply(authority, bytes));
    restored.replayed = match replayed {
        Ok(n) => n,
        Err(e) if after > Mark(0) => {
            // The snapshot and the log disagree: the log wins.
            restored.refused = Some(format!("the Events after the snapshot do not apply: {e}"));
            restored.from_snapshot = 0;
            authority.reset_state();
            store.for_each_event_after(Mark(0), &mut |_, bytes| apply(authority, bytes))?
        }
        Err(e) => return Err(e),
    };
    restored.replay = t.elapsed();
    if let Some(why) = &restored.refused {
        eprintln!("weave-console: warning: snapshot not used ({why}); the whole log was replayed");
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use simulation::harness::{Envelope, Harness};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use wasm_core::authority::handlers::payload;
    use wasm_core::json::Value;
    use wasm_core::model::common::ActorType;

    /// A store whose disk can be made to fail its syncs (EIO), or to look slow (nothing is
    /// durable until waited for), on demand.
    struct FlakyDisk {
        inner: SqliteStore,
        failing: Arc<AtomicBool>,
        slow: Arc<AtomicBool>,
    }

    impl Store for FlakyDisk {
        fn append_pending(
            &mut self,
            events: &[StoredEvent],
            admissions: &[StoredAdmission],
        ) -> Result<Ticket, StoreError> {
            self.inner.append_pending(events, admissions)
        }
        fn last_ticket(&self) -> Ticket {
            self.inner.last_ticket()
        }
        fn wait_durable(&self, ticket: Ticket) -> Result<(), StoreError> {
            if self.failing.load(Ordering::SeqCst) {
                return Err(StoreError("EIO".into()));
            }
            self.inner.wait_durable(ticket)
        }
        fn is_durable(&self, ticket: Ticket) -> bool {
            !self.failing.load(Ordering::SeqCst)
                && !self.slow.load(Ordering::SeqCst)
                && self.inner.is_durable(ticket)
        }
        fn for_each_event(
            &self,
            f: &mut dyn FnMut(&[u8]) -> Result<(), String>,
        ) -> Result<u64, StoreError> {
            self.inner.for_each_event(f)
        }
        fn for_each_event_after(
            &self,
            after: Mark,
            f: &mut crate::store::EventVisitor<'_>,
        ) -> Result<u64, StoreError> {
            self.inner.for_each_event_after(after, f)
        }
        fn last_mark(&self) -> Mark {
            self.inner.last_mark()
        }
        fn group_events(
            &self,
            g: &str,
            after: u64,
            limit: usize,
        ) -> Result<Vec<Vec<u8>>, StoreError> {
            self.inner.group_events(g, after, limit)
        }
        fn admission(&self, o: &str, h: &str) -> Result<Option<Vec<u8>>, StoreError> {
            self.inner.admission(o, h)
        }
        fn event_count(&self) -> Result<u64, StoreError> {
            self.inner.event_count()
        }
    }

    fn register(h: &mut Harness, agent: &str, now: Micros) -> Vec<u8> {
        let card = payload(vec![
            ("agentId", Value::string(h.id(agent))),
            ("version", Value::from(1u64)),
            ("displayName", Value::string(agent.to_owned())),
            ("owner", Value::string("urn:test:human:ops")),
            ("publicKey", Value::string("AAAA")),
            ("capabilities", Value::Array(vec![])),
            ("issuedAt", Value::string(now.format())),
            ("signature", Value::string("test")),
        ]);
        h.command(
            "organization-registry",
            "ext.missionweaveprotocol.registry.agent_card_register",
            &Envelope::default(),
            payload(vec![("card", Value::Object(card))]),
            now,
        )
    }

    fn service(
        h: &mut Harness,
        failing: &Arc<AtomicBool>,
        slow: &Arc<AtomicBool>,
    ) -> AuthorityService {
        let store = FlakyDisk {
            inner: SqliteStore::in_memory().expect("store"),
            failing: Arc::clone(failing),
            slow: Arc::clone(slow),
        };
        AuthorityService::open(
            Box::new(store),
            h.authority.config.duplicate(),
            h.registry.clone(),
            h.actor("group-gateway"),
        )
        .expect("open")
    }

    /// A rotation of the service key (`org key rotate service`): each batch is signed by the
    /// held key valid at its time — the old one before the new binding's start, the new one
    /// from then on, even while the old one is still in its grace — and when no held key is
    /// valid (the old one alone, past its end) nothing is signed: the batch is refused,
    /// retryable, and nothing is written.
    #[test]
    fn each_batch_is_signed_by_the_service_key_valid_at_its_time() {
        use crate::service_keys::{HeldKey, ServiceKeys};
        let mut h = Harness::new(&[("a1", ActorType::Agent), ("a2", ActorType::Agent)]);
        let (failing, slow) = (Arc::default(), Arc::default());
        let mut svc = service(&mut h, &failing, &slow);
        let t0 = Micros::parse("2026-12-06T10:00:00Z").expect("t");
        let switch = t0.plus_seconds(60);
        let old_end = switch.plus_seconds(30);
        let held = |key_id: &str, seed: &wasm_core::crypto::SecretSeed, from, ends| HeldKey {
            key_id: key_id.to_owned(),
            signer: wasm_core::crypto::ed25519::Signer::from_seed(seed),
            seed: seed.duplicate(),
            valid_from: from,
            ends,
        };
        let old_id = h.authority.config.key_id.clone();
        let new_seed = wasm_core::crypto::SecretSeed::take(&mut [9u8; 32]);
        let keys = ServiceKeys::new(vec![
            held(&old_id, &h.authority.config.seed, t0, Some(old_end)),
            held("urn:test:key:authority-2", &new_seed, switch, None),
        ]);
        svc.use_service_keys(keys.clone());
        let signer_of = |o: &Outcome| match o {
            Ok(Submitted::Appended(es)) => es
                .iter()
                .map(|e| {
                    e.value
                        .pointer("/signature/keyId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect::<Vec<_>>(),
            other => panic!("not appended: {other:?}"),
        };
        let before = register(&mut h, "a1", t0.plus_seconds(1));
        let out = svc.submit_batch(&[before], t0.plus_seconds(1));
        assert_eq!(signer_of(&out[0]), vec![old_id.clone()]);
        let after = register(&mut h, "a2", switch.plus_seconds(1));
        let out = svc.submit_batch(&[after], switch.plus_seconds(1));
        assert_eq!(
            signer_of(&out[0]),
            vec!["urn:test:key:authority-2".to_owned()]
        );
        // The new key not held (a server that has not seen the rotation), past the old key's
        // end: refused, nothing written.
        keys.replace(vec![held(
            &old_id,
            &h.authority.config.seed,
            t0,
            Some(old_end),
        )]);
        let events = svc.events();
        let late = register(&mut h, "a1", old_end);
        let out = svc.submit_batch(&[late], old_end);
        match &out[0] {
            Err(r) => {
                assert_eq!(r.code, ErrorCode::InternalError);
                assert!(
                    r.message.contains("no service key is valid"),
                    "{}",
                    r.message
                );
            }
            other => panic!("signed by an ended key: {other:?}"),
        }
        assert_eq!(svc.events(), events);
    }

    /// No `{:?}` of the authority, its configuration, its signer or the service shows any
    /// spelling of the Group Authority's seed (bytes as Debug prints them, hex, base64url).
    #[test]
    fn debug_output_never_shows_the_authority_seed() {
        let mut h = Harness::new(&[("a1", ActorType::Agent)]);
        let svc = service(
            &mut h,
            &Arc::new(AtomicBool::new(false)),
            &Arc::new(AtomicBool::new(false)),
        );
        let seed = *svc.authority.config.seed.expose();
        let spellings = [
            format!("{seed:?}"),
            format!("{seed:02x?}"),
            format!("{:?}", &seed[..8]),
            format!("{:02x?}", &seed[..8]),
            wasm_core::encoding::hex(&seed[..8]),
            wasm_core::encoding::b64url_encode(&seed)[..12].to_owned(),
        ];
        let shown = [
            format!("{svc:?}"),
            format!("{svc:#?}"),
            format!("{:?}", svc.authority),
            format!("{:#?}", svc.authority.config),
            format!("{:?}", svc.authority.signer()),
            format!("{:?}", h.principals["group-gateway"]),
        ];
        for text in &shown {
            assert!(
                text.contains("<redacted>") || text.contains("Signer("),
                "{text}"
            );
            for s in &spellings {
                assert!(!text.contains(s.as_str()), "{s} appears in {text}");
            }
        }
        assert!(shown[0].contains("AuthorityService") && shown[0].contains("group-gateway"));
    }

    /// `place` refuses any answer that is not one signed outcome per accepted Command, so a
    /// batch is never written with an accepted Command missing or an extra one invented.
    #[test]
    fn place_needs_exactly_one_signed_outcome_per_accepted_command() {
        let rejected = || Some(Rejection::new(ErrorCode::InvalidCommand, "no"));
        let receipt = || {
            Submitted::Duplicate(wasm_core::authority::Receipt {
                command_hash: String::new(),
                events: Vec::new(),
            })
        };
        // Two accepted (None) around a rejection.
        let slots = || vec![None, rejected(), None];
        for signed in [
            vec![],
            vec![receipt()],
            vec![receipt(), receipt(), receipt()],
        ] {
            let n = signed.len();
            match place(slots(), signed) {
                Err((back, why)) => {
                    assert_eq!(back.len(), 3, "the rejections come back for the answers");
                    assert_eq!(why.code, ErrorCode::InternalError);
                }
                Ok(_) => panic!("{n} signed outcomes for 2 accepted Commands were placed"),
            }
        }
        let (outcomes, events) = place(slots(), vec![receipt(), receipt()]).expect("placed");
        assert!(matches!(
            outcomes.as_slice(),
            [
                Ok(Submitted::Duplicate(_)),
                Err(_),
                Ok(Submitted::Duplicate(_))
            ]
        ));
        assert!(events.is_empty());
    }

    /// A batch that mixes acceptances and rejections answers each Command in its own place,
    /// verified and signed on several threads, and writes exactly the accepted Commands' Events.
    #[test]
    fn a_mixed_batch_answers_each_command_in_place() {
        let names: Vec<String> = (0..6).map(|i| format!("m{i}")).collect();
        let agents: Vec<(&str, ActorType)> = names
            .iter()
            .map(|n| (n.as_str(), ActorType::Agent))
            .collect();
        let mut h = Harness::new(&agents);
        let now = Micros::parse("2026-07-15T08:00:00Z").unwrap_or_default();
        let no = Arc::new(AtomicBool::new(false));
        for threads in [1, 2, 3] {
            let mut svc = service(&mut h, &no, &no);
            svc.set_threads(threads);
            let mut batch = Vec::new();
            for (i, name) in names.iter().enumerate() {
                batch.push(register(&mut h, name, now));
                if i % 2 == 0 {
                    batch.push(b"{not json".to_vec());
                }
            }
            // A byte-identical retry inside the batch is answered from the first one's receipt.
            batch.push(batch[0].clone());
            let before = svc.store().event_count().expect("count");
            let out = svc.submit_batch(&batch, now);
            assert_eq!(out.len(), batch.len());
            let shape: String = out
                .iter()
                .map(|o| match o {
                    Ok(Submitted::Appended(_)) => 'A',
                    Ok(Submitted::Duplicate(_)) => 'D',
                    Err(r) if r.code == ErrorCode::ProtocolViolation => 'x',
                    Err(_) => '?',
                })
                .collect();
            assert_eq!(shape, "AxAAxAAxAD", "{threads} threads");
            let written = svc.store().event_count().expect("count") - before;
            assert_eq!(written, 6, "one Event per accepted registration");
        }
    }

    #[test]
    fn the_pipeline_answers_in_order_and_holds_at_most_max_in_flight() {
        let names: Vec<String> = (0..8).map(|i| format!("a{i}")).collect();
        let agents: Vec<(&str, ActorType)> = names
            .iter()
            .map(|n| (n.as_str(), ActorType::Agent))
            .collect();
        let mut h = Harness::new(&agents);
        let now = Micros::parse("2026-07-15T08:00:00Z").unwrap_or_default();
        let slow = Arc::new(AtomicBool::new(true));
        let mut svc = service(&mut h, &Arc::new(AtomicBool::new(false)), &slow);
        let mut pipeline: Pipeline<usize> = Pipeline::default();
        let mut released = Vec::new();
        for (i, name) in names.iter().enumerate().take(6) {
            let begun = svc.begin_batch(&[register(&mut h, name, now)], now);
            for (outcomes, tag) in pipeline.push(&mut svc, begun, i) {
                assert!(matches!(outcomes.as_slice(), [Ok(Submitted::Appended(_))]));
                released.push(tag);
            }
            // A slow disk: only what exceeds the bound is waited for, oldest first.
            assert_eq!(
                released.len(),
                (i + 1).saturating_sub(Pipeline::<usize>::MAX_IN_FLIGHT)
            );
        }
        // A fast disk again: the next push releases everything durable, in order.
        slow.store(false, Ordering::SeqCst);
        let begun = svc.begin_batch(&[register(&mut h, &names[6], now)], now);
        released.extend(
            pipeline
                .push(&mut svc, begun, 6)
                .into_iter()
                .map(|(_, t)| t),
        );
        assert_eq!(released, [0, 1, 2, 3, 4, 5, 6]);
        assert!(pipeline.is_empty());
        assert!(pipeline.finish_oldest(&mut svc).is_none());
    }

    #[test]
    fn pipelined_batches_are_answered_in_order_and_a_failed_sync_is_final() {
        let mut h = Harness::new(&[("a1", ActorType::Agent), ("a2", ActorType::Agent)]);
        let now = Micros::parse("2026-07-15T08:00:00Z").unwrap_or_default();
        let failing = Arc::new(AtomicBool::new(false));
        let mut svc = service(&mut h, &failing, &Arc::new(AtomicBool::new(false)));
        // Two batches in flight, answered in order once durable.
        let command = register(&mut h, "a1", now);
        let first = svc.begin_batch(std::slice::from_ref(&command), now);
        // A byte-identical retry, decided against the first batch's state before it is durable.
        let second = svc.begin_batch(&[command], now);
        assert!(second.ticket >= first.ticket, "tickets follow write order");
        assert!(matches!(
            svc.finish_batch(first).as_slice(),
            [Ok(Submitted::Appended(_))]
        ));
        let retried = svc.finish_batch(second);
        assert!(
            matches!(retried.as_slice(), [Ok(Submitted::Duplicate(_))]),
            "an exact retry is answered from the receipt: {retried:?}"
        );
        // The disk fails: the pending batch is not acknowledged, and nothing is afterwards.
        failing.store(true, Ordering::SeqCst);
        let out = svc.submit_batch(&[register(&mut h, "a2", now)], now);
        assert!(matches!(out.as_slice(), [Err(r)] if r.code == ErrorCode::InternalError));
        failing.store(false, Ordering::SeqCst);
        let out = svc.submit_batch(&[register(&mut h, "a2", now)], now);
        match out.as_slice() {
            [Err(r)] => {
                assert_eq!(r.code, ErrorCode::InternalError);
                assert!(r.message.contains("restarted"), "{}", r.message);
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// A data directory of its own for a test, emptied first.
    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("weave-snap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn file_service(h: &Harness, dir: &std::path::Path) -> AuthorityService {
        let store = SqliteStore::open(&dir.join("authority.sqlite")).expect("store");
        AuthorityService::open(
            Box::new(store),
            h.authority.config.duplicate(),
            h.registry.clone(),
            h.actor("group-gateway"),
        )
        .expect("open")
    }

    /// The projection of the whole log replayed, snapshots ignored.
    fn full_replay_hash(h: &Harness, dir: &std::path::Path) -> (u64, String) {
        let store = SqliteStore::open(&dir.join("authority.sqlite")).expect("store");
        let mut a = Authority::new(h.authority.config.duplicate());
        let n = replay(&store, &mut a).expect("replay");
        (n, a.state.projection_hash())
    }

    /// Waits (a few seconds at most) for the snapshot thread to have written one covering at
    /// least `events` Events.
    fn wait_for_snapshot(svc: &AuthorityService, events: u64) -> SnapshotWritten {
        for _ in 0..500 {
            if let Some(Ok(w)) = svc.last_snapshot()
                && w.events >= events
            {
                return w;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("no snapshot of {events} Events: {:?}", svc.last_snapshot());
    }

    /// Twelve agents registered one per batch (one Event each), every `every` Events a
    /// snapshot in the background; then two more after the last snapshot.
    fn history_with_snapshots(name: &str, every: u64) -> (Harness, std::path::PathBuf, u64) {
        let names: Vec<String> = (0..14).map(|i| format!("s{i}")).collect();
        let agents: Vec<(&str, ActorType)> = names
            .iter()
            .map(|n| (n.as_str(), ActorType::Agent))
            .collect();
        let mut h = Harness::new(&agents);
        let now = Micros::parse("2026-07-15T08:00:00Z").unwrap_or_default();
        let dir = temp_dir(name);
        let mut svc = file_service(&h, &dir);
        assert!(
            svc.enable_snapshots(every).expect("snapshots"),
            "SQLite keeps snapshots"
        );
        for name in &names[..12] {
            let cmd = register(&mut h, name, now);
            for o in svc.submit_batch(&[cmd], now) {
                assert!(matches!(o, Ok(Submitted::Appended(_))), "{o:?}");
            }
            // One at a time, so that none is skipped while the thread is busy.
            let due = svc.events - svc.events % every;
            if due > 0 {
                wait_for_snapshot(&svc, due);
            }
        }
        let written = wait_for_snapshot(&svc, 12);
        assert_eq!(written.events, 12, "every {every} Events, the last at 12");
        assert_eq!(written.through, svc.store().last_mark());
        // Two more, not covered by a snapshot (every > 2).
        for name in &names[12..] {
            let cmd = register(&mut h, name, now);
            for o in svc.submit_batch(&[cmd], now) {
                assert!(matches!(o, Ok(Submitted::Appended(_))), "{o:?}");
            }
        }
        drop(svc);
        (h, dir, 14)
    }

    #[test]
    fn a_restart_loads_the_snapshot_and_replays_only_the_events_after_it() {
        let (h, dir, total) = history_with_snapshots("restart", 4);
        let (n, full) = full_replay_hash(&h, &dir);
        assert_eq!(n, total);
        let svc = file_service(&h, &dir);
        assert_eq!(svc.restored.refused, None);
        assert_eq!(svc.restored.from_snapshot, 12);
        assert_eq!(svc.restored.replayed, 2, "the Events after the snapshot");
        assert_eq!(svc.authority.state.projection_hash(), full);
        assert!(
            svc.restored
                .summary()
                .starts_with("12 Events from a snapshot")
        );
        drop(svc);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_corrupt_snapshot_falls_back_to_a_full_replay() {
        let (h, dir, total) = history_with_snapshots("corrupt", 6);
        let (_, full) = full_replay_hash(&h, &dir);
        let snapshots = crate::store::sqlite::snapshot_path(&dir.join("authority.sqlite"));
        let conn = rusqlite::Connection::open(&snapshots).expect("snapshots db");
        let mut bytes: Vec<u8> = conn
            .query_row("SELECT bytes FROM snapshot", [], |r| r.get(0))
            .expect("one snapshot");
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        conn.execute("UPDATE snapshot SET bytes = ?1", rusqlite::params![bytes])
            .expect("corrupt it");
        drop(conn);
        let svc = file_service(&h, &dir);
        let why = svc.restored.refused.clone().expect("refused");
        assert!(why.contains("digest"), "{why}");
        assert_eq!(svc.restored.from_snapshot, 0);
        assert_eq!(svc.restored.replayed, total);
        assert_eq!(svc.authority.state.projection_hash(), full);
        drop(svc);
        // A snapshot that claims other Events than the log holds up to its Mark is refused too.
        let conn = rusqlite::Connection::open(&snapshots).expect("snapshots db");
        conn.execute("UPDATE snapshot SET events = events + 1", [])
            .expect("miscount");
        drop(conn);
        let svc = file_service(&h, &dir);
        assert!(
            svc.restored
                .refused
                .clone()
                .expect("refused")
                .contains("does not match this log")
        );
        assert_eq!(svc.authority.state.projection_hash(), full);
        drop(svc);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn snapshots_are_off_until_enabled_and_in_memory_stores_keep_none() {
        let mut h = Harness::new(&[("a1", ActorType::Agent)]);
        let no = Arc::new(AtomicBool::new(false));
        let mut svc = service(&mut h, &no, &no);
        assert!(svc.last_snapshot().is_none());
        assert!(
            !svc.enable_snapshots(1).expect("no error"),
            "in memory: no snapshots"
        );
        assert_eq!(svc.store().last_mark(), Mark(0));
    }
}
