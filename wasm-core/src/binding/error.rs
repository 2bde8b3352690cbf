//! The §19 error document a refusal leaves as, from every host of the binding: built through
//! the typed `ProtocolError` and validated against `error.schema.json`, so that a host never
//! sends an invalid one (an unexpected failure leaves a bare valid document instead). The
//! server's `WireError` adds its HTTP status and log around it; demo-node uses it as is.

use crate::authority::{Micros, Rejection};
use crate::id::check_id;
use crate::json::{self, Object, Value};
use crate::model::error::{ErrorCode, ProtocolError};
use crate::model::{Id, SafeInt, Sha256Hash, Str, ToJson};
use crate::time::Timestamp;

/// The schema's bound on `message` (1..=2000 characters).
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// A refusal on its way to a client: the §19 document's members but `occurredAt`, which the
/// host's clock gives to [`Refusal::document`].
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
    pub details: Object,
    pub related_action_id: Option<String>,
    /// The WebSocket frame refused (`relatedFrameId`).
    pub related_frame_id: Option<String>,
    pub group_id: Option<String>,
    pub expected_revision: Option<u64>,
    pub current_revision: Option<u64>,
    pub retry_after_ms: Option<u64>,
    /// Set when the host closes the connection after it (binding.md "Errors and what closes
    /// the connection").
    pub fatal: Option<bool>,
    /// `snapshotArtifactHash` of a `CURSOR_TOO_OLD` (§16).
    pub snapshot_artifact_hash: Option<String>,
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
            snapshot_artifact_hash: None,
        }
    }

    /// The authority's refusal: its code, message and details, and the revisions of a
    /// `REVISION_CONFLICT`.
    pub fn from_rejection(r: Rejection) -> Refusal {
        let revision = |name: &str| match r.details.get(name) {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        let mut e = Refusal::new(r.code, String::new());
        if r.code == ErrorCode::RevisionConflict {
            e.expected_revision = revision("expectedRevision");
            e.current_revision = revision("currentRevision");
        }
        e.message = r.message;
        e.details = r.details;
        e
    }

    /// Marks the refusal as closing the connection (`fatal: true`).
    pub fn fatal(mut self) -> Refusal {
        self.fatal = Some(true);
        self
    }

    pub fn retry_after(mut self, ms: u64) -> Refusal {
        self.retry_after_ms = Some(ms);
        self
    }

    /// Names the refused frame (`relatedFrameId`) when its id is an identifier.
    pub fn about_frame(mut self, frame_id: Option<&str>) -> Refusal {
        self.related_frame_id = frame_id.filter(|s| check_id(s).is_ok()).map(str::to_owned);
        self
    }

    pub fn in_group(mut self, group_id: &str) -> Refusal {
        self.group_id = Some(group_id.to_owned()).filter(|g| check_id(g).is_ok());
        self
    }

    pub fn detail(mut self, name: &str, value: Value) -> Refusal {
        self.details.insert(name.to_owned(), value);
        self
    }

    /// Names the refused Command (`relatedActionId`, `groupId`): the sender's own values, and
    /// only when they are identifiers, so nothing undisclosed is revealed.
    pub fn about_command(mut self, command: &Value) -> Refusal {
        let (action, group) = command_ids(command);
        self.related_action_id = action;
        self.group_id = group;
        self
    }

    /// The error document (`error.schema.json`) at `at`, or `None` should it not validate
    /// (not expected: every member is typed): see [`Refusal::document`].
    pub fn try_document(&self, at: Micros) -> Option<Value> {
        let occurred_at = Timestamp::parse_profile(&at.format()).ok()?;
        let id = |s: &Option<String>| s.clone().map(Id);
        let doc = ProtocolError {
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
            snapshot_artifact_hash: self.snapshot_artifact_hash.clone().map(Sha256Hash),
            details: Some(self.details.clone()).filter(|d| !d.is_empty()),
            occurred_at,
        }
        .to_json();
        crate::model::error::validate(&doc, true)
            .is_ok()
            .then_some(doc)
    }

    /// The error document at `at`; one that would not validate is replaced by
    /// [`fallback_document`], never sent invalid.
    pub fn document(&self, at: Micros) -> Value {
        self.try_document(at)
            .unwrap_or_else(|| fallback_document(self.code))
    }
}

