//! The socket client, natively: the sans-IO machine and its driver over a recording transport
//! (no browser, no socket, no clock). Events are real signed Events (Ed25519 over JCS, §6.4),
//! verified against a real Registry by `RegistryCheck`, so verified marks and rejections are
//! the core's own outcomes.

use app::socket::machine::{
    BACKOFF_BASE_MS, BACKOFF_MAX_MS, Identity, Input, Output, PING_INTERVAL_MS, PONG_TIMEOUT_MS,
    REPLAY_PAGE, RESUME_QUIET_MS, Status, backoff_delay,
};
use app::socket::{ChallengeSigner, Driver, NoSigner, RegistryCheck, Transport};
use wasm_core::crypto::ed25519::{self, Signer, StrictPublicKey, StrictSignature};
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::frame::{self, Frame};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::ErrorCode;

const GROUP: &str = "urn:missionweaveprotocol:group:alpha";
const OTHER: &str = "urn:missionweaveprotocol:group:beta";
const AUTHORITY: &str = "urn:missionweaveprotocol:service:group-gateway";
const AUTHORITY_KEY: &str = "urn:missionweaveprotocol:key:group-gateway";
const HUMAN: &str = "urn:missionweaveprotocol:human:alice";
const HUMAN_KEY: &str = "urn:missionweaveprotocol:key:alice-1";

fn seed(n: u8) -> SecretSeed {
    let mut b = [n; 32];
    SecretSeed::take(&mut b)
}

fn registry() -> ValidatedRegistry {
    let b = |key_id: &str, t: &str, id: &str, s: &SecretSeed| BindingRecord {
        key_id: key_id.into(),
        principal_type: t.into(),
        principal_id: id.into(),
        algorithm: "Ed25519".into(),
        public_key: b64url_encode(&s.public_key()),
        valid_from: "2020-01-01T00:00:00Z".into(),
        validity_history: vec![],
    };
    RegistryEvidence {
        organization_id: "urn:missionweaveprotocol:organization:test".into(),
        bindings: vec![
            b(AUTHORITY_KEY, "service", AUTHORITY, &seed(1)),
            b(HUMAN_KEY, "human", HUMAN, &seed(2)),
        ],
    }
    .validate()
    .expect("registry")
}

fn check() -> RegistryCheck {
    RegistryCheck {
        registry: Some(registry()),
    }
}

fn actor(t: &str, id: &str) -> Value {
    let mut a = Object::new();
    a.insert("type", Value::string(t.to_owned()));
    a.insert("id", Value::string(id.to_owned()));
    Value::Object(a)
}

/// A Group Event signed by the Group Authority (`signer` seed 1 unless overridden).
fn event_signed_by(group: &str, seq: u64, id: &str, signer: &SecretSeed) -> Value {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("eventId", Value::string(id.to_owned()));
    o.insert("groupId", Value::string(group.to_owned()));
    o.insert("sequence", Value::from(seq));
    o.insert("aggregateRevision", Value::from(seq));
    o.insert("kind", Value::string("message.posted"));
    o.insert("actor", actor("human", HUMAN));
    let mut cause = Object::new();
    cause.insert("type", Value::string("command"));
    cause.insert(
        "id",
        Value::string(format!("urn:missionweaveprotocol:action:{seq}")),
    );
    o.insert("cause", Value::Object(cause));
    o.insert(
        "correlationId",
        Value::string("urn:missionweaveprotocol:correlation:1"),
    );
    o.insert("occurredAt", Value::string("2026-12-02T10:00:00Z"));
    o.insert("payload", Value::Object(Object::new()));
    o.insert("acceptedBy", actor("service", AUTHORITY));
    let mut doc = Value::Object(o);
    sign_document(&mut doc, DocumentKind::Event, AUTHORITY_KEY, signer).expect("signed");
    doc
}

fn event(group: &str, seq: u64) -> Value {
    event_signed_by(group, seq, &event_id(group, seq), &seed(1))
}

fn event_id(group: &str, seq: u64) -> String {
    format!(
        "urn:missionweaveprotocol:event:{}:{seq}",
        group.rsplit(':').next().expect("a group id")
    )
}

