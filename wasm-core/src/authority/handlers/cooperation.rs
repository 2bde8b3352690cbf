//! Cooperation limits and one-shot Cooperation Override Grants (§20; payloads.md §7, step C5).
//!
//! ```text
//! limit reached? ── no ── grant cited? ── yes ─▶ INVALID_COMMAND
//!       │                      └── no ──▶ continue
//!       └── yes ── grant cited? ── no ──▶ RATE_LIMITED (D-6)
//!                       └── yes ─ exists, unconsumed, unexpired, same Mission/Group,
//!                                 beneficiary = actor, kind, Action ID, policy, approver
//!                                 ── any check fails ─▶ RATE_LIMITED
//!                                 └─ ok ─▶ continue; consumed atomically with the primary
//!                                          Event (note `consumedOverrideGrant`)
//! ```
//!
//! The issuing Command `policy.grant_cooperation_override` is handled here too (payloads.md
//! §6.32): the MissionOwner or an Organization service, a non-terminal Mission, a new grant id,
//! a kind the policy can gate, `now < expiresAt ≤` the Mission deadline, a beneficiary with a
//! non-ended Membership that has not yet used the target Action ID ─▶
//! `policy.cooperation_override.granted`, plus a "cooperation override granted" policy-log
//! entry (§20: issuance and consumption are both logged).

use super::{Ctx, Decision};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::grants::CooperationOverrideGranted;
use crate::authority::payload::Reader;
use crate::authority::projection::CooperationOverrideGrant;
use crate::authority::rejection::Rejection;
use crate::authority::state::State;
use crate::authority::{EventDraft, guards, is_service};
use crate::json::{Object, Value};
use crate::model::ToJson;
use crate::model::error::ErrorCode;
use crate::model::membership::MembershipState;

/// The limits a Command can reach (§20).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    MessageRate,
    ProposalRate,
    DelegationDepth,
    QueuedWorkItems,
    ActiveWorkItems,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::MessageRate => "message_rate",
            Policy::ProposalRate => "proposal_rate",
            Policy::DelegationDepth => "delegation_depth",
            Policy::QueuedWorkItems => "queued_work_items",
            Policy::ActiveWorkItems => "active_work_items",
        }
    }

    /// The Command kinds a policy can gate (a grant for another kind is unusable).
    pub fn kinds(self) -> &'static [&'static str] {
        match self {
            Policy::MessageRate => &["message.post"],
            Policy::ProposalRate => &["work.propose"],
            Policy::DelegationDepth => &[
                "mission.create_child",
                "work.authorize",
                "membership.grant_delegation",
            ],
            Policy::QueuedWorkItems => &["work.accept_offer"],
            Policy::ActiveWorkItems => &["work.accept_offer", "work.start"],
        }
    }

    pub fn from_name(s: &str) -> Option<Policy> {
        [
            Policy::MessageRate,
            Policy::ProposalRate,
            Policy::DelegationDepth,
            Policy::QueuedWorkItems,
            Policy::ActiveWorkItems,
        ]
        .into_iter()
        .find(|p| p.name() == s)
    }
}

/// Step C5 for one policy. Returns the grant to consume when the limit is reached and a valid
/// grant is cited; a handler then calls [`consume`] on its primary Event draft.
pub fn check(
    cx: &Ctx,
    policy: Policy,
    reached: bool,
    details: Object,
) -> Result<Option<String>, Rejection> {
    let cited = cx.cmd.override_grant_id();
    if !reached {
        return match cited {
            Some(_) => Err(Rejection::invalid(
                "Command cites a Cooperation Override Grant but no cooperation limit is exceeded",
            )),
            None => Ok(None),
        };
    }
    let limited = |message: String| {
        let mut r = Rejection::new(ErrorCode::RateLimited, message).detail("policy", policy.name());
        for (k, v) in details.iter() {
            r = r.detail(k.as_str(), v.clone());
        }
        r
    };
    let Some(grant_id) = cited else {
        return Err(limited(format!(
            "the {} limit is reached; an approved escalation (Cooperation Override Grant) is required",
            policy.name()
        )));
    };
    let grant = cx.state.override_grants.get(grant_id).ok_or_else(|| {
        limited(format!(
            "Cooperation Override Grant {grant_id} does not exist"
        ))
    })?;
    let mission = cx
        .cmd
        .group_id
        .as_deref()
        .and_then(|g| cx.state.mission_of_group(g));
    let checks: [(bool, &str); 9] = [
        (grant.consumed_at.is_none(), "has already been used"),
        (grant.expires_at > cx.now, "has expired"),
        (
            Some(grant.group_id.as_str()) == cx.cmd.group_id.as_deref()
                && mission.is_some_and(|m| m.id == grant.mission_id),
            "is for another Mission or Group",
        ),
        (
            grant.beneficiary == cx.cmd.actor,
            "names another beneficiary",
        ),
        (
            grant.target_command_kind == cx.cmd.kind,
            "is for another Command kind",
        ),
        (
            grant.target_action_id == cx.cmd.action_id,
            "is for another Action ID",
        ),
        (grant.policy_name == policy.name(), "is for another policy"),
        (
            policy.kinds().contains(&cx.cmd.kind.as_str()),
            "cannot gate this kind",
        ),
        (
            grant.approver.actor_type == crate::model::common::ActorType::Service
                || mission.is_some_and(|m| m.owner == grant.approver),
            "was not approved by the MissionOwner or an Organization service",
        ),
    ];
    for (ok, why) in checks {
        if !ok {
            return Err(limited(format!(
                "Cooperation Override Grant {grant_id} {why}"
            )));
        }
    }
    Ok(Some(grant_id.to_owned()))
}

