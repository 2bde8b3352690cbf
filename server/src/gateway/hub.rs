//! The fan-out hub (§16, §17.2, §17.3). The authority's owner thread publishes every durable
//! batch here (`runtime::Publish`) before answering its senders; the hub keeps what the
//! gateway must know to authorize without asking the owner (each Group's durable head,
//! Memberships and archive, each Agent's Session Epoch) and hands each Event to the
//! connections subscribed to its Group, in sequence order.
//!
//! Publishing never blocks: each (connection, Group) has its own bounded queue. A queue that
//! is full pauses that Group on that connection (a `BACKPRESSURE` error is queued after what
//! is already there, saying where to resume), so a slow or stalled subscriber costs at most
//! `group_buffer` frames per Group and never delays another Group or socket.

use super::{error_frame, event_frame};
use crate::authority::Outcome;
use crate::runtime::{Origin, Publish};
use crate::store::Store;
use crate::wire::WireError;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;
use wasm_core::authority::Submitted;
use wasm_core::authority::state::State;
use wasm_core::frame::Attention;
use wasm_core::json::Value;
use wasm_core::model::common::ActorType;

/// A frame's text as queued and sent: one buffer shared by every connection it goes to
/// (a clone is a reference count), handed to the socket without a copy.
pub type FrameText = axum::extract::ws::Utf8Bytes;

/// The kind of the Event that opens a Session (payloads.md §6.34).
pub const SESSION_OPENED: &str = "ext.missionweaveprotocol.identity.session_opened";
const SNAPSHOT_CREATED: &str = "group.snapshot.created";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep serving it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A principal's standing in one Group, as the gateway authorizes with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberView {
    pub active: bool,
    pub visibility_after: u64,
}

/// A Group archived with a signed final snapshot (§7.4; payloads.md §6.38).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveView {
    pub snapshot_id: String,
    /// The last sequence the snapshot covers.
    pub through_sequence: u64,
    /// The sequence of the signed `group.snapshot.created` Event (the snapshot reference).
    pub reference_sequence: u64,
    pub state_hash: Option<String>,
}

#[derive(Default)]
struct GroupEntry {
    /// The last durable sequence.
    head: u64,
    members: HashMap<String, MemberView>,
    /// The owners of the Group's Mission and of every Mission above it: they read the Group
    /// without a Membership (§14, H-10: the root MissionOwner inspects the complete Mission
    /// tree), its whole history, and send nothing there on that account.
    inspectors: HashSet<String>,
    archive: Option<ArchiveView>,
    subscribers: HashMap<u64, Arc<Conn>>,
}

impl GroupEntry {
    /// Whether `principal` may read the Group: an active Membership, or an inspector.
    fn may_read(&self, principal: &str) -> bool {
        self.members.get(principal).is_some_and(|m| m.active) || self.inspectors.contains(principal)
    }
}

/// Who is on the other end of a connection.
#[derive(Clone, Debug)]
pub struct Principal {
    pub id: String,
    pub kind: ActorType,
    /// The Agent's Session Epoch (humans have none, §6.3).
    pub session_epoch: Option<u64>,
}

/// Where a subscription stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubState {
    /// History is being read from the store; live Events wait for it.
    Replaying,
    /// Live Events are queued as they become durable.
    Live,
    /// Stopped (buffer full or replay page done) until the client subscribes again.
    Paused,
}

struct Sub {
    state: SubState,
    queue: VecDeque<FrameText>,
    attention: Option<Attention>,
    /// Bytes of the frames in `queue`.
    bytes: usize,
    /// The last sequence queued (or skipped by the filter).
    last: u64,
    generation: u64,
    /// Wakes this Group's replay when the writer takes a frame.
    space: Arc<Notify>,
}

#[derive(Default)]
struct ConnInner {
    subs: HashMap<String, Sub>,
    /// Groups with queued frames, served in turn (fair between Groups).
    ready: VecDeque<String>,
    /// Frames of the connection's own Commands it would not get by subscription.
    own: VecDeque<FrameText>,
    /// Replies and errors.
    control: VecDeque<FrameText>,
    next_generation: u64,
    /// Bytes of the frames in every Group queue.
    bytes: usize,
    /// A replay waits for room the connection's byte bound took (room freed in another
    /// Group's queue must wake it too).
    starved: bool,
}

/// A connection's queue bounds (`GatewayConfig`).
struct Bounds {
    frames: usize,
    group_bytes: usize,
    conn_bytes: usize,
}

/// One connection's queues, shared by the hub (producer) and its writer (consumer).
pub struct Conn {
    pub id: u64,
    pub principal: Principal,
    inner: Mutex<ConnInner>,
    /// Wakes the writer.
    pub wake: Notify,
    fenced: AtomicBool,
    /// Set to make the writer send what is in `control` and close.
    closing: AtomicBool,
    bounds: Bounds,
    retry_after_ms: u64,
    /// The most frames any one of its Group queues held (tests check memory is bounded).
    pub high_water: AtomicUsize,
    /// The most bytes its Group queues held together.
    pub high_water_bytes: AtomicUsize,
}

