//! One module per aggregate family. Each exposes one `decide_…(cx) -> Decision` per Command
//! kind (pure; [`decide`] routes to it) and `apply(state, ev) -> Option<Result<(), ApplyError>>`
//! (its Event kinds only), and documents the spec's transition rows above the code that
//! enforces them.

pub mod archive;
pub mod artifact;
pub mod budget;
pub mod cooperation;
pub mod delegation;
pub mod execution_approval;
pub mod membership;
pub mod message;
pub mod mission;
pub mod offline;
pub mod organization;
pub mod work_exec;
pub mod work_plan;

use super::clock::Micros;
use super::event_view::{ApplyError, EventView};
use super::rejection::Rejection;
use super::state::State;
use super::{AuthorityConfig, CommandView, EventDraft};
use crate::json::{Object, Value};

/// What a handler may read.
pub struct Ctx<'a> {
    pub state: &'a State,
    pub cmd: &'a CommandView,
    pub now: Micros,
    pub config: &'a AuthorityConfig,
}

pub type Decision = Result<Vec<EventDraft>, Rejection>;

type Applier = fn(&mut State, &EventView) -> Option<Result<(), ApplyError>>;

const APPLIERS: &[Applier] = &[
    organization::apply,
    mission::apply,
    membership::apply,
    delegation::apply,
    message::apply,
    work_plan::apply,
    work_exec::apply,
    artifact::apply,
    execution_approval::apply,
    cooperation::apply,
    budget::apply,
    archive::apply,
];

/// Routes a Command to the decider of its kind: one exhaustive `match` over the 32 core kinds
/// of §15.1 (a core kind without a decider does not compile), then the Extension kinds this
/// authority defines (§18); any other kind is refused.
pub fn decide(cx: &Ctx) -> Decision {
    use crate::model::command::{CommandKind, CoreCommandKind as K};
    match &cx.cmd.command.kind {
        CommandKind::Core(k) => match k {
            K::MissionCreate => mission::decide_create(cx, false),
            K::MissionCreateFollowUp => mission::decide_create(cx, true),
            K::MissionCreateChild => mission::decide_create_child(cx),
            K::MissionAssignCoordinator => mission::decide_assign_coordinator(cx),
            K::MissionRenewCoordinator => mission::decide_renew_coordinator(cx),
            K::MissionSubmitForApproval => mission::decide_submit_for_approval(cx),
            K::MissionApprove => mission::decide_approve(cx),
            K::MissionRequestChanges => mission::decide_request_changes(cx),
            K::MissionCancel => mission::decide_cancel(cx),
            K::MissionTerminate => mission::decide_terminate(cx),
            K::MembershipChange => membership::decide_change(cx),
            K::MembershipEnd => membership::decide_end(cx),
            K::MembershipGrantDelegation => delegation::decide_grant(cx),
            K::MessagePost => message::decide_post(cx),
            K::MessageCorrect => message::decide_amend(cx, message::Amend::Correct),
            K::MessageRetract => message::decide_amend(cx, message::Amend::Retract),
            K::MessageRedact => message::decide_amend(cx, message::Amend::Redact),
            K::WorkPropose => work_plan::decide_propose(cx),
            K::WorkAuthorize => work_plan::decide_authorize(cx),
            K::WorkOffer => work_plan::decide_offer(cx),
            K::WorkAcceptOffer => work_plan::decide_accept_offer(cx),
            K::WorkStart => work_exec::decide_start(cx),
            K::WorkCheckpoint => work_exec::decide_checkpoint(cx),
            K::WorkBlock => work_exec::decide_block(cx),
            K::WorkUnblock => work_exec::decide_unblock(cx),
            K::WorkSubmit => work_exec::decide_submit(cx),
            K::WorkAcceptResult => work_exec::decide_accept_result(cx),
            K::WorkFail => work_exec::decide_fail(cx),
            K::WorkCancel => work_exec::decide_cancel(cx),
            K::ArtifactPublish => artifact::decide_publish(cx),
            K::ApprovalGrantExecution => execution_approval::decide_grant_execution(cx),
            K::PolicyGrantCooperationOverride => cooperation::decide_grant(cx),
        },
        CommandKind::Ext(k) => match k.as_str() {
            crate::model::command::AGENT_CARD_REGISTER => {
                organization::decide_agent_card_register(cx)
            }
            crate::model::command::SESSION_OPEN => organization::decide_session_open(cx),
            work_plan::DEPENDENCY_ADD => work_plan::decide_dependency_add(cx),
            work_exec::LEASE_RENEW => work_exec::decide_lease_renew(cx),
            budget::USAGE_RECORD => budget::decide_usage_record(cx),
            archive::GROUP_ARCHIVE => archive::decide_archive(cx),
            other => Err(Rejection::invalid(format!(
                "Command kind {other} is not supported by this authority"
            ))
            .detail("kind", other)),
        },
    }
}

