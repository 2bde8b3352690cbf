//! Benchmark workloads shared by the native bench (`weave-console bench core`) and the browser
//! bench (wasm-bindgen-test in Chromium), so both measure the same code on the same input. The
//! clock is passed in (sans-IO); nothing here asserts on time.

use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::crypto::{DocumentKind, ed25519, sign_document, verify};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Value};

/// A deterministic test seed (never a real key).
fn seed() -> wasm_core::crypto::SecretSeed {
    wasm_core::crypto::SecretSeed::take(&mut [7u8; 32])
}
const KEY_ID: &str = "urn:missionweaveprotocol:key:bench-worker";
const AGENT: &str = "urn:missionweaveprotocol:agent:bench-worker";

/// A typical signed Agent Command (`work.checkpoint` with a small payload) as wire bytes, and
/// the validated Registry that resolves its key.
pub fn typical_command() -> Result<(Vec<u8>, ValidatedRegistry), String> {
    let text = format!(
        r#"{{"protocolVersion":"0.1","actionId":"urn:uuid:6f1c1a52-4a8e-4d3a-9a43-0d2b1f7c9e11",
        "actor":{{"type":"agent","id":"{AGENT}"}},"sessionEpoch":3,"membershipEpoch":2,
        "groupId":"urn:missionweaveprotocol:group:bench","workItemId":"urn:missionweaveprotocol:work-item:bench-7",
        "kind":"work.checkpoint","expectedRevision":12,
        "correlationId":"urn:uuid:0b6f3f3e-8c55-4b7e-a1d4-2f0c9f9d7a01","issuedAt":"2026-07-15T00:00:00Z",
        "payload":{{"ownershipEpoch":4,"leaseId":"urn:missionweaveprotocol:lease:bench-7-4",
        "checkpoint":{{"uri":"urn:missionweaveprotocol:artifact:checkpoint-12",
        "contentHash":"sha256:5c6f1b3bd6a1e4f0d6a5c8e4b2f1a0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3",
        "summary":"Parsed 14 of 20 input files; resumable from file 15."}},"progress":{{"completed":14,"total":20}}}}}}"#
    );
    let mut doc = json::parse_str(&text).map_err(|e| e.to_string())?;
    let seed = seed();
    sign_document(&mut doc, DocumentKind::Command, KEY_ID, &seed).map_err(|e| e.to_string())?;
    let evidence = RegistryEvidence {
        organization_id: "urn:missionweaveprotocol:organization:bench".into(),
        bindings: vec![BindingRecord {
            key_id: KEY_ID.into(),
            principal_type: "agent".into(),
            principal_id: AGENT.into(),
            algorithm: "Ed25519".into(),
            public_key: b64url_encode(&seed.public_key()),
            valid_from: "2026-07-01T00:00:00Z".into(),
            validity_history: vec![],
        }],
    };
    let registry = evidence.validate().map_err(|e| e.to_string())?;
    Ok((json::to_string(&doc).into_bytes(), registry))
}

/// One measured workload.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub name: &'static str,
    pub iterations: u64,
    pub elapsed_ms: f64,
    /// Set when the workload did not do what it should (e.g. verification failed).
    pub error: Option<String>,
}

impl Measurement {
    pub fn per_second(&self) -> f64 {
        if self.elapsed_ms <= 0.0 {
            0.0
        } else {
            self.iterations as f64 * 1000.0 / self.elapsed_ms
        }
    }
}

fn measure(
    name: &'static str,
    now_ms: &dyn Fn() -> f64,
    budget_ms: f64,
    mut work: impl FnMut() -> Result<(), String>,
) -> Measurement {
    // Warm-up, and a correctness check before timing.
    if let Err(e) = work() {
        return Measurement {
            name,
            iterations: 0,
            elapsed_ms: 0.0,
            error: Some(e),
        };
    }
    let start = now_ms();
    let mut iterations = 0u64;
    loop {
        for _ in 0..16 {
            if let Err(e) = work() {
                return Measurement {
                    name,
                    iterations,
                    elapsed_ms: now_ms() - start,
                    error: Some(e),
                };
            }
        }
        iterations += 16;
        let elapsed = now_ms() - start;
        if elapsed >= budget_ms {
            return Measurement {
                name,
                iterations,
                elapsed_ms: elapsed,
                error: None,
            };
        }
    }
}

/// Runs the core workloads, each for about `budget_ms` of the caller's clock:
/// the full six-stage verification of the typical Command from wire bytes (strict parse, schema,
/// envelope, key resolution, JCS, Ed25519), JCS alone, and the Ed25519 equation alone.
pub fn run_core(now_ms: &dyn Fn() -> f64, budget_ms: f64) -> Vec<Measurement> {
    let (bytes, registry) = match typical_command() {
        Ok(x) => x,
        Err(e) => {
            return vec![Measurement {
                name: "typical command",
                iterations: 0,
                elapsed_ms: 0.0,
                error: Some(e),
            }];
        }
    };
    let parsed = json::parse(&bytes).unwrap_or(Value::Null);
    let verified = verify(&bytes, DocumentKind::Command, &registry);
    let full = measure(
        "jcs+verify (six stages, from bytes)",
        now_ms,
        budget_ms,
        || {
            verify(&bytes, DocumentKind::Command, &registry)
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
    );
    let jcs = measure("jcs only", now_ms, budget_ms, || {
        json::canonicalize_without(&parsed, "signature")
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    let eq = match verified {
        Ok(v) => {
            let sig = wasm_core::encoding::b64url_decode(&v.signature).unwrap_or_default();
            ed25519_verification(
                &v.binding.public_key,
                &sig,
                &v.signing_bytes,
                now_ms,
                budget_ms,
            )
        }
        Err(e) => Measurement {
            name: "ed25519 decode R + equation",
            iterations: 0,
            elapsed_ms: 0.0,
            error: Some(e.to_string()),
        },
    };
    vec![full, jcs, eq]
}

/// Strict Ed25519 verification of one signature (decode `R`, the equation): the ceiling the
/// authority benchmark compares itself with, and a core workload.
pub fn ed25519_verification(
    key: &ed25519::StrictPublicKey,
    signature: &[u8],
    message: &[u8],
    now_ms: &dyn Fn() -> f64,
    budget_ms: f64,
) -> Measurement {
    measure("ed25519 decode R + equation", now_ms, budget_ms, || {
        let s = ed25519::StrictSignature::parse_deferring_order_check(signature)
            .map_err(|e| e.to_string())?;
        if ed25519::verify(key, &s, message) {
            Ok(())
        } else {
            Err("signature did not verify".into())
        }
    })
}
