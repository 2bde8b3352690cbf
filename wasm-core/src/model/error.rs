//! `error.schema.json`: the machine-readable protocol error and its 27 wire codes (§19,
//! checklist §12 "Errors").
//!
//! Internal names such as `STALE_COORDINATOR_EPOCH` are not wire codes (C-4): only the codes of
//! [`ErrorCode`] validate.

use super::{Id, SafeInt, SchemaError, Sha256Hash, Str};
use crate::json::{Object, Value};
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// The 27 core wire error codes of §19, in schema order.
    ///
    /// [`ErrorCode::retry_generally_safe`] says whether resending the *unchanged* request is
    /// generally safe; the `retryable` member of each error states it for the concrete case.
    pub enum ErrorCode {
        /// No compatible protocol version (HELLO negotiation). Not retryable: the peer must
        /// offer a supported version.
        UnsupportedVersion = "UNSUPPORTED_VERSION",
        /// Authentication is absent. Not retryable unchanged: authenticate first.
        AuthRequired = "AUTH_REQUIRED",
        /// A signed-document signature, key validity, admission proof or freshness check failed
        /// (crypto stages 3, 4, 6, admission, Command freshness; the cause is hidden). MUST NOT
        /// be retried unchanged (§19); fix the envelope/key/admission, or re-sign a new Command
        /// with a new Action ID once freshness has expired.
        AuthInvalidSignature = "AUTH_INVALID_SIGNATURE",
        /// The Session Epoch is fenced (§6.3). Not retryable: a new Command with the current
        /// epoch, a new Action ID and a new signature is required.
        AuthStaleSession = "AUTH_STALE_SESSION",
        /// The Coordinator Epoch is fenced (§7.2). Not retryable: new Command, new Action ID.
        AuthStaleCoordinator = "AUTH_STALE_COORDINATOR",
        /// The actor lacks permission or policy eligibility (including signer authorization
        /// after crypto). Not retryable unchanged.
        AuthForbidden = "AUTH_FORBIDDEN",
        /// The Group is absent or intentionally undisclosed (§17.2). Not retryable.
        GroupNotFound = "GROUP_NOT_FOUND",
        /// No applicable Membership (§8). Not retryable unchanged.
        MembershipRequired = "MEMBERSHIP_REQUIRED",
        /// The Membership Epoch is fenced (§8). Not retryable: refresh the epoch, new Command.
        MembershipStale = "MEMBERSHIP_STALE",
        /// The object does not conform to its schema (stage 2, including the signature envelope
        /// and an unsupported algorithm). Not retryable unchanged.
        SchemaValidationFailed = "SCHEMA_VALIDATION_FAILED",
        /// The Command is well-formed but semantically invalid. Not retryable unchanged.
        InvalidCommand = "INVALID_COMMAND",
        /// The aggregate's state forbids the transition (§10.2). Not retryable unchanged.
        InvalidStateTransition = "INVALID_STATE_TRANSITION",
        /// `expectedRevision` does not match (§15.3). Not retryable: refetch, new Action ID.
        RevisionConflict = "REVISION_CONFLICT",
        /// A stable Action ID was reused with different content (§15.1). Not retryable: a new
        /// Command with a new Action ID is required.
        ActionIdCollision = "ACTION_ID_COLLISION",
        /// A required (critical) extension cannot be interpreted (§18). Not retryable.
        UnknownCriticalExtension = "UNKNOWN_CRITICAL_EXTENSION",
        /// Required Work Contract information is missing (§10.1). Not retryable unchanged.
        WorkContractIncomplete = "WORK_CONTRACT_INCOMPLETE",
        /// The offer is no longer valid (§10.3). Not retryable.
        WorkOfferExpired = "WORK_OFFER_EXPIRED",
        /// Another candidate won exclusive ownership (§10.3). Not retryable.
        WorkAlreadyOwned = "WORK_ALREADY_OWNED",
        /// The required lease is no longer valid (§11.3). Not retryable unchanged.
        WorkLeaseExpired = "WORK_LEASE_EXPIRED",
        /// The Ownership Epoch is fenced (§11.3). Not retryable: new Command, new Action ID.
        WorkStaleOwnership = "WORK_STALE_OWNERSHIP",
        /// A policy gate (Approval) has not been satisfied (§12). Not retryable until the gate
        /// is satisfied.
        ApprovalRequired = "APPROVAL_REQUIRED",
        /// A hard Mission or WorkItem budget is exhausted or would be exceeded (§12). Not
        /// retryable unchanged.
        BudgetExceeded = "BUDGET_EXCEEDED",
        /// A policy rate or recursion threshold was reached (§20). Generally retryable after the
        /// indicated delay (`retryAfterMs`).
        RateLimited = "RATE_LIMITED",
        /// The receiver cannot currently accept more traffic (§17.3). Retryable per Group after
        /// `retryAfterMs`.
        Backpressure = "BACKPRESSURE",
        /// The online replay no longer contains the requested position (§16). Not retryable:
        /// restore the signed snapshot (`snapshotArtifactHash`) and resubscribe from it.
        CursorTooOld = "CURSOR_TOO_OLD",
        /// The peer violated framing or a core invariant: invalid JSON, duplicate members, a JCS
        /// data-model failure (§17.4). Not retryable unchanged.
        ProtocolViolation = "PROTOCOL_VIOLATION",
        /// The authority failed *without* accepting the transition. Generally retryable: an
        /// unchanged retry keeps the Action ID and is idempotent (§15.1).
        InternalError = "INTERNAL_ERROR",
    }
);

