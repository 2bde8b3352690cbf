//! `serve --notify-webhook` over real sockets (docs/notifications.md): webhook receivers on
//! 127.0.0.1 see exactly one signed notice per new execution gate, each verified with the key
//! the Organization publishes (`GET /api/registry`); a receiver that fails twice gets the same
//! notice on the third attempt and no more; a filtered receiver gets none; a tampered body
//! fails verification; an exact retry of the Command that opened a gate announces nothing. Over
//! `https://`: a receiver with a test CA's certificate gets nothing without `--notify-ca` (the
//! delivery counted `failed`), and the signed notice with it. The receivers and the gates are
//! in `support::gates` (the cluster's test uses them too).

#![allow(clippy::unwrap_used)]

use serde_json::Value as J;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use wasm_core::json;

mod support;
use support::gates::{Gates, receiver, registry_of, s, until, verifies};
use support::{BIN, Server};

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

    // Principals with keys, an ACTIVE Mission, two WorkItems whose contract needs a human's
    // Execution Approval, each offered to and accepted by the worker: two gates.
    let gates = Gates::open(&server.addr, &data, &dir, 2);
    let file = &gates.file;
    let agents = &file["agents"];
    let worker = gates.agent("worker");
    let group = gates.group.as_str();
    let mission = s(file, "/mission/missionId");
    // An exact retry of the Command that opened the first gate: the same Events, no new gate.
    gates.send(gates.accepts[0].clone());

    until(
        "two notices delivered to each receiver",
        Duration::from_secs(30),
        || {
            ok_seen.lock().unwrap().len() >= 2
                && flaky_seen
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|s| s.status == 200)
                    .count()
                    >= 2
        },
    );
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
    let registry = registry_of(&server.addr);
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
        assert_eq!(s(&n, "/workItem/owner"), worker.as_str());
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

/// The value of `mwp_webhook_deliveries_total{outcome="OUTCOME"}` on the operator's listener
/// (0 when absent).
fn deliveries(operator: &str, outcome: &str) -> f64 {
    let (status, text) = support::get(operator, "/metrics").unwrap();
    assert_eq!(status, 200, "{text}");
    let prefix = format!("mwp_webhook_deliveries_total{{outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0.0, |v| v.parse().unwrap())
}

/// `serve --no-demo` on `data` with one webhook at `url`, the operator's listener and `extra`.
fn serve_notifying(data: &Path, url: &str, extra: &[&std::ffi::OsStr]) -> Server {
    support::serve(|c| {
        c.args(["--addr", "127.0.0.1:0", "--no-demo", "--data"])
            .arg(data)
            .args(["--metrics-addr", "127.0.0.1:0"])
            .args(["--notify-webhook", url])
            .args(extra);
    })
}

#[test]
fn an_https_webhook_is_trusted_through_notify_ca_and_refused_without_it() {
    use support::gates::{receiver_tls, test_ca};
    let dir = support::temp("notify", "tls");
    let (ca_pem, tls) = test_ca();
    let ca = dir.join("test-ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();

    // The attack: a receiver whose certificate chains to no root the server trusts (the
    // system's bundle, no --notify-ca). Nothing reaches it; the delivery is given up at once
    // (a certificate the roots refuse does not become trusted by retrying) and counted.
    let (addr, seen) = receiver_tls(std::sync::Arc::clone(&tls));
    let (first, data) = (dir.join("untrusting"), dir.join("untrusting/data"));
    let server = serve_notifying(&data, &format!("https://{addr}/hook"), &[]);
    let operator = server.operator.clone().unwrap();
    let _gates = Gates::open(&server.addr, &data, &first, 1);
    until("a failed delivery counted", Duration::from_secs(30), || {
        deliveries(&operator, "failed") >= 1.0
    });
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(deliveries(&operator, "delivered"), 0.0);
    assert_eq!(
        deliveries(&operator, "retried"),
        0.0,
        "no retry of a refused certificate"
    );
    drop(server);

    // The defence: the same kind of receiver, its CA given with --notify-ca: one notice, over
    // TLS, whose signature the Organization's published key verifies.
    let (addr, seen) = receiver_tls(tls);
    let (second, data) = (dir.join("trusting"), dir.join("trusting/data"));
    let server = serve_notifying(
        &data,
        &format!("https://{addr}/hook"),
        &[std::ffi::OsStr::new("--notify-ca"), ca.as_os_str()],
    );
    let operator = server.operator.clone().unwrap();
    let gates = Gates::open(&server.addr, &data, &second, 1);
    until("a notice over TLS", Duration::from_secs(30), || {
        !seen.lock().unwrap().is_empty()
    });
    std::thread::sleep(Duration::from_secs(2));
    let notices = seen.lock().unwrap().clone();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let registry = registry_of(&server.addr);
    assert!(verifies(&registry, &notices[0], &notices[0].body));
    let n: J = serde_json::from_slice(&notices[0].body).unwrap();
    assert_eq!(n["kind"], "gate");
    assert_eq!(s(&n, "/mission/groupId"), gates.group);
    assert_eq!(deliveries(&operator, "delivered"), 1.0);
    assert_eq!(deliveries(&operator, "failed"), 0.0);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
