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
use crate::authority::evolve::EventView;
use crate::authority::projection::{DIMENSIONS, ResourceBudget, ResourceUsage};
use crate::authority::rejection::Rejection;
use crate::authority::state::{Account, State};
use crate::model::error::ErrorCode;

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
    if let Some(p) = parent.and_then(|p| state.accounts.get_mut(p)) {
        p.children.push(id.to_owned());
    }
    state.accounts.insert(
        id.to_owned(),
        Account {
            parent: parent.map(str::to_owned),
            limit,
            ..Account::default()
        },
    );
}

fn ancestry(state: &State, id: &str) -> Vec<String> {
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
        let a = &state.accounts[id];
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

pub fn decide(_cx: &Ctx) -> Option<Decision> {
    None
}

pub fn apply(_state: &mut State, _ev: &EventView) -> Option<Result<(), String>> {
    None
}
