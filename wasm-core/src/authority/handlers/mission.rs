//! Mission and Group lifecycle (§7, §14; payloads.md §6.1–§6.10).
//!
//! The §7.1 transition table, enforced below:
//!
//! | Current | Command or cause | Next | Authority |
//! | --- | --- | --- | --- |
//! | none | `mission.create` with a Coordinator lease | `active` | human MissionOwner |
//! | none | `mission.create_follow_up` linked to an approved Mission | `active` | the same human MissionOwner |
//! | none | `mission.create_child` linked to a parent WorkItem | `active` | Parent Coordinator (becomes the child's MissionOwner) |
//! | `active` | `mission.submit_for_approval` | `awaiting_approval` | current Coordinator |
//! | `awaiting_approval` | `mission.request_changes` | `active` | MissionOwner |
//! | `awaiting_approval` | `mission.approve` | `approved` | MissionOwner |
//! | non-terminal | `mission.cancel` or parent-cancellation propagation | `cancelled` | MissionOwner or an Organization service |
//! | non-terminal | `mission.terminate` or declared child-failure propagation | `failed` | current Coordinator or an Organization service (D-22) |
//!
//! Coordinator lease (§7.2): `mission.assign_coordinator` (MissionOwner or an Organization
//! service, any non-terminal state) replaces the Coordinator under a higher Coordinator Epoch;
//! `mission.renew_coordinator` (current Coordinator, live lease) extends it.
//!
//! ```text
//! create_child (parent Coordinator, parent Group)
//!   ├─ mission.child.created  (parent Group; parent WorkItem → blocked, owner fenced)
//!   └─ mission.created        (child Group, seq 1; child account under the parent WorkItem)
//! approve (child)   ─▶ mission.approved, then work.result.accepted (parent Group; WorkItem verified)
//! terminate (child) ─▶ mission.terminated, then per childFailurePolicy in the parent Group:
//!      block_parent_work_item ─▶ work.blocked
//!      fail_parent_work_item  ─▶ work.failed
//!      fail_parent_mission    ─▶ work.failed, mission.terminated, and again one level up
//! cancel            ─▶ mission.cancelled, then one per non-terminal descendant (deepest first)
//! ```
//!
//! Cancellation and termination close the Mission's unfinished WorkItems silently (no
//! per-WorkItem Events, payloads.md §12.6); termination never propagates down. Propagation to a
//! parent stops at a parent WorkItem or Mission that is already terminal. The parent-Group
//! `work.*` variants are decided here and applied by `work_exec`.
//!
//! Event references inside payloads (`parentEventId`, `sourceEventId`) carry wire `eventId`s
//! (D-27). Coordinator-only kinds require `coordinatorEpoch` (D-21), and `expectedRevision`,
//! when sent, is compared with the Mission's `revision` by every Mission kind (D-24).

use super::cooperation::{self, Policy};
use super::{Ctx, Decision};
use crate::authority::clock::Micros;
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::mission::{
    ChangesRequested, ChildCreated, CoordinatorAssigned, CoordinatorRenewed, CreatedFrom,
    MissionApproved, MissionClosed, MissionCreated, SubmittedForApproval,
};
use crate::authority::events::work_exec::{
    AcceptedBy, BlockedBy, ResultAccepted, WorkBlocked, WorkClosed,
};
use crate::authority::payload::Reader;
use crate::authority::projection::{Approval, Group, Membership, Mission, ResourceBudget};
use crate::authority::rejection::Rejection;
use crate::authority::state::{GroupState, State};
use crate::authority::{EventDraft, guards, is_service};
use crate::json::{Object, Value};
use crate::model::Id;
use crate::model::common::{Actor, ActorType};
use crate::model::error::ErrorCode;
use crate::model::membership::MembershipState;
use crate::model::mission::MissionState;
use crate::model::work_item::WorkItemState;
use std::collections::BTreeMap;

/// The longest lease a payload may ask for (one year, as the reference).
const MAX_LEASE_SECONDS: u64 = 31_536_000;

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        "mission.created" | "mission.follow_up.created" => apply_created(state, ev),
        "mission.child.created" => apply_child_created(state, ev),
        "mission.coordinator.assigned" => apply_coordinator_assigned(state, ev),
        "mission.coordinator.renewed" => apply_coordinator_renewed(state, ev),
        "mission.submitted_for_approval" => apply_submitted(state, ev),
        "mission.approved" => apply_approved(state, ev),
        "mission.changes_requested" => apply_changes_requested(state, ev),
        "mission.cancelled" => apply_closed(state, ev, MissionState::Cancelled),
        "mission.terminated" => apply_closed(state, ev, MissionState::Failed),
        // The parent-Group `work.result.accepted` (with `childMissionId`) and `work.blocked` /
        // `work.failed` (with `sourceEventId`) that child approval and child-failure
        // propagation append are WorkItem transitions, applied by `work_exec`.
        _ => return None,
    })
}

/// The Mission Conversation's id (payloads.md §2.4).
pub fn mission_conversation_id(group_id: &str) -> String {
    format!("{group_id}:mission")
}

