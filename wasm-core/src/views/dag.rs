//! The WorkItem DAG of one Mission (§10.4, §14): WorkItem nodes joined by dependency edges, a
//! node for each linked child Mission, and for every node its state, owner, Ownership Epoch,
//! lease expiries (the UI counts down from them) and **why it is not running**.
//!
//! "Why not running" asks the authority's own predicates, so the console cannot disagree with
//! the reducer: [`work_plan::dependencies_verified`] (the `work.start` dependency gate),
//! [`work_exec::execution_approval_required`] and [`work_exec::current_execution_approval`]
//! (the Execution Approval gate, §12), [`guards::ownership_lease_live`],
//! [`guards::execution_lease_live`] and [`work_plan::is_live_owner`] (leases, §10.3, §11.3),
//! [`work_plan::offer_candidate`] (who `work.offer` admits: the capability check) and
//! [`budget::unit_charge`] (whether the ledger takes one more unit of a dimension, §12).
//!
//! The critical path is the longest chain of unfinished (non-terminal) WorkItems along
//! dependency edges, each weighing its contract's `estimatedDurationSeconds`, or
//! [`DEFAULT_WEIGHT_SECONDS`] when the contract gives none.

use super::{MissionState, WorkState};
use crate::authority::clock::Micros;
use crate::authority::guards;
use crate::authority::handlers::{budget, work_exec, work_plan};
use crate::authority::projection::{CapabilityRequirement, DIMENSIONS, WorkItem};
use crate::authority::state::State;
use crate::json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The weight of a WorkItem on the critical path when its contract has no
/// `estimatedDurationSeconds`: one hour.
pub const DEFAULT_WEIGHT_SECONDS: u64 = 3_600;

/// A node's state: a WorkItem's (§10.2) or a child Mission's (§7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeState {
    Work(WorkState),
    Mission(MissionState),
}

impl NodeState {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Work(s) => s.as_str(),
            NodeState::Mission(s) => s.as_str(),
        }
    }
}

/// What a node stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    WorkItem,
    /// A child Mission linked from its parent WorkItem (§14); the UI navigates into it.
    ChildMission {
        group_id: String,
    },
}

/// Which lease is in the way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseProblem {
    /// The owner's ownership lease ran out at this time (**work-owner** would refuse it).
    OwnershipExpired { at: Micros },
    /// No owner holds the WorkItem (it waits to be offered again).
    NoOwner,
    /// The Execution Lease ran out at this time (**exec-lease** would refuse it).
    ExecutionExpired { at: Micros },
    /// An `active` WorkItem projects no Execution Lease.
    NoExecutionLease,
    /// The offer expired at this time; an acceptance gets `WORK_OFFER_EXPIRED`.
    OfferExpired { at: Micros },
}

/// Why a WorkItem is not running, derived from the state with the handlers' predicates.
#[derive(Clone, Debug, PartialEq)]
pub enum WhyNotRunning {
    /// Terminal: `verified`, `failed` or `cancelled`.
    Finished(WorkState),
    /// The Mission is not `active`, so no work transition is accepted (**active-mission**).
    MissionNotActive(MissionState),
    /// These dependencies are not `verified` (the `work.start` gate, §10.4).
    Dependencies(Vec<String>),
    /// The ledger takes no more of this dimension; `account` is the account that binds (§12).
    Budget {
        dimension: &'static str,
        account: String,
    },
    /// The contract requires an Execution Approval and none is current for this Ownership
    /// Epoch (`APPROVAL_REQUIRED`, §12).
    Approval {
        execution_approval: String,
    },
    Lease(LeaseProblem),
    /// No Agent of the Group can be offered the WorkItem: none has a Membership with the
    /// `worker` role and an Agent Card meeting these capability versions (§10.3).
    Capability {
        requirements: Vec<CapabilityRequirement>,
    },
    /// `open`, nothing else in the way: it waits for the Coordinator's offer.
    NotOffered,
    /// `offered`: it waits for one of these candidates to accept.
    AwaitingAcceptance {
        candidates: Vec<String>,
    },
    /// `queued`, every gate satisfied: it waits for its owner's `work.start`.
    ReadyToStart,
    /// `blocked` by the Worker or by a failed child Mission.
    Blocked {
        blocker: Option<String>,
    },
    /// `blocked` while its linked child Mission runs (§14).
    ChildMission {
        mission_id: String,
    },
    /// `submitted`: it waits for the Coordinator's review.
    AwaitingReview,
}

