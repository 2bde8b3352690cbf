//! `evidence.schema.json`: a signed Evidence record (§13.2, §14).
//!
//! A completion claim is insufficient: Evidence records subject, the acceptance criteria it
//! maps to (at least one, vector `evidence-without-criteria`), method, result, producer, time
//! and referenced Artifacts. The only non-trivial rule is `subject.id`, `anyOf` an identifier
//! or a content hash.

use super::common::{Actor, CriterionId, Signature};
use super::{Cx, FromJson, Id, NonEmptyUnique, SchemaError, Sha256Hash, Str, ToJson, Unique};
use crate::encoding::is_sha256_hash;
use crate::json::{Object, Value};
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `type`: the review stages of §13.2, plus the structured failure report a failed child
    /// Mission emits (§14).
    pub enum EvidenceType {
        ArtifactIntegrity = "artifact_integrity",
        SchemaValidation = "schema_validation",
        DeterministicTest = "deterministic_test",
        BusinessRule = "business_rule",
        ReviewerAssessment = "reviewer_assessment",
        HumanReview = "human_review",
        PolicyCheck = "policy_check",
        FailureReport = "failure_report",
    }
);

string_enum!(
    /// `subject.type`.
    pub enum SubjectType {
        WorkItem = "work_item",
        Artifact = "artifact",
        Mission = "mission",
    }
);

string_enum!(
    /// `result`.
    pub enum EvidenceResult {
        Passed = "passed",
        Failed = "failed",
        Inconclusive = "inconclusive",
    }
);

/// `subject.id`: `anyOf` [`Id`] or [`Sha256Hash`]. A `sha256:<hex>` string also matches the
/// identifier alternative; it is read as a content hash, the more specific reading.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SubjectRef {
    Hash(Sha256Hash),
    Id(Id),
}

impl SubjectRef {
    pub fn as_str(&self) -> &str {
        match self {
            SubjectRef::Hash(h) => h.as_str(),
            SubjectRef::Id(i) => i.as_str(),
        }
    }
}

impl FromJson for SubjectRef {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        if is_sha256_hash(s) {
            return Ok(SubjectRef::Hash(Sha256Hash(s.to_owned())));
        }
        match crate::id::check_id(s) {
            Ok(()) => Ok(SubjectRef::Id(Id(s.to_owned()))),
            Err(e) => Err(cx.err(format!(
                "{s:?} is neither an identifier ({e}) nor a sha256:<64 lower-case hex> hash (anyOf)"
            ))),
        }
    }
}

impl ToJson for SubjectRef {
    fn to_json(&self) -> Value {
        Value::string(self.as_str().to_owned())
    }
}

object!(
    /// `subject`: what the Evidence is about.
    pub struct EvidenceSubject {
        "type" => subject_type: req SubjectType,
        "id" => id: req SubjectRef,
    }
);

object!(
    /// The Evidence record (§13.2). Signed Document: protected time `createdAt`, expected
    /// signer exactly `generatedBy` (§6.4). It must not include private chain-of-thought
    /// (§13.2; not a schema rule).
    pub struct Evidence {
        "evidenceId" => evidence_id: req Id,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "workItemId" => work_item_id: req Id,
        "type" => evidence_type: req EvidenceType,
        "subject" => subject: req EvidenceSubject,
        /// The acceptance criteria this Evidence maps to (§13.2).
        "criterionIds" => criterion_ids: req NonEmptyUnique<CriterionId>,
        "method" => method: req Str<1, 4000>,
        "result" => result: req EvidenceResult,
        "details" => details: opt Object,
        "artifactHashes" => artifact_hashes: req Unique<Sha256Hash>,
        "generatedBy" => generated_by: req Actor,
        "toolVersion" => tool_version: opt Str<0, 500>,
        "modelVersion" => model_version: opt Str<0, 500>,
        "createdAt" => created_at: req Timestamp,
        "signature" => signature: req Signature,
    }
);

