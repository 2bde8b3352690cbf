//! What the console tells a person whose key the server refused (`state::key_standing`): a
//! revoked key says when (what it signed before still verifies), a replaced one when it ended, a
//! key the Registry does not hold says so, and a valid key says nothing (the refusal was for
//! something else).

#![allow(clippy::unwrap_used)]

use app::state::{KeyStanding, key_standing};
use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, StatusRecord};
use wasm_core::encoding::b64url_encode;

const KEY: &str = "urn:missionweaveprotocol:key:alice-1";

fn registry(history: Vec<StatusRecord>) -> wasm_core::crypto::ValidatedRegistry {
    RegistryEvidence {
        organization_id: "urn:missionweaveprotocol:organization:acme".into(),
        bindings: vec![BindingRecord {
            key_id: KEY.into(),
            principal_type: "human".into(),
            principal_id: "urn:missionweaveprotocol:human:alice".into(),
            algorithm: "Ed25519".into(),
            public_key: b64url_encode(&SecretSeed::take(&mut [4u8; 32]).public_key()),
            valid_from: "2026-01-01T00:00:00Z".into(),
            validity_history: history,
        }],
    }
    .validate()
    .unwrap()
}

fn record(until: Option<&str>, revoked: Option<&str>) -> StatusRecord {
    StatusRecord {
        sequence: 1,
        recorded_at: "2026-12-06T05:00:00Z".into(),
        valid_until: until.map(Into::into),
        revoked_at: revoked.map(Into::into),
    }
}

#[test]
fn a_refused_key_is_explained_by_its_registry_binding() {
    let now = "2026-12-06T06:00:00Z";
    assert_eq!(key_standing(&registry(vec![]), KEY, now), None);
    assert_eq!(
        key_standing(
            &registry(vec![record(None, Some("2026-12-06T05:30:00Z"))]),
            KEY,
            now
        ),
        Some(KeyStanding::Ended {
            key_id: KEY.into(),
            at: "2026-12-06T05:30:00Z".into(),
            revoked: true
        })
    );
    assert_eq!(
        key_standing(
            &registry(vec![record(Some("2026-12-06T05:40:00Z"), None)]),
            KEY,
            now
        ),
        Some(KeyStanding::Ended {
            key_id: KEY.into(),
            at: "2026-12-06T05:40:00Z".into(),
            revoked: false
        })
    );
    // Revoked in the future: still valid now.
    assert_eq!(
        key_standing(
            &registry(vec![record(None, Some("2026-12-06T07:00:00Z"))]),
            KEY,
            now
        ),
        None
    );
    assert_eq!(
        key_standing(
            &registry(vec![]),
            "urn:missionweaveprotocol:key:nobody",
            now
        ),
        Some(KeyStanding::Unknown {
            key_id: "urn:missionweaveprotocol:key:nobody".into()
        })
    );
}
