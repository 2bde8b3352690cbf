//! Checks shared by the handlers (payloads.md §3.2 step C3 and §3.3), each returning the wire
//! code the spec asks for where the reference deviates (payloads.md §12; docs/authority.md).

use super::CommandView;
use super::clock::Micros;
use super::projection::{ExecutionLease, Membership, Mission, WorkItem};
use super::rejection::Rejection;
use super::state::{GroupState, State};
use crate::model::common::{Actor, ActorType};
use crate::model::error::ErrorCode;
use crate::model::membership::MembershipState;
use crate::model::mission::MissionState;

/// Kinds that create their own Group and so carry no Membership Epoch (§7.1).
pub fn creates_group(kind: &str) -> bool {
    matches!(kind, "mission.create" | "mission.create_follow_up")
}

/// Step C3: the Session Epoch of an Agent (§6.3, I-12) and the Membership Epoch of an Agent or
/// human in an existing Group (§8). The Command's extensions are checked before it
/// (`handlers::offline::check_extensions`).
pub fn common(state: &State, cmd: &CommandView) -> Result<(), Rejection> {
    if cmd.actor.actor_type == ActorType::Agent {
        let current = state.session_epochs.get(cmd.actor.id.as_str()).copied();
        let sent = cmd.session_epoch();
        if current.is_none() || sent != current {
            return Err(Rejection::new(
                ErrorCode::AuthStaleSession,
                "Command carries a stale Session Epoch",
            )
            .detail("currentSessionEpoch", current.unwrap_or(0))
            .detail("receivedSessionEpoch", sent.unwrap_or(0)));
        }
    }
    // An archived Group is frozen: its history ended with the final snapshot (§7.4).
    if let Some(g) = cmd.group_id.as_deref().and_then(|g| state.groups.get(g))
        && g.group.archived_at.is_some()
    {
        return Err(Rejection::transition("the Group is archived").detail(
            "archivedAt",
            g.group.archived_at.map(|t| t.format()).unwrap_or_default(),
        ));
    }
    let member_checked = matches!(cmd.actor.actor_type, ActorType::Agent | ActorType::Human);
    if member_checked
        && !creates_group(&cmd.kind)
        && let Some(group_id) = &cmd.group_id
    {
        // Absent Group and absent Membership look the same (§17.2, D-2).
        let m = state
            .membership(group_id, cmd.actor.id.as_str())
            .ok_or_else(Rejection::group_not_found)?;
        if cmd.membership_epoch() != Some(m.epoch) {
            return Err(Rejection::new(
                ErrorCode::MembershipStale,
                "Command carries a stale Membership Epoch",
            )
            .detail("currentMembershipEpoch", m.epoch)
            .detail(
                "receivedMembershipEpoch",
                cmd.membership_epoch().unwrap_or(0),
            ));
        }
        // Then: an Agent or human acts only through an active Membership; a provisional one
        // may only accept the offer it was invited to (§8; payloads.md G6, D-2).
        let usable = m.status == MembershipState::Active
            || (m.status == MembershipState::Provisional && cmd.kind == "work.accept_offer");
        if !usable {
            return Err(Rejection::new(
                ErrorCode::MembershipRequired,
                format!(
                    "an active Group Membership is required (this one is {})",
                    m.status
                ),
            ));
        }
    }
    Ok(())
}

/// **group**: the Command's Group exists; returns it with its Mission.
pub fn group<'s>(
    state: &'s State,
    cmd: &CommandView,
) -> Result<(&'s GroupState, &'s Mission), Rejection> {
    let id = cmd
        .group_id
        .as_deref()
        .ok_or_else(|| Rejection::invalid("Command requires a Group"))?;
    let g = state
        .groups
        .get(id)
        .ok_or_else(Rejection::group_not_found)?;
    let mission = state
        .missions
        .get(&g.group.mission_id)
        .ok_or_else(Rejection::group_not_found)?;
    Ok((g, mission))
}

/// The actor's Membership in `g`, which must be `active` (**active-member**).
pub fn active_member<'s>(
    g: &'s GroupState,
    cmd: &CommandView,
) -> Result<&'s Membership, Rejection> {
    active_member_of(g, &cmd.actor)
}

/// **active-member** for any Principal (the console asks it of a would-be approver).
pub fn active_member_of<'s>(g: &'s GroupState, who: &Actor) -> Result<&'s Membership, Rejection> {
    match g.memberships.get(who.id.as_str()) {
        Some(m) if m.is_active() => Ok(m),
        Some(_) => Err(Rejection::new(
            ErrorCode::MembershipRequired,
            "an active Group Membership is required",
        )),
        None => Err(Rejection::group_not_found()),
    }
}

