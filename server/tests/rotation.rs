//! `org key rotate service` under a running server (issue 29, "how to rotate the authority
//! key"): Commands keep being accepted across the switch with nothing lost; the server signs
//! with the new key within a second, without a restart; the Agent Cards served after the switch
//! are signed by the new key; the log signed across the switch (old key before, new key after)
//! verifies offline with `export` + `verify-export`, also after the old key's `validUntil`;
//! an Agent's HELLO after the old key's end opens its Session (the service's `session_open`
//! signed by the new key); and an Event signed by the old key at a time after its
//! `validUntil` is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};

mod support;

use support::BIN;
use support::org::{
    Human, OrgServer as Server, enrol, eventually, http, org, serve_watched_with, token_of,
};

/// `serve` as the Organization's tests start it; the notes below come faster than the default
/// 120 a minute per Group.
fn serve_watched(dir: &Path) -> (Server, Vec<String>, std::sync::mpsc::Receiver<String>) {
    serve_watched_with(dir, &["--message-rate-per-minute", "100000"])
}

fn mission_create(addr: &str, human: &Human, n: u32, coordinator: &str) -> (u16, String) {
    let group = format!("urn:acme:group:{n}");
    let mut p = Object::new();
    for (k, v) in [
        ("missionId", format!("urn:acme:mission:{n}")),
        ("groupId", group.clone()),
        ("coordinatorId", coordinator.to_owned()),
        ("title", "Rotate the authority key".to_owned()),
        ("objective", "Keep the log verifiable".to_owned()),
        ("deadline", "2099-01-01T00:00:00Z".to_owned()),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("done")]),
    );
    human.command(
        addr,
        &format!("urn:acme:action:{n}"),
        &group,
        "mission.create",
        p,
        None,
    )
}

/// `message.post` number `n` in Group 1 (the human is its member, Membership Epoch 1).
fn note(addr: &str, human: &Human, n: u32) -> (u16, String) {
    let mut p = Object::new();
    p.insert("messageId", Value::string(format!("urn:acme:message:{n}")));
    p.insert(
        "conversationId",
        Value::string("urn:acme:group:1:mission".to_owned()),
    );
    p.insert("content", Value::string(format!("note {n}")));
    human.command(
        addr,
        &format!("urn:acme:action:note:{n}"),
        "urn:acme:group:1",
        "message.post",
        p,
        Some(1),
    )
}

