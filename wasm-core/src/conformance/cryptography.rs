//! The cryptography bundle: 22 cases, 62 evaluations over the six stages of §6.4.

use super::{BundleReport, CaseError, ReadFile, check_integrity, read_json, str_of};
use crate::crypto::registry::{RegistryError, RegistryEvidence, ValidatedRegistry};
use crate::crypto::{DocumentKind, Verified, VerifyError, verify};
use crate::encoding::{b64url_decode, sha256_hash};
use crate::json::{self, Value};
use crate::model::{self, common::Actor};

/// Runs `cryptography/manifest.json`.
pub fn run_cryptography(read: ReadFile) -> BundleReport {
    let mut report = BundleReport::new("cryptography");
    let manifest = match read_json(read, "cryptography/manifest.json") {
        Ok(m) => m,
        Err(e) => {
            report.integrity(e.to_string());
            return report;
        }
    };
    check_integrity(read, &manifest, &mut report);
    let Some(Value::Array(cases)) = manifest.pointer("/cases") else {
        report.integrity("manifest has no cases".into());
        return report;
    };
    for case in cases {
        let case_id = str_of(case, "/id").unwrap_or("?");
        let kind = str_of(case, "/kind").unwrap_or_default();
        let Some(Value::Array(evals)) = case.pointer("/evaluations") else {
            report.integrity(format!("{case_id}: no evaluations"));
            continue;
        };
        for (i, e) in evals.iter().enumerate() {
            if kind == "canonicalization" {
                let input = str_of(e, "/input").unwrap_or_default();
                let got = run_canonicalization(read, e);
                report.record(
                    format!("{case_id}[{i}] {input}"),
                    "canonical bytes".into(),
                    got,
                );
            } else {
                let doc = str_of(e, "/document").unwrap_or_default();
                let fault = str_of(e, "/fault/id").unwrap_or("none");
                let (expected, got) = run_signed(read, e);
                report.record(
                    format!("{case_id}[{i}] {doc} (fault {fault})"),
                    expected,
                    got,
                );
            }
        }
    }
    report
}

