//! WorkItem execution (§10.2, §11.3–§11.5, §13.2; payloads.md §6.22–§6.29, §6.36).
//!
//! The §10.2 rows enforced below (any other transition is rejected with
//! `INVALID_STATE_TRANSITION`):
//!
//! | Current state | Transition | Next state | Authority and gate |
//! | --- | --- | --- | --- |
//! | `queued` | `work.start` | `active` | owning Worker at the current Ownership Epoch, no projected Execution Lease, every dependency `verified`, a current Execution Approval when the contract requires one; a new Execution Lease bound to the Session Epoch |
//! | `active` | `…core.work_execution_lease_renew` | `active` | owning Worker with the current Execution Lease; the expiry strictly extends |
//! | `active` | `work.checkpoint` | `queued` | owning Worker with the current Execution Lease; the lease is released, ownership kept for `resumeWithinSeconds` |
//! | `active` | `work.block` | `blocked` | as `work.checkpoint`; a bounded blocked lease |
//! | `blocked` | `work.unblock` | `queued` or `open` | Coordinator; `queued` while the owner's lease is live, otherwise the owner is fenced and the item re-opens; a linked child Mission must be approved |
//! | `active` | `work.submit` | `submitted` | owning Worker with the current Execution Lease; published Artifacts of this WorkItem and Evidence |
//! | `submitted` | `work.accept_result` | `verified` | Coordinator; every Evidence item successful (Evidence before acceptance) |
//! | `open`, `offered`, `queued`, `active`, `blocked`, `submitted` | `work.fail` | `failed` | Coordinator, or the owning Worker from `active` with its current Execution Lease |
//! | `open`, `offered`, `queued`, `active`, `blocked`, `submitted` | `work.cancel` | `cancelled` | MissionOwner or Coordinator; the owner is fenced |
//! | `blocked` | linked child Mission approval (`work.result.accepted` with `childMissionId`) | `verified` | applied here, decided by `mission.approve` |
//! | `blocked` / any unfinished | linked child Mission failure (`work.blocked` / `work.failed` with `sourceEventId`) | `blocked` or `failed` | applied here, decided by `mission.terminate` |
//!
//! `verified`, `failed` and `cancelled` accept none of the Worker transitions above.
//!
//! ```text
//! work.start ──▶ work.started (executionLease: lease:execution:<uuid from the Command hash>)
//!      │                  │
//!      │       renew ─────┤ work.progressed
//!      │                  ├─ checkpoint ─▶ work.checkpointed  (lease released, queued)
//!      │                  ├─ block ──────▶ work.blocked       (lease released; checkpoint as note)
//!      │                  ├─ submit ─────▶ work.submitted     (lease released)
//!      │                  └─ fail ───────▶ work.failed        (lease revoked)
//!      └── session_open ─▶ …work_execution_lease_revoked (organization.rs)
//! ```

use super::cooperation::{self, Policy};
use super::work_plan::fence_owner;
use super::{Ctx, Decision, offline};
use crate::authority::clock::Micros;
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::work_exec::{
    AcceptedBy, BlockedBy, LeaseIssued, ResultAccepted, WorkBlocked, WorkCheckpointed, WorkClosed,
    WorkSubmitted, WorkUnblocked,
};
use crate::authority::payload::Reader;
use crate::authority::projection::{Checkpoint, EvidenceItem, ExecutionLease, WorkItem};
use crate::authority::rejection::Rejection;
use crate::authority::state::State;
use crate::authority::{EventDraft, guards};
use crate::encoding::sha256_hash;
use crate::json::{MAX_SAFE_INTEGER, Object, Value};
use crate::model::ToJson;
use crate::model::common::ActorType;
use crate::model::error::ErrorCode;
use crate::model::mission::MissionState;
use crate::model::work_item::WorkItemState;

pub const STARTED: &str = "work.started";
pub const CHECKPOINTED: &str = "work.checkpointed";
pub const BLOCKED: &str = "work.blocked";
pub const UNBLOCKED: &str = "work.unblocked";
pub const SUBMITTED: &str = "work.submitted";
pub const RESULT_ACCEPTED: &str = "work.result.accepted";
pub const FAILED: &str = "work.failed";
pub const CANCELLED: &str = "work.cancelled";
pub const PROGRESSED: &str = "work.progressed";
pub const LEASE_RENEW: &str = "ext.missionweaveprotocol.core.work_execution_lease_renew";

