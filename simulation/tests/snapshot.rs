//! The State snapshot codec (`wasm_core::authority::snapshot`, issue 28): every scenario of the
//! behavioural suite is run twice side by side, one authority continuing from
//! `decode(encode(state))` before every step; both must answer with byte-identical Events and
//! end in byte-identical snapshots (every field of State, not only what the projection hash
//! covers). Corrupt input (every byte flipped, every truncation) is refused, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(not(target_arch = "wasm32"))]

use simulation::harness::{Envelope, Harness};
use simulation::scenario::{Answer, Target, run};
use wasm_core::authority::snapshot::{self, FORMAT_VERSION, MAGIC, SnapshotError};
use wasm_core::authority::{Micros, State, Submitted};
use wasm_core::json::Object;
use wasm_core::model::ToJson;

fn scenario_files() -> Vec<std::path::PathBuf> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Encodes and decodes, checking the hash is kept and the re-encoding is byte-identical.
fn round_trip(state: &State) -> State {
    let bytes = snapshot::encode(state);
    let back = snapshot::decode(&bytes).expect("a snapshot just encoded decodes");
    assert_eq!(back.projection_hash(), state.projection_hash());
    assert_eq!(
        snapshot::encode(&back),
        bytes,
        "decode(encode(s)) encodes the same"
    );
    back
}

/// What one submission gave, as bytes: the Events' JCS, or the refusal.
fn outcome(r: &Result<Submitted, wasm_core::authority::Rejection>) -> Vec<Vec<u8>> {
    match r {
        Ok(Submitted::Appended(es)) => es.iter().map(|e| e.jcs.clone()).collect(),
        Ok(Submitted::Duplicate(r)) => vec![format!("duplicate {r:?}").into_bytes()],
        Err(r) => vec![format!("{}: {}", r.code.as_str(), r.message).into_bytes()],
    }
}

/// The live authority and its twin, which continues from a decoded snapshot before each step.
struct Twin {
    live: Harness,
    twin: Harness,
    steps: usize,
}

impl Target for Twin {
    fn submit(&mut self, bytes: &[u8], now: Micros) -> Answer {
        self.steps += 1;
        let state = &self.twin.authority.state;
        // The streaming projection hash is the tree's (Messages written directly included).
        assert_eq!(state.projection_hash(), state.projection_hash_by_tree());
        self.twin.authority.state = round_trip(state);
        let a = self.live.submit_bytes(bytes, now);
        let b = self.twin.submit_bytes(bytes, now);
        assert_eq!(
            outcome(&a),
            outcome(&b),
            "step {}: the authority continuing from the snapshot answered otherwise",
            self.steps
        );
        // Every field of State equal, not only the projections the hash covers (the rate
        // windows, orphan accounts, each Group's last acceptance time).
        assert_eq!(
            snapshot::encode(&self.live.authority.state),
            snapshot::encode(&self.twin.authority.state),
            "step {}: the states differ after it",
            self.steps
        );
        match a {
            Ok(Submitted::Appended(es)) => {
                Answer::Events(es.into_iter().map(|e| e.value).collect())
            }
            Ok(Submitted::Duplicate(_)) => Answer::Duplicate,
            Err(r) => Answer::Error {
                code: r.code.as_str().to_owned(),
                message: r.message,
            },
        }
    }
    fn principal_id(&self, name: &str) -> Option<String> {
        Target::principal_id(&self.live, name)
    }
    fn principal_names(&self) -> Vec<String> {
        Target::principal_names(&self.live)
    }
    fn command(
        &mut self,
        name: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Vec<u8> {
        Target::command(&mut self.live, name, kind, env, payload, now)
    }
    fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), String> {
        Target::bootstrap_agents(&mut self.live, agents, now)?;
        Target::bootstrap_agents(&mut self.twin, agents, now)
    }
}

