//! The six-dimensional Budget Ledger (§12; payloads.md §8).
//!
//! Accounts form a tree: root Mission → WorkItems (→ sub-WorkItems) → child Missions → … In every
//! dimension separately: a `null` limit grants nothing; a child's limit fits in its parent's;
//! the direct children's limits together fit in the parent's; a usage charge is added to the
//! WorkItem and every ancestor at once, and any one overflow rejects the whole charge
//! (`BUDGET_EXCEEDED`, nothing applied).
//!
//! The Command `ext.missionweaveprotocol.core.resource_usage_record` is handled here too.

use super::{Ctx, Decision};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::budget::UsageRecorded;
use crate::authority::payload::Reader;
use crate::authority::projection::{DIMENSIONS, ResourceBudget, ResourceUsage};
use crate::authority::rejection::Rejection;
use crate::authority::state::{Account, State};
use crate::authority::{EventDraft, guards};
use crate::json::Object;
use crate::model::common::ActorType;
use crate::model::error::ErrorCode;
use crate::model::work_item::WorkItemState;

fn exceeded(message: String) -> Rejection {
    Rejection::new(ErrorCode::BudgetExceeded, message)
}

/// Whether an account `parent` can allocate `limit` to a new child (§8.2).
pub fn check_allocation(
    state: &State,
    parent: &str,
    limit: &ResourceBudget,
) -> Result<(), Rejection> {
    let p = state
        .accounts
        .get(parent)
        .ok_or_else(|| exceeded(format!("no ledger account {parent}")))?;
    for (i, name) in DIMENSIONS.iter().enumerate() {
        let Some(want) = limit.get(i) else { continue };
        let Some(cap) = p.limit.get(i) else {
            return Err(exceeded(format!(
                "{parent} grants no {name}, so a child cannot be allocated {want}"
            ))
            .detail("dimension", *name));
        };
        let allocated: u64 = p
            .children
            .iter()
            .filter_map(|c| state.accounts.get(c).and_then(|a| a.limit.get(i)))
            .sum();
        if want > cap || allocated.saturating_add(want) > cap {
            return Err(exceeded(format!(
                "{parent} allocation exceeds budget: {name} ({allocated} allocated + {want} > {cap})"
            ))
            .detail("dimension", *name));
        }
    }
    Ok(())
}

/// Opens account `id` (apply side). `parent` `None` is a root Mission.
pub fn open_account(state: &mut State, id: &str, parent: Option<&str>, limit: ResourceBudget) {
    if let Some(p) = parent {
        match state.accounts.get_mut(p) {
            Some(a) => a.children.push(id.to_owned()),
            None => state
                .orphan_accounts
                .entry(p.to_owned())
                .or_default()
                .push(id.to_owned()),
        }
    }
    state.accounts.insert(
        id.to_owned(),
        Account {
            parent: parent.map(str::to_owned),
            limit,
            ..Account::default()
        },
    );
    adopt_children(state, id);
}

/// Accounts opened before their parent: a child Mission's account lives in the child's Group,
/// its parent WorkItem's in the parent's. The authority opens the parent first (one total
/// order), so it never has any; a console following both Groups may fold the child's Group
/// first (§16 orders Events within a Group only). Such an account joins its parent when the
/// parent opens, its usage booked up the new chain, so either order gives one ledger.
fn adopt_children(state: &mut State, id: &str) {
    let Some(orphans) = state.orphan_accounts.remove(id) else {
        return;
    };
    let chain = ancestry(state, id);
    for child in orphans {
        let total = state.accounts.get(&child).map_or([0; 6], |a| a.total);
        if let Some(a) = state.accounts.get_mut(id) {
            a.children.push(child);
        }
        for acc in &chain {
            if let Some(a) = state.accounts.get_mut(acc) {
                for (i, add) in total.iter().enumerate() {
                    a.total[i] = a.total[i].saturating_add(*add);
                }
            }
        }
    }
}

/// `id` and its ancestor accounts, nearest first (the chain a charge books against, §12).
pub fn ancestry(state: &State, id: &str) -> Vec<String> {
    let mut chain = Vec::new();
    let mut cur = Some(id.to_owned());
    while let Some(c) = cur {
        if chain.contains(&c) {
            break;
        }
        cur = state.accounts.get(&c).and_then(|a| a.parent.clone());
        chain.push(c);
    }
    chain
}