/// A frame from the server: `frameType`, a frame id, and `members`.
fn server_frame(frame_type: &str, members: &[(&'static str, Value)]) -> String {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "frameId",
        Value::string(format!(
            "urn:missionweaveprotocol:frame:server:{}",
            frame_type.to_ascii_lowercase()
        )),
    );
    o.insert("frameType", Value::string(frame_type.to_owned()));
    for (name, value) in members {
        o.insert(*name, value.clone());
    }
    json::to_string(&Value::Object(o))
}

fn event_frame(ev: &Value) -> String {
    server_frame("EVENT", &[("event", ev.clone())])
}

/// Records what the driver did to the socket.
#[derive(Default)]
struct Recorder {
    opened: usize,
    closed: usize,
    sent: Vec<String>,
}

impl Transport for Recorder {
    fn open(&mut self) {
        self.opened += 1;
    }
    fn send(&mut self, text: &str) {
        self.sent.push(text.to_owned());
    }
    fn close(&mut self) {
        self.closed += 1;
    }
}

struct Client {
    d: Driver<Recorder>,
    check: RegistryCheck,
    signer: Signer,
    now: u64,
}

impl Client {
    fn new() -> Client {
        Client {
            d: Driver::new(Recorder::default(), 42),
            check: check(),
            signer: Signer::from_seed(&seed(2)),
            now: 1_000_000,
        }
    }

    fn feed(&mut self, input: Input) -> Vec<Output> {
        let now = self.now;
        self.d.handle(now, input, &self.check, &self.signer)
    }

    fn at(&mut self, ms: u64, input: Input) -> Vec<Output> {
        self.now = ms;
        self.feed(input)
    }

    fn sent(&mut self) -> Vec<Frame> {
        std::mem::take(&mut self.d.transport.sent)
            .iter()
            .map(|t| frame::decode(t.as_bytes()).expect("the client sends valid frames"))
            .collect()
    }

    /// A client that watches `groups`, connected (`connect`).
    fn watching(groups: &[&str]) -> Client {
        let mut c = Client::new();
        for g in groups {
            c.feed(Input::Watch((*g).into()));
        }
        c.connect();
        c
    }

    /// Starts the session as alice (with `HUMAN_KEY`).
    fn start(&mut self) -> Vec<Output> {
        self.feed(Input::Start(Identity {
            principal_id: HUMAN.into(),
            key_id: HUMAN_KEY.into(),
        }))
    }

    /// The socket opens with `nonce`: the client's HELLO `client_init`, which must be all
    /// it sent; its client nonce.
    fn opened(&mut self, nonce: [u8; 16]) -> String {
        self.feed(Input::Opened { nonce });
        match self.sent().pop() {
            Some(Frame::HelloClientInit(i)) => i.client_nonce.as_str().to_owned(),
            other => panic!("expected client_init, got {other:?}"),
        }
    }

    /// Opened with `nonce`, then the server's challenge over `transcript`: the handshake up
    /// to `server_accept`. The client's response must be all it sent (nothing else goes
    /// before the session is live).
    fn challenged(&mut self, nonce: [u8; 16], transcript: &[u8]) {
        let client_nonce = self.opened(nonce);
        self.feed(Input::Text(challenge(&client_nonce, transcript)));
        match self.sent().as_slice() {
            [Frame::HelloClientResponse(_)] => {}
            other => panic!("expected client_response alone, got {other:?}"),
        }
    }

    /// After a drop: the retry at `at`, a new HELLO (with `nonce`) and `server_accept`; what
    /// the client sends after the accept stays in the transport for the caller.
    fn reconnect(&mut self, at: u64, nonce: [u8; 16]) {
        self.at(at, Input::Tick);
        self.challenged(nonce, b"again");
        self.feed(Input::Text(accept()));
    }

    /// Start, open, HELLO with a server challenge, accept: returns the frames sent after
    /// `server_accept` (the SUBSCRIBE).
    fn connect(&mut self) -> Vec<Frame> {
        self.start();
        let client_nonce = self.opened([9; 16]);
        let transcript = format!("transcript for {client_nonce}");
        self.feed(Input::Text(challenge(&client_nonce, transcript.as_bytes())));
        match self.sent().pop() {
            Some(Frame::HelloClientResponse(r)) => {
                // The signature is over exactly the challenge bytes, by the held key.
                let sig = b64url_decode(r.challenge_signature.as_str()).expect("b64");
                let key = StrictPublicKey::from_bytes(&seed(2).public_key()).expect("key");
                let sig = StrictSignature::from_bytes(&sig).expect("sig");
                assert!(ed25519::verify(&key, &sig, transcript.as_bytes()));
                assert_eq!(r.server_nonce.as_str(), "c2VydmVy");
            }
            other => panic!("expected client_response, got {other:?}"),
        }
        self.feed(Input::Text(accept()));
        self.sent()
    }
}

fn challenge(client_nonce: &str, transcript: &[u8]) -> String {
    server_frame(
        "HELLO",
        &[
            ("phase", Value::string("server_challenge")),
            ("selectedVersion", Value::string("0.1")),
            ("clientNonce", Value::string(client_nonce.to_owned())),
            ("serverNonce", Value::string("c2VydmVy")),
            ("challenge", Value::string(b64url_encode(transcript))),
        ],
    )
}

fn accept() -> String {
    server_frame(
        "HELLO",
        &[
            ("phase", Value::string("server_accept")),
            ("selectedVersion", Value::string("0.1")),
            ("sessionToken", Value::string("opaque-session-token")),
            ("sessionEpoch", Value::from(1u64)),
            ("expiresAt", Value::string("2026-12-02T10:15:00Z")),
        ],
    )
}

/// A server PING with `nonce`, answering `reply_to` if given.
fn ping(nonce: &str, reply_to: Option<&str>) -> String {
    let mut members = vec![
        ("nonce", Value::string(nonce.to_owned())),
        ("sentAt", Value::string("2026-12-02T10:00:00Z")),
    ];
    if let Some(r) = reply_to {
        members.push(("replyToNonce", Value::string(r.to_owned())));
    }
    server_frame("PING", &members)
}

/// When an `Offline` status says the next attempt is.
fn retry_at(out: &[Output]) -> u64 {
    match status(out) {
        Some(Status::Offline { retry_at_ms }) => retry_at_ms,
        other => panic!("expected Offline, got {other:?}"),
    }
}

fn subscriptions(frames: &[Frame]) -> Vec<(String, u64)> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Subscribe(s) => Some(
                s.groups
                    .0
                    .iter()
                    .map(|g| (g.group_id.0.clone(), g.after_sequence.0))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect()
}

fn delivered(out: &[Output]) -> Vec<(String, u64)> {
    out.iter()
        .filter_map(|o| match o {
            Output::Deliver(d) => Some((d.group_id.clone().unwrap_or_default(), d.sequence?)),
            _ => None,
        })
        .collect()
}

fn status(out: &[Output]) -> Option<Status> {
    out.iter().rev().find_map(|o| match o {
        Output::Status(s) => Some(s.clone()),
        _ => None,
    })
}

#[test]
fn backoff_doubles_from_half_a_second_to_a_thirty_second_cap() {
    let full: Vec<u64> = (1..=9).map(|a| backoff_delay(a, 1000)).collect();
    assert_eq!(
        full,
        [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
    );
    // Jitter spreads each attempt over the upper half of its window, never beyond it.
    for a in 1..=12 {
        let lo = backoff_delay(a, 0);
        let hi = backoff_delay(a, 1000);
        assert_eq!(lo * 2, hi);
        assert!(backoff_delay(a, 500) >= lo && backoff_delay(a, 500) <= hi);
        assert!(hi <= BACKOFF_MAX_MS);
    }
    assert_eq!(backoff_delay(1, 1000), BACKOFF_BASE_MS);
    // Out-of-range jitter is clamped; huge attempt numbers do not overflow.
    assert_eq!(backoff_delay(3, 5000), 2000);
    assert_eq!(backoff_delay(u32::MAX, 1000), BACKOFF_MAX_MS);
}

#[test]
fn hello_signs_the_challenge_as_received_then_subscribes_from_zero() {
    let mut c = Client::new();
    c.feed(Input::Watch(GROUP.into()));
    let out = c.start();
    assert_eq!(status(&out), Some(Status::Connecting));
    assert_eq!(c.d.transport.opened, 1);
    c.feed(Input::Opened { nonce: [9; 16] });
    match c.sent().as_slice() {
        [Frame::HelloClientInit(i)] => {
            assert_eq!(i.agent_id.as_str(), HUMAN);
            assert_eq!(i.key_id.as_str(), HUMAN_KEY);
            assert_eq!(i.client_nonce.as_str(), b64url_encode(&[9; 16]));
        }
        other => panic!("{other:?}"),
    }
    // A challenge that does not echo our nonce is refused: the connection is dropped.
    let out = c.feed(Input::Text(challenge("bm90LW91cnM", b"x")));
    assert_eq!(c.d.transport.closed, 1);
    assert!(matches!(status(&out), Some(Status::Offline { .. })));
    assert!(c.sent().is_empty());

    let mut c = Client::new();
    c.feed(Input::Watch(GROUP.into()));
    let subs = c.connect();
    assert_eq!(subscriptions(&subs), [(GROUP.to_owned(), 0)]);
    assert_eq!(c.d.machine.status(), &Status::Resuming);
}

#[test]
fn without_a_key_the_challenge_is_not_answered() {
    let mut c = Client::new();
    c.start();
    c.opened([1; 16]);
    let now = c.now;
    let out = c.d.handle(
        now,
        Input::Text(challenge(&b64url_encode(&[1; 16]), b"t")),
        &c.check,
        &NoSigner,
    );
    assert!(c.sent().is_empty());
    assert_eq!(c.d.transport.closed, 1);
    assert!(matches!(status(&out), Some(Status::Offline { .. })));
    assert!(NoSigner.sign_challenge(b"t").is_none());
}

#[test]
fn events_are_delivered_in_order_verified_and_deduplicated_by_event_id() {
    let mut c = Client::watching(&[GROUP]);
    let mut got = Vec::new();
    for s in 1..=3 {
        let out = c.feed(Input::Text(event_frame(&event(GROUP, s))));
        got.extend(delivered(&out));
        if let Some(Output::Deliver(d)) = out.iter().find(|o| matches!(o, Output::Deliver(_))) {
            assert!(d.signing_hash.starts_with("sha256:"), "{}", d.signing_hash);
            assert_eq!(d.event_id, event_id(GROUP, s));
        }
    }
    assert_eq!(
        got,
        [(GROUP.into(), 1), (GROUP.into(), 2), (GROUP.into(), 3)]
    );
    // A replayed copy (same Event ID) is dropped, silently.
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 2))));
    assert!(delivered(&out).is_empty());
    assert!(!out.iter().any(|o| matches!(o, Output::Rejected(_))));
    assert_eq!(c.d.machine.position(GROUP), Some(3));
    // Quiet for the resume window: live.
    let t = c.now + RESUME_QUIET_MS;
    let out = c.at(t, Input::Tick);
    assert_eq!(status(&out), Some(Status::Connected));
}

