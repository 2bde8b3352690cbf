//! The Budget Ledger view (§12): for a Mission and every account below it (its WorkItems,
//! sub-WorkItems and child Missions, `State.accounts`), the six dimensions
//! ([`DIMENSIONS`]) with what is allocated, used and remaining, and the effective limit the
//! ancestors leave; usage over time from the usage Events (an SVG burn-down) with a projected
//! exhaustion; and the `BUDGET_EXCEEDED` rejections the client saw.
//!
//! Remaining and effective limit come from [`budget::headroom`] (the ledger's own
//! [`budget::check_charge`] of an empty delta): `remaining` is the least headroom over the
//! account and all its ancestors, `effective_limit = used + remaining`, so an account whose
//! own limit is 1 000 under a parent with 300 left shows an effective limit of `used + 300`.
//!
//! **Projected exhaustion** is linear from the recent rate: over the last
//! [`RECENT_POINTS`] points of the account's series (the opening zero point included while
//! there are fewer), `rate = Δusage / Δtime`; exhaustion is at `last time + remaining / rate`.
//! No recent usage, or no time elapsed, gives no projection.

pub mod chart;

use super::SeenRejection;
use crate::authority::clock::Micros;
use crate::authority::evolve;
use crate::authority::handlers::budget;
use crate::authority::projection::{DIMENSIONS, ResourceUsage};
use crate::authority::state::State;
use crate::json::Value;
use crate::model::error::ErrorCode;

/// How many recent points the exhaustion projection uses.
pub const RECENT_POINTS: usize = 5;

/// What an account is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccountKind {
    Mission,
    WorkItem,
}

/// One dimension of one account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figure {
    pub dimension: &'static str,
    /// The account's own limit (`None`: it grants nothing).
    pub allocated: Option<u64>,
    /// The limits of its direct children together.
    pub allocated_to_children: u64,
    /// This account and everything below it.
    pub used: u64,
    /// Charged to this account itself.
    pub used_directly: u64,
    /// The least headroom over the account and its ancestors (`None`: not granted).
    pub remaining: Option<u64>,
    /// `used + remaining`: the limit in force once the ancestors are counted.
    pub effective_limit: Option<u64>,
}

/// One account line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountLine {
    pub account_id: String,
    /// What a person reads first: the Mission's title or the WorkItem's goal (empty when the
    /// account has neither in the state).
    pub title: String,
    pub kind: AccountKind,
    pub parent: Option<String>,
    /// 0 for the Mission itself.
    pub depth: usize,
    pub figures: Vec<Figure>,
}

/// A point of the burn-down: cumulative usage after an Event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsagePoint {
    pub at: Micros,
    pub cumulative: [u64; 6],
}

/// The projected exhaustion of one dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forecast {
    NotGranted,
    /// Nothing left now.
    Exhausted,
    /// No recent usage: no projection.
    Steady,
    /// The Mission is finished (approved, failed, cancelled, terminated): it uses nothing
    /// more, so nothing is projected from the rate it had while it ran.
    Finished,
    At(Micros),
}

/// One `BUDGET_EXCEEDED` rejection, as the client saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetRejection {
    pub at: Micros,
    pub actor_id: String,
    pub command_kind: String,
    pub work_item_id: Option<String>,
    pub dimension: Option<String>,
    pub account: Option<String>,
    pub message: String,
}

/// The ledger of one Mission.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerView {
    pub mission_id: String,
    /// The Mission's deadline: the burn-down says whether exhaustion falls before it.
    pub deadline: Micros,
    /// The Mission's account first, then the tree below it depth first in allocation order.
    pub accounts: Vec<AccountLine>,
    /// The Mission account's burn-down (an opening zero point at the Mission's creation).
    pub series: Vec<UsagePoint>,
    /// Per dimension, in [`DIMENSIONS`] order.
    pub forecast: Vec<(&'static str, Forecast)>,
    pub rejections: Vec<BudgetRejection>,
}

impl LedgerView {
    /// The ledger of `mission_id` from `state` and the `events` that built it; `seen` are
    /// the rejections the client saw (only `BUDGET_EXCEEDED` ones of this Mission are listed).
    pub fn build(
        state: &State,
        mission_id: &str,
        events: &[Value],
        seen: &[SeenRejection],
    ) -> Option<LedgerView> {
        let mission = state.missions.get(mission_id)?;
        let mut accounts = Vec::new();
        let mut stack = vec![(mission_id.to_owned(), 0usize)];
        while let Some((id, depth)) = stack.pop() {
            let Some(line) = account_line(state, &id, depth) else {
                continue;
            };
            if let Some(a) = state.accounts.get(&id) {
                for c in a.children.iter().rev() {
                    stack.push((c.clone(), depth + 1));
                }
            }
            accounts.push(line);
        }
        let series = usage_series(state, mission_id, mission.created_at, events);
        let forecast = forecast(state, mission_id, &series);
        let rejections = seen
            .iter()
            .filter(|r| r.rejection.code == ErrorCode::BudgetExceeded)
            .filter(|r| {
                r.group_id.as_deref() == Some(mission.group_id.as_str())
                    || r.work_item_id
                        .as_deref()
                        .and_then(|w| state.work_items.get(w))
                        .is_some_and(|w| w.mission_id == mission.id)
            })
            .map(|r| BudgetRejection {
                at: r.at,
                actor_id: r.actor.id.0.clone(),
                command_kind: r.command_kind.clone(),
                work_item_id: r
                    .work_item_id
                    .clone()
                    .or_else(|| r.detail("workItemId").map(str::to_owned)),
                dimension: r.detail("dimension").map(str::to_owned),
                account: r.detail("account").map(str::to_owned),
                message: r.rejection.message.clone(),
            })
            .collect();
        Some(LedgerView {
            mission_id: mission.id.clone(),
            deadline: mission.deadline,
            accounts,
            series,
            forecast,
            rejections,
        })
    }