/// Checks a usage charge against `account` and all its ancestors. Returns the account's total
/// after the charge and the remaining budget (the minimum over the ancestry; `null` where any
/// account grants nothing).
pub fn check_charge(
    state: &State,
    account: &str,
    delta: &ResourceUsage,
) -> Result<(ResourceUsage, ResourceBudget), Rejection> {
    let d = delta.as_array();
    let mut remaining: [Option<u64>; 6] = [Some(u64::MAX); 6];
    let chain = ancestry(state, account);
    if chain.is_empty() || !state.accounts.contains_key(account) {
        return Err(exceeded(format!("no ledger account {account}")));
    }
    for id in &chain {
        // An ancestor without an account (the authority opens parents first; a console may
        // fold a child Mission's Group before its parent's): nothing to check it against, so
        // no headroom can be stated — refused, never a panic or an unchecked charge.
        let Some(a) = state.accounts.get(id) else {
            return Err(exceeded(format!("no ledger account {id}")).detail("account", id.as_str()));
        };
        for (i, name) in DIMENSIONS.iter().enumerate() {
            let after = a.total[i].saturating_add(d[i]);
            match a.limit.get(i) {
                None if after > 0 => {
                    return Err(exceeded(format!(
                        "budget overflow for {id}: {name} (not granted)"
                    ))
                    .detail("account", id.as_str())
                    .detail("dimension", *name));
                }
                None => remaining[i] = None,
                Some(cap) if after > cap => {
                    return Err(exceeded(format!(
                        "budget overflow for {id}: {name} ({after} > {cap})"
                    ))
                    .detail("account", id.as_str())
                    .detail("dimension", *name));
                }
                Some(cap) => {
                    remaining[i] = remaining[i].map(|r| r.min(cap - after));
                }
            }
        }
    }
    let own = &state.accounts[account];
    let mut total = own.total;
    for (t, add) in total.iter_mut().zip(d) {
        *t = t.saturating_add(add);
    }
    let budget = ResourceBudget {
        financial_microunits: remaining[0],
        model_tokens: remaining[1],
        tool_calls: remaining[2],
        compute_seconds: remaining[3],
        wall_clock_seconds: remaining[4],
        external_actions: remaining[5],
    };
    Ok((ResourceUsage::from_array(total), budget))
}

/// What `account` can still take: its total and its remaining budget over the whole ancestry
/// (`null` where an account grants nothing). This is [`check_charge`] of an empty delta, so a
/// view shows exactly the headroom the ledger enforces (§12).
pub fn headroom(
    state: &State,
    account: &str,
) -> Result<(ResourceUsage, ResourceBudget), Rejection> {
    check_charge(state, account, &ResourceUsage::default())
}

/// Whether one more unit of dimension `i` can be charged to `account`; `Err` is the
/// `BUDGET_EXCEEDED` rejection the ledger would give (its details name the account and
/// dimension that bind).
pub fn unit_charge(state: &State, account: &str, i: usize) -> Result<(), Rejection> {
    let mut d = [0u64; 6];
    if let Some(x) = d.get_mut(i) {
        *x = 1;
    }
    check_charge(state, account, &ResourceUsage::from_array(d)).map(|_| ())
}

