//! Planning WorkItems: proposals, authorization, offers, acceptance and dependency insertion
//! (§9, §9.1, §10, §10.3, §10.4, §12; payloads.md §6.18–§6.21, §6.35).
//!
//! The §10.2 rows enforced below:
//!
//! | Current state | Transition | Next state | Notes |
//! | --- | --- | --- | --- |
//! | none | `work.propose` | open Work Proposal | any active Group member; no WorkItem exists yet |
//! | none or open Work Proposal | `work.authorize` | `open` | Coordinator or scoped delegate creates the WorkItem |
//! | `open`, `offered`, `queued`, `active`, `blocked`, or `failed`, with no live owner | `work.offer` | `offered` | creates, replaces, or extends a durable offer; an expired owner is fenced first |
//! | `offered` | `work.accept_offer` | `queued` | atomic first acceptance begins a new Ownership Epoch |
//! | `offered` | offer expiry | `offered` | no Event; a later acceptance gets `WORK_OFFER_EXPIRED` |
//! | `open`, `offered`, `queued`, or `blocked` | `…core.work_dependency_add` | unchanged | `work.contract.revised`; a cycle is refused (§10.4) |
//!
//! Wire codes where the reference deviates from the spec follow payloads.md §12: a missing
//! entity or a duplicate id is `INVALID_COMMAND` (D-4, D-5); a deadline beyond the Mission's is
//! `INVALID_COMMAND`, a budget that does not fit is `BUDGET_EXCEEDED` and a cooperation limit is
//! `RATE_LIMITED` (D-6); an expired offer is `WORK_OFFER_EXPIRED`, and offering or accepting a
//! WorkItem someone else owns is `WORK_ALREADY_OWNED` (D-7); `coordinatorEpoch` is checked
//! whenever it is sent (D-21); `expectedRevision`, when sent, is compared with the WorkItem's
//! revision, and for `work.propose` / `work.authorize` (which create no WorkItem revision but
//! increase the Mission's) with the Mission's revision (D-24).
//!
//! Everything `apply` needs is in the Event payload, or in a replay-only note: the Delegation
//! Grant an offer attributes the WorkItem to (`delegationGrantId`) and the capability versions
//! an acceptance pins (`assignedCapabilityVersions`).

use super::cooperation::{self, Policy};
use super::delegation::{self, GrantUse};
use super::{Ctx, Decision};
use crate::authority::clock::Micros;
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::work_plan::{
    ContractRevised, OfferAccepted, OfferCreated, WorkAuthorized, WorkProposed,
};
use crate::authority::payload::Reader;
use crate::authority::projection::ProposalStatus;
use crate::authority::projection::{
    AgentCardRecord, CapabilityRequirement, DelegationGrant, Mission, SelectionBasis, WorkContract,
    WorkItem, WorkProposal,
};
use crate::authority::rejection::Rejection;
use crate::authority::state::{GroupState, State};
use crate::authority::{EventDraft, guards};
use crate::json::{Object, Value};
use crate::model::common::ActorType;
use crate::model::error::ErrorCode;
use crate::model::membership::MembershipState;
use crate::model::work_item::WorkItemState;
use std::collections::{BTreeMap, BTreeSet};

pub const PROPOSE: &str = "work.propose";
pub const AUTHORIZE: &str = "work.authorize";
pub const OFFER: &str = "work.offer";
pub const ACCEPT_OFFER: &str = "work.accept_offer";
pub const DEPENDENCY_ADD: &str = "ext.missionweaveprotocol.core.work_dependency_add";

pub const PROPOSED: &str = "work.proposed";
pub const AUTHORIZED: &str = "work.authorized";
pub const OFFER_CREATED: &str = "work.offer.created";
pub const OFFER_ACCEPTED: &str = "work.offer.accepted";
pub const CONTRACT_REVISED: &str = "work.contract.revised";

/// The longest offer or ownership lease a Command may ask for (one year, payloads.md §6.20).
const MAX_SECONDS: u64 = 31_536_000;

// ---------------------------------------------------------------------------------------------
// Helpers other handlers reuse.
// ---------------------------------------------------------------------------------------------

/// The WorkItem Conversation's id, `<groupId>:work:<workItemId>` (payloads.md §2.4).
pub fn work_conversation_id(group_id: &str, work_item_id: &str) -> String {
    format!("{group_id}:work:{work_item_id}")
}

/// Whether `target` is reachable from `start` along recorded dependency edges (`start` itself
/// included). Unknown ids end a path; each WorkItem is visited once.
pub fn dependency_reaches(state: &State, start: &str, target: &str) -> bool {
    let mut pending = vec![start.to_owned()];
    let mut visited = BTreeSet::new();
    while let Some(current) = pending.pop() {
        if current == target {
            return true;
        }
        if !visited.insert(current.clone()) {
            continue;
        }
        if let Some(w) = state.work_items.get(&current) {
            pending.extend(w.dependency_ids.iter().cloned());
        }
    }
    false
}