/// The wire `eventId` the authority gives the Event at `sequence` of Group `group_id`. This is
/// the rule `Authority::seal` applies, so a decision can cite an Event it is about to append
/// (`parentEventId`, `sourceEventId`; D-27) and an archive can check a snapshot's `eventIds`.
pub fn wire_event_id(group_id: &str, sequence: u64) -> String {
    crate::authority::event_id(group_id, sequence)
}

/// Group Event drafts of one decision, numbered as the authority will seal them.
struct Drafts<'a> {
    state: &'a State,
    next: BTreeMap<String, u64>,
    out: Vec<EventDraft>,
}

impl<'a> Drafts<'a> {
    fn new(state: &'a State) -> Drafts<'a> {
        Drafts {
            state,
            next: BTreeMap::new(),
            out: Vec::new(),
        }
    }

    /// Appends a Group Event draft and returns the wire `eventId` it will get.
    fn push(&mut self, draft: EventDraft) -> String {
        let group = draft.group_id.clone().unwrap_or_default();
        let last = self
            .next
            .get(&group)
            .copied()
            .unwrap_or_else(|| self.state.groups.get(&group).map_or(0, |g| g.last_sequence));
        self.next.insert(group.clone(), last + 1);
        self.out.push(draft);
        wire_event_id(&group, last + 1)
    }
}

/// `mission.create` / `mission.create_follow_up` (§7.1 rows 1–2).
pub fn decide_create(cx: &Ctx, follow_up: bool) -> Decision {
    let cmd = cx.cmd;
    if cmd.actor.actor_type != ActorType::Human {
        return Err(Rejection::forbidden(
            "a root Mission is created by its human MissionOwner",
        ));
    }
    let mut r = Reader::new(&cmd.payload);
    let mission_id = r.id("missionId");
    let group_id = r.id("groupId");
    let coordinator_id = r.id("coordinatorId");
    let title = r.text("title");
    let objective = r.text("objective");
    let definition_of_done = r.ids("definitionOfDone", 1);
    let budget = r
        .nested("budget", false, ResourceBudget::read)
        .unwrap_or_default();
    let deadline = r.ts("deadline");
    let permissions = r.ids("permissions", 0);
    let lease_seconds = r.int("coordinatorLeaseSeconds", 1, MAX_LEASE_SECONDS, Some(300));
    let follow_up_of = r.opt_id("followUpOfMissionId");
    r.finish(&cmd.kind)?;

    if cmd.group_id.as_deref() != Some(group_id.as_str()) {
        return Err(
            Rejection::invalid("payload groupId differs from the envelope groupId")
                .detail("expected", cmd.group_id.clone().unwrap_or_default())
                .detail("received", group_id.as_str()),
        );
    }
    guards::new_id(cx.state, "Mission", &mission_id)?;
    guards::new_id(cx.state, "Group", &group_id)?;
    guards::card(cx.state, &coordinator_id)?;
    match (follow_up, &follow_up_of) {
        (false, Some(_)) => {
            return Err(Rejection::invalid(
                "mission.create cannot name followUpOfMissionId; use mission.create_follow_up",
            ));
        }
        (true, None) => {
            return Err(Rejection::invalid(
                "mission.create_follow_up needs followUpOfMissionId",
            ));
        }
        (true, Some(source_id)) => {
            let source = cx
                .state
                .missions
                .get(source_id)
                .ok_or_else(|| Rejection::not_found("Mission", source_id))?;
            if source.status != MissionState::Approved {
                return Err(Rejection::transition(format!(
                    "a follow-up needs an approved Mission; {source_id} is {}",
                    source.status
                )));
            }
            if source.owner != cmd.actor {
                return Err(Rejection::forbidden(
                    "only the owner of the approved Mission may create its follow-up",
                ));
            }
        }
        (false, None) => {}
    }
    if deadline <= cx.now {
        return Err(
            Rejection::invalid("the Mission deadline must be in the future")
                .detail("deadline", deadline.format()),
        );
    }
    let mission = Mission {
        approved_artifact_hashes: vec![],
        budget,
        child_failure_policy: "block_parent_work_item".into(),
        coordinator_epoch: 1,
        coordinator_id,
        coordinator_lease_expires_at: Some(cx.now.plus_seconds(lease_seconds)),
        created_at: cx.now,
        deadline,
        definition_of_done,
        failure_reason: None,
        follow_up_of_mission_id: follow_up_of.clone(),
        group_id: group_id.clone(),
        id: mission_id.clone(),
        objective,
        owner: cmd.actor.clone(),
        parent_mission_id: None,
        parent_work_item_id: None,
        permissions,
        revision: 1,
        status: MissionState::Active,
        submitted_artifact_hashes: vec![],
        submitted_revision: None,
        title,
        updated_at: cx.now,
    };
    let group = new_group(&group_id, &mission_id, cx.now);
    let kind = if follow_up {
        "mission.follow_up.created"
    } else {
        "mission.created"
    };
    let created = MissionCreated {
        mission,
        group,
        from: CreatedFrom::Owner {
            follow_up_of_mission_id: follow_up_of,
        },
    };
    Ok(vec![EventDraft::group(
        &group_id,
        kind,
        created.to_object(),
    )])
}

fn new_group(group_id: &str, mission_id: &str, now: Micros) -> Group {
    Group {
        archive_snapshot_id: None,
        archived_at: None,
        created_at: now,
        id: group_id.to_owned(),
        main_conversation_id: mission_conversation_id(group_id),
        mission_id: mission_id.to_owned(),
    }
}

/// The Mission's ancestry, parent first (§20: Mission ancestry must be acyclic).
pub fn ancestry(state: &State, mission_id: &str) -> Result<Vec<String>, Rejection> {
    let mut chain: Vec<String> = Vec::new();
    let mut cur = state
        .missions
        .get(mission_id)
        .and_then(|m| m.parent_mission_id.clone());
    while let Some(id) = cur {
        if id == mission_id || chain.contains(&id) {
            return Err(
                Rejection::invalid("the Mission ancestry is cyclic").detail("missionId", id)
            );
        }
        cur = state
            .missions
            .get(&id)
            .and_then(|m| m.parent_mission_id.clone());
        chain.push(id);
    }
    Ok(chain)
}

/// `mission.create_child` (§7.1 row 3, §14; payloads.md §6.3).
pub fn decide_create_child(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let mission_id = r.id("missionId");
    let child_group_id = r.id("groupId");
    let parent_work_item_id = r.id("parentWorkItemId");
    let coordinator_id = r.id("coordinatorId");
    let title = r.text("title");
    let objective = r.text("objective");
    let definition_of_done = r.ids("definitionOfDone", 1);
    let budget = r
        .nested("budget", false, ResourceBudget::read)
        .unwrap_or_default();
    let deadline = r.ts("deadline");
    let permissions = r.ids("permissions", 0);
    let failure_policy = r.choice(
        "failurePolicy",
        &[
            "block_parent_work_item",
            "fail_parent_work_item",
            "fail_parent_mission",
        ],
        Some("block_parent_work_item"),
    );
    let lease_seconds = r.int("coordinatorLeaseSeconds", 1, MAX_LEASE_SECONDS, Some(300));
    r.finish(&cmd.kind)?;

    let (g, parent) = guards::group(cx.state, cmd)?;
    // C5 before the role checks, as the reference (payloads.md §3.2). A root Mission has
    // depth 0; the child's depth is the parent's + 1.
    let parent_depth = ancestry(cx.state, &parent.id)?.len() as u64;
    let child_depth = parent_depth + 1;
    let limit = cx.config.limits.max_delegation_depth;
    let mut details = Object::new();
    details.insert("limit", Value::from(limit));
    details.insert("depth", Value::from(child_depth));
    let grant = cooperation::check(cx, Policy::DelegationDepth, child_depth > limit, details)?;
    guards::coordinator(g, parent, cmd, cx.now, true)?;
    guards::active_mission(parent)?;
    guards::revision(cmd, parent.revision)?;
    guards::new_id(cx.state, "Mission", &mission_id)?;
    guards::new_id(cx.state, "Group", &child_group_id)?;
    guards::card(cx.state, &coordinator_id)?;
    let w = guards::work(cx.state, g, &parent_work_item_id)?;
    if let Some(existing) = &w.child_mission_id {
        return Err(Rejection::transition(format!(
            "WorkItem {} is already promoted to child Mission {existing}",
            w.id
        )));
    }
    if matches!(
        w.status.as_str(),
        "submitted" | "verified" | "failed" | "cancelled"
    ) {
        return Err(Rejection::transition(format!(
            "a {} WorkItem cannot be promoted to a child Mission",
            w.status
        )));
    }
    // Subsets of the parent (§14), with the spec's codes (D-6).
    if deadline <= cx.now || deadline > parent.deadline {
        return Err(Rejection::invalid(
            "the child deadline must be in the future and no later than the parent Mission's",
        )
        .detail("deadline", deadline.format())
        .detail("parentDeadline", parent.deadline.format()));
    }
    if deadline > w.contract.deadline {
        return Err(Rejection::invalid(
            "the child deadline must be no later than the parent WorkItem's contract deadline",
        )
        .detail("deadline", deadline.format())
        .detail("workItemDeadline", w.contract.deadline.format()));
    }
    for (what, limit) in [
        ("parent Mission", &parent.budget),
        ("parent WorkItem contract", &w.contract.budget),
    ] {
        if let Err(dimension) = budget.within(limit) {
            return Err(Rejection::new(
                ErrorCode::BudgetExceeded,
                format!("the child budget exceeds the {what} budget in {dimension}"),
            )
            .detail("dimension", dimension));
        }
    }
    if let Some(p) = permissions.iter().find(|p| !parent.permissions.contains(p)) {
        return Err(Rejection::forbidden(format!(
            "permission {p} is not granted to the parent Mission"
        ))
        .detail("permission", p.as_str()));
    }
    super::budget::check_allocation(cx.state, &w.id, &budget)?;

    let mut drafts = Drafts::new(cx.state);
    let primary = cooperation::consume(
        EventDraft::group(
            &g.group.id,
            "mission.child.created",
            ChildCreated {
                parent_mission_id: parent.id.clone(),
                parent_work_item_id: w.id.clone(),
                child_mission_id: mission_id.clone(),
                child_group_id: child_group_id.clone(),
            }
            .to_object(),
        ),
        grant,
    );
    let parent_event_id = drafts.push(primary);
    let mission = Mission {
        approved_artifact_hashes: vec![],
        budget,
        child_failure_policy: failure_policy,
        coordinator_epoch: 1,
        coordinator_id,
        coordinator_lease_expires_at: Some(cx.now.plus_seconds(lease_seconds)),
        created_at: cx.now,
        deadline,
        definition_of_done,
        failure_reason: None,
        follow_up_of_mission_id: None,
        group_id: child_group_id.clone(),
        id: mission_id.clone(),
        objective,
        owner: cmd.actor.clone(),
        parent_mission_id: Some(parent.id.clone()),
        parent_work_item_id: Some(w.id.clone()),
        permissions,
        revision: 1,
        status: MissionState::Active,
        submitted_artifact_hashes: vec![],
        submitted_revision: None,
        title,
        updated_at: cx.now,
    };
    let group = new_group(&child_group_id, &mission_id, cx.now);
    let created = MissionCreated {
        mission,
        group,
        from: CreatedFrom::Parent { parent_event_id },
    };
    drafts.push(EventDraft::group(
        &child_group_id,
        "mission.created",
        created.to_object(),
    ));
    Ok(drafts.out)
}

/// `mission.assign_coordinator` (§7.2; payloads.md §6.4): the MissionOwner, or an
/// Organization service (the control plane, §7.2), appoints a replacement Coordinator.
pub fn decide_assign_coordinator(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let coordinator_id = r.id("coordinatorId");
    let lease_seconds = r.int("leaseSeconds", 1, MAX_LEASE_SECONDS, Some(300));
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    if !is_service(&cmd.actor) {
        guards::owner(g, mission, cmd)?;
    }
    guards::non_terminal_mission(mission)?;
    guards::revision(cmd, mission.revision)?;
    guards::card(cx.state, &coordinator_id)?;
    if coordinator_id == mission.coordinator_id {
        return Err(Rejection::transition(format!(
            "{coordinator_id} is already the Coordinator"
        )));
    }
    Ok(vec![EventDraft::group(
        &g.group.id,
        "mission.coordinator.assigned",
        CoordinatorAssigned {
            previous_coordinator_id: mission.coordinator_id.clone(),
            coordinator_id,
            coordinator_epoch: mission.coordinator_epoch + 1,
            lease_expires_at: cx.now.plus_seconds(lease_seconds),
        }
        .to_object(),
    )])
}

/// `mission.renew_coordinator` (§7.2; payloads.md §6.5).
pub fn decide_renew_coordinator(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let lease_seconds = r.int("leaseSeconds", 1, MAX_LEASE_SECONDS, Some(300));
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::coordinator(g, mission, cmd, cx.now, true)?;
    guards::non_terminal_mission(mission)?;
    guards::revision(cmd, mission.revision)?;
    Ok(vec![EventDraft::group(
        &g.group.id,
        "mission.coordinator.renewed",
        CoordinatorRenewed {
            coordinator_epoch: mission.coordinator_epoch,
            lease_expires_at: cx.now.plus_seconds(lease_seconds),
        }
        .to_object(),
    )])
}

fn sorted_unique(mut v: Vec<String>) -> Vec<String> {
    crate::order::sort(&mut v);
    v.dedup();
    v
}

/// `artifactHashes`: a non-empty array of strings.
fn read_hashes(r: &mut Reader) -> Vec<String> {
    let hashes = r.strings("artifactHashes");
    if hashes.is_empty() {
        r.error("artifactHashes", "needs at least 1 item(s)");
    }
    hashes
}

/// `mission.submit_for_approval` (§7.1, §7.3; payloads.md §6.6).
pub fn decide_submit_for_approval(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let hashes = read_hashes(&mut r);
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::coordinator(g, mission, cmd, cx.now, true)?;
    guards::active_mission(mission)?;
    guards::revision(cmd, mission.revision)?;
    let mut any = false;
    for w in cx
        .state
        .work_items
        .values()
        .filter(|w| w.mission_id == mission.id)
    {
        any = true;
        if !matches!(w.status, WorkItemState::Verified | WorkItemState::Cancelled) {
            return Err(Rejection::transition(format!(
                "WorkItem {} is {}, not verified or cancelled",
                w.id, w.status
            ))
            .detail("workItemId", w.id.as_str()));
        }
    }
    if !any {
        return Err(Rejection::transition(
            "a Mission without WorkItems cannot be submitted",
        ));
    }
    let hashes = sorted_unique(hashes);
    for h in &hashes {
        if !mission_artifacts(cx.state, &mission.id).any(|(_, hash)| hash == h) {
            return Err(Rejection::invalid(format!(
                "no Artifact of this Mission has content hash {h}"
            ))
            .detail("artifactHash", h.as_str()));
        }
    }
    Ok(vec![EventDraft::group(
        &g.group.id,
        "mission.submitted_for_approval",
        SubmittedForApproval {
            mission_id: mission.id.clone(),
            mission_revision: mission.revision,
            artifact_hashes: hashes,
        }
        .to_object(),
    )])
}

/// The (id, contentHash) of every published Artifact of `mission_id`.
/// The Artifacts a Mission may submit: its own and those of its descendant child Missions,
/// whose approved results become the parent WorkItem's Artifacts (§14). The approval inbox
/// reads the submitted hashes' manifests through the same rule.
pub(crate) fn mission_artifacts<'s>(
    state: &'s State,
    mission_id: &'s str,
) -> impl Iterator<Item = (&'s str, &'s str)> + 's {
    let within = move |mid: &str| {
        let mut cur = Some(mid);
        for _ in 0..64 {
            match cur {
                Some(m) if m == mission_id => return true,
                Some(m) => {
                    cur = state
                        .missions
                        .get(m)
                        .and_then(|x| x.parent_mission_id.as_deref())
                }
                None => return false,
            }
        }
        false
    };
    state.artifacts.iter().filter_map(move |(id, a)| {
        let mid = a.get("missionId").and_then(Value::as_str)?;
        let hash = a.get("contentHash").and_then(Value::as_str)?;
        within(mid).then_some((id.as_str(), hash))
    })
}

