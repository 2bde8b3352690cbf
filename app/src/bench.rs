//! The console benchmark (issue 13, "Evidence required"): one generated history, signed by the
//! harness's Group Authority key, measured with the console's own code — each Event through the
//! six verification stages of §6.4 ([`RegistryCheck`], as the socket client does), folded by
//! [`EventLog`] (the authority's reducer, §5), then every projection built (board, approval
//! inbox, Agents, Conversations, DAG, ledger, timeline) and the DAG laid out
//! ([`LiveLayout`] over [`Sugiyama`]). The native run (`app/examples/bench_console.rs`) and the
//! browser page (feature `bench`, `scripts/bench-console.sh`) call the same functions on the
//! same bytes. A benchmark, not a test: it prints figures and asserts nothing about time.

use crate::fold::EventLog;
use crate::routes::mission::{DagUpdate, apply_dag, next_dag};
use crate::socket::RegistryCheck;
use crate::socket::machine::EventCheck;
use simulation::harness::{Envelope, Harness};
use std::sync::Arc;
use wasm_core::authority::handlers::payload;
use wasm_core::authority::state::State;
use wasm_core::authority::{Authority, AuthorityConfig, CooperationLimits, Micros, Submitted};
use wasm_core::crypto::registry::ValidatedRegistry;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::views::dag::DagView;
use wasm_core::views::layout::{CollapseOptions, LiveLayout, Sugiyama};
use wasm_core::views::ledger::LedgerView;
use wasm_core::views::timeline::Timeline;
use wasm_core::views::{Viewer, Views};

/// The benchmark's Group and Mission.
pub const GROUP: &str = "urn:missionweaveprotocol:group:bench";
pub const MISSION: &str = "urn:missionweaveprotocol:mission:bench";
/// The history's first instant (2030-01-01T00:00:00Z).
const START: i64 = 1_893_456_000;

fn s(v: &str) -> Value {
    Value::string(v.to_owned())
}

/// The Organization of the benchmark: a human MissionOwner and a Coordinator Agent; the keys
/// (the Group Authority's among them) are derived by the harness, so the native run and the
/// browser page resolve the same Registry without shipping it.
pub fn harness() -> Harness {
    let mut h = Harness::new(&[("owner", ActorType::Human), ("coord", ActorType::Agent)]);
    // No cooperation limit stands in the way of a long generated history (§12 limits are
    // the authority's policy; the benchmark measures the console, not the limits).
    let gw = &h.principals["group-gateway"];
    h.authority = Authority::new(AuthorityConfig {
        accepted_by: gw.actor.clone(),
        key_id: gw.key_id.clone(),
        seed: gw.seed.duplicate(),
        limits: CooperationLimits {
            message_rate_per_minute: usize::MAX,
            proposal_rate_per_minute: usize::MAX,
            max_delegation_depth: 3,
            max_queued_work_items: usize::MAX,
            max_active_work_items: usize::MAX,
        },
    });
    h
}

/// The Registry that resolves the history's signing keys.
pub fn registry() -> ValidatedRegistry {
    harness().registry
}

/// The Registry as Registry-fixture JSON (the shape of `GET /api/registry`), which the
/// replay's workers read and validate themselves (`crate::pool`). The harness records no
/// validity history, so the fixture is exact.
pub fn registry_fixture() -> String {
    let reg = registry();
    let bindings = reg
        .bindings()
        .map(|b| {
            let principal = payload(vec![
                ("type", s(b.principal.actor_type.as_str())),
                ("id", s(&b.principal.id.0)),
            ]);
            Value::Object(payload(vec![
                ("keyId", s(&b.key_id)),
                ("principal", Value::Object(principal)),
                ("algorithm", s("Ed25519")),
                ("publicKey", s(&b.public_key_text)),
                ("validFrom", s(b.valid_from.as_str())),
                ("validityHistory", Value::Array(Vec::new())),
            ]))
        })
        .collect();
    json::to_string(&Value::Object(payload(vec![
        ("organizationId", s(reg.organization_id())),
        ("bindings", Value::Array(bindings)),
    ])))
}

struct Gen {
    h: Harness,
    now: Micros,
    out: Vec<Value>,
}