#[test]
fn every_scenario_continues_identically_from_a_snapshot_before_each_step() {
    let files = scenario_files();
    assert!(!files.is_empty());
    let mut steps = 0;
    for f in &files {
        let text = std::fs::read(f).unwrap();
        let report = run(&text, |principals| {
            Ok(Twin {
                live: Harness::new(principals),
                twin: Harness::new(principals),
                steps: 0,
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
    println!(
        "snapshot round trips: {} scenarios, {steps} steps",
        files.len()
    );
}

/// Runs a scenario through a target that keeps a copy of its State after every step.
struct Keep {
    h: Harness,
    out: std::rc::Rc<std::cell::RefCell<State>>,
}

impl Target for Keep {
    fn submit(&mut self, bytes: &[u8], now: Micros) -> Answer {
        let a = Target::submit(&mut self.h, bytes, now);
        *self.out.borrow_mut() = self.h.authority.state.clone();
        a
    }
    fn principal_id(&self, name: &str) -> Option<String> {
        Target::principal_id(&self.h, name)
    }
    fn principal_names(&self) -> Vec<String> {
        Target::principal_names(&self.h)
    }
    fn command(
        &mut self,
        name: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Vec<u8> {
        Target::command(&mut self.h, name, kind, env, payload, now)
    }
    fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), String> {
        Target::bootstrap_agents(&mut self.h, agents, now)
    }
}

/// The State at the end of the scenario file `pick` chooses (by name, in order).
fn state_after(pick: impl Fn(&[std::path::PathBuf]) -> &std::path::PathBuf) -> State {
    let files = scenario_files();
    let text = std::fs::read(pick(&files)).unwrap();
    let out = std::rc::Rc::new(std::cell::RefCell::new(State::default()));
    let shared = std::rc::Rc::clone(&out);
    let report = run(&text, move |principals| {
        Ok(Keep {
            h: Harness::new(principals),
            out: shared,
        })
    });
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    out.borrow().clone()
}

/// The largest scenario's final State: the most tables filled.
fn large_state() -> State {
    state_after(|files| {
        files
            .iter()
            .max_by_key(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
            .unwrap()
    })
}

/// The smallest scenario's final State (small enough to corrupt at every byte).
fn small_state() -> State {
    state_after(|files| {
        files
            .iter()
            .min_by_key(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
            .unwrap()
    })
}

/// Where the body starts: magic, version, the hash string (one length byte: 71 < 128), the
/// body's SHA-256.
const BODY: usize = 8 + 4 + 1 + 71 + 32;

/// `bytes` with its body replaced and the digest recomputed (to reach the decoder itself).
fn with_body(bytes: &[u8], body: &[u8]) -> Vec<u8> {
    let hex = wasm_core::encoding::sha256_hash(body);
    let hex = hex.strip_prefix("sha256:").unwrap();
    let sum: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let mut out = bytes[..BODY - 32].to_vec();
    out.extend_from_slice(&sum);
    out.extend_from_slice(body);
    out
}

#[test]
fn the_layout_is_as_documented() {
    let bytes = snapshot::encode(&small_state());
    assert_eq!(&bytes[..8], MAGIC);
    assert_eq!(bytes[8..12], FORMAT_VERSION.to_le_bytes());
    assert_eq!(bytes[12], 71);
    assert_eq!(
        snapshot::recorded_hash(&bytes).unwrap(),
        small_state().projection_hash()
    );
    // The helper rebuilds exactly what encode wrote.
    assert_eq!(with_body(&bytes, &bytes[BODY..]), bytes);
}

#[test]
fn every_flipped_byte_and_every_truncation_is_refused() {
    let state = small_state();
    let bytes = snapshot::encode(&state);
    assert!(bytes.len() > BODY + 100, "a state with some content");
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[i] ^= mask;
            assert!(
                snapshot::decode(&bad).is_err(),
                "byte {i} ^ {mask:#x} was accepted"
            );
        }
    }
    for n in 0..bytes.len() {
        assert!(snapshot::decode(&bytes[..n]).is_err(), "{n} bytes accepted");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(snapshot::decode(&longer).err(), Some(SnapshotError::Digest));
}

/// The decoder itself (past the digest) never panics and never allocates beyond its input:
/// every body byte changed and every body truncation, with the digest made to match. A
/// change the format cannot see (a timestamp in a rate window) may decode; then it decodes to
/// a State with the recorded projection hash, or is refused for the hash.
#[test]
fn a_malformed_body_with_a_matching_digest_is_refused_or_harmless() {
    let bytes = snapshot::encode(&small_state());
    let body = &bytes[BODY..];
    for i in 0..body.len() {
        for mask in [0x01u8, 0x80] {
            let mut bad = body.to_vec();
            bad[i] ^= mask;
            if let Ok(s) = snapshot::decode(&with_body(&bytes, &bad)) {
                assert_eq!(
                    s.projection_hash(),
                    snapshot::recorded_hash(&bytes).unwrap()
                );
            }
        }
    }
    for n in 0..body.len() {
        assert!(snapshot::decode(&with_body(&bytes, &body[..n])).is_err());
    }
    let mut longer = body.to_vec();
    longer.push(0);
    assert_eq!(
        snapshot::decode(&with_body(&bytes, &longer)).err(),
        Some(SnapshotError::TrailingBytes(1))
    );
    // A huge count is refused before anything is reserved.
    let mut huge = vec![0xff; 9];
    huge.push(0x01);
    assert!(matches!(
        snapshot::decode(&with_body(&bytes, &huge)),
        Err(SnapshotError::Malformed { .. })
    ));
}

#[test]
fn the_magic_and_the_version_are_checked() {
    let bytes = snapshot::encode(&small_state());
    let mut other = bytes.clone();
    other[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    assert_eq!(
        snapshot::decode(&other).err(),
        Some(SnapshotError::Version {
            found: FORMAT_VERSION + 1,
            expected: FORMAT_VERSION
        })
    );
    assert!(snapshot::recorded_hash(&other).is_err());
    let mut json = bytes.clone();
    json[0] = b'{';
    assert_eq!(
        snapshot::decode(&json).err(),
        Some(SnapshotError::NotASnapshot)
    );
    assert_eq!(
        snapshot::decode(b"").err(),
        Some(SnapshotError::NotASnapshot)
    );
}

/// A snapshot recording another State's projection hash is refused, though its body and
/// digest are intact.
#[test]
fn a_snapshot_recording_another_states_hash_is_refused() {
    let (small, large) = (small_state(), large_state());
    assert_ne!(small.projection_hash(), large.projection_hash());
    let mut bytes = snapshot::encode(&small);
    let other = snapshot::encode(&large);
    bytes[13..13 + 71].copy_from_slice(&other[13..13 + 71]);
    match snapshot::decode(&bytes) {
        Err(SnapshotError::HashMismatch { recorded, decoded }) => {
            assert_eq!(recorded, large.projection_hash());
            assert_eq!(decoded, small.projection_hash());
        }
        other => panic!("accepted or refused otherwise: {:?}", other.map(|_| ())),
    }
}

/// Every field survives, the large scenario's State included; projections compare equal too.
#[test]
fn a_large_state_round_trips_whole() {
    let state = large_state();
    let back = round_trip(&state);
    assert!(state.messages.len() + state.work_items.len() > 0);
    assert_eq!(back.missions, state.missions);
    assert_eq!(back.work_items, state.work_items);
    assert_eq!(back.messages, state.messages);
    assert_eq!(back.receipts, state.receipts);
    assert_eq!(back.accounts, state.accounts);
    assert_eq!(back.orphan_accounts, state.orphan_accounts);
    assert_eq!(back.org_sequence, state.org_sequence);
    for ((ka, a), (kb, b)) in state.groups.iter().zip(back.groups.iter()) {
        assert_eq!(ka, kb);
        assert_eq!(a.recent, b.recent);
        assert_eq!(a.last_occurred_at, b.last_occurred_at);
        assert_eq!(a.group.to_json(), b.group.to_json());
    }
}
