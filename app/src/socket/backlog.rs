//! The socket's backlog replay on the Worker pool (issue 13), the pure part, tested natively.
//!
//! While the machine is resuming and more than a threshold of frames arrived in this resume,
//! the browser driver (`socket::browser`) stops feeding frames one by one: it holds them here
//! ([`Backlog`]), cuts them into chunks (up to a chunk size, or when the socket is idle), has a
//! Web Worker verify each chunk ([`verify_frames`]: frame decode and the six stages of §6.4 on
//! the frame's `event`, exactly what [`RegistryCheck`](super::RegistryCheck) does on the page),
//! and feeds the frames back to the machine unchanged, chunk after chunk in arrival order, with
//! a [`PreVerified`] check that answers from the verdicts. Everything else (order, dedupe, gaps,
//! paging, Commands) stays in the machine: it sees the same frames in the same order, only
//! later, each with its arrival time.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use super::machine::EventCheck;
use crate::replay::{ArrivalError, Verdict};
use wasm_core::crypto::DocumentKind;
use wasm_core::crypto::registry::ValidatedRegistry;
use wasm_core::crypto::verify::{self, Stage, VerifyError};
use wasm_core::frame::{self, Frame};
use wasm_core::json::Value;
use wasm_core::model::error::ErrorCode;

/// What a worker says of one held frame: `None` when it is not an `EVENT` frame (or does not
/// decode: the machine reports it as today), else the verdict on its `event`.
pub type FrameVerdict = Option<Verdict>;

/// The Event carried by an `EVENT` frame's text.
pub fn event_of(text: &[u8]) -> Option<Value> {
    match frame::decode(text) {
        Ok(Frame::Event(ev)) => Some(ev.event.value),
        _ => None,
    }
}

/// What a worker does with a chunk of frame texts: each `EVENT` frame's Event through
/// `verify_value` with `DocumentKind::Event` (the same call as `RegistryCheck`, so the same
/// verdicts). Without a Registry nothing verifies (fail closed, stage 4).
pub fn verify_frames(texts: &[&[u8]], registry: Option<&ValidatedRegistry>) -> Vec<FrameVerdict> {
    texts
        .iter()
        .map(|t| {
            let event = event_of(t)?;
            let Some(registry) = registry else {
                return Some(Verdict::Refused {
                    stage: Stage::KeyResolution,
                    reason: "no Registry evidence: the Event cannot be verified".into(),
                });
            };
            Some(
                match verify::verify_value(event, DocumentKind::Event, registry) {
                    Ok(v) => Verdict::Verified {
                        signing_hash: v.signing_hash,
                    },
                    Err(e) => Verdict::Refused {
                        stage: e.stage,
                        reason: e.reason,
                    },
                },
            )
        })
        .collect()
}

/// An [`EventCheck`] that answers from a worker's verdicts: Event ID → the verified Event and
/// its verdict. It answers only for an Event equal to the one the worker verified; any other
/// Event (another value under a known ID, an unknown ID) is checked anew by `fallback`.
pub struct PreVerified<'a> {
    by_id: HashMap<String, Vec<(Value, Verdict)>>,
    fallback: &'a dyn EventCheck,
    checked_anew: Cell<usize>,
}

impl<'a> PreVerified<'a> {
    pub fn new(fallback: &'a dyn EventCheck) -> PreVerified<'a> {
        PreVerified {
            by_id: HashMap::new(),
            fallback,
            checked_anew: Cell::new(0),
        }
    }

    /// Records the worker's verdict on `event` (an Event without an ID is not recorded: the
    /// fallback checks it).
    pub fn insert(&mut self, event: Value, verdict: Verdict) {
        let Some(id) = event.pointer("/eventId").and_then(Value::as_str) else {
            return;
        };
        let id = id.to_owned();
        self.by_id.entry(id).or_default().push((event, verdict));
    }

    /// The verdicts of a chunk: each held frame's Event (decoded here from the very text the
    /// worker verified) with its verdict.
    pub fn from_frames<T: AsRef<[u8]>>(
        texts: &[T],
        verdicts: &[FrameVerdict],
        fallback: &'a dyn EventCheck,
    ) -> PreVerified<'a> {
        let mut p = PreVerified::new(fallback);
        for (text, verdict) in texts.iter().zip(verdicts) {
            if let Some(v) = verdict
                && let Some(event) = event_of(text.as_ref())
            {
                p.insert(event, v.clone());
            }
        }
        p
    }

