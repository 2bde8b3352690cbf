//! The socket's backlog replay on the Worker pool (`app::socket::backlog`), natively: the
//! worker's frame-chunk verification equals the page's `RegistryCheck`; a `PreVerified` answer
//! is used only for the very Event a worker verified (a tampered Event under a verified Event ID
//! is checked anew and refused); a refused Event in a chunk is never applied and is reported as
//! without a pool; chunks answered out of order are fed in arrival order; below the threshold
//! nothing is held; the 750 ms quiet rule counts from a held frame's arrival. The Web Workers
//! themselves run in Chromium (end2end/console.mjs, the pooled socket replay).

use app::replay::{ArrivalError, Verdict, Watchdog};
use app::socket::backlog::{Backlog, FrameVerdict, Held, PreVerified, Route, verify_frames};
use app::socket::machine::{EventCheck, Identity, Input, Output, REPLAY_PAGE, RESUME_QUIET_MS};
use app::socket::{Driver, RegistryCheck, Transport};
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::b64url_encode;
use wasm_core::frame::{self, Frame};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::ErrorCode;

const GROUP: &str = "urn:missionweaveprotocol:group:alpha";
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

/// Group Event `seq`, signed by the Group Authority.
fn event(seq: u64) -> Value {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "eventId",
        Value::string(format!("urn:missionweaveprotocol:event:alpha:{seq}")),
    );
    o.insert("groupId", Value::string(GROUP.to_owned()));
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
    sign_document(&mut doc, DocumentKind::Event, AUTHORITY_KEY, &seed(1)).expect("signed");
    doc
}

/// Event `seq` changed after signing (same Event ID, another `kind`).
fn tampered(seq: u64) -> Value {
    let mut e = event(seq);
    if let Value::Object(o) = &mut e {
        o.insert("kind", Value::string("message.retracted"));
    }
    e
}

fn event_frame(ev: &Value) -> String {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "frameId",
        Value::string("urn:missionweaveprotocol:frame:server:1"),
    );
    o.insert("frameType", Value::string("EVENT"));
    o.insert("event", ev.clone());
    json::to_string(&Value::Object(o))
}

fn server_hello(phase: &'static str, extra: &[(&'static str, Value)]) -> String {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "frameId",
        Value::string("urn:missionweaveprotocol:frame:server:h"),
    );
    o.insert("frameType", Value::string("HELLO"));
    o.insert("phase", Value::string(phase));
    o.insert("selectedVersion", Value::string("0.1"));
    for (k, v) in extra {
        o.insert(*k, v.clone());
    }
    json::to_string(&Value::Object(o))
}

#[derive(Default)]
struct Recorder {
    sent: Vec<String>,
}

impl Transport for Recorder {
    fn open(&mut self) {}
    fn send(&mut self, text: &str) {
        self.sent.push(text.to_owned());
    }
    fn close(&mut self) {}
}

/// A driver connected and subscribed to GROUP from 0 at t = 1000 ms (resuming).
fn connected() -> (Driver<Recorder>, Signer) {
    let mut d = Driver::new(Recorder::default(), 42);
    let signer = Signer::from_seed(&seed(2));
    let c = check();
    let t = 1000;
    d.handle(t, Input::Watch(GROUP.into()), &c, &signer);
    d.handle(
        t,
        Input::Start(Identity {
            principal_id: HUMAN.into(),
            key_id: HUMAN_KEY.into(),
        }),
        &c,
        &signer,
    );
    d.handle(t, Input::Opened { nonce: [9; 16] }, &c, &signer);
    let init = match d.transport.sent.pop().map(|s| frame::decode(s.as_bytes())) {
        Some(Ok(Frame::HelloClientInit(i))) => i,
        other => panic!("expected client_init, got {other:?}"),
    };
    let challenge = server_hello(
        "server_challenge",
        &[
            (
                "clientNonce",
                Value::string(init.client_nonce.as_str().to_owned()),
            ),
            ("serverNonce", Value::string("c2VydmVy")),
            ("challenge", Value::string(b64url_encode(b"transcript"))),
        ],
    );
    d.handle(t, Input::Text(challenge), &c, &signer);
    let accept = server_hello(
        "server_accept",
        &[
            ("sessionToken", Value::string("opaque-session-token")),
            ("sessionEpoch", Value::from(1u64)),
            ("expiresAt", Value::string("2026-12-02T10:15:00Z")),
        ],
    );
    d.handle(t, Input::Text(accept), &c, &signer);
    assert!(d.machine.is_resuming(), "subscribed: the Group replays");
    d.transport.sent.clear();
    (d, signer)
}