impl Gen {
    fn submit(&mut self, who: &str, kind: &str, env: Envelope, p: Object) -> Result<(), String> {
        self.now = Micros(self.now.0 + 1_000);
        let action = format!("urn:missionweaveprotocol:action:bench-{}", self.out.len());
        let env = Envelope {
            action_id: Some(action),
            ..env
        };
        match self.h.submit(who, kind, &env, p, self.now) {
            Ok(Submitted::Appended(es)) => {
                self.out.extend(es.into_iter().map(|e| e.value));
                Ok(())
            }
            other => Err(format!("{kind} not appended: {other:?}")),
        }
    }

    fn group(&mut self, who: &str, kind: &str, p: Object) -> Result<(), String> {
        let env = self.h.current_envelope(who, Some(GROUP));
        self.submit(who, kind, env, p)
    }
}

/// The `i`-th WorkItem's ID.
pub fn work_item_id(i: usize) -> String {
    format!("urn:missionweaveprotocol:work-item:bench-{i}")
}

/// A history of at least `events` Events: the Coordinator's Agent Card and session, one Mission
/// with `work_items` WorkItems in waves of 40 (each depending on one to three WorkItems of the
/// one or two waves before, a deterministic xorshift), Messages, and last the cancellation of
/// the last WorkItem (which no WorkItem depends on).
pub fn generate(events: usize, work_items: usize) -> Result<Vec<Value>, String> {
    let mut g = Gen {
        h: harness(),
        now: Micros::from_seconds(START),
        out: Vec::with_capacity(events + 8),
    };
    let pk = wasm_core::encoding::b64url_encode(&g.h.principals["coord"].signer.public_key());
    let card = payload(vec![
        ("agentId", s(&g.h.id("coord"))),
        ("version", Value::from(1u64)),
        ("displayName", s("coord")),
        ("owner", s("urn:missionweaveprotocol:human:operations")),
        ("publicKey", s(&pk)),
        ("capabilities", Value::Array(vec![])),
        ("issuedAt", s(&g.now.format())),
        ("signature", s("test")),
    ]);
    g.submit(
        "organization-registry",
        "ext.missionweaveprotocol.registry.agent_card_register",
        Envelope::default(),
        payload(vec![("card", Value::Object(card))]),
    )?;
    let open = payload(vec![("agentId", s(&g.h.id("coord")))]);
    g.submit(
        "group-gateway",
        "ext.missionweaveprotocol.identity.session_open",
        Envelope::default(),
        open,
    )?;
    let budget = |tokens: u64, calls: u64| {
        Value::Object(payload(vec![
            ("modelTokens", Value::from(tokens)),
            ("toolCalls", Value::from(calls)),
        ]))
    };
    let mission = payload(vec![
        ("missionId", s(MISSION)),
        ("groupId", s(GROUP)),
        ("coordinatorId", s(&g.h.id("coord"))),
        ("title", s("Benchmark")),
        ("objective", s("Measure the console")),
        ("definitionOfDone", Value::Array(vec![s("measured")])),
        ("budget", budget(1_000_000_000, 10_000_000)),
        ("deadline", s("2099-01-01T00:00:00Z")),
        ("permissions", Value::Array(vec![s("read")])),
        ("coordinatorLeaseSeconds", Value::from(31_536_000u64)),
    ]);
    let env = Envelope {
        group_id: Some(GROUP.into()),
        ..Envelope::default()
    };
    g.submit("owner", "mission.create", env, mission)?;
    let coord = g.h.id("coord");
    let coord =
        g.h.principals
            .iter()
            .find(|(_, p)| p.actor.id.0 == coord)
            .map(|(n, _)| n.clone())
            .ok_or("no Coordinator")?;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let wave = 40;
    for i in 0..work_items {
        let mut deps: Vec<String> = Vec::new();
        if i >= wave {
            let w = i / wave;
            for _ in 0..(1 + next() % 3) {
                let back = 1 + (next() % 2.min(w as u64)) as usize;
                let j = (w - back) * wave + (next() % wave as u64) as usize;
                let id = work_item_id(j);
                if !deps.contains(&id) {
                    deps.push(id);
                }
            }
        }
        let contract = payload(vec![
            ("goal", s(&format!("Step {i}"))),
            ("deliverables", Value::Array(vec![s("report")])),
            ("acceptanceCriteria", Value::Array(vec![s("reviewed")])),
            ("allowedResources", Value::Array(vec![s("repo:main")])),
            ("deadline", s("2098-01-01T00:00:00Z")),
            ("budget", budget(10, 1)),
        ]);
        let mut p = vec![
            ("workItemId", s(&work_item_id(i))),
            ("contract", Value::Object(contract)),
        ];
        if !deps.is_empty() {
            p.push((
                "dependencyIds",
                Value::Array(deps.iter().map(|d| s(d)).collect()),
            ));
        }
        g.group(&coord, "work.authorize", payload(p))?;
    }
    let mut n = 0usize;
    while g.out.len() + 1 < events {
        let p = payload(vec![
            (
                "messageId",
                s(&format!("urn:missionweaveprotocol:message:bench-{n}")),
            ),
            ("conversationId", s(&format!("{GROUP}:mission"))),
            ("content", s(&format!("note {n}"))),
        ]);
        g.group("owner", "message.post", p)?;
        n += 1;
    }
    // The last Event changes one node and no structure: the live update ([`live_update`]).
    if work_items > 0 {
        let p = payload(vec![
            ("workItemId", s(&work_item_id(work_items - 1))),
            ("reason", s("not needed")),
        ]);
        g.group("owner", "work.cancel", p)?;
    }
    Ok(g.out)
}

