//! The §22 demo in the server process: `simulation::agents`' simulated Agents and director,
//! driven in real time, with every Agent speaking the WebSocket binding of this very server
//! like any external Agent (`link`): its own `HELLO` (Session Epochs), `SUBSCRIBE` to its
//! Groups, signed `COMMAND`s, `EVENT`s back, `ACK`s, and reconnection with resume from the
//! ACKed Cursor when its socket drops.
//!
//! The Agents are sans-IO (`Delivery::Binding`); this runner carries their requests to their
//! sockets and what the sockets receive back to them. The director (the operator's script and
//! the human gates) follows the authority's commit stream in process (the runtime's
//! [`EventHook`](crate::runtime::EventHook)); its own Commands (the human MissionOwner's
//! opening request, the control plane's replacement Coordinator) go through
//! `POST /api/commands` like `weave-console dev …`.
//!
//! Progress goes to stdout as `demo: …` lines; at each human decision the demo pauses and says
//! what to run (`weave-console dev approve …`, signed as the development human).

pub mod cast;
pub mod link;

use crate::artifacts::ArtifactStore;
use crate::devorg::DevOrganization;
use crate::endpoint::Endpoint;
use crate::runtime::AuthorityHandle;
use link::{FromLink, LinkSpec, Report, ToLink};
use simulation::agents::director::{Delivery, Demo, DemoConfig, HumanGate, Opening, Request};
use simulation::agents::{Outcome, Pace, plan};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use wasm_core::authority::Micros;
use wasm_core::crypto::{SecretSeed, ValidatedRegistry, ed25519};
use wasm_core::json::{self, Value};
use wasm_core::model::error::ErrorCode;

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

