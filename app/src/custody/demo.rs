//! The static demo's one-click key (docs/static-demo.md, "Keys"): the in-browser authority gives
//! its page the demo's MissionOwner seed (`GET /api/demo/key`: `{principalId, keyId, seed,
//! demo: true}`), a demonstration key generated in this tab when the page opened. It is held as
//! any unlocked key is (a `Signer` in memory) but neither sealed nor stored: the Organization it
//! belongs to ends with the tab, so there is nothing to keep, and the console says plainly that
//! it is a demo key. Its identity is still the Registry's binding of its public key, as for any
//! imported key (`import::identity_in`): the document must name that same binding.

use super::import::{self, ImportError};
use wasm_core::crypto::SecretSeed;
use wasm_core::json::{self, Value};

/// The key document `body` as JSON, if it is at most [`import::MAX_TEXT`] bytes, parses, and
/// says `true` at `marker` (`/demo` for the demo key, `/readOnly` for the visitor key): the
/// marker is what keeps one kind of key document from being taken as the other, so both
/// readers open their document here, the same way.
fn marked_document(body: &[u8], marker: &str) -> Option<Value> {
    if body.len() > import::MAX_TEXT {
        return None;
    }
    let v = json::parse(body).ok()?;
    (v.pointer(marker) == Some(&Value::Bool(true))).then_some(v)
}

/// A demo key, read and matched to its Registry binding.
pub struct DemoKey {
    pub seed: SecretSeed,
    pub principal_id: String,
    pub key_id: String,
}

/// Reads `/api/demo/key`'s body. `identity` is the Registry's binding of a public key
/// (`import::identity_in` at the console's clock); a document that does not say it is a demo
/// key, or that names another principal or key than its seed's binding, is refused.
pub fn read(
    body: &[u8],
    identity: impl Fn(&[u8; 32]) -> Result<(String, String), ImportError>,
) -> Result<DemoKey, ImportError> {
    let v = marked_document(body, "/demo").ok_or(ImportError::Unrecognized)?;
    let s = |k: &str| v.pointer(k).and_then(Value::as_str);
    let seed = import::seed_of(s("/seed").ok_or(ImportError::Unrecognized)?)?;
    let (principal_id, key_id) = identity(&seed.public_key())?;
    if s("/principalId") != Some(principal_id.as_str()) || s("/keyId") != Some(key_id.as_str()) {
        return Err(ImportError::NotInRegistry);
    }
    Ok(DemoKey {
        seed,
        principal_id,
        key_id,
    })
}

/// The visitor key of the static demo (`GET /api/demo/visitor`: `{principalId, keyId, seed,
/// readOnly: true}`, docs/static-demo.md "Visitor view"): a key of the demo's human that the
/// Organization's Registry does not bind, so the console reads the demo with it before anyone
/// signs in and can sign nothing that verifies (§6.4: a Command's key must be bound). It is
/// never a signer of the console (`Console::signer` stays empty).
pub struct VisitorKey {
    pub seed: SecretSeed,
    pub principal_id: String,
    pub key_id: String,
}

/// Why a visitor key document was not taken (the header tells the person which,
/// `components::header::visitor_refused`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VisitorError {
    /// Not JSON, too long, no seed, or not said to be read-only.
    Unrecognized,
    /// The Registry binds this key (its public key or its key ID): a key that can sign is
    /// never taken as the read-only one.
    Bound,
    /// The document names no human of the Registry.
    NotAHuman,
}

