//! The bounded-offline-execution extension (§11.5; payloads.md §9.3): progress a Worker buffered
//! while disconnected, reconciled on `message.post` and `work.checkpoint`.
//!
//! ```text
//! extension entry? ── no ──▶ nothing to reconcile
//!     │ yes
//!     ▼ kind, version/critical, binding shape and window     ── INVALID_COMMAND
//!     ▼ actor = agentId, envelope groupId = binding groupId  ── AUTH_FORBIDDEN
//!     ▼ bufferedAt ≤ issuedAt ≤ now                          ── INVALID_COMMAND
//!     ▼ WorkItem exists, active or queued, owner at the bound Ownership Epoch,
//!       the Message / checkpoint stays inside the bound WorkItem
//!     ▼ the historical lease: exists, scope, holder, Session Epoch, expiry, disconnect and
//!       buffer times inside it and not after its closure   ── WORK_LEASE_EXPIRED / …
//!     ▼ non-zero delta: the ledger accepts it over the whole ancestry ── BUDGET_EXCEEDED
//!     ▼
//! `…resource_usage_recorded` (with `offlineReconciliation`), appended before the Command's
//! own Event, in one transaction with it.
//! ```

use super::Ctx;
use crate::authority::clock::Micros;
use crate::authority::payload::Reader;
use crate::authority::projection::ResourceUsage;
use crate::authority::rejection::Rejection;
use crate::authority::{CommandView, EventDraft, guards};
use crate::json::{Object, Value};
use crate::model::common::ActorType;
use crate::model::error::ErrorCode;
use crate::model::work_item::WorkItemState;

/// The extension's profile URI and the only supported version.
pub const OFFLINE_EXTENSION: &str = "urn:missionweaveprotocol:extension:bounded-offline-execution";
pub const OFFLINE_VERSION: &str = "0.1.0";

/// The only kinds that may carry offline progress (reversible progress, §11.5).
pub const OFFLINE_KINDS: [&str; 2] = ["message.post", "work.checkpoint"];

/// The offline binding (payloads.md §9.3).
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub agent_id: String,
    pub group_id: String,
    pub work_item_id: String,
    pub session_epoch: u64,
    pub ownership_epoch: u64,
    pub execution_lease_id: String,
    pub disconnected_at: Micros,
    pub buffered_at: Micros,
    pub grace_deadline: Micros,
    pub execution_lease_expires_at: Micros,
    pub resource_usage_delta: ResourceUsage,
}

/// The offline extension entry of a Command, if it carries one.
pub fn entry(cmd: &CommandView) -> Option<&Value> {
    match &cmd.extensions {
        Some(Value::Object(ext)) => ext.get(OFFLINE_EXTENSION),
        _ => None,
    }
}

/// The first check of step C6 for every kind: only `message.post` and `work.checkpoint` may
/// carry the offline binding (`INVALID_COMMAND`). The reference runs this for every Command;
/// the two reconciling kinds run it again inside [`reconcile`].
pub fn check_placement(cmd: &CommandView) -> Result<(), Rejection> {
    if entry(cmd).is_some() && !OFFLINE_KINDS.contains(&cmd.kind.as_str()) {
        return Err(Rejection::invalid(
            "offline execution binding is valid only for reversible progress Commands",
        )
        .detail("kind", cmd.kind.as_str()));
    }
    Ok(())
}

