//! `work-contract.schema.json`: the required Work Contract of a WorkItem (§10.1; checklist §6).

use super::common::{AcceptanceCriterion, Budget, CapabilityRef, Extensions, ResourceGrant};
use super::{
    Cx, Duration, FromJson, Id, NonEmpty, PosInt, SchemaError, Sha256Hash, Str, ToJson, Unique, Uri,
};
use crate::json::{Object, Value};
use crate::time::Timestamp;
use crate::{object, string_enum};

/// Defines a string newtype checked by a byte predicate (an anchored ASCII pattern).
macro_rules! pattern_string {
    ($(#[$m:meta])* $name:ident, $pattern:literal, |$b:ident| $ok:expr) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub String);

        impl FromJson for $name {
            fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
                let s = cx.string(v)?;
                let $b = s.as_bytes();
                if $ok {
                    Ok($name(s.to_owned()))
                } else {
                    Err(cx.err(format!("{s:?} does not match the pattern {}", $pattern)))
                }
            }
        }

        impl ToJson for $name {
            fn to_json(&self) -> Value {
                Value::string(self.0.clone())
            }
        }
    };
}

fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&c)
}

pattern_string!(
    /// `deliverableId`: `^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$`.
    DeliverableId,
    "^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$",
    |b| !b.is_empty()
        && b.len() <= 128
        && b[0].is_ascii_alphanumeric()
        && b[1..].iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
);

pattern_string!(
    /// `mediaType`: `^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+$`.
    MediaType,
    "^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+$",
    |b| match b.iter().position(|&c| c == b'/') {
        Some(i) => {
            i > 0
                && i + 1 < b.len()
                && b[..i].iter().all(|&c| is_token_char(c))
                && b[i + 1..].iter().all(|&c| is_token_char(c))
        }
        None => false,
    }
);

pattern_string!(
    /// A `retryPolicy.retryableFailures` item: `^[A-Z][A-Z0-9_]{1,127}$`.
    FailureCode,
    "^[A-Z][A-Z0-9_]{1,127}$",
    |b| (2..=128).contains(&b.len())
        && b[0].is_ascii_uppercase()
        && b[1..].iter().all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
);

object!(
    /// A `requiredDeliverables` item.
    pub struct Deliverable {
        "deliverableId" => deliverable_id: req DeliverableId,
        "description" => description: req Str<1, 4000>,
        "mediaType" => media_type: req MediaType,
        "schema" => schema: req Uri,
    }
);

string_enum!(
    /// `requestedUrgency`.
    pub enum Urgency {
        Routine = "routine",
        Normal = "normal",
        High = "high",
        Critical = "critical",
    }
);

string_enum!(
    /// `retryPolicy.backoff`.
    pub enum Backoff {
        None = "none",
        Fixed = "fixed",
        Exponential = "exponential",
    }
);

object!(
    /// `retryPolicy` (§11.4).
    pub struct RetryPolicy {
        "maxAttempts" => max_attempts: req PosInt,
        "backoff" => backoff: req Backoff,
        "maxDelay" => max_delay: req Duration,
        "retryableFailures" => retryable_failures: req Unique<FailureCode>,
    }
);

string_enum!(
    /// `sideEffectRisk` (§12).
    pub enum SideEffectRisk {
        None = "none",
        Reversible = "reversible",
        External = "external",
        HighRisk = "high_risk",
        Destructive = "destructive",
    }
);

string_enum!(
    /// `executionApproval` (§12).
    pub enum ExecutionApproval {
        NotRequired = "not_required",
        PolicyRequired = "policy_required",
        HumanRequired = "human_required",
    }
);

object!(
    /// A Work Contract (§10.1): everything a Worker needs to accept and finish the work.
    pub struct WorkContract {
        "contractVersion" => contract_version: req PosInt,
        "goal" => goal: req Str<1, 10000>,
        "requiredDeliverables" => required_deliverables: req NonEmpty<Deliverable>,
        "acceptanceCriteria" => acceptance_criteria: req NonEmpty<AcceptanceCriterion>,
        "inputArtifacts" => input_artifacts: req Unique<Sha256Hash>,
        "dependencyWorkItemIds" => dependency_work_item_ids: req Unique<Id>,
        "allowedResources" => allowed_resources: req Vec<ResourceGrant>,
        "requiredCapabilities" => required_capabilities: req NonEmpty<CapabilityRef>,
        "deadline" => deadline: req Timestamp,
        "requestedUrgency" => requested_urgency: req Urgency,
        "businessImpact" => business_impact: req Str<1, 4000>,
        "retryPolicy" => retry_policy: req RetryPolicy,
        "budget" => budget: req Budget,
        "sideEffectRisk" => side_effect_risk: req SideEffectRisk,
        "executionApproval" => execution_approval: req ExecutionApproval,
        "constraints" => constraints: opt Object,
        "extensions" => extensions: opt Extensions,
    }
);

