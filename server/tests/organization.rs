//! An Organization of one's own, as its administrator runs it (issue 26): `org init`, `org
//! invite human`, `org agent add`, then `serve --data DIR`; a human enrols the key made in their
//! browser with the invitation (once, for that name), creates a Mission coordinated by the added
//! Agent, and `org key revoke` makes the running server refuse that key within seconds while the
//! served Registry keeps its validity window. Nothing of the development Organization appears.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};

const BIN: &str = env!("CARGO_BIN_EXE_weave-console");

fn org(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("org")
        .args(args)
        .arg("--data")
        .arg(dir)
        .env_remove("WEAVE_DATA")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(dir: &Path) -> Server {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--public",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../public"),
            "--data",
        ])
        .arg(dir)
        .env_remove("WEAVE_DEV_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addr = None;
    for line in lines {
        let line = line.unwrap();
        assert!(!line.contains("/join#"), "no development join link: {line}");
        if let Some(a) = line.split("listening on http://").nth(1) {
            addr = Some(a.trim().to_owned());
            break;
        }
    }
    Server(child, addr.expect("listening"))
}

fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned(),
    )
}

fn enrol(addr: &str, name: &str, key_id: &str, seed: &SecretSeed, token: &str) -> (u16, String) {
    let body = format!(
        r#"{{"principalId":"urn:missionweaveprotocol:human:{name}","keyId":"{key_id}","publicKey":"{}","token":"{token}"}}"#,
        b64url_encode(&seed.public_key())
    );
    http(addr, "POST", "/api/enrol", body.as_bytes())
}

fn mission_create(
    addr: &str,
    who: &str,
    key_id: &str,
    seed: &SecretSeed,
    n: u32,
    coordinator: &str,
) -> (u16, String) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let group = format!("urn:acme:group:{n}");
    let mut p = Object::new();
    for (k, v) in [
        ("missionId", format!("urn:acme:mission:{n}")),
        ("groupId", group.clone()),
        ("coordinatorId", coordinator.to_owned()),
        ("title", "Ship the robot arm firmware".to_owned()),
        ("objective", "Approved by a real human".to_owned()),
        ("deadline", "2099-01-01T00:00:00Z".to_owned()),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("done")]),
    );
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("actionId", Value::string(format!("urn:acme:action:{n}")));
    let mut a = Object::new();
    a.insert("type", Value::string("human"));
    a.insert(
        "id",
        Value::string(format!("urn:missionweaveprotocol:human:{who}")),
    );
    o.insert("actor", Value::Object(a));
    o.insert("groupId", Value::string(group));
    o.insert("kind", Value::string("mission.create"));
    o.insert(
        "correlationId",
        Value::string(format!("urn:acme:action:{n}")),
    );
    o.insert("issuedAt", Value::string(wasm_core::time::format_utc(secs)));
    o.insert("payload", Value::Object(p));
    let mut doc = Value::Object(o);
    sign_document(&mut doc, DocumentKind::Command, key_id, seed).unwrap();
    http(
        addr,
        "POST",
        "/api/commands",
        json::to_string(&doc).as_bytes(),
    )
}

