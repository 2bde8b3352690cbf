//! The first replay's pure part (`app::replay`): what a worker computes for a chunk (the six
//! stages of §6.4, as the socket client's `RegistryCheck`) and how the page folds the answers —
//! in receiving order whatever order the chunks come back in, never an Event without its own
//! `Verified` verdict, every refusal reported at its position (§16). The browser side (the Web
//! Workers themselves) is exercised by the benchmark page in Chromium
//! (`scripts/bench-console.sh`), which checks that the pooled replay equals the one-thread one.

use app::bench;
use app::fold::EventLog;
use app::replay::{
    ArrivalError, Pipeline, Verdict, Watchdog, replay_here, stage_named, verify_chunk,
};
use app::socket::RegistryCheck;
use app::socket::machine::EventCheck;
use wasm_core::crypto::verify::Stage;
use wasm_core::json::{self, Value};
use wasm_core::model::error::ErrorCode;

/// A small signed history (an Agent Card, a session, a Mission with 3 WorkItems, Messages).
fn history() -> Vec<String> {
    let events = bench::generate(40, 3).expect("the benchmark history");
    bench::to_lines(&events)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn ids(log: &EventLog) -> Vec<String> {
    log.events()
        .iter()
        .map(|e| {
            e.pointer("/eventId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn verdicts(texts: &[String], p: &Pipeline, n: usize) -> Vec<Verdict> {
    let registry = bench::registry();
    let docs: Vec<&[u8]> = texts[p.range(n)].iter().map(|t| t.as_bytes()).collect();
    verify_chunk(&docs, Some(&registry))
}

/// The reference: every Event through `RegistryCheck` one by one and folded (`bench::Replay`).
fn one_by_one(texts: &[String]) -> EventLog {
    let mut r = bench::Replay::new(bench::registry());
    for t in texts {
        r.receive(t);
    }
    r.fold(usize::MAX);
    r.log
}

#[test]
fn a_chunk_gets_the_same_verdict_as_the_socket_clients_check() {
    let texts = history();
    let registry = bench::registry();
    let check = RegistryCheck {
        registry: Some(registry.clone()),
    };
    let docs: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
    let got = verify_chunk(&docs, Some(&registry));
    assert_eq!(got.len(), texts.len());
    for (t, v) in texts.iter().zip(&got) {
        let value = json::parse_str(t).expect("generated text parses");
        let hash = check.check(&value).expect("the generated history verifies");
        assert_eq!(
            v,
            &Verdict::Verified {
                signing_hash: hash.clone()
            }
        );
        assert!(hash.starts_with("sha256:"));
    }
}

#[test]
fn chunks_answered_out_of_order_fold_in_receiving_order() {
    let texts = history();
    let mut log = EventLog::new();
    let mut p = Pipeline::new(texts.len(), 7);
    let n = p.chunks();
    assert!(n >= 5, "{n} chunks");
    // Every chunk but the first answered, last first: nothing can be folded yet.
    for c in (1..n).rev() {
        p.arrived(c, verdicts(&texts, &p, c))
            .expect("a full answer");
        assert!(!p.ready());
        assert_eq!(p.fold_next(&texts, &mut log), 0);
        assert_eq!(log.events().len(), 0);
        assert_eq!(p.per_mille(), 0);
    }
    // The first chunk arrives: everything folds, in order, chunk by chunk.
    p.arrived(0, verdicts(&texts, &p, 0))
        .expect("a full answer");
    let mut taken = Vec::new();
    while p.ready() {
        taken.push(p.fold_next(&texts, &mut log));
    }
    assert!(p.done());
    assert_eq!(taken.iter().sum::<usize>(), texts.len());
    assert_eq!(taken.len(), n);
    assert_eq!(p.per_mille(), 1000);
    assert_eq!(p.applied, texts.len());
    assert!(p.rejections.is_empty());
    let reference = one_by_one(&texts);
    assert_eq!(ids(&log), ids(&reference));
    assert_eq!(log.progress().folded, texts.len());
    assert!(log.refusals().is_empty());
    let now = wasm_core::authority::Micros::from_seconds(1_893_456_000 + 86_400);
    assert_eq!(bench::project(&log, now), bench::project(&reference, now));
    assert_eq!(bench::project(&log, now).dag_nodes, 3);
}

#[test]
fn interleaved_arrival_folds_each_chunk_as_soon_as_its_predecessors_are_in() {
    let texts = history();
    let mut log = EventLog::new();
    let mut p = Pipeline::new(texts.len(), 10);
    assert!(p.chunks() >= 4);
    p.arrived(1, verdicts(&texts, &p, 1)).expect("answer");
    p.arrived(0, verdicts(&texts, &p, 0)).expect("answer");
    assert_eq!(p.fold_next(&texts, &mut log), 10);
    assert_eq!(p.fold_next(&texts, &mut log), 10);
    assert_eq!(p.fold_next(&texts, &mut log), 0, "chunk 2 is not answered");
    assert_eq!(p.taken(), 20);
    assert_eq!(log.progress().folded, 20);
    assert_eq!(ids(&log), ids(&one_by_one(&texts[..20])));
    p.arrived(3, verdicts(&texts, &p, 3)).expect("answer");
    assert!(!p.ready());
    p.arrived(2, verdicts(&texts, &p, 2)).expect("answer");
    assert_eq!(p.fold_next(&texts, &mut log), 10);
    assert_eq!(p.fold_next(&texts, &mut log), p.range(3).len());
}

#[test]
fn a_refused_event_is_not_applied_and_is_reported_at_its_position() {
    let mut texts = history();
    // The last Event (the WorkItem's cancellation) with its reason changed after sealing:
    // stage 6 fails.
    let last = texts.len() - 1;
    let original = texts[last].clone();
    let forged = original.replacen("\"reason\":\"not needed\"", "\"reason\":\"not wanted\"", 1);
    assert_ne!(forged, original, "the last Event is the cancellation");
    texts[last] = forged;
    // And one in the middle whose signature value is not even base64url: the schema (stage 2).
    let mid = 20;
    let value = json::parse_str(&texts[mid]).expect("parses");
    let mid_id = value
        .pointer("/eventId")
        .and_then(Value::as_str)
        .expect("an Event ID")
        .to_owned();
    let sig = value
        .pointer("/signature/value")
        .and_then(Value::as_str)
        .expect("a signature")
        .to_owned();
    texts[mid] = texts[mid].replacen(&sig, "!!", 1);

    let registry = bench::registry();
    let mut log = EventLog::new();
    let p = replay_here(&texts, Some(&registry), &mut log, 8);
    assert!(p.done());
    assert_eq!(p.rejections.len(), 2, "{:?}", p.rejections);
    let (a, b) = (&p.rejections[0], &p.rejections[1]);
    assert_eq!(a.position, mid);
    assert_eq!(a.event_id.as_deref(), Some(mid_id.as_str()));
    assert_eq!(a.stage, Stage::Schema);
    assert_eq!(a.code, ErrorCode::SchemaValidationFailed);
    assert_eq!(b.position, last);
    assert_eq!(b.stage, Stage::Signature);
    assert_eq!(b.code, ErrorCode::AuthInvalidSignature);
    // Neither is in the log; every other Event is, in order.
    let got = ids(&log);
    assert_eq!(got.len(), texts.len() - 2);
    assert!(!got.contains(&mid_id));
    assert!(!got.iter().any(|id| Some(id) == b.event_id.as_ref()));
    let mut expected = texts.clone();
    expected.remove(last);
    expected.remove(mid);
    assert_eq!(got, ids(&one_by_one(&expected)));
    assert_eq!(p.applied, texts.len() - 2);
    assert_eq!(p.taken(), texts.len());
}

#[test]
fn an_answer_that_does_not_cover_the_chunk_is_not_taken() {
    let texts = history();
    let mut p = Pipeline::new(texts.len(), 10);
    let mut short = verdicts(&texts, &p, 0);
    short.pop();
    assert_eq!(
        p.arrived(0, short),
        Err(ArrivalError::WrongLength {
            chunk: 0,
            expected: 10,
            got: 9
        })
    );
    assert!(!p.answered(0));
    let chunks = p.chunks();
    assert_eq!(
        p.arrived(chunks, Vec::new()),
        Err(ArrivalError::UnknownChunk(chunks))
    );
    p.arrived(0, verdicts(&texts, &p, 0))
        .expect("a full answer");
    assert!(p.answered(0));
    // A second answer for the same chunk (waiting, then folded) changes nothing.
    let forged = vec![
        Verdict::Verified {
            signing_hash: "sha256:x".into()
        };
        10
    ];
    assert_eq!(
        p.arrived(0, forged.clone()),
        Err(ArrivalError::Duplicate(0))
    );
    let mut log = EventLog::new();
    assert_eq!(p.fold_next(&texts, &mut log), 10);
    assert_eq!(p.arrived(0, forged), Err(ArrivalError::Duplicate(0)));
    assert_eq!(p.fold_next(&texts, &mut log), 0);
}

#[test]
fn without_a_registry_nothing_is_applied() {
    let texts = history();
    let mut log = EventLog::new();
    let p = replay_here(&texts, None, &mut log, 16);
    assert!(p.done());
    assert_eq!(p.applied, 0);
    assert!(log.events().is_empty());
    assert_eq!(p.rejections.len(), texts.len());
    for (i, r) in p.rejections.iter().enumerate() {
        assert_eq!(r.position, i);
        assert_eq!(r.stage, Stage::KeyResolution);
        assert_eq!(r.code, ErrorCode::AuthInvalidSignature);
    }
}

#[test]
fn a_replayed_event_already_known_is_counted_not_applied_twice() {
    let texts = history();
    let registry = bench::registry();
    let mut log = EventLog::new();
    let first = replay_here(&texts[..10], Some(&registry), &mut log, 4);
    assert_eq!(first.applied, 10);
    let again = replay_here(&texts, Some(&registry), &mut log, 4);
    assert_eq!(again.duplicates, 10);
    assert_eq!(again.applied, texts.len() - 10);
    assert_eq!(ids(&log), ids(&one_by_one(&texts)));
    assert!(log.refusals().is_empty());
}

#[test]
fn ranges_cover_the_backlog_once() {
    for (total, chunk) in [(0, 5), (1, 5), (10, 5), (11, 5), (1000, 500), (7, 0)] {
        let p = Pipeline::new(total, chunk);
        let mut next = 0;
        for n in 0..p.chunks() {
            let r = p.range(n);
            assert_eq!(r.start, next, "{total}/{chunk}");
            assert!(!r.is_empty());
            next = r.end;
        }
        assert_eq!(next, total);
        assert_eq!(p.done(), total == 0);
    }
}

#[test]
fn stage_names_read_back() {
    for s in [
        Stage::Parse,
        Stage::Schema,
        Stage::SignatureEnvelope,
        Stage::KeyResolution,
        Stage::Canonicalization,
        Stage::Signature,
        Stage::Admission,
    ] {
        assert_eq!(stage_named(s.as_str()), Some(s));
    }
    assert_eq!(stage_named("nonsense"), None);
}

#[test]
fn the_workers_registry_fixture_validates_to_the_same_registry() {
    let fixture = bench::registry_fixture();
    let parsed = app::components::registry::parse(fixture.as_bytes()).expect("valid fixture");
    let reference = bench::registry();
    assert_eq!(parsed.organization_id(), reference.organization_id());
    let keys = |r: &wasm_core::crypto::registry::ValidatedRegistry| {
        r.bindings()
            .map(|b| (b.key_id.clone(), b.public_key_text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&parsed), keys(&reference));
    // And it verifies the history as well.
    let texts = history();
    let docs: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
    assert!(
        verify_chunk(&docs, Some(&parsed))
            .iter()
            .all(Verdict::is_verified)
    );
}

#[test]
fn a_served_registry_past_the_fixtures_64_bindings_is_read() {
    // A running development Organization holds a binding per enrolled browser key: the console
    // reads `GET /api/registry` without the bundle fixture's cap of 64 (issue 26).
    let mut v: serde_json::Value =
        serde_json::from_str(&bench::registry_fixture()).expect("fixture JSON");
    let bindings = v["bindings"].as_array_mut().expect("bindings");
    let template = bindings[0].clone();
    let before = bindings.len();
    for i in 0..70u8 {
        let key = wasm_core::crypto::SecretSeed::take(&mut [i.wrapping_add(100); 32]).public_key();
        let mut b = template.clone();
        b["keyId"] = format!("urn:missionweaveprotocol:key:enrolled-{i}").into();
        b["principal"] = serde_json::json!({
            "type": "human",
            "id": format!("urn:missionweaveprotocol:human:enrolled-{i}"),
        });
        b["publicKey"] = wasm_core::encoding::b64url_encode(&key).into();
        bindings.push(b);
    }
    let n = before + 70;
    assert!(n > 64);
    let parsed = app::components::registry::parse(v.to_string().as_bytes()).expect("read");
    assert_eq!(parsed.bindings().count(), n);
    assert!(
        parsed
            .bindings()
            .any(|b| b.key_id == "urn:missionweaveprotocol:key:enrolled-69")
    );
}

#[test]
fn a_hung_workers_chunks_go_to_the_page_at_the_deadline_and_its_late_answer_is_ignored() {
    let texts = history();
    let mut log = EventLog::new();
    let mut p = Pipeline::new(texts.len(), 8);
    let n = p.chunks();
    assert!(n >= 4, "{n} chunks");
    let mut dog = Watchdog::new(10_000.0, 20.0);
    let bound = dog.bound_ms(8);
    assert_eq!(bound, 10_160.0);
    // Worker 0 takes the even chunks, worker 1 (which hangs) the odd ones; all sent at 0.
    for c in 0..n {
        dog.sent(c % 2, c, p.range(c).len(), 0.0);
    }
    // Worker 0 answers each of its chunks promptly, in order.
    let mut t = 0.0;
    for c in (0..n).step_by(2) {
        t += 50.0;
        assert!(dog.answered(0, c, t));
        p.arrived(c, verdicts(&texts, &p, c))
            .expect("a full answer");
    }
    // Only chunk 0 folds: chunk 1 (worker 1) is missing, and order is strict.
    assert_eq!(p.fold_next(&texts, &mut log), 8);
    assert!(!p.ready());
    // Before the deadline nobody is retired.
    assert!(dog.expire(bound).is_empty());
    assert!(!dog.is_retired(1));
    // Past it, worker 1 is retired with every chunk it still holds; worker 0 is idle, not late.
    let odd: Vec<usize> = (1..n).step_by(2).collect();
    assert_eq!(dog.expire(bound + 1.0), vec![(1, odd.clone())]);
    assert!(dog.is_retired(1));
    assert!(!dog.is_retired(0));
    assert!(
        dog.expire(1e12).is_empty(),
        "retired once, nothing else overdue"
    );
    // Its chunks are verified on the page.
    for &c in &odd {
        p.arrived(c, verdicts(&texts, &p, c))
            .expect("verified here");
    }
    // Its late answer is refused by the watchdog and by the pipeline (the first answer stands).
    assert!(!dog.answered(1, 1, bound + 5.0));
    assert_eq!(
        p.arrived(1, verdicts(&texts, &p, 1)),
        Err(ArrivalError::Duplicate(1))
    );
    // A retired worker is given nothing more.
    dog.sent(1, 99, 8, bound + 6.0);
    assert!(dog.expire(1e12).is_empty());
    while p.ready() {
        p.fold_next(&texts, &mut log);
    }
    assert!(p.done());
    // Every Event applied once, in receiving order, as the reference.
    assert_eq!(p.applied, texts.len());
    assert_eq!(p.duplicates, 0);
    assert!(p.rejections.is_empty());
    assert_eq!(ids(&log), ids(&one_by_one(&texts)));
}

#[test]
fn a_queued_chunks_deadline_counts_from_the_previous_answer() {
    let mut dog = Watchdog::new(1_000.0, 10.0);
    let bound = dog.bound_ms(10);
    dog.sent(0, 0, 10, 0.0);
    dog.sent(0, 1, 10, 0.0);
    // An answer out of order (not its oldest chunk) is not taken.
    assert!(!dog.answered(0, 1, 10.0));
    // Chunk 0 answered just before its deadline: chunk 1 starts then.
    assert!(dog.answered(0, 0, bound - 1.0));
    assert!(dog.expire(bound + 1.0).is_empty());
    assert!(dog.expire(2.0 * bound - 1.0).is_empty());
    assert_eq!(dog.expire(2.0 * bound), vec![(0, vec![1])]);
    // An unknown worker answers nothing.
    assert!(!dog.answered(7, 0, 0.0));
    // Retiring by hand (the worker errored) hands back its chunks once.
    dog.sent(2, 5, 3, 0.0);
    assert_eq!(dog.retire(2), vec![5]);
    assert_eq!(dog.retire(2), Vec::<usize>::new());
    assert!(!dog.answered(2, 5, 1.0));
}

#[test]
fn a_worker_that_never_answers_its_start_is_retired_at_the_deadline_and_its_late_ready_is_ignored()
{
    let mut dog = Watchdog::new(10_000.0, 20.0);
    // Three workers given their Registry at 0 and 5 ms; worker 0 answers, 1 and 2 hang.
    dog.starting(0, 0.0);
    dog.starting(1, 0.0);
    dog.starting(2, 5.0);
    assert!(dog.started(0, 40.0));
    let bound = dog.bound_ms(0);
    assert_eq!(bound, 10_000.0);
    // Before the bound of an empty chunk nobody is retired.
    assert!(dog.expire(bound).is_empty());
    // Past it, only the hung workers started at 0; the one started later at its own bound.
    // The start is no chunk: nothing is handed to the page.
    assert_eq!(dog.expire(bound + 1.0), vec![(1, vec![])]);
    assert_eq!(dog.expire(bound + 6.0), vec![(2, vec![])]);
    assert!(dog.is_retired(1) && dog.is_retired(2) && !dog.is_retired(0));
    // The started worker is idle, never overdue; a late `{ready}` is not taken.
    assert!(dog.expire(1e12).is_empty());
    assert!(!dog.started(1, bound + 50.0));
    // A started worker is then watched for its chunks as before.
    dog.sent(0, 0, 8, 100.0);
    assert_eq!(
        dog.expire(100.0 + dog.bound_ms(8) + 1.0),
        vec![(0, vec![0])]
    );
}
