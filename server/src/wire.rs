//! Wire errors at the HTTP edge (§19): every refusal leaves as the error document of
//! `error.schema.json` itself, built through wasm-core's typed `ProtocolError` so that it
//! validates by construction. Internal text (store errors, paths) never reaches a document:
//! `INTERNAL_ERROR` carries a fixed message and the original goes to the log.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use wasm_core::authority::{Micros, Rejection};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::{ErrorCode, ProtocolError};
use wasm_core::model::{Id, SafeInt, Str, ToJson};
use wasm_core::time::Timestamp;

/// What an `INTERNAL_ERROR` says: the cause (a store error, a path) stays in the log.
pub const INTERNAL_MESSAGE: &str =
    "the authority failed without accepting the Command; an unchanged retry is safe";

/// The schema's bound on `message` (1..=2000 characters).
const MAX_MESSAGE_CHARS: usize = 2000;

/// A wire error on its way to the sender: the document's members and the HTTP status.
#[derive(Clone, Debug, PartialEq)]
pub struct WireError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    pub details: Object,
    pub related_action_id: Option<String>,
    pub group_id: Option<String>,
    pub expected_revision: Option<u64>,
    pub current_revision: Option<u64>,
    pub retry_after_ms: Option<u64>,
    /// The WebSocket frame refused (`relatedFrameId`, §19).
    pub related_frame_id: Option<String>,
    /// Set when the gateway closes the connection after this error.
    pub fatal: Option<bool>,
    /// `snapshotArtifactHash` of a `CURSOR_TOO_OLD` (§16).
    pub snapshot_artifact_hash: Option<String>,
    /// When the server refused (`occurredAt`).
    pub at: Micros,
}

impl WireError {
    /// A refusal with a fixed message; the status follows the code (`INTERNAL_ERROR` 500,
    /// `BACKPRESSURE` 503, the rest 422) unless set with [`WireError::with_status`].
    pub fn new(code: ErrorCode, message: impl Into<String>) -> WireError {
        let status = match code {
            ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Backpressure => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        WireError {
            status,
            code,
            message: message.into(),
            details: Object::new(),
            related_action_id: None,
            group_id: None,
            expected_revision: None,
            current_revision: None,
            retry_after_ms: None,
            related_frame_id: None,
            fatal: None,
            snapshot_artifact_hash: None,
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
        let revision = |name: &str| match r.details.get(name) {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        let mut e = WireError::new(r.code, String::new());
        if r.code == ErrorCode::RevisionConflict {
            e.expected_revision = revision("expectedRevision");
            e.current_revision = revision("currentRevision");
        }
        e.message = r.message;
        e.details = r.details;
        e
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
        self.retry_after_ms = Some(ms);
        self
    }

    /// Names the refused frame (`relatedFrameId`).
    pub fn about_frame(mut self, frame_id: Option<&str>) -> WireError {
        self.related_frame_id = frame_id
            .filter(|s| wasm_core::id::check_id(s).is_ok())
            .map(str::to_owned);
        self
    }

    /// Marks the error as closing the connection (`fatal: true`).
    pub fn fatal(mut self) -> WireError {
        self.fatal = Some(true);
        self
    }

    pub fn in_group(mut self, group_id: &str) -> WireError {
        self.group_id = Some(group_id.to_owned()).filter(|g| wasm_core::id::check_id(g).is_ok());
        self
    }

    pub fn detail(mut self, name: &str, value: Value) -> WireError {
        self.details.insert(name.to_owned(), value);
        self
    }

    /// Names the refused Command (`relatedActionId`, `groupId`) when its bytes are a JSON
    /// object carrying them: the sender's own values, so nothing undisclosed is revealed.
    pub fn about_command(mut self, bytes: &[u8]) -> WireError {
        if let Ok(v) = json::parse(bytes) {
            let id = |p: &str| {
                v.pointer(p)
                    .and_then(Value::as_str)
                    .filter(|s| wasm_core::id::check_id(s).is_ok())
                    .map(str::to_owned)
            };
            self.related_action_id = id("/actionId");
            self.group_id = id("/groupId");
        }
        self
    }

    /// The error document (`error.schema.json`).
    pub fn document(&self) -> Value {
        let occurred_at = Timestamp::parse_profile(&self.at.format()).ok();
        let id = |s: &Option<String>| s.clone().map(Id);
        let doc = occurred_at.map(|occurred_at| ProtocolError {
            code: self.code,
            message: Str(bounded_message(&self.message)),
            retryable: self.code.retry_generally_safe(),
            fatal: self.fatal,
            related_frame_id: id(&self.related_frame_id),
            related_action_id: id(&self.related_action_id),
            group_id: id(&self.group_id),
            expected_revision: self.expected_revision.map(SafeInt),
            current_revision: self.current_revision.map(SafeInt),
            retry_after_ms: self.retry_after_ms.map(SafeInt),
            snapshot_artifact_hash: self
                .snapshot_artifact_hash
                .clone()
                .map(wasm_core::model::Sha256Hash),
            details: Some(self.details.clone()).filter(|d| !d.is_empty()),
            occurred_at,
        });
        match doc.map(|d| d.to_json()) {
            Some(v) if wasm_core::model::error::validate(&v, true).is_ok() => v,
            // Unreachable by construction; never send an invalid document.
            other => {
                tracing::error!(code = %self.code, document = ?other, "an error document did not validate");
                fallback_document(self.code)
            }
        }
    }
}

/// At most 2000 characters, never empty (the schema's `message`).
fn bounded_message(m: &str) -> String {
    let m = m.trim();
    if m.is_empty() {
        return "request refused".to_owned();
    }
    match m.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => m[..cut].to_owned(),
        None => m.to_owned(),
    }
}

/// A minimal valid document at the epoch, should building the real one ever fail.
fn fallback_document(code: ErrorCode) -> Value {
    let mut o = Object::new();
    o.insert("code", Value::string(code.as_str()));
    o.insert("message", Value::string("request refused"));
    o.insert("retryable", Value::Bool(code.retry_generally_safe()));
    o.insert("occurredAt", Value::string("1970-01-01T00:00:00Z"));
    Value::Object(o)
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
        assert_eq!((e.related_action_id, e.group_id), (None, None));
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