/// The largest lease, offer or approval duration a payload may ask for (one year).
pub const MAX_SECONDS: u64 = 31_536_000;

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        STARTED => apply_started(state, ev),
        CHECKPOINTED => apply_checkpointed(state, ev),
        BLOCKED => apply_blocked(state, ev),
        UNBLOCKED => apply_unblocked(state, ev),
        SUBMITTED => apply_submitted(state, ev),
        RESULT_ACCEPTED => apply_result_accepted(state, ev),
        FAILED => apply_failed(state, ev),
        CANCELLED => apply_cancelled(state, ev),
        PROGRESSED => apply_progressed(state, ev),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Shared decide-side helpers
// ---------------------------------------------------------------------------------------------

/// The Execution Lease ID of a `work.start`: `lease:execution:<uuid>` with a v4-shaped UUID
/// taken from the Command hash, so the same history always yields the same ID (no randomness).
pub fn lease_id_for(command_hash: &str) -> String {
    let h = sha256_hash(format!("missionweave execution lease {command_hash}").as_bytes());
    let hex: Vec<char> = h.chars().skip(7).take(32).collect();
    let mut u = String::with_capacity(36);
    for (i, c) in hex.iter().enumerate() {
        if matches!(i, 8 | 12 | 16 | 20) {
            u.push('-');
        }
        let c = match i {
            12 => '4',
            16 => match c.to_digit(16).map(|d| (d & 0x3) | 0x8) {
                Some(8) => '8',
                Some(9) => '9',
                Some(10) => 'a',
                _ => 'b',
            },
            _ => *c,
        };
        u.push(c);
    }
    format!("lease:execution:{u}")
}

