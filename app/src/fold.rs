//! The browser's Event store and fold (issue 13, read side). Verified Events (full documents,
//! delivered by the socket client in Group order after the six stages of §6.4) are kept here and
//! folded into one protocol [`State`] by the authority's own reducer (`evolve::apply`, §5): the
//! console holds no second implementation of any rule. An Event that failed verification never
//! reaches this module.
//!
//! Folding is incremental and bounded: [`EventLog::fold`] applies at most a given number of
//! pending Events, so a large first replay is folded in chunks between which the page yields to
//! the event loop (the progress bar reads [`EventLog::progress`]).
//!
//! Time travel ([`Travel`]) replays the log merged in Event time (per-Group order kept, Groups
//! interleaved by `occurredAt`) with `views::timeline::TimeTravel`, so "as of Event E" means the
//! state every subscribed Group had when E was sealed.

use std::collections::{BTreeMap, HashSet};

use wasm_core::authority::Micros;
use wasm_core::authority::evolve;
use wasm_core::authority::state::State;
use wasm_core::json::Value;
use wasm_core::views::timeline::{TimeTravel, TimeTravelError};

/// Where a first replay (or any backlog) stands: `folded` of `known` verified Events are in the
/// state; `refused` of them the reducer refused (shown, never silently dropped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub folded: usize,
    pub known: usize,
    pub refused: usize,
}

impl Progress {
    /// Everything known is folded.
    pub fn done(&self) -> bool {
        self.folded >= self.known
    }

    /// Per mille folded (1000 when there is nothing to fold), for the progress bar.
    pub fn per_mille(&self) -> u32 {
        if self.known == 0 {
            return 1000;
        }
        u32::try_from(self.folded.min(self.known) * 1000 / self.known).unwrap_or(1000)
    }
}

/// An Event the reducer refused (a misordered or corrupt log; it should never happen with a
/// verified, gap-free stream).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub position: usize,
    pub event_id: String,
    pub reason: String,
}

/// The verified Events received, in delivery order, and the state folded from them.
#[derive(Clone, Debug, Default)]
pub struct EventLog {
    events: Vec<Value>,
    ids: HashSet<String>,
    state: State,
    folded: usize,
    refusals: Vec<Refusal>,
}

impl EventLog {
    pub fn new() -> EventLog {
        EventLog::default()
    }

    /// Queues a verified Event for folding; a known Event ID is ignored (the socket client
    /// already deduplicates; this keeps the store idempotent on its own). Returns whether it
    /// was new.
    pub fn push(&mut self, event: Value) -> bool {
        let Some(id) = event.pointer("/eventId").and_then(Value::as_str) else {
            return false;
        };
        if !self.ids.insert(id.to_owned()) {
            return false;
        }
        self.events.push(event);
        true
    }

    /// Applies at most `max` pending Events with the authority's reducer; returns how many were
    /// taken. An Event the reducer refuses is recorded in [`EventLog::refusals`] and skipped.
    pub fn fold(&mut self, max: usize) -> usize {
        let end = self.events.len().min(self.folded.saturating_add(max));
        let start = self.folded;
        for position in start..end {
            // `apply` checks the envelope and the Group order before it changes anything.
            if let Err(reason) = evolve::apply(&mut self.state, &self.events[position]) {
                self.refuse(position, reason.to_string());
            }
        }
        self.folded = end;
        end - start
    }

    fn refuse(&mut self, position: usize, reason: String) {
        let event_id = self.events[position]
            .pointer("/eventId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.refusals.push(Refusal {
            position,
            event_id,
            reason,
        });
    }

    pub fn pending(&self) -> usize {
        self.events.len() - self.folded
    }

    pub fn progress(&self) -> Progress {
        Progress {
            folded: self.folded,
            known: self.events.len(),
            refused: self.refusals.len(),
        }
    }

    /// The state after every folded Event.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The verified Events, in delivery order.
    pub fn events(&self) -> &[Value] {
        &self.events
    }

    /// The folded Events only.
    pub fn folded_events(&self) -> &[Value] {
        &self.events[..self.folded]
    }

    pub fn refusals(&self) -> &[Refusal] {
        &self.refusals
    }

    /// The folded Events in Event time: each Group's Events in sequence order, Groups
    /// interleaved by `occurredAt` (ties: the Group delivered first). Organization-scoped
    /// Events keep their own order.
    pub fn merged(&self) -> Vec<Value> {
        merge_by_time(self.folded_events())
    }
}

