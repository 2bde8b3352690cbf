//! The `HELLO` handshake (§6.3; payloads.md §10.1): the challenge transcript the server alone
//! builds, and the check of the client's answer. The client signs exactly the transcript's
//! JCS bytes with the key the Registry binds to its principal; a host passes the random
//! bytes, the clock and the frame identifiers in (nothing here draws or reads them).

use crate::authority::Micros;
use crate::crypto::ed25519::{self, StrictSignature};
use crate::crypto::registry::ValidatedRegistry;
use crate::encoding::{b64url_decode, b64url_encode};
use crate::frame::{HelloClientInit, HelloClientResponse};
use crate::json::{self, Object, Value};
use crate::model::common::ActorType;
use crate::model::error::ErrorCode;
use crate::time::Timestamp;

/// The one version this binding speaks.
pub const PROTOCOL_VERSION: &str = "0.1";

/// Bytes of the server's nonce (base64url in the transcript and the challenge frame).
pub const SERVER_NONCE_BYTES: usize = 32;
/// Bytes of the challenge's identifier.
pub const CHALLENGE_ID_BYTES: usize = 18;
/// Bytes of the opaque `sessionToken` of `server_accept`.
pub const SESSION_TOKEN_BYTES: usize = 32;

/// A challenge sent and not yet answered.
#[derive(Clone, Debug)]
pub struct Challenge {
    pub init: HelloClientInit,
    pub server_nonce: String,
    /// The JCS bytes the client must sign.
    pub transcript: Vec<u8>,
    pub expires: Micros,
}

/// Why a `HELLO` step failed: each is a fatal `AUTH_INVALID_SIGNATURE` (binding.md, "Errors
/// and what closes the connection"), with the same message from every host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelloFailure {
    /// The key is not bound to this principal (of this kind), or not valid now.
    UnknownKey,
    /// The response does not repeat the challenge's principal, key and nonces.
    TranscriptMismatch,
    /// The response came after the challenge's `expiresAt`.
    Expired,
    /// The signature is not a strict Ed25519 signature of the transcript by the bound key.
    InvalidSignature,
    /// The frame after `client_init` is another `HELLO` phase or frame.
    NotAResponse,
    /// The transcript could not be canonicalized (strings only: not expected).
    Unbuildable,
}

impl HelloFailure {
    pub const CODE: ErrorCode = ErrorCode::AuthInvalidSignature;

    pub fn message(self) -> &'static str {
        match self {
            HelloFailure::UnknownKey => "unknown key ID for this principal",
            HelloFailure::TranscriptMismatch => "HELLO challenge transcript does not match",
            HelloFailure::Expired => "challenge expired",
            HelloFailure::InvalidSignature => "invalid challenge signature",
            HelloFailure::NotAResponse => "HELLO/client_init must be followed by client_response",
            HelloFailure::Unbuildable => "the challenge could not be built",
        }
    }
}

/// Whether the Registry binds `init`'s key to its principal, of `kind`, valid at `now` (S-5).
pub fn key_bound(
    registry: &ValidatedRegistry,
    init: &HelloClientInit,
    kind: ActorType,
    now: Micros,
) -> bool {
    let at = Timestamp::parse_profile(&now.format()).ok();
    registry
        .binding(init.key_id.as_str())
        .filter(|b| b.principal.id == init.agent_id && b.principal.actor_type == kind)
        .is_some_and(|b| at.is_some_and(|t| b.valid_at(t.instant())))
}