/// Validates an Execution Lease projection against `lease.schema.json` (nulls left out), as
/// the reference does before it stores one (`INVALID_COMMAND`).
pub fn validate_lease(lease: &ExecutionLease) -> Result<(), Rejection> {
    let mut o = Object::new();
    if let Value::Object(all) = lease.to_json() {
        for (k, v) in all.iter() {
            if !matches!(v, Value::Null) {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    crate::model::lease::validate(&Value::Object(o), false).map_err(|e| {
        Rejection::invalid("Execution Lease does not match lease.schema.json")
            .detail("error", e.to_string())
    })
}

/// **status(s)**: the WorkItem is in state `s` (`INVALID_STATE_TRANSITION`).
fn require_status(w: &WorkItem, status: WorkItemState, action: &str) -> Result<(), Rejection> {
    if w.status == status {
        Ok(())
    } else {
        Err(invalid_transition(w, action))
    }
}

fn invalid_transition(w: &WorkItem, action: &str) -> Rejection {
    Rejection::transition(format!("cannot {action} a WorkItem that is {}", w.status))
        .detail("workItemId", w.id.as_str())
        .detail("status", w.status.as_str())
}

/// Reads an Evidence list that must be present and not empty, with `data` strings stripped
/// like every other payload string (payloads.md §2.1).
fn read_evidence(r: &mut Reader) -> Vec<EvidenceItem> {
    let mut items = r.nested_list("evidence", EvidenceItem::read);
    if !r.present("evidence") {
        r.error("evidence", "is required");
    } else if items.is_empty() {
        r.error("evidence", "needs at least 1 item(s)");
    }
    for item in &mut items {
        if let Value::Object(o) = strip_strings(Value::Object(std::mem::take(&mut item.data))) {
            item.data = o;
        }
    }
    items
}

/// Strips leading and trailing whitespace from every string in `v`, member names included.
pub fn strip_strings(v: Value) -> Value {
    match v {
        Value::String(s) => Value::string(s.as_str().trim().to_owned()),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_strings).collect()),
        Value::Object(o) => {
            let mut out = Object::new();
            for (k, v) in o.iter() {
                out.insert(k.as_str().trim().to_owned(), strip_strings(v.clone()));
            }
            Value::Object(out)
        }
        other => other,
    }
}

fn ownership_epoch(r: &mut Reader) -> u64 {
    r.int("ownershipEpoch", 1, MAX_SAFE_INTEGER, None)
}

// ---------------------------------------------------------------------------------------------
// work.start (payloads.md §6.22)
// ---------------------------------------------------------------------------------------------

/// `work.start`: `queued` → `active` under a new Execution Lease.
pub fn decide_start(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let epoch = ownership_epoch(&mut r);
    let seconds = r.int("executionLeaseSeconds", 1, MAX_SECONDS, Some(300));
    r.finish(&cmd.kind)?;

    // C5: the actor's active WorkItems across all Groups, plus this one.
    let active = cx
        .state
        .work_items
        .values()
        .filter(|w| {
            w.assignee_id.as_deref() == Some(cmd.actor.id.as_str())
                && w.status == WorkItemState::Active
        })
        .count();
    let limit = cx.config.limits.max_active_work_items;
    let mut details = Object::new();
    details.insert("active", Value::from(active as u64 + 1));
    details.insert("limit", Value::from(limit as u64));
    let grant = cooperation::check(cx, Policy::ActiveWorkItems, active + 1 > limit, details)?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::active_mission(mission)?;
    let w = guards::work(cx.state, g, &work_id)?;
    guards::revision(cmd, w.revision)?;
    guards::work_owner(w, cmd, epoch, cx.now)?;
    require_status(w, WorkItemState::Queued, "start")?;
    if w.execution_lease_id.is_some() || w.execution_lease_expires_at.is_some() {
        return Err(
            Rejection::transition("queued WorkItem already projects an Execution Lease")
                .detail("workItemId", w.id.as_str()),
        );
    }
    super::work_plan::dependencies_verified(cx.state, w).map_err(|pending| {
        Rejection::invalid("WorkItem dependencies are not verified").detail(
            "dependencies",
            Value::Array(pending.into_iter().map(Value::string).collect()),
        )
    })?;
    if execution_approval_required(w) && current_execution_approval(cx.state, w, cx.now).is_none() {
        return Err(Rejection::new(
            ErrorCode::ApprovalRequired,
            "WorkItem requires a current Execution Approval",
        )
        .detail("workItemId", w.id.as_str())
        .detail("executionApproval", w.contract.execution_approval.as_str()));
    }
    let Some(session_epoch) = cmd.session_epoch() else {
        return Err(Rejection::invalid(
            "work.start requires an Agent Session Epoch",
        ));
    };
    let lease_id = lease_id_for(&cmd.command_hash);
    if cx.state.leases.contains_key(&lease_id) {
        return Err(
            Rejection::invalid("Execution Lease ID already exists").detail("leaseId", lease_id)
        );
    }
    let lease = ExecutionLease {
        closed_at: None,
        closure_reason: None,
        expires_at: cx.now.plus_seconds(seconds),
        group_id: mission.group_id.clone(),
        holder_agent_id: cmd.actor.id.0.clone(),
        issued_at: cx.now,
        last_renewed_at: None,
        lease_id,
        lease_type: "execution".into(),
        mission_id: mission.id.clone(),
        ownership_epoch: w.ownership_epoch,
        renewal_count: 0,
        session_epoch,
        starts_at: cx.now,
        state: "active".into(),
        work_item_id: w.id.clone(),
    };
    validate_lease(&lease)?;
    let started = LeaseIssued {
        work_item_id: w.id.clone(),
        ownership_epoch: w.ownership_epoch,
        execution_lease_expires_at: lease.expires_at,
        execution_lease: lease,
    };
    let draft = EventDraft::group(&g.group.id, STARTED, started.to_object());
    Ok(vec![cooperation::consume(draft, grant)])
}

/// Whether the Work Contract gates `work.start` on an Execution Approval (§12: anything but
/// `not_required`).
pub fn execution_approval_required(w: &WorkItem) -> bool {
    w.contract.execution_approval != "not_required"
}

/// The Execution Approval that satisfies the `work.start` gate of `w` at `now`: one for this
/// WorkItem and its current Ownership Epoch that has not expired (§12; it is not consumed).
pub fn current_execution_approval<'s>(
    state: &'s State,
    w: &WorkItem,
    now: Micros,
) -> Option<&'s crate::authority::projection::ExecutionApproval> {
    state.execution_approvals.values().find(|a| {
        a.work_item_id == w.id && a.ownership_epoch == w.ownership_epoch && a.expires_at > now
    })
}

fn work_mut<'s>(
    state: &'s mut State,
    id: &str,
    ev: &EventView,
) -> Result<&'s mut WorkItem, ApplyError> {
    state
        .work_items
        .get_mut(id)
        .ok_or_else(|| ApplyError::unknown(ev, "WorkItem", id))
}

/// `revision` + 1 and `updatedAt` (the reference's `_touch_work`).
fn touch_work(w: &mut WorkItem, now: Micros) {
    w.revision += 1;
    w.updated_at = now;
}

/// The Mission's `revision` + 1 and `updatedAt` (the reference's `_touch_mission`).
fn touch_mission(state: &mut State, mission_id: &str, now: Micros) {
    if let Some(m) = state.missions.get_mut(mission_id) {
        m.revision += 1;
        m.updated_at = now;
    }
}

