//! `weave-console bench gateway --nodes N --store postgres://…` (docs/cluster.md): in one run,
//! a single node on SQLite, then N nodes over a fresh database on that PostgreSQL server, under
//! the same load: Agents in closed loops over the binding (plain WebSocket on loopback, one
//! session each; in the cluster, Agent `i` on node `i % N`), accepted Commands per second and
//! send → own `EVENT` p50/p99; the fan-out latency across nodes (a Command sent on the first
//! node, its Event received by a subscriber on the last); then the history is filled to
//! `--takeover-history` Events and the writer is killed (SIGKILL): the takeover is the time to
//! the first Command accepted through another node. A benchmark, not a test: it prints
//! figures and asserts nothing.

use super::bench_gateway::{
    GatewayArgs, Round, Sender, closed_loop, percentile, presign, round, setup_commands, submit,
};
use crate::devorg::{self, DevOrganization, DevPrincipal, Envelope};
use crate::endpoint::Endpoint;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, ExitCode};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasm_core::json::{self, Object, Value};

/// One server process; killed when dropped.
struct Proc {
    child: Child,
    addr: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn said(&self, needle: &str) -> bool {
        self.lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|l| l.contains(needle))
    }

    /// The operator listener's address (`--metrics-addr`), once the node printed it.
    fn ops(&self) -> Option<String> {
        self.lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .find_map(|l| {
                let rest = l.split("operator listener on http://").nth(1)?;
                Some(rest.split_whitespace().next()?.to_owned())
            })
    }

    fn ws(&self) -> Result<Endpoint, String> {
        Endpoint::new(&format!("ws://{}/ws", self.addr), None)
    }

    /// The CPU seconds the node has used so far, and those of its fold thread
    /// (`cluster-node`, a follower folding the log; `/proc/PID/task/*/comm`). `None` where
    /// `/proc` is not there.
    fn cpu(&self) -> Option<(f64, f64)> {
        let pid = self.child.id().to_string();
        let total = super::bench_gateway::cpu_seconds(&pid)?;
        let mut fold = 0.0;
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                let tid = t.file_name().to_string_lossy().into_owned();
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                if comm.trim_end() == "cluster-node" {
                    fold += super::bench_gateway::cpu_seconds(&format!("{pid}/task/{tid}"))
                        .unwrap_or(0.0);
                }
            }
        }
        Some((total, fold))
    }
}

/// Milliseconds of CPU per 1,000 accepted Commands between two readings of [`Proc::cpu`]:
/// what a node costs per unit of work, a figure other processes on the machine move far less
/// than the rate.
fn per_thousand(
    before: Option<(f64, f64)>,
    after: Option<(f64, f64)>,
    accepted: u64,
) -> Option<(f64, f64)> {
    let ((t0, f0), (t1, f1)) = (before?, after?);
    let k = accepted.max(1) as f64 / 1000.0;
    Some(((t1 - t0) * 1000.0 / k, (f1 - f0) * 1000.0 / k))
}

fn spawn(data: &Path, public: &Path, extra: &[&str]) -> Result<Proc, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new(exe)
        .args(["serve", "--addr", "127.0.0.1:0", "--no-demo"])
        .args(["--message-rate-per-minute", "1000000000"])
        .args(["--max-connections-per-address", "100000"])
        .args(["--sessions-per-principal", "100000"])
        .arg("--public")
        .arg(public)
        .arg("--data")
        .arg(data)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start a server: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let kept = Arc::clone(&lines);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for l in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(a) = l.split("listening on http://").nth(1)
                && let Some(t) = tx.take()
            {
                let _ = t.send(a.trim().to_owned());
            }
            kept.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(l);
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(600))
        .map_err(|_| "a server exited before listening".to_owned())?;
    Ok(Proc { child, addr, lines })
}

/// What the store did between two scrapes: transactions, Events per transaction, the mean
/// time to make one durable, the verify stage's batches. `None` without figures.
fn store_line(
    before: &std::collections::HashMap<String, f64>,
    after: &std::collections::HashMap<String, f64>,
) -> Option<String> {
    let delta = |name: &str| {
        after.get(name).copied().unwrap_or(0.0) - before.get(name).copied().unwrap_or(0.0)
    };
    let commits = delta("mwp_commit_batch_events_count");
    (commits > 0.0).then(|| {
        format!(
            "{commits:.0} transactions, {:.1} Events each, {:.2} ms to make one durable on \
             average (mwp_fsync_seconds); verify batches of {:.1} Commands, {:.2} ms each",
            delta("mwp_commit_batch_events_sum") / commits,
            delta("mwp_fsync_seconds_sum") * 1000.0 / delta("mwp_fsync_seconds_count").max(1.0),
            delta("mwp_verify_batch_commands_sum")
                / delta("mwp_verify_batch_commands_count").max(1.0),
            delta("mwp_verify_batch_seconds_sum") * 1000.0
                / delta("mwp_verify_batch_seconds_count").max(1.0),
        )
    })
}

