//! The §22 demo as one in-memory authority node, sans-IO (issue 30; docs/static-demo.md): the
//! Group Authority (wasm-core's reducer, through `simulation::harness`), an in-memory Event
//! log, and the demo's simulated Agents and director (`simulation::agents`), behind the frames
//! a `/ws` client exchanges with the server (§17): `HELLO` (the human profile of binding.md,
//! with its challenge signature), `SUBSCRIBE` with replay, `COMMAND` with the sender's outcome,
//! `ACK`, `PING`, and `EVENT`/`ERROR` back.
//!
//! Nothing here reads a clock or a random source: the host passes `now` to every call and 32
//! bytes of entropy at start (the Organization's keys and the challenges' nonces are drawn from
//! it), so the same code runs in the native tests and in the static demo's Web Worker
//! (`worker`, wasm32 only). The host calls [`Node::tick`] when [`Node::next_wake`] says, feeds
//! each client text to [`Node::receive`] and sends out what [`Node::take_frames`] returns.
//!
//! The demo's Agents are in-process (the director's `Delivery::Bus`), as in the native demo
//! test: only a console connects, as a human (`/ws?principal=human`).

mod wire;
#[cfg(target_arch = "wasm32")]
mod worker;

pub use simulation::agents::Pace;
pub use simulation::agents::director::HumanGate;
pub use wire::Refusal;

use sha2::{Digest, Sha256};
use simulation::agents::director::{Delivery, Demo, DemoConfig, Opening, Request};
use simulation::agents::{Outcome, plan};
use simulation::harness::{Envelope, Harness};
use simulation::vecmap::VecMap;
use std::collections::{BTreeMap, VecDeque};
use wasm_core::authority::{Micros, Rejection, SignedEvent, Submitted};
use wasm_core::binding::access;
use wasm_core::binding::error::BindingError as B;
use wasm_core::binding::frames::ping_echo;
use wasm_core::binding::hello::{self, Challenge, HelloFailure};
use wasm_core::binding::limits::{self, page_end, too_many_items};
use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::encoding::{b64url_encode, hex};
use wasm_core::frame::{self, Frame, HelloClientResponse};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;
use wire::{Refusal as R, error_frame, event_frame};

/// Connections open at once, at most: a page holds one console, a few tabs at most share a
/// Worker. The next [`Node::connect`] is refused.
pub const MAX_CONNECTIONS: usize = 16;
/// Events one `SUBSCRIBE` replays per Group before the continuation (binding.md), as the
/// server's gateway.
pub use wasm_core::binding::limits::REPLAY_PAGE;
/// The largest client text read, and the largest body `POST /api/commands` takes: the
/// binding's bounds, as the server applies them.
pub use wasm_core::binding::limits::{MAX_COMMAND_BYTES, MAX_FRAME_BYTES, MAX_FRAME_ITEMS};
/// Bytes of Artifact contents the node keeps, at most: past it a new content is dropped (the
/// demo's Workers produce a few small ones; the bound keeps a runaway from filling the tab).
pub const MAX_ARTIFACT_BYTES: usize = 16 << 20;
/// Frames waiting for the host per connection, at most: a host that stops taking them has the
/// connection closed (the gateway's `MAX_CONTROL` rule) rather than held in memory for ever.
pub const MAX_QUEUED: usize = 16_384;
/// Rounds of demo requests one [`Node::tick`] serves, at most (each round answers every
/// request the previous one raised; the demo settles in a handful).
const MAX_ROUNDS: usize = 10_000;

/// A client connection of the node.
pub type ConnId = u64;

/// How the node is started.
pub struct NodeConfig {
    /// 32 random bytes from the host (`crypto.getRandomValues` in the Worker): every private
    /// key of the Organization and every nonce is drawn from them.
    pub entropy: [u8; 32],
    /// The node's clock at start (the demo's identifiers and schedule start here).
    pub start: Micros,
    pub pace: Pace,
    /// Every this many Event deliveries to the Agents, one is made twice (the demo's
    /// duplicate-delivery injection).
    pub duplicate_every: u64,
}

/// The demo's human, as a console signs in with it: the MissionOwner of both root Missions,
/// whose key the page holds as a one-click demo key (it says it is one, docs/static-demo.md).
#[derive(Debug)]
pub struct DemoHuman {
    pub principal_id: String,
    pub key_id: String,
    pub seed: SecretSeed,
}

/// The visitor key's identifier: the read-only key of the demo's human (docs/static-demo.md,
/// "Visitor view"). Its HELLO is checked against a Registry of its own; the Organization's
/// Registry, which verifies Commands (§6.4) and is what `GET /api/registry` serves, does not
/// bind it, so nothing it signs verifies.
pub const VISITOR_KEY_ID: &str = "urn:missionweaveprotocol:key:mission-owner-visitor";
/// The name the visitor key's seed is derived under (`seed_for`), beside the cast's names.
const VISITOR_SEED_NAME: &str = "mission-owner-visitor";