#[test]
fn a_gap_is_reported_held_back_re_requested_and_closed_never_skipped() {
    let mut c = Client::watching(&[GROUP]);
    let t = c.now + RESUME_QUIET_MS;
    c.at(t, Input::Tick);
    c.feed(Input::Text(event_frame(&event(GROUP, 1))));
    // 4 arrives before 2 and 3.
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 4))));
    assert!(delivered(&out).is_empty(), "nothing after a gap is applied");
    assert!(out.contains(&Output::Gap {
        group_id: GROUP.into(),
        from: 2,
        to: 3
    }));
    assert_eq!(status(&out), Some(Status::Behind(2)));
    // The gap is asked for again from the last contiguous position.
    assert_eq!(subscriptions(&c.sent()), [(GROUP.to_owned(), 1)]);
    assert_eq!(c.d.machine.position(GROUP), Some(1));
    // The replay overlaps (1 again), then fills the gap: 2, 3 and the held 4 are delivered.
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 1))));
    assert!(delivered(&out).is_empty());
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 3))));
    assert!(delivered(&out).is_empty());
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 2))));
    assert_eq!(
        delivered(&out),
        [(GROUP.into(), 2), (GROUP.into(), 3), (GROUP.into(), 4)]
    );
    assert!(out.contains(&Output::GapClosed {
        group_id: GROUP.into()
    }));
    assert_eq!(c.d.machine.position(GROUP), Some(4));
    // The re-request re-entered replay; once quiet, live again.
    let t = c.now + RESUME_QUIET_MS;
    assert_eq!(status(&c.at(t, Input::Tick)), Some(Status::Connected));
    // A second, separate gap is re-requested once, not on every later Event.
    c.feed(Input::Text(event_frame(&event(GROUP, 6))));
    let first = subscriptions(&c.sent());
    assert_eq!(first, [(GROUP.to_owned(), 4)]);
    c.feed(Input::Text(event_frame(&event(GROUP, 7))));
    assert!(subscriptions(&c.sent()).is_empty());
    assert_eq!(c.d.machine.status(), &Status::Behind(1));
}

