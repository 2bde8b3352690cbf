//! The `HELLO` handshake (§6.3; payloads.md §10.1) and Session Epochs. The server challenges
//! with the base64url of a JCS transcript that it alone builds; the client signs exactly the
//! decoded bytes with the key the Registry binds to its principal. An Agent's success opens a
//! Session through the authority (`session_open`, signed by the Organization's gateway
//! service, payloads.md §6.34): the new Session Epoch fences every older session of that
//! Agent. Humans use the same challenge on `/ws?principal=human` and get no Session Epoch
//! that a Command may carry (binding.md, "Humans").

use super::hub::Principal;
use super::{Gateway, GatewayError, frame_id, random};
use crate::runtime::{Reply, now};
use crate::wire::WireError;
use std::sync::Arc;
use wasm_core::authority::Micros;
use wasm_core::crypto::DocumentKind;
use wasm_core::crypto::ed25519::{self, StrictSignature};
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::frame::{Frame, HelloClientInit, HelloClientResponse};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::time::Timestamp;

/// A challenge sent and not yet answered.
pub(super) struct Challenge {
    pub init: HelloClientInit,
    pub server_nonce: String,
    pub transcript: Vec<u8>,
    pub expires: Micros,
}

/// An established session.
pub(super) struct Established {
    pub principal: Principal,
    /// The Registry key that answered the challenge: the session holds while it stays valid.
    pub key_id: String,
    pub expires: Micros,
    /// The `server_accept` frame to send.
    pub accept: String,
    /// Its place under `sessions_per_principal`, held until the connection is registered.
    pub place: Option<super::SessionPlace>,
}

fn timestamp(t: Micros) -> Option<Timestamp> {
    Timestamp::parse_profile(&t.format()).ok()
}

fn fail(m: &'static str) -> WireError {
    GatewayError::Handshake(m).wire().fatal()
}

