//! Delegation Grants (§9.1; payloads.md §6.13): the Coordinator lends scoped work-authoring
//! authority over one WorkItem subtree to a `work_delegate` Agent.
//!
//! ```text
//! membership.grant_delegation (current Coordinator)
//!   payload ─▶ C5 delegation_depth (maxDescendantDepth > limit: RATE_LIMITED unless a grant)
//!           ─▶ group ─▶ coordinator ─▶ active-mission ─▶ grantId new
//!           ─▶ grantee: active `work_delegate` Agent ─▶ target WorkItem in this Group/Mission,
//!              not terminal ─▶ now < expiresAt ≤ Mission deadline ─▶ budget ≤ Mission budget
//!           ─▶ membership.delegation.granted {delegationGrant}
//!
//! use (work.authorize / work.offer by the grantee, see `check_grant` and `check_grant_scope`)
//!   exists · grantee · same Mission/Group · active work_delegate Membership · same Membership
//!   Epoch · same Coordinator Epoch and issuer · grantedAt ≤ now < expiresAt · target alive
//!   then: subtree · relative depth · capabilities · cumulative budget
//! ```
//!
//! Wire codes follow payloads.md §12 where the reference deviates from the spec: a stale
//! grantee Membership Epoch is `MEMBERSHIP_STALE` (D-1), a missing target `INVALID_COMMAND`
//! (D-4), a duplicate Grant id `INVALID_COMMAND` (D-5), the depth limit `RATE_LIMITED` (D-6),
//! deadline failures `INVALID_COMMAND`, budget containment `BUDGET_EXCEEDED`, and scope
//! (permission) failures `AUTH_FORBIDDEN` (D-6). A Grant that has expired or not yet started is
//! `AUTH_FORBIDDEN` as well: it is no longer authority, not a lease (D-7).

use super::cooperation::{self, Policy};
use super::{Ctx, Decision};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::membership::DelegationGranted;
use crate::authority::payload::Reader;
use crate::authority::projection::{
    CapabilityRequirement, DIMENSIONS, DelegationBudget, DelegationGrant, ResourceBudget,
    WorkContract, WorkItem,
};
use crate::authority::rejection::Rejection;
use crate::authority::state::State;
use crate::authority::{EventDraft, guards};
use crate::json::{Object, Value};
use crate::model::common::ActorType;
use crate::model::error::ErrorCode;

pub const GRANTED: &str = "membership.delegation.granted";

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        GRANTED => apply_granted(state, ev),
        _ => return None,
    })
}

/// The six dimensions of a DelegationBudget in wire order (payloads.md §8).
pub fn budget_array(b: &DelegationBudget) -> [u64; 6] {
    [
        b.financial_microunits,
        b.model_tokens,
        b.tool_calls,
        b.compute_seconds,
        b.wall_clock_seconds,
        b.external_actions,
    ]
}

/// Reads a DelegationBudget: `currency` (`^[A-Z]{3}$`) and all six dimensions, required and
/// not `null`.
pub fn read_budget(r: &mut Reader) -> DelegationBudget {
    let max = crate::json::MAX_SAFE_INTEGER;
    let currency = r.id("currency");
    if !currency.is_empty()
        && (currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()))
    {
        r.error("currency", "must be three upper-case letters (ISO 4217)");
    }
    DelegationBudget {
        currency,
        financial_microunits: r.int("financialMicrounits", 0, max, None),
        model_tokens: r.int("modelTokens", 0, max, None),
        tool_calls: r.int("toolCalls", 0, max, None),
        compute_seconds: r.int("computeSeconds", 0, max, None),
        wall_clock_seconds: r.int("wallClockSeconds", 0, max, None),
        external_actions: r.int("externalActions", 0, max, None),
    }
}

