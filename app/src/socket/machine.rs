//! The console's socket client as a sans-IO state machine: frames and timer ticks in, frames and
//! notifications out. It owns the binding's client side (PROTOCOL.md §16–§17, payloads.md §10,
//! binding.md "Humans"): the `HELLO` handshake (the challenge is signed as received, never
//! rebuilt), `SUBSCRIBE` from the last contiguous sequence per Group, `PING` liveness, and
//! reconnection with a capped exponential backoff. Every Event is verified (the
//! [`EventCheck`]) before it is delivered; Events are delivered per Group strictly in sequence
//! order, deduplicated by Event ID, and a gap is reported and re-requested, never skipped (§16).
//!
//!
//! It also carries the human's own Commands (binding.md "COMMAND, and the sender's outcome"):
//! a Command is kept, byte for byte, until its outcome, sent at once when live and sent again
//! unchanged after every reconnect (H-3: same Action ID, same bytes, so the authority answers a
//! retry with the original Events, §15.1). Its outcome is matched by Action ID: an `ERROR` naming
//! it in `relatedActionId` is its refusal; a verified Event whose `cause.id` is it is its
//! acceptance (the sender always receives the Events of its own Command).
//!
//! Nothing here touches a socket, a clock or a key: the driver ([`super::Driver`], over a
//! [`super::Transport`]) performs the [`Output`]s and feeds back [`Input`]s, so the logic is
//! tested natively.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use wasm_core::authority::table::Table;
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::frame::{self, Frame};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::{ErrorCode, ProtocolError};

/// The first reconnect delay (ms); it doubles per failed attempt.
pub const BACKOFF_BASE_MS: u64 = 500;
/// The longest pause between two attempts (ms).
pub const BACKOFF_MAX_MS: u64 = 30_000;
/// A `PING` is sent after this long without one (ms, §17.3 liveness).
pub const PING_INTERVAL_MS: u64 = 20_000;
/// No reply to a `PING` within this long: the connection is considered dead (ms).
pub const PONG_TIMEOUT_MS: u64 = 10_000;
/// A replay is considered complete when a subscribed Group has been quiet this long (ms): the
/// binding sends no end-of-replay marker (payloads.md §10.3).
pub const RESUME_QUIET_MS: u64 = 750;
/// The most Events one `SUBSCRIBE` replays (payloads.md §10.3); a full page asks for the next.
pub const REPLAY_PAGE: u32 = 1000;

/// The reconnect delay before attempt `attempt` (1 = the first retry), with `jitter_permille`
/// (0..=1000) spreading clients over the upper half of the window so that a restarted server is
/// not hit by every console at once.
pub fn backoff_delay(attempt: u32, jitter_permille: u16) -> u64 {
    let exp = attempt.saturating_sub(1).min(16);
    let full = BACKOFF_BASE_MS
        .saturating_mul(1u64 << exp)
        .min(BACKOFF_MAX_MS);
    let jitter = u64::from(jitter_permille.min(1000));
    full / 2 + full / 2 * jitter / 1000
}

/// Who the session is for: a human Principal and the Registry key the browser holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub principal_id: String,
    pub key_id: String,
}

/// What the header shows (issue 13: connected, resuming, behind by N, offline).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// No identity: not connecting.
    Idle,
    /// Opening the socket or running `HELLO`.
    Connecting,
    /// Subscribed; replay from the last contiguous positions is still arriving.
    Resuming,
    /// `n` Events are known to be missing below held ones.
    Behind(u64),
    /// Live and contiguous in every subscribed Group.
    Connected,
    /// Disconnected; the next attempt is at `retry_at_ms`.
    Offline { retry_at_ms: u64 },
}

/// A verified Event, delivered in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivered {
    pub event_id: String,
    pub group_id: Option<String>,
    pub sequence: Option<u64>,
    pub kind: String,
    pub occurred_at: String,
    /// `sha256:` of the Event's signing bytes (shown as its verified mark).
    pub signing_hash: String,
    pub value: Value,
}

/// Why an Event was not applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    pub event_id: Option<String>,
    pub group_id: Option<String>,
    pub sequence: Option<u64>,
    /// The `signature.keyId` the Event claims (named in the alarm; not trusted).
    pub signer: Option<String>,
    pub code: ErrorCode,
    pub reason: String,
}

