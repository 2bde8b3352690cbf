//! `lease.schema.json`: Fenced Leases (§7.2, §11.3; checklist §7 "Leases").

use super::{Cx, FromJson, Id, PosInt, SafeInt, SchemaError, ToJson, forbid_if, require_if};
use crate::json::Value;
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `leaseType` (§11.3).
    pub enum LeaseType {
        Coordinator = "coordinator",
        Ownership = "ownership",
        Execution = "execution",
        Blocked = "blocked",
    }
);

string_enum!(
    /// `state`: active, or closed as expired, revoked or released.
    pub enum LeaseState {
        Active = "active",
        Expired = "expired",
        Revoked = "revoked",
        Released = "released",
    }
);

/// ECMA-262 `\s`: WhiteSpace (TAB, VT, FF, ZWNBSP, Zs) and LineTerminator (LF, CR, LS, PS).
fn is_ecma_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\u{000B}' | '\u{000C}' | ' ' | '\u{00A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
                | '\n'
                | '\r'
                | '\u{2028}'
                | '\u{2029}'
    )
}

/// `closureReason`: pattern `\S` (at least one non-whitespace character), at most 512.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClosureReason(pub String);

impl FromJson for ClosureReason {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        let n = s.chars().count();
        if n > 512 {
            return Err(cx.err(format!("string length {n} is above maxLength 512")));
        }
        if s.chars().all(is_ecma_whitespace) {
            return Err(cx.err("must contain a non-whitespace character (pattern \\S)"));
        }
        Ok(ClosureReason(s.to_owned()))
    }
}

impl ToJson for ClosureReason {
    fn to_json(&self) -> Value {
        Value::string(self.0.clone())
    }
}

object!(
    /// A Fenced Lease (§11.3).
    pub struct Lease {
        "leaseId" => lease_id: req Id,
        "leaseType" => lease_type: req LeaseType,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "workItemId" => work_item_id: opt Id,
        "holderAgentId" => holder_agent_id: req Id,
        /// The holder's Session Epoch; a new session revokes the lease (I-13).
        "sessionEpoch" => session_epoch: req PosInt,
        "coordinatorEpoch" => coordinator_epoch: opt PosInt,
        "ownershipEpoch" => ownership_epoch: opt PosInt,
        /// Ownership leases: the latest time execution must start.
        "startBy" => start_by: opt Timestamp,
        "issuedAt" => issued_at: req Timestamp,
        "startsAt" => starts_at: req Timestamp,
        "expiresAt" => expires_at: req Timestamp,
        "graceExpiresAt" => grace_expires_at: opt Timestamp,
        "state" => state: req LeaseState,
        "renewalCount" => renewal_count: req SafeInt,
        "lastRenewedAt" => last_renewed_at: opt Timestamp,
        "closedAt" => closed_at: opt Timestamp,
        "closureReason" => closure_reason: opt ClosureReason,
    }
    check = check_lease;
);

const RULE_COORDINATOR: &str = "lease allOf/0 (a coordinator lease requires coordinatorEpoch)";
const RULE_WORK: &str = "lease allOf/1 (ownership, execution and blocked leases require \
                         workItemId and ownershipEpoch)";
const RULE_OWNERSHIP: &str = "lease allOf/2 (an ownership lease requires startBy)";
const RULE_EXECUTION: &str = "lease allOf/3 (an execution lease forbids coordinatorEpoch, \
                              startBy, graceExpiresAt and capabilityTokenId)";
const RULE_RENEWED: &str = "lease allOf/4 (renewalCount >= 1 requires lastRenewedAt)";
const RULE_NOT_RENEWED: &str = "lease allOf/5 (renewalCount 0 forbids lastRenewedAt)";
const RULE_ACTIVE: &str = "lease allOf/6 then (an active lease forbids closedAt and closureReason)";
const RULE_CLOSED: &str = "lease allOf/6 else (a closed lease requires closedAt and closureReason)";

