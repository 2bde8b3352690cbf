//! Crash safety: SIGKILL the server while clients are sending signed Commands, restart it, and
//! check that every Command a client saw accepted is in the log exactly once, and nothing a
//! client did not see accepted is (after clients retry their in-flight Commands, which an
//! exact retry makes safe: §15.1).

#![allow(clippy::unwrap_used)]

mod support;
use support::{Principal, post};

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasm_core::json::{self, Object, Value};

/// A Command whose outcome the client never heard: (Action ID, signed bytes).
type InFlight = (String, Vec<u8>);

/// Starts the server; returns it, its address and the projection hash it replayed to.
/// Callers kill and wait for the child.
#[allow(clippy::zombie_processes)]
fn start(data: &std::path::Path) -> (Child, String, String) {
    let public = concat!(env!("CARGO_MANIFEST_DIR"), "/../public");
    let mut child = Command::new(env!("CARGO_BIN_EXE_weave-console"))
        .args([
            "serve",
            // The demo's Agents would add their own Messages to the log this test counts.
            "--no-demo",
            "--addr",
            "127.0.0.1:0",
            "--public",
            public,
            "--data",
        ])
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut projection = String::new();
    loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(h) = line.split("projection ").nth(1) {
            projection = h.trim().to_owned();
        }
        if let Some(addr) = line.split("listening on http://").nth(1) {
            return (child, addr.trim().to_owned(), projection);
        }
    }
}

fn status_of(body: &str) -> Option<String> {
    json::parse_str(body).ok().and_then(|v| {
        v.pointer("/status")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

#[test]
fn sigkill_during_load_loses_nothing_acknowledged_and_invents_nothing() {
    let data = std::env::temp_dir().join(format!("weave-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let (mut server, addr, _) = start(&data);
    let org = json::parse(&std::fs::read(data.join("organization.json")).unwrap()).unwrap();
    let owner = Principal::of(&org, "mission-owner");
    let group = "urn:crash:group";
    let mut p = Object::new();
    for (k, v) in [
        ("missionId", "urn:crash:mission"),
        ("groupId", group),
        ("title", "Crash test"),
        ("objective", "Lose nothing"),
        ("deadline", "2099-01-01T00:00:00Z"),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "coordinatorId",
        Principal::of(&org, "coordinator")
            .actor
            .pointer("/id")
            .unwrap()
            .clone(),
    );
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("no loss")]),
    );
    let (code, body) = post(
        &addr,
        &owner.command(
            "mission.create",
            "urn:crash:create",
            &[("groupId", Value::string(group))],
            p,
        ),
    )
    .unwrap();
    assert_eq!(code, 200, "{body}");
    // Four posters: the owner (human), the Coordinator and two Agents added as members.
    let posters = ["mission-owner", "coordinator", "analyst", "developer"];
    for (i, a) in ["analyst", "developer"].iter().enumerate() {
        let mut p = Object::new();
        p.insert("principal", Principal::of(&org, a).actor.clone());
        p.insert("roles", Value::Array(vec![Value::string("worker")]));
        let env = [
            ("groupId", Value::string(group)),
            ("membershipEpoch", Value::from(1u64)),
        ];
        let (code, body) = post(
            &addr,
            &owner.command(
                "membership.change",
                &format!("urn:crash:member:{i}"),
                &env,
                p,
            ),
        )
        .unwrap();
        assert_eq!(code, 200, "{body}");
    }
    let accepted: Arc<Mutex<Vec<String>>> = Arc::default();
    let in_flight: Arc<Mutex<Vec<InFlight>>> = Arc::default();
    let mut threads = Vec::new();
    for name in posters {
        let who = Principal::of(&org, name);
        let (addr, accepted, in_flight) = (addr.clone(), accepted.clone(), in_flight.clone());
        threads.push(std::thread::spawn(move || {
            let agent = who.actor.pointer("/type").and_then(Value::as_str) == Some("agent");
            for n in 0..100 {
                let action = format!("urn:crash:{name}:{n}");
                let mut p = Object::new();
                p.insert(
                    "messageId",
                    Value::string(format!("urn:crash:message:{name}:{n}")),
                );
                p.insert("conversationId", Value::string(format!("{group}:mission")));
                p.insert("content", Value::string(format!("note {n} from {name}")));
                let mut env = vec![
                    ("groupId", Value::string(group)),
                    ("membershipEpoch", Value::from(1u64)),
                ];
                if agent {
                    env.push(("sessionEpoch", Value::from(1u64)));
                }
                let bytes = who.command("message.post", &action, &env, p);
                match post(&addr, &bytes) {
                    Ok((200, body)) if status_of(&body).as_deref() == Some("accepted") => {
                        accepted.lock().unwrap().push(action);
                    }
                    Ok((code, body)) => panic!("{action}: {code} {body}"),
                    Err(_) => {
                        // The server died with this request open: outcome unknown.
                        in_flight.lock().unwrap().push((action, bytes));
                        return;
                    }
                }
            }
        }));
    }
    // Let some load through, then kill -9 in the middle of it.
    while accepted.lock().unwrap().len() < 120 {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill().unwrap(); // SIGKILL
    let _ = server.wait();
    for t in threads {
        let _ = t.join();
    }
    let (mut server, addr, _) = start(&data);
    // Clients retry what they never heard back about: exact retries are idempotent.
    for (action, bytes) in in_flight.lock().unwrap().iter() {
        let (code, body) = post(&addr, bytes).unwrap();
        assert_eq!(code, 200, "{action}: {body}");
        accepted.lock().unwrap().push(action.clone());
    }
    server.kill().unwrap();
    let _ = server.wait();
    // Replaying the same log twice gives byte-identical projections.
    let (mut a, _, first) = start(&data);
    a.kill().unwrap();
    let _ = a.wait();
    let (mut b, _, second) = start(&data);
    b.kill().unwrap();
    let _ = b.wait();
    assert!(first.starts_with("sha256:"), "{first:?}");
    assert_eq!(first, second, "replay is not deterministic");
    // The durable log: every acknowledged message.post exactly once, and no other.
    let db = rusqlite::Connection::open(data.join("authority.sqlite")).unwrap();
    let mut stmt = db
        .prepare("SELECT jcs FROM log WHERE kind = 'message.posted'")
        .unwrap();
    let mut logged: Vec<String> = stmt
        .query_map([], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .map(|b| {
            let v = json::parse(&b.unwrap()).unwrap();
            v.pointer("/cause/id")
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
        .collect();
    logged.sort();
    let mut acked = accepted.lock().unwrap().clone();
    acked.sort();
    let mut dedup = logged.clone();
    dedup.dedup();
    assert_eq!(
        dedup.len(),
        logged.len(),
        "an accepted Command appears twice"
    );
    assert_eq!(logged, acked, "log and acknowledgements differ");
    // Sequences are gapless from 1 in the Group.
    let seqs: Vec<i64> = db
        .prepare("SELECT sequence FROM log WHERE group_id = ?1 ORDER BY sequence")
        .unwrap()
        .query_map([group], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(seqs.iter().enumerate().all(|(i, s)| *s == i as i64 + 1));
    println!(
        "crash: {} acknowledged before SIGKILL or retried, {} in flight, {} in the log, sequences 1..={}, projection {first} on two replays",
        acked.len(),
        in_flight.lock().unwrap().len(),
        logged.len(),
        seqs.len()
    );
    let _ = std::fs::remove_dir_all(&data);
}
