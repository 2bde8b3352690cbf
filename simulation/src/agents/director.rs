//! The demo's director: the two-Mission storyline of §22 across the Agents, sans-IO.
//!
//! A runner (the native test, the server, later the browser) drives it:
//!
//! ```text
//!   loop {
//!       for r in demo.requests(now) { … }        // OpenSession (the binding's HELLO) or Submit
//!       demo.outcome(id, Outcome, now)            // the authority's answer to a request
//!       demo.deliver(event_bytes, now)            // every durable Event, in commit order
//!       demo.gates()                              // human decisions it is waiting for
//!       sleep until demo.next_wake()
//!   }
//! ```
//!
//! The director opens the scene as the human MissionOwner's standing request (the two root
//! Missions are created with the development human's key), introduces Agents to the Groups they
//! become members of (the stand-in for their SUBSCRIBE), and injects the failures of §22's
//! suite at story points: duplicate Event delivery (every few deliveries, and one retransmitted
//! Command), a Worker restart that rebuilds its queues from the log, a Coordinator that fails
//! and is replaced by the control plane with a higher Coordinator Epoch, a temporary Group
//! disconnection, a lease that lapses and is reassigned, a high-priority arrival that preempts
//! at a checkpoint — and it *pauses* at every human decision: it emits nothing for the gated
//! work until the human's Event (`approval.execution.granted`, `mission.approved`,
//! `mission.changes_requested`) arrives through the log.

use super::bus::Bus;
use super::coordinator::Coordinator;
use super::inbox::Inbox;
use super::plan::{self, MissionPlan, Plans};
use super::worker::{Fault, Proposal, Worker, WorkerConfig};
use super::{
    Agent, ArtifactContent, Directive, Identity, Outcome, Outgoing, Pace, obj, str_at, strings,
    u64_at,
};
use crate::harness::Envelope;
use crate::vecmap::VecMap;
use std::collections::{BTreeMap, BTreeSet};
use wasm_core::authority::{Micros, State, evolve};
use wasm_core::crypto::{DocumentKind, SecretSeed, ValidatedRegistry, verify};
use wasm_core::json::Value;
use wasm_core::model::ToJson;
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::mission::MissionState;
use wasm_core::model::work_item::WorkItemState;

/// How a demo run is set up.
#[derive(Clone, Debug)]
pub struct DemoConfig {
    /// Makes every identifier and Action ID of this run unique (a server may run the demo
    /// again on the same store).
    pub run: String,
    pub start: Micros,
    pub pace: Pace,
    /// Every this many Event deliveries, one is made twice.
    pub duplicate_every: u64,
    /// How Events reach the Agents.
    pub delivery: Delivery,
    /// Who creates the two root Missions.
    pub opening: Opening,
}

/// Who creates the demo's root Missions: `mission.create` is human-only (§7.1, I-16), so the
/// director either signs it with the cast's human key (the development Organization) or
/// proposes it to a human of a real Organization, who signs it in the console.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Opening {
    /// The cast's human (`plan::HUMAN`) with its own key.
    #[default]
    CastHuman,
    /// A human of the Organization: the director waits for the Missions it proposes
    /// ([`Demo::proposals`]) to be created, and needs no human key.
    Proposed,
}

/// A root Mission the director proposes and a human creates (their `mission.create`).
#[derive(Clone, Debug, PartialEq)]
pub struct MissionProposal {
    pub mission_id: String,
    /// The Group the Command creates (its envelope's `groupId`).
    pub group_id: String,
    pub title: String,
    /// The `mission.create` payload, as the human signs it.
    pub payload: Value,
}

/// How Events reach the Agents, and who carries out subscriptions and network faults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Delivery {
    /// The in-process [`Bus`]: every durable Event given to [`Demo::deliver`] is routed to
    /// its subscribers; replays, disconnections and partitions happen on the bus (the native
    /// and browser tests, where no socket exists).
    #[default]
    Bus,
    /// The WebSocket binding (§17): each Agent holds its own connection. The runner carries
    /// out [`Request::Subscribe`] and [`Request::Disconnect`] on that Agent's socket and hands
    /// each `EVENT` it receives to [`Demo::deliver_to_agent`]; [`Demo::deliver`] then feeds
    /// only the director's own view (the operator's script and its human gates).
    Binding,
}

/// What the runner must do for the demo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Open a Session for an Agent (the binding's HELLO; the gateway issues
    /// `ext.missionweaveprotocol.identity.session_open`, payloads.md §6.34).
    OpenSession {
        id: u64,
        agent: String,
        agent_id: String,
    },
    /// Submit signed Command bytes.
    Submit {
        id: u64,
        from: String,
        kind: String,
        action_id: String,
        bytes: Vec<u8>,
    },
    /// `SUBSCRIBE` `agent`'s connection to `group` after `after` ([`Delivery::Binding`]; a
    /// later one for the same Group replaces the earlier, §17.2).
    Subscribe {
        agent: String,
        group: String,
        after: u64,
    },
    /// Drop `agent`'s connection and keep the network down for `down_for`; the runner then
    /// reconnects (a new HELLO, hence a new Session Epoch, §6.3), resumes every Group from
    /// its ACKed Cursor and reports [`Demo::reconnected`] ([`Delivery::Binding`]).
    Disconnect { agent: String, down_for: Micros },
}

/// A human decision the demo waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HumanGate {
    /// `approval.grant_execution` for a queued, owned WorkItem (§12).
    ExecutionApproval {
        mission_id: String,
        group_id: String,
        work_item_id: String,
        goal: String,
        ownership_epoch: u64,
        operations: Vec<String>,
    },
    /// `mission.approve` or `mission.request_changes` (§7.3).
    MissionApproval {
        mission_id: String,
        group_id: String,
        title: String,
        revision: u64,
        artifact_hashes: Vec<String>,
    },
}

