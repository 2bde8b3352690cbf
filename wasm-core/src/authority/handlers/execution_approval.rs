//! Execution Approvals (§10.2 row "`queued` → `approval.grant_execution` → `queued`", §12;
//! payloads.md §6.31, §9.1).
//!
//! ```text
//! approval.grant_execution (human MissionOwner)
//!   WorkItem queued, owned, at the sent Ownership Epoch
//!   operations ⊆ Mission.permissions, resources ⊆ contract.allowedResources   (AUTH_FORBIDDEN)
//!   budget ⊆ contract.budget                                                   (BUDGET_EXCEEDED)
//!   expiry ≤ the ownership lease                                               (INVALID_COMMAND)
//!   ─▶ approval.execution.granted {approval}: stored; the WorkItem does not change. It satisfies
//!      the start gate of `work.start` for that WorkItem and Ownership Epoch until it expires
//!      (not consumed).
//! ```

use super::{Ctx, Decision};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::grants::ExecutionApprovalGranted;
use crate::authority::payload::Reader;
use crate::authority::projection::{ExecutionApproval, Mission, ResourceBudget};
use crate::authority::rejection::Rejection;
use crate::authority::state::{GroupState, State};
use crate::authority::{EventDraft, guards};
use crate::model::common::{Actor, ActorType};
use crate::model::error::ErrorCode;
use crate::model::work_item::WorkItemState;

pub const GRANTED: &str = "approval.execution.granted";

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        GRANTED => apply_granted(state, ev),
        _ => return None,
    })
}

/// Who may grant an Execution Approval (§12): the human MissionOwner, through an active
/// `mission_owner` Membership (**owner**).
pub fn execution_approver(g: &GroupState, mission: &Mission, who: &Actor) -> Result<(), Rejection> {
    if who.actor_type != ActorType::Human {
        return Err(Rejection::forbidden(
            "Execution Approval requires a human MissionOwner",
        ));
    }
    guards::owner_principal(g, mission, who)
}

fn sorted_unique(mut v: Vec<String>) -> Vec<String> {
    crate::order::sort(&mut v);
    v.dedup();
    v
}

/// `approval.grant_execution`: the human MissionOwner approves execution of one WorkItem by
/// its current owner.
pub fn decide_grant_execution(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let approval_id = r.id("approvalId");
    let work_id = r.id("workItemId");
    let epoch = r.int("ownershipEpoch", 1, crate::json::MAX_SAFE_INTEGER, None);
    let operations = r.ids("operations", 1);
    if operations
        .iter()
        .enumerate()
        .any(|(i, o)| operations[..i].contains(o))
    {
        r.error(
            "operations",
            "Execution Approval operations must be nonempty and unique",
        );
    }
    let resources = r.ids("resources", 0);
    let budget = r
        .nested("budget", false, ResourceBudget::read)
        .unwrap_or_default();
    let expires_in = r.int(
        "expiresInSeconds",
        1,
        super::work_exec::MAX_SECONDS,
        Some(300),
    );
    let comments = r.opt_string("comments");
    r.finish(&cmd.kind)?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    execution_approver(g, mission, &cmd.actor)?;
    guards::active_mission(mission)?;
    // D-24: an Approval compares expectedRevision with the Mission's revision when sent.
    guards::revision(cmd, mission.revision)?;
    let w = guards::work(cx.state, g, &work_id)?;
    if w.status != WorkItemState::Queued {
        return Err(Rejection::transition(format!(
            "cannot grant execution approval for a WorkItem that is {}",
            w.status
        ))
        .detail("workItemId", w.id.as_str()));
    }
    let Some(ownership_until) = w
        .ownership_lease_expires_at
        .filter(|_| w.assignee_id.is_some())
    else {
        return Err(Rejection::transition(
            "Execution Approval requires a current WorkItem owner",
        ));
    };
    if epoch != w.ownership_epoch {
        return Err(Rejection::new(
            ErrorCode::WorkStaleOwnership,
            "Execution Approval targets a stale ownership epoch",
        )
        .detail("currentOwnershipEpoch", w.ownership_epoch)
        .detail("receivedOwnershipEpoch", epoch));
    }
    guards::new_id(cx.state, "Execution Approval", &approval_id)?;
    // D-6: permission and resource scope failures are AUTH_FORBIDDEN, budget containment is
    // BUDGET_EXCEEDED, an approval outliving ownership is a deadline failure (INVALID_COMMAND).
    if let Some(op) = operations.iter().find(|o| !mission.permissions.contains(o)) {
        return Err(Rejection::forbidden(
            "Execution Approval operations exceed Mission permissions",
        )
        .detail("operation", op.as_str()));
    }
    if let Some(res) = resources
        .iter()
        .find(|x| !w.contract.allowed_resources.contains(x))
    {
        return Err(
            Rejection::forbidden("Execution Approval resources exceed the Work Contract")
                .detail("resource", res.as_str()),
        );
    }
    if let Err(dimension) = budget.within(&w.contract.budget) {
        return Err(Rejection::new(
            ErrorCode::BudgetExceeded,
            "Execution Approval budget exceeds the Work Contract",
        )
        .detail("dimension", dimension));
    }
    let expires_at = cx.now.plus_seconds(expires_in);
    if expires_at > ownership_until {
        return Err(
            Rejection::invalid("Execution Approval cannot outlive WorkItem ownership")
                .detail("expiresAt", expires_at.format())
                .detail("ownershipLeaseExpiresAt", ownership_until.format()),
        );
    }
    let approval = ExecutionApproval {
        approved_at: cx.now,
        approver: cmd.actor.clone(),
        budget,
        comments,
        expires_at,
        group_id: mission.group_id.clone(),
        id: approval_id,
        mission_id: mission.id.clone(),
        operations: sorted_unique(operations),
        ownership_epoch: w.ownership_epoch,
        resources: sorted_unique(resources),
        signature: cmd.signature_value.clone(),
        work_item_id: w.id.clone(),
    };
    Ok(vec![EventDraft::group(
        &g.group.id,
        GRANTED,
        ExecutionApprovalGranted { approval }.to_object(),
    )])
}

pub fn apply_granted(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let ExecutionApprovalGranted { approval } = ExecutionApprovalGranted::read(ev)?;
    state
        .execution_approvals
        .insert(approval.id.clone(), approval);
    Ok(())
}
