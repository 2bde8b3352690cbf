//! Group Memberships (§8; payloads.md §6.11, §6.12).
//!
//! ```text
//! membership.change (MissionOwner or Coordinator)
//!   none ──────────────▶ epoch 1, roles, active | provisional, visibility floor
//!   any (ended too) ───▶ epoch + 1, roles ∪ new roles, active | provisional, visibility
//!                        overwritten, endedAt cleared, joinedAt kept
//! membership.end (MissionOwner or Coordinator)
//!   active | provisional ─▶ ended, epoch + 1, endedAt = now, roles kept
//! ```
//!
//! Every change increases the Membership Epoch, which fences the member's older Commands
//! (guards::common, `MEMBERSHIP_STALE`) and any Delegation Grant issued for the old epoch.
//!
//! **Compare-and-set (§15.3, D-24).** A Membership has no revision of its own, so its
//! **epoch** is its revision: `expectedRevision`, when sent, must equal the target Membership's
//! current epoch, or `0` when the principal has no Membership yet (`REVISION_CONFLICT`).
//!
//! **Owner and Coordinator Memberships (§8)** must keep complete Group visibility and stay
//! `active`: for those principals a `null` `visibilityAfterSequence` resolves to 0, and a
//! non-zero one or `provisional: true` is `INVALID_COMMAND` (the reference accepts both).

use super::{Ctx, Decision};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::membership::{MembershipChanged, MembershipEnded};
use crate::authority::payload::Reader;
use crate::authority::projection::{Membership, Mission};
use crate::authority::rejection::Rejection;
use crate::authority::state::State;
use crate::authority::{EventDraft, guards};
use crate::model::common::{Actor, ActorType};
use crate::model::membership::MembershipState;

pub const CHANGED: &str = "membership.changed";
pub const ENDED: &str = "membership.ended";

/// The Membership roles (payloads.md §2.5).
pub const ROLES: [&str; 6] = [
    "coordinator",
    "mission_owner",
    "observer",
    "reviewer",
    "work_delegate",
    "worker",
];

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        CHANGED => apply_changed(state, ev),
        ENDED => apply_ended(state, ev),
        _ => return None,
    })
}

/// Whether `p` is the Mission's recorded owner or its current Coordinator Agent.
fn is_owner_or_coordinator(mission: &Mission, p: &Actor) -> bool {
    *p == mission.owner
        || (p.actor_type == ActorType::Agent && p.id.as_str() == mission.coordinator_id)
}