impl HumanGate {
    /// A stable identity of the decision (one per WorkItem ownership, one per revision).
    pub fn key(&self) -> String {
        match self {
            HumanGate::ExecutionApproval {
                work_item_id,
                ownership_epoch,
                ..
            } => format!("execution {work_item_id} {ownership_epoch}"),
            HumanGate::MissionApproval {
                mission_id,
                revision,
                ..
            } => format!("mission {mission_id} {revision}"),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            HumanGate::ExecutionApproval {
                mission_id,
                work_item_id,
                goal,
                ownership_epoch,
                operations,
                ..
            } => format!(
                "execution approval of WorkItem {work_item_id} (\"{goal}\", Mission \
                 {mission_id}, Ownership Epoch {ownership_epoch}, operations {})",
                operations.join(", ")
            ),
            HumanGate::MissionApproval {
                mission_id,
                title,
                revision,
                artifact_hashes,
                ..
            } => format!(
                "final approval of Mission {mission_id} (\"{title}\", revision {revision}, {} \
                 Artifacts) — approve, or request changes",
                artifact_hashes.len()
            ),
        }
    }
}

/// A Command the authority refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub agent: String,
    pub kind: String,
    pub code: ErrorCode,
    pub message: String,
}

/// An Agent restart and its queues before and after the rebuild.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restart {
    pub agent: String,
    pub before: Vec<String>,
    pub after: Option<Vec<String>>,
}

/// A reconnection after a temporary disconnection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconnection {
    pub agent: String,
    pub group: String,
    /// Events committed while it was away.
    pub missed: u64,
    /// Events replayed on reconnect (including duplicates around the cut).
    pub replayed: u64,
}

/// What happened, for the progress lines and the tests' milestones.
#[derive(Clone, Debug, Default)]
pub struct Record {
    pub rejections: Vec<Rejected>,
    /// Deliveries made twice.
    pub duplicate_deliveries: u64,
    /// Commands the network retransmitted, and whether the authority answered `duplicate`.
    pub retransmissions: Vec<(String, String, bool)>,
    pub restarts: Vec<Restart>,
    pub reconnections: Vec<Reconnection>,
    /// (Mission, previous Coordinator, new Coordinator).
    pub replacements: Vec<(String, String, String)>,
    /// Commands a partitioned (replaced) Coordinator sent late, and their answers.
    pub late_commands: Vec<Rejected>,
    /// Human gates, as first seen.
    pub gates: Vec<HumanGate>,
    /// Stages released by directive.
    pub released: Vec<String>,
    /// Agents cut off by a partition.
    pub partitions: Vec<String>,
    /// Agents whose Session opened, with their epoch.
    pub sessions: Vec<(String, u64)>,
    /// Duplicates dropped by Agent processes that have since been restarted.
    pub retired_duplicates: u64,
    /// When the first human gate was reached.
    pub first_gate_at: Option<Micros>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Session {
    Opening,
    Open(u64),
}

struct Hosted {
    agent: Box<dyn Agent>,
    generation: u32,
    session: Session,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Purpose {
    Agent,
    Session,
    Director,
    Retransmission,
    Late,
}

#[derive(Clone, Debug)]
struct Flight {
    agent: String,
    generation: u32,
    action_id: String,
    kind: String,
    bytes: Vec<u8>,
    purpose: Purpose,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Timer {
    Reconnect { agent: String, group: String },
    Restart { agent: String },
    Heal { agent: String },
}

/// Which injections have happened.
#[derive(Clone, Debug, Default)]
struct Script {
    created: bool,
    released: bool,
    restarted: bool,
    disconnected: bool,
    crashed: bool,
    replacing: bool,
    retransmitted: bool,
    /// The restart whose rebuilt queues are still to be captured.
    rebuilding: Option<usize>,
}

/// The demo: Agents, the bus, the director's view and script.
pub struct Demo {
    cfg: DemoConfig,
    plans: Plans,
    keys: BTreeMap<String, SecretSeed>,
    registry: Option<ValidatedRegistry>,
    agents: VecMap<String, Hosted>,
    bus: Bus,
    /// The director's view of the demo's Groups (the authority's reducer over their logs).
    view: State,
    view_inboxes: VecMap<String, Inbox>,
    groups: BTreeSet<String>,
    /// The cast's human, when the director signs the opening itself ([`Opening::CastHuman`]).
    human: Option<Identity>,
    control: Identity,
    /// Root Missions proposed to a human and not created yet ([`Opening::Proposed`]).
    proposals: Vec<MissionProposal>,
    requests: Vec<Request>,
    flights: VecMap<u64, Flight>,
    next_id: u64,
    timers: Vec<(Micros, Timer)>,
    held: VecMap<String, Vec<u64>>,
    pending_subs: VecMap<String, Vec<(String, u64)>>,
    released: BTreeSet<String>,
    script: Script,
    announced: BTreeSet<String>,
    log: Vec<String>,
    /// Artifact contents the Agents produced, not yet taken by the runner to store.
    artifacts: Vec<ArtifactContent>,
    record: Record,
    last_now: Micros,
    view_errors: u64,
    /// A restarted Agent's Groups and the heads its replay must reach before its rebuilt
    /// queues are compared.
    rebuild_targets: Vec<(String, u64)>,
    /// (Agent, Group) → the last sequence sent to a partitioned Agent before the cut.
    cut: BTreeMap<(String, String), u64>,
}

/// The Agent name of a development-Organization Agent id.
fn name_of(agent_id: &str) -> Option<&str> {
    agent_id.strip_prefix("urn:missionweaveprotocol:agent:")
}

impl Demo {
    /// A demo whose principals' seeds come from `seed_of` (the development Organization, or
    /// the harness's test keys). Events are verified against `registry` when given.
    pub fn new(
        cfg: DemoConfig,
        seed_of: &dyn Fn(&str) -> Option<SecretSeed>,
        registry: Option<ValidatedRegistry>,
    ) -> Result<Demo, String> {
        let mut keys = BTreeMap::new();
        for (name, _) in plan::CAST {
            if *name == plan::HUMAN && cfg.opening == Opening::Proposed {
                continue;
            }
            let seed =
                seed_of(name).ok_or_else(|| format!("the Organization has no key for {name}"))?;
            keys.insert((*name).to_owned(), seed);
        }
        let plans = Plans::new(&cfg.run, cfg.start, &cfg.pace);
        let groups = plans.all().iter().map(|p| p.group_id()).collect();
        let identity = |name: &str, t: ActorType| {
            keys.get(name)
                .map(|seed| Identity::new(name, t, seed, &cfg.run, 1))
                .ok_or_else(|| format!("the Organization has no key for {name}"))
        };
        let human = match cfg.opening {
            Opening::CastHuman => Some(identity(plan::HUMAN, ActorType::Human)?),
            Opening::Proposed => None,
        };
        let control = identity(plan::CONTROL_PLANE, ActorType::Service)?;
        let mut demo = Demo {
            bus: Bus::new(cfg.duplicate_every),
            last_now: cfg.start,
            cfg,
            plans,
            keys,
            registry,
            agents: VecMap::new(),
            view: State::default(),
            view_inboxes: VecMap::new(),
            groups,
            human,
            control,
            proposals: Vec::new(),
            requests: Vec::new(),
            flights: VecMap::new(),
            next_id: 0,
            timers: Vec::new(),
            held: VecMap::new(),
            pending_subs: VecMap::new(),
            released: BTreeSet::new(),
            script: Script::default(),
            announced: BTreeSet::new(),
            log: Vec::new(),
            artifacts: Vec::new(),
            record: Record::default(),
            view_errors: 0,
            rebuild_targets: Vec::new(),
            cut: BTreeMap::new(),
        };
        for name in plan::agent_names() {
            if name != plan::STANDBY {
                demo.host(name, 1);
            }
        }
        Ok(demo)
    }