fn occurred(e: &Value) -> Micros {
    e.pointer("/occurredAt")
        .and_then(Value::as_str)
        .and_then(Micros::parse)
        .unwrap_or_default()
}

/// Merges per-stream (Group, or Organization) subsequences of `events` by `occurredAt`, keeping
/// each stream's own order (a k-way merge; stable for equal times by first delivery).
pub fn merge_by_time(events: &[Value]) -> Vec<Value> {
    // Streams in order of first delivery, each a queue of indices.
    let mut order: Vec<Option<String>> = Vec::new();
    let mut streams: BTreeMap<Option<String>, Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let g = e
            .pointer("/groupId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let q = streams.entry(g.clone()).or_default();
        if q.is_empty() {
            order.push(g);
        }
        q.push(i);
    }
    let mut heads: Vec<(usize, &Vec<usize>)> = order
        .iter()
        .filter_map(|g| streams.get(g).map(|q| (0usize, q)))
        .collect();
    let mut out = Vec::with_capacity(events.len());
    loop {
        let mut best: Option<(usize, Micros)> = None;
        for (s, (at, q)) in heads.iter().enumerate() {
            if let Some(&i) = q.get(*at) {
                let t = occurred(&events[i]);
                if best.is_none_or(|(_, bt)| t < bt) {
                    best = Some((s, t));
                }
            }
        }
        let Some((s, _)) = best else { break };
        let (at, q) = &mut heads[s];
        out.push(events[q[*at]].clone());
        *at += 1;
    }
    out
}

/// Which Event the views are pinned to while time travelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsOf {
    /// Its Group (`None`: an Organization-scoped Event).
    pub group_id: Option<String>,
    /// Its Group sequence.
    pub sequence: u64,
    pub event_id: String,
    /// How many Events of the merged log are folded into the pinned state.
    pub position: usize,
    /// Its `occurredAt`: the views' "now" as of then.
    pub at: Micros,
}

/// Time travel over the merged log: the state as of any Event (module documentation).
#[derive(Clone, Debug)]
pub struct Travel {
    tt: TimeTravel,
}

impl Travel {
    /// Over the folded Events of `log`, merged in Event time.
    pub fn new(log: &EventLog) -> Travel {
        Travel {
            tt: TimeTravel::new(log.merged()),
        }
    }

    pub fn len(&self) -> usize {
        self.tt.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tt.is_empty()
    }

    /// Pins the state just after `event_id` (by Event ID, whatever its Group).
    pub fn select(&mut self, event_id: &str) -> Result<(AsOf, State), TimeTravelError> {
        let len = self.tt.len();
        let idx = self
            .tt
            .events()
            .iter()
            .position(|e| e.pointer("/eventId").and_then(Value::as_str) == Some(event_id))
            .ok_or(TimeTravelError::OutOfRange { position: len, len })?;
        let ev = &self.tt.events()[idx];
        let as_of = AsOf {
            group_id: ev
                .pointer("/groupId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            sequence: ev
                .pointer("/sequence")
                .and_then(|v| match v {
                    Value::Number(n) => n.as_safe_u64(),
                    _ => None,
                })
                .unwrap_or(0),
            event_id: event_id.to_owned(),
            position: idx + 1,
            at: occurred(ev),
        };
        let state = self.tt.state_at(idx + 1)?.clone();
        Ok((as_of, state))
    }

    /// The Events replayed so far (what checkpoints save shows here).
    pub fn applied(&self) -> usize {
        self.tt.applied
    }

    /// The state after the first `n` Events of the merged log.
    pub fn state_at(&mut self, n: usize) -> Result<&State, TimeTravelError> {
        self.tt.state_at(n)
    }
}