/// One node of the DAG.
#[derive(Clone, Debug, PartialEq)]
pub struct DagNode {
    /// The WorkItem id, or the child Mission id.
    pub id: String,
    pub kind: NodeKind,
    /// The contract's goal, or the child Mission's title.
    pub title: String,
    pub state: NodeState,
    /// The owning Agent (WorkItem) or the Coordinator (child Mission).
    pub owner: Option<String>,
    pub ownership_epoch: u64,
    pub ownership_lease_expires_at: Option<Micros>,
    pub execution_lease_expires_at: Option<Micros>,
    pub offer_expires_at: Option<Micros>,
    pub deadline: Micros,
    /// Empty exactly when `running`.
    pub why_not_running: Vec<WhyNotRunning>,
    /// `active` with a live Execution Lease and nothing in the way.
    pub running: bool,
    pub on_critical_path: bool,
}

/// An edge, drawn from `from` (above) to `to` (below).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdgeKind {
    /// `from` is a dependency of `to`.
    Dependency,
    /// `to` is the child Mission of WorkItem `from`.
    ChildMission,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DagEdge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

/// The longest chain of unfinished WorkItems, first to last.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CriticalPath {
    pub work_item_ids: Vec<String>,
    /// The sum of the weights (seconds).
    pub weight_seconds: u64,
}

/// A Mission's WorkItem graph at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct DagView {
    pub mission_id: String,
    pub now: Micros,
    /// WorkItems in id order, then child Missions in id order.
    pub nodes: Vec<DagNode>,
    /// Sorted.
    pub edges: Vec<DagEdge>,
    pub critical_path: CriticalPath,
}

impl DagView {
    /// The DAG of `mission_id` at `now`; `None` for an unknown Mission.
    pub fn build(state: &State, mission_id: &str, now: Micros) -> Option<DagView> {
        let mission = state.missions.get(mission_id)?;
        let items: Vec<&WorkItem> = state
            .work_items
            .values()
            .filter(|w| w.mission_id == mission.id)
            .collect();
        let critical_path = critical_path(&items);
        let on_path: BTreeSet<&str> = critical_path
            .work_item_ids
            .iter()
            .map(String::as_str)
            .collect();
        let mut nodes = Vec::with_capacity(items.len());
        let mut children = Vec::new();
        let mut edges = Vec::new();
        for w in &items {
            let why = why_not_running(state, w, now);
            let state_ = WorkState::parse(&w.status).unwrap_or(WorkState::Open);
            nodes.push(DagNode {
                id: w.id.clone(),
                kind: NodeKind::WorkItem,
                title: w.contract.goal.clone(),
                state: NodeState::Work(state_),
                owner: w.assignee_id.clone(),
                ownership_epoch: w.ownership_epoch,
                ownership_lease_expires_at: w.ownership_lease_expires_at,
                execution_lease_expires_at: w.execution_lease_expires_at,
                offer_expires_at: w.offer_expires_at,
                deadline: w.contract.deadline,
                running: why.is_empty(),
                why_not_running: why,
                on_critical_path: on_path.contains(w.id.as_str()),
            });
            for d in &w.dependency_ids {
                edges.push(DagEdge {
                    from: d.clone(),
                    to: w.id.clone(),
                    kind: EdgeKind::Dependency,
                });
            }
            if let Some(child) = w
                .child_mission_id
                .as_deref()
                .and_then(|c| state.missions.get(c))
            {
                edges.push(DagEdge {
                    from: w.id.clone(),
                    to: child.id.clone(),
                    kind: EdgeKind::ChildMission,
                });
                children.push(child);
            }
        }
        children.sort_by(|a, b| a.id.cmp(&b.id));
        for c in children {
            let state_ = MissionState::parse(&c.status).unwrap_or(MissionState::Active);
            nodes.push(DagNode {
                id: c.id.clone(),
                kind: NodeKind::ChildMission {
                    group_id: c.group_id.clone(),
                },
                title: c.title.clone(),
                state: NodeState::Mission(state_),
                owner: Some(c.coordinator_id.clone()),
                ownership_epoch: c.coordinator_epoch,
                ownership_lease_expires_at: c.coordinator_lease_expires_at,
                execution_lease_expires_at: None,
                offer_expires_at: None,
                deadline: c.deadline,
                why_not_running: Vec::new(),
                running: state_ == MissionState::Active,
                on_critical_path: false,
            });
        }
        // Only edges between nodes of this graph (a dependency is always in the same Mission).
        let ids: BTreeSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        edges.retain(|e| ids.contains(e.from.as_str()) && ids.contains(e.to.as_str()));
        edges.sort();
        edges.dedup();
        Some(DagView {
            mission_id: mission.id.clone(),
            now,
            nodes,
            edges,
            critical_path,
        })
    }

