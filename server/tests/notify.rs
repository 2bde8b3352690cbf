//! `serve --notify-webhook` over real sockets (docs/notifications.md): webhook receivers on
//! 127.0.0.1 see exactly one signed notice per new execution gate, each verified with the key
//! the Organization publishes (`GET /api/registry`); a receiver that fails twice gets the same
//! notice on the third attempt and no more; a filtered receiver gets none; a tampered body
//! fails verification; an exact retry of the Command that opened a gate announces nothing.

#![allow(clippy::unwrap_used)]

use serde_json::Value as J;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasm_core::crypto::ed25519::{StrictPublicKey, StrictSignature, verify};
use wasm_core::crypto::registry::{RegistryEvidence, ValidatedRegistry};
use wasm_core::encoding::b64url_decode;
use wasm_core::json::{self, Value};

mod support;
use support::{BIN, Principal, Server};

/// One request a receiver saw: its lower-cased headers, its body and the status it answered.
#[derive(Clone, Debug)]
struct Seen {
    headers: HashMap<String, String>,
    body: Vec<u8>,
    status: u16,
}

/// A webhook receiver on 127.0.0.1 answering each request with the next of `statuses` (then
/// 200), recording what it saw.
fn receiver(statuses: Vec<u16>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut answers = statuses.into_iter();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let status = answers.next().unwrap_or(200);
            if let Some(s) = handle(stream, status) {
                log.lock().unwrap().push(s);
            }
        }
    });
    (addr, seen)
}

fn handle(stream: TcpStream, status: u16) -> Option<Seen> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    if !line.starts_with("POST ") {
        return None;
    }
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
    }
    let len: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    let mut stream = reader.into_inner();
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    Some(Seen {
        headers,
        body,
        status,
    })
}

/// A Command of `kind` by `actor` (type, id), signed with `key` (key id, base64url seed).
fn command(
    actor: (&str, &str),
    key: (&str, &str),
    kind: &str,
    action: &str,
    envelope: &[(&'static str, Value)],
    payload: Value,
) -> Vec<u8> {
    let Value::Object(payload) = payload else {
        panic!("a payload is an object")
    };
    Principal::new(actor.0, actor.1, key.0, key.1).command(kind, action, envelope, payload)
}

fn jv(text: &str) -> Value {
    json::parse_str(text).unwrap()
}

fn s<'a>(v: &'a J, ptr: &str) -> &'a str {
    v.pointer(ptr)
        .and_then(J::as_str)
        .unwrap_or_else(|| panic!("{ptr} in {v}"))
}

