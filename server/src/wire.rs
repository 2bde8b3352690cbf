//! Wire errors at the HTTP edge (§19): every refusal leaves as the error document of
//! `error.schema.json` itself, built through wasm-core's typed `ProtocolError` so that it
//! validates by construction. Internal text (store errors, paths) never reaches a document:
//! `INTERNAL_ERROR` carries a fixed message and the original goes to the log.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use wasm_core::authority::{Micros, Rejection};
use wasm_core::binding::error::{BindingError, Refusal, fallback_document};
use wasm_core::json::{self, Value};
use wasm_core::model::error::ErrorCode;

/// What an `INTERNAL_ERROR` says: the cause (a store error, a path) stays in the log.
pub const INTERNAL_MESSAGE: &str =
    "the authority failed without accepting the Command; an unchanged retry is safe";

/// A wire error on its way to the sender: the binding's refusal (the document's members,
/// `wasm_core::binding::error`, shared with demo-node), the HTTP status and when it was made.
/// It reads as its [`Refusal`] (`e.code`, `e.message`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct WireError {
    pub status: StatusCode,
    pub refusal: Refusal,
    /// When the server refused (`occurredAt`).
    pub at: Micros,
}

impl std::ops::Deref for WireError {
    type Target = Refusal;
    fn deref(&self) -> &Refusal {
        &self.refusal
    }
}

impl std::ops::DerefMut for WireError {
    fn deref_mut(&mut self) -> &mut Refusal {
        &mut self.refusal
    }
}

/// A binding error (the gateway's refusals, `wasm_core::binding::error`) as the server's wire
/// error: its refusal with the HTTP status and clock around it.
impl From<BindingError> for WireError {
    fn from(e: BindingError) -> WireError {
        WireError::from_refusal(e.refusal())
    }
}

impl WireError {
    /// A refusal with a fixed message; the status follows the code (`INTERNAL_ERROR` 500,
    /// `BACKPRESSURE` 503, the rest 422) unless set with [`WireError::with_status`].
    pub fn new(code: ErrorCode, message: impl Into<String>) -> WireError {
        WireError::from_refusal(Refusal::new(code, message))
    }