    pub fn node(&self, id: &str) -> Option<&DagNode> {
        self.nodes.iter().find(|n| n.id == id)
    }
}

/// The weight of `w` on the critical path (see the module documentation).
pub fn weight(w: &WorkItem) -> u64 {
    w.contract
        .estimated_duration_seconds
        .unwrap_or(DEFAULT_WEIGHT_SECONDS)
}

/// The longest chain of unfinished WorkItems by weight; ties go to the smaller id, so the
/// answer is deterministic.
pub fn critical_path(items: &[&WorkItem]) -> CriticalPath {
    let open: BTreeMap<&str, &WorkItem> = items
        .iter()
        .filter(|w| !w.is_terminal())
        .map(|w| (w.id.as_str(), *w))
        .collect();
    // Kahn's order over the unfinished sub-graph (dependencies are acyclic, §10.4).
    let mut indegree: BTreeMap<&str, usize> = open.keys().map(|k| (*k, 0)).collect();
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for w in open.values() {
        for d in &w.dependency_ids {
            if open.contains_key(d.as_str()) {
                *indegree.entry(w.id.as_str()).or_default() += 1;
                dependents
                    .entry(d.as_str())
                    .or_default()
                    .push(w.id.as_str());
            }
        }
    }
    let mut ready: BTreeSet<&str> = indegree
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(k, _)| *k)
        .collect();
    let mut best: BTreeMap<&str, (u64, Option<&str>)> = BTreeMap::new();
    while let Some(id) = ready.pop_first() {
        let Some(w) = open.get(id) else { continue };
        let mut from: (u64, Option<&str>) = (0, None);
        for d in &w.dependency_ids {
            if let Some((dist, _)) = best.get(d.as_str())
                && (*dist > from.0 || (*dist == from.0 && from.1.is_some_and(|f| d.as_str() < f)))
            {
                from = (*dist, Some(d.as_str()));
            }
        }
        best.insert(id, (from.0.saturating_add(weight(w)), from.1));
        for next in dependents.get(id).into_iter().flatten() {
            if let Some(n) = indegree.get_mut(next) {
                *n -= 1;
                if *n == 0 {
                    ready.insert(next);
                }
            }
        }
    }
    let Some((end, (total, _))) = best
        .iter()
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then_with(|| b.0.cmp(a.0)))
    else {
        return CriticalPath::default();
    };
    let mut path = vec![(*end).to_owned()];
    let mut cur = best.get(end).and_then(|b| b.1);
    while let Some(c) = cur {
        path.push(c.to_owned());
        cur = best.get(c).and_then(|b| b.1);
    }
    path.reverse();
    CriticalPath {
        work_item_ids: path,
        weight_seconds: *total,
    }
}