/// The submitted revision and hash set bind approvals and change requests (§7.3).
fn bound_revision(mission: &Mission, sent: u64) -> Result<(), Rejection> {
    let submitted = mission.submitted_revision.unwrap_or(0);
    if sent != submitted {
        return Err(Rejection::revision(submitted, sent));
    }
    Ok(())
}

fn awaiting_approval(mission: &Mission) -> Result<(), Rejection> {
    if mission.status != MissionState::AwaitingApproval {
        return Err(Rejection::transition(format!(
            "the Mission is {}, not awaiting_approval",
            mission.status
        )));
    }
    Ok(())
}

/// `mission.approve` (§7.1, §7.3, §14; payloads.md §6.7): the final Approval binds the
/// submitted Mission revision and exactly the submitted Artifact hash set.
pub fn decide_approve(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let approval_id = r.id("approvalId");
    let mission_revision = r.int("missionRevision", 1, crate::json::MAX_SAFE_INTEGER, None);
    let hashes = read_hashes(&mut r);
    let policy_version = r.id("acceptancePolicyVersion");
    let comments = r.opt_string("comments");
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::owner(g, mission, cmd)?;
    // The submitting Coordinator never approves its own result (M-8, §14).
    guards::not_self_approval(
        &cmd.actor,
        &Actor::new(ActorType::Agent, &mission.coordinator_id),
    )?;
    awaiting_approval(mission)?;
    guards::revision(cmd, mission.revision)?;
    bound_revision(mission, mission_revision)?;
    let hashes = sorted_unique(hashes);
    if hashes != mission.submitted_artifact_hashes {
        return Err(Rejection::new(
            ErrorCode::RevisionConflict,
            "the approved Artifact hashes differ from the submitted set",
        )
        .detail(
            "expected",
            Value::Array(
                mission
                    .submitted_artifact_hashes
                    .iter()
                    .map(|h| Value::string(h.clone()))
                    .collect(),
            ),
        )
        .detail(
            "received",
            Value::Array(hashes.iter().map(|h| Value::string(h.clone())).collect()),
        ));
    }
    guards::new_id(cx.state, "Approval", &approval_id)?;
    let approval = Approval {
        acceptance_policy_version: policy_version,
        approved_at: cx.now,
        approver: cmd.actor.clone(),
        artifact_hashes: hashes,
        comments,
        id: approval_id.clone(),
        mission_id: mission.id.clone(),
        mission_revision,
        signature: cmd.signature_value.clone(),
    };
    let mut drafts = Drafts::new(cx.state);
    let approved = drafts.push(EventDraft::group(
        &g.group.id,
        "mission.approved",
        MissionApproved { approval }.to_object(),
    ));
    // A child's approved result becomes the parent WorkItem's result (§14). A parent WorkItem
    // that was already closed meanwhile (for example by `work.cancel`) stays closed.
    if let Some(pw) = mission
        .parent_work_item_id
        .as_deref()
        .and_then(|id| cx.state.work_items.get(id))
        .filter(|w| !w.is_terminal())
    {
        drafts.push(EventDraft::group(
            &pw.group_id,
            "work.result.accepted",
            ResultAccepted {
                work_item_id: pw.id.clone(),
                by: AcceptedBy::ChildApproval {
                    child_mission_id: mission.id.clone(),
                    child_approval_id: approval_id,
                    source_event_id: approved,
                },
            }
            .to_object(),
        ));
    }
    Ok(drafts.out)
}