/// Validates `v` as a Work Contract.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<WorkContract>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{
        assert_fails, cases, edit, json, load, mutate, vector,
    };
    use crate::model::{from_value, json_equal};

    const SCHEMA: &str = "work-contract.schema.json";

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let w = from_value::<WorkContract>(&v, false)
                    .unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&w.to_json(), &v), "{}: round trip", c.name);
            } else if c
                .instance
                .ends_with("/work-contract-without-acceptance.json")
            {
                assert_fails(
                    validate(&v, false),
                    "",
                    "missing required member \"acceptanceCriteria\"",
                );
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn patterns() {
        let v = vector(SCHEMA, "valid/work-contract.json");
        let d = |k: &str, val: &str| {
            edit(&v, &["requiredDeliverables", "0"], |o| {
                o.insert(k.to_owned(), Value::from(val))
            })
        };
        assert!(validate(&d("mediaType", "text/plain+json"), false).is_ok());
        assert_fails(
            validate(&d("mediaType", "text"), false),
            "/requiredDeliverables/0/mediaType",
            "pattern",
        );
        assert_fails(
            validate(&d("mediaType", "text/"), false),
            "/requiredDeliverables/0/mediaType",
            "pattern",
        );
        assert_fails(
            validate(&d("mediaType", "a/b/c"), false),
            "/requiredDeliverables/0/mediaType",
            "pattern",
        );
        assert_fails(
            validate(&d("mediaType", "text/pl ain"), false),
            "/requiredDeliverables/0/mediaType",
            "pattern",
        );
        assert!(validate(&d("deliverableId", "a.b_c-9"), false).is_ok());
        assert_fails(
            validate(&d("deliverableId", "-a"), false),
            "/requiredDeliverables/0/deliverableId",
            "pattern",
        );
        let long = "a".repeat(129);
        assert_fails(
            validate(&d("deliverableId", &long), false),
            "/requiredDeliverables/0/deliverableId",
            "pattern",
        );
        assert_fails(
            validate(&d("schema", "opaque"), false),
            "/requiredDeliverables/0/schema",
            "format: uri",
        );
        let r = |val: &str| {
            edit(&v, &["retryPolicy"], |o| {
                o.insert("retryableFailures", json(val))
            })
        };
        assert!(validate(&r(r#"["AB", "A_1"]"#), false).is_ok());
        assert_fails(
            validate(&r(r#"["A"]"#), false),
            "/retryPolicy/retryableFailures/0",
            "pattern",
        );
        assert_fails(
            validate(&r(r#"["a_b"]"#), false),
            "/retryPolicy/retryableFailures/0",
            "pattern",
        );
        assert_fails(
            validate(&r(r#"["AB", "AB"]"#), false),
            "/retryPolicy/retryableFailures",
            "uniqueItems",
        );
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/work-contract.json");
        let bad = mutate(&v, |o| o.insert("requiredDeliverables", json("[]")));
        assert_fails(validate(&bad, false), "/requiredDeliverables", "at least 1");
        let bad = mutate(&v, |o| o.insert("requiredCapabilities", json("[]")));
        assert_fails(validate(&bad, false), "/requiredCapabilities", "at least 1");
        let h = "\"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"";
        let bad = mutate(&v, |o| {
            o.insert("inputArtifacts", json(&format!("[{h}, {h}]")))
        });
        assert_fails(validate(&bad, false), "/inputArtifacts", "uniqueItems");
        let bad = mutate(&v, |o| {
            o.insert("dependencyWorkItemIds", json(r#"["urn:a:b", "urn:a:b"]"#))
        });
        assert_fails(
            validate(&bad, false),
            "/dependencyWorkItemIds",
            "uniqueItems",
        );
        let bad = edit(&v, &["retryPolicy"], |o| {
            o.insert("maxDelay", Value::from("5m"))
        });
        assert_fails(validate(&bad, false), "/retryPolicy/maxDelay", "duration");
        let bad = edit(&v, &["retryPolicy"], |o| {
            o.insert("maxAttempts", Value::from(0u64))
        });
        assert_fails(
            validate(&bad, false),
            "/retryPolicy/maxAttempts",
            "outside 1..=",
        );
        let bad = mutate(&v, |o| o.insert("sideEffectRisk", Value::from("low")));
        assert_fails(validate(&bad, false), "/sideEffectRisk", "not one of");
        let bad = mutate(&v, |o| o.insert("executionApproval", Value::from("maybe")));
        assert_fails(validate(&bad, false), "/executionApproval", "not one of");
        let bad = mutate(&v, |o| o.insert("requestedUrgency", Value::from("urgent")));
        assert_fails(validate(&bad, false), "/requestedUrgency", "not one of");
        let bad = mutate(&v, |o| o.insert("constraints", json("[]")));
        assert_fails(validate(&bad, false), "/constraints", "expected an object");
        let bad = edit(&v, &["allowedResources", "0"], |o| {
            o.insert("operations", json(r#"["Read"]"#))
        });
        assert_fails(
            validate(&bad, false),
            "/allowedResources/0/operations/0",
            "operation",
        );
    }
}
