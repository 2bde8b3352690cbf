//! `mission.schema.json`: the Mission aggregate (§7, §14; checklist §4).
//!
//! A root Mission (no `parent`) is owned by a human and always requires final human Approval;
//! a child Mission (§14) is owned by the Parent Coordinator, an Agent.

use super::common::{AcceptanceCriterion, Actor, ActorType, Budget, Extensions};
use super::{Cx, Id, NonEmpty, PosInt, SafeInt, SchemaError, Semver, Str, Unique};
use crate::json::Value;
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `state` (§7.3). The legacy alias `completed` is not a state.
    pub enum MissionState {
        Active = "active",
        AwaitingApproval = "awaiting_approval",
        Approved = "approved",
        Failed = "failed",
        Cancelled = "cancelled",
    }
);

object!(
    /// `coordinator`: the current Coordinator and its fencing epoch and lease (§7.2).
    pub struct MissionCoordinator {
        "agentId" => agent_id: req Id,
        "agentCardVersion" => agent_card_version: req PosInt,
        "coordinatorEpoch" => coordinator_epoch: req PosInt,
        "leaseId" => lease_id: req Id,
    }
);

object!(
    /// `approvalPolicy` (§12). A root Mission requires `finalHumanApproval: true`.
    pub struct ApprovalPolicy {
        "finalHumanApproval" => final_human_approval: req bool,
        "highRiskExecutionApproval" => high_risk_execution_approval: req bool,
        "policyVersion" => policy_version: opt Semver,
    }
);

object!(
    /// `parent`: the parent Mission and WorkItem of a child Mission, and its depth (§14).
    pub struct MissionParent {
        "missionId" => mission_id: req Id,
        "workItemId" => work_item_id: req Id,
        "depth" => depth: req PosInt,
    }
);

object!(
    /// One `pinnedProfiles` item: an Extension Profile pinned by major version (§18, X-1).
    pub struct PinnedProfile {
        "profileUri" => profile_uri: req Id,
        "majorVersion" => major_version: req SafeInt,
    }
);

object!(
    /// A Mission (§7).
    pub struct Mission {
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "revision" => revision: req SafeInt,
        "objective" => objective: req Str<1, 10000>,
        "definitionOfDone" => definition_of_done: req NonEmpty<AcceptanceCriterion>,
        /// A human for a root Mission, the Parent Coordinator Agent for a child (§14).
        "missionOwner" => mission_owner: req Actor,
        "coordinator" => coordinator: req MissionCoordinator,
        "state" => state: req MissionState,
        "budget" => budget: req Budget,
        "deadline" => deadline: req Timestamp,
        "approvalPolicy" => approval_policy: req ApprovalPolicy,
        "parent" => parent: opt MissionParent,
        "followUpToMissionId" => follow_up_to_mission_id: opt Id,
        "pinnedProfiles" => pinned_profiles: opt Unique<PinnedProfile>,
        "createdAt" => created_at: req Timestamp,
        "extensions" => extensions: opt Extensions,
    }
    check = check_mission;
);

/// The schema's `allOf/0`: `if` no `parent` `then` a human owner and final human Approval,
/// `else` an Agent owner.
fn check_mission(m: &Mission, cx: &mut Cx) -> Result<(), SchemaError> {
    let (want, rule) = if m.parent.is_none() {
        (
            ActorType::Human,
            "mission allOf/0 then (a root Mission without parent is owned by a human)",
        )
    } else {
        (
            ActorType::Agent,
            "mission allOf/0 else (a child Mission is owned by its Parent Coordinator agent)",
        )
    };
    if m.mission_owner.actor_type != want {
        return cx.at("missionOwner", |cx| {
            cx.at("type", |cx| {
                Err(cx.err(format!(
                    "must be \"{want}\", found \"{}\": {rule}",
                    m.mission_owner.actor_type
                )))
            })
        });
    }
    if m.parent.is_none() && !m.approval_policy.final_human_approval {
        return cx.at("approvalPolicy", |cx| {
            cx.at("finalHumanApproval", |cx| {
                Err(cx.err(
                    "must be true (const): mission allOf/0 then (a root Mission requires final \
                     human Approval)",
                ))
            })
        });
    }
    Ok(())
}