/// A deterministic stream of random bytes from the host's entropy (SHA-256 in counter mode):
/// nonces and challenge IDs are unpredictable to whoever does not hold the entropy.
struct Drbg {
    key: [u8; 32],
    counter: u64,
}

impl Drbg {
    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(32) {
            self.counter += 1;
            let mut h = Sha256::new();
            h.update(b"missionweave demo-node drbg");
            h.update(self.key);
            h.update(self.counter.to_be_bytes());
            let d: [u8; 32] = h.finalize().into();
            chunk.copy_from_slice(&d[..chunk.len()]);
        }
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        self.fill(&mut b);
        b
    }
}

/// A principal's private seed, drawn from the entropy and its name.
fn seed_for(entropy: &[u8; 32], name: &str) -> SecretSeed {
    let mut h = Sha256::new();
    h.update(b"missionweave demo-node key\0");
    h.update(entropy);
    h.update(name.as_bytes());
    let mut raw: [u8; 32] = h.finalize().into();
    SecretSeed::take(&mut raw)
}

/// An established human session. `read_only`: opened with the visitor key, it reads what the
/// human may read (`SUBSCRIBE`, `PING`) and sends nothing that changes the node (no `COMMAND`,
/// no `ACK`, so no Cursor is kept for it).
struct Session {
    principal_id: String,
    expires: Micros,
    read_only: bool,
}

enum Phase {
    AwaitInit,
    /// The challenge sent, and whether it was for the visitor key (checked against the
    /// visitor's own one-binding Registry).
    Challenged(Box<Challenge>, bool),
    Open(Session),
}

/// One subscription: live, or paused after a continuation until the next `SUBSCRIBE`.
struct Sub {
    live: bool,
}

struct Conn {
    phase: Phase,
    subs: VecMap<String, Sub>,
    queued: usize,
    closed: bool,
}

/// The node: the authority, its log, the demo, the connections and their outgoing frames.
pub struct Node {
    h: Harness,
    demo: Demo,
    now: Micros,
    rng: Drbg,
    frame_prefix: String,
    next_frame: u64,
    /// Each Group's Events, JCS text, index `sequence - 1` (the in-memory store).
    logs: BTreeMap<String, Vec<String>>,
    /// Organization-scoped Events (Agent Cards, Sessions), in order.
    org_log: Vec<String>,
    /// `(principal, group)` → the highest Cursor ACKed (§16).
    cursors: BTreeMap<(String, String), u64>,
    conns: VecMap<ConnId, Conn>,
    next_conn: ConnId,
    out: VecDeque<(ConnId, String)>,
    human: DemoHuman,
    /// The visitor key: the human's principal, a key of its own (docs/static-demo.md).
    visitor: DemoHuman,
    /// The one binding the visitor key's `HELLO` is checked against; never used to verify a
    /// Command.
    visitor_registry: ValidatedRegistry,
    lines: Vec<String>,
    /// Artifact contents by `contentHash` (§13, E-1: outside the log): media type and bytes.
    artifacts: BTreeMap<String, (String, Vec<u8>)>,
    artifact_bytes: usize,
    /// Events one `SUBSCRIBE` replays per Group ([`REPLAY_PAGE`]; smaller in tests).
    replay_page: usize,
    /// The Agents' signed Agent Cards (§6.1), as registered (`simulation::cards`).
    agent_cards: Vec<Value>,
}

