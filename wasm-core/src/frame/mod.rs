//! The WebSocket frame codec (§17, `websocket-frame.schema.json`, checklist R-6 and §11
//! "Frame catalogue").
//!
//! Each WebSocket text message is exactly one UTF-8 JSON frame (§17.1). [`decode`] runs the
//! strict parser first (invalid JSON, a BOM, duplicate member names or trailing data are
//! `PROTOCOL_VIOLATION`, §17.4) and then the frame schema (`SCHEMA_VALIDATION_FAILED`). The
//! schema's `oneOf` has ten closed branches told apart by the `frameType` constant (and, for
//! `HELLO`, the `phase` constant), so at most one branch can match: the decoder selects that
//! branch and reports its error, not a generic "no branch matched".
//!
//! `COMMAND` and `EVENT` frames embed a full Signed Document. Only the document is signed, not
//! the frame; [`Signed`] keeps it exactly as received for §6.4 verification.

use crate::json::Value;
use crate::model::command::Command;
use crate::model::common::ProtocolVersion;
use crate::model::error::{ErrorCode, ProtocolError};
use crate::model::event::Event;
use crate::model::presence_record::PresenceRecord;
use crate::model::{
    Base64Url, Cx, FromJson, Id, Kind, NonEmpty, NonEmptyUnique, PosInt, SafeInt, SchemaError, Str,
    ToJson, Unique,
};
use crate::time::Timestamp;
use crate::{const_str, object, string_enum};
use std::fmt;

string_enum!(
    /// `frameType`: the seven core frame types (§17.1). Partial Message streaming frames are
    /// not defined.
    pub enum FrameType {
        Hello = "HELLO",
        Subscribe = "SUBSCRIBE",
        Command = "COMMAND",
        Event = "EVENT",
        Ack = "ACK",
        Ping = "PING",
        Error = "ERROR",
    }
);

string_enum!(
    /// `phase` of a `HELLO` frame: the four steps of the handshake (§6.3, I-10).
    pub enum HelloPhase {
        ClientInit = "client_init",
        ServerChallenge = "server_challenge",
        ClientResponse = "client_response",
        ServerAccept = "server_accept",
    }
);

const_str!(
    /// `frameType: "HELLO"`.
    HelloType = "HELLO"
);
const_str!(
    /// `frameType: "SUBSCRIBE"`.
    SubscribeType = "SUBSCRIBE"
);
const_str!(
    /// `frameType: "COMMAND"`.
    CommandType = "COMMAND"
);
const_str!(
    /// `frameType: "EVENT"`.
    EventType = "EVENT"
);
const_str!(
    /// `frameType: "ACK"`.
    AckType = "ACK"
);
const_str!(
    /// `frameType: "PING"`.
    PingType = "PING"
);
const_str!(
    /// `frameType: "ERROR"`.
    ErrorType = "ERROR"
);
const_str!(
    /// `phase: "client_init"`.
    ClientInitPhase = "client_init"
);
const_str!(
    /// `phase: "server_challenge"`.
    ServerChallengePhase = "server_challenge"
);
const_str!(
    /// `phase: "client_response"`.
    ClientResponsePhase = "client_response"
);
const_str!(
    /// `phase: "server_accept"`.
    ServerAcceptPhase = "server_accept"
);

object!(
    /// `HELLO` step 1, Agent to server (`#/$defs/helloClientInit`).
    pub struct HelloClientInit {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req HelloType,
        "phase" => phase: req ClientInitPhase,
        "agentId" => agent_id: req Id,
        "keyId" => key_id: req Id,
        "clientNonce" => client_nonce: req Base64Url,
        "supportedVersions" => supported_versions: req NonEmptyUnique<ProtocolVersion>,
    }
);

object!(
    /// `HELLO` step 2, server to Agent (`#/$defs/helloServerChallenge`). The challenge must be
    /// fresh and unpredictable for every connection (I-10).
    pub struct HelloServerChallenge {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req HelloType,
        "phase" => phase: req ServerChallengePhase,
        "selectedVersion" => selected_version: req ProtocolVersion,
        "clientNonce" => client_nonce: req Base64Url,
        "serverNonce" => server_nonce: req Base64Url,
        "challenge" => challenge: req Base64Url,
    }
);

object!(
    /// `HELLO` step 3, Agent to server (`#/$defs/helloClientResponse`): the Ed25519 signature
    /// over the challenge transcript (I-11).
    pub struct HelloClientResponse {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req HelloType,
        "phase" => phase: req ClientResponsePhase,
        "agentId" => agent_id: req Id,
        "keyId" => key_id: req Id,
        "clientNonce" => client_nonce: req Base64Url,
        "serverNonce" => server_nonce: req Base64Url,
        "challengeSignature" => challenge_signature: req Base64Url,
    }
);