/// The schema's seven `allOf` rules on lease type, renewal and closure.
fn check_lease(l: &Lease, cx: &mut Cx) -> Result<(), SchemaError> {
    let t = l.lease_type;
    require_if(
        cx,
        t == LeaseType::Coordinator,
        l.coordinator_epoch.is_some(),
        "coordinatorEpoch",
        RULE_COORDINATOR,
    )?;
    let work = matches!(
        t,
        LeaseType::Ownership | LeaseType::Execution | LeaseType::Blocked
    );
    require_if(cx, work, l.work_item_id.is_some(), "workItemId", RULE_WORK)?;
    require_if(
        cx,
        work,
        l.ownership_epoch.is_some(),
        "ownershipEpoch",
        RULE_WORK,
    )?;
    require_if(
        cx,
        t == LeaseType::Ownership,
        l.start_by.is_some(),
        "startBy",
        RULE_OWNERSHIP,
    )?;
    let exec = t == LeaseType::Execution;
    forbid_if(
        cx,
        exec,
        l.coordinator_epoch.is_some(),
        "coordinatorEpoch",
        RULE_EXECUTION,
    )?;
    forbid_if(cx, exec, l.start_by.is_some(), "startBy", RULE_EXECUTION)?;
    forbid_if(
        cx,
        exec,
        l.grace_expires_at.is_some(),
        "graceExpiresAt",
        RULE_EXECUTION,
    )?;
    // `capabilityTokenId` is not a declared member, so the closed object already rejects it.
    let renewed = l.renewal_count.0 >= 1;
    require_if(
        cx,
        renewed,
        l.last_renewed_at.is_some(),
        "lastRenewedAt",
        RULE_RENEWED,
    )?;
    forbid_if(
        cx,
        !renewed,
        l.last_renewed_at.is_some(),
        "lastRenewedAt",
        RULE_NOT_RENEWED,
    )?;
    let active = l.state == LeaseState::Active;
    forbid_if(cx, active, l.closed_at.is_some(), "closedAt", RULE_ACTIVE)?;
    forbid_if(
        cx,
        active,
        l.closure_reason.is_some(),
        "closureReason",
        RULE_ACTIVE,
    )?;
    require_if(cx, !active, l.closed_at.is_some(), "closedAt", RULE_CLOSED)?;
    require_if(
        cx,
        !active,
        l.closure_reason.is_some(),
        "closureReason",
        RULE_CLOSED,
    )
}

