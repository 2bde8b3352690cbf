//! Test-only: Alice's one-key Registry, shared by the tests of the `HELLO` check
//! (`binding::hello`) and of signed console reads (`crypto::request`), which both verify a
//! human's Ed25519 key against it (§6.4).

use super::SecretSeed;
use super::registry::{BindingRecord, RegistryEvidence, StatusRecord, ValidatedRegistry};
use crate::authority::Micros;
use crate::encoding::b64url_encode;

/// Alice's key, bound to her from 2026-01-01.
pub const KEY: &str = "urn:missionweaveprotocol:key:alice-1";
pub const ALICE: &str = "urn:missionweaveprotocol:human:alice";
/// The seed of Alice's bound key (any other seed is a stranger's key).
pub const ALICE_SEED: u8 = 3;

/// The secret seed made of `n` repeated.
pub fn seed(n: u8) -> SecretSeed {
    SecretSeed::take(&mut [n; 32])
}

/// Alice's one key, with `history` (its validity-status records).
pub fn alice_registry(history: Vec<StatusRecord>) -> ValidatedRegistry {
    RegistryEvidence {
        organization_id: "urn:missionweaveprotocol:organization:test".into(),
        bindings: vec![BindingRecord {
            key_id: KEY.into(),
            principal_type: "human".into(),
            principal_id: ALICE.into(),
            algorithm: "Ed25519".into(),
            public_key: b64url_encode(&seed(ALICE_SEED).public_key()),
            valid_from: "2026-01-01T00:00:00Z".into(),
            validity_history: history,
        }],
    }
    .validate()
    .expect("registry")
}

/// A status record revoking Alice's key at `at`.
pub fn revoked_at(recorded_at: &str, at: &str) -> StatusRecord {
    StatusRecord {
        sequence: 1,
        recorded_at: recorded_at.into(),
        valid_until: None,
        revoked_at: Some(at.into()),
    }
}

/// The tests' "now": 2026-12-06T05:00:00Z.
pub fn now() -> Micros {
    Micros::parse("2026-12-06T05:00:00Z").expect("time")
}