/// What became of a live Event offered to one subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Offer {
    /// Queued: the writer is to be woken (once per batch, by `Hub::publish`).
    Queued,
    /// Already queued, or the replay will read it.
    Seen,
    /// Left out by the subscription's attention filter.
    Filtered,
    /// The subscription is paused or gone: it takes no live Event until the client
    /// subscribes again, which registers it with the Group anew (`Hub::subscribe`).
    Stopped,
}

/// The next thing a writer sends.
pub enum Next {
    Frame(FrameText),
    /// Nothing now; wait for `wake`.
    Idle,
    /// Send nothing more; close.
    Close,
}

impl Conn {
    pub fn new(id: u64, principal: Principal, config: &super::GatewayConfig) -> Conn {
        Conn {
            id,
            principal,
            inner: Mutex::new(ConnInner::default()),
            wake: Notify::new(),
            fenced: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            bounds: Bounds {
                frames: config.group_buffer.max(1),
                group_bytes: config.group_buffer_bytes,
                conn_bytes: config.connection_buffer_bytes,
            },
            retry_after_ms: config.retry_after_ms,
            high_water: AtomicUsize::new(0),
            high_water_bytes: AtomicUsize::new(0),
        }
    }

    pub fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::SeqCst)
    }

    /// Fences the connection: nothing more is sent on it, not even queued frames (§6.3).
    pub fn fence(&self) {
        self.fenced.store(true, Ordering::SeqCst);
        let mut inner = lock(&self.inner);
        inner.subs.clear();
        inner.bytes = 0;
        inner.ready.clear();
        inner.own.clear();
        inner.control.clear();
        drop(inner);
        self.wake.notify_one();
    }

    /// Queues a reply or an error.
    pub fn control(&self, frame: String) {
        lock(&self.inner).control.push_back(frame.into());
        self.wake.notify_one();
    }

    /// Queues a last frame and closes after it.
    pub fn close_with(&self, frame: Option<String>) {
        if let Some(f) = frame {
            lock(&self.inner).control.push_back(f.into());
        }
        self.closing.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// How many control frames wait (a client that never reads its replies is closed).
    pub fn control_len(&self) -> usize {
        lock(&self.inner).control.len()
    }

    /// The next frame to send: replies first, then the connection's own Events, then one
    /// frame from each Group with frames, in turn.
    pub fn next(&self) -> Next {
        let mut inner = lock(&self.inner);
        if let Some(f) = inner.control.pop_front() {
            return Next::Frame(f);
        }
        if self.is_closing() {
            return Next::Close;
        }
        if self.is_fenced() {
            // Only the refusal of a frame it sends after fencing (`conn::on_text`).
            return Next::Idle;
        }
        if let Some(f) = inner.own.pop_front() {
            return Next::Frame(f);
        }
        while let Some(g) = inner.ready.pop_front() {
            let Some(sub) = inner.subs.get_mut(&g) else {
                continue;
            };
            let Some(f) = sub.queue.pop_front() else {
                continue;
            };
            sub.bytes -= f.len();
            let more = !sub.queue.is_empty();
            sub.space.notify_one();
            inner.bytes -= f.len();
            if more {
                inner.ready.push_back(g);
            }
            if inner.starved {
                // Room under the connection's bound: every waiting replay may go on.
                inner.starved = false;
                for sub in inner.subs.values() {
                    sub.space.notify_one();
                }
            }
            return Next::Frame(f);
        }
        Next::Idle
    }

    /// Starts (or restarts) a subscription in the `Replaying` state; returns its generation
    /// and the Notify its replay waits on for room.
    pub(super) fn begin_subscription(
        &self,
        group: &str,
        attention: Option<Attention>,
        after: u64,
    ) -> (u64, Arc<Notify>) {
        let mut inner = lock(&self.inner);
        inner.next_generation += 1;
        let generation = inner.next_generation;
        let space = Arc::new(Notify::new());
        let replaced = inner.subs.insert(
            group.to_owned(),
            Sub {
                state: SubState::Replaying,
                queue: VecDeque::new(),
                bytes: 0,
                attention,
                last: after,
                generation,
                space: Arc::clone(&space),
            },
        );
        if let Some(old) = replaced {
            inner.bytes -= old.bytes;
        }
        (generation, space)
    }

    /// Room left in a replaying subscription's queue: frames (0: wait for `space`), bytes,
    /// and whether the connection's Group queues are all empty (then one frame of any size
    /// may go, so that an Event larger than a bound still gets through, alone). `None` once
    /// the subscription was replaced or dropped.
    pub(super) fn replay_room(&self, group: &str, generation: u64) -> Option<(usize, usize, bool)> {
        let mut inner = lock(&self.inner);
        let conn_bytes = inner.bytes;
        let sub = inner
            .subs
            .get(group)
            .filter(|s| s.generation == generation)?;
        let frames = self.bounds.frames.saturating_sub(sub.queue.len());
        let bytes = self
            .bounds
            .group_bytes
            .saturating_sub(sub.bytes)
            .min(self.bounds.conn_bytes.saturating_sub(conn_bytes));
        let empty = conn_bytes == 0;
        if frames == 0 || (bytes == 0 && !empty) {
            inner.starved |= frames > 0;
            return Some((0, 0, false));
        }
        Some((frames, bytes, empty))
    }

    /// A replay's next Event does not fit the room left: whether to wait for `space` (the
    /// connection still holds frames, whose sending wakes it), or to look again now.
    pub(super) fn starve(&self) -> bool {
        let mut inner = lock(&self.inner);
        if inner.bytes == 0 {
            return false;
        }
        inner.starved = true;
        true
    }

    /// Queues replayed frames (the caller made room for them); false once replaced.
    pub(super) fn push_replayed(
        &self,
        group: &str,
        generation: u64,
        frames: Vec<(u64, String)>,
    ) -> bool {
        let mut inner = lock(&self.inner);
        let Some(sub) = inner
            .subs
            .get_mut(group)
            .filter(|s| s.generation == generation && s.state == SubState::Replaying)
        else {
            return false;
        };
        let was_empty = sub.queue.is_empty();
        let mut added = 0;
        for (seq, f) in frames {
            added += f.len();
            sub.queue.push_back(f.into());
            sub.last = seq;
        }
        sub.bytes += added;
        let len = sub.queue.len();
        inner.bytes += added;
        self.high_water.fetch_max(len, Ordering::Relaxed);
        self.high_water_bytes
            .fetch_max(inner.bytes, Ordering::Relaxed);
        if was_empty && len > 0 {
            inner.ready.push_back(group.to_owned());
        }
        drop(inner);
        self.wake.notify_one();
        true
    }

    /// Pauses a subscription after its queued frames, with `BACKPRESSURE` saying where to
    /// resume (binding.md, "Continuation").
    pub(super) fn pause(&self, group: &str, generation: Option<u64>, reason: &str) {
        let mut inner = lock(&self.inner);
        let current = inner
            .subs
            .get(group)
            .is_some_and(|s| generation.is_none_or(|g| s.generation == g));
        if current {
            self.pause_locked(&mut inner, group, reason);
        }
    }

    /// [`Conn::pause`] under the lock already held.
    fn pause_locked(&self, inner: &mut ConnInner, group: &str, reason: &str) {
        let Some(sub) = inner.subs.get_mut(group) else {
            return;
        };
        if sub.state == SubState::Paused {
            return;
        }
        let was_empty = sub.queue.is_empty();
        sub.state = SubState::Paused;
        let frame = continuation(group, sub.last, reason, self.retry_after_ms);
        sub.bytes += frame.len();
        inner.bytes += frame.len();
        sub.queue.push_back(frame.into());
        if was_empty {
            inner.ready.push_back(group.to_owned());
        }
        self.wake.notify_one();
    }

    /// Ends a subscription (unsubscribed, no longer a member).
    fn drop_subscription(&self, group: &str) {
        let mut inner = lock(&self.inner);
        if let Some(sub) = inner.subs.remove(group) {
            inner.bytes -= sub.bytes;
        }
    }

    /// The state of this connection's subscription to `group`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn subscription(&self, group: &str) -> Option<SubState> {
        lock(&self.inner).subs.get(group).map(|s| s.state)
    }

    /// One live Event of `group`: whether the connection will see it through the
    /// subscription (in order), or whether the subscription has stopped taking live Events.
    /// A queued frame does not wake the writer: the caller does, once for the whole batch.
    fn offer(
        &self,
        group: &str,
        seq: u64,
        frame: &FrameText,
        meta: &EventMeta,
        own: bool,
    ) -> Offer {
        let mut inner = lock(&self.inner);
        let inner = &mut *inner;
        let Some(sub) = inner.subs.get_mut(group) else {
            return Offer::Stopped;
        };
        match sub.state {
            // The replay reads it from the store (the head already includes it).
            SubState::Replaying => return Offer::Seen,
            SubState::Paused => return Offer::Stopped,
            SubState::Live => {}
        }
        if seq <= sub.last {
            return Offer::Seen;
        }
        sub.last = seq;
        // Attention filters change live delivery only (§17.2); a sender always gets its own.
        if !own
            && let Some(a) = &sub.attention
            && !meta.passes(a, &self.principal.id)
        {
            return Offer::Filtered;
        }
        // Bounded in frames and in bytes: past either, the Group pauses (§17.3).
        let fits = sub.queue.len() < self.bounds.frames
            && (sub.bytes == 0 || sub.bytes + frame.len() <= self.bounds.group_bytes)
            && (inner.bytes == 0 || inner.bytes + frame.len() <= self.bounds.conn_bytes);
        if !fits {
            sub.last = seq - 1;
            metrics::counter!("mwp_frames_dropped_total", "reason" => "group_paused").increment(1);
            self.pause_locked(inner, group, "buffer_full");
            return Offer::Stopped;
        }
        let was_empty = sub.queue.is_empty();
        sub.queue.push_back(frame.clone());
        sub.bytes += frame.len();
        let len = sub.queue.len();
        inner.bytes += frame.len();
        self.high_water.fetch_max(len, Ordering::Relaxed);
        self.high_water_bytes
            .fetch_max(inner.bytes, Ordering::Relaxed);
        if was_empty {
            inner.ready.push_back(group.to_owned());
        }
        Offer::Queued
    }

    /// Queues one of the connection's own Events; the caller wakes the writer.
    fn push_own(&self, frame: FrameText) {
        lock(&self.inner).own.push_back(frame);
    }
}

