//! First-Admission Records and historical trust (§6.4, checklist S-8..S-15).
//!
//! Admission is a separate layer after the six cryptographic stages: it needs a completed
//! [`Verified`] and an [`AdmissionLog`] adapter, the trusted deployment seam whose typed outcomes
//! (never a caller-supplied boolean) decide found / absent / failed. Every failure maps on the wire
//! to `AUTH_INVALID_SIGNATURE`; the [`AdmissionReason`] is the protected audit diagnostic.
//!
//! ```text
//! first admission:   lookup ─ found ───────────────────────────────▶ validate returned record
//!                           └ authoritative absence ─▶ trusted context ─▶ candidate (interval
//!                             checked) ─▶ append-or-return-existing ─▶ validate returned record
//! historical replay: lookup ─ found ─▶ validate record;  absence ─▶ record-missing
//! anything else (unauthenticated, integrity, unavailable, indeterminate, conflict) fails closed
//! ```

use crate::crypto::{DocumentKind, Verified};
use crate::json::{self, Object, Value};
use crate::model::common::Actor;
use crate::model::first_admission_record::FirstAdmissionRecord;
use crate::model::{self as m};
use crate::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

crate::string_enum!(
    /// The stable protected reasons of an admission failure (S-15).
    pub enum AdmissionReason {
        RecordMissing = "record-missing",
        RecordBindingMismatch = "record-binding-mismatch",
        TrustedTimeOutsideKeyInterval = "trusted-time-outside-key-interval",
        MalformedTrustedTime = "malformed-trusted-time",
        RecordConflict = "record-conflict",
        RecordSchemaInvalid = "record-schema-invalid",
        LogAuthenticationFailed = "log-authentication-failed",
        AppendIntegrityNotEstablished = "append-integrity-not-established",
        LogUnavailable = "log-unavailable",
        LogIndeterminate = "log-indeterminate",
        CommitFailed = "commit-failed",
        EventSelfAnchoring = "event-self-anchoring",
    }
);

/// An admission failure: stage `admission`, wire `AUTH_INVALID_SIGNATURE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionError {
    pub reason: AdmissionReason,
    pub detail: String,
}

impl AdmissionError {
    fn new(reason: AdmissionReason, detail: impl Into<String>) -> AdmissionError {
        AdmissionError {
            reason,
            detail: detail.into(),
        }
    }

    pub fn wire_code(&self) -> m::error::ErrorCode {
        m::error::ErrorCode::AuthInvalidSignature
    }
}

impl fmt::Display for AdmissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AUTH_INVALID_SIGNATURE (admission, {}): {}",
            self.reason, self.detail
        )
    }
}

impl std::error::Error for AdmissionError {}

/// The Admission Log's typed lookup result (S-9).
#[derive(Clone, Debug)]
pub enum LookupOutcome {
    Found {
        record: Vec<u8>,
        authenticated_service: Actor,
    },
    AuthoritativeAbsence,
    Unauthenticated,
    IntegrityFailed,
    Unavailable,
    Indeterminate,
}

/// The Admission Log's typed append-or-return-existing result (S-9).
#[derive(Clone, Debug)]
pub enum AppendOutcome {
    Committed {
        record: Vec<u8>,
        authenticated_service: Actor,
    },
    Existing {
        record: Vec<u8>,
        authenticated_service: Actor,
    },
    Conflict,
    Unauthenticated,
    IntegrityFailed,
    Unavailable,
    Indeterminate,
    CommitFailed,
}

/// The Organization's Admission Log, keyed by `(organizationId, signingHash)`.
pub trait AdmissionLog {
    fn lookup(&mut self, organization_id: &str, signing_hash: &str) -> LookupOutcome;
    /// Atomically appends `candidate` (its strict JSON bytes) or returns the existing record.
    fn append_or_return_existing(
        &mut self,
        organization_id: &str,
        signing_hash: &str,
        candidate: &[u8],
    ) -> AppendOutcome;
}

/// The Organization-assigned acceptance context for a new admission (never signer-supplied).
#[derive(Clone, Debug)]
pub struct TrustedContext {
    pub admission_record_id: String,
    /// Kept as text: a malformed value is an admission failure, not a type error.
    pub trusted_accepted_at: String,
    pub accepted_by: Actor,
}

/// A validated First-Admission Record.
#[derive(Clone, Debug)]
pub struct Admitted {
    pub admission_record_id: String,
    pub trusted_accepted_at: Timestamp,
    pub accepted_by: Actor,
    /// The record as parsed from the log's returned bytes.
    pub record: Value,
}

