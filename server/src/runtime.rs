//! The authority's two threads. HTTP (and later WebSocket) handlers send signed Command bytes
//! here. The verify stage drains what is waiting (up to one batch) and runs the six §6.4 stages
//! on it (pure, on its share of the cores); the owner thread then takes that batch together
//! with every other verified batch already waiting (up to [`MAX_BATCH`] Commands), admits,
//! decides, signs and writes them with one durable commit (group commit), and only then answers
//! each sender. The verify stage works on the next batch while the owner decides the current one.
//! One thread owns the reducer, and batches reach it in arrival order, so per-Group order is
//! simply arrival order.
//!
//! The queue in front of the thread is bounded ([`QUEUE_CAPACITY`]): a Command that finds it
//! full is refused at once with `BACKPRESSURE` and a retry hint (§17.3, R-9) instead of
//! waiting in memory, so a burst cannot grow the server without bound.

use crate::authority::{AuthorityService, Outcome, Pipeline, Verifier, available_threads};
use crate::devorg::{DevOrganization, OrgSetup};
use crate::store::sqlite::SqliteStore;
use crate::wire::WireError;
use std::path::Path;
use std::sync::mpsc;
use wasm_core::authority::{Micros, Rejection, Submitted};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::ErrorCode;

/// At most this many Commands share one transaction.
pub const MAX_BATCH: usize = 64;

/// Commands waiting for the owner thread, at most: four batches. The owner takes up to
/// [`MAX_BATCH`] at a time, so four waiting batches keep it busy while the disk flushes
/// (about 20 ms of deciding; eight batches are about 40 ms, see `Pipeline::MAX_IN_FLIGHT`).
/// A Command arriving at a full queue would wait longer than that: it is better told to
/// retry. Queued memory is at most this many bodies of at most `MAX_COMMAND_BYTES` each.
pub const QUEUE_CAPACITY: usize = 4 * MAX_BATCH;

/// The retry hint sent with `BACKPRESSURE`: a full queue drains in about 20 ms, so 100 ms
/// gives it room to drain several times over without clients retrying in a tight loop.
pub const RETRY_AFTER_MS: u64 = 100;

/// Verified batches waiting for the owner, at most: the verify stage runs this far ahead.
pub const VERIFIED_AHEAD: usize = 2;

/// How the cores are shared: threads that verify (the verify stage) and threads that sign a
/// batch's Events (the owner). Half each, at least one.
pub fn split_threads(threads: usize) -> (usize, usize) {
    let verify = threads.div_ceil(2).max(1);
    (verify, threads.saturating_sub(verify).max(1))
}

/// A batch verified ahead of the owner: each Command's bytes, where its answer goes, and its
/// verification, in arrival order.
pub struct VerifiedBatch<T> {
    pub commands: Vec<Vec<u8>>,
    pub replies: Vec<T>,
    pub verified: Vec<Result<wasm_core::crypto::Verified, wasm_core::crypto::VerifyError>>,
}

impl<T> VerifiedBatch<T> {
    /// Appends `later`, which arrived after this batch.
    fn append(&mut self, later: VerifiedBatch<T>) {
        self.commands.extend(later.commands);
        self.replies.extend(later.replies);
        self.verified.extend(later.verified);
    }
}

/// What the owner thread waits on: the verified batches (from the verify stage) and the
/// store's word that a sync ended, behind one condition variable. With batches written and
/// waiting for the disk, the owner wakes for whichever comes first: a new batch is decided
/// while the disk flushes the last one, and a batch made durable is answered at once, instead
/// of the owner blocking in the sync wait while verified Commands queue behind it.
pub struct Inbox<T> {
    state: std::sync::Mutex<InboxState<T>>,
    changed: std::sync::Condvar,
}

struct InboxState<T> {
    /// At most [`VERIFIED_AHEAD`]; the verify stage waits for room.
    batches: std::collections::VecDeque<VerifiedBatch<T>>,
    /// A sync ended since the owner last looked.
    synced: bool,
    /// The verify stage is gone: no batch will come.
    closed: bool,
    /// The owner is gone: batches are not taken any more.
    owner_gone: bool,
    /// A checkpoint asked for ([`AuthorityHandle::checkpoint`]): one at a time.
    checkpoint: Option<CheckpointTx>,
}

/// What the owner hands a checkpoint: its State once every batch it wrote is durable, the
/// log position (Mark) and the number of Events that State covers. The State is a clone
/// (rpds: a few reference counts), so the projection hash is computed off the owner thread.
pub struct Held {
    pub state: wasm_core::authority::state::State,
    pub position: u64,
    pub events: u64,
}

/// Where the owner answers a checkpoint.
pub type CheckpointTx = tokio::sync::oneshot::Sender<Result<Held, String>>;

/// The running authority's projection hash at a durable log position, computed from the
/// State the live reducer holds (not from the log): `backup`'s witness (docs/operations.md,
/// "The check against the live server").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log position (row) of the last Event the State covers.
    pub position: u64,
    pub events: u64,
    pub projection: String,
}

/// What the owner takes from its [`Inbox`].
pub enum Taken<T> {
    Batch(VerifiedBatch<T>),
    /// A sync ended: some written batches may be durable now.
    Synced,
    /// No batch will come any more.
    Closed,
    /// A checkpoint is asked for: answered before any waiting batch is decided, so that load
    /// cannot starve it.
    Checkpoint(CheckpointTx),
}

impl<T> Default for Inbox<T> {
    fn default() -> Self {
        Inbox {
            state: std::sync::Mutex::new(InboxState {
                batches: std::collections::VecDeque::new(),
                synced: false,
                closed: false,
                owner_gone: false,
                checkpoint: None,
            }),
            changed: std::sync::Condvar::new(),
        }
    }
}