/// Verifies an Event before anything uses it: six-stage verification against the Registry
/// (§6.4; `DocumentKind::Event`). Returns the signing hash.
pub trait EventCheck {
    fn check(&self, event: &Value) -> Result<String, (ErrorCode, String)>;
}

/// What the driver must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Open the WebSocket (the driver knows the URL).
    Open,
    /// Send one text frame.
    Send(String),
    /// Close the socket and forget it: the machine has already moved on (a reconnect is
    /// scheduled, or it stopped), so no [`Input::Closed`] is expected for it.
    Close,
    /// Sign exactly these bytes with the identity's key and feed [`Input::ChallengeSigned`].
    SignChallenge(Vec<u8>),
    /// A verified Event, in Group order.
    Deliver(Delivered),
    /// An Event that failed verification: not applied, shown, alarm raised.
    Rejected(Rejected),
    /// Events `from..=to` of `group_id` are missing (held Events wait behind them).
    Gap {
        group_id: String,
        from: u64,
        to: u64,
    },
    /// A gap was filled.
    GapClosed { group_id: String },
    /// An `ERROR` frame from the server on a live connection (§19; every ERROR ends it).
    ServerError(ProtocolError),
    /// An `ERROR` frame before `HELLO_SERVER_ACCEPT`: the server refused the handshake (§10.1).
    HandshakeRefused(ProtocolError),
    /// The server sent a frame that is not strict JSON or not a valid frame (§17.4); the
    /// connection is closed.
    BadFrame { code: ErrorCode, message: String },
    /// The header status changed.
    Status(Status),
    /// A verified Event caused by one of our Commands (its acceptance, §15.1).
    CommandEvent { action_id: String, event: Delivered },
    /// The authority refused one of our Commands (the `ERROR` naming its Action ID).
    CommandRefused {
        action_id: String,
        error: ProtocolError,
    },
}

/// What happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// Connect as this identity (sign-in, or unlock).
    Start(Identity),
    /// Stop and stay disconnected (sign-out, lock).
    Stop,
    /// Follow a Group from its last contiguous position (0 for a new one).
    Watch(String),
    /// The socket is open; `nonce` is 16 fresh random bytes for `clientNonce`.
    Opened { nonce: [u8; 16] },
    /// A text frame arrived.
    Text(String),
    /// A text frame that arrived at `at_ms` and is fed only now (the socket's backlog held it
    /// for the Worker pool, `socket::backlog`): the resume's quiet period counts from its
    /// arrival, anything sent in answer (the next replay page) from now.
    Arrived { text: String, at_ms: u64 },
    /// The current socket closed or failed (not one the driver closed on request).
    Closed,
    /// The driver signed the challenge bytes.
    ChallengeSigned([u8; 64]),
    /// Time passed (the driver calls this at [`Machine::next_deadline`]).
    Tick,
    /// Send this signed Command (its exact text) and report its outcome; kept and re-sent
    /// unchanged after a reconnect until then.
    Command { action_id: String, text: String },
    /// Stop tracking a Command whose outcome came another way (the HTTP fallback).
    Forget(String),
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Idle,
    Waiting { until_ms: u64 },
    Opening,
    HelloSent { nonce: String },
    Signing { nonce: String, server_nonce: String },
    ResponseSent,
    Live,
}

#[derive(Clone, Debug, Default)]
struct Track {
    /// The last sequence applied with no gap below it.
    contiguous: u64,
    /// Verified Events above a gap, by sequence.
    held: BTreeMap<u64, Delivered>,
    /// Sequences whose Event failed verification (never applied).
    rejected: BTreeSet<u64>,
    /// Events received since the last SUBSCRIBE for this Group (replay paging).
    since_subscribe: u32,
    /// When the last Event of this Group arrived (resume detection).
    last_event_ms: Option<u64>,
    /// Still replaying after a SUBSCRIBE.
    resuming: bool,
    /// The gap start already re-requested (one SUBSCRIBE per gap).
    requested_from: Option<u64>,
}

impl Track {
    fn missing(&self) -> u64 {
        match self.held.keys().next_back() {
            Some(&top) => {
                let span = top.saturating_sub(self.contiguous);
                span.saturating_sub(self.held.len() as u64)
            }
            None => 0,
        }
    }
}

