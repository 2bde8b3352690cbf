//! `membership.schema.json`: Group Membership and delegation grants (§8, §9.1; checklist §5).

use super::common::{Actor, AgentActor, Budget, CapabilityRef, Extensions};
use super::{
    Cx, FromJson, Id, NonEmptyUnique, PosInt, SafeInt, SchemaError, ToJson, Unique, require_if,
};
use crate::json::Value;
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `role` (§8).
    pub enum MembershipRole {
        MissionOwner = "mission_owner",
        Coordinator = "coordinator",
        Worker = "worker",
        Reviewer = "reviewer",
        Observer = "observer",
        WorkDelegate = "work_delegate",
    }
);

string_enum!(
    /// `state` (§8): provisional (context pending), active, ended.
    pub enum MembershipState {
        Provisional = "provisional",
        Active = "active",
        Ended = "ended",
    }
);

/// A `scopes` item: `^[a-z][a-z0-9._:-]*$`, at most 160 characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope(pub String);

impl FromJson for Scope {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        let b = s.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 160
            && b[0].is_ascii_lowercase()
            && b[1..].iter().all(|&c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, b'.' | b'_' | b':' | b'-')
            });
        if ok {
            Ok(Scope(s.to_owned()))
        } else {
            Err(cx.err(format!(
                "{s:?} is not a scope (pattern ^[a-z][a-z0-9._:-]*$, maxLength 160)"
            )))
        }
    }
}

impl ToJson for Scope {
    fn to_json(&self) -> Value {
        Value::string(self.0.clone())
    }
}

/// The budget of a delegation grant: a `common#/$defs/budget` that states all seven members
/// (the grant's `allOf` + `required`, §9.1).
#[derive(Clone, Debug, PartialEq)]
pub struct FullBudget(pub Budget);

const FULL_BUDGET_MEMBERS: [&str; 7] = [
    "currency",
    "financialLimit",
    "modelTokenLimit",
    "toolCallLimit",
    "computeSecondsLimit",
    "wallClockSecondsLimit",
    "externalSideEffectLimit",
];

impl FromJson for FullBudget {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let b = Budget::from_json(v, cx)?;
        let present = [
            b.currency.is_some(),
            b.financial_limit.is_some(),
            b.model_token_limit.is_some(),
            b.tool_call_limit.is_some(),
            b.compute_seconds_limit.is_some(),
            b.wall_clock_seconds_limit.is_some(),
            b.external_side_effect_limit.is_some(),
        ];
        for (name, here) in FULL_BUDGET_MEMBERS.iter().zip(present) {
            if !here {
                return Err(cx.err(format!(
                    "missing member \"{name}\": a delegation grant budget states all seven \
                     budget members (delegationGrants.items.budget required)"
                )));
            }
        }
        Ok(FullBudget(b))
    }
}

impl ToJson for FullBudget {
    fn to_json(&self) -> Value {
        self.0.to_json()
    }
}

object!(
    /// One `delegationGrants` item: bounded work authority granted by the Coordinator (§9.1).
    pub struct DelegationGrant {
        "grantId" => grant_id: req Id,
        "granteeAgentId" => grantee_agent_id: req Id,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "targetWorkItemId" => target_work_item_id: req Id,
        "allowedCapabilities" => allowed_capabilities: req NonEmptyUnique<CapabilityRef>,
        "budget" => budget: req FullBudget,
        "maxDescendantDepth" => max_descendant_depth: req SafeInt,
        "granteeMembershipEpoch" => grantee_membership_epoch: req PosInt,
        "coordinatorEpoch" => coordinator_epoch: req PosInt,
        "grantedBy" => granted_by: req AgentActor,
        "grantedAt" => granted_at: req Timestamp,
        "expiresAt" => expires_at: req Timestamp,
    }
);