/// Closes the WorkItem's open Execution Lease (apply side): `if_live` with `reason`, or
/// `expired` at its own expiry if it had run out; the WorkItem no longer projects a lease.
pub fn close_lease(state: &mut State, work_id: &str, now: Micros, if_live: &str, reason: &str) {
    let Some(w) = state.work_items.get_mut(work_id) else {
        return;
    };
    w.execution_lease_expires_at = None;
    let Some(lease_id) = w.execution_lease_id.take() else {
        return;
    };
    if let Some(l) = state.leases.get_mut(&lease_id)
        && l.state == "active"
    {
        if l.expires_at <= now {
            l.state = "expired".into();
            l.closed_at = Some(l.expires_at);
            l.closure_reason = Some(format!("{reason}; lease had reached its expiry"));
        } else {
            l.state = if_live.into();
            l.closed_at = Some(now);
            l.closure_reason = Some(reason.into());
        }
    }
}

pub fn apply_started(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let LeaseIssued {
        work_item_id,
        execution_lease: lease,
        ..
    } = LeaseIssued::read(ev)?;
    let w = work_mut(state, &work_item_id, ev)?;
    w.status = WorkItemState::Active;
    w.execution_lease_id = Some(lease.lease_id.clone());
    w.execution_lease_expires_at = Some(lease.expires_at);
    if w.ownership_lease_expires_at
        .is_none_or(|t| t < lease.expires_at)
    {
        w.ownership_lease_expires_at = Some(lease.expires_at);
    }
    touch_work(w, ev.occurred_at);
    state.leases.insert(lease.lease_id.clone(), lease);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Lease renewal (payloads.md §6.36)
// ---------------------------------------------------------------------------------------------

/// The owner guards shared by every Worker-with-lease kind: **group**, **work**,
/// **revision(W)**, **work-owner**, status `active`, **exec-lease**.
fn worker_with_lease<'s>(
    cx: &Ctx<'s>,
    work_id: &str,
    epoch: u64,
    lease_id: &str,
    action: &str,
) -> Result<(&'s WorkItem, &'s ExecutionLease), Rejection> {
    let (g, _) = guards::group(cx.state, cx.cmd)?;
    let w = guards::work(cx.state, g, work_id)?;
    guards::revision(cx.cmd, w.revision)?;
    guards::work_owner(w, cx.cmd, epoch, cx.now)?;
    require_status(w, WorkItemState::Active, action)?;
    let lease = guards::exec_lease(cx.state, w, cx.cmd, lease_id, cx.now)?;
    Ok((w, lease))
}

/// `…core.work_execution_lease_renew`: extends the current Execution Lease.
pub fn decide_lease_renew(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let epoch = ownership_epoch(&mut r);
    let lease_id = r.id("executionLeaseId");
    let seconds = r.int("leaseSeconds", 1, MAX_SECONDS, Some(300));
    r.finish(&cmd.kind)?;
    let (w, lease) = worker_with_lease(
        cx,
        &work_id,
        epoch,
        &lease_id,
        "renew the Execution Lease of",
    )?;
    let expired = |m: &str| {
        Rejection::new(ErrorCode::WorkLeaseExpired, m.to_owned())
            .detail("executionLeaseId", lease_id.as_str())
    };
    let expiry = cx.now.plus_seconds(seconds);
    if cx.now < lease.starts_at {
        return Err(expired("Execution Lease cannot renew before its start"));
    }
    if cx.now >= lease.expires_at {
        return Err(expired(
            "Execution Lease must be renewed before its current expiry",
        ));
    }
    if lease.last_renewed_at.is_some_and(|t| cx.now <= t) {
        return Err(expired(
            "Execution Lease renewal time must advance monotonically",
        ));
    }
    if expiry <= lease.expires_at {
        return Err(expired(
            "Execution Lease renewal must strictly extend its expiry",
        ));
    }
    if lease.renewal_count >= MAX_SAFE_INTEGER {
        return Err(expired(
            "Execution Lease renewal count exceeds the safe-integer limit",
        ));
    }
    let mut renewed = lease.clone();
    renewed.expires_at = expiry;
    renewed.renewal_count += 1;
    renewed.last_renewed_at = Some(cx.now);
    validate_lease(&renewed)?;
    let progressed = LeaseIssued {
        work_item_id: w.id.clone(),
        ownership_epoch: w.ownership_epoch,
        execution_lease: renewed,
        execution_lease_expires_at: expiry,
    };
    Ok(vec![EventDraft::group(
        &w.group_id,
        PROGRESSED,
        progressed.to_object(),
    )])
}