/// The `BACKPRESSURE` error that pauses a Group: retry guidance, and where to resume (the
/// binding's `continuation`, which demo-node sends too).
fn continuation(group: &str, last: u64, reason: &str, retry_after_ms: u64) -> String {
    error_frame(&WireError::from_refusal(
        wasm_core::binding::error::continuation(group, last, reason, retry_after_ms),
    ))
}

/// What the attention filter looks at in an Event (payloads.md §10.3).
#[derive(Default)]
struct EventMeta {
    kind: String,
    conversation_id: Option<String>,
    work_item_id: Option<String>,
    mentions: Vec<String>,
    announcement: bool,
}

impl EventMeta {
    fn of(v: &Value) -> EventMeta {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let mut mentions = Vec::new();
        for p in ["/payload/message/mentions", "/payload/mentions"] {
            if let Some(Value::Array(items)) = v.pointer(p) {
                mentions.extend(
                    items
                        .iter()
                        .filter_map(|m| m.pointer("/id").and_then(Value::as_str))
                        .map(str::to_owned),
                );
            }
        }
        EventMeta {
            kind: s("/kind").unwrap_or_default(),
            conversation_id: s("/conversationId"),
            work_item_id: s("/workItemId"),
            mentions,
            announcement: v.pointer("/payload/announcement") == Some(&Value::Bool(true)),
        }
    }