/// `mission.request_changes` (§7.1, §7.3; payloads.md §6.8).
pub fn decide_request_changes(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let mission_revision = r.int("missionRevision", 1, crate::json::MAX_SAFE_INTEGER, None);
    let feedback = r.text("feedback");
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::owner(g, mission, cmd)?;
    awaiting_approval(mission)?;
    guards::revision(cmd, mission.revision)?;
    bound_revision(mission, mission_revision)?;
    Ok(vec![EventDraft::group(
        &g.group.id,
        "mission.changes_requested",
        ChangesRequested {
            mission_id: mission.id.clone(),
            feedback,
            new_revision: mission.revision + 1,
        }
        .to_object(),
    )])
}

fn read_reason(cx: &Ctx) -> Result<String, Rejection> {
    let mut r = Reader::new(&cx.cmd.payload);
    let reason = r.text("reason");
    r.finish(&cx.cmd.kind)?;
    Ok(reason)
}

/// Non-terminal descendants of `mission_id`, deepest first (children in id order).
fn open_descendants<'s>(state: &'s State, mission_id: &str, out: &mut Vec<&'s Mission>) {
    for child in state
        .missions
        .values()
        .filter(|m| m.parent_mission_id.as_deref() == Some(mission_id))
    {
        // Ancestry is acyclic (checked at creation), so this terminates.
        open_descendants(state, &child.id, out);
        if !child.is_terminal() {
            out.push(child);
        }
    }
}

