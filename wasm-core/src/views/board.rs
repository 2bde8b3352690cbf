//! The Mission board: every Mission the viewer may see ([`Viewer::sees`]) in the §7.1 state
//! columns, each card with its deadline, Coordinator, derived progress (§7.3: never a free
//! percentage), blockers, budget health and pending approvals; a pure filter over a query
//! struct; and the Mission tree (parent, children, follow-ups).
//!
//! **Progress** counts WorkItems: `accepted` = `verified` WorkItems (their Evidence accepted by
//! `work.accept_result`, or their child Mission approved), `total` = every WorkItem not
//! `cancelled`. Each WorkItem weighs 1, a WorkItem promoted to a child Mission included (the
//! child's own graph is its own board card). `submitted` WorkItems carrying Evidence awaiting
//! review are reported apart and are not progress.

use super::approvals::ApprovalInbox;
use super::{MissionState, Viewer, WorkState};
use crate::authority::clock::Micros;
use crate::authority::handlers::budget;
use crate::authority::projection::DIMENSIONS;
use crate::authority::state::State;
use crate::model::common::Actor;
use std::collections::BTreeMap;

/// Derived progress (module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// `verified` WorkItems.
    pub accepted: u64,
    /// WorkItems that are not `cancelled`.
    pub total: u64,
    /// `submitted` WorkItems, their Evidence not yet accepted.
    pub awaiting_review: u64,
    /// `failed` WorkItems (counted in `total`, never accepted).
    pub failed: u64,
}

impl Progress {
    /// `accepted / total` in per mille (0 when there is nothing to do yet), for a bar.
    pub fn per_mille(&self) -> u64 {
        (self.accepted * 1000).checked_div(self.total).unwrap_or(0)
    }
}

/// A WorkItem in the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocker {
    pub work_item_id: String,
    pub state: WorkState,
    /// The Worker's blocker text, a child-failure reason, or the failure reason.
    pub reason: Option<String>,
}

/// How one dimension of the Mission's account stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// The Mission grants nothing of it.
    NotGranted,
    Ok,
    /// 80 % or more used.
    Warning,
    /// Nothing left.
    Exhausted,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DimensionHealth {
    pub dimension: &'static str,
    pub used: u64,
    pub limit: Option<u64>,
    pub health: Health,
}

/// One card.
#[derive(Clone, Debug, PartialEq)]
pub struct MissionCard {
    pub mission_id: String,
    pub group_id: String,
    pub title: String,
    pub objective: String,
    pub state: MissionState,
    pub revision: u64,
    pub owner: Actor,
    pub coordinator_id: String,
    pub coordinator_lease_expires_at: Option<Micros>,
    pub deadline: Micros,
    pub overdue: bool,
    pub progress: Progress,
    pub blockers: Vec<Blocker>,
    pub budget: Vec<DimensionHealth>,
    pub pending_approvals: usize,
    pub parent_mission_id: Option<String>,
    pub follow_up_of_mission_id: Option<String>,
    pub archived: bool,
}

/// A Mission tree node: the Mission and its children and follow-ups, recursively.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeNode {
    pub mission_id: String,
    pub children: Vec<TreeNode>,
    pub follow_ups: Vec<TreeNode>,
}

/// The board.
#[derive(Clone, Debug, PartialEq)]
pub struct MissionBoard {
    /// One column per §7.1 state, in [`MissionState::ALL`] order; cards by deadline, then id.
    pub columns: Vec<(MissionState, Vec<MissionCard>)>,
    /// The visible Missions whose parent or source Mission is not visible (or absent).
    pub roots: Vec<TreeNode>,
}

/// Board filter and search (pure: [`MissionBoard::filter`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoardQuery {
    /// Case-insensitive substring of the title, objective or id.
    pub text: Option<String>,
    /// Only these states (all when empty).
    pub states: Vec<MissionState>,
    pub coordinator_id: Option<String>,
    pub owner_id: Option<String>,
    pub deadline_before: Option<Micros>,
    pub with_pending_approvals: bool,
    pub with_blockers: bool,
    pub overdue: bool,
}

