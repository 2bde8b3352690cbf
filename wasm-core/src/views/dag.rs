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
use crate::model::work_item::WorkItemState;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

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
            nodes.push(work_item_node(
                state,
                w,
                now,
                on_path.contains(w.id.as_str()),
            ));
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
        crate::order::sort_by(&mut children, |a, b| a.id.cmp(&b.id));
        for c in children {
            let state_ = c.status;
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
        crate::order::sort(&mut edges);
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

    /// `prev` — this Mission's DAG built from the state `old` — brought up to `state` at `now`,
    /// equal to [`DagView::build`]`(state, mission, now)` but recomputing only the nodes whose
    /// inputs changed: a live Event touches one WorkItem or a few, and "why not running" for
    /// 2,000 of them is most of a full build (issue 13: one live node update in 16 ms).
    ///
    /// A node's inputs are its WorkItem, its Execution Lease, its dependencies' states (so a
    /// changed WorkItem's dependents are recomputed too) and, shared by all, the Mission's state,
    /// the child Missions, the Group's Memberships, the Agent Cards, the Execution Approvals and
    /// the ledger accounts (§10.3, §11.3, §12); when a shared input changed, a WorkItem was added
    /// or removed, or a dependency or child-Mission link changed, this is a full build. When
    /// only `now` moved, the WorkItems whose reasons depend on the time (`active`: the Execution
    /// Lease; `queued`: the ownership lease and the Execution Approval; `offered`: the offer)
    /// are recomputed. The critical path is always computed again (it is cheap).
    pub fn rebuild(prev: &DagView, old: &State, state: &State, now: Micros) -> Option<DagView> {
        let full = || DagView::build(state, &prev.mission_id, now);
        let (Some(m_old), Some(m_new)) = (
            old.missions.get(&prev.mission_id),
            state.missions.get(&prev.mission_id),
        ) else {
            return full();
        };
        let shared_same = m_old.status == m_new.status
            && old.cards == state.cards
            && old.execution_approvals == state.execution_approvals
            && old.accounts == state.accounts
            && old.groups.get(&m_new.group_id).map(|g| &g.memberships)
                == state.groups.get(&m_new.group_id).map(|g| &g.memberships)
            && prev.nodes.iter().all(|n| match n.kind {
                NodeKind::ChildMission { .. } => {
                    old.missions.get(&n.id) == state.missions.get(&n.id)
                }
                NodeKind::WorkItem => true,
            });
        if !shared_same {
            return full();
        }
        let in_mission = |w: &&WorkItem| w.mission_id == m_new.id;
        let mut olds = old.work_items.values().filter(in_mission);
        let items: Vec<&WorkItem> = state.work_items.values().filter(in_mission).collect();
        let work_nodes = prev
            .nodes
            .iter()
            .take_while(|n| n.kind == NodeKind::WorkItem)
            .count();
        if items.len() != work_nodes {
            return full();
        }
        let time_moved = prev.now != now;
        let mut affected = vec![false; items.len()];
        for (i, w) in items.iter().enumerate() {
            let Some(o) = olds.next() else {
                return full();
            };
            if o.id != w.id || prev.nodes[i].id != w.id {
                return full();
            }
            // A linked child Mission is a node of its own and a reason of its parent's.
            if let Some(c) = &w.child_mission_id
                && old.missions.get(c) != state.missions.get(c)
            {
                return full();
            }
            let lease_changed = w
                .execution_lease_id
                .as_deref()
                .is_some_and(|l| old.leases.get(l) != state.leases.get(l));
            // An entry the fold did not touch is the same allocation in both states (persistent
            // tables, authority/table.rs): compared by address first.
            if (!std::ptr::eq(o, *w) && *o != **w) || lease_changed {
                if o.dependency_ids != w.dependency_ids || o.child_mission_id != w.child_mission_id
                {
                    return full();
                }
                affected[i] = true;
                // Its dependents read its state ("waiting for dependencies").
                let from = prev
                    .edges
                    .partition_point(|e| e.from.as_str() < w.id.as_str());
                for e in prev.edges[from..].iter().take_while(|e| e.from == w.id) {
                    if let Ok(j) = items.binary_search_by(|x| x.id.as_str().cmp(e.to.as_str())) {
                        affected[j] = true;
                    }
                }
            }
            if time_moved
                && matches!(
                    w.status,
                    WorkItemState::Active | WorkItemState::Queued | WorkItemState::Offered
                )
            {
                affected[i] = true;
            }
        }
        let critical_path = critical_path(&items);
        let on_path: BTreeSet<&str> = critical_path
            .work_item_ids
            .iter()
            .map(String::as_str)
            .collect();
        let mut nodes = prev.nodes.clone();
        for (i, w) in items.iter().enumerate() {
            if affected[i] {
                nodes[i] = work_item_node(state, w, now, false);
            }
            nodes[i].on_critical_path = on_path.contains(w.id.as_str());
        }
        Some(DagView {
            mission_id: prev.mission_id.clone(),
            now,
            nodes,
            edges: prev.edges.clone(),
            critical_path,
        })
    }
}

