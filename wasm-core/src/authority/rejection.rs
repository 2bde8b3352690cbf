//! A rejected Command: its wire code (§19), a message, and machine-readable details. The
//! authority never partially applies a rejected Command (§15.3).

use crate::json::{Object, Value};
use crate::model::error::ErrorCode;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    pub code: ErrorCode,
    pub message: String,
    pub details: Object,
}

impl Rejection {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Rejection {
        Rejection {
            code,
            message: message.into(),
            details: Object::new(),
        }
    }

    /// Adds one `details` member (camelCase names).
    pub fn detail(mut self, name: &str, value: impl Into<Value>) -> Rejection {
        self.details.insert(name.to_owned(), value.into());
        self
    }

    pub fn invalid(message: impl Into<String>) -> Rejection {
        Rejection::new(ErrorCode::InvalidCommand, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Rejection {
        Rejection::new(ErrorCode::AuthForbidden, message)
    }

    pub fn transition(message: impl Into<String>) -> Rejection {
        Rejection::new(ErrorCode::InvalidStateTransition, message)
    }

    pub fn not_found(what: &str, id: &str) -> Rejection {
        Rejection::invalid(format!("{what} {id} does not exist")).detail("id", id)
    }

    pub fn group_not_found() -> Rejection {
        Rejection::new(ErrorCode::GroupNotFound, "Group is absent or not disclosed")
    }

    /// `REVISION_CONFLICT` with the current and the sent revision.
    pub fn revision(current: u64, received: u64) -> Rejection {
        Rejection::new(
            ErrorCode::RevisionConflict,
            format!("expected revision {received} but the current revision is {current}"),
        )
        .detail("currentRevision", current)
        .detail("expectedRevision", received)
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Rejection {}