fn run_canonicalization(read: ReadFile, e: &Value) -> Result<(), CaseError> {
    let input = read(str_of(e, "/input").unwrap_or_default()).map_err(CaseError::Read)?;
    let want = read(str_of(e, "/expectedJcs").unwrap_or_default()).map_err(CaseError::Read)?;
    let v = json::parse(&input).map_err(|e| CaseError::Mismatch(e.to_string()))?;
    let got = json::canonicalize(&v).map_err(|e| CaseError::Mismatch(e.to_string()))?;
    if got != want {
        return Err(CaseError::Mismatch(format!(
            "JCS {:?} differs from the expected {:?}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        )));
    }
    let hash = sha256_hash(&got);
    let want_hash = str_of(e, "/sha256").unwrap_or_default();
    if hash != want_hash {
        return Err(CaseError::Mismatch(format!(
            "hash {hash}, expected {want_hash}"
        )));
    }
    Ok(())
}

/// Loads and validates a Registry fixture: fixture Schema first (the runner's duty, V-3), then the
/// semantic validation whose failure is stage 4 of the verification itself.
pub(crate) fn load_registry(
    read: ReadFile,
    path: &str,
) -> Result<Result<ValidatedRegistry, RegistryError>, CaseError> {
    let v = read_json(read, path)?;
    let evidence = RegistryEvidence::from_fixture_json(&v).map_err(|e| {
        CaseError::Fixture(format!(
            "{path} does not match the Registry fixture schema: {e}"
        ))
    })?;
    Ok(evidence.validate())
}

/// The test-only signing-key fixture (`signing-key-fixture.schema.json`).
struct SigningKeyFixture {
    key_id: String,
    seed: crate::crypto::SecretSeed,
    public_key: String,
}

fn load_signing_key(read: ReadFile, path: &str) -> Result<SigningKeyFixture, CaseError> {
    let v = read_json(read, path)?;
    let bad = |why: &str| CaseError::Fixture(format!("{path}: {why}"));
    let o = v.as_object().ok_or_else(|| bad("not an object"))?;
    for (k, _) in o.iter() {
        if !["testOnly", "keyId", "algorithm", "seed", "publicKey"].contains(&k.as_str()) {
            return Err(bad(&format!("unknown member {:?}", k.as_str())));
        }
    }
    if o.get("testOnly") != Some(&Value::Bool(true)) || str_of(&v, "/algorithm") != Some("Ed25519")
    {
        return Err(bad("not a test-only Ed25519 signing key fixture"));
    }
    let seed = b64url_decode(str_of(&v, "/seed").unwrap_or_default())
        .map_err(|e| bad(&format!("seed {e}")))?;
    let seed =
        crate::crypto::SecretSeed::from_slice(&seed).ok_or_else(|| bad("seed is not 32 bytes"))?;
    let public_key = str_of(&v, "/publicKey").unwrap_or_default().to_owned();
    if crate::encoding::b64url_encode(&seed.public_key()) != public_key {
        return Err(bad("publicKey does not belong to seed"));
    }
    Ok(SigningKeyFixture {
        key_id: str_of(&v, "/keyId").unwrap_or_default().to_owned(),
        seed,
        public_key,
    })
}

fn describe(outcome: &Result<Verified, VerifyError>) -> String {
    match outcome {
        Ok(_) => "complete".into(),
        Err(e) => format!("{} {} ({})", e.stage, e.wire_code(), e.reason),
    }
}

/// Runs one signed-document evaluation; returns (expected, outcome).
fn run_signed(read: ReadFile, e: &Value) -> (String, Result<(), CaseError>) {
    let want_stage = str_of(e, "/expect/stage").unwrap_or("?").to_owned();
    let want_code = str_of(e, "/expect/wireCode").unwrap_or("null").to_owned();
    let expected = format!("{want_stage} {want_code}");
    let got = (|| -> Result<(), CaseError> {
        let profile = str_of(e, "/profileId").unwrap_or_default();
        let kind = DocumentKind::from_wire(profile)
            .ok_or_else(|| CaseError::Fixture(format!("unknown profile {profile:?}")))?;
        let registry = load_registry(read, str_of(e, "/registry").unwrap_or_default())?;
        // Reject evaluations name no signing key; accept evaluations must reproduce the signature.
        let key = match str_of(e, "/signingKey") {
            Some(path) => Some(load_signing_key(read, path)?),
            None => None,
        };
        let doc_path = str_of(e, "/document").unwrap_or_default();
        let bytes = read(doc_path).map_err(CaseError::Read)?;
        let outcome = verify(&bytes, kind, &registry);
        if want_stage == "complete" {
            let v = outcome
                .as_ref()
                .map_err(|_| CaseError::Mismatch(describe(&outcome)))?;
            check_verified(read, e, v, key.as_ref())
        } else {
            match &outcome {
                Err(err)
                    if err.stage.as_str() == want_stage
                        && err.wire_code().as_str() == want_code =>
                {
                    Ok(())
                }
                _ => Err(CaseError::Mismatch(describe(&outcome))),
            }
        }
    })();
    (expected, got)
}

fn check_verified(
    read: ReadFile,
    e: &Value,
    v: &Verified,
    key: Option<&SigningKeyFixture>,
) -> Result<(), CaseError> {
    let want = |p: &str| str_of(e, &format!("/expect/verified/{p}")).unwrap_or_default();
    let mut diffs = Vec::new();
    if v.key_id != want("keyId") {
        diffs.push(format!("keyId {}", v.key_id));
    }
    let principal: Option<Actor> = e
        .pointer("/expect/verified/principal")
        .and_then(|p| model::from_value(p, true).ok());
    if principal.as_ref() != Some(&v.principal) {
        diffs.push(format!(
            "principal {} {}",
            v.principal.actor_type, v.principal.id
        ));
    }
    if v.protected_time.as_str() != want("protectedTime") {
        diffs.push(format!("protectedTime {}", v.protected_time));
    }
    let signing_bytes = read(want("signingBytes")).map_err(CaseError::Read)?;
    if v.signing_bytes != signing_bytes {
        diffs.push("signingBytes differ from the expected file".into());
    }
    if v.signing_hash != want("signingHash") {
        diffs.push(format!("signingHash {}", v.signing_hash));
    }
    if v.signature != want("signature") {
        diffs.push(format!("signature {}", v.signature));
    }
    let whole = json::canonicalize(&v.document).map_err(|e| CaseError::Mismatch(e.to_string()))?;
    if sha256_hash(&whole) != want("signedDocumentHash") {
        diffs.push("signedDocumentHash differs".into());
    }
    // The producer side: the test seed must reproduce the signature byte for byte (§3.2).
    let Some(key) = key else {
        return Err(CaseError::Fixture(
            "an accept evaluation without its signing-key fixture".into(),
        ));
    };
    if key.key_id == v.key_id {
        let mut doc = v.document.clone();
        let h = crate::crypto::sign_document(&mut doc, v.kind, &key.key_id, &key.seed)
            .map_err(|e| CaseError::Mismatch(e.to_string()))?;
        if str_of(&doc, "/signature/value") != Some(v.signature.as_str()) || h != v.signing_hash {
            diffs.push("re-signing with the fixture seed gives another signature".into());
        }
        if v.binding.public_key_text != key.public_key {
            diffs.push("fixture public key differs from the Registry binding".into());
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(CaseError::Mismatch(format!(
            "complete but {}",
            diffs.join("; ")
        )))
    }
}
