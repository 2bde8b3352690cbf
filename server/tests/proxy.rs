//! `serve --upstream`: the relay over real sockets, TLS on both sides.
//!
//! - Against a stand-in upstream that records what it receives: text and binary frames cross
//!   the proxy byte-for-byte in both directions, the browser's query reaches the upstream,
//!   `/api/commands` is refused (no authority here) and static files are still served.
//! - Against our own server (a child process, its development certificate trusted with
//!   `--upstream-ca`): a human and an Agent say HELLO through the proxy; when the upstream is
//!   killed the client's socket is closed with 1012; after the upstream restarts (same data
//!   directory and port) the client reconnects through the proxy, says HELLO again and
//!   resumes with SUBSCRIBE after its last sequence: every Event appended meanwhile arrives,
//!   in order, with no gap.
//!
//! Waits are bounded only so a failure cannot hang the suite; nothing asserts a duration.

#![allow(clippy::unwrap_used)]
// tungstenite's handshake callback type has a large error variant; it is not ours.
#![allow(clippy::result_large_err)]

use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::json::{self, Object, Value};

mod support;
use support::{BIN, Server as Proc};

const PATIENCE: Duration = Duration::from_secs(60);

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

fn temp(name: &str) -> PathBuf {
    support::temp("proxy", name)
}

/// Starts `weave-console serve ARGS` and waits for its `listening on https://ADDR` line.
fn spawn(args: &[&str]) -> Proc {
    spawn_with(args, &[])
}

/// [`spawn`] with environment variables (a development token).
fn spawn_with(args: &[&str], envs: &[(&str, &str)]) -> Proc {
    support::serve(|c| {
        c.envs(envs.iter().copied()).args(args);
    })
}

