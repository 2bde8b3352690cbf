//! `common.schema.json`: the shared definitions every other schema references.

use super::{
    Array, Base64Url, CapabilityId, Cx, FromJson, Id, NonNegNumber, SafeInt, SchemaError, Semver,
    Str, ToJson,
};
use crate::json::{Object, Value};
use crate::time::Timestamp;
use crate::{const_str, object, string_enum};

const_str!(
    /// `protocolVersion`: the v0.1 wire constant `"0.1"` (§21).
    ProtocolVersion = "0.1"
);

const_str!(
    /// The only v0.1 signature algorithm (§6.4).
    Ed25519 = "Ed25519"
);

string_enum!(
    /// The three Principal types (checklist I-1).
    pub enum ActorType {
        Agent = "agent",
        Human = "human",
        Service = "service",
    }
);

object!(
    /// `common#/$defs/actor`: the exact Principal shape `{type, id}`.
    pub struct Actor {
        "type" => actor_type: req ActorType,
        "id" => id: req Id,
    }
);

impl Actor {
    pub fn new(actor_type: ActorType, id: &str) -> Actor {
        Actor {
            actor_type,
            id: Id(id.to_owned()),
        }
    }
}

fn check_agent(a: &Actor, cx: &mut Cx) -> Result<(), SchemaError> {
    check_actor_type(a, ActorType::Agent, cx)
}

fn check_human(a: &Actor, cx: &mut Cx) -> Result<(), SchemaError> {
    check_actor_type(a, ActorType::Human, cx)
}

fn check_service(a: &Actor, cx: &mut Cx) -> Result<(), SchemaError> {
    check_actor_type(a, ActorType::Service, cx)
}

/// Asserts an actor's `type` (the schema's `agentActor` / `humanActor` / `const`).
pub fn check_actor_type(a: &Actor, want: ActorType, cx: &mut Cx) -> Result<(), SchemaError> {
    if a.actor_type == want {
        Ok(())
    } else {
        cx.at("type", |cx| {
            Err(cx.err(format!("must be \"{want}\", found \"{}\"", a.actor_type)))
        })
    }
}

macro_rules! restricted_actor {
    ($(#[$m:meta])* $name:ident, $check:path) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name(pub Actor);

        impl FromJson for $name {
            fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
                let a = Actor::from_json(v, cx)?;
                $check(&a, cx)?;
                Ok($name(a))
            }
        }

        impl ToJson for $name {
            fn to_json(&self) -> Value {
                self.0.to_json()
            }
        }
    };
}

restricted_actor!(
    /// `common#/$defs/agentActor`.
    AgentActor,
    check_agent
);
restricted_actor!(
    /// `common#/$defs/humanActor`.
    HumanActor,
    check_human
);
restricted_actor!(
    /// An actor whose `type` is the constant `service`.
    ServiceActor,
    check_service
);

object!(
    /// `common#/$defs/signature`: the top-level signature envelope of a Signed Document (§6.4).
    pub struct Signature {
        "algorithm" => algorithm: req Ed25519,
        "keyId" => key_id: req Id,
        "createdAt" => created_at: req Timestamp,
        "value" => value: req Base64Url,
    }
);

object!(
    /// `common#/$defs/publicKey`: a key declared in an Agent Card.
    pub struct PublicKey {
        "keyId" => key_id: req Id,
        "algorithm" => algorithm: req Ed25519,
        "publicKey" => public_key: req Base64Url,
        "validFrom" => valid_from: req Timestamp,
        "validUntil" => valid_until: opt Timestamp,
        "revokedAt" => revoked_at: opt Timestamp,
    }
);

object!(
    /// `common#/$defs/capabilityRef`: a pinned capability version (I-5).
    pub struct CapabilityRef {
        "id" => id: req CapabilityId,
        "version" => version: req Semver,
    }
);

/// ISO 4217-style currency code `^[A-Z]{3}$`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Currency(pub String);

impl FromJson for Currency {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        if s.len() == 3 && s.bytes().all(|c| c.is_ascii_uppercase()) {
            Ok(Currency(s.to_owned()))
        } else {
            Err(cx.err(format!(
                "{s:?} is not a three-letter upper-case currency code"
            )))
        }
    }
}

impl ToJson for Currency {
    fn to_json(&self) -> Value {
        Value::string(self.0.clone())
    }
}