object!(
    /// `HELLO` step 4, server to Agent (`#/$defs/helloServerAccept`): the session and its newly
    /// issued Session Epoch (§6.3, I-12).
    pub struct HelloServerAccept {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req HelloType,
        "phase" => phase: req ServerAcceptPhase,
        "selectedVersion" => selected_version: req ProtocolVersion,
        "sessionToken" => session_token: req Str<16, 8192>,
        "sessionEpoch" => session_epoch: req PosInt,
        "expiresAt" => expires_at: req Timestamp,
    }
);

object!(
    /// `SUBSCRIBE` `groups[].attention`: live-delivery filters; never authorization (§17.2).
    pub struct Attention {
        "eventKinds" => event_kinds: opt Unique<Kind>,
        "conversationIds" => conversation_ids: opt Unique<Id>,
        "workItemIds" => work_item_ids: opt Unique<Id>,
        "mentionsOnly" => mentions_only: opt bool,
        "announcements" => announcements: opt bool,
    }
);

object!(
    /// One `SUBSCRIBE` `groups` item: a Group and its replay position (R-3).
    pub struct GroupSubscription {
        "groupId" => group_id: req Id,
        "afterSequence" => after_sequence: req SafeInt,
        "attention" => attention: opt Attention,
    }
);

object!(
    /// `SUBSCRIBE` (`#/$defs/subscribe`, §17.2).
    pub struct Subscribe {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req SubscribeType,
        "subscriptionId" => subscription_id: req Id,
        "groups" => groups: req NonEmpty<GroupSubscription>,
    }
);

/// A Signed Document embedded in a frame: the typed, schema-checked document and the value
/// exactly as received (member order, number spellings, unpaired surrogates), which is what
/// §6.4 verification (`crypto::verify_value`) and JCS must see.
///
/// It is parsed with the §2 timestamp profile on, as every Signed Document is (D-9).
#[derive(Clone, Debug, PartialEq)]
pub struct Signed<T> {
    pub document: T,
    pub value: Value,
}

impl<T: ToJson> Signed<T> {
    /// Wraps a locally built document; its value is the document's JSON.
    pub fn new(document: T) -> Signed<T> {
        let value = document.to_json();
        Signed { document, value }
    }
}

impl<T: FromJson> FromJson for Signed<T> {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let saved = cx.timestamp_profile;
        cx.timestamp_profile = true;
        let r = T::from_json(v, cx);
        cx.timestamp_profile = saved;
        Ok(Signed {
            document: r?,
            value: v.clone(),
        })
    }
}

impl<T> ToJson for Signed<T> {
    fn to_json(&self) -> Value {
        self.value.clone()
    }
}

object!(
    /// `COMMAND` (`#/$defs/command`): a full signed Command (§15.1).
    pub struct CommandFrame {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req CommandType,
        "command" => command: req Signed<Command>,
    }
);

object!(
    /// `EVENT` (`#/$defs/event`): a full signed Event (§15.2).
    pub struct EventFrame {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req EventType,
        "event" => event: req Signed<Event>,
    }
);

object!(
    /// One `ACK` `acknowledgements` item: a Group's Cursor (R-2).
    pub struct Acknowledgement {
        "groupId" => group_id: req Id,
        "sequence" => sequence: req SafeInt,
    }
);

object!(
    /// `ACK` (`#/$defs/ack`): durable progress per Group (§16, §17.3).
    pub struct Ack {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req AckType,
        "acknowledgements" => acknowledgements: req NonEmpty<Acknowledgement>,
        "sentAt" => sent_at: req Timestamp,
    }
);

object!(
    /// `PING` (`#/$defs/ping`): liveness; the reply echoes the peer's nonce in `replyToNonce`
    /// and may carry a Presence Record, which never renews a lease (§17.3, I-8).
    pub struct Ping {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req PingType,
        "nonce" => nonce: req Base64Url,
        "replyToNonce" => reply_to_nonce: opt Base64Url,
        "sentAt" => sent_at: req Timestamp,
        "presence" => presence: opt PresenceRecord,
    }
);

object!(
    /// `ERROR` (`#/$defs/error`): a protocol error (§19).
    pub struct ErrorFrame {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "frameId" => frame_id: req Id,
        "frameType" => frame_type: req ErrorType,
        "error" => error: req ProtocolError,
    }
);

/// A WebSocket frame: one branch of the schema's `oneOf`.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    HelloClientInit(HelloClientInit),
    HelloServerChallenge(HelloServerChallenge),
    HelloClientResponse(HelloClientResponse),
    HelloServerAccept(HelloServerAccept),
    Subscribe(Subscribe),
    Command(CommandFrame),
    Event(EventFrame),
    Ack(Ack),
    Ping(Ping),
    Error(ErrorFrame),
}

