//! The frames the node writes, as the server's gateway writes them (`server/src/gateway/mod.rs`
//! `error_frame`, `event_frame`; `server/src/wire.rs` `WireError::document`): the same members,
//! the same §19 codes and messages, built through wasm-core's typed `ProtocolError` so that an
//! `ERROR` validates by construction. Duplicated from the server for now (docs/static-demo.md,
//! "What is written twice"); nothing here reads a clock or a random source.

use wasm_core::authority::{Micros, Rejection};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::{ErrorCode, ProtocolError};
use wasm_core::model::{Id, SafeInt, Str, ToJson};
use wasm_core::time::Timestamp;

/// A refusal on its way to a client: the §19 document's members.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
    pub details: Object,
    pub related_action_id: Option<String>,
    pub related_frame_id: Option<String>,
    pub group_id: Option<String>,
    pub expected_revision: Option<u64>,
    pub current_revision: Option<u64>,
    pub retry_after_ms: Option<u64>,
    /// The node closes the connection after it (every HELLO failure, a fenced or expired
    /// session: binding.md "Errors and what closes the connection").
    pub fatal: Option<bool>,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
            details: Object::new(),
            related_action_id: None,
            related_frame_id: None,
            group_id: None,
            expected_revision: None,
            current_revision: None,
            retry_after_ms: None,
            fatal: None,
        }
    }

    /// The authority's refusal (`WireError::from_rejection`): its code, message and details,
    /// the revisions of a `REVISION_CONFLICT`.
    pub fn from_rejection(r: Rejection) -> Refusal {
        let revision = |name: &str| match r.details.get(name) {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        let mut e = Refusal::new(r.code, String::new());
        e.expected_revision = revision("expectedRevision");
        e.current_revision = revision("currentRevision");
        e.message = r.message;
        e.details = r.details;
        e
    }

    pub fn fatal(mut self) -> Refusal {
        self.fatal = Some(true);
        self
    }

    pub fn about_frame(mut self, frame_id: Option<&str>) -> Refusal {
        self.related_frame_id = frame_id.map(str::to_owned);
        self
    }

    pub fn in_group(mut self, group: &str) -> Refusal {
        self.group_id = Some(group.to_owned());
        self
    }

    pub fn detail(mut self, name: &'static str, v: Value) -> Refusal {
        self.details.insert(name, v);
        self
    }

    /// The Command's Action ID and Group, when they are identifiers (`about_command`).
    pub fn about_command(mut self, command: &Value) -> Refusal {
        let id = |p: &str| {
            command
                .pointer(p)
                .and_then(Value::as_str)
                .filter(|s| s.contains(':'))
                .map(str::to_owned)
        };
        self.related_action_id = id("/actionId");
        if self.group_id.is_none() {
            self.group_id = id("/groupId");
        }
        self
    }

    /// The §19 document at `at`; one that would not validate is replaced by a bare one.
    pub fn document(&self, at: Micros) -> Value {
        let id = |s: &Option<String>| s.clone().map(Id);
        let message = match self.message.trim() {
            "" => "request refused".to_owned(),
            m => m.chars().take(2000).collect(),
        };
        let doc = Timestamp::parse_profile(&at.format())
            .ok()
            .map(|occurred_at| ProtocolError {
                code: self.code,
                message: Str(message),
                retryable: self.code.retry_generally_safe(),
                fatal: self.fatal,
                related_frame_id: id(&self.related_frame_id),
                related_action_id: id(&self.related_action_id),
                group_id: id(&self.group_id),
                expected_revision: self.expected_revision.map(SafeInt),
                current_revision: self.current_revision.map(SafeInt),
                retry_after_ms: self.retry_after_ms.map(SafeInt),
                snapshot_artifact_hash: None,
                details: Some(self.details.clone()).filter(|d| !d.is_empty()),
                occurred_at,
            });
        match doc.map(|d| d.to_json()) {
            Some(v) if wasm_core::model::error::validate(&v, true).is_ok() => v,
            _ => {
                let mut o = Object::new();
                o.insert("code", Value::string(self.code.as_str().to_owned()));
                o.insert("message", Value::string("request refused"));
                o.insert("retryable", Value::Bool(self.code.retry_generally_safe()));
                o.insert("occurredAt", Value::string("1970-01-01T00:00:00Z"));
                Value::Object(o)
            }
        }
    }
}

/// A frame's common head.
pub fn head(frame_id: &str, frame_type: &str) -> Object {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("frameId", Value::string(frame_id.to_owned()));
    o.insert("frameType", Value::string(frame_type.to_owned()));
    o
}

/// An `ERROR` frame around the refusal's document.
pub fn error_frame(frame_id: &str, e: &Refusal, at: Micros) -> String {
    let mut o = head(frame_id, "ERROR");
    o.insert("error", e.document(at));
    json::to_string(&Value::Object(o))
}

/// An `EVENT` frame around an Event's stored JCS text, not re-parsed (the gateway's
/// `event_frame`: the same bytes the authority signed reach the console).
pub fn event_frame(frame_id: &str, jcs: &str) -> String {
    format!(
        r#"{{"protocolVersion":"0.1","frameId":"{frame_id}","frameType":"EVENT","event":{jcs}}}"#
    )
}
