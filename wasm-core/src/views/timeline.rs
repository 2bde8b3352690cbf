//! The Event log and time travel. The timeline lists every Event with its kind, actor, cause
//! (the Command's Action ID), Group and sequence, filtered by kind, WorkItem and actor.
//! [`TimeTravel`] gives the state as of any position of the log by replaying the Events up to it
//! with the authority's own reducer ([`evolve::apply`], §5): moving forward applies only the
//! Events in between, and moving back restarts from the nearest checkpoint (a copy of the state
//! kept every [`CHECKPOINT_EVERY`] Events).

use super::{Viewer, Views};
use crate::authority::clock::Micros;
use crate::authority::evolve;
use crate::authority::state::State;
use crate::json::Value;
use crate::model::common::Actor;

/// How often [`TimeTravel`] keeps a copy of the state.
pub const CHECKPOINT_EVERY: usize = 256;

/// One Event of the log.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineEntry {
    /// Its index in the log (the state after it is `TimeTravel::state_at(position + 1)`).
    pub position: usize,
    pub event_id: String,
    pub kind: String,
    /// `None` for an Organization-scoped Event.
    pub group_id: Option<String>,
    /// The Group sequence, or the Organization log's.
    pub sequence: u64,
    pub actor: Actor,
    /// `cause.id`: the Action ID of the Command that caused it.
    pub cause_id: String,
    pub correlation_id: Option<String>,
    pub occurred_at: Micros,
    pub work_item_id: Option<String>,
    pub conversation_id: Option<String>,
}

/// Timeline filters; an empty filter admits everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineQuery {
    /// Exact kinds, or prefixes ending in `.` (`"work."`).
    pub kinds: Vec<String>,
    pub work_item_id: Option<String>,
    pub actor_id: Option<String>,
    pub group_id: Option<String>,
}

/// The log as a list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub entries: Vec<TimelineEntry>,
}

impl Timeline {
    /// The entries of `events` (in log order); an Event that cannot be read is skipped.
    pub fn build(events: &[Value]) -> Timeline {
        let mut org = 0u64;
        let mut entries = Vec::with_capacity(events.len());
        for (position, e) in events.iter().enumerate() {
            let Ok(ev) = evolve::view(e) else { continue };
            let sequence = match ev.group_id {
                Some(_) => ev.sequence,
                None => {
                    org += 1;
                    org
                }
            };
            let s = |p: &str| e.pointer(p).and_then(Value::as_str).map(str::to_owned);
            entries.push(TimelineEntry {
                position,
                event_id: ev.event_id.to_owned(),
                kind: ev.kind.to_owned(),
                group_id: ev.group_id.map(str::to_owned),
                sequence,
                actor: ev.actor.clone(),
                cause_id: ev.action_id.to_owned(),
                correlation_id: s("/correlationId"),
                occurred_at: ev.occurred_at,
                // The envelope's, else the WorkItem a `work.authorized` carries (`payload.
                // workItem.id`): a WorkItem's history starts with its authorization.
                work_item_id: s("/workItemId").or_else(|| s("/payload/workItem/id")),
                conversation_id: s("/conversationId"),
            });
        }
        Timeline { entries }
    }

    /// The entries matching `q`, in log order.
    pub fn filter(&self, q: &TimelineQuery) -> Vec<&TimelineEntry> {
        self.entries
            .iter()
            .filter(|e| {
                q.kinds.is_empty()
                    || q.kinds.iter().any(|k| {
                        e.kind == *k || (k.ends_with('.') && e.kind.starts_with(k.as_str()))
                    })
            })
            .filter(|e| {
                q.work_item_id
                    .as_ref()
                    .is_none_or(|w| e.work_item_id.as_ref() == Some(w))
            })
            .filter(|e| q.actor_id.as_ref().is_none_or(|a| e.actor.id.0 == *a))
            .filter(|e| {
                q.group_id
                    .as_ref()
                    .is_none_or(|g| e.group_id.as_ref() == Some(g))
            })
            .collect()
    }
}

/// One mark of a [`WorkItemLane`]: an Event of the WorkItem at its time.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneMark {
    pub position: usize,
    pub event_id: String,
    pub kind: String,
    pub sequence: u64,
    pub occurred_at: Micros,
}

/// The compact timeline's row of one WorkItem (issue 29; as Temporal's compact history groups
/// by activity): its Events in log order, and the span of time they cover.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkItemLane {
    pub work_item_id: String,
    pub group_id: Option<String>,
    pub first_at: Micros,
    pub last_at: Micros,
    pub marks: Vec<LaneMark>,
}

