//! `approval.schema.json`: a signed Approval decision (§7.1, §7.3, §14, checklist M-10).
//!
//! An Approval binds a decision to a specific Mission revision and Artifact set. Its four `allOf`
//! conditionals: an approving final or child decision names at least one Artifact, a final
//! Approval is made by a human, a work-execution Approval names its WorkItem, and a revocation
//! names the Approval it revokes. [`check_approval`] implements each.

use super::common::{Actor, ActorType, Signature};
use super::{Cx, Id, SafeInt, SchemaError, Semver, Sha256Hash, Str, Unique, require_if};
use crate::json::Value;
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `kind`: what is being approved.
    pub enum ApprovalKind {
        /// The root Mission's final human acceptance (§7.3).
        MissionFinal = "mission_final",
        /// A child Mission result, by default approved by the Parent Coordinator (§14).
        ChildMission = "child_mission",
        /// Permission to execute a WorkItem (`approval.grant_execution`).
        WorkExecution = "work_execution",
    }
);

string_enum!(
    /// `decision`.
    pub enum ApprovalDecision {
        Approved = "approved",
        ChangesRequested = "changes_requested",
        Denied = "denied",
        /// A revocation is a new record; it never erases the original Approval (§7.1).
        Revoked = "revoked",
    }
);

object!(
    /// The Approval (§7.3). Signed Document: protected time `occurredAt`, expected signer
    /// exactly `approver` (§6.4).
    pub struct Approval {
        "approvalId" => approval_id: req Id,
        "kind" => kind: req ApprovalKind,
        "decision" => decision: req ApprovalDecision,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "workItemId" => work_item_id: opt Id,
        /// The specific Mission revision the decision applies to (§7.3).
        "missionRevision" => mission_revision: req SafeInt,
        /// The specific Artifact set the decision applies to (§7.3).
        "artifactHashes" => artifact_hashes: req Unique<Sha256Hash>,
        "acceptancePolicyVersion" => acceptance_policy_version: req Semver,
        "approver" => approver: req Actor,
        "comments" => comments: req Str<0, 10000>,
        "conditions" => conditions: req Vec<Str<1, 2000>>,
        "revokesApprovalId" => revokes_approval_id: opt Id,
        "occurredAt" => occurred_at: req Timestamp,
        "signature" => signature: req Signature,
    }
    check = check_approval;
);

/// `allOf[0]`.
pub const RULE_APPROVED_ARTIFACTS: &str = "the rule that an approved mission_final or child_mission decision names at least one \
     Artifact (§7.3)";
/// `allOf[1]`.
pub const RULE_FINAL_HUMAN: &str = "the rule that a mission_final Approval is human (§7.1, §7.3)";
/// `allOf[2]`.
pub const RULE_WORK_EXECUTION: &str = "the work_execution Approval rule (§10.1, §10.2)";
/// `allOf[3]`.
pub const RULE_REVOKED: &str = "the revocation rule (§7.1)";

/// The schema's `allOf` conditionals, in schema order.
pub fn check_approval(a: &Approval, cx: &mut Cx) -> Result<(), SchemaError> {
    // allOf[0]: kind ∈ {mission_final, child_mission} and decision approved → minItems 1.
    let approves_result = matches!(
        a.kind,
        ApprovalKind::MissionFinal | ApprovalKind::ChildMission
    ) && a.decision == ApprovalDecision::Approved;
    if approves_result && a.artifact_hashes.is_empty() {
        return cx.at("artifactHashes", |cx| {
            Err(cx.err(format!(
                "array has 0 items, at least 1 required by {RULE_APPROVED_ARTIFACTS}"
            )))
        });
    }
    // allOf[1]: mission_final → approver is a humanActor.
    if a.kind == ApprovalKind::MissionFinal && a.approver.actor_type != ActorType::Human {
        let actual = a.approver.actor_type;
        return cx.at("approver", |cx| {
            cx.at("type", |cx| {
                Err(cx.err(format!(
                    "actor type \"{actual}\" is not allowed by {RULE_FINAL_HUMAN}: it must be \
                     \"human\""
                )))
            })
        });
    }
    // allOf[2]: work_execution → workItemId.
    require_if(
        cx,
        a.kind == ApprovalKind::WorkExecution,
        a.work_item_id.is_some(),
        "workItemId",
        RULE_WORK_EXECUTION,
    )?;
    // allOf[3]: revoked → revokesApprovalId.
    require_if(
        cx,
        a.decision == ApprovalDecision::Revoked,
        a.revokes_approval_id.is_some(),
        "revokesApprovalId",
        RULE_REVOKED,
    )
}