impl<T> Inbox<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, InboxState<T>> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wait<'a>(
        &self,
        guard: std::sync::MutexGuard<'a, InboxState<T>>,
    ) -> std::sync::MutexGuard<'a, InboxState<T>> {
        self.changed
            .wait(guard)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hands a verified batch on, waiting while [`VERIFIED_AHEAD`] wait already; false once
    /// the owner is gone.
    pub fn put(&self, batch: VerifiedBatch<T>) -> bool {
        let mut st = self.lock();
        while st.batches.len() >= VERIFIED_AHEAD && !st.owner_gone {
            st = self.wait(st);
        }
        if st.owner_gone {
            return false;
        }
        st.batches.push_back(batch);
        drop(st);
        self.changed.notify_all();
        true
    }

    /// The next batch; with `or_synced`, also the end of a sync (whichever comes first).
    /// Blocks until one of them, or until no batch can come.
    pub fn take(&self, or_synced: bool) -> Taken<T> {
        let mut st = self.lock();
        loop {
            if let Some(tx) = st.checkpoint.take() {
                return Taken::Checkpoint(tx);
            }
            if let Some(b) = st.batches.pop_front() {
                drop(st);
                // Room for the verify stage.
                self.changed.notify_all();
                return Taken::Batch(b);
            }
            if std::mem::take(&mut st.synced) && or_synced {
                return Taken::Synced;
            }
            if st.closed {
                return Taken::Closed;
            }
            st = self.wait(st);
        }
    }

    /// A batch already waiting, without blocking.
    pub fn try_take(&self) -> Option<VerifiedBatch<T>> {
        let b = self.lock().batches.pop_front();
        if b.is_some() {
            self.changed.notify_all();
        }
        b
    }

    /// Asks the owner for a checkpoint. One waits at most: a second is refused until the
    /// first is answered (an operator's backup asks once; nothing queues behind it).
    pub fn ask(&self, tx: CheckpointTx) -> Result<(), String> {
        let mut st = self.lock();
        if st.owner_gone || st.closed {
            return Err("the authority stopped".into());
        }
        if st.checkpoint.as_ref().is_some_and(|t| !t.is_closed()) {
            return Err("a checkpoint is already being taken".into());
        }
        st.checkpoint = Some(tx);
        drop(st);
        self.changed.notify_all();
        Ok(())
    }

    /// A sync ended (the store's [`crate::store::SyncedHook`]).
    pub fn synced(&self) {
        self.lock().synced = true;
        self.changed.notify_all();
    }

    /// The verify stage is gone.
    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// The owner is gone: a checkpoint still waiting is told so.
    fn owner_gone(&self) {
        let mut st = self.lock();
        st.owner_gone = true;
        if let Some(tx) = st.checkpoint.take() {
            let _ = tx.send(Err("the authority stopped".into()));
        }
        drop(st);
        self.changed.notify_all();
    }
}

/// Marks its side of an [`Inbox`] gone when dropped, a panic included.
struct Gone<'a, T> {
    inbox: &'a Inbox<T>,
    owner: bool,
}

impl<T> Drop for Gone<'_, T> {
    fn drop(&mut self) {
        if self.owner {
            self.inbox.owner_gone();
        } else {
            self.inbox.close();
        }
    }
}

/// The verify stage: takes up to [`MAX_BATCH`] waiting requests at a time, verifies them and
/// hands the batch on; returns when either side is gone.
pub fn verify_stage<T>(rx: &mpsc::Receiver<(Vec<u8>, T)>, verifier: &Verifier, out: &Inbox<T>) {
    let _gone = Gone {
        inbox: out,
        owner: false,
    };
    // Handles taken once: recording is then an atomic push (docs/operations.md).
    let seconds = metrics::histogram!("mwp_verify_batch_seconds");
    let sizes = metrics::histogram!("mwp_verify_batch_commands");
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let (commands, replies): (Vec<Vec<u8>>, Vec<T>) = batch.into_iter().unzip();
        let t = std::time::Instant::now();
        let verified = verifier.verify(&commands);
        seconds.record(t.elapsed().as_secs_f64());
        sizes.record(commands.len() as f64);
        let batch = VerifiedBatch {
            commands,
            replies,
            verified,
        };
        if !out.put(batch) {
            return;
        }
    }
}

/// The owner thread's answer to one Command.
#[derive(Debug)]
pub enum Reply {
    /// HTTP 200: `{"status": "accepted" | "duplicate", "events": […]}`, serialized on the
    /// authority thread so the async runtime only copies it out. Empty for a Command from a
    /// gateway connection (`Origin` set): its Events reach it as `EVENT` frames (binding.md,
    /// "The sender's outcome"), and the owner thread serializes no body nobody reads.
    Done(String),
    /// A wire error (§19).
    Refused(WireError),
}

/// Which gateway connection sent a Command (`None`: the HTTP edge or the authority itself),
/// so that its own Events reach it even where it has not subscribed (binding.md, "the
/// sender's outcome").
pub type Origin = Option<u64>;

/// Where the answer to one Command goes, and who sent it.
#[derive(Debug)]
pub struct ReplyTo {
    to: Answer,
    pub origin: Origin,
    /// Answer an acceptance with [`reply_lines`] (a cluster node forwarding a connection's
    /// Command, docs/cluster.md) rather than the HTTP document.
    pub lines: bool,
}

/// How an answer is delivered.
enum Answer {
    /// To a task that awaits it ([`AuthorityHandle::submit`]).
    Task(tokio::sync::oneshot::Sender<Reply>),
    /// By a call on the owner thread ([`AuthorityHandle::submit_then`]): no task waits for
    /// the answer and none is woken for it.
    Call(Callback),
}

/// The call of [`Answer::Call`]; `None` once made. Dropped uncalled (the authority stopped),
/// it is made with the internal error a waiting task would get.
struct Callback(Option<Box<dyn FnOnce(Reply) + Send>>);

impl Drop for Callback {
    fn drop(&mut self) {
        if let Some(then) = self.0.take() {
            then(internal("the authority stopped"));
        }
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Answer::Task(_) => "Task",
            Answer::Call(_) => "Call",
        })
    }
}

impl ReplyTo {
    /// Answers the sender; false if it has gone.
    pub fn send(self, reply: Reply) -> bool {
        match self.to {
            Answer::Task(tx) => tx.send(reply).is_ok(),
            Answer::Call(mut call) => match call.0.take() {
                Some(then) => {
                    then(reply);
                    true
                }
                None => false,
            },
        }
    }
}

/// Sees every batch once it is durable, on the owner thread, before its senders are
/// answered: the gateway's fan-out hub (§16, §17.2). It must not block.
pub trait Publish: Send + Sync {
    /// Called once at start-up with the replayed state and store.
    fn start(&self, state: &wasm_core::authority::state::State, store: &dyn crate::store::Store);
    /// One durable batch: each outcome with the connection that sent its Command.
    fn publish(
        &self,
        state: &wasm_core::authority::state::State,
        store: &dyn crate::store::Store,
        batch: &[(&Outcome, Origin)],
    );
}