/// Step 1 → 2: checks the key binding, then builds the transcript and the `server_challenge`
/// frame. `random` fills the server nonce and the challenge identifier; it is called only
/// once the key is known to be bound.
pub fn challenge(
    registry: &ValidatedRegistry,
    init: HelloClientInit,
    kind: ActorType,
    now: Micros,
    expires: Micros,
    frame_id: &str,
    random: &mut dyn FnMut(&mut [u8]),
) -> Result<(Challenge, String), HelloFailure> {
    if !key_bound(registry, &init, kind, now) {
        return Err(HelloFailure::UnknownKey);
    }
    let mut nonce = [0u8; SERVER_NONCE_BYTES];
    random(&mut nonce);
    let mut challenge_id = [0u8; CHALLENGE_ID_BYTES];
    random(&mut challenge_id);
    let server_nonce = b64url_encode(&nonce);
    let transcript = transcript(
        &init,
        kind,
        &b64url_encode(&challenge_id),
        &server_nonce,
        expires,
    )?;
    let mut f = head(frame_id);
    f.insert("phase", Value::string("server_challenge"));
    f.insert("selectedVersion", Value::string(PROTOCOL_VERSION));
    f.insert(
        "clientNonce",
        Value::string(init.client_nonce.as_str().to_owned()),
    );
    f.insert("serverNonce", Value::string(server_nonce.clone()));
    f.insert("challenge", Value::string(b64url_encode(&transcript)));
    let frame = json::to_string(&Value::Object(f));
    Ok((
        Challenge {
            init,
            server_nonce,
            transcript,
            expires,
        },
        frame,
    ))
}

/// The challenge transcript's JCS bytes (binding.md "HELLO": the transcript is the server's,
/// its members fixed here).
pub fn transcript(
    init: &HelloClientInit,
    kind: ActorType,
    challenge_id: &str,
    server_nonce: &str,
    expires: Micros,
) -> Result<Vec<u8>, HelloFailure> {
    let mut t = Object::new();
    t.insert("agentId", Value::string(init.agent_id.as_str().to_owned()));
    t.insert("challengeId", Value::string(challenge_id.to_owned()));
    t.insert(
        "clientNonce",
        Value::string(init.client_nonce.as_str().to_owned()),
    );
    t.insert("expiresAt", Value::string(expires.format()));
    t.insert("keyId", Value::string(init.key_id.as_str().to_owned()));
    t.insert("principalType", Value::string(kind.as_str().to_owned()));
    t.insert("protocolVersion", Value::string(PROTOCOL_VERSION));
    t.insert("serverNonce", Value::string(server_nonce.to_owned()));
    json::jcs::canonicalize(&Value::Object(t)).map_err(|_| HelloFailure::Unbuildable)
}

/// Step 3: the response repeats the challenge, comes once before it expires, and carries a
/// strict Ed25519 signature over exactly the transcript's bytes by the key bound now.
pub fn check_response(
    registry: &ValidatedRegistry,
    c: &Challenge,
    r: &HelloClientResponse,
    now: Micros,
) -> Result<(), HelloFailure> {
    if r.agent_id != c.init.agent_id
        || r.key_id != c.init.key_id
        || r.client_nonce != c.init.client_nonce
        || r.server_nonce.as_str() != c.server_nonce
    {
        return Err(HelloFailure::TranscriptMismatch);
    }
    if now > c.expires {
        return Err(HelloFailure::Expired);
    }
    // The Registry may have changed since the challenge (a key revoked meanwhile): the key
    // must still be the principal's and valid now, not only when it was challenged.
    let at = Timestamp::parse_profile(&now.format()).ok();
    let binding = registry
        .binding(c.init.key_id.as_str())
        .filter(|b| b.principal.id == c.init.agent_id)
        .filter(|b| at.is_some_and(|t| b.valid_at(t.instant())))
        .ok_or(HelloFailure::UnknownKey)?;
    let valid = b64url_decode(r.challenge_signature.as_str())
        .ok()
        .and_then(|b| StrictSignature::from_bytes(&b).ok())
        .is_some_and(|sig| ed25519::verify(&binding.public_key, &sig, &c.transcript));
    if valid {
        Ok(())
    } else {
        Err(HelloFailure::InvalidSignature)
    }
}