object!(
    /// `common#/$defs/budget`: the six-dimensional Resource Budget (§12); at least one limit.
    pub struct Budget {
        "currency" => currency: opt Currency,
        "financialLimit" => financial_limit: opt NonNegNumber,
        "modelTokenLimit" => model_token_limit: opt SafeInt,
        "toolCallLimit" => tool_call_limit: opt SafeInt,
        "computeSecondsLimit" => compute_seconds_limit: opt SafeInt,
        "wallClockSecondsLimit" => wall_clock_seconds_limit: opt SafeInt,
        "externalSideEffectLimit" => external_side_effect_limit: opt SafeInt,
    }
    check = check_budget;
);

fn check_budget(b: &Budget, cx: &mut Cx) -> Result<(), SchemaError> {
    let any = (b.financial_limit.is_some() && b.currency.is_some())
        || b.model_token_limit.is_some()
        || b.tool_call_limit.is_some()
        || b.compute_seconds_limit.is_some()
        || b.wall_clock_seconds_limit.is_some()
        || b.external_side_effect_limit.is_some();
    if any {
        Ok(())
    } else {
        Err(cx.err(
            "a budget needs at least one limit (financialLimit with currency, or a count limit)",
        ))
    }
}

string_enum!(
    /// `acceptanceCriterion.evidenceRequired` items.
    pub enum EvidenceKind {
        ArtifactIntegrity = "artifact_integrity",
        SchemaValidation = "schema_validation",
        DeterministicTest = "deterministic_test",
        BusinessRule = "business_rule",
        ReviewerAssessment = "reviewer_assessment",
        HumanReview = "human_review",
        PolicyCheck = "policy_check",
    }
);

/// `acceptanceCriterion.criterionId`: `^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CriterionId(pub String);

impl FromJson for CriterionId {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        let b = s.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 128
            && b[0].is_ascii_alphanumeric()
            && b[1..]
                .iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
        if ok {
            Ok(CriterionId(s.to_owned()))
        } else {
            Err(cx.err(format!("{s:?} is not a criterion id")))
        }
    }
}

impl ToJson for CriterionId {
    fn to_json(&self) -> Value {
        Value::string(self.0.clone())
    }
}

object!(
    /// `common#/$defs/acceptanceCriterion` (§10.1).
    pub struct AcceptanceCriterion {
        "criterionId" => criterion_id: req CriterionId,
        "description" => description: req Str<1, 4000>,
        "evidenceRequired" => evidence_required: req Array<EvidenceKind, 1, { usize::MAX }, true>,
    }
);

/// `resourceGrant.operations` items: `^[a-z][a-z0-9._:-]*$`, at most 128 characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Operation(pub String);

impl FromJson for Operation {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        let b = s.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 128
            && b[0].is_ascii_lowercase()
            && b[1..].iter().all(|&c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, b'.' | b'_' | b':' | b'-')
            });
        if ok {
            Ok(Operation(s.to_owned()))
        } else {
            Err(cx.err(format!("{s:?} is not an operation name")))
        }
    }
}

impl ToJson for Operation {
    fn to_json(&self) -> Value {
        Value::string(self.0.clone())
    }
}

object!(
    /// `common#/$defs/resourceGrant`: a resource and the operations allowed on it (§12).
    pub struct ResourceGrant {
        "resource" => resource: req Id,
        "operations" => operations: req Array<Operation, 1, { usize::MAX }, true>,
        "constraints" => constraints: opt Object,
    }
);

string_enum!(
    /// `common#/$defs/classification`.
    pub enum Classification {
        Public = "public",
        Internal = "internal",
        Confidential = "confidential",
        Restricted = "restricted",
    }
);

object!(
    /// One entry of `common#/$defs/extensions`.
    pub struct Extension {
        "version" => version: req Semver,
        "critical" => critical: req bool,
        "data" => data: req Value,
    }
);

/// `common#/$defs/extensions`: profile URI → `{version, critical, data}` (§18, R-10).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extensions(pub Vec<(Id, Extension)>);

impl FromJson for Extensions {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let obj = cx.object(v)?;
        let mut out = Vec::with_capacity(obj.len());
        for (k, val) in obj.iter() {
            let key = k.as_str();
            cx.at(key.to_owned(), |cx| {
                crate::id::check_id(key)
                    .map_err(|e| cx.err(format!("extension name {key:?}: {e}")))?;
                out.push((Id(key.to_owned()), Extension::from_json(val, cx)?));
                Ok(())
            })?;
        }
        Ok(Extensions(out))
    }
}

impl ToJson for Extensions {
    fn to_json(&self) -> Value {
        let mut obj = Object::new();
        for (k, e) in &self.0 {
            obj.insert(k.0.clone(), e.to_json());
        }
        Value::Object(obj)
    }
}
