//! `message.schema.json`: a committed Message (§9; checklist §5 "Conversations and Messages").
//!
//! Messages are context only: `authority` is the constant `false` and a Message never
//! authorizes execution (§4). Corrections, retractions and redactions are new Messages that
//! target an earlier one (§4.6).

use super::common::{Actor, Extensions};
use super::{
    Cx, FromJson, Id, NonEmpty, SchemaError, Sha256Hash, Str, ToJson, Unique, Uri, require_if,
};
use crate::json::Value;
use crate::time::Timestamp;
use crate::{const_str, object, string_enum};

string_enum!(
    /// `kind` (§9).
    pub enum MessageKind {
        Message = "message",
        Correction = "correction",
        Retraction = "retraction",
        Redaction = "redaction",
    }
);

/// `authority`: the constant `false` (§4: Messages never authorize execution).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoAuthority;

impl FromJson for NoAuthority {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        match v {
            Value::Bool(false) => Ok(NoAuthority),
            other => Err(cx.err(format!(
                "must be false (const), found {}: Messages are context only and can never \
                 authorize execution",
                crate::json::to_string(other)
            ))),
        }
    }
}

impl ToJson for NoAuthority {
    fn to_json(&self) -> Value {
        Value::Bool(false)
    }
}

const_str!(
    /// `content[].type` of a text part.
    TextType = "text"
);
const_str!(
    /// `content[].type` of an Artifact reference.
    ArtifactRefType = "artifact_ref"
);
const_str!(
    /// `content[].type` of a structured-data reference.
    DataRefType = "data_ref"
);

object!(
    /// `content` branch 0: inline text.
    pub struct TextPart {
        "type" => part_type: req TextType,
        "text" => text: req Str<1, 100000>,
    }
);

object!(
    /// `content` branch 1: an Artifact by content hash (large content is an Artifact, §17.4).
    pub struct ArtifactRefPart {
        "type" => part_type: req ArtifactRefType,
        "artifactHash" => artifact_hash: req Sha256Hash,
    }
);

object!(
    /// `content` branch 2: data described by a schema URI.
    pub struct DataRefPart {
        "type" => part_type: req DataRefType,
        "schema" => schema: req Uri,
        "data" => data: req Value,
    }
);

/// One `content` item: the schema's `oneOf` of three closed shapes. The branches are told
/// apart by their `type` constant, so exactly one can match; its errors are reported.
#[derive(Clone, Debug, PartialEq)]
pub enum ContentPart {
    Text(TextPart),
    ArtifactRef(ArtifactRefPart),
    DataRef(DataRefPart),
}

impl FromJson for ContentPart {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let obj = cx.object(v)?;
        match obj.get("type").and_then(Value::as_str) {
            Some(TextType::WIRE) => TextPart::from_json(v, cx).map(ContentPart::Text),
            Some(ArtifactRefType::WIRE) => {
                ArtifactRefPart::from_json(v, cx).map(ContentPart::ArtifactRef)
            }
            Some(DataRefType::WIRE) => DataRefPart::from_json(v, cx).map(ContentPart::DataRef),
            Some(other) => cx.at("type", |cx| {
                Err(cx.err(format!(
                    "{other:?} matches no content oneOf branch (type must be \"text\", \
                     \"artifact_ref\" or \"data_ref\")"
                )))
            }),
            None => Err(cx.err(
                "matches no content oneOf branch: every branch requires a string member \"type\" \
                 (\"text\", \"artifact_ref\" or \"data_ref\")",
            )),
        }
    }
}

impl ToJson for ContentPart {
    fn to_json(&self) -> Value {
        match self {
            ContentPart::Text(p) => p.to_json(),
            ContentPart::ArtifactRef(p) => p.to_json(),
            ContentPart::DataRef(p) => p.to_json(),
        }
    }
}

object!(
    /// A committed Message (§9).
    pub struct Message {
        "messageId" => message_id: req Id,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "conversationId" => conversation_id: req Id,
        "author" => author: req Actor,
        "kind" => kind: req MessageKind,
        "authority" => authority: req NoAuthority,
        /// The Message corrected, retracted or redacted.
        "targetMessageId" => target_message_id: opt Id,
        "content" => content: req NonEmpty<ContentPart>,
        "mentions" => mentions: opt Unique<Actor>,
        "references" => references: opt Unique<Id>,
        "reason" => reason: opt Str<1, 4000>,
        "committedAt" => committed_at: req Timestamp,
        "extensions" => extensions: opt Extensions,
    }
    check = check_message;
);

const RULE_AMENDMENT: &str = "message allOf/0 (a correction, retraction or redaction requires \
                              targetMessageId and reason)";

/// The schema's `allOf/0`: an amendment names its target and its reason.
fn check_message(m: &Message, cx: &mut Cx) -> Result<(), SchemaError> {
    let amendment = m.kind != MessageKind::Message;
    require_if(
        cx,
        amendment,
        m.target_message_id.is_some(),
        "targetMessageId",
        RULE_AMENDMENT,
    )?;
    require_if(cx, amendment, m.reason.is_some(), "reason", RULE_AMENDMENT)
}

