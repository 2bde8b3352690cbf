//! `artifact.schema.json`: the signed Artifact manifest (§13.1, checklist I-5).
//!
//! An Artifact is immutable and content addressed; its binary content lives outside the Event
//! log, so the manifest is closed and has no inline-content member (vector
//! `artifact-with-inline-content`). The manifest records provenance: producer Agent, Agent
//! Card and capability versions, source Artifacts, tools and models. No conditional rules.

use super::common::{CapabilityRef, Classification, Extensions, Signature};
use super::{
    Cx, FromJson, Id, NonEmpty, PosInt, SafeInt, SchemaError, Sha256Hash, Str, ToJson, Unique, Uri,
};
use crate::json::Value;
use crate::object;
use crate::time::Timestamp;

/// `mediaType`: `^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+$` (type/subtype, no parameters).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MediaType(pub String);

impl MediaType {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The schema's media-type token characters.
fn is_media_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'!' | b'#' | b'$' | b'&' | b'^' | b'_' | b'.' | b'+' | b'-'
                )
        })
}

/// True when `s` matches the `mediaType` pattern.
pub fn is_media_type(s: &str) -> bool {
    s.split_once('/')
        .is_some_and(|(t, sub)| is_media_token(t) && is_media_token(sub))
}

impl FromJson for MediaType {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        if is_media_type(s) {
            Ok(MediaType(s.to_owned()))
        } else {
            Err(cx.err(format!("{s:?} is not a type/subtype media type")))
        }
    }
}

impl ToJson for MediaType {
    fn to_json(&self) -> Value {
        Value::string(self.0.clone())
    }
}

object!(
    /// `producer`: the producing Agent, its Agent Card version and the capability versions used
    /// (§6.1: every Artifact records them). The Artifact's expected signer is this Agent (§6.4).
    pub struct Producer {
        "agentId" => agent_id: req Id,
        "agentCardVersion" => agent_card_version: req PosInt,
        "capabilities" => capabilities: req NonEmpty<CapabilityRef>,
    }
);

object!(
    /// `toolVersions[]`.
    pub struct ToolVersion {
        "name" => name: req Str<1, 200>,
        "version" => version: req Str<1, 200>,
    }
);

object!(
    /// `modelVersions[]`.
    pub struct ModelVersion {
        "provider" => provider: req Str<1, 200>,
        "model" => model: req Str<1, 200>,
        "version" => version: req Str<1, 200>,
    }
);

object!(
    /// The Artifact manifest (§13.1). Signed Document: protected time `createdAt`, expected
    /// signer the Agent `producer.agentId` (§6.4).
    pub struct Artifact {
        "artifactId" => artifact_id: req Id,
        /// Content identity; a mutable `uri` never is (§13.1).
        "contentHash" => content_hash: req Sha256Hash,
        /// Retrieval location (`format: uri`).
        "uri" => uri: req Uri,
        "sizeBytes" => size_bytes: req SafeInt,
        "mediaType" => media_type: req MediaType,
        "schemaUri" => schema_uri: req Uri,
        "producer" => producer: req Producer,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "workItemId" => work_item_id: req Id,
        /// Provenance graph edges (§13.1).
        "sourceArtifactHashes" => source_artifact_hashes: req Unique<Sha256Hash>,
        "toolVersions" => tool_versions: req Vec<ToolVersion>,
        "modelVersions" => model_versions: req Vec<ModelVersion>,
        "classification" => classification: req Classification,
        "createdAt" => created_at: req Timestamp,
        "extensions" => extensions: opt Extensions,
        "signature" => signature: req Signature,
    }
);

