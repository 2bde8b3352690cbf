//! An external Agent with nothing but the principals file (`weave-console dev principals`)
//! and the server's URL: it never reads the data directory. Over `/ws` (plain `ws://` on
//! loopback, a WebSocket library of its own, no code of the gateway's client), the
//! Coordinator says HELLO, subscribes to the file's Mission, adds the worker with a
//! Membership; the worker says HELLO and subscribes; and one WorkItem goes through its whole
//! lifecycle: authorize, offer, accept, start, publish an Artifact, submit with Evidence,
//! accept the result. Each Command's outcome is read from the sender's own `EVENT`s
//! (`cause.id`); the Coordinator also sees the worker's Events through its subscription.
//!
//! Waits are bounded only so a failure cannot hang the suite; nothing asserts a duration.

#![allow(clippy::unwrap_used)]

use futures_util::{SinkExt, StreamExt};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::json::{self, Object, Value};

mod support;
use support::{BIN, Server};

const PATIENCE: Duration = Duration::from_secs(60);

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

fn temp(name: &str) -> PathBuf {
    support::temp("ext", name)
}

/// `serve --no-demo` on a free loopback port (plain HTTP and `ws://` there by default).
fn serve(data: &std::path::Path) -> Server {
    support::serve(|c| {
        c.args(["--no-demo", "--addr", "127.0.0.1:0", "--data"])
            .arg(data);
    })
}

/// One principal of the file: its ID, key ID and seed.
struct Key {
    id: String,
    kind: &'static str,
    key_id: String,
    seed: SecretSeed,
}

fn text<'v>(v: &'v Value, p: &str) -> &'v str {
    v.pointer(p)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no {p} in {}", json::to_string(v)))
}

fn key(file: &Value, agent: &str) -> Key {
    let at = format!("/agents/{agent}");
    Key {
        id: text(file, &format!("{at}/agentId")).to_owned(),
        kind: "agent",
        key_id: text(file, &format!("{at}/keyId")).to_owned(),
        seed: SecretSeed::from_b64url(text(file, &format!("{at}/privateKey"))).unwrap(),
    }
}

/// One Agent's connection: its socket, Session Epoch and frame counter.
struct Agent {
    key: Key,
    ws: Ws,
    epoch: u64,
    n: u32,
}

fn frame(n: &mut u32, frame_type: &str, members: Vec<(&'static str, Value)>) -> Message {
    *n += 1;
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "frameId",
        Value::string(format!("urn:missionweaveprotocol:frame:external:{n}")),
    );
    o.insert("frameType", Value::string(frame_type.to_owned()));
    for (k, v) in members {
        o.insert(k, v);
    }
    Message::Text(json::to_string(&Value::Object(o)).into())
}