/// Step 4: the `server_accept` frame. `session_epoch`: an Agent's new Session Epoch; humans
/// get 1, a placeholder the schema requires and never a Command's Session Epoch (binding.md,
/// "Humans"). The token is opaque: the grant stays on the connection.
pub fn accept_frame(
    frame_id: &str,
    session_token: &[u8; SESSION_TOKEN_BYTES],
    session_epoch: Option<u64>,
    expires: Micros,
) -> String {
    let mut f = head(frame_id);
    f.insert("phase", Value::string("server_accept"));
    f.insert("selectedVersion", Value::string(PROTOCOL_VERSION));
    f.insert("sessionToken", Value::string(b64url_encode(session_token)));
    f.insert("sessionEpoch", Value::from(session_epoch.unwrap_or(1)));
    f.insert("expiresAt", Value::string(expires.format()));
    json::to_string(&Value::Object(f))
}

/// A `client_init` that names no version this binding speaks: the schema's
/// `supportedVersions` items are `const "0.1"`, so this is looked at before the schema.
pub fn offers_no_common_version(v: &Value) -> bool {
    let hello = v.pointer("/frameType").and_then(Value::as_str) == Some("HELLO")
        && v.pointer("/phase").and_then(Value::as_str) == Some("client_init");
    match v.pointer("/supportedVersions") {
        Some(Value::Array(items)) if hello && !items.is_empty() => {
            !items.iter().any(|i| i.as_str() == Some(PROTOCOL_VERSION))
        }
        _ => false,
    }
}