    /// How many Events were not answered from the verdicts (checked by the fallback).
    pub fn checked_anew(&self) -> usize {
        self.checked_anew.get()
    }
}

impl EventCheck for PreVerified<'_> {
    fn check(&self, event: &Value) -> Result<String, (ErrorCode, String)> {
        let known = event
            .pointer("/eventId")
            .and_then(Value::as_str)
            .and_then(|id| self.by_id.get(id))
            .and_then(|list| list.iter().find(|(v, _)| v == event));
        match known {
            Some((_, Verdict::Verified { signing_hash })) => Ok(signing_hash.clone()),
            // The same code and text as `RegistryCheck` gives for this failure.
            Some((_, Verdict::Refused { stage, reason })) => {
                let e = VerifyError {
                    stage: *stage,
                    reason: reason.clone(),
                };
                Err((e.wire_code(), e.to_string()))
            }
            None => {
                self.checked_anew.set(self.checked_anew.get() + 1);
                self.fallback.check(event)
            }
        }
    }
}

/// One input from the socket, held with when it arrived and on which socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The frame text; `None`: the socket closed (fed as `Input::Closed` in its turn).
    pub text: Option<String>,
    pub at_ms: u64,
    /// The transport's socket generation when it arrived (a frame of a socket the machine has
    /// since closed is never fed).
    pub epoch: u64,
}

impl Held {
    /// The bytes a worker gets (empty for a close: no verdict).
    pub fn bytes(&self) -> &[u8] {
        self.text.as_deref().map_or(&[][..], str::as_bytes)
    }
}

/// What to do with an input that just arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Feed it now, as without a pool.
    Feed(Held),
    /// Held (a chunk may have been cut: see [`Backlog::unsent`]).
    Held,
}

#[derive(Debug)]
struct Chunk {
    items: Vec<Held>,
    sent: bool,
    verdicts: Option<Vec<FrameVerdict>>,
}

/// The buffering decisions and the in-order return of chunks (module documentation).
#[derive(Debug)]
pub struct Backlog {
    threshold: usize,
    chunk: usize,
    /// Frames that arrived during the current resume.
    counted: usize,
    /// Held and not yet cut into a chunk.
    open: Vec<Held>,
    /// Cut chunks not yet fed, by number.
    chunks: BTreeMap<usize, Chunk>,
    next_cut: usize,
    next_feed: usize,
    /// The pool cannot start: nothing more is held.
    off: bool,
    /// Frames whose verdicts came from a worker (for the page's data attribute and the bench).
    pub pooled: usize,
}

impl Backlog {
    /// Holds frames once more than `threshold` arrived in one resume, in chunks of `chunk`.
    pub fn new(threshold: usize, chunk: usize) -> Backlog {
        Backlog {
            threshold,
            chunk: chunk.max(1),
            counted: 0,
            open: Vec::new(),
            chunks: BTreeMap::new(),
            next_cut: 0,
            next_feed: 0,
            off: false,
            pooled: 0,
        }
    }

    /// Anything held (open or in a chunk not yet fed): later inputs queue behind it.
    pub fn pending(&self) -> bool {
        !self.open.is_empty() || !self.chunks.is_empty()
    }

    /// Inputs held, for the progress bar.
    pub fn held(&self) -> usize {
        self.open.len() + self.chunks.values().map(|c| c.items.len()).sum::<usize>()
    }

    /// A frame (`text`) or the socket's close (`None`) arrived at `at_ms` while the machine
    /// was (`resuming`) or was not replaying. Held when something is already held (order is
    /// kept), or during a resume past the threshold; else fed at once.
    pub fn arrive(
        &mut self,
        resuming: bool,
        text: Option<String>,
        at_ms: u64,
        epoch: u64,
    ) -> Route {
        let item = Held { text, at_ms, epoch };
        if !self.pending() {
            if !resuming || self.off {
                self.counted = 0;
                return Route::Feed(item);
            }
            if item.text.is_some() {
                self.counted += 1;
            }
            if self.counted <= self.threshold || item.text.is_none() {
                return Route::Feed(item);
            }
        }
        let close = item.text.is_none();
        self.open.push(item);
        if self.off {
            // Queued behind inputs fed without a pool: fed the same way, in its turn.
            self.give_up();
        } else if self.open.len() >= self.chunk || close {
            // A close ends the socket's stream: nothing will join its chunk.
            self.cut();
        }
        Route::Held
    }