/// Waits until `cond` holds (or fails after 30 s).
fn until(what: &str, cond: impl Fn() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether `seen`'s signature verifies over `body` with the Registry's key of its key id.
fn verifies(registry: &ValidatedRegistry, seen: &Seen, body: &[u8]) -> bool {
    let Some(binding) = seen
        .headers
        .get("x-mwp-key-id")
        .and_then(|k| registry.binding(k))
    else {
        return false;
    };
    let key = StrictPublicKey::from_bytes(binding.public_key.as_bytes()).unwrap();
    let Some(sig) = seen
        .headers
        .get("x-mwp-signature")
        .and_then(|s| b64url_decode(s).ok())
        .and_then(|b| StrictSignature::from_bytes(&b).ok())
    else {
        return false;
    };
    verify(&key, &sig, body)
}

#[test]
fn each_new_gate_is_one_signed_notice_delivered_once_even_after_failures() {
    let dir = support::temp("notify", "gates");
    let data = dir.join("data");
    let (ok_addr, ok_seen) = receiver(vec![]);
    let (flaky_addr, flaky_seen) = receiver(vec![500, 503]);
    let (final_addr, final_seen) = receiver(vec![]);
    let server: Server = support::serve(|c| {
        c.args(["--addr", "127.0.0.1:0", "--no-demo", "--data"])
            .arg(&data)
            .args(["--metrics-addr", "127.0.0.1:0"])
            .args(["--notify-webhook", &format!("http://{ok_addr}/hook")])
            .args([
                "--notify-webhook",
                &format!("gate@http://{flaky_addr}/h?x=1"),
            ])
            .args(["--notify-webhook", &format!("final@http://{final_addr}/")]);
    });
    // Off loopback in clear: refused before anything starts.
    let refused = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--no-demo", "--data"])
        .arg(dir.join("other"))
        .args(["--notify-webhook", "http://chat.example/hook"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--notify-allow-http"));

    // Principals with keys, an ACTIVE Mission.
    let file = dir.join("principals.json");
    let out = Command::new(BIN)
        .args(["dev", "principals", "--out"])
        .arg(&file)
        .args(["--url", &format!("http://{}", server.addr), "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file: J = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let agents = &file["agents"];
    let coordinator = s(agents, "/coordinator/agentId");
    let worker = s(agents, "/worker/agentId");
    let group = s(&file, "/mission/groupId");
    let mission = s(&file, "/mission/missionId");
    let deadline = s(&file, "/mission/deadline");
    let org: J =
        serde_json::from_slice(&std::fs::read(data.join("organization.json")).unwrap()).unwrap();
    let gw = org["principals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "group-gateway")
        .unwrap();
    let post = |body: Vec<u8>| {
        let (status, text) = support::post(&server.addr, &body).unwrap();
        assert_eq!(status, 200, "{text}");
        text
    };
    let session = |agent: &str, n: u32| -> u64 {
        let text = post(command(
            ("service", s(gw, "/actor/id")),
            (s(gw, "/keyId"), s(gw, "/seed")),
            "ext.missionweaveprotocol.identity.session_open",
            &format!("urn:test:session:{n}"),
            &[],
            jv(&format!(r#"{{"agentId":"{agent}"}}"#)),
        ));
        let v: J = serde_json::from_str(&text).unwrap();
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|e| e["payload"]["sessionEpoch"].as_u64())
            .unwrap()
    };
    let epoch = session(coordinator, 1);
    let as_coordinator = |kind: &str, action: &str, payload: String| {
        post(command(
            ("agent", coordinator),
            (
                s(agents, "/coordinator/keyId"),
                s(agents, "/coordinator/privateKey"),
            ),
            kind,
            action,
            &[
                ("groupId", Value::string(group.to_owned())),
                ("sessionEpoch", Value::from(epoch)),
                ("membershipEpoch", Value::from(1u64)),
                ("coordinatorEpoch", Value::from(1u64)),
            ],
            jv(&payload),
        ))
    };
    as_coordinator(
        "membership.change",
        "urn:test:add-worker",
        format!(r#"{{"principal":{{"type":"agent","id":"{worker}"}},"roles":["worker"]}}"#),
    );
    let worker_epoch = session(worker, 2);
    let accept = |n: u32| {
        command(
            ("agent", worker),
            (s(agents, "/worker/keyId"), s(agents, "/worker/privateKey")),
            "work.accept_offer",
            &format!("urn:test:accept:{n}"),
            &[
                ("groupId", Value::string(group.to_owned())),
                ("sessionEpoch", Value::from(worker_epoch)),
                ("membershipEpoch", Value::from(1u64)),
            ],
            jv(&format!(r#"{{"workItemId":"urn:test:work:{n}"}}"#)),
        )
    };
    // Two WorkItems whose contract needs a human's Execution Approval, each offered to and
    // accepted by the worker: two gates.
    let mut accepts = Vec::new();
    for n in 1..=2u32 {
        as_coordinator(
            "work.authorize",
            &format!("urn:test:authorize:{n}"),
            format!(
                r#"{{"workItemId":"urn:test:work:{n}","contract":{{"goal":"Deploy part {n}",
                   "deliverables":["a staging deployment"],"acceptanceCriteria":["smoke test"],
                   "deadline":"{deadline}","sideEffectRisk":"external",
                   "executionApproval":"human_required",
                   "requiredCapabilities":[{{"id":"software.python","minimumVersion":1}}]}}}}"#
            ),
        );
        as_coordinator(
            "work.offer",
            &format!("urn:test:offer:{n}"),
            format!(
                r#"{{"workItemId":"urn:test:work:{n}","candidateAgentIds":["{worker}"],"selectionBasis":{{}}}}"#
            ),
        );
        let bytes = accept(n);
        assert!(post(bytes.clone()).contains("work.offer.accepted"));
        accepts.push(bytes);
    }
    // An exact retry of the Command that opened the first gate: the same Events, no new gate.
    post(accepts[0].clone());

    until("two notices delivered to each receiver", || {
        ok_seen.lock().unwrap().len() >= 2
            && flaky_seen
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.status == 200)
                .count()
                >= 2
    });
    // Nothing more comes (no copy, no late retry).
    std::thread::sleep(Duration::from_secs(3));
    let ok = ok_seen.lock().unwrap().clone();
    let flaky = flaky_seen.lock().unwrap().clone();
    assert_eq!(ok.len(), 2, "one notice per gate: {ok:?}");
    assert!(
        final_seen.lock().unwrap().is_empty(),
        "the final-only webhook got a gate"
    );

    // The Organization's published key verifies each notice; the body is as documented.
    let (status, text) = support::get(&server.addr, "/api/registry").unwrap();
    assert_eq!(status, 200);
    let registry = RegistryEvidence::from_fixture_json(&jv(&text))
        .unwrap()
        .validate()
        .unwrap();
    let mut goals = Vec::new();
    for seen in &ok {
        assert!(verifies(&registry, seen, &seen.body), "{seen:?}");
        assert_eq!(seen.headers["content-type"], "application/json");
        // The body is its own JCS.
        let v = json::parse(&seen.body).unwrap();
        assert_eq!(json::canonicalize(&v).unwrap(), seen.body);
        let n: J = serde_json::from_slice(&seen.body).unwrap();
        assert_eq!(n["kind"], "gate");
        assert_eq!(n["type"], "missionweave.awaiting_human");
        assert_eq!(s(&n, "/mission/id"), mission);
        assert_eq!(s(&n, "/mission/groupId"), group);
        assert!(!s(&n, "/mission/title").is_empty());
        assert_eq!(s(&n, "/workItem/owner"), worker);
        assert_eq!(n["deadlineOf"], "ownership_lease");
        assert!(wasm_core::authority::clock::Micros::parse(s(&n, "/deadline")).is_some());
        let link = s(&n, "/link");
        assert!(
            link.starts_with(&format!("http://{}/mission/", server.addr))
                && link.contains("?work_item=urn:test:work:"),
            "{link}"
        );
        goals.push(s(&n, "/workItem/goal").to_owned());
        // The attack: one byte of the body changed, the signature no longer holds.
        let mut tampered = seen.body.clone();
        let i = tampered.iter().position(|b| *b == b'1').unwrap();
        tampered[i] = b'9';
        assert!(!verifies(&registry, seen, &tampered));
        // Nor does another key's signature.
        let mut forged = seen.clone();
        forged
            .headers
            .insert("x-mwp-key-id".into(), s(agents, "/worker/keyId").into());
        assert!(!verifies(&registry, &forged, &seen.body));
    }
    goals.sort();
    assert_eq!(goals, ["Deploy part 1", "Deploy part 2"]);

    // The flaky receiver: two refusals, then the same signed notice, delivered once.
    let statuses: Vec<u16> = flaky.iter().map(|s| s.status).collect();
    assert_eq!(statuses, [500, 503, 200, 200], "{flaky:?}");
    assert_eq!(flaky[0].body, flaky[1].body);
    assert_eq!(flaky[1].body, flaky[2].body);
    assert_eq!(
        flaky[0].body, ok[0].body,
        "the same notice to every webhook"
    );
    for seen in &flaky {
        assert!(verifies(&registry, seen, &seen.body));
    }
    // The delivery log in the operator's metrics: 2 + 2 delivered, the flaky one's 2 retries.
    let operator = server.operator.clone().expect("the operator's listener");
    let (status, metrics) = support::get(&operator, "/metrics").unwrap();
    assert_eq!(status, 200);
    for line in [
        "mwp_webhook_deliveries_total{outcome=\"delivered\"} 4",
        "mwp_webhook_deliveries_total{outcome=\"retried\"} 2",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no {line} in\n{metrics}"
        );
    }
    drop(server);
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