/// The [`WorkItemLane`]s of `entries` (Events naming no WorkItem are left out), ordered by
/// their first Event, and the span of time of all of them (`None` when there is no lane): the
/// common axis every lane's marks are placed on.
pub fn work_item_lanes(
    entries: &[&TimelineEntry],
) -> (Vec<WorkItemLane>, Option<(Micros, Micros)>) {
    let mut lanes: Vec<WorkItemLane> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for e in entries {
        let Some(w) = e.work_item_id.as_deref() else {
            continue;
        };
        let mark = LaneMark {
            position: e.position,
            event_id: e.event_id.clone(),
            kind: e.kind.clone(),
            sequence: e.sequence,
            occurred_at: e.occurred_at,
        };
        match index.get(w) {
            Some(&i) => {
                let lane = &mut lanes[i];
                lane.first_at = lane.first_at.min(e.occurred_at);
                lane.last_at = lane.last_at.max(e.occurred_at);
                lane.marks.push(mark);
            }
            None => {
                index.insert(w, lanes.len());
                lanes.push(WorkItemLane {
                    work_item_id: w.to_owned(),
                    group_id: e.group_id.clone(),
                    first_at: e.occurred_at,
                    last_at: e.occurred_at,
                    marks: vec![mark],
                });
            }
        }
    }
    let span = lanes.iter().fold(None, |acc: Option<(Micros, Micros)>, l| {
        Some(match acc {
            None => (l.first_at, l.last_at),
            Some((a, b)) => (a.min(l.first_at), b.max(l.last_at)),
        })
    });
    (lanes, span)
}

/// Where `at` lies on the axis `span`, in thousandths (0 at its start, 1000 at its end; 0 for
/// an axis of no length): the mark's place along its lane.
pub fn permille(at: Micros, span: (Micros, Micros)) -> u32 {
    let (from, to) = span;
    let len = to.0.saturating_sub(from.0);
    if len <= 0 {
        return 0;
    }
    let off = at.0.saturating_sub(from.0).clamp(0, len);
    // Both at most `len`, so the quotient is at most 1000.
    u32::try_from((i128::from(off) * 1000 / i128::from(len)).clamp(0, 1000)).unwrap_or(1000)
}

/// Why time travel could not reach a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeTravelError {
    /// Past the end of the log.
    OutOfRange { position: usize, len: usize },
    /// The reducer refused the Event at `position` (a corrupt or misordered log).
    Replay {
        position: usize,
        reason: crate::authority::ApplyError,
    },
}

impl std::fmt::Display for TimeTravelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeTravelError::OutOfRange { position, len } => {
                write!(f, "position {position} is past the end of the log ({len})")
            }
            TimeTravelError::Replay { position, reason } => {
                write!(f, "the Event at {position} does not replay: {reason}")
            }
        }
    }
}

impl std::error::Error for TimeTravelError {}

/// The state as of any position of a log (module documentation).
#[derive(Clone, Debug, Default)]
pub struct TimeTravel {
    events: Vec<Value>,
    /// `(position, state after the first `position` Events)`, ascending; starts with `(0, empty)`.
    checkpoints: Vec<(usize, State)>,
    cursor: usize,
    state: State,
    /// Events applied since creation (what incremental moves save is visible here).
    pub applied: usize,
}

impl TimeTravel {
    pub fn new(events: Vec<Value>) -> TimeTravel {
        TimeTravel {
            events,
            checkpoints: vec![(0, State::default())],
            ..TimeTravel::default()
        }
    }

    /// Appends a live Event (the cursor stays where it is).
    pub fn push(&mut self, event: Value) {
        self.events.push(event);
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn events(&self) -> &[Value] {
        &self.events
    }

    /// The position just after the Event at `sequence` of `group_id` (`None` for the
    /// Organization log), if the log holds it.
    pub fn position_after(&self, group_id: Option<&str>, sequence: u64) -> Option<usize> {
        let mut org = 0u64;
        self.events
            .iter()
            .position(|e| {
                let Ok(ev) = evolve::view(e) else {
                    return false;
                };
                match (ev.group_id, group_id) {
                    (Some(g), Some(want)) => g == want && ev.sequence == sequence,
                    (None, None) => {
                        org += 1;
                        org == sequence
                    }
                    _ => false,
                }
            })
            .map(|i| i + 1)
    }

    /// The state after the first `n` Events.
    pub fn state_at(&mut self, n: usize) -> Result<&State, TimeTravelError> {
        if n > self.events.len() {
            return Err(TimeTravelError::OutOfRange {
                position: n,
                len: self.events.len(),
            });
        }
        if n < self.cursor {
            let (at, st) = self
                .checkpoints
                .iter()
                .rev()
                .find(|(p, _)| *p <= n)
                .cloned()
                .unwrap_or_default();
            self.cursor = at;
            self.state = st;
        }
        while self.cursor < n {
            let position = self.cursor;
            evolve::apply(&mut self.state, &self.events[position])
                .map_err(|reason| TimeTravelError::Replay { position, reason })?;
            self.cursor += 1;
            self.applied += 1;
            if self.cursor.is_multiple_of(CHECKPOINT_EVERY)
                && self
                    .checkpoints
                    .last()
                    .is_some_and(|(p, _)| *p < self.cursor)
            {
                self.checkpoints.push((self.cursor, self.state.clone()));
            }
        }
        Ok(&self.state)
    }

    /// Every state-only view as of position `n`, for `viewer` at `now` (the UI passes the
    /// Event time at `n` to see the leases as they were).
    pub fn views_at(
        &mut self,
        n: usize,
        viewer: &Viewer,
        now: Micros,
    ) -> Result<Views, TimeTravelError> {
        let state = self.state_at(n)?;
        Ok(Views::build(state, viewer, now))
    }

    /// When the Event just before position `n` occurred (the clock of the state at `n`).
    pub fn time_at(&self, n: usize) -> Option<Micros> {
        let e = self.events.get(n.checked_sub(1)?)?;
        evolve::view(e).ok().map(|v| v.occurred_at)
    }
}
