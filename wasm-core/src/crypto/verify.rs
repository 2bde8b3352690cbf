//! The six verification stages of §6.4 (checklist §3.3), stopping at the first failure, and the
//! producer side (signing, §3.2 of the checklist).
//!
//! ```text
//!  bytes ─▶ 1 parse ─▶ 2 schema ─▶ 3 signature-envelope ─▶ 4 key-resolution
//!                                                              │
//!            Verified ◀─ 6 signature ◀─ 5 canonicalization ◀───┘
//!  wire:    1,5 → PROTOCOL_VIOLATION   2 → SCHEMA_VALIDATION_FAILED   3,4,6 → AUTH_INVALID_SIGNATURE
//! ```
//!
//! Nothing here authorizes, appends or transitions: a [`Verified`] only says that the Principal
//! bound to the key signed these bytes.

use super::ed25519::{self, StrictSignature};
use super::profile::{DocumentKind, SignerRule};
use super::registry::{KeyBinding, ValidatedRegistry};
use crate::encoding::{b64url_decode, b64url_encode, sha256_hash};
use crate::json::{self, JcsError, Object, Value};
use crate::model::common::{Actor, ActorType};
use crate::model::{self as m, Id};
use crate::time::Timestamp;
use std::fmt;

/// The semantic stages of §6.4 plus the separate `admission` layer, as the bundles spell them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    Parse,
    Schema,
    SignatureEnvelope,
    KeyResolution,
    Canonicalization,
    Signature,
    /// Not a seventh cryptographic stage: First-Admission / historical-trust validation.
    Admission,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Parse => "parse",
            Stage::Schema => "schema",
            Stage::SignatureEnvelope => "signature-envelope",
            Stage::KeyResolution => "key-resolution",
            Stage::Canonicalization => "canonicalization",
            Stage::Signature => "signature",
            Stage::Admission => "admission",
        }
    }

    /// The wire code of a failure at this stage (§6.4, last paragraphs; §19).
    pub fn wire_code(self) -> m::error::ErrorCode {
        use m::error::ErrorCode;
        match self {
            Stage::Parse | Stage::Canonicalization => ErrorCode::ProtocolViolation,
            Stage::Schema => ErrorCode::SchemaValidationFailed,
            Stage::SignatureEnvelope
            | Stage::KeyResolution
            | Stage::Signature
            | Stage::Admission => ErrorCode::AuthInvalidSignature,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A verification failure: the first failing stage and a protected diagnostic.
///
/// The diagnostic is for the audit record only (S-18); a wire response carries just
/// [`VerifyError::wire_code`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    pub stage: Stage,
    pub reason: String,
}

impl VerifyError {
    fn at(stage: Stage, reason: impl Into<String>) -> VerifyError {
        VerifyError {
            stage,
            reason: reason.into(),
        }
    }

    pub fn wire_code(&self) -> m::error::ErrorCode {
        self.stage.wire_code()
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.wire_code(), self.stage, self.reason)
    }
}

impl std::error::Error for VerifyError {}

/// The result of all six stages (`complete`).
#[derive(Clone, Debug)]
pub struct Verified {
    pub kind: DocumentKind,
    /// The parsed document, exactly as received (values and spellings untouched).
    pub document: Value,
    pub organization_id: String,
    pub key_id: String,
    /// The Principal bound to the key (equals the expected signer, or a service for a card).
    pub principal: Actor,
    /// The protected signed time, byte-for-byte as received.
    pub protected_time: Timestamp,
    /// Stage-5 JCS bytes: the document without its top-level `signature`.
    pub signing_bytes: Vec<u8>,
    /// `sha256:` of the signing bytes: the First-Admission key.
    pub signing_hash: String,
    /// `signature.value` as received.
    pub signature: String,
    /// The selected binding's effective interval, for admission (§6.4).
    pub binding: KeyBinding,
    /// The typed Command when `kind` is `command` (stage 2 parsed it; kept so the authority
    /// does not parse it again).
    pub command: Option<Box<m::command::Command>>,
}

/// Where stage 4 gets its evidence: the complete, validated Registry revision or the reason
/// it cannot be established (unavailable, incomplete, invalid — all fail stage 4, S-6).
pub trait KeyResolver {
    fn registry(&self) -> Result<&ValidatedRegistry, String>;
}

impl KeyResolver for ValidatedRegistry {
    fn registry(&self) -> Result<&ValidatedRegistry, String> {
        Ok(self)
    }
}