    pub fn account(&self, id: &str) -> Option<&AccountLine> {
        self.accounts.iter().find(|a| a.account_id == id)
    }
}

/// The figures of account `id`.
pub fn account_line(state: &State, id: &str, depth: usize) -> Option<AccountLine> {
    let a = state.accounts.get(id)?;
    let (_, remaining) = budget::headroom(state, id).ok()?;
    let figures = DIMENSIONS
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let rem = remaining.get(i);
            Figure {
                dimension: d,
                allocated: a.limit.get(i),
                allocated_to_children: a
                    .children
                    .iter()
                    .filter_map(|c| state.accounts.get(c).and_then(|c| c.limit.get(i)))
                    .sum(),
                used: a.total[i],
                used_directly: a.direct[i],
                remaining: rem,
                effective_limit: rem.map(|r| a.total[i].saturating_add(r)),
            }
        })
        .collect();
    let (kind, title) = match (state.missions.get(id), state.work_items.get(id)) {
        (Some(m), _) => (AccountKind::Mission, m.title.clone()),
        (None, Some(w)) => (AccountKind::WorkItem, w.contract.goal.clone()),
        (None, None) => (AccountKind::WorkItem, String::new()),
    };
    Some(AccountLine {
        account_id: id.to_owned(),
        title,
        kind,
        parent: a.parent.clone(),
        depth,
        figures,
    })
}

/// The cumulative usage of `account` after each usage Event charged to it or below it, from
/// an opening zero point at `opened`, in time order (`occurredAt`; Events at the same time in
/// the order given): `events` may hold several Groups' logs one after the other — a Mission
/// and its child Mission in another Group —, which is not time order.
pub fn usage_series(
    state: &State,
    account: &str,
    opened: Micros,
    events: &[Value],
) -> Vec<UsagePoint> {
    let mut deltas: Vec<(Micros, [u64; 6])> = Vec::new();
    for e in events {
        let Ok(ev) = evolve::view(e) else { continue };
        if ev.kind != budget::USAGE_RECORDED {
            continue;
        }
        let Some(work) = ev.payload.get("workItemId").and_then(Value::as_str) else {
            continue;
        };
        if !budget::ancestry(state, work).iter().any(|a| a == account) {
            continue;
        }
        let Some(delta) = ev
            .payload
            .get("usageDelta")
            .and_then(|d| crate::model::from_value::<ResourceUsage>(d, false).ok())
        else {
            continue;
        };
        deltas.push((ev.occurred_at, delta.as_array()));
    }
    // Stable: Events of one instant keep their order.
    deltas.sort_by_key(|(at, _)| *at);
    let mut cumulative = [0u64; 6];
    let mut out = Vec::with_capacity(deltas.len() + 1);
    out.push(UsagePoint {
        at: opened,
        cumulative,
    });
    for (at, delta) in deltas {
        for (c, d) in cumulative.iter_mut().zip(delta) {
            *c = c.saturating_add(d);
        }
        out.push(UsagePoint { at, cumulative });
    }
    out
}

/// The projected exhaustion of each dimension of `account` (module documentation).
pub fn forecast(
    state: &State,
    account: &str,
    series: &[UsagePoint],
) -> Vec<(&'static str, Forecast)> {
    let remaining = budget::headroom(state, account).ok().map(|(_, r)| r);
    let recent = &series[series.len().saturating_sub(RECENT_POINTS)..];
    let finished = state.missions.get(account).is_some_and(|m| m.is_terminal());
    DIMENSIONS
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let rem = remaining.as_ref().and_then(|r| r.get(i));
            let f = match rem {
                None => Forecast::NotGranted,
                Some(0) => Forecast::Exhausted,
                Some(_) if finished => Forecast::Finished,
                Some(left) => match (recent.first(), recent.last()) {
                    (Some(a), Some(b)) if b.at > a.at && b.cumulative[i] > a.cumulative[i] => {
                        let used = u128::from(b.cumulative[i] - a.cumulative[i]);
                        let span = (b.at.0 - a.at.0) as u128;
                        let more = u128::from(left) * span / used;
                        Forecast::At(Micros(
                            b.at.0
                                .saturating_add(i64::try_from(more).unwrap_or(i64::MAX)),
                        ))
                    }
                    _ => Forecast::Steady,
                },
            };
            (*d, f)
        })
        .collect()
}
