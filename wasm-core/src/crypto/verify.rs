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

use super::ed25519::{self, EncodedRSignature, StrictSignature};
use super::profile::{DocumentKind, SignerRule};
use super::registry::{KeyBinding, RegistryError, ValidatedRegistry};
use super::secret::SecretSeed;
use crate::encoding::{b64url_decode, b64url_encode, sha256_hash};
use crate::json::{self, JcsError, Object, Value};
use crate::model::common::{Actor, ActorType};
use crate::model::{self as m, Id};
use crate::time::Timestamp;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
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
    pub binding: std::sync::Arc<KeyBinding>,
    /// The typed Command when `kind` is `command` (stage 2 parsed it; kept so the authority
    /// does not parse it again).
    pub command: Option<Box<m::command::Command>>,
}

/// Where stage 4 gets its evidence: the complete, validated Registry revision or the reason
/// it cannot be established (unavailable, incomplete, invalid — all fail stage 4, S-6).
pub trait KeyResolver {
    fn registry(&self) -> Result<&ValidatedRegistry, RegistryError>;
}

impl KeyResolver for ValidatedRegistry {
    fn registry(&self) -> Result<&ValidatedRegistry, RegistryError> {
        Ok(self)
    }
}

impl KeyResolver for Result<ValidatedRegistry, RegistryError> {
    fn registry(&self) -> Result<&ValidatedRegistry, RegistryError> {
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
    verify_value(parse_stage(bytes)?, kind, keys)
}

/// Stage 1: strict parse (D-2).
fn parse_stage(bytes: &[u8]) -> Result<Value, VerifyError> {
    json::parse(bytes).map_err(|e| VerifyError::at(Stage::Parse, e.to_string()))
}

/// Runs stages 2-6 over a value that was already strictly parsed (stage 1), e.g. a Command
/// embedded in a frame.
pub fn verify_value(
    document: Value,
    kind: DocumentKind,
    keys: &dyn KeyResolver,
) -> Result<Verified, VerifyError> {
    let checked = stages_2_to_5::<StrictSignature>(document, kind, keys)?;
    // Stage 6: the Ed25519 equation.
    if !ed25519::verify(
        &checked.binding.public_key,
        &checked.signature,
        &checked.signing_bytes,
    ) {
        return Err(later_failure(
            &checked.signature,
            Stage::Signature,
            "the Ed25519 equation does not hold for these signing bytes".into(),
        ));
    }
    Ok(checked.into_verified())
}

/// Runs the six stages over each document; the results are exactly those of [`verify`] on each
/// document (the same [`Verified`], the same stage and reason on failure).
///
/// Stage 6 shares one field inversion: for every document that passed stages 1-5,
/// `R' = [S]B - [k]A` is computed (curve25519-dalek), all `R'` are encoded together
/// (`compress_batch_alloc`), and each encoding is compared with `Renc`. Equal bytes prove what
/// stages 3 and 6 require of `R`: the encoding of `R'` is canonical and `R'` is on the curve
/// and in the prime-order subgroup (`A` and `B` are), and `[S]B = R + [k]A` holds. So `R` is
/// never decompressed on this path. Any document that fails anywhere from stage 3 on is run
/// through [`verify`] again, which reports the exact stage and reason (e.g. a malformed `R` at
/// stage 3); stage 1-2 failures come from the very same code as in [`verify`] and are returned
/// directly.
///
/// Pure and independent per document: callers may split a batch across threads.
pub fn verify_batch(
    docs: &[&[u8]],
    kind: DocumentKind,
    keys: &dyn KeyResolver,
) -> Vec<Result<Verified, VerifyError>> {
    verify_batch_with(docs, kind, keys, &|points| {
        EdwardsPoint::compress_batch_alloc(points)
    })
}

/// How [`verify_batch`] encodes the `R'` of a batch: curve25519-dalek's batch compression in
/// the product; a test seam that returns too few, too many or wrong encodings shows that every
/// such answer is a rejection or a full re-verification, never an acceptance.
pub type EncodeBatch<'a> = &'a dyn Fn(&[EdwardsPoint]) -> Vec<CompressedEdwardsY>;

/// [`verify_batch`] with the encoding step passed in (see [`EncodeBatch`]).
pub fn verify_batch_with(
    docs: &[&[u8]],
    kind: DocumentKind,
    keys: &dyn KeyResolver,
    encode: EncodeBatch<'_>,
) -> Vec<Result<Verified, VerifyError>> {
    let mut results: Vec<Option<Result<Verified, VerifyError>>> = Vec::with_capacity(docs.len());
    let mut pending = Vec::with_capacity(docs.len());
    for (i, bytes) in docs.iter().enumerate() {
        let checked =
            parse_stage(bytes).and_then(|doc| stages_2_to_5::<EncodedRSignature>(doc, kind, keys));
        results.push(match checked {
            Ok(c) => {
                pending.push((i, c));
                None
            }
            Err(e) if e.stage <= Stage::Schema => Some(Err(e)),
            Err(_) => Some(verify(bytes, kind, keys)),
        });
    }
    let expected: Vec<EdwardsPoint> = pending
        .iter()
        .map(|(_, c)| {
            let key = &c.binding.public_key;
            let k = ed25519::challenge(c.signature.r_bytes(), key, &c.signing_bytes);
            ed25519::expected_r(key, c.signature.s(), &k)
        })
        .collect();
    let encodings = encode(&expected);
    if encodings.len() == pending.len() {
        for ((i, c), encoding) in pending.into_iter().zip(encodings) {
            if &encoding.to_bytes() == c.signature.r_bytes()
                && let Some(slot) = results.get_mut(i)
            {
                *slot = Some(Ok(c.into_verified()));
            }
        }
    }
    // Every document not settled above (an encoding that differs from `Renc`, or a batch
    // encoding that did not give one answer per signature) gets the single-document path,
    // which decides it from scratch: nothing is accepted without its own equation.
    results
        .into_iter()
        .zip(docs)
        .map(|(r, bytes)| r.unwrap_or_else(|| verify(bytes, kind, keys)))
        .collect()
}

/// How stage 3 reads the 64 signature bytes: [`StrictSignature`] decodes `R` (single
/// verification), [`EncodedRSignature`] keeps it as bytes (the batch path, whose failures are
/// re-verified with [`StrictSignature`]).
trait SignatureForm: Sized {
    fn parse(raw: &[u8]) -> Result<Self, ed25519::EncodingError>;
    /// The stage-3 check deferred past the parse (`[L]R = I`), which a later-stage failure must
    /// run first so that a bad `R` is still reported at stage 3.
    fn deferred_check(&self) -> Result<(), ed25519::EncodingError>;
}

impl SignatureForm for StrictSignature {
    fn parse(raw: &[u8]) -> Result<Self, ed25519::EncodingError> {
        StrictSignature::parse_deferring_order_check(raw)
    }