impl KeyResolver for Result<ValidatedRegistry, String> {
    fn registry(&self) -> Result<&ValidatedRegistry, String> {
        self.as_ref().map_err(Clone::clone)
    }
}

enum ExpectedSigner {
    Exact(Actor),
    AnyService,
}

/// Runs the six stages over received bytes.
pub fn verify(
    bytes: &[u8],
    kind: DocumentKind,
    keys: &dyn KeyResolver,
) -> Result<Verified, VerifyError> {
    // Stage 1: strict parse (D-2).
    let document = json::parse(bytes).map_err(|e| VerifyError::at(Stage::Parse, e.to_string()))?;
    verify_value(document, kind, keys)
}

/// Runs stages 2-6 over a value that was already strictly parsed (stage 1), e.g. a Command
/// embedded in a frame.
pub fn verify_value(
    document: Value,
    kind: DocumentKind,
    keys: &dyn KeyResolver,
) -> Result<Verified, VerifyError> {
    // Stage 2: the normative schema, timestamp profile on (D-9).
    let command = if kind == DocumentKind::Command {
        let c: m::command::Command = m::from_value(&document, true)
            .map_err(|e| VerifyError::at(Stage::Schema, e.to_string()))?;
        Some(Box::new(c))
    } else {
        (kind.validator())(&document, true)
            .map_err(|e| VerifyError::at(Stage::Schema, e.to_string()))?;
        None
    };

    // Stage 3: signature envelope and protected time.
    let env = |r: &str| VerifyError::at(Stage::SignatureEnvelope, r.to_owned());
    let time_ptr = kind.protected_time_pointer();
    let protected_text = document
        .pointer(time_ptr)
        .and_then(Value::as_str)
        .ok_or_else(|| env("protected signed time is missing"))?;
    let created_text = document
        .pointer("/signature/createdAt")
        .and_then(Value::as_str)
        .ok_or_else(|| env("signature.createdAt is missing"))?;
    let protected_time = Timestamp::parse_profile(protected_text)
        .map_err(|e| env(&format!("protected time {protected_text:?}: {e}")))?;
    if !protected_time.is_utc_upper_z() {
        return Err(env(&format!(
            "protected time {protected_text:?} ({time_ptr}) is not UTC with an uppercase Z"
        )));
    }
    if created_text != protected_text {
        return Err(env(&format!(
            "signature.createdAt {created_text:?} is not byte-identical to {time_ptr} \
             {protected_text:?}"
        )));
    }
    let expected = match kind.signer_rule() {
        SignerRule::ServicePrincipal => ExpectedSigner::AnyService,
        SignerRule::PrincipalObject(ptr) => {
            let v = document
                .pointer(ptr)
                .ok_or_else(|| env(&format!("expected signer {ptr} is missing")))?;
            let actor: Actor =
                m::from_value(v, true).map_err(|e| env(&format!("expected signer {ptr}: {e}")))?;
            ExpectedSigner::Exact(actor)
        }
        SignerRule::AgentId(ptr) => {
            let id = document
                .pointer(ptr)
                .and_then(Value::as_str)
                .ok_or_else(|| env(&format!("expected signer {ptr} is missing")))?;
            ExpectedSigner::Exact(Actor {
                actor_type: ActorType::Agent,
                id: Id(id.to_owned()),
            })
        }
    };
    let signature_text = document
        .pointer("/signature/value")
        .and_then(Value::as_str)
        .ok_or_else(|| env("signature.value is missing"))?
        .to_owned();
    let raw_sig =
        b64url_decode(&signature_text).map_err(|e| env(&format!("signature.value: {e}")))?;
    let signature = StrictSignature::parse_deferring_order_check(&raw_sig)
        .map_err(|e| env(&format!("signature ({} bytes): {e}", raw_sig.len())))?;
    // The `[L]R = I` part of stage 3 is deferred (it costs a scalar multiplication and a valid
    // signature implies it); any later failure re-checks it first so that a small- or
    // mixed-order R is still reported at stage 3, never at 4, 5 or 6.
    let later = |stage: Stage, reason: String| match signature.check_r_prime_order() {
        Ok(()) => VerifyError::at(stage, reason),
        Err(e) => VerifyError::at(Stage::SignatureEnvelope, format!("signature R: {e}")),
    };
    let key_id = document
        .pointer("/signature/keyId")
        .and_then(Value::as_str)
        .ok_or_else(|| env("signature.keyId is missing"))?
        .to_owned();

    // Stage 4: complete Registry evidence first, then selection and the interval (S-1..S-6).
    let keyres = |r: String| later(Stage::KeyResolution, r);
    let registry = keys.registry().map_err(keyres)?;
    let binding = registry
        .binding(&key_id)
        .ok_or_else(|| keyres(format!("key {key_id:?} is not in the Registry")))?;
    match &expected {
        ExpectedSigner::Exact(actor) if *actor != binding.principal => {
            return Err(keyres(format!(
                "key {key_id:?} is bound to {} {}, not the expected signer {} {}",
                binding.principal.actor_type, binding.principal.id, actor.actor_type, actor.id
            )));
        }
        ExpectedSigner::AnyService if binding.principal.actor_type != ActorType::Service => {
            return Err(keyres(format!(
                "key {key_id:?} is bound to a {}, but an Agent Card needs an Organization \
                 service Principal",
                binding.principal.actor_type
            )));
        }
        _ => {}
    }
    if !binding.valid_at(protected_time.instant()) {
        return Err(keyres(format!(
            "key {key_id:?} is not valid at {protected_text} (validFrom {}, validUntil {}, \
             revokedAt {})",
            binding.valid_from,
            binding
                .valid_until
                .as_ref()
                .map_or("-".into(), ToString::to_string),
            binding
                .revoked_at
                .as_ref()
                .map_or("-".into(), ToString::to_string),
        )));
    }

    // Stage 5: JCS of the document without its top-level signature (D-3).
    let signing_bytes = json::canonicalize_without(&document, "signature")
        .map_err(|e| later(Stage::Canonicalization, e.to_string()))?;
    let signing_hash = sha256_hash(&signing_bytes);

    // Stage 6: the Ed25519 equation.
    if !ed25519::verify(&binding.public_key, &signature, &signing_bytes) {
        return Err(later(
            Stage::Signature,
            "the Ed25519 equation does not hold for these signing bytes".into(),
        ));
    }

    Ok(Verified {
        kind,
        organization_id: registry.organization_id().to_owned(),
        key_id,
        principal: binding.principal.clone(),
        protected_time,
        signing_bytes,
        signing_hash,
        signature: signature_text,
        binding: binding.clone(),
        document,
        command,
    })
}

