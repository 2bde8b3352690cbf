//! The console's check of a log signed across a rotation of the Organization's service key
//! (`org key rotate service`): it verifies each Event with `wasm_core::crypto::verify_value`
//! against the Registry, by the signing key's validity window at the Event's own signed time
//! (§6.4). So Events signed by the old key before the switch verify after the old key's
//! `validUntil` (nothing in the check reads a clock), Events by the new key verify from its
//! `validFrom`, and a key used outside its window is refused: the console needs no change.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use simulation::harness::{Envelope, Harness};
use wasm_core::authority::{Micros, Submitted};
use wasm_core::crypto::registry::{BindingRecord, StatusRecord};
use wasm_core::crypto::verify::verify_value;
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::Value;
use wasm_core::model::common::ActorType;

const NEW_KEY: &str = "urn:missionweaveprotocol:key:group-gateway-2";

fn at(text: &str) -> Micros {
    Micros::parse(text).unwrap()
}

/// The Events of registering `agent`'s card at `now`, signed by the authority's current key.
fn register(h: &mut Harness, agent: &str, now: Micros) -> Vec<Value> {
    let pk = b64url_encode(&h.principals[agent].signer.public_key());
    let card = simulation::harness::agent_card(h, agent, 1, &pk, vec![], now);
    let p = wasm_core::authority::handlers::payload(vec![("card", Value::Object(card))]);
    match h
        .submit(
            "organization-registry",
            "ext.missionweaveprotocol.registry.agent_card_register",
            &Envelope::default(),
            p,
            now,
        )
        .unwrap()
    {
        Submitted::Appended(es) => es.into_iter().map(|e| e.value).collect(),
        other => panic!("{other:?}"),
    }
}

fn resigned(e: &Value, key_id: &str, seed: &SecretSeed) -> Value {
    let mut e = e.clone();
    if let Value::Object(o) = &mut e {
        o.remove("signature");
    }
    sign_document(&mut e, DocumentKind::Event, key_id, seed).unwrap();
    e
}

#[test]
fn events_signed_across_a_service_key_rotation_verify_by_their_signed_time() {
    let mut h = Harness::new(&[("a1", ActorType::Agent), ("a2", ActorType::Agent)]);
    let old_key = h.authority.config.key_id.clone();
    let old_seed = h.authority.config.seed.duplicate();
    let new_seed = SecretSeed::take(&mut [42u8; 32]);
    // The rotation as `org key rotate service --grace 5m` writes it: the new key bound from
    // the switch, the old one valid until the switch plus the grace.
    let switch = "2026-12-06T10:00:00Z";
    let old_end = "2026-12-06T10:05:00Z";
    let gateway = h.principals["group-gateway"].actor.id.0.clone();
    let mut evidence = h.evidence.clone();
    evidence.bindings.push(BindingRecord {
        key_id: NEW_KEY.into(),
        principal_type: "service".into(),
        principal_id: gateway,
        algorithm: "Ed25519".into(),
        public_key: b64url_encode(&new_seed.public_key()),
        valid_from: switch.into(),
        validity_history: vec![],
    });
    let old = evidence
        .bindings
        .iter_mut()
        .find(|b| b.key_id == old_key)
        .unwrap();
    old.validity_history.push(StatusRecord {
        sequence: 1,
        recorded_at: switch.into(),
        valid_until: Some(old_end.into()),
        revoked_at: None,
    });
    let rotated = evidence.validate().unwrap();

    // Before the switch, the old key signs; from the switch, the new one.
    let before = register(&mut h, "a1", at("2026-12-06T09:59:59Z"));
    h.authority
        .set_signing_key(NEW_KEY.into(), new_seed.duplicate());
    let after = register(&mut h, "a2", at("2026-12-06T10:00:01Z"));
    assert!(!before.is_empty() && !after.is_empty());
    for (events, key) in [(&before, old_key.as_str()), (&after, NEW_KEY)] {
        for e in events {
            assert_eq!(
                e.pointer("/signature/keyId").and_then(Value::as_str),
                Some(key)
            );
            // What the console runs on each Event it receives or replays.
            verify_value(e.clone(), DocumentKind::Event, &rotated)
                .unwrap_or_else(|err| panic!("{key}: {err}"));
        }
    }

    // An Event signed by the old key at its `validUntil` (the window is half-open) or after:
    // refused.
    let at_time = |e: &Value, t: &str| {
        let mut e = e.clone();
        if let Value::Object(o) = &mut e {
            o.insert("occurredAt", Value::string(t.to_owned()));
        }
        e
    };
    let late_by_old = resigned(&at_time(&after[0], old_end), &old_key, &old_seed);
    let err = verify_value(late_by_old, DocumentKind::Event, &rotated).unwrap_err();
    assert!(err.reason.contains("is not valid at"), "{err}");
    // ... inside the grace it verifies (a server that had not yet switched).
    let in_grace = resigned(
        &at_time(&after[0], "2026-12-06T10:04:59Z"),
        &old_key,
        &old_seed,
    );
    verify_value(in_grace, DocumentKind::Event, &rotated).expect("inside the grace");
    // An Event signed by the new key before its `validFrom`: refused.
    let early_by_new = resigned(&before[0], NEW_KEY, &new_seed);
    let err = verify_value(early_by_new, DocumentKind::Event, &rotated).unwrap_err();
    assert!(err.reason.contains("is not valid at"), "{err}");
}