/// The history as wire bytes, one Event per line (what the page fetches).
pub fn to_lines(events: &[Value]) -> String {
    let mut text = String::new();
    for e in events {
        text.push_str(&json::to_string(e));
        text.push('\n');
    }
    text
}

/// A replay in progress: parse, verify (six stages) and fold, chunk by chunk.
pub struct Replay {
    pub check: RegistryCheck,
    pub log: EventLog,
    pub verified: usize,
    pub failed: usize,
}

impl Replay {
    pub fn new(registry: ValidatedRegistry) -> Replay {
        Replay {
            check: RegistryCheck {
                registry: Some(registry),
            },
            log: EventLog::new(),
            verified: 0,
            failed: 0,
        }
    }

    /// Parses and verifies one Event's bytes as the socket client does, then queues it.
    pub fn receive(&mut self, line: &str) {
        let ok = json::parse_str(line)
            .ok()
            .filter(|v| self.check.check(v).is_ok());
        match ok {
            Some(v) => {
                self.verified += 1;
                self.log.push(v);
            }
            None => self.failed += 1,
        }
    }

    /// Folds up to `max` queued Events.
    pub fn fold(&mut self, max: usize) -> usize {
        self.log.fold(max)
    }
}

/// What the projections hold (printed, so the work cannot be optimised away).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Projected {
    pub board_cards: usize,
    pub inbox_items: usize,
    pub conversations: usize,
    pub dag_nodes: usize,
    pub ledger_accounts: usize,
    pub timeline_entries: usize,
}

/// Every projection of the folded state as the Organization sees it at `now`.
pub fn project(log: &EventLog, now: Micros) -> Projected {
    let state = log.state();
    let views = Views::build(state, &Viewer::Organization, now);
    let dag = DagView::build(state, MISSION, now);
    let ledger = LedgerView::build(state, MISSION, log.folded_events(), &[]);
    let timeline = Timeline::build(log.folded_events());
    Projected {
        board_cards: views.board.cards().count(),
        inbox_items: views.approvals.items.len(),
        conversations: views.conversations.len(),
        dag_nodes: dag.map_or(0, |d| d.nodes.len()),
        ledger_accounts: ledger.map_or(0, |l| l.accounts.len()),
        timeline_entries: timeline.entries.len(),
    }
}

/// The Mission's DAG laid out as the Mission view does it (collapse, Sugiyama).
pub fn layout(log: &EventLog, now: Micros) -> Result<LiveLayout<Sugiyama>, String> {
    let dag = DagView::build(log.state(), MISSION, now).ok_or("no benchmark Mission")?;
    LiveLayout::new(Sugiyama::default(), CollapseOptions::default(), dag).map_err(|e| e.to_string())
}