    /// The plans of this run (Mission, Group and WorkItem identifiers).
    pub fn plans(&self) -> &Plans {
        &self.plans
    }

    /// The director's view: the authority's projection of the demo's Groups.
    pub fn view(&self) -> &State {
        &self.view
    }

    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Progress lines since the last call.
    pub fn take_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// Artifact contents the Agents produced since the last call (§13: content lives outside
    /// the Event log; the runner stores each by its hash).
    pub fn take_artifacts(&mut self) -> Vec<ArtifactContent> {
        std::mem::take(&mut self.artifacts)
    }

    /// An Agent, for inspection (tests).
    pub fn agent(&self, name: &str) -> Option<&dyn Agent> {
        self.agents.get(name).map(|h| h.agent.as_ref())
    }

    /// Duplicate deliveries the Agents dropped (including restarted processes).
    pub fn duplicates_dropped(&self) -> u64 {
        self.record.retired_duplicates
            + self
                .agents
                .values()
                .map(|h| h.agent.duplicates())
                .sum::<u64>()
    }

    /// Views of the Agents that failed to fold an Event (0 when every view followed the log).
    pub fn view_errors(&self) -> u64 {
        self.view_errors
            + self
                .agents
                .values()
                .map(|h| h.agent.view_errors())
                .sum::<u64>()
    }