/// Whether adding the edge `work_item_id → dependency_id` ("depends on") would close a cycle,
/// a self-dependency included (§10.4).
pub fn creates_cycle(state: &State, work_item_id: &str, dependency_id: &str) -> bool {
    work_item_id == dependency_id || dependency_reaches(state, dependency_id, work_item_id)
}

/// Whether every dependency of `w` is `verified` (the `work.start` gate, payloads.md §6.22).
/// `Err` lists, in `w.dependencyIds` order, the dependencies that are not (a dependency that
/// no longer exists counts as not verified).
pub fn dependencies_verified(state: &State, w: &WorkItem) -> Result<(), Vec<String>> {
    let pending: Vec<String> = w
        .dependency_ids
        .iter()
        .filter(|d| {
            state
                .work_items
                .get(d.as_str())
                .is_none_or(|dep| dep.status != WorkItemState::Verified)
        })
        .cloned()
        .collect();
    if pending.is_empty() {
        Ok(())
    } else {
        Err(pending)
    }
}

/// The first Work Contract capability an Agent Card does not meet (§10.1, §10.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CapabilityShortfall {
    /// The card does not list the capability.
    Missing { id: String },
    /// The card lists it below `minimumVersion`.
    Below {
        id: String,
        version: u64,
        minimum: u64,
    },
}

impl std::fmt::Display for CapabilityShortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CapabilityShortfall::Missing { id } => {
                write!(f, "capability {id} is not on the Agent Card")
            }
            CapabilityShortfall::Below {
                id,
                version,
                minimum,
            } => write!(
                f,
                "capability {id} is at version {version}, below the required {minimum}"
            ),
        }
    }
}

/// The capability versions `card` pins for `required`, or the first requirement it does not
/// meet (absent, or a version below `minimumVersion`).
pub fn card_capability_versions(
    card: &AgentCardRecord,
    required: &[CapabilityRequirement],
) -> Result<BTreeMap<String, u64>, CapabilityShortfall> {
    let mut pinned = BTreeMap::new();
    for req in required {
        match card.capability_version(&req.id) {
            Some(v) if v >= req.minimum_version => {
                pinned.insert(req.id.clone(), v);
            }
            Some(v) => {
                return Err(CapabilityShortfall::Below {
                    id: req.id.clone(),
                    version: v,
                    minimum: req.minimum_version,
                });
            }
            None => {
                return Err(CapabilityShortfall::Missing { id: req.id.clone() });
            }
        }
    }
    Ok(pinned)
}

/// Fences a WorkItem's owner (apply side; payloads.md §6 "fenced"): closes the open Execution
/// Lease (`revoked`, or `expired` at its expiry if it had run out), increases the Ownership
/// Epoch when there was an assignee, and clears the assignment and the offer.
pub fn fence_owner(state: &mut State, work_item_id: &str, at: Micros) {
    let Some(w) = state.work_items.get_mut(work_item_id) else {
        return;
    };
    if let Some(lease_id) = w.execution_lease_id.take()
        && let Some(lease) = state.leases.get_mut(&lease_id)
        && lease.state == "active"
    {
        let reason = "WorkItem ownership was fenced";
        if lease.expires_at <= at {
            lease.state = "expired".into();
            lease.closed_at = Some(lease.expires_at);
            lease.closure_reason = Some(format!("{reason}; lease had reached its expiry"));
        } else {
            lease.state = "revoked".into();
            lease.closed_at = Some(at);
            lease.closure_reason = Some(reason.into());
        }
    }
    w.execution_lease_expires_at = None;
    if w.assignee_id.is_some() {
        w.ownership_epoch += 1;
    }
    w.assignee_id = None;
    w.assigned_agent_card_version = None;
    w.assigned_capability_versions = BTreeMap::new();
    w.ownership_lease_expires_at = None;
    w.offered_agent_ids = Vec::new();
    w.offer_expires_at = None;
    w.updated_at = at;
}

// ---------------------------------------------------------------------------------------------
// Routers.
// ---------------------------------------------------------------------------------------------

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        PROPOSED => apply_proposed(state, ev),
        AUTHORIZED => apply_authorized(state, ev),
        OFFER_CREATED => apply_offer_created(state, ev),
        OFFER_ACCEPTED => apply_offer_accepted(state, ev),
        CONTRACT_REVISED => apply_contract_revised(state, ev),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Shared checks.
// ---------------------------------------------------------------------------------------------

fn sorted_unique(mut ids: Vec<String>) -> Vec<String> {
    crate::order::sort(&mut ids);
    ids.dedup();
    ids
}

