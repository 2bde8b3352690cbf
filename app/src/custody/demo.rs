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
    if body.len() > import::MAX_TEXT {
        return Err(ImportError::Unrecognized);
    }
    let v = json::parse(body).map_err(|_| ImportError::Unrecognized)?;
    let s = |k: &str| v.pointer(k).and_then(Value::as_str);
    if v.pointer("/demo") != Some(&Value::Bool(true)) {
        return Err(ImportError::Unrecognized);
    }
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
}