    /// The binding's refusal at the server's clock, its status following its code.
    pub fn from_refusal(refusal: Refusal) -> WireError {
        let status = match refusal.code {
            ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Backpressure => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        WireError {
            status,
            refusal,
            at: crate::clock::now(),
        }
    }

    /// The authority's refusal. `INTERNAL_ERROR` texts carry store errors and paths: they are
    /// logged here and replaced by [`INTERNAL_MESSAGE`], without details.
    pub fn from_rejection(r: Rejection) -> WireError {
        if r.code == ErrorCode::InternalError {
            tracing::error!(cause = %r.message, "the authority failed a Command");
            return WireError::new(ErrorCode::InternalError, INTERNAL_MESSAGE);
        }
        WireError::from_refusal(Refusal::from_rejection(r))
    }

    /// A §19 error document as another node of the cluster answered it (a forwarded
    /// Command, docs/cluster.md), with its HTTP status: the same refusal, passed on.
    pub fn from_document(status: u16, doc: &Value) -> Option<WireError> {
        let code = ErrorCode::from_wire(doc.pointer("/code")?.as_str()?)?;
        let message = doc
            .pointer("/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut e = WireError::new(code, message.to_owned());
        e.status = StatusCode::from_u16(status).unwrap_or(e.status);
        let number = |name: &str| match doc.pointer(name) {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        let text = |name: &str| doc.pointer(name).and_then(Value::as_str).map(str::to_owned);
        e.expected_revision = number("/expectedRevision");
        e.current_revision = number("/currentRevision");
        e.retry_after_ms = number("/retryAfterMs");
        e.related_action_id = text("/relatedActionId");
        e.group_id = text("/groupId");
        e.snapshot_artifact_hash = text("/snapshotArtifactHash");
        if let Some(Value::Object(d)) = doc.pointer("/details") {
            e.details = d.clone();
        }
        Some(e)
    }

    pub fn with_status(mut self, status: StatusCode) -> WireError {
        self.status = status;
        self
    }

    pub fn retry_after(mut self, ms: u64) -> WireError {
        self.refusal = self.refusal.retry_after(ms);
        self
    }

    /// Names the refused frame (`relatedFrameId`).
    pub fn about_frame(mut self, frame_id: Option<&str>) -> WireError {
        self.refusal = self.refusal.about_frame(frame_id);
        self
    }

    /// Marks the error as closing the connection (`fatal: true`).
    pub fn fatal(mut self) -> WireError {
        self.refusal = self.refusal.fatal();
        self
    }

    pub fn in_group(mut self, group_id: &str) -> WireError {
        self.refusal = self.refusal.in_group(group_id);
        self
    }

    pub fn detail(mut self, name: &str, value: Value) -> WireError {
        self.refusal = self.refusal.detail(name, value);
        self
    }

    /// Names the refused Command (`relatedActionId`, `groupId`) when its bytes are a JSON
    /// object carrying them: the sender's own values, so nothing undisclosed is revealed.
    pub fn about_command(mut self, bytes: &[u8]) -> WireError {
        if let Ok(v) = json::parse(bytes) {
            self.refusal = self.refusal.about_command(&v);
        }
        self
    }

    /// The error document (`error.schema.json`, `Refusal::document`).
    pub fn document(&self) -> Value {
        match self.refusal.try_document(self.at) {
            Some(v) => v,
            // Unreachable by construction; never send an invalid document.
            None => {
                tracing::error!(code = %self.code, "an error document did not validate");
                fallback_document(self.code)
            }
        }
    }
}

impl IntoResponse for WireError {
    fn into_response(self) -> Response {
        let body = json::to_string(&self.document());
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        if let Some(ms) = self.retry_after_ms {
            // HTTP counts whole seconds: round up so a client never comes back early.
            let secs = ms.div_ceil(1000).max(1);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster node passes the writer's refusal on as it came (docs/cluster.md).
    #[test]
    fn a_forwarded_refusal_reads_back_as_the_same_error() {
        let mut e = WireError::new(ErrorCode::RevisionConflict, "the WorkItem moved on")
            .retry_after(250)
            .in_group("urn:g");
        e.expected_revision = Some(3);
        e.current_revision = Some(4);
        e.related_action_id = Some("urn:a".into());
        let back = WireError::from_document(409, &e.document()).expect("a §19 document");
        assert_eq!(back.code, ErrorCode::RevisionConflict);
        assert_eq!(back.status, StatusCode::CONFLICT);
        assert_eq!(back.message, "the WorkItem moved on");
        assert_eq!(back.retry_after_ms, Some(250));
        assert_eq!(
            (back.expected_revision, back.current_revision),
            (Some(3), Some(4))
        );
        assert_eq!(back.group_id.as_deref(), Some("urn:g"));
        assert_eq!(back.related_action_id.as_deref(), Some("urn:a"));
        // Not an error document: no error is made up.
        for doc in [r#"{"status":"accepted"}"#, r#"{"code":"NOT_A_CODE"}"#, "[]"] {
            let v = wasm_core::json::parse_str(doc).expect("json");
            assert!(WireError::from_document(422, &v).is_none(), "{doc}");
        }
    }

    #[test]
    fn internal_errors_hide_their_cause() {
        let r = Rejection::new(
            ErrorCode::InternalError,
            "the store refused the batch: /srv/data/authority.sqlite: disk I/O error",
        )
        .detail("path", "/srv/data");
        let e = WireError::from_rejection(r);
        assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
        let text = json::to_string(&e.document());
        assert!(!text.contains("/srv"), "{text}");
        assert!(text.contains(INTERNAL_MESSAGE), "{text}");
        assert!(text.contains(r#""retryable":true"#), "{text}");
    }

    #[test]
    fn documents_validate_and_carry_the_command_and_revisions() {
        let r = Rejection::revision(4, 3);
        let bytes = br#"{"actionId":"urn:a:1","groupId":"urn:g:1","kind":"x"}"#;
        let e = WireError::from_rejection(r).about_command(bytes);
        let v = e.document();
        assert!(wasm_core::model::error::validate(&v, true).is_ok());
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
        assert_eq!(s("/code").as_deref(), Some("REVISION_CONFLICT"));
        assert_eq!(s("/relatedActionId").as_deref(), Some("urn:a:1"));
        assert_eq!(s("/groupId").as_deref(), Some("urn:g:1"));
        let n = |p: &str| match v.pointer(p) {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        assert_eq!(
            (n("/currentRevision"), n("/expectedRevision")),
            (Some(4), Some(3))
        );
        // Not ids (relative, not strings): left out rather than sent invalid.
        let e = WireError::new(ErrorCode::InvalidCommand, "x")
            .about_command(br#"{"actionId":"no-scheme","groupId":7}"#);
        assert_eq!((&e.related_action_id, &e.group_id), (&None, &None));
    }

    #[test]
    fn messages_are_bounded_and_never_empty() {
        let long = "é".repeat(2500);
        let v = WireError::new(ErrorCode::InvalidCommand, long).document();
        let m = v.pointer("/message").and_then(Value::as_str).unwrap_or("");
        assert_eq!(m.chars().count(), 2000);
        let v = WireError::new(ErrorCode::InvalidCommand, "  ").document();
        assert_eq!(
            v.pointer("/message").and_then(Value::as_str),
            Some("request refused")
        );
    }

    #[test]
    fn backpressure_has_a_retry_hint_in_the_document_and_the_header() {
        let r = WireError::new(ErrorCode::Backpressure, "busy")
            .retry_after(250)
            .into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            r.headers()
                .get(header::RETRY_AFTER)
                .and_then(|h| h.to_str().ok()),
            Some("1")
        );
    }
}