    /// The conditions combine with AND; an announcement passes when asked for.
    fn passes(&self, a: &Attention, me: &str) -> bool {
        if a.announcements == Some(true) && self.announcement {
            return true;
        }
        if let Some(kinds) = &a.event_kinds
            && !kinds.iter().any(|k| k.as_str() == self.kind)
        {
            return false;
        }
        if let Some(ids) = &a.conversation_ids
            && !self
                .conversation_id
                .as_deref()
                .is_some_and(|c| ids.iter().any(|i| i.as_str() == c))
        {
            return false;
        }
        if let Some(ids) = &a.work_item_ids
            && !self
                .work_item_id
                .as_deref()
                .is_some_and(|w| ids.iter().any(|i| i.as_str() == w))
        {
            return false;
        }
        if a.mentions_only == Some(true) && !self.mentions.iter().any(|m| m == me) {
            return false;
        }
        true
    }
}

/// What SUBSCRIBE learns about a Group for a principal.
pub enum Access {
    /// Unknown, or not visible to the principal: the same (§17.2).
    Hidden,
    Visible {
        visibility_after: u64,
        archive: Option<ArchiveView>,
    },
}

/// [`Hub::gauges`].
#[derive(Clone, Copy, Debug, Default)]
pub struct HubGauges {
    /// Open sessions by profile (binding.md: the human and the Agent profile), and those of
    /// service Principals (an Organization's own services), counted apart from the Agents.
    pub humans: u64,
    pub agents: u64,
    pub services: u64,
    pub subscriptions: u64,
    /// Frames queued to sessions (Group queues, own Events, replies), and the Group queues'
    /// bytes.
    pub queued_frames: u64,
    pub queued_bytes: u64,
    pub groups: u64,
}

/// Counters for tests and operators.
#[derive(Default)]
pub struct HubStats {
    pub published: AtomicU64,
}

/// The hub: Group heads, the authorization view, subscribers and live connections.
pub struct Hub {
    groups: Mutex<HashMap<String, GroupEntry>>,
    sessions: Mutex<HashMap<String, u64>>,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    /// Latest Presence Record per Agent (ephemeral, §6.2).
    presence: Mutex<HashMap<String, Value>>,
    /// The Groups whose log names each Artifact content hash (the Group of the Mission whose
    /// manifest carries it): who may read its bytes (`GET /api/artifacts/{hash}`, issue 26).
    artifact_groups: Mutex<HashMap<String, HashSet<String>>>,
    /// A cluster node's forwarded Commands' own Events that this node has not published yet
    /// (the writer answered before this node's tailer read them): delivered by the publish
    /// that reaches them (docs/cluster.md, "Forwarding"). At most [`MAX_PENDING_OWN`].
    pending_own: Mutex<VecDeque<(u64, OwnEvent)>>,
    pub stats: HubStats,
}

/// An Event a forwarded Command appended, for the connection that sent it.
#[derive(Clone, Debug)]
pub struct OwnEvent {
    pub group: String,
    pub sequence: u64,
    pub jcs: Vec<u8>,
}