/// Reads `/api/demo/visitor`'s body against the Organization's Registry: taken only if it says
/// `readOnly: true`, names a human the Registry binds a key to, and is a key the Registry does
/// NOT bind (neither its public key nor its key ID).
pub fn read_visitor(
    body: &[u8],
    registry: &wasm_core::crypto::registry::ValidatedRegistry,
) -> Result<VisitorKey, VisitorError> {
    use wasm_core::model::common::ActorType;
    let v = marked_document(body, "/readOnly").ok_or(VisitorError::Unrecognized)?;
    let s = |k: &str| v.pointer(k).and_then(Value::as_str);
    let (Some(principal_id), Some(key_id), Some(seed)) =
        (s("/principalId"), s("/keyId"), s("/seed"))
    else {
        return Err(VisitorError::Unrecognized);
    };
    let seed = import::seed_of(seed).map_err(|_| VisitorError::Unrecognized)?;
    let public = seed.public_key();
    if registry
        .bindings()
        .any(|b| b.key_id == key_id || b.public_key.as_bytes() == &public)
    {
        return Err(VisitorError::Bound);
    }
    if !registry
        .bindings()
        .any(|b| b.principal.id.0 == principal_id && b.principal.actor_type == ActorType::Human)
    {
        return Err(VisitorError::NotAHuman);
    }
    Ok(VisitorKey {
        seed,
        principal_id: principal_id.to_owned(),
        key_id: key_id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_core::encoding::b64url_encode;

    const ALICE: &str = "urn:missionweaveprotocol:human:alice";
    const KEY: &str = "urn:missionweaveprotocol:key:alice-1";

    fn body(seed: &[u8; 32], principal: &str, key: &str, demo: bool) -> Vec<u8> {
        format!(
            r#"{{"principalId":"{principal}","keyId":"{key}","seed":"{}","demo":{demo}}}"#,
            b64url_encode(seed)
        )
        .into_bytes()
    }

    /// The Registry of the test: only `bound`'s public key is alice's.
    fn registry(bound: [u8; 32]) -> impl Fn(&[u8; 32]) -> Result<(String, String), ImportError> {
        let public = SecretSeed::from_slice(&bound).map(|s| s.public_key());
        move |p: &[u8; 32]| match public {
            Some(q) if &q == p => Ok((ALICE.to_owned(), KEY.to_owned())),
            _ => Err(ImportError::NotInRegistry),
        }
    }

    #[test]
    fn a_demo_key_of_another_binding_or_not_marked_demo_is_refused() {
        let seed = [7u8; 32];
        // A seed the Registry does not bind.
        let other = body(&[9u8; 32], ALICE, KEY, true);
        assert!(matches!(
            read(&other, registry(seed)),
            Err(ImportError::NotInRegistry)
        ));
        // The right seed, but the document names another principal or key.
        let bob = body(&seed, "urn:missionweaveprotocol:human:bob", KEY, true);
        assert!(matches!(
            read(&bob, registry(seed)),
            Err(ImportError::NotInRegistry)
        ));
        let key2 = body(&seed, ALICE, "urn:missionweaveprotocol:key:alice-2", true);
        assert!(matches!(
            read(&key2, registry(seed)),
            Err(ImportError::NotInRegistry)
        ));
        // Not said to be a demo key; not JSON; oversized.
        let real = body(&seed, ALICE, KEY, false);
        assert!(matches!(
            read(&real, registry(seed)),
            Err(ImportError::Unrecognized)
        ));
        assert!(matches!(
            read(b"seed", registry(seed)),
            Err(ImportError::Unrecognized)
        ));
        let huge = vec![b' '; import::MAX_TEXT + 1];
        assert!(matches!(
            read(&huge, registry(seed)),
            Err(ImportError::Unrecognized)
        ));
    }

    #[test]
    fn the_demo_key_is_its_registry_binding() {
        let seed = [7u8; 32];
        let k = read(&body(&seed, ALICE, KEY, true), registry(seed)).expect("taken");
        assert_eq!((k.principal_id.as_str(), k.key_id.as_str()), (ALICE, KEY));
        assert_eq!(
            Some(k.seed.public_key()),
            SecretSeed::from_slice(&seed).map(|s| s.public_key())
        );
    }

    fn visitor_body(seed: &[u8; 32], principal: &str, key: &str, read_only: bool) -> Vec<u8> {
        format!(
            r#"{{"principalId":"{principal}","keyId":"{key}","seed":"{}","readOnly":{read_only}}}"#,
            b64url_encode(seed)
        )
        .into_bytes()
    }

    /// Alice's one bound key (seed `bound`) and an Agent's.
    fn validated(bound: [u8; 32]) -> wasm_core::crypto::registry::ValidatedRegistry {
        use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence};
        let binding = |key: &str, kind: &str, id: &str, seed: [u8; 32]| BindingRecord {
            key_id: key.into(),
            principal_type: kind.into(),
            principal_id: id.into(),
            algorithm: "Ed25519".into(),
            public_key: b64url_encode(&SecretSeed::take(&mut seed.clone()).public_key()),
            valid_from: "2020-01-01T00:00:00Z".into(),
            validity_history: vec![],
        };
        RegistryEvidence {
            organization_id: "urn:missionweaveprotocol:organization:test".into(),
            bindings: vec![
                binding(KEY, "human", ALICE, bound),
                binding(
                    "urn:missionweaveprotocol:key:bot",
                    "agent",
                    "urn:missionweaveprotocol:agent:bot",
                    [5u8; 32],
                ),
            ],
        }
        .validate()
        .expect("registry")
    }

    #[test]
    fn a_visitor_key_the_registry_binds_or_not_marked_read_only_is_refused() {
        let r = validated([7u8; 32]);
        const VISITOR: &str = "urn:missionweaveprotocol:key:alice-visitor";
        // Alice's real key offered as the read-only one: by its seed, or by its key ID.
        let real = visitor_body(&[7u8; 32], ALICE, VISITOR, true);
        assert_eq!(read_visitor(&real, &r).err(), Some(VisitorError::Bound));
        let same_id = visitor_body(&[8u8; 32], ALICE, KEY, true);
        assert_eq!(read_visitor(&same_id, &r).err(), Some(VisitorError::Bound));
        // Not said to be read-only (a demo key document, or `false`).
        let not_marked = visitor_body(&[8u8; 32], ALICE, VISITOR, false);
        assert_eq!(
            read_visitor(&not_marked, &r).err(),
            Some(VisitorError::Unrecognized)
        );
        let demo = body(&[8u8; 32], ALICE, VISITOR, true);
        assert_eq!(
            read_visitor(&demo, &r).err(),
            Some(VisitorError::Unrecognized)
        );
        // A principal the Registry does not know, or an Agent: not a human of it.
        for who in [
            "urn:missionweaveprotocol:human:mallory",
            "urn:missionweaveprotocol:agent:bot",
        ] {
            let b = visitor_body(&[8u8; 32], who, VISITOR, true);
            assert_eq!(read_visitor(&b, &r).err(), Some(VisitorError::NotAHuman));
        }
        // Not JSON; oversized.
        assert_eq!(
            read_visitor(b"{", &r).err(),
            Some(VisitorError::Unrecognized)
        );
        let huge = vec![b' '; import::MAX_TEXT + 1];
        assert_eq!(
            read_visitor(&huge, &r).err(),
            Some(VisitorError::Unrecognized)
        );
    }

    #[test]
    fn the_visitor_key_names_the_human_with_a_key_of_its_own() {
        let r = validated([7u8; 32]);
        let k = read_visitor(
            &visitor_body(
                &[8u8; 32],
                ALICE,
                "urn:missionweaveprotocol:key:alice-visitor",
                true,
            ),
            &r,
        )
        .expect("taken");
        assert_eq!(k.principal_id, ALICE);
        assert_eq!(k.key_id, "urn:missionweaveprotocol:key:alice-visitor");
        assert_ne!(
            Some(k.seed.public_key()),
            SecretSeed::from_slice(&[7u8; 32]).map(|s| s.public_key())
        );
    }
}