/// A check that must not be asked (it refuses everything and counts).
struct Never(std::cell::Cell<usize>);

impl EventCheck for Never {
    fn check(&self, _: &Value) -> Result<String, (ErrorCode, String)> {
        self.0.set(self.0.get() + 1);
        Err((ErrorCode::AuthInvalidSignature, "asked".into()))
    }
}

/// What the machine did, without the status changes (compared with and without a pool).
fn effects(out: &[Output]) -> Vec<Output> {
    out.iter()
        .filter(|o| !matches!(o, Output::Status(_)))
        .cloned()
        .collect()
}

fn delivered(out: &[Output]) -> Vec<u64> {
    out.iter()
        .filter_map(|o| match o {
            Output::Deliver(d) => d.sequence,
            _ => None,
        })
        .collect()
}

/// Feeds a chunk as `socket::browser` does at `now`: each held frame with its arrival time and
/// the chunk's `PreVerified` over the worker's verdicts.
fn feed_chunk(
    d: &mut Driver<Recorder>,
    signer: &Signer,
    items: &[Held],
    verdicts: &[FrameVerdict],
    now: u64,
) -> (Vec<Output>, usize) {
    let fallback = check();
    let texts: Vec<&[u8]> = items.iter().map(Held::bytes).collect();
    let pre = PreVerified::from_frames(&texts, verdicts, &fallback);
    let mut out = Vec::new();
    for h in items {
        let input = match &h.text {
            Some(t) => Input::Arrived {
                text: t.clone(),
                at_ms: h.at_ms,
            },
            None => Input::Closed,
        };
        out.extend(d.handle(now, input, &pre, signer));
    }
    (out, pre.checked_anew())
}

#[test]
fn the_workers_frame_verdicts_are_registry_checks_own() {
    let r = registry();
    let good = event_frame(&event(1));
    let bad = event_frame(&tampered(2));
    let hello = server_hello("server_accept", &[]);
    let texts: Vec<&[u8]> = vec![
        good.as_bytes(),
        bad.as_bytes(),
        hello.as_bytes(),
        b"{not json",
    ];
    let v = verify_frames(&texts, Some(&r));
    assert_eq!(v.len(), 4);
    let c = check();
    match &v[0] {
        Some(Verdict::Verified { signing_hash }) => {
            assert_eq!(Ok(signing_hash.clone()), c.check(&event(1)));
        }
        other => panic!("the genuine Event: {other:?}"),
    }
    assert!(matches!(&v[1], Some(Verdict::Refused { .. })), "{:?}", v[1]);
    assert_eq!(v[2], None, "not an EVENT frame: no verdict");
    assert_eq!(v[3], None, "not a frame: the machine reports it");
    // The refusal answered from the verdict is exactly the page's own.
    let never = Never(Default::default());
    let pre = PreVerified::from_frames(&texts, &v, &never);
    assert_eq!(pre.check(&tampered(2)), c.check(&tampered(2)));
    assert_eq!(pre.check(&event(1)), c.check(&event(1)));
    assert_eq!(never.0.get(), 0);
    // Without a Registry nothing verifies.
    let none = verify_frames(&texts, None);
    assert!(matches!(&none[0], Some(Verdict::Refused { .. })));
    assert_eq!(none[2], None);
}

#[test]
fn a_pre_verified_answer_is_used_only_for_the_identical_event() {
    let never = Never(Default::default());
    let mut pre = PreVerified::new(&never);
    // A marker no real verification would produce: proves the answer came from the verdict.
    pre.insert(
        event(1),
        Verdict::Verified {
            signing_hash: "sha256:from-the-worker".into(),
        },
    );
    assert_eq!(pre.check(&event(1)), Ok("sha256:from-the-worker".into()));
    assert_eq!((pre.checked_anew(), never.0.get()), (0, 0));
    // Another Event (unknown ID) goes to the fallback.
    assert!(pre.check(&event(2)).is_err());
    assert_eq!((pre.checked_anew(), never.0.get()), (1, 1));
}

#[test]
fn a_tampered_event_whose_id_matches_a_verified_one_is_checked_anew_and_refused() {
    let fallback = check();
    let genuine = event(1);
    let hash = fallback
        .check(&genuine)
        .expect("the genuine Event verifies");
    let mut pre = PreVerified::new(&fallback);
    pre.insert(
        genuine.clone(),
        Verdict::Verified {
            signing_hash: hash.clone(),
        },
    );
    let forged = tampered(1);
    assert_eq!(
        forged.pointer("/eventId"),
        genuine.pointer("/eventId"),
        "same Event ID"
    );
    let (code, _) = pre.check(&forged).expect_err("refused");
    assert_eq!(code, ErrorCode::AuthInvalidSignature);
    assert_eq!(pre.checked_anew(), 1);
    assert_eq!(pre.check(&genuine), Ok(hash));
    assert_eq!(pre.checked_anew(), 1);
}