    fn say(&mut self, text: String) {
        self.log.push(text);
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn worker_config(&self, name: &str) -> WorkerConfig {
        let p = &self.cfg.pace;
        let mut cfg = WorkerConfig {
            slots: 1,
            queue_capacity: 8,
            evidence_kind: "analysis".into(),
            ownership_lease_seconds: p.ownership_lease_seconds,
            execution_lease_seconds: p.execution_lease_seconds,
            faults: Vec::new(),
        };
        match name {
            plan::DEVELOPER => {
                cfg.slots = 2;
                cfg.evidence_kind = "implementation".into();
                cfg.faults.push(Fault::Block {
                    work_item: self.plans.a.work_id("implementation"),
                    after_steps: 2,
                    reason: "the payment provider's API schema is undocumented".into(),
                    proposal: Proposal {
                        key: "api-schema".into(),
                        goal: "Document the payment provider's API schema".into(),
                        deliverables: vec!["API schema".into()],
                        criteria: vec![
                            "the schema covers every endpoint the checkout calls".into(),
                        ],
                    },
                });
            }
            plan::DEVELOPER_B => {
                cfg.evidence_kind = "implementation".into();
                cfg.ownership_lease_seconds = p.flaky_lease_seconds;
                cfg.execution_lease_seconds = p.flaky_lease_seconds;
                cfg.faults.push(Fault::Stall {
                    work_item: self.plans.b.work_id("implementation"),
                    after_steps: 1,
                    duration: p.stall,
                });
            }
            plan::ANALYST => {
                // Two isolated execution slots: both Missions' requirements run side by side.
                cfg.slots = 2;
                cfg.evidence_kind = "requirements-analysis".into();
            }
            plan::TESTER => cfg.evidence_kind = "deterministic-tests".into(),
            plan::REVIEWER => cfg.evidence_kind = "code-review".into(),
            plan::AUDITOR => cfg.evidence_kind = "security-audit".into(),
            _ => cfg.evidence_kind = "requirements-analysis".into(),
        }
        cfg
    }

    /// The plan a Coordinator Agent drives.
    fn coordinator_plan(&self, name: &str) -> Option<MissionPlan> {
        match name {
            plan::COORDINATOR_A => Some(self.plans.a.clone()),
            plan::COORDINATOR_B => Some(self.plans.b.clone()),
            plan::STANDBY => {
                let mut p = self.plans.b.clone();
                p.coordinator_lease_seconds = self.cfg.pace.coordinator_lease_seconds;
                Some(p)
            }
            plan::SECURITY_LEAD => self
                .plans
                .a
                .stage("security")
                .and_then(|s| s.child.as_deref().cloned()),
            _ => None,
        }
    }

    /// Starts an Agent process (generation `generation`) and asks for its Session.
    fn host(&mut self, name: &str, generation: u32) {
        let Some(seed) = self.keys.get(name) else {
            return;
        };
        let me = Identity::new(name, ActorType::Agent, seed, &self.cfg.run, generation);
        let agent: Box<dyn Agent> = match self.coordinator_plan(name) {
            Some(p) => {
                let mut c = Coordinator::new(me, p, self.cfg.pace.clone());
                for key in &self.released {
                    c.directive(&Directive::Release(key.clone()));
                }
                Box::new(c)
            }
            None => Box::new(Worker::new(
                me,
                self.worker_config(name),
                self.cfg.pace.clone(),
                generation,
            )),
        };
        self.agents.insert(
            name.to_owned(),
            Hosted {
                agent,
                generation,
                session: Session::Opening,
            },
        );
        let id = self.id();
        self.flights.insert(
            id,
            Flight {
                agent: name.to_owned(),
                generation,
                action_id: String::new(),
                kind: "session_open".into(),
                bytes: Vec::new(),
                purpose: Purpose::Session,
            },
        );
        self.requests.push(Request::OpenSession {
            id,
            agent: name.to_owned(),
            agent_id: plan::agent_id(name),
        });
    }

    /// Queues a director Command (signed by the human or the control plane).
    fn director_command(&mut self, by: &str, out: Outgoing) {
        let id = self.id();
        self.flights.insert(
            id,
            Flight {
                agent: by.to_owned(),
                generation: 0,
                action_id: out.action_id.clone(),
                kind: out.kind.clone(),
                bytes: out.bytes.clone(),
                purpose: Purpose::Director,
            },
        );
        self.requests.push(Request::Submit {
            id,
            from: by.to_owned(),
            kind: out.kind,
            action_id: out.action_id,
            bytes: out.bytes,
        });
    }

    /// The opening: the human MissionOwner's two root Missions (§7.1), created with the
    /// development human's key, or proposed to a human of the Organization.
    fn create_missions(&mut self, now: Micros) {
        for p in [self.plans.a.clone(), self.plans.b.clone()] {
            let payload = obj(vec![
                ("missionId", Value::string(p.mission_id())),
                ("groupId", Value::string(p.group_id())),
                ("coordinatorId", Value::string(p.coordinator.clone())),
                ("title", Value::string(p.title.clone())),
                ("objective", Value::string(p.objective.clone())),
                ("definitionOfDone", strings(&p.definition_of_done)),
                ("deadline", Value::string(p.deadline.format())),
                ("budget", p.budget.to_json()),
                ("permissions", strings(&p.permissions)),
                (
                    "coordinatorLeaseSeconds",
                    Value::from(p.coordinator_lease_seconds),
                ),
            ]);
            let Some(human) = self.human.as_mut() else {
                self.say(format!(
                    "demo: proposes Mission \"{}\" ({}): a human of the Organization creates it \
                     in the console",
                    p.title,
                    p.mission_id()
                ));
                self.proposals.push(MissionProposal {
                    mission_id: p.mission_id(),
                    group_id: p.group_id(),
                    title: p.title.clone(),
                    payload: Value::Object(payload),
                });
                continue;
            };
            let env = Envelope {
                group_id: Some(p.group_id()),
                ..Envelope::default()
            };
            match human.command("mission.create", env, payload, now) {
                Ok(out) => {
                    self.say(format!(
                        "demo: the MissionOwner asks for Mission \"{}\" ({})",
                        p.title,
                        p.mission_id()
                    ));
                    self.director_command(plan::HUMAN, out);
                }
                Err(e) => self.say(format!("demo: cannot create {}: {e}", p.title)),
            }
        }
    }

    /// The root Missions proposed to a human and not created yet ([`Opening::Proposed`]; none
    /// once both exist, and none when the cast's human creates them).
    pub fn proposals(&self) -> &[MissionProposal] {
        &self.proposals
    }

    /// Requests to carry out at `now`: Session openings and signed Commands.
    pub fn requests(&mut self, now: Micros) -> Vec<Request> {
        self.last_now = self.last_now.max(now);
        if !self.script.created {
            self.script.created = true;
            self.create_missions(now);
        }
        self.fire_timers(now);
        self.control_plane(now);
        let names: Vec<String> = self.agents.keys().cloned().collect();
        for name in names {
            let Some(h) = self.agents.get_mut(&name) else {
                continue;
            };
            if !matches!(h.session, Session::Open(_)) {
                continue;
            }
            let generation = h.generation;
            let out = h.agent.step(now);
            let notes = h.agent.take_notes();
            self.log.extend(notes);
            self.artifacts.extend(h.agent.take_artifacts());
            let Some(out) = out else { continue };
            let id = self.id();
            self.flights.insert(
                id,
                Flight {
                    agent: name.clone(),
                    generation,
                    action_id: out.action_id.clone(),
                    kind: out.kind.clone(),
                    bytes: out.bytes.clone(),
                    purpose: Purpose::Agent,
                },
            );
            if self.bus.is_partitioned(&name) {
                self.held.or_default(name.clone()).push(id);
                continue;
            }
            self.requests.push(Request::Submit {
                id,
                from: name,
                kind: out.kind,
                action_id: out.action_id,
                bytes: out.bytes,
            });
        }
        for gate in self.gates(now) {
            if self.announced.insert(gate.key()) {
                self.record.first_gate_at.get_or_insert(now);
                self.say(format!("demo: waiting for a human: {}", gate.describe()));
                self.record.gates.push(gate);
            }
        }
        std::mem::take(&mut self.requests)
    }

    /// The authority's answer to request `id`.
    pub fn outcome(&mut self, id: u64, outcome: Outcome, now: Micros) {
        self.last_now = self.last_now.max(now);
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        if let Outcome::Rejected { code, message } = &outcome {
            let r = Rejected {
                agent: flight.agent.clone(),
                kind: flight.kind.clone(),
                code: *code,
                message: message.clone(),
            };
            if flight.purpose == Purpose::Late {
                self.say(format!(
                    "demo: the replaced Coordinator's late {} was refused: {code}",
                    flight.kind
                ));
                self.record.late_commands.push(r.clone());
            }
            if flight.purpose != Purpose::Session {
                self.record.rejections.push(r);
            }
        }
        match flight.purpose {
            Purpose::Session => self.session_outcome(&flight, &outcome, now),
            Purpose::Director => {
                if let Outcome::Rejected { code, message } = &outcome {
                    self.say(format!(
                        "demo: {} by {} was refused: {code} ({message})",
                        flight.kind, flight.agent
                    ));
                }
                if flight.kind == "mission.assign_coordinator"
                    && matches!(outcome, Outcome::Appended(_))
                {
                    self.host(plan::STANDBY, 1);
                }
            }
            Purpose::Retransmission => {
                let dup = matches!(outcome, Outcome::Duplicate(_));
                self.say(format!(
                    "demo: the network retransmitted {}'s {}; the authority answered {}",
                    flight.agent,
                    flight.kind,
                    if dup {
                        "with the original receipt (nothing appended)"
                    } else {
                        "otherwise"
                    }
                ));
                self.record
                    .retransmissions
                    .push((flight.agent, flight.kind, dup));
            }
            Purpose::Agent | Purpose::Late => {
                let retransmit = !self.script.retransmitted
                    && flight.agent == plan::TESTER
                    && flight.kind == "work.submit"
                    && matches!(outcome, Outcome::Appended(_));
                if let Some(h) = self.agents.get_mut(&flight.agent)
                    && h.generation == flight.generation
                {
                    h.agent.outcome(&flight.action_id, &outcome, now);
                    let notes = h.agent.take_notes();
                    self.log.extend(notes);
                }
                if retransmit {
                    // The same bytes again, as a network retry would send them (§15.1).
                    self.script.retransmitted = true;
                    let id = self.id();
                    self.requests.push(Request::Submit {
                        id,
                        from: flight.agent.clone(),
                        kind: flight.kind.clone(),
                        action_id: flight.action_id.clone(),
                        bytes: flight.bytes.clone(),
                    });
                    self.flights.insert(
                        id,
                        Flight {
                            purpose: Purpose::Retransmission,
                            ..flight
                        },
                    );
                }
            }
        }
    }

    fn session_outcome(&mut self, flight: &Flight, outcome: &Outcome, now: Micros) {
        let agent_id = plan::agent_id(&flight.agent);
        let epoch = match outcome {
            Outcome::Appended(events) | Outcome::Duplicate(events) => events.iter().find_map(|e| {
                (str_at(e, "/kind") == Some("ext.missionweaveprotocol.identity.session_opened")
                    && str_at(e, "/payload/agentId") == Some(agent_id.as_str()))
                .then(|| u64_at(e, "/payload/sessionEpoch"))
                .flatten()
            }),
            Outcome::Rejected { code, message } => {
                self.say(format!(
                    "demo: no Session for {}: {code} ({message})",
                    flight.agent
                ));
                None
            }
        };
        if let Some(epoch) = epoch {
            self.session_ready(flight, epoch, now);
        }
    }

    /// The runner opened a Session for request `id` over the binding (its HELLO's
    /// `server_accept`, §6.3), or could not (`Err`: why).
    pub fn session_opened(&mut self, id: u64, epoch: Result<u64, String>, now: Micros) {
        self.last_now = self.last_now.max(now);
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        match epoch {
            Ok(epoch) => self.session_ready(&flight, epoch, now),
            Err(e) => self.say(format!("demo: no Session for {}: {e}", flight.agent)),
        }
    }

    /// An Agent whose connection dropped is back: a new HELLO gave it Session Epoch `epoch`
    /// (which revokes its Execution Leases, §11.3) and its Groups resume after the ACKed
    /// Cursors in `resumed` (§16).
    pub fn reconnected(&mut self, agent: &str, epoch: u64, resumed: &[(String, u64)], now: Micros) {
        self.last_now = self.last_now.max(now);
        let Some(h) = self.agents.get_mut(agent) else {
            return;
        };
        h.session = Session::Open(epoch);
        h.agent.session_opened(epoch, now);
        self.record.sessions.push((agent.to_owned(), epoch));
        for (group, acked) in resumed {
            let cursor = h.agent.cursor(group).unwrap_or(0);
            let head = self.bus.last_sequence(group);
            let missed = head.saturating_sub(cursor);
            let replayed = head.saturating_sub(*acked);
            self.log.push(format!(
                "demo: {agent} reconnects (Session Epoch {epoch}) and resumes Group {group} \
                 from its ACKed Cursor {acked} (its inbox is at {cursor}): {missed} missed \
                 Events, {replayed} replayed, duplicates dropped by its inbox"
            ));
            self.record.reconnections.push(Reconnection {
                agent: agent.to_owned(),
                group: group.clone(),
                missed,
                replayed,
            });
        }
    }

    fn session_ready(&mut self, flight: &Flight, epoch: u64, now: Micros) {
        let Some(h) = self.agents.get_mut(&flight.agent) else {
            return;
        };
        if h.generation != flight.generation {
            return;
        }
        h.session = Session::Open(epoch);
        h.agent.session_opened(epoch, now);
        self.record.sessions.push((flight.agent.clone(), epoch));
        for (group, after) in self.pending_subs.remove(&flight.agent).unwrap_or_default() {
            self.subscribe(&flight.agent, &group, after, now);
        }
        if self.script.rebuilding.is_some() {
            // Over the binding the replay is still on its way: the queues are compared once
            // the Agent's Cursors reach the heads of now.
            let targets = self
                .bus
                .groups_of(&flight.agent)
                .into_iter()
                .map(|g| {
                    let head = self.bus.last_sequence(&g);
                    (g, head)
                })
                .collect();
            self.rebuild_targets = targets;
            self.check_rebuilt(&flight.agent);
        }
    }

    /// Captures a restarted Agent's rebuilt queues once it has replayed its Groups.
    fn check_rebuilt(&mut self, agent: &str) {
        let Some(n) = self.script.rebuilding else {
            return;
        };
        if self.record.restarts.get(n).is_none_or(|r| r.agent != agent) {
            return;
        }
        let Some(h) = self.agents.get(agent) else {
            return;
        };
        if !matches!(h.session, Session::Open(_)) {
            return;
        }
        let caught_up = self
            .rebuild_targets
            .iter()
            .all(|(g, head)| h.agent.cursor(g).unwrap_or(0) >= *head);
        if !caught_up {
            return;
        }
        let after = h.agent.summary();
        let same = self.record.restarts[n].before == after;
        self.say(format!(
            "demo: {agent} rebuilt {} queue entries from the log after its restart ({})",
            after.len(),
            if same {
                "identical to before"
            } else {
                "they differ"
            }
        ));
        self.record.restarts[n].after = Some(after);
        self.script.rebuilding = None;
        self.rebuild_targets.clear();
    }

    /// Subscribes `agent` to `group` and replays the log after `after` to it.
    fn subscribe(&mut self, agent: &str, group: &str, after: u64, now: Micros) {
        let open = self
            .agents
            .get(agent)
            .is_some_and(|h| matches!(h.session, Session::Open(_)));
        if !open {
            self.pending_subs
                .or_default(agent.to_owned())
                .push((group.to_owned(), after));
            return;
        }
        if self.bus.is_subscribed(agent, group) {
            return;
        }
        self.bus.subscribe(agent, group);
        if agent == plan::REVIEWER && self.plans.a.group_id() == group {
            // The shared reviewer weighs the customer-facing Mission twice (§11.1 weights).
            self.directive(
                agent,
                &Directive::Weight {
                    group: group.to_owned(),
                    weight: 2,
                },
            );
        }
        if self.cfg.delivery == Delivery::Binding {
            self.requests.push(Request::Subscribe {
                agent: agent.to_owned(),
                group: group.to_owned(),
                after,
            });
            return;
        }
        for e in self.bus.replay(group, after) {
            self.deliver_to(agent, group, e, now);
        }
    }

    fn directive(&mut self, agent: &str, d: &Directive) {
        if let Some(h) = self.agents.get_mut(agent) {
            h.agent.directive(d);
        }
    }

    fn deliver_to(&mut self, agent: &str, group: &str, event: Value, now: Micros) {
        let twice = self.bus.duplicate_next();
        if let Some(h) = self.agents.get_mut(agent) {
            if twice {
                h.agent.deliver(group, event.clone(), now);
                self.record.duplicate_deliveries += 1;
            }
            h.agent.deliver(group, event, now);
        }
    }

    /// One durable Event from the authority, as its canonical bytes (every Event the runner
    /// sees, in commit order; others' Events are ignored).
    pub fn deliver(&mut self, bytes: &[u8], now: Micros) -> Result<(), String> {
        self.last_now = self.last_now.max(now);
        // Others' Groups are skipped before the (costlier) signature check.
        let parsed = wasm_core::json::parse(bytes).map_err(|e| e.to_string())?;
        let Some(group) = str_at(&parsed, "/groupId").map(str::to_owned) else {
            return Ok(()); // Organization-scoped: Sessions are answered through outcomes
        };
        if !self.groups.contains(&group) {
            return Ok(());
        }
        let event = match &self.registry {
            Some(r) => {
                verify(bytes, DocumentKind::Event, r)
                    .map_err(|e| format!("an Event failed verification: {e}"))?
                    .document
            }
            None => parsed,
        };
        let ready = self
            .bus
            .append(&group, event)
            .map_err(|e| format!("Group {group}: {e}"))?;
        for e in ready {
            self.fold_view(&group, &e);
            if self.cfg.delivery == Delivery::Bus {
                for agent in self.bus.targets(&group) {
                    self.deliver_to(&agent, &group, e.clone(), now);
                }
            }
            self.introduce(&group, &e, now);
            self.triggers(&group, &e, now);
        }
        Ok(())
    }

    /// One `EVENT` that `agent`'s connection received ([`Delivery::Binding`]): verified
    /// (§6.4) before the Agent sees it, and given to it only for a Group it subscribed to and
    /// while it is reachable (a partitioned Agent's deliveries are lost, as on a cut network).
    pub fn deliver_to_agent(
        &mut self,
        agent: &str,
        bytes: &[u8],
        now: Micros,
    ) -> Result<(), String> {
        self.last_now = self.last_now.max(now);
        let parsed = wasm_core::json::parse(bytes).map_err(|e| e.to_string())?;
        let Some(group) = str_at(&parsed, "/groupId").map(str::to_owned) else {
            return Ok(());
        };
        let before_cut = || {
            let limit = self.cut.get(&(agent.to_owned(), group.clone()));
            u64_at(&parsed, "/sequence").is_some_and(|s| limit.is_some_and(|l| s <= *l))
        };
        if !self.groups.contains(&group)
            || !self.bus.is_subscribed(agent, &group)
            || (self.bus.is_partitioned(agent) && !before_cut())
        {
            return Ok(());
        }
        let event = match &self.registry {
            Some(r) => {
                verify(bytes, DocumentKind::Event, r)
                    .map_err(|e| format!("an Event for {agent} failed verification: {e}"))?
                    .document
            }
            None => parsed,
        };
        self.deliver_to(agent, &group, event, now);
        self.check_rebuilt(agent);
        let notes = self
            .agents
            .get_mut(agent)
            .map(|h| h.agent.take_notes())
            .unwrap_or_default();
        self.log.extend(notes);
        Ok(())
    }

    /// `agent`'s Cursor of `group` (§16): what its connection may `ACK`.
    pub fn cursor(&self, agent: &str, group: &str) -> Option<u64> {
        self.agents.get(agent).and_then(|h| h.agent.cursor(group))
    }

    fn fold_view(&mut self, group: &str, e: &Value) {
        let ready = match self
            .view_inboxes
            .or_default(group.to_owned())
            .accept(e.clone())
        {
            Ok(r) => r,
            Err(_) => return,
        };
        for e in ready {
            if evolve::apply(&mut self.view, &e).is_err() {
                self.view_errors += 1;
            }
        }
    }

    /// Introduces Agents to the Groups they now belong to (their SUBSCRIBE).
    fn introduce(&mut self, group: &str, e: &Value, now: Micros) {
        match str_at(e, "/kind").unwrap_or_default() {
            "mission.created" => {
                if let Some(id) = str_at(e, "/payload/mission/id") {
                    self.proposals.retain(|p| p.mission_id != id);
                }
                for p in [
                    "/payload/mission/coordinatorId",
                    "/payload/mission/owner/id",
                ] {
                    if let Some(n) = str_at(e, p).and_then(name_of).map(str::to_owned)
                        && self.keys.contains_key(&n)
                    {
                        self.subscribe(&n, group, 0, now);
                    }
                }
                if let Some(title) = str_at(e, "/payload/mission/title") {
                    let title = title.to_owned();
                    self.say(format!(
                        "demo: Mission \"{title}\" is active (Group {group})"
                    ));
                }
            }
            "membership.changed" => {
                let status = str_at(e, "/payload/membership/status").unwrap_or_default();
                let floor = u64_at(e, "/payload/membership/visibilityAfterSequence").unwrap_or(0);
                if let Some(n) = str_at(e, "/payload/membership/principal/id")
                    .and_then(name_of)
                    .map(str::to_owned)
                    && status != "ended"
                    && self.agents.contains_key(&n)
                {
                    self.subscribe(&n, group, floor, now);
                }
            }
            "mission.coordinator.assigned" => {
                if let Some(n) = str_at(e, "/payload/coordinatorId")
                    .and_then(name_of)
                    .map(str::to_owned)
                {
                    self.subscribe(&n, group, 0, now);
                }
            }
            _ => {}
        }
    }

    fn work_key<'e>(&self, e: &'e Value) -> Option<&'e str> {
        str_at(e, "/workItemId").or_else(|| str_at(e, "/payload/workItemId"))
    }

