//! The embedded Group Authority service: the sans-IO reducer of wasm-core wrapped with the
//! durable store. One owner (a single thread or task) drives it, so the per-Group order is the
//! order of `submit_batch` calls.
//!
//! The path of one Command: six-stage verification (§6.4) → first admission against the
//! Admission Log (S-10; the record is staged, kept only if the Command is accepted) →
//! `Authority::submit` (decide, seal, evolve) → the batch's Events and admission records are
//! written in ONE transaction → only then are the outcomes returned (acknowledged). If the
//! write fails, in-memory state is rebuilt from the store, so nothing unacknowledged survives.

use crate::store::{Store, StoreError, StoredAdmission, StoredEvent};
use wasm_core::admission::{
    AdmissionLog, AppendOutcome, LookupOutcome, TrustedContext, first_admission,
};
use wasm_core::authority::{Authority, AuthorityConfig, Micros, Rejection, Submitted};
use wasm_core::crypto::{DocumentKind, ValidatedRegistry, verify};
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
    pub store: std::time::Duration,
}

pub struct AuthorityService {
    pub authority: Authority,
    pub times: PhaseTimes,
    store: Box<dyn Store>,
    registry: ValidatedRegistry,
    /// The Organization service that writes First-Admission Records.
    admission_service: Actor,
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
            .find(|a| a.organization_id == organization_id && a.signing_hash == signing_hash)
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
            registry,
            admission_service,
        })
    }

    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Verifies, admits and decides each Command at `now`, then makes the batch durable in one
    /// transaction (group commit) and returns the outcomes.
    pub fn submit_batch(&mut self, commands: &[Vec<u8>], now: Micros) -> Vec<Outcome> {
        let mut outcomes = Vec::with_capacity(commands.len());
        let mut events: Vec<StoredEvent> = Vec::new();
        let mut admissions: Vec<StoredAdmission> = Vec::new();
        for bytes in commands {
            outcomes.push(self.submit_one(bytes, now, &mut events, &mut admissions));
        }
        if events.is_empty() && admissions.is_empty() {
            return outcomes;
        }
        let t = std::time::Instant::now();
        let appended = self.store.append(&events, &admissions);
        self.times.store += t.elapsed();
        if let Err(e) = appended {
            // Nothing of this batch is durable: forget it in memory too.
            let mut fresh = Authority::new(self.authority.config.clone());
            let rebuilt = replay(self.store.as_ref(), &mut fresh);
            self.authority = fresh;
            let why = match rebuilt {
                Ok(_) => format!("the store refused the batch: {e}"),
                Err(r) => format!("the store refused the batch ({e}) and replay failed ({r})"),
            };
            return outcomes
                .into_iter()
                .map(|o| match o {
                    Ok(Submitted::Appended(_)) => {
                        Err(Rejection::new(ErrorCode::InternalError, why.clone()))
                    }
                    other => other,
                })
                .collect();
        }
        outcomes
    }

    fn submit_one(
        &mut self,
        bytes: &[u8],
        now: Micros,
        events: &mut Vec<StoredEvent>,
        admissions: &mut Vec<StoredAdmission>,
    ) -> Outcome {
        let t = std::time::Instant::now();
        let verified = verify(bytes, DocumentKind::Command, &self.registry).map_err(|e| {
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
        self.times.verify += t.elapsed();
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
        let outcome = self.authority.submit(&verified, now);
        self.times.decide_seal_evolve += t.elapsed();
        let outcome = outcome?;
        if let Submitted::Appended(es) = &outcome {
            for e in es {
                events.push(StoredEvent {
                    group_id: e.at.group_id.clone(),
                    sequence: e.at.sequence,
                    kind: e
                        .value
                        .pointer("/kind")
                        .and_then(json::Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    jcs: e.jcs.clone(),
                });
            }
            admissions.extend(tentative);
        }
        Ok(outcome)
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
        authority.replay(&v)
    })
}