/// The `_sum` and `_count` lines of a node's `/metrics` (Prometheus text), summed over labels;
/// empty when the scrape fails (the figures are then not printed).
fn scrape(addr: &str) -> std::collections::HashMap<String, f64> {
    use std::io::{Read, Write};
    let mut out = std::collections::HashMap::new();
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return out;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let mut text = String::new();
    if s.write_all(req.as_bytes()).is_err() || s.read_to_string(&mut text).is_err() {
        return out;
    }
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (Some(name), Some(value)) = (line.split(['{', ' ']).next(), line.rsplit(' ').next())
        else {
            continue;
        };
        if (name.ends_with("_sum") || name.ends_with("_count"))
            && let Ok(v) = value.parse::<f64>()
        {
            *out.entry(name.to_owned()).or_insert(0.0) += v;
        }
    }
    out
}

/// A fresh database on the server of `admin`; its URL. Dropped by [`drop_database`].
fn create_database(admin: &str, name: &str) -> Result<String, String> {
    let mut c = crate::cluster::pg::connect(admin).map_err(|e| e.to_string())?;
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        c.batch_execute(&sql)
            .map_err(|e| crate::cluster::pg::err(e).to_string())?;
    }
    let base = admin.split('?').next().unwrap_or(admin);
    let cut = base
        .rfind('/')
        .filter(|i| *i > base.find("://").map_or(0, |s| s + 2));
    Ok(match cut {
        Some(i) => format!("{}/{name}", &base[..i]),
        None => format!("{base}/{name}"),
    })
}

fn drop_database(admin: &str, name: &str) {
    if let Ok(mut c) = crate::cluster::pg::connect(admin) {
        let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    }
}

/// The Missions and Memberships (through the first endpoint), then one session per Agent,
/// Agent `i` on endpoint `i % n`.
async fn sessions(
    eps: &[Endpoint],
    org: &DevOrganization,
    agents: &[&DevPrincipal],
    groups: usize,
    token: &str,
) -> Result<(Vec<String>, Vec<Sender>), String> {
    let (ids, commands) = setup_commands(org, groups, agents, token)?;
    for bytes in commands {
        submit(&eps[0], &bytes).await?;
    }
    let senders = super::bench_gateway::open_senders(eps, agents, &ids).await?;
    Ok((ids, senders))
}

/// A measured row: accepted/s, p50, p99 (ms).
struct Row {
    rate: f64,
    p50: f64,
    p99: f64,
    refused: u64,
}

fn row(r: &Round) -> Row {
    Row {
        rate: r.accepted as f64 / r.secs,
        p50: percentile(&r.latencies, 0.5),
        p99: percentile(&r.latencies, 0.99),
        refused: r.refused,
    }
}

/// Send on the first endpoint, receive on the last: `count` Commands of the first Agent,
/// each timed from its send to its Event on a subscriber (the Mission owner, who inspects
/// every Group) connected to the last endpoint.
async fn fan_out(
    eps: &[Endpoint],
    org: &DevOrganization,
    agents: &[&DevPrincipal],
    sender: &mut Sender,
    token: &str,
    next: &mut u64,
    count: u64,
) -> Result<Vec<Duration>, String> {
    let owner = org.require("mission-owner")?;
    let signer = wasm_core::crypto::ed25519::Signer::from_seed(&owner.seed);
    let last = eps.last().ok_or("no endpoint")?;
    let mut sub = last.socket(true).await?;
    sub.hello(&owner.actor.id.0, &owner.key_id, &signer)
        .await
        .map_err(|e| format!("HELLO: {}", json::to_string(&e)))?;
    let f = sub.subscribe_frame(&[(sender.group.as_str(), sender.last_sequence)]);
    sub.send(&f).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Message IDs continue the rounds' numbering (an ID is used once, §9).
    let commands = presign(agents[sender.principal], sender, token, *next, count)?;
    *next += count;
    let mut out = Vec::new();
    for command in commands {
        let action = format!("{}\"", command.0);
        let t0 = Instant::now();
        let arrive = async {
            loop {
                let Some(text) = sub.next_text().await? else {
                    return Err("the subscriber's session closed".to_owned());
                };
                if text.contains(action.as_str()) && text.contains("\"frameType\":\"EVENT\"") {
                    return Ok(t0.elapsed());
                }
            }
        };
        let send = closed_loop(
            &mut sender.client,
            vec![command.clone()],
            &mut sender.last_sequence,
            1,
        );
        let (arrived, sent) =
            tokio::join!(tokio::time::timeout(Duration::from_secs(30), arrive), send);
        sent?;
        out.push(arrived.map_err(|_| "no fan-out within 30 s".to_owned())??);
    }
    out.sort();
    Ok(out)
}

