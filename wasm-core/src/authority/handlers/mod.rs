//! One module per aggregate family. Each exposes `decide_*` functions (state, Command, now →
//! Event drafts or a Rejection; pure) and `apply_*` functions (state, Event → new state), and
//! documents the spec's transition rows above the code that enforces them.

pub mod mission;
pub mod organization;

use super::clock::Micros;
use super::evolve::EventView;
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

/// Routes a Command to its handler by kind.
pub fn decide(cx: &Ctx) -> Decision {
    match cx.cmd.kind.as_str() {
        "ext.missionweaveprotocol.registry.agent_card_register" => {
            organization::decide_agent_card_register(cx)
        }
        "ext.missionweaveprotocol.identity.session_open" => organization::decide_session_open(cx),
        "mission.create" => mission::decide_create(cx, false),
        "mission.create_follow_up" => mission::decide_create(cx, true),
        other => Err(Rejection::invalid(format!(
            "Command kind {other} is not supported by this authority"
        ))
        .detail("kind", other)),
    }
}

/// Routes an Event to its transition by kind.
pub fn apply(state: &mut State, ev: &EventView) -> Result<(), String> {
    match ev.kind {
        "ext.missionweaveprotocol.registry.agent_card_registered" => {
            organization::apply_agent_card_registered(state, ev)
        }
        "ext.missionweaveprotocol.identity.session_opened" => {
            organization::apply_session_opened(state, ev)
        }
        "ext.missionweaveprotocol.core.work_execution_lease_revoked" => {
            organization::apply_lease_revoked(state, ev)
        }
        "mission.created" | "mission.follow_up.created" => mission::apply_created(state, ev),
        other => Err(format!("no transition for Event kind {other}")),
    }
}

/// Builds an Event payload from members.
pub fn payload(members: Vec<(&str, Value)>) -> Object {
    let mut o = Object::new();
    for (k, v) in members {
        o.insert(k, v);
    }
    o
}

/// Reads a projection embedded in an Event payload.
pub fn embedded<T: crate::model::FromJson>(ev: &EventView, member: &str) -> Result<T, String> {
    let v = ev
        .payload
        .get(member)
        .ok_or_else(|| format!("{}: payload lacks {member}", ev.kind))?;
    crate::model::from_value(v, false).map_err(|e| format!("{}: {member}: {e}", ev.kind))
}

/// Reads a string member of an Event payload.
pub fn member<'e>(ev: &'e EventView, name: &str) -> Result<&'e str, String> {
    ev.payload
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{}: payload lacks {name}", ev.kind))
}

/// Reads an integer member of an Event payload.
pub fn member_u64(ev: &EventView, name: &str) -> Result<u64, String> {
    match ev.payload.get(name) {
        Some(Value::Number(n)) => n
            .as_safe_u64()
            .ok_or_else(|| format!("{}: bad {name}", ev.kind)),
        _ => Err(format!("{}: payload lacks {name}", ev.kind)),
    }
}
