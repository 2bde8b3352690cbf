//! The bounded-offline-execution extension (§11.5; payloads.md §9.3): progress a Worker buffered
//! while disconnected, reconciled on `message.post` and `work.checkpoint`.

use super::Ctx;
use crate::authority::EventDraft;
use crate::authority::rejection::Rejection;
use crate::json::Value;
use crate::model::error::ErrorCode;

/// The extension's profile URI and the only supported version.
pub const OFFLINE_EXTENSION: &str = "urn:missionweaveprotocol:extension:bounded-offline-execution";
pub const OFFLINE_VERSION: &str = "0.1.0";

/// Step C6 for `message.post` and `work.checkpoint`: when the Command carries the offline
/// binding, validate it and return the usage Event to append before the Command's own Event
/// (`None` when there is no binding or no usage to charge).
pub fn reconcile(cx: &Ctx) -> Result<Option<EventDraft>, Rejection> {
    let Some(Value::Object(ext)) = &cx.cmd.extensions else {
        return Ok(None);
    };
    if ext.get(OFFLINE_EXTENSION).is_none() {
        return Ok(None);
    }
    Err(Rejection::new(
        ErrorCode::UnknownCriticalExtension,
        "offline reconciliation is not implemented yet",
    ))
}
