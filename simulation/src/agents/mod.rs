//! Simulated Agents for the §22 proof of concept, sans-IO like the rest of the core: Events and
//! `now` go in, signed Commands and wake-up times come out. The same code runs natively (the
//! server's demo, the end-to-end test) and in the browser next to the in-WASM authority.
//!
//! - [`Agent`]: one Agent's state machine. It signs its own Commands with its own key
//!   ([`Identity`]), keeps its own view of each Group it is subscribed to, and has at most one
//!   Command in flight: it learns the outcome, waits until its view has folded the Events the
//!   Command appended, and only then decides again. It never re-implements a protocol rule: it
//!   tries a Command and reacts to the authority's answer.
//! - [`coordinator::Coordinator`]: folds its Groups with the authority's own reducer
//!   ([`wasm_core::authority::evolve::apply`]) and drives a Mission's WorkItem graph.
//! - [`worker::Worker`]: per-Group inboxes and queues ([`queue`]), a weighted-fair Scheduler
//!   ([`sched`]) and execution slots (§11.1, §11.3).
//! - [`director::Demo`]: the storyline of §22 across the Agents, with the failure injections
//!   and the pauses at human decisions; [`bus`] stands in for the binding's subscriptions.

pub mod bus;
pub mod coordinator;
pub mod director;
pub mod inbox;
pub mod plan;
pub mod queue;
pub mod sched;
pub mod worker;

use crate::harness::{Envelope, signed_command};
use wasm_core::authority::Micros;
use wasm_core::crypto::verify::SignError;
use wasm_core::crypto::{SecretSeed, ed25519};
use wasm_core::json::{Object, Value};
use wasm_core::model::common::{Actor, ActorType};
use wasm_core::model::error::ErrorCode;

/// Why an Agent could not act.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentError {
    /// Its Command could not be signed (a defect: the Agent builds every member itself).
    Sign(String),
}

impl AgentError {
    /// The wire code a peer would see for this failure (§19).
    pub fn wire_code(&self) -> ErrorCode {
        match self {
            AgentError::Sign(_) => ErrorCode::InternalError,
        }
    }
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::Sign(e) => write!(f, "the Command could not be signed: {e}"),
        }
    }
}

impl From<SignError> for AgentError {
    fn from(e: SignError) -> Self {
        AgentError::Sign(e.to_string())
    }
}

/// A signed Command on its way to the authority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub action_id: String,
    pub kind: String,
    pub group_id: Option<String>,
    /// The Command's wire bytes (strict JSON, signed).
    pub bytes: Vec<u8>,
}

/// An Artifact's content, which lives outside the Event log (§13, E-1): the Agent hands it to
/// its driver to store by `content_hash` next to the Command that publishes its manifest.
/// Nothing in a Command or Event changes: the manifest carries only the hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactContent {
    /// `sha256:<64 hex>` of `bytes`, as in the manifest's `contentHash`.
    pub content_hash: String,
    /// The manifest's `mediaType`.
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// What the authority answered to one Command (§15.1, §19).
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Accepted: the Events it appended, in order.
    Appended(Vec<Value>),
    /// A byte-identical retry: nothing new was appended (the original Events, when known).
    Duplicate(Vec<Value>),
    /// Refused, with its wire code; nothing was applied.
    Rejected { code: ErrorCode, message: String },
}

impl Outcome {
    /// `(groupId, sequence)` of each Group Event in the outcome.
    pub fn group_events(&self) -> Vec<(String, u64)> {
        let events = match self {
            Outcome::Appended(e) | Outcome::Duplicate(e) => e,
            Outcome::Rejected { .. } => return Vec::new(),
        };
        events
            .iter()
            .filter_map(|e| Some((str_at(e, "/groupId")?.to_owned(), u64_at(e, "/sequence")?)))
            .collect()
    }
}

/// An out-of-band instruction from the demo's director (the Organization's operator): which
/// work to release, how to weigh a Group. Never a protocol authorization (§9: a Message, and
/// equally a directive, authorizes nothing; Commands do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Directive {
    /// Release a planned stage that waits for a directive (e.g. an urgent arrival).
    Release(String),
    /// The weight of a Group in this Worker's Scheduler (organization priority class, §11.1).
    Weight { group: String, weight: u64 },
}