#[test]
fn below_the_threshold_nothing_is_held() {
    let mut b = Backlog::new(3, 2);
    // Not resuming: fed at once, whatever the count.
    for i in 0..10 {
        assert!(matches!(
            b.arrive(false, Some(format!("f{i}")), i, 1),
            Route::Feed(_)
        ));
    }
    // Resuming: the first three are fed; the fourth is held, and so is all that follows.
    for i in 0..3 {
        assert!(matches!(
            b.arrive(true, Some(format!("r{i}")), 100 + i, 1),
            Route::Feed(_)
        ));
    }
    assert!(!b.pending());
    assert_eq!(b.arrive(true, Some("r3".into()), 104, 1), Route::Held);
    assert!(b.pending());
    // Held inputs keep their order even when the machine no longer resumes.
    assert_eq!(b.arrive(false, Some("r4".into()), 105, 1), Route::Held);
    assert_eq!(b.held(), 2);
    // The resume ended: the count starts again.
    b.clear();
    assert!(matches!(
        b.arrive(false, Some("x".into()), 200, 1),
        Route::Feed(_)
    ));
    assert!(matches!(
        b.arrive(true, Some("y".into()), 201, 1),
        Route::Feed(_)
    ));
    // A close with nothing held is fed at once.
    assert!(matches!(b.arrive(true, None, 202, 1), Route::Feed(_)));
}

#[test]
fn without_a_pool_held_inputs_are_fed_as_today_and_nothing_more_is_held() {
    let mut b = Backlog::new(0, 10);
    assert_eq!(b.arrive(true, Some("a".into()), 1, 1), Route::Held);
    b.give_up();
    let (items, verdicts) = b.take_ready().expect("fed without verdicts");
    assert_eq!(items.len(), 1);
    assert_eq!(verdicts, vec![None]);
    assert!(!b.pending());
    assert!(matches!(
        b.arrive(true, Some("b".into()), 2, 1),
        Route::Feed(_)
    ));
}

#[test]
fn chunks_are_cut_at_the_chunk_size_on_idle_and_at_a_close() {
    let mut b = Backlog::new(0, 2);
    for i in 0..5 {
        assert_eq!(b.arrive(true, Some(format!("{i}")), i, 1), Route::Held);
    }
    let sent = b.unsent();
    assert_eq!(
        sent.iter().map(|(n, t)| (*n, t.len())).collect::<Vec<_>>(),
        [(0, 2), (1, 2)]
    );
    assert!(b.unsent().is_empty(), "a chunk is handed out once");
    b.idle();
    assert_eq!(
        b.unsent()
            .iter()
            .map(|(n, t)| (*n, t.len()))
            .collect::<Vec<_>>(),
        [(2, 1)]
    );
    b.arrive(true, Some("5".into()), 5, 1);
    b.arrive(true, None, 6, 1);
    assert_eq!(
        b.unsent()
            .iter()
            .map(|(n, t)| (*n, t.len()))
            .collect::<Vec<_>>(),
        [(3, 2)]
    );
    // Answers must cover every input of the chunk, once.
    assert_eq!(
        b.arrived(0, vec![None]),
        Err(ArrivalError::WrongLength {
            chunk: 0,
            expected: 2,
            got: 1
        })
    );
    assert_eq!(b.arrived(9, vec![]), Err(ArrivalError::UnknownChunk(9)));
    assert_eq!(b.arrived(0, vec![None, None]), Ok(()));
    assert_eq!(
        b.arrived(0, vec![None, None]),
        Err(ArrivalError::Duplicate(0))
    );
    assert!(b.take_ready().is_some());
    assert_eq!(
        b.arrived(0, vec![None, None]),
        Err(ArrivalError::Duplicate(0))
    );
}