/// `membership.grant_delegation` (payloads.md §6.13).
pub fn decide_grant(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let grant_id = r.id("grantId");
    let grantee_id = r.id("granteeAgentId");
    let target_id = r.id("targetWorkItemId");
    let allowed = CapabilityRequirement::read_list(&mut r, "allowedCapabilities");
    match cmd.payload.get("allowedCapabilities") {
        None => r.error("allowedCapabilities", "is required"),
        Some(Value::Array(a)) if a.is_empty() => {
            r.error("allowedCapabilities", "needs at least 1 item(s)")
        }
        Some(_) => {}
    }
    let budget = r.nested("budget", true, read_budget);
    let max_depth = r.int("maxDescendantDepth", 0, crate::json::MAX_SAFE_INTEGER, None);
    let expires_at = r.ts("expiresAt");
    r.finish(&cmd.kind)?;
    let Some(budget) = budget else {
        return Err(Rejection::invalid("budget is required"));
    };

    // C5: a Grant deeper than Organization policy needs a one-shot override (§20).
    let limit = cx.config.limits.max_delegation_depth;
    let mut details = Object::new();
    details.insert("limit", Value::from(limit));
    details.insert("maxDescendantDepth", Value::from(max_depth));
    let override_grant =
        cooperation::check(cx, Policy::DelegationDepth, max_depth > limit, details)?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::coordinator(g, mission, cmd, cx.now, true)?;
    guards::active_mission(mission)?;
    guards::new_id(cx.state, "Delegation Grant", &grant_id)?;
    let grantee = match g.memberships.get(&grantee_id) {
        Some(m)
            if m.is_active()
                && m.has_role("work_delegate")
                && m.principal.actor_type == ActorType::Agent =>
        {
            m
        }
        _ => {
            return Err(Rejection::forbidden(
                "the grantee needs an active Agent Membership with the work_delegate role",
            )
            .detail("granteeAgentId", grantee_id.as_str()));
        }
    };
    let target = guards::work(cx.state, g, &target_id)?;
    if target.mission_id != mission.id {
        return Err(Rejection::forbidden(
            "the target WorkItem belongs to another Mission",
        ));
    }
    if target.is_terminal() {
        return Err(Rejection::transition(format!(
            "the target WorkItem is {} (terminal)",
            target.status
        )));
    }
    if expires_at <= cx.now || expires_at > mission.deadline {
        return Err(Rejection::invalid(
            "a Delegation Grant must expire after now and no later than the Mission deadline",
        )
        .detail("expiresAt", expires_at.format())
        .detail("missionDeadline", mission.deadline.format()));
    }
    let ceilings = budget_array(&budget);
    for (i, name) in DIMENSIONS.iter().enumerate() {
        let mission_limit = mission.budget.get(i).unwrap_or(0);
        if ceilings[i] > mission_limit {
            return Err(Rejection::new(
                ErrorCode::BudgetExceeded,
                format!("the Grant's {name} ceiling exceeds the Mission budget"),
            )
            .detail("dimension", *name)
            .detail("limit", mission_limit)
            .detail("requested", ceilings[i]));
        }
    }
    let grant = DelegationGrant {
        allowed_capabilities: allowed,
        budget,
        coordinator_epoch: mission.coordinator_epoch,
        expires_at,
        granted_at: cx.now,
        granted_by: cmd.actor.clone(),
        grantee_agent_id: grantee_id,
        grantee_membership_epoch: grantee.epoch,
        group_id: g.group.id.clone(),
        id: grant_id,
        max_descendant_depth: max_depth,
        mission_id: mission.id.clone(),
        target_work_item_id: target_id,
    };
    let draft = EventDraft::group(
        &g.group.id,
        GRANTED,
        DelegationGranted {
            delegation_grant: grant,
        }
        .to_object(),
    );
    Ok(vec![cooperation::consume(draft, override_grant)])
}

pub fn apply_granted(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let DelegationGranted {
        delegation_grant: grant,
    } = DelegationGranted::read(ev)?;
    state.delegation_grants.insert(grant.id.clone(), grant);
    Ok(())
}

