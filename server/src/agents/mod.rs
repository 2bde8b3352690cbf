//! The §22 demo in the server process: `wasm_core::agents`' simulated Agents and director,
//! driven in real time against the embedded authority.
//!
//! The Agents are sans-IO; this runner only carries their Commands to the authority and the
//! authority's durable Events back, through a small [`Transport`]. Today that is the
//! in-process [`LocalTransport`] (the `AuthorityHandle` for Commands and the runtime's
//! [`EventHook`](crate::runtime::EventHook) for Events); the WebSocket binding's client will
//! implement the same trait, and nothing else changes. Sessions are opened the way the binding's
//! HELLO will open them: the gateway service signs `ext.missionweaveprotocol.identity.session_open`.
//!
//! Progress goes to stdout as `demo: …` lines; at each human decision the demo pauses and says
//! what to run (`weave-console dev approve …`, signed as the development human).

use crate::devorg::DevOrganization;
use crate::runtime::{AuthorityHandle, Reply};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use wasm_core::agents::director::{Demo, DemoConfig, HumanGate, Request};
use wasm_core::agents::{Outcome, Pace, plan};
use wasm_core::authority::Micros;
use wasm_core::authority::harness::{Envelope, signed_command};
use wasm_core::crypto::{SecretSeed, ValidatedRegistry, ed25519};
use wasm_core::json::{self, Value};
use wasm_core::model::common::Actor;
use wasm_core::model::error::ErrorCode;

/// How the runner reaches the authority: Commands in, outcomes out. Events arrive separately,
/// as a stream of canonical Event bytes in commit order.
pub trait Transport: Clone + Send + Sync + 'static {
    /// Submits signed Command bytes; resolves with the outcome once it is durable.
    fn submit(&self, bytes: Vec<u8>) -> impl Future<Output = Outcome> + Send;
}

/// The in-process transport: the authority's bounded queue.
#[derive(Clone)]
pub struct LocalTransport {
    pub handle: AuthorityHandle,
}

impl Transport for LocalTransport {
    async fn submit(&self, bytes: Vec<u8>) -> Outcome {
        // A full queue asks for a retry (§17.3): the demo waits and resends the same bytes,
        // which is idempotent (§15.1).
        for _ in 0..50 {
            match self.handle.submit(bytes.clone()).await {
                Reply::Done(body) => return answer(&body),
                Reply::Refused(e) if e.code == ErrorCode::Backpressure => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Reply::Refused(e) => {
                    return Outcome::Rejected {
                        code: e.code,
                        message: e.message,
                    };
                }
            }
        }
        Outcome::Rejected {
            code: ErrorCode::Backpressure,
            message: "the authority stayed busy".into(),
        }
    }
}

/// The outcome in an answer body `{"status": "accepted" | "duplicate", "events": […]}`.
pub fn answer(body: &str) -> Outcome {
    let Ok(v) = json::parse(body.as_bytes()) else {
        return Outcome::Rejected {
            code: ErrorCode::InternalError,
            message: "an unreadable answer".into(),
        };
    };
    let events = match v.pointer("/events") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    match v.pointer("/status").and_then(Value::as_str) {
        Some("duplicate") => Outcome::Duplicate(events),
        _ => Outcome::Appended(events),
    }
}

/// What the demo needs from the development Organization: its principals' keys (copies, in
/// `SecretSeed`), the gateway service that opens Sessions, and the Registry to verify Events.
pub struct DemoKeys {
    seeds: BTreeMap<String, SecretSeed>,
    gateway: (Actor, String, ed25519::Signer),
    registry: ValidatedRegistry,
}