#[test]
fn an_event_that_fails_verification_is_rejected_not_applied_and_blocks_what_follows() {
    let mut c = Client::watching(&[GROUP]);
    c.feed(Input::Text(event_frame(&event(GROUP, 1))));
    // Signed with a key the Registry does not bind to the Group Authority.
    let forged = event_signed_by(GROUP, 2, &event_id(GROUP, 2), &seed(7));
    let out = c.feed(Input::Text(event_frame(&forged)));
    let r = out
        .iter()
        .find_map(|o| match o {
            Output::Rejected(r) => Some(r.clone()),
            _ => None,
        })
        .expect("rejected");
    assert_eq!(r.code, ErrorCode::AuthInvalidSignature);
    assert_eq!(r.sequence, Some(2));
    assert!(delivered(&out).is_empty());
    assert_eq!(c.d.machine.rejected(GROUP), [2]);
    // A tampered payload after signing fails too.
    let mut tampered = event(GROUP, 3);
    if let Value::Object(o) = &mut tampered {
        o.insert("kind", Value::string("message.retracted"));
    }
    let out = c.feed(Input::Text(event_frame(&tampered)));
    assert!(out.iter().any(|o| matches!(o, Output::Rejected(_))));
    // Nothing after the rejected Event is applied; the position stays.
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 4))));
    assert!(delivered(&out).is_empty());
    assert_eq!(c.d.machine.position(GROUP), Some(1));
    // The genuine Event 2 (and 3) unblock the Group.
    c.feed(Input::Text(event_frame(&event(GROUP, 3))));
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 2))));
    assert_eq!(
        delivered(&out),
        [(GROUP.into(), 2), (GROUP.into(), 3), (GROUP.into(), 4)]
    );
}

