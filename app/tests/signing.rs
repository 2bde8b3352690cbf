//! The signing summary model: what a person sees before signing is derived from the very
//! document that is signed.

use app::signing::{Dimension, SummaryError, summarize};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::json::{self, Value};

fn command() -> Value {
    json::parse(
        br#"{"protocolVersion":"0.1","actionId":"urn:missionweaveprotocol:action:1",
        "actor":{"type":"human","id":"urn:missionweaveprotocol:human:alice"},
        "groupId":"urn:missionweaveprotocol:group:g1","membershipEpoch":1,
        "kind":"mission.approve","expectedRevision":3,
        "correlationId":"urn:missionweaveprotocol:correlation:1","issuedAt":"2026-12-02T10:00:00Z",
        "payload":{"missionId":"urn:missionweaveprotocol:mission:m1","missionRevision":4,
          "approvedArtifactHashes":["sha256:0000000000000000000000000000000000000000000000000000000000000001",
                                    "sha256:0000000000000000000000000000000000000000000000000000000000000001"],
          "manifest":{"artifactHash":"sha256:00000000000000000000000000000000000000000000000000000000000000ff",
                      "note":"sha256:not-under-a-hash-member"},
          "budget":{"currency":"EUR","financialLimit":1250.50,"modelTokenLimit":2000000,
                    "toolCallLimit":300,"computeSecondsLimit":3600,"wallClockSecondsLimit":86400,
                    "externalSideEffectLimit":2}}}"#,
    )
    .expect("json")
}

#[test]
fn the_summary_names_kind_target_revision_hashes_and_budget() {
    let s = summarize(&command()).expect("summary");
    assert_eq!(s.kind, "mission.approve");
    assert_eq!(
        s.group_id.as_deref(),
        Some("urn:missionweaveprotocol:group:g1")
    );
    assert_eq!(
        s.targets,
        [(
            "missionId".to_owned(),
            "urn:missionweaveprotocol:mission:m1".to_owned()
        )]
    );
    // payload.missionRevision wins over the envelope's expectedRevision.
    assert_eq!(s.mission_revision, Some(4));
    assert_eq!(
        s.artifact_hashes,
        [
            "sha256:0000000000000000000000000000000000000000000000000000000000000001",
            "sha256:00000000000000000000000000000000000000000000000000000000000000ff"
        ]
    );
    let dims: Vec<(Dimension, &str, Option<&str>)> = s
        .budget
        .iter()
        .map(|b| (b.dimension, b.number.as_str(), b.currency.as_deref()))
        .collect();
    assert_eq!(
        dims,
        [
            (Dimension::Financial, "1250.50", Some("EUR")),
            (Dimension::ModelTokens, "2000000", None),
            (Dimension::ToolCalls, "300", None),
            (Dimension::ComputeSeconds, "3600", None),
            (Dimension::WallClockSeconds, "86400", None),
            (Dimension::ExternalSideEffects, "2", None),
        ]
    );
    assert_eq!(s.budget[0].pointer, "/payload/budget/financialLimit");
}

#[test]
fn the_canonical_json_is_exactly_what_is_signed() {
    let mut doc = command();
    let before = summarize(&doc).expect("summary").canonical_json;
    // JCS: sorted members, numbers in ECMAScript form (1250.50 -> 1250.5), no signature.
    assert!(before.starts_with(r#"{"actionId":"urn:missionweaveprotocol:action:1","actor":"#));
    assert!(before.contains(r#""financialLimit":1250.5,"#));
    let mut raw = [3u8; 32];
    let seed = SecretSeed::take(&mut raw);
    sign_document(
        &mut doc,
        DocumentKind::Command,
        "urn:missionweaveprotocol:key:alice-1",
        &seed,
    )
    .expect("signed");
    let after = summarize(&doc).expect("summary of the signed document");
    assert_eq!(after.canonical_json, before);
    // Those are the §6.4 stage-5 bytes: the signature verifies over them.
    let sig = doc
        .pointer("/signature/value")
        .and_then(Value::as_str)
        .expect("signature");
    let sig = wasm_core::encoding::b64url_decode(sig).expect("b64");
    let key =
        wasm_core::crypto::ed25519::StrictPublicKey::from_bytes(&seed.public_key()).expect("k");
    let sig = wasm_core::crypto::ed25519::StrictSignature::from_bytes(&sig).expect("s");
    assert!(wasm_core::crypto::ed25519::verify(
        &key,
        &sig,
        after.canonical_json.as_bytes()
    ));
}

#[test]
fn the_envelope_revision_counts_for_mission_commands_only_and_bad_documents_fail() {
    let v = json::parse(
        br#"{"kind":"mission.cancel","expectedRevision":7,"workItemId":"urn:x:w","payload":{}}"#,
    )
    .expect("json");
    let s = summarize(&v).expect("summary");
    assert_eq!(s.mission_revision, Some(7));
    assert_eq!(s.targets, [("workItemId".to_owned(), "urn:x:w".to_owned())]);
    assert!(s.artifact_hashes.is_empty() && s.budget.is_empty());
    let v = json::parse(br#"{"kind":"work.start","expectedRevision":7,"payload":{}}"#).expect("j");
    assert_eq!(summarize(&v).expect("summary").mission_revision, None);
    assert_eq!(
        summarize(&json::parse(b"[]").expect("j")),
        Err(SummaryError::NotAnObject)
    );
    assert_eq!(
        summarize(&json::parse(br#"{"payload":{}}"#).expect("j")),
        Err(SummaryError::NoKind)
    );
    // A number outside binary64 has no canonical form: nothing to sign.
    let v = json::parse(br#"{"kind":"x","payload":{"n":1e400}}"#).expect("lossless parse");
    assert!(matches!(summarize(&v), Err(SummaryError::NotCanonical(_))));
}