/// A human's `message.post` over HTTP (the takeover probe).
fn owner_message(
    org: &DevOrganization,
    group: &str,
    n: u64,
    token: &str,
) -> Result<Vec<u8>, String> {
    let owner = org.require("mission-owner")?;
    let mut body = Object::new();
    body.insert(
        "messageId",
        Value::string(format!("{group}:probe:{token}:{n}")),
    );
    body.insert("conversationId", Value::string(format!("{group}:mission")));
    body.insert("content", Value::string(format!("takeover probe {n}")));
    let env = Envelope {
        group_id: Some(group.to_owned()),
        membership_epoch: Some(1),
        ..Envelope::default()
    };
    devorg::signed_command(
        owner,
        "message.post",
        &format!("urn:missionweaveprotocol:action:probe-{token}-{n}"),
        &env,
        body,
        crate::runtime::now(),
    )
}

pub fn run(args: &GatewayArgs, store: &str) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench gateway: {e}");
            return ExitCode::FAILURE;
        }
    };
    let dir = std::env::temp_dir().join(format!("weave-bench-cluster-{}", std::process::id()));
    let db = format!("mwp_bench_{}", std::process::id());
    let result = rt.block_on(run_async(args, store, &dir, &db));
    drop_database(store, &db);
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench gateway --nodes: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run_async(args: &GatewayArgs, admin: &str, dir: &Path, db: &str) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    let public = dir.join("public");
    std::fs::create_dir_all(&public).map_err(|e| e.to_string())?;
    let nodes = usize::from(args.nodes).max(1);
    let groups = usize::from(args.groups);
    let per_agent = args.measure.div_ceil(u64::from(args.agents)).max(1);
    let token = wasm_core::encoding::hex(&crate::gateway::random::<5>());

    // 1. One node on SQLite.
    let single_data = dir.join("single");
    let single = spawn(&single_data, &public, &["--metrics-addr", "127.0.0.1:0"])?;
    let org = devorg::load(&single_data)?;
    let agents: Vec<&DevPrincipal> = (1..=usize::from(args.agents))
        .map(|i| org.require(&devorg::load_agent_name(i)))
        .collect::<Result<_, _>>()?;
    let eps = vec![single.ws()?];
    let (_, mut senders) = sessions(&eps, &org, &agents, groups, &token).await?;
    let mut next = 0;
    // A warm-up round, then the measured one.
    round(
        &mut senders,
        &agents,
        &token,
        &mut next,
        per_agent / 4 + 1,
        1,
    )
    .await?;
    let single_ops = single.ops();
    let single_before = single_ops.as_deref().map(scrape).unwrap_or_default();
    let single_cpu = single.cpu();
    let one_round = round(&mut senders, &agents, &token, &mut next, per_agent, 1).await?;
    let single_cpu = per_thousand(single_cpu, single.cpu(), one_round.accepted);
    let one = row(&one_round);
    let single_store = store_line(
        &single_before,
        &single_ops.as_deref().map(scrape).unwrap_or_default(),
    );
    drop(senders);
    drop(single);
    println!(
        "bench gateway --nodes {nodes}: {} Agents in closed loops (one Command in flight each) \
         over {groups} Groups, plain WebSocket on loopback",
        args.agents
    );
    println!(
        "  1 node, SQLite:          {:>6.0} accepted Commands/s ({} refused); send → own EVENT \
         p50 {:.1} ms, p99 {:.1} ms",
        one.rate, one.refused, one.p50, one.p99
    );
    if let Some(line) = single_store {
        println!("    its store in that round: {line}");
    }
    if let Some((ms, _)) = single_cpu {
        println!("    its CPU in that round: {ms:.0} ms per 1,000 accepted Commands");
    }

    // 2. N nodes over one PostgreSQL database (shared data directory: one Organization).
    // The sync client runs its own runtime: off this one's workers.
    let url = tokio::task::block_in_place(|| create_database(admin, db))?;
    let data = dir.join("cluster");
    let lease = "3000";
    let mut procs = Vec::new();
    for i in 0..nodes {
        let name = format!("node-{}", i + 1);
        let p = spawn(
            &data,
            &public,
            &[
                "--store",
                &url,
                "--node",
                &name,
                "--lease-ms",
                lease,
                "--metrics-addr",
                "127.0.0.1:0",
            ],
        )?;
        if i == 0 {
            let t = Instant::now();
            while !p.said("is the writer") {
                if t.elapsed() > Duration::from_secs(30) {
                    return Err("the first node never became the writer".into());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        procs.push(p);
    }
    let org = devorg::load(&data)?;
    let agents: Vec<&DevPrincipal> = (1..=usize::from(args.agents))
        .map(|i| org.require(&devorg::load_agent_name(i)))
        .collect::<Result<_, _>>()?;
    let eps: Vec<Endpoint> = procs.iter().map(Proc::ws).collect::<Result<_, _>>()?;
    let (ids, mut senders) = sessions(&eps, &org, &agents, groups, &token).await?;
    let mut next = 0;
    round(
        &mut senders,
        &agents,
        &token,
        &mut next,
        per_agent / 4 + 1,
        1,
    )
    .await?;
    let writer_ops = procs
        .iter()
        .find(|p| p.said("is the writer"))
        .and_then(Proc::ops);
    let before = writer_ops.as_deref().map(scrape).unwrap_or_default();
    let cpu_before: Vec<_> = procs.iter().map(Proc::cpu).collect();
    let measured = round(&mut senders, &agents, &token, &mut next, per_agent, 1).await?;
    let cpu: Vec<_> = procs
        .iter()
        .zip(cpu_before)
        .map(|(p, b)| per_thousand(b, p.cpu(), measured.accepted))
        .collect();
    let many = row(&measured);
    let after = writer_ops.as_deref().map(scrape).unwrap_or_default();
    println!(
        "  {nodes} nodes, PostgreSQL:   {:>6.0} accepted Commands/s ({} refused); send → own EVENT \
         p50 {:.1} ms, p99 {:.1} ms  ({:.2}× the single node; target ≥ 0.5×, p99 < 50 ms)",
        many.rate,
        many.refused,
        many.p50,
        many.p99,
        many.rate / one.rate
    );
    let writer_index = procs.iter().position(|p| p.said("is the writer"));
    let by_node: Vec<String> = (0..nodes)
        .map(|k| {
            let mine: Vec<f64> = measured
                .medians
                .iter()
                .enumerate()
                .filter(|(i, _)| i % nodes == k)
                .map(|(_, d)| d.as_secs_f64() * 1000.0)
                .collect();
            let mean = mine.iter().sum::<f64>() / mine.len().max(1) as f64;
            let role = if writer_index == Some(k) {
                " (writer)"
            } else {
                ""
            };
            format!("node-{}{role} {mean:.1} ms", k + 1)
        })
        .collect();
    println!(
        "  the Agents' median latency by the node they are on: {}",
        by_node.join(", ")
    );
    if let Some(line) = store_line(&before, &after) {
        println!("    the writer's store in that round: {line}");
    }
    let cpu_line: Vec<String> = cpu
        .iter()
        .enumerate()
        .filter_map(|(k, c)| {
            let (ms, fold) = (*c)?;
            Some(if writer_index == Some(k) {
                format!("node-{} (writer) {ms:.0} ms", k + 1)
            } else {
                format!("node-{} {ms:.0} ms (its fold {fold:.0} ms)", k + 1)
            })
        })
        .collect();
    if !cpu_line.is_empty() {
        println!(
            "    the nodes' CPU per 1,000 accepted Commands in that round: {}",
            cpu_line.join(", ")
        );
    }
    let fan = fan_out(
        &eps,
        &org,
        &agents,
        &mut senders[0],
        &token,
        &mut next,
        args.fanout_commands,
    )
    .await?;
    println!(
        "  fan-out across nodes: a Command sent on node-1, its Event on a subscriber of \
         node-{nodes}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} Commands)",
        percentile(&fan, 0.5),
        percentile(&fan, 0.99),
        percentile(&fan, 1.0),
        fan.len()
    );

    // 3. The history to `--takeover-history`, then kill -9 of the writer.
    let history = |c: &mut postgres::Client| -> Result<u64, String> {
        let n: i64 = c
            .query_one("SELECT count(*) FROM mwp_events", &[])
            .map_err(|e| crate::cluster::pg::err(e).to_string())?
            .get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    };
    let mut pg = tokio::task::block_in_place(|| crate::cluster::pg::connect(&url))
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut shown = 0;
    let per_fill = 500;
    loop {
        let have = tokio::task::block_in_place(|| history(&mut pg))?;
        if have >= args.takeover_history {
            break;
        }
        if have >= shown + 100_000 {
            shown = have - have % 100_000;
            println!(
                "  filling the history: {have} Events ({:.0} s)",
                t.elapsed().as_secs_f64()
            );
        }
        round(&mut senders, &agents, &token, &mut next, per_fill, 4).await?;
    }
    let have = tokio::task::block_in_place(|| history(&mut pg))?;
    tokio::task::block_in_place(|| drop(pg));
    drop(senders);
    let writer = procs
        .iter()
        .position(|p| p.said("is the writer"))
        .ok_or("no writer")?;
    let other = procs
        .iter()
        .enumerate()
        .find(|(i, _)| *i != writer)
        .map(|(_, p)| p.addr.clone())
        .ok_or("one node only: no takeover to time")?;
    let probe_ep = Endpoint::new(&format!("ws://{other}/ws"), None)?;
    // The probe works before the kill.
    submit(&probe_ep, &owner_message(&org, &ids[0], 0, &token)?).await?;
    let killed = Instant::now();
    let _ = procs[writer].child.kill();
    let _ = procs[writer].child.wait();
    let mut n = 1;
    let mut refusals = 0;
    let takeover = loop {
        let bytes = owner_message(&org, &ids[0], n, &token)?;
        match submit(&probe_ep, &bytes).await {
            Ok(_) => break killed.elapsed(),
            Err(_) => refusals += 1,
        }
        if killed.elapsed() > Duration::from_secs(120) {
            return Err("no node took over within 120 s".into());
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let new_writer = procs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != writer)
        .find(|(_, p)| p.said("is the writer"))
        .map_or_else(|| "?".to_owned(), |(i, _)| format!("node-{}", i + 1));
    println!(
        "  takeover at {have} Events: kill -9 of node-{} (the writer) → first Command accepted \
         through another node after {} ms ({refusals} retryable refusals meanwhile; the lease \
         is {lease} ms; {new_writer} took over)",
        writer + 1,
        takeover.as_millis()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_per_thousand_commands_is_the_difference_scaled_and_none_without_a_reading() {
        // 2.5 s of the node and 1 s of its fold over 20,000 Commands: 125 and 50 ms per 1,000.
        assert_eq!(
            per_thousand(Some((10.0, 4.0)), Some((12.5, 5.0)), 20_000),
            Some((125.0, 50.0))
        );
        assert_eq!(per_thousand(None, Some((1.0, 0.0)), 1_000), None);
        assert_eq!(per_thousand(Some((1.0, 0.0)), None, 1_000), None);
        // No Command accepted: per one Command's worth, not a division by zero.
        assert_eq!(
            per_thousand(Some((1.0, 0.0)), Some((1.5, 0.0)), 0),
            Some((500_000.0, 0.0))
        );
    }

    #[test]
    fn this_process_cpu_and_its_thread_are_read_from_proc() {
        // This process has run code: its CPU seconds are a reading (Linux), and one of its own
        // threads' (`PID/task/TID`) no more than the whole process's.
        let pid = std::process::id().to_string();
        let Some(total) = super::super::bench_gateway::cpu_seconds(&pid) else {
            return; // no /proc here
        };
        assert!(total >= 0.0);
        let tid = std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned());
        if let Some(tid) = tid {
            let one = super::super::bench_gateway::cpu_seconds(&format!("{pid}/task/{tid}"));
            assert!(one.is_some_and(|t| t <= total + 0.01), "{one:?} > {total}");
        }
    }
}