/// Own Events waiting for this node's fan-out to reach them, at most (the oldest are dropped:
/// their sender still gets them by subscription or by retrying its Command).
pub const MAX_PENDING_OWN: usize = 4096;

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    pub fn new() -> Hub {
        Hub {
            groups: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            conns: Mutex::new(HashMap::new()),
            presence: Mutex::new(HashMap::new()),
            artifact_groups: Mutex::new(HashMap::new()),
            pending_own: Mutex::new(VecDeque::new()),
            stats: HubStats::default(),
        }
    }

    /// Whether `principal` may read the content `hash`: it may read a Group whose log names
    /// it. An unknown hash and a forbidden one are alike here (and to the caller).
    pub fn may_read_artifact(&self, principal: &str, hash: &str) -> bool {
        let Some(groups) = lock(&self.artifact_groups).get(hash).cloned() else {
            return false;
        };
        let entries = lock(&self.groups);
        groups
            .iter()
            .any(|g| entries.get(g).is_some_and(|e| e.may_read(principal)))
    }

    /// Builds the content hash → Groups index from the authority's Artifact manifests (at
    /// start; each `artifact.published` Event adds its hash afterwards, `publish`).
    fn index_artifacts(&self, state: &State) {
        let mut index: HashMap<String, HashSet<String>> = HashMap::new();
        for a in state.artifacts.values() {
            let hash = a.get("contentHash").and_then(Value::as_str);
            let group = a
                .get("missionId")
                .and_then(Value::as_str)
                .and_then(|m| state.missions.get(m))
                .map(|m| m.group_id.clone());
            if let (Some(h), Some(g)) = (hash, group) {
                index.entry(h.to_owned()).or_default().insert(g);
            }
        }
        *lock(&self.artifact_groups) = index;
    }

    /// The durable Session Epoch of an Agent.
    pub fn session_epoch(&self, agent: &str) -> Option<u64> {
        lock(&self.sessions).get(agent).copied()
    }

    /// Whether a connection's session is fenced by a newer Session Epoch (§6.3).
    pub fn is_stale(&self, conn: &Conn) -> bool {
        conn.is_fenced()
            || conn.principal.session_epoch.is_some_and(|e| {
                self.session_epoch(&conn.principal.id)
                    .is_some_and(|cur| cur > e)
            })
    }

    pub fn register(&self, conn: Arc<Conn>) {
        lock(&self.conns).insert(conn.id, conn);
    }

    /// Forgets a closed connection everywhere.
    pub fn unregister(&self, conn: &Conn) {
        lock(&self.conns).remove(&conn.id);
        let mut groups = lock(&self.groups);
        for g in groups.values_mut() {
            g.subscribers.remove(&conn.id);
        }
    }

    /// Fences every other connection of `agent` below `epoch`.
    pub fn fence_older(&self, agent: &str, epoch: u64) {
        {
            let mut s = lock(&self.sessions);
            let e = s.entry(agent.to_owned()).or_insert(0);
            *e = (*e).max(epoch);
        }
        let stale: Vec<Arc<Conn>> = lock(&self.conns)
            .values()
            .filter(|c| {
                c.principal.id == agent && c.principal.session_epoch.is_some_and(|e| e < epoch)
            })
            .cloned()
            .collect();
        for c in stale {
            c.fence();
            self.unregister(&c);
        }
    }

    /// What an operator watches (`GET /metrics`, read at scrape time): each lock is held
    /// for a count, one connection at a time.
    pub fn gauges(&self) -> HubGauges {
        let conns: Vec<Arc<Conn>> = lock(&self.conns).values().cloned().collect();
        let mut g = HubGauges::default();
        for c in &conns {
            match c.principal.kind {
                ActorType::Human => g.humans += 1,
                ActorType::Agent => g.agents += 1,
                ActorType::Service => g.services += 1,
            }
            let inner = lock(&c.inner);
            g.subscriptions += inner.subs.len() as u64;
            g.queued_frames += inner
                .subs
                .values()
                .map(|s| s.queue.len() as u64)
                .sum::<u64>()
                + inner.own.len() as u64
                + inner.control.len() as u64;
            g.queued_bytes += inner.bytes as u64;
        }
        let groups = lock(&self.groups);
        g.groups = groups.len() as u64;
        g
    }

    /// The live connections of `principal` (tests and operators).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn connections_of(&self, principal: &str) -> Vec<Arc<Conn>> {
        lock(&self.conns)
            .values()
            .filter(|c| c.principal.id == principal)
            .cloned()
            .collect()
    }

    pub fn set_presence(&self, agent: &str, record: Value) {
        lock(&self.presence).insert(agent.to_owned(), record);
    }

    #[cfg_attr(not(test), allow(dead_code))]
    pub fn presence(&self, agent: &str) -> Option<Value> {
        lock(&self.presence).get(agent).cloned()
    }

    /// What `principal` may see of `group`.
    pub fn access(&self, group: &str, principal: &str) -> Access {
        let groups = lock(&self.groups);
        match groups.get(group) {
            // The binding's rule over the cached view: an active Membership from its
            // visibility start, full inspection rights from the beginning (§14).
            Some(g) => match wasm_core::binding::access::readable(
                g.members
                    .get(principal)
                    .map(|m| (m.active, m.visibility_after)),
                g.inspectors.contains(principal),
            ) {
                Some(visibility_after) => Access::Visible {
                    visibility_after,
                    archive: g.archive.clone(),
                },
                None => Access::Hidden,
            },
            None => Access::Hidden,
        }
    }

    /// The Groups `principal` may read (an active Membership, or the owner of the Group's
    /// Mission or of a Mission above it), sorted.
    pub fn groups_of(&self, principal: &str) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.groups)
            .iter()
            .filter(|(_, g)| g.may_read(principal))
            .map(|(id, _)| id.clone())
            .collect();
        v.sort();
        v
    }

    /// Whether `principal` holds any Membership record in `group`.
    /// The own Events of a Command that connection `origin` sent and another node (the
    /// writer) appended: each goes to the connection at once where it holds a Membership
    /// (after this node's fan-out has reached the Event otherwise), unless the connection's
    /// subscription to its Group brings it (a duplicate's old Events are
    /// sent in any case, as the writer's own gateway sends them, D-12).
    pub fn deliver_own(&self, origin: u64, events: &[OwnEvent], duplicate: bool) {
        let mut later = Vec::new();
        {
            // Connections before Groups, as `publish` takes them.
            let conns = lock(&self.conns);
            let groups = lock(&self.groups);
            let Some(c) = conns.get(&origin) else { return };
            let mut any = false;
            for e in events {
                let head = groups.get(&e.group).map_or(0, |g| g.head);
                let member = groups
                    .get(&e.group)
                    .is_some_and(|g| g.members.contains_key(&c.principal.id));
                // Not yet published here and not yet known as a member (a new Group, a new
                // Membership): wait for this node's fan-out to reach it. Otherwise now: a
                // subscribed Group's fan-out brings it anyway, and an unsubscribed one has no
                // order to keep.
                if head < e.sequence && !member {
                    later.push(e.clone());
                    continue;
                }
                any |= self.own_frame(&groups, c, e, duplicate);
            }
            if any {
                c.wake.notify_one();
            }
        }
        if !later.is_empty() {
            let mut pending = lock(&self.pending_own);
            for e in later {
                if pending.len() >= MAX_PENDING_OWN {
                    pending.pop_front();
                    metrics::counter!("mwp_frames_dropped_total", "reason" => "own_overflow")
                        .increment(1);
                }
                pending.push_back((origin, e));
            }
        }
    }

    /// Queues `e` to `c` as its own Event if it holds a Membership in the Group and its
    /// subscription (if any) does not bring it; true if queued.
    fn own_frame(
        &self,
        groups: &HashMap<String, GroupEntry>,
        c: &Arc<Conn>,
        e: &OwnEvent,
        duplicate: bool,
    ) -> bool {
        let member = groups
            .get(&e.group)
            .is_some_and(|g| g.members.contains_key(&c.principal.id));
        if !member || self.is_stale(c) || (!duplicate && c.subscription(&e.group).is_some()) {
            return false;
        }
        c.push_own(event_frame(&e.jcs).into());
        true
    }

    /// Delivers the pending own Events this node's fan-out has now reached.
    fn release_pending_own(&self) {
        let mut pending = lock(&self.pending_own);
        if pending.is_empty() {
            return;
        }
        let conns = lock(&self.conns);
        let groups = lock(&self.groups);
        let mut wake: HashMap<u64, Arc<Conn>> = HashMap::new();
        pending.retain(|(origin, e)| {
            if groups.get(&e.group).map_or(0, |g| g.head) < e.sequence {
                return true;
            }
            if let Some(c) = conns.get(origin)
                && self.own_frame(&groups, c, e, false)
            {
                wake.entry(*origin).or_insert_with(|| Arc::clone(c));
            }
            false
        });
        drop((groups, conns, pending));
        for c in wake.values() {
            c.wake.notify_one();
        }
    }

    pub fn has_membership(&self, group: &str, principal: &str) -> bool {
        lock(&self.groups)
            .get(group)
            .is_some_and(|g| g.members.contains_key(principal))
    }

    /// Whether `principal` holds an active Membership in `group` (an ended one counts as
    /// none: its holder learns nothing more of the Group, §17.2).
    pub fn is_active_member(&self, group: &str, principal: &str) -> bool {
        lock(&self.groups)
            .get(group)
            .and_then(|g| g.members.get(principal))
            .is_some_and(|m| m.active)
    }

    pub fn head(&self, group: &str) -> u64 {
        lock(&self.groups).get(group).map_or(0, |g| g.head)
    }

    /// Registers `conn` as a subscriber of `group` (its subscription begins replaying).
    pub(super) fn subscribe(&self, group: &str, conn: &Arc<Conn>) {
        lock(&self.groups)
            .entry(group.to_owned())
            .or_default()
            .subscribers
            .insert(conn.id, Arc::clone(conn));
    }

    /// Ends a replay: goes live if it reached the durable head (atomically with publishing),
    /// else returns the head to read up to.
    pub(super) fn try_go_live(
        &self,
        group: &str,
        conn: &Conn,
        generation: u64,
        next: u64,
    ) -> Result<(), u64> {
        let groups = lock(&self.groups);
        let head = groups.get(group).map_or(0, |g| g.head);
        if next <= head {
            return Err(head);
        }
        let mut inner = lock(&conn.inner);
        if let Some(sub) = inner
            .subs
            .get_mut(group)
            .filter(|s| s.generation == generation && s.state == SubState::Replaying)
        {
            sub.state = SubState::Live;
        }
        Ok(())
    }

    /// Refreshes the authorization view of `group` from the authority's state.
    fn refresh_group(entries: &mut HashMap<String, GroupEntry>, state: &State, group: &str) {
        let Some(gs) = state.group(group) else {
            return;
        };
        let e = entries.entry(group.to_owned()).or_default();
        e.members = gs
            .memberships
            .iter()
            .map(|(p, m)| {
                (
                    p.clone(),
                    MemberView {
                        active: m.is_active(),
                        visibility_after: m.visibility_after_sequence,
                    },
                )
            })
            .collect();
        e.inspectors = wasm_core::binding::access::inspectors(state, group)
            .into_iter()
            .collect();
        match &gs.group.archive_snapshot_id {
            None => e.archive = None,
            Some(id) if e.archive.as_ref().is_none_or(|a| &a.snapshot_id != id) => {
                // An archived Group is frozen: its last two Events are the archive's
                // (`group.snapshot.created`, `group.archived`).
                let reference = gs.last_sequence.saturating_sub(1);
                e.archive = Some(ArchiveView {
                    snapshot_id: id.clone(),
                    through_sequence: reference.saturating_sub(1),
                    reference_sequence: reference,
                    state_hash: None,
                });
            }
            Some(_) => {}
        }
    }
}