    /// The story's failure injections, each at its point.
    fn triggers(&mut self, group: &str, e: &Value, now: Micros) {
        let kind = str_at(e, "/kind").unwrap_or_default();
        let work = self.work_key(e).map(str::to_owned).unwrap_or_default();
        let actor = str_at(e, "/actor/id").unwrap_or_default().to_owned();
        let a = self.plans.a.clone();
        let b = self.plans.b.clone();
        let reviewer = plan::agent_id(plan::REVIEWER);
        // A high-priority arrival (§11.3): while the shared reviewer works on Checkout's
        // review, an urgent hot-fix review (priority 95) arrives.
        if kind == "work.started"
            && work == a.work_id("review")
            && actor == reviewer
            && !self.script.released
        {
            self.script.released = true;
            self.released.insert("hotfix-review".into());
            self.record.released.push(a.work_id("hotfix-review"));
            self.say(
                "demo: injected: an urgent hot-fix review (priority 95) arrives while the \
                 reviewer works on Checkout's review"
                    .into(),
            );
            self.directive(
                plan::COORDINATOR_A,
                &Directive::Release("hotfix-review".into()),
            );
        }
        // Worker restart and queue rebuild: the shared reviewer's process dies mid-review.
        if kind == "work.started"
            && work == b.work_id("review")
            && actor == reviewer
            && !self.script.restarted
        {
            self.script.restarted = true;
            self.timers.push((
                now.plus_micros(self.cfg.pace.restart_after),
                Timer::Restart {
                    agent: plan::REVIEWER.into(),
                },
            ));
        }
        // Coordinator failure: Search's Coordinator is cut off right after its first review.
        if kind == "work.result.accepted"
            && work == b.work_id("requirements")
            && !self.script.crashed
        {
            self.script.crashed = true;
            self.bus.partition(plan::COORDINATOR_B);
            // Over the binding, what the server sent before the cut still arrives.
            for g in self.bus.groups_of(plan::COORDINATOR_B) {
                let head = self.bus.last_sequence(&g);
                self.cut.insert((plan::COORDINATOR_B.to_owned(), g), head);
            }
            self.record.partitions.push(plan::COORDINATOR_B.into());
            self.say(format!(
                "demo: injected: {} fails (partitioned; it can no longer renew its Coordinator \
                 lease)",
                plan::COORDINATOR_B
            ));
        }
        // A temporary Group disconnection: the tester loses Checkout's Group for a while.
        if kind == "work.submitted"
            && work == a.work_id("implementation")
            && !self.script.disconnected
        {
            self.script.disconnected = true;
            if self.cfg.delivery == Delivery::Binding {
                self.requests.push(Request::Disconnect {
                    agent: plan::TESTER.into(),
                    down_for: self.cfg.pace.disconnect,
                });
                // Tenths of a second in integers: a float here would link core's float
                // formatting (about 16 KB) into the static demo's module (issue 30).
                let tenths = (self.cfg.pace.disconnect.0.max(0) + 50_000) / 100_000;
                self.say(format!(
                    "demo: injected: {}'s connection drops (the network stays down {}.{} s)",
                    plan::TESTER,
                    tenths / 10,
                    tenths % 10
                ));
            } else {
                self.bus.disconnect(plan::TESTER, group);
                self.timers.push((
                    now.plus_micros(self.cfg.pace.disconnect),
                    Timer::Reconnect {
                        agent: plan::TESTER.into(),
                        group: group.to_owned(),
                    },
                ));
                self.say(format!(
                    "demo: injected: {} is disconnected from Checkout's Group",
                    plan::TESTER
                ));
            }
        }
        if kind == "mission.coordinator.assigned" && group == b.group_id() {
            let previous = str_at(e, "/payload/previousCoordinatorId").unwrap_or_default();
            let next = str_at(e, "/payload/coordinatorId").unwrap_or_default();
            let epoch = u64_at(e, "/payload/coordinatorEpoch").unwrap_or(0);
            self.record
                .replacements
                .push((b.mission_id(), previous.to_owned(), next.to_owned()));
            self.say(format!(
                "demo: the control plane appointed {next} as Search's Coordinator (epoch {epoch})"
            ));
            self.timers.push((
                now.plus_micros(self.cfg.pace.step),
                Timer::Heal {
                    agent: plan::COORDINATOR_B.into(),
                },
            ));
        }
        match kind {
            "approval.execution.granted" | "mission.approved" | "mission.changes_requested" => {
                let who = str_at(e, "/actor/id").unwrap_or_default().to_owned();
                self.say(format!("demo: {kind} by {who}"));
            }
            "work.result.accepted" => self.say(format!("demo: {kind} {work}")),
            "mission.submitted_for_approval" => {
                let mission = str_at(e, "/payload/missionId").unwrap_or_default();
                let revision = u64_at(e, "/payload/missionRevision").unwrap_or(0);
                self.say(format!("demo: {kind} {mission} (revision {revision})"));
            }
            _ => {}
        }
    }