/// `contract.deadline` ≤ the Mission deadline (D-6: `INVALID_COMMAND`).
fn deadline_within(contract: &WorkContract, mission: &Mission) -> Result<(), Rejection> {
    if contract.deadline > mission.deadline {
        return Err(
            Rejection::invalid("the WorkItem deadline must fit within its Mission")
                .detail("deadline", contract.deadline.format())
                .detail("missionDeadline", mission.deadline.format()),
        );
    }
    Ok(())
}

/// `contract.budget` ⊆ the Mission budget, a `null` Mission dimension granting nothing
/// (D-6: `BUDGET_EXCEEDED`).
fn budget_within(contract: &WorkContract, mission: &Mission) -> Result<(), Rejection> {
    contract.budget.within(&mission.budget).map_err(|dim| {
        Rejection::new(
            ErrorCode::BudgetExceeded,
            format!("the WorkItem budget must fit within its Mission: {dim}"),
        )
        .detail("dimension", dim)
    })
}

/// Every dependency exists in this Group and Mission (D-4: `INVALID_COMMAND`).
fn dependencies_exist(
    state: &State,
    g: &GroupState,
    mission: &Mission,
    deps: &[String],
) -> Result<(), Rejection> {
    for d in deps {
        let dep = guards::work(state, g, d)?;
        if dep.mission_id != mission.id {
            return Err(
                Rejection::invalid("dependencies must belong to the same Mission")
                    .detail("dependencyId", d.as_str()),
            );
        }
    }
    Ok(())
}

/// The parent WorkItem, when given: it exists in this Group (`INVALID_COMMAND`) and belongs to
/// this Mission (`AUTH_FORBIDDEN`).
fn parent_work<'s>(
    state: &'s State,
    g: &GroupState,
    mission: &Mission,
    parent: Option<&str>,
) -> Result<Option<&'s WorkItem>, Rejection> {
    let Some(id) = parent else { return Ok(None) };
    let p = guards::work(state, g, id)?;
    if p.mission_id != mission.id {
        return Err(Rejection::forbidden(
            "the parent WorkItem belongs to another Mission",
        ));
    }
    Ok(Some(p))
}

/// Who authors a `work.authorize` or `work.offer`.
enum Author<'s> {
    Coordinator,
    Delegate(&'s DelegationGrant),
}

/// **Author**: the Coordinator path (**coordinator**, no `delegationGrantId`) or the Grant path
/// (§9.1, payloads.md §6.13 "Using a Grant").
fn author<'s>(
    cx: &Ctx<'s>,
    g: &GroupState,
    mission: &Mission,
    grant_id: Option<&str>,
) -> Result<Author<'s>, Rejection> {
    let cmd = cx.cmd;
    if cmd.actor.actor_type == ActorType::Agent && cmd.actor.id.as_str() == mission.coordinator_id {
        guards::coordinator(g, mission, cmd, cx.now, false)?;
        if grant_id.is_some() {
            return Err(Rejection::invalid(
                "the Coordinator must not cite a Delegation Grant",
            ));
        }
        return Ok(Author::Coordinator);
    }
    let Some(grant_id) = grant_id else {
        return Err(Rejection::forbidden(
            "only the current Coordinator or a delegate citing a Delegation Grant may do this",
        ));
    };
    let grant = delegation::check_grant(cx, grant_id)?;
    Ok(Author::Delegate(grant))
}

// ---------------------------------------------------------------------------------------------
// work.propose (§10.2 row 1; payloads.md §6.18).
// ---------------------------------------------------------------------------------------------

/// `work.propose`: any active member proposes a non-executable WorkItem (§9).
pub fn decide_propose(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let proposal_id = r.id("proposalId");
    let contract = r.nested("contract", true, WorkContract::read);
    let dependency_ids = r.ids("dependencyIds", 0);
    let parent_id = r.opt_id("parentWorkItemId");
    r.finish(&cmd.kind)?;
    let Some(contract) = contract else {
        return Err(Rejection::invalid("contract is required"));
    };

    // C5: proposal_rate, over this actor's work.proposed Events of the last 60 s in the Group.
    let limit = cx.config.limits.proposal_rate_per_minute;
    let horizon = cx.now.minus_seconds(60);
    let recent = cmd
        .group_id
        .as_deref()
        .and_then(|g| cx.state.groups.get(g))
        .map_or(0, |gs| {
            gs.recent_count(cmd.actor.id.as_str(), PROPOSED, horizon)
        });
    let mut details = Object::new();
    details.insert("limit", Value::from(limit as u64));
    details.insert("recent", Value::from(recent as u64));
    let grant = cooperation::check(cx, Policy::ProposalRate, recent >= limit, details)?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::active_member(g, cmd)?;
    guards::active_mission(mission)?;
    // D-24: a proposal changes the Mission's plan, so `expectedRevision` is the Mission's.
    guards::revision(cmd, mission.revision)?;
    guards::new_id(cx.state, "WorkProposal", &proposal_id)?;
    deadline_within(&contract, mission)?;
    budget_within(&contract, mission)?;
    let dependency_ids = sorted_unique(dependency_ids);
    dependencies_exist(cx.state, g, mission, &dependency_ids)?;
    parent_work(cx.state, g, mission, parent_id.as_deref())?;

    let proposal = WorkProposal {
        authorized_work_item_id: None,
        contract,
        created_at: cx.now,
        dependency_ids,
        group_id: g.group.id.clone(),
        id: proposal_id,
        mission_id: mission.id.clone(),
        parent_work_item_id: parent_id,
        proposed_by: cmd.actor.clone(),
        status: ProposalStatus::Open,
        updated_at: cx.now,
    };
    let draft = EventDraft::group(&g.group.id, PROPOSED, WorkProposed { proposal }.to_object());
    Ok(vec![cooperation::consume(draft, grant)])
}