/// One live node update as the console applies it: the next Event (a WorkItem's
/// cancellation) is folded, the new state published as the views' snapshot (a copy of the
/// persistent State: `publish` in state.rs), the DAG rebuilt from the snapshot and patched into
/// `live` node by node ([`apply_dag`]: no new layout when the structure is unchanged). The DAG
/// is rebuilt from the one drawn, built from `before` (the snapshot it was drawn from, which
/// shares all but the changed entries with the new one), recomputing only the nodes whose
/// inputs changed ([`next_dag`]). Returns what to draw again (the changed nodes, or
/// everything) and the published snapshot.
pub fn live_update(
    log: &mut EventLog,
    before: &State,
    live: &mut LiveLayout<Sugiyama>,
    event: Value,
    now: Micros,
) -> Result<(DagUpdate, Arc<State>), String> {
    log.push(event);
    log.fold(1);
    let published = Arc::new(log.state().clone());
    let dag = next_dag(Some((live.dag(), before)), &published, MISSION, now)
        .ok_or("no benchmark Mission")?;
    Ok((apply_dag(live, dag)?, published))
}

/// Time travel as the console does it ([`Travel`]: the merged log replayed by the reducer,
/// checkpoints every `CHECKPOINT_EVERY` Events), then the Mission's DAG rebuilt from the one
/// drawn live ([`next_dag`]), once to the Event before the last and once a further step back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TravelFigures {
    /// Picking the Event before the last: the first pick replays the log up to it.
    pub first_pick_ms: f64,
    /// The DAG as of then, rebuilt from the live one, and a full build of the same for scale.
    pub first_dag_ms: f64,
    pub first_full_ms: f64,
    /// One Event further back (from the nearest checkpoint).
    pub step_pick_ms: f64,
    pub step_dag_ms: f64,
    pub step_full_ms: f64,
    /// The Events the travel log applied in all.
    pub applied: usize,
}

impl TravelFigures {
    /// The figures as the benchmark prints them after `BENCH native ` or `BENCH wasm `.
    pub fn line(&self) -> String {
        format!(
            "time travel: to the Event before the last {:.0} ms (the log replayed), its DAG rebuilt from the live one {:.2} ms (a full build {:.2} ms); one Event further back {:.2} ms, its DAG {:.2} ms (a full build {:.2} ms); {} Events applied",
            self.first_pick_ms,
            self.first_dag_ms,
            self.first_full_ms,
            self.step_pick_ms,
            self.step_dag_ms,
            self.step_full_ms,
            self.applied
        )
    }
}

/// Runs [`TravelFigures`] with `clock` (milliseconds: `Instant` natively, `performance.now()`
/// on the page); the rebuilt DAGs are checked equal to full builds.
pub fn travel(
    log: &EventLog,
    drawn: &DagView,
    drawn_from: &State,
    now: Micros,
    clock: impl Fn() -> f64,
) -> Result<TravelFigures, String> {
    let mut travel = crate::fold::Travel::new(log);
    let n = travel.len();
    let mut f = TravelFigures::default();
    let mut step = |n: usize,
                    prev: (&DagView, &State),
                    pick: &mut f64,
                    dag_ms: &mut f64,
                    full_ms: &mut f64|
     -> Result<(DagView, State), String> {
        let t = clock();
        let state = travel.state_at(n).map_err(|e| e.to_string())?.clone();
        *pick = clock() - t;
        let t = clock();
        let dag = next_dag(Some(prev), &state, MISSION, now).ok_or("no benchmark Mission")?;
        *dag_ms = clock() - t;
        let t = clock();
        let full = DagView::build(&state, MISSION, now);
        *full_ms = clock() - t;
        if full.as_ref() != Some(&dag) {
            return Err("the DAG rebuilt on time travel differs from a full build".into());
        }
        Ok((dag, state))
    };
    let (dag, state) = step(
        n.saturating_sub(1),
        (drawn, drawn_from),
        &mut f.first_pick_ms,
        &mut f.first_dag_ms,
        &mut f.first_full_ms,
    )?;
    step(
        n.saturating_sub(2),
        (&dag, &state),
        &mut f.step_pick_ms,
        &mut f.step_dag_ms,
        &mut f.step_full_ms,
    )?;
    f.applied = travel.applied();
    Ok(f)
}