    /// The control plane (§7.2): a Mission whose Coordinator stopped renewing its lease gets
    /// a replacement with a higher Coordinator Epoch.
    fn control_plane(&mut self, now: Micros) {
        if !self.script.crashed || self.script.replacing {
            return;
        }
        let b = self.plans.b.clone();
        let Some(m) = self.view.missions.get(&b.mission_id()) else {
            return;
        };
        let lapsed = m
            .coordinator_lease_expires_at
            .is_some_and(|t| t.plus_micros(self.cfg.pace.lease_grace) <= now);
        if m.coordinator_id != plan::agent_id(plan::COORDINATOR_B) || !lapsed {
            return;
        }
        self.script.replacing = true;
        let payload = obj(vec![
            (
                "coordinatorId",
                Value::string(plan::agent_id(plan::STANDBY)),
            ),
            (
                "leaseSeconds",
                Value::from(self.cfg.pace.coordinator_lease_seconds),
            ),
        ]);
        let env = Envelope {
            group_id: Some(b.group_id()),
            ..Envelope::default()
        };
        match self
            .control
            .command("mission.assign_coordinator", env, payload, now)
        {
            Ok(out) => {
                self.say(format!(
                    "demo: the control plane sees Search's Coordinator lease lapsed; it appoints {}",
                    plan::STANDBY
                ));
                self.director_command(plan::CONTROL_PLANE, out);
            }
            Err(e) => self.say(format!("demo: cannot sign the replacement: {e}")),
        }
    }

