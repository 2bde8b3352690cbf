//! An existing human key brought into the console (issue 26, "the console against any
//! authority"): a key made elsewhere (by an operator, another tool, the Python reference SDK) in
//! one of three forms, read into its 32-byte Ed25519 seed, then sealed at once with the usual
//! custody (PBKDF2 + AES-GCM under a passphrase, `custody::webcrypto`):
//!
//! - a raw seed: 32 bytes, base64url (padding tolerated);
//! - PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, RFC 8410: `id-Ed25519` 1.3.101.112, the seed as an
//!   OCTET STRING inside the privateKey OCTET STRING; a v2 document's public key must match);
//! - an OKP JWK (RFC 8037: `{"kty":"OKP","crv":"Ed25519","d":…,"x":…}`; `x`, when given, must
//!   be the seed's public key).
//!
//! The key's identity is not taken from the text: the Principal and the key ID are the Registry
//! binding of its public key ([`identity_in`]), so a key the Organization does not know is not
//! imported. The seed is never kept in clear outside memory.

use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::registry::ValidatedRegistry;
use wasm_core::encoding::b64url_decode;
use wasm_core::json::{self, Value};
use wasm_core::model::common::ActorType;

/// The DER before the seed in an Ed25519 PKCS#8 document (RFC 8410 §7): version, the
/// `id-Ed25519` AlgorithmIdentifier, then `OCTET STRING { OCTET STRING (32) }`. The outer
/// SEQUENCE header (its length differs between v1 and v2) comes before.
const PKCS8_AFTER_SEQUENCE_V1: [u8; 14] = [
    0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
const PKCS8_AFTER_SEQUENCE_V2: [u8; 14] = [
    0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// The longest text looked at (a PEM or JWK is a few hundred bytes).
pub const MAX_TEXT: usize = 4096;

/// Why a pasted key was not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportError {
    /// Not one of the three forms.
    Unrecognized,
    /// The form is right but the key is not an Ed25519 private key of 32 bytes.
    NotEd25519(&'static str),
    /// The document's public key is not the seed's.
    PublicKeyMismatch,
    /// The Registry has no binding for this key.
    NotInRegistry,
    /// The binding is not a human's (the console signs as a human).
    NotHuman(String),
    /// The binding is not valid now (revoked or ended).
    NotValid,
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportError::Unrecognized => f.write_str(
                "not a key this console reads: paste a 32-byte seed (base64url), a PKCS#8 PEM \
                 private key or an OKP Ed25519 JWK",
            ),
            ImportError::NotEd25519(why) => write!(f, "not an Ed25519 private key: {why}"),
            ImportError::PublicKeyMismatch => {
                f.write_str("the document's public key does not belong to its private key")
            }
            ImportError::NotInRegistry => {
                f.write_str("this key is not in the Organization's Registry")
            }
            ImportError::NotHuman(t) => write!(f, "this key belongs to a {t}, not a human"),
            ImportError::NotValid => f.write_str("this key is not valid now (revoked or ended)"),
        }
    }
}

/// Standard base64 (PEM bodies), through the core's base64url decoder.
fn b64_std(text: &str) -> Option<Vec<u8>> {
    let url: String = text
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '=')
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect();
    b64url_decode(&url).ok()
}

fn seed_from(bytes: &[u8]) -> Result<SecretSeed, ImportError> {
    SecretSeed::from_slice(bytes).ok_or(ImportError::NotEd25519("the seed is not 32 bytes"))
}

