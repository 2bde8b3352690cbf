//! Signed console reads: a console authenticates an HTTP `GET` of a member-only resource (the
//! Groups its human may read, an Artifact's bytes) by signing the method, the path and the time
//! with the human's Registry key. PROTOCOL.md's binding is the WebSocket (§17), which has no
//! "my Groups" frame and carries no Artifact bytes (§13.1, by reference); these reads are the
//! console's own, so their signature is kept apart from every signed document: Ed25519 over a
//! domain-separated line-oriented text (a signed document's signing input is a JCS object, which
//! starts with `{`, §6.1), never over JSON.
//!
//! The signer and the verifier share this module (the browser signs, the server verifies), so
//! the text signed is written once.

use super::ed25519::{self, Signer, StrictSignature};
use super::registry::ValidatedRegistry;
use crate::authority::Micros;
use crate::encoding::{b64url_decode, b64url_encode};
use crate::model::common::Actor;
use std::fmt;

/// The first line of every signed request: names the scheme and its version.
pub const DOMAIN: &str = "missionweave-console-request/1";
/// The header naming the Registry key that signed (`keyId`).
pub const KEY_HEADER: &str = "x-mwp-key-id";
/// The header with the signing time, RFC 3339 whole seconds in UTC (`…Z`).
pub const TIME_HEADER: &str = "x-mwp-signed-at";
/// The header with the Ed25519 signature, base64url without padding (64 bytes).
pub const SIGNATURE_HEADER: &str = "x-mwp-signature";
/// How far the signing time may be from the verifier's clock, either way: a captured request
/// replays for at most this long (reads only: a replay learns what the signer already saw).
pub const MAX_SKEW_SECONDS: u64 = 120;

/// The bytes signed for `method path` at `signed_at`.
pub fn signing_input(method: &str, path: &str, signed_at: &str) -> Vec<u8> {
    format!("{DOMAIN}\n{method}\n{path}\n{signed_at}\n").into_bytes()
}

/// The three header values for a signed `method path` at `now`: `(keyId, signedAt, signature)`.
pub fn sign(
    signer: &Signer,
    key_id: &str,
    method: &str,
    path: &str,
    now: Micros,
) -> (String, String, String) {
    let signed_at = now.format_whole_seconds();
    let signature = b64url_encode(&signer.sign(&signing_input(method, path, &signed_at)));
    (key_id.to_owned(), signed_at, signature)
}

/// Why a signed request is refused. Every variant answers the same on the wire (the verifier
/// says only that authentication failed); the variant is for the log and the tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestAuthError {
    /// A header is absent.
    Missing(&'static str),
    /// `signedAt` is not RFC 3339 whole seconds in UTC.
    BadTime,
    /// `signedAt` is further than [`MAX_SKEW_SECONDS`] from now.
    Stale,
    /// The key ID is not in the Registry.
    UnknownKey,
    /// The key is not valid now (before `validFrom`, at or after `validUntil` or `revokedAt`).
    KeyNotValid,
    /// The signature is not base64url of 64 bytes, not strict, or does not verify.
    BadSignature,
}

impl fmt::Display for RequestAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestAuthError::Missing(h) => write!(f, "the {h} header is missing"),
            RequestAuthError::BadTime => f.write_str("the signing time is not RFC 3339 UTC"),
            RequestAuthError::Stale => f.write_str("the signing time is too far from now"),
            RequestAuthError::UnknownKey => f.write_str("the key is not in the Registry"),
            RequestAuthError::KeyNotValid => f.write_str("the key is not valid now"),
            RequestAuthError::BadSignature => f.write_str("the signature does not verify"),
        }
    }
}

impl std::error::Error for RequestAuthError {}

/// The header values of a signed request, as received (`None` where absent).
#[derive(Clone, Copy, Debug, Default)]
pub struct SignedHeaders<'a> {
    pub key_id: Option<&'a str>,
    pub signed_at: Option<&'a str>,
    pub signature: Option<&'a str>,
}