/// Validates the Delegation Grant a `work_delegate` cites in `work.authorize` or `work.offer`
/// (`delegationGrantId`): the "Using a Grant" checks of payloads.md §6.13 and §9.1, in the
/// reference's order. Call it where §6.19 / §6.20 place the author check (right after
/// **group**); then, where those sections place the "Grant path only" checks, call
/// [`check_grant_scope`].
///
/// | Check | Code |
/// | --- | --- |
/// | the Grant exists | `AUTH_FORBIDDEN` |
/// | the actor is the grantee Agent | `AUTH_FORBIDDEN` |
/// | the Grant's Mission and Group are the Command's | `AUTH_FORBIDDEN` |
/// | the actor has an `active` Membership with `work_delegate` | `AUTH_FORBIDDEN` |
/// | its epoch equals `granteeMembershipEpoch` | `MEMBERSHIP_STALE` (D-1) |
/// | the Grant's Coordinator Epoch and issuer are current | `AUTH_STALE_COORDINATOR` |
/// | `grantedAt` ≤ now < `expiresAt` | `AUTH_FORBIDDEN` |
/// | the target WorkItem exists in this Group and is not terminal | `AUTH_FORBIDDEN` |
///
/// The Coordinator must not cite a Grant (`INVALID_COMMAND`); that check is the caller's.
pub fn check_grant<'a>(cx: &Ctx<'a>, grant_id: &str) -> Result<&'a DelegationGrant, Rejection> {
    let state: &'a State = cx.state;
    let cmd = cx.cmd;
    let forbidden = |why: &str| {
        Rejection::forbidden(format!("Delegation Grant {grant_id}: {why}"))
            .detail("delegationGrantId", grant_id)
    };
    let grant = state
        .delegation_grants
        .get(grant_id)
        .ok_or_else(|| forbidden("does not exist"))?;
    if cmd.actor.actor_type != ActorType::Agent || cmd.actor.id.as_str() != grant.grantee_agent_id {
        return Err(forbidden("the actor is not the grantee"));
    }
    let group_id = cmd.group_id.as_deref().unwrap_or_default();
    let mission = match state.mission_of_group(group_id) {
        Some(m) if grant.group_id == group_id && m.id == grant.mission_id => m,
        _ => return Err(forbidden("is for another Mission or Group")),
    };
    let membership = state
        .membership(group_id, cmd.actor.id.as_str())
        .ok_or_else(|| forbidden("the actor has no Membership"))?;
    if !membership.is_active() || !membership.has_role("work_delegate") {
        return Err(forbidden(
            "the actor's Membership is not an active work_delegate Membership",
        ));
    }
    if membership.epoch != grant.grantee_membership_epoch {
        return Err(Rejection::new(
            ErrorCode::MembershipStale,
            format!("Delegation Grant {grant_id} was issued for another Membership Epoch"),
        )
        .detail("delegationGrantId", grant_id)
        .detail("currentMembershipEpoch", membership.epoch)
        .detail("grantMembershipEpoch", grant.grantee_membership_epoch));
    }
    if grant.coordinator_epoch != mission.coordinator_epoch
        || grant.granted_by.actor_type != ActorType::Agent
        || grant.granted_by.id.as_str() != mission.coordinator_id
    {
        return Err(Rejection::new(
            ErrorCode::AuthStaleCoordinator,
            format!("Delegation Grant {grant_id} was issued by a replaced Coordinator"),
        )
        .detail("delegationGrantId", grant_id)
        .detail("expected", mission.coordinator_epoch)
        .detail("received", grant.coordinator_epoch));
    }
    if cx.now < grant.granted_at || cx.now >= grant.expires_at {
        return Err(forbidden("is not valid now (expired)"));
    }
    match state.work_items.get(&grant.target_work_item_id) {
        Some(t) if t.group_id == group_id && !t.is_terminal() => Ok(grant),
        Some(_) => Err(forbidden("its target WorkItem is terminal or elsewhere")),
        None => Err(forbidden("its target WorkItem does not exist")),
    }
}

/// What a delegate does with a Grant, for [`check_grant_scope`].
#[derive(Clone, Copy, Debug)]
pub enum GrantUse<'u> {
    /// `work.authorize` of a new WorkItem under `parent_work_item_id` with `contract`.
    Authorize {
        parent_work_item_id: Option<&'u str>,
        contract: &'u WorkContract,
    },
    /// `work.offer` of an existing WorkItem.
    Offer { work_item: &'u WorkItem },
}