fn read_binding(data: &Object) -> Result<Binding, Rejection> {
    let mut r = Reader::new(data);
    let max = crate::json::MAX_SAFE_INTEGER;
    let b = Binding {
        agent_id: r.id("agentId"),
        group_id: r.id("groupId"),
        work_item_id: r.id("workItemId"),
        session_epoch: r.int("sessionEpoch", 1, max, None),
        ownership_epoch: r.int("ownershipEpoch", 1, max, None),
        execution_lease_id: r.id("executionLeaseId"),
        disconnected_at: r.ts("disconnectedAt"),
        buffered_at: r.ts("bufferedAt"),
        grace_deadline: r.ts("graceDeadline"),
        execution_lease_expires_at: r.ts("executionLeaseExpiresAt"),
        resource_usage_delta: r
            .nested("resourceUsageDelta", false, ResourceUsage::read)
            .unwrap_or_default(),
    };
    if !r.has_errors() {
        if b.disconnected_at > b.buffered_at {
            r.error(
                "bufferedAt",
                "offline progress cannot predate disconnection",
            );
        }
        if b.buffered_at >= b.grace_deadline {
            r.error(
                "graceDeadline",
                "offline progress must precede its grace deadline",
            );
        }
        if b.grace_deadline > b.execution_lease_expires_at {
            r.error(
                "graceDeadline",
                "offline grace cannot exceed the Execution Lease",
            );
        }
        if b.resource_usage_delta.external_actions != 0 {
            r.error(
                "resourceUsageDelta.externalActions",
                "offline progress cannot consume external actions",
            );
        }
    }
    r.finish("offline execution binding").map_err(|mut e| {
        e.message = "offline execution binding is invalid".into();
        e
    })?;
    Ok(b)
}

fn lease_expired(message: &str) -> Rejection {
    Rejection::new(ErrorCode::WorkLeaseExpired, message.to_owned())
}