object!(
    /// A Group Membership (§8).
    pub struct Membership {
        "membershipId" => membership_id: req Id,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "member" => member: req Actor,
        "role" => role: req MembershipRole,
        "state" => state: req MembershipState,
        /// Fencing epoch checked on every member Command (§8).
        "membershipEpoch" => membership_epoch: req PosInt,
        "scopes" => scopes: req NonEmptyUnique<Scope>,
        "delegationGrants" => delegation_grants: opt Unique<DelegationGrant>,
        /// The first Group sequence the member may see (§8).
        "visibilityStartSequence" => visibility_start_sequence: req SafeInt,
        "contextPackageId" => context_package_id: opt Id,
        "provisionalExpiresAt" => provisional_expires_at: opt Timestamp,
        "grantedAt" => granted_at: req Timestamp,
        "activatedAt" => activated_at: opt Timestamp,
        "endedAt" => ended_at: opt Timestamp,
        "extensions" => extensions: opt Extensions,
    }
    check = check_membership;
);

const RULE_PROVISIONAL: &str =
    "membership allOf/0 (state \"provisional\" requires provisionalExpiresAt and contextPackageId)";
const RULE_ACTIVE: &str = "membership allOf/1 (state \"active\" requires activatedAt)";
const RULE_ENDED: &str = "membership allOf/2 (state \"ended\" requires endedAt)";

/// The schema's `allOf`: each state requires its timestamps (and a provisional Membership its
/// Context Package).
fn check_membership(m: &Membership, cx: &mut Cx) -> Result<(), SchemaError> {
    let provisional = m.state == MembershipState::Provisional;
    require_if(
        cx,
        provisional,
        m.provisional_expires_at.is_some(),
        "provisionalExpiresAt",
        RULE_PROVISIONAL,
    )?;
    require_if(
        cx,
        provisional,
        m.context_package_id.is_some(),
        "contextPackageId",
        RULE_PROVISIONAL,
    )?;
    let active = m.state == MembershipState::Active;
    require_if(
        cx,
        active,
        m.activated_at.is_some(),
        "activatedAt",
        RULE_ACTIVE,
    )?;
    let ended = m.state == MembershipState::Ended;
    require_if(cx, ended, m.ended_at.is_some(), "endedAt", RULE_ENDED)
}

