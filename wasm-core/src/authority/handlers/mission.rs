//! Mission and Group lifecycle (§7, §14; payloads.md §6.1–§6.10).
//!
//! The §7.1 transition table, enforced below:
//!
//! | Current | Command or cause | Next | Authority |
//! | --- | --- | --- | --- |
//! | none | `mission.create` with a Coordinator lease | `active` | human MissionOwner |
//! | none | `mission.create_follow_up` linked to an approved Mission | `active` | the same human MissionOwner |
//! | none | `mission.create_child` linked to a parent WorkItem | `active` | Parent Coordinator |
//! | `active` | `mission.submit_for_approval` | `awaiting_approval` | current Coordinator |
//! | `awaiting_approval` | `mission.request_changes` | `active` | MissionOwner |
//! | `awaiting_approval` | `mission.approve` | `approved` | MissionOwner |
//! | non-terminal | `mission.cancel` or parent-cancellation propagation | `cancelled` | MissionOwner or Organization policy |
//! | non-terminal | `mission.terminate` or declared child-failure propagation | `failed` | Coordinator or Organization policy |

use super::{Ctx, Decision, embedded, payload};
use crate::authority::evolve::EventView;
use crate::authority::payload::Reader;
use crate::authority::projection::{Group, Membership, Mission, ResourceBudget};
use crate::authority::rejection::Rejection;
use crate::authority::state::{GroupState, State};
use crate::authority::{EventDraft, guards};
use crate::json::Value;
use crate::model::Id;
use crate::model::ToJson;
use crate::model::common::{Actor, ActorType};

pub fn decide(cx: &Ctx) -> Option<Decision> {
    Some(match cx.cmd.kind.as_str() {
        "mission.create" => decide_create(cx, false),
        "mission.create_follow_up" => decide_create(cx, true),
        _ => return None,
    })
}

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), String>> {
    Some(match ev.kind {
        "mission.created" | "mission.follow_up.created" => apply_created(state, ev),
        _ => return None,
    })
}

/// The Mission Conversation's id (payloads.md §2.4).
pub fn mission_conversation_id(group_id: &str) -> String {
    format!("{group_id}:mission")
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
    let lease_seconds = r.int("coordinatorLeaseSeconds", 1, 31_536_000, Some(300));
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
            if source.status != "approved" {
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
        status: "active".into(),
        submitted_artifact_hashes: vec![],
        submitted_revision: None,
        title,
        updated_at: cx.now,
    };
    let group = Group {
        archive_snapshot_id: None,
        archived_at: None,
        created_at: cx.now,
        id: group_id.clone(),
        main_conversation_id: mission_conversation_id(&group_id),
        mission_id,
    };
    let kind = if follow_up {
        "mission.follow_up.created"
    } else {
        "mission.created"
    };
    Ok(vec![EventDraft::group(
        &group_id,
        kind,
        payload(vec![
            ("mission", mission.to_json()),
            ("group", group.to_json()),
            (
                "followUpOfMissionId",
                follow_up_of.map_or(Value::Null, Value::string),
            ),
        ]),
    )])
}

fn membership(
    group_id: &str,
    principal: Actor,
    role: &str,
    at: crate::authority::Micros,
) -> Membership {
    Membership {
        ended_at: None,
        epoch: 1,
        group_id: group_id.to_owned(),
        joined_at: at,
        principal,
        roles: vec![role.to_owned()],
        status: "active".into(),
        visibility_after_sequence: 0,
    }
}

/// A new Mission and its Group, Mission Conversation, owner and Coordinator Memberships
/// (those two are not announced by Events of their own) and its ledger account.
pub fn apply_created(state: &mut State, ev: &EventView) -> Result<(), String> {
    let mission: Mission = embedded(ev, "mission")?;
    let group: Group = embedded(ev, "group")?;
    let mut gs = GroupState {
        group: group.clone(),
        last_sequence: 0,
        memberships: Default::default(),
        conversations: Default::default(),
        policy_log: Vec::new(),
        recent: Default::default(),
    };
    gs.conversations.insert(group.main_conversation_id.clone());
    gs.memberships.insert(
        mission.owner.id.0.clone(),
        membership(
            &group.id,
            mission.owner.clone(),
            "mission_owner",
            ev.occurred_at,
        ),
    );
    let coordinator = Actor {
        actor_type: ActorType::Agent,
        id: Id(mission.coordinator_id.clone()),
    };
    gs.memberships.insert(
        mission.coordinator_id.clone(),
        membership(&group.id, coordinator, "coordinator", ev.occurred_at),
    );
    state.groups.insert(group.id.clone(), gs);
    super::budget::open_account(state, &mission.id, None, mission.budget.clone());
    state.missions.insert(mission.id.clone(), mission);
    Ok(())
}