/// A director's Command (signed by the human or the control plane) over
/// `POST /api/commands`; `BACKPRESSURE` is retried with the same bytes (idempotent, §15.1).
async fn submit_http(ep: &Endpoint, bytes: &[u8]) -> Outcome {
    for _ in 0..50 {
        let (status, body) = match ep.http("POST", "/api/commands", bytes).await {
            Ok(r) => r,
            Err(e) => {
                return Outcome::Rejected {
                    code: ErrorCode::InternalError,
                    message: e,
                };
            }
        };
        if status == 200 {
            return answer(&String::from_utf8_lossy(&body));
        }
        let v = json::parse(&body).ok();
        let at = |p: &str| v.as_ref().and_then(|v| v.pointer(p)?.as_str());
        let code = at("/code")
            .and_then(ErrorCode::from_wire)
            .unwrap_or(ErrorCode::InternalError);
        if code != ErrorCode::Backpressure {
            return Outcome::Rejected {
                code,
                message: at("/message").unwrap_or_default().to_owned(),
            };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Outcome::Rejected {
        code: ErrorCode::Backpressure,
        message: "the authority stayed busy".into(),
    }
}

/// One of the demo's principals: its Principal ID, Registry key ID and seed.
struct Member {
    principal_id: String,
    key_id: String,
    seed: SecretSeed,
}

/// What the demo needs from the development Organization: its principals' keys (copies, in
/// `SecretSeed`) and the Registry to verify Events.
pub struct DemoKeys {
    members: BTreeMap<String, Member>,
    registry: ValidatedRegistry,
    /// Who creates the two root Missions: the cast's human (development) or a human of the
    /// Organization in the console ([`cast`]).
    opening: Opening,
}

impl std::fmt::Debug for DemoKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoKeys")
            .field("principals", &self.members.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl DemoKeys {
    /// The demo's keys, or why the Organization cannot run it (e.g. a data directory created
    /// before the demo's principals existed).
    pub fn from_dev(org: &DevOrganization) -> Result<DemoKeys, String> {
        let mut members = BTreeMap::new();
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
            members.insert(
                (*name).to_owned(),
                Member {
                    principal_id: p.actor.id.0.clone(),
                    key_id: p.key_id.clone(),
                    seed: p.seed.duplicate(),
                },
            );
        }
        Ok(DemoKeys {
            members,
            registry: org.registry.clone(),
            opening: Opening::CastHuman,
        })
    }
}

/// How a person makes the decision a gate waits for (the `dev approve` command signs as the
/// development human, the MissionOwner; in an Organization of one's own, the MissionOwner
/// decides in the console).
pub fn hint(gate: &HumanGate, opening: Opening) -> String {
    if opening == Opening::Proposed {
        return format!(
            "{}: the MissionOwner decides it in the console (Approvals)",
            gate.describe()
        );
    }
    match gate {
        HumanGate::ExecutionApproval {
            work_item_id,
            group_id,
            ownership_epoch,
            operations,
            ..
        } => format!(
            "run `weave-console dev approve execution --work-item {work_item_id} \
             --operations {}` (Group {group_id}, Ownership Epoch {ownership_epoch})",
            operations.join(",")
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
    /// Where the Workers' Artifact contents are stored (none: they are dropped).
    pub artifacts: Option<ArtifactStore>,
    /// Where the Missions proposed to a human are published (`GET /api/demo/proposals`).
    pub proposals: cast::Proposals,
}

impl RunOptions {
    pub fn live(started: Instant, artifacts: ArtifactStore) -> RunOptions {
        RunOptions {
            pace: Pace::default(),
            duplicate_every: 7,
            gates: None,
            started,
            artifacts: Some(artifacts),
            proposals: cast::Proposals::default(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct RunResult {
    pub finished: bool,
    pub record: simulation::agents::director::Record,
    /// Every Command the runner submitted, and Events the director followed.
    pub submitted: u64,
    pub delivered: u64,
    /// `EVENT` frames the Agents' sockets received.
    pub received: u64,
    /// Links that came back after a drop.
    pub reconnections: u64,
    /// Duplicate deliveries the Agents' inboxes dropped.
    pub duplicates_dropped: u64,
    pub view_errors: u64,
    /// Artifact contents written to the store.
    pub artifacts_stored: u64,
}

impl RunResult {
    fn finish(mut self, finished: bool, demo: &Demo) -> RunResult {
        self.finished = finished;
        self.record = demo.record().clone();
        self.duplicates_dropped = demo.duplicates_dropped();
        self.view_errors = demo.view_errors();
        self
    }
}

/// Where the demo's Agents connect: the server's own `/ws` (loopback; TLS when the server
/// uses TLS, pinning its own leaf certificate: a CA-issued `--tls-cert` names the public host,
/// not the loopback address, `gateway::client::tls_pinned`).
pub fn endpoint_for(
    local: std::net::SocketAddr,
    root: Option<rustls::pki_types::CertificateDer<'static>>,
) -> Result<Endpoint, String> {
    let ip = match local.ip() {
        std::net::IpAddr::V4(a) if a.is_unspecified() => {
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        }
        std::net::IpAddr::V6(a) if a.is_unspecified() => {
            std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
        }
        ip => ip,
    };
    let addr = std::net::SocketAddr::new(ip, local.port());
    match root {
        Some(leaf) => Endpoint::with_config(
            &format!("wss://{addr}/ws"),
            Some(crate::gateway::client::tls_pinned(leaf)?),
        ),
        None => Endpoint::with_config(&format!("ws://{addr}/ws"), None),
    }
}

/// The runner's side of one Agent's link.
struct Linked {
    link: u64,
    tx: mpsc::UnboundedSender<ToLink>,
    /// Group → the Cursor last ACKed (or the subscription point).
    acked: BTreeMap<String, u64>,
}

/// Runs the demo until both Missions are approved (or the director's Event stream ends).
/// `events` carries every durable Event's bytes in commit order (the director's feed); the
/// Agents connect to `ep`.
pub async fn run(
    ep: Endpoint,
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
        delivery: Delivery::Binding,
        opening: keys.opening,
    };
    let seed_of = |name: &str| keys.members.get(name).map(|m| m.seed.duplicate());
    let mut demo = Demo::new(cfg, &seed_of, Some(keys.registry.clone()))?;
    let mut result = RunResult::default();
    println!(
        "demo: run {run}: two Missions (Checkout, Search) with a shared reviewer; every Agent \
         connects to {} like any external Agent; --no-demo turns this off",
        ep.ws
    );
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(u64, Outcome)>();
    let (report_tx, mut report_rx) = mpsc::unbounded_channel::<Report>();
    let mut links: BTreeMap<String, Linked> = BTreeMap::new();
    let mut next_link = 0u64;
    let mut gates_shown = 0usize;
    let mut ack_tick = tokio::time::interval(Duration::from_millis(300));
    loop {
        let requests = demo.requests(now());
        // Content before the Commands that name it: a published manifest's hash resolves.
        for a in demo.take_artifacts() {
            let Some(store) = opts.artifacts.clone() else {
                continue;
            };
            let stored = tokio::task::spawn_blocking(move || {
                store.put(&a.content_hash, &a.media_type, &a.bytes)
            })
            .await;
            match stored {
                Ok(Ok(())) => result.artifacts_stored += 1,
                Ok(Err(e)) => println!("demo: an Artifact was not stored: {e}"),
                Err(e) => println!("demo: an Artifact was not stored: {e}"),
            }
        }
        for r in requests {
            match r {
                Request::OpenSession { id, agent, .. } => {
                    // A new process of this Agent: the old one's socket goes with it.
                    links.remove(&agent);
                    let Some(m) = keys.members.get(&agent) else {
                        demo.session_opened(id, Err("no key".into()), now());
                        continue;
                    };
                    next_link += 1;
                    let (tx, rx) = mpsc::unbounded_channel();
                    let spec = LinkSpec {
                        agent: agent.clone(),
                        link: next_link,
                        principal_id: m.principal_id.clone(),
                        key_id: m.key_id.clone(),
                        signer: ed25519::Signer::from_seed(&m.seed),
                        endpoint: ep.clone(),
                        open_id: id,
                    };
                    tokio::spawn(link::run(spec, rx, report_tx.clone()));
                    links.insert(
                        agent,
                        Linked {
                            link: next_link,
                            tx,
                            acked: BTreeMap::new(),
                        },
                    );
                }
                Request::Submit {
                    id,
                    from,
                    action_id,
                    bytes,
                    ..
                } => {
                    result.submitted += 1;
                    if let Some(l) = links.get(&from) {
                        let _ = l.tx.send(ToLink::Command {
                            id,
                            action_id,
                            bytes,
                        });
                    } else {
                        // The director's Commands (the human, the control plane).
                        let ep = ep.clone();
                        let tx = done_tx.clone();
                        tokio::spawn(async move {
                            let o = submit_http(&ep, &bytes).await;
                            let _ = tx.send((id, o));
                        });
                    }
                }
                Request::Subscribe {
                    agent,
                    group,
                    after,
                } => {
                    if let Some(l) = links.get_mut(&agent) {
                        l.acked.insert(group.clone(), after);
                        let _ = l.tx.send(ToLink::Subscribe { group, after });
                    }
                }
                Request::Disconnect { agent, down_for } => {
                    if let Some(l) = links.get(&agent) {
                        let d = Duration::from_micros(u64::try_from(down_for.0).unwrap_or(0));
                        let _ = l.tx.send(ToLink::Disconnect(d));
                    }
                }
            }
        }
        for line in demo.take_log() {
            if line.starts_with("demo: ") {
                println!("{line}");
            } else {
                println!("demo: {line}");
            }
        }
        if let Ok(mut p) = opts.proposals.lock()
            && p.as_slice() != demo.proposals()
        {
            *p = demo.proposals().to_vec();
        }
        let gates = demo.record().gates.clone();
        for g in &gates[gates_shown..] {
            if gates_shown == 0 {
                println!(
                    "demo: first human gate reached {:.1} s after the server started",
                    opts.started.elapsed().as_secs_f64()
                );
            }
            println!("demo:   → {}", hint(g, keys.opening));
            if let Some(tx) = &opts.gates {
                let _ = tx.send(g.clone());
            }
            gates_shown += 1;
        }
        if demo.finished() {
            println!("demo: both Missions are approved; the demo is over");
            return Ok(result.finish(true, &demo));
        }
        let wait = demo
            .next_wake()
            .map(|t| Duration::from_micros(u64::try_from(t.0 - now().0).unwrap_or(0)))
            .unwrap_or(Duration::from_secs(5));
        tokio::select! {
            e = events.recv() => {
                let Some(bytes) = e else {
                    return Ok(result.finish(false, &demo));
                };
                follow(&mut demo, &bytes);
                result.delivered += 1;
                while let Ok(bytes) = events.try_recv() {
                    follow(&mut demo, &bytes);
                    result.delivered += 1;
                }
            }
            r = report_rx.recv() => {
                if let Some(r) = r {
                    on_report(&mut demo, &links, &mut result, r);
                    while let Ok(r) = report_rx.try_recv() {
                        on_report(&mut demo, &links, &mut result, r);
                    }
                }
            }
            d = done_rx.recv() => {
                if let Some((id, o)) = d {
                    demo.outcome(id, o, now());
                }
            }
            _ = ack_tick.tick() => ack(&demo, &mut links),
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// One durable Event for the director's view.
fn follow(demo: &mut Demo, bytes: &[u8]) {
    if let Err(e) = demo.deliver(bytes, crate::runtime::now()) {
        println!("demo: {e}");
    }
}

/// What a link reported, for the current link of its Agent only (a restarted Agent's old
/// socket is gone with its process).
fn on_report(demo: &mut Demo, links: &BTreeMap<String, Linked>, result: &mut RunResult, r: Report) {
    if links.get(&r.agent).map(|l| l.link) != Some(r.link) {
        return;
    }
    let now = crate::runtime::now();
    match r.what {
        FromLink::Opened { open_id, epoch } => demo.session_opened(open_id, epoch, now),
        FromLink::Reconnected { epoch, resumed } => {
            result.reconnections += 1;
            demo.reconnected(&r.agent, epoch, &resumed, now);
        }
        FromLink::Event(bytes) => {
            result.received += 1;
            if let Err(e) = demo.deliver_to_agent(&r.agent, &bytes, now) {
                println!("demo: {e}");
            }
        }
        FromLink::Outcome { id, outcome } => demo.outcome(id, outcome, now),
        FromLink::Note(n) => println!("demo: {}: {n}", r.agent),
    }
}

/// `ACK`s of the Cursors that moved (every 300 ms, so a resume replays a little: §16).
fn ack(demo: &Demo, links: &mut BTreeMap<String, Linked>) {
    for (agent, l) in links.iter_mut() {
        let mut moved = Vec::new();
        for (group, acked) in l.acked.iter_mut() {
            if let Some(c) = demo.cursor(agent, group)
                && c > *acked
            {
                *acked = c;
                moved.push((group.clone(), c));
            }
        }
        if !moved.is_empty() {
            let _ = l.tx.send(ToLink::Ack(moved));
        }
    }
}

/// Starts the authority with the demo's director following its log; the demo itself starts
/// once the server listens ([`Launch::start`]). Without a development Organization the demo
/// says why it is off.
pub fn start(
    data: &std::path::Path,
    org: crate::devorg::OrgSetup,
    started: Instant,
    publisher: Option<std::sync::Arc<dyn crate::runtime::Publish>>,
    artifacts: ArtifactStore,
) -> Result<(AuthorityHandle, Option<Launch>), String> {
    start_over(data, org, started, artifacts, &mut |org, hook| {
        crate::runtime::start_full(
            data,
            org,
            Box::new(crate::runtime::now),
            publisher.clone(),
            hook,
        )
    })
}

/// Starts an authority with `authority` (given the Organization and the demo's hook on the
/// durable Events, `None` when the demo is off) and the demo's Agents over it: a single
/// node's, or a cluster node's (docs/cluster.md).
pub fn start_over(
    data: &std::path::Path,
    org: crate::devorg::OrgSetup,
    started: Instant,
    artifacts: ArtifactStore,
    authority: &mut dyn FnMut(
        crate::devorg::OrgSetup,
        Option<crate::runtime::EventHook>,
    ) -> Result<AuthorityHandle, String>,
) -> Result<(AuthorityHandle, Option<Launch>), String> {
    let mut plain = |org| authority(org, None).map(|h| (h, None));
    let keys = match org.dev.as_ref().map(DemoKeys::from_dev) {
        Some(Ok(k)) => k,
        Some(Err(e)) => {
            println!("demo: off: {e}");
            return plain(org);
        }
        None => match cast::keys(data, org.registry.clone()) {
            Ok(Some(k)) => k,
            Ok(None) => {
                println!(
                    "demo: off: this Organization has no demo Agents (`weave-console org demo \
                     --data {} --owner NAME` adds them)",
                    data.display()
                );
                return plain(org);
            }
            Err(e) => {
                println!("demo: off: {e}");
                return plain(org);
            }
        },
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
    let handle = authority(org, Some(hook))?;
    Ok((
        handle,
        Some(Launch {
            events: rx,
            keys,
            started,
            artifacts,
            proposals: cast::Proposals::default(),
            after: None,
        }),
    ))
}

/// A demo ready to run once the server listens.
pub struct Launch {
    events: mpsc::UnboundedReceiver<Vec<u8>>,
    keys: DemoKeys,
    started: Instant,
    artifacts: ArtifactStore,
    proposals: cast::Proposals,
    /// Told when the Agents may say HELLO (their cards registered).
    after: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Launch {
    /// The Agents connect only once `ready` is told (or dropped).
    pub fn after(&mut self, ready: tokio::sync::oneshot::Receiver<()>) {
        self.after = Some(ready);
    }

    /// Where the run publishes the Missions it proposes to a human (none on the development
    /// Organization, whose human the demo signs as).
    pub fn proposals(&self) -> cast::Proposals {
        self.proposals.clone()
    }

    /// Whether a human of the Organization creates the demo's Missions.
    pub fn proposes(&self) -> bool {
        self.keys.opening == Opening::Proposed
    }

    /// Runs the demo on the current runtime against the server listening at `ep`.
    pub fn start(self, ep: Endpoint) {
        tokio::spawn(async move {
            if let Some(ready) = self.after {
                let _ = ready.await;
            }
            let opts = RunOptions {
                proposals: self.proposals,
                ..RunOptions::live(self.started, self.artifacts)
            };
            match run(ep, self.events, self.keys, opts).await {
                Ok(r) => println!(
                    "demo: {}: {} Commands submitted, {} Events followed by the director, {} \
                     EVENT frames received by the Agents, {} reconnections, {} deliveries \
                     duplicated on purpose and {} duplicates dropped by the Agents' inboxes, {} \
                     views out of step",
                    if r.finished { "finished" } else { "stopped" },
                    r.submitted,
                    r.delivered,
                    r.received,
                    r.reconnections,
                    r.record.duplicate_deliveries,
                    r.duplicates_dropped,
                    r.view_errors
                ),
                Err(e) => println!("demo: cannot start: {e}"),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Reply;
    use simulation::harness::{Envelope, signed_command};
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

    /// A development server on a loopback port, as `serve` runs it: the real runtime
    /// (store, verify stage, owner thread), the binding's hub and gateway, TLS 1.3 with the
    /// development certificate; and the director's feed (the Event hook).
    pub(super) struct DevServer {
        pub ep: Endpoint,
        pub handle: AuthorityHandle,
        pub org: DevOrganization,
        pub events: Option<mpsc::UnboundedReceiver<Vec<u8>>>,
        pub artifacts: ArtifactStore,
        /// The bodies of the notices a `--notify-webhook` receiver on 127.0.0.1 got.
        pub notices: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        dir: std::path::PathBuf,
    }

    /// A webhook receiver on 127.0.0.1 (HTTP/1.1, one request per connection, answered 200)
    /// recording each body: its URL and the bodies.
    async fn receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = std::sync::Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let log = std::sync::Arc::clone(&log);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let Ok(n) = s.read(&mut chunk).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        if buf.len() < end + 4 + len {
                            continue;
                        }
                        log.lock()
                            .expect("lock")
                            .push(buf[end + 4..end + 4 + len].to_vec());
                        let _ = s
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                            .await;
                        return;
                    }
                });
            }
        });
        (url, seen)
    }

    impl DevServer {
        pub async fn start(tag: &str) -> DevServer {
            let dir =
                std::env::temp_dir().join(format!("weave-agents-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("public")).expect("dir");
            let data = dir.join("data");
            let org = crate::devorg::load_or_create(&data)
                .and_then(crate::cards::setup)
                .expect("development Organization");
            // The demo's copy of the keys (the authority bootstraps the Agents' cards from its
            // own).
            let dev = crate::devorg::load(&data).expect("the development keys");
            let service = crate::gateway::ServiceKey::single(
                org.config.accepted_by.clone(),
                &org.config.key_id,
                &org.config.seed,
            );
            let (tx, rx) = mpsc::unbounded_channel();
            let hook: crate::runtime::EventHook = Box::new(move |batch| {
                for e in batch {
                    let _ = tx.send(e);
                }
            });
            let hub = std::sync::Arc::new(crate::gateway::Hub::new());
            // The notices of `--notify-webhook`, beside the hub.
            let (url, notices) = receiver().await;
            let notifier = crate::notify::Notifier::start(
                vec![crate::notify::parse_webhook(&url, false).expect("webhook")],
                crate::service_keys::ServiceKeys::single(&org.config.key_id, &org.config.seed),
                None,
                &tokio::runtime::Handle::current(),
            );
            let handle = crate::runtime::start_full(
                &data,
                org,
                Box::new(crate::runtime::now),
                Some(std::sync::Arc::new(crate::notify::Both(
                    hub.clone(),
                    notifier,
                ))),
                Some(hook),
            )
            .expect("authority");
            let gw = std::sync::Arc::new(
                crate::gateway::Gateway::new(
                    crate::gateway::GatewayConfig::default(),
                    hub.clone(),
                    handle.clone(),
                    handle.live_registry(),
                    service,
                    &data,
                )
                .expect("gateway"),
            );
            let artifacts = ArtifactStore::open(&data);
            let app = crate::http::router(
                crate::http::AppState::new(&dir.join("public"), "{}".into())
                    .authority(handle.clone())
                    .gateway(gw)
                    .routes(crate::artifacts::routes(
                        artifacts.clone(),
                        crate::artifacts::ReadAccess {
                            registry: handle.live_registry(),
                            members: hub,
                        },
                    )),
            );
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let local = listener.local_addr().expect("addr");
            let (setup, _, _) =
                crate::gateway::tls::development(&data, "127.0.0.1").expect("certificate");
            let ep = endpoint_for(local, Some(setup.leaf.clone())).expect("endpoint");
            assert!(ep.ws.starts_with("wss://127.0.0.1:"), "{}", ep.ws);
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            tokio::spawn(async move {
                let _ = crate::gateway::tls::serve(listener, app, Some(setup.config), async move {
                    let _ = stopped.await;
                })
                .await;
            });
            DevServer {
                ep,
                handle,
                org: dev,
                events: Some(rx),
                artifacts,
                notices,
                stop: Some(stop),
                dir,
            }
        }
    }

    impl Drop for DevServer {
        fn drop(&mut self) {
            if let Some(s) = self.stop.take() {
                let _ = s.send(());
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// The demo over the binding: every Agent on its own TLS socket to a real server (HELLO,
    /// SUBSCRIBE, COMMAND, EVENT, ACK, a deliberate drop and resume), real time at a brisk
    /// pace, and a test human who answers each gate through the same queue as any client.
    /// Asserts outcomes, not durations (the timeout is a safety net).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_demo_runs_over_the_binding_through_every_human_gate() {
        let mut server = DevServer::start("demo").await;
        let keys = DemoKeys::from_dev(&server.org).expect("the demo's keys");
        let human = server.org.principal(plan::HUMAN).expect("the human");
        let (actor, key_id) = (human.actor.clone(), human.key_id.clone());
        let signer = ed25519::Signer::from_seed(&human.seed);
        let (gtx, mut grx) = mpsc::unbounded_channel();
        let opts = RunOptions {
            pace: Pace::brisk(),
            duplicate_every: 5,
            gates: Some(gtx),
            started: Instant::now(),
            artifacts: Some(server.artifacts.clone()),
            proposals: cast::Proposals::default(),
        };
        let events = server.events.take().expect("events");
        let handle = server.handle.clone();
        let demo = tokio::spawn(run(server.ep.clone(), events, keys, opts));
        let mut decisions: Vec<&'static str> = Vec::new();
        // Every Artifact hash a final Mission approval names.
        let mut submitted = std::collections::BTreeSet::new();
        let human = async {
            while let Some(gate) = grx.recv().await {
                if let HumanGate::MissionApproval {
                    artifact_hashes, ..
                } = &gate
                {
                    submitted.extend(artifact_hashes.iter().cloned());
                }
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
        tokio::time::timeout(Duration::from_secs(300), human)
            .await
            .expect("the demo finished within the safety timeout");
        let result = demo.await.expect("joined").expect("started");
        assert!(result.finished, "{result:?}");
        assert!(
            result.submitted > 100 && result.delivered > 100 && result.received > 100,
            "{result:?}"
        );
        let count = |k: &str| decisions.iter().filter(|d| **d == k).count();
        assert_eq!(count("approval.grant_execution"), 1, "{decisions:?}");
        assert_eq!(count("mission.request_changes"), 1, "{decisions:?}");
        assert_eq!(count("mission.approve"), 2, "{decisions:?}");
        // One webhook notice per item the human was asked to decide: the gate, and each
        // submission for final approval (the first of Checkout's, answered with a change
        // request, then its second and Search's); none for the child Mission, whose
        // MissionOwner is an Agent (docs/notifications.md).
        let kinds = || {
            let mut k: Vec<String> = server
                .notices
                .lock()
                .expect("lock")
                .iter()
                .map(|b| {
                    let v = wasm_core::json::parse(b).expect("a notice is JSON");
                    v.pointer("/kind")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect();
            k.sort();
            k
        };
        let t = Instant::now();
        while kinds().len() < decisions.len() && t.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            kinds(),
            ["final_approval", "final_approval", "final_approval", "gate"],
            "{decisions:?}"
        );
        let rec = &result.record;
        assert_eq!(rec.replacements.len(), 1);
        // In real time the cut-off Coordinator may still be waiting for its own last Events
        // when it is cut (they arrive after the cut), so it may send nothing while
        // partitioned; the simulated run (simulation/tests/agents_demo.rs) pins that a late
        // Command exists. Here: whatever it sent late was refused, and only for its epoch.
        for r in &rec.late_commands {
            assert_eq!(r.agent, plan::COORDINATOR_B, "{r:?}");
            assert!(
                matches!(
                    r.code,
                    ErrorCode::MembershipStale
                        | ErrorCode::AuthStaleCoordinator
                        | ErrorCode::AuthForbidden
                ),
                "{r:?}"
            );
        }
        assert_eq!(rec.restarts.len(), 1);
        assert_eq!(
            rec.restarts[0].after.as_ref(),
            Some(&rec.restarts[0].before)
        );
        // The tester's dropped socket came back with a new Session Epoch and resumed its
        // Groups from the ACKed Cursors; what it missed was replayed.
        assert!(result.reconnections >= 1, "{result:?}");
        assert!(!rec.reconnections.is_empty());
        assert!(rec.reconnections.iter().all(|r| r.agent == plan::TESTER));
        assert!(
            rec.reconnections
                .iter()
                .any(|r| r.missed > 0 && r.replayed >= r.missed),
            "{:?}",
            rec.reconnections
        );
        let tester_sessions: Vec<u64> = rec
            .sessions
            .iter()
            .filter(|(a, _)| a == plan::TESTER)
            .map(|(_, e)| *e)
            .collect();
        assert!(
            tester_sessions.len() >= 2 && tester_sessions.windows(2).all(|w| w[0] < w[1]),
            "{tester_sessions:?}"
        );
        // The re-sent Command was answered with its original Events over the socket.
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
        // Every Artifact a submitted Mission names is served by its hash, and its content
        // matches it (§13, E-2).
        assert!(!submitted.is_empty(), "{:?}", rec.gates);
        assert!(
            result.artifacts_stored >= submitted.len() as u64,
            "{result:?}"
        );
        // Read as the MissionOwner (a member of every Group up the tree), signed; unsigned is
        // refused.
        let owner = server.org.require(plan::HUMAN).expect("the MissionOwner");
        let owner_signer = ed25519::Signer::from_seed(&owner.seed);
        for h in &submitted {
            let path = format!("/api/artifacts/{h}");
            let (status, _) = server.ep.http("GET", &path, b"").await.expect("answered");
            assert_eq!(status, 401, "unsigned");
            let (k, t, sig) = wasm_core::crypto::request::sign(
                &owner_signer,
                &owner.key_id,
                "GET",
                &path,
                crate::runtime::now(),
            );
            let (status, body) = server
                .ep
                .http_with(
                    "GET",
                    &path,
                    b"",
                    &[
                        (wasm_core::crypto::request::KEY_HEADER, k),
                        (wasm_core::crypto::request::TIME_HEADER, t),
                        (wasm_core::crypto::request::SIGNATURE_HEADER, sig),
                    ],
                )
                .await
                .expect("answered");
            assert_eq!(status, 200, "{h}: {}", String::from_utf8_lossy(&body));
            assert_eq!(&wasm_core::encoding::sha256_hash(&body), h);
            let text = String::from_utf8(body).expect("text");
            assert!(
                text.contains("\nby urn:missionweaveprotocol:agent:"),
                "{text}"
            );
        }
    }

    /// What a link reported, gathered: an inbox of the Events (§16), outcomes by id.
    struct Gathered {
        inbox: simulation::agents::inbox::Inbox,
        outcomes: BTreeMap<u64, Outcome>,
        reconnected: Vec<(u64, Vec<(String, u64)>)>,
        events: u64,
    }

    impl Gathered {
        /// Takes reports until `done` holds (bounded: a hang fails, nothing is timed).
        async fn until(
            &mut self,
            rx: &mut mpsc::UnboundedReceiver<Report>,
            done: impl Fn(&Gathered) -> bool,
        ) {
            while !done(self) {
                let r = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                    .await
                    .expect("a report")
                    .expect("the link is running");
                match r.what {
                    FromLink::Event(bytes) => {
                        self.events += 1;
                        let v = json::parse(&bytes).expect("an Event");
                        self.inbox.accept(v).expect("in order or a duplicate");
                    }
                    FromLink::Outcome { id, outcome } => {
                        self.outcomes.insert(id, outcome);
                    }
                    FromLink::Reconnected { epoch, resumed } => {
                        self.reconnected.push((epoch, resumed));
                    }
                    FromLink::Opened { .. } | FromLink::Note(_) => {}
                }
            }
        }
    }

    fn event_ids(o: &Outcome) -> Vec<String> {
        match o {
            Outcome::Appended(e) | Outcome::Duplicate(e) => e
                .iter()
                .filter_map(|e| e.pointer("/eventId").and_then(Value::as_str))
                .map(str::to_owned)
                .collect(),
            Outcome::Rejected { .. } => Vec::new(),
        }
    }

    /// A demo Agent's link over a real TLS socket: it drops, stays away while the Group goes
    /// on, comes back with a new Session Epoch and resumes from its ACKed Cursor: its inbox
    /// ends at the Group's head with no gap (the replay around the cut is dropped as
    /// duplicates), a Command signed under the fenced epoch is refused, and an exact retry
    /// is answered with the original Events and appends nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_link_resumes_from_its_acked_cursor_without_gap_or_double_effect() {
        let server = DevServer::start("link").await;
        let owner = server.org.require("mission-owner").expect("owner");
        let agent = server.org.require(plan::ANALYST).expect("analyst");
        let group = "urn:missionweaveprotocol:group:link-test".to_owned();
        let now = crate::runtime::now();
        let mut p = Object::new();
        for (k, v) in [
            (
                "missionId",
                "urn:missionweaveprotocol:mission:link-test".to_owned(),
            ),
            ("groupId", group.clone()),
            ("coordinatorId", agent.actor.id.0.clone()),
            ("title", "Link test".to_owned()),
            ("objective", "Drop and resume".to_owned()),
            (
                "deadline",
                now.plus_seconds(24 * 3600).format_whole_seconds(),
            ),
        ] {
            p.insert(k, Value::string(v));
        }
        p.insert(
            "definitionOfDone",
            Value::Array(vec![Value::string("resumed")]),
        );
        let env = |epoch: Option<u64>| crate::devorg::Envelope {
            group_id: Some(group.clone()),
            session_epoch: epoch,
            membership_epoch: Some(1),
            ..crate::devorg::Envelope::default()
        };
        let create = crate::devorg::signed_command(
            owner,
            "mission.create",
            "urn:missionweaveprotocol:action:link-test-create",
            &crate::devorg::Envelope {
                group_id: Some(group.clone()),
                ..crate::devorg::Envelope::default()
            },
            p,
            now,
        )
        .expect("signed");
        assert!(matches!(
            submit_http(&server.ep, &create).await,
            Outcome::Appended(_)
        ));
        let post = |who: &crate::devorg::DevPrincipal, n: u64, epoch: Option<u64>| {
            let mut body = Object::new();
            body.insert(
                "messageId",
                Value::string(format!("{group}:message:{}:{n}", who.name)),
            );
            body.insert("conversationId", Value::string(format!("{group}:mission")));
            body.insert("content", Value::string(format!("note {n}")));
            crate::devorg::signed_command(
                who,
                "message.post",
                &format!("urn:missionweaveprotocol:action:link-test-{}-{n}", who.name),
                &env(epoch),
                body,
                crate::runtime::now(),
            )
            .expect("signed")
        };

        let (tx, rx) = mpsc::unbounded_channel();
        let (rtx, mut rrx) = mpsc::unbounded_channel();
        tokio::spawn(link::run(
            LinkSpec {
                agent: plan::ANALYST.into(),
                link: 1,
                principal_id: agent.actor.id.0.clone(),
                key_id: agent.key_id.clone(),
                signer: ed25519::Signer::from_seed(&agent.seed),
                endpoint: server.ep.clone(),
                open_id: 7,
            },
            rx,
            rtx,
        ));
        let first = tokio::time::timeout(Duration::from_secs(30), rrx.recv())
            .await
            .expect("HELLO")
            .expect("a report");
        let e1 = match first.what {
            FromLink::Opened {
                open_id: 7,
                epoch: Ok(e),
            } => e,
            other => panic!("{other:?}"),
        };
        let mut g = Gathered {
            inbox: simulation::agents::inbox::Inbox::new(),
            outcomes: BTreeMap::new(),
            reconnected: Vec::new(),
            events: 0,
        };
        let send = |id: u64, bytes: Vec<u8>| {
            tx.send(ToLink::Command {
                id,
                action_id: json::parse(&bytes)
                    .ok()
                    .and_then(|v| v.pointer("/actionId")?.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                bytes,
            })
            .expect("link");
        };
        tx.send(ToLink::Subscribe {
            group: group.clone(),
            after: 0,
        })
        .expect("link");
        for n in 1..=3 {
            send(n, post(agent, n, Some(e1)));
        }
        g.until(&mut rrx, |g| g.outcomes.len() == 3).await;
        assert!(
            g.outcomes
                .values()
                .all(|o| matches!(o, Outcome::Appended(e) if e.len() == 1)),
            "{:?}",
            g.outcomes
        );
        let before = g.inbox.cursor();
        assert!(before >= 4, "mission.created … and three Messages");
        // ACK two behind: the resume replays them again.
        tx.send(ToLink::Ack(vec![(group.clone(), before - 2)]))
            .expect("link");
        tx.send(ToLink::Disconnect(Duration::from_millis(400)))
            .expect("link");
        // While it is away: the Group goes on, and the Agent queues a Command signed under
        // the Session Epoch its reconnection will fence.
        for n in 1..=2 {
            assert!(matches!(
                submit_http(&server.ep, &post(owner, n, None)).await,
                Outcome::Appended(_)
            ));
        }
        send(4, post(agent, 4, Some(e1)));
        g.until(&mut rrx, |g| {
            g.inbox.cursor() >= before + 2 && g.outcomes.contains_key(&4)
        })
        .await;
        let (e2, resumed) = g.reconnected.first().cloned().expect("reconnected");
        assert!(e2 > e1, "a new Session Epoch: {e1} → {e2}");
        assert_eq!(resumed, [(group.clone(), before - 2)]);
        assert!(
            matches!(
                &g.outcomes[&4],
                Outcome::Rejected {
                    code: ErrorCode::AuthStaleSession,
                    ..
                }
            ),
            "{:?}",
            g.outcomes[&4]
        );
        // No gap: every sequence up to the head, in order; the two around the cut twice.
        assert_eq!(g.inbox.cursor(), before + 2);
        assert!(g.inbox.duplicates() >= 2, "{}", g.inbox.duplicates());
        // No double effect: an exact retry gets the original Events; the next Command is the
        // very next sequence.
        let fifth = post(agent, 5, Some(e2));
        send(5, fifth.clone());
        g.until(&mut rrx, |g| g.outcomes.contains_key(&5)).await;
        assert!(matches!(&g.outcomes[&5], Outcome::Appended(_)));
        send(6, fifth);
        g.until(&mut rrx, |g| g.outcomes.contains_key(&6)).await;
        assert!(
            matches!(&g.outcomes[&6], Outcome::Duplicate(_)),
            "{:?}",
            g.outcomes[&6]
        );
        assert_eq!(event_ids(&g.outcomes[&6]), event_ids(&g.outcomes[&5]));
        send(7, post(agent, 7, Some(e2)));
        g.until(&mut rrx, |g| g.outcomes.contains_key(&7)).await;
        let seq = match &g.outcomes[&7] {
            Outcome::Appended(e) => e
                .first()
                .and_then(|e| e.pointer("/sequence"))
                .and_then(|v| match v {
                    Value::Number(n) => n.as_safe_u64(),
                    _ => None,
                }),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            seq,
            Some(before + 4),
            "only the fifth was appended in between"
        );
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
