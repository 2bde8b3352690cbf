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

use crate::store::{Store, StoreError, StoredAdmission, StoredEvent};
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
        replay(store.as_ref(), &mut authority)?;
        Ok(AuthorityService {
            authority,
            times: PhaseTimes::default(),
            store,
            registry: crate::live_registry::LiveRegistry::new(registry),
            threads: available_threads(),
            admission_service,
            failed: None,
        })
    }

    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The service over `store` with `authority` already holding the state of everything the
    /// store holds (a cluster node's follower state, docs/cluster.md): no replay.
    pub fn over(
        store: Box<dyn Store>,
        authority: Authority,
        registry: crate::live_registry::LiveRegistry,
        admission_service: Actor,
    ) -> AuthorityService {
        AuthorityService {
            authority,
            times: PhaseTimes::default(),
            store,
            registry,
            threads: available_threads(),
            admission_service,
            failed: None,
        }
    }

    /// Whether the service refuses everything until restarted (its store failed).
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
            Ok(()) => pending.outcomes,
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

    /// Everything `submit_batch` does except waiting for the disk.
    pub fn begin_batch(&mut self, commands: &[Vec<u8>], now: Micros) -> PendingBatch {
        if let Some(why) = &self.failed {
            let outcomes = commands
                .iter()
                .map(|_| Err(Rejection::new(ErrorCode::InternalError, why.clone())))
                .collect();
            return PendingBatch {
                outcomes,
                ticket: self.store.last_ticket(),
            };
        }
        // Stages 1-6 for the whole batch, spread over the threads (§6.4; pure per Command).
        let t = std::time::Instant::now();
        let verified = self.verifier(self.threads).verify(commands);
        self.times.verify += t.elapsed();
        self.begin_verified(verified, now)
    }

    /// [`AuthorityService::begin_batch`] for a batch already verified (by a [`Verifier`] of
    /// this service, so with the same Registry), in the batch's order.
    pub fn begin_verified(
        &mut self,
        verified: Vec<Result<Verified, VerifyError>>,
        now: Micros,
    ) -> PendingBatch {
        if let Some(why) = &self.failed {
            let outcomes = verified
                .iter()
                .map(|_| Err(Rejection::new(ErrorCode::InternalError, why.clone())))
                .collect();
            return PendingBatch {
                outcomes,
                ticket: self.store.last_ticket(),
            };
        }
        let mut admissions: Vec<StoredAdmission> = Vec::new();
        let decided: Vec<Result<Accepted, Rejection>> = verified
            .into_iter()
            .map(|v| self.accept_one(v, now, &mut admissions))
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
        let rebuilt = replay(self.store.as_ref(), &mut self.authority);
        let why = match rebuilt {
            Ok(_) => cause,
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
    /// Command is accepted), then decide, seal and apply (signatures come later, for the whole
    /// batch).
    fn accept_one(
        &mut self,
        verified: Result<Verified, VerifyError>,
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
        let tentative = log.tentative.take();
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
}