/// Holds `frames` (arriving 10 ms apart from `t0`) in chunks of `chunk`, has a "worker" answer
/// them in `order`, and feeds what is ready after each answer, at `fed_at`.
fn replay_pooled(
    d: &mut Driver<Recorder>,
    signer: &Signer,
    frames: &[String],
    chunk: usize,
    order: &[usize],
    t0: u64,
    fed_at: u64,
) -> (Vec<Output>, usize, Vec<usize>) {
    let r = registry();
    let mut b = Backlog::new(0, chunk);
    for (i, f) in frames.iter().enumerate() {
        let route = b.arrive(
            d.machine.is_resuming(),
            Some(f.clone()),
            t0 + 10 * i as u64,
            1,
        );
        assert_eq!(route, Route::Held, "frame {i} is held");
    }
    b.idle();
    let mut answers = std::collections::BTreeMap::new();
    for (n, texts) in b.unsent() {
        answers.insert(n, verify_frames(&texts, Some(&r)));
    }
    assert_eq!(answers.len(), order.len());
    let mut out = Vec::new();
    let mut anew = 0;
    let mut fed_after_each = Vec::new();
    for n in order {
        let v = answers.remove(n).expect("an answer");
        b.arrived(*n, v).expect("taken");
        let mut fed = 0;
        while let Some((items, verdicts)) = b.take_ready() {
            let (o, a) = feed_chunk(d, signer, &items, &verdicts, fed_at);
            out.extend(o);
            anew += a;
            fed += items.len();
        }
        fed_after_each.push(fed);
    }
    assert!(!b.pending());
    (out, anew, fed_after_each)
}