    fn fire_timers(&mut self, now: Micros) {
        let (due, rest): (Vec<_>, Vec<_>) = self.timers.drain(..).partition(|(t, _)| *t <= now);
        self.timers = rest;
        for (_, timer) in due {
            match timer {
                Timer::Reconnect { agent, group } => {
                    let cursor = self
                        .agents
                        .get(&agent)
                        .and_then(|h| h.agent.cursor(&group))
                        .unwrap_or(0);
                    let missed = self.bus.last_sequence(&group).saturating_sub(cursor);
                    self.bus.reconnect(&agent, &group);
                    // Resume from the Cursor; a couple of Events before it come again (§16).
                    let replay = self.bus.replay(&group, cursor.saturating_sub(2));
                    let replayed = replay.len() as u64;
                    for e in replay {
                        self.deliver_to(&agent, &group, e, now);
                    }
                    self.say(format!(
                        "demo: {agent} reconnects from Cursor {cursor}: {missed} missed Events \
                         replayed ({replayed} delivered, duplicates dropped by its inbox)"
                    ));
                    self.record.reconnections.push(Reconnection {
                        agent,
                        group,
                        missed,
                        replayed,
                    });
                }
                Timer::Restart { agent } => self.restart(&agent, now),
                Timer::Heal { agent } => {
                    self.bus.heal(&agent);
                    for id in self.held.remove(&agent).unwrap_or_default() {
                        if let Some(f) = self.flights.get_mut(&id) {
                            f.purpose = Purpose::Late;
                            self.requests.push(Request::Submit {
                                id,
                                from: f.agent.clone(),
                                kind: f.kind.clone(),
                                action_id: f.action_id.clone(),
                                bytes: f.bytes.clone(),
                            });
                        }
                    }
                    for group in self.bus.groups_of(&agent) {
                        let cursor = self
                            .agents
                            .get(&agent)
                            .and_then(|h| h.agent.cursor(&group))
                            .unwrap_or(0);
                        if self.cfg.delivery == Delivery::Binding {
                            // What it lost while cut off comes again from the server's log.
                            self.requests.push(Request::Subscribe {
                                agent: agent.clone(),
                                group,
                                after: cursor,
                            });
                            continue;
                        }
                        for e in self.bus.replay(&group, cursor.saturating_sub(1)) {
                            self.deliver_to(&agent, &group, e, now);
                        }
                    }
                    self.say(format!(
                        "demo: {agent} is reachable again; its Commands signed before the \
                         replacement are delivered late"
                    ));
                }
            }
        }
    }