/// `mission.cancel` (§7.1; payloads.md §6.9): the MissionOwner or an Organization service;
/// cancellation propagates to every non-terminal descendant Mission.
pub fn decide_cancel(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let reason = read_reason(cx)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    if !is_service(&cmd.actor) {
        guards::owner(g, mission, cmd)?;
    }
    guards::non_terminal_mission(mission)?;
    guards::revision(cmd, mission.revision)?;
    let mut drafts = Drafts::new(cx.state);
    let primary = drafts.push(EventDraft::group(
        &g.group.id,
        "mission.cancelled",
        MissionClosed {
            mission_id: mission.id.clone(),
            reason,
            source_event_id: None,
        }
        .to_object(),
    ));
    let mut descendants = Vec::new();
    open_descendants(cx.state, &mission.id, &mut descendants);
    for d in descendants {
        drafts.push(EventDraft::group(
            &d.group_id,
            "mission.cancelled",
            MissionClosed {
                mission_id: d.id.clone(),
                reason: format!("parent Mission {} cancelled", mission.id),
                source_event_id: Some(primary.clone()),
            }
            .to_object(),
        ));
    }
    Ok(drafts.out)
}

/// `mission.terminate` (§7.1, §14; payloads.md §6.10): the current Coordinator (with
/// `coordinatorEpoch`) or an Organization service (D-22). A terminated child propagates to its
/// parent per its `childFailurePolicy`.
pub fn decide_terminate(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let reason = read_reason(cx)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    match cmd.actor.actor_type {
        ActorType::Service => {}
        ActorType::Agent => guards::coordinator(g, mission, cmd, cx.now, true)?,
        ActorType::Human => {
            return Err(Rejection::forbidden(
                "a Mission is terminated by its Coordinator or an Organization service; \
                 the MissionOwner uses mission.cancel",
            ));
        }
    }
    guards::non_terminal_mission(mission)?;
    guards::revision(cmd, mission.revision)?;
    let mut drafts = Drafts::new(cx.state);
    let mut source = drafts.push(EventDraft::group(
        &g.group.id,
        "mission.terminated",
        MissionClosed {
            mission_id: mission.id.clone(),
            reason: reason.clone(),
            source_event_id: None,
        }
        .to_object(),
    ));
    // Declared child-failure propagation (§14), read from the state before this Command: the
    // Events below touch only the failed child's own objects and the parent chain.
    let mut child = mission;
    let mut child_reason = reason;
    while let Some(pw) = child
        .parent_work_item_id
        .as_deref()
        .and_then(|id| cx.state.work_items.get(id))
        .filter(|w| !w.is_terminal())
    {
        let Some(parent) = cx
            .state
            .missions
            .get(&pw.mission_id)
            .filter(|p| !p.is_terminal())
        else {
            break;
        };
        let r = format!("child Mission {} failed: {child_reason}", child.id);
        let failed = || {
            let p = WorkClosed {
                work_item_id: pw.id.clone(),
                reason: r.clone(),
                source_event_id: Some(source.clone()),
            };
            EventDraft::group(&pw.group_id, "work.failed", p.to_object())
        };
        match child.child_failure_policy.as_str() {
            "fail_parent_work_item" => {
                drafts.push(failed());
                break;
            }
            "fail_parent_mission" => {
                let failed = drafts.push(failed());
                source = drafts.push(EventDraft::group(
                    &parent.group_id,
                    "mission.terminated",
                    MissionClosed {
                        mission_id: parent.id.clone(),
                        reason: r.clone(),
                        source_event_id: Some(failed),
                    }
                    .to_object(),
                ));
                child = parent;
                child_reason = r;
            }
            _ => {
                let p = WorkBlocked {
                    work_item_id: pw.id.clone(),
                    reason: r.clone(),
                    by: BlockedBy::ChildFailure {
                        source_event_id: source.clone(),
                    },
                };
                drafts.push(EventDraft::group(
                    &pw.group_id,
                    "work.blocked",
                    p.to_object(),
                ));
                break;
            }
        }
    }
    Ok(drafts.out)
}

