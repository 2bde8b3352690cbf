//! One Group's Event inbox for one recipient (§16): at-least-once delivery in, each Event
//! exactly once and in Group order out.
//!
//! The Cursor is the highest contiguous sequence processed. An Event at or below it is a
//! duplicate and is dropped (counted); one past a gap waits until the gap is filled; the Cursor
//! never moves over a gap. A new inbox takes the first Event it receives as the start of its
//! window: the binding replays a Group in order from the subscription point, which for a
//! late-joining Worker is its Membership's visibility floor (§8), not sequence 1.

use std::collections::BTreeMap;
use wasm_core::json::Value;

/// Why an Event could not be taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InboxError {
    /// The Event has no `sequence` or `eventId`.
    Malformed,
    /// A different Event claims an already processed or buffered sequence.
    Conflict { sequence: u64 },
}

impl InboxError {
    /// The wire code a peer sending such an Event stream would get (§19).
    pub fn wire_code(&self) -> wasm_core::model::error::ErrorCode {
        match self {
            InboxError::Malformed => wasm_core::model::error::ErrorCode::SchemaValidationFailed,
            InboxError::Conflict { .. } => wasm_core::model::error::ErrorCode::ProtocolViolation,
        }
    }
}

impl std::fmt::Display for InboxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InboxError::Malformed => f.write_str("an Event without sequence or eventId"),
            InboxError::Conflict { sequence } => {
                write!(f, "two different Events claim sequence {sequence}")
            }
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Inbox {
    cursor: Option<u64>,
    /// Event ids of the processed window's last Events, to tell a duplicate from a conflict.
    seen: BTreeMap<u64, String>,
    pending: BTreeMap<u64, Value>,
    duplicates: u64,
}

/// How many processed Event ids an inbox remembers (duplicates arrive around a reconnect,
/// never far behind).
const REMEMBERED: usize = 256;

impl Inbox {
    pub fn new() -> Inbox {
        Inbox::default()
    }

    /// The highest contiguous sequence processed (0 before the first Event).
    pub fn cursor(&self) -> u64 {
        self.cursor.unwrap_or(0)
    }

    /// How many duplicate deliveries were dropped.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Takes one delivered Event; returns the Events now ready, in sequence order.
    pub fn accept(&mut self, event: Value) -> Result<Vec<Value>, InboxError> {
        let sequence = match event.pointer("/sequence") {
            Some(Value::Number(n)) => n.as_safe_u64().ok_or(InboxError::Malformed)?,
            _ => return Err(InboxError::Malformed),
        };
        let id = event
            .pointer("/eventId")
            .and_then(Value::as_str)
            .ok_or(InboxError::Malformed)?
            .to_owned();
        let cursor = *self.cursor.get_or_insert(sequence.saturating_sub(1));
        if sequence <= cursor {
            return match self.seen.get(&sequence) {
                Some(known) if *known != id => Err(InboxError::Conflict { sequence }),
                _ => {
                    self.duplicates += 1;
                    Ok(Vec::new())
                }
            };
        }
        if let Some(buffered) = self.pending.get(&sequence) {
            if buffered.pointer("/eventId").and_then(Value::as_str) != Some(id.as_str()) {
                return Err(InboxError::Conflict { sequence });
            }
            self.duplicates += 1;
            return Ok(Vec::new());
        }
        self.pending.insert(sequence, event);
        let mut ready = Vec::new();
        let mut next = cursor + 1;
        while let Some(e) = self.pending.remove(&next) {
            if let Some(id) = e.pointer("/eventId").and_then(Value::as_str) {
                self.seen.insert(next, id.to_owned());
            }
            ready.push(e);
            self.cursor = Some(next);
            next += 1;
        }
        while self.seen.len() > REMEMBERED {
            self.seen.pop_first();
        }
        Ok(ready)
    }

    /// How many Events wait behind a gap.
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_core::json::Object;

    fn ev(seq: u64) -> Value {
        let mut o = Object::new();
        o.insert("sequence", Value::from(seq));
        o.insert("eventId", Value::string(format!("urn:x:event:{seq}")));
        Value::Object(o)
    }

    fn seqs(v: &[Value]) -> Vec<u64> {
        v.iter()
            .filter_map(|e| match e.pointer("/sequence") {
                Some(Value::Number(n)) => n.as_safe_u64(),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn duplicates_are_dropped_and_gaps_wait() {
        let mut i = Inbox::new();
        assert_eq!(seqs(&i.accept(ev(1)).unwrap()), [1]);
        assert_eq!(seqs(&i.accept(ev(1)).unwrap()), Vec::<u64>::new());
        assert_eq!(seqs(&i.accept(ev(3)).unwrap()), Vec::<u64>::new());
        assert_eq!((i.cursor(), i.buffered()), (1, 1), "never over a gap");
        assert_eq!(seqs(&i.accept(ev(3)).unwrap()), Vec::<u64>::new());
        assert_eq!(seqs(&i.accept(ev(2)).unwrap()), [2, 3]);
        assert_eq!((i.cursor(), i.duplicates()), (3, 2));
    }

    #[test]
    fn a_late_window_starts_at_its_first_event_and_conflicts_are_refused() {
        let mut i = Inbox::new();
        assert_eq!(seqs(&i.accept(ev(7)).unwrap()), [7]);
        let mut other = ev(7);
        if let Value::Object(o) = &mut other {
            o.insert("eventId", Value::string("urn:x:event:forged"));
        }
        assert_eq!(i.accept(other), Err(InboxError::Conflict { sequence: 7 }));
        assert_eq!(i.accept(Value::Null), Err(InboxError::Malformed));
    }
}