fn log_failure(reason: AdmissionReason, what: &str) -> AdmissionError {
    AdmissionError::new(reason, what.to_owned())
}

/// First admission of a newly presented document (S-10). `trusted` is only asked for after an
/// authoritative absence.
pub fn first_admission(
    verified: &Verified,
    log: &mut dyn AdmissionLog,
    trusted: &mut dyn FnMut() -> TrustedContext,
) -> Result<Admitted, AdmissionError> {
    use AdmissionReason as R;
    match log.lookup(&verified.organization_id, &verified.signing_hash) {
        LookupOutcome::Found {
            record,
            authenticated_service,
        } => return validate_record(verified, &record, &authenticated_service),
        LookupOutcome::AuthoritativeAbsence => {}
        other => return Err(lookup_failure(other)),
    }
    let cx = trusted();
    let at = Timestamp::parse_profile(&cx.trusted_accepted_at).map_err(|e| {
        AdmissionError::new(
            R::MalformedTrustedTime,
            format!("trustedAcceptedAt {:?}: {e}", cx.trusted_accepted_at),
        )
    })?;
    check_interval(verified, &at)?;
    let candidate = candidate_record(verified, &cx);
    let bytes = json::to_string(&candidate);
    match log.append_or_return_existing(
        &verified.organization_id,
        &verified.signing_hash,
        bytes.as_bytes(),
    ) {
        AppendOutcome::Committed {
            record,
            authenticated_service,
        }
        | AppendOutcome::Existing {
            record,
            authenticated_service,
        } => {
            // Our own bytes back: validate from the values we hold (S-11 by construction).
            if record == bytes.as_bytes() {
                let fast = admit_own_candidate(verified, cx, candidate, at, &authenticated_service);
                // Debug builds check on every admission that the fast path answers exactly
                // what parsing the bytes back answers.
                debug_assert_eq!(
                    fast.as_ref().map(|a| format!("{a:?}")),
                    validate_record(verified, &record, &authenticated_service)
                        .ok()
                        .map(|a| format!("{a:?}")),
                );
                if let Some(admitted) = fast {
                    return Ok(admitted);
                }
            }
            validate_record(verified, &record, &authenticated_service)
        }
        AppendOutcome::Conflict => Err(log_failure(
            R::RecordConflict,
            "another record exists under this logical key with different bindings",
        )),
        AppendOutcome::Unauthenticated => Err(log_failure(
            R::LogAuthenticationFailed,
            "the accepting service was not authenticated",
        )),
        AppendOutcome::IntegrityFailed => Err(log_failure(
            R::AppendIntegrityNotEstablished,
            "append-only integrity was not established",
        )),
        AppendOutcome::Unavailable => Err(log_failure(R::LogUnavailable, "log unavailable")),
        AppendOutcome::Indeterminate => Err(log_failure(
            R::LogIndeterminate,
            "append outcome indeterminate",
        )),
        AppendOutcome::CommitFailed => Err(log_failure(R::CommitFailed, "commit failed")),
    }
}

/// Historical replay (S-13): requires a found record and validates it; never appends.
pub fn historical_replay(
    verified: &Verified,
    log: &mut dyn AdmissionLog,
) -> Result<Admitted, AdmissionError> {
    match log.lookup(&verified.organization_id, &verified.signing_hash) {
        LookupOutcome::Found {
            record,
            authenticated_service,
        } => validate_record(verified, &record, &authenticated_service),
        LookupOutcome::AuthoritativeAbsence => Err(log_failure(
            AdmissionReason::RecordMissing,
            "no First-Admission Record for this signing hash",
        )),
        other => Err(lookup_failure(other)),
    }
}

fn lookup_failure(o: LookupOutcome) -> AdmissionError {
    use AdmissionReason as R;
    match o {
        LookupOutcome::Unauthenticated => {
            log_failure(R::LogAuthenticationFailed, "lookup was not authenticated")
        }
        LookupOutcome::IntegrityFailed => log_failure(
            R::AppendIntegrityNotEstablished,
            "log integrity was not established",
        ),
        LookupOutcome::Unavailable => log_failure(R::LogUnavailable, "log unavailable"),
        _ => log_failure(R::LogIndeterminate, "lookup outcome indeterminate"),
    }
}