/// The node of WorkItem `w` at `now`.
fn work_item_node(state: &State, w: &WorkItem, now: Micros, on_critical_path: bool) -> DagNode {
    let why = why_not_running(state, w, now);
    let state_ = w.status;
    DagNode {
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
        on_critical_path,
    }
}

/// The weight of `w` on the critical path (see the module documentation).
pub fn weight(w: &WorkItem) -> u64 {
    w.contract
        .estimated_duration_seconds
        .unwrap_or(DEFAULT_WEIGHT_SECONDS)
}

/// The longest chain of unfinished WorkItems by weight; ties go to the smaller id, so the
/// answer is deterministic. Indices into the id-sorted items, not string-keyed maps: a DAG of
/// 2,000 WorkItems is rebuilt on every live Event.
pub fn critical_path(items: &[&WorkItem]) -> CriticalPath {
    let mut open: Vec<&WorkItem> = items.iter().copied().filter(|w| !w.is_terminal()).collect();
    crate::order::sort_by(&mut open, |a, b| a.id.cmp(&b.id));
    open.dedup_by(|a, b| a.id == b.id);
    let index: HashMap<&str, usize> = open
        .iter()
        .enumerate()
        .map(|(i, w)| (w.id.as_str(), i))
        .collect();
    let n = open.len();
    // Each WorkItem's unfinished dependencies (as indices, once each), and the reverse.
    let deps: Vec<Vec<usize>> = open
        .iter()
        .map(|w| {
            let mut d: Vec<usize> = w
                .dependency_ids
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect();
            d.sort_unstable();
            d.dedup();
            d
        })
        .collect();
    let mut indegree = vec![0usize; n];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, d) in deps.iter().enumerate() {
        for &j in d {
            indegree[i] += 1;
            dependents[j].push(i);
        }
    }
    // Kahn's order over the unfinished sub-graph (dependencies are acyclic, §10.4), the
    // smallest id first.
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&i| indegree[i] == 0).map(Reverse).collect();
    let mut best: Vec<Option<(u64, Option<usize>)>> = vec![None; n];
    while let Some(Reverse(i)) = ready.pop() {
        let mut from: (u64, Option<usize>) = (0, None);
        for &d in &deps[i] {
            if let Some((dist, _)) = best[d]
                && (dist > from.0 || (dist == from.0 && from.1.is_some_and(|f| d < f)))
            {
                from = (dist, Some(d));
            }
        }
        best[i] = Some((from.0.saturating_add(weight(open[i])), from.1));
        for &next in &dependents[i] {
            indegree[next] -= 1;
            if indegree[next] == 0 {
                ready.push(Reverse(next));
            }
        }
    }
    // The heaviest end; among equals the smallest id.
    let mut end: Option<(usize, u64)> = None;
    for (i, b) in best.iter().enumerate() {
        if let Some((dist, _)) = b
            && end.is_none_or(|(_, e)| *dist > e)
        {
            end = Some((i, *dist));
        }
    }
    let Some((end, total)) = end else {
        return CriticalPath::default();
    };
    let mut path = vec![open[end].id.clone()];
    let mut cur = best[end].and_then(|b| b.1);
    while let Some(c) = cur {
        path.push(open[c].id.clone());
        cur = best[c].and_then(|b| b.1);
    }
    path.reverse();
    CriticalPath {
        work_item_ids: path,
        weight_seconds: total,
    }
}

/// Why `w` is not running at `now`; empty when it runs. Every reason is a predicate the
/// authority's handlers enforce (module documentation).
pub fn why_not_running(state: &State, w: &WorkItem, now: Micros) -> Vec<WhyNotRunning> {
    let status = w.status;
    if status.is_terminal() {
        return vec![WhyNotRunning::Finished(status)];
    }
    let mut out = Vec::new();
    if let Some(m) = state.missions.get(&w.mission_id)
        && guards::active_mission(m).is_err()
    {
        out.push(WhyNotRunning::MissionNotActive(m.status));
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