/// The client state machine. See the module documentation.
pub struct Machine {
    identity: Option<Identity>,
    phase: Phase,
    attempt: u32,
    now_ms: u64,
    frame_counter: u64,
    groups: Table<Track>,
    seen: HashSet<String>,
    last_ping_ms: u64,
    awaiting_pong: Option<(String, u64)>,
    status: Status,
    /// xorshift state for the backoff jitter (seeded by the driver).
    jitter: u64,
    /// Our Commands awaiting their outcome, in submission order: (Action ID, exact text).
    commands: Vec<(String, String)>,
    /// Commands already accepted (a later Event of the same Command is still reported).
    settled: HashSet<String>,
}

impl Default for Machine {
    fn default() -> Self {
        Machine::new(0x9e37_79b9_7f4a_7c15)
    }
}

impl Machine {
    /// A machine whose backoff jitter comes from `seed` (random in the browser, fixed in tests).
    pub fn new(seed: u64) -> Machine {
        Machine {
            identity: None,
            phase: Phase::Idle,
            attempt: 0,
            now_ms: 0,
            frame_counter: 0,
            groups: Table::new(),
            seen: HashSet::new(),
            last_ping_ms: 0,
            awaiting_pong: None,
            status: Status::Idle,
            jitter: seed | 1,
            commands: Vec::new(),
            settled: HashSet::new(),
        }
    }

    fn next_jitter(&mut self) -> u16 {
        let mut x = self.jitter;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.jitter = x;
        (x % 1001) as u16
    }

    /// Drops the connection and schedules the next attempt (capped exponential backoff).
    fn reconnect_later(&mut self, close: bool, out: &mut Vec<Output>) {
        if close {
            out.push(Output::Close);
        }
        self.awaiting_pong = None;
        self.groups.for_each_mut(|t| {
            t.resuming = false;
            t.requested_from = None;
        });
        if self.identity.is_some() {
            self.attempt = self.attempt.saturating_add(1);
            let j = self.next_jitter();
            let until_ms = self.now_ms + backoff_delay(self.attempt, j);
            self.phase = Phase::Waiting { until_ms };
        } else {
            self.phase = Phase::Idle;
        }
    }

    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The last contiguous sequence of `group_id` (the resume position).
    pub fn position(&self, group_id: &str) -> Option<u64> {
        self.groups.get(group_id).map(|t| t.contiguous)
    }

