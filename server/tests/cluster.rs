//! Several nodes over one PostgreSQL (docs/cluster.md), over real sockets and a real database
//! (a throwaway one, `scripts/pg-local.sh`): every node serves and fans out in the log's one
//! order; kill -9 of the writer under load loses nothing acknowledged and another node takes
//! over; a writer stopped past its lease (SIGSTOP) is fenced when it resumes; a database
//! restart under load costs clients retries, never an acknowledged Command; only the writer
//! sends a webhook's notice, and the next writer the next one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::{Principal, post};

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasm_core::json::{self, Object, Value};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/pg-local.sh");
/// The writer's lease in these tests: failover waits about this long.
const LEASE_MS: u64 = 1500;

/// One cluster at a time: each test runs a database and three nodes, and its timings (a
/// lease renewed every half second) should not compete with another test's on two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A throwaway PostgreSQL, stopped and removed when dropped.
struct Postgres {
    dir: PathBuf,
    url: String,
}

impl Postgres {
    fn start(name: &str) -> Postgres {
        let dir = std::env::temp_dir().join(format!("weave-pg-{name}-{}", std::process::id()));
        let _ = Command::new("bash")
            .args([SCRIPT, "stop"])
            .arg(&dir)
            .status();
        let out = Command::new("bash")
            .args([SCRIPT, "start"])
            .arg(&dir)
            .arg(free_port().to_string())
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "PostgreSQL did not start (scripts/setup.sh installs it): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        Postgres { dir, url }
    }

