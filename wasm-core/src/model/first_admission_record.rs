//! `first-admission-record.schema.json`: durable First-Admission metadata (§6.4; checklist
//! §3.5).
//!
//! Not a Signed Document: it binds trusted admission facts of one signed document (by its
//! signing hash) and carries no `signature` (a closed object rejects one). Its timestamps
//! follow the §2 profile, so callers validate it with `timestamp_profile = true`.

use super::common::{Actor, ProtocolVersion, ServiceActor};
use super::{Id, SchemaError, Sha256Hash};
use crate::json::Value;
use crate::object;
use crate::time::Timestamp;

/// `documentKind`: the nine Signed Document profile ids (§6.4), shared with verification.
pub use crate::crypto::DocumentKind;

object!(
    /// A First-Admission Record: the nine fields, no signature.
    pub struct FirstAdmissionRecord {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "admissionRecordId" => admission_record_id: req Id,
        "organizationId" => organization_id: req Id,
        "documentKind" => document_kind: req DocumentKind,
        /// The `sha256:` of the admitted document's JCS signing bytes.
        "signingHash" => signing_hash: req Sha256Hash,
        "keyId" => key_id: req Id,
        /// The Principal bound to `keyId` at admission.
        "principal" => principal: req Actor,
        "trustedAcceptedAt" => trusted_accepted_at: req Timestamp,
        /// `allOf [actor, {type: const service}]`: the admitting service.
        "acceptedBy" => accepted_by: req ServiceActor,
    }
);

/// Validates `v` as a First-Admission Record.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<FirstAdmissionRecord>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{
        assert_fails, cases, edit, json, load, mutate, vector,
    };
    use crate::model::{ToJson, from_value, json_equal};

    const SCHEMA: &str = "first-admission-record.schema.json";

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let r = from_value::<FirstAdmissionRecord>(&v, true)
                    .unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&r.to_json(), &v), "{}: round trip", c.name);
            } else if c
                .instance
                .ends_with("/first-admission-record-with-signature.json")
            {
                assert_fails(validate(&v, true), "", "unknown member \"signature\"");
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn nine_document_kinds() {
        let schema = load("schemas/first-admission-record.schema.json");
        let Some(Value::Array(wire)) = schema.pointer("/properties/documentKind/enum") else {
            panic!("no documentKind enum")
        };
        let ours: Vec<&str> = DocumentKind::ALL.iter().map(|k| k.as_str()).collect();
        let theirs: Vec<&str> = wire.iter().filter_map(Value::as_str).collect();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn rule_accepted_by_is_a_service() {
        let v = vector(SCHEMA, "valid/first-admission-record.json");
        let bad = edit(&v, &["acceptedBy"], |o| {
            o.insert("type", Value::from("agent"))
        });
        assert_fails(
            validate(&bad, true),
            "/acceptedBy/type",
            "must be \"service\"",
        );
        let bad = edit(&v, &["acceptedBy"], |o| {
            o.insert("type", Value::from("robot"))
        });
        assert_fails(validate(&bad, true), "/acceptedBy/type", "not one of");
        // The principal may be any actor type.
        let ok = edit(&v, &["principal"], |o| {
            o.insert("type", Value::from("human"))
        });
        assert!(validate(&ok, true).is_ok());
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/first-admission-record.json");
        let bad = mutate(&v, |o| o.insert("protocolVersion", Value::from("0.2")));
        assert_fails(validate(&bad, true), "/protocolVersion", "must be \"0.1\"");
        let bad = mutate(&v, |o| o.insert("documentKind", Value::from("message")));
        assert_fails(validate(&bad, true), "/documentKind", "not one of");
        let bad = mutate(&v, |o| o.insert("signingHash", Value::from("sha256:ABC")));
        assert_fails(validate(&bad, true), "/signingHash", "sha256");
        for k in [
            "protocolVersion",
            "admissionRecordId",
            "organizationId",
            "documentKind",
            "signingHash",
            "keyId",
            "principal",
            "trustedAcceptedAt",
            "acceptedBy",
        ] {
            let bad = mutate(&v, |o| {
                o.remove(k);
            });
            assert_fails(
                validate(&bad, true),
                "",
                &format!("missing required member \"{k}\""),
            );
        }
        // The §2 profile applies to admission records.
        let bad = mutate(&v, |o| {
            o.insert(
                "trustedAcceptedAt",
                Value::from("2026-07-15T00:05:00-00:00"),
            )
        });
        assert!(validate(&bad, false).is_ok());
        assert_fails(validate(&bad, true), "/trustedAcceptedAt", "-00:00");
    }

    /// The conditional rules agree with an independent JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = vector(SCHEMA, "valid/first-admission-record.json");
        let axes = [
            Axis::values(
                &["acceptedBy"],
                "type",
                &["agent", "human", "service", "robot"],
            ),
            Axis::values(&["principal"], "type", &["agent", "human", "service"]),
            Axis::optional(&[], "signature", json("{}")),
        ];
        let (accepted, rejected) =
            agree_on_matrix(&base, &axes, |v| validate(v, false), |v| oracle.accepts(v));
        assert!(
            accepted > 0 && rejected > 0,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