/// Books a charge (apply side): the account's direct and total usage, and every ancestor's
/// total, in one step.
pub fn apply_charge(state: &mut State, account: &str, delta: &ResourceUsage) {
    let d = delta.as_array();
    for id in ancestry(state, account) {
        if let Some(a) = state.accounts.get_mut(&id) {
            for (i, add) in d.iter().enumerate() {
                a.total[i] = a.total[i].saturating_add(*add);
                if id == account {
                    a.direct[i] = a.direct[i].saturating_add(*add);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `…core.resource_usage_record` (payloads.md §6.37; §12)
// ---------------------------------------------------------------------------------------------

pub const USAGE_RECORD: &str = "ext.missionweaveprotocol.core.resource_usage_record";
pub const USAGE_RECORDED: &str = "ext.missionweaveprotocol.core.resource_usage_recorded";

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        USAGE_RECORDED => apply_usage_recorded(state, ev),
        _ => return None,
    })
}

/// The payload of a `…resource_usage_recorded` Event charging `delta` to WorkItem `work_id`:
/// the ledger is checked over the WorkItem and its whole ancestry first (any one-dimension
/// overflow: `BUDGET_EXCEEDED`, nothing appended). `ownership_epoch` is the lease's (§6.37) or
/// the offline binding's (§9.3).
pub fn usage_payload(
    state: &State,
    work_id: &str,
    lease_id: &str,
    ownership_epoch: u64,
    delta: &ResourceUsage,
) -> Result<Object, Rejection> {
    let (cumulative, remaining) =
        check_charge(state, work_id, delta).map_err(|e| e.detail("workItemId", work_id))?;
    let recorded = UsageRecorded {
        work_item_id: work_id.to_owned(),
        execution_lease_id: lease_id.to_owned(),
        ownership_epoch,
        usage_delta: delta.clone(),
        cumulative_usage: cumulative,
        remaining_budget: remaining,
    };
    Ok(recorded.to_object())
}

/// `…core.resource_usage_record`: one atomic, six-dimensional charge to a WorkItem and every
/// ancestor account, by the owning Worker holding its current Execution Lease, or by an
/// Organization service (which may charge a closed lease).
pub fn decide_usage_record(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let p = cmd.payload_filled(true, false);
    let mut r = Reader::new(&p);
    let work_id = r.id("workItemId");
    let epoch = r.int("ownershipEpoch", 1, crate::json::MAX_SAFE_INTEGER, None);
    let lease_id = r.id("executionLeaseId");
    let delta = r.nested("usageDelta", true, ResourceUsage::read);
    if delta.as_ref().is_some_and(ResourceUsage::is_zero) {
        r.error(
            "usageDelta",
            "resource usage delta must consume at least one dimension",
        );
    }
    r.finish(&cmd.kind)?;
    let delta = delta.ok_or_else(|| Rejection::invalid("usageDelta is required"))?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    let w = guards::work(cx.state, g, &work_id)?;
    // D-24: expectedRevision is compared wherever it is sent (the reference ignores it).
    guards::revision(cmd, w.revision)?;
    let lease = cx.state.leases.get(&lease_id).ok_or_else(|| {
        Rejection::new(
            ErrorCode::WorkLeaseExpired,
            "Execution Lease does not exist",
        )
        .detail("executionLeaseId", lease_id.as_str())
    })?;
    if lease.mission_id != mission.id || lease.group_id != g.group.id || lease.work_item_id != w.id
    {
        return Err(Rejection::forbidden(
            "Execution Lease belongs to another scope",
        ));
    }
    if lease.ownership_epoch != epoch {
        return Err(Rejection::new(
            ErrorCode::WorkStaleOwnership,
            "Execution Lease carries a stale ownership epoch",
        )
        .detail("currentOwnershipEpoch", w.ownership_epoch)
        .detail("leaseOwnershipEpoch", lease.ownership_epoch)
        .detail("receivedOwnershipEpoch", epoch));
    }
    match cmd.actor.actor_type {
        ActorType::Agent => {
            guards::work_owner(w, cmd, epoch, cx.now)?;
            if w.status != WorkItemState::Active {
                return Err(Rejection::transition(format!(
                    "cannot record resource usage for a WorkItem that is {}",
                    w.status
                ))
                .detail("workItemId", w.id.as_str()));
            }
            guards::exec_lease(cx.state, w, cmd, &lease_id, cx.now)?;
        }
        ActorType::Service => {}
        _ => {
            return Err(Rejection::forbidden(
                "resource usage is recorded by the owning Worker or an Organization service",
            ));
        }
    }
    let body = usage_payload(
        cx.state,
        &w.id,
        &lease.lease_id,
        lease.ownership_epoch,
        &delta,
    )?;
    Ok(vec![EventDraft::group(&g.group.id, USAGE_RECORDED, body)])
}

/// Books the recorded delta on the WorkItem and its ancestry (the charge was checked when the
/// Event was decided).
pub fn apply_usage_recorded(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let UsageRecorded {
        work_item_id,
        usage_delta: delta,
        ..
    } = UsageRecorded::read(ev)?;
    let work_id = work_item_id.as_str();
    if !state.accounts.contains_key(work_id) {
        return Err(ApplyError::unknown(ev, "ledger account", work_id));
    }
    apply_charge(state, work_id, &delta);
    Ok(())
}
