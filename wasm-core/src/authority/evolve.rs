//! Applying one Event to the state: the only way the authority's state changes. The authority
//! applies the Events it has just sealed; replay applies stored ones. Same code, same result.

use super::clock::Micros;
use super::handlers;
use super::state::{EventRef, State};
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

fn s<'a>(v: &'a Value, p: &str) -> Result<&'a str, String> {
    v.pointer(p)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("event lacks {p}"))
}

/// Parses the envelope of a stored or freshly sealed Event.
pub fn view(event: &Value) -> Result<EventView<'_>, String> {
    let group_id = event.pointer("/groupId").and_then(Value::as_str);
    let sequence = match event.pointer("/sequence") {
        Some(Value::Number(n)) => n.as_safe_u64().ok_or("bad sequence")?,
        None => 0,
        Some(_) => return Err("bad sequence".into()),
    };
    let actor: Actor = event
        .pointer("/actor")
        .ok_or("event lacks actor")
        .and_then(|a| m::from_value(a, false).map_err(|_| "bad actor"))?;
    let occurred_at = Micros::parse(s(event, "/occurredAt")?).ok_or("bad occurredAt")?;
    let payload = event
        .pointer("/payload")
        .and_then(Value::as_object)
        .ok_or("event lacks payload")?;
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

/// Applies `event` to `state`: order check, receipt, then the kind's transition.
pub fn apply(state: &mut State, event: &Value) -> Result<(), String> {
    let ev = view(event)?;
    // Order: Group sequences are gapless from 1 (§15.2); the Organization log likewise.
    let at = match ev.group_id {
        Some(g) => {
            let last = state.groups.get(g).map_or(0, |gs| gs.last_sequence);
            if ev.sequence != last + 1 {
                return Err(format!(
                    "Group {g}: Event sequence {} does not follow {last}",
                    ev.sequence
                ));
            }
            EventRef {
                group_id: Some(g.to_owned()),
                sequence: ev.sequence,
            }
        }
        None => EventRef {
            group_id: None,
            sequence: state.org_sequence + 1,
        },
    };
    handlers::apply(state, &ev)?;
    handlers::cooperation::apply_consumption(state, &ev);
    match ev.group_id {
        Some(g) => {
            let gs = state
                .groups
                .get_mut(g)
                .ok_or_else(|| format!("Event for unknown Group {g}"))?;
            gs.last_sequence = ev.sequence;
            gs.last_occurred_at = ev.occurred_at;
            // Windows for the cooperation rate limits (§20): the last minute of each actor's
            // Messages and proposals, pruned deterministically at Event time.
            if matches!(ev.kind, "message.posted" | "work.proposed") {
                let w = gs
                    .recent
                    .entry((ev.actor.id.0.clone(), ev.kind.to_owned()))
                    .or_default();
                w.push_back(ev.occurred_at);
                let horizon = ev.occurred_at.minus_seconds(60);
                while w.front().is_some_and(|t| *t <= horizon) {
                    w.pop_front();
                }
            }
        }
        None => state.org_sequence += 1,
    }
    state
        .receipts
        .record(&ev.actor.id.0, ev.action_id, ev.command_hash, at);
    Ok(())
}