/// Validates `v` as a Membership.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Membership>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{
        assert_fails, cases, edit, json, load, mutate, vector,
    };
    use crate::model::{from_value, json_equal};

    const SCHEMA: &str = "membership.schema.json";

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let m = from_value::<Membership>(&v, false)
                    .unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&m.to_json(), &v), "{}: round trip", c.name);
            } else if c
                .instance
                .ends_with("/membership-provisional-without-context.json")
            {
                assert_fails(
                    validate(&v, false),
                    "",
                    "\"contextPackageId\", required by membership allOf/0",
                );
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn rule_provisional() {
        let v = vector(SCHEMA, "valid/membership.json");
        let bad = mutate(&v, |o| {
            o.remove("provisionalExpiresAt");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "\"provisionalExpiresAt\", required by membership allOf/0",
        );
        // Other states do not need the provisional members.
        let ok = mutate(&v, |o| {
            o.remove("provisionalExpiresAt");
            o.remove("contextPackageId");
            o.insert("state", Value::from("ended"));
            o.insert("endedAt", Value::from("2026-07-15T02:00:00Z"));
        });
        assert!(validate(&ok, false).is_ok());
    }

    #[test]
    fn rule_active() {
        let v = vector(SCHEMA, "valid/membership.json");
        let bad = mutate(&v, |o| o.insert("state", Value::from("active")));
        assert_fails(
            validate(&bad, false),
            "",
            "\"activatedAt\", required by membership allOf/1",
        );
        let ok = mutate(&bad, |o| {
            o.insert("activatedAt", Value::from("2026-07-15T00:10:00Z"))
        });
        assert!(validate(&ok, false).is_ok());
    }

    #[test]
    fn rule_ended() {
        let v = vector(SCHEMA, "valid/membership.json");
        let bad = mutate(&v, |o| o.insert("state", Value::from("ended")));
        assert_fails(
            validate(&bad, false),
            "",
            "\"endedAt\", required by membership allOf/2",
        );
    }

    const GRANT: &str = r#"{
        "grantId": "urn:missionweaveprotocol:grant:one",
        "granteeAgentId": "urn:missionweaveprotocol:agent:developer-one",
        "missionId": "urn:missionweaveprotocol:mission:one",
        "groupId": "urn:missionweaveprotocol:group:mission-one",
        "targetWorkItemId": "urn:missionweaveprotocol:work-item:implementation",
        "allowedCapabilities": [{"id": "acme.software.python-implementation", "version": "2.1.0"}],
        "budget": {"currency": "USD", "financialLimit": 5, "modelTokenLimit": 1000,
                   "toolCallLimit": 10, "computeSecondsLimit": 60, "wallClockSecondsLimit": 600,
                   "externalSideEffectLimit": 0},
        "maxDescendantDepth": 1,
        "granteeMembershipEpoch": 1,
        "coordinatorEpoch": 4,
        "grantedBy": {"type": "agent", "id": "urn:missionweaveprotocol:agent:coordinator"},
        "grantedAt": "2026-07-15T00:00:00Z",
        "expiresAt": "2026-07-15T04:00:00Z"
    }"#;

    #[test]
    fn delegation_grants() {
        let v = vector(SCHEMA, "valid/membership.json");
        let with = |grants: &str| mutate(&v, |o| o.insert("delegationGrants", json(grants)));
        let ok = with(&format!("[{GRANT}]"));
        from_value::<Membership>(&ok, false).unwrap_or_else(|e| panic!("{e}"));
        assert_fails(
            validate(&with(&format!("[{GRANT}, {GRANT}]")), false),
            "/delegationGrants",
            "uniqueItems",
        );
        // Every budget member is required in a grant.
        let bad = edit(&ok, &["delegationGrants", "0", "budget"], |o| {
            o.remove("computeSecondsLimit");
        });
        assert_fails(
            validate(&bad, false),
            "/delegationGrants/0/budget",
            "missing member \"computeSecondsLimit\"",
        );
        // The common budget rules still apply inside (allOf/0).
        let bad = edit(&ok, &["delegationGrants", "0", "budget"], |o| {
            o.insert("currency", Value::from("usd"))
        });
        assert_fails(
            validate(&bad, false),
            "/delegationGrants/0/budget/currency",
            "currency code",
        );
        let bad = edit(&ok, &["delegationGrants", "0", "grantedBy"], |o| {
            o.insert("type", Value::from("human"))
        });
        assert_fails(
            validate(&bad, false),
            "/delegationGrants/0/grantedBy/type",
            "must be \"agent\"",
        );
        let bad = edit(&ok, &["delegationGrants", "0"], |o| {
            o.insert("allowedCapabilities", json("[]"))
        });
        assert_fails(
            validate(&bad, false),
            "/delegationGrants/0/allowedCapabilities",
            "at least 1",
        );
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/membership.json");
        let bad = mutate(&v, |o| {
            o.insert("scopes", json(r#"["message.post", "message.post"]"#))
        });
        assert_fails(validate(&bad, false), "/scopes", "uniqueItems");
        let bad = mutate(&v, |o| o.insert("scopes", json(r#"["Message.post"]"#)));
        assert_fails(validate(&bad, false), "/scopes/0", "not a scope");
        let long = format!("[\"a{}\"]", "b".repeat(160));
        let bad = mutate(&v, |o| o.insert("scopes", json(&long)));
        assert_fails(validate(&bad, false), "/scopes/0", "maxLength 160");
        let bad = mutate(&v, |o| o.insert("scopes", json("[]")));
        assert_fails(validate(&bad, false), "/scopes", "at least 1");
        let bad = mutate(&v, |o| o.insert("role", Value::from("owner")));
        assert_fails(validate(&bad, false), "/role", "not one of");
    }

    /// The conditional rules agree with an independent JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = vector(SCHEMA, "valid/membership.json");
        let t = || Value::from("2026-07-15T00:30:00Z");
        let axes = [
            Axis::values(&[], "state", &["provisional", "active", "ended"]),
            Axis::optional(&[], "provisionalExpiresAt", t()),
            Axis::optional(&[], "contextPackageId", Value::from("urn:x:context")),
            Axis::optional(&[], "activatedAt", t()),
            Axis::optional(&[], "endedAt", t()),
            Axis::optional(&[], "delegationGrants", json(&format!("[{GRANT}]"))),
        ];
        let (accepted, rejected) =
            agree_on_matrix(&base, &axes, |v| validate(v, false), |v| oracle.accepts(v));
        assert!(
            accepted > 0 && rejected > 0,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