/// Step 1 → 2: checks the key binding and builds the challenge frame.
pub(super) fn challenge(
    gw: &Gateway,
    init: HelloClientInit,
    kind: ActorType,
) -> Result<(Challenge, String), Box<WireError>> {
    let at = now();
    let registry = gw.registry.current();
    let binding = registry
        .binding(init.key_id.as_str())
        .filter(|b| b.principal.id == init.agent_id && b.principal.actor_type == kind)
        .filter(|b| timestamp(at).is_some_and(|t| b.valid_at(t.instant())));
    if binding.is_none() {
        return Err(Box::new(
            fail("unknown key ID for this principal").about_frame(Some(init.frame_id.as_str())),
        ));
    }
    let server_nonce = b64url_encode(&random::<32>());
    let expires =
        Micros(at.0 + i64::try_from(gw.config.challenge_ttl.as_micros()).unwrap_or(i64::MAX / 2));
    let mut t = Object::new();
    t.insert("agentId", Value::string(init.agent_id.as_str().to_owned()));
    t.insert("challengeId", Value::string(b64url_encode(&random::<18>())));
    t.insert(
        "clientNonce",
        Value::string(init.client_nonce.as_str().to_owned()),
    );
    t.insert("expiresAt", Value::string(expires.format()));
    t.insert("keyId", Value::string(init.key_id.as_str().to_owned()));
    t.insert("principalType", Value::string(kind.as_str().to_owned()));
    t.insert("protocolVersion", Value::string("0.1"));
    t.insert("serverNonce", Value::string(server_nonce.clone()));
    let transcript = json::jcs::canonicalize(&Value::Object(t))
        .map_err(|_| Box::new(fail("the challenge could not be built")))?;
    let mut f = Object::new();
    f.insert("protocolVersion", Value::string("0.1"));
    f.insert("frameId", Value::string(frame_id()));
    f.insert("frameType", Value::string("HELLO"));
    f.insert("phase", Value::string("server_challenge"));
    f.insert("selectedVersion", Value::string("0.1"));
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

/// Step 3 → 4: checks the response against the challenge (once, before it expires), then
/// opens the session.
pub(super) async fn accept(
    gw: &Arc<Gateway>,
    c: Challenge,
    r: &HelloClientResponse,
    kind: ActorType,
) -> Result<Established, WireError> {
    let about = Some(r.frame_id.as_str());
    if r.agent_id != c.init.agent_id
        || r.key_id != c.init.key_id
        || r.client_nonce != c.init.client_nonce
        || r.server_nonce.as_str() != c.server_nonce
    {
        return Err(fail("HELLO challenge transcript does not match").about_frame(about));
    }
    if now() > c.expires {
        return Err(fail("challenge expired").about_frame(about));
    }
    let registry = gw.registry.current();
    let binding = registry
        .binding(c.init.key_id.as_str())
        .ok_or_else(|| fail("unknown key ID for this principal"))?;
    let valid = b64url_decode(r.challenge_signature.as_str())
        .ok()
        .and_then(|b| StrictSignature::from_bytes(&b).ok())
        .is_some_and(|sig| ed25519::verify(&binding.public_key, &sig, &c.transcript));
    if !valid {
        return Err(fail("invalid challenge signature").about_frame(about));
    }
    let principal_id = c.init.agent_id.as_str().to_owned();
    // Checked before an Agent's Session is opened: a refused HELLO fences nothing.
    let place = gw.session_place(&principal_id).ok_or_else(|| {
        let max = gw.config.sessions_per_principal;
        WireError::new(
            wasm_core::model::error::ErrorCode::Backpressure,
            format!(
                "this principal holds {max} open sessions, the most allowed; close one and \
                 HELLO again"
            ),
        )
        .retry_after(gw.config.retry_after_ms)
        .fatal()
        .about_frame(about)
    })?;
    let session_epoch = match kind {
        ActorType::Agent => Some(
            open_session(gw, &principal_id)
                .await
                .map_err(|e| e.fatal().about_frame(about))?,
        ),
        _ => None,
    };
    let at = now();
    let expires = Micros(at.0 + i64::try_from(gw.config.session_ttl.as_micros()).unwrap_or(0));
    let mut f = Object::new();
    f.insert("protocolVersion", Value::string("0.1"));
    f.insert("frameId", Value::string(frame_id()));
    f.insert("frameType", Value::string("HELLO"));
    f.insert("phase", Value::string("server_accept"));
    f.insert("selectedVersion", Value::string("0.1"));
    // Opaque: the grant stays on the connection and the client never sends it back.
    f.insert(
        "sessionToken",
        Value::string(b64url_encode(&random::<32>())),
    );
    // Humans: 1, a placeholder the schema requires; never a Command's Session Epoch.
    f.insert("sessionEpoch", Value::from(session_epoch.unwrap_or(1)));
    f.insert("expiresAt", Value::string(expires.format()));
    Ok(Established {
        key_id: c.init.key_id.as_str().to_owned(),
        principal: Principal {
            id: principal_id,
            kind,
            session_epoch,
        },
        expires,
        accept: json::to_string(&Value::Object(f)),
        place: Some(place),
    })
}

/// Submits `session_open` for `agent`, signed by the gateway service, and returns the new
/// Session Epoch from its `session_opened` Event.
async fn open_session(gw: &Gateway, agent: &str) -> Result<u64, WireError> {
    let t = now();
    let action = b64url_encode(&random::<16>());
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert(
        "actionId",
        Value::string(format!(
            "urn:missionweaveprotocol:action:session-open:{action}"
        )),
    );
    o.insert(
        "actor",
        wasm_core::model::ToJson::to_json(&gw.service.actor),
    );
    o.insert(
        "kind",
        Value::string("ext.missionweaveprotocol.identity.session_open"),
    );
    o.insert(
        "correlationId",
        Value::string(format!(
            "urn:missionweaveprotocol:correlation:session-open:{action}"
        )),
    );
    o.insert("issuedAt", Value::string(t.format_whole_seconds()));
    let mut payload = Object::new();
    payload.insert("agentId", Value::string(agent.to_owned()));
    o.insert("payload", Value::Object(payload));
    let mut doc = Value::Object(o);
    wasm_core::crypto::sign_document_with(
        &mut doc,
        DocumentKind::Command,
        &gw.service.key_id,
        &gw.service.signer,
    )
    .map_err(|_| {
        WireError::new(
            wasm_core::model::error::ErrorCode::InternalError,
            "cannot sign",
        )
    })?;
    match gw
        .authority
        .submit(json::to_string(&doc).into_bytes())
        .await
    {
        Reply::Refused(e) => Err(e),
        Reply::Done(body) => json::parse_str(&body)
            .ok()
            .and_then(|v| {
                let Some(Value::Array(events)) = v.pointer("/events") else {
                    return None;
                };
                events.iter().find_map(|e| {
                    (e.pointer("/kind").and_then(Value::as_str) == Some(super::hub::SESSION_OPENED))
                        .then(|| match e.pointer("/payload/sessionEpoch") {
                            Some(Value::Number(n)) => n.as_safe_u64(),
                            _ => None,
                        })
                        .flatten()
                })
            })
            .ok_or_else(|| {
                WireError::new(
                    wasm_core::model::error::ErrorCode::InternalError,
                    "the authority opened no session",
                )
            }),
    }
}

/// A `client_init` that names no version this server speaks (only `0.1`): the schema's
/// `supportedVersions` items are `const "0.1"`, so this is looked at before the schema.
pub(super) fn offers_no_common_version(v: &Value) -> bool {
    let hello = v.pointer("/frameType").and_then(Value::as_str) == Some("HELLO")
        && v.pointer("/phase").and_then(Value::as_str) == Some("client_init");
    match v.pointer("/supportedVersions") {
        Some(Value::Array(items)) if hello && !items.is_empty() => {
            !items.iter().any(|i| i.as_str() == Some("0.1"))
        }
        _ => false,
    }
}

/// The frame expected first: `HELLO/client_init`.
pub(super) fn as_client_init(f: Frame) -> Result<HelloClientInit, Box<WireError>> {
    match f {
        Frame::HelloClientInit(i) => Ok(i),
        other => Err(Box::new(
            GatewayError::NotAuthenticated
                .wire()
                .fatal()
                .about_frame(Some(other.frame_id().as_str())),
        )),
    }
}