/// The "Grant path only" checks of payloads.md §6.19 (`work.authorize`) and §6.20
/// (`work.offer`), in the reference's order, for a Grant [`check_grant`] accepted:
///
/// | Check | Code |
/// | --- | --- |
/// | authorize: a `parentWorkItemId` is given | `AUTH_FORBIDDEN` |
/// | the parent (authorize) or the item (offer) lies in the target's subtree | `AUTH_FORBIDDEN` |
/// | relative depth of the new item (parent + 1) / of the offered item ≤ `maxDescendantDepth` | `AUTH_FORBIDDEN` |
/// | offer: the item is attributed to no Grant or to this one | `AUTH_FORBIDDEN` |
/// | every required capability is allowed, at a `minimumVersion` ≥ the Grant's | `AUTH_FORBIDDEN` |
/// | the contract budgets of the WorkItems attributed to the Grant, plus this one (unless already attributed), fit every ceiling (`null` counts 0) | `BUDGET_EXCEEDED` |
///
/// The reference answers `APPROVAL_REQUIRED` for depth, capability and budget failures; D-6
/// maps those to `AUTH_FORBIDDEN` (outside the granted authority) and `BUDGET_EXCEEDED`.
pub fn check_grant_scope(
    cx: &Ctx,
    grant: &DelegationGrant,
    usage: GrantUse,
) -> Result<(), Rejection> {
    let forbidden = |why: String| {
        Rejection::forbidden(format!("Delegation Grant {}: {why}", grant.id))
            .detail("delegationGrantId", grant.id.as_str())
    };
    let (contract, already_attributed) = match usage {
        GrantUse::Authorize {
            parent_work_item_id,
            contract,
        } => {
            let Some(parent) = parent_work_item_id else {
                return Err(forbidden(
                    "a delegate must link new work into the Grant's subtree with parentWorkItemId"
                        .into(),
                ));
            };
            let depth = relative_depth(cx.state, grant, parent)
                .ok_or_else(|| forbidden(format!("{parent} is outside the Grant's subtree")))?;
            if depth + 1 > grant.max_descendant_depth {
                return Err(forbidden(format!(
                    "a new WorkItem at relative depth {} exceeds maxDescendantDepth {}",
                    depth + 1,
                    grant.max_descendant_depth
                )));
            }
            (contract, false)
        }
        GrantUse::Offer { work_item } => {
            let depth = relative_depth(cx.state, grant, &work_item.id).ok_or_else(|| {
                forbidden(format!("{} is outside the Grant's subtree", work_item.id))
            })?;
            if depth > grant.max_descendant_depth {
                return Err(forbidden(format!(
                    "{} at relative depth {depth} exceeds maxDescendantDepth {}",
                    work_item.id, grant.max_descendant_depth
                )));
            }
            match work_item.delegation_grant_id.as_deref() {
                Some(other) if other != grant.id => {
                    return Err(forbidden(format!(
                        "{} is attributed to another Grant",
                        work_item.id
                    )));
                }
                attributed => (&work_item.contract, attributed.is_some()),
            }
        }
    };
    for req in &contract.required_capabilities {
        let allowed = grant
            .allowed_capabilities
            .iter()
            .any(|a| a.id == req.id && req.minimum_version >= a.minimum_version);
        if !allowed {
            return Err(forbidden(format!(
                "capability {} (minimum version {}) is not allowed",
                req.id, req.minimum_version
            ))
            .detail("capability", req.id.as_str()));
        }
    }
    let mut total = [0u64; 6];
    let mut add = |b: &ResourceBudget| {
        for (i, t) in total.iter_mut().enumerate() {
            *t = t.saturating_add(b.get(i).unwrap_or(0));
        }
    };
    for w in cx.state.work_items.values() {
        if w.delegation_grant_id.as_deref() == Some(grant.id.as_str()) {
            add(&w.contract.budget);
        }
    }
    if !already_attributed {
        add(&contract.budget);
    }
    let ceilings = budget_array(&grant.budget);
    for (i, name) in DIMENSIONS.iter().enumerate() {
        if total[i] > ceilings[i] {
            return Err(Rejection::new(
                ErrorCode::BudgetExceeded,
                format!(
                    "the cumulative {name} of work under Delegation Grant {} exceeds its ceiling",
                    grant.id
                ),
            )
            .detail("delegationGrantId", grant.id.as_str())
            .detail("dimension", *name)
            .detail("ceiling", ceilings[i])
            .detail("cumulative", total[i]));
        }
    }
    Ok(())
}

/// How many parent links separate `work_item_id` from the Grant's target (0 for the target
/// itself); `None` when it is not in the target's subtree.
pub fn relative_depth(state: &State, grant: &DelegationGrant, work_item_id: &str) -> Option<u64> {
    let mut current = work_item_id;
    // Bounded walk: ancestry is acyclic by construction, but never loop on corrupt state.
    for depth in 0..=state.work_items.len() as u64 {
        if current == grant.target_work_item_id {
            return Some(depth);
        }
        let w = state.work_items.get(current)?;
        if w.group_id != grant.group_id {
            return None;
        }
        current = w.parent_work_item_id.as_deref()?;
    }
    None
}