fn from_pem(text: &str) -> Result<SecretSeed, ImportError> {
    let body = text
        .split("-----BEGIN PRIVATE KEY-----")
        .nth(1)
        .and_then(|r| r.split("-----END PRIVATE KEY-----").next())
        .ok_or(ImportError::Unrecognized)?;
    let der = b64_std(body).ok_or(ImportError::NotEd25519("the PEM body is not base64"))?;
    // SEQUENCE with a one-byte length (a PKCS#8 Ed25519 document is under 128 bytes).
    let (0x30, Some(&len)) = (der.first().copied().unwrap_or(0), der.get(1)) else {
        return Err(ImportError::NotEd25519("not a DER SEQUENCE"));
    };
    if usize::from(len) + 2 != der.len() {
        return Err(ImportError::NotEd25519(
            "the DER length is not the document's",
        ));
    }
    let rest = &der[2..];
    let v2 = rest.starts_with(&PKCS8_AFTER_SEQUENCE_V2);
    if !rest.starts_with(&PKCS8_AFTER_SEQUENCE_V1) && !v2 {
        return Err(ImportError::NotEd25519("not an id-Ed25519 PKCS#8 document"));
    }
    let seed = rest
        .get(14..46)
        .ok_or(ImportError::NotEd25519("the seed is cut short"))?;
    let seed = seed_from(seed)?;
    let tail = &rest[46..];
    if !v2 && !tail.is_empty() {
        return Err(ImportError::NotEd25519("bytes after a v1 document's seed"));
    }
    if v2 {
        // [1] publicKey BIT STRING: 0x81 0x21 0x00 <32> (implicit), after optional attributes.
        let public = tail
            .windows(3)
            .position(|w| w == [0x81, 0x21, 0x00])
            .and_then(|i| tail.get(i + 3..i + 35));
        if let Some(p) = public
            && p != seed.public_key()
        {
            return Err(ImportError::PublicKeyMismatch);
        }
    }
    Ok(seed)
}

fn from_jwk(v: &Value) -> Result<SecretSeed, ImportError> {
    let s = |n: &str| v.pointer(n).and_then(Value::as_str);
    if s("/kty") != Some("OKP") || s("/crv") != Some("Ed25519") {
        return Err(ImportError::NotEd25519(
            "the JWK is not kty OKP, crv Ed25519",
        ));
    }
    let d = s("/d").ok_or(ImportError::NotEd25519("the JWK has no private part d"))?;
    let seed =
        seed_from(&b64url_decode(d).map_err(|_| ImportError::NotEd25519("d is not base64url"))?)?;
    if let Some(x) = s("/x") {
        let x = b64url_decode(x).map_err(|_| ImportError::NotEd25519("x is not base64url"))?;
        if x != seed.public_key() {
            return Err(ImportError::PublicKeyMismatch);
        }
    }
    Ok(seed)
}

/// The seed of a pasted key, whichever of the three forms it is in.
pub fn seed_of(text: &str) -> Result<SecretSeed, ImportError> {
    let text = text.trim();
    if text.is_empty() || text.len() > MAX_TEXT {
        return Err(ImportError::Unrecognized);
    }
    if text.contains("-----BEGIN") {
        return from_pem(text);
    }
    if text.starts_with('{') {
        let v = json::parse(text.as_bytes()).map_err(|_| ImportError::Unrecognized)?;
        return from_jwk(&v);
    }
    let raw = b64url_decode(text.trim_end_matches('=')).map_err(|_| ImportError::Unrecognized)?;
    seed_from(&raw)
}

/// The `(principalId, keyId)` the Registry binds `public_key` to, if it is a human's key valid
/// at `now` (whole seconds, RFC 3339).
pub fn identity_in(
    registry: &ValidatedRegistry,
    public_key: &[u8; 32],
    now: &str,
) -> Result<(String, String), ImportError> {
    let b = registry
        .bindings()
        .find(|b| b.public_key.as_bytes() == public_key)
        .ok_or(ImportError::NotInRegistry)?;
    if b.principal.actor_type != ActorType::Human {
        return Err(ImportError::NotHuman(
            b.principal.actor_type.as_str().to_owned(),
        ));
    }
    let t = wasm_core::time::Timestamp::parse_profile(now).map_err(|_| ImportError::NotValid)?;
    if !b.valid_at(t.instant()) {
        return Err(ImportError::NotValid);
    }
    Ok((b.principal.id.0.clone(), b.key_id.clone()))
}