// ---------------------------------------------------------------------------------------------
// Transitions
// ---------------------------------------------------------------------------------------------

fn membership(
    group_id: &str,
    principal: Actor,
    roles: Vec<String>,
    epoch: u64,
    at: Micros,
) -> Membership {
    Membership {
        ended_at: None,
        epoch,
        group_id: group_id.to_owned(),
        joined_at: at,
        principal,
        roles,
        status: MembershipState::Active,
        visibility_after_sequence: 0,
    }
}

/// Adds `role` to the principal's Membership (created at epoch 1 when absent; otherwise the
/// epoch increases, the Membership becomes `active` and its visibility is reset to 0).
fn grant_role(gs: &mut GroupState, principal: Actor, role: &str, at: Micros) {
    let group_id = gs.group.id.clone();
    match gs.memberships.get_mut(principal.id.as_str()) {
        Some(m) => {
            if !m.has_role(role) {
                m.roles.push(role.to_owned());
                crate::order::sort(&mut m.roles);
            }
            m.epoch += 1;
            m.status = MembershipState::Active;
            m.ended_at = None;
            m.visibility_after_sequence = 0;
        }
        None => {
            gs.memberships.insert(
                principal.id.0.clone(),
                membership(&group_id, principal, vec![role.to_owned()], 1, at),
            );
        }
    }
}