/// Validates `v` as a Fenced Lease.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Lease>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{assert_fails, cases, load, mutate, vector};
    use crate::model::{from_value, json_equal};

    const SCHEMA: &str = "lease.schema.json";

    fn base() -> Value {
        vector(SCHEMA, "valid/lease.json")
    }

    /// An active coordinator lease built from the valid execution lease.
    fn coordinator() -> Value {
        mutate(&base(), |o| {
            o.insert("leaseType", Value::from("coordinator"));
            o.remove("workItemId");
            o.remove("ownershipEpoch");
            o.insert("coordinatorEpoch", Value::from(4u64));
            o.insert("state", Value::from("active"));
            o.remove("closedAt");
            o.remove("closureReason");
        })
    }

    /// An ownership lease built from the valid execution lease.
    fn ownership() -> Value {
        mutate(&base(), |o| {
            o.insert("leaseType", Value::from("ownership"));
            o.insert("startBy", Value::from("2026-07-15T00:35:00Z"));
            o.insert("graceExpiresAt", Value::from("2026-07-15T00:55:00Z"));
        })
    }

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let l =
                    from_value::<Lease>(&v, false).unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&l.to_json(), &v), "{}: round trip", c.name);
            } else if c
                .instance
                .ends_with("/lease-renewed-without-timestamp.json")
            {
                assert_fails(
                    validate(&v, false),
                    "",
                    "\"lastRenewedAt\", required by lease allOf/4",
                );
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn rule_coordinator_lease() {
        assert!(validate(&coordinator(), false).is_ok());
        let bad = mutate(&coordinator(), |o| {
            o.remove("coordinatorEpoch");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "\"coordinatorEpoch\", required by lease allOf/0",
        );
    }

    #[test]
    fn rule_work_leases_need_work_item_and_ownership_epoch() {
        for t in ["ownership", "execution", "blocked"] {
            let v = mutate(&ownership(), |o| {
                o.insert("leaseType", Value::from(t));
                if t == "execution" {
                    o.remove("startBy");
                    o.remove("graceExpiresAt");
                }
            });
            assert!(validate(&v, false).is_ok(), "{t}");
            let bad = mutate(&v, |o| {
                o.remove("workItemId");
            });
            assert_fails(
                validate(&bad, false),
                "",
                "\"workItemId\", required by lease allOf/1",
            );
            let bad = mutate(&v, |o| {
                o.remove("ownershipEpoch");
            });
            assert_fails(
                validate(&bad, false),
                "",
                "\"ownershipEpoch\", required by lease allOf/1",
            );
        }
        // A coordinator lease needs neither.
        assert!(validate(&coordinator(), false).is_ok());
    }

    #[test]
    fn rule_ownership_lease_needs_start_by() {
        assert!(validate(&ownership(), false).is_ok());
        let bad = mutate(&ownership(), |o| {
            o.remove("startBy");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "\"startBy\", required by lease allOf/2",
        );
    }

    #[test]
    fn rule_execution_lease_forbids_members() {
        let v = base();
        for (k, val) in [
            ("coordinatorEpoch", Value::from(1u64)),
            ("startBy", Value::from("2026-07-15T00:35:00Z")),
            ("graceExpiresAt", Value::from("2026-07-15T00:55:00Z")),
        ] {
            let bad = mutate(&v, |o| o.insert(k, val));
            assert_fails(
                validate(&bad, false),
                &format!("/{k}"),
                "forbidden by lease allOf/3",
            );
        }
        let bad = mutate(&v, |o| {
            o.insert("capabilityTokenId", Value::from("urn:a:b"))
        });
        assert_fails(
            validate(&bad, false),
            "",
            "unknown member \"capabilityTokenId\"",
        );
        // The same members are fine on an ownership lease.
        let ok = mutate(&ownership(), |o| {
            o.insert("coordinatorEpoch", Value::from(1u64))
        });
        assert!(validate(&ok, false).is_ok());
    }

    #[test]
    fn rule_renewal() {
        let v = base();
        let bad = mutate(&v, |o| o.insert("renewalCount", Value::from(0u64)));
        assert_fails(
            validate(&bad, false),
            "/lastRenewedAt",
            "forbidden by lease allOf/5",
        );
        let ok = mutate(&bad, |o| {
            o.remove("lastRenewedAt");
        });
        assert!(validate(&ok, false).is_ok());
        let bad = mutate(&v, |o| {
            o.insert("renewalCount", Value::from(3u64));
            o.remove("lastRenewedAt");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "\"lastRenewedAt\", required by lease allOf/4",
        );
    }

    #[test]
    fn rule_closure() {
        let v = base();
        for state in ["expired", "revoked", "released"] {
            let s = mutate(&v, |o| o.insert("state", Value::from(state)));
            assert!(validate(&s, false).is_ok(), "{state}");
            let bad = mutate(&s, |o| {
                o.remove("closedAt");
            });
            assert_fails(
                validate(&bad, false),
                "",
                "\"closedAt\", required by lease allOf/6 else",
            );
            let bad = mutate(&s, |o| {
                o.remove("closureReason");
            });
            assert_fails(
                validate(&bad, false),
                "",
                "\"closureReason\", required by lease allOf/6 else",
            );
        }
        let active = mutate(&v, |o| o.insert("state", Value::from("active")));
        assert_fails(
            validate(&active, false),
            "/closedAt",
            "forbidden by lease allOf/6 then",
        );
        let bad = mutate(&active, |o| {
            o.remove("closedAt");
        });
        assert_fails(
            validate(&bad, false),
            "/closureReason",
            "forbidden by lease allOf/6 then",
        );
    }

    #[test]
    fn closure_reason_pattern() {
        let v = base();
        let r = |s: &str| mutate(&v, |o| o.insert("closureReason", Value::from(s)));
        assert!(validate(&r(" x "), false).is_ok());
        assert_fails(validate(&r(""), false), "/closureReason", "pattern \\S");
        assert_fails(
            validate(&r(" \t\n\u{00A0}\u{3000}\u{FEFF}"), false),
            "/closureReason",
            "pattern \\S",
        );
        assert!(validate(&r(&"é".repeat(512)), false).is_ok());
        assert_fails(
            validate(&r(&"é".repeat(513)), false),
            "/closureReason",
            "maxLength 512",
        );
    }

    #[test]
    fn member_rules() {
        let v = base();
        let bad = mutate(&v, |o| o.insert("leaseType", Value::from("session")));
        assert_fails(validate(&bad, false), "/leaseType", "not one of");
        let bad = mutate(&v, |o| o.insert("sessionEpoch", Value::from(0u64)));
        assert_fails(validate(&bad, false), "/sessionEpoch", "outside 1..=");
        let bad = mutate(&v, |o| o.insert("renewalCount", Value::from("1")));
        assert_fails(validate(&bad, false), "/renewalCount", "expected a number");
    }

    /// The conditional rules agree with an independent JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = base();
        let t = || Value::from("2026-07-15T00:35:00Z");
        let axes = [
            Axis::values(
                &[],
                "leaseType",
                &["coordinator", "ownership", "execution", "blocked"],
            ),
            Axis::values(&[], "state", &["active", "released"]),
            Axis {
                path: &[],
                name: "renewalCount",
                values: vec![Some(Value::from(0u64)), Some(Value::from(2u64))],
            },
            Axis::optional(&[], "coordinatorEpoch", Value::from(1u64)),
            Axis::optional(&[], "ownershipEpoch", Value::from(1u64)),
            Axis::optional(&[], "workItemId", Value::from("urn:x:work-item")),
            Axis::optional(&[], "startBy", t()),
            Axis::optional(&[], "graceExpiresAt", t()),
            Axis::optional(&[], "lastRenewedAt", t()),
            Axis::optional(&[], "closedAt", t()),
            Axis {
                path: &[],
                name: "closureReason",
                values: vec![None, Some(Value::from("done")), Some(Value::from(" \t"))],
            },
        ];
        let (accepted, rejected) =
            agree_on_matrix(&base, &axes, |v| validate(v, false), |v| oracle.accepts(v));
        assert!(
            accepted > 0 && rejected > 0,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
