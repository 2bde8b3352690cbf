//! Registry evidence in the bundle's Registry-fixture shape (`registry-fixture.schema.json`):
//! every length and count limit at its boundary and one past it, unknown members at every
//! level, and the Organization-wide rule that one key ID is one logical binding (§6.4, S-1..S-3).
//! Natively and in the browser.

#![allow(clippy::unwrap_used)]

use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::registry::{BindingError, RegistryError, RegistryEvidence};
use wasm_core::encoding::b64url_encode;
use wasm_core::json;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn public_key(seed: u8) -> String {
    b64url_encode(&SecretSeed::take(&mut [seed; 32]).public_key())
}

/// A binding in the fixture shape, with one status record.
fn binding(key_id: &str, seed: u8) -> String {
    format!(
        r#"{{"keyId":"{key_id}","principal":{{"type":"agent","id":"urn:agent:{seed}"}},
        "algorithm":"Ed25519","publicKey":"{}","validFrom":"2026-07-01T00:00:00Z",
        "validityHistory":[{{"sequence":1,"recordedAt":"2026-07-02T00:00:00Z",
        "validUntil":"2026-08-01T00:00:00Z"}}]}}"#,
        public_key(seed)
    )
}

fn fixture(bindings: &[String]) -> String {
    format!(
        r#"{{"organizationId":"urn:org:acme","bindings":[{}]}}"#,
        bindings.join(",")
    )
}

fn read(text: &str) -> Result<RegistryEvidence, String> {
    let v = json::parse_str(text).map_err(|e| e.to_string())?;
    RegistryEvidence::from_fixture_json(&v).map_err(|e| e.to_string())
}

