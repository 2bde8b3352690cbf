//! The binding over real sockets: a server on a loopback port (TLS 1.3 with a development
//! certificate, or plain `ws://`), the real authority thread and SQLite store, and the
//! reusable client. Every frame received is checked against `websocket-frame.schema.json`
//! (wasm-core's validator), so every ERROR's document is a valid `error.schema.json`
//! document. Waits are bounded only so that a failure cannot hang the suite; nothing here
//! asserts a duration.

mod abuse;

use super::client::{Client, Incoming};
use super::hub::SubState;
use super::tls;
use super::{Gateway, GatewayConfig, Hub, ServiceKey};
use crate::devorg::OrgSetup;
use crate::http::{AppState, router};
use crate::runtime::{self, AuthorityHandle, Reply};
use rustls::pki_types::CertificateDer;
use simulation::harness::{Envelope, Harness};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tower::ServiceExt;
use wasm_core::crypto::ed25519::Signer;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;

/// Long enough for a loaded 2-core machine; only a hang reaches it.
const PATIENCE: Duration = Duration::from_secs(30);

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("weave-gw-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("public")).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const PRINCIPALS: &[(&str, ActorType)] = &[
    ("owner", ActorType::Human),
    ("stranger", ActorType::Human),
    ("coord", ActorType::Agent),
    ("outsider", ActorType::Agent),
];
const GROUP: &str = "urn:x:group:g";
const GROUP_B: &str = "urn:x:group:b";

struct Server {
    url: String,
    http: axum::Router,
    gw: Arc<Gateway>,
    handle: AuthorityHandle,
    h: Harness,
    root: Option<CertificateDer<'static>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    n: u64,
    /// The gateway's intake to the authority, when started with `Options::hold`.
    hold: Option<runtime::IntakeHold>,
}

struct Options {
    tls: bool,
    config: GatewayConfig,
    /// SO_SNDBUF of the listener (inherited by accepted sockets), to stall a slow reader
    /// quickly.
    send_buffer: Option<u32>,
    /// Put the gateway behind an intake that can hold one connection's Commands
    /// (`AuthorityHandle::with_hold`); the test's own `handle` stays direct.
    hold: bool,
    /// The listener's bounds (connection caps, header read and idle timeouts).
    listen: super::listen::ListenLimits,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tls: true,
            config: GatewayConfig::default(),
            send_buffer: None,
            hold: false,
            listen: super::listen::ListenLimits::default(),
        }
    }
}

impl Server {
    async fn start(dir: &TempDir, o: Options) -> Server {
        let mut h = Harness::new(PRINCIPALS);
        let mut config = h.authority.config.duplicate();
        config.limits.message_rate_per_minute = 100_000;
        h.authority.config.limits.message_rate_per_minute = 100_000;
        let data = dir.0.join("data");
        let org = OrgSetup {
            config,
            registry: h.registry.clone(),
            admission_service: h.actor("group-gateway"),
            public: crate::registry_api::PublicRegistry::new(
                &crate::registry_api::evidence_of(&h.registry),
                &[],
            ),
            dev: None,
            service_keys: None,
        };
        let hub = Arc::new(Hub::new());
        let service = ServiceKey::single(
            h.actor("group-gateway"),
            &h.principals["group-gateway"].key_id,
            &h.principals["group-gateway"].seed,
        );
        let handle =
            runtime::start_full(&data, org, Box::new(runtime::now), Some(hub.clone()), None)
                .expect("authority");
        let (intake, hold) = if o.hold {
            let (h, hold) = handle.with_hold();
            (h, Some(hold))
        } else {
            (handle.clone(), None)
        };
        let gw = Arc::new(
            Gateway::new(
                o.config,
                hub,
                intake,
                handle.live_registry(),
                service,
                &data,
            )
            .expect("gateway"),
        );
        let app = router(
            AppState::new(&dir.0.join("public"), "{}".into())
                .authority(handle.clone())
                .gateway(Arc::clone(&gw)),
        );
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        if let Some(b) = o.send_buffer {
            socket.set_send_buffer_size(b).expect("SO_SNDBUF");
        }
        socket
            .bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        let listener = socket.listen(64).expect("listen").into_std().expect("std");
        let addr = listener.local_addr().expect("addr");
        let (setup, root) = if o.tls {
            let (s, _, _) = tls::development(&data, "127.0.0.1").expect("certificate");
            let leaf = s.leaf.clone();
            (Some(s.config), Some(leaf))
        } else {
            (None, None)
        };
        let scheme = if o.tls { "wss" } else { "ws" };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let limits = o.listen.clone();
        let task = tokio::spawn({
            let app = app.clone();
            async move {
                let _ = tls::serve_limited(listener, app, setup, limits, async move {
                    let _ = stopped.await;
                })
                .await;
            }
        });
        let mut s = Server {
            url: format!("{scheme}://127.0.0.1:{}/ws", addr.port()),
            http: app,
            gw,
            handle,
            h,
            root,
            stop: Some(stop),
            task: Some(task),
            n: 0,
            hold,
        };
        s.bootstrap().await;
        s
    }

    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(PATIENCE, t).await;
        }
    }

    /// Agent Cards for the Agents (an existing database keeps them).
    async fn bootstrap(&mut self) {
        for agent in ["coord", "outsider"] {
            let id = self.h.id(agent);
            if self.gw.hub.session_epoch(&id).is_some() || self.head(GROUP) > 0 {
                return;
            }
            let mut card = Object::new();
            card.insert("agentId", Value::string(id));
            card.insert("version", Value::from(1u64));
            card.insert("displayName", Value::string(agent.to_owned()));
            card.insert("owner", Value::string("urn:x:human:ops"));
            card.insert(
                "publicKey",
                Value::string(wasm_core::encoding::b64url_encode(
                    &self.h.principals[agent].signer.public_key(),
                )),
            );
            card.insert("capabilities", Value::Array(vec![]));
            card.insert("issuedAt", Value::string(runtime::now().format()));
            card.insert("signature", Value::string("test"));
            let mut p = Object::new();
            p.insert("card", Value::Object(card));
            let bytes = self.h.command(
                "organization-registry",
                "ext.missionweaveprotocol.registry.agent_card_register",
                &Envelope::default(),
                p,
                runtime::now(),
            );
            self.accepted(bytes).await;
        }
    }

    fn head(&self, group: &str) -> u64 {
        self.gw.hub.head(group)
    }

    async fn accepted(&self, bytes: Vec<u8>) -> Value {
        match self.handle.submit(bytes).await {
            Reply::Done(body) => json::parse_str(&body).expect("reply"),
            Reply::Refused(e) => panic!("refused: {e:?}"),
        }
    }

    /// `mission.create` by the human owner with `coord` as Coordinator.
    fn create_mission(&mut self, group: &str, who: &str) -> Vec<u8> {
        let mut p = Object::new();
        for (k, v) in [
            ("missionId", format!("{group}:mission")),
            ("groupId", group.to_owned()),
            ("title", "Gateway test".to_owned()),
            ("objective", "Exercise the binding".to_owned()),
            ("deadline", "2099-07-15T08:00:00Z".to_owned()),
            ("coordinatorId", self.h.id("coord")),
        ] {
            p.insert(k, Value::string(v));
        }
        p.insert(
            "definitionOfDone",
            Value::Array(vec![Value::string("frames pass")]),
        );
        let env = Envelope {
            group_id: Some(group.to_owned()),
            ..Envelope::default()
        };
        self.h
            .command(who, "mission.create", &env, p, runtime::now())
    }

    /// A Message in `group`'s planning Conversation by `who`.
    fn post(&mut self, group: &str, who: &str, session_epoch: Option<u64>) -> Vec<u8> {
        self.post_at(group, who, session_epoch, 1)
    }

    /// As [`Server::post`], with Membership Epoch `membership_epoch`.
    fn post_at(
        &mut self,
        group: &str,
        who: &str,
        session_epoch: Option<u64>,
        membership_epoch: u64,
    ) -> Vec<u8> {
        self.n += 1;
        let mut p = Object::new();
        p.insert(
            "messageId",
            Value::string(format!("{group}:message:{who}:{}", self.n)),
        );
        p.insert("conversationId", Value::string(format!("{group}:mission")));
        p.insert(
            "content",
            Value::string(format!("note {} {}", self.n, "x".repeat(400))),
        );
        let env = Envelope {
            group_id: Some(group.to_owned()),
            membership_epoch: Some(membership_epoch),
            session_epoch,
            ..Envelope::default()
        };
        self.h.command(who, "message.post", &env, p, runtime::now())
    }

    async fn client(&self, human: bool) -> Client {
        let url = if human {
            format!("{}?principal=human", self.url)
        } else {
            self.url.clone()
        };
        let tls = self
            .root
            .clone()
            .map(|r| super::client::tls_trusting(r).expect("tls"));
        Client::connect(&url, tls).await.expect("connect")
    }

    /// A connected client that completed HELLO as `name`.
    async fn session(&self, name: &str) -> Client {
        let human = self.h.principals[name].actor.actor_type == ActorType::Human;
        let mut c = self.client(human).await;
        let p = &self.h.principals[name];
        c.hello(&self.h.id(name), &p.key_id, &p.signer)
            .await
            .unwrap_or_else(|e| panic!("HELLO of {name} failed: {}", json::to_string(&e)));
        c
    }

    /// The listening address.
    fn addr(&self) -> std::net::SocketAddr {
        self.url
            .trim_start_matches("ws://")
            .trim_start_matches("wss://")
            .trim_end_matches("/ws")
            .parse()
            .expect("addr")
    }

    /// Polls until `who`'s subscription to `group` is live (a SUBSCRIBE is handled in
    /// order, so call it after a PING round trip that follows the SUBSCRIBE).
    async fn until_live(&self, who: &str, group: &str) {
        let id = self.h.id(who);
        for _ in 0..1500 {
            if self
                .gw
                .hub
                .connections_of(&id)
                .iter()
                .any(|c| c.subscription(group) == Some(SubState::Live))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{who}'s subscription to {group} never went live");
    }

    /// A session whose client reads through a tiny receive buffer (a slow reader).
    async fn slow_session(&self, name: &str) -> Client {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(2048).expect("SO_RCVBUF");
        let stream = socket.connect(self.addr()).await.expect("connect");
        let tls = self
            .root
            .clone()
            .map(|r| super::client::tls_trusting(r).expect("tls"));
        let mut c = Client::connect_stream(&self.url, stream, tls)
            .await
            .expect("ws");
        let p = &self.h.principals[name];
        c.hello(&self.h.id(name), &p.key_id, &p.signer)
            .await
            .unwrap_or_else(|e| panic!("HELLO failed: {}", json::to_string(&e)));
        c
    }
}