/// Removes `role` from the principal's Membership; its epoch increases, and a Membership left
/// without roles ends.
fn revoke_role(gs: &mut GroupState, principal_id: &str, role: &str, at: Micros) {
    if let Some(m) = gs.memberships.get_mut(principal_id) {
        m.roles.retain(|r| r != role);
        m.epoch += 1;
        if m.roles.is_empty() && m.status != MembershipState::Ended {
            m.status = MembershipState::Ended;
            m.ended_at = Some(at);
        }
    }
}

fn agent(id: &str) -> Actor {
    Actor {
        actor_type: ActorType::Agent,
        id: Id(id.to_owned()),
    }
}

/// A new Mission and its Group, Mission Conversation, owner and Coordinator Memberships
/// (those are not announced by Events of their own) and its ledger account: under the parent
/// WorkItem for a child Mission, a root account otherwise.
pub fn apply_created(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let MissionCreated { mission, group, .. } = MissionCreated::read(ev)?;
    let mut gs = GroupState {
        group: group.clone(),
        last_sequence: 0,
        last_occurred_at: ev.occurred_at,
        memberships: Default::default(),
        conversations: Default::default(),
        policy_log: Default::default(),
        recent: Default::default(),
    };
    gs.conversations.insert(group.main_conversation_id.clone());
    let at = ev.occurred_at;
    if mission.owner.id.as_str() == mission.coordinator_id {
        // A child whose owner also coordinates it: one Membership with both roles, epoch 2.
        gs.memberships.insert(
            mission.coordinator_id.clone(),
            membership(
                &group.id,
                mission.owner.clone(),
                vec!["coordinator".into(), "mission_owner".into()],
                2,
                at,
            ),
        );
    } else {
        gs.memberships.insert(
            mission.owner.id.0.clone(),
            membership(
                &group.id,
                mission.owner.clone(),
                vec!["mission_owner".into()],
                1,
                at,
            ),
        );
        gs.memberships.insert(
            mission.coordinator_id.clone(),
            membership(
                &group.id,
                agent(&mission.coordinator_id),
                vec!["coordinator".into()],
                1,
                at,
            ),
        );
    }
    state.groups.insert(group.id.clone(), gs);
    super::budget::open_account(
        state,
        &mission.id,
        mission.parent_work_item_id.as_deref(),
        mission.budget.clone(),
    );
    state.missions.insert(mission.id.clone(), mission);
    Ok(())
}

fn mission_mut<'s>(
    state: &'s mut State,
    ev: &EventView,
    id: &str,
) -> Result<&'s mut Mission, ApplyError> {
    state
        .missions
        .get_mut(id)
        .ok_or_else(|| ApplyError::unknown(ev, "Mission", id))
}

/// The Mission of the Event's Group.
fn group_mission_id(state: &State, ev: &EventView) -> Result<String, ApplyError> {
    let g = ev.group_id.ok_or_else(|| ApplyError::missing_group(ev))?;
    state
        .mission_of_group(g)
        .map(|m| m.id.clone())
        .ok_or_else(|| ApplyError::unknown(ev, "Group", g))
}

/// The parent WorkItem is promoted: linked, blocked on the child, its owner fenced.
fn apply_child_created(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let ChildCreated {
        parent_mission_id,
        parent_work_item_id,
        child_mission_id,
        ..
    } = ChildCreated::read(ev)?;
    let (parent_id, work_id, child_id) = (
        parent_mission_id.as_str(),
        parent_work_item_id.as_str(),
        child_mission_id.as_str(),
    );
    let at = ev.occurred_at;
    super::work_plan::fence_owner(state, work_id, at);
    let w = state
        .work_items
        .get_mut(work_id)
        .ok_or_else(|| ApplyError::unknown(ev, "WorkItem", work_id))?;
    w.child_mission_id = Some(child_id.to_owned());
    w.status = WorkItemState::Blocked;
    w.blocker = Some(format!("awaiting child Mission {child_id}"));
    w.revision += 1;
    w.updated_at = at;
    let parent = mission_mut(state, ev, parent_id)?;
    parent.revision += 1;
    parent.updated_at = at;
    Ok(())
}