impl Frame {
    pub fn frame_type(&self) -> FrameType {
        match self {
            Frame::HelloClientInit(_)
            | Frame::HelloServerChallenge(_)
            | Frame::HelloClientResponse(_)
            | Frame::HelloServerAccept(_) => FrameType::Hello,
            Frame::Subscribe(_) => FrameType::Subscribe,
            Frame::Command(_) => FrameType::Command,
            Frame::Event(_) => FrameType::Event,
            Frame::Ack(_) => FrameType::Ack,
            Frame::Ping(_) => FrameType::Ping,
            Frame::Error(_) => FrameType::Error,
        }
    }

    /// The `HELLO` phase, for a `HELLO` frame.
    pub fn hello_phase(&self) -> Option<HelloPhase> {
        match self {
            Frame::HelloClientInit(_) => Some(HelloPhase::ClientInit),
            Frame::HelloServerChallenge(_) => Some(HelloPhase::ServerChallenge),
            Frame::HelloClientResponse(_) => Some(HelloPhase::ClientResponse),
            Frame::HelloServerAccept(_) => Some(HelloPhase::ServerAccept),
            _ => None,
        }
    }

    pub fn frame_id(&self) -> &Id {
        match self {
            Frame::HelloClientInit(f) => &f.frame_id,
            Frame::HelloServerChallenge(f) => &f.frame_id,
            Frame::HelloClientResponse(f) => &f.frame_id,
            Frame::HelloServerAccept(f) => &f.frame_id,
            Frame::Subscribe(f) => &f.frame_id,
            Frame::Command(f) => &f.frame_id,
            Frame::Event(f) => &f.frame_id,
            Frame::Ack(f) => &f.frame_id,
            Frame::Ping(f) => &f.frame_id,
            Frame::Error(f) => &f.frame_id,
        }
    }
}

const FRAME_TYPES: &str = "HELLO, SUBSCRIBE, COMMAND, EVENT, ACK, PING or ERROR";
const HELLO_PHASES: &str = "client_init, server_challenge, client_response or server_accept";

/// Reads the string discriminant `name` of a `oneOf` (every branch requires it as a constant).
fn discriminant<'v>(
    obj: &'v crate::json::Object,
    name: &str,
    allowed: &str,
    cx: &mut Cx,
) -> Result<&'v str, SchemaError> {
    match obj.get(name) {
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => cx.at(name.to_owned(), |cx| {
            Err(cx.err(format!(
                "expected a string, found {}: matches no websocket-frame oneOf branch ({name} \
                 must be {allowed})",
                other.type_name()
            )))
        }),
        None => Err(cx.err(format!(
            "missing required member \"{name}\": every websocket-frame oneOf branch requires it \
             ({allowed})"
        ))),
    }
}

impl FromJson for Frame {
    /// The schema's `oneOf`: select the one branch whose constants match, report its errors.
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let obj = cx.object(v)?;
        let ft = discriminant(obj, "frameType", FRAME_TYPES, cx)?;
        let Some(frame_type) = FrameType::from_wire(ft) else {
            return cx.at("frameType", |cx| {
                Err(cx.err(format!(
                    "unknown frameType {ft:?}: matches no websocket-frame oneOf branch (must be \
                     {FRAME_TYPES}; partial Message streaming frames are not defined, §17.1)"
                )))
            });
        };
        Ok(match frame_type {
            FrameType::Hello => {
                let ph = discriminant(obj, "phase", HELLO_PHASES, cx)?;
                match HelloPhase::from_wire(ph) {
                    Some(HelloPhase::ClientInit) => {
                        Frame::HelloClientInit(HelloClientInit::from_json(v, cx)?)
                    }
                    Some(HelloPhase::ServerChallenge) => {
                        Frame::HelloServerChallenge(HelloServerChallenge::from_json(v, cx)?)
                    }
                    Some(HelloPhase::ClientResponse) => {
                        Frame::HelloClientResponse(HelloClientResponse::from_json(v, cx)?)
                    }
                    Some(HelloPhase::ServerAccept) => {
                        Frame::HelloServerAccept(HelloServerAccept::from_json(v, cx)?)
                    }
                    None => {
                        return cx.at("phase", |cx| {
                            Err(cx.err(format!(
                                "unknown HELLO phase {ph:?}: matches no websocket-frame oneOf \
                                 branch (must be {HELLO_PHASES})"
                            )))
                        });
                    }
                }
            }
            FrameType::Subscribe => Frame::Subscribe(Subscribe::from_json(v, cx)?),
            FrameType::Command => Frame::Command(CommandFrame::from_json(v, cx)?),
            FrameType::Event => Frame::Event(EventFrame::from_json(v, cx)?),
            FrameType::Ack => Frame::Ack(Ack::from_json(v, cx)?),
            FrameType::Ping => Frame::Ping(Ping::from_json(v, cx)?),
            FrameType::Error => Frame::Error(ErrorFrame::from_json(v, cx)?),
        })
    }
}