impl Node {
    /// Generates the Organization from the entropy, registers the Agents' cards, opens their
    /// Sessions and starts the demo (its first requests are served by the first [`Node::tick`]).
    pub fn new(cfg: NodeConfig) -> Result<Node, String> {
        let entropy = cfg.entropy;
        let seed_of = move |name: &str| seed_for(&entropy, name);
        let mut h = Harness::with_seeds(plan::CAST, &seed_of);
        let agent_cards = h
            .bootstrap_signed_agents(&plan::agent_names(), plan::HUMAN, cfg.start)
            .map_err(|e| format!("the demo's Agents could not be registered: {e}"))?;
        let run = format!("w{}", &hex(&entropy)[..6]);
        let demo = Demo::new(
            DemoConfig {
                run,
                start: cfg.start,
                pace: cfg.pace,
                duplicate_every: cfg.duplicate_every,
                delivery: Delivery::Bus,
                opening: Opening::CastHuman,
            },
            &|name| Some(seed_of(name)),
            Some(h.registry.clone()),
        )?;
        let human = &h.principals[plan::HUMAN];
        let human = DemoHuman {
            principal_id: human.actor.id.0.clone(),
            key_id: human.key_id.clone(),
            seed: human.seed.duplicate(),
        };
        let visitor = DemoHuman {
            principal_id: human.principal_id.clone(),
            key_id: VISITOR_KEY_ID.to_owned(),
            seed: seed_of(VISITOR_SEED_NAME),
        };
        let visitor_registry = RegistryEvidence {
            organization_id: h.organization_id.clone(),
            bindings: vec![BindingRecord {
                key_id: visitor.key_id.clone(),
                principal_type: ActorType::Human.as_str().into(),
                principal_id: visitor.principal_id.clone(),
                algorithm: "Ed25519".into(),
                public_key: b64url_encode(&visitor.seed.public_key()),
                valid_from: simulation::harness::KEYS_VALID_FROM.into(),
                validity_history: vec![],
            }],
        }
        .validate()
        .map_err(|e| format!("the visitor key could not be bound: {e}"))?;
        let mut rng = Drbg {
            key: Sha256::digest([b"missionweave demo-node nonces".as_slice(), &entropy].concat())
                .into(),
            counter: 0,
        };
        let frame_prefix = hex(&rng.bytes::<8>());
        Ok(Node {
            h,
            demo,
            now: cfg.start,
            rng,
            frame_prefix,
            next_frame: 0,
            logs: BTreeMap::new(),
            org_log: Vec::new(),
            cursors: BTreeMap::new(),
            conns: VecMap::new(),
            next_conn: 0,
            out: VecDeque::new(),
            human,
            visitor,
            visitor_registry,
            lines: Vec::new(),
            artifacts: BTreeMap::new(),
            artifact_bytes: 0,
            replay_page: REPLAY_PAGE,
            agent_cards,
        })
    }

    /// Sets how many Events one `SUBSCRIBE` replays per Group before the continuation (at
    /// least 1; [`REPLAY_PAGE`] by default), so that paging is tested without 1000 Events.
    pub fn set_replay_page(&mut self, n: usize) {
        self.replay_page = n.max(1);
    }

    /// The demo human's identity and seed (the page's one-click demo key).
    pub fn demo_human(&self) -> DemoHuman {
        DemoHuman {
            principal_id: self.human.principal_id.clone(),
            key_id: self.human.key_id.clone(),
            seed: self.human.seed.duplicate(),
        }
    }

    /// The visitor key (`GET /api/demo/visitor`): the demo human's principal with a key the
    /// Organization's Registry does not bind, so a console reads the demo before signing in
    /// and can sign nothing that verifies.
    pub fn visitor(&self) -> DemoHuman {
        DemoHuman {
            principal_id: self.visitor.principal_id.clone(),
            key_id: self.visitor.key_id.clone(),
            seed: self.visitor.seed.duplicate(),
        }
    }

    /// The Registry as `GET /api/registry` serves it (public keys only): what the console
    /// verifies every Event with.
    pub fn registry_json(&self) -> String {
        json::to_string(&self.h.evidence.to_fixture_json())
    }

    /// The Agents' Agent Cards as `GET /api/registry/agent-cards` serves them
    /// (`{organizationId, agentCards}`): Signed Documents by the Organization's
    /// `organization-registry` service, each verifiable with [`Node::registry_json`].
    pub fn agent_cards_json(&self) -> String {
        simulation::cards::agent_cards_json(&self.h.organization_id, &self.agent_cards)
    }

    pub fn organization_id(&self) -> &str {
        &self.h.organization_id
    }

    /// The human decisions the demo waits for now.
    pub fn gates(&self) -> Vec<HumanGate> {
        self.demo.gates(self.now)
    }

    /// Both root Missions approved.
    pub fn finished(&self) -> bool {
        self.demo.finished()
    }

    /// The node's clock (the latest `now` it was given).
    pub fn now(&self) -> Micros {
        self.now
    }

    /// When the demo next wants [`Node::tick`] without new input.
    pub fn next_wake(&self) -> Option<Micros> {
        self.demo.next_wake()
    }

