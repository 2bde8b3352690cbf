//! Applying one Event to the state: the only way the authority's state changes. The authority
//! applies the Events it has just sealed; replay applies stored ones. Same code, same result.

pub use super::event_view::{ApplyError, EventView, view};
use super::handlers;
use super::state::{EventRef, State};
use crate::json::Value;

/// Applies `event` to `state`: order check, receipt, then the kind's transition.
pub fn apply(state: &mut State, event: &Value) -> Result<(), ApplyError> {
    let ev = view(event)?;
    // Order: Group sequences are gapless from 1 (§15.2); the Organization log likewise.
    let at = match ev.group_id {
        Some(g) => {
            let last = state.groups.get(g).map_or(0, |gs| gs.last_sequence);
            if ev.sequence != last + 1 {
                return Err(ApplyError::OutOfOrder {
                    group_id: g.to_owned(),
                    sequence: ev.sequence,
                    last,
                });
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
                .ok_or_else(|| ApplyError::unknown(&ev, "Group", g))?;
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