impl ToJson for Frame {
    fn to_json(&self) -> Value {
        match self {
            Frame::HelloClientInit(f) => f.to_json(),
            Frame::HelloServerChallenge(f) => f.to_json(),
            Frame::HelloClientResponse(f) => f.to_json(),
            Frame::HelloServerAccept(f) => f.to_json(),
            Frame::Subscribe(f) => f.to_json(),
            Frame::Command(f) => f.to_json(),
            Frame::Event(f) => f.to_json(),
            Frame::Ack(f) => f.to_json(),
            Frame::Ping(f) => f.to_json(),
            Frame::Error(f) => f.to_json(),
        }
    }
}

/// Why a received frame was rejected: the wire code to answer with, a diagnostic, and the
/// frame's `frameId` when it could be read (for `relatedFrameId`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameError {
    /// `PROTOCOL_VIOLATION` (strict parse) or `SCHEMA_VALIDATION_FAILED` (frame schema).
    pub code: ErrorCode,
    pub message: String,
    /// The frame's `frameId`, when the JSON parsed and it is a valid identifier.
    pub frame_id: Option<Id>,
    /// The JSON Pointer of a schema failure.
    pub pointer: Option<String>,
}

impl FrameError {
    /// The §19 error object for this rejection, to send in an `ERROR` frame. The sans-IO core
    /// takes the time from the caller. Neither code is safe to retry unchanged.
    pub fn to_protocol_error(&self, occurred_at: Timestamp) -> ProtocolError {
        let mut message: String = self.message.chars().take(2000).collect();
        if message.is_empty() {
            message = self.code.as_str().to_owned();
        }
        ProtocolError {
            code: self.code,
            message: Str(message),
            retryable: false,
            fatal: None,
            related_frame_id: self.frame_id.clone(),
            related_action_id: None,
            group_id: None,
            expected_revision: None,
            current_revision: None,
            retry_after_ms: None,
            snapshot_artifact_hash: None,
            details: None,
            occurred_at,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for FrameError {}

/// The `frameId` of a parsed value, when it is present and a valid identifier.
fn read_frame_id(v: &Value) -> Option<Id> {
    let s = v.as_object()?.get("frameId")?.as_str()?;
    crate::id::check_id(s).ok().map(|()| Id(s.to_owned()))
}

/// Decodes one WebSocket text message: strict JSON (§17.4, failure `PROTOCOL_VIOLATION`), then
/// the frame schema (failure `SCHEMA_VALIDATION_FAILED`).
pub fn decode(bytes: &[u8]) -> Result<Frame, FrameError> {
    let v = crate::json::parse(bytes).map_err(|e| FrameError {
        code: ErrorCode::ProtocolViolation,
        message: format!("the frame is not one strict JSON text: {e}"),
        frame_id: None,
        pointer: None,
    })?;
    decode_value(&v)
}

/// Validates an already strictly parsed frame against the frame schema.
pub fn decode_value(v: &Value) -> Result<Frame, FrameError> {
    crate::model::from_value::<Frame>(v, false).map_err(|e| FrameError {
        code: ErrorCode::SchemaValidationFailed,
        message: e.to_string(),
        frame_id: read_frame_id(v),
        pointer: Some(e.pointer),
    })
}

/// Encodes a frame as compact JSON (member order as declared; embedded Signed Documents
/// exactly as received).
pub fn encode(frame: &Frame) -> String {
    crate::json::to_string(&frame.to_json())
}

/// Validates `v` as a WebSocket frame (the schema stage only). Embedded Signed Documents always
/// use the §2 timestamp profile; `timestamp_profile` applies to the frame's own timestamps.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    crate::model::from_value::<Frame>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Object;
    use crate::model::json_equal;
    use crate::model::testkit::{cases, edit, json, load, mutate, read, vector};

    const SCHEMA: &str = "websocket-frame.schema.json";
    const FRAME_ID: &str = "urn:uuid:00000000-0000-4000-8000-0000000000f1";
    const NONCE: &str = "bm9uY2Utb25l";

    /// A frame with the three common members and `extra`.
    fn frame(frame_type: &str, extra: &[(&str, Value)]) -> Value {
        let mut o = Object::new();
        o.insert("protocolVersion", Value::from("0.1"));
        o.insert("frameId", Value::from(FRAME_ID));
        o.insert("frameType", Value::from(frame_type));
        for (k, v) in extra {
            o.insert(k.to_string(), v.clone());
        }
        Value::Object(o)
    }

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    fn hello(phase: &str, extra: &[(&str, Value)]) -> Value {
        let mut all = vec![("phase", s(phase))];
        all.extend(extra.iter().cloned());
        frame("HELLO", &all)
    }

    fn client_init() -> Value {
        hello(
            "client_init",
            &[
                ("agentId", s("urn:missionweaveprotocol:agent:developer-one")),
                ("keyId", s("urn:missionweaveprotocol:key:developer-one")),
                ("clientNonce", s(NONCE)),
                ("supportedVersions", json(r#"["0.1"]"#)),
            ],
        )
    }

    fn server_challenge() -> Value {
        hello(
            "server_challenge",
            &[
                ("selectedVersion", s("0.1")),
                ("clientNonce", s(NONCE)),
                ("serverNonce", s("c2VydmVyLW5vbmNl")),
                ("challenge", s("Y2hhbGxlbmdl")),
            ],
        )
    }

    fn client_response() -> Value {
        hello(
            "client_response",
            &[
                ("agentId", s("urn:missionweaveprotocol:agent:developer-one")),
                ("keyId", s("urn:missionweaveprotocol:key:developer-one")),
                ("clientNonce", s(NONCE)),
                ("serverNonce", s("c2VydmVyLW5vbmNl")),
                ("challengeSignature", s("c2lnbmF0dXJl")),
            ],
        )
    }

    fn server_accept() -> Value {
        hello(
            "server_accept",
            &[
                ("selectedVersion", s("0.1")),
                ("sessionToken", s("opaque-session-token-0123456789")),
                ("sessionEpoch", Value::from(8u64)),
                ("expiresAt", s("2026-07-15T08:00:00Z")),
            ],
        )
    }

    fn command() -> Value {
        frame(
            "COMMAND",
            &[("command", load("conformance/vectors/valid/command.json"))],
        )
    }

    fn event() -> Value {
        frame(
            "EVENT",
            &[("event", load("conformance/vectors/valid/event.json"))],
        )
    }

    fn ack() -> Value {
        frame(
            "ACK",
            &[
                (
                    "acknowledgements",
                    json(
                        r#"[{"groupId": "urn:missionweaveprotocol:group:mission-one", "sequence": 42},
                            {"groupId": "urn:missionweaveprotocol:group:mission-two", "sequence": 0}]"#,
                    ),
                ),
                ("sentAt", s("2026-07-15T00:00:02Z")),
            ],
        )
    }

    fn ping() -> Value {
        frame(
            "PING",
            &[
                ("nonce", s("cGluZy1ub25jZQ")),
                ("replyToNonce", s(NONCE)),
                ("sentAt", s("2026-07-15T00:00:03Z")),
                (
                    "presence",
                    load("conformance/vectors/valid/presence-record.json"),
                ),
            ],
        )
    }

    fn error() -> Value {
        frame(
            "ERROR",
            &[("error", load("conformance/vectors/valid/error.json"))],
        )
    }

    fn bytes(v: &Value) -> Vec<u8> {
        crate::json::to_string(v).into_bytes()
    }

    fn schema_error(v: &Value, pointer: &str, needle: &str) -> FrameError {
        match decode(&bytes(v)) {
            Ok(f) => panic!("expected a schema failure at {pointer} ({needle}), got {f:?}"),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::SchemaValidationFailed, "{e}");
                assert_eq!(e.pointer.as_deref(), Some(pointer), "{e}");
                assert!(
                    e.message.contains(needle),
                    "{e} does not mention {needle:?}"
                );
                e
            }
        }
    }

    fn protocol_violation(text: &[u8], needle: &str) {
        match decode(text) {
            Ok(f) => panic!("expected PROTOCOL_VIOLATION ({needle}), got {f:?}"),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::ProtocolViolation, "{e}");
                assert!(
                    e.message.contains(needle),
                    "{e} does not mention {needle:?}"
                );
                assert_eq!(e.frame_id, None);
                assert_eq!(e.pointer, None);
            }
        }
    }

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let raw = read(&c.instance);
            if c.valid {
                let f = decode(&raw).unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&f.to_json(), &load(&c.instance)), "{}", c.name);
                assert_eq!(decode(encode(&f).as_bytes()), Ok(f));
            } else if c.instance.ends_with("/websocket-partial-stream.json") {
                let e = schema_error(
                    &load(&c.instance),
                    "/frameType",
                    "unknown frameType \"MESSAGE_DELTA\"",
                );
                assert!(e.message.contains("oneOf"), "{e}");
                assert_eq!(
                    e.frame_id.as_ref().map(Id::as_str),
                    Some("urn:uuid:10000000-0000-4000-8000-000000000003")
                );
                assert!(validate(&load(&c.instance), false).is_err());
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn every_variant_round_trips() {
        let subscribe = vector(SCHEMA, "valid/websocket-frame.json");
        let all: [(Value, FrameType, Option<HelloPhase>); 10] = [
            (
                client_init(),
                FrameType::Hello,
                Some(HelloPhase::ClientInit),
            ),
            (
                server_challenge(),
                FrameType::Hello,
                Some(HelloPhase::ServerChallenge),
            ),
            (
                client_response(),
                FrameType::Hello,
                Some(HelloPhase::ClientResponse),
            ),
            (
                server_accept(),
                FrameType::Hello,
                Some(HelloPhase::ServerAccept),
            ),
            (subscribe, FrameType::Subscribe, None),
            (command(), FrameType::Command, None),
            (event(), FrameType::Event, None),
            (ack(), FrameType::Ack, None),
            (ping(), FrameType::Ping, None),
            (error(), FrameType::Error, None),
        ];
        let mut seen = Vec::new();
        for (v, ft, phase) in all {
            let f = decode(&bytes(&v)).unwrap_or_else(|e| panic!("{ft} {phase:?}: {e}"));
            assert_eq!(f.frame_type(), ft);
            assert_eq!(f.hello_phase(), phase);
            assert!(validate(&v, false).is_ok());
            let text = encode(&f);
            let back = decode(text.as_bytes()).unwrap_or_else(|e| panic!("{ft}: re-decode {e}"));
            assert_eq!(back, f, "{ft} {phase:?}");
            assert_eq!(encode(&back), text);
            let reparsed = crate::json::parse_str(&text).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                json_equal(&reparsed, &v),
                "{ft} {phase:?}: encode changed the value"
            );
            seen.push(std::mem::discriminant(&f));
        }
        seen.dedup();
        assert_eq!(seen.len(), 10);
    }

    #[test]
    fn frame_id_and_accessors() {
        let Ok(Frame::Command(c)) = decode(&bytes(&command())) else {
            panic!("not a COMMAND frame")
        };
        assert_eq!(c.frame_id.as_str(), FRAME_ID);
        assert_eq!(
            c.command.document.kind.to_json(),
            s("mission.submit_for_approval")
        );
        // The embedded document is kept exactly as received, for signature verification.
        assert_eq!(
            c.command.value,
            load("conformance/vectors/valid/command.json")
        );
        let Ok(Frame::Ping(p)) = decode(&bytes(&ping())) else {
            panic!("not a PING frame")
        };
        assert_eq!(
            p.reply_to_nonce.as_ref().map(Base64Url::as_str),
            Some(NONCE)
        );
        assert!(p.presence.is_some());
        let f = Frame::Ping(p);
        assert_eq!(f.frame_id().as_str(), FRAME_ID);
        // A locally built Signed wraps the document's own JSON.
        let Ok(Frame::Event(e)) = decode(&bytes(&event())) else {
            panic!("not an EVENT frame")
        };
        let rebuilt = Signed::new(e.event.document.clone());
        assert!(json_equal(&rebuilt.value, &e.event.value));
    }

    #[test]
    fn unknown_or_missing_frame_type() {
        schema_error(
            &frame("MESSAGE_DELTA", &[]),
            "/frameType",
            "unknown frameType",
        );
        schema_error(
            &frame("hello", &[]),
            "/frameType",
            "unknown frameType \"hello\"",
        );
        let e = schema_error(
            &mutate(&ack(), |o| {
                o.remove("frameType");
            }),
            "",
            "missing required member \"frameType\"",
        );
        assert_eq!(e.frame_id.as_ref().map(Id::as_str), Some(FRAME_ID));
        schema_error(
            &mutate(&ack(), |o| o.insert("frameType", json("1"))),
            "/frameType",
            "expected a string",
        );
        schema_error(&json("[]"), "", "expected an object");
        schema_error(&json("\"PING\""), "", "expected an object");
        // A frame whose frameId is unreadable reports none.
        let e = schema_error(
            &mutate(&frame("X", &[]), |o| o.insert("frameId", s("f-1"))),
            "/frameType",
            "unknown",
        );
        assert_eq!(e.frame_id, None);
    }

    #[test]
    fn hello_phase_selects_the_branch() {
        // The phase picks the branch; that branch reports its own error.
        schema_error(
            &mutate(&client_init(), |o| o.insert("serverNonce", s(NONCE))),
            "",
            "unknown member \"serverNonce\"",
        );
        schema_error(
            &mutate(&client_init(), |o| o.insert("phase", s("client_response"))),
            "",
            "unknown member \"supportedVersions\"",
        );
        schema_error(
            &mutate(&server_challenge(), |o| {
                o.insert("phase", s("server_accept"))
            }),
            "",
            "unknown member \"clientNonce\"",
        );
        schema_error(
            &mutate(&client_response(), |o| {
                o.remove("challengeSignature");
            }),
            "",
            "missing required member \"challengeSignature\"",
        );
        schema_error(
            &mutate(&server_accept(), |o| {
                o.remove("sessionEpoch");
            }),
            "",
            "missing required member \"sessionEpoch\"",
        );
        schema_error(
            &mutate(&client_init(), |o| o.insert("phase", s("server_hello"))),
            "/phase",
            "unknown HELLO phase \"server_hello\"",
        );
        schema_error(
            &mutate(&client_init(), |o| {
                o.remove("phase");
            }),
            "",
            "missing required member \"phase\"",
        );
        schema_error(
            &mutate(&client_init(), |o| o.insert("phase", json("null"))),
            "/phase",
            "expected a string",
        );
        // `phase` belongs to HELLO only.
        schema_error(
            &mutate(&ack(), |o| o.insert("phase", s("client_init"))),
            "",
            "unknown member \"phase\"",
        );
    }

    #[test]
    fn hello_member_rules() {
        let sv = |val: &str| mutate(&client_init(), |o| o.insert("supportedVersions", json(val)));
        schema_error(&sv("[]"), "/supportedVersions", "at least 1");
        schema_error(
            &sv(r#"["0.1", "0.1"]"#),
            "/supportedVersions",
            "uniqueItems",
        );
        schema_error(&sv(r#"["0.2"]"#), "/supportedVersions/0", "must be \"0.1\"");
        schema_error(
            &mutate(&client_init(), |o| o.insert("clientNonce", s("a=="))),
            "/clientNonce",
            "base64url",
        );
        schema_error(
            &mutate(&server_challenge(), |o| {
                o.insert("selectedVersion", s("1.0"))
            }),
            "/selectedVersion",
            "must be \"0.1\"",
        );
        let token = |t: &str| mutate(&server_accept(), |o| o.insert("sessionToken", s(t)));
        assert!(decode(&bytes(&token(&"t".repeat(16)))).is_ok());
        assert!(decode(&bytes(&token(&"t".repeat(8192)))).is_ok());
        schema_error(
            &token(&"t".repeat(15)),
            "/sessionToken",
            "outside 16..=8192",
        );
        schema_error(
            &token(&"t".repeat(8193)),
            "/sessionToken",
            "outside 16..=8192",
        );
        schema_error(
            &mutate(&server_accept(), |o| {
                o.insert("sessionEpoch", Value::from(0u64))
            }),
            "/sessionEpoch",
            "outside 1..=",
        );
        schema_error(
            &mutate(&client_init(), |o| o.insert("protocolVersion", s("0.2"))),
            "/protocolVersion",
            "must be \"0.1\"",
        );
    }

    #[test]
    fn strict_parse_failures_are_protocol_violations() {
        protocol_violation(
            br#"{"protocolVersion":"0.1","frameId":"urn:a:b","frameType":"PING","frameType":"PING","nonce":"bm9uY2U","sentAt":"2026-07-15T00:00:00Z"}"#,
            "duplicate object member \"frameType\"",
        );
        // Duplicates count at any depth, after escape decoding, inside the embedded document.
        let mut text = encode(&decode(&bytes(&command())).unwrap_or_else(|e| panic!("{e}")));
        text = text.replacen("\"payload\":{", "\"payload\":{\"a\":1,\"\\u0061\":2,", 1);
        protocol_violation(text.as_bytes(), "duplicate object member \"a\"");
        let ping_text = crate::json::to_string(&ping());
        protocol_violation(format!("{ping_text} {{}}").as_bytes(), "trailing data");
        protocol_violation(
            format!("{ping_text}{ping_text}").as_bytes(),
            "trailing data",
        );
        protocol_violation(format!("\u{feff}{ping_text}").as_bytes(), "byte-order mark");
        protocol_violation(b"", "no JSON value");
        protocol_violation(b"{\"frameType\": \"PING\"", "unexpected end");
        protocol_violation(b"{\"frameType\": \"\xff\"}", "invalid UTF-8");
        protocol_violation(b"{\"n\": NaN}", "unexpected");
    }

    #[test]
    fn embedded_signed_documents() {
        let e = schema_error(
            &edit(&command(), &["command"], |o| {
                o.remove("signature");
            }),
            "/command",
            "missing required member \"signature\"",
        );
        assert_eq!(e.frame_id.as_ref().map(Id::as_str), Some(FRAME_ID));
        schema_error(
            &edit(&command(), &["command"], |o| {
                o.insert("kind", s("Mission.Create"))
            }),
            "/command/kind",
            "neither a core Command kind",
        );
        schema_error(
            &edit(&event(), &["event"], |o| {
                o.insert("sequence", Value::from(0u64))
            }),
            "/event/sequence",
            "outside 1..=",
        );
        // Signed Documents inside frames use the §2 timestamp profile (D-9).
        schema_error(
            &edit(&event(), &["event"], |o| {
                o.insert("occurredAt", s("2026-06-30T23:59:60Z"))
            }),
            "/event/occurredAt",
            "leap",
        );
        schema_error(
            &edit(&command(), &["command", "signature"], |o| {
                o.insert("createdAt", s("0000-01-01T00:00:00Z"))
            }),
            "/command/signature/createdAt",
            "0000",
        );
        // The frame's own timestamps are generic RFC 3339.
        let leap = mutate(&ack(), |o| o.insert("sentAt", s("2026-06-30T23:59:60Z")));
        assert!(decode(&bytes(&leap)).is_ok());
        schema_error(
            &frame("COMMAND", &[]),
            "",
            "missing required member \"command\"",
        );
        schema_error(
            &mutate(&command(), |o| {
                o.insert("event", load("conformance/vectors/valid/event.json"))
            }),
            "",
            "unknown member \"event\"",
        );
    }

    #[test]
    fn subscribe_ack_ping_error_rules() {
        let sub = vector(SCHEMA, "valid/websocket-frame.json");
        schema_error(
            &mutate(&sub, |o| o.insert("groups", json("[]"))),
            "/groups",
            "at least 1",
        );
        schema_error(
            &edit(&sub, &["groups", "1"], |o| {
                o.remove("afterSequence");
            }),
            "/groups/1",
            "missing required member \"afterSequence\"",
        );
        schema_error(
            &edit(&sub, &["groups", "0", "attention"], |o| {
                o.insert("eventKinds", json(r#"["Work.progressed"]"#))
            }),
            "/groups/0/attention/eventKinds/0",
            "kind",
        );
        schema_error(
            &edit(&sub, &["groups", "0", "attention"], |o| {
                o.insert(
                    "eventKinds",
                    json(r#"["work.progressed", "work.progressed"]"#),
                )
            }),
            "/groups/0/attention/eventKinds",
            "uniqueItems",
        );
        schema_error(
            &edit(&sub, &["groups", "0", "attention"], |o| {
                o.insert("priority", json("1"))
            }),
            "/groups/0/attention",
            "unknown member \"priority\"",
        );
        schema_error(
            &mutate(&ack(), |o| o.insert("acknowledgements", json("[]"))),
            "/acknowledgements",
            "at least 1",
        );
        schema_error(
            &edit(&ack(), &["acknowledgements", "0"], |o| {
                o.insert("sequence", json("-1"))
            }),
            "/acknowledgements/0/sequence",
            "outside 0..=",
        );
        schema_error(
            &mutate(&ack(), |o| {
                o.remove("sentAt");
            }),
            "",
            "missing required member \"sentAt\"",
        );
        schema_error(
            &edit(&ping(), &["presence"], |o| {
                o.insert("credentials", s("secret"))
            }),
            "/presence",
            "unknown member \"credentials\"",
        );
        schema_error(
            &mutate(&ping(), |o| o.insert("nonce", s("x"))),
            "/nonce",
            "base64url length",
        );
        schema_error(
            &edit(&error(), &["error"], |o| {
                o.insert("code", s("STALE_COORDINATOR_EPOCH"))
            }),
            "/error/code",
            "not one of",
        );
    }

    #[test]
    fn frame_error_to_error_frame() {
        let Err(e) = decode(&bytes(&frame("MESSAGE_DELTA", &[]))) else {
            panic!("decoded an unknown frame type")
        };
        let at = Timestamp::parse_rfc3339("2026-07-15T00:00:04Z").unwrap_or_else(|e| panic!("{e}"));
        let err = e.to_protocol_error(at);
        assert_eq!(err.code, ErrorCode::SchemaValidationFailed);
        assert!(!err.retryable);
        assert_eq!(
            err.related_frame_id.as_ref().map(Id::as_str),
            Some(FRAME_ID)
        );
        let reply = Frame::Error(ErrorFrame {
            protocol_version: ProtocolVersion,
            frame_id: Id("urn:uuid:00000000-0000-4000-8000-0000000000f2".to_owned()),
            frame_type: ErrorType,
            error: err,
        });
        let back = decode(encode(&reply).as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, reply);
        let long = FrameError {
            code: ErrorCode::ProtocolViolation,
            message: "x".repeat(3000),
            frame_id: None,
            pointer: None,
        };
        let at = Timestamp::parse_rfc3339("2026-07-15T00:00:04Z").unwrap_or_else(|e| panic!("{e}"));
        let err = long.to_protocol_error(at);
        assert!(crate::model::error::validate(&err.to_json(), false).is_ok());
    }

    /// The `oneOf` selection agrees with an independent JSON Schema validator: every valid
    /// frame under every frameType and phase (or none).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn one_of_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let bases = [
            client_init(),
            server_challenge(),
            client_response(),
            server_accept(),
            vector(SCHEMA, "valid/websocket-frame.json"),
            command(),
            event(),
            ack(),
            ping(),
            error(),
        ];
        let types = [
            "HELLO",
            "SUBSCRIBE",
            "COMMAND",
            "EVENT",
            "ACK",
            "PING",
            "ERROR",
            "MESSAGE_DELTA",
        ];
        let mut phases = vec![None];
        phases.extend(HelloPhase::ALL.iter().map(|p| Some(s(p.as_str()))));
        let (mut accepted, mut rejected) = (0, 0);
        for base in &bases {
            let axes = [
                Axis::values(&[], "frameType", &types),
                Axis {
                    path: &[],
                    name: "phase",
                    values: phases.clone(),
                },
            ];
            let (a, r) =
                agree_on_matrix(base, &axes, |v| validate(v, false), |v| oracle.accepts(v));
            accepted += a;
            rejected += r;
        }
        // Exactly one (frameType, phase) combination is valid for each base frame.
        assert_eq!(accepted, bases.len());
        assert_eq!(rejected, bases.len() * (types.len() * phases.len() - 1));
    }
}
