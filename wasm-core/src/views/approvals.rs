//! The approval inbox: one queue across the Missions the viewer sees, holding
//! - final Mission approvals (`awaiting_approval`: the exact submitted revision, the Artifact
//!   hashes and an Evidence summary, §7.3, H-6);
//! - execution gates (`queued` WorkItems whose contract requires an Execution Approval and
//!   that have no current one, §12);
//! - cooperation override requests (a `RATE_LIMITED` rejection the client saw, until a grant
//!   for its Action ID exists or the Command was accepted, §20);
//! - budget escalations (a `BUDGET_EXCEEDED` rejection the client saw, until the Command was
//!   accepted, §12; MissionWeaveProtocol 0.1 has no Command that raises a budget).
//!
//! For each item, **who may approve and why** is the authority's own admission rule:
//! [`guards::owner_principal`] (`mission.approve`), [`execution_approval::execution_approver`]
//! (`approval.grant_execution`) and [`cooperation::override_approver`]
//! (`policy.grant_cooperation_override`), asked of the viewer. **Self-approval is refused**: the
//! viewer who requested the item (the Coordinator that submitted the Mission, the Worker that
//! owns the gated WorkItem, the actor whose Command hit the limit) is marked
//! [`ViewerDecision::SelfApproval`] whatever the rule would admit (separation of duties; the
//! case arises for a child Mission whose Coordinator is also its MissionOwner, §14).

use super::{SeenRejection, Viewer};
use crate::authority::clock::Micros;
use crate::authority::guards;
use crate::authority::handlers::{cooperation, execution_approval, mission, work_exec};
use crate::authority::projection::Mission;
use crate::authority::state::{GroupState, State};
use crate::json::{Object, Value};
use crate::model::common::{Actor, ActorType};
use crate::model::error::ErrorCode;
use crate::model::mission::MissionState;
use crate::model::work_item::WorkItemState;
use std::collections::BTreeMap;

/// What the log says about one submitted Artifact hash: its manifest's media type, producer and
/// classification, and the WorkItem that published it (§13.1), so the approver reads what each
/// hash is before fetching it. All `None` for a hash no `artifact.published` of this Mission
/// names (the submission binds the hash all the same, §7.3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArtifactFacts {
    pub content_hash: String,
    pub media_type: Option<String>,
    pub producer: Option<String>,
    pub classification: Option<String>,
    pub work_item_id: Option<String>,
    /// The publishing WorkItem's goal (its Work Contract's).
    pub work_item_goal: Option<String>,
}

/// Evidence recorded on a Mission's WorkItems.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvidenceSummary {
    /// Submission and verification Evidence items.
    pub items: u64,
    pub successful: u64,
    /// `verified` WorkItems.
    pub verified_work_items: u64,
    /// WorkItems that are not `cancelled`.
    pub work_items: u64,
}

/// What is to be approved.
#[derive(Clone, Debug, PartialEq)]
pub enum ApprovalKind {
    /// `mission.approve` binds exactly this revision and hash set (§7.3).
    MissionFinal {
        revision: u64,
        artifact_hashes: Vec<String>,
        /// One per hash of `artifact_hashes`, in the same order.
        artifacts: Vec<ArtifactFacts>,
        evidence: EvidenceSummary,
    },
    /// `approval.grant_execution` for this WorkItem and Ownership Epoch (§12). With what the
    /// Work Contract says the work is and may touch (§9: goal, allowed tools and resources),
    /// so the human sees what they let run, not only an id.
    ExecutionGate {
        work_item_id: String,
        goal: String,
        allowed_tools: Vec<String>,
        allowed_resources: Vec<String>,
        ownership_epoch: u64,
        execution_approval: String,
        side_effect_risk: String,
        ownership_lease_expires_at: Option<Micros>,
    },
    /// A Cooperation Override Grant for one Command (§20).
    CooperationOverride {
        policy: String,
        target_command_kind: String,
        target_action_id: String,
    },
    /// A budget escalation (§12: exhaustion "requires explicit escalation").
    BudgetEscalation {
        command_kind: String,
        action_id: String,
        work_item_id: Option<String>,
        dimension: Option<String>,
        account: Option<String>,
    },
}

