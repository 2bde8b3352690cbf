//! An Event as the state transitions read it: [`EventView`], the envelope members parsed once
//! ([`view`]), and [`ApplyError`], why an Event could not be applied. Below both the reducer
//! (`evolve.rs`) and the transitions (`handlers/`, `events/`), which all read Events through it.

use super::clock::Micros;
use crate::json::{Object, Value};
use crate::model::common::Actor;
use crate::model::{self as m};

/// The envelope members that state transitions read.
#[derive(Clone, Debug)]
pub struct EventView<'a> {
    pub event_id: &'a str,
    pub kind: &'a str,
    pub group_id: Option<&'a str>,
    pub sequence: u64,
    pub actor: Actor,
    pub action_id: &'a str,
    pub command_hash: &'a str,
    pub occurred_at: Micros,
    pub payload: &'a Object,
    pub extensions: Option<&'a Value>,
}

impl EventView<'_> {
    /// A replay-only note sealed by the authority (see `STATE_NOTES_EXTENSION`).
    pub fn note(&self, name: &str) -> Option<&Value> {
        self.extensions?
            .as_object()?
            .get(super::STATE_NOTES_EXTENSION)?
            .pointer(&format!("/data/{name}"))
    }
}

/// Why an Event could not be applied. Replay of a log this authority sealed never fails; a
/// failure means a damaged or foreign log (or a defect), and the text says which member or
/// which entity. `Display` keeps the texts callers log and match (`does not follow`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyError {
    /// The envelope lacks a member it must carry (§15.2): `event lacks /eventId`.
    EnvelopeMissing(&'static str),
    /// An envelope member is there but has the wrong shape: `bad sequence`.
    EnvelopeMalformed(&'static str),
    /// Group sequences are gapless from 1 (§15.2).
    OutOfOrder {
        group_id: String,
        sequence: u64,
        last: u64,
    },
    /// No handler family knows the kind.
    NoTransition { kind: String },
    /// The payload lacks a member the transition needs (or it is not of the member's type).
    MissingMember { kind: String, member: &'static str },
    /// A payload member is present but does not parse as its type.
    MalformedMember {
        kind: String,
        member: &'static str,
        reason: String,
    },
    /// A replay note (`STATE_NOTES_EXTENSION`) is present but does not parse.
    MalformedNote {
        kind: String,
        note: &'static str,
        reason: String,
    },
    /// The Event names an entity the state does not hold.
    UnknownEntity {
        kind: String,
        what: &'static str,
        id: String,
    },
    /// A Group Event without a `groupId`.
    MissingGroup { kind: String },
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::EnvelopeMissing(p) => write!(f, "event lacks {p}"),
            ApplyError::EnvelopeMalformed(m) => write!(f, "bad {m}"),
            ApplyError::OutOfOrder {
                group_id,
                sequence,
                last,
            } => write!(
                f,
                "Group {group_id}: Event sequence {sequence} does not follow {last}"
            ),
            ApplyError::NoTransition { kind } => write!(f, "no transition for Event kind {kind}"),
            ApplyError::MissingMember { kind, member } => {
                write!(f, "{kind}: payload lacks {member}")
            }
            ApplyError::MalformedMember {
                kind,
                member,
                reason,
            } => write!(f, "{kind}: {member}: {reason}"),
            ApplyError::MalformedNote { kind, note, reason } => {
                write!(f, "{kind}: {note} note: {reason}")
            }
            ApplyError::UnknownEntity { kind, what, id } => {
                write!(f, "{kind}: unknown {what} {id}")
            }
            ApplyError::MissingGroup { kind } => write!(f, "{kind} needs a Group"),
        }
    }
}

impl std::error::Error for ApplyError {}

impl ApplyError {
    /// [`ApplyError::UnknownEntity`] for the Event `ev`.
    pub fn unknown(ev: &EventView, what: &'static str, id: &str) -> ApplyError {
        ApplyError::UnknownEntity {
            kind: ev.kind.to_owned(),
            what,
            id: id.to_owned(),
        }
    }

    /// [`ApplyError::MissingGroup`] for the Event `ev`.
    pub fn missing_group(ev: &EventView) -> ApplyError {
        ApplyError::MissingGroup {
            kind: ev.kind.to_owned(),
        }
    }
}

fn s<'a>(v: &'a Value, p: &'static str) -> Result<&'a str, ApplyError> {
    v.pointer(p)
        .and_then(Value::as_str)
        .ok_or(ApplyError::EnvelopeMissing(p))
}

/// Parses the envelope of a stored or freshly sealed Event.
pub fn view(event: &Value) -> Result<EventView<'_>, ApplyError> {
    let group_id = event.pointer("/groupId").and_then(Value::as_str);
    let sequence = match event.pointer("/sequence") {
        Some(Value::Number(n)) => n
            .as_safe_u64()
            .ok_or(ApplyError::EnvelopeMalformed("sequence"))?,
        None => 0,
        Some(_) => return Err(ApplyError::EnvelopeMalformed("sequence")),
    };
    let actor: Actor = event
        .pointer("/actor")
        .ok_or(ApplyError::EnvelopeMissing("actor"))
        .and_then(|a| {
            m::from_value(a, false).map_err(|_| ApplyError::EnvelopeMalformed("actor"))
        })?;
    let occurred_at = Micros::parse(s(event, "/occurredAt")?)
        .ok_or(ApplyError::EnvelopeMalformed("occurredAt"))?;
    let payload = event
        .pointer("/payload")
        .and_then(Value::as_object)
        .ok_or(ApplyError::EnvelopeMissing("payload"))?;
    Ok(EventView {
        event_id: s(event, "/eventId")?,
        kind: s(event, "/kind")?,
        group_id,
        sequence,
        actor,
        action_id: s(event, "/cause/id")?,
        command_hash: event
            .pointer("/commandHash")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        occurred_at,
        payload,
        extensions: event.pointer("/extensions"),
    })
}