impl ErrorCode {
    /// Whether resending the unchanged request is generally safe for this code (§19, C-2):
    /// true only for `RATE_LIMITED`, `BACKPRESSURE` (after the advised delay) and
    /// `INTERNAL_ERROR` (nothing was accepted; the Action ID makes the retry idempotent).
    pub fn retry_generally_safe(self) -> bool {
        matches!(
            self,
            ErrorCode::RateLimited | ErrorCode::Backpressure | ErrorCode::InternalError
        )
    }
}

object!(
    /// A protocol error (§19), sent inside an `ERROR` frame.
    pub struct ProtocolError {
        "code" => code: req ErrorCode,
        "message" => message: req Str<1, 2000>,
        /// Whether retry is safe in this case (§19: an error MUST state it).
        "retryable" => retryable: req bool,
        "fatal" => fatal: opt bool,
        "relatedFrameId" => related_frame_id: opt Id,
        "relatedActionId" => related_action_id: opt Id,
        "groupId" => group_id: opt Id,
        /// With `REVISION_CONFLICT` (C-3).
        "expectedRevision" => expected_revision: opt SafeInt,
        "currentRevision" => current_revision: opt SafeInt,
        /// With `BACKPRESSURE` / `RATE_LIMITED`.
        "retryAfterMs" => retry_after_ms: opt SafeInt,
        /// With `CURSOR_TOO_OLD`: the signed snapshot to restore from.
        "snapshotArtifactHash" => snapshot_artifact_hash: opt Sha256Hash,
        "details" => details: opt Object,
        "occurredAt" => occurred_at: req Timestamp,
    }
);

/// Validates `v` as a protocol error object.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<ProtocolError>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{assert_fails, cases, load, mutate, vector};
    use crate::model::{ToJson, from_value, json_equal};

    const SCHEMA: &str = "error.schema.json";

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let e = from_value::<ProtocolError>(&v, false)
                    .unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&e.to_json(), &v), "{}: round trip", c.name);
            } else if c
                .instance
                .ends_with("/error-unknown-stale-coordinator-code.json")
            {
                assert_fails(
                    validate(&v, false),
                    "/code",
                    "\"STALE_COORDINATOR_EPOCH\" is not one of",
                );
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn twenty_seven_codes_round_trip() {
        assert_eq!(ErrorCode::ALL.len(), 27);
        let schema = load("schemas/error.schema.json");
        let Some(Value::Array(wire)) = schema.pointer("/properties/code/enum") else {
            panic!("no code enum in the schema")
        };
        assert_eq!(wire.len(), 27);
        for (code, w) in ErrorCode::ALL.iter().zip(wire) {
            assert_eq!(Some(code.as_str()), w.as_str());
            assert_eq!(ErrorCode::from_wire(code.as_str()), Some(*code));
        }
        assert!(ErrorCode::Backpressure.retry_generally_safe());
        assert!(!ErrorCode::AuthInvalidSignature.retry_generally_safe());
        assert!(!ErrorCode::ActionIdCollision.retry_generally_safe());
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/error.json");
        let bad = mutate(&v, |o| o.insert("message", Value::from("")));
        assert_fails(validate(&bad, false), "/message", "outside 1..=2000");
        let long = "x".repeat(2001);
        let bad = mutate(&v, |o| o.insert("message", Value::from(long.as_str())));
        assert_fails(validate(&bad, false), "/message", "outside 1..=2000");
        let bad = mutate(&v, |o| {
            o.remove("retryable");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "missing required member \"retryable\"",
        );
        let bad = mutate(&v, |o| {
            o.insert("snapshotArtifactHash", Value::from("sha256:AB"))
        });
        assert_fails(validate(&bad, false), "/snapshotArtifactHash", "sha256");
        let bad = mutate(&v, |o| o.insert("details", Value::from("text")));
        assert_fails(validate(&bad, false), "/details", "expected an object");
        let bad = mutate(&v, |o| o.insert("relatedFrameId", Value::from("frame-1")));
        assert_fails(validate(&bad, false), "/relatedFrameId", "absolute");
        // The §2 timestamp profile only applies when asked for.
        let leap = mutate(&v, |o| {
            o.insert("occurredAt", Value::from("2026-06-30T23:59:60Z"))
        });
        assert!(validate(&leap, false).is_ok());
        assert_fails(validate(&leap, true), "/occurredAt", "leap");
    }
}