/// One Command on its way to the authority, with where its answer goes.
pub type Request = (Vec<u8>, ReplyTo);

/// The owner thread's clock: the instant each batch is decided at.
pub type Clock = Box<dyn Fn() -> Micros + Send>;

/// Called on the owner thread, once a batch is durable and before its senders are answered,
/// with the canonical bytes of every Event the batch appended, in commit order. The in-process
/// demo (`crate::agents`) follows the log through it; the WebSocket binding's fan-out can hang
/// off the same point.
pub type EventHook = Box<dyn Fn(Vec<Vec<u8>>) + Send>;

/// Takes a Command on the caller's thread without blocking, and always answers its `ReplyTo`:
/// queued, handed on, or refused at once. A cluster node's router is one (docs/cluster.md,
/// "Forwarding"): a Command goes to the writer's queue or to the writer from the connection's
/// own task, with no thread in between.
pub trait Dispatch: Send + Sync {
    fn dispatch(&self, request: Request);
}

/// Where a handle's Commands go: the owner thread's bounded queue, or a [`Dispatch`].
#[derive(Clone)]
enum Intake {
    Queue(mpsc::SyncSender<Request>),
    Dispatch(std::sync::Arc<dyn Dispatch>),
}

impl Intake {
    /// Hands `request` on without blocking; a full or closed queue gives it back.
    fn offer(&self, request: Request) -> Result<(), mpsc::TrySendError<Request>> {
        match self {
            Intake::Queue(tx) => tx.try_send(request),
            Intake::Dispatch(d) => {
                d.dispatch(request);
                Ok(())
            }
        }
    }

    /// Hands `request` on, waiting for room in a queue (tests' held intake).
    #[cfg(test)]
    fn send(&self, request: Request) -> Result<(), ()> {
        match self {
            Intake::Queue(tx) => tx.send(request).map_err(|_| ()),
            Intake::Dispatch(d) => {
                d.dispatch(request);
                Ok(())
            }
        }
    }
}

#[derive(Clone)]
pub struct AuthorityHandle {
    tx: Intake,
    /// The Organization's public Registry documents (`GET /api/registry`).
    public: std::sync::Arc<crate::registry_api::PublicRegistry>,
    /// The Registry the verify stage uses (swapped by a development enrolment).
    registry: crate::live_registry::LiveRegistry,
    /// Set once the owner thread stops deciding (its store failed, or it ended): `GET
    /// /readyz` then answers 503 with it.
    health: Health,
    /// The owner's inbox, to ask it for a checkpoint (`None`: a handle over a queue some
    /// thread hands on, such as a cluster node's router).
    owner: Option<std::sync::Arc<Inbox<ReplyTo>>>,
}

/// Why the authority no longer decides; empty while it does.
pub type Health = std::sync::Arc<std::sync::OnceLock<String>>;

impl AuthorityHandle {
    /// Why this authority no longer decides, if it does not (`GET /readyz`).
    pub fn failure(&self) -> Option<String> {
        self.health.get().cloned()
    }

