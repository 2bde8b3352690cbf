//! Execution gates and the webhooks that announce them (docs/notifications.md), shared by the
//! notification tests of one node (`notify.rs`) and of a cluster (`cluster.rs`): webhook
//! receivers on 127.0.0.1 (plain, or TLS with a test CA), the check of a notice's signature,
//! and the Commands that open gates.

use serde_json::Value as J;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasm_core::crypto::ed25519::{StrictPublicKey, StrictSignature, verify};
use wasm_core::crypto::registry::ValidatedRegistry;
use wasm_core::encoding::b64url_decode;
use wasm_core::json::{self, Value};

use super::Principal;

/// One request a receiver saw: its lower-cased headers, its body and the status it answered.
#[derive(Clone, Debug)]
pub struct Seen {
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub status: u16,
}

/// What a receiver saw, shared with its thread.
pub type Log = Arc<Mutex<Vec<Seen>>>;

/// A webhook receiver on 127.0.0.1 answering each request with the next of `statuses` (then
/// 200), recording what it saw.
pub fn receiver(statuses: Vec<u16>) -> (String, Log) {
    listen(statuses, None)
}

/// [`receiver`] over TLS with `config` (a certificate of [`test_ca`]), answering 200.
pub fn receiver_tls(config: Arc<rustls::ServerConfig>) -> (String, Log) {
    listen(vec![], Some(config))
}

fn listen(statuses: Vec<u16>, tls: Option<Arc<rustls::ServerConfig>>) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("address: {e}"))
        .to_string();
    let seen: Log = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut answers = statuses.into_iter();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            if stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .is_err()
            {
                continue;
            }
            let status = answers.next().unwrap_or(200);
            let seen = match &tls {
                None => handle(stream, status),
                // A handshake the client refuses (an untrusted certificate) records nothing.
                Some(config) => rustls::ServerConnection::new(Arc::clone(config))
                    .ok()
                    .and_then(|c| handle(rustls::StreamOwned::new(c, stream), status)),
            };
            if let Some(s) = seen {
                log.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(s);
            }
        }
    });
    (addr, seen)
}

fn handle<S: Read + Write>(stream: S, status: u16) -> Option<Seen> {
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
    stream.flush().ok()?;
    Some(Seen {
        headers,
        body,
        status,
    })
}

/// A test certificate authority and a certificate it issued for 127.0.0.1: the CA's PEM (for
/// `--notify-ca`) and a server configuration presenting the certificate.
pub fn test_ca() -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let fail = |e: rcgen::Error| -> ! { panic!("test CA: {e}") };
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| fail(e));
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "weave-console test CA");
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap_or_else(|e| fail(e)))
        .unwrap_or_else(|e| fail(e));
    let key = KeyPair::generate().unwrap_or_else(|e| fail(e));
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .and_then(|p| p.signed_by(&key, &ca))
        .unwrap_or_else(|e| fail(e));
    let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der())
        .unwrap_or_else(|e| panic!("test key: {e}"));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .and_then(|b| {
        b.with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], private)
    })
    .unwrap_or_else(|e| panic!("test server TLS: {e}"));
    (ca.pem(), Arc::new(config))
}

/// Whether `seen`'s signature verifies over `body` with the Registry's key of its key id.
pub fn verifies(registry: &ValidatedRegistry, seen: &Seen, body: &[u8]) -> bool {
    let Some(binding) = seen
        .headers
        .get("x-mwp-key-id")
        .and_then(|k| registry.binding(k))
    else {
        return false;
    };
    let Ok(key) = StrictPublicKey::from_bytes(binding.public_key.as_bytes()) else {
        return false;
    };
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

/// The Registry a server publishes (`GET /api/registry`), validated.
pub fn registry_of(addr: &str) -> ValidatedRegistry {
    let (status, text) = super::get(addr, "/api/registry").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200, "{text}");
    wasm_core::crypto::registry::RegistryEvidence::from_fixture_json(&jv(&text))
        .unwrap_or_else(|e| panic!("the served Registry: {e}"))
        .validate()
        .unwrap_or_else(|e| panic!("the served Registry: {e}"))
}

/// A Command of `kind` by `actor` (type, id), signed with `key` (key id, base64url seed).
pub fn command(
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

pub fn jv(text: &str) -> Value {
    json::parse_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

pub fn s<'a>(v: &'a J, ptr: &str) -> &'a str {
    v.pointer(ptr)
        .and_then(J::as_str)
        .unwrap_or_else(|| panic!("{ptr} in {v}"))
}