fn touch_mission(state: &mut State, ev: &EventView, mission_id: &str) -> Result<(), ApplyError> {
    let m = state
        .missions
        .get_mut(mission_id)
        .ok_or_else(|| ApplyError::unknown(ev, "Mission", mission_id))?;
    m.revision += 1;
    m.updated_at = ev.occurred_at;
    Ok(())
}

pub fn apply_proposed(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let WorkProposed { proposal } = WorkProposed::read(ev)?;
    touch_mission(state, ev, &proposal.mission_id)?;
    state.proposals.insert(proposal.id.clone(), proposal);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// work.authorize (§10.2 row 2; payloads.md §6.19).
// ---------------------------------------------------------------------------------------------

/// `work.authorize`: the Coordinator, or a delegate citing a Delegation Grant, creates an
/// executable WorkItem, its Conversation and its ledger account.
pub fn decide_authorize(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let filled = cmd.payload_filled(true, false);
    let mut r = Reader::new(&filled);
    let work_item_id = r.id("workItemId");
    let contract = r.nested("contract", true, WorkContract::read);
    let dependency_ids = r.ids("dependencyIds", 0);
    let proposal_id = r.opt_id("proposalId");
    let parent_id = r.opt_id("parentWorkItemId");
    let grant_id = r.opt_id("delegationGrantId");
    r.finish(&cmd.kind)?;
    let Some(contract) = contract else {
        return Err(Rejection::invalid("contract is required"));
    };

    // C5: delegation_depth, when the new item is linked under a parent.
    let (g, mission) = guards::group(cx.state, cmd)?;
    let limit = cx.config.limits.max_delegation_depth;
    let depth = match parent_id.as_deref() {
        Some(p) => Some(guards::work(cx.state, g, p)?.delegation_depth + 1),
        None => None,
    };
    let mut details = Object::new();
    details.insert("limit", Value::from(limit));
    if let Some(d) = depth {
        details.insert("depth", Value::from(d));
    }
    let override_grant = cooperation::check(
        cx,
        Policy::DelegationDepth,
        depth.is_some_and(|d| d > limit),
        details,
    )?;

    let author = author(cx, g, mission, grant_id.as_deref())?;
    guards::active_mission(mission)?;
    // D-24: the new WorkItem has no revision yet; authorizing changes the Mission's.
    guards::revision(cmd, mission.revision)?;
    guards::new_id(cx.state, "WorkItem", &work_item_id)?;
    deadline_within(&contract, mission)?;
    budget_within(&contract, mission)?;
    let dependency_ids = sorted_unique(dependency_ids);
    if dependency_ids.contains(&work_item_id) {
        return Err(Rejection::invalid("a WorkItem cannot depend on itself")
            .detail("workItemId", work_item_id.as_str()));
    }
    dependencies_exist(cx.state, g, mission, &dependency_ids)?;
    if let Some(d) = dependency_ids
        .iter()
        .find(|d| dependency_reaches(cx.state, d, &work_item_id))
    {
        return Err(Rejection::invalid("the dependency would create a cycle")
            .detail("workItemId", work_item_id.as_str())
            .detail("dependencyId", d.as_str()));
    }
    let parent = parent_work(cx.state, g, mission, parent_id.as_deref())?;
    let delegation_depth = parent.map_or(0, |p| p.delegation_depth + 1);
    let delegation_grant_id = match author {
        Author::Coordinator => None,
        Author::Delegate(grant) => {
            delegation::check_grant_scope(
                cx,
                grant,
                GrantUse::Authorize {
                    parent_work_item_id: parent.map(|p| p.id.as_str()),
                    contract: &contract,
                },
            )?;
            Some(grant.id.clone())
        }
    };
    let mut created_by = cmd.actor.clone();
    if let Some(pid) = proposal_id.as_deref() {
        let proposal = match cx.state.proposals.get(pid) {
            Some(p) if p.group_id == g.group.id => p,
            _ => return Err(Rejection::not_found("WorkProposal", pid)),
        };
        if proposal.status != ProposalStatus::Open {
            return Err(Rejection::transition(format!(
                "WorkProposal {pid} is {}, not open",
                proposal.status
            )));
        }
        if proposal.contract != contract
            || proposal.dependency_ids != dependency_ids
            || proposal.parent_work_item_id != parent_id
        {
            return Err(Rejection::new(
                ErrorCode::RevisionConflict,
                "the authorized WorkItem must keep the proposal's contract, dependencies and parent",
            )
            .detail("proposalId", pid));
        }
        created_by = proposal.proposed_by.clone();
    }
    let account_parent = parent.map_or(mission.id.as_str(), |p| p.id.as_str());
    super::budget::check_allocation(cx.state, account_parent, &contract.budget)?;

    let work = WorkItem {
        artifact_ids: vec![],
        assigned_agent_card_version: None,
        assigned_capability_versions: BTreeMap::new(),
        assignee_id: None,
        blocker: None,
        checkpoints: vec![],
        child_mission_id: None,
        conversation_id: work_conversation_id(&g.group.id, &work_item_id),
        contract,
        created_at: cx.now,
        created_by,
        delegation_depth,
        delegation_grant_id,
        dependency_ids,
        execution_lease_expires_at: None,
        execution_lease_id: None,
        failure_reason: None,
        group_id: g.group.id.clone(),
        id: work_item_id,
        mission_id: mission.id.clone(),
        offer_expires_at: None,
        offered_agent_ids: vec![],
        ownership_epoch: 0,
        ownership_lease_expires_at: None,
        parent_work_item_id: parent_id,
        revision: 1,
        selection_basis: None,
        status: WorkItemState::Open,
        submission_evidence: vec![],
        updated_at: cx.now,
        verification_evidence: vec![],
    };
    let draft = EventDraft::group(
        &g.group.id,
        AUTHORIZED,
        WorkAuthorized {
            work_item: work,
            proposal_id,
        }
        .to_object(),
    );
    Ok(vec![cooperation::consume(draft, override_grant)])
}

/// The WorkItem, its Conversation, its ledger account (under its parent WorkItem or its
/// Mission), the proposal it authorizes, and the Mission revision.
pub fn apply_authorized(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let WorkAuthorized {
        work_item: work,
        proposal_id,
    } = WorkAuthorized::read(ev)?;
    let gs = state
        .groups
        .get_mut(&work.group_id)
        .ok_or_else(|| ApplyError::unknown(ev, "Group", &work.group_id))?;
    gs.conversations.insert(work.conversation_id.clone());
    if let Some(pid) = &proposal_id
        && let Some(p) = state.proposals.get_mut(pid)
    {
        p.status = ProposalStatus::Authorized;
        p.authorized_work_item_id = Some(work.id.clone());
        p.updated_at = ev.occurred_at;
    }
    let parent = work
        .parent_work_item_id
        .clone()
        .unwrap_or_else(|| work.mission_id.clone());
    super::budget::open_account(state, &work.id, Some(&parent), work.contract.budget.clone());
    touch_mission(state, ev, &work.mission_id)?;
    state.work_items.insert(work.id.clone(), work);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// work.offer (§10.2 row 3; payloads.md §6.20).
// ---------------------------------------------------------------------------------------------

/// Whether `w` has an owner whose ownership lease is still running (§10.3): such a WorkItem
/// cannot be offered, and unblocks to `queued` rather than `open`.
pub fn is_live_owner(w: &WorkItem, now: Micros) -> bool {
    w.assignee_id.is_some() && guards::ownership_lease_live(w, now)
}

/// Whether Agent `agent_id` may be offered `w` in Group `g` (§10.3): a non-ended Agent
/// Membership with the `worker` role and a registered Agent Card meeting every required
/// capability at its minimum version. `work.offer` refuses a candidate that is not.
pub fn offer_candidate(
    state: &State,
    g: &GroupState,
    agent_id: &str,
    w: &WorkItem,
) -> Result<BTreeMap<String, u64>, Rejection> {
    if !g.memberships.get(agent_id).is_some_and(|m| {
        m.status != MembershipState::Ended && m.principal.actor_type == ActorType::Agent
    }) {
        return Err(
            Rejection::forbidden("the candidate is not a Group member").detail("agentId", agent_id)
        );
    }
    if !g
        .memberships
        .get(agent_id)
        .is_some_and(|m| m.has_role("worker"))
    {
        return Err(
            Rejection::forbidden("the candidate lacks the worker role").detail("agentId", agent_id)
        );
    }
    let card = guards::card(state, agent_id)?;
    card_capability_versions(card, &w.contract.required_capabilities).map_err(|why| {
        Rejection::forbidden(format!(
            "the candidate does not satisfy the Work Contract: {why}"
        ))
        .detail("agentId", agent_id)
    })
}

/// `work.offer`: the Coordinator, or a delegate citing a Grant, offers a WorkItem to candidate
/// Workers until an expiry. An owner whose lease has run out is fenced first.
pub fn decide_offer(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let filled = cmd.payload_filled(true, false);
    let mut r = Reader::new(&filled);
    let work_item_id = r.id("workItemId");
    let candidates = r.ids("candidateAgentIds", 1);
    for (i, c) in candidates.iter().enumerate() {
        if candidates[..i].contains(c) {
            r.error("candidateAgentIds", format!("{c:?} is listed twice"));
        }
    }
    let basis = r.nested("selectionBasis", true, SelectionBasis::read);
    let expires_in = r.int("offerExpiresInSeconds", 1, MAX_SECONDS, Some(300));
    let grant_id = r.opt_id("delegationGrantId");
    r.finish(&cmd.kind)?;
    let Some(basis) = basis else {
        return Err(Rejection::invalid("selectionBasis is required"));
    };

    let (g, mission) = guards::group(cx.state, cmd)?;
    let author = author(cx, g, mission, grant_id.as_deref())?;
    guards::active_mission(mission)?;
    let w = guards::work(cx.state, g, &work_item_id)?;
    guards::revision(cmd, w.revision)?;
    let attribute_to = match author {
        Author::Coordinator => None,
        Author::Delegate(grant) => {
            delegation::check_grant_scope(cx, grant, GrantUse::Offer { work_item: w })?;
            Some(grant.id.clone())
        }
    };
    if matches!(
        w.status,
        WorkItemState::Verified | WorkItemState::Submitted | WorkItemState::Cancelled
    ) {
        return Err(Rejection::transition(format!(
            "cannot offer a WorkItem in the {} state",
            w.status
        ))
        .detail("workItemId", w.id.as_str())
        .detail("status", w.status.as_str()));
    }
    // A WorkItem blocked on its linked child Mission is not offerable while that Mission runs
    // (§10.2: ownership is fenced while the child runs; its approval or failure decides).
    if let Some(child) = w
        .child_mission_id
        .as_deref()
        .and_then(|c| cx.state.missions.get(c))
        .filter(|c| !c.is_terminal())
    {
        return Err(Rejection::transition(format!(
            "the WorkItem waits for its child Mission {}",
            child.id
        ))
        .detail("workItemId", w.id.as_str())
        .detail("childMissionId", child.id.as_str()));
    }
    if is_live_owner(w, cx.now) {
        return Err(Rejection::new(
            ErrorCode::WorkAlreadyOwned,
            "the exclusive WorkItem already has a live owner",
        )
        .detail("workItemId", w.id.as_str())
        .detail("assigneeId", w.assignee_id.clone().unwrap_or_default()));
    }
    let fenced = w.assignee_id.is_some();
    let mut merged: BTreeSet<String> = BTreeSet::new();
    if !fenced
        && w.status == WorkItemState::Offered
        && w.offer_expires_at.is_some_and(|t| t > cx.now)
    {
        merged.extend(w.offered_agent_ids.iter().cloned());
    }
    for agent_id in &candidates {
        offer_candidate(cx.state, g, agent_id, w)?;
        merged.insert(agent_id.clone());
    }
    let offer_expires_at = cx.now.plus_seconds(expires_in);
    let mut draft = EventDraft::group(
        &g.group.id,
        OFFER_CREATED,
        OfferCreated {
            work_item_id: w.id.clone(),
            candidate_agent_ids: merged.into_iter().collect(),
            offer_expires_at,
            selection_basis: basis,
        }
        .to_object(),
    );
    if let Some(grant) = attribute_to {
        draft = draft.note("delegationGrantId", Value::string(grant));
    }
    Ok(vec![draft])
}

/// Fences an owner whose lease ran out (decide refused a live one), then records the offer.
pub fn apply_offer_created(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let OfferCreated {
        work_item_id: id,
        candidate_agent_ids: candidates,
        offer_expires_at: expires,
        selection_basis: basis,
    } = OfferCreated::read(ev)?;
    let grant = ev
        .note("delegationGrantId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if state
        .work_items
        .get(&id)
        .ok_or_else(|| ApplyError::unknown(ev, "WorkItem", &id))?
        .assignee_id
        .is_some()
    {
        fence_owner(state, &id, ev.occurred_at);
    }
    let w = state
        .work_items
        .get_mut(&id)
        .ok_or_else(|| ApplyError::unknown(ev, "WorkItem", &id))?;
    w.status = WorkItemState::Offered;
    w.offered_agent_ids = candidates;
    w.offer_expires_at = Some(expires);
    w.selection_basis = Some(basis);
    w.failure_reason = None;
    if grant.is_some() {
        w.delegation_grant_id = grant;
    }
    w.revision += 1;
    w.updated_at = ev.occurred_at;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// work.accept_offer (§10.2 rows 4–5; payloads.md §6.21).
// ---------------------------------------------------------------------------------------------

/// `work.accept_offer`: the first valid acceptance by an offered Worker atomically wins a new
/// Ownership Epoch; a provisional Membership becomes active (epoch + 1, no Event of its own).
pub fn decide_accept_offer(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let filled = cmd.payload_filled(true, false);
    let mut r = Reader::new(&filled);
    let work_item_id = r.id("workItemId");
    let lease_seconds = r.int("ownershipLeaseSeconds", 1, MAX_SECONDS, Some(900));
    r.finish(&cmd.kind)?;

    // C5: queued_work_items and active_work_items, across all Groups.
    let limits = &cx.config.limits;
    let mine = |status: WorkItemState| {
        cx.state
            .work_items
            .values()
            .filter(|w| w.assignee_id.as_deref() == Some(cmd.actor.id.as_str()))
            .filter(|w| w.status == status)
            .count()
    };
    let (queued, active) = (mine(WorkItemState::Queued), mine(WorkItemState::Active));
    let queued_reached = queued + 1 > limits.max_queued_work_items;
    let active_reached = active > limits.max_active_work_items;
    let mut override_grant = None;
    if queued_reached {
        let mut d = Object::new();
        d.insert("limit", Value::from(limits.max_queued_work_items as u64));
        d.insert("queued", Value::from((queued + 1) as u64));
        override_grant = cooperation::check(cx, Policy::QueuedWorkItems, true, d)?;
    }
    if active_reached {
        let mut d = Object::new();
        d.insert("limit", Value::from(limits.max_active_work_items as u64));
        d.insert("active", Value::from(active as u64));
        override_grant = cooperation::check(cx, Policy::ActiveWorkItems, true, d)?;
    }
    if !queued_reached && !active_reached {
        cooperation::check(cx, Policy::QueuedWorkItems, false, Object::new())?;
    }

    if cmd.actor.actor_type != ActorType::Agent {
        return Err(Rejection::forbidden(
            "only a Worker Agent may accept an offer",
        ));
    }
    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::active_mission(mission)?;
    let w = guards::work(cx.state, g, &work_item_id)?;
    guards::revision(cmd, w.revision)?;
    if w.status != WorkItemState::Offered {
        if let Some(owner) = w.assignee_id.as_deref()
            && owner != cmd.actor.id.as_str()
        {
            return Err(Rejection::new(
                ErrorCode::WorkAlreadyOwned,
                "another candidate won ownership of this WorkItem",
            )
            .detail("workItemId", w.id.as_str()));
        }
        return Err(Rejection::transition(format!(
            "cannot accept an offer for a WorkItem in the {} state",
            w.status
        ))
        .detail("workItemId", w.id.as_str())
        .detail("status", w.status.as_str()));
    }
    if w.offer_expires_at.is_none_or(|t| t <= cx.now) {
        return Err(Rejection::new(
            ErrorCode::WorkOfferExpired,
            "the WorkItem offer has expired",
        )
        .detail("workItemId", w.id.as_str()));
    }
    if !w
        .offered_agent_ids
        .iter()
        .any(|a| a == cmd.actor.id.as_str())
    {
        return Err(Rejection::forbidden(
            "the Agent was not offered this WorkItem",
        ));
    }
    let m = g
        .memberships
        .get(cmd.actor.id.as_str())
        .ok_or_else(Rejection::group_not_found)?;
    if !m.has_role("worker") {
        return Err(Rejection::forbidden("the Membership lacks the worker role"));
    }
    if m.status == MembershipState::Ended {
        return Err(Rejection::forbidden("the Membership has ended"));
    }
    let card = guards::card(cx.state, cmd.actor.id.as_str())?;
    let pinned =
        card_capability_versions(card, &w.contract.required_capabilities).map_err(|why| {
            Rejection::forbidden(format!(
                "the Agent Card no longer satisfies the Work Contract: {why}"
            ))
        })?;

    let mut versions = Object::new();
    for (k, v) in &pinned {
        versions.insert(k.clone(), Value::from(*v));
    }
    let draft = EventDraft::group(
        &g.group.id,
        OFFER_ACCEPTED,
        OfferAccepted {
            work_item_id: w.id.clone(),
            assignee_id: cmd.actor.id.0.clone(),
            ownership_epoch: w.ownership_epoch + 1,
            ownership_lease_expires_at: cx.now.plus_seconds(lease_seconds),
            agent_card_version: card.version,
        }
        .to_object(),
    )
    .note("assignedCapabilityVersions", Value::Object(versions));
    Ok(vec![cooperation::consume(draft, override_grant)])
}

/// Ownership, the pinned card and capability versions, and the silent promotion of a
/// provisional Membership (status `active`, epoch + 1).
pub fn apply_offer_accepted(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let OfferAccepted {
        work_item_id,
        assignee_id: assignee,
        ownership_epoch: epoch,
        ownership_lease_expires_at: lease,
        agent_card_version: card_version,
    } = OfferAccepted::read(ev)?;
    let id = work_item_id.as_str();
    let pinned: BTreeMap<String, u64> =
        crate::authority::events::note(ev, "assignedCapabilityVersions")?.unwrap_or_default();
    let w = state
        .work_items
        .get_mut(id)
        .ok_or_else(|| ApplyError::unknown(ev, "WorkItem", id))?;
    w.status = WorkItemState::Queued;
    w.assignee_id = Some(assignee.clone());
    w.ownership_epoch = epoch;
    w.ownership_lease_expires_at = Some(lease);
    w.execution_lease_id = None;
    w.execution_lease_expires_at = None;
    w.assigned_agent_card_version = Some(card_version);
    w.assigned_capability_versions = pinned;
    w.offered_agent_ids = Vec::new();
    w.offer_expires_at = None;
    w.revision += 1;
    w.updated_at = ev.occurred_at;
    let group_id = w.group_id.clone();
    if let Some(m) = state
        .groups
        .get_mut(&group_id)
        .and_then(|g| g.memberships.get_mut(&assignee))
    {
        if m.status != MembershipState::Active {
            m.status = MembershipState::Active;
            m.epoch += 1;
        }
        m.ended_at = None;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// …core.work_dependency_add (§10.4; payloads.md §6.35).
// ---------------------------------------------------------------------------------------------

/// `…core.work_dependency_add`: the Coordinator adds one dependency edge; a cycle is refused.
pub fn decide_dependency_add(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let filled = cmd.payload_filled(true, false);
    let mut r = Reader::new(&filled);
    let work_item_id = r.id("workItemId");
    let dependency_id = r.id("dependencyId");
    r.finish(&cmd.kind)?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::coordinator(g, mission, cmd, cx.now, false)?;
    guards::active_mission(mission)?;
    let w = guards::work(cx.state, g, &work_item_id)?;
    let dep = guards::work(cx.state, g, &dependency_id)?;
    guards::revision(cmd, w.revision)?;
    if !matches!(
        w.status,
        WorkItemState::Open
            | WorkItemState::Offered
            | WorkItemState::Queued
            | WorkItemState::Blocked
    ) {
        return Err(Rejection::transition(format!(
            "cannot add a dependency to a WorkItem in the {} state",
            w.status
        ))
        .detail("workItemId", w.id.as_str())
        .detail("status", w.status.as_str()));
    }
    if w.id == dep.id {
        return Err(Rejection::invalid("a WorkItem cannot depend on itself")
            .detail("workItemId", w.id.as_str()));
    }
    if dep.mission_id != w.mission_id {
        return Err(
            Rejection::invalid("dependencies must belong to the same Mission")
                .detail("dependencyId", dep.id.as_str()),
        );
    }
    if w.dependency_ids.contains(&dep.id) {
        return Err(Rejection::invalid("the dependency is already recorded")
            .detail("workItemId", w.id.as_str())
            .detail("dependencyId", dep.id.as_str()));
    }
    if creates_cycle(cx.state, &w.id, &dep.id) {
        return Err(Rejection::invalid("the dependency would create a cycle")
            .detail("workItemId", w.id.as_str())
            .detail("dependencyId", dep.id.as_str()));
    }
    Ok(vec![EventDraft::group(
        &g.group.id,
        CONTRACT_REVISED,
        ContractRevised {
            work_item_id: w.id.clone(),
            dependency_id: dep.id.clone(),
            revision: w.revision + 1,
        }
        .to_object(),
    )])
}

/// The new edge (the list stays sorted), the WorkItem revision the Event reports, and the
/// Mission revision.
pub fn apply_contract_revised(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let ContractRevised {
        work_item_id,
        dependency_id: dep,
        revision,
    } = ContractRevised::read(ev)?;
    let id = work_item_id.as_str();
    let w = state
        .work_items
        .get_mut(id)
        .ok_or_else(|| ApplyError::unknown(ev, "WorkItem", id))?;
    if !w.dependency_ids.contains(&dep) {
        w.dependency_ids.push(dep);
        crate::order::sort(&mut w.dependency_ids);
    }
    w.revision = revision;
    w.updated_at = ev.occurred_at;
    let mission_id = w.mission_id.clone();
    touch_mission(state, ev, &mission_id)
}