/// Parses `v` as an [`Approval`] and discards it (the conformance runner's schema stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Approval>(v, timestamp_profile).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testkit::{assert_fails, cases, edit, load, mutate, vector};
    use crate::model::{ToJson, from_value};

    const SCHEMA: &str = "approval.schema.json";

    fn parse(v: &Value) -> Result<Approval, SchemaError> {
        from_value::<Approval>(v, true)
    }

    fn ok(v: &Value) -> Approval {
        parse(v).unwrap_or_else(|e| panic!("expected valid: {e}"))
    }

    fn final_approval() -> Value {
        vector(SCHEMA, "valid/approval.json")
    }

    fn set(v: &Value, name: &str, value: Value) -> Value {
        mutate(v, |o| o.insert(name.to_owned(), value))
    }

    fn del(v: &Value, name: &str) -> Value {
        mutate(v, |o| {
            o.remove(name);
        })
    }

    fn no_artifacts(v: &Value) -> Value {
        set(v, "artifactHashes", Value::Array(vec![]))
    }

    #[test]
    fn conformance_vectors() {
        let all = cases(SCHEMA);
        assert!(all.iter().filter(|c| c.valid).count() >= 2);
        assert_eq!(all.iter().filter(|c| !c.valid).count(), 1);
        for case in all {
            let v = load(&case.instance);
            if case.valid {
                for profile in [false, true] {
                    let a = from_value::<Approval>(&v, profile)
                        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
                    assert_eq!(from_value::<Approval>(&a.to_json(), profile), Ok(a.clone()));
                }
            } else {
                assert!(case.instance.ends_with("approval-final-by-agent.json"));
                assert_fails(parse(&v), "/approver/type", RULE_FINAL_HUMAN);
            }
        }
    }

    #[test]
    fn signed_document_vector_parses_with_the_timestamp_profile() {
        let v = load("cryptography/vectors/signed-documents/valid/approval.json");
        ok(&v);
        assert_eq!(validate(&v, true), Ok(()));
    }

    #[test]
    fn members() {
        let v = final_approval();
        assert_fails(
            parse(&set(&v, "kind", "final".into())),
            "/kind",
            "is not one of",
        );
        assert_fails(
            parse(&set(&v, "decision", "maybe".into())),
            "/decision",
            "is not one of",
        );
        let dup = Value::Array(vec![
            "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".into(),
            "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".into(),
        ]);
        assert_fails(
            parse(&set(&v, "artifactHashes", dup)),
            "/artifactHashes",
            "uniqueItems",
        );
        assert_fails(
            parse(&set(&v, "acceptancePolicyVersion", "v1".into())),
            "/acceptancePolicyVersion",
            "semantic",
        );
        assert_fails(
            parse(&set(&v, "comments", "x".repeat(10001).into())),
            "/comments",
            "outside 0..=10000",
        );
        ok(&set(&v, "comments", "".into()));
        assert_fails(
            parse(&set(&v, "conditions", Value::Array(vec!["".into()]))),
            "/conditions/0",
            "outside 1..=2000",
        );
        ok(&set(
            &v,
            "conditions",
            Value::Array(vec!["Ship after the freeze.".into()]),
        ));
        assert_fails(
            parse(&set(&v, "missionRevision", Value::Null)),
            "/missionRevision",
            "expected a number",
        );
        assert_fails(parse(&set(&v, "scope", Value::Null)), "", "unknown member");
        for m in [
            "approvalId",
            "kind",
            "decision",
            "missionId",
            "groupId",
            "missionRevision",
            "artifactHashes",
            "acceptancePolicyVersion",
            "approver",
            "comments",
            "conditions",
            "occurredAt",
            "signature",
        ] {
            assert_fails(
                parse(&del(&v, m)),
                "",
                &format!("missing required member \"{m}\""),
            );
        }
    }

    // allOf[0]: approved final/child decisions name at least one Artifact.
    #[test]
    fn rule_approved_artifacts() {
        let v = final_approval();
        assert_fails(
            parse(&no_artifacts(&v)),
            "/artifactHashes",
            RULE_APPROVED_ARTIFACTS,
        );
        let child = vector(SCHEMA, "valid/child-approval.json");
        ok(&child);
        assert_fails(
            parse(&no_artifacts(&child)),
            "/artifactHashes",
            RULE_APPROVED_ARTIFACTS,
        );
        // Other decisions and kinds may name none.
        ok(&set(
            &no_artifacts(&v),
            "decision",
            "changes_requested".into(),
        ));
        ok(&set(&no_artifacts(&v), "decision", "denied".into()));
        let exec = set(
            &set(&no_artifacts(&v), "kind", "work_execution".into()),
            "workItemId",
            "urn:w:1".into(),
        );
        ok(&exec);
    }

    // allOf[1]: a mission_final Approval is made by a human.
    #[test]
    fn rule_final_human() {
        let v = final_approval();
        ok(&v);
        for t in ["agent", "service"] {
            let other = edit(&v, &["approver"], |o| o.insert("type", t.into()));
            assert_fails(parse(&other), "/approver/type", RULE_FINAL_HUMAN);
            // Child Mission Approvals may be made by the Parent Coordinator Agent (§14).
            ok(&set(&other, "kind", "child_mission".into()));
        }
    }

    // allOf[2]: a work_execution Approval names its WorkItem.
    #[test]
    fn rule_work_execution() {
        let v = set(&final_approval(), "kind", "work_execution".into());
        assert_fails(parse(&v), "", RULE_WORK_EXECUTION);
        let with = set(
            &v,
            "workItemId",
            "urn:missionweaveprotocol:work-item:one".into(),
        );
        let a = ok(&with);
        assert_eq!(a.kind, ApprovalKind::WorkExecution);
    }

    // allOf[3]: a revocation names the Approval it revokes.
    #[test]
    fn rule_revoked() {
        let v = set(&final_approval(), "decision", "revoked".into());
        assert_fails(
            parse(&v),
            "",
            "missing member \"revokesApprovalId\", required by the revocation rule",
        );
        ok(&set(
            &v,
            "revokesApprovalId",
            "urn:missionweaveprotocol:approval:earlier".into(),
        ));
        // Optional otherwise.
        ok(&set(
            &final_approval(),
            "revokesApprovalId",
            "urn:missionweaveprotocol:approval:x".into(),
        ));
    }

    /// kind × decision × approver type × empty or non-empty Artifact set × presence of
    /// workItemId and revokesApprovalId agrees with a JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = final_approval();
        let (mut accepted, mut rejected) = (0, 0);
        for k in ApprovalKind::ALL {
            for d in ApprovalDecision::ALL {
                for t in ["agent", "human", "service"] {
                    for mask in 0..8u32 {
                        let v = set(
                            &set(&base, "kind", k.as_str().into()),
                            "decision",
                            d.as_str().into(),
                        );
                        let v = edit(&v, &["approver"], |o| o.insert("type", t.into()));
                        let v = mutate(&v, |o| {
                            if mask & 1 != 0 {
                                o.insert("artifactHashes", Value::Array(vec![]));
                            }
                            if mask & 2 != 0 {
                                o.insert(
                                    "workItemId",
                                    "urn:missionweaveprotocol:work-item:w".into(),
                                );
                            }
                            if mask & 4 != 0 {
                                o.insert(
                                    "revokesApprovalId",
                                    "urn:missionweaveprotocol:approval:a".into(),
                                );
                            }
                        });
                        let ours = validate(&v, true);
                        assert_eq!(
                            ours.is_ok(),
                            oracle.accepts(&v),
                            "{k} {d} {t} mask {mask:03b}: {ours:?}"
                        );
                        if ours.is_ok() {
                            accepted += 1;
                        } else {
                            rejected += 1;
                        }
                    }
                }
            }
        }
        assert!(
            accepted > 30 && rejected > 100,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
