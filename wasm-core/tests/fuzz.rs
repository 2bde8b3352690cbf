//! A bounded, coverage-blind mutation fuzzer run by `cargo test` (stable Rust has no
//! `cargo fuzz`). Seeds are the official bundle's documents; each target runs for
//! `FUZZ_SECONDS` (default 10) and fails on any panic, printing the offending input in hex.
//! `FUZZ_SEED` makes a run reproducible.

#![cfg(not(target_arch = "wasm32"))]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};
use wasm_core::crypto::registry::RegistryEvidence;
use wasm_core::crypto::{DocumentKind, verify};
use wasm_core::json;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn root() -> std::path::PathBuf {
    std::env::var("MWP_PROTOCOL_DIR")
        .map(Into::into)
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/protocol").into())
}

fn corpus() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for dir in [
        "cryptography/vectors/signed-documents/valid",
        "cryptography/vectors/signed-documents/invalid",
        "conformance/vectors/valid",
        "conformance/vectors/invalid",
        "admission/records/valid",
        "cryptography/keys",
    ] {
        if let Ok(entries) = std::fs::read_dir(root().join(dir)) {
            for e in entries.flatten() {
                if let Ok(b) = std::fs::read(e.path()) {
                    out.push(b);
                }
            }
        }
    }
    // Frames around the signed vectors, so the frame target gets past parsing.
    let wrap = |kind: &str, file: &str| -> Option<Vec<u8>> {
        let doc = std::fs::read_to_string(root().join(file)).ok()?;
        Some(format!(
            r#"{{"protocolVersion":"0.1","frameId":"urn:uuid:f","frameType":"{}","{kind}":{doc}}}"#,
            kind.to_uppercase()
        ).into_bytes())
    };
    out.extend(wrap(
        "command",
        "cryptography/vectors/signed-documents/valid/command.json",
    ));
    out.extend(wrap(
        "event",
        "cryptography/vectors/signed-documents/valid/event.json",
    ));
    out.push(br#"{"protocolVersion":"0.1","frameId":"urn:uuid:p","frameType":"PING","nonce":"AAAA","sentAt":"2026-07-15T00:00:00Z"}"#.to_vec());
    out.push(br#"{"a":[1,2.5e10,-0,"\ud83d\ude00",{"b":null,"c":true}],"d":"\u0000"}"#.to_vec());
    assert!(
        out.len() > 50,
        "fuzz corpus missing: is MWP_PROTOCOL_DIR set?"
    );
    out
}

const TOKENS: &[&[u8]] = &[
    b"\"",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"1e400",
    b"-0",
    b"\xEF\xBB\xBF",
    b"\xC3",
    b"\xF0\x9F\x98",
    b"null",
    b"\"signature\"",
    b"Z",
    b"z",
    b"+23:59",
    b"60",
    b"0000",
    b"=",
    b"%GG",
    b"\n",
    b"0.0000000000000000000001",
];

fn mutate(rng: &mut Rng, corpus: &[Vec<u8>], input: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        let len = input.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(len + 1);
                let t = TOKENS[rng.below(TOKENS.len())];
                input.splice(i..i, t.iter().copied());
            }
            3 if len > 0 => {
                let a = rng.below(len);
                let b = (a + rng.below(32)).min(len);
                input.drain(a..b);
            }
            4 if len > 0 => {
                let a = rng.below(len);
                let b = (a + rng.below(64)).min(len);
                let chunk: Vec<u8> = input[a..b].to_vec();
                let i = rng.below(input.len() + 1);
                input.splice(i..i, chunk);
            }
            5 => {
                let other = &corpus[rng.below(corpus.len())];
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = (a + rng.below(128)).min(other.len());
                    let i = rng.below(len + 1);
                    input.splice(i..i, other[a..b].iter().copied());
                }
            }
            _ => {
                let i = rng.below(len + 1);
                input.insert(i, b"{}[]\",:0123456789eE.-tfn\\u "[rng.below(27)]);
            }
        }
    }
}

fn budget() -> Duration {
    let secs = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10u64);
    Duration::from_secs(secs)
}

fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn fuzz(name: &str, mut target: impl FnMut(&[u8])) {
    let corpus = corpus();
    let mut rng = Rng(seed());
    let start = Instant::now();
    let mut runs = 0u64;
    while start.elapsed() < budget() {
        let mut input = corpus[rng.below(corpus.len())].clone();
        mutate(&mut rng, &corpus, &mut input);
        if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
            panic!("{name}: panic on input {}", hex(&input));
        }
        runs += 1;
    }
    println!(
        "fuzz {name}: {runs} inputs in {:.1} s, no panic",
        start.elapsed().as_secs_f64()
    );
    assert!(runs > 0);
}

#[test]
fn fuzz_strict_json_parser_and_jcs() {
    fuzz("json", |input| {
        if let Ok(v) = json::parse(input) {
            // A value that parses re-parses from its compact form to the same value (lossless,
            // lone surrogates and number spellings included), and JCS is idempotent.
            let text = json::to_string(&v);
            assert_eq!(
                json::parse_str(&text).expect("compact output is strict JSON"),
                v
            );
            if let Ok(bytes) = json::canonicalize(&v) {
                let again = json::parse(&bytes).expect("JCS output is strict JSON");
                assert_eq!(json::canonicalize(&again).expect("idempotent"), bytes);
            }
        }
    });
}

#[test]
fn fuzz_signed_document_verification() {
    let registry_text = std::fs::read(root().join("cryptography/keys/registry-valid.json"))
        .expect("registry fixture");
    let registry = RegistryEvidence::from_fixture_json(&json::parse(&registry_text).expect("json"))
        .expect("fixture")
        .validate();
    let mut batch_no = 0usize;
    // Every 8 inputs also go through `verify_batch`, which must agree with `verify` on each:
    // same `Verified`, or the same stage and reason.
    let mut pending: Vec<(Vec<u8>, String)> = Vec::new();
    fuzz("verify", |input| {
        let kind = DocumentKind::ALL[batch_no % DocumentKind::ALL.len()];
        let single = verify(input, kind, &registry);
        pending.push((input.to_vec(), format!("{single:?}")));
        if pending.len() == 8 {
            let docs: Vec<&[u8]> = pending.iter().map(|(d, _)| d.as_slice()).collect();
            let batch = wasm_core::crypto::verify_batch(&docs, kind, &registry);
            for ((_, expected), got) in pending.iter().zip(&batch) {
                assert_eq!(
                    &format!("{got:?}"),
                    expected,
                    "verify_batch differs from verify"
                );
            }
            pending.clear();
            batch_no += 1;
        }
    });
}

#[test]
fn fuzz_registry_evidence() {
    fuzz("registry", |input| {
        if let Ok(v) = json::parse(input)
            && let Ok(ev) = RegistryEvidence::from_fixture_json(&v)
        {
            let _ = ev.validate();
        }
    });
}

#[test]
fn fuzz_websocket_frame_codec() {
    fuzz("frame", |input| {
        if let Ok(frame) = wasm_core::frame::decode(input) {
            // Whatever decodes re-encodes to a frame that decodes to the same thing.
            let again = wasm_core::frame::decode(wasm_core::frame::encode(&frame).as_bytes())
                .expect("an encoded frame decodes");
            assert_eq!(again, frame);
        }
    });
}