/// One Agent: a sans-IO state machine.
pub trait Agent: Send {
    /// The principal name (development Organization name, e.g. `reviewer`).
    fn name(&self) -> &str;
    /// The Agent's Principal id.
    fn agent_id(&self) -> &str;
    /// A Session was opened for this Agent (the binding's HELLO, §6.3).
    fn session_opened(&mut self, epoch: u64, now: Micros);
    /// One delivered Event of `group` (verified; possibly a duplicate or out of order).
    fn deliver(&mut self, group: &str, event: Value, now: Micros);
    /// The authority's answer to the Command with `action_id`.
    fn outcome(&mut self, action_id: &str, outcome: &Outcome, now: Micros);
    /// Decides at `now`: at most one Command to sign and send.
    fn step(&mut self, now: Micros) -> Option<Outgoing>;
    /// When this Agent next wants [`Agent::step`] called without new input.
    fn next_wake(&self) -> Option<Micros>;
    /// The Cursor of `group` (§16), if the Agent has seen it.
    fn cursor(&self, group: &str) -> Option<u64>;
    /// How many duplicate deliveries the Agent dropped.
    fn duplicates(&self) -> u64;
    /// An out-of-band directive from the operator.
    fn directive(&mut self, _d: &Directive) {}
    /// A short, stable description of what the Agent holds (queues), for comparing a
    /// restarted Agent's rebuilt state with the one before.
    fn summary(&self) -> Vec<String> {
        Vec::new()
    }
    /// Progress lines since the last call.
    fn take_notes(&mut self) -> Vec<String>;
    /// Artifact contents produced since the last call, for the driver to store.
    fn take_artifacts(&mut self) -> Vec<ArtifactContent> {
        Vec::new()
    }
    /// Views that failed to fold an Event (0 when the Agent's view follows the log exactly).
    fn view_errors(&self) -> u64 {
        0
    }
}

/// Real-time pacing of the demo (the native test runs the same values on a simulated clock).
/// Durations the protocol carries are whole seconds.
#[derive(Clone, Debug)]
pub struct Pace {
    /// One execution step of simulated work.
    pub step: Micros,
    pub execution_lease_seconds: u64,
    /// Ownership while queued (waiting in a per-Group queue may take a while).
    pub ownership_lease_seconds: u64,
    /// Ownership of work that waits for a human execution approval.
    pub gated_ownership_seconds: u64,
    pub resume_within_seconds: u64,
    pub blocked_lease_seconds: u64,
    pub offer_seconds: u64,
    /// Coordinator lease of a healthy Mission.
    pub coordinator_lease_seconds: u64,
    /// Coordinator lease of the Mission whose Coordinator will fail (noticed sooner).
    pub short_coordinator_lease_seconds: u64,
    /// Ownership and Execution Lease of the flaky Worker (its lease will lapse).
    pub flaky_lease_seconds: u64,
    /// How long the flaky Worker hangs.
    pub stall: Micros,
    /// How long after a lapsed lease the Coordinator reassigns.
    pub lease_grace: Micros,
    /// Back-off after a retryable rejection.
    pub retry: Micros,
    /// How long a temporary Group disconnection lasts.
    pub disconnect: Micros,
    /// How long after starting its review the shared Worker restarts.
    pub restart_after: Micros,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            step: Micros(400_000),
            execution_lease_seconds: 30,
            ownership_lease_seconds: 3_600,
            gated_ownership_seconds: 86_400,
            resume_within_seconds: 3_600,
            blocked_lease_seconds: 3_600,
            offer_seconds: 3_600,
            coordinator_lease_seconds: 120,
            short_coordinator_lease_seconds: 12,
            flaky_lease_seconds: 3,
            stall: Micros::from_seconds(4),
            lease_grace: Micros::from_seconds(3),
            retry: Micros(250_000),
            disconnect: Micros::from_seconds(3),
            restart_after: Micros(600_000),
        }
    }
}

impl Pace {
    /// A brisk pace for tests that run the demo in real time (the protocol's lease durations
    /// are whole seconds, so the lapses still take a second or two).
    pub fn brisk() -> Pace {
        Pace {
            step: Micros(50_000),
            execution_lease_seconds: 10,
            short_coordinator_lease_seconds: 3,
            flaky_lease_seconds: 1,
            stall: Micros(1_300_000),
            lease_grace: Micros(1_500_000),
            retry: Micros(100_000),
            disconnect: Micros(500_000),
            restart_after: Micros(100_000),
            ..Pace::default()
        }
    }
}

/// An Agent's (or the demo human's, or a service's) signing identity: its Principal, its
/// Registry key and a signer over its [`SecretSeed`]. Action IDs are unique per demo run and
/// per process generation, so a restarted Agent never reuses one (§15.1).
pub struct Identity {
    pub name: String,
    pub actor: Actor,
    pub key_id: String,
    signer: ed25519::Signer,
    pub session_epoch: Option<u64>,
    run: String,
    generation: u32,
    counter: u64,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("name", &self.name)
            .field("key_id", &self.key_id)
            .field("session_epoch", &self.session_epoch)
            .finish_non_exhaustive()
    }
}