impl std::fmt::Debug for DemoKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoKeys")
            .field("principals", &self.seeds.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl DemoKeys {
    /// The demo's keys, or why the Organization cannot run it (e.g. a data directory created
    /// before the demo's principals existed).
    pub fn from_dev(org: &DevOrganization) -> Result<DemoKeys, String> {
        let mut seeds = BTreeMap::new();
        for (name, t) in plan::CAST {
            let p = org.principal(name).ok_or_else(|| {
                format!(
                    "the development Organization has no principal `{name}` (it predates the \
                     demo); start with a fresh --data directory"
                )
            })?;
            if p.actor.actor_type != *t {
                return Err(format!("`{name}` is a {}, not a {t}", p.actor.actor_type));
            }
            seeds.insert((*name).to_owned(), p.seed.duplicate());
        }
        let gw = org
            .principal("group-gateway")
            .ok_or("the development Organization has no group-gateway service")?;
        Ok(DemoKeys {
            seeds,
            gateway: (
                gw.actor.clone(),
                gw.key_id.clone(),
                ed25519::Signer::from_seed(&gw.seed),
            ),
            registry: org.registry.clone(),
        })
    }

    /// `ext.missionweaveprotocol.identity.session_open` for `agent_id`, signed by the gateway
    /// service (what the binding's HELLO does, payloads.md §6.34).
    fn session_open(&self, agent_id: &str, action: &str, now: Micros) -> Result<Vec<u8>, String> {
        let mut payload = wasm_core::json::Object::new();
        payload.insert("agentId", Value::string(agent_id.to_owned()));
        let (actor, key_id, signer) = &self.gateway;
        signed_command(
            actor,
            key_id,
            signer,
            action,
            "ext.missionweaveprotocol.identity.session_open",
            &Envelope::default(),
            payload,
            now,
        )
        .map_err(|e| e.to_string())
    }
}

/// How a person makes the decision a gate waits for (the `dev approve` command signs as the
/// development human, the MissionOwner).
pub fn hint(gate: &HumanGate) -> String {
    match gate {
        HumanGate::ExecutionApproval {
            work_item_id,
            group_id,
            ownership_epoch,
            ..
        } => format!(
            "run `weave-console dev approve execution --work-item {work_item_id}` \
             (Group {group_id}, Ownership Epoch {ownership_epoch})"
        ),
        HumanGate::MissionApproval {
            mission_id,
            group_id,
            revision,
            ..
        } => format!(
            "run `weave-console dev approve mission --mission {mission_id}` to approve, or add \
             `--request-changes \"…\"` (Group {group_id}, revision {revision})"
        ),
    }
}

/// A run tag from the start time (base 36 seconds): every demo run has its own identifiers,
/// so the demo can run again on a store that already holds an earlier run.
pub fn run_tag(now: Micros) -> String {
    let mut n = u64::try_from(now.0 / Micros::PER_SECOND).unwrap_or(0);
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    format!("r{}", String::from_utf8_lossy(&out))
}

/// How a demo run is paced and watched.
pub struct RunOptions {
    pub pace: Pace,
    /// Every this many Event deliveries, one is made twice.
    pub duplicate_every: u64,
    /// Where each human gate is announced (besides stdout), e.g. to a test playing the human.
    pub gates: Option<mpsc::UnboundedSender<HumanGate>>,
    /// When the server started (for the time to the first human gate).
    pub started: Instant,
}

impl RunOptions {
    pub fn live(started: Instant) -> RunOptions {
        RunOptions {
            pace: Pace::default(),
            duplicate_every: 7,
            gates: None,
            started,
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct RunResult {
    pub finished: bool,
    pub record: wasm_core::agents::director::Record,
    /// Every Command the runner submitted, and Events the demo was given.
    pub submitted: u64,
    pub delivered: u64,
    /// Duplicate deliveries the Agents' inboxes dropped.
    pub duplicates_dropped: u64,
    pub view_errors: u64,
}

/// Runs the demo until both Missions are approved (or the Event stream ends). `events` carries
/// every durable Event's bytes in commit order.
pub async fn run<T: Transport>(
    transport: T,
    mut events: mpsc::UnboundedReceiver<Vec<u8>>,
    keys: DemoKeys,
    opts: RunOptions,
) -> Result<RunResult, String> {
    let now = crate::runtime::now;
    let start = now();
    let run = run_tag(start);
    let cfg = DemoConfig {
        run: run.clone(),
        start,
        pace: opts.pace,
        duplicate_every: opts.duplicate_every,
    };
    let seed_of = |name: &str| keys.seeds.get(name).map(SecretSeed::duplicate);
    let mut demo = Demo::new(cfg, &seed_of, Some(keys.registry.clone()))?;
    let (mut submitted, mut delivered) = (0u64, 0u64);
    println!(
        "demo: run {run}: two Missions (Checkout, Search) with a shared reviewer; --no-demo \
         turns this off"
    );
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(u64, Outcome)>();
    let mut gates_shown = 0usize;
    let mut sessions = 0u64;
    loop {
        for r in demo.requests(now()) {
            let (id, bytes) = match r {
                Request::OpenSession { id, agent_id, .. } => {
                    sessions += 1;
                    let action =
                        format!("urn:missionweaveprotocol:action:demo-{run}-session-{sessions}");
                    match keys.session_open(&agent_id, &action, now()) {
                        Ok(b) => (id, b),
                        Err(e) => {
                            println!("demo: cannot open a Session for {agent_id}: {e}");
                            continue;
                        }
                    }
                }
                Request::Submit { id, bytes, .. } => (id, bytes),
            };
            submitted += 1;
            let t = transport.clone();
            let tx = done_tx.clone();
            tokio::spawn(async move {
                let o = t.submit(bytes).await;
                let _ = tx.send((id, o));
            });
        }
        for line in demo.take_log() {
            if line.starts_with("demo: ") {
                println!("{line}");
            } else {
                println!("demo: {line}");
            }
        }
        let gates = demo.record().gates.clone();
        for g in &gates[gates_shown..] {
            if gates_shown == 0 {
                println!(
                    "demo: first human gate reached {:.1} s after the server started",
                    opts.started.elapsed().as_secs_f64()
                );
            }
            println!("demo:   → {}", hint(g));
            if let Some(tx) = &opts.gates {
                let _ = tx.send(g.clone());
            }
            gates_shown += 1;
        }
        let finished = demo.finished();
        if finished {
            println!("demo: both Missions are approved; the demo is over");
        }
        if finished {
            return Ok(RunResult {
                finished,
                record: demo.record().clone(),
                submitted,
                delivered,
                duplicates_dropped: demo.duplicates_dropped(),
                view_errors: demo.view_errors(),
            });
        }
        let wait = demo
            .next_wake()
            .map(|t| Duration::from_micros(u64::try_from(t.0 - now().0).unwrap_or(0)))
            .unwrap_or(Duration::from_secs(5));
        tokio::select! {
            e = events.recv() => {
                let Some(bytes) = e else {
                    return Ok(RunResult {
                        finished: false,
                        record: demo.record().clone(),
                        submitted,
                        delivered,
                        duplicates_dropped: demo.duplicates_dropped(),
                        view_errors: demo.view_errors(),
                    });
                };
                deliver(&mut demo, &bytes);
                delivered += 1;
                while let Ok(bytes) = events.try_recv() {
                    deliver(&mut demo, &bytes);
                    delivered += 1;
                }
            }
            d = done_rx.recv() => {
                if let Some((id, o)) = d {
                    demo.outcome(id, o, now());
                }
            }
            () = tokio::time::sleep(wait) => {}
        }
    }
}

fn deliver(demo: &mut Demo, bytes: &[u8]) {
    if let Err(e) = demo.deliver(bytes, crate::runtime::now()) {
        println!("demo: {e}");
    }
}

/// Starts the authority with the demo following its log, and the demo on `runtime`; without
/// a development Organization the demo says why it is off.
pub fn start(
    data: &std::path::Path,
    org: crate::devorg::OrgSetup,
    runtime: &tokio::runtime::Runtime,
    started: Instant,
    publisher: Option<std::sync::Arc<dyn crate::runtime::Publish>>,
) -> Result<AuthorityHandle, String> {
    let plain = |org| {
        crate::runtime::start_full(
            data,
            org,
            Box::new(crate::runtime::now),
            publisher.clone(),
            None,
        )
    };
    let keys = match org.dev.as_ref().map(DemoKeys::from_dev) {
        Some(Ok(k)) => k,
        Some(Err(e)) => {
            println!("demo: off: {e}");
            return plain(org);
        }
        None => {
            println!("demo: off: it runs on the development Organization only");
            return plain(org);
        }
    };
    let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let hook: crate::runtime::EventHook = Box::new(move |batch| {
        // Once the demo is over nobody listens: nothing more is queued.
        if !tx.is_closed() {
            for e in batch {
                let _ = tx.send(e);
            }
        }
    });
    let handle = crate::runtime::start_full(
        data,
        org,
        Box::new(crate::runtime::now),
        publisher,
        Some(hook),
    )?;
    let transport = LocalTransport {
        handle: handle.clone(),
    };
    runtime.spawn(async move {
        match run(transport, rx, keys, RunOptions::live(started)).await {
            Ok(r) => println!(
                "demo: {}: {} Commands submitted, {} Events followed, {} deliveries duplicated \
                 on purpose and {} duplicates dropped by the Agents' inboxes, {} views out of step",
                if r.finished { "finished" } else { "stopped" },
                r.submitted,
                r.delivered,
                r.record.duplicate_deliveries,
                r.duplicates_dropped,
                r.view_errors
            ),
            Err(e) => println!("demo: cannot start: {e}"),
        }
    });
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_core::json::Object;

    #[test]
    fn the_development_organization_holds_the_demo_cast() {
        for (name, t) in plan::CAST {
            assert!(
                crate::devorg::PRINCIPALS.contains(&(*name, *t)),
                "{name} ({t}) is missing from devorg::PRINCIPALS"
            );
        }
    }

    /// The human MissionOwner's answer to a gate: the execution approval; for Checkout's
    /// first submission a change request, then approvals.
    fn decision(gate: &HumanGate, changes_requested: bool) -> (String, &'static str, Object) {
        let mut p = Object::new();
        match gate {
            HumanGate::ExecutionApproval {
                group_id,
                work_item_id,
                ownership_epoch,
                operations,
                ..
            } => {
                p.insert(
                    "approvalId",
                    Value::string(format!("{work_item_id}:approval:{ownership_epoch}")),
                );
                p.insert("workItemId", Value::string(work_item_id.clone()));
                p.insert("ownershipEpoch", Value::from(*ownership_epoch));
                p.insert(
                    "operations",
                    Value::Array(
                        operations
                            .iter()
                            .map(|o| Value::string(o.clone()))
                            .collect(),
                    ),
                );
                (group_id.clone(), "approval.grant_execution", p)
            }
            HumanGate::MissionApproval {
                mission_id,
                group_id,
                revision,
                artifact_hashes,
                ..
            } => {
                p.insert("missionRevision", Value::from(*revision));
                if mission_id.ends_with(":checkout:mission") && !changes_requested {
                    p.insert(
                        "feedback",
                        Value::string("Add a rollback plan to the release notes"),
                    );
                    return (group_id.clone(), "mission.request_changes", p);
                }
                p.insert(
                    "approvalId",
                    Value::string(format!("{mission_id}:approval:{revision}")),
                );
                p.insert(
                    "artifactHashes",
                    Value::Array(
                        artifact_hashes
                            .iter()
                            .map(|h| Value::string(h.clone()))
                            .collect(),
                    ),
                );
                p.insert("acceptancePolicyVersion", Value::string("1.0.0"));
                (group_id.clone(), "mission.approve", p)
            }
        }
    }

    /// The demo in the server: the real runtime (store, verify stage, owner thread, Event
    /// hook), the in-process transport, real time at a brisk pace, and a test human who answers
    /// each gate through the same queue as any client. Asserts outcomes, not durations (the
    /// timeout is a safety net).
    #[test]
    fn the_demo_runs_in_the_server_through_every_human_gate() {
        let dir = std::env::temp_dir().join(format!("weave-agents-demo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let org = crate::devorg::load_or_create(&dir)
            .and_then(|o| o.setup())
            .expect("development Organization");
        let dev = org.dev.as_ref().expect("dev");
        let keys = DemoKeys::from_dev(dev).expect("the demo's keys");
        let human = dev.principal(plan::HUMAN).expect("the human");
        let (actor, key_id) = (human.actor.clone(), human.key_id.clone());
        let signer = ed25519::Signer::from_seed(&human.seed);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (tx, rx) = mpsc::unbounded_channel();
        let hook: crate::runtime::EventHook = Box::new(move |batch| {
            for e in batch {
                let _ = tx.send(e);
            }
        });
        let handle =
            crate::runtime::start_with(&dir, org, Box::new(crate::runtime::now), Some(hook))
                .expect("authority");
        let (gtx, mut grx) = mpsc::unbounded_channel();
        let opts = RunOptions {
            pace: Pace::brisk(),
            duplicate_every: 5,
            gates: Some(gtx),
            started: Instant::now(),
        };
        let transport = LocalTransport {
            handle: handle.clone(),
        };
        let (result, decisions) = rt.block_on(async {
            let demo = tokio::spawn(run(transport, rx, keys, opts));
            let mut decisions: Vec<&'static str> = Vec::new();
            let human = async {
                while let Some(gate) = grx.recv().await {
                    let changes = decisions.contains(&"mission.request_changes");
                    let (group, kind, payload) = decision(&gate, changes);
                    let env = Envelope {
                        group_id: Some(group),
                        membership_epoch: Some(1),
                        ..Envelope::default()
                    };
                    let action = format!(
                        "urn:missionweaveprotocol:action:test-human-{}",
                        decisions.len()
                    );
                    let bytes = signed_command(
                        &actor,
                        &key_id,
                        &signer,
                        &action,
                        kind,
                        &env,
                        payload,
                        crate::runtime::now(),
                    )
                    .expect("signed");
                    match handle.submit(bytes).await {
                        Reply::Done(_) => decisions.push(kind),
                        Reply::Refused(e) => panic!("{kind} refused: {} {}", e.code, e.message),
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(600), human)
                .await
                .expect("the demo finished within the safety timeout");
            let result = demo.await.expect("joined").expect("started");
            (result, decisions)
        });
        let _ = std::fs::remove_dir_all(&dir);
        assert!(result.finished, "{result:?}");
        assert!(
            result.submitted > 100 && result.delivered > 100,
            "{result:?}"
        );
        let count = |k: &str| decisions.iter().filter(|d| **d == k).count();
        assert_eq!(count("approval.grant_execution"), 1, "{decisions:?}");
        assert_eq!(count("mission.request_changes"), 1, "{decisions:?}");
        assert_eq!(count("mission.approve"), 2, "{decisions:?}");
        let rec = &result.record;
        assert_eq!(rec.replacements.len(), 1);
        assert!(!rec.late_commands.is_empty());
        assert_eq!(rec.restarts.len(), 1);
        assert_eq!(
            rec.restarts[0].after.as_ref(),
            Some(&rec.restarts[0].before)
        );
        assert_eq!(rec.reconnections.len(), 1);
        assert_eq!(
            rec.retransmissions,
            [(plan::TESTER.to_owned(), "work.submit".to_owned(), true)]
        );
        assert!(rec.duplicate_deliveries > 0);
        assert!(result.duplicates_dropped >= rec.duplicate_deliveries);
        assert!(
            rec.rejections
                .iter()
                .any(|r| r.agent == plan::DEVELOPER_B && r.code == ErrorCode::WorkLeaseExpired),
            "{:?}",
            rec.rejections
        );
        for r in &rec.rejections {
            let expected = r.agent == plan::COORDINATOR_B
                || (r.agent == plan::DEVELOPER_B && r.code == ErrorCode::WorkLeaseExpired)
                // Real time: a Coordinator may decide on a view one Event behind (§15.3).
                || r.code == ErrorCode::RevisionConflict;
            assert!(expected, "unexpected rejection {r:?}");
        }
        assert_eq!(result.view_errors, 0);
    }

    #[test]
    fn answers_and_run_tags() {
        assert!(matches!(
            answer(r#"{"status":"duplicate","events":[]}"#),
            Outcome::Duplicate(e) if e.is_empty()
        ));
        assert!(matches!(
            answer(r#"{"status":"accepted","events":[{"kind":"x"}]}"#),
            Outcome::Appended(e) if e.len() == 1
        ));
        assert!(matches!(answer("nope"), Outcome::Rejected { .. }));
        assert_eq!(run_tag(Micros::from_seconds(36 * 36 + 1)), "r101");
    }
}