/// Validates `v` as a committed Message.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Message>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{assert_fails, cases, json, load, mutate, vector};
    use crate::model::{from_value, json_equal};

    const SCHEMA: &str = "message.schema.json";

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let m =
                    from_value::<Message>(&v, false).unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&m.to_json(), &v), "{}: round trip", c.name);
            } else if c.instance.ends_with("/message-authorizes-action.json") {
                assert_fails(validate(&v, false), "/authority", "must be false (const)");
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn rule_amendments_need_target_and_reason() {
        let v = vector(SCHEMA, "valid/message.json");
        for kind in ["correction", "retraction", "redaction"] {
            let bad = mutate(&v, |o| o.insert("kind", Value::from(kind)));
            assert_fails(
                validate(&bad, false),
                "",
                "\"targetMessageId\", required by message allOf/0",
            );
            let bad = mutate(&bad, |o| {
                o.insert(
                    "targetMessageId",
                    Value::from("urn:missionweaveprotocol:message:zero"),
                )
            });
            assert_fails(
                validate(&bad, false),
                "",
                "\"reason\", required by message allOf/0",
            );
            let ok = mutate(&bad, |o| o.insert("reason", Value::from("Typo.")));
            assert!(validate(&ok, false).is_ok(), "{kind}");
        }
    }

    #[test]
    fn content_one_of() {
        let v = vector(SCHEMA, "valid/message.json");
        let with = |content: &str| mutate(&v, |o| o.insert("content", json(content)));
        let ok = with(
            r#"[{"type": "data_ref", "schema": "https://example.org/s.json", "data": {"a": [1]}},
                {"type": "data_ref", "schema": "urn:x:y", "data": null}]"#,
        );
        let m = from_value::<Message>(&ok, false).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(m.content.0[0], ContentPart::DataRef(_)));
        // The branch chosen by `type` reports its own error.
        assert_fails(
            validate(&with(r#"[{"type": "text", "text": ""}]"#), false),
            "/content/0/text",
            "outside 1..=100000",
        );
        assert_fails(
            validate(
                &with(r#"[{"type": "text", "text": "a", "artifactHash": "x"}]"#),
                false,
            ),
            "/content/0",
            "unknown member \"artifactHash\"",
        );
        assert_fails(
            validate(
                &with(r#"[{"type": "artifact_ref", "artifactHash": "sha256:00"}]"#),
                false,
            ),
            "/content/0/artifactHash",
            "sha256",
        );
        assert_fails(
            validate(
                &with(r#"[{"type": "data_ref", "schema": "s.json", "data": 1}]"#),
                false,
            ),
            "/content/0/schema",
            "format: uri",
        );
        assert_fails(
            validate(
                &with(r#"[{"type": "data_ref", "schema": "urn:x:y"}]"#),
                false,
            ),
            "/content/0",
            "missing required member \"data\"",
        );
        assert_fails(
            validate(&with(r#"[{"type": "image", "url": "urn:x:y"}]"#), false),
            "/content/0/type",
            "matches no content oneOf branch",
        );
        assert_fails(
            validate(&with(r#"[{"text": "hi"}]"#), false),
            "/content/0",
            "matches no content oneOf branch",
        );
        assert_fails(validate(&with("[]"), false), "/content", "at least 1");
        assert_fails(
            validate(&with(r#"["hi"]"#), false),
            "/content/0",
            "expected an object",
        );
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/message.json");
        let bad = mutate(&v, |o| o.insert("authority", Value::from("false")));
        assert_fails(validate(&bad, false), "/authority", "const");
        let bad = mutate(&v, |o| {
            o.remove("authority");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "missing required member \"authority\"",
        );
        let dup = r#"[{"type": "agent", "id": "urn:a:b"}, {"id": "urn:a:b", "type": "agent"}]"#;
        let bad = mutate(&v, |o| o.insert("mentions", json(dup)));
        assert_fails(validate(&bad, false), "/mentions", "uniqueItems");
        let bad = mutate(&v, |o| {
            o.insert("references", json(r#"["urn:a:b", "urn:a:b"]"#))
        });
        assert_fails(validate(&bad, false), "/references", "uniqueItems");
        let bad = mutate(&v, |o| o.insert("reason", Value::from("")));
        assert_fails(validate(&bad, false), "/reason", "outside 1..=4000");
    }

    /// The conditional rules agree with an independent JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = vector(SCHEMA, "valid/message.json");
        let axes = [
            Axis::values(
                &[],
                "kind",
                &["message", "correction", "retraction", "redaction"],
            ),
            Axis::optional(&[], "targetMessageId", Value::from("urn:x:message")),
            Axis::optional(&[], "reason", Value::from("Typo.")),
            Axis {
                path: &[],
                name: "authority",
                values: vec![Some(Value::Bool(false)), Some(Value::Bool(true))],
            },
            Axis {
                path: &[],
                name: "content",
                values: vec![
                    Some(json(
                        r#"[{"type": "data_ref", "schema": "urn:x:s", "data": 1}]"#,
                    )),
                    Some(json(r#"[{"type": "text", "text": "a"}, {"type": "text"}]"#)),
                    Some(json(
                        r#"[{"type": "artifact_ref", "artifactHash": "sha256:0"}]"#,
                    )),
                ],
            },
        ];
        let (accepted, rejected) =
            agree_on_matrix(&base, &axes, |v| validate(v, false), |v| oracle.accepts(v));
        assert!(
            accepted > 0 && rejected > 0,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
