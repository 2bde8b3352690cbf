//! `context-package.schema.json`: the signed Context Package (§13.3, §7.2).
//!
//! A Context Package is a signed, versioned, scoped summary and never an authoritative
//! replacement for history: it must cite at least one source Event (vector
//! `context-package-without-event-provenance`), and each decision cites its source Events. No
//! conditional rules; that `fromSequence <= toSequence` is not a schema rule either.

use super::common::{AgentActor, Extensions, Signature};
use super::{Id, NonEmptyUnique, PosInt, SchemaError, Sha256Hash, Str, Unique};
use crate::json::Value;
use crate::object;
use crate::time::Timestamp;

object!(
    /// `sourceEventRange`: the Group sequence range and the Events summarised.
    pub struct SourceEventRange {
        "fromSequence" => from_sequence: req PosInt,
        "toSequence" => to_sequence: req PosInt,
        "eventIds" => event_ids: req NonEmptyUnique<Id>,
    }
);

object!(
    /// `decisions[]`: a decision and the Events that record it.
    pub struct ContextDecision {
        "description" => description: req Str<1, 4000>,
        "sourceEventIds" => source_event_ids: req NonEmptyUnique<Id>,
    }
);

object!(
    /// The Context Package (§13.3). Signed Document: protected time `generatedAt`, expected
    /// signer exactly `generatedBy`, which the schema restricts to an Agent (§6.4).
    pub struct ContextPackage {
        "contextPackageId" => context_package_id: req Id,
        "version" => version: req PosInt,
        /// Provenance to the previous version when updated (§13.3).
        "previousContextPackageId" => previous_context_package_id: opt Id,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "workItemId" => work_item_id: opt Id,
        "sourceEventRange" => source_event_range: req SourceEventRange,
        "artifactHashes" => artifact_hashes: req Unique<Sha256Hash>,
        "summary" => summary: req Str<1, 50000>,
        "decisions" => decisions: req Vec<ContextDecision>,
        "constraints" => constraints: req Vec<Str<1, 4000>>,
        "unresolvedQuestions" => unresolved_questions: req Vec<Str<1, 4000>>,
        "generatedBy" => generated_by: req AgentActor,
        "generatedAt" => generated_at: req Timestamp,
        "extensions" => extensions: opt Extensions,
        "signature" => signature: req Signature,
    }
);

/// Parses `v` as a [`ContextPackage`] and discards it (the conformance runner's schema stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<ContextPackage>(v, timestamp_profile).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testkit::{assert_fails, cases, edit, load, mutate, vector};
    use crate::model::{ToJson, from_value};

    const SCHEMA: &str = "context-package.schema.json";

    fn parse(v: &Value) -> Result<ContextPackage, SchemaError> {
        from_value::<ContextPackage>(v, true)
    }

    fn ok(v: &Value) -> ContextPackage {
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
                    let c = from_value::<ContextPackage>(&v, profile)
                        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
                    assert_eq!(
                        from_value::<ContextPackage>(&c.to_json(), profile),
                        Ok(c.clone())
                    );
                }
            } else {
                assert!(
                    case.instance
                        .ends_with("context-package-without-event-provenance.json")
                );
                assert_fails(parse(&v), "/sourceEventRange/eventIds", "at least 1");
            }
        }
    }

    #[test]
    fn signed_document_vector_parses_with_the_timestamp_profile() {
        let v = load("cryptography/vectors/signed-documents/valid/context-package.json");
        ok(&v);
        assert_eq!(validate(&v, true), Ok(()));
    }

    #[test]
    fn members() {
        let v = vector(SCHEMA, "valid/context-package.json");
        ok(&v);
        assert_fails(
            parse(&edit(&v, &["generatedBy"], |o| {
                o.insert("type", "human".into())
            })),
            "/generatedBy/type",
            "must be \"agent\"",
        );
        assert_fails(
            parse(&set(&v, "version", 0u64.into())),
            "/version",
            "outside 1..=",
        );
        assert_fails(
            parse(&set(&v, "summary", "".into())),
            "/summary",
            "outside 1..=50000",
        );
        assert_fails(
            parse(&set(&v, "constraints", Value::Array(vec!["".into()]))),
            "/constraints/0",
            "outside 1..=4000",
        );
        assert_fails(
            parse(&set(
                &v,
                "unresolvedQuestions",
                Value::Array(vec![Value::Null]),
            )),
            "/unresolvedQuestions/0",
            "expected a string",
        );
        ok(&set(
            &v,
            "previousContextPackageId",
            "urn:missionweaveprotocol:context-package:v0".into(),
        ));
        assert_fails(
            parse(&set(&v, "previousContextPackageId", "v0".into())),
            "/previousContextPackageId",
            "absolute",
        );
        let range = |f: &dyn Fn(&mut crate::json::Object)| {
            parse(&edit(&v, &["sourceEventRange"], |o| f(o)))
        };
        assert_fails(
            range(&|o| o.insert("fromSequence", 0u64.into())),
            "/sourceEventRange/fromSequence",
            "outside 1..=",
        );
        assert_fails(
            range(&|o| {
                o.insert(
                    "eventIds",
                    Value::Array(vec!["urn:e:1".into(), "urn:e:1".into()]),
                )
            }),
            "/sourceEventRange/eventIds",
            "uniqueItems",
        );
        assert_fails(
            range(&|o| o.insert("cursor", 1u64.into())),
            "/sourceEventRange",
            "unknown member",
        );
        let decision =
            |f: &dyn Fn(&mut crate::json::Object)| parse(&edit(&v, &["decisions", "0"], |o| f(o)));
        assert_fails(
            decision(&|o| o.insert("sourceEventIds", Value::Array(vec![]))),
            "/decisions/0/sourceEventIds",
            "at least 1",
        );
        assert_fails(
            decision(&|o| o.insert("description", "".into())),
            "/decisions/0/description",
            "outside 1..=4000",
        );
        assert_fails(
            decision(&|o| o.insert("rationale", "".into())),
            "/decisions/0",
            "unknown member",
        );
        for m in [
            "contextPackageId",
            "version",
            "missionId",
            "groupId",
            "sourceEventRange",
            "artifactHashes",
            "summary",
            "decisions",
            "constraints",
            "unresolvedQuestions",
            "generatedBy",
            "generatedAt",
            "signature",
        ] {
            let r = parse(&mutate(&v, |o| {
                o.remove(m);
            }));
            assert_fails(r, "", &format!("missing required member \"{m}\""));
        }
    }
}