/// The Principal id the development Organization and the harness give `name` (§6.1).
pub fn principal_id(actor_type: ActorType, name: &str) -> String {
    format!("urn:missionweaveprotocol:{actor_type}:{name}")
}

impl Identity {
    pub fn new(
        name: &str,
        actor_type: ActorType,
        seed: &SecretSeed,
        run: &str,
        generation: u32,
    ) -> Identity {
        Identity {
            name: name.to_owned(),
            actor: Actor::new(actor_type, &principal_id(actor_type, name)),
            key_id: format!("urn:missionweaveprotocol:key:{name}"),
            signer: ed25519::Signer::from_seed(seed),
            session_epoch: None,
            run: run.to_owned(),
            generation,
            counter: 0,
        }
    }

    pub fn id(&self) -> &str {
        self.actor.id.as_str()
    }

    /// A fresh Action ID.
    fn next_action(&mut self) -> String {
        self.counter += 1;
        format!(
            "urn:missionweaveprotocol:action:demo-{}-{}-g{}-{}",
            self.run, self.name, self.generation, self.counter
        )
    }

    /// Signs a Command with this identity. An Agent's Commands carry its Session Epoch.
    pub fn command(
        &mut self,
        kind: &str,
        mut env: Envelope,
        payload: Object,
        now: Micros,
    ) -> Result<Outgoing, AgentError> {
        if self.actor.actor_type == ActorType::Agent {
            env.session_epoch = self.session_epoch;
        }
        let action_id = self.next_action();
        let bytes = signed_command(
            &self.actor,
            &self.key_id,
            &self.signer,
            &action_id,
            kind,
            &env,
            payload,
            now,
        )?;
        Ok(Outgoing {
            action_id,
            kind: kind.to_owned(),
            group_id: env.group_id,
            bytes,
        })
    }

    /// Signs raw bytes (an Artifact manifest's JCS form, payloads.md §9.2).
    pub fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.signer.sign(message)
    }
}

/// Which Command an Agent is waiting on, and what it waits for before deciding again.
#[derive(Clone, Debug)]
pub(crate) struct Pending<I> {
    /// The Command in flight: its Action ID and what it was for.
    pub in_flight: Option<(String, I)>,
    /// Group Events the last accepted Command appended, not yet folded into the view.
    pub awaiting: Vec<(String, u64)>,
    /// No new decision before this time (back-off after a rejection).
    pub retry_at: Option<Micros>,
}

impl<I> Default for Pending<I> {
    fn default() -> Self {
        Pending {
            in_flight: None,
            awaiting: Vec::new(),
            retry_at: None,
        }
    }
}

impl<I> Pending<I> {
    /// Whether the Agent may decide now, given its Cursors.
    pub fn ready(&mut self, now: Micros, cursor: impl Fn(&str) -> Option<u64>) -> bool {
        if self.in_flight.is_some() {
            return false;
        }
        if self.retry_at.is_some_and(|t| t > now) {
            return false;
        }
        self.retry_at = None;
        // Waiting only where the Agent has an inbox: Events of a Group it does not follow
        // (yet) cannot be waited for.
        self.awaiting
            .retain(|(g, s)| cursor(g).is_some_and(|c| c < *s));
        self.awaiting.is_empty()
    }

    /// Takes the intent of the Command with `action_id`, if it is the one in flight.
    pub fn settle(&mut self, action_id: &str) -> Option<I> {
        match &self.in_flight {
            Some((a, _)) if a == action_id => self.in_flight.take().map(|(_, i)| i),
            _ => None,
        }
    }
}

/// A string member of a JSON value.
pub(crate) fn str_at<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// An integer member of a JSON value.
pub(crate) fn u64_at(v: &Value, pointer: &str) -> Option<u64> {
    match v.pointer(pointer) {
        Some(Value::Number(n)) => n.as_safe_u64(),
        _ => None,
    }
}

/// An Object from members.
pub(crate) fn obj(members: Vec<(&'static str, Value)>) -> Object {
    wasm_core::authority::handlers::payload(members)
}

/// A JSON array of strings.
pub(crate) fn strings<S: AsRef<str>>(items: &[S]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|s| Value::string(s.as_ref().to_owned()))
            .collect(),
    )
}

/// A Principal object of a payload.
pub(crate) fn principal(actor_type: &str, id: &str) -> Value {
    Value::Object(obj(vec![
        ("type", Value::string(actor_type.to_owned())),
        ("id", Value::string(id.to_owned())),
    ]))
}

/// `now` truncated to whole seconds: signed times and manifest times are never ahead of the
/// authority's clock (payloads.md §9.2: `createdAt` no later than now).
pub(crate) fn whole_seconds(now: Micros) -> Micros {
    Micros(now.0 - now.0.rem_euclid(Micros::PER_SECOND))
}