/// Parses `v` as an [`Artifact`] and discards it (the conformance runner's schema stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Artifact>(v, timestamp_profile).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Object;
    use crate::model::from_value;
    use crate::model::testkit::{assert_fails, cases, edit, load, mutate, vector};

    const SCHEMA: &str = "artifact.schema.json";

    fn parse(v: &Value) -> Result<Artifact, SchemaError> {
        from_value::<Artifact>(v, true)
    }

    fn ok(v: &Value) -> Artifact {
        parse(v).unwrap_or_else(|e| panic!("expected valid: {e}"))
    }

    fn set(v: &Value, name: &str, value: Value) -> Value {
        mutate(v, |o| o.insert(name.to_owned(), value))
    }

    #[test]
    fn media_type_pattern() {
        for good in [
            "text/plain",
            "application/vnd.git.patch",
            "a/b",
            "x-y!#$&^_.+/z",
        ] {
            assert!(is_media_type(good), "{good}");
        }
        for bad in [
            "text",
            "/plain",
            "text/",
            "text/plain; charset=utf-8",
            "a/b/c",
            "text/plain\n",
            "tëxt/plain",
        ] {
            assert!(!is_media_type(bad), "{bad:?}");
        }
    }

    #[test]
    fn conformance_vectors() {
        let all = cases(SCHEMA);
        assert!(all.iter().any(|c| c.valid));
        assert_eq!(all.iter().filter(|c| !c.valid).count(), 1);
        for case in all {
            let v = load(&case.instance);
            if case.valid {
                for profile in [false, true] {
                    let a = from_value::<Artifact>(&v, profile)
                        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
                    assert_eq!(from_value::<Artifact>(&a.to_json(), profile), Ok(a.clone()));
                }
            } else {
                assert!(case.instance.ends_with("artifact-with-inline-content.json"));
                assert_fails(parse(&v), "", "unknown member \"inlineContent\"");
            }
        }
    }

    #[test]
    fn signed_document_vector_parses_with_the_timestamp_profile() {
        let v = load("cryptography/vectors/signed-documents/valid/artifact.json");
        let a = ok(&v);
        assert_eq!(a.producer.agent_card_version, PosInt(3));
        assert_eq!(validate(&v, true), Ok(()));
    }

    #[test]
    fn members() {
        let v = vector(SCHEMA, "valid/artifact.json");
        ok(&v);
        assert_fails(
            parse(&set(&v, "uri", "artifacts/one".into())),
            "/uri",
            "format: uri",
        );
        // `format: uri` alone has no 512-character limit.
        ok(&set(
            &v,
            "uri",
            format!("https://a.example/{}", "a".repeat(600)).into(),
        ));
        assert_fails(
            parse(&set(&v, "schemaUri", "opaque".into())),
            "/schemaUri",
            "format: uri",
        );
        assert_fails(
            parse(&set(&v, "mediaType", "text".into())),
            "/mediaType",
            "media type",
        );
        assert_fails(
            parse(&set(&v, "sizeBytes", Value::from(9_007_199_254_740_992u64))),
            "/sizeBytes",
            "outside 0..=",
        );
        ok(&set(&v, "sizeBytes", 0u64.into()));
        assert_fails(
            parse(&set(&v, "classification", "secret".into())),
            "/classification",
            "is not one of",
        );
        let dup = Value::Array(vec![
            "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb".into(),
            "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb".into(),
        ]);
        assert_fails(
            parse(&set(&v, "sourceArtifactHashes", dup)),
            "/sourceArtifactHashes",
            "uniqueItems",
        );
        let producer = |f: &dyn Fn(&mut Object)| parse(&edit(&v, &["producer"], |o| f(o)));
        assert_fails(
            producer(&|o| o.insert("capabilities", Value::Array(vec![]))),
            "/producer/capabilities",
            "at least 1",
        );
        assert_fails(
            producer(&|o| o.insert("agentCardVersion", 0u64.into())),
            "/producer/agentCardVersion",
            "outside 1..=",
        );
        assert_fails(
            producer(&|o| o.insert("credentials", "x".into())),
            "/producer",
            "unknown member",
        );
        assert_fails(
            parse(&edit(&v, &["toolVersions", "0"], |o| {
                o.insert("name", "".into())
            })),
            "/toolVersions/0/name",
            "outside 1..=200",
        );
        assert_fails(
            parse(&edit(&v, &["modelVersions", "0"], |o| {
                o.remove("provider");
            })),
            "/modelVersions/0",
            "missing required member \"provider\"",
        );
        for m in [
            "artifactId",
            "contentHash",
            "uri",
            "sizeBytes",
            "mediaType",
            "schemaUri",
            "producer",
            "missionId",
            "groupId",
            "workItemId",
            "sourceArtifactHashes",
            "toolVersions",
            "modelVersions",
            "classification",
            "createdAt",
            "signature",
        ] {
            let r = parse(&mutate(&v, |o| {
                o.remove(m);
            }));
            assert_fails(r, "", &format!("missing required member \"{m}\""));
        }
    }
}
