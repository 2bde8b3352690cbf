//! The first replay, pipelined (issue 13): a large backlog of Event texts is cut into chunks;
//! each chunk is verified elsewhere (a Web Worker of [`crate::pool`], or this thread when no
//! Worker is available), and the verdicts come back in any order. This module is the pure part,
//! tested natively: what a worker computes for a chunk ([`verify_chunk`]: strict parse and the
//! six verification stages of §6.4 with `DocumentKind::Event`, the same stages as the socket
//! client's `RegistryCheck`), and how the main thread folds ([`Pipeline`]): strictly in the
//! order the Events were received, chunk after chunk, never an Event without its own
//! `Verified` verdict, and every refusal reported at its position (§16: a refused Event is not
//! applied, and it is shown, never silently dropped).
//!
//! The main thread parses the very bytes the worker verified (it kept them): parsing is
//! deterministic, so the folded value is the verified document. What the worker sends back
//! per Event is only its verdict: the signing hash (the Event's verified mark) or the failing
//! stage and its diagnostic.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::fold::EventLog;
use wasm_core::crypto::DocumentKind;
use wasm_core::crypto::registry::ValidatedRegistry;
use wasm_core::crypto::verify::{self, Stage};
use wasm_core::json::{self, Value};
use wasm_core::model::error::ErrorCode;

/// Events per chunk: large enough that a message to a worker costs little beside the work
/// (one chunk is roughly 100 ms of verification in wasm), small enough that the progress bar
/// moves often and the first chunks fold while the next ones are verified.
pub const CHUNK: usize = 500;

/// Below this many Events a backlog is verified on the main thread: starting Workers (each
/// compiles the module) costs more than it saves.
pub const POOL_THRESHOLD: usize = 2_000;

/// What the six stages said of one Event's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// All six stages hold; `sha256:` of the signing bytes (its verified mark).
    Verified { signing_hash: String },
    /// The first failing stage (§6.4) and the protected diagnostic.
    Refused { stage: Stage, reason: String },
}

impl Verdict {
    pub fn is_verified(&self) -> bool {
        matches!(self, Verdict::Verified { .. })
    }
}

/// Every stage, for reading a stage name back from a worker's reply.
const STAGES: [Stage; 7] = [
    Stage::Parse,
    Stage::Schema,
    Stage::SignatureEnvelope,
    Stage::KeyResolution,
    Stage::Canonicalization,
    Stage::Signature,
    Stage::Admission,
];

/// The stage spelled `name` ([`Stage::as_str`]).
pub fn stage_named(name: &str) -> Option<Stage> {
    STAGES.into_iter().find(|s| s.as_str() == name)
}

/// What a worker does with a chunk: the six stages over each Event's bytes, with the shared
/// field inversion of [`verify::verify_batch`] (whose results are exactly those of
/// [`verify::verify`] one by one). Without a Registry nothing verifies (fail closed, stage 4).
pub fn verify_chunk(docs: &[&[u8]], registry: Option<&ValidatedRegistry>) -> Vec<Verdict> {
    let Some(registry) = registry else {
        return docs
            .iter()
            .map(|_| Verdict::Refused {
                stage: Stage::KeyResolution,
                reason: "no Registry evidence: the Event cannot be verified".into(),
            })
            .collect();
    };
    verify::verify_batch(docs, DocumentKind::Event, registry)
        .into_iter()
        .map(|r| match r {
            Ok(v) => Verdict::Verified {
                signing_hash: v.signing_hash,
            },
            Err(e) => Verdict::Refused {
                stage: e.stage,
                reason: e.reason,
            },
        })
        .collect()
}

/// An Event of the backlog that was not applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// Its position in the backlog (0-based, in receiving order).
    pub position: usize,
    /// Its `eventId` when its text parses at all.
    pub event_id: Option<String>,
    pub stage: Stage,
    /// The wire code of that stage (§6.4, §19).
    pub code: ErrorCode,
    pub reason: String,
}

/// Why a worker's answer for a chunk was not taken (the chunk is then verified again on the
/// main thread: nothing is applied on an answer that does not cover every Event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArrivalError {
    /// No such chunk in this backlog.
    UnknownChunk(usize),
    /// The chunk has already been answered (the first answer stands).
    Duplicate(usize),
    /// Not one verdict per Event.
    WrongLength {
        chunk: usize,
        expected: usize,
        got: usize,
    },
}

/// A backlog of `total` Events being verified chunk by chunk and folded in order.
#[derive(Debug)]
pub struct Pipeline {
    total: usize,
    chunk: usize,
    /// The next chunk to fold; chunks below it are folded.
    next: usize,
    /// Answered chunks waiting for an earlier one.
    waiting: BTreeMap<usize, Vec<Verdict>>,
    /// Events of the backlog taken so far (applied or rejected), for the progress bar.
    taken: usize,
    /// Events handed to the log (verified and new).
    pub applied: usize,
    /// Verified Events the log already knew (same Event ID).
    pub duplicates: usize,
    pub rejections: Vec<Rejection>,
}