/// The candidate First-Admission Record for a new admission (S-8): exactly nine members.
pub fn candidate_record(verified: &Verified, cx: &TrustedContext) -> Value {
    let mut o = Object::with_capacity(9);
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "admissionRecordId",
        Value::string(cx.admission_record_id.clone()),
    );
    o.insert(
        "organizationId",
        Value::string(verified.organization_id.clone()),
    );
    o.insert("documentKind", Value::string(verified.kind.as_str()));
    o.insert("signingHash", Value::string(verified.signing_hash.clone()));
    o.insert("keyId", Value::string(verified.key_id.clone()));
    o.insert("principal", m::ToJson::to_json(&verified.principal));
    o.insert(
        "trustedAcceptedAt",
        Value::string(cx.trusted_accepted_at.clone()),
    );
    o.insert("acceptedBy", m::ToJson::to_json(&cx.accepted_by));
    Value::Object(o)
}

/// The fast path of S-11 when the log returned exactly the bytes of our own candidate: the
/// record is then the candidate, so it is validated from the values it was built from instead
/// of parsing it back. The bindings to the verified document (organizationId, documentKind,
/// signingHash, keyId, principal) hold by construction, and the interval check already passed
/// for this very `at` before the append. What can still fail is checked on the values: the
/// record schema (every `Id`, `sha256:`, a service `acceptedBy`), the authenticated service
/// (S-11) and the S-14 self-anchor rule. On any doubt it answers `None` and the caller runs the
/// full [`validate_record`], which then reports exactly the error it always did.
fn admit_own_candidate(
    verified: &Verified,
    cx: TrustedContext,
    record: Value,
    at: Timestamp,
    authenticated_service: &Actor,
) -> Option<Admitted> {
    let schema_ok = cx.accepted_by == *authenticated_service
        && cx.accepted_by.actor_type == m::common::ActorType::Service
        && crate::encoding::is_sha256_hash(&verified.signing_hash)
        && [
            cx.admission_record_id.as_str(),
            &verified.organization_id,
            &verified.key_id,
            verified.principal.id.as_str(),
            cx.accepted_by.id.as_str(),
        ]
        .into_iter()
        .all(|id| crate::id::check_id(id).is_ok());
    if !schema_ok {
        return None;
    }
    let TrustedContext {
        admission_record_id,
        accepted_by,
        ..
    } = cx;
    // S-14: our candidate has no `signature`, so only plain equality could make it the Event.
    // (It never is: a record has members an Event has not. Answering `None` more often only
    // sends the record through the full `validate_record`, which gives the same outcome.)
    if verified.kind == DocumentKind::Event && record == verified.document {
        return None;
    }
    Some(Admitted {
        admission_record_id,
        trusted_accepted_at: at,
        accepted_by,
        record,
    })
}

fn check_interval(verified: &Verified, at: &Timestamp) -> Result<(), AdmissionError> {
    if verified.binding.valid_at(at.instant()) {
        Ok(())
    } else {
        Err(AdmissionError::new(
            AdmissionReason::TrustedTimeOutsideKeyInterval,
            format!(
                "trustedAcceptedAt {at} is outside the key's interval (validFrom {}, \
                 validUntil {}, revokedAt {})",
                verified.binding.valid_from,
                verified
                    .binding
                    .valid_until
                    .as_ref()
                    .map_or("-".into(), ToString::to_string),
                verified
                    .binding
                    .revoked_at
                    .as_ref()
                    .map_or("-".into(), ToString::to_string),
            ),
        ))
    }
}

/// Validates a record returned by the log (S-11): never the candidate's bytes.
fn validate_record(
    verified: &Verified,
    bytes: &[u8],
    authenticated_service: &Actor,
) -> Result<Admitted, AdmissionError> {
    use AdmissionReason as R;
    let record = json::parse(bytes)
        .map_err(|e| AdmissionError::new(R::RecordSchemaInvalid, format!("record: {e}")))?;
    // S-14: a Signed Event is never its own admission anchor.
    if verified.kind == DocumentKind::Event && is_self_anchor(verified, &record) {
        return Err(AdmissionError::new(
            R::EventSelfAnchoring,
            "the log returned the Event itself as its admission record",
        ));
    }
    let typed: FirstAdmissionRecord = m::from_value(&record, true)
        .map_err(|e| AdmissionError::new(R::RecordSchemaInvalid, e.to_string()))?;
    let accepted_by = typed.accepted_by.0.clone();
    let mismatches: Vec<&str> = [
        (
            "organizationId",
            typed.organization_id.as_str() == verified.organization_id,
        ),
        ("documentKind", typed.document_kind == verified.kind),
        (
            "signingHash",
            typed.signing_hash.as_str() == verified.signing_hash,
        ),
        ("keyId", typed.key_id.as_str() == verified.key_id),
        ("principal", typed.principal == verified.principal),
        ("acceptedBy", accepted_by == *authenticated_service),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(name, _)| name)
    .collect();
    if !mismatches.is_empty() {
        return Err(AdmissionError::new(
            R::RecordBindingMismatch,
            format!("record differs from the verified document in {mismatches:?}"),
        ));
    }
    check_interval(verified, &typed.trusted_accepted_at)?;
    Ok(Admitted {
        admission_record_id: typed.admission_record_id.0,
        trusted_accepted_at: typed.trusted_accepted_at,
        accepted_by,
        record,
    })
}