/// Why `w` is not running at `now`; empty when it runs. Every reason is a predicate the
/// authority's handlers enforce (module documentation).
pub fn why_not_running(state: &State, w: &WorkItem, now: Micros) -> Vec<WhyNotRunning> {
    let Some(status) = WorkState::parse(&w.status) else {
        return Vec::new();
    };
    if status.is_terminal() {
        return vec![WhyNotRunning::Finished(status)];
    }
    let mut out = Vec::new();
    if let Some(m) = state.missions.get(&w.mission_id)
        && guards::active_mission(m).is_err()
        && let Some(ms) = MissionState::parse(&m.status)
    {
        out.push(WhyNotRunning::MissionNotActive(ms));
    }
    match status {
        WorkState::Active => {
            match w
                .execution_lease_id
                .as_deref()
                .and_then(|l| state.leases.get(l))
            {
                None => out.push(WhyNotRunning::Lease(LeaseProblem::NoExecutionLease)),
                Some(l) if !guards::execution_lease_live(l, now) => {
                    out.push(WhyNotRunning::Lease(LeaseProblem::ExecutionExpired {
                        at: l.expires_at,
                    }));
                }
                Some(_) => {}
            }
        }
        WorkState::Submitted => out.push(WhyNotRunning::AwaitingReview),
        WorkState::Blocked => match w
            .child_mission_id
            .as_deref()
            .and_then(|c| state.missions.get(c))
            .filter(|c| !c.is_terminal())
        {
            Some(child) => out.push(WhyNotRunning::ChildMission {
                mission_id: child.id.clone(),
            }),
            None => out.push(WhyNotRunning::Blocked {
                blocker: w.blocker.clone(),
            }),
        },
        WorkState::Open | WorkState::Offered | WorkState::Queued => {
            if let Err(pending) = work_plan::dependencies_verified(state, w) {
                out.push(WhyNotRunning::Dependencies(pending));
            }
            if status == WorkState::Queued {
                if w.assignee_id.is_none() {
                    out.push(WhyNotRunning::Lease(LeaseProblem::NoOwner));
                } else if !work_plan::is_live_owner(w, now)
                    && let Some(at) = w.ownership_lease_expires_at
                {
                    out.push(WhyNotRunning::Lease(LeaseProblem::OwnershipExpired { at }));
                }
                if work_exec::execution_approval_required(w)
                    && work_exec::current_execution_approval(state, w, now).is_none()
                {
                    out.push(WhyNotRunning::Approval {
                        execution_approval: w.contract.execution_approval.clone(),
                    });
                }
            }
            let offer_live = w.offer_expires_at.is_some_and(|t| t > now);
            // A live offer already has its candidates; one that must be offered (again) needs
            // an Agent that `work.offer` would admit.
            let needs_offer = status == WorkState::Open || !offer_live;
            if status != WorkState::Queued && needs_offer {
                let eligible = state.groups.get(&w.group_id).is_some_and(|g| {
                    g.memberships
                        .keys()
                        .any(|a| work_plan::offer_candidate(state, g, a, w).is_ok())
                });
                if !eligible {
                    out.push(WhyNotRunning::Capability {
                        requirements: w.contract.required_capabilities.clone(),
                    });
                }
            }
            if status == WorkState::Offered {
                match w.offer_expires_at {
                    Some(at) if !offer_live => {
                        out.push(WhyNotRunning::Lease(LeaseProblem::OfferExpired { at }));
                    }
                    _ => out.push(WhyNotRunning::AwaitingAcceptance {
                        candidates: w.offered_agent_ids.clone(),
                    }),
                }
            }
        }
        WorkState::Verified | WorkState::Failed | WorkState::Cancelled => {}
    }
    // Budget: a dimension the contract grants that the ledger will not take one more unit of
    // (exhaustion pauses work that could otherwise run, §12).
    let can_run = matches!(
        status,
        WorkState::Open | WorkState::Offered | WorkState::Queued | WorkState::Active
    );
    if can_run && let Some(account) = state.accounts.get(&w.id) {
        for (i, dimension) in DIMENSIONS.iter().enumerate() {
            if account.limit.get(i).is_some_and(|cap| cap > 0)
                && let Err(r) = budget::unit_charge(state, &w.id, i)
            {
                out.push(WhyNotRunning::Budget {
                    dimension,
                    account: r
                        .details
                        .get("account")
                        .and_then(Value::as_str)
                        .unwrap_or(w.id.as_str())
                        .to_owned(),
                });
            }
        }
    }
    if out.is_empty() {
        match status {
            WorkState::Open => out.push(WhyNotRunning::NotOffered),
            WorkState::Queued => out.push(WhyNotRunning::ReadyToStart),
            _ => {}
        }
    }
    out
}
