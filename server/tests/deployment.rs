//! A deployment's own Organization: `serve --registry FILE --authority-key FILE` with the
//! protocol bundle's Registry fixture and its test keys, then signed Commands over
//! `POST /api/commands`. Also: a key that does not match the Registry is refused at start.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};
use wasm_core::crypto::{DocumentKind, sign_document};
use wasm_core::encoding::b64url_decode;
use wasm_core::json::{self, Object, Value};

fn bundle() -> std::path::PathBuf {
    std::env::var("MWP_PROTOCOL_DIR")
        .map(Into::into)
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/protocol").into())
}

fn key(name: &str) -> (String, [u8; 32]) {
    let v = json::parse(
        &std::fs::read(bundle().join(format!("cryptography/keys/{name}.json"))).unwrap(),
    )
    .unwrap();
    let seed = b64url_decode(v.pointer("/seed").and_then(Value::as_str).unwrap()).unwrap();
    (
        v.pointer("/keyId")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned(),
        seed.try_into().unwrap(),
    )
}

fn spawn(data: &std::path::Path, key_file: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_weave-console"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--public",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../public"),
            "--data",
        ])
        .arg(data)
        .arg("--registry")
        .arg(bundle().join("cryptography/keys/registry-valid.json"))
        .arg("--authority-key")
        .arg(key_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A key file as an operator keeps one: readable by its owner only (0600); the server refuses
/// any other.
fn write_key(path: &std::path::Path, text: String) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

fn post(addr: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /api/commands HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    (
        status,
        text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned(),
    )
}

fn command(
    actor: (&str, &str),
    key: &(String, [u8; 32]),
    kind: &str,
    group: Option<&str>,
    payload: Object,
) -> Vec<u8> {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 1;
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "actionId",
        Value::string(format!("urn:deploy:{kind}:{secs}")),
    );
    let mut a = Object::new();
    a.insert("type", Value::string(actor.0.to_owned()));
    a.insert("id", Value::string(actor.1.to_owned()));
    o.insert("actor", Value::Object(a));
    if let Some(g) = group {
        o.insert("groupId", Value::string(g.to_owned()));
    }
    o.insert("kind", Value::string(kind.to_owned()));
    o.insert("correlationId", Value::string("urn:deploy:correlation"));
    o.insert("issuedAt", Value::string(wasm_core::time::format_utc(secs)));
    o.insert("payload", Value::Object(payload));
    let mut doc = Value::Object(o);
    let seed = wasm_core::crypto::SecretSeed::from_slice(&key.1).unwrap();
    sign_document(&mut doc, DocumentKind::Command, &key.0, &seed).unwrap();
    json::to_string(&doc).into_bytes()
}