/// Polls `f` every 200 ms for up to 10 s (the server applies file changes within a second).
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..50 {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[test]
fn an_organization_of_ones_own_from_init_to_a_revoked_key() {
    let dir = std::env::temp_dir().join(format!("weave-organization-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("acme");

    let (ok, out, err) = org(&data, &["init", "--name", "Acme Robotics"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("urn:missionweaveprotocol:organization:acme-robotics"),
        "{out}"
    );
    let (ok, _, err) = org(&data, &["init", "--name", "Again"]);
    assert!(!ok && err.contains("already holds"), "{err}");

    // Two invitations; an Agent with its operator's public key.
    let (ok, out, err) = org(
        &data,
        &[
            "invite",
            "human",
            "alice",
            "--role",
            "approver",
            "--url",
            "https://console.acme.example",
        ],
    );
    assert!(ok, "{err}");
    let link = out.lines().last().unwrap().to_owned();
    assert!(
        link.starts_with("https://console.acme.example/join#token="),
        "{link}"
    );
    assert!(link.ends_with("&name=alice"), "{link}");
    let token = link
        .split("token=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_owned();
    let agent_seed = SecretSeed::take(&mut [11u8; 32]);
    let agent_id = "urn:missionweaveprotocol:agent:acme-builder";
    let out = Command::new(BIN)
        .args(["org", "agent", "template", agent_id])
        .output()
        .unwrap();
    assert!(out.status.success());
    let template = String::from_utf8_lossy(&out.stdout).into_owned();
    let card = dir.join("card.json");
    std::fs::write(&card, template.trim()).unwrap();
    let (ok, out, err) = org(
        &data,
        &[
            "agent",
            "add",
            "--public-key",
            &b64url_encode(&agent_seed.public_key()),
            "--card",
            card.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains(agent_id), "{out}");

    let srv = serve(&data);
    let a = srv.1.clone();
    let (status, registry) = http(&a, "GET", "/api/registry", b"");
    assert_eq!(status, 200);
    assert!(
        registry.contains("organization:acme-robotics"),
        "{registry}"
    );
    assert!(
        !registry.contains(":dev"),
        "nothing of the development Organization"
    );
    // The Agent's card is served and registered with the authority.
    let (_, cards) = http(&a, "GET", "/api/registry/agent-cards", b"");
    assert!(cards.contains(agent_id), "{cards}");

    // The attacks: no token, another name, a made-up token.
    let alice_seed = SecretSeed::take(&mut [12u8; 32]);
    let alice_key = "urn:missionweaveprotocol:key:alice-a1";
    for (name, key, t) in [
        ("alice", alice_key, ""),
        (
            "mallory",
            "urn:missionweaveprotocol:key:mallory-m1",
            token.as_str(),
        ),
        ("alice", alice_key, "made-up-token-made-up-token-0000"),
    ] {
        let (status, body) = enrol(&a, name, key, &alice_seed, t);
        assert_eq!(status, 403, "{name} {t}: {body}");
    }
    // The invited human: bound at once.
    let (status, body) = enrol(&a, "alice", alice_key, &alice_seed, &token);
    assert_eq!(status, 201, "{body}");
    // The link again, with another key: spent.
    let other = SecretSeed::take(&mut [13u8; 32]);
    let (status, body) = enrol(
        &a,
        "alice",
        "urn:missionweaveprotocol:key:alice-a2",
        &other,
        &token,
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("used already"), "{body}");

    // Alice signs a Mission coordinated by the added Agent (its card is registered within a
    // second of the server's start).
    let mut n = 0;
    assert!(
        eventually(|| {
            n += 1;
            mission_create(&a, "alice", alice_key, &alice_seed, n, agent_id).0 == 200
        }),
        "{:?}",
        mission_create(&a, "alice", alice_key, &alice_seed, 1000, agent_id)
    );

    // Revoked: the running server refuses the key within seconds; the Registry keeps it with
    // its window (what it signed before still verifies).
    let (ok, out, err) = org(&data, &["key", "revoke", alice_key]);
    assert!(ok, "{err}");
    assert!(out.contains("revoked"), "{out}");
    let mut m = 100;
    assert!(
        eventually(|| {
            m += 1;
            let (status, body) = mission_create(&a, "alice", alice_key, &alice_seed, m, agent_id);
            status == 422 && body.contains("AUTH_INVALID_SIGNATURE")
        }),
        "a revoked key still signs"
    );
    let (_, registry) = http(&a, "GET", "/api/registry", b"");
    assert!(registry.contains("revokedAt"), "{registry}");
    assert!(registry.contains(alice_key));
    drop(srv);

    // `org enrolments` tells what happened.
    let (ok, out, _) = org(&data, &["enrolments"]);
    assert!(
        ok && out.contains(alice_key) && out.contains("approver"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_confirmation_the_key_waits_for_the_administrator() {
    let dir = std::env::temp_dir().join(format!("weave-organization-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("beta");
    assert!(org(&data, &["init", "--name", "Beta", "--require-confirmation"]).0);
    let (_, out, _) = org(&data, &["invite", "human", "bob", "--expires-in", "1h"]);
    let token = out
        .split("token=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_owned();
    let srv = serve(&data);
    let seed = SecretSeed::take(&mut [21u8; 32]);
    let key = "urn:missionweaveprotocol:key:bob-b1";
    let (status, body) = enrol(&srv.1, "bob", key, &seed, &token);
    assert_eq!(status, 202, "{body}");
    assert!(body.contains("confirmation"), "{body}");
    let (_, registry) = http(&srv.1, "GET", "/api/registry", b"");
    assert!(!registry.contains(key), "not bound before confirmation");
    let (ok, out, _) = org(&data, &["enrolments"]);
    assert!(ok && out.contains("PENDING"), "{out}");
    let (ok, out, err) = org(&data, &["confirm", "bob"]);
    assert!(ok, "{err}");
    assert!(out.contains(key), "{out}");
    assert!(
        eventually(|| http(&srv.1, "GET", "/api/registry", b"").1.contains(key)),
        "served within a second of the confirmation"
    );
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