/// One Event of a batch, ready to fan out.
struct Live {
    group: String,
    seq: u64,
    frame: FrameText,
    meta: EventMeta,
    origin: Origin,
}

impl Publish for Hub {
    fn start(&self, state: &State, _store: &dyn Store) {
        let mut groups = lock(&self.groups);
        for (id, gs) in &state.groups {
            Hub::refresh_group(&mut groups, state, id);
            if let Some(e) = groups.get_mut(id) {
                e.head = gs.last_sequence;
            }
        }
        drop(groups);
        self.index_artifacts(state);
        let mut sessions = lock(&self.sessions);
        for (agent, epoch) in &state.session_epochs {
            sessions.insert(agent.clone(), *epoch);
        }
    }

    fn publish(&self, state: &State, store: &dyn Store, batch: &[(&Outcome, Origin)]) {
        let mut live: Vec<Live> = Vec::new();
        let mut touched: HashSet<String> = HashSet::new();
        let mut missions_changed = false;
        // Content hashes newly named, with the Group whose log names them.
        let mut published: Vec<(String, String)> = Vec::new();
        let mut duplicates: Vec<(u64, Vec<(String, u64)>)> = Vec::new();
        let mut sessions: Vec<(String, u64)> = Vec::new();
        let mut archives: Vec<(String, u64, Option<String>)> = Vec::new();
        for (outcome, origin) in batch {
            match outcome {
                Ok(Submitted::Appended(events)) => {
                    for e in events {
                        let kind = e.value.pointer("/kind").and_then(Value::as_str);
                        match &e.at.group_id {
                            Some(g) => {
                                if kind.is_some_and(|k| k.starts_with("mission.")) {
                                    missions_changed = true;
                                }
                                if let Some(hash) = e
                                    .value
                                    .pointer("/payload/artifact/contentHash")
                                    .and_then(Value::as_str)
                                {
                                    published.push((hash.to_owned(), g.clone()));
                                }
                                if kind == Some(SNAPSHOT_CREATED) {
                                    let hash = e
                                        .value
                                        .pointer("/payload/stateHash")
                                        .and_then(Value::as_str)
                                        .map(str::to_owned);
                                    archives.push((g.clone(), e.at.sequence, hash));
                                }
                                touched.insert(g.clone());
                                live.push(Live {
                                    group: g.clone(),
                                    seq: e.at.sequence,
                                    frame: event_frame(&e.jcs).into(),
                                    meta: EventMeta::of(&e.value),
                                    origin: *origin,
                                });
                            }
                            None if kind == Some(SESSION_OPENED) => {
                                let agent =
                                    e.value.pointer("/payload/agentId").and_then(Value::as_str);
                                let epoch = e.value.pointer("/payload/sessionEpoch").and_then(
                                    |v| match v {
                                        Value::Number(n) => n.as_safe_u64(),
                                        _ => None,
                                    },
                                );
                                if let (Some(a), Some(ep)) = (agent, epoch) {
                                    sessions.push((a.to_owned(), ep));
                                }
                            }
                            None => {}
                        }
                    }
                }
                Ok(Submitted::Duplicate(receipt)) => {
                    if let Some(o) = origin {
                        let refs = receipt
                            .events
                            .iter()
                            .filter_map(|r| r.group_id.clone().map(|g| (g, r.sequence)))
                            .collect();
                        duplicates.push((*o, refs));
                    }
                }
                Err(_) => {}
            }
        }
        if !published.is_empty() {
            // One insert per newly named hash: the index is never rebuilt on this thread.
            let mut index = lock(&self.artifact_groups);
            for (hash, group) in published {
                index.entry(hash).or_default().insert(group);
            }
        }
        // Session Epochs first: a fenced connection gets nothing of this batch (§6.3).
        for (agent, epoch) in &sessions {
            self.fence_older(agent, *epoch);
        }
        let mut groups = lock(&self.groups);
        let mut refresh: HashSet<String> = touched.clone();
        if missions_changed {
            // Coordinator replacement and cancellation change child Groups' Memberships
            // without an Event there (payloads.md §12.6): refresh the children too.
            let parents: HashSet<&str> = touched
                .iter()
                .filter_map(|g| state.group(g).map(|gs| gs.group.mission_id.as_str()))
                .collect();
            for m in state.missions.values() {
                if m.parent_mission_id
                    .as_deref()
                    .is_some_and(|p| parents.contains(p))
                {
                    refresh.insert(m.group_id.clone());
                }
            }
        }
        for g in &refresh {
            Hub::refresh_group(&mut groups, state, g);
        }
        for (g, seq, hash) in archives {
            if let Some(a) = groups.get_mut(&g).and_then(|e| e.archive.as_mut()) {
                a.reference_sequence = seq;
                a.through_sequence = seq.saturating_sub(1);
                a.state_hash = hash;
            }
        }
        // Fan out in sequence order per Group (a batch's Events are in append order). Each
        // writer with new frames is woken once, after the whole batch is queued: one wake-up
        // per connection and batch instead of one per frame.
        let mut wake: HashMap<u64, Arc<Conn>> = HashMap::new();
        let mut own: Vec<(u64, String, FrameText)> = Vec::new();
        for ev in &live {
            let entry = groups.entry(ev.group.clone()).or_default();
            entry.head = entry.head.max(ev.seq);
            let mut gone = Vec::new();
            let mut origin_served = false;
            for (id, conn) in &entry.subscribers {
                if self.is_stale(conn) {
                    gone.push(*id);
                    continue;
                }
                // Membership is re-checked at fan-out: an ended one stops delivery (unless
                // the principal inspects the Group as an owner up the tree).
                if !entry.may_read(&conn.principal.id) {
                    conn.drop_subscription(&ev.group);
                    gone.push(*id);
                    continue;
                }
                let is_origin = ev.origin == Some(*id);
                match conn.offer(&ev.group, ev.seq, &ev.frame, &ev.meta, is_origin) {
                    Offer::Queued => {
                        origin_served |= is_origin;
                        wake.entry(*id).or_insert_with(|| Arc::clone(conn));
                    }
                    Offer::Seen => origin_served |= is_origin,
                    Offer::Filtered => {}
                    // A paused subscriber costs nothing more per Event: it leaves the Group's
                    // fan-out until it subscribes again (under this same lock, so that a
                    // SUBSCRIBE racing with this batch registers after the removal).
                    Offer::Stopped => gone.push(*id),
                }
            }
            for id in gone {
                entry.subscribers.remove(&id);
            }
            if let Some(o) = ev.origin
                && !origin_served
            {
                own.push((o, ev.group.clone(), ev.frame.clone()));
            }
            self.stats.published.fetch_add(1, Ordering::Relaxed);
        }
        drop(groups);
        // The sender's outcome: its own Events in Groups where it holds a Membership
        // (binding.md, "The sender's outcome").
        let conns = lock(&self.conns);
        for (o, group, frame) in own {
            if let Some(c) = conns.get(&o)
                && !self.is_stale(c)
                && self.has_membership(&group, &c.principal.id)
            {
                c.push_own(frame);
                wake.entry(o).or_insert_with(|| Arc::clone(c));
            }
        }
        // An exact retry: the original Events, to the sender only (D-12).
        for (o, refs) in duplicates {
            let Some(c) = conns.get(&o) else { continue };
            for (g, seq) in refs {
                if !self.has_membership(&g, &c.principal.id) {
                    continue;
                }
                if let Ok(mut page) = store.group_events(&g, seq.saturating_sub(1), 1)
                    && let Some(bytes) = page.pop()
                {
                    c.push_own(event_frame(&bytes).into());
                    wake.entry(o).or_insert_with(|| Arc::clone(c));
                }
            }
        }
        drop(conns);
        for c in wake.values() {
            c.wake.notify_one();
        }
        self.release_pending_own();
    }
}

#[cfg(test)]
mod gauge_tests {
    use super::{Conn, Hub, Principal};
    use std::sync::Arc;
    use wasm_core::model::common::ActorType;

    fn conn(id: u64, kind: ActorType) -> Arc<Conn> {
        let principal = Principal {
            id: format!("urn:test:{id}"),
            kind,
            session_epoch: None,
        };
        Arc::new(Conn::new(
            id,
            principal,
            &crate::gateway::GatewayConfig::default(),
        ))
    }

    #[test]
    fn sessions_are_counted_by_profile_and_a_service_is_not_an_agent() {
        let hub = Hub::new();
        for (id, kind) in [
            (1, ActorType::Human),
            (2, ActorType::Agent),
            (3, ActorType::Agent),
            (4, ActorType::Service),
        ] {
            hub.register(conn(id, kind));
        }
        let g = hub.gauges();
        assert_eq!((g.humans, g.agents, g.services), (1, 2, 1));
        assert_eq!(g.subscriptions, 0);
    }
}
