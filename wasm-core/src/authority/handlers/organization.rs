//! Organization-scoped bootstrap Commands (payloads.md §6.33, §6.34; checklist I-12..I-14).
//!
//! ```text
//! agent_card_register (service)  card.version > stored ─▶ agent_card_registered (Org log)
//! session_open (service)         card exists          ─▶ work_execution_lease_revoked × n
//!                                                         (each active lease of the Agent,
//!                                                         in its Group) then session_opened
//! ```

use super::{Ctx, Decision};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::organization::{AgentCardRegistered, LeaseRevoked, SessionOpened};
use crate::authority::payload::Reader;
use crate::authority::projection::AgentCardRecord;
use crate::authority::rejection::Rejection;
use crate::authority::state::State;
use crate::authority::{EventDraft, guards, is_service};
use crate::model::error::ErrorCode;
use crate::model::work_item::WorkItemState;

pub const CARD_REGISTERED: &str = "ext.missionweaveprotocol.registry.agent_card_registered";
pub const SESSION_OPENED: &str = "ext.missionweaveprotocol.identity.session_opened";
pub const LEASE_REVOKED: &str = "ext.missionweaveprotocol.core.work_execution_lease_revoked";

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        CARD_REGISTERED => apply_agent_card_registered(state, ev),
        SESSION_OPENED => apply_session_opened(state, ev),
        LEASE_REVOKED => apply_lease_revoked(state, ev),
        _ => return None,
    })
}

/// `…registry.agent_card_register`: an Organization service registers a newer Agent Card.
pub fn decide_agent_card_register(cx: &Ctx) -> Decision {
    if !is_service(&cx.cmd.actor) {
        return Err(Rejection::forbidden(
            "only an Organization service registers Agent Cards",
        ));
    }
    let mut r = Reader::new(&cx.cmd.payload);
    let card = r.nested("card", true, AgentCardRecord::read);
    r.finish(&cx.cmd.kind)?;
    let Some(card) = card else {
        return Err(Rejection::invalid("card is required"));
    };
    if let Some(current) = cx.state.cards.get(&card.agent_id)
        && card.version <= current.version
    {
        return Err(Rejection::new(
            ErrorCode::RevisionConflict,
            "an Agent Card version must increase",
        )
        .detail("agentId", card.agent_id.as_str())
        .detail("current", current.version)
        .detail("received", card.version));
    }
    // Our Event carries the card itself so replay can rebuild the registry (the reference's
    // payload has only agentId and version; the extra member is ours, docs/authority.md).
    let registered = AgentCardRegistered {
        agent_id: card.agent_id.clone(),
        version: card.version,
        card,
    };
    Ok(vec![EventDraft::organization(
        CARD_REGISTERED,
        registered.to_object(),
    )])
}

pub fn apply_agent_card_registered(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let AgentCardRegistered { card, .. } = AgentCardRegistered::read(ev)?;
    state.cards.insert(card.agent_id.clone(), card);
    Ok(())
}

/// `…identity.session_open`: a new Session Epoch fences every older runtime of the Agent (§6.3)
/// and revokes its active Execution Leases, returning those WorkItems to `queued` (I-13).
pub fn decide_session_open(cx: &Ctx) -> Decision {
    if !is_service(&cx.cmd.actor) {
        return Err(Rejection::forbidden(
            "only an Organization service opens Sessions",
        ));
    }
    let mut r = Reader::new(&cx.cmd.payload);
    let agent_id = r.id("agentId");
    r.finish(&cx.cmd.kind)?;
    guards::card(cx.state, &agent_id)?;
    let epoch = cx.state.session_epochs.get(&agent_id).copied().unwrap_or(0) + 1;
    let mut drafts = Vec::new();
    // WorkItem-id order (BTreeMap order), as the reference does.
    for w in cx.state.work_items.values() {
        if w.assignee_id.as_deref() != Some(agent_id.as_str()) || w.status != WorkItemState::Active
        {
            continue;
        }
        let Some(lease_id) = &w.execution_lease_id else {
            continue;
        };
        let revoked = LeaseRevoked {
            work_item_id: w.id.clone(),
            execution_lease_id: lease_id.clone(),
            reason: "session_replaced".into(),
            status: "queued".into(),
            session_epoch: epoch,
        };
        drafts.push(EventDraft::group(
            &w.group_id,
            LEASE_REVOKED,
            revoked.to_object(),
        ));
    }
    let opened = SessionOpened {
        agent_id,
        session_epoch: epoch,
    };
    drafts.push(EventDraft::organization(SESSION_OPENED, opened.to_object()));
    Ok(drafts)
}

pub fn apply_session_opened(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let SessionOpened {
        agent_id,
        session_epoch,
    } = SessionOpened::read(ev)?;
    state.session_epochs.insert(agent_id, session_epoch);
    Ok(())
}

/// The lease is closed (`revoked`, or `expired` if it had run out), the WorkItem returns to
/// `queued` with its ownership kept, and its revision increases.
pub fn apply_lease_revoked(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let LeaseRevoked {
        work_item_id,
        execution_lease_id,
        ..
    } = LeaseRevoked::read(ev)?;
    let work_id = work_item_id.as_str();
    if let Some(lease) = state.leases.get_mut(&execution_lease_id) {
        let expired = lease.expires_at <= ev.occurred_at;
        lease.state = if expired { "expired" } else { "revoked" }.into();
        lease.closed_at = Some(ev.occurred_at);
        lease.closure_reason = Some("Agent Session Epoch was replaced".into());
    }
    let w = state
        .work_items
        .get_mut(work_id)
        .ok_or_else(|| ApplyError::unknown(ev, "WorkItem", work_id))?;
    w.status = WorkItemState::Queued;
    w.execution_lease_id = None;
    w.execution_lease_expires_at = None;
    w.revision += 1;
    w.updated_at = ev.occurred_at;
    Ok(())
}