/// The `signature.keyId` of every Event in an accepted answer.
fn signed_by(body: &str) -> Vec<String> {
    let v = json::parse_str(body).unwrap();
    let Some(Value::Array(events)) = v.pointer("/events") else {
        panic!("no events: {body}")
    };
    events
        .iter()
        .map(|e| {
            e.pointer("/signature/keyId")
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn key_id_of(file: &Path) -> String {
    let v = json::parse(&std::fs::read(file).unwrap()).unwrap();
    v.pointer("/keyId")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned()
}

#[test]
fn the_service_key_rotates_under_a_running_server_and_the_log_verifies_across_it() {
    let dir = std::env::temp_dir().join(format!("weave-rotation-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("acme");
    let (ok, _, err) = org(&data, &["init", "--name", "Acme Robotics"]);
    assert!(ok, "{err}");
    let old_key = key_id_of(&data.join("organization-key.json"));
    // Revoking the only service key: refused, with the way out.
    let (ok, _, err) = org(&data, &["key", "revoke", &old_key]);
    assert!(!ok && err.contains("rotate it first"), "{err}");
    // A grace shorter than the server's notice: refused.
    let (ok, _, err) = org(&data, &["key", "rotate", "service", "--grace", "2s"]);
    assert!(!ok && err.contains("at least 10 seconds"), "{err}");

    let (ok, out, err) = org(&data, &["invite", "human", "alice"]);
    assert!(ok, "{err}");
    let token = token_of(out.lines().last().unwrap());
    let agent_seed = SecretSeed::take(&mut [21u8; 32]);
    let agent_id = "urn:missionweaveprotocol:agent:acme-builder";
    let out = Command::new(BIN)
        .args(["org", "agent", "template", agent_id])
        .output()
        .unwrap();
    let card = dir.join("card.json");
    std::fs::write(&card, String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let (ok, _, err) = org(
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

    let (srv, _, _lines) = serve_watched(&data);
    let a = srv.1.clone();
    let alice_seed = SecretSeed::take(&mut [22u8; 32]);
    let alice_key = "urn:missionweaveprotocol:key:alice-r1";
    let (status, body) = enrol(&a, "alice", alice_key, &alice_seed, &token);
    assert_eq!(status, 201, "{body}");
    let alice = Human {
        who: "alice",
        key_id: alice_key,
        seed: &alice_seed,
    };
    assert!(
        eventually(|| mission_create(&a, &alice, 1, agent_id).0 == 200),
        "mission 1"
    );
    let (status, body) = note(&a, &alice, 0);
    assert_eq!(status, 200, "{body}");
    assert_eq!(signed_by(&body), vec![old_key.clone()]);

    // Commands keep arriving on another connection each while the key rotates.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = {
        let stop = std::sync::Arc::clone(&stop);
        let a = a.clone();
        std::thread::spawn(move || {
            let seed = SecretSeed::take(&mut [22u8; 32]);
            let alice = Human {
                who: "alice",
                key_id: "urn:missionweaveprotocol:key:alice-r1",
                seed: &seed,
            };
            let mut answers = Vec::new();
            let mut n = 1000;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                answers.push((n, note(&a, &alice, n)));
                std::thread::sleep(Duration::from_millis(20));
            }
            answers
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    let (ok, out, err) = org(&data, &["key", "rotate", "service", "--grace", "10s"]);
    let rotated_in = t0.elapsed();
    assert!(ok, "{err}");
    let new_key = key_id_of(&data.join("organization-key.json"));
    assert_ne!(new_key, old_key);
    assert!(out.contains(&new_key) && out.contains(&old_key), "{out}");
    assert_eq!(
        key_id_of(&data.join("organization-key.previous.json")),
        old_key,
        "the old key file is kept through the grace"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in ["organization-key.json", "organization-key.previous.json"] {
            let mode = std::fs::metadata(data.join(f))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o600, "{f}");
        }
    }
    // A second rotation inside the grace: refused.
    let (ok, _, err) = org(&data, &["key", "rotate", "service"]);
    assert!(!ok && err.contains("grace period"), "{err}");
    // The running server signs with the new key: how long after the command started.
    let mut m = 2000;
    let switched = loop {
        m += 1;
        let (status, body) = note(&a, &alice, m);
        assert_eq!(status, 200, "{body}");
        if signed_by(&body) == vec![new_key.clone()] {
            break t0.elapsed();
        }
        // The server reads the directory each second: well before the old key's end (10 s),
        // which a server that kept the old key would only switch at.
        assert!(t0.elapsed() < Duration::from_secs(5), "no switch in 5 s");
        std::thread::sleep(Duration::from_millis(10));
    };
    println!(
        "rotation: `org key rotate service` took {} ms; the running server signed with the new \
         key {} ms after the command started",
        rotated_in.as_millis(),
        switched.as_millis()
    );
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let answers = sender.join().unwrap();
    assert!(answers.len() > 10, "{}", answers.len());
    let mut keys_seen = Vec::new();
    for (n, (status, body)) in &answers {
        assert_eq!(*status, 200, "note {n} across the switch: {body}");
        for k in signed_by(body) {
            if keys_seen.last() != Some(&k) {
                keys_seen.push(k);
            }
        }
    }
    // Old key, then new key, never back.
    assert_eq!(keys_seen, vec![old_key.clone(), new_key.clone()]);

    // The Agent Cards served now are signed by the new key and verify against the served
    // Registry.
    assert!(eventually(|| {
        let (_, cards) = http(&a, "GET", "/api/registry/agent-cards", b"");
        cards.contains(&new_key)
    }));
    let (_, cards) = http(&a, "GET", "/api/registry/agent-cards", b"");
    let (_, registry) = http(&a, "GET", "/api/registry", b"");
    let registry = wasm_core::crypto::RegistryEvidence::from_registry_json(
        &json::parse_str(&registry).unwrap(),
    )
    .unwrap()
    .validate()
    .unwrap();
    let cards = json::parse_str(&cards).unwrap();
    let list: Vec<Value> = match &cards {
        Value::Array(l) => l.clone(),
        v => match v.pointer("/cards").or_else(|| v.pointer("/agentCards")) {
            Some(Value::Array(l)) => l.clone(),
            _ => panic!("cards: {cards:?}"),
        },
    };
    let current: Vec<&Value> = list
        .iter()
        .filter(|c| c.pointer("/signature/keyId").and_then(Value::as_str) == Some(&new_key))
        .collect();
    assert_eq!(current.len(), 1, "{list:?}");
    assert_eq!(
        current[0]
            .pointer("/cardVersion")
            .and_then(server::devorg::json_u64),
        Some(2)
    );
    wasm_core::crypto::verify(
        json::to_string(current[0]).as_bytes(),
        DocumentKind::AgentCard,
        &registry,
    )
    .expect("the card signed again verifies against the new key");

    // Past the old key's `validUntil`: the server goes on (new key), and the log verifies.
    std::thread::sleep(Duration::from_secs(11));
    let (status, body) = note(&a, &alice, 3000);
    assert_eq!(status, 200, "{body}");
    assert_eq!(signed_by(&body), vec![new_key.clone()]);
    // An Agent's HELLO past the old key's end: its Session is opened by a `session_open` the
    // service signs, which the authority verifies against the Registry at its `issuedAt` (it
    // would be refused if signed by the ended key), and the `session_opened` Event is signed by
    // the new key.
    let agent_key = json::parse(&std::fs::read(data.join("org.json")).unwrap())
        .unwrap()
        .pointer("/agentCards/0/publicKeys/0/keyId")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let accept = rt.block_on(async {
        let mut c = server::gateway::client::Client::connect(&format!("ws://{a}/ws"), None)
            .await
            .unwrap();
        let signer = wasm_core::crypto::ed25519::Signer::from_seed(&agent_seed);
        c.hello(agent_id, &agent_key, &signer)
            .await
            .map_err(|e| json::to_string(&e))
    });
    let accept = accept.unwrap_or_else(|e| panic!("HELLO after the old key's end: {e}"));
    assert!(accept.pointer("/sessionEpoch").is_some(), "{accept:?}");
    let conn = rusqlite::Connection::open_with_flags(
        data.join("authority.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let opened: Vec<Vec<u8>> = conn
        .prepare("SELECT jcs FROM log WHERE kind LIKE '%session_opened'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let last = json::parse(opened.last().expect("a session_opened Event")).unwrap();
    assert_eq!(
        last.pointer("/signature/keyId").and_then(Value::as_str),
        Some(new_key.as_str())
    );
    drop(conn);

    let bundle = dir.join("mission-1.mwp");
    let out = Command::new(BIN)
        .args(["export", "--data"])
        .arg(&data)
        .args(["--mission", "urn:acme:mission:1", "--out"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(BIN)
        .arg("verify-export")
        .arg(&bundle)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{said}");
    let bytes = std::fs::read(&bundle).unwrap();
    let summary = wasm_core::audit::verify(&bytes).expect("verifies in wasm-core too");
    let text = summary.lines().join("\n");
    assert!(
        text.contains(&old_key) && text.contains(&new_key),
        "both keys signed this log: {text}"
    );

    // The attack: the last Event (after the old key's end) signed again by the old key.
    let old_seed = {
        let v = json::parse(&std::fs::read(data.join("organization-key.previous.json")).unwrap())
            .unwrap();
        SecretSeed::from_b64url(v.pointer("/seed").and_then(Value::as_str).unwrap()).unwrap()
    };
    let text = String::from_utf8(bytes).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let i = lines
        .iter()
        .rposition(|l| l.contains("urn:acme:message:3000") && l.contains("\"message.posted\""))
        .expect("the last note's Event");
    let mut ev = json::parse_str(&lines[i]).unwrap();
    if let Value::Object(o) = &mut ev {
        o.remove("signature");
    }
    sign_document(&mut ev, DocumentKind::Event, &old_key, &old_seed).unwrap();
    assert_eq!(
        ev.pointer("/signature/createdAt"),
        ev.pointer("/occurredAt"),
        "signed at the Event's own time"
    );
    lines[i] = String::from_utf8(json::canonicalize(&ev).unwrap()).unwrap();
    let forged = dir.join("forged.mwp");
    std::fs::write(&forged, lines.join("\n") + "\n").unwrap();
    let out = Command::new(BIN)
        .arg("verify-export")
        .arg(&forged)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "an Event by an ended key verified");
    assert!(
        err.contains(&old_key) && err.contains("is not valid at"),
        "{err}"
    );
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