#[test]
fn order_is_kept_when_chunks_come_back_out_of_order() {
    let frames: Vec<String> = (1..=7).map(|s| event_frame(&event(s))).collect();
    let (mut d, signer) = connected();
    let (out, anew, fed) = replay_pooled(&mut d, &signer, &frames, 2, &[3, 1, 2, 0], 2000, 2500);
    // Nothing is fed before chunk 0 is answered; then all four chunks at once, in order.
    assert_eq!(fed, [0, 0, 0, 7]);
    assert_eq!(delivered(&out), [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(anew, 0, "every Event answered from a worker's verdict");
    assert_eq!(d.machine.position(GROUP), Some(7));
}

#[test]
fn a_refused_event_in_a_chunk_is_never_applied_and_is_reported_as_without_a_pool() {
    // A tampered copy of Event 3 arrives before the genuine one; Event 6 is only forged.
    let mut frames: Vec<String> = Vec::new();
    for s in 1..=5 {
        if s == 3 {
            frames.push(event_frame(&tampered(3)));
        }
        frames.push(event_frame(&event(s)));
    }
    frames.push(event_frame(&tampered(6)));
    // Without a pool: each frame fed as it arrives, checked on the page.
    let (mut plain, signer) = connected();
    let c = check();
    let mut expected = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        expected.extend(plain.handle(2000 + 10 * i as u64, Input::Text(f.clone()), &c, &signer));
    }
    // With the pool, chunks of 3 answered out of order.
    let (mut d, signer) = connected();
    let (out, anew, _) = replay_pooled(&mut d, &signer, &frames, 3, &[1, 0, 2], 2000, 2500);
    assert_eq!(
        effects(&out),
        effects(&expected),
        "the same outcomes, in the same order"
    );
    assert_eq!(anew, 0);
    let rejected: Vec<(Option<u64>, ErrorCode)> = out
        .iter()
        .filter_map(|o| match o {
            Output::Rejected(r) => Some((r.sequence, r.code)),
            _ => None,
        })
        .collect();
    assert_eq!(
        rejected,
        [
            (Some(3), ErrorCode::AuthInvalidSignature),
            (Some(6), ErrorCode::AuthInvalidSignature)
        ]
    );
    assert_eq!(delivered(&out), [1, 2, 3, 4, 5]);
    assert!(
        out.iter().all(|o| match o {
            Output::Deliver(dl) =>
                dl.value.pointer("/kind").and_then(Value::as_str) == Some("message.posted"),
            _ => true,
        }),
        "no tampered Event is applied"
    );
    assert_eq!(d.machine.rejected(GROUP), [3, 6]);
    assert_eq!(d.machine.position(GROUP), Some(5));
}

#[test]
fn the_quiet_rule_counts_from_a_held_frames_arrival() {
    let frames: Vec<String> = (1..=3).map(|s| event_frame(&event(s))).collect();
    let (mut d, signer) = connected();
    // Frames arrive at 2000..2020 and are fed at 2100: quiet counts from the last arrival.
    replay_pooled(&mut d, &signer, &frames, 2, &[0, 1], 2000, 2100);
    assert!(d.machine.is_resuming());
    let deadline = d.machine.next_deadline().expect("a deadline");
    assert_eq!(deadline, 2020 + RESUME_QUIET_MS);
    let c = check();
    d.handle(deadline - 1, Input::Tick, &c, &signer);
    assert!(d.machine.is_resuming(), "quiet for less than 750 ms");
    d.handle(deadline, Input::Tick, &c, &signer);
    assert!(!d.machine.is_resuming(), "the replay is over");
    // Fed long after arrival, the deadline is still the arrival's (not the feeding's).
    let (mut d, signer) = connected();
    replay_pooled(&mut d, &signer, &frames, 2, &[1, 0], 2000, 9000);
    assert_eq!(d.machine.next_deadline(), Some(2020 + RESUME_QUIET_MS));
    d.handle(9000, Input::Tick, &c, &signer);
    assert!(!d.machine.is_resuming());
}

#[test]
fn a_full_page_of_held_frames_asks_for_the_next_page_and_waits_for_it_from_then() {
    let page = u64::from(REPLAY_PAGE);
    let frames: Vec<String> = (1..=page).map(|s| event_frame(&event(s))).collect();
    let (mut d, signer) = connected();
    // The page arrived by 11 s (10 ms apart from 1 s); verified and fed only at 20 s.
    let order: Vec<usize> = (0..2).collect();
    let (out, anew, _) = replay_pooled(&mut d, &signer, &frames, 500, &order, 1000, 20_000);
    assert_eq!(anew, 0);
    assert_eq!(delivered(&out).len(), frames.len());
    assert_eq!(d.machine.position(GROUP), Some(page));
    // The next page is asked for from the new position...
    let subscribed: Vec<(String, u64)> = d
        .transport
        .sent
        .iter()
        .filter_map(|t| match frame::decode(t.as_bytes()) {
            Ok(Frame::Subscribe(s)) => Some(
                s.groups
                    .0
                    .iter()
                    .map(|g| (g.group_id.0.clone(), g.after_sequence.0))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(subscribed, [(GROUP.to_owned(), page)]);
    // ...and its quiet period runs from that SUBSCRIBE, not from the old arrivals.
    assert!(d.machine.is_resuming());
    assert_eq!(d.machine.next_deadline(), Some(20_000 + RESUME_QUIET_MS));
    let c = check();
    d.handle(20_000 + RESUME_QUIET_MS - 1, Input::Tick, &c, &signer);
    assert!(d.machine.is_resuming());
}

#[test]
fn a_hung_workers_held_chunk_is_checked_on_the_page_at_the_deadline_and_fed_in_order() {
    let mut b = Backlog::new(0, 2);
    for i in 0..6 {
        assert_eq!(b.arrive(true, Some(format!("{i}")), i, 1), Route::Held);
    }
    let mut dog = Watchdog::new(10_000.0, 20.0);
    // Chunks 0 and 2 to worker 0, chunk 1 to worker 1 (which hangs).
    let sent: Vec<usize> = b.unsent().into_iter().map(|(n, _)| n).collect();
    assert_eq!(sent, [0, 1, 2]);
    for n in &sent {
        dog.sent(n % 2, *n, 2, 0.0);
    }
    assert!(dog.answered(0, 0, 5.0));
    b.arrived(0, vec![None, None]).expect("taken");
    assert!(dog.answered(0, 2, 9.0));
    b.arrived(2, vec![None, None]).expect("taken");
    // Chunk 0 is fed; chunk 2 waits behind the hung chunk 1.
    assert!(b.take_ready().is_some());
    assert!(b.take_ready().is_none());
    assert!(b.pending());
    assert!(dog.expire(dog.bound_ms(2)).is_empty());
    // Past the deadline: worker 1 retired, its chunk checked on the page.
    let overdue = dog.expire(dog.bound_ms(2) + 1.0);
    assert_eq!(overdue, vec![(1, vec![1])]);
    for (_, chunks) in overdue {
        for n in chunks {
            b.check_here(n);
        }
    }
    // Its late answer is refused, before and after the chunk is fed.
    assert!(!dog.answered(1, 1, 20_000.0));
    assert_eq!(
        b.arrived(1, vec![None, None]),
        Err(ArrivalError::Duplicate(1))
    );
    let mut fed = Vec::new();
    while let Some((items, verdicts)) = b.take_ready() {
        assert_eq!(verdicts, vec![None, None], "checked on the page");
        fed.extend(items.into_iter().filter_map(|h| h.text));
    }
    assert_eq!(fed, ["2", "3", "4", "5"], "arrival order, each once");
    assert!(!b.pending());
    assert_eq!(
        b.arrived(1, vec![None, None]),
        Err(ArrivalError::Duplicate(1))
    );
}
