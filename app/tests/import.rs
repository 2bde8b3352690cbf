//! Importing an existing human key (`custody::import`): the three forms read to the same seed,
//! RFC 8410's and RFC 8037's own examples among them; a document whose public key is not its
//! private key's, a non-Ed25519 or truncated one, and junk are refused; the identity comes from
//! the Registry binding of the key, human and valid now, or nothing.

#![allow(clippy::unwrap_used)]

use app::custody::import::{ImportError, identity_in, seed_of};
use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, StatusRecord};
use wasm_core::encoding::{b64url_encode, hex};

/// RFC 8410 §10.3: the v1 example and its seed.
const RFC8410_V1: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC
-----END PRIVATE KEY-----";
/// RFC 8410 §10.3: the v2 example (attributes, then the public key).
const RFC8410_V2: &str = "-----BEGIN PRIVATE KEY-----
MHICAQEwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC
oB8wHQYKKoZIhvcNAQkJFDEPDA1DdXJkbGUgQ2hhaXJzgSEAGb9ECWmEzf6FQbrB
Z9w7lshQhqowtrbLDFw4rXAxZuE=
-----END PRIVATE KEY-----";
const RFC8410_SEED: &str = "d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842";

#[test]
fn the_three_forms_read_to_the_same_seed() {
    let v1 = seed_of(RFC8410_V1).unwrap();
    assert_eq!(hex(v1.expose()), RFC8410_SEED);
    let v2 = seed_of(RFC8410_V2).unwrap();
    assert_eq!(hex(v2.expose()), RFC8410_SEED);
    // The same seed as raw base64url (with or without padding) and as a JWK.
    let raw = b64url_encode(v1.expose());
    assert_eq!(seed_of(&raw).unwrap().expose(), v1.expose());
    assert_eq!(
        seed_of(&format!("  {raw}=\n")).unwrap().expose(),
        v1.expose()
    );
    let jwk = format!(
        r#"{{"kty":"OKP","crv":"Ed25519","d":"{raw}","x":"{}"}}"#,
        b64url_encode(&v1.public_key())
    );
    assert_eq!(seed_of(&jwk).unwrap().expose(), v1.expose());
    // RFC 8037 §A.1's key (RFC 8032's first test key).
    let rfc8037 = r#"{"kty":"OKP","crv":"Ed25519",
        "d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A",
        "x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    let s = seed_of(rfc8037).unwrap();
    assert_eq!(
        b64url_encode(&s.public_key()),
        "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    );
}

#[test]
fn mismatched_foreign_and_broken_keys_are_refused() {
    let other = b64url_encode(&SecretSeed::take(&mut [9u8; 32]).public_key());
    let jwk = format!(
        r#"{{"kty":"OKP","crv":"Ed25519","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A","x":"{other}"}}"#
    );
    assert_eq!(seed_of(&jwk).err(), Some(ImportError::PublicKeyMismatch));
    // A v2 document whose public key was swapped (the last 32 bytes re-encoded).
    let swapped = RFC8410_V2.replace("gSEAGb9ECWmEzf6FQbrB", "gSEAGb9ECWmEzf6FQbrC");
    assert!(seed_of(&swapped).is_err());
    for bad in [
        "",
        "hello",
        "AAAA",                                     // 3 bytes
        r#"{"kty":"EC","crv":"P-256","d":"AAAA"}"#, // not Ed25519
        r#"{"kty":"OKP","crv":"Ed25519"}"#,         // no d
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VxBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----", // Ed448 OID
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTu\n-----END PRIVATE KEY-----", // cut short
        "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----",
    ] {
        assert!(seed_of(bad).is_err(), "{bad}");
    }
    assert!(seed_of(&"A".repeat(5000)).is_err(), "hostile length");
}

fn registry(history: Vec<StatusRecord>, kind: &str) -> wasm_core::crypto::ValidatedRegistry {
    let seed = seed_of(RFC8410_V1).unwrap();
    RegistryEvidence {
        organization_id: "urn:missionweaveprotocol:organization:acme".into(),
        bindings: vec![BindingRecord {
            key_id: "urn:missionweaveprotocol:key:alice-1".into(),
            principal_type: kind.into(),
            principal_id: format!("urn:missionweaveprotocol:{kind}:alice"),
            algorithm: "Ed25519".into(),
            public_key: b64url_encode(&seed.public_key()),
            valid_from: "2026-01-01T00:00:00Z".into(),
            validity_history: history,
        }],
    }
    .validate()
    .unwrap()
}

#[test]
fn the_identity_is_the_registry_binding_of_a_valid_human_key() {
    let seed = seed_of(RFC8410_V1).unwrap();
    let now = "2026-12-06T06:00:00Z";
    assert_eq!(
        identity_in(&registry(vec![], "human"), &seed.public_key(), now),
        Ok((
            "urn:missionweaveprotocol:human:alice".to_owned(),
            "urn:missionweaveprotocol:key:alice-1".to_owned()
        ))
    );
    let stranger = SecretSeed::take(&mut [5u8; 32]);
    assert_eq!(
        identity_in(&registry(vec![], "human"), &stranger.public_key(), now),
        Err(ImportError::NotInRegistry)
    );
    assert_eq!(
        identity_in(&registry(vec![], "agent"), &seed.public_key(), now),
        Err(ImportError::NotHuman("agent".into()))
    );
    let revoked = vec![StatusRecord {
        sequence: 1,
        recorded_at: "2026-12-01T00:00:00Z".into(),
        valid_until: None,
        revoked_at: Some("2026-12-01T00:00:00Z".into()),
    }];
    assert_eq!(
        identity_in(&registry(revoked, "human"), &seed.public_key(), now),
        Err(ImportError::NotValid)
    );
}