#[test]
fn without_a_registry_nothing_verifies() {
    let mut c = Client::new();
    c.check = RegistryCheck::default();
    c.feed(Input::Watch(GROUP.into()));
    c.connect(); // as `watching`, with no Registry to verify against
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 1))));
    assert!(delivered(&out).is_empty());
    assert!(out.iter().any(|o| matches!(o, Output::Rejected(_))));
}

#[test]
fn reconnect_waits_out_the_backoff_and_resumes_each_group_from_its_contiguous_position() {
    let mut c = Client::new();
    c.feed(Input::Watch(GROUP.into()));
    c.feed(Input::Watch(OTHER.into()));
    let subs = c.connect();
    assert_eq!(
        subscriptions(&subs),
        [(GROUP.to_owned(), 0), (OTHER.to_owned(), 0)]
    );
    for s in 1..=5 {
        c.feed(Input::Text(event_frame(&event(GROUP, s))));
    }
    c.feed(Input::Text(event_frame(&event(OTHER, 1))));
    c.feed(Input::Text(event_frame(&event(GROUP, 7)))); // 6 missing when the line drops
    let closed_at = c.now;
    let out = c.feed(Input::Closed);
    let retry = retry_at(&out);
    let wait = retry - closed_at;
    assert!(
        (BACKOFF_BASE_MS / 2..=BACKOFF_BASE_MS).contains(&wait),
        "{wait}"
    );
    // Not before the deadline.
    assert_eq!(c.d.machine.next_deadline(), Some(retry));
    c.at(retry - 1, Input::Tick);
    assert_eq!(c.d.transport.opened, 1);
    // The second failure waits in the next window (attempt 2: 500..=1000 ms).
    c.at(retry, Input::Tick);
    assert_eq!(c.d.transport.opened, 2);
    let out = c.feed(Input::Closed);
    let retry2 = retry_at(&out);
    assert!(
        (500..=1000).contains(&(retry2 - c.now)),
        "{}",
        retry2 - c.now
    );
    // Resume: HELLO again, then SUBSCRIBE from the last contiguous positions (5 and 1), so 6
    // is replayed; the held 7 is not delivered twice.
    c.reconnect(retry2, [3; 16]);
    assert_eq!(c.d.transport.opened, 3);
    assert_eq!(
        subscriptions(&c.sent()),
        [(GROUP.to_owned(), 5), (OTHER.to_owned(), 1)]
    );
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 6))));
    assert_eq!(delivered(&out), [(GROUP.into(), 6), (GROUP.into(), 7)]);
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 7))));
    assert!(delivered(&out).is_empty());
    // A successful session resets the backoff.
    let out = c.feed(Input::Closed);
    assert!(retry_at(&out) - c.now <= BACKOFF_BASE_MS);
}