/// The next frame, schema-checked.
async fn recv(c: &mut Client) -> Incoming {
    let got = tokio::time::timeout(PATIENCE, c.next())
        .await
        .expect("a frame or a close")
        .expect("readable");
    if let Incoming::Frame(v) = &got {
        if let Err(e) = wasm_core::frame::validate(v, false) {
            panic!(
                "the server sent an invalid frame: {e}\n{}",
                json::to_string(v)
            );
        }
        if let Some(doc) = v.pointer("/error") {
            wasm_core::model::error::validate(doc, true)
                .unwrap_or_else(|e| panic!("invalid error document {e}: {}", json::to_string(doc)));
        }
    }
    got
}

async fn frame(c: &mut Client) -> Value {
    match recv(c).await {
        Incoming::Frame(v) => v,
        Incoming::Closed => panic!("the connection closed"),
    }
}

async fn closed(c: &mut Client) {
    match recv(c).await {
        Incoming::Closed => {}
        Incoming::Frame(v) => panic!("expected the close, got {}", json::to_string(&v)),
    }
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn n(v: &Value, p: &str) -> u64 {
    match v.pointer(p) {
        Some(Value::Number(x)) => x.as_safe_u64().unwrap_or(0),
        _ => 0,
    }
}

fn code(v: &Value) -> &str {
    s(v, "/error/code")
}

/// `e` is a fatal ERROR with `wire_code` whose message says `says`.
fn assert_fatal(e: &Value, wire_code: &str, says: &str) {
    let text = json::to_string(e);
    assert_eq!(code(e), wire_code, "{text}");
    assert_eq!(
        e.pointer("/error/fatal"),
        Some(&Value::Bool(true)),
        "{text}"
    );
    assert!(s(e, "/error/message").contains(says), "{text}");
}

fn action_of(bytes: &[u8]) -> String {
    let v = json::parse(bytes).expect("command");
    s(&v, "/actionId").to_owned()
}

/// `count` EVENT frames of `group`, in order, starting after `after`.
async fn events(c: &mut Client, group: &str, after: u64, count: u64) -> Vec<Value> {
    let mut out = Vec::new();
    for i in 1..=count {
        let f = frame(c).await;
        assert_eq!(s(&f, "/frameType"), "EVENT", "{}", json::to_string(&f));
        assert_eq!(s(&f, "/event/groupId"), group);
        assert_eq!(n(&f, "/event/sequence"), after + i, "no gap, no reorder");
        out.push(f);
    }
    out
}

/// A Presence Record of `agent` at Session Epoch `epoch`.
fn presence_of(agent: &str, epoch: u64) -> Value {
    let mut presence = Object::new();
    presence.insert("agentId", Value::string(agent.to_owned()));
    presence.insert("sessionEpoch", Value::from(epoch));
    presence.insert("status", Value::string("online"));
    let mut capacity = Object::new();
    for (k, v) in [
        ("maxSlots", 2u64),
        ("activeSlots", 0),
        ("availableSlots", 2),
        ("queuedItems", 0),
    ] {
        capacity.insert(k, Value::from(v));
    }
    presence.insert("capacity", Value::Object(capacity));
    presence.insert("capabilityAvailability", Value::Array(vec![]));
    let t = runtime::now();
    presence.insert("lastHeartbeat", Value::string(t.format_whole_seconds()));
    presence.insert(
        "expiresAt",
        Value::string(t.plus_seconds(60).format_whole_seconds()),
    );
    Value::Object(presence)
}

/// `sub` (a SUBSCRIBE) with `attention` on each of its Groups.
fn with_attention(mut sub: Value, attention: &Object) -> Value {
    if let Value::Object(o) = &mut sub
        && let Some(Value::Array(groups)) = o.get_mut("groups")
    {
        for g in groups {
            if let Value::Object(g) = g {
                g.insert("attention", Value::Object(attention.clone()));
            }
        }
    }
    sub
}

async fn ping_pong(c: &mut Client) {
    let ping = c.ping_frame(b"are-you-there", &runtime::now().format(), None);
    c.send(&ping).await.expect("send");
    let pong = frame(c).await;
    assert_eq!(s(&pong, "/frameType"), "PING", "{}", json::to_string(&pong));
    assert_eq!(
        s(&pong, "/replyToNonce"),
        wasm_core::encoding::b64url_encode(b"are-you-there")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_frame_type_over_tls_and_http_commands_fan_out() {
    let dir = TempDir::new("frames");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let head = srv.head(GROUP);
    assert!(head >= 1);

    // HELLO: the accept carries the Session Epoch the authority issued.
    let mut coord = srv.session("coord").await;
    let epoch = coord.session_epoch.expect("an Agent gets a Session Epoch");
    assert_eq!(srv.gw.hub.session_epoch(&srv.h.id("coord")), Some(epoch));

    // SUBSCRIBE: replay from the start, then live.
    let sub = coord.subscribe_frame(&[(GROUP, 0)]);
    coord.send(&sub).await.expect("send");
    events(&mut coord, GROUP, 0, head).await;

    // COMMAND: the EVENT comes back with cause.id = the Action ID.
    let post = srv.post(GROUP, "coord", Some(epoch));
    let action = action_of(&post);
    let cmd = coord.command_frame(&post).expect("frame");
    coord.send(&cmd).await.expect("send");
    let ev = events(&mut coord, GROUP, head, 1).await;
    assert_eq!(s(&ev[0], "/event/cause/id"), action);
    assert_eq!(s(&ev[0], "/event/kind"), "message.posted");

    // A human Command over HTTP fans out to the subscriber.
    let human = srv.post(GROUP, "owner", None);
    let request = axum::http::Request::post("/api/commands")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(human.clone()))
        .expect("request");
    let r = srv.http.clone().oneshot(request).await.expect("http");
    assert_eq!(r.status(), axum::http::StatusCode::OK);
    let ev = events(&mut coord, GROUP, head + 1, 1).await;
    assert_eq!(s(&ev[0], "/event/cause/id"), action_of(&human));

    // PING: echoed; a Presence Record about this session is kept.
    let presence = presence_of(&srv.h.id("coord"), epoch);
    let ping = coord.ping_frame(b"nonce-1", &runtime::now().format(), Some(presence));
    coord.send(&ping).await.expect("send");
    let pong = frame(&mut coord).await;
    assert_eq!(s(&pong, "/replyToNonce"), "bm9uY2UtMQ");
    assert!(srv.gw.hub.presence(&srv.h.id("coord")).is_some());

    // ACK: the Cursor is stored.
    let ack = coord.ack_frame(&[(GROUP, head + 2)], &runtime::now().format());
    coord.send(&ack).await.expect("send");
    ping_pong(&mut coord).await; // the ACK was handled before the PING
    let mut stored = None;
    for _ in 0..100 {
        stored = srv.gw.cursor(&srv.h.id("coord"), GROUP);
        if stored.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stored, Some(head + 2));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_refusals_close_the_connection_with_the_wire_code() {
    let dir = TempDir::new("hello");
    let mut config = GatewayConfig::default();
    let srv = Server::start(
        &dir,
        Options {
            config: config.clone(),
            ..Options::default()
        },
    )
    .await;
    let coord = srv.h.id("coord");
    let key = srv.h.principals["coord"].key_id.clone();
    let wrong = &srv.h.principals["outsider"].signer;

    // A bad signature.
    let mut c = srv.client(false).await;
    let e = c.hello(&coord, &key, wrong).await.expect_err("refused");
    assert_fatal(&e, "AUTH_INVALID_SIGNATURE", "");
    closed(&mut c).await;

    // A key that is not this principal's, and an Agent key on the human endpoint.
    let mut c = srv.client(false).await;
    let e = c
        .hello(&coord, &srv.h.principals["outsider"].key_id, wrong)
        .await
        .expect_err("refused");
    assert_eq!(code(&e), "AUTH_INVALID_SIGNATURE");
    let mut c = srv.client(true).await;
    let e = c
        .hello(&coord, &key, &srv.h.principals["coord"].signer)
        .await
        .expect_err("refused");
    assert_eq!(code(&e), "AUTH_INVALID_SIGNATURE");

    // A wrong transcript (another server nonce), and a response replayed on a new connection.
    let signer = &srv.h.principals["coord"].signer;
    let mut first = srv.client(false).await;
    let init = first.client_init(&coord, &key, b"nonce-a");
    first.send(&init).await.expect("send");
    let challenge = frame(&mut first).await;
    let good = first
        .client_response(&init, &challenge, signer)
        .expect("response");
    let mut wrong_nonce = good.clone();
    if let Value::Object(o) = &mut wrong_nonce {
        o.insert("serverNonce", Value::string("AAAAAAAAAAAA"));
    }
    first.send(&wrong_nonce).await.expect("send");
    let e = frame(&mut first).await;
    assert_eq!(code(&e), "AUTH_INVALID_SIGNATURE");
    assert_eq!(
        s(&e, "/error/message"),
        "HELLO challenge transcript does not match"
    );
    closed(&mut first).await;
    let mut second = srv.client(false).await;
    second.send(&init).await.expect("send");
    let _fresh = frame(&mut second).await;
    second.send(&good).await.expect("send");
    let e = frame(&mut second).await;
    assert_eq!(
        code(&e),
        "AUTH_INVALID_SIGNATURE",
        "a replayed response is refused"
    );

    // A first frame that is not HELLO; a binary first frame; a version we do not speak.
    let mut c = srv.client(false).await;
    let sub = c.subscribe_frame(&[(GROUP, 0)]);
    c.send(&sub).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "AUTH_REQUIRED");
    closed(&mut c).await;
    let mut c = srv.client(false).await;
    c.send_binary(b"{}".to_vec()).await.expect("send");
    assert_eq!(code(&frame(&mut c).await), "PROTOCOL_VIOLATION");
    closed(&mut c).await;
    let mut c = srv.client(false).await;
    let mut init = c.client_init(&coord, &key, b"nonce-v");
    if let Value::Object(o) = &mut init {
        o.insert(
            "supportedVersions",
            Value::Array(vec![Value::string("9.9")]),
        );
    }
    c.send(&init).await.expect("send");
    assert_eq!(code(&frame(&mut c).await), "UNSUPPORTED_VERSION");
    srv.stop().await;

    // An expired challenge: a server whose challenges expire at once.
    config.challenge_ttl = Duration::ZERO;
    let dir = TempDir::new("hello-expired");
    let srv = Server::start(
        &dir,
        Options {
            config,
            ..Options::default()
        },
    )
    .await;
    let mut c = srv.client(false).await;
    let e = c
        .hello(&coord, &key, &srv.h.principals["coord"].signer)
        .await
        .expect_err("expired");
    assert_eq!(code(&e), "AUTH_INVALID_SIGNATURE");
    assert_eq!(s(&e, "/error/message"), "challenge expired");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_hello_fences_the_older_socket_and_its_epoch() {
    let dir = TempDir::new("fence");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let head = srv.head(GROUP);

    let mut old = srv.session("coord").await;
    let old_epoch = old.session_epoch.expect("epoch");
    let sub = old.subscribe_frame(&[(GROUP, 0)]);
    old.send(&sub).await.expect("send");
    events(&mut old, GROUP, 0, head).await;

    let mut new = srv.session("coord").await;
    let new_epoch = new.session_epoch.expect("epoch");
    assert_eq!(new_epoch, old_epoch + 1);
    let sub = new.subscribe_frame(&[(GROUP, head)]);
    new.send(&sub).await.expect("send");

    // Live traffic reaches the new socket only.
    let post = srv.post(GROUP, "owner", None);
    srv.accepted(post).await;
    events(&mut new, GROUP, head, 1).await;

    // The old socket got nothing since: its next frame is the refusal of its own Command.
    let stale = srv.post(GROUP, "coord", Some(old_epoch));
    let cmd = old.command_frame(&stale).expect("frame");
    old.send(&cmd).await.expect("send");
    let e = frame(&mut old).await;
    assert_eq!(code(&e), "AUTH_STALE_SESSION", "{}", json::to_string(&e));
    assert_eq!(s(&e, "/error/relatedActionId"), action_of(&stale));
    closed(&mut old).await;

    // The old Session Epoch on the new socket: refused, and the socket stays open.
    let stale = srv.post(GROUP, "coord", Some(old_epoch));
    let cmd = new.command_frame(&stale).expect("frame");
    new.send(&cmd).await.expect("send");
    let e = frame(&mut new).await;
    assert_eq!(code(&e), "AUTH_STALE_SESSION");
    assert_eq!(s(&e, "/error/relatedActionId"), action_of(&stale));
    ping_pong(&mut new).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_pages_past_the_cap_and_a_reconnect_resumes_without_a_gap() {
    let dir = TempDir::new("replay");
    let config = GatewayConfig {
        replay_page: 5,
        group_buffer: 3,
        ..GatewayConfig::default()
    };
    let mut srv = Server::start(
        &dir,
        Options {
            tls: false, // plain ws:// on loopback
            config,
            ..Options::default()
        },
    )
    .await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    for _ in 0..11 {
        let p = srv.post(GROUP, "owner", None);
        srv.accepted(p).await;
    }
    let head = srv.head(GROUP);
    assert!(head >= 12);

    let mut c = srv.session("coord").await;
    let mut after = 0;
    let mut pages = 0;
    loop {
        let sub = c.subscribe_frame(&[(GROUP, after)]);
        c.send(&sub).await.expect("send");
        let want = (head - after).min(5);
        events(&mut c, GROUP, after, want).await;
        after += want;
        pages += 1;
        if after == head {
            break;
        }
        let cont = frame(&mut c).await;
        assert_eq!(code(&cont), "BACKPRESSURE", "{}", json::to_string(&cont));
        assert_eq!(s(&cont, "/error/groupId"), GROUP);
        assert_eq!(n(&cont, "/error/details/resumeAfterSequence"), after);
        assert_eq!(cont.pointer("/error/retryable"), Some(&Value::Bool(true)));
    }
    assert_eq!(pages, head.div_ceil(5));
    // Past the last page the subscription is live.
    let p = srv.post(GROUP, "owner", None);
    srv.accepted(p).await;
    events(&mut c, GROUP, head, 1).await;
    let last = head + 1;
    drop(c);

    // Disconnected: two more Events; a new connection resumes after the last one it had.
    for _ in 0..2 {
        let p = srv.post(GROUP, "owner", None);
        srv.accepted(p).await;
    }
    let mut c = srv.session("coord").await;
    let sub = c.subscribe_frame(&[(GROUP, last)]);
    c.send(&sub).await.expect("send");
    events(&mut c, GROUP, last, 2).await;
    let p = srv.post(GROUP, "owner", None);
    srv.accepted(p).await;
    events(&mut c, GROUP, last + 2, 1).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_cursors_survive_a_restart() {
    let dir = TempDir::new("ack");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let head = srv.head(GROUP);
    let mut c = srv.session("coord").await;
    let ack = c.ack_frame(&[(GROUP, head)], &runtime::now().format());
    c.send(&ack).await.expect("send");
    // Beyond the head: refused, nothing stored past it.
    let ack = c.ack_frame(&[(GROUP, head + 50)], &runtime::now().format());
    c.send(&ack).await.expect("send");
    assert_eq!(code(&frame(&mut c).await), "PROTOCOL_VIOLATION");
    ping_pong(&mut c).await;
    let coord = srv.h.id("coord");
    for _ in 0..100 {
        if srv.gw.cursor(&coord, GROUP).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(srv.gw.cursor(&coord, GROUP), Some(head));
    drop(c);
    srv.stop().await;

    let srv = Server::start(&dir, Options::default()).await;
    assert_eq!(
        srv.gw.cursor(&coord, GROUP),
        Some(head),
        "durable across restart"
    );
    assert_eq!(srv.head(GROUP), head, "the history is replayed too");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_is_paused_per_group_and_delays_no_one() {
    let dir = TempDir::new("stall");
    // Above the authority's batch (64 Events can become durable at once), so a reader that
    // keeps up is never paused.
    let buffer = 128;
    let config = GatewayConfig {
        group_buffer: buffer,
        ..GatewayConfig::default()
    };
    let mut srv = Server::start(
        &dir,
        Options {
            tls: true,
            config,
            send_buffer: Some(4096),
            ..Options::default()
        },
    )
    .await;
    for g in [GROUP, GROUP_B] {
        let create = srv.create_mission(g, "owner");
        srv.accepted(create).await;
    }
    let (head_a, head_b) = (srv.head(GROUP), srv.head(GROUP_B));

    // The stalled reader: subscribed to A and B, reading nothing from now on.
    let mut slow = srv.slow_session("coord").await;
    let sub = slow.subscribe_frame(&[(GROUP, head_a), (GROUP_B, head_b)]);
    slow.send(&sub).await.expect("send");
    // A healthy reader of both Groups on another socket.
    let mut fast = srv.session("owner").await;
    let sub = fast.subscribe_frame(&[(GROUP, head_a), (GROUP_B, head_b)]);
    fast.send(&sub).await.expect("send");
    let coord_conn = loop {
        let conns = srv.gw.hub.connections_of(&srv.h.id("coord"));
        if let Some(c) = conns.first()
            && c.subscription(GROUP) == Some(SubState::Live)
            && c.subscription(GROUP_B) == Some(SubState::Live)
        {
            break Arc::clone(c);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };

    // A flood on Group A, then one Event on Group B, submitted while the healthy socket reads.
    let flood = 400;
    let mut commands: Vec<Vec<u8>> = (0..flood).map(|_| srv.post(GROUP, "owner", None)).collect();
    commands.push(srv.post(GROUP_B, "owner", None));
    let handle = srv.handle.clone();
    let submitter = tokio::spawn(async move {
        for c in commands {
            assert!(matches!(handle.submit(c).await, Reply::Done(_)));
        }
    });

    // The healthy socket gets everything, in order per Group, while the other is stalled.
    let mut seen_a = 0;
    let mut seen_b = 0;
    while seen_a < flood || seen_b < 1 {
        let f = frame(&mut fast).await;
        assert_eq!(s(&f, "/frameType"), "EVENT", "{}", json::to_string(&f));
        match s(&f, "/event/groupId") {
            GROUP => {
                seen_a += 1;
                assert_eq!(n(&f, "/event/sequence"), head_a + seen_a);
            }
            GROUP_B => {
                seen_b += 1;
                assert_eq!(n(&f, "/event/sequence"), head_b + 1);
            }
            other => panic!("unexpected Group {other}"),
        }
    }
    submitter.await.expect("submitted");
    // The stalled socket's Group A is paused; its memory stayed within the bound.
    assert_eq!(coord_conn.subscription(GROUP), Some(SubState::Paused));
    assert!(coord_conn.high_water.load(Ordering::Relaxed) <= buffer);
    assert_eq!(coord_conn.subscription(GROUP_B), Some(SubState::Live));

    // Once it reads: A's Events up to the pause (contiguous), A's BACKPRESSURE, and B's Event.
    let mut last_a = head_a;
    let mut got_backpressure = false;
    let mut got_b = false;
    while !(got_backpressure && got_b) {
        let f = frame(&mut slow).await;
        match (s(&f, "/frameType"), s(&f, "/event/groupId")) {
            ("EVENT", GROUP) => {
                assert!(!got_backpressure, "nothing of A after its pause");
                last_a += 1;
                assert_eq!(n(&f, "/event/sequence"), last_a);
            }
            ("EVENT", GROUP_B) => got_b = true,
            ("ERROR", _) => {
                assert_eq!(code(&f), "BACKPRESSURE");
                assert_eq!(s(&f, "/error/groupId"), GROUP);
                assert!(n(&f, "/error/retryAfterMs") > 0);
                assert_eq!(n(&f, "/error/details/resumeAfterSequence"), last_a);
                got_backpressure = true;
            }
            _ => panic!("unexpected {}", json::to_string(&f)),
        }
    }
    assert!(
        last_a < head_a + flood,
        "the flood did not fit in the buffer"
    );
    // Resuming from the continuation gets the rest without a gap.
    let sub = slow.subscribe_frame(&[(GROUP, last_a)]);
    slow.send(&sub).await.expect("send");
    events(&mut slow, GROUP, last_a, head_a + flood - last_a).await;
    // Live again: the paused subscription left Group A's fan-out while the flood went on, and
    // the SUBSCRIBE registered it anew, so an Event published once it is live reaches it.
    tokio::time::timeout(PATIENCE, async {
        while coord_conn.subscription(GROUP) != Some(SubState::Live) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the resumed subscription goes live");
    let late = srv.post(GROUP, "owner", None);
    srv.accepted(late).await;
    events(&mut slow, GROUP, head_a + flood, 1).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_forbidden_groups_are_refused_alike() {
    let dir = TempDir::new("hidden");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let mut c = srv.session("outsider").await;
    let mut docs = Vec::new();
    for g in [GROUP, "urn:x:group:nowhere"] {
        let sub = c.subscribe_frame(&[(g, 0)]);
        c.send(&sub).await.expect("send");
        let e = frame(&mut c).await;
        assert_eq!(code(&e), "GROUP_NOT_FOUND");
        assert_eq!(s(&e, "/error/groupId"), g);
        let mut doc = e.pointer("/error").cloned().expect("error");
        if let Value::Object(o) = &mut doc {
            for volatile in ["occurredAt", "groupId", "relatedFrameId"] {
                o.remove(volatile);
            }
        }
        docs.push(json::to_string(&doc));
    }
    assert_eq!(
        docs[0], docs[1],
        "the answers must not tell the Groups apart"
    );
    let ack = c.ack_frame(&[(GROUP, 1)], &runtime::now().format());
    c.send(&ack).await.expect("send");
    assert_eq!(code(&frame(&mut c).await), "GROUP_NOT_FOUND");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framing_errors_and_rejected_commands_keep_the_socket_open() {
    let dir = TempDir::new("framing");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let mut c = srv.session("coord").await;
    let epoch = c.session_epoch.expect("epoch");

    // Duplicate members, at depth.
    let fid = c.frame_id();
    c.send_text(format!(
        r#"{{"protocolVersion":"0.1","frameId":"{fid}","frameType":"PING","nonce":"bm9uY2U","sentAt":"2026-07-15T08:00:00Z","presence":{{"a":1,"a":2}}}}"#
    ))
    .await
    .expect("send");
    assert_eq!(code(&frame(&mut c).await), "PROTOCOL_VIOLATION");
    ping_pong(&mut c).await;

    // A schema-invalid frame; an EVENT from a client.
    c.send_text(r#"{"protocolVersion":"0.1","frameId":"urn:f:1","frameType":"NOPE"}"#.into())
        .await
        .expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "SCHEMA_VALIDATION_FAILED");
    assert_eq!(s(&e, "/error/relatedFrameId"), "urn:f:1");
    ping_pong(&mut c).await;

    // A Command the authority refuses (a Membership Epoch it does not hold).
    let mut bad = Object::new();
    bad.insert("messageId", Value::string("urn:x:message:bad"));
    bad.insert("conversationId", Value::string(format!("{GROUP}:mission")));
    bad.insert("content", Value::string("stale"));
    let env = Envelope {
        group_id: Some(GROUP.into()),
        membership_epoch: Some(9),
        session_epoch: Some(epoch),
        ..Envelope::default()
    };
    let cmd_bytes = srv
        .h
        .command("coord", "message.post", &env, bad, runtime::now());
    let cmd = c.command_frame(&cmd_bytes).expect("frame");
    let fid = s(&cmd, "/frameId").to_owned();
    c.send(&cmd).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "MEMBERSHIP_STALE", "{}", json::to_string(&e));
    assert_eq!(s(&e, "/error/relatedActionId"), action_of(&cmd_bytes));
    assert_eq!(s(&e, "/error/relatedFrameId"), fid);
    assert_eq!(s(&e, "/error/groupId"), GROUP);
    ping_pong(&mut c).await;

    // A Command signed by another principal than the session's.
    let other = srv.post(GROUP, "owner", None);
    let cmd = c.command_frame(&other).expect("frame");
    c.send(&cmd).await.expect("send");
    assert_eq!(code(&frame(&mut c).await), "AUTH_FORBIDDEN");
    ping_pong(&mut c).await;

    // A binary message ends the session.
    c.send_binary(vec![1, 2, 3]).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "PROTOCOL_VIOLATION");
    assert_eq!(e.pointer("/error/fatal"), Some(&Value::Bool(true)));
    closed(&mut c).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_session_creates_a_mission_and_sees_its_own_events() {
    let dir = TempDir::new("human");
    let mut srv = Server::start(&dir, Options::default()).await;
    let mut owner = srv.session("owner").await;
    // Not subscribed to the new Group: the sender still gets its Command's Events.
    let create = srv.create_mission(GROUP, "owner");
    let cmd = owner.command_frame(&create).expect("frame");
    owner.send(&cmd).await.expect("send");
    let ev = frame(&mut owner).await;
    assert_eq!(
        s(&ev, "/event/kind"),
        "mission.created",
        "{}",
        json::to_string(&ev)
    );
    assert_eq!(s(&ev, "/event/cause/id"), action_of(&create));
    assert_eq!(s(&ev, "/event/actor/type"), "human");

    // A human Command in the Group, carrying a Membership Epoch and no Session Epoch.
    let sub = owner.subscribe_frame(&[(GROUP, srv.head(GROUP))]);
    owner.send(&sub).await.expect("send");
    let post = srv.post(GROUP, "owner", None);
    let cmd = owner.command_frame(&post).expect("frame");
    owner.send(&cmd).await.expect("send");
    let ev = frame(&mut owner).await;
    assert_eq!(s(&ev, "/event/kind"), "message.posted");
    assert_eq!(s(&ev, "/event/cause/id"), action_of(&post));
    // An exact retry: the original Event again, to the sender.
    let cmd = owner.command_frame(&post).expect("frame");
    owner.send(&cmd).await.expect("send");
    let again = frame(&mut owner).await;
    assert_eq!(s(&again, "/event/eventId"), s(&ev, "/event/eventId"));

    // Another human's Command on this session is refused; the session goes on.
    let theirs = srv.create_mission("urn:x:group:theirs", "stranger");
    let cmd = owner.command_frame(&theirs).expect("frame");
    owner.send(&cmd).await.expect("send");
    assert_eq!(code(&frame(&mut owner).await), "AUTH_FORBIDDEN");
    ping_pong(&mut owner).await;
    srv.stop().await;
}

/// A key enrolled from a browser (`POST /api/enrol`) works at once in a running server: the
/// human's HELLO is accepted and the authority verifies the Commands it signs, with no restart;
/// the development Group list then names the Group the human created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enrolled_key_opens_a_human_session_and_signs_without_a_restart() {
    let dir = TempDir::new("enrol-live");
    let srv = Server::start(&dir, Options::default()).await;
    let alice = "urn:missionweaveprotocol:human:alice";
    let key_id = "urn:missionweaveprotocol:key:alice-0123456789ab";
    let signer = Signer::from_seed(&wasm_core::crypto::SecretSeed::take(&mut [7u8; 32]));
    let public = wasm_core::encoding::b64url_encode(&signer.public_key());

    // Before enrolment: the key is unknown to the binding.
    let mut c = srv.client(true).await;
    let refused = c
        .hello(alice, key_id, &signer)
        .await
        .expect_err("unknown key");
    assert_eq!(code(&refused), "AUTH_INVALID_SIGNATURE");

    let token = "gateway-test-token-0123456789";
    let (_, enrolment) = crate::enrol::Enrolment::development(
        &srv.h.registry,
        &dir.0,
        crate::enrol::DevToken::from_text(token).expect("token"),
    )
    .expect("enrolment");
    let enrolment = enrolment.running(srv.handle.live_registry(), Arc::clone(&srv.gw.hub));
    let body = format!(
        r#"{{"principalId":"{alice}","keyId":"{key_id}","publicKey":"{public}","token":"{token}"}}"#
    );
    assert_eq!(
        enrolment.enrol(body.as_bytes()).expect("enrolled").0,
        crate::enrol::Outcome::New
    );
    // The Group list is read with a request signed by the human's key, for its own Groups only.
    let path = format!("/api/groups/{alice}");
    let list = |signer: &Signer, key: &str, whose: &str| {
        let (k, t, sig) =
            wasm_core::crypto::request::sign(signer, key, "GET", &path, runtime::now());
        let h = wasm_core::crypto::request::SignedHeaders {
            key_id: Some(&k),
            signed_at: Some(&t),
            signature: Some(&sig),
        };
        enrolment.groups(whose, &path, h)
    };
    assert!(list(&signer, key_id, alice).expect("dev list").is_empty());
    let unsigned = enrolment
        .groups(
            alice,
            &path,
            wasm_core::crypto::request::SignedHeaders::default(),
        )
        .expect_err("unsigned");
    assert_eq!(unsigned.status, axum::http::StatusCode::UNAUTHORIZED);
    let impostor = Signer::from_seed(&wasm_core::crypto::SecretSeed::take(&mut [8u8; 32]));
    assert!(
        list(&impostor, key_id, alice).is_err(),
        "another key under alice's key ID"
    );
    assert_eq!(
        list(
            &signer,
            key_id,
            "urn:missionweaveprotocol:human:mission-owner"
        )
        .expect_err("another's list")
        .status,
        axum::http::StatusCode::FORBIDDEN
    );

    // Now: HELLO passes, and a Command signed with the new key is accepted by the authority.
    let mut c = srv.client(true).await;
    c.hello(alice, key_id, &signer)
        .await
        .unwrap_or_else(|e| panic!("HELLO after enrolment failed: {}", json::to_string(&e)));
    let group = "urn:x:group:alice";
    let mut p = Object::new();
    for (k, v) in [
        ("missionId", format!("{group}:mission")),
        ("groupId", group.to_owned()),
        ("title", "Enrolled".to_owned()),
        ("objective", "Sign without a restart".to_owned()),
        ("deadline", "2099-07-15T08:00:00Z".to_owned()),
        ("coordinatorId", srv.h.id("coord")),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("done")]),
    );
    let env = Envelope {
        group_id: Some(group.to_owned()),
        ..Envelope::default()
    };
    let create = simulation::harness::signed_command(
        &wasm_core::model::common::Actor::new(ActorType::Human, alice),
        key_id,
        &signer,
        "urn:x:action:alice-create",
        "mission.create",
        &env,
        p,
        runtime::now(),
    )
    .expect("signed");
    let cmd = c.command_frame(&create).expect("frame");
    c.send(&cmd).await.expect("send");
    let ev = frame(&mut c).await;
    assert_eq!(
        s(&ev, "/event/kind"),
        "mission.created",
        "{}",
        json::to_string(&ev)
    );
    assert_eq!(s(&ev, "/event/actor/id"), alice);
    assert_eq!(
        list(&signer, key_id, alice).expect("dev list"),
        vec![group.to_owned()]
    );
    // A deployment's server (its Registry a file, no enrolment) lists a member's Groups too,
    // to that member alone: unsigned, nothing.
    let deployment = crate::enrol::Enrolment::refused()
        .running(srv.handle.live_registry(), Arc::clone(&srv.gw.hub));
    let refused = deployment
        .groups(
            alice,
            &path,
            wasm_core::crypto::request::SignedHeaders::default(),
        )
        .expect_err("401");
    assert_eq!(
        refused.document().pointer("/code").and_then(Value::as_str),
        Some("AUTH_REQUIRED")
    );
    let (k, t, sig) =
        wasm_core::crypto::request::sign(&signer, key_id, "GET", &path, runtime::now());
    let signed = wasm_core::crypto::request::SignedHeaders {
        key_id: Some(&k),
        signed_at: Some(&t),
        signature: Some(&sig),
    };
    assert_eq!(
        deployment.groups(alice, &path, signed).expect("listed"),
        vec![group.to_owned()]
    );
    srv.stop().await;
}

#[test]
fn loopback_is_plain_by_default_and_every_other_address_gets_tls() {
    let lo: std::net::SocketAddr = "127.0.0.1:8080".parse().expect("addr");
    let v6: std::net::SocketAddr = "[::1]:8080".parse().expect("addr");
    let any: std::net::SocketAddr = "0.0.0.0:8080".parse().expect("addr");
    let lan: std::net::SocketAddr = "192.0.2.7:8080".parse().expect("addr");
    assert!(tls::is_loopback(&lo) && tls::is_loopback(&v6));
    assert!(!tls::is_loopback(&any) && !tls::is_loopback(&lan));
}

#[test]
fn the_development_certificate_is_made_once_and_serves_tls13_only() {
    let dir = TempDir::new("cert");
    let (a, path, created) = tls::development(&dir.0, "example.test").expect("first");
    assert!(created && path.is_file());
    let (b, _, created) = tls::development(&dir.0, "example.test").expect("second");
    assert!(!created, "kept under the data directory");
    assert_eq!(
        tls::fingerprint(a.leaf.as_ref()),
        tls::fingerprint(b.leaf.as_ref())
    );
    assert_eq!(tls::fingerprint(a.leaf.as_ref()).len(), 32 * 3 - 1);
    assert_eq!(
        a.config.alpn_protocols,
        vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        "HTTP/2 for the console's files, HTTP/1.1 for WebSocket upgrades"
    );
}

/// Over TLS one listener speaks HTTP/2 to a client that offers it (a browser fetching the
/// console's files and its many wasm chunks over one connection), HTTP/1.1 to a client that
/// offers only that, and HTTP/1.1 with the WebSocket upgrade to an Agent that offers no ALPN
/// (`Client::connect`, as in every other test of this file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_speaks_http2_to_browsers_and_keeps_http1_for_the_websocket() {
    use axum::body::Body;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let dir = TempDir::new("h2");
    let srv = Server::start(&dir, Options::default()).await;
    let addr = srv.addr().to_string();
    let root = srv.root.clone().expect("TLS root");
    let connect = |alpn: Vec<Vec<u8>>| {
        let (addr, root) = (addr.clone(), root.clone());
        async move {
            let mut config = (*super::client::tls_trusting(root).expect("config")).clone();
            config.alpn_protocols = alpn;
            let tcp = tokio::net::TcpStream::connect(&addr).await.expect("tcp");
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
            tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await
                .expect("TLS handshake")
        }
    };

    // A browser offers h2 first: it gets HTTP/2, and a request over it is answered.
    let tls = connect(vec![b"h2".to_vec(), b"http/1.1".to_vec()]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .expect("HTTP/2 handshake");
    tokio::spawn(conn);
    let mut answers = Vec::new();
    // Several requests in flight on the one connection, as a view's chunk loader sends them.
    let requests: Vec<_> = (0..8)
        .map(|_| {
            let req = axum::http::Request::get(format!("https://{addr}/healthz"))
                .body(Body::empty())
                .expect("request");
            send.send_request(req)
        })
        .collect();
    for r in requests {
        let res = r.await.expect("HTTP/2 response");
        answers.push((res.version(), res.status()));
    }
    assert!(
        answers
            .iter()
            .all(|a| *a == (axum::http::Version::HTTP_2, axum::http::StatusCode::OK)),
        "{answers:?}"
    );

    // A client that offers only HTTP/1.1 gets it.
    let tls = connect(vec![b"http/1.1".to_vec()]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));

    // An Agent (no ALPN) still opens its WebSocket session on the same listener.
    let mut agent = srv.session("owner").await;
    let sub = agent.subscribe_frame(&[(GROUP, 0)]);
    agent.send(&sub).await.expect("subscribe over wss");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_group_answers_cursor_too_old_below_its_snapshot() {
    let dir = TempDir::new("archive");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let post = srv.post(GROUP, "owner", None);
    srv.accepted(post).await;
    let mut p = Object::new();
    p.insert("reason", Value::string("done"));
    let env = Envelope {
        group_id: Some(GROUP.into()),
        membership_epoch: Some(1),
        ..Envelope::default()
    };
    let cancel = srv
        .h
        .command("owner", "mission.cancel", &env, p, runtime::now());
    srv.accepted(cancel).await;
    let through = srv.head(GROUP);
    let ids: Vec<Value> = srv
        .gw
        .reader
        .group_events(GROUP, 0, 1000)
        .expect("history")
        .iter()
        .map(|b| {
            let v = json::parse(b).expect("event");
            Value::string(s(&v, "/eventId").to_owned())
        })
        .collect();
    // The snapshot's createdAt (whole seconds) must not precede the last Event.
    let start = runtime::now();
    while runtime::now().0 / 1_000_000 == start.0 / 1_000_000 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let t = runtime::now().format_whole_seconds();
    let mut entry = Object::new();
    entry.insert("entryId", Value::string("urn:x:policy:1"));
    entry.insert("decision", Value::string("Mission closed"));
    entry.insert(
        "actor",
        wasm_core::model::ToJson::to_json(&srv.h.actor("owner")),
    );
    entry.insert("occurredAt", Value::string(t.clone()));
    entry.insert("details", Value::Object(Object::new()));
    let mut snap = Object::new();
    snap.insert("snapshotId", Value::string("urn:x:snapshot:g"));
    snap.insert("groupId", Value::string(GROUP));
    snap.insert("throughSequence", Value::from(through));
    snap.insert(
        "stateHash",
        Value::string(format!("sha256:{}", "0".repeat(64))),
    );
    snap.insert("policyLog", Value::Array(vec![Value::Object(entry)]));
    snap.insert(
        "createdBy",
        wasm_core::model::ToJson::to_json(&srv.h.actor("group-gateway")),
    );
    snap.insert("createdAt", Value::string(t));
    snap.insert("eventIds", Value::Array(ids));
    let mut snap = Value::Object(snap);
    let gw_key = &srv.h.principals["group-gateway"];
    wasm_core::crypto::sign_document(
        &mut snap,
        wasm_core::crypto::DocumentKind::GroupSnapshot,
        &gw_key.key_id,
        &gw_key.seed,
    )
    .expect("signed snapshot");
    let mut p = Object::new();
    p.insert("snapshot", snap);
    let env = Envelope {
        group_id: Some(GROUP.into()),
        ..Envelope::default()
    };
    let archive = srv.h.command(
        "group-gateway",
        "ext.missionweaveprotocol.core.group_archive",
        &env,
        p,
        runtime::now(),
    );
    srv.accepted(archive).await;
    assert_eq!(srv.head(GROUP), through + 2);

    let mut owner = srv.session("owner").await;
    let sub = owner.subscribe_frame(&[(GROUP, 0)]);
    owner.send(&sub).await.expect("send");
    let e = frame(&mut owner).await;
    assert_eq!(code(&e), "CURSOR_TOO_OLD", "{}", json::to_string(&e));
    assert_eq!(s(&e, "/error/groupId"), GROUP);
    assert_eq!(n(&e, "/error/details/throughSequence"), through);
    assert_eq!(n(&e, "/error/details/snapshotEventSequence"), through + 1);
    assert_eq!(s(&e, "/error/details/snapshotId"), "urn:x:snapshot:g");
    // From the snapshot's sequence: the signed snapshot reference, then the archive.
    let sub = owner.subscribe_frame(&[(GROUP, through)]);
    owner.send(&sub).await.expect("send");
    let evs = events(&mut owner, GROUP, through, 2).await;
    assert_eq!(s(&evs[0], "/event/kind"), "group.snapshot.created");
    assert_eq!(s(&evs[1], "/event/kind"), "group.archived");
    srv.stop().await;
}

/// §17.2: "A filter changes live delivery, not authorization or durable history". The replay
/// ignores the filter; live Events that do not pass it are not sent, except the sender's own;
/// a later SUBSCRIBE with another filter changes what arrives live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attention_filters_change_live_delivery_only() {
    let dir = TempDir::new("attention");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let post = srv.post(GROUP, "owner", None);
    srv.accepted(post).await;
    let head = srv.head(GROUP);

    // A filter that no Event of this Group passes: the replay still brings all of them.
    let mut c = srv.session("coord").await;
    let epoch = c.session_epoch.expect("epoch");
    let mut elsewhere = Object::new();
    elsewhere.insert(
        "conversationIds",
        Value::Array(vec![Value::string("urn:x:conversation:elsewhere")]),
    );
    let sub = c.subscribe_frame(&[(GROUP, 0)]);
    c.send(&with_attention(sub, &elsewhere))
        .await
        .expect("send");
    let replayed = events(&mut c, GROUP, 0, head).await;
    assert!(
        replayed
            .iter()
            .any(|e| s(e, "/event/kind") == "message.posted"),
        "the replay is history, never filtered"
    );
    ping_pong(&mut c).await;
    srv.until_live("coord", GROUP).await;

    // Live: the owner's Message does not pass and is not sent; the sender's own Event is.
    let theirs = srv.post(GROUP, "owner", None);
    srv.accepted(theirs).await;
    let mine = srv.post(GROUP, "coord", Some(epoch));
    let cmd = c.command_frame(&mine).expect("frame");
    c.send(&cmd).await.expect("send");
    let own = frame(&mut c).await;
    assert_eq!(
        s(&own, "/event/cause/id"),
        action_of(&mine),
        "the filtered Event must not arrive: {}",
        json::to_string(&own)
    );
    assert_eq!(n(&own, "/event/sequence"), head + 2);
    ping_pong(&mut c).await;

    // A filter the Group's Conversation passes: the next Message of the owner arrives live.
    let mut mission = Object::new();
    mission.insert(
        "conversationIds",
        Value::Array(vec![Value::string(format!("{GROUP}:mission"))]),
    );
    let sub = c.subscribe_frame(&[(GROUP, head + 2)]);
    c.send(&with_attention(sub, &mission)).await.expect("send");
    ping_pong(&mut c).await;
    srv.until_live("coord", GROUP).await;
    let theirs = srv.post(GROUP, "owner", None);
    srv.accepted(theirs.clone()).await;
    let ev = events(&mut c, GROUP, head + 2, 1).await;
    assert_eq!(s(&ev[0], "/event/cause/id"), action_of(&theirs));
    srv.stop().await;
}

/// The rest of binding.md's error table: a first frame that is not strict JSON, a
/// schema-invalid HELLO, a challenge answered by another frame, and an expired session close
/// the connection; an EVENT or HELLO from an authenticated client and a Presence Record of
/// another session do not. A PING that answers one of ours is not echoed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remaining_error_paths_close_only_where_the_table_says() {
    let dir = TempDir::new("errors");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let head = srv.head(GROUP);
    let coord = srv.h.id("coord");
    let key = srv.h.principals["coord"].key_id.clone();
    let fatal = |e: &Value| e.pointer("/error/fatal") == Some(&Value::Bool(true));

    // Before HELLO: a duplicate member is not strict JSON.
    let mut c = srv.client(false).await;
    c.send_text(r#"{"frameType":"HELLO","frameType":"HELLO"}"#.into())
        .await
        .expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "PROTOCOL_VIOLATION", "{}", json::to_string(&e));
    assert!(fatal(&e));
    closed(&mut c).await;

    // A HELLO without its keyId fails the frame schema.
    let mut c = srv.client(false).await;
    let mut init = c.client_init(&coord, &key, b"nonce-s");
    if let Value::Object(o) = &mut init {
        o.remove("keyId");
    }
    c.send(&init).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(
        code(&e),
        "SCHEMA_VALIDATION_FAILED",
        "{}",
        json::to_string(&e)
    );
    assert!(fatal(&e));
    closed(&mut c).await;

    // A challenge answered by anything but client_response.
    let mut c = srv.client(false).await;
    let init = c.client_init(&coord, &key, b"nonce-o");
    c.send(&init).await.expect("send");
    let challenge = frame(&mut c).await;
    assert_eq!(s(&challenge, "/phase"), "server_challenge");
    let early = c.ping_frame(b"too-early", &runtime::now().format(), None);
    c.send(&early).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(
        code(&e),
        "AUTH_INVALID_SIGNATURE",
        "{}",
        json::to_string(&e)
    );
    assert_eq!(s(&e, "/error/relatedFrameId"), s(&early, "/frameId"));
    assert!(fatal(&e));
    closed(&mut c).await;

    // After HELLO: an EVENT sent back, and a second HELLO, are refused; the session goes on.
    let mut c = srv.session("coord").await;
    let epoch = c.session_epoch.expect("epoch");
    let sub = c.subscribe_frame(&[(GROUP, 0)]);
    c.send(&sub).await.expect("send");
    let got = events(&mut c, GROUP, 0, head).await;
    c.send(&got[0]).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "PROTOCOL_VIOLATION", "{}", json::to_string(&e));
    assert_eq!(s(&e, "/error/relatedFrameId"), s(&got[0], "/frameId"));
    assert!(!fatal(&e));
    ping_pong(&mut c).await;
    let again = c.client_init(&coord, &key, b"nonce-again");
    c.send(&again).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "PROTOCOL_VIOLATION");
    assert!(!fatal(&e));
    ping_pong(&mut c).await;

    // PING: a Presence Record of another Agent, or of another Session Epoch, is refused and
    // not kept; a PING that answers ours (replyToNonce) gets no answer.
    let outsider = srv.h.id("outsider");
    for record in [
        presence_of(&outsider, epoch),
        presence_of(&coord, epoch + 1),
    ] {
        let ping = c.ping_frame(b"presence", &runtime::now().format(), Some(record));
        c.send(&ping).await.expect("send");
        let e = frame(&mut c).await;
        assert_eq!(code(&e), "AUTH_FORBIDDEN", "{}", json::to_string(&e));
        assert_eq!(s(&e, "/error/relatedFrameId"), s(&ping, "/frameId"));
        ping_pong(&mut c).await;
    }
    assert!(srv.gw.hub.presence(&outsider).is_none());
    assert!(srv.gw.hub.presence(&coord).is_none());
    let mut answer = c.ping_frame(b"answer", &runtime::now().format(), None);
    if let Value::Object(o) = &mut answer {
        o.insert("replyToNonce", Value::string("c2VydmVyLW5vbmNl"));
    }
    c.send(&answer).await.expect("send");
    ping_pong(&mut c).await; // the next frame answers this PING, not the one before
    srv.stop().await;

    // A session past its expiresAt: the next frame gets AUTH_REQUIRED and the socket closes.
    let config = GatewayConfig {
        session_ttl: Duration::ZERO,
        ..GatewayConfig::default()
    };
    let dir = TempDir::new("errors-expired");
    let srv = Server::start(
        &dir,
        Options {
            config,
            ..Options::default()
        },
    )
    .await;
    let mut c = srv.session("coord").await;
    // The clock must pass expiresAt (a microsecond); this waits, it asserts no duration.
    tokio::time::sleep(Duration::from_millis(2)).await;
    let ping = c.ping_frame(b"late", &runtime::now().format(), None);
    c.send(&ping).await.expect("send");
    let e = frame(&mut c).await;
    assert_eq!(code(&e), "AUTH_REQUIRED", "{}", json::to_string(&e));
    assert!(fatal(&e));
    closed(&mut c).await;
    srv.stop().await;
}

/// TLS 1.3 only: a ClientHello that offers TLS 1.2 alone gets a fatal `protocol_version`
/// alert (the build has no TLS 1.2 code at all), while TLS 1.3 clients connect on the same
/// listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_hello_offering_only_tls12_is_refused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = TempDir::new("tls12");
    let srv = Server::start(&dir, Options::default()).await;

    let mut body = vec![0x03, 0x03]; // legacy_version
    body.extend([0x5a; 32]); // random
    body.push(0); // no session ID
    body.extend([0x00, 0x02, 0xc0, 0x2b]); // TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    body.extend([0x01, 0x00]); // null compression
    let extensions: &[u8] = &[
        0x00, 0x0d, 0x00, 0x06, 0x00, 0x04, 0x04, 0x03, 0x08, 0x04, // signature_algorithms
        0x00, 0x0a, 0x00, 0x04, 0x00, 0x02, 0x00, 0x1d, // supported_groups: x25519
        0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x03, // supported_versions: TLS 1.2 only
    ];
    let len16 = |n: usize| u16::try_from(n).expect("short").to_be_bytes();
    body.extend(len16(extensions.len()));
    body.extend(extensions);
    let mut handshake = vec![0x01, 0x00]; // ClientHello, 24-bit length
    handshake.extend(len16(body.len()));
    handshake.extend(body);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend(len16(handshake.len()));
    record.extend(handshake);

    let mut tcp = tokio::net::TcpStream::connect(srv.addr())
        .await
        .expect("connect");
    tcp.write_all(&record).await.expect("send");
    let mut reply = Vec::new();
    let mut buf = [0u8; 512];
    while reply.len() < 7 {
        match tokio::time::timeout(PATIENCE, tcp.read(&mut buf))
            .await
            .expect("an answer or a close")
        {
            Ok(0) | Err(_) => break,
            Ok(k) => reply.extend(&buf[..k]),
        }
    }
    assert_eq!(
        reply.first(),
        Some(&0x15),
        "an alert record, not a ServerHello: {reply:02x?}"
    );
    assert_eq!(
        reply.get(5..7),
        Some(&[2u8, 70][..]),
        "fatal protocol_version: {reply:02x?}"
    );
    // TLS 1.3 on the same listener.
    let c = srv.session("coord").await;
    assert!(c.session_epoch.is_some());
    srv.stop().await;
}

/// Membership is checked again at fan-out: once a subscriber's Membership ends, nothing more
/// of that Group reaches it (another Group it still belongs to goes on), and a new SUBSCRIBE
/// gets `GROUP_NOT_FOUND`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_membership_stops_live_delivery_of_that_group_only() {
    let dir = TempDir::new("ended");
    let mut srv = Server::start(&dir, Options::default()).await;
    let outsider = srv.h.id("outsider");
    let owner_env = |g: &str| Envelope {
        group_id: Some(g.to_owned()),
        membership_epoch: Some(1),
        ..Envelope::default()
    };
    let member = || {
        let mut principal = Object::new();
        principal.insert("type", Value::string("agent"));
        principal.insert("id", Value::string(outsider.clone()));
        principal
    };
    for g in [GROUP, GROUP_B] {
        let create = srv.create_mission(g, "owner");
        srv.accepted(create).await;
        let mut p = Object::new();
        p.insert("principal", Value::Object(member()));
        p.insert("roles", Value::Array(vec![Value::string("worker")]));
        let add = srv.h.command(
            "owner",
            "membership.change",
            &owner_env(g),
            p,
            runtime::now(),
        );
        srv.accepted(add).await;
    }
    let mut c = srv.session("outsider").await;
    let sub = c.subscribe_frame(&[(GROUP, srv.head(GROUP)), (GROUP_B, srv.head(GROUP_B))]);
    c.send(&sub).await.expect("send");
    ping_pong(&mut c).await;
    srv.until_live("outsider", GROUP).await;
    srv.until_live("outsider", GROUP_B).await;

    let mut p = Object::new();
    p.insert("principal", Value::Object(member()));
    let end = srv.h.command(
        "owner",
        "membership.end",
        &owner_env(GROUP),
        p,
        runtime::now(),
    );
    srv.accepted(end).await;
    let in_a = srv.post(GROUP, "owner", None);
    srv.accepted(in_a.clone()).await;
    let in_b = srv.post(GROUP_B, "owner", None);
    srv.accepted(in_b.clone()).await;
    // Group A's frames, had any been queued, would be served before B's (round robin in the
    // order the queues filled).
    loop {
        let f = frame(&mut c).await;
        assert_eq!(s(&f, "/frameType"), "EVENT", "{}", json::to_string(&f));
        assert_ne!(
            s(&f, "/event/cause/id"),
            action_of(&in_a),
            "a Group whose Membership ended is not delivered"
        );
        if s(&f, "/event/cause/id") == action_of(&in_b) {
            break;
        }
    }
    let sub = c.subscribe_frame(&[(GROUP, 0)]);
    c.send(&sub).await.expect("send");
    assert_eq!(code(&frame(&mut c).await), "GROUP_NOT_FOUND");
    srv.stop().await;
}

/// Commands in flight per connection (binding.md, "COMMAND"). The connection's Commands
/// are held in front of the authority (no race with it): one past the limit gets a
/// retryable `BACKPRESSURE` naming its frame and Action ID, never reaches the authority and
/// pauses no Group; the socket stays open; another connection's Command in the same Group
/// is accepted meanwhile (the limit is per connection); once the authority answers the held
/// Commands, the refused one, retried after `retryAfterMs`, is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_past_the_in_flight_limit_gets_backpressure_and_the_socket_stays_open() {
    let dir = TempDir::new("inflight");
    let config = GatewayConfig {
        commands_in_flight: 2,
        retry_after_ms: 40,
        ..GatewayConfig::default()
    };
    let mut srv = Server::start(
        &dir,
        Options {
            config,
            hold: true,
            ..Options::default()
        },
    )
    .await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let head = srv.head(GROUP);
    let hold = srv.hold.take().expect("a held intake");

    let mut owner = srv.session("owner").await;
    let conns = srv.gw.hub.connections_of(&srv.h.id("owner"));
    assert_eq!(conns.len(), 1);
    hold.hold(conns[0].id);

    // Two Commands wait for the authority: the connection's limit.
    let held: Vec<Vec<u8>> = (0..2).map(|_| srv.post(GROUP, "owner", None)).collect();
    for c in &held {
        let f = owner.command_frame(c).expect("frame");
        owner.send(&f).await.expect("send");
    }
    for _ in 0..1500 {
        if hold.waiting() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(hold.waiting(), 2);

    // One more: BACKPRESSURE with retry guidance, naming the frame and the Action ID; the
    // PING sent after it is answered.
    let over = srv.post(GROUP, "owner", None);
    let f = owner.command_frame(&over).expect("frame");
    owner.send(&f).await.expect("send");
    let ping = owner.ping_frame(b"still-open", &runtime::now().format(), None);
    owner.send(&ping).await.expect("send");
    let e = frame(&mut owner).await;
    assert_eq!(code(&e), "BACKPRESSURE", "{}", json::to_string(&e));
    assert_eq!(s(&e, "/error/relatedFrameId"), s(&f, "/frameId"));
    assert_eq!(s(&e, "/error/relatedActionId"), action_of(&over));
    assert_eq!(s(&e, "/error/groupId"), GROUP);
    assert_eq!(n(&e, "/error/retryAfterMs"), 40);
    assert_eq!(e.pointer("/error/retryable"), Some(&Value::Bool(true)));
    assert_ne!(e.pointer("/error/fatal"), Some(&Value::Bool(true)));
    assert!(
        e.pointer("/error/details/resumeAfterSequence").is_none(),
        "a Command's BACKPRESSURE is not a Group's continuation"
    );
    let pong = frame(&mut owner).await;
    assert_eq!(s(&pong, "/frameType"), "PING", "{}", json::to_string(&pong));
    assert_eq!(
        s(&pong, "/replyToNonce"),
        wasm_core::encoding::b64url_encode(b"still-open")
    );
    assert_eq!(
        hold.waiting(),
        2,
        "the refused Command never reached the authority"
    );
    assert_eq!(srv.head(GROUP), head);

    // Another connection's Command in the same Group is not held back by this one's limit.
    let mut coord = srv.session("coord").await;
    let epoch = coord.session_epoch.expect("epoch");
    let other = srv.post(GROUP, "coord", Some(epoch));
    let f = coord.command_frame(&other).expect("frame");
    coord.send(&f).await.expect("send");
    let ev = events(&mut coord, GROUP, head, 1).await;
    assert_eq!(s(&ev[0], "/event/cause/id"), action_of(&other));
    assert_eq!(hold.waiting(), 2);

    // The authority answers the held Commands: their Events. (Each Command of a connection
    // goes to the authority from its own task, so two in flight may reach it in either order.)
    hold.release();
    let mut answered = Vec::new();
    for i in 0..held.len() as u64 {
        let f = frame(&mut owner).await;
        assert_eq!(s(&f, "/frameType"), "EVENT", "{}", json::to_string(&f));
        assert_eq!(n(&f, "/event/sequence"), head + 2 + i);
        answered.push(s(&f, "/event/cause/id").to_owned());
    }
    answered.sort();
    let mut expected: Vec<String> = held.iter().map(|c| action_of(c)).collect();
    expected.sort();
    assert_eq!(answered, expected);

    // The refused Command, retried as the guidance says, is accepted. (The slots are freed
    // just after the answers are published, so a retry may still meet a full connection: it
    // then gets BACKPRESSURE again and waits again.)
    let mut retry_after = n(&e, "/error/retryAfterMs");
    let mut attempts = 0;
    let accepted = loop {
        attempts += 1;
        assert!(attempts <= 50, "the Command was never accepted");
        tokio::time::sleep(Duration::from_millis(retry_after)).await;
        let f = owner.command_frame(&over).expect("frame");
        owner.send(&f).await.expect("send");
        let got = frame(&mut owner).await;
        match s(&got, "/frameType") {
            "EVENT" => break got,
            "ERROR" if code(&got) == "BACKPRESSURE" => retry_after = n(&got, "/error/retryAfterMs"),
            _ => panic!("unexpected {}", json::to_string(&got)),
        }
    };
    assert_eq!(s(&accepted, "/event/cause/id"), action_of(&over));
    assert_eq!(n(&accepted, "/event/sequence"), head + 4);
    srv.stop().await;
}

/// A client that leaves more than `MAX_CONTROL` replies unread is disconnected (binding.md,
/// "Backpressure"). Through tiny socket buffers, a client that sends `MAX_CONTROL` PINGs
/// before reading gets every answer and stays; the same client, then sending PINGs without
/// ever reading, is cut off: its writes fail, the server lets go of the connection and of
/// its queue (never more than one reply past the limit), and another socket is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_its_replies_unread_is_disconnected_and_others_are_served() {
    use super::conn::MAX_CONTROL;
    let dir = TempDir::new("unread");
    let srv = Server::start(
        &dir,
        Options {
            send_buffer: Some(4096),
            ..Options::default()
        },
    )
    .await;
    let mut other = srv.session("owner").await;
    ping_pong(&mut other).await;

    // Within the limit: every reply, in order, and the session goes on.
    let mut slow = srv.slow_session("coord").await;
    let conn = srv
        .gw
        .hub
        .connections_of(&srv.h.id("coord"))
        .pop()
        .expect("registered");
    for i in 0..MAX_CONTROL {
        let p = slow.ping_frame(
            format!("late-{i}").as_bytes(),
            &runtime::now().format(),
            None,
        );
        slow.send(&p).await.expect("send");
    }
    for i in 0..MAX_CONTROL {
        let pong = frame(&mut slow).await;
        assert_eq!(
            s(&pong, "/replyToNonce"),
            wasm_core::encoding::b64url_encode(format!("late-{i}").as_bytes())
        );
    }
    ping_pong(&mut slow).await;

    // Past it: PINGs and never a read, until a write fails.
    let mut sent = 0usize;
    let cut_off = tokio::time::timeout(PATIENCE, async {
        while sent <= 100 * MAX_CONTROL {
            let p = slow.ping_frame(b"unread", &runtime::now().format(), None);
            if slow.send(&p).await.is_err() {
                return true;
            }
            sent += 1;
        }
        false
    })
    .await
    .expect("the server neither closed the socket nor kept reading it");
    assert!(cut_off, "{sent} replies left unread, and still connected");
    assert!(
        sent > MAX_CONTROL,
        "cut off after only {sent} unread replies"
    );
    assert!(srv.gw.hub.connections_of(&srv.h.id("coord")).is_empty());
    assert!(
        conn.control_len() <= MAX_CONTROL + 1,
        "{}",
        conn.control_len()
    );
    for _ in 0..1500 {
        if Arc::strong_count(&conn) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        Arc::strong_count(&conn),
        1,
        "the server still holds the connection"
    );

    // The other socket was never held up.
    ping_pong(&mut other).await;
    srv.stop().await;
}

/// A client that triggers a closing `ERROR` and never reads is dropped after `close_grace`
/// (binding.md, "Errors and what closes the connection"): through tiny socket buffers, PINGs
/// left unread (fewer than `MAX_CONTROL`) block the server's writer on the socket; a binary
/// message then ends the session with a fatal `PROTOCOL_VIOLATION` the client never reads.
/// The connection leaves the hub, the server lets go of it, the client's writes fail, and
/// another socket is served. Before the grace, the writer waited on the socket forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_not_reading_its_closing_error_is_dropped_after_the_grace() {
    use super::conn::MAX_CONTROL;
    let dir = TempDir::new("closing-unread");
    let srv = Server::start(
        &dir,
        Options {
            send_buffer: Some(4096),
            config: GatewayConfig {
                close_grace: Duration::from_millis(200),
                ..GatewayConfig::default()
            },
            ..Options::default()
        },
    )
    .await;
    let mut other = srv.session("owner").await;
    ping_pong(&mut other).await;

    let mut slow = srv.slow_session("coord").await;
    ping_pong(&mut slow).await;
    let conn = srv
        .gw
        .hub
        .connections_of(&srv.h.id("coord"))
        .pop()
        .expect("registered");
    // PINGs never read, until replies pile up behind the blocked writer (well under the
    // unread-replies limit, so that limit is not what closes it).
    let stuck = MAX_CONTROL / 4;
    let mut sent = 0usize;
    let blocked = tokio::time::timeout(PATIENCE, async {
        while conn.control_len() < stuck {
            if sent < MAX_CONTROL / 2 {
                let p = slow.ping_frame(b"unread", &runtime::now().format(), None);
                slow.send(&p).await.expect("send");
                sent += 1;
            } else {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    })
    .await;
    assert!(
        blocked.is_ok(),
        "{sent} PINGs unread and the writer still drains ({} queued)",
        conn.control_len()
    );
    assert_eq!(srv.gw.hub.connections_of(&srv.h.id("coord")).len(), 1);

    // The closing error, never read.
    slow.send_binary(vec![1, 2, 3]).await.expect("send");
    let gone = tokio::time::timeout(PATIENCE, async {
        while !srv.gw.hub.connections_of(&srv.h.id("coord")).is_empty()
            || Arc::strong_count(&conn) > 1
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        gone.is_ok(),
        "the server still holds the closed connection ({} replies queued)",
        conn.control_len()
    );
    assert!(conn.is_closing());
    // The socket is gone: the client's writes fail.
    let failed = tokio::time::timeout(PATIENCE, async {
        for _ in 0..100 * MAX_CONTROL {
            let p = slow.ping_frame(b"late", &runtime::now().format(), None);
            if slow.send(&p).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        false
    })
    .await
    .expect("writes neither fail nor are taken");
    assert!(failed, "the dropped socket still takes writes");

    // The other socket was never held up.
    ping_pong(&mut other).await;
    srv.stop().await;
}

/// A client that opens `/ws` and sends nothing gets a fatal `AUTH_REQUIRED` once
/// `hello_wait` is over, then the Close (binding.md, "Errors and what closes the
/// connection"); a HELLO within the bound opens a session that outlives it. Before the bound,
/// the server waited for the first frame forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sending_no_hello_is_refused_and_closed() {
    let dir = TempDir::new("no-hello");
    let wait = Duration::from_millis(300);
    let srv = Server::start(
        &dir,
        Options {
            config: GatewayConfig {
                hello_wait: wait,
                ..GatewayConfig::default()
            },
            ..Options::default()
        },
    )
    .await;
    let mut silent = srv.client(false).await;
    let e = frame(&mut silent).await;
    assert_eq!(code(&e), "AUTH_REQUIRED", "{}", json::to_string(&e));
    assert_eq!(e.pointer("/error/fatal"), Some(&Value::Bool(true)));
    closed(&mut silent).await;
    assert!(srv.gw.hub.connections_of(&srv.h.id("coord")).is_empty());

    // A HELLO in time is served, and the session is not cut at the bound.
    let mut c = srv.session("coord").await;
    ping_pong(&mut c).await;
    tokio::time::sleep(wait * 2).await;
    ping_pong(&mut c).await;
    assert_eq!(srv.gw.hub.connections_of(&srv.h.id("coord")).len(), 1);
    srv.stop().await;
}

/// §14 (H-10): the root MissionOwner inspects the complete Mission tree. The owner holds no
/// Membership in a child Mission's Group (its Coordinator owns it), yet reads it: the
/// development Group list names it, SUBSCRIBE replays its whole history and live Events follow;
/// anyone else still gets `GROUP_NOT_FOUND`, and the owner's standing there sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_mission_owner_reads_a_child_group_without_a_membership() {
    const CHILD: &str = "urn:x:group:child";
    let dir = TempDir::new("tree");
    let mut srv = Server::start(&dir, Options::default()).await;
    let create = srv.create_mission(GROUP, "owner");
    srv.accepted(create).await;
    let _coord = srv.session("coord").await;
    let coord_id = srv.h.id("coord");
    let env = |group: &str, epoch: Option<u64>| Envelope {
        group_id: Some(group.to_owned()),
        membership_epoch: Some(1),
        session_epoch: epoch,
        coordinator_epoch: Some(1),
        ..Envelope::default()
    };
    let session = srv.gw.hub.session_epoch(&coord_id);
    assert!(session.is_some(), "the Coordinator's session is open");
    let mut contract = Object::new();
    contract.insert("goal", Value::string("Review the design"));
    for (k, v) in [
        ("deliverables", "review"),
        ("acceptanceCriteria", "reviewed"),
        ("allowedResources", "repo:main"),
    ] {
        contract.insert(k, Value::Array(vec![Value::string(v)]));
    }
    contract.insert("deadline", Value::string("2099-07-14T08:00:00Z"));
    let mut p = Object::new();
    p.insert("workItemId", Value::string("urn:x:work:review"));
    p.insert("contract", Value::Object(contract));
    let authorize = srv.h.command(
        "coord",
        "work.authorize",
        &env(GROUP, session),
        p,
        runtime::now(),
    );
    srv.accepted(authorize).await;
    let mut p = Object::new();
    for (k, v) in [
        ("missionId", "urn:x:mission:child".to_owned()),
        ("groupId", CHILD.to_owned()),
        ("parentWorkItemId", "urn:x:work:review".to_owned()),
        ("coordinatorId", coord_id.clone()),
        ("title", "Child review".to_owned()),
        ("objective", "Review the design in depth".to_owned()),
        ("deadline", "2099-07-13T08:00:00Z".to_owned()),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("reviewed")]),
    );
    let child = srv.h.command(
        "coord",
        "mission.create_child",
        &env(GROUP, session),
        p,
        runtime::now(),
    );
    srv.accepted(child).await;
    let owner_id = srv.h.id("owner");
    assert!(
        !srv.gw.hub.has_membership(CHILD, &owner_id),
        "the owner holds no Membership in the child Group"
    );
    assert_eq!(
        srv.gw.hub.groups_of(&owner_id),
        vec![CHILD.to_owned(), GROUP.to_owned()]
    );
    assert_eq!(
        srv.gw.hub.groups_of(&srv.h.id("stranger")),
        Vec::<String>::new()
    );

    // The whole history, from sequence 1, then live Events.
    let mut owner = srv.session("owner").await;
    let sub = owner.subscribe_frame(&[(CHILD, 0)]);
    owner.send(&sub).await.expect("send");
    let head = srv.head(CHILD);
    assert!(head >= 1);
    let replayed = events(&mut owner, CHILD, 0, head).await;
    assert_eq!(s(&replayed[0], "/event/kind"), "mission.created");
    ping_pong(&mut owner).await;
    srv.until_live("owner", CHILD).await;
    // The child's Coordinator also owns it: its Membership there is at epoch 2.
    let post = srv.post_at(CHILD, "coord", session, 2);
    srv.accepted(post).await;
    let live = events(&mut owner, CHILD, head, 1).await;
    assert_eq!(s(&live[0], "/event/kind"), "message.posted");

    // Anyone else: the answer of an unknown Group.
    let mut stranger = srv.session("stranger").await;
    let sub = stranger.subscribe_frame(&[(CHILD, 0)]);
    stranger.send(&sub).await.expect("send");
    assert_eq!(code(&frame(&mut stranger).await), "GROUP_NOT_FOUND");
    srv.stop().await;
}