#[test]
fn a_deployment_supplies_its_registry_and_authority_key() {
    let dir = std::env::temp_dir().join(format!("weave-deploy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (kid, seed) = key("signing-group-authority");
    let key_file = dir.join("authority-key.json");
    write_key(
        &key_file,
        format!(
            r#"{{"keyId":"{kid}","seed":"{}"}}"#,
            wasm_core::encoding::b64url_encode(&seed)
        ),
    )
    .unwrap();
    let mut child = spawn(&dir.join("data"), &key_file);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(a) = line.split("listening on http://").nth(1) {
            break a.trim().to_owned();
        }
    };
    // The Organization registry service registers the Coordinator's Agent Card…
    let coordinator = "urn:missionweaveprotocol:agent:crypto-vector-coordinator";
    let mut card = Object::new();
    card.insert("agentId", Value::string(coordinator));
    card.insert("version", Value::from(1u64));
    card.insert("displayName", Value::string("Coordinator"));
    card.insert(
        "owner",
        Value::string("urn:missionweaveprotocol:organization:acme"),
    );
    card.insert(
        "publicKey",
        Value::string("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"),
    );
    card.insert("capabilities", Value::Array(vec![]));
    card.insert("issuedAt", Value::string("2026-07-15T00:00:00Z"));
    card.insert("signature", Value::string("x"));
    let mut p = Object::new();
    p.insert("card", Value::Object(card));
    let registry = key("signing-organization-registry");
    let (code, body) = post(
        &addr,
        &command(
            (
                "service",
                "urn:missionweaveprotocol:service:organization-registry",
            ),
            &registry,
            "ext.missionweaveprotocol.registry.agent_card_register",
            None,
            p,
        ),
    );
    assert_eq!(code, 200, "{body}");
    // …and the human MissionOwner, with its own Registry key, creates a Mission.
    let mut p = Object::new();
    for (k, v) in [
        ("missionId", "urn:deploy:mission"),
        ("groupId", "urn:deploy:group"),
        ("coordinatorId", coordinator),
        ("title", "T"),
        ("objective", "O"),
        ("deadline", "2099-01-01T00:00:00Z"),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("done")]),
    );
    let owner = key("signing-mission-owner");
    let (code, body) = post(
        &addr,
        &command(
            ("human", "urn:missionweaveprotocol:human:mission-owner"),
            &owner,
            "mission.create",
            Some("urn:deploy:group"),
            p,
        ),
    );
    assert_eq!(code, 200, "{body}");
    let v = json::parse_str(&body).unwrap();
    assert_eq!(
        v.pointer("/events/0/kind").and_then(Value::as_str),
        Some("mission.created")
    );
    assert_eq!(
        v.pointer("/events/0/acceptedBy/id").and_then(Value::as_str),
        Some("urn:missionweaveprotocol:service:group-authority")
    );
    // A Command signed by a key the Registry does not bind to its actor is refused.
    let (code, body) = post(
        &addr,
        &command(
            ("human", "urn:missionweaveprotocol:human:mission-owner"),
            &registry,
            "mission.cancel",
            Some("urn:deploy:group"),
            Object::new(),
        ),
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains("SCHEMA_VALIDATION_FAILED") || body.contains("AUTH_INVALID_SIGNATURE"),
        "{body}"
    );
    child.kill().unwrap();
    let _ = child.wait();

    // A key file that others may read: refused at start (it must be replaced, not used).
    let readable = dir.join("readable-key.json");
    std::fs::write(&readable, std::fs::read(&key_file).unwrap()).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let out = spawn(&dir.join("data3"), &readable)
        .wait_with_output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("chmod 600"), "{err}");

    // A key file that does not match the Registry: the server refuses to start, and says why.
    std::fs::remove_file(&key_file).unwrap();
    write_key(
        &key_file,
        format!(
            r#"{{"keyId":"{kid}","seed":"{}"}}"#,
            wasm_core::encoding::b64url_encode(&[9u8; 32])
        ),
    )
    .unwrap();
    let out = spawn(&dir.join("data2"), &key_file)
        .wait_with_output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not match the Registry"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_commands_get_a_clear_error_and_signature_failures_do_not_leak() {
    let dir = std::env::temp_dir().join(format!("weave-errors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (kid, seed) = key("signing-group-authority");
    let key_file = dir.join("authority-key.json");
    write_key(
        &key_file,
        format!(
            r#"{{"keyId":"{kid}","seed":"{}"}}"#,
            wasm_core::encoding::b64url_encode(&seed)
        ),
    )
    .unwrap();
    let mut child = spawn(&dir.join("data"), &key_file);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(a) = line.split("listening on http://").nth(1) {
            break a.trim().to_owned();
        }
    };
    // Duplicate member: PROTOCOL_VIOLATION, saying which member.
    let (code, body) = post(&addr, br#"{"kind":"a","kind":"b"}"#);
    assert_eq!(code, 422);
    assert!(
        body.contains("PROTOCOL_VIOLATION") && body.contains("duplicate object member"),
        "{body}"
    );
    // Not a Command: SCHEMA_VALIDATION_FAILED, saying what is missing.
    let (code, body) = post(&addr, br#"{"protocolVersion":"0.1"}"#);
    assert_eq!(code, 422);
    assert!(
        body.contains("SCHEMA_VALIDATION_FAILED") && body.contains("missing required member"),
        "{body}"
    );
    // A wrong key: AUTH_INVALID_SIGNATURE with no hint of which check failed.
    let owner = key("signing-mission-owner");
    let mut bytes = command(
        ("human", "urn:missionweaveprotocol:human:mission-owner"),
        &owner,
        "mission.create",
        Some("urn:e:g"),
        Object::new(),
    );
    let text = String::from_utf8(bytes.clone()).unwrap().replace(
        "crypto-vector-mission-owner",
        "crypto-vector-security-owner",
    );
    bytes = text.into_bytes();
    let (code, body) = post(&addr, &bytes);
    assert_eq!(code, 422);
    assert!(
        body.contains("AUTH_INVALID_SIGNATURE") && body.contains("signed document rejected"),
        "{body}"
    );
    assert!(
        !body.contains("key") || body.contains("signed document rejected"),
        "{body}"
    );
    child.kill().unwrap();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