/// The authority's rule that admits an approver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApproverRule {
    /// **owner**: the MissionOwner with an active `mission_owner` Membership.
    MissionOwner,
    /// The human MissionOwner with an active `mission_owner` Membership.
    HumanMissionOwner,
    /// An Organization service, or the MissionOwner with an active `mission_owner` Membership.
    MissionOwnerOrService,
    /// The MissionOwner sets the Mission's limits (§12), so it answers a budget escalation;
    /// MissionWeaveProtocol 0.1 has no Command that raises a limit (its answer is a follow-up
    /// Mission, a re-planned WorkItem or a cancellation).
    BudgetOwner,
}

impl ApproverRule {
    /// The Command that approves (none for a budget escalation).
    pub fn command_kind(self) -> Option<&'static str> {
        match self {
            ApproverRule::MissionOwner => Some("mission.approve"),
            ApproverRule::HumanMissionOwner => Some("approval.grant_execution"),
            ApproverRule::MissionOwnerOrService => Some("policy.grant_cooperation_override"),
            ApproverRule::BudgetOwner => None,
        }
    }

    /// The rule in words.
    pub fn describe(self) -> &'static str {
        match self {
            ApproverRule::MissionOwner => {
                "the MissionOwner, through an active mission_owner Membership (§7.1)"
            }
            ApproverRule::HumanMissionOwner => {
                "the human MissionOwner, through an active mission_owner Membership (§12)"
            }
            ApproverRule::MissionOwnerOrService => {
                "the MissionOwner through an active mission_owner Membership, or an Organization service (§20)"
            }
            ApproverRule::BudgetOwner => {
                "the MissionOwner, who sets the Mission's limits, through an active mission_owner Membership (§12)"
            }
        }
    }

    /// Whether the authority would admit `who` as the approver: the handler's own guard.
    pub fn admits(
        self,
        g: &GroupState,
        mission: &Mission,
        who: &Actor,
    ) -> Result<(), crate::authority::Rejection> {
        match self {
            ApproverRule::MissionOwner | ApproverRule::BudgetOwner => {
                guards::owner_principal(g, mission, who)
            }
            ApproverRule::HumanMissionOwner => {
                execution_approval::execution_approver(g, mission, who)
            }
            ApproverRule::MissionOwnerOrService => cooperation::override_approver(g, mission, who),
        }
    }
}

/// What the viewer may do with an item.
#[derive(Clone, Debug, PartialEq)]
pub enum ViewerDecision {
    MayApprove,
    /// The viewer requested it: refused.
    SelfApproval,
    /// The rule does not admit the viewer; the code the authority would answer.
    NotAdmitted {
        code: ErrorCode,
        reason: String,
    },
    /// No viewing Principal (the Organization view).
    NoViewer,
}

/// One inbox item.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalItem {
    pub mission_id: String,
    pub group_id: String,
    pub kind: ApprovalKind,
    /// When it became pending.
    pub since: Micros,
    /// Who asked: the submitting Coordinator, the owning Worker, the limited actor.
    pub requested_by: Option<Actor>,
    pub rule: ApproverRule,
    /// The Principals the rule admits now (Organization services are not enumerated).
    pub approvers: Vec<Actor>,
    pub viewer: ViewerDecision,
}

/// The inbox.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApprovalInbox {
    /// Oldest first, then by Mission.
    pub items: Vec<ApprovalItem>,
}