    /// The socket is idle (a zero-delay timeout after the last held frame): the open frames
    /// become a chunk without waiting for more.
    pub fn idle(&mut self) {
        self.cut();
    }

    fn cut(&mut self) {
        if self.open.is_empty() {
            return;
        }
        let items = std::mem::take(&mut self.open);
        self.chunks.insert(
            self.next_cut,
            Chunk {
                items,
                sent: false,
                verdicts: None,
            },
        );
        self.next_cut += 1;
    }

    /// Cut chunks not yet handed to a worker, oldest first, with their frame texts; each is
    /// marked sent.
    pub fn unsent(&mut self) -> Vec<(usize, Vec<&[u8]>)> {
        self.chunks
            .iter_mut()
            .filter(|(_, c)| !c.sent && c.verdicts.is_none())
            .map(|(n, c)| {
                c.sent = true;
                (*n, c.items.iter().map(Held::bytes).collect())
            })
            .collect()
    }

    /// The texts of chunk `n` (to verify it on the page after a worker failed).
    pub fn texts(&self, n: usize) -> Option<Vec<&[u8]>> {
        self.chunks
            .get(&n)
            .map(|c| c.items.iter().map(Held::bytes).collect())
    }

    /// Records a worker's verdicts for chunk `n` (one per held input; the first answer stands).
    pub fn arrived(&mut self, n: usize, verdicts: Vec<FrameVerdict>) -> Result<(), ArrivalError> {
        let index = n;
        let Some(c) = self.chunks.get_mut(&n) else {
            return Err(if n < self.next_feed {
                ArrivalError::Duplicate(index)
            } else {
                ArrivalError::UnknownChunk(index)
            });
        };
        if c.verdicts.is_some() {
            return Err(ArrivalError::Duplicate(index));
        }
        if verdicts.len() != c.items.len() {
            return Err(ArrivalError::WrongLength {
                chunk: index,
                expected: c.items.len(),
                got: verdicts.len(),
            });
        }
        self.pooled += verdicts.iter().filter(|v| v.is_some()).count();
        c.verdicts = Some(verdicts);
        Ok(())
    }

    /// No worker will answer (the pool did not start, or is gone): every held input is fed as
    /// without a pool (each Event checked on the page), and nothing more is held.
    pub fn give_up(&mut self) {
        self.off = true;
        self.cut();
        for c in self.chunks.values_mut() {
            if c.verdicts.is_none() {
                c.verdicts = Some(vec![None; c.items.len()]);
            }
        }
    }

    /// Chunk `n` gets no worker's verdicts (its worker failed): its inputs are fed as without a
    /// pool, each Event checked on the page.
    pub fn check_here(&mut self, n: usize) {
        if let Some(c) = self.chunks.get_mut(&n)
            && c.verdicts.is_none()
        {
            c.verdicts = Some(vec![None; c.items.len()]);
        }
    }

    /// Holding may start again (a new pool can be tried).
    pub fn allow(&mut self) {
        self.off = false;
    }

    /// The next chunk in arrival order once it is answered: its inputs and their verdicts.
    pub fn take_ready(&mut self) -> Option<(Vec<Held>, Vec<FrameVerdict>)> {
        let answered = self
            .chunks
            .get(&self.next_feed)
            .is_some_and(|c| c.verdicts.is_some());
        if !answered {
            return None;
        }
        let c = self.chunks.remove(&self.next_feed)?;
        self.next_feed += 1;
        let verdicts = c.verdicts.unwrap_or_default();
        Some((c.items, verdicts))
    }

    /// Drops everything held (the client stopped, or the machine closed the socket they came
    /// on: the binding replays them again from the last contiguous position).
    pub fn clear(&mut self) {
        self.open.clear();
        self.chunks.clear();
        self.next_feed = self.next_cut;
        self.counted = 0;
    }
}
