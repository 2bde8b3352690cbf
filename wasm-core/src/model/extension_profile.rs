//! `extension-profile.schema.json`: an Organization-approved Extension Profile (§18).
//!
//! A profile declares its URI, semantic version, schema URI and hash, required capabilities,
//! criticality, the `ext.` Command and Event kinds it defines, and its approval signature. It
//! can never override core invariants: `overridesCoreInvariants` is the constant `false`
//! (vector `extension-overrides-core`). No conditional rules.

use super::common::{Actor, CapabilityRef, Signature};
use super::{Cx, ExtKind, FromJson, Id, SchemaError, Semver, Sha256Hash, Str, ToJson, Unique, Uri};
use crate::json::Value;
use crate::object;
use crate::time::Timestamp;

/// `overridesCoreInvariants: {const: false}`: an Extension Profile MUST NOT override or weaken
/// identity, Membership, ordering, idempotency, epochs, leases, budgets, Approval, provenance,
/// isolation, or the rule that Messages never authorize (§18).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoCoreOverride;

impl FromJson for NoCoreOverride {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        match v {
            Value::Bool(false) => Ok(NoCoreOverride),
            other => Err(cx.err(format!(
                "must be false (const): an Extension Profile must not override core invariants \
                 (§18), found {}",
                crate::json::to_string(other)
            ))),
        }
    }
}

impl ToJson for NoCoreOverride {
    fn to_json(&self) -> Value {
        Value::Bool(false)
    }
}

object!(
    /// The Extension Profile (§18). Signed Document: protected time `approvedAt`, expected
    /// signer exactly `approvedBy` (§6.4).
    pub struct ExtensionProfile {
        /// Globally unique profile URI; the key under which its data rides in `extensions`.
        "profileUri" => profile_uri: req Id,
        "name" => name: req Str<1, 200>,
        "version" => version: req Semver,
        "schemaUri" => schema_uri: req Uri,
        "schemaHash" => schema_hash: req Sha256Hash,
        "requiredCapabilities" => required_capabilities: req Vec<CapabilityRef>,
        /// An Agent refuses transitions that depend on an unknown critical profile (§18).
        "critical" => critical: req bool,
        "commandKinds" => command_kinds: req Unique<ExtKind>,
        "eventKinds" => event_kinds: req Unique<ExtKind>,
        "overridesCoreInvariants" => overrides_core_invariants: req NoCoreOverride,
        "approvedBy" => approved_by: req Actor,
        "approvedAt" => approved_at: req Timestamp,
        "signature" => signature: req Signature,
    }
);

/// Parses `v` as an [`ExtensionProfile`] and discards it (the conformance runner's schema
/// stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<ExtensionProfile>(v, timestamp_profile).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::from_value;
    use crate::model::testkit::{assert_fails, cases, load, mutate, vector};

    const SCHEMA: &str = "extension-profile.schema.json";

    fn parse(v: &Value) -> Result<ExtensionProfile, SchemaError> {
        from_value::<ExtensionProfile>(v, true)
    }

    fn ok(v: &Value) -> ExtensionProfile {
        parse(v).unwrap_or_else(|e| panic!("expected valid: {e}"))
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
                    let p = from_value::<ExtensionProfile>(&v, profile)
                        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
                    assert_eq!(
                        from_value::<ExtensionProfile>(&p.to_json(), profile),
                        Ok(p.clone())
                    );
                }
            } else {
                assert!(case.instance.ends_with("extension-overrides-core.json"));
                assert_fails(
                    parse(&v),
                    "/overridesCoreInvariants",
                    "must not override core invariants",
                );
            }
        }
    }

    #[test]
    fn signed_document_vector_parses_with_the_timestamp_profile() {
        let v = load("cryptography/vectors/signed-documents/valid/extension-profile.json");
        ok(&v);
        assert_eq!(validate(&v, true), Ok(()));
    }

    #[test]
    fn members() {
        let v = vector(SCHEMA, "valid/extension-profile.json");
        ok(&v);
        let kinds = |items: &[&str]| Value::Array(items.iter().map(|s| Value::from(*s)).collect());
        assert_fails(
            parse(&set(&v, "overridesCoreInvariants", "false".into())),
            "/overridesCoreInvariants",
            "must be false",
        );
        assert_fails(
            parse(&set(&v, "commandKinds", kinds(&["mission.create"]))),
            "/commandKinds/0",
            "ext.<organization>",
        );
        assert_fails(
            parse(&set(&v, "eventKinds", kinds(&["ext.acme.x"]))),
            "/eventKinds/0",
            "ext.<organization>",
        );
        assert_fails(
            parse(&set(
                &v,
                "eventKinds",
                kinds(&["ext.acme.a.b", "ext.acme.a.b"]),
            )),
            "/eventKinds",
            "uniqueItems",
        );
        ok(&set(&v, "commandKinds", kinds(&[])));
        assert_fails(
            parse(&set(&v, "critical", "yes".into())),
            "/critical",
            "expected a boolean",
        );
        assert_fails(
            parse(&set(&v, "name", "".into())),
            "/name",
            "outside 1..=200",
        );
        assert_fails(
            parse(&set(&v, "version", "1".into())),
            "/version",
            "semantic version",
        );
        assert_fails(
            parse(&set(&v, "schemaUri", "schema.json".into())),
            "/schemaUri",
            "format: uri",
        );
        assert_fails(
            parse(&set(&v, "schemaHash", "sha1:00".into())),
            "/schemaHash",
            "sha256:",
        );
        assert_fails(
            parse(&set(
                &v,
                "requiredCapabilities",
                Value::Array(vec![Value::from("acme.x")]),
            )),
            "/requiredCapabilities/0",
            "expected an object",
        );
        assert_fails(
            parse(&set(&v, "profileUri", "acme".into())),
            "/profileUri",
            "absolute",
        );
        assert_fails(
            parse(&set(&v, "overrides", Value::Bool(false))),
            "",
            "unknown member",
        );
        for m in [
            "profileUri",
            "name",
            "version",
            "schemaUri",
            "schemaHash",
            "requiredCapabilities",
            "critical",
            "commandKinds",
            "eventKinds",
            "overridesCoreInvariants",
            "approvedBy",
            "approvedAt",
            "signature",
        ] {
            let r = parse(&mutate(&v, |o| {
                o.remove(m);
            }));
            assert_fails(r, "", &format!("missing required member \"{m}\""));
        }
    }
}