fn head(frame_id: &str) -> Object {
    let mut f = Object::new();
    f.insert("protocolVersion", Value::string(PROTOCOL_VERSION));
    f.insert("frameId", Value::string(frame_id.to_owned()));
    f.insert("frameType", Value::string("HELLO"));
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::SecretSeed;
    use crate::crypto::fixture::{self, ALICE, ALICE_SEED, KEY, alice_registry, now, revoked_at};
    use crate::frame::{self, Frame};

    fn seed() -> SecretSeed {
        fixture::seed(ALICE_SEED)
    }

    fn registry() -> ValidatedRegistry {
        alice_registry(Vec::new())
    }

    fn init(key: &str) -> HelloClientInit {
        let text = format!(
            r#"{{"protocolVersion":"0.1","frameId":"urn:f:1","frameType":"HELLO","phase":"client_init","agentId":"{ALICE}","keyId":"{key}","clientNonce":"AAAA","supportedVersions":["0.1"]}}"#
        );
        match frame::decode(text.as_bytes()) {
            Ok(Frame::HelloClientInit(i)) => i,
            other => panic!("{other:?}"),
        }
    }

    fn response(c: &Challenge, server_nonce: &str, signature: &[u8]) -> HelloClientResponse {
        let text = format!(
            r#"{{"protocolVersion":"0.1","frameId":"urn:f:2","frameType":"HELLO","phase":"client_response","agentId":"{ALICE}","keyId":"{}","clientNonce":"AAAA","serverNonce":"{server_nonce}","challengeSignature":"{}"}}"#,
            c.init.key_id.as_str(),
            b64url_encode(signature)
        );
        match frame::decode(text.as_bytes()) {
            Ok(Frame::HelloClientResponse(r)) => r,
            other => panic!("{other:?}"),
        }
    }

    fn counter() -> impl FnMut(&mut [u8]) {
        let mut n = 0u8;
        move |b: &mut [u8]| {
            for x in b {
                n = n.wrapping_add(1);
                *x = n;
            }
        }
    }

    /// Alice's bound key challenged now, the challenge lasting until `expires`.
    fn challenged(reg: &ValidatedRegistry, expires: Micros) -> (Challenge, String) {
        challenge(
            reg,
            init(KEY),
            ActorType::Human,
            now(),
            expires,
            "urn:f:c",
            &mut counter(),
        )
        .expect("a bound key is challenged")
    }

    #[test]
    fn the_signed_transcript_is_accepted_once_and_nothing_else_is() {
        let reg = registry();
        let expires = now().plus_seconds(30);
        let (c, frame) = challenged(&reg, expires);
        // The frame is a schema-valid server_challenge carrying the transcript's bytes.
        let Ok(Frame::HelloServerChallenge(f)) = frame::decode(frame.as_bytes()) else {
            panic!("{frame}");
        };
        assert_eq!(
            b64url_decode(f.challenge.as_str()).ok().as_deref(),
            Some(c.transcript.as_slice())
        );
        let t = json::parse(&c.transcript).expect("json");
        assert_eq!(
            t.pointer("/principalType").and_then(Value::as_str),
            Some("human")
        );
        assert_eq!(
            t.pointer("/expiresAt").and_then(Value::as_str),
            Some("2026-12-06T05:00:30Z")
        );
        let sig = ed25519::sign(&seed(), &c.transcript);
        let ok = response(&c, &c.server_nonce, &sig);
        assert_eq!(check_response(&reg, &c, &ok, now()), Ok(()));
        // After expiry, with another nonce, or a signature of other bytes: refused.
        assert_eq!(
            check_response(&reg, &c, &ok, expires.plus_seconds(1)),
            Err(HelloFailure::Expired)
        );
        let other_nonce = response(&c, "BBBB", &sig);
        assert_eq!(
            check_response(&reg, &c, &other_nonce, now()),
            Err(HelloFailure::TranscriptMismatch)
        );
        let wrong = response(&c, &c.server_nonce, &ed25519::sign(&seed(), b"other"));
        assert_eq!(
            check_response(&reg, &c, &wrong, now()),
            Err(HelloFailure::InvalidSignature)
        );
    }

    #[test]
    fn a_key_revoked_between_challenge_and_response_opens_no_session() {
        let expires = now().plus_seconds(30);
        let (c, _) = challenged(&registry(), expires);
        let ok = response(&c, &c.server_nonce, &ed25519::sign(&seed(), &c.transcript));
        // The Registry as it is a second later: the key revoked at the challenge's instant.
        let revoked = alice_registry(vec![revoked_at(
            "2026-12-06T05:00:00Z",
            "2026-12-06T05:00:00Z",
        )]);
        assert_eq!(
            check_response(&revoked, &c, &ok, now().plus_seconds(1)),
            Err(HelloFailure::UnknownKey)
        );
        // The same answer against the Registry of the challenge is accepted.
        assert_eq!(check_response(&registry(), &c, &ok, now()), Ok(()));
    }

    #[test]
    fn an_unbound_key_or_the_wrong_kind_gets_no_challenge() {
        let reg = registry();
        let mut drawn = false;
        let mut random = |_: &mut [u8]| drawn = true;
        let at = now().plus_seconds(30);
        let unknown = init("urn:missionweaveprotocol:key:nobody");
        let r = challenge(
            &reg,
            unknown,
            ActorType::Human,
            now(),
            at,
            "urn:f:c",
            &mut random,
        );
        assert_eq!(r.err(), Some(HelloFailure::UnknownKey));
        let r = challenge(
            &reg,
            init(KEY),
            ActorType::Agent,
            now(),
            at,
            "urn:f:c",
            &mut random,
        );
        assert_eq!(r.err(), Some(HelloFailure::UnknownKey));
        let before = Micros::parse("2025-12-06T05:00:00Z").expect("time");
        let r = challenge(
            &reg,
            init(KEY),
            ActorType::Human,
            before,
            at,
            "urn:f:c",
            &mut random,
        );
        assert_eq!(r.err(), Some(HelloFailure::UnknownKey));
        assert!(!drawn, "no randomness is spent on a refused HELLO");
    }

    #[test]
    fn versions_and_the_accept_frame() {
        let v = |s: &str| json::parse(s.as_bytes()).expect("json");
        assert!(offers_no_common_version(&v(
            r#"{"frameType":"HELLO","phase":"client_init","supportedVersions":["0.2"]}"#
        )));
        assert!(!offers_no_common_version(&v(
            r#"{"frameType":"HELLO","phase":"client_init","supportedVersions":["0.2","0.1"]}"#
        )));
        assert!(!offers_no_common_version(&v(
            r#"{"frameType":"PING","supportedVersions":["0.2"]}"#
        )));
        let f = accept_frame("urn:f:a", &[7; SESSION_TOKEN_BYTES], None, now());
        let Ok(Frame::HelloServerAccept(a)) = frame::decode(f.as_bytes()) else {
            panic!("{f}");
        };
        assert_eq!(a.session_epoch.0, 1);
    }
}