/// Validates `v` as a Mission.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Mission>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{
        assert_fails, cases, edit, json, load, mutate, vector,
    };
    use crate::model::{ToJson, from_value, json_equal};

    const SCHEMA: &str = "mission.schema.json";

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 4);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let m =
                    from_value::<Mission>(&v, false).unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&m.to_json(), &v), "{}: round trip", c.name);
            } else if c
                .instance
                .ends_with("/mission-without-final-human-approval.json")
            {
                assert_fails(
                    validate(&v, false),
                    "/approvalPolicy/finalHumanApproval",
                    "mission allOf/0 then",
                );
            } else if c.instance.ends_with("/mission-legacy-completed-state.json") {
                assert_fails(validate(&v, false), "/state", "\"completed\" is not one of");
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn rule_root_mission_is_human_owned() {
        let v = vector(SCHEMA, "valid/mission.json");
        let bad = edit(&v, &["missionOwner"], |o| {
            o.insert("type", Value::from("agent"))
        });
        assert_fails(
            validate(&bad, false),
            "/missionOwner/type",
            "mission allOf/0 then",
        );
        let bad = edit(&v, &["missionOwner"], |o| {
            o.insert("type", Value::from("service"))
        });
        assert_fails(
            validate(&bad, false),
            "/missionOwner/type",
            "must be \"human\"",
        );
        let bad = edit(&v, &["approvalPolicy"], |o| {
            o.insert("finalHumanApproval", Value::from(false))
        });
        assert_fails(
            validate(&bad, false),
            "/approvalPolicy/finalHumanApproval",
            "const",
        );
    }

    #[test]
    fn rule_child_mission_is_agent_owned() {
        let v = vector(SCHEMA, "valid/child-mission.json");
        // finalHumanApproval may be false under a parent.
        assert!(validate(&v, false).is_ok());
        let bad = edit(&v, &["missionOwner"], |o| {
            o.insert("type", Value::from("human"))
        });
        assert_fails(
            validate(&bad, false),
            "/missionOwner/type",
            "mission allOf/0 else",
        );
        // Removing the parent turns the child into a root Mission: the then-branch applies.
        let bad = mutate(&v, |o| {
            o.remove("parent");
        });
        assert_fails(
            validate(&bad, false),
            "/missionOwner/type",
            "mission allOf/0 then",
        );
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/mission.json");
        let bad = mutate(&v, |o| o.insert("definitionOfDone", json("[]")));
        assert_fails(validate(&bad, false), "/definitionOfDone", "at least 1");
        let bad = mutate(&v, |o| o.insert("budget", json("{\"currency\": \"USD\"}")));
        assert_fails(validate(&bad, false), "/budget", "at least one limit");
        let bad = edit(&v, &["coordinator"], |o| {
            o.insert("coordinatorEpoch", Value::from(0u64))
        });
        assert_fails(
            validate(&bad, false),
            "/coordinator/coordinatorEpoch",
            "outside 1..=",
        );
        let pins = r#"[{"profileUri": "https://example.org/p", "majorVersion": 1},
                       {"majorVersion": 1.0, "profileUri": "https://example.org/p"}]"#;
        let bad = mutate(&v, |o| o.insert("pinnedProfiles", json(pins)));
        assert_fails(validate(&bad, false), "/pinnedProfiles", "uniqueItems");
        let ok = mutate(&v, |o| {
            o.insert(
                "pinnedProfiles",
                json(r#"[{"profileUri": "https://example.org/p", "majorVersion": 1}]"#),
            )
        });
        assert!(validate(&ok, false).is_ok());
        let bad = edit(&v, &["approvalPolicy"], |o| {
            o.insert("policyVersion", Value::from("1.2"))
        });
        assert_fails(
            validate(&bad, false),
            "/approvalPolicy/policyVersion",
            "semantic version",
        );
        let bad = mutate(&v, |o| o.insert("objective", Value::from("")));
        assert_fails(validate(&bad, false), "/objective", "outside 1..=10000");
    }

    /// The conditional rules agree with an independent JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = vector(SCHEMA, "valid/mission.json");
        let parent = vector(SCHEMA, "valid/child-mission.json")
            .pointer("/parent")
            .cloned()
            .unwrap_or(Value::Null);
        let axes = [
            Axis::optional(&[], "parent", parent),
            Axis::values(&["missionOwner"], "type", &["human", "agent", "service"]),
            Axis {
                path: &["approvalPolicy"],
                name: "finalHumanApproval",
                values: vec![Some(Value::Bool(true)), Some(Value::Bool(false)), None],
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