/// What a host of the binding refuses a client with, by area: its §19 code and the message
/// every host sends (binding.md, "Errors and what closes the connection"; the host decides
/// what is fatal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindingError {
    /// The first frame is not `HELLO/client_init`.
    NotAuthenticated,
    /// No first frame in time.
    NoHello,
    /// A handshake step failed (signature, key, transcript, expiry: `hello::HelloFailure`).
    Handshake(&'static str),
    /// The session is fenced by a newer Session Epoch.
    Fenced,
    /// The session's lifetime is over.
    Expired,
    /// The key that opened the session was revoked or ended in the Registry since.
    KeyEnded,
    /// Unknown Group, or one the principal may not see: the same answer (§17.2).
    GroupNotFound,
    /// Framing: binary message, not strict JSON, duplicate members, a frame the client may
    /// not send.
    Framing(String),
    /// A schema-invalid frame.
    Schema(String),
    /// Only `0.1` is spoken.
    Version,
    /// The Command's actor is not this session's principal.
    NotSessionPrincipal,
    /// A text that is not one strict JSON text (§17.4), with the parser's reason.
    NotStrictJson(String),
    /// A frame type a client may not send once authenticated.
    NotAfterAuthentication(String),
    /// An `ACK` of a sequence past the Group's head (§16).
    AckBeyondHead,
    /// A `PING`'s Presence Record about another Agent or Session Epoch (§6.2).
    PresenceNotOwn,
}

impl BindingError {
    pub fn code(&self) -> ErrorCode {
        match self {
            BindingError::NotAuthenticated | BindingError::NoHello | BindingError::Expired => {
                ErrorCode::AuthRequired
            }
            BindingError::Handshake(_) | BindingError::KeyEnded => ErrorCode::AuthInvalidSignature,
            BindingError::Fenced => ErrorCode::AuthStaleSession,
            BindingError::GroupNotFound => ErrorCode::GroupNotFound,
            BindingError::Framing(_)
            | BindingError::NotStrictJson(_)
            | BindingError::NotAfterAuthentication(_)
            | BindingError::AckBeyondHead => ErrorCode::ProtocolViolation,
            BindingError::Schema(_) => ErrorCode::SchemaValidationFailed,
            BindingError::Version => ErrorCode::UnsupportedVersion,
            BindingError::NotSessionPrincipal | BindingError::PresenceNotOwn => {
                ErrorCode::AuthForbidden
            }
        }
    }

    pub fn message(&self) -> String {
        match self {
            BindingError::NotAuthenticated => "the first frame must be HELLO/client_init".into(),
            BindingError::NoHello => "no HELLO/client_init in time; connect again and HELLO".into(),
            BindingError::Handshake(m) => (*m).to_owned(),
            BindingError::Fenced => {
                "this session's Session Epoch is fenced by a newer HELLO".to_owned()
            }
            BindingError::Expired => "the session has expired; HELLO again".to_owned(),
            BindingError::KeyEnded => {
                "the key of this session was revoked or ended in the Registry".to_owned()
            }
            BindingError::GroupNotFound => "Group not found".to_owned(),
            BindingError::Framing(m) | BindingError::Schema(m) => m.clone(),
            BindingError::Version => "no common protocol version: this server speaks 0.1".into(),
            BindingError::NotSessionPrincipal => {
                "the Command's actor is not this session's principal".to_owned()
            }
            BindingError::NotStrictJson(e) => format!("the frame is not one strict JSON text: {e}"),
            BindingError::NotAfterAuthentication(t) => {
                format!("a client may not send {t} frames after authentication")
            }
            BindingError::AckBeyondHead => {
                "the acknowledged sequence is beyond the Group's last Event".to_owned()
            }
            BindingError::PresenceNotOwn => {
                "a Presence Record may only describe this session's Agent".to_owned()
            }
        }
    }

    /// The refusal to send.
    pub fn refusal(&self) -> Refusal {
        Refusal::new(self.code(), self.message())
    }
}

/// The `BACKPRESSURE` refusal that pauses a Group's subscription (§17.3; binding.md, "Replay
/// pages"): where to resume (`details.resumeAfterSequence`) and why (`details.reason`). A
/// completed replay page (`reason` `replay_page`) may be followed at once (`retryAfterMs` 0);
/// a full buffer after `retry_after_ms`.
pub fn continuation(group: &str, resume_after: u64, reason: &str, retry_after_ms: u64) -> Refusal {
    let page = reason == "replay_page";
    let message = if page {
        "replay page complete; SUBSCRIBE again after resumeAfterSequence"
    } else {
        "this Group's buffer is full and it is paused on this connection; SUBSCRIBE again \
         after resumeAfterSequence"
    };
    Refusal::new(ErrorCode::Backpressure, message)
        .retry_after(if page { 0 } else { retry_after_ms })
        .in_group(group)
        .detail("resumeAfterSequence", Value::from(resume_after))
        .detail("reason", Value::string(reason.to_owned()))
}

/// `actionId` and `groupId` of a Command, each when it is an identifier.
pub fn command_ids(command: &Value) -> (Option<String>, Option<String>) {
    let id = |p: &str| {
        command
            .pointer(p)
            .and_then(Value::as_str)
            .filter(|s| check_id(s).is_ok())
            .map(str::to_owned)
    };
    (id("/actionId"), id("/groupId"))
}

