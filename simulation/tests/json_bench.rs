//! Timings of the JSON hot path on the Group Authority's inputs (a typical signed Command, an
//! Event-sized object). Ignored by default; run in release:
//! `cargo test --release -p wasm-core --test json_bench -- --ignored --nocapture`.

#![allow(clippy::unwrap_used)]
#![cfg(not(target_arch = "wasm32"))]

use std::hint::black_box;
use std::time::Instant;
use wasm_core::json::{self, Object, Value};

/// An Event as the authority seals it: ~1.1 KB of JCS with nested payload, actor, cause,
/// acceptedBy and extensions members (numbers included, unsorted insertion order).
fn event() -> Object {
    let mut e = Object::new();
    e.insert("protocolVersion", Value::from("0.1"));
    e.insert(
        "eventId",
        Value::from("urn:missionweaveprotocol:event:3f9a0c1b2d4e5f60718293a4b5c6d7e8f9012345"),
    );
    e.insert(
        "groupId",
        Value::from("urn:missionweaveprotocol:group:bench"),
    );
    e.insert("sequence", Value::from(1234u64));
    e.insert("aggregateRevision", Value::from(1234u64));
    e.insert("kind", Value::from("work.checkpointed"));
    let mut actor = Object::new();
    actor.insert("type", Value::from("agent"));
    actor.insert(
        "id",
        Value::from("urn:missionweaveprotocol:agent:bench-worker"),
    );
    e.insert("actor", Value::Object(actor));
    let mut cause = Object::new();
    cause.insert("type", Value::from("command"));
    cause.insert(
        "id",
        Value::from("urn:uuid:6f1c1a52-4a8e-4d3a-9a43-0d2b1f7c9e11"),
    );
    e.insert("cause", Value::Object(cause));
    e.insert(
        "correlationId",
        Value::from("urn:uuid:0b6f3f3e-8c55-4b7e-a1d4-2f0c9f9d7a01"),
    );
    e.insert(
        "workItemId",
        Value::from("urn:missionweaveprotocol:work-item:bench-7"),
    );
    e.insert("occurredAt", Value::from("2026-07-15T00:00:00.123456Z"));
    let payload = json::parse_str(
        r#"{"ownershipEpoch":4,"leaseId":"urn:missionweaveprotocol:lease:bench-7-4",
        "checkpoint":{"uri":"urn:missionweaveprotocol:artifact:checkpoint-12",
        "contentHash":"sha256:5c6f1b3bd6a1e4f0d6a5c8e4b2f1a0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3",
        "summary":"Parsed 14 of 20 input files; resumable from file 15.\n"},
        "progress":{"completed":14,"total":20,"ratio":0.7},"workItemId":"urn:missionweaveprotocol:work-item:bench-7"}"#,
    )
    .unwrap();
    e.insert("payload", payload);
    let mut by = Object::new();
    by.insert("type", Value::from("authority"));
    by.insert("id", Value::from("urn:missionweaveprotocol:authority:dev"));
    e.insert("acceptedBy", Value::Object(by));
    e.insert(
        "commandHash",
        Value::from("sha256:0d6a5c8e4b2f1a0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a35c6f1b3bd6a1e4f"),
    );
    let ext = json::parse_str(
        r#"{"urn:missionweaveprotocol:extension:state-notes":{"version":"0.1.0","critical":false,
        "data":{"note":"lease renewed","budget":{"tokens":1200,"seconds":30}}}}"#,
    )
    .unwrap();
    e.insert("extensions", ext);
    e
}

fn signature() -> Value {
    let mut s = Object::new();
    s.insert("algorithm", Value::from("Ed25519"));
    s.insert(
        "keyId",
        Value::from("urn:missionweaveprotocol:key:authority-dev"),
    );
    s.insert("createdAt", Value::from("2026-07-15T00:00:00.123456Z"));
    s.insert(
        "value",
        Value::from(
            "x3Rk0Yg5b8mJtYQq3mJ0Yc0xq3Rk0Yg5b8mJtYQq3mJ0Yc0xq3Rk0Yg5b8mJtYQq3mJ0Yc0xq3Rk0Yg5b8mJtYQq3mJ0A",
        ),
    );
    Value::Object(s)
}

/// Best and median µs per call over 25 samples of about 4 ms each (best is the least disturbed
/// by other load on the machine). `JSON_BENCH=text` runs only the workloads whose name holds
/// `text` (to profile one with `perf record`).
fn bench(name: &str, mut f: impl FnMut()) {
    if std::env::var("JSON_BENCH").is_ok_and(|only| !name.contains(&only)) {
        return;
    }
    let t = Instant::now();
    let mut warm = 0u32;
    while t.elapsed().as_millis() < 100 {
        f();
        warm += 1;
    }
    let per_sample = (warm / 25).max(1);
    let mut samples: Vec<f64> = (0..25)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per_sample {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / f64::from(per_sample)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    println!(
        "{name:<44} best {:>7.3} µs   median {:>7.3} µs",
        samples[0], samples[12]
    );
}

#[test]
#[ignore = "timing; run in release with --ignored --nocapture"]
fn json_hot_path_timings() {
    let (cmd, _) = simulation::bench::typical_command().unwrap();
    let doc = json::parse(&cmd).unwrap();
    let ev = event();
    let slotted = json::jcs::canonical_with_slot(&ev, "signature").unwrap();
    let ev_jcs = slotted.bytes.clone();
    let sig = signature();
    let ev_value = Value::Object(ev.clone());
    println!(
        "command {} B, command JCS {} B, event JCS {} B",
        cmd.len(),
        json::canonicalize_without(&doc, "signature").unwrap().len(),
        ev_jcs.len()
    );

    bench("parse(command)", || {
        black_box(json::parse(black_box(&cmd)).unwrap());
    });
    bench("canonicalize_without(command, signature)", || {
        black_box(json::canonicalize_without(black_box(&doc), "signature").unwrap());
    });
    bench("to_string(command)", || {
        black_box(json::to_string(black_box(&doc)));
    });
    bench("canonical_with_slot(event)", || {
        black_box(json::jcs::canonical_with_slot(black_box(&ev), "signature").unwrap());
    });
    bench("fill(signature)", || {
        black_box(slotted.fill(black_box(&sig)).unwrap());
    });
    bench("canonicalize(event)", || {
        black_box(json::canonicalize(black_box(&ev_value)).unwrap());
    });
    bench("parse(event JCS)", || {
        black_box(json::parse(black_box(&ev_jcs)).unwrap());
    });
    bench("to_string(event)", || {
        black_box(json::to_string(black_box(&ev_value)));
    });
    bench("clone(event)", || {
        black_box(black_box(&ev_value).clone());
    });
    bench("clone(event) + sort_canonical", || {
        let mut v = black_box(&ev_value).clone();
        json::sort_canonical(&mut v);
        black_box(v);
    });
    bench("clone(event) + make_canonical", || {
        let mut v = black_box(&ev_value).clone();
        json::make_canonical(&mut v);
        black_box(v);
    });
}