pub fn apply_progressed(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let LeaseIssued {
        work_item_id,
        execution_lease: lease,
        ..
    } = LeaseIssued::read(ev)?;
    let w = work_mut(state, &work_item_id, ev)?;
    w.execution_lease_expires_at = Some(lease.expires_at);
    // The reference overwrites the ownership lease, which can shorten it (payloads.md §12.6).
    w.ownership_lease_expires_at = Some(lease.expires_at);
    touch_work(w, ev.occurred_at);
    state.leases.insert(lease.lease_id.clone(), lease);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// work.checkpoint and work.block (payloads.md §6.23, §6.24)
// ---------------------------------------------------------------------------------------------

/// `work.checkpoint`: durable progress; `active` → `queued`, the lease is released. Offline
/// progress is reconciled first (step C6), its usage Event appended before this one.
pub fn decide_checkpoint(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let epoch = ownership_epoch(&mut r);
    let lease_id = r.id("executionLeaseId");
    let checkpoint = r.nested("checkpoint", true, Checkpoint::read);
    let resume = r.int("resumeWithinSeconds", 1, MAX_SECONDS, Some(900));
    r.finish(&cmd.kind)?;
    let checkpoint = checkpoint.ok_or_else(|| Rejection::invalid("checkpoint is required"))?;
    let usage = offline::reconcile(cx)?;
    let (w, _) = worker_with_lease(cx, &work_id, epoch, &lease_id, "checkpoint")?;
    let mut drafts: Vec<EventDraft> = usage.into_iter().collect();
    let checkpointed = WorkCheckpointed {
        work_item_id: w.id.clone(),
        checkpoint,
        ownership_lease_expires_at: cx.now.plus_seconds(resume),
    };
    drafts.push(EventDraft::group(
        &w.group_id,
        CHECKPOINTED,
        checkpointed.to_object(),
    ));
    Ok(drafts)
}

pub fn apply_checkpointed(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let WorkCheckpointed {
        work_item_id,
        checkpoint,
        ownership_lease_expires_at: until,
    } = WorkCheckpointed::read(ev)?;
    let id = work_item_id.as_str();
    let now = ev.occurred_at;
    let w = work_mut(state, id, ev)?;
    w.checkpoints.push(checkpoint);
    w.status = WorkItemState::Queued;
    close_lease(
        state,
        id,
        now,
        "released",
        "Worker checkpointed and released its execution slot",
    );
    let w = work_mut(state, id, ev)?;
    w.ownership_lease_expires_at = Some(until);
    touch_work(w, now);
    Ok(())
}

/// `work.block`: `active` → `blocked` with a checkpoint and a bounded blocked lease. The
/// reference's Event does not carry the checkpoint, so it travels as a replay note.
pub fn decide_block(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let epoch = ownership_epoch(&mut r);
    let lease_id = r.id("executionLeaseId");
    let reason = r.text("reason");
    let checkpoint = r.nested("checkpoint", true, Checkpoint::read);
    let blocked_for = r.int("blockedLeaseSeconds", 1, MAX_SECONDS, Some(900));
    r.finish(&cmd.kind)?;
    let checkpoint = checkpoint.ok_or_else(|| Rejection::invalid("checkpoint is required"))?;
    let (w, _) = worker_with_lease(cx, &work_id, epoch, &lease_id, "block")?;
    let blocked = WorkBlocked {
        work_item_id: w.id.clone(),
        reason,
        by: BlockedBy::Worker {
            ownership_lease_expires_at: cx.now.plus_seconds(blocked_for),
        },
    };
    Ok(vec![
        EventDraft::group(&w.group_id, BLOCKED, blocked.to_object())
            .note("checkpoint", checkpoint.to_json()),
    ])
}

/// `work.blocked`: the Worker's block, or (with `sourceEventId`) the child-failure variant of
/// `mission.terminate`, which fences the owner and moves the parent Mission's revision.
pub fn apply_blocked(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let WorkBlocked {
        work_item_id,
        reason,
        by,
    } = WorkBlocked::read(ev)?;
    let id = work_item_id.as_str();
    let now = ev.occurred_at;
    let until = match by {
        BlockedBy::Worker {
            ownership_lease_expires_at,
        } => ownership_lease_expires_at,
        BlockedBy::ChildFailure { .. } => {
            let w = work_mut(state, id, ev)?;
            w.status = WorkItemState::Blocked;
            w.blocker = Some(reason);
            let mission_id = w.mission_id.clone();
            fence_owner(state, id, now);
            touch_work(work_mut(state, id, ev)?, now);
            touch_mission(state, &mission_id, now);
            return Ok(());
        }
    };
    let checkpoint: Option<Checkpoint> = crate::authority::events::note(ev, "checkpoint")?;
    let w = work_mut(state, id, ev)?;
    w.checkpoints.extend(checkpoint);
    w.status = WorkItemState::Blocked;
    w.blocker = Some(reason);
    close_lease(
        state,
        id,
        now,
        "released",
        "Worker blocked and released its execution slot",
    );
    let w = work_mut(state, id, ev)?;
    w.ownership_lease_expires_at = Some(until);
    touch_work(w, now);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// work.unblock (payloads.md §6.25)
// ---------------------------------------------------------------------------------------------

/// `work.unblock`: `blocked` → `queued` (live owner) or `open` (owner fenced).
pub fn decide_unblock(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::coordinator(g, mission, cmd, cx.now, false)?;
    guards::active_mission(mission)?;
    let w = guards::work(cx.state, g, &work_id)?;
    guards::revision(cmd, w.revision)?;
    require_status(w, WorkItemState::Blocked, "unblock")?;
    if let Some(child_id) = &w.child_mission_id
        && cx
            .state
            .missions
            .get(child_id)
            .is_none_or(|c| c.status != MissionState::Approved)
    {
        return Err(
            Rejection::transition("a WorkItem cannot bypass its active child Mission")
                .detail("childMissionId", child_id.as_str()),
        );
    }
    let live_owner = super::work_plan::is_live_owner(w, cx.now);
    let status = if live_owner { "queued" } else { "open" };
    let unblocked = WorkUnblocked {
        work_item_id: w.id.clone(),
        status: status.to_owned(),
    };
    Ok(vec![EventDraft::group(
        &w.group_id,
        UNBLOCKED,
        unblocked.to_object(),
    )])
}

pub fn apply_unblocked(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let WorkUnblocked {
        work_item_id,
        status,
    } = WorkUnblocked::read(ev)?;
    let id = work_item_id.as_str();
    let now = ev.occurred_at;
    let status = match WorkItemState::from_wire(&status) {
        Some(s @ WorkItemState::Queued) => s,
        Some(s @ WorkItemState::Open) => {
            fence_owner(state, id, now);
            s
        }
        _ => {
            return Err(ApplyError::MalformedMember {
                kind: ev.kind.to_owned(),
                member: "status",
                reason: format!("{status} is neither queued nor open"),
            });
        }
    };
    let w = work_mut(state, id, ev)?;
    w.status = status;
    w.blocker = None;
    touch_work(w, now);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// work.submit and work.accept_result (payloads.md §6.26, §6.27; §13.2)
// ---------------------------------------------------------------------------------------------

/// `work.submit`: `active` → `submitted` with this WorkItem's published Artifacts and Evidence.
pub fn decide_submit(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let epoch = ownership_epoch(&mut r);
    let lease_id = r.id("executionLeaseId");
    let mut artifact_ids = r.ids("artifactIds", 1);
    let evidence = read_evidence(&mut r);
    r.finish(&cmd.kind)?;
    let (w, _) = worker_with_lease(cx, &work_id, epoch, &lease_id, "submit")?;
    for a in &artifact_ids {
        let belongs = cx
            .state
            .artifacts
            .get(a)
            .and_then(|m| m.get("workItemId"))
            .and_then(Value::as_str)
            == Some(w.id.as_str());
        if !belongs {
            return Err(
                Rejection::invalid("submitted Artifact does not belong to the WorkItem")
                    .detail("artifactId", a.as_str()),
            );
        }
    }
    crate::order::sort(&mut artifact_ids);
    artifact_ids.dedup();
    let submitted = WorkSubmitted {
        work_item_id: w.id.clone(),
        artifact_ids,
        evidence,
    };
    Ok(vec![EventDraft::group(
        &w.group_id,
        SUBMITTED,
        submitted.to_object(),
    )])
}

pub fn apply_submitted(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let WorkSubmitted {
        work_item_id,
        artifact_ids,
        evidence,
    } = WorkSubmitted::read(ev)?;
    let id = work_item_id.as_str();
    let now = ev.occurred_at;
    let w = work_mut(state, id, ev)?;
    w.status = WorkItemState::Submitted;
    w.artifact_ids = artifact_ids;
    w.submission_evidence = evidence;
    close_lease(
        state,
        id,
        now,
        "released",
        "Worker submitted its result and released execution",
    );
    touch_work(work_mut(state, id, ev)?, now);
    Ok(())
}

/// `work.accept_result`: `submitted` → `verified`. Every Evidence item must be successful
/// (D-6: `INVALID_COMMAND`, where the reference says `APPROVAL_REQUIRED`).
pub fn decide_accept_result(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let evidence = read_evidence(&mut r);
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::coordinator(g, mission, cmd, cx.now, true)?;
    guards::active_mission(mission)?;
    let w = guards::work(cx.state, g, &work_id)?;
    guards::revision(cmd, w.revision)?;
    require_status(w, WorkItemState::Submitted, "accept the result of")?;
    if let Some(i) = evidence.iter().position(|e| !e.success) {
        return Err(
            Rejection::invalid("verification Evidence must be successful")
                .detail("evidenceIndex", i as u64),
        );
    }
    let accepted = ResultAccepted {
        work_item_id: w.id.clone(),
        by: AcceptedBy::Coordinator { evidence },
    };
    Ok(vec![EventDraft::group(
        &w.group_id,
        RESULT_ACCEPTED,
        accepted.to_object(),
    )])
}

/// `work.result.accepted`: the Coordinator's acceptance, or (with `childMissionId`) the
/// child-approval variant of `mission.approve` (payloads.md §6.7), applied after the child's
/// `mission.approved`.
pub fn apply_result_accepted(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let ResultAccepted { work_item_id, by } = ResultAccepted::read(ev)?;
    let id = work_item_id.as_str();
    let now = ev.occurred_at;
    let evidence = match by {
        AcceptedBy::Coordinator { evidence } => evidence,
        AcceptedBy::ChildApproval {
            child_mission_id,
            child_approval_id,
            ..
        } => {
            let child_id = child_mission_id.as_str();
            let approval_id = child_approval_id.as_str();
            let artifact_ids = child_result_artifacts(state, child_id);
            let mut data = Object::new();
            data.insert("childMissionId", Value::string(child_id.to_owned()));
            data.insert("approvalId", Value::string(approval_id.to_owned()));
            let evidence = EvidenceItem {
                kind: "child_mission_approval".into(),
                description: format!("Child Mission {child_id} approved as {approval_id}"),
                success: true,
                artifact_hash: None,
                data,
            };
            // The child's result completes the WorkItem: no execution may continue on it (§10.2).
            fence_owner(state, id, now);
            let w = work_mut(state, id, ev)?;
            w.status = WorkItemState::Verified;
            w.blocker = None;
            w.artifact_ids = artifact_ids;
            w.verification_evidence = vec![evidence];
            touch_work(w, now);
            let mission_id = w.mission_id.clone();
            touch_mission(state, &mission_id, now);
            return Ok(());
        }
    };
    let w = work_mut(state, id, ev)?;
    w.status = WorkItemState::Verified;
    w.verification_evidence = evidence;
    w.ownership_lease_expires_at = None;
    touch_work(w, now);
    let mission_id = w.mission_id.clone();
    touch_mission(state, &mission_id, now);
    Ok(())
}

/// The Artifacts a child Mission's approval hands to its parent WorkItem: the child's published
/// Artifacts whose content the approval names, in id order. They live in the child's Group.
fn child_result_artifacts(state: &State, child_id: &str) -> Vec<String> {
    let approved: &[String] = state
        .missions
        .get(child_id)
        .map_or(&[], |m| m.approved_artifact_hashes.as_slice());
    let mut artifact_ids: Vec<String> = state
        .artifacts
        .iter()
        .filter(|(_, a)| {
            a.get("missionId").and_then(Value::as_str) == Some(child_id)
                && a.get("contentHash")
                    .and_then(Value::as_str)
                    .is_some_and(|h| approved.iter().any(|x| x == h))
        })
        .map(|(k, _)| k.clone())
        .collect();
    crate::order::sort(&mut artifact_ids);
    artifact_ids
}

/// After the child's `mission.approved`: a parent WorkItem already verified by this child's
/// approval takes the child's approved Artifacts. The authority applies the child's Events
/// first (one Command: child, then parent), so there this finds nothing to do; a console that
/// follows both Groups may fold the parent's `work.result.accepted` first (§16 orders Events
/// within a Group only), and the two orders must give one state.
pub fn settle_child_result(state: &mut State, child_id: &str) {
    let Some(parent) = state
        .missions
        .get(child_id)
        .and_then(|m| m.parent_work_item_id.clone())
    else {
        return;
    };
    let verified_by_child = state.work_items.get(&parent).is_some_and(|w| {
        w.verification_evidence.iter().any(|e| {
            e.kind == "child_mission_approval"
                && e.data.get("childMissionId").and_then(Value::as_str) == Some(child_id)
        })
    });
    if !verified_by_child {
        return;
    }
    let artifact_ids = child_result_artifacts(state, child_id);
    if let Some(w) = state.work_items.get_mut(&parent) {
        w.artifact_ids = artifact_ids;
    }
}

// ---------------------------------------------------------------------------------------------
// work.fail and work.cancel (payloads.md §6.28, §6.29)
// ---------------------------------------------------------------------------------------------

/// `work.fail`: the Coordinator from any unfinished state, or the owning Worker from `active`
/// with its current Execution Lease. There is no failure-Evidence member (D-32).
pub fn decide_fail(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let reason = r.text("reason");
    let epoch = r.opt_int("ownershipEpoch", 1, MAX_SAFE_INTEGER);
    let lease_id = r.opt_id("executionLeaseId");
    if !r.has_errors() && epoch.is_some() != lease_id.is_some() {
        r.error(
            "executionLeaseId",
            "Worker failure requires both ownership epoch and Execution Lease ID",
        );
    }
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    let w = guards::work(cx.state, g, &work_id)?;
    // D-24: expectedRevision is compared wherever it is sent.
    guards::revision(cmd, w.revision)?;
    let is_coordinator =
        cmd.actor.actor_type == ActorType::Agent && cmd.actor.id.as_str() == mission.coordinator_id;
    if is_coordinator {
        guards::coordinator(g, mission, cmd, cx.now, false)?;
    } else {
        let (Some(epoch), Some(lease_id)) = (epoch, lease_id) else {
            return Err(Rejection::invalid(
                "Worker failure requires an ownership epoch and Execution Lease ID",
            ));
        };
        guards::work_owner(w, cmd, epoch, cx.now)?;
        require_status(w, WorkItemState::Active, "fail")?;
        guards::exec_lease(cx.state, w, cmd, &lease_id, cx.now)?;
    }
    if w.is_terminal() {
        return Err(invalid_transition(w, "fail"));
    }
    let failed = WorkClosed {
        work_item_id: w.id.clone(),
        reason,
        source_event_id: None,
    };
    Ok(vec![EventDraft::group(
        &w.group_id,
        FAILED,
        failed.to_object(),
    )])
}

/// `work.failed`: the ordinary failure (any lease revoked, ownership kept without a lease), or
/// (with `sourceEventId`) the child-failure variant, which fences the owner.
pub fn apply_failed(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let WorkClosed {
        work_item_id,
        reason,
        source_event_id,
    } = WorkClosed::read(ev)?;
    let id = work_item_id.as_str();
    let now = ev.occurred_at;
    let variant = source_event_id.is_some();
    let w = work_mut(state, id, ev)?;
    w.status = WorkItemState::Failed;
    w.failure_reason = Some(reason);
    let mission_id = w.mission_id.clone();
    if variant {
        fence_owner(state, id, now);
    } else {
        close_lease(state, id, now, "revoked", "WorkItem failed");
        work_mut(state, id, ev)?.ownership_lease_expires_at = None;
    }
    touch_work(work_mut(state, id, ev)?, now);
    touch_mission(state, &mission_id, now);
    Ok(())
}

/// `work.cancel`: MissionOwner or Coordinator; any unfinished state → `cancelled`.
pub fn decide_cancel(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let reason = r.text("reason");
    r.finish(&cmd.kind)?;
    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::owner_or_coordinator(g, mission, cmd, cx.now)?;
    let w = guards::work(cx.state, g, &work_id)?;
    // D-24: expectedRevision is compared wherever it is sent.
    guards::revision(cmd, w.revision)?;
    if w.is_terminal() {
        return Err(invalid_transition(w, "cancel"));
    }
    let cancelled = WorkClosed {
        work_item_id: w.id.clone(),
        reason,
        source_event_id: None,
    };
    Ok(vec![EventDraft::group(
        &w.group_id,
        CANCELLED,
        cancelled.to_object(),
    )])
}

pub fn apply_cancelled(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let WorkClosed {
        work_item_id,
        reason,
        ..
    } = WorkClosed::read(ev)?;
    let id = work_item_id.as_str();
    let now = ev.occurred_at;
    let w = work_mut(state, id, ev)?;
    w.status = WorkItemState::Cancelled;
    w.failure_reason = Some(reason);
    let mission_id = w.mission_id.clone();
    fence_owner(state, id, now);
    touch_work(work_mut(state, id, ev)?, now);
    touch_mission(state, &mission_id, now);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_ids_are_v4_shaped_and_deterministic() {
        let a = lease_id_for("sha256:00");
        let b = lease_id_for("sha256:00");
        let c = lease_id_for("sha256:01");
        assert_eq!(a, b);
        assert_ne!(a, c);
        let uuid = a.strip_prefix("lease:execution:").unwrap_or_default();
        let parts: Vec<&str> = uuid.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
        assert!(matches!(
            parts[3].chars().next(),
            Some('8' | '9' | 'a' | 'b')
        ));
        assert!(crate::id::check_id(&a).is_ok());
    }

    #[test]
    fn strip_strings_recurses() {
        let mut inner = Object::new();
        inner.insert(" k ", Value::string("  v "));
        let v = strip_strings(Value::Array(vec![Value::Object(inner), Value::from(3u64)]));
        assert_eq!(crate::json::to_string(&v), r#"[{"k":"v"},3]"#);
    }
}