/// `membership.change` (payloads.md §6.11).
pub fn decide_change(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let principal = r.principal("principal");
    let roles = r.ids("roles", 1);
    for role in &roles {
        if !ROLES.contains(&role.as_str()) {
            r.error("roles", format!("{role:?} is not one of {ROLES:?}"));
        }
    }
    for (i, role) in roles.iter().enumerate() {
        if roles[..i].contains(role) {
            r.error("roles", format!("role {role:?} is listed twice"));
        }
    }
    let provisional = r.boolean("provisional", false);
    let visibility = r.opt_int("visibilityAfterSequence", 0, crate::json::MAX_SAFE_INTEGER);
    r.finish(&cmd.kind)?;
    let Some(principal) = principal else {
        return Err(Rejection::invalid("principal is required"));
    };

    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::owner_or_coordinator(g, mission, cmd, cx.now)?;
    guards::non_terminal_mission(mission)?;
    if principal.actor_type == ActorType::Agent {
        guards::card(cx.state, principal.id.as_str())?;
    }
    if roles.iter().any(|r| r == "mission_owner") && principal != mission.owner {
        return Err(Rejection::forbidden(
            "the mission_owner role belongs to the recorded MissionOwner only",
        ));
    }
    let is_coordinator =
        principal.actor_type == ActorType::Agent && principal.id.as_str() == mission.coordinator_id;
    if roles.iter().any(|r| r == "coordinator") && !is_coordinator {
        return Err(Rejection::forbidden(
            "the coordinator role belongs to the current Coordinator only",
        ));
    }
    let privileged = is_owner_or_coordinator(mission, &principal);
    if privileged && (provisional || visibility.is_some_and(|v| v != 0)) {
        return Err(Rejection::invalid(
            "MissionOwner and Coordinator Memberships stay active with complete visibility (§8)",
        ));
    }
    let existing = g.memberships.get(principal.id.as_str());
    if let Some(m) = existing
        && m.principal.actor_type != principal.actor_type
    {
        return Err(Rejection::invalid(
            "the principal id already has a Membership of another principal type",
        ));
    }
    guards::revision(cmd, existing.map_or(0, |m| m.epoch))?;

    let visibility_after_sequence = match visibility {
        Some(v) => v,
        None if privileged => 0,
        // `null`: the Group's current sequence, read before this Event is appended.
        None => g.last_sequence,
    };
    let status = if provisional {
        MembershipState::Provisional
    } else {
        MembershipState::Active
    };
    let membership = match existing {
        Some(m) => {
            let mut all = m.roles.clone();
            all.extend(roles);
            crate::order::sort(&mut all);
            all.dedup();
            Membership {
                ended_at: None,
                epoch: m.epoch + 1,
                group_id: m.group_id.clone(),
                joined_at: m.joined_at,
                principal,
                roles: all,
                status,
                visibility_after_sequence,
            }
        }
        None => {
            let mut roles = roles;
            crate::order::sort(&mut roles);
            Membership {
                ended_at: None,
                epoch: 1,
                group_id: g.group.id.clone(),
                joined_at: cx.now,
                principal,
                roles,
                status,
                visibility_after_sequence,
            }
        }
    };
    Ok(vec![EventDraft::group(
        &g.group.id,
        CHANGED,
        MembershipChanged { membership }.to_object(),
    )])
}

/// The Event carries the whole Membership after the change.
pub fn apply_changed(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let MembershipChanged { membership: m } = MembershipChanged::read(ev)?;
    let g = state
        .groups
        .get_mut(&m.group_id)
        .ok_or_else(|| ApplyError::unknown(ev, "Group", &m.group_id))?;
    g.memberships.insert(m.principal.id.0.clone(), m);
    Ok(())
}

/// `membership.end` (payloads.md §6.12).
pub fn decide_end(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let principal = r.principal("principal");
    r.finish(&cmd.kind)?;
    let Some(principal) = principal else {
        return Err(Rejection::invalid("principal is required"));
    };

    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::owner_or_coordinator(g, mission, cmd, cx.now)?;
    guards::non_terminal_mission(mission)?;
    if is_owner_or_coordinator(mission, &principal) {
        // The reference answers APPROVAL_REQUIRED; a permission failure is AUTH_FORBIDDEN (D-6).
        return Err(Rejection::forbidden(
            "the MissionOwner's and the current Coordinator's Memberships cannot be ended",
        ));
    }
    // D-4: a missing Membership is INVALID_COMMAND; an ended one cannot end again.
    let m = match g.memberships.get(principal.id.as_str()) {
        Some(m) if m.principal == principal => m,
        _ => return Err(Rejection::not_found("Membership", principal.id.as_str())),
    };
    if m.status == MembershipState::Ended {
        return Err(Rejection::transition("the Membership has already ended"));
    }
    guards::revision(cmd, m.epoch)?;
    Ok(vec![EventDraft::group(
        &g.group.id,
        ENDED,
        MembershipEnded { principal }.to_object(),
    )])
}

/// Status `ended`, epoch + 1, `endedAt` = the Event time, roles kept.
pub fn apply_ended(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let MembershipEnded { principal } = MembershipEnded::read(ev)?;
    let group_id = ev.group_id.ok_or_else(|| ApplyError::missing_group(ev))?;
    let m = state
        .groups
        .get_mut(group_id)
        .and_then(|g| g.memberships.get_mut(principal.id.as_str()))
        .ok_or_else(|| ApplyError::unknown(ev, "Membership", principal.id.as_str()))?;
    m.status = MembershipState::Ended;
    m.epoch += 1;
    m.ended_at = Some(ev.occurred_at);
    Ok(())
}