/// At most [`MAX_MESSAGE_CHARS`] characters, never empty (the schema's `message`).
pub fn bounded_message(m: &str) -> String {
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
pub fn fallback_document(code: ErrorCode) -> Value {
    let mut o = Object::new();
    o.insert("code", Value::string(code.as_str()));
    o.insert("message", Value::string("request refused"));
    o.insert("retryable", Value::Bool(code.retry_generally_safe()));
    o.insert("occurredAt", Value::string("1970-01-01T00:00:00Z"));
    Value::Object(o)
}

/// An `ERROR` frame (§17, §19) around a document.
pub fn error_frame(frame_id: &str, document: Value) -> String {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("frameId", Value::string(frame_id.to_owned()));
    o.insert("frameType", Value::string("ERROR"));
    o.insert("error", document);
    json::to_string(&Value::Object(o))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{self, Frame};

    fn at() -> Micros {
        Micros::parse("2026-12-06T05:00:00Z").expect("time")
    }

    #[test]
    fn a_refusal_is_a_valid_error_frame_naming_what_was_refused() {
        let r = Rejection::revision(4, 3);
        let command = json::parse(br#"{"actionId":"urn:a:1","groupId":"urn:g:1"}"#).expect("json");
        let e = Refusal::from_rejection(r)
            .about_command(&command)
            .about_frame(Some("urn:f:1"))
            .retry_after(0)
            .fatal();
        let f = error_frame("urn:f:e", e.document(at()));
        let Ok(Frame::Error(f)) = frame::decode(f.as_bytes()) else {
            panic!("{f}");
        };
        let d = f.error.to_json();
        let s = |p: &str| d.pointer(p).and_then(Value::as_str).map(str::to_owned);
        assert_eq!(s("/code").as_deref(), Some("REVISION_CONFLICT"));
        assert_eq!(s("/relatedActionId").as_deref(), Some("urn:a:1"));
        assert_eq!(s("/groupId").as_deref(), Some("urn:g:1"));
        assert_eq!(s("/relatedFrameId").as_deref(), Some("urn:f:1"));
        assert_eq!(s("/occurredAt").as_deref(), Some("2026-12-06T05:00:00Z"));
        assert_eq!(d.pointer("/fatal"), Some(&Value::Bool(true)));
        let n = |p: &str| match d.pointer(p) {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        assert_eq!(
            (n("/currentRevision"), n("/expectedRevision")),
            (Some(4), Some(3))
        );
    }

    #[test]
    fn binding_errors_carry_their_code_and_message() {
        let e = BindingError::GroupNotFound.refusal();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::GroupNotFound, "Group not found")
        );
        let e = BindingError::NotAfterAuthentication("HELLO".into()).refusal();
        assert_eq!(e.code, ErrorCode::ProtocolViolation);
        assert_eq!(
            e.message,
            "a client may not send HELLO frames after authentication"
        );
        assert_eq!(BindingError::Fenced.code(), ErrorCode::AuthStaleSession);
        assert_eq!(BindingError::Expired.code(), ErrorCode::AuthRequired);
    }

    #[test]
    fn a_replay_page_resumes_at_once_a_full_buffer_later() {
        let e = continuation("urn:g:1", 1000, "replay_page", 250);
        assert_eq!(e.code, ErrorCode::Backpressure);
        assert_eq!(e.retry_after_ms, Some(0));
        assert_eq!(e.group_id.as_deref(), Some("urn:g:1"));
        assert_eq!(
            e.details.get("resumeAfterSequence"),
            Some(&Value::from(1000u64))
        );
        assert_eq!(
            continuation("urn:g:1", 3, "buffer_full", 250).retry_after_ms,
            Some(250)
        );
    }

    #[test]
    fn what_is_not_an_identifier_is_left_out_and_messages_are_bounded() {
        let command = json::parse(br#"{"actionId":"no-scheme","groupId":7}"#).expect("json");
        let e = Refusal::new(ErrorCode::InvalidCommand, "é".repeat(2500))
            .about_command(&command)
            .about_frame(Some("not an id"))
            .in_group("nope");
        assert_eq!(
            (e.related_action_id.as_ref(), e.group_id.as_ref()),
            (None, None)
        );
        assert_eq!(e.related_frame_id, None);
        let d = e.document(at());
        let m = d.pointer("/message").and_then(Value::as_str).unwrap_or("");
        assert_eq!(m.chars().count(), MAX_MESSAGE_CHARS);
        let d = Refusal::new(ErrorCode::InvalidCommand, "  ").document(at());
        assert_eq!(
            d.pointer("/message").and_then(Value::as_str),
            Some("request refused")
        );
    }
}
