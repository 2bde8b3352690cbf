//! `work-item.schema.json`: the WorkItem aggregate (§10, §11; checklist §6).

use super::common::{Actor, CapabilityRef, Extensions};
use super::work_contract::WorkContract;
use super::{
    Cx, FromJson, Id, NonEmpty, NonEmptyUnique, NonNegNumber, PosInt, SafeInt, SchemaError,
    Sha256Hash, Str, ToJson, Unique, require_if,
};
use crate::json::{Number, Value};
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `state` (§10.2). The legacy alias `accepted` is not a state (`verified` is).
    pub enum WorkItemState {
        Open = "open",
        Offered = "offered",
        Queued = "queued",
        Active = "active",
        Blocked = "blocked",
        Submitted = "submitted",
        Verified = "verified",
        Failed = "failed",
        Cancelled = "cancelled",
    }
);

impl WorkItemState {
    /// The states that require an `owner` and a `selectionBasis` (allOf/0).
    pub fn is_owned(self) -> bool {
        matches!(
            self,
            WorkItemState::Queued
                | WorkItemState::Active
                | WorkItemState::Blocked
                | WorkItemState::Submitted
                | WorkItemState::Verified
        )
    }

    /// The states that require a `submission` (allOf/1).
    pub fn is_submitted(self) -> bool {
        matches!(self, WorkItemState::Submitted | WorkItemState::Verified)
    }
}

string_enum!(
    /// `offers[].status` (§10.3).
    pub enum OfferStatus {
        Pending = "pending",
        Accepted = "accepted",
        Declined = "declined",
        Withdrawn = "withdrawn",
        Expired = "expired",
        LostRace = "lost_race",
    }
);

string_enum!(
    /// `offers[].declineReason` (§10.3).
    pub enum DeclineReason {
        Capacity = "capacity",
        Deadline = "deadline",
        Capability = "capability",
        Authorization = "authorization",
        Dependency = "dependency",
        Budget = "budget",
        Other = "other",
    }
);

object!(
    /// One `offers` item (§10.3).
    pub struct Offer {
        "offerId" => offer_id: req Id,
        "agentId" => agent_id: req Id,
        "agentCardVersion" => agent_card_version: req PosInt,
        "expiresAt" => expires_at: req Timestamp,
        "status" => status: req OfferStatus,
        "declineReason" => decline_reason: opt DeclineReason,
    }
);

object!(
    /// `owner`: the accepted owner, pinned card and capability versions (I-5, §10.3).
    pub struct WorkItemOwner {
        "agentId" => agent_id: req Id,
        "agentCardVersion" => agent_card_version: req PosInt,
        "capabilityPins" => capability_pins: req NonEmpty<CapabilityRef>,
        "ownershipEpoch" => ownership_epoch: req PosInt,
        "ownershipLeaseId" => ownership_lease_id: req Id,
        "acceptedAt" => accepted_at: req Timestamp,
    }
);

object!(
    /// `selectionBasis`: why this owner was selected (§11.2 scheduling disclosure).
    pub struct SelectionBasis {
        "requiredCapabilities" => required_capabilities: req NonEmpty<CapabilityRef>,
        "verifiedMatches" => verified_matches: req NonEmpty<CapabilityRef>,
        "authorizationEligible" => authorization_eligible: req bool,
        "availabilityEstimate" => availability_estimate: req Timestamp,
        "expectedCost" => expected_cost: req NonNegNumber,
        "reliabilityEvidence" => reliability_evidence: req Vec<Id>,
        "policyRulesApplied" => policy_rules_applied: req NonEmpty<Str<1, 200>>,
    }
);

/// A number with `minimum: 0, maximum: 1` (`scheduleEstimate.confidence`), kept as spelled.
#[derive(Clone, Debug, PartialEq)]
pub struct UnitInterval(pub Number);

impl FromJson for UnitInterval {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let n = cx.number(v)?;
        let f = n.to_f64();
        if (0.0..=1.0).contains(&f) {
            Ok(UnitInterval(n.clone()))
        } else {
            Err(cx.err(format!(
                "{} is outside 0..=1 (minimum 0, maximum 1)",
                n.as_lexical()
            )))
        }
    }
}

impl ToJson for UnitInterval {
    fn to_json(&self) -> Value {
        Value::Number(self.0.clone())
    }
}

string_enum!(
    /// `scheduleEstimate.capacityStatus`.
    pub enum CapacityStatus {
        Available = "available",
        Queued = "queued",
        Constrained = "constrained",
        Blocked = "blocked",
    }
);

