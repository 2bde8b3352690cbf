//! An Organization of one's own, as its administrator runs it (issue 26): `org init`, `org
//! invite human`, `org agent add`, then `serve --data DIR`; a human enrols the key made in their
//! browser with the invitation (once, for that name), creates a Mission coordinated by the added
//! Agent, and `org key revoke` makes the running server refuse that key within seconds while the
//! served Registry keeps its validity window. Nothing of the development Organization appears.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasm_core::crypto::SecretSeed;
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};

mod support;

use support::BIN;
use support::org::{
    Human, OrgServer as Server, enrol, eventually, http, http_with, org, serve_watched, token_of,
};

fn serve(dir: &Path) -> Server {
    let (srv, start, _) = serve_watched(dir);
    for line in start {
        assert!(!line.contains("/join#"), "no development join link: {line}");
    }
    srv
}

fn mission_create(
    addr: &str,
    who: &str,
    key_id: &str,
    seed: &SecretSeed,
    n: u32,
    coordinator: &str,
) -> (u16, String) {
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
    let human = Human { who, key_id, seed };
    human.command(
        addr,
        &format!("urn:acme:action:{n}"),
        &group,
        "mission.create",
        p,
        None,
    )
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
    let token = token_of(&link);
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
    let token = token_of(&out);
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

/// A signed console read (`wasm_core::crypto::request`) of `path` by `key_id`.
fn signed_get(addr: &str, path: &str, key_id: &str, seed: &SecretSeed) -> (u16, String) {
    let now = wasm_core::authority::Micros::from_seconds(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64,
    );
    let signer = wasm_core::crypto::ed25519::Signer::from_seed(seed);
    let (k, at, sig) = wasm_core::crypto::request::sign(&signer, key_id, "GET", path, now);
    http_with(
        addr,
        "GET",
        path,
        b"",
        &[
            ("x-mwp-key-id", k),
            ("x-mwp-signed-at", at),
            ("x-mwp-signature", sig),
        ],
    )
}

/// The first stdout line containing `what` within `secs` seconds.
fn line_with(rx: &std::sync::mpsc::Receiver<String>, what: &str, secs: u64) -> String {
    let until = std::time::Instant::now() + Duration::from_secs(secs);
    let mut seen = Vec::new();
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(what) => return line,
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    panic!("no line with {what:?} in {secs} s:\n{}", seen.join("\n"));
}

/// The demo in an Organization of one's own (`org demo`): its Agents are the Organization's,
/// it holds no human key, proposes its two Missions to the Organization's humans only, and an
/// invited human who creates them reaches an execution gate and grants it with their own key.
#[test]
fn the_demo_in_an_organization_of_ones_own_waits_for_its_human() {
    let dir = std::env::temp_dir().join(format!("weave-organization-d-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("gamma");
    assert!(org(&data, &["init", "--name", "Gamma Labs"]).0);
    let (_, out, _) = org(&data, &["invite", "human", "alice"]);
    let token = token_of(&out);
    let (ok, out, err) = org(&data, &["demo", "--owner", "alice"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("urn:missionweaveprotocol:agent:coordinator"),
        "{out}"
    );
    assert!(!out.contains("human:"), "no human key is made: {out}");
    let (ok, _, err) = org(&data, &["demo", "--owner", "alice"]);
    assert!(!ok && err.contains("already"), "twice: {err}");
    let keys = data.join("demo-agents.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&keys).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the demo's keys are private");
    }
    let (_, agents, _) = org(&data, &["agent", "list"]);
    assert!(agents.contains("10 Agent Card(s)"), "{agents}");

    let (srv, _, rx) = serve_watched(&data);
    let a = srv.1.clone();
    // The attacks: unsigned, and an Agent of the Organization (it may not create a root Mission).
    let (status, _) = http(&a, "GET", "/api/demo/proposals", b"");
    assert_eq!(status, 401);
    let file = json::parse(&std::fs::read(&keys).unwrap()).unwrap();
    let Some(Value::Array(list)) = file.pointer("/principals") else {
        panic!("no principals");
    };
    let coordinator = list
        .iter()
        .find(|p| p.pointer("/name").and_then(Value::as_str) == Some("coordinator"))
        .unwrap();
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap().to_owned();
    let agent_seed = SecretSeed::from_b64url(&text(coordinator, "/seed")).unwrap();
    let (status, body) = signed_get(
        &a,
        "/api/demo/proposals",
        &text(coordinator, "/keyId"),
        &agent_seed,
    );
    assert_eq!(status, 403, "{body}");

    // Alice enrols with the invitation and reads the proposals.
    let alice_seed = SecretSeed::take(&mut [31u8; 32]);
    let alice_key = "urn:missionweaveprotocol:key:alice-g1";
    let (status, body) = enrol(&a, "alice", alice_key, &alice_seed, &token);
    assert_eq!(status, 201, "{body}");
    line_with(&rx, "proposes Mission", 60);
    let mut proposals = Vec::new();
    assert!(eventually(|| {
        let (status, body) = signed_get(&a, "/api/demo/proposals", alice_key, &alice_seed);
        if status != 200 {
            return false;
        }
        let v = json::parse(body.as_bytes()).unwrap();
        if let Some(Value::Array(l)) = v.pointer("/proposals") {
            proposals = l.clone();
        }
        proposals.len() == 2
    }));
    let alice = Human {
        who: "alice",
        key_id: alice_key,
        seed: &alice_seed,
    };
    let mut groups = std::collections::BTreeMap::new();
    for (i, p) in proposals.iter().enumerate() {
        let Some(Value::Object(payload)) = p.pointer("/payload") else {
            panic!("a proposal without a payload");
        };
        let group = text(p, "/groupId");
        groups.insert(text(p, "/missionId"), group.clone());
        let (status, body) = alice.command(
            &a,
            &format!("urn:gamma:action:create-{i}"),
            &group,
            "mission.create",
            payload.clone(),
            None,
        );
        assert_eq!(status, 200, "{body}");
    }
    // Created: withdrawn.
    assert!(eventually(|| signed_get(
        &a,
        "/api/demo/proposals",
        alice_key,
        &alice_seed
    )
    .1
    .contains(r#""proposals":[]"#)));

    // The demo's Agents plan, claim and ask; the first execution gate waits for alice.
    let gate = line_with(&rx, "decides it in the console", 240);
    assert!(gate.contains("execution approval of WorkItem"), "{gate}");
    assert!(!gate.contains("dev approve"), "{gate}");
    let after = |s: &str, m: &str| s.split(m).nth(1).unwrap().to_owned();
    let work_item = after(&gate, "WorkItem ")
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let mission = after(&gate, "Mission ")
        .split(',')
        .next()
        .unwrap()
        .to_owned();
    let epoch: u64 = after(&gate, "Ownership Epoch ")
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let operations: Vec<Value> = after(&gate, "operations ")
        .split("):")
        .next()
        .unwrap()
        .split(", ")
        .map(|o| Value::string(o.to_owned()))
        .collect();
    let mut p = Object::new();
    p.insert(
        "approvalId",
        Value::string(format!("{work_item}:approval:{epoch}")),
    );
    p.insert("workItemId", Value::string(work_item.clone()));
    p.insert("ownershipEpoch", Value::from(epoch));
    p.insert("operations", Value::Array(operations));
    p.insert("expiresInSeconds", Value::from(60u64));
    // The MissionOwner's Membership is the Group's first (epoch 1, §8).
    let (status, body) = alice.command(
        &a,
        "urn:gamma:action:grant-1",
        &groups[&mission],
        "approval.grant_execution",
        p,
        Some(1),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("approval.execution.granted"), "{body}");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