    /// Sequences of `group_id` that failed verification.
    pub fn rejected(&self, group_id: &str) -> Vec<u64> {
        self.groups
            .get(group_id)
            .map(|t| t.rejected.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The Action IDs of our Commands still awaiting an outcome.
    pub fn pending_commands(&self) -> Vec<String> {
        self.commands.iter().map(|(a, _)| a.clone()).collect()
    }

    /// Whether the session is live (a Command is sent at once, not held for a reconnect).
    pub fn is_live(&self) -> bool {
        self.phase == Phase::Live
    }

    /// Whether a subscribed Group is still replaying after its `SUBSCRIBE` (the socket's
    /// backlog: `socket::backlog` may hold its frames for the Worker pool).
    pub fn is_resuming(&self) -> bool {
        self.phase == Phase::Live && self.groups.values().any(|t| t.resuming)
    }

    /// When the driver must call [`Input::Tick`] next.
    pub fn next_deadline(&self) -> Option<u64> {
        let mut d: Option<u64> = None;
        let mut at = |t: u64| d = Some(d.map_or(t, |x| x.min(t)));
        match &self.phase {
            Phase::Waiting { until_ms } => at(*until_ms),
            Phase::Live => {
                match &self.awaiting_pong {
                    Some((_, sent)) => at(sent + PONG_TIMEOUT_MS),
                    None => at(self.last_ping_ms + PING_INTERVAL_MS),
                }
                for t in self.groups.values().filter(|t| t.resuming) {
                    at(t.last_event_ms.unwrap_or(self.now_ms) + RESUME_QUIET_MS);
                }
            }
            _ => {}
        }
        d
    }

    /// Handles one input at `now_ms` and returns what to do, in order.
    pub fn handle(&mut self, now_ms: u64, input: Input, check: &dyn EventCheck) -> Vec<Output> {
        self.now_ms = self.now_ms.max(now_ms);
        let mut out = Vec::new();
        match input {
            Input::Start(identity) => {
                let same = self.identity.as_ref() == Some(&identity);
                self.identity = Some(identity);
                if !same || self.phase == Phase::Idle {
                    if !matches!(self.phase, Phase::Idle | Phase::Waiting { .. }) {
                        out.push(Output::Close);
                    }
                    self.attempt = 0;
                    self.phase = Phase::Opening;
                    out.push(Output::Open);
                }
            }
            Input::Stop => {
                self.identity = None;
                // Signed by the identity that left: never sent on another one's session.
                self.commands.clear();
                if !matches!(self.phase, Phase::Idle | Phase::Waiting { .. }) {
                    out.push(Output::Close);
                }
                self.phase = Phase::Idle;
            }
            Input::Watch(group_id) => {
                if !self.groups.contains_key(&group_id) {
                    self.groups.insert(group_id.clone(), Track::default());
                    if self.phase == Phase::Live {
                        self.subscribe(&[group_id], &mut out);
                    }
                }
            }
            Input::Opened { nonce } => {
                if self.phase == Phase::Opening
                    && let Some(id) = self.identity.clone()
                {
                    let nonce = b64url_encode(&nonce);
                    let init = self.client_init(&id, &nonce);
                    out.push(Output::Send(init));
                    self.phase = Phase::HelloSent { nonce };
                }
            }
            Input::Text(text) => self.on_text(&text, None, check, &mut out),
            Input::Arrived { text, at_ms } => self.on_text(&text, Some(at_ms), check, &mut out),
            Input::ChallengeSigned(sig) => {
                if let (
                    Phase::Signing {
                        nonce,
                        server_nonce,
                    },
                    Some(id),
                ) = (self.phase.clone(), self.identity.clone())
                {
                    let frame = self.client_response(&id, &nonce, &server_nonce, &sig);
                    out.push(Output::Send(frame));
                    self.phase = Phase::ResponseSent;
                }
            }
            Input::Closed => {
                if !matches!(self.phase, Phase::Idle | Phase::Waiting { .. }) {
                    self.reconnect_later(false, &mut out);
                }
            }
            Input::Tick => self.on_tick(&mut out),
            Input::Command { action_id, text } => {
                if !self.commands.iter().any(|(a, _)| *a == action_id)
                    && !self.settled.contains(&action_id)
                {
                    if self.phase == Phase::Live {
                        let frame = self.command_frame(&text);
                        out.push(Output::Send(frame));
                    }
                    self.commands.push((action_id, text));
                }
            }
            Input::Forget(action_id) => {
                self.commands.retain(|(a, _)| *a != action_id);
                self.settled.insert(action_id);
            }
        }
        self.refresh_status(&mut out);
        out
    }

    fn next_frame_id(&mut self) -> String {
        self.frame_counter += 1;
        format!(
            "urn:missionweaveprotocol:frame:console:{}",
            self.frame_counter
        )
    }

    fn base(&mut self, frame_type: &str) -> Object {
        let mut o = Object::new();
        o.insert("protocolVersion", Value::string("0.1"));
        o.insert("frameId", Value::string(self.next_frame_id()));
        o.insert("frameType", Value::string(frame_type.to_owned()));
        o
    }

    /// A `COMMAND` frame around the Command's exact text (never re-serialized: the signed
    /// bytes travel as they were signed).
    fn command_frame(&mut self, text: &str) -> String {
        let frame_id = self.next_frame_id();
        format!(
            "{{\"protocolVersion\":\"0.1\",\"frameId\":\"{frame_id}\",\"frameType\":\"COMMAND\",\"command\":{text}}}"
        )
    }

    fn client_init(&mut self, id: &Identity, nonce: &str) -> String {
        let mut o = self.base("HELLO");
        o.insert("phase", Value::string("client_init"));
        o.insert("agentId", Value::string(id.principal_id.clone()));
        o.insert("keyId", Value::string(id.key_id.clone()));
        o.insert("clientNonce", Value::string(nonce.to_owned()));
        o.insert(
            "supportedVersions",
            Value::Array(vec![Value::string("0.1")]),
        );
        json::to_string(&Value::Object(o))
    }

    fn client_response(
        &mut self,
        id: &Identity,
        nonce: &str,
        server_nonce: &str,
        sig: &[u8; 64],
    ) -> String {
        let mut o = self.base("HELLO");
        o.insert("phase", Value::string("client_response"));
        o.insert("agentId", Value::string(id.principal_id.clone()));
        o.insert("keyId", Value::string(id.key_id.clone()));
        o.insert("clientNonce", Value::string(nonce.to_owned()));
        o.insert("serverNonce", Value::string(server_nonce.to_owned()));
        o.insert("challengeSignature", Value::string(b64url_encode(sig)));
        json::to_string(&Value::Object(o))
    }

    fn timestamp(&self) -> String {
        let micros = i64::try_from(self.now_ms)
            .unwrap_or(i64::MAX / 1000)
            .saturating_mul(1000);
        wasm_core::authority::Micros(micros).format_whole_seconds()
    }

    /// `SUBSCRIBE` for `groups` from their last contiguous positions (R-3, §16).
    fn subscribe(&mut self, groups: &[String], out: &mut Vec<Output>) {
        if groups.is_empty() {
            return;
        }
        let mut list = Vec::new();
        for g in groups {
            let Some(t) = self.groups.get_mut(g) else {
                continue;
            };
            t.since_subscribe = 0;
            t.resuming = true;
            t.last_event_ms = Some(self.now_ms);
            let mut item = Object::new();
            item.insert("groupId", Value::string(g.clone()));
            item.insert("afterSequence", Value::from(t.contiguous));
            list.push(Value::Object(item));
        }
        let mut o = self.base("SUBSCRIBE");
        let sub = format!(
            "urn:missionweaveprotocol:subscription:console:{}",
            self.frame_counter
        );
        o.insert("subscriptionId", Value::string(sub));
        o.insert("groups", Value::Array(list));
        out.push(Output::Send(json::to_string(&Value::Object(o))));
    }

    fn ping(&mut self, reply_to: Option<&str>, out: &mut Vec<Output>) -> String {
        let nonce = b64url_encode(&self.frame_counter.to_be_bytes());
        let mut o = self.base("PING");
        o.insert("nonce", Value::string(nonce.clone()));
        if let Some(r) = reply_to {
            o.insert("replyToNonce", Value::string(r.to_owned()));
        }
        o.insert("sentAt", Value::string(self.timestamp()));
        out.push(Output::Send(json::to_string(&Value::Object(o))));
        nonce
    }

    fn on_tick(&mut self, out: &mut Vec<Output>) {
        match self.phase.clone() {
            Phase::Waiting { until_ms } if self.now_ms >= until_ms => {
                self.phase = Phase::Opening;
                out.push(Output::Open);
            }
            Phase::Live => {
                if let Some((_, sent)) = &self.awaiting_pong {
                    if self.now_ms >= sent + PONG_TIMEOUT_MS {
                        // No answer to our PING: the connection is dead.
                        self.reconnect_later(true, out);
                        return;
                    }
                } else if self.now_ms >= self.last_ping_ms + PING_INTERVAL_MS {
                    let nonce = self.ping(None, out);
                    self.awaiting_pong = Some((nonce, self.now_ms));
                    self.last_ping_ms = self.now_ms;
                }
                let now = self.now_ms;
                self.groups.for_each_mut(|t| {
                    if t.resuming && t.last_event_ms.is_none_or(|l| now >= l + RESUME_QUIET_MS) {
                        t.resuming = false;
                    }
                });
            }
            _ => {}
        }
    }

    /// `arrived_ms`: when a held frame arrived (`None`: now).
    fn on_text(
        &mut self,
        text: &str,
        arrived_ms: Option<u64>,
        check: &dyn EventCheck,
        out: &mut Vec<Output>,
    ) {
        let frame = match frame::decode(text.as_bytes()) {
            Ok(f) => f,
            Err(e) => {
                // A server that breaks framing cannot be trusted with the rest of the stream.
                out.push(Output::BadFrame {
                    code: e.code,
                    message: e.message,
                });
                self.reconnect_later(true, out);
                return;
            }
        };
        match (self.phase.clone(), frame) {
            (Phase::HelloSent { nonce }, Frame::HelloServerChallenge(c)) => {
                if c.client_nonce.as_str() != nonce {
                    self.reconnect_later(true, out);
                    return;
                }
                match b64url_decode(c.challenge.as_str()) {
                    Ok(bytes) => {
                        self.phase = Phase::Signing {
                            nonce,
                            server_nonce: c.server_nonce.as_str().to_owned(),
                        };
                        // Signed exactly as received; the client never rebuilds it (§10.1).
                        out.push(Output::SignChallenge(bytes));
                    }
                    Err(_) => self.reconnect_later(true, out),
                }
            }
            (Phase::ResponseSent, Frame::HelloServerAccept(_)) => {
                self.phase = Phase::Live;
                self.attempt = 0;
                self.last_ping_ms = self.now_ms;
                self.awaiting_pong = None;
                let groups: Vec<String> = self.groups.keys().cloned().collect();
                self.subscribe(&groups, out);
                // Commands still without an outcome go again, byte for byte (H-3, §15.1).
                let texts: Vec<String> = self.commands.iter().map(|(_, t)| t.clone()).collect();
                for t in texts {
                    let frame = self.command_frame(&t);
                    out.push(Output::Send(frame));
                }
            }
            (Phase::Live, Frame::Event(ev)) => {
                self.on_event(&ev.event.value, arrived_ms, check, out);
            }
            (Phase::Live, Frame::Ping(p)) => match p.reply_to_nonce {
                Some(r) => {
                    if self
                        .awaiting_pong
                        .as_ref()
                        .is_some_and(|(n, _)| n == r.as_str())
                    {
                        self.awaiting_pong = None;
                    }
                }
                None => {
                    self.ping(Some(p.nonce.as_str()), out);
                }
            },
            (_, Frame::Error(e)) => {
                let ours = e
                    .error
                    .related_action_id
                    .as_ref()
                    .map(|a| a.as_str().to_owned())
                    .filter(|a| self.commands.iter().any(|(x, _)| x == a));
                match ours {
                    Some(action_id) => {
                        self.commands.retain(|(x, _)| *x != action_id);
                        out.push(Output::CommandRefused {
                            action_id,
                            error: e.error,
                        });
                    }
                    None if self.phase == Phase::Live => out.push(Output::ServerError(e.error)),
                    None => out.push(Output::HandshakeRefused(e.error)),
                }
            }
            // Anything else out of turn breaks the binding: start again.
            _ => self.reconnect_later(true, out),
        }
    }

    fn on_event(
        &mut self,
        value: &Value,
        arrived_ms: Option<u64>,
        check: &dyn EventCheck,
        out: &mut Vec<Output>,
    ) {
        let s = |p: &str| value.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let event_id = s("/eventId");
        let group_id = s("/groupId");
        let sequence = value.pointer("/sequence").and_then(|v| match v {
            Value::Number(n) => n.as_safe_u64(),
            _ => None,
        });
        if let Some(g) = &group_id
            && let Some(t) = self.groups.get_mut(g)
        {
            t.since_subscribe = t.since_subscribe.saturating_add(1);
            // Quiet since the later of this Event's arrival and the last SUBSCRIBE sent.
            let at = arrived_ms.unwrap_or(self.now_ms);
            t.last_event_ms = Some(t.last_event_ms.map_or(at, |l| l.max(at)));
        }
        let duplicate = event_id.as_ref().is_some_and(|id| self.seen.contains(id));
        self.match_command(value, duplicate, check, out);
        if duplicate {
            self.page_check(group_id.as_deref(), out);
            return; // a duplicate: replay overlap or a retry's fan-out (§10.4)
        }
        let signing_hash = match check.check(value) {
            Ok(h) => h,
            Err((code, reason)) => {
                if let (Some(g), Some(seq)) = (&group_id, sequence)
                    && let Some(t) = self.groups.get_mut(g)
                {
                    t.rejected.insert(seq);
                }
                out.push(Output::Rejected(Rejected {
                    event_id,
                    group_id,
                    sequence,
                    signer: s("/signature/keyId"),
                    code,
                    reason,
                }));
                return;
            }
        };
        let Some(event_id) = event_id else {
            return; // unreachable after verification: eventId is required
        };
        let delivered = Delivered {
            event_id: event_id.clone(),
            group_id: group_id.clone(),
            sequence,
            kind: s("/kind").unwrap_or_default(),
            occurred_at: s("/occurredAt").unwrap_or_default(),
            signing_hash,
            value: value.clone(),
        };
        let (Some(g), Some(seq)) = (group_id, sequence) else {
            // Organization-scoped Events have no Group sequence (§15.2).
            self.seen.insert(event_id);
            out.push(Output::Deliver(delivered));
            return;
        };
        let track = self.groups.or_default(g.clone());
        if seq <= track.contiguous || track.held.contains_key(&seq) {
            return; // already have this position
        }
        self.seen.insert(event_id);
        if seq == track.contiguous + 1 {
            track.contiguous = seq;
            out.push(Output::Deliver(delivered));
            let had_gap = !track.held.is_empty();
            while let Some(next) = track.held.remove(&(track.contiguous + 1)) {
                track.contiguous += 1;
                out.push(Output::Deliver(next));
            }
            if had_gap && track.held.is_empty() {
                track.requested_from = None;
                out.push(Output::GapClosed {
                    group_id: g.clone(),
                });
            }
        } else {
            track.held.insert(seq, delivered);
            let from = track.contiguous + 1;
            let to = track
                .held
                .keys()
                .next()
                .map_or(seq - 1, |first| first.saturating_sub(1));
            out.push(Output::Gap {
                group_id: g.clone(),
                from,
                to,
            });
            if track.requested_from != Some(from) && !track.resuming {
                track.requested_from = Some(from);
                self.subscribe(std::slice::from_ref(&g), out);
                return;
            }
        }
        self.page_check(Some(&g), out);
    }

    /// Reports an Event caused by one of our Commands: the first one (even a duplicate, the
    /// answer to an exact retry) settles it; later ones of a settled Command are reported once.
    /// Verified first: an Event that fails verification proves nothing.
    fn match_command(
        &mut self,
        value: &Value,
        duplicate: bool,
        check: &dyn EventCheck,
        out: &mut Vec<Output>,
    ) {
        let Some(cause) = value.pointer("/cause/id").and_then(Value::as_str) else {
            return;
        };
        let pending = self.commands.iter().any(|(a, _)| a == cause);
        if !pending && (duplicate || !self.settled.contains(cause)) {
            return;
        }
        let Ok(signing_hash) = check.check(value) else {
            return;
        };
        let s = |p: &str| value.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let event = Delivered {
            event_id: s("/eventId").unwrap_or_default(),
            group_id: s("/groupId"),
            sequence: value.pointer("/sequence").and_then(|v| match v {
                Value::Number(n) => n.as_safe_u64(),
                _ => None,
            }),
            kind: s("/kind").unwrap_or_default(),
            occurred_at: s("/occurredAt").unwrap_or_default(),
            signing_hash,
            value: value.clone(),
        };
        let action_id = cause.to_owned();
        self.commands.retain(|(a, _)| *a != action_id);
        self.settled.insert(action_id.clone());
        out.push(Output::CommandEvent { action_id, event });
    }

    /// A replay page came in full: ask for the next one (payloads.md §10.3).
    fn page_check(&mut self, group_id: Option<&str>, out: &mut Vec<Output>) {
        if let Some(g) = group_id
            && self
                .groups
                .get(g)
                .is_some_and(|t| t.resuming && t.since_subscribe >= REPLAY_PAGE)
        {
            self.subscribe(&[g.to_owned()], out);
        }
    }

    fn refresh_status(&mut self, out: &mut Vec<Output>) {
        let status = match &self.phase {
            Phase::Idle => Status::Idle,
            Phase::Waiting { until_ms } => Status::Offline {
                retry_at_ms: *until_ms,
            },
            Phase::Opening
            | Phase::HelloSent { .. }
            | Phase::Signing { .. }
            | Phase::ResponseSent => Status::Connecting,
            Phase::Live => {
                let missing: u64 = self.groups.values().map(Track::missing).sum();
                if missing > 0 {
                    Status::Behind(missing)
                } else if self.groups.values().any(|t| t.resuming) {
                    Status::Resuming
                } else {
                    Status::Connected
                }
            }
        };
        if status != self.status {
            self.status = status.clone();
            out.push(Output::Status(status));
        }
    }
}