/// Step C6 for `message.post` and `work.checkpoint`: when the Command carries the offline
/// binding, validate it (payloads.md §9.3, checks in order) and return the usage Event to append
/// before the Command's own Event (`None` when there is no binding or no usage to charge).
/// Call it after the payload has been validated, before the kind's own guards.
pub fn reconcile(cx: &Ctx) -> Result<Option<EventDraft>, Rejection> {
    let cmd = cx.cmd;
    let Some(entry) = entry(cmd) else {
        return Ok(None);
    };
    check_placement(cmd)?;
    let version_ok = entry.pointer("/version").and_then(Value::as_str) == Some(OFFLINE_VERSION);
    let critical = matches!(entry.pointer("/critical"), Some(Value::Bool(true)));
    if !version_ok || !critical {
        return Err(Rejection::invalid(
            "offline execution binding version or criticality is invalid",
        ));
    }
    let data = entry
        .pointer("/data")
        .and_then(Value::as_object)
        .ok_or_else(|| Rejection::invalid("offline execution binding is invalid"))?;
    let b = read_binding(data)?;
    if cmd.actor.actor_type != ActorType::Agent || cmd.actor.id.as_str() != b.agent_id {
        return Err(Rejection::forbidden(
            "offline progress Agent binding does not match the Command",
        ));
    }
    if cmd.group_id.as_deref() != Some(b.group_id.as_str()) {
        return Err(Rejection::forbidden(
            "offline progress Group binding does not match the Command",
        ));
    }
    if cmd.issued_at < b.buffered_at || cmd.issued_at > cx.now {
        return Err(Rejection::invalid(
            "offline reconciliation timestamp is outside its valid window",
        ));
    }
    let w = match cx.state.work_items.get(&b.work_item_id) {
        Some(w) if w.group_id == b.group_id => w,
        _ => return Err(Rejection::not_found("WorkItem", &b.work_item_id)),
    };
    if !matches!(w.status, WorkItemState::Active | WorkItemState::Queued) {
        return Err(Rejection::transition(
            "offline progress must reconcile before submission or another state transition",
        )
        .detail("workItemId", w.id.as_str())
        .detail("status", w.status.as_str()));
    }
    guards::work_owner(w, cmd, b.ownership_epoch, cx.now)?;
    // The progress must stay inside the bound WorkItem (payload already validated).
    let p = cmd.payload_filled(true, true);
    let text = |name: &str| p.get(name).and_then(Value::as_str).map(str::trim);
    let inside = if cmd.kind == "message.post" {
        text("conversationId") == Some(w.conversation_id.as_str())
    } else {
        let epoch = match p.get("ownershipEpoch") {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        text("workItemId") == Some(w.id.as_str()) && epoch == Some(b.ownership_epoch)
    };
    if !inside {
        return Err(Rejection::forbidden(if cmd.kind == "message.post" {
            "offline Message is outside the bound WorkItem Conversation"
        } else {
            "offline checkpoint is outside the bound WorkItem"
        }));
    }
    let lease = cx.state.leases.get(&b.execution_lease_id).ok_or_else(|| {
        lease_expired("Execution Lease does not exist")
            .detail("executionLeaseId", b.execution_lease_id.as_str())
    })?;
    if lease.mission_id != w.mission_id
        || lease.group_id != w.group_id
        || lease.work_item_id != w.id
    {
        return Err(Rejection::forbidden(
            "Execution Lease belongs to another scope",
        ));
    }
    if lease.ownership_epoch != b.ownership_epoch {
        return Err(Rejection::new(
            ErrorCode::WorkStaleOwnership,
            "Execution Lease carries a stale ownership epoch",
        ));
    }
    if lease.holder_agent_id != b.agent_id {
        return Err(Rejection::forbidden(
            "offline progress Agent did not hold the Execution Lease",
        ));
    }
    if lease.session_epoch != b.session_epoch {
        return Err(Rejection::new(
            ErrorCode::AuthStaleSession,
            "offline progress Session Epoch does not match its Execution Lease",
        )
        .detail("leaseSessionEpoch", lease.session_epoch)
        .detail("bindingSessionEpoch", b.session_epoch));
    }
    if b.execution_lease_expires_at != lease.expires_at {
        return Err(lease_expired(
            "offline progress carries an inconsistent Execution Lease expiry",
        ));
    }
    if !(lease.starts_at <= b.disconnected_at && b.disconnected_at < lease.expires_at) {
        return Err(lease_expired(
            "offline disconnection occurred outside the Execution Lease",
        ));
    }
    if b.buffered_at >= lease.expires_at {
        return Err(lease_expired(
            "offline progress was buffered after the Execution Lease expired",
        ));
    }
    if lease.closed_at.is_some_and(|t| b.buffered_at > t) {
        return Err(lease_expired(
            "offline progress was buffered after the Execution Lease closed",
        ));
    }
    if b.resource_usage_delta.is_zero() {
        return Ok(None);
    }
    let mut body = super::budget::usage_payload(
        cx.state,
        &w.id,
        &lease.lease_id,
        b.ownership_epoch,
        &b.resource_usage_delta,
    )?;
    let mut rec = Object::new();
    rec.insert("disconnectedAt", Value::string(b.disconnected_at.format()));
    rec.insert("bufferedAt", Value::string(b.buffered_at.format()));
    rec.insert("graceDeadline", Value::string(b.grace_deadline.format()));
    rec.insert("executionSessionEpoch", Value::from(b.session_epoch));
    rec.insert(
        "reconciliationSessionEpoch",
        cmd.session_epoch().map_or(Value::Null, Value::from),
    );
    rec.insert("reconciledAt", Value::string(cx.now.format()));
    rec.insert("progressActionId", Value::string(cmd.action_id.clone()));
    body.insert("offlineReconciliation", Value::Object(rec));
    Ok(Some(EventDraft::group(
        &w.group_id,
        super::budget::USAGE_RECORDED,
        body,
    )))
}

/// The Command's extensions (§17.4, §18), checked before step C3: the offline-execution binding,
/// the one extension this authority interprets, where it may travel, and no critical extension
/// it cannot interpret.
pub fn check_extensions(cmd: &CommandView) -> Result<(), Rejection> {
    // The offline-execution binding only travels on reversible progress (payloads.md §9.3).
    check_placement(cmd)?;
    // §17.4, §18: a critical extension we cannot interpret refuses the transition.
    if let Some(crate::json::Value::Object(ext)) = &cmd.extensions {
        for (uri, entry) in ext.iter() {
            let critical = matches!(
                entry.pointer("/critical"),
                Some(crate::json::Value::Bool(true))
            );
            let version = entry
                .pointer("/version")
                .and_then(crate::json::Value::as_str);
            let supported = uri.as_str() == OFFLINE_EXTENSION && version == Some(OFFLINE_VERSION);
            if critical && !supported {
                return Err(Rejection::new(
                    ErrorCode::UnknownCriticalExtension,
                    format!("critical extension {} cannot be interpreted", uri.as_str()),
                )
                .detail("profileUri", uri.as_str())
                .detail("receivedVersion", version.unwrap_or_default()));
            }
        }
    }
    Ok(())
}