    /// Kills an Agent's process and starts a fresh one: a new Session (which revokes its
    /// Execution Leases, §11.3) and its queues rebuilt by replaying its Groups (§11.1).
    fn restart(&mut self, agent: &str, _now: Micros) {
        let Some(old) = self.agents.remove(agent) else {
            return;
        };
        let before = old.agent.summary();
        self.record.retired_duplicates += old.agent.duplicates();
        let groups = self.bus.groups_of(agent);
        self.bus.drop_agent(agent);
        let agent_id = plan::agent_id(agent);
        for g in groups {
            let floor = self
                .view
                .membership(&g, &agent_id)
                .map_or(0, |m| m.visibility_after_sequence);
            self.pending_subs
                .or_default(agent.to_owned())
                .push((g, floor));
        }
        self.say(format!(
            "demo: injected: {agent} restarts ({} queue entries in memory are lost)",
            before.len()
        ));
        self.record.restarts.push(Restart {
            agent: agent.to_owned(),
            before,
            after: None,
        });
        self.script.rebuilding = Some(self.record.restarts.len() - 1);
        self.host(agent, old.generation + 1);
    }

    /// The human decisions the demo is waiting for now.
    pub fn gates(&self, now: Micros) -> Vec<HumanGate> {
        let mut out = Vec::new();
        for p in [&self.plans.a, &self.plans.b] {
            let Some(m) = self.view.missions.get(&p.mission_id()) else {
                continue;
            };
            for w in self.view.work_items.values() {
                if w.mission_id != m.id
                    || w.contract.execution_approval != "human_required"
                    || w.status != WorkItemState::Queued
                    || w.assignee_id.is_none()
                {
                    continue;
                }
                let approved = self.view.execution_approvals.values().any(|a| {
                    a.work_item_id == w.id
                        && a.ownership_epoch == w.ownership_epoch
                        && a.expires_at > now
                });
                if !approved {
                    out.push(HumanGate::ExecutionApproval {
                        mission_id: m.id.clone(),
                        group_id: m.group_id.clone(),
                        work_item_id: w.id.clone(),
                        goal: w.contract.goal.clone(),
                        ownership_epoch: w.ownership_epoch,
                        operations: m
                            .permissions
                            .iter()
                            .filter(|o| *o == "deploy")
                            .cloned()
                            .collect(),
                    });
                }
            }
            if m.status == MissionState::AwaitingApproval {
                out.push(HumanGate::MissionApproval {
                    mission_id: m.id.clone(),
                    group_id: m.group_id.clone(),
                    title: m.title.clone(),
                    revision: m.submitted_revision.unwrap_or(m.revision),
                    artifact_hashes: m.submitted_artifact_hashes.clone(),
                });
            }
        }
        out
    }

    /// Whether both root Missions are approved.
    pub fn finished(&self) -> bool {
        [&self.plans.a, &self.plans.b].iter().all(|p| {
            self.view
                .missions
                .get(&p.mission_id())
                .is_some_and(|m| m.status == MissionState::Approved)
        })
    }

    /// When the demo next needs [`Demo::requests`] called without new input.
    pub fn next_wake(&self) -> Option<Micros> {
        let mut t: Vec<Micros> = self.timers.iter().map(|(t, _)| *t).collect();
        for h in self.agents.values() {
            if matches!(h.session, Session::Open(_)) {
                t.extend(h.agent.next_wake());
            }
        }
        if self.script.crashed
            && !self.script.replacing
            && let Some(m) = self.view.missions.get(&self.plans.b.mission_id())
            && let Some(exp) = m.coordinator_lease_expires_at
        {
            t.push(exp.plus_micros(self.cfg.pace.lease_grace));
        }
        t.into_iter().filter(|t| *t > self.last_now).min()
    }
}