#[test]
fn a_silent_connection_is_detected_by_ping_and_replaced() {
    let mut c = Client::watching(&[]);
    let t0 = c.now;
    assert_eq!(c.d.machine.next_deadline(), Some(t0 + PING_INTERVAL_MS));
    c.at(t0 + PING_INTERVAL_MS, Input::Tick);
    let nonce = match c.sent().as_slice() {
        [Frame::Ping(p)] => {
            assert!(p.reply_to_nonce.is_none());
            p.nonce.as_str().to_owned()
        }
        other => panic!("{other:?}"),
    };
    // The reply (echoing our nonce) keeps the connection.
    c.feed(Input::Text(ping("c2VydmVyLW5vbmNl", Some(&nonce))));
    let t1 = t0 + PING_INTERVAL_MS;
    c.at(t1 + PONG_TIMEOUT_MS, Input::Tick);
    assert_eq!(c.d.transport.closed, 0);
    // The next PING goes unanswered: closed and rescheduled.
    c.at(t1 + PING_INTERVAL_MS, Input::Tick);
    assert!(matches!(c.sent().as_slice(), [Frame::Ping(_)]));
    let out = c.at(t1 + PING_INTERVAL_MS + PONG_TIMEOUT_MS, Input::Tick);
    assert_eq!(c.d.transport.closed, 1);
    assert!(matches!(status(&out), Some(Status::Offline { .. })));
    // A server PING is answered with its nonce.
    let mut c = Client::watching(&[]);
    c.feed(Input::Text(ping("c2VydmVy", None)));
    match c.sent().as_slice() {
        [Frame::Ping(p)] => assert_eq!(
            p.reply_to_nonce.as_ref().map(|n| n.as_str()),
            Some("c2VydmVy")
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_full_replay_page_asks_for_the_next_page() {
    let mut c = Client::watching(&[GROUP]);
    for s in 1..u64::from(REPLAY_PAGE) {
        c.feed(Input::Text(event_frame(&event(GROUP, s))));
    }
    assert!(subscriptions(&c.sent()).is_empty());
    c.feed(Input::Text(event_frame(&event(
        GROUP,
        u64::from(REPLAY_PAGE),
    ))));
    assert_eq!(
        subscriptions(&c.sent()),
        [(GROUP.to_owned(), u64::from(REPLAY_PAGE))]
    );
}

/// An `ERROR` before `HELLO_SERVER_ACCEPT` is a refused handshake (issue 29: the alarm says so,
/// never "an Event failed verification"); the same code once live is a server error.
#[test]
fn an_error_during_the_handshake_is_a_refused_handshake() {
    let mut c = Client::new();
    c.start();
    c.challenged([9; 16], b"x");
    let out = c.feed(Input::Text(error_frame("AUTH_INVALID_SIGNATURE", None)));
    assert!(out.iter().any(
        |o| matches!(o, Output::HandshakeRefused(e) if e.code == ErrorCode::AuthInvalidSignature)
    ));
    assert!(!out.iter().any(|o| matches!(o, Output::ServerError(_))));
    let mut live = Client::watching(&[]);
    let out = live.feed(Input::Text(error_frame("AUTH_INVALID_SIGNATURE", None)));
    assert!(out.iter().any(|o| matches!(o, Output::ServerError(_))));
    assert!(!out.iter().any(|o| matches!(o, Output::HandshakeRefused(_))));
}

#[test]
fn server_errors_bad_frames_and_out_of_turn_frames() {
    // An ERROR frame is surfaced with its wire code.
    let mut c = Client::watching(&[]);
    let out = c.feed(Input::Text(error_frame("MEMBERSHIP_REQUIRED", None)));
    assert!(
        out.iter().any(
            |o| matches!(o, Output::ServerError(e) if e.code == ErrorCode::MembershipRequired)
        )
    );
    // The server closes after an ERROR; the client retries later.
    let out = c.feed(Input::Closed);
    assert!(matches!(status(&out), Some(Status::Offline { .. })));

    // Not strict JSON (a duplicate member): PROTOCOL_VIOLATION, and the connection is dropped.
    let mut c = Client::watching(&[]);
    let out = c.feed(Input::Text(
        r#"{"frameType":"PING","frameType":"PING"}"#.into(),
    ));
    assert!(out.iter().any(
        |o| matches!(o, Output::BadFrame { code, .. } if *code == ErrorCode::ProtocolViolation)
    ));
    assert_eq!(c.d.transport.closed, 1);
    // An EVENT during HELLO is out of turn.
    let mut c = Client::new();
    c.start();
    c.opened([1; 16]);
    let out = c.feed(Input::Text(event_frame(&event(GROUP, 1))));
    assert!(delivered(&out).is_empty());
    assert_eq!(c.d.transport.closed, 1);
}

#[test]
fn stop_closes_and_stays_idle_and_watching_while_live_subscribes_at_once() {
    let mut c = Client::watching(&[]);
    c.feed(Input::Watch(GROUP.into()));
    assert_eq!(subscriptions(&c.sent()), [(GROUP.to_owned(), 0)]);
    // Watching the same Group again sends nothing.
    c.feed(Input::Watch(GROUP.into()));
    assert!(c.sent().is_empty());
    let out = c.feed(Input::Stop);
    assert_eq!(status(&out), Some(Status::Idle));
    assert_eq!(c.d.transport.closed, 1);
    // A late close of the old socket changes nothing; no timer is pending.
    let out = c.feed(Input::Closed);
    assert!(status(&out).is_none());
    assert_eq!(c.d.machine.next_deadline(), None);
}

#[test]
fn organization_scoped_events_are_delivered_without_a_sequence() {
    let mut c = Client::watching(&[]);
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "eventId",
        Value::string("urn:missionweaveprotocol:event:org:1"),
    );
    o.insert(
        "kind",
        Value::string("ext.missionweaveprotocol.identity.session_opened"),
    );
    o.insert("actor", actor("service", AUTHORITY));
    let mut cause = Object::new();
    cause.insert("type", Value::string("command"));
    cause.insert("id", Value::string("urn:missionweaveprotocol:action:s"));
    o.insert("cause", Value::Object(cause));
    o.insert(
        "correlationId",
        Value::string("urn:missionweaveprotocol:correlation:s"),
    );
    o.insert("occurredAt", Value::string("2026-12-02T10:00:00Z"));
    let mut p = Object::new();
    p.insert("agentId", Value::string("urn:missionweaveprotocol:agent:a"));
    o.insert("payload", Value::Object(p));
    o.insert("acceptedBy", actor("service", AUTHORITY));
    let mut doc = Value::Object(o);
    sign_document(&mut doc, DocumentKind::Event, AUTHORITY_KEY, &seed(1)).expect("signed");
    let out = c.feed(Input::Text(event_frame(&doc)));
    let d = out
        .iter()
        .find_map(|o| match o {
            Output::Deliver(d) => Some(d.clone()),
            _ => None,
        })
        .expect("delivered");
    assert_eq!((d.group_id, d.sequence), (None, None));
    // And only once.
    let out = c.feed(Input::Text(event_frame(&doc)));
    assert!(!out.iter().any(|o| matches!(o, Output::Deliver(_))));
}

/// A signed human Command (a Message post in GROUP) with Action ID `action`.
fn command_text(action: &str) -> String {
    let mut p = Object::new();
    p.insert("messageId", Value::string(format!("{action}:message")));
    p.insert("conversationId", Value::string(format!("{GROUP}:mission")));
    p.insert("content", Value::string("ship it"));
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("actionId", Value::string(action.to_owned()));
    o.insert("actor", actor("human", HUMAN));
    o.insert("membershipEpoch", Value::from(1u64));
    o.insert("groupId", Value::string(GROUP));
    o.insert("kind", Value::string("message.post"));
    o.insert("correlationId", Value::string(action.to_owned()));
    o.insert("issuedAt", Value::string("2026-12-02T10:00:00Z"));
    o.insert("payload", Value::Object(p));
    let mut doc = Value::Object(o);
    sign_document(&mut doc, DocumentKind::Command, HUMAN_KEY, &seed(2)).expect("signed");
    json::to_string(&doc)
}

/// The COMMAND frames the transport sent (raw text), drained.
fn command_frames(c: &mut Client) -> Vec<String> {
    std::mem::take(&mut c.d.transport.sent)
        .into_iter()
        .filter(|t| t.contains("\"frameType\":\"COMMAND\""))
        .collect()
}

/// An Event of GROUP at `seq` caused by the Command `action`.
fn event_caused_by(seq: u64, action: &str) -> Value {
    let mut ev = event(GROUP, seq);
    if let Value::Object(o) = &mut ev {
        let mut cause = Object::new();
        cause.insert("type", Value::string("command"));
        cause.insert("id", Value::string(action.to_owned()));
        o.insert("cause", Value::Object(cause));
    }
    sign_document(&mut ev, DocumentKind::Event, AUTHORITY_KEY, &seed(1)).expect("signed");
    ev
}

fn error_frame(code: &str, related_action: Option<&str>) -> String {
    let mut e = Object::new();
    e.insert("code", Value::string(code.to_owned()));
    e.insert("message", Value::string("refused"));
    e.insert("retryable", Value::Bool(false));
    if let Some(a) = related_action {
        e.insert("relatedActionId", Value::string(a.to_owned()));
    }
    e.insert("occurredAt", Value::string("2026-12-02T10:00:00Z"));
    server_frame("ERROR", &[("error", Value::Object(e))])
}

/// The text of the `command` member of a COMMAND frame, exactly as sent.
fn command_member(frame: &str) -> &str {
    let start = frame.find("\"command\":").expect("a command member") + "\"command\":".len();
    &frame[start..frame.len() - 1]
}

#[test]
fn a_command_is_sent_live_kept_and_resent_byte_identical_after_a_reconnect() {
    let mut c = Client::watching(&[GROUP]);
    let action = "urn:uuid:0f0e0d0c-0b0a-4908-8706-050403020100";
    let text = command_text(action);
    c.feed(Input::Command {
        action_id: action.into(),
        text: text.clone(),
    });
    let first = command_frames(&mut c);
    assert_eq!(first.len(), 1);
    // The Command travels as it was signed, and the frame is a valid COMMAND.
    assert_eq!(command_member(&first[0]), text);
    assert!(matches!(
        frame::decode(first[0].as_bytes()),
        Ok(Frame::Command(_))
    ));
    assert_eq!(c.d.machine.pending_commands(), [action.to_owned()]);
    // The line drops before any outcome: the Command waits, and is not sent while offline.
    let out = c.feed(Input::Closed);
    let retry = retry_at(&out);
    assert!(command_frames(&mut c).is_empty());
    // Nothing before the session is live (`challenged` checks it), then the Command again.
    c.reconnect(retry, [4; 16]);
    let again = command_frames(&mut c);
    assert_eq!(again.len(), 1);
    // Byte-identical Command (same Action ID, same signature), in a new frame.
    assert_eq!(command_member(&again[0]), text);
    assert_ne!(again[0], first[0], "a fresh frameId");
    // The authority's Event caused by it settles it, verified, with its signing hash.
    let out = c.feed(Input::Text(event_frame(&event_caused_by(1, action))));
    let settled: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            Output::CommandEvent { action_id, event } => {
                Some((action_id.clone(), event.signing_hash.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].0, action);
    assert!(settled[0].1.starts_with("sha256:"));
    assert_eq!(delivered(&out), [(GROUP.into(), 1)]);
    assert!(c.d.machine.pending_commands().is_empty());
    // The exact retry's answer (the original Event again) is neither delivered nor settled twice.
    let out = c.feed(Input::Text(event_frame(&event_caused_by(1, action))));
    assert!(
        !out.iter()
            .any(|o| matches!(o, Output::CommandEvent { .. } | Output::Deliver(_)))
    );
    // A later reconnect does not send a settled Command again.
    c.feed(Input::Closed);
    let retry = c.d.machine.next_deadline().expect("a retry");
    c.reconnect(retry, [5; 16]);
    assert!(command_frames(&mut c).is_empty());
}

#[test]
fn a_command_queued_offline_goes_once_live_and_its_refusal_is_matched_by_action_id() {
    let mut c = Client::new();
    let action = "urn:uuid:00000000-0000-4000-8000-000000000001";
    let text = command_text(action);
    // Queued before any session: nothing is sent yet.
    c.feed(Input::Command {
        action_id: action.into(),
        text: text.clone(),
    });
    assert!(command_frames(&mut c).is_empty());
    c.feed(Input::Watch(GROUP.into()));
    c.start();
    c.challenged([9; 16], b"x");
    c.feed(Input::Text(accept()));
    let frames = command_frames(&mut c);
    assert_eq!(frames.len(), 1);
    assert_eq!(command_member(&frames[0]), text);
    // Another Command's ERROR is not ours: a server error, and ours still waits.
    let out = c.feed(Input::Text(error_frame(
        "AUTH_FORBIDDEN",
        Some("urn:uuid:99999999-0000-4000-8000-000000000000"),
    )));
    assert!(out.iter().any(|o| matches!(o, Output::ServerError(_))));
    assert_eq!(c.d.machine.pending_commands(), [action.to_owned()]);
    // The ERROR naming our Action ID is its refusal, with the wire code; the connection stays.
    let out = c.feed(Input::Text(error_frame(
        "AUTH_INVALID_SIGNATURE",
        Some(action),
    )));
    let refused: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            Output::CommandRefused { action_id, error } => Some((action_id.clone(), error.code)),
            _ => None,
        })
        .collect();
    assert_eq!(
        refused,
        [(action.to_owned(), ErrorCode::AuthInvalidSignature)]
    );
    assert!(!out.iter().any(|o| matches!(o, Output::ServerError(_))));
    assert!(c.d.machine.pending_commands().is_empty());
    assert_eq!(c.d.transport.closed, 0);
    // Sending the same Action ID again is a new attempt only if it was never settled: a
    // refused one may be sent again (same bytes), an accepted one is not.
    c.feed(Input::Command {
        action_id: action.into(),
        text: text.clone(),
    });
    assert_eq!(command_frames(&mut c).len(), 1);
    // Forget (settled over HTTP): no longer pending, never resent.
    c.feed(Input::Forget(action.into()));
    assert!(c.d.machine.pending_commands().is_empty());
    c.feed(Input::Command {
        action_id: action.into(),
        text,
    });
    assert!(command_frames(&mut c).is_empty());
    // Signing out drops what waits (it was signed by the identity that left).
    let other = "urn:uuid:00000000-0000-4000-8000-000000000002";
    c.feed(Input::Closed);
    c.feed(Input::Command {
        action_id: other.into(),
        text: command_text(other),
    });
    assert_eq!(c.d.machine.pending_commands(), [other.to_owned()]);
    c.feed(Input::Stop);
    assert!(c.d.machine.pending_commands().is_empty());
}