object!(
    /// `scheduleEstimate`: a non-binding schedule disclosure (§11.2).
    pub struct ScheduleEstimate {
        "estimatedStart" => estimated_start: req Timestamp,
        "estimatedCompletion" => estimated_completion: req Timestamp,
        "confidence" => confidence: req UnitInterval,
        "capacityStatus" => capacity_status: req CapacityStatus,
        "lastCalculatedAt" => last_calculated_at: req Timestamp,
    }
);

object!(
    /// `progress`: reported progress; display is derived, never authoritative (§11.4, H-5).
    pub struct Progress {
        "currentPhase" => current_phase: req Str<1, 500>,
        "completedMilestones" => completed_milestones: req Vec<Str<1, 500>>,
        "nextCheckpoint" => next_checkpoint: req Str<1, 500>,
        "blockers" => blockers: req Vec<Str<1, 2000>>,
        "updatedCompletionEstimate" => updated_completion_estimate: req Timestamp,
        "evidenceIds" => evidence_ids: req Unique<Id>,
    }
);

object!(
    /// `submission`: the submitted Artifacts and Evidence (§13.2).
    pub struct Submission {
        "artifactHashes" => artifact_hashes: req NonEmptyUnique<Sha256Hash>,
        "evidenceIds" => evidence_ids: req NonEmptyUnique<Id>,
        "submittedAt" => submitted_at: req Timestamp,
    }
);

object!(
    /// A WorkItem (§10).
    pub struct WorkItem {
        "workItemId" => work_item_id: req Id,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "conversationId" => conversation_id: req Id,
        "revision" => revision: req SafeInt,
        "state" => state: req WorkItemState,
        "exclusive" => exclusive: req bool,
        "contract" => contract: req WorkContract,
        "offers" => offers: opt Vec<Offer>,
        "owner" => owner: opt WorkItemOwner,
        "selectionBasis" => selection_basis: opt SelectionBasis,
        "scheduleEstimate" => schedule_estimate: opt ScheduleEstimate,
        "progress" => progress: opt Progress,
        "submission" => submission: opt Submission,
        "createdBy" => created_by: req Actor,
        "authorizedBy" => authorized_by: opt Actor,
        "createdAt" => created_at: req Timestamp,
        "updatedAt" => updated_at: opt Timestamp,
        "extensions" => extensions: opt Extensions,
    }
    check = check_work_item;
);

const RULE_OWNED: &str = "work-item allOf/0 (states queued, active, blocked, submitted and \
                          verified require owner and selectionBasis)";
const RULE_SUBMITTED: &str = "work-item allOf/1 (states submitted and verified require submission)";

/// The schema's `allOf`: owned states carry the owner and selection basis; submitted states
/// carry the submission.
fn check_work_item(w: &WorkItem, cx: &mut Cx) -> Result<(), SchemaError> {
    let owned = w.state.is_owned();
    require_if(cx, owned, w.owner.is_some(), "owner", RULE_OWNED)?;
    require_if(
        cx,
        owned,
        w.selection_basis.is_some(),
        "selectionBasis",
        RULE_OWNED,
    )?;
    require_if(
        cx,
        w.state.is_submitted(),
        w.submission.is_some(),
        "submission",
        RULE_SUBMITTED,
    )
}