/// Verifies a signed `method path` against `registry` at `now`; the signer's Principal on success.
pub fn verify(
    registry: &ValidatedRegistry,
    method: &str,
    path: &str,
    headers: SignedHeaders<'_>,
    now: Micros,
) -> Result<Actor, RequestAuthError> {
    let key_id = headers
        .key_id
        .ok_or(RequestAuthError::Missing(KEY_HEADER))?;
    let signed_at = headers
        .signed_at
        .ok_or(RequestAuthError::Missing(TIME_HEADER))?;
    let signature = headers
        .signature
        .ok_or(RequestAuthError::Missing(SIGNATURE_HEADER))?;
    let at = crate::time::Timestamp::parse_profile(signed_at)
        .ok()
        .filter(|t| t.is_utc_upper_z())
        .map(|t| Micros::from_timestamp(&t))
        .ok_or(RequestAuthError::BadTime)?;
    let skew = (at.0 - now.0).unsigned_abs();
    if skew > MAX_SKEW_SECONDS.saturating_mul(Micros::PER_SECOND.unsigned_abs()) {
        return Err(RequestAuthError::Stale);
    }
    let binding = registry
        .binding(key_id)
        .ok_or(RequestAuthError::UnknownKey)?;
    let now_ts = crate::time::Timestamp::parse_profile(&now.format_whole_seconds())
        .map_err(|_| RequestAuthError::BadTime)?;
    if !binding.valid_at(now_ts.instant()) {
        return Err(RequestAuthError::KeyNotValid);
    }
    let raw = b64url_decode(signature).map_err(|_| RequestAuthError::BadSignature)?;
    let sig = StrictSignature::from_bytes(&raw).map_err(|_| RequestAuthError::BadSignature)?;
    if !ed25519::verify(
        &binding.public_key,
        &sig,
        &signing_input(method, path, signed_at),
    ) {
        return Err(RequestAuthError::BadSignature);
    }
    Ok(binding.principal.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::fixture::{ALICE, ALICE_SEED, KEY, alice_registry, now, revoked_at, seed};

    fn check(
        r: &ValidatedRegistry,
        (k, t, s): &(String, String, String),
        path: &str,
        at: Micros,
    ) -> Result<Actor, RequestAuthError> {
        let h = SignedHeaders {
            key_id: Some(k),
            signed_at: Some(t),
            signature: Some(s),
        };
        verify(r, "GET", path, h, at)
    }

    #[test]
    fn a_signed_read_verifies_and_names_its_principal() {
        let r = alice_registry(vec![]);
        let signer = Signer::from_seed(&seed(ALICE_SEED));
        let h = sign(&signer, KEY, "GET", "/api/dev/groups/x", now());
        assert_eq!(
            check(&r, &h, "/api/dev/groups/x", now()).map(|a| a.id.0),
            Ok(ALICE.to_owned())
        );
        // Within the skew either way.
        assert!(
            check(
                &r,
                &h,
                "/api/dev/groups/x",
                now().plus_seconds(MAX_SKEW_SECONDS)
            )
            .is_ok()
        );
        assert!(
            check(
                &r,
                &h,
                "/api/dev/groups/x",
                now().minus_seconds(MAX_SKEW_SECONDS)
            )
            .is_ok()
        );
    }

    #[test]
    fn every_altered_part_is_refused() {
        let r = alice_registry(vec![]);
        let signer = Signer::from_seed(&seed(ALICE_SEED));
        let h = sign(&signer, KEY, "GET", "/a", now());
        // Another path, another method, a stale or future time.
        assert_eq!(
            check(&r, &h, "/b", now()),
            Err(RequestAuthError::BadSignature)
        );
        let hs = SignedHeaders {
            key_id: Some(&h.0),
            signed_at: Some(&h.1),
            signature: Some(&h.2),
        };
        assert_eq!(
            verify(&r, "POST", "/a", hs, now()),
            Err(RequestAuthError::BadSignature)
        );
        assert_eq!(
            check(&r, &h, "/a", now().plus_seconds(MAX_SKEW_SECONDS + 1)),
            Err(RequestAuthError::Stale)
        );
        assert_eq!(
            check(&r, &h, "/a", now().minus_seconds(MAX_SKEW_SECONDS + 1)),
            Err(RequestAuthError::Stale)
        );
        // A time signed as another time: the text signed is the header's.
        let moved = (h.0.clone(), "2026-12-06T05:00:01Z".to_owned(), h.2.clone());
        assert_eq!(
            check(&r, &moved, "/a", now()),
            Err(RequestAuthError::BadSignature)
        );
        // Not UTC `Z`, not a time.
        let offset = (
            h.0.clone(),
            "2026-12-06T06:00:00+01:00".to_owned(),
            h.2.clone(),
        );
        assert_eq!(
            check(&r, &offset, "/a", now()),
            Err(RequestAuthError::BadTime)
        );
        // Another key signing under this key ID; an unknown key ID.
        let other = sign(&Signer::from_seed(&seed(4)), KEY, "GET", "/a", now());
        assert_eq!(
            check(&r, &other, "/a", now()),
            Err(RequestAuthError::BadSignature)
        );
        let unknown = sign(
            &signer,
            "urn:missionweaveprotocol:key:nobody",
            "GET",
            "/a",
            now(),
        );
        assert_eq!(
            check(&r, &unknown, "/a", now()),
            Err(RequestAuthError::UnknownKey)
        );
        // Garbage signature; a missing header.
        let garbage = (h.0.clone(), h.1.clone(), "AAAA".to_owned());
        assert_eq!(
            check(&r, &garbage, "/a", now()),
            Err(RequestAuthError::BadSignature)
        );
        let missing = SignedHeaders {
            key_id: Some(&h.0),
            signed_at: None,
            signature: Some(&h.2),
        };
        assert_eq!(
            verify(&r, "GET", "/a", missing, now()),
            Err(RequestAuthError::Missing(TIME_HEADER))
        );
    }

    #[test]
    fn a_revoked_key_signs_nothing_after_its_revocation() {
        let r = alice_registry(vec![revoked_at(
            "2026-12-06T04:00:00Z",
            "2026-12-06T04:59:00Z",
        )]);
        let signer = Signer::from_seed(&seed(ALICE_SEED));
        let h = sign(&signer, KEY, "GET", "/a", now());
        assert_eq!(
            check(&r, &h, "/a", now()),
            Err(RequestAuthError::KeyNotValid)
        );
    }

    #[test]
    fn the_signed_text_is_domain_separated_from_documents() {
        let input = signing_input("GET", "/a", "2026-12-06T05:00:00Z");
        assert!(input.starts_with(DOMAIN.as_bytes()));
        assert_ne!(input.first(), Some(&b'{'));
    }
}