/// Routes an Event to the family that handles its kind.
pub fn apply(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    for a in APPLIERS {
        if let Some(r) = a(state, ev) {
            return r;
        }
    }
    Err(ApplyError::NoTransition {
        kind: ev.kind.to_owned(),
    })
}

/// Builds a payload object from members (Commands in the harness and tests; Event payloads
/// are written by their typed structs, `authority::events`).
pub fn payload(members: Vec<(&'static str, Value)>) -> Object {
    members.into_iter().collect()
}

/// Re-encodes the payload of `ev` through its typed struct (`events/`): `None` for a kind
/// without one. The round-trip test compares the result with the stored payload.
pub fn reencode(ev: &EventView) -> Option<Result<Object, ApplyError>> {
    use self::{
        archive as arch, artifact as art, budget as bud, cooperation as coop, delegation as del,
        execution_approval as appr, membership as mem, message as msg, organization as org,
        work_exec as exec, work_plan as plan,
    };
    use super::events::mission::*;
    use super::events::{
        EventPayload, archive, artifact, budget, grants, membership, message, organization,
        work_exec, work_plan,
    };
    fn via<P: EventPayload>(ev: &EventView) -> Option<Result<Object, ApplyError>> {
        Some(P::read(ev).map(|p| p.to_object()))
    }
    match ev.kind {
        org::CARD_REGISTERED => via::<organization::AgentCardRegistered>(ev),
        org::SESSION_OPENED => via::<organization::SessionOpened>(ev),
        org::LEASE_REVOKED => via::<organization::LeaseRevoked>(ev),
        exec::STARTED | exec::PROGRESSED => via::<work_exec::LeaseIssued>(ev),
        exec::CHECKPOINTED => via::<work_exec::WorkCheckpointed>(ev),
        exec::BLOCKED => via::<work_exec::WorkBlocked>(ev),
        exec::UNBLOCKED => via::<work_exec::WorkUnblocked>(ev),
        exec::SUBMITTED => via::<work_exec::WorkSubmitted>(ev),
        exec::RESULT_ACCEPTED => via::<work_exec::ResultAccepted>(ev),
        exec::FAILED | exec::CANCELLED => via::<work_exec::WorkClosed>(ev),
        "mission.created" | "mission.follow_up.created" => via::<MissionCreated>(ev),
        "mission.child.created" => via::<ChildCreated>(ev),
        "mission.coordinator.assigned" => via::<CoordinatorAssigned>(ev),
        "mission.coordinator.renewed" => via::<CoordinatorRenewed>(ev),
        "mission.submitted_for_approval" => via::<SubmittedForApproval>(ev),
        "mission.approved" => via::<MissionApproved>(ev),
        "mission.changes_requested" => via::<ChangesRequested>(ev),
        "mission.cancelled" | "mission.terminated" => via::<MissionClosed>(ev),
        mem::CHANGED => via::<membership::MembershipChanged>(ev),
        mem::ENDED => via::<membership::MembershipEnded>(ev),
        del::GRANTED => via::<membership::DelegationGranted>(ev),
        msg::POSTED => via::<message::MessagePosted>(ev),
        msg::CORRECTED | msg::RETRACTED | msg::REDACTED => via::<message::MessageAmended>(ev),
        appr::GRANTED => via::<grants::ExecutionApprovalGranted>(ev),
        coop::GRANTED => via::<grants::CooperationOverrideGranted>(ev),
        plan::PROPOSED => via::<work_plan::WorkProposed>(ev),
        plan::AUTHORIZED => via::<work_plan::WorkAuthorized>(ev),
        plan::OFFER_CREATED => via::<work_plan::OfferCreated>(ev),
        plan::OFFER_ACCEPTED => via::<work_plan::OfferAccepted>(ev),
        plan::CONTRACT_REVISED => via::<work_plan::ContractRevised>(ev),
        bud::USAGE_RECORDED => via::<budget::UsageRecorded>(ev),
        arch::SNAPSHOT_CREATED => via::<archive::SnapshotCreated>(ev),
        arch::ARCHIVED => via::<archive::GroupArchived>(ev),
        art::PUBLISHED => via::<artifact::ArtifactPublished>(ev),
        _ => None,
    }
}
