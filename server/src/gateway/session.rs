//! The `HELLO` handshake (§6.3; payloads.md §10.1) and Session Epochs. The server challenges
//! with the base64url of a JCS transcript that it alone builds; the client signs exactly the
//! decoded bytes with the key the Registry binds to its principal. An Agent's success opens a
//! Session through the authority (`session_open`, signed by the Organization's gateway
//! service, payloads.md §6.34): the new Session Epoch fences every older session of that
//! Agent. Humans use the same challenge on `/ws?principal=human` and get no Session Epoch
//! that a Command may carry (binding.md, "Humans").

use super::hub::Principal;
use super::{Gateway, GatewayError, fill, frame_id, random};
use crate::runtime::{Reply, now};
use crate::wire::WireError;
use std::sync::Arc;
use wasm_core::authority::Micros;
use wasm_core::binding::hello::{self, HelloFailure};
use wasm_core::crypto::DocumentKind;
use wasm_core::encoding::b64url_encode;
use wasm_core::frame::{Frame, HelloClientInit, HelloClientResponse};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;

pub(super) use wasm_core::binding::hello::Challenge;

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

fn fail(m: &'static str) -> WireError {
    WireError::from(GatewayError::Handshake(m)).fatal()
}

/// Step 1 → 2: checks the key binding and builds the challenge frame (`hello::challenge`).
pub(super) fn challenge(
    gw: &Gateway,
    init: HelloClientInit,
    kind: ActorType,
) -> Result<(Challenge, String), Box<WireError>> {
    let at = now();
    let about = init.frame_id.as_str().to_owned();
    let expires =
        Micros(at.0 + i64::try_from(gw.config.challenge_ttl.as_micros()).unwrap_or(i64::MAX / 2));
    let registry = gw.registry.current();
    hello::challenge(&registry, init, kind, at, expires, &frame_id(), &mut fill).map_err(|f| {
        let e = fail(f.message());
        Box::new(match f {
            HelloFailure::UnknownKey => e.about_frame(Some(&about)),
            _ => e,
        })
    })
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
    let registry = gw.registry.current();
    hello::check_response(&registry, &c, r, now()).map_err(|f| match f {
        HelloFailure::UnknownKey => fail(f.message()),
        _ => fail(f.message()).about_frame(about),
    })?;
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
    let accept = hello::accept_frame(&frame_id(), &random(), session_epoch, expires);
    Ok(Established {
        key_id: c.init.key_id.as_str().to_owned(),
        principal: Principal {
            id: principal_id,
            kind,
            session_epoch,
        },
        expires,
        accept,
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
    let issued_at = t.format_whole_seconds();
    // The key valid at the signed time (`issuedAt`, whole seconds), §6.4.
    let key = wasm_core::authority::Micros::parse(&issued_at)
        .and_then(|at| gw.service.keys.at(at))
        .ok_or_else(|| {
            WireError::new(
                wasm_core::model::error::ErrorCode::InternalError,
                "no service key is valid now",
            )
        })?;
    o.insert("issuedAt", Value::string(issued_at));
    let mut payload = Object::new();
    payload.insert("agentId", Value::string(agent.to_owned()));
    o.insert("payload", Value::Object(payload));
    let mut doc = Value::Object(o);
    wasm_core::crypto::sign_document_with(
        &mut doc,
        DocumentKind::Command,
        &key.key_id,
        &key.signer,
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

/// The frame expected first: `HELLO/client_init`.
pub(super) fn as_client_init(f: Frame) -> Result<HelloClientInit, Box<WireError>> {
    match f {
        Frame::HelloClientInit(i) => Ok(i),
        other => Err(Box::new(
            WireError::from(GatewayError::NotAuthenticated)
                .fatal()
                .about_frame(Some(other.frame_id().as_str())),
        )),
    }
}