/// `text` with the first occurrence of `from` replaced by `to`.
fn with(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from} not in {text}");
    text.replacen(from, to, 1)
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn string_lengths_at_the_limit_and_one_past_it() {
    let base = fixture(&[binding("urn:k:a", 1)]);
    assert!(read(&base).is_ok());
    // (member's current text, the limit in characters); every string is ASCII here.
    let cases: [(&str, usize); 8] = [
        ("urn:org:acme", 512),
        ("urn:k:a", 512),
        ("urn:agent:1", 512),
        ("Ed25519", 64),
        (&public_key(1), 4096),
        ("2026-07-01T00:00:00Z", 128),
        ("2026-07-02T00:00:00Z", 128),
        ("2026-08-01T00:00:00Z", 128),
    ];
    for (text, max) in cases {
        let quoted = format!("\"{text}\"");
        let at = |n: usize| with(&base, &quoted, &format!("\"{}\"", "x".repeat(n)));
        assert!(
            read(&at(max)).is_ok(),
            "{text}: {max} characters are allowed"
        );
        assert!(read(&at(max + 1)).is_err(), "{text}: {} are not", max + 1);
        assert!(read(&at(0)).is_err(), "{text}: an empty string is not");
    }
    // Characters, not bytes: 512 two-byte characters are within the limit.
    let wide = with(
        &base,
        "\"urn:org:acme\"",
        &format!("\"{}\"", "é".repeat(512)),
    );
    assert!(read(&wide).is_ok());
    // The principal type: at most 16 characters, and one of three words.
    for (t, ok) in [("human", true), ("service", true), ("robot", false)] {
        let text = with(&base, "\"type\":\"agent\"", &format!("\"type\":\"{t}\""));
        assert_eq!(read(&text).is_ok(), ok, "{t}");
    }
    let long_type = with(
        &base,
        "\"type\":\"agent\"",
        &format!("\"type\":\"{}\"", "a".repeat(17)),
    );
    assert!(read(&long_type).is_err());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn binding_and_status_record_counts() {
    let many = |n: usize| -> Vec<String> {
        (0..n)
            .map(|i| binding(&format!("urn:k:{i}"), i as u8))
            .collect()
    };
    assert!(read(&fixture(&many(0))).is_err(), "no binding at all");
    let sixty_four = read(&fixture(&many(64))).unwrap();
    assert_eq!(sixty_four.bindings.len(), 64);
    assert!(read(&fixture(&many(65))).is_err(), "65 bindings");
    // Status records: 0 and 64 are allowed, 65 are not.
    let records =
        |n: usize| -> String { with_history(&vec![("2026-07-02T00:00:00Z", None, None); n]) };
    assert!(read(&records(0)).is_ok());
    let r = read(&records(64)).unwrap();
    assert_eq!(r.bindings[0].validity_history.len(), 64);
    assert!(read(&records(65)).is_err(), "65 status records");
}

/// An Organization's served Registry (`from_registry_json`) has the fixture's shape and rules but
/// room for a running Organization's keys: 65 bindings (one past the fixture's cap) read, and
/// the served cap holds at its boundary and one past it.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_served_registry_holds_more_than_the_fixture_cap() {
    use wasm_core::crypto::registry::MAX_REGISTRY_BINDINGS;
    let served = |n: usize| -> Result<RegistryEvidence, String> {
        // The same key material repeats: shape is all that is read here (validate() is apart).
        let list: Vec<String> = (0..n).map(|i| binding(&format!("urn:k:{i}"), 7)).collect();
        let v = json::parse_str(&fixture(&list)).map_err(|e| e.to_string())?;
        RegistryEvidence::from_registry_json(&v).map_err(|e| e.to_string())
    };
    assert_eq!(served(65).unwrap().bindings.len(), 65);
    assert!(read(&fixture(&vec![binding("urn:k:x", 7); 65])).is_err());
    assert_eq!(
        served(MAX_REGISTRY_BINDINGS).unwrap().bindings.len(),
        MAX_REGISTRY_BINDINGS
    );
    assert!(served(MAX_REGISTRY_BINDINGS + 1).is_err());
    assert!(served(0).is_err(), "no binding at all");
    // The same strict member rules as the fixture.
    let extra = with(
        &fixture(&[binding("urn:k:a", 1)]),
        "\"bindings\"",
        "\"x\":1,\"bindings\"",
    );
    let v = json::parse_str(&extra).unwrap();
    assert!(RegistryEvidence::from_registry_json(&v).is_err());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn unknown_members_are_refused_at_every_level() {
    let base = fixture(&[binding("urn:k:a", 1)]);
    for (at, then) in [
        ("{\"organizationId\"", "{\"extra\":1,\"organizationId\""),
        ("{\"keyId\"", "{\"extra\":1,\"keyId\""),
        ("{\"type\"", "{\"extra\":1,\"type\""),
        ("{\"sequence\"", "{\"extra\":1,\"sequence\""),
    ] {
        let text = with(&base, at, then);
        let err = read(&text).expect_err(&format!("an unknown member before {at}"));
        assert!(err.contains("extra"), "{err}");
    }
    // Sequence: a positive safe integer.
    for bad in ["0", "-1", "1.5", "\"1\"", "9007199254740992"] {
        let text = with(&base, "\"sequence\":1", &format!("\"sequence\":{bad}"));
        assert!(read(&text).is_err(), "sequence {bad}");
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn one_key_id_is_one_logical_binding() {
    let a = binding("urn:k:a", 1);
    // Declared twice identically: one binding.
    let twice = read(&fixture(&[a.clone(), a.clone()]))
        .unwrap()
        .validate()
        .unwrap();
    assert_eq!(twice.bindings().count(), 1);
    // Another key, or another Principal, under the same key ID: refused (each alone).
    let other_key = with(&a, &public_key(1), &public_key(2));
    let other_principal = with(&a, "urn:agent:1", "urn:agent:9");
    for (what, b) in [("key", &other_key), ("principal", &other_principal)] {
        let err = read(&fixture(&[a.clone(), b.clone()]))
            .unwrap()
            .validate()
            .expect_err(what);
        assert!(
            matches!(err, RegistryError::Rebound { .. }),
            "{what}: {err}"
        );
    }
    // The same key ID with a different validity, one boundary at a time: refused.
    let valid_from = with(&a, "2026-07-01T00:00:00Z", "2026-06-01T00:00:00Z");
    let valid_until = with(&a, "2026-08-01T00:00:00Z", "2026-09-01T00:00:00Z");
    let revoked = with(
        &a,
        "\"validUntil\":\"2026-08-01T00:00:00Z\"",
        "\"validUntil\":\"2026-08-01T00:00:00Z\",\"revokedAt\":\"2026-07-20T00:00:00Z\"",
    );
    for (what, b) in [
        ("validFrom", &valid_from),
        ("validUntil", &valid_until),
        ("revokedAt", &revoked),
    ] {
        let err = read(&fixture(&[a.clone(), b.clone()]))
            .unwrap()
            .validate()
            .expect_err(what);
        assert!(
            matches!(err, RegistryError::ConflictingValidity { .. }),
            "{what}: {err}"
        );
    }
    // The same instant spelled differently is the same validity.
    let same_instant = with(&a, "2026-07-01T00:00:00Z", "2026-07-01T02:00:00+02:00");
    assert!(
        read(&fixture(&[a.clone(), same_instant]))
            .unwrap()
            .validate()
            .is_ok()
    );
    // One key under two key IDs: refused.
    let alias = with(&a, "urn:k:a", "urn:k:alias");
    let err = read(&fixture(&[a.clone(), alias]))
        .unwrap()
        .validate()
        .expect_err("alias");
    assert!(matches!(err, RegistryError::KeyReuse { .. }), "{err}");
    // `bindings()` lists every logical binding, once.
    let two = read(&fixture(&[a, binding("urn:k:b", 2)]))
        .unwrap()
        .validate()
        .unwrap();
    let mut ids: Vec<&str> = two.bindings().map(|b| b.key_id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["urn:k:a", "urn:k:b"]);
}

/// A binding whose history is `records` (`(recordedAt, validUntil, revokedAt)`).
fn with_history(records: &[(&str, Option<&str>, Option<&str>)]) -> String {
    let list: Vec<String> = records
        .iter()
        .enumerate()
        .map(|(i, (at, until, revoked))| {
            let mut s = format!(r#"{{"sequence":{},"recordedAt":"{at}""#, i + 1);
            if let Some(u) = until {
                s.push_str(&format!(r#","validUntil":"{u}""#));
            }
            if let Some(r) = revoked {
                s.push_str(&format!(r#","revokedAt":"{r}""#));
            }
            s.push('}');
            s
        })
        .collect();
    let one = binding("urn:k:a", 1);
    let start = one.find("\"validityHistory\":[").unwrap() + "\"validityHistory\":[".len();
    let end = one.rfind(']').unwrap();
    fixture(&[format!(
        "{}{}{}",
        &one[..start],
        list.join(","),
        &one[end..]
    )])
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn validity_history_boundaries() {
    const T1: &str = "2026-07-02T00:00:00Z";
    const T2: &str = "2026-07-03T00:00:00Z";
    const U1: &str = "2026-08-01T00:00:00Z";
    const U2: &str = "2026-08-02T00:00:00Z";
    let validate = |records: &[(&str, Option<&str>, Option<&str>)]| {
        read(&with_history(records)).unwrap().validate()
    };
    let until_of = |records: &[(&str, Option<&str>, Option<&str>)]| {
        let r = validate(records).unwrap();
        let b = r.binding("urn:k:a").unwrap();
        (
            b.valid_until.as_ref().map(ToString::to_string),
            b.revoked_at.as_ref().map(ToString::to_string),
        )
    };
    // recordedAt may repeat (equal instants), never go back.
    assert!(validate(&[(T1, None, None), (T1, Some(U1), None)]).is_ok());
    assert!(validate(&[(T2, None, None), (T1, Some(U1), None)]).is_err());
    // A boundary restated at the same instant, or moved earlier, is allowed; moved later is
    // not (the whole evidence is then invalid: fail closed).
    for name in ["validUntil", "revokedAt"] {
        let rec = |t: &'static str,
                   b: &'static str|
         -> (&'static str, Option<&'static str>, Option<&'static str>) {
            if name == "validUntil" {
                (t, Some(b), None)
            } else {
                (t, None, Some(b))
            }
        };
        assert!(
            validate(&[rec(T1, U1), rec(T2, U1)]).is_ok(),
            "{name} restated"
        );
        let earlier = until_of(&[rec(T1, U2), rec(T2, U1)]);
        let got = if name == "validUntil" {
            earlier.0
        } else {
            earlier.1
        };
        assert_eq!(
            got.as_deref(),
            Some(U1),
            "{name} moved earlier takes effect"
        );
        let later = validate(&[rec(T1, U1), rec(T2, U2)]).expect_err(name);
        assert!(
            matches!(
                later,
                RegistryError::Binding {
                    reason: BindingError::BoundaryLater { .. },
                    ..
                }
            ),
            "{name}: {later}"
        );
    }
    // A later record without a boundary leaves the boundary unchanged.
    assert_eq!(
        until_of(&[(T1, Some(U1), None), (T2, None, None)])
            .0
            .as_deref(),
        Some(U1)
    );
    // Sequences are contiguous from 1.
    let gap = with(
        &with_history(&[(T1, None, None), (T2, None, None)]),
        "\"sequence\":2",
        "\"sequence\":3",
    );
    assert!(read(&gap).unwrap().validate().is_err());
}