fn client_tls(cert: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

async fn connect(url: &str, cert: &Path) -> Ws {
    let (ws, _) = tokio::time::timeout(
        PATIENCE,
        tokio_tungstenite::connect_async_tls_with_config(
            url,
            None,
            false,
            Some(Connector::Rustls(client_tls(cert))),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    ws
}

async fn next(ws: &mut Ws) -> Option<Message> {
    loop {
        match tokio::time::timeout(PATIENCE, ws.next()).await.unwrap() {
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(m)) => return Some(m),
            _ => return None,
        }
    }
}

async fn frame(ws: &mut Ws) -> Value {
    match next(ws).await {
        Some(Message::Text(t)) => json::parse(t.as_bytes()).unwrap(),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

/// One HTTPS request (Connection: close) to `addr`, trusting `cert`.
async fn https(addr: &str, cert: &Path, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    https_request(addr, cert, method, path, "", body).await
}

/// [`https`] with extra header lines (each ending in CRLF).
async fn https_request(
    addr: &str,
    cert: &Path,
    method: &str,
    path: &str,
    extra: &str,
    body: &[u8],
) -> (u16, String) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(client_tls(cert));
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut s = connector.connect(name, tcp).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    (
        status,
        text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned(),
    )
}

// ---------------------------------------------------------------------------------------
// Byte-for-byte, against a recording stand-in upstream.

/// A TLS WebSocket endpoint that records every message and request path it receives, and
/// greets each connection with `greeting`, then echoes.
struct StandIn {
    port: u16,
    cert: PathBuf,
    received: tokio::sync::mpsc::UnboundedReceiver<(String, Message)>,
}

async fn stand_in(dir: &Path, greeting: Vec<Message>) -> StandIn {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = dir.join("stand-in.pem");
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    let key = PrivateKeyDer::from_pem_slice(ck.signing_key.serialize_pem().as_bytes()).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![ck.cert.der().clone()], key)
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, received) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let tx = tx.clone();
            let greeting = greeting.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut path = String::new();
                let cb = |req: &tokio_tungstenite::tungstenite::handshake::server::Request,
                          resp| {
                    path = req.uri().to_string();
                    Ok(resp)
                };
                let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tls, cb).await else {
                    return;
                };
                for m in greeting {
                    let _ = ws.send(m).await;
                }
                while let Some(Ok(m)) = ws.next().await {
                    if matches!(m, Message::Ping(_) | Message::Pong(_)) {
                        continue;
                    }
                    let close = matches!(m, Message::Close(_));
                    let _ = tx.send((path.clone(), m.clone()));
                    if close {
                        return;
                    }
                    let _ = ws.send(m).await;
                }
            });
        }
    });
    StandIn {
        port,
        cert,
        received,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_cross_the_proxy_byte_for_byte_both_ways() {
    let dir = temp("bytes");
    // Deliberately unusual bytes: spacing, escapes, a non-ASCII character, invalid JSON, and
    // binary data that is not UTF-8. The proxy copies; it neither parses nor re-encodes.
    let odd_down = " { \"frameType\" :\"EVENT\",\n\t\"x\":\"\\u00e9 é\" } ";
    let greeting = vec![
        Message::Text(odd_down.into()),
        Message::Binary(vec![0u8, 1, 2, 0xfe, 0xff].into()),
    ];
    let mut up = stand_in(&dir, greeting).await;
    let upstream = format!("wss://127.0.0.1:{}/ws", up.port);
    let proxy = spawn(&[
        "--addr",
        "127.0.0.1:0",
        "--tls",
        "--data",
        dir.join("proxy").to_str().unwrap(),
        "--upstream",
        &upstream,
        "--upstream-ca",
        up.cert.to_str().unwrap(),
    ]);
    let proxy_cert = dir.join("proxy/tls/dev-cert.pem");
    let url = format!("wss://{}/ws?principal=human", proxy.addr);
    let mut ws = connect(&url, &proxy_cert).await;

    // Upstream → browser, unchanged.
    match next(&mut ws).await {
        Some(Message::Text(t)) => assert_eq!(t.as_str(), odd_down),
        other => panic!("{other:?}"),
    }
    match next(&mut ws).await {
        Some(Message::Binary(b)) => assert_eq!(&b[..], &[0u8, 1, 2, 0xfe, 0xff]),
        other => panic!("{other:?}"),
    }
    // Browser → upstream, unchanged (and echoed back unchanged).
    let odd_up = "{\"a\" : 1 ,\"b\":[ ]}   ";
    ws.send(Message::Text(odd_up.into())).await.unwrap();
    ws.send(Message::Binary(vec![9u8, 0, 0xc3].into()))
        .await
        .unwrap();
    let got = tokio::time::timeout(PATIENCE, up.received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        got.0, "/ws?principal=human",
        "the browser's query goes upstream"
    );
    assert_eq!(got.1, Message::Text(odd_up.into()));
    let got = tokio::time::timeout(PATIENCE, up.received.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.1, Message::Binary(vec![9u8, 0, 0xc3].into()));
    match next(&mut ws).await {
        Some(Message::Text(t)) => assert_eq!(t.as_str(), odd_up),
        other => panic!("{other:?}"),
    }
    match next(&mut ws).await {
        Some(Message::Binary(b)) => assert_eq!(&b[..], &[9u8, 0, 0xc3]),
        other => panic!("{other:?}"),
    }
    // A close from the browser reaches the upstream with its code.
    ws.send(Message::Close(Some(
        tokio_tungstenite::tungstenite::protocol::CloseFrame {
            code: 4001.into(),
            reason: "bye".into(),
        },
    )))
    .await
    .unwrap();
    let got = tokio::time::timeout(PATIENCE, up.received.recv())
        .await
        .unwrap()
        .unwrap();
    match got.1 {
        Message::Close(Some(c)) => {
            assert_eq!(u16::from(c.code), 4001);
            assert_eq!(c.reason.as_str(), "bye");
        }
        other => panic!("{other:?}"),
    }

    // No authority here: /api/commands is refused with a wire error; static files are served.
    let (status, body) = https(&proxy.addr, &proxy_cert, "POST", "/api/commands", b"{}").await;
    assert_eq!(status, 503, "{body}");
    let doc = json::parse(body.as_bytes()).unwrap();
    assert_eq!(
        doc.pointer("/code").and_then(Value::as_str),
        Some("AUTH_FORBIDDEN")
    );
    assert!(
        doc.pointer("/message")
            .and_then(Value::as_str)
            .is_some_and(|m| m.contains("holds no authority")),
        "{body}"
    );
    let (status, body) = https(&proxy.addr, &proxy_cert, "GET", "/", b"").await;
    assert_eq!(status, 200);
    assert!(
        body.contains("<html") || body.contains("<!DOCTYPE"),
        "{body}"
    );
    // No Organization was created: the proxy holds no keys.
    assert!(!dir.join("proxy/organization.json").exists());
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_upstream_flags_are_refused() {
    let dir = temp("flags");
    for (args, needle) in [
        (
            vec!["--upstream", "wss://127.0.0.1:9/ws"],
            "needs --upstream-ca",
        ),
        (
            vec!["--upstream", "ws://example.org/ws"],
            "only to a loopback host",
        ),
        (vec!["--upstream", "http://127.0.0.1:9/ws"], "not a wss://"),
        (
            vec![
                "--upstream",
                "wss://127.0.0.1:9/ws",
                "--upstream-ca",
                "/nonexistent.pem",
            ],
            "--upstream-ca",
        ),
    ] {
        let out = Command::new(BIN)
            .arg("serve")
            .args(["--addr", "127.0.0.1:0", "--data"])
            .arg(&dir)
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // --upstream and an authority of our own exclude each other.
    let out = Command::new(BIN)
        .args(["serve", "--upstream", "wss://h/ws", "--dev-clock"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------
// HELLO, and resuming after the upstream restarts, against our own server.

/// A Principal of the server's development Organization (`organization.json`).
struct Key {
    id: String,
    key_id: String,
    seed: SecretSeed,
}

fn key_of(data: &Path, name: &str) -> Key {
    let bytes = std::fs::read(data.join("organization.json")).unwrap();
    let org = json::parse(&bytes).unwrap();
    let Some(Value::Array(list)) = org.pointer("/principals") else {
        panic!("no principals");
    };
    let p = list
        .iter()
        .find(|p| p.pointer("/name").and_then(Value::as_str) == Some(name))
        .unwrap();
    let s = |ptr: &str| p.pointer(ptr).and_then(Value::as_str).unwrap().to_owned();
    Key {
        id: s("/actor/id"),
        key_id: s("/keyId"),
        seed: SecretSeed::from_b64url(&s("/seed")).unwrap(),
    }
}

fn hello_frame(n: u32, members: &[(&'static str, Value)]) -> String {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "frameId",
        Value::string(format!("urn:missionweaveprotocol:frame:proxy-test:{n}")),
    );
    o.insert("frameType", Value::string("HELLO"));
    for (k, v) in members {
        o.insert(*k, v.clone());
    }
    json::to_string(&Value::Object(o))
}

/// HELLO as `k`; the `server_accept` frame.
async fn hello(ws: &mut Ws, k: &Key) -> Value {
    let nonce = b64url_encode(b"proxy-test-nonce");
    let init = hello_frame(
        1,
        &[
            ("phase", Value::string("client_init")),
            ("agentId", Value::string(k.id.clone())),
            ("keyId", Value::string(k.key_id.clone())),
            ("clientNonce", Value::string(nonce.clone())),
            (
                "supportedVersions",
                Value::Array(vec![Value::string("0.1")]),
            ),
        ],
    );
    ws.send(Message::Text(init.into())).await.unwrap();
    let challenge = frame(ws).await;
    assert_eq!(
        challenge.pointer("/phase").and_then(Value::as_str),
        Some("server_challenge"),
        "{}",
        json::to_string(&challenge)
    );
    let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap().to_owned();
    let transcript = b64url_decode(&s(&challenge, "/challenge")).unwrap();
    let signature = wasm_core::crypto::ed25519::Signer::from_seed(&k.seed).sign(&transcript);
    let response = hello_frame(
        2,
        &[
            ("phase", Value::string("client_response")),
            ("agentId", Value::string(k.id.clone())),
            ("keyId", Value::string(k.key_id.clone())),
            ("clientNonce", Value::string(nonce)),
            ("serverNonce", Value::string(s(&challenge, "/serverNonce"))),
            (
                "challengeSignature",
                Value::string(b64url_encode(&signature)),
            ),
        ],
    );
    ws.send(Message::Text(response.into())).await.unwrap();
    let accept = frame(ws).await;
    assert_eq!(
        accept.pointer("/phase").and_then(Value::as_str),
        Some("server_accept"),
        "{}",
        json::to_string(&accept)
    );
    accept
}

fn signed(
    k: &Key,
    kind: &str,
    action: &str,
    env: &[(&'static str, Value)],
    payload: Object,
) -> Value {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("actionId", Value::string(action.to_owned()));
    let mut actor = Object::new();
    let t = k.id.split(':').nth(2).unwrap().to_owned();
    actor.insert("type", Value::string(t));
    actor.insert("id", Value::string(k.id.clone()));
    o.insert("actor", Value::Object(actor));
    for (name, v) in env {
        o.insert(*name, v.clone());
    }
    o.insert("kind", Value::string(kind.to_owned()));
    o.insert("correlationId", Value::string(action.to_owned()));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let issued = wasm_core::authority::Micros(now as i64 * 1_000_000).format_whole_seconds();
    o.insert("issuedAt", Value::string(issued));
    o.insert("payload", Value::Object(payload));
    let mut doc = Value::Object(o);
    sign_document(&mut doc, DocumentKind::Command, &k.key_id, &k.seed).unwrap();
    doc
}

fn command_frame(n: u32, command: Value) -> String {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "frameId",
        Value::string(format!("urn:missionweaveprotocol:frame:proxy-test:c{n}")),
    );
    o.insert("frameType", Value::string("COMMAND"));
    o.insert("command", command);
    json::to_string(&Value::Object(o))
}

/// A Message by the human owner in the Mission's Conversation.
fn post(owner: &Key, group: &str, n: u32) -> Value {
    let mut p = Object::new();
    p.insert(
        "messageId",
        Value::string(format!("{group}:message:proxy:{n}")),
    );
    p.insert("conversationId", Value::string(format!("{group}:mission")));
    p.insert("content", Value::string(format!("note {n}")));
    signed(
        owner,
        "message.post",
        &format!("urn:missionweaveprotocol:action:proxy-post:{n}"),
        &[
            ("groupId", Value::string(group.to_owned())),
            ("membershipEpoch", Value::from(1u64)),
        ],
        p,
    )
}

fn sequence(e: &Value) -> u64 {
    match e.pointer("/event/sequence") {
        Some(Value::Number(n)) => n.as_safe_u64().unwrap(),
        _ => panic!("no sequence in {}", json::to_string(e)),
    }
}

/// The next `EVENT` frames of `group` until sequence `through`, each exactly the next one.
async fn events_through(ws: &mut Ws, group: &str, after: u64, through: u64) {
    let mut at = after;
    while at < through {
        let f = frame(ws).await;
        if f.pointer("/frameType").and_then(Value::as_str) != Some("EVENT")
            || f.pointer("/event/groupId").and_then(Value::as_str) != Some(group)
        {
            continue;
        }
        assert_eq!(sequence(&f), at + 1, "no gap, no repeat");
        at += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_through_the_proxy_and_resume_after_the_upstream_restarts() {
    let dir = temp("resume");
    let data = dir.join("upstream");
    let data_s = data.to_str().unwrap().to_owned();
    let upstream = spawn(&["--addr", "127.0.0.1:0", "--tls", "--data", &data_s]);
    let up_addr = upstream.addr.clone();
    let up_cert = data.join("tls/dev-cert.pem");
    let proxy = spawn(&[
        "--addr",
        "127.0.0.1:0",
        "--tls",
        "--data",
        dir.join("proxy").to_str().unwrap(),
        "--upstream",
        &format!("wss://{up_addr}/ws"),
        "--upstream-ca",
        up_cert.to_str().unwrap(),
    ]);
    let proxy_cert = dir.join("proxy/tls/dev-cert.pem");
    let owner = key_of(&data, "mission-owner");
    let coord = key_of(&data, "coordinator");

    // The human creates a Mission over the proxy (human profile) and gets its own Events.
    let mut human = connect(
        &format!("wss://{}/ws?principal=human", proxy.addr),
        &proxy_cert,
    )
    .await;
    hello(&mut human, &owner).await;
    let token = std::process::id();
    let group = format!("urn:missionweaveprotocol:group:proxy-{token}");
    let mut p = Object::new();
    for (k, v) in [
        (
            "missionId",
            format!("urn:missionweaveprotocol:mission:proxy-{token}"),
        ),
        ("groupId", group.clone()),
        ("coordinatorId", coord.id.clone()),
        ("title", "Through the proxy".to_owned()),
        ("objective", "Relay frames".to_owned()),
        ("deadline", "2099-01-01T00:00:00Z".to_owned()),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("frames relayed")]),
    );
    let create = signed(
        &owner,
        "mission.create",
        &format!("urn:missionweaveprotocol:action:proxy-create:{token}"),
        &[("groupId", Value::string(group.clone()))],
        p,
    );
    human
        .send(Message::Text(command_frame(1, create).into()))
        .await
        .unwrap();
    let created = frame(&mut human).await;
    assert_eq!(
        created.pointer("/event/kind").and_then(Value::as_str),
        Some("mission.created"),
        "{}",
        json::to_string(&created)
    );
    for n in 1..=3 {
        human
            .send(Message::Text(
                command_frame(10 + n, post(&owner, &group, n)).into(),
            ))
            .await
            .unwrap();
    }
    // The sender gets its own Events: the third Message's sequence is the Group's head.
    let mut posted = 0;
    let mut last = 0;
    while posted < 3 {
        let f = frame(&mut human).await;
        if f.pointer("/event/kind").and_then(Value::as_str) == Some("message.posted") {
            posted += 1;
            last = sequence(&f);
        }
    }

    // The Agent says HELLO through the proxy and subscribes from the start.
    let url = format!("wss://{}/ws", proxy.addr);
    let mut agent = connect(&url, &proxy_cert).await;
    let accept = hello(&mut agent, &coord).await;
    let epoch = accept.pointer("/sessionEpoch").cloned().unwrap();
    let sub = |n: u32, after: u64| {
        let mut g = Object::new();
        g.insert("groupId", Value::string(group.clone()));
        g.insert("afterSequence", Value::from(after));
        let mut o = Object::new();
        o.insert("protocolVersion", Value::string("0.1"));
        o.insert(
            "frameId",
            Value::string(format!("urn:missionweaveprotocol:frame:proxy-test:s{n}")),
        );
        o.insert("frameType", Value::string("SUBSCRIBE"));
        o.insert(
            "subscriptionId",
            Value::string(format!("urn:missionweaveprotocol:subscription:proxy:{n}")),
        );
        o.insert("groups", Value::Array(vec![Value::Object(g)]));
        json::to_string(&Value::Object(o))
    };
    agent.send(Message::Text(sub(1, 0).into())).await.unwrap();
    events_through(&mut agent, &group, 0, last).await;

    // The upstream dies: the client's socket through the proxy is closed with 1012.
    drop(upstream);
    match next(&mut agent).await {
        Some(Message::Close(Some(c))) => assert_eq!(u16::from(c.code), 1012),
        other => panic!("expected close 1012, got {other:?}"),
    }
    // While it is down, the proxy answers a new connection with 502 (retryable).
    let refused = tokio_tungstenite::connect_async_tls_with_config(
        &url,
        None,
        false,
        Some(Connector::Rustls(client_tls(&proxy_cert))),
    )
    .await;
    assert!(refused.is_err());

    // The upstream restarts on the same port and data directory; more Events are appended
    // (directly, not through the proxy) before the client comes back.
    let upstream = spawn(&["--addr", &up_addr, "--tls", "--data", &data_s]);
    let mut direct = connect(
        &format!("wss://{}/ws?principal=human", upstream.addr),
        &up_cert,
    )
    .await;
    hello(&mut direct, &owner).await;
    for n in 4..=6 {
        direct
            .send(Message::Text(
                command_frame(20 + n, post(&owner, &group, n)).into(),
            ))
            .await
            .unwrap();
        let own = frame(&mut direct).await;
        assert_eq!(
            own.pointer("/event/kind").and_then(Value::as_str),
            Some("message.posted"),
            "{}",
            json::to_string(&own)
        );
    }

    // The client reconnects through the proxy, says HELLO again (a new Session Epoch) and
    // resumes after its last sequence: 5, 6, 7 arrive, then live Events.
    let mut agent = connect(&url, &proxy_cert).await;
    let accept = hello(&mut agent, &coord).await;
    assert_ne!(accept.pointer("/sessionEpoch").cloned().unwrap(), epoch);
    agent
        .send(Message::Text(sub(2, last).into()))
        .await
        .unwrap();
    events_through(&mut agent, &group, last, last + 3).await;
    direct
        .send(Message::Text(
            command_frame(30, post(&owner, &group, 7)).into(),
        ))
        .await
        .unwrap();
    events_through(&mut agent, &group, last + 3, last + 4).await;
    drop(proxy);
    drop(upstream);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------
// The console through the proxy (issue 26): its Registry, its reads and its enrolment.

/// A signed read's three headers for `path` by `key` (`wasm_core::crypto::request`).
fn signed_read_headers(seed: &SecretSeed, key_id: &str, path: &str) -> String {
    let signer = wasm_core::crypto::ed25519::Signer::from_seed(seed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let (k, t, sig) = wasm_core::crypto::request::sign(
        &signer,
        key_id,
        "GET",
        path,
        wasm_core::authority::Micros::from_seconds(now),
    );
    format!(
        "{}: {k}\r\n{}: {t}\r\n{}: {sig}\r\n",
        wasm_core::crypto::request::KEY_HEADER,
        wasm_core::crypto::request::TIME_HEADER,
        wasm_core::crypto::request::SIGNATURE_HEADER
    )
}

/// Proxy mode used to serve no Registry (`/api/registry` 404) and refuse `--registry`, so the
/// console could verify nothing through it. With `--registry-from-upstream` the console's reads
/// and its enrolment reach the upstream (its signed reads keep their signature); with
/// `--registry FILE` that Registry is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_reads_and_enrols_through_the_proxy() {
    let dir = temp("console");
    let data = dir.join("up");
    let token = "proxy-test-token-0123456789abcdef";
    let upstream = spawn_with(
        &[
            "--addr",
            "127.0.0.1:0",
            "--tls",
            "--no-demo",
            "--data",
            data.to_str().unwrap(),
        ],
        &[("WEAVE_DEV_TOKEN", token)],
    );
    let up_cert = data.join("tls/dev-cert.pem");
    let up_url = format!("wss://{}/ws", upstream.addr);
    let relay = spawn(&[
        "--addr",
        "127.0.0.1:0",
        "--tls",
        "--data",
        dir.join("relay").to_str().unwrap(),
        "--upstream",
        &up_url,
        "--upstream-ca",
        up_cert.to_str().unwrap(),
        "--registry-from-upstream",
    ]);
    let relay_cert = dir.join("relay/tls/dev-cert.pem");
    let (status, direct) = https(&upstream.addr, &up_cert, "GET", "/api/registry", b"").await;
    assert_eq!(status, 200);
    let (status, relayed) = https(&relay.addr, &relay_cert, "GET", "/api/registry", b"").await;
    assert_eq!(status, 200, "{relayed}");
    assert_eq!(relayed, direct, "the upstream's Registry, unchanged");
    // Enrolment through the proxy, with the upstream's token: bound upstream.
    let seed = SecretSeed::take(&mut [31u8; 32]);
    let alice = "urn:missionweaveprotocol:human:alice";
    let key_id = "urn:missionweaveprotocol:key:alice-p1";
    let body = format!(
        r#"{{"principalId":"{alice}","keyId":"{key_id}","publicKey":"{}","token":"{token}"}}"#,
        b64url_encode(&seed.public_key())
    );
    let (status, said) = https(
        &relay.addr,
        &relay_cert,
        "POST",
        "/api/enrol",
        body.as_bytes(),
    )
    .await;
    assert_eq!(status, 201, "{said}");
    let (_, registry) = https(&upstream.addr, &up_cert, "GET", "/api/registry", b"").await;
    assert!(registry.contains(key_id));
    // The signed Group list through the proxy: unsigned 401, signed 200, as upstream.
    let path = format!("/api/groups/{alice}");
    let (status, _) = https_request(&relay.addr, &relay_cert, "GET", &path, "", b"").await;
    assert_eq!(status, 401);
    let signed = signed_read_headers(&seed, key_id, &path);
    let (status, list) = https_request(&relay.addr, &relay_cert, "GET", &path, &signed, b"").await;
    assert_eq!(status, 200, "{list}");
    assert!(list.contains("\"groups\""), "{list}");
    drop(relay);

    // --registry FILE: that Registry, served as it is.
    let file = dir.join("registry.json");
    std::fs::write(&file, &registry).unwrap();
    let served = spawn(&[
        "--addr",
        "127.0.0.1:0",
        "--tls",
        "--data",
        dir.join("served").to_str().unwrap(),
        "--upstream",
        &up_url,
        "--upstream-ca",
        up_cert.to_str().unwrap(),
        "--registry",
        file.to_str().unwrap(),
    ]);
    let (status, body) = https(
        &served.addr,
        &dir.join("served/tls/dev-cert.pem"),
        "GET",
        "/api/registry",
        b"",
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains(key_id) && body.contains("organization:dev"));
    drop(served);
    drop(upstream);
    let _ = std::fs::remove_dir_all(&dir);
}