/// Marks `grant` to be consumed when `draft` (the primary Event) is applied.
pub fn consume(draft: EventDraft, grant: Option<String>) -> EventDraft {
    match grant {
        Some(g) => draft.note("consumedOverrideGrant", Value::string(g)),
        None => draft,
    }
}

/// Consumes a grant noted on `ev` and records it in the Group's policy log (§20).
pub fn apply_consumption(state: &mut State, ev: &EventView) {
    let Some(grant_id) = ev.note("consumedOverrideGrant").and_then(Value::as_str) else {
        return;
    };
    let Some(grant) = state.override_grants.get_mut(grant_id) else {
        return;
    };
    grant.consumed_at = Some(ev.occurred_at);
    grant.consumed_event_id = Some(ev.event_id.to_owned());
    let mut details = Object::new();
    for (k, v) in [
        ("grantId", grant.id.clone()),
        ("missionId", grant.mission_id.clone()),
        ("groupId", grant.group_id.clone()),
        ("policyName", grant.policy_name.clone()),
        ("targetCommandKind", grant.target_command_kind.clone()),
        ("targetActionId", grant.target_action_id.clone()),
        ("consumedEventId", ev.event_id.to_owned()),
    ] {
        details.insert(k, Value::string(v));
    }
    let group_id = grant.group_id.clone();
    if let Some(g) = state.groups.get_mut(&group_id) {
        let mut entry = Object::new();
        entry.insert(
            "entryId",
            Value::string(format!("policy-log:cooperation-override:{}", ev.event_id)),
        );
        entry.insert("decision", Value::string("cooperation override consumed"));
        entry.insert("actor", crate::model::ToJson::to_json(&ev.actor));
        entry.insert("details", Value::Object(details));
        entry.insert("occurredAt", Value::string(ev.occurred_at.format()));
        g.policy_log.push(
            Value::Object(entry)
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
    }
}

pub const GRANTED: &str = "policy.cooperation_override.granted";

/// Who may issue a Cooperation Override Grant (§20): an Organization service, or the
/// MissionOwner through an active `mission_owner` Membership (**owner**).
pub fn override_approver(
    g: &crate::authority::state::GroupState,
    mission: &crate::authority::projection::Mission,
    who: &crate::model::common::Actor,
) -> Result<(), Rejection> {
    if is_service(who) {
        Ok(())
    } else {
        guards::owner_principal(g, mission, who)
    }
}

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        GRANTED => apply_granted(state, ev),
        _ => return None,
    })
}