/// **owner**: the actor is the MissionOwner, with an active `mission_owner` Membership.
pub fn owner(g: &GroupState, mission: &Mission, cmd: &CommandView) -> Result<(), Rejection> {
    owner_principal(g, mission, &cmd.actor)
}

/// **owner** for any Principal: the rule [`owner`] applies to a Command's actor, asked of
/// `who` (the console shows who may approve with it).
pub fn owner_principal(g: &GroupState, mission: &Mission, who: &Actor) -> Result<(), Rejection> {
    if *who != mission.owner {
        return Err(Rejection::forbidden("only the MissionOwner may do this"));
    }
    let m = active_member_of(g, who)?;
    if !m.has_role("mission_owner") {
        return Err(Rejection::forbidden(
            "the Membership lacks the mission_owner role",
        ));
    }
    Ok(())
}

/// **not-self**: separation of duties. An approver never approves what it asked for itself:
/// the Coordinator that submitted a Mission does not give its final Approval (M-8: never the
/// sole reviewer of its own output; §14, where a parent Coordinator owns the child Mission), and
/// a MissionOwner does not grant a Cooperation Override to itself (§20, S-17: approvers must
/// satisfy policy). `AUTH_FORBIDDEN`, like every other authorization failure (S-17).
pub fn not_self_approval(approver: &Actor, requester: &Actor) -> Result<(), Rejection> {
    if approver == requester {
        return Err(Rejection::forbidden(
            "self-approval: the approver is the Principal that requested this decision",
        ));
    }
    Ok(())
}

/// **coordinator**: the current Coordinator Agent, its active `coordinator` Membership, the
/// current Coordinator Epoch (when sent, D-21; required when `required`), and a live
/// Coordinator lease (§7.2).
pub fn coordinator(
    g: &GroupState,
    mission: &Mission,
    cmd: &CommandView,
    now: Micros,
    required: bool,
) -> Result<(), Rejection> {
    // Equivalent to the role check below in every reachable state (the coordinator role is
    // granted only to the current Coordinator Agent and revoked on replacement); kept so the
    // rule reads as §7.2 states it.
    if cmd.actor.actor_type != ActorType::Agent || cmd.actor.id.as_str() != mission.coordinator_id {
        return Err(Rejection::forbidden(
            "only the current Coordinator may do this",
        ));
    }
    let m = active_member(g, cmd)?;
    if !m.has_role("coordinator") {
        return Err(Rejection::forbidden(
            "the Membership lacks the coordinator role",
        ));
    }
    match cmd.coordinator_epoch() {
        Some(e) if e == mission.coordinator_epoch => {}
        // A missing epoch never reaches here when `required`: every such kind's schema
        // requires coordinatorEpoch (D-21); the guard states the rule anyway.
        None if !required => {}
        sent => {
            return Err(Rejection::new(
                ErrorCode::AuthStaleCoordinator,
                "Command carries a stale Coordinator Epoch",
            )
            .detail("expected", mission.coordinator_epoch)
            .detail("received", sent.unwrap_or(0)));
        }
    }
    if mission
        .coordinator_lease_expires_at
        .is_none_or(|t| t <= now)
    {
        return Err(Rejection::new(
            ErrorCode::WorkLeaseExpired,
            "the Coordinator lease has expired",
        ));
    }
    Ok(())
}

/// **owner-or-coordinator**: the owner checks when the actor is the owner, else the
/// Coordinator checks.
pub fn owner_or_coordinator(
    g: &GroupState,
    mission: &Mission,
    cmd: &CommandView,
    now: Micros,
) -> Result<Authority, Rejection> {
    if cmd.actor == mission.owner {
        owner(g, mission, cmd).map(|()| Authority::Owner)
    } else {
        coordinator(g, mission, cmd, now, false).map(|()| Authority::Coordinator)
    }
}

/// Which authority a Command acted with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Authority {
    Owner,
    Coordinator,
}

/// **active-mission**.
pub fn active_mission(mission: &Mission) -> Result<(), Rejection> {
    if mission.status == MissionState::Active {
        Ok(())
    } else {
        Err(Rejection::transition(format!(
            "the Mission is {}, not active",
            mission.status
        )))
    }
}

/// **non-terminal-mission**.
pub fn non_terminal_mission(mission: &Mission) -> Result<(), Rejection> {
    if mission.is_terminal() {
        Err(Rejection::transition(format!(
            "the Mission is {} (terminal)",
            mission.status
        )))
    } else {
        Ok(())
    }
}

/// **work**: the WorkItem exists in this Group (D-4: a missing entity is `INVALID_COMMAND`).
pub fn work<'s>(state: &'s State, g: &GroupState, id: &str) -> Result<&'s WorkItem, Rejection> {
    match state.work_items.get(id) {
        Some(w) if w.group_id == g.group.id => Ok(w),
        _ => Err(Rejection::not_found("WorkItem", id)),
    }
}