impl ApprovalInbox {
    /// The inbox of `viewer` at `now`; `seen` are the rejections the client saw.
    pub fn build(
        state: &State,
        viewer: &Viewer,
        seen: &[SeenRejection],
        now: Micros,
    ) -> ApprovalInbox {
        let mut items = Vec::new();
        for m in state.missions.values().filter(|m| viewer.sees(state, m)) {
            let Some(g) = state.groups.get(&m.group_id) else {
                continue;
            };
            let mut push = |kind, since, requested_by: Option<Actor>, rule: ApproverRule| {
                items.push(item(g, m, viewer, kind, since, requested_by, rule));
            };
            if m.status == MissionState::AwaitingApproval {
                push(
                    ApprovalKind::MissionFinal {
                        revision: m.submitted_revision.unwrap_or(m.revision),
                        artifact_hashes: m.submitted_artifact_hashes.clone(),
                        artifacts: {
                            let published = published_manifests(state, &m.id);
                            m.submitted_artifact_hashes
                                .iter()
                                .map(|h| artifact_facts(state, &published, h))
                                .collect()
                        },
                        evidence: evidence(state, &m.id),
                    },
                    m.updated_at,
                    Some(Actor::new(ActorType::Agent, &m.coordinator_id)),
                    ApproverRule::MissionOwner,
                );
            }
            if m.status == MissionState::Active {
                for w in state.work_items.values().filter(|w| w.mission_id == m.id) {
                    if w.status == WorkItemState::Queued
                        && work_exec::execution_approval_required(w)
                        && work_exec::current_execution_approval(state, w, now).is_none()
                        && let Some(owner) = &w.assignee_id
                    {
                        push(
                            ApprovalKind::ExecutionGate {
                                work_item_id: w.id.clone(),
                                goal: w.contract.goal.clone(),
                                allowed_tools: w.contract.allowed_tools.clone(),
                                allowed_resources: w.contract.allowed_resources.clone(),
                                ownership_epoch: w.ownership_epoch,
                                execution_approval: w.contract.execution_approval.clone(),
                                side_effect_risk: w.contract.side_effect_risk.clone(),
                                ownership_lease_expires_at: w.ownership_lease_expires_at,
                            },
                            w.updated_at,
                            Some(Actor::new(ActorType::Agent, owner)),
                            ApproverRule::HumanMissionOwner,
                        );
                    }
                }
            }
            for r in seen
                .iter()
                .filter(|r| r.group_id.as_deref() == Some(m.group_id.as_str()))
                // Accepted since (a retry, or a grant then the Command): no longer pending.
                .filter(|r| !state.receipts.contains(&r.actor.id.0, &r.action_id))
            {
                match r.rejection.code {
                    ErrorCode::RateLimited if !m.is_terminal() => {
                        let granted = state.override_grants.values().any(|gr| {
                            gr.beneficiary == r.actor && gr.target_action_id == r.action_id
                        });
                        if !granted {
                            push(
                                ApprovalKind::CooperationOverride {
                                    policy: r.detail("policy").unwrap_or_default().to_owned(),
                                    target_command_kind: r.command_kind.clone(),
                                    target_action_id: r.action_id.clone(),
                                },
                                r.at,
                                Some(r.actor.clone()),
                                ApproverRule::MissionOwnerOrService,
                            );
                        }
                    }
                    ErrorCode::BudgetExceeded if !m.is_terminal() => push(
                        ApprovalKind::BudgetEscalation {
                            command_kind: r.command_kind.clone(),
                            action_id: r.action_id.clone(),
                            work_item_id: r
                                .work_item_id
                                .clone()
                                .or_else(|| r.detail("workItemId").map(str::to_owned)),
                            dimension: r.detail("dimension").map(str::to_owned),
                            account: r.detail("account").map(str::to_owned),
                        },
                        r.at,
                        Some(r.actor.clone()),
                        ApproverRule::BudgetOwner,
                    ),
                    _ => {}
                }
            }
        }
        crate::order::sort_by(&mut items, |a, b| {
            a.since
                .cmp(&b.since)
                .then_with(|| a.mission_id.cmp(&b.mission_id))
        });
        ApprovalInbox { items }
    }

