//! `agent-card.schema.json`: the Organization-issued Agent Card (§6.1, checklist I-3, I-4).
//!
//! The card separates stable identity, endpoints, keys and supported versions from versioned,
//! Organization-governed capabilities and maximum concurrency. It is closed: credentials,
//! permissions or grants have no member to live in (I-4, vector `agent-card-with-permissions`).
//! The schema has no conditional rules.

use super::common::{Actor, CapabilityRef, Extensions, ProtocolVersion, PublicKey, Signature};
use super::{
    Array, CapabilityId, Cx, FromJson, Id, NonEmpty, NonEmptyUnique, PosInt, SchemaError, Semver,
    Sha256Hash, Str, ToJson, Uri,
};
use crate::json::{Object, Value};
use crate::time::Timestamp;
use crate::{const_str, object, string_enum};

string_enum!(
    /// `status`: an Agent Card's lifecycle state.
    pub enum AgentCardStatus {
        Active = "active",
        Deprecated = "deprecated",
        Revoked = "revoked",
    }
);

const_str!(
    /// `endpoints[].transport`: v0.1 binds only WebSocket over TLS (§17).
    Wss = "wss"
);

/// `endpoints[].uri`: `format: uri` and `pattern: ^wss://`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WssUri(pub String);

impl WssUri {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromJson for WssUri {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        if !crate::id::is_absolute_uri(s) {
            Err(cx.err(format!(
                "{s:?} is not an absolute RFC 3986 URI (format: uri)"
            )))
        } else if !s.starts_with("wss://") {
            Err(cx.err(format!("{s:?} does not match ^wss://")))
        } else {
            Ok(WssUri(s.to_owned()))
        }
    }
}

impl ToJson for WssUri {
    fn to_json(&self) -> Value {
        Value::string(self.0.clone())
    }
}

object!(
    /// `endpoints[]`: where the Agent runtime is reached.
    pub struct Endpoint {
        "transport" => transport: req Wss,
        "uri" => uri: req WssUri,
    }
);

object!(
    /// `capabilities[]`: one versioned, Organization-governed capability with its declared
    /// input/output schemas and the verification Evidence behind it (§6.1). A capability is not
    /// an authorization.
    pub struct AgentCapability {
        "id" => id: req CapabilityId,
        "version" => version: req Semver,
        "inputSchema" => input_schema: req Uri,
        "inputSchemaHash" => input_schema_hash: req Sha256Hash,
        "outputSchema" => output_schema: req Uri,
        "outputSchemaHash" => output_schema_hash: req Sha256Hash,
        "constraints" => constraints: req Object,
        "verifiedEvidence" => verified_evidence: req NonEmptyUnique<Id>,
    }
);

impl AgentCapability {
    /// The `{id, version}` pin an assignment or Artifact records for this capability (I-5).
    pub fn pin(&self) -> CapabilityRef {
        CapabilityRef {
            id: self.id.clone(),
            version: self.version.clone(),
        }
    }
}

object!(
    /// The Agent Card (§6.1). Signed Document: protected time `issuedAt`; the signing key must
    /// belong to an Organization service Principal (§6.4).
    pub struct AgentCard {
        "agentId" => agent_id: req Id,
        "organizationId" => organization_id: req Id,
        /// Pinned by assignments (I-5).
        "cardVersion" => card_version: req PosInt,
        "displayName" => display_name: req Str<1, 200>,
        "description" => description: opt Str<0, 4000>,
        "owner" => owner: req Actor,
        "status" => status: req AgentCardStatus,
        "protocolVersions" => protocol_versions: req Array<ProtocolVersion, 1, { usize::MAX }, true>,
        "endpoints" => endpoints: req NonEmpty<Endpoint>,
        "publicKeys" => public_keys: req NonEmpty<PublicKey>,
        "capabilities" => capabilities: req NonEmpty<AgentCapability>,
        "maxConcurrency" => max_concurrency: req PosInt,
        "issuedAt" => issued_at: req Timestamp,
        "validUntil" => valid_until: opt Timestamp,
        "extensions" => extensions: opt Extensions,
        "signature" => signature: req Signature,
    }
);