/// A key revoked while its socket is open ends that session at once (issue 26: "effective at
/// once"): the next Registry swap wakes the session, which sends a fatal
/// `AUTH_INVALID_SIGNATURE` naming the revocation and closes; another principal's session and a
/// Registry swap that leaves a key valid change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_key_is_revoked_is_closed_at_once() {
    use wasm_core::crypto::registry::StatusRecord;
    let dir = TempDir::new("key-revoked");
    let srv = Server::start(&dir, Options::default()).await;
    let mut coord = srv.session("coord").await;
    let mut owner = srv.session("owner").await;
    let live = srv.handle.live_registry();
    // A swap that changes nothing for them: both sessions carry on.
    live.replace(srv.h.registry.clone());
    ping_pong(&mut coord).await;
    ping_pong(&mut owner).await;
    // The coordinator's key revoked now.
    let mut evidence = crate::registry_api::evidence_of(&srv.h.registry);
    let at = runtime::now().format_whole_seconds();
    let key = &srv.h.principals["coord"].key_id;
    let b = evidence
        .bindings
        .iter_mut()
        .find(|b| &b.key_id == key)
        .expect("coord's binding");
    b.validity_history.push(StatusRecord {
        sequence: 1,
        recorded_at: at.clone(),
        valid_until: None,
        revoked_at: Some(at),
    });
    // The second boundary: revokedAt is whole seconds, so wait until it has passed.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    live.replace(evidence.validate().expect("valid"));
    let e = frame(&mut coord).await;
    assert_fatal(&e, "AUTH_INVALID_SIGNATURE", "revoked");
    closed(&mut coord).await;
    // The owner's session is untouched.
    ping_pong(&mut owner).await;
    srv.stop().await;
}