/// Waits until `cond` holds (or fails after `patience`).
pub fn until(what: &str, patience: Duration, cond: impl Fn() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < patience, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A Mission with execution gates: `dev principals`' file (its Agents' keys, its ACTIVE
/// Mission) and a worker holding WorkItems whose contract needs a human's Execution Approval.
pub struct Gates {
    /// `dev principals`' file.
    pub file: J,
    /// The Group's id.
    pub group: String,
    /// Each gate's `work.accept_offer` (sending one again is an exact retry).
    pub accepts: Vec<Vec<u8>>,
    /// Where Commands go (a cluster's test points it at a live node).
    pub addr: String,
    worker_epoch: u64,
    coordinator_epoch: u64,
}

impl Gates {
    /// Runs `dev principals` against the server at `addr` (serving `data`), opens Sessions
    /// for the coordinator and the worker, makes the worker a member, and opens `count`
    /// gates. Every Command is sent to `addr` and must be accepted.
    pub fn open(addr: &str, data: &Path, dir: &Path, count: u32) -> Gates {
        let file = super::dev_principals(addr, data, &dir.join("principals.json"));
        let group = s(&file, "/mission/groupId").to_owned();
        let mut g = Gates {
            file,
            group,
            accepts: Vec::new(),
            addr: addr.to_owned(),
            worker_epoch: 0,
            coordinator_epoch: 0,
        };
        let org: J = serde_json::from_slice(
            &std::fs::read(data.join("organization.json")).unwrap_or_else(|e| panic!("{e}")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let gw = org["principals"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["name"] == "group-gateway"))
            .unwrap_or_else(|| panic!("no group-gateway"))
            .clone();
        let session = |g: &Gates, agent: &str, n: u32| -> u64 {
            let text = g.send(command(
                ("service", s(&gw, "/actor/id")),
                (s(&gw, "/keyId"), s(&gw, "/seed")),
                "ext.missionweaveprotocol.identity.session_open",
                &format!("urn:test:session:{n}"),
                &[],
                jv(&format!(r#"{{"agentId":"{agent}"}}"#)),
            ));
            let v: J = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
            v["events"]
                .as_array()
                .and_then(|es| {
                    es.iter()
                        .find_map(|e| e["payload"]["sessionEpoch"].as_u64())
                })
                .unwrap_or_else(|| panic!("no sessionEpoch in {text}"))
        };
        let coordinator = g.agent("coordinator");
        let worker = g.agent("worker");
        g.coordinator_epoch = session(&g, &coordinator, 1);
        g.as_coordinator(
            "membership.change",
            "urn:test:add-worker",
            format!(r#"{{"principal":{{"type":"agent","id":"{worker}"}},"roles":["worker"]}}"#),
        );
        g.worker_epoch = session(&g, &worker, 2);
        for n in 1..=count {
            g.gate(n);
        }
        g
    }

    /// The id of the development Agent `name` (`coordinator`, `worker`).
    pub fn agent(&self, name: &str) -> String {
        s(&self.file, &format!("/agents/{name}/agentId")).to_owned()
    }

    fn as_coordinator(&self, kind: &str, action: &str, payload: String) -> String {
        let agents = &self.file["agents"];
        self.send(command(
            ("agent", s(agents, "/coordinator/agentId")),
            (
                s(agents, "/coordinator/keyId"),
                s(agents, "/coordinator/privateKey"),
            ),
            kind,
            action,
            &[
                ("groupId", Value::string(self.group.clone())),
                ("sessionEpoch", Value::from(self.coordinator_epoch)),
                ("membershipEpoch", Value::from(1u64)),
                ("coordinatorEpoch", Value::from(1u64)),
            ],
            jv(&payload),
        ))
    }

    /// Opens gate `n`: a WorkItem whose contract needs a human's Execution Approval,
    /// authorized, offered to and accepted by the worker.
    pub fn gate(&mut self, n: u32) {
        let deadline = s(&self.file, "/mission/deadline").to_owned();
        let worker = self.agent("worker");
        self.as_coordinator(
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
        self.as_coordinator(
            "work.offer",
            &format!("urn:test:offer:{n}"),
            format!(
                r#"{{"workItemId":"urn:test:work:{n}","candidateAgentIds":["{worker}"],"selectionBasis":{{}}}}"#
            ),
        );
        let agents = &self.file["agents"];
        let bytes = command(
            ("agent", &worker),
            (s(agents, "/worker/keyId"), s(agents, "/worker/privateKey")),
            "work.accept_offer",
            &format!("urn:test:accept:{n}"),
            &[
                ("groupId", Value::string(self.group.clone())),
                ("sessionEpoch", Value::from(self.worker_epoch)),
                ("membershipEpoch", Value::from(1u64)),
            ],
            jv(&format!(r#"{{"workItemId":"urn:test:work:{n}"}}"#)),
        );
        assert!(self.send(bytes.clone()).contains("work.offer.accepted"));
        self.accepts.push(bytes);
    }

    /// Sends `bytes` to [`Gates::addr`]; it must be accepted (an exact retry is, too).
    pub fn send(&self, bytes: Vec<u8>) -> String {
        let (status, text) = super::post(&self.addr, &bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(status, 200, "{text}");
        text
    }
}