    /// The items of one Mission.
    pub fn of_mission<'a>(&'a self, mission_id: &'a str) -> impl Iterator<Item = &'a ApprovalItem> {
        self.items
            .iter()
            .filter(move |i| i.mission_id == mission_id)
    }
}

fn item(
    g: &GroupState,
    m: &Mission,
    viewer: &Viewer,
    kind: ApprovalKind,
    since: Micros,
    requested_by: Option<Actor>,
    rule: ApproverRule,
) -> ApprovalItem {
    let approvers = g
        .memberships
        .values()
        .map(|ms| &ms.principal)
        .filter(|p| rule.admits(g, m, p).is_ok())
        .cloned()
        .collect();
    let decision = match viewer.actor() {
        None => ViewerDecision::NoViewer,
        Some(v) if requested_by.as_ref() == Some(v) => ViewerDecision::SelfApproval,
        Some(v) => match rule.admits(g, m, v) {
            Ok(()) => ViewerDecision::MayApprove,
            Err(r) => ViewerDecision::NotAdmitted {
                code: r.code,
                reason: r.message,
            },
        },
    };
    ApprovalItem {
        mission_id: m.id.clone(),
        group_id: m.group_id.clone(),
        kind,
        since,
        requested_by,
        rule,
        approvers,
        viewer: decision,
    }
}

/// The manifests `mission_id` may submit (its own and its descendant child Missions', the
/// authority's rule) by content hash, the latest (`createdAt`) if several name one hash: one pass
/// over the Artifacts for all of a submission's hashes, not one per hash.
fn published_manifests<'s>(state: &'s State, mission_id: &'s str) -> BTreeMap<&'s str, &'s Object> {
    let created = |m: &Object| {
        m.get("createdAt")
            .and_then(Value::as_str)
            .and_then(Micros::parse)
    };
    let mut by_hash: BTreeMap<&str, &Object> = BTreeMap::new();
    for (id, hash) in mission::mission_artifacts(state, mission_id) {
        let Some(m) = state.artifacts.get(id) else {
            continue;
        };
        // On equal `createdAt` the later Artifact in id order wins.
        match by_hash.get(hash) {
            Some(kept) if created(kept) > created(m) => {}
            _ => {
                by_hash.insert(hash, m);
            }
        }
    }
    by_hash
}

/// What the log says about `hash`: the manifest published with it (see
/// [`published_manifests`]), or only the hash.
fn artifact_facts(state: &State, published: &BTreeMap<&str, &Object>, hash: &str) -> ArtifactFacts {
    let text = |m: &Object, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    let Some(m) = published.get(hash) else {
        return ArtifactFacts {
            content_hash: hash.to_owned(),
            ..ArtifactFacts::default()
        };
    };
    let work_item_id = text(m, "workItemId");
    ArtifactFacts {
        content_hash: hash.to_owned(),
        media_type: text(m, "mediaType"),
        producer: text(m, "producingAgentId"),
        classification: text(m, "dataClassification"),
        work_item_goal: work_item_id
            .as_deref()
            .and_then(|w| state.work_items.get(w))
            .map(|w| w.contract.goal.clone()),
        work_item_id,
    }
}

/// Evidence over a Mission's WorkItems.
fn evidence(state: &State, mission_id: &str) -> EvidenceSummary {
    let mut s = EvidenceSummary::default();
    for w in state
        .work_items
        .values()
        .filter(|w| w.mission_id == mission_id)
    {
        if w.status != WorkItemState::Cancelled {
            s.work_items += 1;
        }
        if w.status == WorkItemState::Verified {
            s.verified_work_items += 1;
        }
        for e in w.submission_evidence.iter().chain(&w.verification_evidence) {
            s.items += 1;
            if e.success {
                s.successful += 1;
            }
        }
    }
    s
}