/// Parses `v` as an [`Evidence`] record and discards it (the conformance runner's schema
/// stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Evidence>(v, timestamp_profile).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::from_value;
    use crate::model::testkit::{assert_fails, cases, edit, load, mutate, vector};

    const SCHEMA: &str = "evidence.schema.json";

    fn parse(v: &Value) -> Result<Evidence, SchemaError> {
        from_value::<Evidence>(v, true)
    }

    fn ok(v: &Value) -> Evidence {
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
                    let e = from_value::<Evidence>(&v, profile)
                        .unwrap_or_else(|err| panic!("{}: {err}", case.name));
                    assert_eq!(from_value::<Evidence>(&e.to_json(), profile), Ok(e.clone()));
                }
            } else {
                assert!(case.instance.ends_with("evidence-without-criteria.json"));
                assert_fails(parse(&v), "/criterionIds", "at least 1");
            }
        }
    }

    #[test]
    fn signed_document_vector_parses_with_the_timestamp_profile() {
        let v = load("cryptography/vectors/signed-documents/valid/evidence.json");
        let e = ok(&v);
        assert!(matches!(e.subject.id, SubjectRef::Hash(_)));
        assert_eq!(validate(&v, true), Ok(()));
    }

    // subject.id: anyOf(id, sha256).
    #[test]
    fn subject_id_any_of() {
        let v = vector(SCHEMA, "valid/evidence.json");
        let subject = |id: &str| parse(&edit(&v, &["subject"], |o| o.insert("id", id.into())));
        let e = subject("urn:missionweaveprotocol:work-item:one").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(e.subject.id, SubjectRef::Id(_)));
        let h = subject("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        assert!(matches!(h.map(|e| e.subject.id), Ok(SubjectRef::Hash(_))));
        // Upper-case hex is not a hash but is still an absolute URI (scheme `sha256`).
        let upper =
            subject("sha256:0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF");
        assert!(matches!(upper.map(|e| e.subject.id), Ok(SubjectRef::Id(_))));
        assert_fails(subject("work-item-one"), "/subject/id", "anyOf");
        assert_fails(subject("aaaa"), "/subject/id", "neither an identifier");
        assert_fails(
            parse(&edit(&v, &["subject"], |o| {
                o.insert("type", "message".into())
            })),
            "/subject/type",
            "is not one of",
        );
        assert_fails(
            parse(&edit(&v, &["subject"], |o| o.insert("uri", "x".into()))),
            "/subject",
            "unknown member",
        );
    }

    #[test]
    fn members() {
        let v = vector(SCHEMA, "valid/evidence.json");
        ok(&v);
        ok(&set(&v, "type", "failure_report".into()));
        assert_fails(
            parse(&set(&v, "type", "vibes".into())),
            "/type",
            "is not one of",
        );
        assert_fails(
            parse(&set(&v, "result", "ok".into())),
            "/result",
            "is not one of",
        );
        assert_fails(
            parse(&set(&v, "method", "".into())),
            "/method",
            "outside 1..=4000",
        );
        assert_fails(
            parse(&set(&v, "toolVersion", "x".repeat(501).into())),
            "/toolVersion",
            "outside 0..=500",
        );
        ok(&set(&v, "modelVersion", "".into()));
        assert_fails(
            parse(&set(&v, "details", "text".into())),
            "/details",
            "expected an object",
        );
        let ids = |items: &[&str]| Value::Array(items.iter().map(|s| Value::from(*s)).collect());
        assert_fails(
            parse(&set(&v, "criterionIds", ids(&["-x"]))),
            "/criterionIds/0",
            "criterion id",
        );
        assert_fails(
            parse(&set(&v, "criterionIds", ids(&["a", "a"]))),
            "/criterionIds",
            "uniqueItems",
        );
        assert_fails(
            parse(&set(&v, "criterionIds", ids(&[&"a".repeat(129)]))),
            "/criterionIds/0",
            "criterion id",
        );
        ok(&set(
            &v,
            "criterionIds",
            ids(&[&"a".repeat(128), "b.c_d-e"]),
        ));
        assert_fails(
            parse(&set(&v, "chainOfThought", "...".into())),
            "",
            "unknown member",
        );
        for m in [
            "evidenceId",
            "missionId",
            "groupId",
            "workItemId",
            "type",
            "subject",
            "criterionIds",
            "method",
            "result",
            "artifactHashes",
            "generatedBy",
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