fn is_self_anchor(verified: &Verified, record: &Value) -> bool {
    if *record == verified.document {
        return true;
    }
    record
        .as_object()
        .is_some_and(|o| o.contains_key("signature"))
        && json::canonicalize_without(record, "signature")
            .is_ok_and(|b| crate::encoding::sha256_hash(&b) == verified.signing_hash)
}

/// An in-memory Admission Log with the real semantics of S-9 and S-12: one record per
/// `(organizationId, signingHash)`, atomic append-or-return-existing, conflicts refused, and no
/// `admissionRecordId` reused across logical keys. The durable store implements the same
/// contract; this one serves replay in the browser and the tests.
#[derive(Clone, Debug)]
pub struct MemoryLog {
    service: Actor,
    records: BTreeMap<(String, String), Stored>,
    /// Every `admissionRecordId` in `records`, so the S-12 reuse check of an append is a
    /// lookup instead of a parse of every stored record.
    record_ids: BTreeSet<String>,
}

/// A stored record with its bindings, parsed once when it was appended.
#[derive(Clone, Debug)]
struct Stored {
    record: Vec<u8>,
    binding: Binding,
}

/// The members that decide compatibility under one logical key (S-9) and ID reuse (S-12).
#[derive(Clone, Debug)]
struct Binding {
    kind: String,
    key_id: String,
    admission_record_id: String,
    principal: Value,
}

impl Binding {
    fn of(v: &Value) -> Option<Binding> {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
        Some(Binding {
            kind: s("/documentKind")?,
            key_id: s("/keyId")?,
            admission_record_id: s("/admissionRecordId")?,
            principal: v.pointer("/principal")?.clone(),
        })
    }

    /// Same document under the same key: another admission record of it is no conflict.
    fn compatible(&self, other: &Binding) -> bool {
        self.kind == other.kind && self.key_id == other.key_id && self.principal == other.principal
    }
}

impl MemoryLog {
    /// A log whose writes are authenticated as `service`.
    pub fn new(service: Actor) -> MemoryLog {
        MemoryLog {
            service,
            records: BTreeMap::new(),
            record_ids: BTreeSet::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

impl AdmissionLog for MemoryLog {
    fn lookup(&mut self, organization_id: &str, signing_hash: &str) -> LookupOutcome {
        match self
            .records
            .get(&(organization_id.to_owned(), signing_hash.to_owned()))
        {
            Some(stored) => LookupOutcome::Found {
                record: stored.record.clone(),
                authenticated_service: self.service.clone(),
            },
            None => LookupOutcome::AuthoritativeAbsence,
        }
    }

    fn append_or_return_existing(
        &mut self,
        organization_id: &str,
        signing_hash: &str,
        candidate: &[u8],
    ) -> AppendOutcome {
        let Some(binding) = json::parse(candidate).ok().as_ref().and_then(Binding::of) else {
            return AppendOutcome::CommitFailed;
        };
        let key_pair = (organization_id.to_owned(), signing_hash.to_owned());
        if let Some(existing) = self.records.get(&key_pair) {
            return if existing.binding.compatible(&binding) {
                AppendOutcome::Existing {
                    record: existing.record.clone(),
                    authenticated_service: self.service.clone(),
                }
            } else {
                AppendOutcome::Conflict
            };
        }
        if self.record_ids.contains(&binding.admission_record_id) {
            return AppendOutcome::Conflict;
        }
        self.record_ids.insert(binding.admission_record_id.clone());
        self.records.insert(
            key_pair,
            Stored {
                record: candidate.to_vec(),
                binding,
            },
        );
        AppendOutcome::Committed {
            record: candidate.to_vec(),
            authenticated_service: self.service.clone(),
        }
    }
}