/// **revision**: when `expectedRevision` is sent it must equal `current` (§15.3).
pub fn revision(cmd: &CommandView, current: u64) -> Result<(), Rejection> {
    match cmd.expected_revision() {
        Some(sent) if sent != current => Err(Rejection::revision(current, sent)),
        _ => Ok(()),
    }
}

/// **work-owner(e)**: the actor owns the WorkItem at Ownership Epoch `e`, with a live
/// ownership lease (§10.3, invariant 5).
pub fn work_owner(
    w: &WorkItem,
    cmd: &CommandView,
    epoch: u64,
    now: Micros,
) -> Result<(), Rejection> {
    if cmd.actor.actor_type != ActorType::Agent
        || w.assignee_id.as_deref() != Some(cmd.actor.id.as_str())
    {
        return Err(Rejection::forbidden("the actor does not own this WorkItem"));
    }
    if epoch != w.ownership_epoch {
        return Err(
            Rejection::new(ErrorCode::WorkStaleOwnership, "stale Ownership Epoch")
                .detail("currentOwnershipEpoch", w.ownership_epoch)
                .detail("receivedOwnershipEpoch", epoch),
        );
    }
    if !ownership_lease_live(w, now) {
        return Err(Rejection::new(
            ErrorCode::WorkLeaseExpired,
            "the ownership lease has expired",
        ));
    }
    Ok(())
}

/// Whether the WorkItem's ownership lease runs past `now` (§10.3): the lease half of
/// **work-owner**, and what makes an owner "live" for `work.offer` and `work.unblock`.
pub fn ownership_lease_live(w: &WorkItem, now: Micros) -> bool {
    w.ownership_lease_expires_at.is_some_and(|t| t > now)
}

/// Whether an Execution Lease is still usable at `now` (§11.3): the expiry half of
/// **exec-lease**.
pub fn execution_lease_live(lease: &ExecutionLease, now: Micros) -> bool {
    lease.state == "active" && lease.expires_at > now
}

/// **exec-lease(id)**: the WorkItem's current, live Execution Lease, held by the actor in its
/// current Session (§11.3).
pub fn exec_lease<'s>(
    state: &'s State,
    w: &WorkItem,
    cmd: &CommandView,
    lease_id: &str,
    now: Micros,
) -> Result<&'s ExecutionLease, Rejection> {
    let expired = |m: &str| Rejection::new(ErrorCode::WorkLeaseExpired, m.to_owned());
    if w.execution_lease_id.as_deref() != Some(lease_id) {
        return Err(expired("stale Execution Lease ID"));
    }
    let lease = state
        .leases
        .get(lease_id)
        .ok_or_else(|| expired("unknown Execution Lease"))?;
    // Defence in depth: the lease is reached through `w.execution_lease_id`, so it always names
    // `w`, its Group and its Mission (the reducer writes both together).
    if lease.work_item_id != w.id
        || lease.group_id != w.group_id
        || lease.mission_id != w.mission_id
    {
        return Err(Rejection::forbidden(
            "the Execution Lease belongs to another WorkItem",
        ));
    }
    if lease.ownership_epoch != w.ownership_epoch {
        return Err(Rejection::new(
            ErrorCode::WorkStaleOwnership,
            "the Execution Lease is from a stale Ownership Epoch",
        ));
    }
    if lease.holder_agent_id != cmd.actor.id.as_str() {
        return Err(Rejection::forbidden(
            "the actor does not hold this Execution Lease",
        ));
    }
    if cmd.session_epoch() != Some(lease.session_epoch) {
        return Err(Rejection::new(
            ErrorCode::AuthStaleSession,
            "the Execution Lease belongs to another Session",
        ));
    }
    if !execution_lease_live(lease, now) {
        return Err(expired("the Execution Lease has expired"));
    }
    if w.execution_lease_expires_at != Some(lease.expires_at) {
        return Err(expired("the Execution Lease does not match the WorkItem"));
    }
    Ok(lease)
}

/// **card(a)**: a registered Agent Card (D-4: `INVALID_COMMAND` for a missing entity).
pub fn card<'s>(
    state: &'s State,
    agent_id: &str,
) -> Result<&'s super::projection::AgentCardRecord, Rejection> {
    state.cards.get(agent_id).ok_or_else(|| {
        Rejection::invalid(format!("Agent {agent_id} is not registered"))
            .detail("agentId", agent_id)
    })
}

/// A new Organization-wide identifier (D-5: a duplicate is `INVALID_COMMAND`).
pub fn new_id(state: &State, what: &str, id: &str) -> Result<(), Rejection> {
    if state.id_in_use(id) {
        Err(Rejection::invalid(format!("{what} id {id} is already in use")).detail("id", id))
    } else {
        Ok(())
    }
}
