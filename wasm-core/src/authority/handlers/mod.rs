//! One module per aggregate family. Each exposes `decide(cx) -> Option<Decision>` (its kinds
//! only; pure) and `apply(state, ev) -> Option<Result<(), String>>` (its Event kinds only), and
//! documents the spec's transition rows above the code that enforces them.

pub mod archive;
pub mod artifact;
pub mod budget;
pub mod cooperation;
pub mod delegation;
pub mod execution_approval;
pub mod membership;
pub mod message;
pub mod mission;
pub mod offline;
pub mod organization;
pub mod work_exec;
pub mod work_plan;

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

type Decider = fn(&Ctx) -> Option<Decision>;
type Applier = fn(&mut State, &EventView) -> Option<Result<(), String>>;

const DECIDERS: &[Decider] = &[
    organization::decide,
    mission::decide,
    membership::decide,
    delegation::decide,
    message::decide,
    work_plan::decide,
    work_exec::decide,
    artifact::decide,
    execution_approval::decide,
    cooperation::decide,
    budget::decide,
    archive::decide,
];

const APPLIERS: &[Applier] = &[
    organization::apply,
    mission::apply,
    membership::apply,
    delegation::apply,
    message::apply,
    work_plan::apply,
    work_exec::apply,
    artifact::apply,
    execution_approval::apply,
    cooperation::apply,
    budget::apply,
    archive::apply,
];

/// Routes a Command to the family that handles its kind.
pub fn decide(cx: &Ctx) -> Decision {
    for d in DECIDERS {
        if let Some(decision) = d(cx) {
            return decision;
        }
    }
    let kind = cx.cmd.kind.as_str();
    Err(Rejection::invalid(format!(
        "Command kind {kind} is not supported by this authority"
    ))
    .detail("kind", kind))
}

/// Routes an Event to the family that handles its kind.
pub fn apply(state: &mut State, ev: &EventView) -> Result<(), String> {
    for a in APPLIERS {
        if let Some(r) = a(state, ev) {
            return r;
        }
    }
    Err(format!("no transition for Event kind {}", ev.kind))
}

/// Builds an Event payload from members.
pub fn payload(members: Vec<(&'static str, Value)>) -> Object {
    members.into_iter().collect()
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