/// Parses `v` as an [`AgentCard`] and discards it (the conformance runner's schema stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<AgentCard>(v, timestamp_profile).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::from_value;
    use crate::model::testkit::{assert_fails, cases, edit, load, mutate, vector};

    const SCHEMA: &str = "agent-card.schema.json";

    fn parse(v: &Value) -> Result<AgentCard, SchemaError> {
        from_value::<AgentCard>(v, true)
    }

    fn card() -> Value {
        vector(SCHEMA, "valid/agent-card.json")
    }

    fn set(v: &Value, name: &str, value: Value) -> Value {
        mutate(v, |o| o.insert(name.to_owned(), value))
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
                    let c = from_value::<AgentCard>(&v, profile)
                        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
                    assert_eq!(
                        from_value::<AgentCard>(&c.to_json(), profile),
                        Ok(c.clone())
                    );
                }
            } else {
                assert!(case.instance.ends_with("agent-card-with-permissions.json"));
                assert_fails(parse(&v), "", "unknown member \"permissions\"");
            }
        }
    }

    #[test]
    fn signed_document_vector_parses_with_the_timestamp_profile() {
        let v = load("cryptography/vectors/signed-documents/valid/agent-card.json");
        let c = parse(&v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            c.capabilities.0[0].pin().id.as_str(),
            "acme.software.python-implementation"
        );
        assert_eq!(validate(&v, true), Ok(()));
    }

    #[test]
    fn members() {
        let v = card();
        let list = |items: Vec<Value>| Value::Array(items);
        assert_fails(
            parse(&set(&v, "protocolVersions", list(vec![]))),
            "/protocolVersions",
            "at least 1",
        );
        assert_fails(
            parse(&set(
                &v,
                "protocolVersions",
                list(vec!["0.1".into(), "0.1".into()]),
            )),
            "/protocolVersions",
            "uniqueItems",
        );
        assert_fails(
            parse(&set(&v, "protocolVersions", list(vec!["0.2".into()]))),
            "/protocolVersions/0",
            "must be",
        );
        assert_fails(
            parse(&set(&v, "endpoints", list(vec![]))),
            "/endpoints",
            "at least 1",
        );
        assert_fails(
            parse(&set(&v, "publicKeys", list(vec![]))),
            "/publicKeys",
            "at least 1",
        );
        assert_fails(
            parse(&set(&v, "capabilities", list(vec![]))),
            "/capabilities",
            "at least 1",
        );
        assert_fails(
            parse(&set(&v, "status", "retired".into())),
            "/status",
            "is not one of",
        );
        assert_fails(
            parse(&set(&v, "displayName", "".into())),
            "/displayName",
            "outside 1..=200",
        );
        assert_fails(
            parse(&set(&v, "description", "x".repeat(4001).into())),
            "/description",
            "outside 0..=4000",
        );
        parse(&set(&v, "description", "".into())).unwrap_or_else(|e| panic!("{e}"));
        assert_fails(
            parse(&set(&v, "cardVersion", 0u64.into())),
            "/cardVersion",
            "outside 1..=",
        );
        assert_fails(
            parse(&set(&v, "maxConcurrency", 0u64.into())),
            "/maxConcurrency",
            "outside 1..=",
        );
        assert_fails(
            parse(&set(&v, "validUntil", "soon".into())),
            "/validUntil",
            "RFC 3339",
        );

        // Endpoints: const transport, wss:// URI.
        let ep = |f: &dyn Fn(&mut Object)| parse(&edit(&v, &["endpoints", "0"], |o| f(o)));
        assert_fails(
            ep(&|o| o.insert("transport", "ws".into())),
            "/endpoints/0/transport",
            "must be \"wss\"",
        );
        assert_fails(
            ep(&|o| o.insert("uri", "https://a.example/".into())),
            "/endpoints/0/uri",
            "^wss://",
        );
        assert_fails(
            ep(&|o| o.insert("uri", "wss://a b".into())),
            "/endpoints/0/uri",
            "format: uri",
        );
        assert_fails(
            ep(&|o| o.insert("token", "secret".into())),
            "/endpoints/0",
            "unknown member",
        );

        // Capabilities.
        let cap = |f: &dyn Fn(&mut Object)| parse(&edit(&v, &["capabilities", "0"], |o| f(o)));
        assert_fails(
            cap(&|o| o.insert("id", "Acme".into())),
            "/capabilities/0/id",
            "capability id",
        );
        assert_fails(
            cap(&|o| o.insert("version", "2.1".into())),
            "/capabilities/0/version",
            "semantic version",
        );
        assert_fails(
            cap(&|o| o.insert("inputSchema", "relative/path".into())),
            "/capabilities/0/inputSchema",
            "format: uri",
        );
        assert_fails(
            cap(&|o| o.insert("outputSchemaHash", "sha256:00".into())),
            "/capabilities/0/outputSchemaHash",
            "sha256:",
        );
        assert_fails(
            cap(&|o| o.insert("constraints", Value::Null)),
            "/capabilities/0/constraints",
            "expected an object",
        );
        assert_fails(
            cap(&|o| o.insert("verifiedEvidence", Value::Array(vec![]))),
            "/capabilities/0/verifiedEvidence",
            "at least 1",
        );
        assert_fails(
            cap(&|o| {
                o.insert(
                    "verifiedEvidence",
                    Value::Array(vec!["urn:e:1".into(), "urn:e:1".into()]),
                )
            }),
            "/capabilities/0/verifiedEvidence",
            "uniqueItems",
        );
        assert_fails(
            cap(&|o| {
                o.remove("constraints");
            }),
            "/capabilities/0",
            "missing required member \"constraints\"",
        );
        // Public keys reuse `common#/$defs/publicKey`.
        assert_fails(
            parse(&edit(&v, &["publicKeys", "0"], |o| {
                o.insert("algorithm", "RSA".into())
            })),
            "/publicKeys/0/algorithm",
            "must be \"Ed25519\"",
        );
        for m in [
            "agentId",
            "organizationId",
            "cardVersion",
            "displayName",
            "owner",
            "status",
            "protocolVersions",
            "endpoints",
            "publicKeys",
            "capabilities",
            "maxConcurrency",
            "issuedAt",
            "signature",
        ] {
            let r = parse(&mutate(&v, |o| {
                o.remove(m);
            }));
            assert_fails(r, "", &format!("missing required member \"{m}\""));
        }
    }
}