/// `policy.grant_cooperation_override` (§20; payloads.md §6.32): the MissionOwner, or an
/// Organization service, issues a one-shot grant bound to one Mission, Group, policy,
/// beneficiary, Command kind and Action ID.
pub fn decide_grant(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let grant_id = r.id("grantId");
    let names: Vec<&str> = [
        Policy::MessageRate,
        Policy::ProposalRate,
        Policy::DelegationDepth,
        Policy::QueuedWorkItems,
        Policy::ActiveWorkItems,
    ]
    .iter()
    .map(|p| p.name())
    .collect();
    let policy_name = r.choice("policyName", &names, None);
    let beneficiary = r.principal("beneficiary");
    let target_kind = r.id("targetCommandKind");
    let target_action = r.id("targetActionId");
    let reason = r.text("reason");
    let expires_at = r.ts("expiresAt");
    r.finish(&cmd.kind)?;
    let (Some(policy), Some(beneficiary)) = (Policy::from_name(&policy_name), beneficiary) else {
        return Err(Rejection::invalid(
            "policyName and beneficiary are required",
        ));
    };
    let (g, mission) = guards::group(cx.state, cmd)?;
    override_approver(g, mission, &cmd.actor)?;
    // A MissionOwner does not lift a limit for its own Command (§20, S-17).
    guards::not_self_approval(&cmd.actor, &beneficiary)?;
    guards::non_terminal_mission(mission)?;
    guards::revision(cmd, mission.revision)?;
    guards::new_id(cx.state, "Cooperation Override Grant", &grant_id)?;
    if !policy.kinds().contains(&target_kind.as_str()) {
        return Err(Rejection::invalid(format!(
            "policy {} cannot gate {target_kind}",
            policy.name()
        ))
        .detail("policyName", policy.name())
        .detail("targetCommandKind", target_kind.as_str()));
    }
    // A deadline failure is INVALID_COMMAND (D-6).
    if expires_at <= cx.now || expires_at > mission.deadline {
        return Err(Rejection::invalid(
            "the grant must expire after now and no later than the Mission deadline",
        )
        .detail("expiresAt", expires_at.format())
        .detail("missionDeadline", mission.deadline.format()));
    }
    match g.memberships.get(beneficiary.id.as_str()) {
        Some(m) if m.status != MembershipState::Ended && m.principal == beneficiary => {}
        _ => {
            return Err(Rejection::forbidden(
                "the beneficiary has no current Membership in this Group",
            ));
        }
    }
    if cx
        .state
        .receipts
        .contains(&beneficiary.id.0, &target_action)
    {
        return Err(
            Rejection::transition("the beneficiary has already used the target Action ID")
                .detail("targetActionId", target_action.as_str()),
        );
    }
    let grant = CooperationOverrideGrant {
        approver: cmd.actor.clone(),
        beneficiary,
        consumed_at: None,
        consumed_event_id: None,
        expires_at,
        granted_at: cx.now,
        group_id: g.group.id.clone(),
        id: grant_id,
        mission_id: mission.id.clone(),
        policy_name: policy.name().to_owned(),
        reason,
        signature: cmd.signature_value.clone(),
        target_action_id: target_action,
        target_command_kind: target_kind,
    };
    Ok(vec![EventDraft::group(
        &g.group.id,
        GRANTED,
        CooperationOverrideGranted {
            cooperation_override_grant: grant,
        }
        .to_object(),
    )])
}

/// Stores the grant and records its issuance in the Group's policy log (§20).
pub fn apply_granted(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let CooperationOverrideGranted {
        cooperation_override_grant: grant,
    } = CooperationOverrideGranted::read(ev)?;
    let g = state
        .groups
        .get_mut(&grant.group_id)
        .ok_or_else(|| ApplyError::unknown(ev, "Group", &grant.group_id))?;
    let mut details = Object::new();
    for (k, v) in [
        ("grantId", grant.id.clone()),
        ("missionId", grant.mission_id.clone()),
        ("groupId", grant.group_id.clone()),
        ("policyName", grant.policy_name.clone()),
        ("beneficiaryType", grant.beneficiary.actor_type.to_string()),
        ("beneficiaryId", grant.beneficiary.id.0.clone()),
        ("targetCommandKind", grant.target_command_kind.clone()),
        ("targetActionId", grant.target_action_id.clone()),
        ("reason", grant.reason.clone()),
        ("expiresAt", grant.expires_at.format()),
        ("grantedEventId", ev.event_id.to_owned()),
    ] {
        details.insert(k, Value::string(v));
    }
    let mut entry = Object::new();
    entry.insert(
        "entryId",
        Value::string(format!("policy-log:cooperation-override:{}", ev.event_id)),
    );
    entry.insert("decision", Value::string("cooperation override granted"));
    entry.insert("actor", grant.approver.to_json());
    entry.insert("details", Value::Object(details));
    entry.insert("occurredAt", Value::string(ev.occurred_at.format()));
    g.policy_log.push(entry);
    state.override_grants.insert(grant.id.clone(), grant);
    Ok(())
}