    /// The live State's projection hash at a durable position: the owner first waits until
    /// every batch it wrote is durable (answering their senders), then hands over a clone of
    /// its State, the log position and the Event count; the hash is computed here, on a
    /// blocking thread, while the owner decides on.
    pub async fn checkpoint(&self) -> Result<Checkpoint, String> {
        let Some(inbox) = &self.owner else {
            return Err("this authority's owner thread is not in this process".into());
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        inbox.ask(tx)?;
        let held = rx.await.map_err(|_| "the authority stopped".to_owned())??;
        let Held {
            state,
            position,
            events,
        } = held;
        let projection = tokio::task::spawn_blocking(move || state.projection_hash())
            .await
            .map_err(|e| format!("the projection hash was not computed: {e}"))?;
        Ok(Checkpoint {
            position,
            events,
            projection,
        })
    }

    /// The Registry Commands are verified with, shared with the binding's HELLO and the
    /// development enrolment.
    pub fn live_registry(&self) -> crate::live_registry::LiveRegistry {
        self.registry.clone()
    }

    /// What `GET /api/registry` serves for this authority's Organization.
    pub fn public_registry(&self) -> &crate::registry_api::PublicRegistry {
        &self.public
    }

    /// Submits signed Command bytes; resolves once the outcome is durable, or at once with
    /// `BACKPRESSURE` when the queue is full.
    pub async fn submit(&self, bytes: Vec<u8>) -> Reply {
        self.submit_from(bytes, None).await
    }

    /// [`AuthorityHandle::submit`] for a Command that came in on gateway connection `origin`,
    /// answered by calling `then` instead of waking a task: on the owner thread once the
    /// outcome is durable (it must not block), or at once, on the caller's thread, with
    /// `BACKPRESSURE` when the queue is full. The gateway submits every Command this way, so
    /// that a Command costs no task and no wake-up beyond its `EVENT` frame's.
    pub fn submit_then(
        &self,
        bytes: Vec<u8>,
        origin: Origin,
        then: impl FnOnce(Reply) + Send + 'static,
    ) {
        let to = ReplyTo {
            to: Answer::Call(Callback(Some(Box::new(then)))),
            origin,
            lines: false,
        };
        // A request the queue refuses is answered at once, as `submit_from` answers it.
        match self.tx.offer((bytes, to)) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full((_, to))) => {
                tracing::warn!(capacity = QUEUE_CAPACITY, "authority queue full");
                count_queue_full();
                to.send(Reply::Refused(
                    WireError::new(
                        ErrorCode::Backpressure,
                        "the authority's queue is full; retry after retryAfterMs",
                    )
                    .retry_after(RETRY_AFTER_MS),
                ));
            }
            Err(mpsc::TrySendError::Disconnected((_, to))) => {
                to.send(internal("the authority is not running"));
            }
        }
    }

    /// [`AuthorityHandle::submit`] for a Command that came in on gateway connection `origin`.
    pub async fn submit_from(&self, bytes: Vec<u8>, origin: Origin) -> Reply {
        self.submit_answered(bytes, origin, false).await
    }

    /// [`AuthorityHandle::submit`] answered in lines: `accepted` or `duplicate`, then each
    /// Event's canonical bytes on a line of its own (JCS has no raw newline), so that a
    /// forwarding node passes them on without parsing a document or canonicalizing again.
    pub async fn submit_lines(&self, bytes: Vec<u8>) -> Reply {
        self.submit_answered(bytes, None, true).await
    }

    async fn submit_answered(&self, bytes: Vec<u8>, origin: Origin, lines: bool) -> Reply {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let to = ReplyTo {
            to: Answer::Task(tx),
            origin,
            lines,
        };
        match self.tx.offer((bytes, to)) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => {
                tracing::warn!(capacity = QUEUE_CAPACITY, "authority queue full");
                count_queue_full();
                return Reply::Refused(
                    WireError::new(
                        ErrorCode::Backpressure,
                        "the authority's queue is full; retry after retryAfterMs",
                    )
                    .retry_after(RETRY_AFTER_MS),
                );
            }
            Err(mpsc::TrySendError::Disconnected(_)) => {
                return internal("the authority is not running");
            }
        }
        rx.await
            .unwrap_or_else(|_| internal("the authority stopped"))
    }

    /// A handle over a queue of `capacity` that the caller drains (or leaves full): tests of
    /// the edge without an authority.
    #[cfg(test)]
    pub fn detached(capacity: usize) -> (AuthorityHandle, mpsc::Receiver<Request>) {
        let (tx, rx) = mpsc::sync_channel(capacity);
        let evidence = wasm_core::crypto::registry::RegistryEvidence {
            organization_id: "urn:missionweaveprotocol:organization:detached".into(),
            bindings: vec![],
        };
        let public = crate::registry_api::PublicRegistry::new(&evidence, &[]);
        (
            AuthorityHandle {
                tx: Intake::Queue(tx),
                public: std::sync::Arc::new(public),
                registry: crate::live_registry::LiveRegistry::new(
                    evidence
                        .clone()
                        .validate()
                        .expect("an empty Registry is valid"),
                ),
                health: Health::default(),
                owner: None,
            },
            rx,
        )
    }

    /// This authority behind an intake that can hold one gateway connection's Commands
    /// (tests: a connection with Commands waiting for the authority, without racing it).
    /// Everything else passes through in arrival order.
    #[cfg(test)]
    pub fn with_hold(&self) -> (AuthorityHandle, IntakeHold) {
        let (tx, rx) = mpsc::sync_channel::<Request>(QUEUE_CAPACITY);
        let hold = IntakeHold {
            state: std::sync::Arc::default(),
            authority: self.tx.clone(),
        };
        let state = std::sync::Arc::clone(&hold.state);
        let authority = self.tx.clone();
        std::thread::spawn(move || {
            while let Ok(request) = rx.recv() {
                let mut s = hold_lock(&state);
                let matched = s
                    .needles
                    .iter()
                    .any(|n| request.0.windows(n.len()).any(|w| w == n.as_slice()));
                if matched || (s.origin.is_some() && s.origin == request.1.origin) {
                    s.waiting.push(request);
                } else if authority.send(request).is_err() {
                    return;
                }
            }
        });
        let handle = AuthorityHandle {
            tx: Intake::Queue(tx),
            public: std::sync::Arc::clone(&self.public),
            registry: self.registry.clone(),
            health: std::sync::Arc::clone(&self.health),
            owner: self.owner.clone(),
        };
        (handle, hold)
    }
}

/// The switch of [`AuthorityHandle::with_hold`].
#[cfg(test)]
pub struct IntakeHold {
    state: std::sync::Arc<std::sync::Mutex<HoldState>>,
    authority: Intake,
}

#[cfg(test)]
#[derive(Default)]
struct HoldState {
    origin: Origin,
    /// Commands (from anywhere, HTTP included) whose bytes hold one of these wait too.
    needles: Vec<Vec<u8>>,
    waiting: Vec<Request>,
}

#[cfg(test)]
fn hold_lock(m: &std::sync::Mutex<HoldState>) -> std::sync::MutexGuard<'_, HoldState> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
impl IntakeHold {
    /// Commands from gateway connection `origin` wait here from now on.
    pub fn hold(&self, origin: u64) {
        hold_lock(&self.state).origin = Some(origin);
    }

    /// Commands whose bytes hold one of `needles` (an Action ID, say) wait here from now on,
    /// from any origin (HTTP included).
    pub fn hold_matching(&self, needles: Vec<Vec<u8>>) {
        hold_lock(&self.state).needles = needles;
    }

    /// How many Commands wait.
    pub fn waiting(&self) -> usize {
        hold_lock(&self.state).waiting.len()
    }

    /// Hands the waiting Commands to the authority, in order, and holds nothing more.
    pub fn release(&self) {
        let mut s = hold_lock(&self.state);
        s.origin = None;
        s.needles.clear();
        for request in s.waiting.drain(..) {
            if self.authority.send(request).is_err() {
                return;
            }
        }
    }
}

/// A Command refused at the full queue, before anyone parsed it.
fn count_queue_full() {
    metrics::counter!(
        "mwp_commands_refused_total",
        "kind" => UNVERIFIED,
        "code" => ErrorCode::Backpressure.as_str()
    )
    .increment(1);
}

/// The `kind` label of a Command that did not pass the six stages (its kind is not trusted).
const UNVERIFIED: &str = "unverified";

/// The `kind` label of a verified Command: a core kind, one of the two Organization-scoped
/// bootstrap kinds, or `ext` for any other Extension Profile kind (their names are the
/// senders' to choose: one label for all keeps the series bounded).
fn kind_label(
    v: &Result<wasm_core::crypto::Verified, wasm_core::crypto::VerifyError>,
) -> &'static str {
    use wasm_core::model::command::{AGENT_CARD_REGISTER, CommandKind, SESSION_OPEN};
    let Some(command) = v.as_ref().ok().and_then(|v| v.command.as_ref()) else {
        return UNVERIFIED;
    };
    match &command.kind {
        CommandKind::Core(k) => k.as_str(),
        CommandKind::Ext(k) if k.as_str() == AGENT_CARD_REGISTER => AGENT_CARD_REGISTER,
        CommandKind::Ext(k) if k.as_str() == SESSION_OPEN => SESSION_OPEN,
        CommandKind::Ext(_) => "ext",
    }
}