/// Validates `v` as a WorkItem.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<WorkItem>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{
        assert_fails, cases, edit, json, load, mutate, vector,
    };
    use crate::model::{from_value, json_equal};

    const SCHEMA: &str = "work-item.schema.json";
    const SUBMISSION: &str = r#"{
        "artifactHashes": ["sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
        "evidenceIds": ["urn:missionweaveprotocol:evidence:one"],
        "submittedAt": "2026-07-15T03:30:00Z"
    }"#;

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 3);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let w =
                    from_value::<WorkItem>(&v, false).unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&w.to_json(), &v), "{}: round trip", c.name);
            } else if c.instance.ends_with("/work-item-active-without-owner.json") {
                assert_fails(
                    validate(&v, false),
                    "",
                    "\"owner\", required by work-item allOf/0",
                );
            } else if c
                .instance
                .ends_with("/work-item-legacy-accepted-state.json")
            {
                assert_fails(validate(&v, false), "/state", "\"accepted\" is not one of");
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn rule_owned_states() {
        let v = vector(SCHEMA, "valid/work-item.json");
        for state in ["queued", "active", "blocked"] {
            let s = mutate(&v, |o| o.insert("state", Value::from(state)));
            assert!(validate(&s, false).is_ok(), "{state}");
            let bad = mutate(&s, |o| {
                o.remove("owner");
            });
            assert_fails(
                validate(&bad, false),
                "",
                "\"owner\", required by work-item allOf/0",
            );
            let bad = mutate(&s, |o| {
                o.remove("selectionBasis");
            });
            assert_fails(
                validate(&bad, false),
                "",
                "\"selectionBasis\", required by work-item allOf/0",
            );
        }
        for state in ["open", "offered", "failed", "cancelled"] {
            let ok = mutate(&v, |o| {
                o.insert("state", Value::from(state));
                o.remove("owner");
                o.remove("selectionBasis");
            });
            assert!(validate(&ok, false).is_ok(), "{state}");
        }
    }

    #[test]
    fn rule_submitted_states() {
        let v = vector(SCHEMA, "valid/work-item.json");
        for state in ["submitted", "verified"] {
            let bad = mutate(&v, |o| o.insert("state", Value::from(state)));
            assert_fails(
                validate(&bad, false),
                "",
                "\"submission\", required by work-item allOf/1",
            );
            let ok = mutate(&bad, |o| o.insert("submission", json(SUBMISSION)));
            assert!(validate(&ok, false).is_ok(), "{state}");
            let bad = mutate(&ok, |o| {
                o.remove("owner");
            });
            assert_fails(validate(&bad, false), "", "work-item allOf/0");
        }
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/work-item.json");
        let bad = edit(&v, &["scheduleEstimate"], |o| {
            o.insert("confidence", json("1.5"))
        });
        assert_fails(
            validate(&bad, false),
            "/scheduleEstimate/confidence",
            "outside 0..=1",
        );
        let bad = edit(&v, &["scheduleEstimate"], |o| {
            o.insert("confidence", json("-0.1"))
        });
        assert_fails(
            validate(&bad, false),
            "/scheduleEstimate/confidence",
            "outside 0..=1",
        );
        let ok = edit(&v, &["scheduleEstimate"], |o| {
            o.insert("confidence", json("1.0"))
        });
        assert!(validate(&ok, false).is_ok());
        let bad = edit(&v, &["selectionBasis"], |o| {
            o.insert("expectedCost", json("-1"))
        });
        assert_fails(
            validate(&bad, false),
            "/selectionBasis/expectedCost",
            "minimum 0",
        );
        let bad = edit(&v, &["selectionBasis"], |o| {
            o.insert("policyRulesApplied", json("[\"\"]"))
        });
        assert_fails(
            validate(&bad, false),
            "/selectionBasis/policyRulesApplied/0",
            "outside 1..=200",
        );
        let bad = edit(&v, &["owner"], |o| o.insert("capabilityPins", json("[]")));
        assert_fails(validate(&bad, false), "/owner/capabilityPins", "at least 1");
        let bad = edit(&v, &["offers", "0"], |o| {
            o.insert("declineReason", Value::from("busy"))
        });
        assert_fails(
            validate(&bad, false),
            "/offers/0/declineReason",
            "not one of",
        );
        let bad = edit(&v, &["contract"], |o| {
            o.remove("budget");
        });
        assert_fails(
            validate(&bad, false),
            "/contract",
            "missing required member \"budget\"",
        );
        let sub = mutate(&v, |o| o.insert("submission", json(SUBMISSION)));
        let bad = edit(&sub, &["submission"], |o| {
            o.insert("evidenceIds", json("[]"))
        });
        assert_fails(
            validate(&bad, false),
            "/submission/evidenceIds",
            "at least 1",
        );
        let progress = r#"{"currentPhase": "impl", "completedMilestones": [], "nextCheckpoint": "tests",
            "blockers": [""], "updatedCompletionEstimate": "2026-07-15T03:30:00Z", "evidenceIds": []}"#;
        let bad = mutate(&v, |o| o.insert("progress", json(progress)));
        assert_fails(
            validate(&bad, false),
            "/progress/blockers/0",
            "outside 1..=2000",
        );
    }

    /// The conditional rules agree with an independent JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = vector(SCHEMA, "valid/work-item.json");
        let owner = base.pointer("/owner").cloned().unwrap_or(Value::Null);
        let basis = base
            .pointer("/selectionBasis")
            .cloned()
            .unwrap_or(Value::Null);
        let states: Vec<&str> = WorkItemState::ALL.iter().map(|s| s.as_str()).collect();
        let axes = [
            Axis::values(&[], "state", &states),
            Axis::optional(&[], "owner", owner),
            Axis::optional(&[], "selectionBasis", basis),
            Axis::optional(&[], "submission", json(SUBMISSION)),
        ];
        let (accepted, rejected) =
            agree_on_matrix(&base, &axes, |v| validate(v, false), |v| oracle.accepts(v));
        assert!(
            accepted > 0 && rejected > 0,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
