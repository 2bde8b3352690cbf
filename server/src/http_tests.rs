//! The HTTP edge, driven in-process through the real router (`tower::ServiceExt::oneshot`):
//! wire error documents, the body limit, the bounded queue, the timeout, and the whole
//! behavioural suite with every rejection validated against the bundle's `error.schema.json`.

use crate::bundle::conformance_json;
use crate::devorg::OrgSetup;
use crate::http::{AppState, MAX_COMMAND_BYTES, router};
use crate::runtime::{AuthorityHandle, QUEUE_CAPACITY, RETRY_AFTER_MS, Reply};
use crate::store::sqlite::SqliteStore;
use crate::wire::INTERNAL_MESSAGE;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use simulation::harness::{Envelope, Harness};
use simulation::scenario::{self, Answer, Target};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;
use tower::ServiceExt;
use wasm_core::authority::Micros;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("weave-http-{tag}-{}-{n}", std::process::id()));
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

/// A response read whole.
struct TestResponse {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl TestResponse {
    fn json(&self) -> Value {
        json::parse_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    fn str_at(&self, pointer: &str) -> Option<String> {
        self.json()
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

async fn send(router: &Router, request: Request<Body>) -> TestResponse {
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    TestResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

fn post(bytes: Vec<u8>) -> Request<Body> {
    Request::post("/api/commands")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(bytes))
        .expect("request")
}

/// The console's router over a real authority (owner thread, SQLite store) in a temp dir,
/// for an Organization of Harness Principals (deterministic test keys). The owner thread
/// decides at the app's clock, which tests set (scenarios run at their own times).
struct TestApp {
    router: Router,
    harness: Harness,
    clock: Arc<AtomicI64>,
    dir: TempDir,
}

impl TestApp {
    fn new(principals: &[(&str, ActorType)], start: Micros) -> TestApp {
        let harness = Harness::new(principals);
        let dir = TempDir::new("app");
        let org = OrgSetup {
            config: harness.authority.config.duplicate(),
            registry: harness.registry.clone(),
            admission_service: harness.actor("group-gateway"),
            public: crate::registry_api::PublicRegistry::new(
                &crate::registry_api::evidence_of(&harness.registry),
                &[],
            ),
            dev: None,
            service_keys: None,
        };
        let clock = Arc::new(AtomicI64::new(start.0));
        let read = Arc::clone(&clock);
        let handle = crate::runtime::start_with_clock(
            &dir.0.join("data"),
            org,
            Box::new(move || Micros(read.load(Ordering::SeqCst))),
        )
        .expect("authority starts");
        let router = router(AppState::new(&dir.0.join("public"), "{}".into()).authority(handle));
        TestApp {
            router,
            harness,
            clock,
            dir,
        }
    }

    fn set_time(&self, t: Micros) {
        self.clock.store(t.0, Ordering::SeqCst);
    }

    async fn post(&self, bytes: Vec<u8>) -> TestResponse {
        send(&self.router, post(bytes)).await
    }

    /// Events in the durable store (a second, read-only connection).
    fn event_count(&self) -> u64 {
        SqliteStore::event_count_at(&self.dir.0.join("data").join("authority.sqlite"))
            .expect("event count")
    }

    /// The registry service's Agent Card registration for `agent` (one Event when accepted).
    fn card_command(&mut self, agent: &str, now: Micros) -> Vec<u8> {
        let mut card = Object::new();
        card.insert("agentId", Value::string(self.harness.id(agent)));
        card.insert("version", Value::from(1u64));
        card.insert("displayName", Value::string(agent.to_owned()));
        card.insert(
            "owner",
            Value::string("urn:missionweaveprotocol:human:operations"),
        );
        card.insert(
            "publicKey",
            Value::string(wasm_core::encoding::b64url_encode(
                &wasm_core::crypto::ed25519::public_key_of(&self.harness.principals[agent].seed),
            )),
        );
        card.insert("capabilities", Value::Array(vec![]));
        card.insert("issuedAt", Value::string(now.format()));
        card.insert("signature", Value::string("test"));
        let mut payload = Object::new();
        payload.insert("card", Value::Object(card));
        self.harness.command(
            "organization-registry",
            "ext.missionweaveprotocol.registry.agent_card_register",
            &Envelope::default(),
            payload,
            now,
        )
    }

    fn session_command(&mut self, agent: &str, now: Micros) -> Vec<u8> {
        let mut payload = Object::new();
        payload.insert("agentId", Value::string(self.harness.id(agent)));
        self.harness.command(
            "group-gateway",
            "ext.missionweaveprotocol.identity.session_open",
            &Envelope::default(),
            payload,
            now,
        )
    }
}

fn start() -> Micros {
    Micros::parse("2026-07-15T08:00:00Z").expect("timestamp")
}

/// `error.schema.json` (with `common.schema.json`, which it references) from the bundle,
/// compiled by an independent validator.
struct ErrorSchema {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl ErrorSchema {
    fn load() -> ErrorSchema {
        let root = crate::bundle::protocol_root(None).expect("protocol bundle");
        let mut compiler = boon::Compiler::new();
        compiler.enable_format_assertions();
        for file in ["common.schema.json", "error.schema.json"] {
            let path = root.join("schemas").join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut schema: serde_json::Value = serde_json::from_str(&text).expect("schema JSON");
            // `boon` compiles patterns with `regex`, which has no look-around; the error
            // document never uses a duration, so that one pattern is relaxed (in memory).
            if let Some(p) = schema.pointer_mut("/$defs/duration/pattern") {
                *p = serde_json::Value::from("^P");
            }
            let id = schema["$id"].as_str().expect("$id").to_owned();
            compiler.add_resource(&id, schema).expect("resource");
        }
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(
                "https://missionweaveprotocol.dev/schemas/0.1/error.schema.json",
                &mut schemas,
            )
            .expect("error.schema.json compiles");
        ErrorSchema { schemas, index }
    }

    /// The validator's report if `body` is not a valid error document.
    fn problems(&self, body: &str) -> Option<String> {
        match serde_json::from_str::<serde_json::Value>(body) {
            Err(e) => Some(e.to_string()),
            Ok(v) => self
                .schemas
                .validate(&v, self.index)
                .err()
                .map(|e| format!("{e:#}")),
        }
    }

    /// Panics with the validator's report unless `body` is a valid error document.
    fn check(&self, body: &str) {
        if let Some(p) = self.problems(body) {
            panic!("not an error document: {body}\n{p}");
        }
    }
}

#[test]
fn the_schema_check_refuses_what_the_edge_used_to_send() {
    let schema = ErrorSchema::load();
    let doc = r#"{"code":"INVALID_COMMAND","message":"m","retryable":false,"occurredAt":"2026-07-15T08:00:00.250000Z"}"#;
    assert_eq!(schema.problems(doc), None);
    for bad in [
        // The old wrapped shape, and the old members without `occurredAt`.
        r#"{"error":{"code":"INVALID_COMMAND","message":"m","retryable":false}}"#,
        r#"{"code":"INVALID_COMMAND","message":"m","retryable":false}"#,
        r#"{"code":"INVALID_COMMAND","message":"","retryable":false,"occurredAt":"2026-07-15T08:00:00Z"}"#,
        r#"{"code":"NOPE","message":"m","retryable":false,"occurredAt":"2026-07-15T08:00:00Z"}"#,
        r#"{"code":"INVALID_COMMAND","message":"m","retryable":false,"occurredAt":"yesterday"}"#,
    ] {
        assert!(schema.problems(bad).is_some(), "{bad}");
    }
}

#[tokio::test]
async fn a_command_at_the_body_limit_is_read_and_one_byte_more_is_refused_unread() {
    let schema = ErrorSchema::load();
    let mut app = TestApp::new(&[("coord", ActorType::Agent)], start());
    let mut at_limit = app.card_command("coord", start());
    assert!(at_limit.len() < MAX_COMMAND_BYTES);
    // Trailing whitespace is legal JSON and not signed: the same Command, exactly at the limit.
    at_limit.resize(MAX_COMMAND_BYTES, b' ');
    let mut over = app.session_command("coord", start());
    over.resize(MAX_COMMAND_BYTES + 1, b' ');

    let before = app.event_count();
    let r = app.post(over).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.body);
    schema.check(&r.body);
    assert_eq!(r.str_at("/code").as_deref(), Some("PROTOCOL_VIOLATION"));
    assert_eq!(
        r.str_at("/message"),
        Some(format!(
            "the request body is larger than {MAX_COMMAND_BYTES} bytes, the most a Command may take"
        ))
    );
    assert_eq!(
        app.event_count(),
        before,
        "an over-size body changed the store"
    );

    let r = app.post(at_limit).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.str_at("/status").as_deref(), Some("accepted"));
    assert_eq!(app.event_count(), before + 1);
}

#[tokio::test]
async fn garbage_is_a_valid_error_document_and_changes_nothing() {
    let schema = ErrorSchema::load();
    let app = TestApp::new(&[], start());
    let before = app.event_count();
    for body in [&b"not json"[..], b"", br#"{"kind":"a","kind":"b"}"#, b"{}"] {
        let r = app.post(body.to_vec()).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
        schema.check(&r.body);
        assert_eq!(r.json().pointer("/retryable"), Some(&Value::Bool(false)));
    }
    assert_eq!(app.event_count(), before);
}

#[tokio::test]
async fn a_full_queue_answers_backpressure_and_the_queued_commands_still_complete() {
    let schema = ErrorSchema::load();
    // A handle over a queue that nobody drains yet: the owner thread is stalled.
    let (handle, rx) = AuthorityHandle::detached(QUEUE_CAPACITY);
    let dir = TempDir::new("queue");
    let app = router(AppState::new(&dir.0.join("public"), "{}".into()).authority(handle.clone()));
    let mut queued = Vec::new();
    for i in 0..QUEUE_CAPACITY {
        let h = handle.clone();
        queued.push(tokio::spawn(async move {
            h.submit(format!("command {i}").into_bytes()).await
        }));
    }
    // Let every spawned submission reach the queue (they then wait for their answers).
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let r = send(&app, post(b"one too many".to_vec())).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    schema.check(&r.body);
    let v = r.json();
    assert_eq!(r.str_at("/code").as_deref(), Some("BACKPRESSURE"));
    assert_eq!(v.pointer("/retryable"), Some(&Value::Bool(true)));
    assert_eq!(
        v.pointer("/retryAfterMs").and_then(|n| match n {
            Value::Number(n) => n.as_safe_u64(),
            _ => None,
        }),
        Some(RETRY_AFTER_MS)
    );
    assert_eq!(
        r.headers
            .get(header::RETRY_AFTER)
            .and_then(|h| h.to_str().ok()),
        Some("1")
    );
    // The owner comes back: every queued Command is answered, in order, and none was lost.
    let owner = std::thread::spawn(move || {
        let mut n = 0;
        while let Ok(req) = rx.recv() {
            let _ = req
                .1
                .send(Reply::Done(String::from_utf8_lossy(&req.0).into_owned()));
            n += 1;
        }
        n
    });
    for (i, task) in queued.into_iter().enumerate() {
        match task.await.expect("task") {
            Reply::Done(body) => assert_eq!(body, format!("command {i}")),
            Reply::Refused(e) => panic!("queued Command {i} refused: {e:?}"),
        }
    }
    drop((handle, app));
    assert_eq!(owner.join().expect("owner"), QUEUE_CAPACITY);
}

#[tokio::test]
async fn a_request_that_hangs_is_cut_with_a_wire_error() {
    let schema = ErrorSchema::load();
    let (handle, _rx) = AuthorityHandle::detached(1);
    let dir = TempDir::new("timeout");
    let app = router(
        AppState::new(&dir.0.join("public"), "{}".into())
            .authority(handle)
            .timeout(Duration::from_millis(200)),
    );
    let t = std::time::Instant::now();
    let r = send(&app, post(b"{}".to_vec())).await;
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(r.status, StatusCode::REQUEST_TIMEOUT, "{}", r.body);
    schema.check(&r.body);
    assert_eq!(r.json().pointer("/retryable"), Some(&Value::Bool(true)));
}

#[tokio::test]
async fn internal_errors_say_nothing_internal() {
    let schema = ErrorSchema::load();
    let (handle, rx) = AuthorityHandle::detached(1);
    drop(rx); // the authority is gone
    let dir = TempDir::new("internal");
    let app = router(AppState::new(&dir.0.join("public"), "{}".into()).authority(handle));
    let r = send(&app, post(b"{}".to_vec())).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", r.body);
    schema.check(&r.body);
    assert_eq!(r.str_at("/message").as_deref(), Some(INTERNAL_MESSAGE));
}

#[tokio::test]
async fn the_conformance_report_shows_no_paths() {
    let root = crate::bundle::protocol_root(None).expect("protocol bundle");
    let absolute = root.canonicalize().expect("bundle path");
    let dir = TempDir::new("conformance");
    for (report, label) in [
        (conformance_json(Ok(root.clone())), "found"),
        (
            conformance_json(crate::bundle::protocol_root(Some(
                "/nonexistent/secret-place",
            ))),
            "missing",
        ),
    ] {
        let app = router(AppState::new(&dir.0.join("public"), report));
        let r = send(
            &app,
            Request::get("/api/core/conformance")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        for secret in [
            absolute.display().to_string(),
            root.display().to_string(),
            "secret-place".into(),
            "protocolDir".into(),
        ] {
            assert!(!r.body.contains(&secret), "{label}: {secret} in {}", r.body);
        }
        if label == "found" {
            assert!(
                r.json().pointer("/bundles/2/passed").is_some(),
                "{}",
                r.body
            );
        } else {
            assert!(r.str_at("/error").is_some(), "{}", r.body);
        }
    }
}

/// A scenario target that sends every Command through the router to the real authority and
/// validates every refusal it hears against `error.schema.json`.
struct HttpTarget<'a> {
    app: TestApp,
    rt: tokio::runtime::Runtime,
    schema: &'a ErrorSchema,
    refusals: &'a mut usize,
}

impl Target for HttpTarget<'_> {
    fn submit(&mut self, bytes: &[u8], now: Micros) -> Answer {
        self.app.set_time(now);
        let r = self.rt.block_on(self.app.post(bytes.to_vec()));
        if r.status == StatusCode::OK {
            let v = r.json();
            return match v.pointer("/status").and_then(Value::as_str) {
                Some("duplicate") => Answer::Duplicate,
                _ => match v.pointer("/events") {
                    Some(Value::Array(events)) => Answer::Events(events.clone()),
                    _ => panic!("no events in {}", r.body),
                },
            };
        }
        self.schema.check(&r.body);
        *self.refusals += 1;
        let code = r.str_at("/code").unwrap_or_default();
        // The HTTP status follows the wire code.
        let status = match code.as_str() {
            "INTERNAL_ERROR" => StatusCode::INTERNAL_SERVER_ERROR,
            "BACKPRESSURE" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        assert_eq!(r.status, status, "{}", r.body);
        Answer::Error {
            code,
            message: r.str_at("/message").unwrap_or_default(),
        }
    }

    fn principal_id(&self, name: &str) -> Option<String> {
        self.app.harness.principal_id(name)
    }

    fn principal_names(&self) -> Vec<String> {
        self.app.harness.principal_names()
    }

    fn command(
        &mut self,
        name: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Vec<u8> {
        self.app.harness.command(name, kind, env, payload, now)
    }

    fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), String> {
        for a in agents {
            for bytes in [
                self.app.card_command(a, now),
                self.app.session_command(a, now),
            ] {
                if let Answer::Error { code, message } = self.submit(&bytes, now) {
                    return Err(format!("{a}: {code}: {message}"));
                }
            }
        }
        Ok(())
    }
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../simulation/tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_rejection_of_the_scenario_suite_over_http_is_a_valid_error_document() {
    let schema = ErrorSchema::load();
    let (mut refusals, mut expected, mut steps) = (0usize, 0usize, 0usize);
    let files = scenario_files();
    assert!(!files.is_empty());
    for f in &files {
        let text = std::fs::read(f).expect("scenario");
        let sc = json::parse(&text).expect("scenario JSON");
        if let Some(Value::Array(all)) = sc.pointer("/steps") {
            expected += all
                .iter()
                .filter(|s| s.pointer("/expect/error").is_some())
                .count();
        }
        let report = scenario::run(&text, |principals| {
            Ok(HttpTarget {
                app: TestApp::new(principals, start()),
                rt: tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .map_err(|e| e.to_string())?,
                schema: &schema,
                refusals: &mut refusals,
            })
        });
        assert!(
            report.failures.is_empty(),
            "{}: {:?}",
            f.display(),
            report.failures
        );
        steps += report.steps;
    }
    assert!(refusals > 0);
    assert_eq!(
        refusals, expected,
        "every refusal is an expected one ({steps} steps)"
    );
}

/// `x-mwp-answer: lines` is how a cluster node asks the writer for a forwarded Command's
/// Events in lines (docs/cluster.md, "Forwarding"). Nothing checks that the asker is a node, so
/// the header must give anyone nothing the document would not: the same Events, byte for byte,
/// and a refusal is still the §19 error document. Any other value of the header is ignored.
#[tokio::test]
async fn the_lines_answer_gives_a_client_nothing_the_document_does_not() {
    let schema = ErrorSchema::load();
    let mut app = TestApp::new(
        &[("coord", ActorType::Agent), ("worker", ActorType::Agent)],
        start(),
    );
    let lines_post = |bytes: Vec<u8>, value: &str| {
        Request::post("/api/commands")
            .header(header::CONTENT_TYPE, "application/json")
            .header(crate::cluster::forward::ANSWER_HEADER, value.to_owned())
            .body(Body::from(bytes))
            .expect("request")
    };
    let events_of = |r: &TestResponse| -> Vec<String> {
        match r.json().pointer("/events") {
            Some(Value::Array(events)) => events
                .iter()
                .map(|e| {
                    let jcs = wasm_core::json::jcs::canonicalize(e).expect("canonical");
                    String::from_utf8_lossy(&jcs).into_owned()
                })
                .collect(),
            _ => panic!("no events in {}", r.body),
        }
    };

    // Accepted: the lines carry exactly the Events the document carries on an exact retry.
    let card = app.card_command("coord", start());
    let before = app.event_count();
    let r = send(&app.router, lines_post(card.clone(), "lines")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut lines = r.body.split('\n');
    assert_eq!(lines.next(), Some("accepted"), "{}", r.body);
    let lines: Vec<String> = lines.map(str::to_owned).collect();
    assert_eq!(app.event_count(), before + lines.len() as u64);
    assert!(!lines.is_empty());
    let action = wasm_core::json::parse(&card)
        .ok()
        .and_then(|c| {
            c.pointer("/actionId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .expect("the Command's Action ID");
    for line in &lines {
        let event = wasm_core::json::parse(line.as_bytes()).expect("each line is an Event");
        assert_eq!(
            event.pointer("/cause/id").and_then(Value::as_str),
            Some(action.as_str()),
            "a line that is not this Command's Event: {line}"
        );
    }
    // An exact retry answers in lines what the document answers: the original receipt
    // (§15.1), Organization-scoped Events included.
    let again = app.post(card.clone()).await;
    assert_eq!(again.str_at("/status").as_deref(), Some("duplicate"));
    assert_eq!(
        events_of(&again),
        lines,
        "the retry's receipt is not the original one"
    );
    let retried = send(&app.router, lines_post(card, "lines")).await;
    let mut retried_lines = retried.body.split('\n');
    assert_eq!(retried_lines.next(), Some("duplicate"), "{}", retried.body);
    assert_eq!(
        retried_lines.map(str::to_owned).collect::<Vec<_>>(),
        events_of(&again),
        "an exact retry in lines gave other Events than the document"
    );
    assert_eq!(app.event_count(), before + lines.len() as u64);

    // Refused: the §19 document, whatever the header asks.
    for body in [b"not json".to_vec(), b"{}".to_vec()] {
        let r = send(&app.router, lines_post(body, "lines")).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
        assert_eq!(
            r.headers.get(header::CONTENT_TYPE).map(|v| v.as_bytes()),
            Some(&b"application/json"[..])
        );
        schema.check(&r.body);
    }

    // Another value is no request for lines: the document.
    let other = app.card_command("worker", start());
    for value in ["LINES", "lines, json", "line"] {
        let r = send(&app.router, lines_post(other.clone(), value)).await;
        assert_eq!(r.status, StatusCode::OK, "{value}: {}", r.body);
        assert_eq!(
            r.headers.get(header::CONTENT_TYPE).map(|v| v.as_bytes()),
            Some(&b"application/json"[..])
        );
        assert!(r.str_at("/status").is_some(), "{value}: {}", r.body);
    }
}