impl MissionBoard {
    /// The board `viewer` sees at `now`; `inbox` gives the pending approvals per Mission.
    pub fn build(
        state: &State,
        viewer: &Viewer,
        inbox: &ApprovalInbox,
        now: Micros,
    ) -> MissionBoard {
        let mut cols: BTreeMap<MissionState, Vec<MissionCard>> = BTreeMap::new();
        let mut visible = Vec::new();
        for m in state.missions.values().filter(|m| viewer.sees(state, m)) {
            let ms = m.status;
            visible.push(m.id.clone());
            let mut progress = Progress::default();
            let mut blockers = Vec::new();
            for w in state.work_items.values().filter(|w| w.mission_id == m.id) {
                let ws = w.status;
                if ws != WorkState::Cancelled {
                    progress.total += 1;
                }
                match ws {
                    WorkState::Verified => progress.accepted += 1,
                    WorkState::Submitted => progress.awaiting_review += 1,
                    WorkState::Failed => progress.failed += 1,
                    _ => {}
                }
                if matches!(ws, WorkState::Blocked | WorkState::Failed) {
                    blockers.push(Blocker {
                        work_item_id: w.id.clone(),
                        state: ws,
                        reason: w.blocker.clone().or_else(|| w.failure_reason.clone()),
                    });
                }
            }
            let used = state.accounts.get(&m.id).map(|a| a.total).unwrap_or([0; 6]);
            let exhausted: Vec<bool> = (0..6)
                .map(|i| budget::unit_charge(state, &m.id, i).is_err())
                .collect();
            let budget = DIMENSIONS
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let limit = m.budget.get(i);
                    let health = match limit {
                        // Granted as 0 and unused: nothing of it is granted, not "exhausted"
                        // (a child Mission allowed no external side effects is healthy).
                        None => Health::NotGranted,
                        Some(0) if used[i] == 0 => Health::NotGranted,
                        Some(_) if exhausted[i] => Health::Exhausted,
                        Some(l) if used[i].saturating_mul(10) >= l.saturating_mul(8) => {
                            Health::Warning
                        }
                        Some(_) => Health::Ok,
                    };
                    DimensionHealth {
                        dimension: d,
                        used: used[i],
                        limit,
                        health,
                    }
                })
                .collect();
            cols.entry(ms).or_default().push(MissionCard {
                mission_id: m.id.clone(),
                group_id: m.group_id.clone(),
                title: m.title.clone(),
                objective: m.objective.clone(),
                state: ms,
                revision: m.revision,
                owner: m.owner.clone(),
                coordinator_id: m.coordinator_id.clone(),
                coordinator_lease_expires_at: m.coordinator_lease_expires_at,
                deadline: m.deadline,
                overdue: !m.is_terminal() && m.deadline <= now,
                progress,
                blockers,
                budget,
                pending_approvals: inbox.items.iter().filter(|i| i.mission_id == m.id).count(),
                parent_mission_id: m.parent_mission_id.clone(),
                follow_up_of_mission_id: m.follow_up_of_mission_id.clone(),
                archived: state
                    .groups
                    .get(&m.group_id)
                    .is_some_and(|g| g.group.archived_at.is_some()),
            });
        }
        let columns = MissionState::ALL
            .iter()
            .copied()
            .map(|s| {
                let mut cards = cols.remove(&s).unwrap_or_default();
                crate::order::sort_by(&mut cards, |a, b| {
                    a.deadline
                        .cmp(&b.deadline)
                        .then_with(|| a.mission_id.cmp(&b.mission_id))
                });
                (s, cards)
            })
            .collect();
        MissionBoard {
            columns,
            roots: tree(state, &visible),
        }
    }

    /// Every card, column by column.
    pub fn cards(&self) -> impl Iterator<Item = &MissionCard> {
        self.columns.iter().flat_map(|(_, c)| c.iter())
    }

    pub fn card(&self, mission_id: &str) -> Option<&MissionCard> {
        self.cards().find(|c| c.mission_id == mission_id)
    }

    /// The cards matching `q`, in board order.
    pub fn filter(&self, q: &BoardQuery) -> Vec<&MissionCard> {
        let text = q.text.as_ref().map(|t| t.to_lowercase());
        self.cards()
            .filter(|c| q.states.is_empty() || q.states.contains(&c.state))
            .filter(|c| {
                text.as_ref().is_none_or(|t| {
                    [&c.title, &c.objective, &c.mission_id]
                        .iter()
                        .any(|f| f.to_lowercase().contains(t.as_str()))
                })
            })
            .filter(|c| {
                q.coordinator_id
                    .as_ref()
                    .is_none_or(|id| *id == c.coordinator_id)
            })
            .filter(|c| q.owner_id.as_ref().is_none_or(|id| *id == c.owner.id.0))
            .filter(|c| q.deadline_before.is_none_or(|t| c.deadline < t))
            .filter(|c| !q.with_pending_approvals || c.pending_approvals > 0)
            .filter(|c| !q.with_blockers || !c.blockers.is_empty())
            .filter(|c| !q.overdue || c.overdue)
            .collect()
    }
}

/// The Mission tree over the visible Missions: children by `parentMissionId`, follow-ups by
/// `followUpOfMissionId`, in id order.
fn tree(state: &State, visible: &[String]) -> Vec<TreeNode> {
    let shown = |id: &Option<String>| id.as_ref().is_some_and(|p| visible.contains(p));
    fn node(state: &State, visible: &[String], id: &str, depth: usize) -> TreeNode {
        let mut children = Vec::new();
        let mut follow_ups = Vec::new();
        if depth < 64 {
            for m in state.missions.values().filter(|m| visible.contains(&m.id)) {
                if m.parent_mission_id.as_deref() == Some(id) {
                    children.push(node(state, visible, &m.id, depth + 1));
                } else if m.follow_up_of_mission_id.as_deref() == Some(id) {
                    follow_ups.push(node(state, visible, &m.id, depth + 1));
                }
            }
        }
        TreeNode {
            mission_id: id.to_owned(),
            children,
            follow_ups,
        }
    }
    visible
        .iter()
        .filter_map(|id| state.missions.get(id))
        .filter(|m| !shown(&m.parent_mission_id) && !shown(&m.follow_up_of_mission_id))
        .map(|m| node(state, visible, &m.id, 0))
        .collect()
}