    /// The demo's progress lines since the last call.
    pub fn take_lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines)
    }

    /// `(groupId, last sequence)` of every Group in the log.
    pub fn heads(&self) -> Vec<(String, u64)> {
        self.logs
            .iter()
            .map(|(g, l)| (g.clone(), l.len() as u64))
            .collect()
    }

    /// The stored Event of `group` at `sequence` (JCS text), as replay sends it.
    pub fn event(&self, group: &str, sequence: u64) -> Option<&str> {
        let i = usize::try_from(sequence.checked_sub(1)?).ok()?;
        self.logs.get(group)?.get(i).map(String::as_str)
    }

    /// Organization-scoped Events so far (Agent Cards, Sessions).
    pub fn organization_events(&self) -> usize {
        self.org_log.len()
    }

    fn at(&mut self, now: Micros) {
        self.now = self.now.max(now);
    }

    fn frame_id(&mut self) -> String {
        self.next_frame += 1;
        format!(
            "urn:missionweaveprotocol:frame:{}:{}",
            self.frame_prefix, self.next_frame
        )
    }

    /// Runs the demo at `now`: every request it raises is served (Sessions, signed Commands)
    /// and every Event appended is published, until it has nothing more to do now.
    pub fn tick(&mut self, now: Micros) {
        self.at(now);
        for _ in 0..MAX_ROUNDS {
            let requests = self.demo.requests(self.now);
            let lines = self.demo.take_log();
            self.lines.extend(lines);
            // Content before the Commands that name it, as the server's driver stores it.
            for a in self.demo.take_artifacts() {
                self.keep_artifact(a);
            }
            if requests.is_empty() {
                return;
            }
            for r in requests {
                self.serve(r);
            }
        }
    }

    /// Keeps an Artifact's content if its hash is right and the bound allows.
    fn keep_artifact(&mut self, a: simulation::agents::ArtifactContent) {
        if wasm_core::encoding::sha256_hash(&a.bytes) != a.content_hash {
            self.lines
                .push("demo: an Artifact whose content does not match its hash".into());
            return;
        }
        if self.artifacts.contains_key(&a.content_hash) {
            return;
        }
        if self.artifact_bytes + a.bytes.len() > MAX_ARTIFACT_BYTES {
            self.lines.push(format!(
                "demo: Artifact {} not kept: the page keeps at most {MAX_ARTIFACT_BYTES} bytes",
                a.content_hash
            ));
            return;
        }
        self.artifact_bytes += a.bytes.len();
        self.artifacts
            .insert(a.content_hash, (a.media_type, a.bytes));
    }

    /// An Artifact's media type and content by its `contentHash` (`GET /api/artifacts/{hash}`).
    pub fn artifact(&self, content_hash: &str) -> Option<(&str, &[u8])> {
        self.artifacts
            .get(content_hash)
            .map(|(m, b)| (m.as_str(), b.as_slice()))
    }

    /// `POST /api/commands` (server/src/http.rs): one signed Command; `(200, {"status":
    /// "accepted" | "duplicate", "events": […]})`, or the §19 document with the server's
    /// status (413 past [`MAX_COMMAND_BYTES`], 500, 503, else 422). Its Events fan out to the
    /// subscribers as a socket Command's do; the demo then runs.
    pub fn post_command(&mut self, body: &[u8], now: Micros) -> (u16, String) {
        self.at(now);
        if body.len() > MAX_COMMAND_BYTES {
            let e = R::new(
                ErrorCode::ProtocolViolation,
                format!(
                    "the request body is larger than {MAX_COMMAND_BYTES} bytes, the most a \
                     Command may take"
                ),
            );
            return (413, json::to_string(&e.document(self.now)));
        }
        let result = self.h.submit_bytes(body, self.now);
        let answer = match &result {
            Ok(Submitted::Appended(events)) => {
                let events = events.iter().map(|e| e.value.clone()).collect();
                Ok(("accepted", Value::Array(events)))
            }
            Ok(Submitted::Duplicate(receipt)) => {
                let events = receipt
                    .events
                    .iter()
                    .filter_map(|at| self.event(at.group_id.as_deref()?, at.sequence))
                    .filter_map(|t| json::parse_str(t).ok())
                    .collect();
                Ok(("duplicate", Value::Array(events)))
            }
            Err(r) => {
                let mut e = R::from_rejection(r.clone());
                if let Ok(v) = json::parse(body) {
                    e = e.about_command(&v);
                }
                let status = match r.code {
                    ErrorCode::InternalError => 500,
                    ErrorCode::Backpressure => 503,
                    _ => 422,
                };
                Err((status, json::to_string(&e.document(self.now))))
            }
        };
        self.settle(result, None);
        self.tick(self.now);
        match answer {
            Ok((status, events)) => {
                let mut o = Object::new();
                o.insert("status", Value::string(status));
                o.insert("events", events);
                (200, json::to_string(&Value::Object(o)))
            }
            Err(refused) => refused,
        }
    }

    /// One demo request, as the test harness of `simulation/tests/agents_demo.rs` serves it.
    fn serve(&mut self, r: Request) {
        let now = self.now;
        let (id, result) = match r {
            Request::OpenSession { id, agent_id, .. } => {
                let mut p = Object::new();
                p.insert("agentId", Value::string(agent_id));
                let r = self.h.submit(
                    "group-gateway",
                    "ext.missionweaveprotocol.identity.session_open",
                    &Envelope::default(),
                    p,
                    now,
                );
                (id, r)
            }
            Request::Submit { id, bytes, .. } => (id, self.h.submit_bytes(&bytes, now)),
            // The bus delivery raises neither (they are the socket binding's).
            Request::Subscribe { .. } | Request::Disconnect { .. } => return,
        };
        let outcome = self.settle(result, None);
        self.demo.outcome(id, outcome, now);
    }

    /// Publishes an accepted Command's Events and turns the result into the demo's outcome.
    /// `origin`: the connection that sent it, which gets its own Events (binding.md).
    fn settle(
        &mut self,
        r: Result<Submitted, Rejection>,
        origin: Option<(ConnId, &str)>,
    ) -> Outcome {
        match r {
            Ok(Submitted::Appended(events)) => {
                let values: Vec<Value> = events.iter().map(|e| e.value.clone()).collect();
                self.publish(&events, origin);
                Outcome::Appended(values)
            }
            Ok(Submitted::Duplicate(receipt)) => {
                // An exact retry: the original Events again, to the sender only (D-12).
                if let Some((conn, _)) = origin {
                    for at in &receipt.events {
                        let Some(g) = &at.group_id else { continue };
                        if let Some(text) = self.event(g, at.sequence).map(str::to_owned) {
                            let f = event_frame(&self.frame_id(), text.as_bytes());
                            self.push(conn, f);
                        }
                    }
                }
                Outcome::Duplicate(Vec::new())
            }
            Err(e) => Outcome::Rejected {
                code: e.code,
                message: e.message,
            },
        }
    }

    /// Appends each Event to the log, hands it to the demo, fans it out to the live
    /// subscribers that may read its Group, and gives the sender its own Events.
    fn publish(&mut self, events: &[SignedEvent], origin: Option<(ConnId, &str)>) {
        for e in events {
            let text = String::from_utf8_lossy(&e.jcs).into_owned();
            if let Err(m) = self.demo.deliver(&e.jcs, self.now) {
                self.lines
                    .push(format!("demo: an Event was not delivered: {m}"));
            }
            let Some(group) = e.at.group_id.clone() else {
                self.org_log.push(text);
                continue;
            };
            self.logs
                .entry(group.clone())
                .or_default()
                .push(text.clone());
            let targets: Vec<ConnId> = self
                .conns
                .iter()
                .filter(|(_, c)| !c.closed && c.subs.get(&group).is_some_and(|s| s.live))
                .map(|(id, _)| *id)
                .collect();
            let mut sent_to_origin = false;
            for conn in targets {
                let Some(principal) = self.principal_of(conn) else {
                    continue;
                };
                // Membership is checked again at fan-out: an ended one stops delivery.
                if self.visibility(&group, &principal).is_none() {
                    continue;
                }
                if origin.is_some_and(|(o, _)| o == conn) {
                    sent_to_origin = true;
                }
                let f = event_frame(&self.frame_id(), text.as_bytes());
                self.push(conn, f);
            }
            // The sender always gets its own Events, where it holds a Membership after the
            // Command, even before any SUBSCRIBE to the Group (binding.md, "COMMAND").
            if let Some((conn, principal)) = origin
                && !sent_to_origin
                && self
                    .h
                    .authority
                    .state
                    .membership(&group, principal)
                    .is_some()
            {
                let f = event_frame(&self.frame_id(), text.as_bytes());
                self.push(conn, f);
            }
        }
    }

    /// Where `principal` may read `group` from (the binding's rule, `access::visibility_after`,
    /// which the server's hub applies to its view of the same State).
    fn visibility(&self, group: &str, principal: &str) -> Option<u64> {
        access::visibility_after(&self.h.authority.state, group, principal)
    }

    /// The Groups `principal` may read now, sorted (what `GET /api/groups/{principal}`
    /// answers a console: the Groups to `SUBSCRIBE` to).
    pub fn groups_of(&self, principal: &str) -> Vec<String> {
        self.h
            .authority
            .state
            .groups
            .keys()
            .filter(|g| self.visibility(g, principal).is_some())
            .cloned()
            .collect()
    }

    fn principal_of(&self, conn: ConnId) -> Option<String> {
        match &self.conns.get(&conn)?.phase {
            Phase::Open(s) => Some(s.principal_id.clone()),
            _ => None,
        }
    }

    /// Queues a frame for `conn`; past [`MAX_QUEUED`] the connection is closed instead.
    fn push(&mut self, conn: ConnId, frame: String) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.closed {
            return;
        }
        if c.queued >= MAX_QUEUED {
            c.closed = true;
            return;
        }
        c.queued += 1;
        self.out.push_back((conn, frame));
    }

    /// Refuses a frame of an open session with `e`, naming the frame and, for a Group's
    /// refusal, the Group; the connection stays open.
    fn refuse_frame(&mut self, conn: ConnId, frame_id: Option<&str>, group: Option<&str>, e: B) {
        let mut r = e.refusal().about_frame(frame_id);
        if let Some(g) = group {
            r = r.in_group(g);
        }
        self.refuse(conn, &r);
    }

    fn refuse(&mut self, conn: ConnId, e: &R) {
        let f = error_frame(&self.frame_id(), e, self.now);
        self.push(conn, f);
        if e.fatal == Some(true)
            && let Some(c) = self.conns.get_mut(&conn)
        {
            c.closed = true;
        }
    }

    /// Opens a connection (the human profile, `/ws?principal=human`), or `None` past
    /// [`MAX_CONNECTIONS`].
    pub fn connect(&mut self) -> Option<ConnId> {
        self.conns.retain(|_, c| !c.closed || c.queued > 0);
        if self.conns.len() >= MAX_CONNECTIONS {
            return None;
        }
        self.next_conn += 1;
        self.conns.insert(
            self.next_conn,
            Conn {
                phase: Phase::AwaitInit,
                subs: VecMap::new(),
                queued: 0,
                closed: false,
            },
        );
        Some(self.next_conn)
    }

    /// The client closed its connection.
    pub fn disconnect(&mut self, conn: ConnId) {
        self.conns.remove(&conn);
        self.out.retain(|(c, _)| *c != conn);
    }

    /// Whether the node closed `conn` (after a fatal `ERROR`): the host closes its end once
    /// the frames already taken are sent.
    pub fn is_closed(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_none_or(|c| c.closed)
    }

    /// The frames to send, in order, with their connection.
    pub fn take_frames(&mut self) -> Vec<(ConnId, String)> {
        for c in self.conns.values_mut() {
            c.queued = 0;
        }
        self.out.drain(..).collect()
    }

    /// One text from a client at `now`. Replies, Events and refusals are queued for
    /// [`Node::take_frames`]; the demo then runs, so a human decision takes effect at once.
    pub fn receive(&mut self, conn: ConnId, text: &str, now: Micros) {
        self.at(now);
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        if c.closed {
            return;
        }
        let handshake = !matches!(c.phase, Phase::Open(_));
        if text.len() > MAX_FRAME_BYTES {
            let e = R::new(
                ErrorCode::ProtocolViolation,
                format!("a frame may be at most {MAX_FRAME_BYTES} bytes"),
            );
            self.refuse(conn, &e.fatal());
            return;
        }
        let v = match json::parse(text.as_bytes()) {
            Ok(v) => v,
            Err(e) => {
                let e = B::NotStrictJson(e.to_string()).refusal();
                self.refuse(conn, &if handshake { e.fatal() } else { e });
                return;
            }
        };
        let open = match self.conns.get(&conn).map(|c| &c.phase) {
            Some(Phase::Open(s)) => Some(Session {
                principal_id: s.principal_id.clone(),
                expires: s.expires,
                read_only: s.read_only,
            }),
            Some(_) => None,
            None => return,
        };
        if let Some(s) = open {
            self.on_frame(conn, &s, &v);
        } else {
            // The handshake's state is taken out while its step runs, and put back advanced.
            let phase = match self.conns.get_mut(&conn) {
                Some(c) => std::mem::replace(&mut c.phase, Phase::AwaitInit),
                None => return,
            };
            let next = match phase {
                Phase::Challenged(ch, visiting) => self.on_response(conn, *ch, visiting, &v),
                _ => self.on_init(conn, &v),
            };
            if let (Some(p), Some(c)) = (next, self.conns.get_mut(&conn)) {
                c.phase = p;
            }
        }
        self.tick(self.now);
    }

    /// Step 1 → 2 (server/src/gateway/session.rs `challenge`).
    fn on_init(&mut self, conn: ConnId, v: &Value) -> Option<Phase> {
        let about = v.pointer("/frameId").and_then(Value::as_str);
        let is_hello = v.pointer("/frameType").and_then(Value::as_str) == Some("HELLO");
        if hello::offers_no_common_version(v) {
            let e = B::Version.refusal();
            self.refuse(conn, &e.fatal());
            return None;
        }
        let init = match frame::decode_value(v) {
            Ok(Frame::HelloClientInit(i)) => i,
            Err(e) if is_hello => {
                let e = B::Schema(e.message)
                    .refusal()
                    .about_frame(e.frame_id.as_ref().map(|i| i.as_str()));
                self.refuse(conn, &e.fatal());
                return None;
            }
            _ => {
                let e = B::NotAuthenticated.refusal().about_frame(about);
                self.refuse(conn, &e.fatal());
                return None;
            }
        };
        let about = init.frame_id.as_str().to_owned();
        let expires = self.now.plus_seconds(limits::CHALLENGE_SECONDS);
        let frame_id = self.frame_id();
        let visiting = init.key_id.as_str() == VISITOR_KEY_ID;
        let rng = &mut self.rng;
        let built = hello::challenge(
            hello_registry(&self.h.registry, &self.visitor_registry, visiting),
            init,
            ActorType::Human,
            self.now,
            expires,
            &frame_id,
            &mut |b: &mut [u8]| rng.fill(b),
        );
        match built {
            Ok((challenge, frame)) => {
                self.push(conn, frame);
                Some(Phase::Challenged(Box::new(challenge), visiting))
            }
            Err(f) => {
                let e = R::new(HelloFailure::CODE, f.message()).about_frame(Some(&about));
                self.refuse(conn, &e.fatal());
                None
            }
        }
    }

    /// Step 3 → 4 (server/src/gateway/session.rs `accept`): once, before the challenge
    /// expires, a strict Ed25519 signature over exactly the transcript's bytes.
    /// `visiting`: the challenge was for the visitor key, checked against its own Registry;
    /// the session is then read-only.
    fn on_response(
        &mut self,
        conn: ConnId,
        c: Challenge,
        visiting: bool,
        v: &Value,
    ) -> Option<Phase> {
        let r: HelloClientResponse = match frame::decode_value(v) {
            Ok(Frame::HelloClientResponse(r)) => r,
            Ok(other) => {
                let e = R::new(HelloFailure::CODE, HelloFailure::NotAResponse.message())
                    .about_frame(Some(other.frame_id().as_str()));
                self.refuse(conn, &e.fatal());
                return None;
            }
            Err(e) => {
                let e = B::Schema(e.message)
                    .refusal()
                    .about_frame(e.frame_id.as_ref().map(|i| i.as_str()));
                self.refuse(conn, &e.fatal());
                return None;
            }
        };
        if let Err(f) = hello::check_response(
            hello_registry(&self.h.registry, &self.visitor_registry, visiting),
            &c,
            &r,
            self.now,
        ) {
            let e = R::new(HelloFailure::CODE, f.message())
                .about_frame(Some(r.frame_id.as_str()))
                .fatal();
            self.refuse(conn, &e);
            return None;
        }
        let expires = self.now.plus_seconds(limits::SESSION_SECONDS);
        let token = self.rng.bytes::<{ hello::SESSION_TOKEN_BYTES }>();
        let f = hello::accept_frame(&self.frame_id(), &token, None, expires);
        self.push(conn, f);
        Some(Phase::Open(Session {
            principal_id: c.init.agent_id.as_str().to_owned(),
            expires,
            read_only: visiting,
        }))
    }

    /// A frame of an authenticated client (server/src/gateway/conn.rs `on_text`).
    fn on_frame(&mut self, conn: ConnId, s: &Session, v: &Value) {
        let about = v.pointer("/frameId").and_then(Value::as_str);
        if self.now > s.expires {
            let e = B::Expired.refusal();
            self.refuse(conn, &e.fatal());
            return;
        }
        if let Some(e) = too_many_items(v) {
            self.refuse(conn, &e);
            return;
        }
        let f = match frame::decode_value(v) {
            Ok(f) => f,
            Err(e) => {
                let about = e.frame_id.as_ref().map(|i| i.as_str());
                self.refuse_frame(conn, about, None, B::Schema(e.message));
                return;
            }
        };
        let frame_id = f.frame_id().as_str().to_owned();
        if s.read_only {
            match &f {
                Frame::Command(c) => {
                    // Refused before it is read: no stage runs, nothing is appended.
                    let e = R::new(
                        ErrorCode::AuthForbidden,
                        "a read-only session (the demo's visitor key) may not send Commands: \
                         sign in to decide",
                    )
                    .about_command(&c.command.value)
                    .about_frame(Some(&frame_id));
                    self.refuse(conn, &e);
                    return;
                }
                Frame::Ack(_) => {
                    let e = R::new(
                        ErrorCode::AuthForbidden,
                        "a read-only session (the demo's visitor key) keeps no Cursor: sign in \
                         to acknowledge",
                    )
                    .about_frame(Some(&frame_id));
                    self.refuse(conn, &e);
                    return;
                }
                _ => {}
            }
        }
        match f {
            Frame::Subscribe(sub) => {
                for g in sub.groups.iter() {
                    self.subscribe(conn, &s.principal_id, &frame_id, g);
                }
            }
            Frame::Command(c) => self.command(conn, &s.principal_id, &frame_id, &c.command.value),
            Frame::Ack(a) => {
                for item in a.acknowledgements.iter() {
                    self.ack(conn, &s.principal_id, &frame_id, item);
                }
            }
            Frame::Ping(p) => {
                if p.presence.is_some() {
                    self.refuse_frame(conn, Some(&frame_id), None, B::PresenceNotOwn);
                    return;
                }
                if let Some(echo) = ping_echo(&p, self.now, || (self.frame_id(), self.rng.bytes()))
                {
                    self.push(conn, echo);
                }
            }
            other => {
                let e = B::NotAfterAuthentication(other.frame_type().as_str().to_owned());
                self.refuse_frame(conn, about, None, e);
            }
        }
    }

    /// One Group of a `SUBSCRIBE` (server/src/gateway/replay.rs): hidden and unknown Groups
    /// get the same answer; history after `max(afterSequence, visibilityAfterSequence)` up to
    /// [`REPLAY_PAGE`] Events, then live, or the continuation.
    fn subscribe(
        &mut self,
        conn: ConnId,
        principal: &str,
        frame_id: &str,
        g: &wasm_core::frame::GroupSubscription,
    ) {
        let group = g.group_id.as_str();
        let Some(visibility_after) = self.visibility(group, principal) else {
            self.refuse(conn, &access::group_not_found(group, frame_id));
            return;
        };
        let start = g.after_sequence.0.max(visibility_after);
        let head = self.logs.get(group).map_or(0, |l| l.len() as u64);
        let end = head.min(page_end(start, self.replay_page));
        let texts: Vec<String> = (start + 1..=end)
            .filter_map(|s| self.event(group, s).map(str::to_owned))
            .collect();
        for t in texts {
            let f = event_frame(&self.frame_id(), t.as_bytes());
            self.push(conn, f);
        }
        let live = end >= head;
        if !live {
            let e = wasm_core::binding::error::continuation(group, end, "replay_page", 0);
            self.refuse(conn, &e);
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.subs.insert(group.to_owned(), Sub { live });
        }
    }

    /// `COMMAND`: the actor must be the session's principal; the Command then goes through
    /// the six stages and the authority; a refusal is an `ERROR` naming it, the connection
    /// stays open; accepted, its Events reach the sender (binding.md).
    fn command(&mut self, conn: ConnId, principal: &str, frame_id: &str, command: &Value) {
        if !access::is_session_principal(command, principal, ActorType::Human) {
            let e = B::NotSessionPrincipal
                .refusal()
                .about_command(command)
                .about_frame(Some(frame_id));
            self.refuse(conn, &e);
            return;
        }
        let bytes = json::to_string(command).into_bytes();
        let result = self.h.submit_bytes(&bytes, self.now);
        if let Err(r) = &result {
            let e = R::from_rejection(r.clone())
                .about_command(command)
                .about_frame(Some(frame_id));
            self.refuse(conn, &e);
        }
        self.settle(result, Some((conn, principal)));
    }

    /// `ACK`: an active Membership and a sequence not past the head; Cursors only rise (§16).
    fn ack(
        &mut self,
        conn: ConnId,
        principal: &str,
        frame_id: &str,
        item: &wasm_core::frame::Acknowledgement,
    ) {
        let group = item.group_id.as_str();
        if !access::may_ack(&self.h.authority.state, group, principal) {
            self.refuse(conn, &access::group_not_found(group, frame_id));
            return;
        }
        let head = self.logs.get(group).map_or(0, |l| l.len() as u64);
        if item.sequence.0 > head {
            self.refuse_frame(conn, Some(frame_id), Some(group), B::AckBeyondHead);
            return;
        }
        let c = self
            .cursors
            .entry((principal.to_owned(), group.to_owned()))
            .or_insert(0);
        *c = (*c).max(item.sequence.0);
    }

    /// The stored `ACK` Cursor of `(principal, group)`.
    pub fn cursor(&self, principal: &str, group: &str) -> Option<u64> {
        self.cursors
            .get(&(principal.to_owned(), group.to_owned()))
            .copied()
    }
}

/// `now` truncated to whole seconds: the demo starts on a second, as its schedule and the
/// whole-second times it signs expect.
pub fn whole_seconds(now: Micros) -> Micros {
    Micros(now.0 - now.0.rem_euclid(Micros::PER_SECOND))
}

/// The Registry a `HELLO` is checked against, at the challenge and at the response alike: the
/// visitor key's one-binding Registry when `visiting`, else the Organization's
/// (docs/static-demo.md, "Keys"). The visitor's is never used to verify a Command (§6.4). A
/// function of the two fields, not of the node, so the challenge can draw from the node's DRBG
/// while it holds the Registry.
fn hello_registry<'a>(
    organization: &'a ValidatedRegistry,
    visitor: &'a ValidatedRegistry,
    visiting: bool,
) -> &'a ValidatedRegistry {
    if visiting { visitor } else { organization }
}