/// Why a document could not be signed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignError {
    NotAnObject,
    /// The protected signed time is missing or not a UTC `Z` profile timestamp.
    ProtectedTime(String),
    Jcs(JcsError),
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignError::NotAnObject => f.write_str("a Signed Document must be a JSON object"),
            SignError::ProtectedTime(r) => write!(f, "protected signed time: {r}"),
            SignError::Jcs(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SignError {}

/// Signs `document` in place (checklist §3.2): sets `signature` with `createdAt` byte-identical
/// to the protected time, over the JCS of everything else. Returns the signing hash.
pub fn sign_document(
    document: &mut Value,
    kind: DocumentKind,
    key_id: &str,
    seed: &[u8; 32],
) -> Result<String, SignError> {
    sign_document_with(document, kind, key_id, &ed25519::Signer::from_seed(seed))
}

/// [`sign_document`] with a prepared signer (signing many documents with one key).
pub fn sign_document_with(
    document: &mut Value,
    kind: DocumentKind,
    key_id: &str,
    signer: &ed25519::Signer,
) -> Result<String, SignError> {
    let Value::Object(obj) = document else {
        return Err(SignError::NotAnObject);
    };
    let time_ptr = kind.protected_time_pointer();
    let protected = obj
        .get(&time_ptr[1..])
        .and_then(Value::as_str)
        .ok_or_else(|| SignError::ProtectedTime(format!("{time_ptr} is missing")))?
        .to_owned();
    let t = Timestamp::parse_profile(&protected)
        .map_err(|e| SignError::ProtectedTime(format!("{protected:?}: {e}")))?;
    if !t.is_utc_upper_z() {
        return Err(SignError::ProtectedTime(format!(
            "{protected:?} must be UTC with an uppercase Z"
        )));
    }
    obj.remove("signature");
    let signing_bytes = json::canonicalize(document).map_err(SignError::Jcs)?;
    let value = b64url_encode(&signer.sign(&signing_bytes));
    let mut sig = Object::new();
    sig.insert("algorithm", Value::string("Ed25519"));
    sig.insert("keyId", Value::string(key_id));
    sig.insert("createdAt", Value::string(protected));
    sig.insert("value", Value::string(value));
    if let Value::Object(obj) = document {
        obj.insert("signature", Value::Object(sig));
    }
    Ok(sha256_hash(&signing_bytes))
}