    fn deferred_check(&self) -> Result<(), ed25519::EncodingError> {
        self.check_r_prime_order()
    }
}

impl SignatureForm for EncodedRSignature {
    fn parse(raw: &[u8]) -> Result<Self, ed25519::EncodingError> {
        EncodedRSignature::from_bytes(raw)
    }

    /// Nothing is known about `R` here; `verify_batch` discards such errors and re-verifies.
    fn deferred_check(&self) -> Result<(), ed25519::EncodingError> {
        Ok(())
    }
}

/// A failure at or after stage 4, reported at stage 3 instead when the deferred `R` check fails.
fn later_failure(sig: &impl SignatureForm, stage: Stage, reason: String) -> VerifyError {
    match sig.deferred_check() {
        Ok(()) => VerifyError::at(stage, reason),
        Err(e) => VerifyError::at(Stage::SignatureEnvelope, format!("signature R: {e}")),
    }
}

/// A document that passed stages 1-5, waiting for the stage-6 equation.
struct Checked<'k, S> {
    kind: DocumentKind,
    document: Value,
    registry: &'k ValidatedRegistry,
    binding: &'k std::sync::Arc<KeyBinding>,
    key_id: String,
    protected_time: Timestamp,
    signing_bytes: Vec<u8>,
    signature_text: String,
    signature: S,
    command: Option<Box<m::command::Command>>,
}

impl<S> Checked<'_, S> {
    /// The result once stage 6 holds.
    fn into_verified(self) -> Verified {
        let signing_hash = sha256_hash(&self.signing_bytes);
        Verified {
            kind: self.kind,
            organization_id: self.registry.organization_id().to_owned(),
            key_id: self.key_id,
            principal: self.binding.principal.clone(),
            protected_time: self.protected_time,
            signing_bytes: self.signing_bytes,
            signing_hash,
            signature: self.signature_text,
            binding: std::sync::Arc::clone(self.binding),
            document: self.document,
            command: self.command,
        }
    }
}

/// Stages 2-5, shared by [`verify_value`] and [`verify_batch`].
fn stages_2_to_5<'k, S: SignatureForm>(
    document: Value,
    kind: DocumentKind,
    keys: &'k dyn KeyResolver,
) -> Result<Checked<'k, S>, VerifyError> {
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
    let signature = S::parse(&raw_sig)
        .map_err(|e| env(&format!("signature ({} bytes): {e}", raw_sig.len())))?;
    // The `[L]R = I` part of stage 3 is deferred (it costs a scalar multiplication and a valid
    // signature implies it); any later failure re-checks it first so that a small- or
    // mixed-order R is still reported at stage 3, never at 4, 5 or 6.
    let later = |stage: Stage, reason: String| later_failure(&signature, stage, reason);
    let key_id = document
        .pointer("/signature/keyId")
        .and_then(Value::as_str)
        .ok_or_else(|| env("signature.keyId is missing"))?
        .to_owned();

    // Stage 4: complete Registry evidence first, then selection and the interval (S-1..S-6).
    let keyres = |r: String| later(Stage::KeyResolution, r);
    let registry = keys.registry().map_err(|e| keyres(e.to_string()))?;
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

    Ok(Checked {
        kind,
        document,
        registry,
        binding,
        key_id,
        protected_time,
        signing_bytes,
        signature_text,
        signature,
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
    seed: &SecretSeed,
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
    sig.insert("keyId", Value::string(key_id.to_owned()));
    sig.insert("createdAt", Value::string(protected));
    sig.insert("value", Value::string(value));
    if let Value::Object(obj) = document {
        obj.insert("signature", Value::Object(sig));
    }
    Ok(sha256_hash(&signing_bytes))
}