/// What became of one Command, as `mwp_commands_*_total` counts it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Counted {
    Accepted,
    Duplicate,
    /// With the wire code (§19).
    Refused(&'static str),
}

impl Counted {
    fn of(o: &Outcome) -> Counted {
        match o {
            Ok(Submitted::Appended(_)) => Counted::Accepted,
            Ok(Submitted::Duplicate(_)) => Counted::Duplicate,
            Err(r) => Counted::Refused(r.code.as_str()),
        }
    }
}

/// One released batch's outcomes summed per (kind, outcome) series, in first-seen order.
fn tally(outcomes: &[Outcome], kinds: &[&'static str]) -> Vec<(&'static str, Counted, u64)> {
    let mut seen: Vec<(&'static str, Counted, u64)> = Vec::new();
    for (o, kind) in outcomes.iter().zip(kinds) {
        let counted = Counted::of(o);
        match seen.iter_mut().find(|s| s.0 == *kind && s.1 == counted) {
            Some(s) => s.2 += 1,
            None => seen.push((kind, counted, 1)),
        }
    }
    seen
}

/// Counts one released batch's outcomes, summed per (kind, outcome, code) first: one counter
/// update per distinct series instead of one per Command.
fn count_outcomes(outcomes: &[Outcome], kinds: &[&'static str]) {
    for (kind, counted, n) in tally(outcomes, kinds) {
        match counted {
            Counted::Refused(code) => {
                metrics::counter!("mwp_commands_refused_total", "kind" => kind, "code" => code)
                    .increment(n);
            }
            Counted::Duplicate => {
                metrics::counter!("mwp_commands_duplicate_total", "kind" => kind).increment(n);
            }
            Counted::Accepted => {
                metrics::counter!("mwp_commands_accepted_total", "kind" => kind).increment(n);
            }
        }
    }
}

fn internal(cause: &str) -> Reply {
    Reply::Refused(WireError::from_rejection(Rejection::new(
        ErrorCode::InternalError,
        cause,
    )))
}

pub use crate::clock::now;

/// The answer to one Command; `bytes` name a refused Command in its error document.
fn reply(svc: &AuthorityService, outcome: Outcome, bytes: &[u8]) -> Reply {
    let mut o = Object::new();
    match outcome {
        Ok(Submitted::Appended(events)) => {
            o.insert("status", Value::string("accepted"));
            o.insert(
                "events",
                Value::Array(events.into_iter().map(|e| e.value).collect()),
            );
        }
        Ok(Submitted::Duplicate(receipt)) => {
            // The receipt of an exact retry: the Events the Command appended the first time.
            o.insert("status", Value::string("duplicate"));
            let mut events = Vec::new();
            for bytes in receipt_events(svc, &receipt) {
                if let Ok(v) = json::parse(&bytes) {
                    events.push(v);
                }
            }
            o.insert("events", Value::Array(events));
        }
        Err(r) => return Reply::Refused(WireError::from_rejection(r).about_command(bytes)),
    }
    Reply::Done(json::to_string(&Value::Object(o)))
}

/// The Events an accepted Command appended, as stored, for the answer to its exact retry
/// (§15.1: "the original receipt"), Organization-scoped Events included.
fn receipt_events(svc: &AuthorityService, receipt: &wasm_core::authority::Receipt) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(receipt.events.len());
    for r in &receipt.events {
        let log = r
            .group_id
            .as_deref()
            .unwrap_or(crate::store::ORGANIZATION_LOG);
        if let Ok(mut page) = svc
            .store()
            .group_events(log, r.sequence.saturating_sub(1), 1)
            && let Some(bytes) = page.pop()
        {
            out.push(bytes);
        }
    }
    out
}

/// An acceptance in lines ([`AuthorityHandle::submit_lines`]): the status first, then each
/// Event's canonical bytes after a newline (written in order, nothing shifted afterwards).
fn reply_lines(svc: &AuthorityService, submitted: Submitted) -> Reply {
    fn push_line(out: &mut String, jcs: &[u8]) {
        out.push('\n');
        out.push_str(&String::from_utf8_lossy(jcs));
    }
    let out = match submitted {
        Submitted::Appended(events) => {
            let size = events.iter().map(|e| e.jcs.len() + 1).sum::<usize>();
            let mut out = String::with_capacity("accepted".len() + size);
            out.push_str("accepted");
            for e in &events {
                push_line(&mut out, &e.jcs);
            }
            out
        }
        Submitted::Duplicate(receipt) => {
            let mut out = String::from("duplicate");
            for bytes in receipt_events(svc, &receipt) {
                push_line(&mut out, &bytes);
            }
            out
        }
    };
    Reply::Done(out)
}

/// Opens the durable authority under `data_dir`, bootstraps the development Organization's
/// Agents on first run, and starts the owner thread.
#[allow(dead_code)] // the plain authority, without a gateway (tools and tests)
pub fn start(data_dir: &Path, org: OrgSetup) -> Result<AuthorityHandle, String> {
    start_with_clock(data_dir, org, Box::new(now))
}

/// [`start`] with every durable batch published to `publisher` (the gateway's hub).
pub fn start_publishing(
    data_dir: &Path,
    org: OrgSetup,
    publisher: std::sync::Arc<dyn Publish>,
) -> Result<AuthorityHandle, String> {
    start_full(data_dir, org, Box::new(now), Some(publisher), None)
}

/// [`start`] with the owner thread deciding each batch at `clock()` (tests replay scenarios
/// at their own times through the real thread and store).
#[cfg_attr(not(test), allow(dead_code))]
pub fn start_with_clock(
    data_dir: &Path,
    org: OrgSetup,
    clock: Clock,
) -> Result<AuthorityHandle, String> {
    start_full(data_dir, org, clock, None, None)
}

/// The authority at `clock()`, publishing each durable batch to `publisher` (the WebSocket
/// binding's fan-out) and to `hook` (the in-process demo), when given.
pub fn start_full(
    data_dir: &Path,
    org: OrgSetup,
    clock: Clock,
    publisher: Option<std::sync::Arc<dyn Publish>>,
    hook: Option<EventHook>,
) -> Result<AuthorityHandle, String> {
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let public = std::sync::Arc::new(org.public);
    let keys = org.service_keys.clone();
    let store = SqliteStore::open(&data_dir.join("authority.sqlite")).map_err(|e| e.to_string())?;
    let mut svc = AuthorityService::open(
        Box::new(store),
        org.config,
        org.registry,
        org.admission_service,
    )
    .map_err(|e| e.to_string())?;
    if let Some(keys) = keys {
        svc.use_service_keys(keys);
    }
    let history = svc.store().event_count().map_err(|e| e.to_string())?;
    if history == 0
        && let Some(dev) = &org.dev
    {
        bootstrap(&mut svc, dev)?;
        println!(
            "weave-console: new development Organization: {} Agents registered, Sessions opened \
             ({} Events)",
            dev.agents().count(),
            svc.store().event_count().map_err(|e| e.to_string())?
        );
    }
    // Snapshots of the State every N Events, written in the background, so that the next
    // start loads the newest one and replays only the Events after it (docs/authority.md).
    let every = snapshot_every()?;
    if every > 0 {
        svc.enable_snapshots(every).map_err(|e| e.to_string())?;
    }
    println!(
        "weave-console: authority ready: {} Events in {} ({}), projection {}",
        history,
        data_dir.join("authority.sqlite").display(),
        svc.restored.summary(),
        svc.authority.state.projection_hash()
    );
    if let Some(p) = &publisher {
        p.start(&svc.authority.state, svc.store());
    }
    let live = svc.live_registry();
    let health = Health::default();
    let (tx, _owner, inbox) = spawn_owner_with_inbox(
        svc,
        clock,
        publisher,
        hook,
        false,
        std::sync::Arc::clone(&health),
    )?;
    Ok(AuthorityHandle {
        tx: Intake::Queue(tx),
        public,
        registry: live,
        health,
        owner: Some(inbox),
    })
}

/// Events between two snapshots of the State (`MWP_SNAPSHOT_EVERY`; 0: none).
pub fn snapshot_every() -> Result<u64, String> {
    match std::env::var("MWP_SNAPSHOT_EVERY") {
        Ok(v) => v
            .parse::<u64>()
            .map_err(|_| format!("MWP_SNAPSHOT_EVERY={v:?}: not a number of Events")),
        Err(_) => Ok(crate::authority::DEFAULT_SNAPSHOT_EVERY),
    }
}

/// The verify stage and the owner thread over `svc`: returns the queue into them and the
/// owner's thread. With `stop_on_failure` (a cluster node) the owner answers what it holds
/// and ends once the store fails, so that the node can step down (docs/cluster.md).
pub fn spawn_owner(
    svc: AuthorityService,
    clock: Clock,
    publisher: Option<std::sync::Arc<dyn Publish>>,
    hook: Option<EventHook>,
    stop_on_failure: bool,
) -> Result<(mpsc::SyncSender<Request>, std::thread::JoinHandle<()>), String> {
    spawn_owner_with_inbox(
        svc,
        clock,
        publisher,
        hook,
        stop_on_failure,
        Health::default(),
    )
    .map(|(tx, owner, _)| (tx, owner))
}

/// The queue into the owner, its thread and its inbox (for checkpoints).
type Spawned = (
    mpsc::SyncSender<Request>,
    std::thread::JoinHandle<()>,
    std::sync::Arc<Inbox<ReplyTo>>,
);

/// [`spawn_owner`], the owner setting `health` once it stops deciding.
fn spawn_owner_with_inbox(
    mut svc: AuthorityService,
    clock: Clock,
    publisher: Option<std::sync::Arc<dyn Publish>>,
    hook: Option<EventHook>,
    stop_on_failure: bool,
    health: Health,
) -> Result<Spawned, String> {
    let (verify_threads, sign_threads) = split_threads(available_threads());
    svc.set_threads(sign_threads);
    let verifier = svc.verifier(verify_threads);
    let (tx, rx) = mpsc::sync_channel::<Request>(QUEUE_CAPACITY);
    let inbox = std::sync::Arc::new(Inbox::<ReplyTo>::default());
    let woken = std::sync::Arc::clone(&inbox);
    svc.store()
        .on_synced(std::sync::Arc::new(move || woken.synced()));
    let verified = std::sync::Arc::clone(&inbox);
    let asked = std::sync::Arc::clone(&inbox);
    std::thread::Builder::new()
        .name("authority-verify".into())
        .spawn(move || verify_stage(&rx, &verifier, &verified))
        .map_err(|e| format!("cannot start the verify thread: {e}"))?;
    let owner = std::thread::Builder::new()
        .name("authority".into())
        .spawn(move || {
            run(
                &mut svc,
                &inbox,
                &clock,
                publisher.as_deref(),
                hook.as_ref(),
                stop_on_failure,
                &health,
            );
            let _ = health.set(
                svc.failure()
                    .unwrap_or_else(|| "the authority stopped".to_owned()),
            );
        })
        .map_err(|e| format!("cannot start the authority thread: {e}"))?;
    Ok((tx, owner, asked))
}

impl AuthorityHandle {
    /// A handle whose Commands go to `intake` (a cluster node's router).
    pub fn over(
        intake: std::sync::Arc<dyn Dispatch>,
        public: std::sync::Arc<crate::registry_api::PublicRegistry>,
        registry: crate::live_registry::LiveRegistry,
    ) -> AuthorityHandle {
        AuthorityHandle {
            tx: Intake::Dispatch(intake),
            public,
            registry,
            health: Health::default(),
            owner: None,
        }
    }
}

/// The owner loop, pipelined: while the disk makes earlier batches durable, the next one is
/// decided and written; each batch's senders are answered, in order, once it is durable
/// (`Pipeline`). The owner waits for a new batch or the end of a sync, whichever comes first
/// ([`Inbox`]): batches already durable are answered before anything new is decided, and a
/// verified batch never waits behind a sync.
fn run(
    svc: &mut AuthorityService,
    inbox: &Inbox<ReplyTo>,
    clock: &Clock,
    publisher: Option<&dyn Publish>,
    hook: Option<&EventHook>,
    stop_on_failure: bool,
    health: &Health,
) {
    let _gone = Gone { inbox, owner: true };
    // Each sender with its Command's bytes, kept to name a refused Command in its answer,
    // and the batch's kind labels (for `mwp_commands_*_total`).
    type Senders = (Vec<(ReplyTo, Vec<u8>)>, Vec<&'static str>);
    let mut pipeline: Pipeline<Senders> = Pipeline::default();
    let events = metrics::gauge!("mwp_events");
    let answer = |svc: &AuthorityService, (outcomes, (senders, kinds)): (Vec<Outcome>, Senders)| {
        count_outcomes(&outcomes, &kinds);
        events.set(svc.events() as f64);
        // Durable now: subscribers see the batch before any sender hears of it.
        if let Some(p) = publisher {
            let batch: Vec<(&Outcome, Origin)> = outcomes
                .iter()
                .zip(&senders)
                .map(|(o, (s, _))| (o, s.origin))
                .collect();
            p.publish(&svc.authority.state, svc.store(), &batch);
        }
        if let Some(hook) = hook {
            let events: Vec<Vec<u8>> = outcomes
                .iter()
                .filter_map(|o| match o {
                    Ok(Submitted::Appended(es)) => Some(es),
                    _ => None,
                })
                .flatten()
                .map(|e| e.jcs.clone())
                .collect();
            if !events.is_empty() {
                hook(events);
            }
        }
        for (outcome, (sender, bytes)) in outcomes.into_iter().zip(senders) {
            let r = match outcome {
                Ok(_) if sender.origin.is_some() => Reply::Done(String::new()),
                Ok(submitted) if sender.lines => reply_lines(svc, submitted),
                outcome => reply(svc, outcome, &bytes),
            };
            let _ = sender.send(r);
        }
    };
    // A verified batch taken while merging that would have made the merged one too large:
    // it is the next one decided.
    let mut carried: Option<VerifiedBatch<ReplyTo>> = None;
    loop {
        let next = match carried.take() {
            Some(b) => Taken::Batch(b),
            None => inbox.take(!pipeline.is_empty()),
        };
        let mut batch = match next {
            Taken::Batch(b) => b,
            Taken::Synced => {
                for done in pipeline.release_durable(svc) {
                    answer(svc, done);
                }
                answer_if_failed(svc, &mut pipeline, &answer);
                continue;
            }
            Taken::Checkpoint(tx) => {
                // Everything written made durable (and answered) first: the State then covers
                // exactly the log up to its last Mark, all of it on disk.
                while let Some(done) = pipeline.finish_oldest(svc) {
                    answer(svc, done);
                }
                let held = match svc.failure() {
                    Some(why) => Err(why),
                    None => Ok(Held {
                        state: svc.authority.state.clone(),
                        position: svc.store().last_mark().0,
                        events: svc.events(),
                    }),
                };
                let _ = tx.send(held);
                continue;
            }
            Taken::Closed => {
                // Every handle dropped: answer what is written, then stop.
                while let Some(done) = pipeline.finish_oldest(svc) {
                    answer(svc, done);
                }
                return;
            }
        };
        // What became durable meanwhile is answered first: its senders do not wait for the
        // batch about to be decided.
        for done in pipeline.release_durable(svc) {
            answer(svc, done);
        }
        // Every other verified batch already waiting joins this one (in arrival order, up to
        // `MAX_BATCH`): one transaction, one sync request and one fan-out for all of them
        // instead of one each. The verify stage hands on what has arrived since its last
        // batch, often a few Commands; merging here makes the owner's batches as large as
        // the backlog it finds.
        while carried.is_none() && batch.commands.len() < MAX_BATCH {
            let Some(more) = inbox.try_take() else { break };
            if batch.commands.len() + more.commands.len() > MAX_BATCH {
                carried = Some(more);
            } else {
                batch.append(more);
            }
        }
        let kinds: Vec<&'static str> = batch.verified.iter().map(kind_label).collect();
        let begun = svc.begin_verified(batch.verified, &batch.commands, clock());
        let senders: Senders = (
            batch.replies.into_iter().zip(batch.commands).collect(),
            kinds,
        );
        for done in pipeline.push(svc, begun, senders) {
            answer(svc, done);
        }
        answer_if_failed(svc, &mut pipeline, &answer);
        if let Some(why) = svc.failure().filter(|_| health.get().is_none()) {
            let _ = health.set(why);
        }
        if stop_on_failure && svc.has_failed() {
            while let Some(done) = pipeline.finish_oldest(svc) {
                answer(svc, done);
            }
            tracing::warn!("the authority stopped: its store failed or fenced it");
            return;
        }
    }
}

/// A batch released by the `Pipeline`: its outcomes and its senders.
type Released<T> = (Vec<Outcome>, T);

/// A failed sync is final and no sync follows it: everything waiting is answered now
/// (`finish_batch` makes each outcome `INTERNAL_ERROR`) instead of waiting for a wake-up that
/// never comes.
fn answer_if_failed<T>(
    svc: &mut AuthorityService,
    pipeline: &mut Pipeline<T>,
    answer: &dyn Fn(&AuthorityService, Released<T>),
) {
    if svc.store().sync_failed() {
        while let Some(done) = pipeline.finish_oldest(svc) {
            answer(svc, done);
        }
    }
}

/// Registers an Agent Card and opens a Session for every development Agent (signed by the
/// Organization's services, through the normal durable path). The card registrations are the
/// Commands `dev principals` sends again later ([`crate::cards::register_command`]), so those
/// are exact retries.
pub(crate) fn bootstrap(svc: &mut AuthorityService, org: &DevOrganization) -> Result<(), String> {
    let t = now();
    let gateway = org.require("group-gateway")?;
    let mut commands = Vec::new();
    for p in org.agents() {
        commands.push(crate::cards::register_command(org, p)?);
        let mut payload = Object::new();
        payload.insert("agentId", Value::string(p.actor.id.0.clone()));
        commands.push(crate::devorg::signed_command(
            gateway,
            "ext.missionweaveprotocol.identity.session_open",
            &format!(
                "urn:missionweaveprotocol:action:bootstrap-session:{}",
                p.name
            ),
            &crate::devorg::Envelope::default(),
            payload,
            t,
        )?);
    }
    // Cards first (in order), so that each Session finds its Agent's card.
    for o in svc.submit_batch(&commands, t) {
        o.map_err(|r| format!("bootstrap: {r}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod inbox_tests {
    use super::{Inbox, Taken, VERIFIED_AHEAD, VerifiedBatch};
    use std::sync::Arc;

    fn batch(id: u8) -> VerifiedBatch<u8> {
        VerifiedBatch {
            commands: vec![vec![id]],
            replies: vec![id],
            verified: vec![],
        }
    }

    fn id(t: Taken<u8>) -> Option<u8> {
        match t {
            Taken::Batch(b) => b.replies.first().copied(),
            Taken::Synced | Taken::Closed | Taken::Checkpoint(_) => None,
        }
    }

    #[test]
    fn batches_come_first_and_a_sync_wakes_only_an_owner_waiting_for_one() {
        let inbox = Inbox::<u8>::default();
        assert!(inbox.put(batch(1)));
        inbox.synced();
        // A waiting batch is taken before the sync is reported, and in arrival order.
        assert_eq!(id(inbox.take(true)), Some(1));
        assert!(matches!(inbox.take(true), Taken::Synced));
        // Reported once.
        assert!(inbox.try_take().is_none());
        inbox.synced();
        // An owner with nothing written does not wake for a sync: it is forgotten, and the
        // owner waits for a batch (here: for the verify stage to be gone).
        inbox.close();
        assert!(matches!(inbox.take(false), Taken::Closed));
        assert!(matches!(inbox.take(true), Taken::Closed));
    }

    #[test]
    fn a_checkpoint_comes_before_waiting_batches_and_one_waits_at_most() {
        let inbox = Inbox::<u8>::default();
        assert!(inbox.put(batch(1)));
        let (first, _keep) = tokio::sync::oneshot::channel();
        assert!(inbox.ask(first).is_ok());
        // A second one while the first waits: refused, nothing queues behind it.
        let (second, _keep2) = tokio::sync::oneshot::channel();
        assert!(inbox.ask(second).is_err());
        // Under load batches are always waiting: the checkpoint is still taken first.
        assert!(matches!(inbox.take(false), Taken::Checkpoint(_)));
        assert_eq!(id(inbox.take(false)), Some(1));
        // The owner gone: a waiting checkpoint hears so, and a new one is refused.
        let (third, mut told) = tokio::sync::oneshot::channel();
        assert!(inbox.ask(third).is_ok());
        inbox.owner_gone();
        assert!(matches!(told.try_recv(), Ok(Err(_))));
        let (fourth, _keep4) = tokio::sync::oneshot::channel();
        assert!(inbox.ask(fourth).is_err());
    }

    #[test]
    fn a_sync_from_another_thread_wakes_a_waiting_owner() {
        let inbox = Arc::new(Inbox::<u8>::default());
        let syncer = Arc::clone(&inbox);
        let t = std::thread::spawn(move || syncer.synced());
        assert!(matches!(inbox.take(true), Taken::Synced));
        t.join().expect("syncer");
    }

    #[test]
    fn the_verify_stage_waits_for_room_and_stops_when_the_owner_is_gone() {
        let inbox = Arc::new(Inbox::<u8>::default());
        for i in 0..VERIFIED_AHEAD {
            assert!(inbox.put(batch(u8::try_from(i).expect("small"))));
        }
        // Full: the next put waits until the owner takes one.
        let stage = Arc::clone(&inbox);
        let t = std::thread::spawn(move || stage.put(batch(9)));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!t.is_finished(), "put must wait for room");
        assert_eq!(inbox.try_take().map(|b| b.replies[0]), Some(0));
        assert!(t.join().expect("stage"), "room made: the batch is taken");
        let taken: Vec<Option<u8>> = (0..VERIFIED_AHEAD).map(|_| id(inbox.take(false))).collect();
        assert_eq!(taken.last().copied().flatten(), Some(9), "{taken:?}");
        // The owner gone: a put returns false at once, even with room.
        inbox.owner_gone();
        assert!(!inbox.put(batch(7)));
        assert!(inbox.try_take().is_none());
    }
}

#[cfg(test)]
mod merge_tests {
    use super::VerifiedBatch;
    use wasm_core::crypto::VerifyError;

    fn batch(ids: &[u8]) -> VerifiedBatch<u8> {
        VerifiedBatch {
            commands: ids.iter().map(|i| vec![*i]).collect(),
            replies: ids.to_vec(),
            verified: ids
                .iter()
                .map(|_| {
                    Err(VerifyError {
                        stage: wasm_core::crypto::verify::Stage::Parse,
                        reason: "not a Command".into(),
                    })
                })
                .collect(),
        }
    }

    #[test]
    fn merged_batches_keep_arrival_order_and_stay_aligned() {
        let mut first = batch(&[1, 2]);
        first.append(batch(&[3]));
        first.append(batch(&[]));
        first.append(batch(&[4, 5]));
        assert_eq!(first.replies, vec![1, 2, 3, 4, 5]);
        assert_eq!(
            first.commands,
            vec![vec![1], vec![2], vec![3], vec![4], vec![5]]
        );
        assert_eq!(first.verified.len(), 5);
        // An empty batch appended changes nothing.
        let mut alone = batch(&[7]);
        alone.append(batch(&[]));
        assert_eq!(alone.replies, vec![7]);
        assert_ne!(alone.replies, first.replies);
    }
}

#[cfg(test)]
mod count_tests {
    use super::{Counted, tally};
    use wasm_core::authority::Rejection;
    use wasm_core::model::error::ErrorCode;

    #[test]
    fn outcomes_are_summed_per_kind_outcome_and_code() {
        let refused = |c: ErrorCode| Err(Rejection::new(c, "test"));
        let outcomes = vec![
            refused(ErrorCode::Backpressure),
            refused(ErrorCode::InternalError),
            refused(ErrorCode::Backpressure),
            refused(ErrorCode::Backpressure),
        ];
        let kinds = ["message.post", "message.post", "message.post", "work.claim"];
        let t = tally(&outcomes, &kinds);
        let bp = ErrorCode::Backpressure.as_str();
        let ie = ErrorCode::InternalError.as_str();
        assert_eq!(
            t,
            vec![
                ("message.post", Counted::Refused(bp), 2),
                ("message.post", Counted::Refused(ie), 1),
                ("work.claim", Counted::Refused(bp), 1),
            ]
        );
    }
}