impl Pipeline {
    /// A backlog of `total` Events in chunks of `chunk` (at least 1).
    pub fn new(total: usize, chunk: usize) -> Pipeline {
        Pipeline {
            total,
            chunk: chunk.max(1),
            next: 0,
            waiting: BTreeMap::new(),
            taken: 0,
            applied: 0,
            duplicates: 0,
            rejections: Vec::new(),
        }
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// How many chunks the backlog has.
    pub fn chunks(&self) -> usize {
        self.total.div_ceil(self.chunk)
    }

    /// The Events (positions in the backlog) of chunk `n`.
    pub fn range(&self, n: usize) -> Range<usize> {
        let start = n.saturating_mul(self.chunk).min(self.total);
        start..start.saturating_add(self.chunk).min(self.total)
    }

    /// Records the verdicts for chunk `n` (from any worker, in any order).
    pub fn arrived(&mut self, n: usize, verdicts: Vec<Verdict>) -> Result<(), ArrivalError> {
        if n >= self.chunks() {
            return Err(ArrivalError::UnknownChunk(n));
        }
        if n < self.next || self.waiting.contains_key(&n) {
            return Err(ArrivalError::Duplicate(n));
        }
        let expected = self.range(n).len();
        if verdicts.len() != expected {
            return Err(ArrivalError::WrongLength {
                chunk: n,
                expected,
                got: verdicts.len(),
            });
        }
        self.waiting.insert(n, verdicts);
        Ok(())
    }

    /// Whether chunk `n` is answered or folded (no need to verify it again).
    pub fn answered(&self, n: usize) -> bool {
        n < self.next || self.waiting.contains_key(&n)
    }

    /// Whether the next chunk in order is answered.
    pub fn ready(&self) -> bool {
        self.waiting.contains_key(&self.next)
    }

    /// Takes the next chunk in order if it is answered: each verified Event of it is parsed
    /// from `texts` (the backlog, as received) and queued in `log`, then folded; every other
    /// Event is a [`Rejection`] at its position. Returns the Events taken (0: nothing ready).
    pub fn fold_next<T: AsRef<[u8]>>(&mut self, texts: &[T], log: &mut EventLog) -> usize {
        let Some(verdicts) = self.waiting.remove(&self.next) else {
            return 0;
        };
        let range = self.range(self.next);
        self.next += 1;
        let mut pushed = 0;
        for (position, verdict) in range.clone().zip(verdicts) {
            let bytes = texts.get(position).map_or(&[][..], AsRef::as_ref);
            match verdict {
                Verdict::Verified { .. } => match json::parse(bytes) {
                    Ok(v) => {
                        if log.push(v) {
                            pushed += 1;
                        } else {
                            self.duplicates += 1;
                        }
                    }
                    // Verified text always parses (stage 1 is this very parse); kept total.
                    Err(e) => self.reject(position, bytes, Stage::Parse, e.to_string()),
                },
                Verdict::Refused { stage, reason } => self.reject(position, bytes, stage, reason),
            }
        }
        log.fold(pushed);
        self.applied += pushed;
        self.taken += range.len();
        range.len()
    }

    fn reject(&mut self, position: usize, bytes: &[u8], stage: Stage, reason: String) {
        let event_id = json::parse(bytes).ok().and_then(|v| {
            v.pointer("/eventId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        self.rejections.push(Rejection {
            position,
            event_id,
            stage,
            code: stage.wire_code(),
            reason,
        });
    }

    /// Events taken so far (applied, duplicate or rejected).
    pub fn taken(&self) -> usize {
        self.taken
    }

    /// Every chunk folded.
    pub fn done(&self) -> bool {
        self.next >= self.chunks()
    }

    /// Per mille of the backlog taken (1000 when empty), for the progress bar.
    pub fn per_mille(&self) -> u32 {
        crate::fold::Progress {
            folded: self.taken,
            known: self.total,
            refused: 0,
        }
        .per_mille()
    }
}

/// The whole backlog verified and folded here, chunk by chunk (no Worker): the fallback, and
/// the reference the pooled replay must equal.
pub fn replay_here<T: AsRef<[u8]>>(
    texts: &[T],
    registry: Option<&ValidatedRegistry>,
    log: &mut EventLog,
    chunk: usize,
) -> Pipeline {
    let mut p = Pipeline::new(texts.len(), chunk);
    for n in 0..p.chunks() {
        let docs: Vec<&[u8]> = texts[p.range(n)].iter().map(AsRef::as_ref).collect();
        let verdicts = verify_chunk(&docs, registry);
        // The range and the verdicts come from the same chunk: this cannot fail.
        if p.arrived(n, verdicts).is_ok() {
            p.fold_next(texts, log);
        }
    }
    p
}

/// How long a worker may take to answer a chunk before it is retired: a base (a worker that
/// is slow to start, a busy machine) plus an allowance per Event of the chunk. Generous: a
/// chunk of [`CHUNK`] Events is roughly 100 ms of verification, the bound is 20 s.
pub const WATCHDOG_BASE_MS: f64 = 10_000.0;
/// The per-Event allowance of [`WATCHDOG_BASE_MS`].
pub const WATCHDOG_PER_EVENT_MS: f64 = 20.0;

/// The chunk number a worker's start is watched under: no real chunk has it, and it is never
/// returned as an unanswered chunk.
const STARTUP: usize = usize::MAX;

#[derive(Debug, Default)]
struct Watched {
    /// Chunks sent and not answered, oldest first (a worker answers in order), each with its
    /// number of Events.
    in_flight: std::collections::VecDeque<(usize, usize)>,
    /// When the oldest chunk in flight started: its sending, or the previous answer when it was
    /// queued behind another chunk.
    started_ms: f64,
    retired: bool,
}

/// The watchdog over the pool's workers (sans-IO: the caller passes the clock). A worker that
/// neither answers nor errors would stall the replay (or the socket's held backlog) forever:
/// once its oldest chunk is past its deadline the worker is retired, exactly as a worker that
/// errors — its unanswered chunks are verified on the page, and whatever it answers later is
/// ignored.
#[derive(Debug)]
pub struct Watchdog {
    base_ms: f64,
    per_event_ms: f64,
    workers: BTreeMap<usize, Watched>,
}

impl Watchdog {
    /// A chunk of `n` Events may take `base_ms + n * per_event_ms`.
    pub fn new(base_ms: f64, per_event_ms: f64) -> Watchdog {
        Watchdog {
            base_ms: base_ms.max(0.0),
            per_event_ms: per_event_ms.max(0.0),
            workers: BTreeMap::new(),
        }
    }

    /// The bound for a chunk of `events` Events.
    pub fn bound_ms(&self, events: usize) -> f64 {
        self.base_ms + self.per_event_ms * events as f64
    }

    /// Chunk `chunk` of `events` Events was sent to `worker` at `now_ms`.
    pub fn sent(&mut self, worker: usize, chunk: usize, events: usize, now_ms: f64) {
        let w = self.workers.entry(worker).or_default();
        if w.retired {
            return;
        }
        if w.in_flight.is_empty() {
            w.started_ms = now_ms;
        }
        w.in_flight.push_back((chunk, events));
    }

    /// `worker` answered `chunk` at `now_ms`. False when the answer is not to be taken: the
    /// worker is retired (a late answer), or `chunk` is not its oldest chunk in flight.
    pub fn answered(&mut self, worker: usize, chunk: usize, now_ms: f64) -> bool {
        let Some(w) = self.workers.get_mut(&worker) else {
            return false;
        };
        if w.retired || w.in_flight.front().map(|(n, _)| *n) != Some(chunk) {
            return false;
        }
        w.in_flight.pop_front();
        w.started_ms = now_ms;
        true
    }

    /// `worker` was started (given its Registry) at `now_ms`: until [`Watchdog::started`] it is
    /// held to the bound of an empty chunk ([`WATCHDOG_BASE_MS`]), so a worker that never
    /// answers `{ready}` cannot stall the pool's start.
    pub fn starting(&mut self, worker: usize, now_ms: f64) {
        self.sent(worker, STARTUP, 0, now_ms);
    }

    /// `worker` answered its start at `now_ms`. False when the answer is not to be taken (it
    /// was retired, e.g. overdue, before it answered).
    pub fn started(&mut self, worker: usize, now_ms: f64) -> bool {
        self.answered(worker, STARTUP, now_ms)
    }

    /// Retires `worker` (it errored, died or is overdue); returns its unanswered chunks.
    pub fn retire(&mut self, worker: usize) -> Vec<usize> {
        let w = self.workers.entry(worker).or_default();
        w.retired = true;
        std::mem::take(&mut w.in_flight)
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| *n != STARTUP)
            .collect()
    }

    pub fn is_retired(&self, worker: usize) -> bool {
        self.workers.get(&worker).is_some_and(|w| w.retired)
    }

    /// Workers whose oldest chunk is past its deadline at `now_ms`, each with its unanswered
    /// chunks; they are retired (listed once).
    pub fn expire(&mut self, now_ms: f64) -> Vec<(usize, Vec<usize>)> {
        let overdue: Vec<usize> = self
            .workers
            .iter()
            .filter(|(_, w)| !w.retired)
            .filter_map(|(i, w)| {
                let (_, events) = w.in_flight.front()?;
                (now_ms > w.started_ms + self.bound_ms(*events)).then_some(*i)
            })
            .collect();
        overdue.into_iter().map(|i| (i, self.retire(i))).collect()
    }
}