    fn restart(&self) {
        let ok = Command::new("bash")
            .args([SCRIPT, "restart"])
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(ok.success(), "PostgreSQL did not restart");
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).unwrap()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .args([SCRIPT, "stop"])
            .arg(&self.dir)
            .args(["immediate"])
            .status();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `weave-console serve --store …` node; its stdout lines are kept; killed when dropped.
struct Node {
    name: String,
    child: Child,
    addr: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Node {
    fn start(pg: &Postgres, data: &Path, name: &str) -> Node {
        Node::start_with(pg, data, name, &[])
    }

    fn start_with(pg: &Postgres, data: &Path, name: &str, extra: &[&str]) -> Node {
        let addr = format!("127.0.0.1:{}", free_port());
        let mut child = Command::new(support::BIN)
            .args(["serve", "--no-demo", "--public"])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../public"))
            .arg("--data")
            .arg(data)
            .args(["--store", &pg.url, "--node", name, "--addr", &addr])
            .args(["--lease-ms", &LEASE_MS.to_string()])
            .args(extra)
            // Snapshots often, so that the tests cross them (a node started late loads one).
            .env("MWP_SNAPSHOT_EVERY", "100")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let out = BufReader::new(child.stdout.take().unwrap());
        let kept = Arc::clone(&lines);
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                kept.lock().unwrap().push(l);
            }
        });
        let node = Node {
            name: name.to_owned(),
            child,
            addr,
            lines,
        };
        node.wait_for("listening on http", Duration::from_secs(60));
        node
    }

    fn said(&self, needle: &str) -> bool {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
    }

    fn wait_for(&self, needle: &str, patience: Duration) {
        let t = Instant::now();
        while !self.said(needle) {
            assert!(
                t.elapsed() < patience,
                "{} never said {needle:?}: {:?}",
                self.name,
                self.lines.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn is_writer(&self) -> bool {
        self.said("is the writer")
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Posts `bytes` to the nodes in turn from `first` until one accepts it (an exact retry is
/// safe, §15.1); refusals must be retryable. Returns the number of retries.
fn post_until_accepted(addrs: &[String], first: usize, bytes: &[u8], patience: Duration) -> usize {
    let t = Instant::now();
    let mut tries = 0;
    loop {
        let addr = &addrs[(first + tries) % addrs.len()];
        match post(addr, bytes) {
            Ok((200, _)) => return tries,
            Ok((code, body)) => {
                let doc = json::parse_str(&body).ok();
                let retryable = doc
                    .as_ref()
                    .and_then(|d| d.pointer("/retryable"))
                    .is_some_and(|r| *r == Value::Bool(true));
                assert!(retryable, "{addr}: {code} {body}");
            }
            Err(_) => {} // a killed or stopped node: try another
        }
        assert!(t.elapsed() < patience, "no node accepted the Command");
        tries += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
}

const GROUP: &str = "urn:cluster:group";

/// `mission.create` by the MissionOwner for a Mission named `name` whose Group is `group`.
fn mission_create(data: &Path, name: &str, group: &str) -> Vec<u8> {
    let owner = Principal::in_data(data, "mission-owner");
    let mut p = Object::new();
    for (k, v) in [
        ("missionId", format!("urn:cluster:{name}:mission")),
        ("groupId", group.to_owned()),
        ("title", format!("Cluster test: {name}")),
        ("objective", "One log for every node".to_owned()),
        ("deadline", "2099-01-01T00:00:00Z".to_owned()),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "coordinatorId",
        Value::string(Principal::in_data(data, "coordinator").id()),
    );
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("same order")]),
    );
    owner.command(
        "mission.create",
        &format!("urn:cluster:{name}:create"),
        &[("groupId", Value::string(group.to_owned()))],
        p,
    )
}

/// The test's Mission, with the subscribers and posters as members.
fn setup_mission(data: &Path, addrs: &[String]) {
    let owner = Principal::in_data(data, "mission-owner");
    let create = mission_create(data, "load", GROUP);
    // Sent to the last node (not the writer: the first node started is).
    post_until_accepted(addrs, addrs.len() - 1, &create, Duration::from_secs(20));
    for (i, who) in ["analyst", "developer", "tester", "reviewer"]
        .iter()
        .enumerate()
    {
        let mut p = Object::new();
        p.insert("principal", Principal::in_data(data, who).actor.clone());
        p.insert("roles", Value::Array(vec![Value::string("worker")]));
        let bytes = owner.command(
            "membership.change",
            &format!("urn:cluster:member:{i}"),
            &[
                ("groupId", Value::string(GROUP)),
                ("membershipEpoch", Value::from(1u64)),
            ],
            p,
        );
        post_until_accepted(addrs, i % addrs.len(), &bytes, Duration::from_secs(20));
    }
}

fn message(p: &Principal, name: &str, n: usize, agent: bool) -> (String, Vec<u8>) {
    let action = format!("urn:cluster:{name}:{n}");
    let mut payload = Object::new();
    payload.insert(
        "messageId",
        Value::string(format!("urn:cluster:message:{name}:{n}")),
    );
    payload.insert("conversationId", Value::string(format!("{GROUP}:mission")));
    payload.insert("content", Value::string(format!("note {n} from {name}")));
    let mut env = vec![
        ("groupId", Value::string(GROUP)),
        ("membershipEpoch", Value::from(1u64)),
    ];
    if agent {
        env.push(("sessionEpoch", Value::from(1u64)));
    }
    let bytes = p.command("message.post", &action, &env, payload);
    (action, bytes)
}

/// A subscriber: an Agent on one node following the Group; reconnects (to the next node) from
/// the last sequence it saw when its node goes away.
struct Subscriber {
    seen: Arc<Mutex<Vec<(u64, String)>>>,
    reconnections: Arc<Mutex<Vec<String>>>,
}

fn subscribe(
    rt: &tokio::runtime::Runtime,
    data: &Path,
    name: &str,
    addrs: Vec<String>,
    first: usize,
) -> Subscriber {
    let who = Principal::in_data(data, name);
    let seen: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
    let reconnections: Arc<Mutex<Vec<String>>> = Arc::default();
    let (s, r) = (Arc::clone(&seen), Arc::clone(&reconnections));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let signer = wasm_core::crypto::ed25519::Signer::from_seed(&who.seed);
        let mut i = first;
        let mut ready = Some(ready_tx);
        loop {
            let addr = &addrs[i % addrs.len()];
            let attempt = async {
                let ep = server::endpoint::Endpoint::new(&format!("ws://{addr}/ws"), None)?;
                let mut c = ep.socket(false).await?;
                c.hello(&who.id(), &who.key_id, &signer)
                    .await
                    .map_err(|e| format!("HELLO: {}", json::to_string(&e)))?;
                let after = s.lock().unwrap().last().map_or(0, |(q, _)| *q);
                let sub = c.subscribe_frame(&[(GROUP, after)]);
                c.send(&sub).await?;
                if let Some(tx) = ready.take() {
                    let _ = tx.send(());
                }
                loop {
                    let f = c.frame().await?;
                    if f.pointer("/frameType").and_then(Value::as_str) != Some("EVENT") {
                        continue;
                    }
                    let ev = f.pointer("/event").unwrap();
                    if ev.pointer("/groupId").and_then(Value::as_str) != Some(GROUP) {
                        continue;
                    }
                    let Some(Value::Number(n)) = ev.pointer("/sequence") else {
                        continue;
                    };
                    let id = ev
                        .pointer("/eventId")
                        .and_then(Value::as_str)
                        .unwrap()
                        .to_owned();
                    s.lock().unwrap().push((n.as_safe_u64().unwrap(), id));
                }
                #[allow(unreachable_code)]
                Ok::<(), String>(())
            };
            let e = attempt.await.err().unwrap_or_default();
            r.lock().unwrap().push(format!("{addr}: {e}"));
            i += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("subscribed");
    Subscriber {
        seen,
        reconnections,
    }
}

impl Subscriber {
    /// Waits until the subscriber has seen through `head`; returns its sequences.
    fn through(&self, head: u64, patience: Duration) -> Vec<(u64, String)> {
        let t = Instant::now();
        loop {
            let seen = self.seen.lock().unwrap().clone();
            if seen.last().is_some_and(|(q, _)| *q >= head) {
                return seen;
            }
            assert!(
                t.elapsed() < patience,
                "saw {} of {head}; reconnections {:?}",
                seen.len(),
                self.reconnections.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A subscriber's sequences: from its first (its Membership's visibility) to `head`, each
/// exactly once, in order.
fn assert_gapless(seen: &[(u64, String)], head: u64, who: &str) {
    let first = seen.first().map_or(1, |(q, _)| *q);
    let seqs: Vec<u64> = seen.iter().map(|(q, _)| *q).collect();
    assert!(first <= 6, "{who} began at {first}");
    assert_eq!(
        seqs,
        (first..=head).collect::<Vec<_>>(),
        "{who}: skipped or repeated"
    );
}

/// The Group's Events in the shared log: (sequence, action of the cause, writer's epoch).
fn logged(pg: &Postgres) -> Vec<(i64, String, i64, i64)> {
    pg.client()
        .query(
            "SELECT sequence, jcs, epoch, position FROM mwp_events WHERE group_key = $1 ORDER BY sequence",
            &[&GROUP],
        )
        .unwrap()
        .iter()
        .map(|r| {
            let v = json::parse(r.get::<_, &[u8]>(1)).unwrap();
            let cause = v.pointer("/cause/id").and_then(Value::as_str).unwrap_or("").to_owned();
            (r.get(0), cause, r.get(2), r.get(3))
        })
        .collect()
}

/// Every acknowledged action exactly once, nothing else from the posters, sequences gapless.
fn check_log(pg: &Postgres, acked: &BTreeSet<String>) -> u64 {
    let log = logged(pg);
    for (i, (seq, _, _, _)) in log.iter().enumerate() {
        assert_eq!(*seq, i as i64 + 1, "a gap in the Group's sequences");
    }
    let posted: Vec<&String> = log
        .iter()
        .map(|(_, cause, _, _)| cause)
        .filter(|c| c.starts_with("urn:cluster:") && c.contains(":note-"))
        .collect();
    let unique: BTreeSet<&String> = posted.iter().copied().collect();
    assert_eq!(
        unique.len(),
        posted.len(),
        "an acknowledged Command is in the log twice"
    );
    let acked_refs: BTreeSet<&String> = acked.iter().collect();
    assert_eq!(
        unique, acked_refs,
        "the log and the acknowledgements differ"
    );
    log.len() as u64
}

fn three_nodes(pg: &Postgres, data: &Path) -> Vec<Node> {
    let a = Node::start(pg, data, "node-a");
    a.wait_for("is the writer", Duration::from_secs(30));
    let b = Node::start(pg, data, "node-b");
    let c = Node::start(pg, data, "node-c");
    vec![a, b, c]
}

/// Posters on every node, each posting `count` messages through its own node (retrying on
/// others when that fails) until `stop` is set.
fn posters(
    data: &Path,
    addrs: &[String],
    count: usize,
    acked: &Arc<Mutex<BTreeSet<String>>>,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<usize>> {
    ["mission-owner", "coordinator", "analyst"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let who = Principal::in_data(data, name);
            let (addrs, acked, stop) = (addrs.to_vec(), Arc::clone(acked), Arc::clone(stop));
            let name = (*name).to_owned();
            std::thread::spawn(move || {
                let mut retries = 0;
                for n in 0..count {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let (action, bytes) =
                        message(&who, &format!("{name}:note-"), n, name != "mission-owner");
                    retries += post_until_accepted(&addrs, i, &bytes, Duration::from_secs(60));
                    acked.lock().unwrap().insert(action);
                }
                retries
            })
        })
        .collect()
}

#[test]
fn every_node_serves_and_fans_out_the_one_log_in_its_order() {
    let _alone = alone();
    let pg = Postgres::start("fanout");
    let data = support::temp("cluster", "fanout");
    let nodes = three_nodes(&pg, &data);
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    // Ready on every node: the writer holds its lease, each follower has folded the log and
    // seen that lease (docs/operations.md, "/readyz").
    for a in &addrs {
        let t = Instant::now();
        loop {
            let (status, body) = support::get(a, "/readyz").unwrap();
            if status == 200 {
                assert_eq!(body, r#"{"ready":true}"#);
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "{a}: {status} {body}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    setup_mission(&data, &addrs);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // One subscriber on each node.
    let subs: Vec<Subscriber> = ["developer", "tester", "reviewer"]
        .iter()
        .enumerate()
        .map(|(i, who)| subscribe(&rt, &data, who, addrs.clone(), i))
        .collect();
    let acked: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    for t in posters(&data, &addrs, 30, &acked, &stop) {
        t.join().unwrap();
    }
    let head = check_log(&pg, &acked.lock().unwrap());
    let views: Vec<Vec<(u64, String)>> = subs
        .iter()
        .map(|s| s.through(head, Duration::from_secs(30)))
        .collect();
    // Each member sees the Group from its Membership on (§17.2): compare from the latest
    // first sequence.
    let from = views.iter().map(|v| v[0].0).max().unwrap();
    for (i, v) in views.iter().enumerate() {
        assert_gapless(v, head, &format!("subscriber {i}"));
        let tail: Vec<&(u64, String)> = v.iter().filter(|(q, _)| *q >= from).collect();
        let first: Vec<&(u64, String)> = views[0].iter().filter(|(q, _)| *q >= from).collect();
        assert_eq!(tail, first, "node {i} fanned out another order");
    }
    // The posters sent through every node (the mission-owner's through node A): node C's
    // subscriber saw each of their Events, once.
    let ids: BTreeSet<&String> = views[2].iter().map(|(_, id)| id).collect();
    assert_eq!(ids.len(), views[2].len());
    println!(
        "fan-out: {head} Events, {} acknowledged Commands through 3 nodes, the same order on \
         each node's subscriber",
        acked.lock().unwrap().len()
    );
}

#[test]
fn kill_9_of_the_writer_under_load_loses_nothing_and_another_node_takes_over() {
    let _alone = alone();
    let pg = Postgres::start("kill");
    let data = support::temp("cluster", "kill");
    let mut nodes = three_nodes(&pg, &data);
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    setup_mission(&data, &addrs);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The writer's subscriber must reconnect elsewhere.
    let subs: Vec<Subscriber> = ["developer", "tester"]
        .iter()
        .enumerate()
        .map(|(i, who)| subscribe(&rt, &data, who, addrs.clone(), i))
        .collect();
    let acked: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let threads = posters(&data, &addrs, 150, &acked, &stop);
    while acked.lock().unwrap().len() < 60 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let killed = Instant::now();
    let before = acked.lock().unwrap().len();
    nodes[0].child.kill().unwrap(); // SIGKILL
    let _ = nodes[0].child.wait();
    // Takeover: the first Command accepted after the kill.
    while acked.lock().unwrap().len() <= before + 3 {
        assert!(
            killed.elapsed() < Duration::from_secs(30),
            "no node took over"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let takeover = killed.elapsed();
    let retries: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(
        nodes[1].is_writer() || nodes[2].is_writer(),
        "another node is the writer"
    );
    let head = check_log(&pg, &acked.lock().unwrap());
    for (i, s) in subs.iter().enumerate() {
        let v = s.through(head, Duration::from_secs(30));
        assert_gapless(&v, head, &format!("subscriber {i}"));
    }
    assert!(
        !subs[0].reconnections.lock().unwrap().is_empty(),
        "the killed node's subscriber reconnected to another node"
    );
    // A node started now loads the writers' latest snapshot and folds only what follows;
    // its subscriber gets the whole Group all the same.
    let late = Node::start(&pg, &data, "node-d");
    let started = late
        .lines
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("Events from a snapshot"))
        .cloned()
        .unwrap();
    let from: u64 = started
        .split("): ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(from >= 100, "{started}");
    let fresh = subscribe(&rt, &data, "reviewer", vec![late.addr.clone()], 0);
    assert_gapless(
        &fresh.through(head, Duration::from_secs(30)),
        head,
        "node-d's subscriber",
    );
    println!(
        "kill -9: {} acknowledged, all in the log once, sequences 1..={head}; first acceptance \
         {} ms after the kill; {retries} retries; subscribers resumed on another node; a node \
         started afterwards loaded a snapshot",
        acked.lock().unwrap().len(),
        takeover.as_millis()
    );
}

#[test]
fn a_writer_stopped_past_its_lease_is_fenced_when_it_resumes() {
    let _alone = alone();
    let pg = Postgres::start("fence");
    let data = support::temp("cluster", "fence");
    let nodes = three_nodes(&pg, &data);
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    setup_mission(&data, &addrs);
    let old_epoch = logged(&pg).last().unwrap().2;
    nodes[0].signal("-STOP");
    // Sent to the stopped writer: the kernel accepts it; the process sees it after SIGCONT.
    let analyst = Principal::in_data(&data, "analyst");
    let (zombie_action, zombie) = message(&analyst, "zombie", 0, true);
    let to_stopped = {
        let addr = addrs[0].clone();
        std::thread::spawn(move || post(&addr, &zombie))
    };
    // Another node takes the lease once it expires, and accepts Commands.
    let t = Instant::now();
    while !(nodes[1].is_writer() || nodes[2].is_writer()) {
        assert!(t.elapsed() < Duration::from_secs(20), "nobody took over");
        std::thread::sleep(Duration::from_millis(20));
    }
    let owner = Principal::in_data(&data, "mission-owner");
    let (after_action, after) = message(&owner, "after-takeover", 0, false);
    post_until_accepted(&addrs[1..], 0, &after, Duration::from_secs(20));
    nodes[0].signal("-CONT");
    nodes[0].wait_for("stepped down as writer", Duration::from_secs(20));
    // The stopped writer's Command was not appended by it: refused (retryable) or, had it
    // reached the new writer through forwarding, accepted there.
    let answer = to_stopped.join().unwrap();
    let log = logged(&pg);
    let new_epoch = log.last().unwrap().2;
    assert!(new_epoch > old_epoch, "{old_epoch} then {new_epoch}");
    let first_new = log.iter().find(|r| r.2 == new_epoch).unwrap().3;
    assert!(
        log.iter().all(|r| r.2 != old_epoch || r.3 < first_new),
        "the fenced writer appended after the takeover"
    );
    assert!(log.iter().any(|r| r.1 == after_action));
    let zombie_logged = log.iter().filter(|r| r.1 == zombie_action).count();
    match &answer {
        Ok((200, _)) => assert_eq!(zombie_logged, 1),
        _ => assert_eq!(zombie_logged, 0, "refused, yet in the log"),
    }
    println!(
        "fence: epoch {old_epoch} stopped, epoch {new_epoch} took over; the resumed writer's \
         Command answered {:?}; no Event of epoch {old_epoch} after position {first_new}",
        answer.as_ref().map(|(c, _)| *c)
    );
}

#[test]
fn a_database_restart_under_load_costs_retries_not_acknowledged_commands() {
    let _alone = alone();
    let pg = Postgres::start("restart");
    let data = support::temp("cluster", "restart");
    let nodes = three_nodes(&pg, &data);
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    setup_mission(&data, &addrs);
    let acked: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let threads = posters(&data, &addrs, 80, &acked, &stop);
    while acked.lock().unwrap().len() < 40 {
        std::thread::sleep(Duration::from_millis(5));
    }
    pg.restart();
    let retries: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let head = check_log(&pg, &acked.lock().unwrap());
    assert_eq!(acked.lock().unwrap().len(), 240);
    println!(
        "database restart: 240 acknowledged, all in the log once ({head} Events), {retries} \
         retries answered with retryable errors"
    );
    drop(nodes);
}

/// The two summary lines of a `scenarios` run.
fn summary(out: &std::process::Output) -> (String, String) {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |p: &str| {
        text.lines()
            .find(|l| l.starts_with(p))
            .unwrap_or_else(|| panic!("no {p} line in:\n{text}"))
            .to_owned()
    };
    (line("scenarios:"), line("coverage:"))
}

#[test]
fn the_behavioural_suite_passes_through_any_node_of_three() {
    let _alone = alone();
    let pg = Postgres::start("suite");
    let data = support::temp("cluster", "suite");
    let a = Node::start_with(&pg, &data, "node-a", &["--dev-clock"]);
    a.wait_for("is the writer", Duration::from_secs(30));
    let nodes = [
        a,
        Node::start_with(&pg, &data, "node-b", &["--dev-clock"]),
        Node::start_with(&pg, &data, "node-c", &["--dev-clock"]),
    ];
    let file = data.join("scenario-principals.json");
    let out = Command::new(support::BIN)
        .args(["dev", "principals", "--scenarios", "--data"])
        .arg(&data)
        .arg("--out")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let local = Command::new(support::BIN)
        .arg("scenarios")
        .output()
        .unwrap();
    let expected = summary(&local);
    assert!(expected.0.contains(" 0 failed"), "{expected:?}");
    // Through a node that is not the writer, then through the writer.
    for node in [&nodes[2], &nodes[0]] {
        let url = format!("ws://{}/ws", node.addr);
        let live = Command::new(support::BIN)
            .args(["scenarios", "--url", &url, "--principals"])
            .arg(&file)
            .output()
            .unwrap();
        let got = summary(&live);
        println!("suite through {} ({url}): {}; {}", node.name, got.0, got.1);
        assert_eq!(got, expected, "{}", String::from_utf8_lossy(&live.stdout));
        assert!(live.status.success());
    }
}

/// The fence itself, without timing luck: a writer whose lease expired and was taken over
/// appends nothing more, whatever it had queued, and says why.
#[test]
fn the_fence_refuses_an_append_from_a_writer_whose_lease_moved_on() {
    let _alone = alone();
    use server::cluster::{lease, pg};
    use server::store::{Store, StoredEvent};
    let pg_db = Postgres::start("fence-unit");
    let mut c = pg::connect(&pg_db.url).unwrap();
    pg::migrate(&mut c).unwrap();
    let ttl = Duration::from_millis(300);
    let old = lease::try_acquire(&mut c, "old", "http://127.0.0.1:1", ttl)
        .unwrap()
        .expect("the lease is free");
    let fence = pg::Fence {
        node: "old".into(),
        epoch: old,
        ttl,
    };
    let published = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let mut store = pg::PgStore::open(
        &pg_db.url,
        fence.clone(),
        Arc::clone(&published),
        pg::AdmissionIndex::default(),
        0,
    )
    .unwrap();
    let event = |seq: u64| StoredEvent {
        group_id: Some("urn:fence:g".into()),
        sequence: seq,
        kind: "message.posted".into(),
        jcs: format!("{{\"sequence\":{seq}}}").into_bytes(),
    };
    let t = store.append_pending(&[event(1)], &[]).unwrap();
    store.wait_durable(t).unwrap();
    // Another node may not take a live lease.
    assert_eq!(
        lease::try_acquire(&mut c, "new", "http://127.0.0.1:2", ttl).unwrap(),
        None
    );
    std::thread::sleep(ttl + Duration::from_millis(100));
    let new = lease::try_acquire(&mut c, "new", "http://127.0.0.1:2", ttl)
        .unwrap()
        .expect("an expired lease is taken");
    assert!(new > old);
    // The old writer resumes: its next append is refused by the fence, and so is every one
    // after it (final).
    let t = store.append_pending(&[event(2)], &[]).unwrap();
    let refused = store.wait_durable(t).unwrap_err();
    assert!(refused.0.contains("fenced"), "{refused}");
    assert!(store.append_pending(&[event(3)], &[]).is_err());
    assert!(
        !lease::renew(&mut c, &fence).unwrap(),
        "the old lease cannot be renewed"
    );
    let rows: Vec<(i64, i64)> = c
        .query(
            "SELECT sequence, epoch FROM mwp_events ORDER BY position",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        rows,
        vec![(1, old)],
        "only the append made under the lease is kept"
    );
    assert_eq!(published.load(Ordering::SeqCst), 1);
}

/// Nodes that serve TLS forward to one another over TLS (HTTP/2, ALPN `h2`), trusting the
/// certificate they share: a Command sent to a follower over HTTPS is accepted by the writer.
#[test]
fn nodes_serving_tls_forward_over_tls() {
    let _alone = alone();
    let pg = Postgres::start("tls");
    let data = support::temp("cluster", "tls");
    let a = Node::start_with(&pg, &data, "node-a", &["--tls"]);
    a.wait_for("is the writer", Duration::from_secs(30));
    let b = Node::start_with(&pg, &data, "node-b", &["--tls"]);
    assert!(
        b.said(&format!("reachable at https://{}", b.addr)),
        "{:?}",
        b.lines.lock().unwrap()
    );
    let pem = std::fs::read_to_string(data.join("tls").join("dev-cert.pem")).unwrap();
    let create = mission_create(&data, "tls", "urn:cluster:tls:group");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ep = server::endpoint::Endpoint::new(&format!("wss://{}/ws", b.addr), Some(&pem)).unwrap();
    let (status, body) = rt
        .block_on(ep.http("POST", "/api/commands", &create))
        .unwrap();
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"status\":\"accepted\""), "{body}");
    assert!(!b.is_writer());
    println!(
        "tls: a Command sent to node-b over HTTPS was forwarded to node-a over TLS and accepted"
    );
}

#[test]
fn only_the_writer_announces_a_gate_and_the_next_writer_announces_the_next() {
    use support::gates::{Gates, receiver, registry_of, s, until, verifies};
    let _alone = alone();
    let pg = Postgres::start("notify");
    let root = support::temp("cluster", "notify");
    let data = root.join("data");
    let (hook, seen) = receiver(vec![]);
    let url = format!("http://{hook}/hook");
    // Both nodes are given the same webhook: a notice sent by each would reach it twice.
    let flags = ["--notify-webhook", url.as_str()];
    let a = Node::start_with(&pg, &data, "node-a", &flags);
    a.wait_for("is the writer", Duration::from_secs(30));
    let b = Node::start_with(&pg, &data, "node-b", &flags);
    assert!(!b.is_writer());
    // One gate, its Commands sent to the follower (forwarded to the writer).
    let mut gates = Gates::open(&b.addr, &data, &root, 1);
    until("the first notice", Duration::from_secs(30), || {
        !seen.lock().unwrap().is_empty()
    });
    // Time for a second copy to arrive, if any node but the writer sent one.
    std::thread::sleep(Duration::from_secs(3));
    let first = seen.lock().unwrap().clone();
    assert_eq!(first.len(), 1, "exactly one notice per gate: {first:?}");
    let registry = registry_of(&a.addr);
    assert!(verifies(&registry, &first[0], &first[0].body));

    // The writer killed: node-b takes the lease, and announces the next gate (and only it).
    let mut a = a;
    a.child.kill().unwrap(); // SIGKILL
    let _ = a.child.wait();
    b.wait_for("is the writer", Duration::from_secs(30));
    gates.addr = b.addr.clone();
    gates.gate(2);
    until("the second notice", Duration::from_secs(30), || {
        seen.lock().unwrap().len() >= 2
    });
    std::thread::sleep(Duration::from_secs(3));
    let all = seen.lock().unwrap().clone();
    assert_eq!(
        all.len(),
        2,
        "one notice for the new gate, none again: {all:?}"
    );
    let goals: Vec<String> = all
        .iter()
        .map(|n| {
            let v: serde_json::Value = serde_json::from_slice(&n.body).unwrap();
            assert!(verifies(&registry, n, &n.body));
            s(&v, "/workItem/goal").to_owned()
        })
        .collect();
    assert_eq!(goals, ["Deploy part 1", "Deploy part 2"]);
    drop(b);
    let _ = std::fs::remove_dir_all(&root);
}

/// `weave-console export --store postgres://…` while a node runs (one REPEATABLE READ
/// transaction): the bundle verifies offline with the human's signed Commands, and holds the
/// same Events (Group, sequence, kind, actor, Command hash) and the same Command bytes as the
/// export of a single SQLite server that accepted the same signed Commands.
#[test]
fn an_export_from_the_cluster_verifies_and_matches_the_sqlite_export() {
    let _alone = alone();
    let pg = Postgres::start("export");
    let data = support::temp("cluster", "export");
    let node = Node::start(&pg, &data, "a");
    let addrs = vec![node.addr.clone()];
    let owner = Principal::in_data(&data, "mission-owner");
    let mut sent = vec![mission_create(&data, "load", GROUP)];
    post_until_accepted(&addrs, 0, &sent[0], Duration::from_secs(20));
    for i in 0..3 {
        let (_, bytes) = message(&owner, "owner", i, false);
        post_until_accepted(&addrs, 0, &bytes, Duration::from_secs(20));
        sent.push(bytes);
    }
    let export = |store: Option<&str>, data: &Path, out: &Path| {
        let mut c = Command::new(support::BIN);
        c.arg("export").arg("--data").arg(data);
        if let Some(url) = store {
            c.args(["--store", url]);
        }
        let o = c
            .args(["--group", GROUP, "--out"])
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let verify = |file: &Path| {
        let o = Command::new(support::BIN)
            .arg("verify-export")
            .arg(file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let from_pg = data.join("pg.jsonl");
    let said = export(Some(&pg.url), &data, &from_pg);
    println!("{said}");
    let summary = verify(&from_pg);
    println!("{summary}");
    assert!(
        summary.contains("; Command urn:cluster:load:create (mission.create) signed at "),
        "{summary}"
    );
    assert!(summary.contains(" 4 signed Commands"), "{summary}");
    assert!(summary.contains("0 without"), "{summary}");
    drop(node);

    // The same signed Commands to a single server on SQLite with the same Organization.
    let solo = support::temp("cluster", "export-sqlite");
    for entry in std::fs::read_dir(&data).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() && entry.file_name() != "pg.jsonl" {
            std::fs::copy(entry.path(), solo.join(entry.file_name())).unwrap();
        }
    }
    let server = support::serve(|c| {
        c.args(["--no-demo", "--addr", "127.0.0.1:0", "--data"])
            .arg(&solo);
    });
    for bytes in &sent {
        post_until_accepted(
            std::slice::from_ref(&server.addr),
            0,
            bytes,
            Duration::from_secs(20),
        );
    }
    let from_sqlite = solo.join("sqlite.jsonl");
    export(None, &solo, &from_sqlite);
    verify(&from_sqlite);
    drop(server);
    let (a, b) = (
        std::fs::read(&from_pg).unwrap(),
        std::fs::read(&from_sqlite).unwrap(),
    );
    let (a, b) = (
        wasm_core::audit::verify(&a).unwrap(),
        wasm_core::audit::verify(&b).unwrap(),
    );
    assert_eq!(a.events, b.events);
    assert_eq!(a.commands, b.commands);
    let facts = |bytes: &[u8]| -> (Vec<String>, Vec<Vec<u8>>) {
        let h = json::parse(bytes.split(|c| *c == b'\n').next().unwrap()).unwrap();
        let n = |k: &str| match h.pointer(&format!("/{k}")) {
            Some(Value::Number(n)) => n.as_safe_u64().unwrap() as usize,
            _ => panic!("{k}"),
        };
        let lines: Vec<&[u8]> = bytes.split(|c| *c == b'\n').collect();
        let first = 2 + n("agentCards");
        let events = lines[first..first + n("events")]
            .iter()
            .map(|l| {
                let v = json::parse(l).unwrap();
                let s = |p: &str| v.pointer(p).map(json::to_string).unwrap_or_default();
                format!(
                    "{} {} {} {} {}",
                    s("/groupId"),
                    s("/sequence"),
                    s("/kind"),
                    s("/actor/id"),
                    s("/commandHash")
                )
            })
            .collect();
        let commands_at = first + n("events") + n("admissions");
        let commands = lines[commands_at..commands_at + n("commands")]
            .iter()
            .map(|l| l.to_vec())
            .collect();
        (events, commands)
    };
    let (pg_events, pg_commands) = facts(&std::fs::read(&from_pg).unwrap());
    let (sq_events, sq_commands) = facts(&std::fs::read(&from_sqlite).unwrap());
    assert_eq!(pg_events, sq_events);
    assert_eq!(pg_commands, sq_commands);
    println!(
        "export from PostgreSQL: {} Events and {} signed Commands, the same as from SQLite",
        pg_events.len(),
        pg_commands.len()
    );
}