async fn next_frame(ws: &mut Ws) -> Value {
    loop {
        match tokio::time::timeout(PATIENCE, ws.next()).await.unwrap() {
            Some(Ok(Message::Text(t))) => return json::parse(t.as_bytes()).unwrap(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a frame, got {other:?}"),
        }
    }
}

impl Agent {
    /// Connects and says HELLO (payloads.md §10.1): sign the decoded challenge bytes.
    async fn hello(url: &str, key: Key) -> Agent {
        let (mut ws, _) = tokio::time::timeout(PATIENCE, tokio_tungstenite::connect_async(url))
            .await
            .unwrap()
            .unwrap();
        let mut n = 0;
        let nonce = Value::string(b64url_encode(key.id.as_bytes()));
        let init = frame(
            &mut n,
            "HELLO",
            vec![
                ("phase", Value::string("client_init")),
                ("agentId", Value::string(key.id.clone())),
                ("keyId", Value::string(key.key_id.clone())),
                ("clientNonce", nonce.clone()),
                (
                    "supportedVersions",
                    Value::Array(vec![Value::string("0.1")]),
                ),
            ],
        );
        ws.send(init).await.unwrap();
        let challenge = next_frame(&mut ws).await;
        assert_eq!(text(&challenge, "/phase"), "server_challenge");
        let bytes = b64url_decode(text(&challenge, "/challenge")).unwrap();
        let signature = Signer::from_seed(&key.seed).sign(&bytes);
        let response = frame(
            &mut n,
            "HELLO",
            vec![
                ("phase", Value::string("client_response")),
                ("agentId", Value::string(key.id.clone())),
                ("keyId", Value::string(key.key_id.clone())),
                ("clientNonce", nonce),
                (
                    "serverNonce",
                    Value::string(text(&challenge, "/serverNonce").to_owned()),
                ),
                (
                    "challengeSignature",
                    Value::string(b64url_encode(&signature)),
                ),
            ],
        );
        ws.send(response).await.unwrap();
        let accept = next_frame(&mut ws).await;
        assert_eq!(
            text(&accept, "/phase"),
            "server_accept",
            "{}",
            json::to_string(&accept)
        );
        let epoch = match accept.pointer("/sessionEpoch") {
            Some(Value::Number(e)) => e.as_safe_u64().unwrap(),
            _ => panic!("no Session Epoch"),
        };
        Agent { key, ws, epoch, n }
    }

    async fn subscribe(&mut self, group: &str) {
        let mut g = Object::new();
        g.insert("groupId", Value::string(group.to_owned()));
        g.insert("afterSequence", Value::from(0u64));
        let id = format!("urn:missionweaveprotocol:subscription:external:{}", self.n);
        let f = frame(
            &mut self.n,
            "SUBSCRIBE",
            vec![
                ("subscriptionId", Value::string(id)),
                ("groups", Value::Array(vec![Value::Object(g)])),
            ],
        );
        self.ws.send(f).await.unwrap();
    }

    /// Signs and sends a Command; its outcome is the first of its own `EVENT`s (`cause.id` =
    /// its Action ID) of `expected` kind, or the `ERROR` naming its Action ID.
    async fn command(
        &mut self,
        kind: &str,
        group: &str,
        envelope: &[(&'static str, u64)],
        payload: Value,
        expected: &str,
    ) -> Value {
        let action = format!(
            "urn:missionweaveprotocol:action:external-{}-{}-{}",
            std::process::id(),
            self.key.key_id.rsplit(':').next().unwrap_or("k"),
            self.n
        );
        let mut o = Object::new();
        o.insert("protocolVersion", Value::string("0.1"));
        o.insert("actionId", Value::string(action.clone()));
        let mut actor = Object::new();
        actor.insert("type", Value::string(self.key.kind));
        actor.insert("id", Value::string(self.key.id.clone()));
        o.insert("actor", Value::Object(actor));
        o.insert("groupId", Value::string(group.to_owned()));
        o.insert("sessionEpoch", Value::from(self.epoch));
        for (k, v) in envelope {
            o.insert(*k, Value::from(*v));
        }
        o.insert("kind", Value::string(kind.to_owned()));
        o.insert("correlationId", Value::string(action.clone()));
        o.insert("issuedAt", Value::string(now_whole_seconds()));
        o.insert("payload", payload);
        let mut doc = Value::Object(o);
        sign_document(
            &mut doc,
            DocumentKind::Command,
            &self.key.key_id,
            &self.key.seed,
        )
        .unwrap();
        let f = frame(&mut self.n, "COMMAND", vec![("command", doc)]);
        self.ws.send(f).await.unwrap();
        loop {
            let f = next_frame(&mut self.ws).await;
            match f.pointer("/frameType").and_then(Value::as_str) {
                Some("ERROR")
                    if f.pointer("/error/relatedActionId").and_then(Value::as_str)
                        == Some(action.as_str()) =>
                {
                    panic!("{kind} refused: {}", json::to_string(&f))
                }
                Some("EVENT")
                    if f.pointer("/event/cause/id").and_then(Value::as_str)
                        == Some(action.as_str())
                        && f.pointer("/event/kind").and_then(Value::as_str) == Some(expected) =>
                {
                    return f.pointer("/event").cloned().unwrap();
                }
                _ => {}
            }
        }
    }

    /// Reads until an `EVENT` of `kind` about `work_item` arrives through the subscription.
    async fn sees(&mut self, kind: &str, work_item: &str) -> Value {
        loop {
            let f = next_frame(&mut self.ws).await;
            if f.pointer("/event/kind").and_then(Value::as_str) == Some(kind)
                && f.pointer("/event/workItemId").and_then(Value::as_str) == Some(work_item)
            {
                return f;
            }
        }
    }
}

fn now_whole_seconds() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    wasm_core::authority::Micros(i64::try_from(now).unwrap() * 1_000_000).format_whole_seconds()
}

fn parse(text: &str) -> Value {
    json::parse(text.as_bytes()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_only_the_principals_file_drives_a_work_item_through_its_lifecycle() {
    let dir = temp("lifecycle");
    let data = dir.join("data");
    let server = serve(&data);
    let out = dir.join("principals.json");
    let made = Command::new(BIN)
        .args(["dev", "principals", "--url"])
        .arg(format!("http://{}", server.addr))
        .arg("--data")
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");

    // From here on, only the file and the URL.
    let file = json::parse(&std::fs::read(&out).unwrap()).unwrap();
    let group = text(&file, "/mission/groupId").to_owned();
    let mission = text(&file, "/mission/missionId").to_owned();
    let deadline = text(&file, "/mission/deadline").to_owned();
    let url = format!("ws://{}/ws", server.addr);
    let worker_key = key(&file, "worker");
    let worker_id = worker_key.id.clone();
    let worker_seed = SecretSeed::from_b64url(text(&file, "/agents/worker/privateKey")).unwrap();

    let mut coord = Agent::hello(&url, key(&file, "coordinator")).await;
    coord.subscribe(&group).await;
    let as_coordinator = [("membershipEpoch", 1), ("coordinatorEpoch", 1)];
    coord
        .command(
            "membership.change",
            &group,
            &as_coordinator,
            parse(&format!(
                r#"{{"principal":{{"type":"agent","id":"{worker_id}"}},"roles":["worker"]}}"#
            )),
            "membership.changed",
        )
        .await;

    let mut worker = Agent::hello(&url, worker_key).await;
    worker.subscribe(&group).await;
    let as_worker = [("membershipEpoch", 1)];
    let item = format!("{group}:work:external-1");
    coord
        .command(
            "work.authorize",
            &group,
            &as_coordinator,
            parse(&format!(
                r#"{{"workItemId":"{item}","contract":{{"goal":"Write the parser",
                   "deliverables":["parser.py"],"acceptanceCriteria":["tests pass"],
                   "deadline":"{deadline}",
                   "requiredCapabilities":[{{"id":"software.python","minimumVersion":1}}]}}}}"#
            )),
            "work.authorized",
        )
        .await;
    coord
        .command(
            "work.offer",
            &group,
            &as_coordinator,
            parse(&format!(
                r#"{{"workItemId":"{item}","candidateAgentIds":["{worker_id}"],"selectionBasis":{{}}}}"#
            )),
            "work.offer.created",
        )
        .await;
    // The worker learns of the offer through its subscription, then accepts and starts it.
    worker.sees("work.offer.created", &item).await;
    worker
        .command(
            "work.accept_offer",
            &group,
            &as_worker,
            parse(&format!(r#"{{"workItemId":"{item}"}}"#)),
            "work.offer.accepted",
        )
        .await;
    let started = worker
        .command(
            "work.start",
            &group,
            &as_worker,
            parse(&format!(r#"{{"workItemId":"{item}","ownershipEpoch":1}}"#)),
            "work.started",
        )
        .await;
    let lease = text(&started, "/payload/executionLease/leaseId").to_owned();

    // An Artifact with a producer-signed manifest (raw Ed25519 over its JCS bytes).
    let content = b"def parse(text):\n    return text.split()\n";
    let mut manifest = match parse(&format!(
        r#"{{"id":"{item}:artifact:parser","contentHash":"{}","mediaType":"text/x-python",
           "schemaUri":null,"producingAgentId":"{worker_id}","agentCardVersion":1,
           "missionId":"{mission}","groupId":"{group}","workItemId":"{item}",
           "sourceArtifactHashes":[],"toolVersions":{{"python":"3.12"}},"modelVersions":{{}},
           "createdAt":"{}","dataClassification":"internal"}}"#,
        wasm_core::encoding::sha256_hash(content),
        now_whole_seconds()
    )) {
        Value::Object(o) => o,
        _ => unreachable!(),
    };
    let bytes = json::canonicalize(&Value::Object(manifest.clone())).unwrap();
    let signature = Signer::from_seed(&worker_seed).sign(&bytes);
    manifest.insert("signature", Value::string(b64url_encode(&signature)));
    let mut publish = Object::new();
    publish.insert("artifact", Value::Object(manifest));
    publish.insert("ownershipEpoch", Value::from(1u64));
    publish.insert("executionLeaseId", Value::string(lease.clone()));
    worker
        .command(
            "artifact.publish",
            &group,
            &as_worker,
            Value::Object(publish),
            "artifact.published",
        )
        .await;
    worker
        .command(
            "work.submit",
            &group,
            &as_worker,
            parse(&format!(
                r#"{{"workItemId":"{item}","ownershipEpoch":1,"executionLeaseId":"{lease}",
                   "artifactIds":["{item}:artifact:parser"],
                   "evidence":[{{"kind":"deterministic-tests","description":"tests pass",
                                 "success":true,"data":{{"passed":3}}}}]}}"#
            )),
            "work.submitted",
        )
        .await;

    // The Coordinator sees the submission through its subscription and accepts the result.
    let submitted = coord.sees("work.submitted", &item).await;
    assert_eq!(text(&submitted, "/event/actor/id"), worker_id);
    let accepted = coord
        .command(
            "work.accept_result",
            &group,
            &as_coordinator,
            parse(&format!(
                r#"{{"workItemId":"{item}","evidence":[{{"kind":"review",
                   "description":"tests pass","success":true,"data":{{"passed":3}}}}]}}"#
            )),
            "work.result.accepted",
        )
        .await;
    assert_eq!(text(&accepted, "/workItemId"), item);
    // And the worker hears of it.
    worker.sees("work.result.accepted", &item).await;
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