/// The Coordinator is replaced; the Memberships change silently, in this Group and in every
/// child Group the old Coordinator owned (payloads.md §6.4, §12.6).
fn apply_coordinator_assigned(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let mission_id = group_mission_id(state, ev)?;
    let CoordinatorAssigned {
        previous_coordinator_id: previous,
        coordinator_id: next,
        coordinator_epoch: epoch,
        lease_expires_at: lease,
    } = CoordinatorAssigned::read(ev)?;
    let at = ev.occurred_at;
    let m = mission_mut(state, ev, &mission_id)?;
    m.coordinator_id = next.clone();
    m.coordinator_epoch = epoch;
    m.coordinator_lease_expires_at = Some(lease);
    m.updated_at = at;
    let group_id = m.group_id.clone();
    if let Some(gs) = state.groups.get_mut(&group_id) {
        revoke_role(gs, &previous, "coordinator", at);
        grant_role(gs, agent(&next), "coordinator", at);
    }
    let children: Vec<String> = state
        .missions
        .values()
        .filter(|c| {
            c.parent_mission_id.as_deref() == Some(mission_id.as_str())
                && c.owner.id.as_str() == previous
        })
        .map(|c| c.id.clone())
        .collect();
    for child_id in children {
        let c = mission_mut(state, ev, &child_id)?;
        c.owner = agent(&next);
        c.updated_at = at;
        let child_group = c.group_id.clone();
        if let Some(gs) = state.groups.get_mut(&child_group) {
            revoke_role(gs, &previous, "mission_owner", at);
            grant_role(gs, agent(&next), "mission_owner", at);
        }
    }
    Ok(())
}

fn apply_coordinator_renewed(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let mission_id = group_mission_id(state, ev)?;
    let CoordinatorRenewed {
        lease_expires_at: lease,
        ..
    } = CoordinatorRenewed::read(ev)?;
    let m = mission_mut(state, ev, &mission_id)?;
    m.coordinator_lease_expires_at = Some(lease);
    m.updated_at = ev.occurred_at;
    Ok(())
}

fn apply_submitted(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let SubmittedForApproval {
        mission_id,
        mission_revision: revision,
        artifact_hashes: hashes,
    } = SubmittedForApproval::read(ev)?;
    let m = mission_mut(state, ev, &mission_id)?;
    m.status = MissionState::AwaitingApproval;
    m.submitted_revision = Some(revision);
    m.submitted_artifact_hashes = hashes;
    m.updated_at = ev.occurred_at;
    Ok(())
}

fn apply_approved(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let MissionApproved { approval } = MissionApproved::read(ev)?;
    let m = mission_mut(state, ev, &approval.mission_id)?;
    m.status = MissionState::Approved;
    m.approved_artifact_hashes = approval.artifact_hashes.clone();
    m.updated_at = ev.occurred_at;
    let mission_id = approval.mission_id.clone();
    state.approvals.insert(approval.id.clone(), approval);
    super::work_exec::settle_child_result(state, &mission_id);
    Ok(())
}

fn apply_changes_requested(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let ChangesRequested {
        mission_id,
        new_revision: revision,
        ..
    } = ChangesRequested::read(ev)?;
    let m = mission_mut(state, ev, &mission_id)?;
    m.status = MissionState::Active;
    m.revision = revision;
    m.submitted_revision = None;
    m.submitted_artifact_hashes.clear();
    m.updated_at = ev.occurred_at;
    Ok(())
}

/// `mission.cancelled` / `mission.terminated`: the Mission and each of its unfinished
/// WorkItems close (no per-WorkItem Events; payloads.md §12.6), their owners fenced.
fn apply_closed(state: &mut State, ev: &EventView, status: MissionState) -> Result<(), ApplyError> {
    let MissionClosed {
        mission_id, reason, ..
    } = MissionClosed::read(ev)?;
    let at = ev.occurred_at;
    let m = mission_mut(state, ev, &mission_id)?;
    m.status = status;
    m.failure_reason = Some(reason.clone());
    m.updated_at = at;
    let open: Vec<String> = state
        .work_items
        .values()
        .filter(|w| w.mission_id == mission_id && !w.is_terminal())
        .map(|w| w.id.clone())
        .collect();
    for id in open {
        super::work_plan::fence_owner(state, &id, at);
        if let Some(w) = state.work_items.get_mut(&id) {
            w.status = match status {
                MissionState::Failed => WorkItemState::Failed,
                _ => WorkItemState::Cancelled,
            };
            w.failure_reason = Some(reason.clone());
            w.revision += 1;
            w.updated_at = at;
        }
    }
    Ok(())
}
