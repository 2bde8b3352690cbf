//! Organization Registry evidence for key resolution (§6.4 stage 4, checklist S-1..S-7).
//!
//! [`RegistryEvidence`] is the evidence as supplied (the bundle's Registry-fixture shape, which
//! checks structure only). [`RegistryEvidence::validate`] applies every semantic check to every
//! binding — unrelated ones included — and only then yields a [`ValidatedRegistry`] from which a
//! key may be selected: strict URIs, Ed25519 only, canonical 32-byte prime-order public keys, the
//! timestamp profile, append-only validity history, no key-ID rebinding, no public-key reuse and
//! no key-ID alias. Holding a `ValidatedRegistry` is the proof that those checks ran, so a
//! verifier may reuse it across many documents of the same Registry revision.

use super::ed25519::StrictPublicKey;
use crate::encoding::b64url_decode;
use crate::id::is_absolute_uri;
use crate::json::Value;
use crate::model::common::{Actor, ActorType};
use crate::model::{Cx, Id, SchemaError};
use crate::time::{Instant, Timestamp};
use std::collections::BTreeMap;

/// Why Registry evidence establishes no key set (S-1..S-3). A protected diagnostic: on the
/// wire every case is `AUTH_INVALID_SIGNATURE` at stage 4 (S-6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// The evidence could not be read at all (e.g. a fixture that fails its schema).
    Unreadable(String),
    /// `organizationId` is not an absolute URI.
    OrganizationId(String),
    /// Binding `index` fails on its own.
    Binding { index: usize, reason: BindingError },
    /// A key ID bound to another Principal or key (§6.4: no rebinding).
    Rebound { index: usize, key_id: String },
    /// A key ID declared twice with different validity.
    ConflictingValidity { index: usize, key_id: String },
    /// One public key under two key IDs (key reuse or a key-ID alias).
    KeyReuse {
        index: usize,
        key_id: String,
        registered_as: String,
    },
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistryError::Unreadable(why) => f.write_str(why),
            RegistryError::OrganizationId(id) => {
                write!(f, "registry organizationId {id:?} is not an absolute URI")
            }
            RegistryError::Binding { index, reason } => write!(f, "binding {index}: {reason}"),
            RegistryError::Rebound { index, key_id } => write!(
                f,
                "binding {index}: key ID {key_id:?} is rebound to another Principal or key"
            ),
            RegistryError::ConflictingValidity { index, key_id } => write!(
                f,
                "binding {index}: key ID {key_id:?} is declared twice with different validity"
            ),
            RegistryError::KeyReuse {
                index,
                key_id,
                registered_as,
            } => write!(
                f,
                "binding {index}: public key of {key_id:?} is already registered as \
                 {registered_as:?} (key reuse or key-ID alias)"
            ),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Why one binding record is invalid (§6.4 S-1, S-2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindingError {
    /// `what` (`keyId`, `principal id`) is not an absolute URI.
    NotAbsoluteUri {
        what: &'static str,
        value: String,
    },
    UnknownPrincipalType(String),
    /// Only Ed25519 is admitted.
    Algorithm(String),
    /// Not a canonical 32-byte prime-order key, or not base64url.
    PublicKey(String),
    /// A timestamp outside the profile.
    Time {
        what: &'static str,
        value: String,
        reason: String,
    },
    /// The validity history is not numbered 1, 2, 3…
    HistoryGap {
        sequence: u64,
        position: usize,
    },
    /// A status recorded before its predecessor.
    RecordedBackwards {
        sequence: u64,
    },
    /// A status moves `validUntil` or `revokedAt` later (§6.4: never).
    BoundaryLater {
        sequence: u64,
        what: &'static str,
    },
}

impl std::fmt::Display for BindingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindingError::NotAbsoluteUri { what, value } => {
                write!(f, "{what} {value:?} is not an absolute URI")
            }
            BindingError::UnknownPrincipalType(t) => write!(f, "principal type {t:?} is unknown"),
            BindingError::Algorithm(a) => write!(f, "algorithm {a:?} is not Ed25519"),
            BindingError::PublicKey(why) => write!(f, "publicKey: {why}"),
            BindingError::Time {
                what,
                value,
                reason,
            } => write!(f, "{what} {value:?}: {reason}"),
            BindingError::HistoryGap { sequence, position } => write!(
                f,
                "validity history sequence {sequence} at position {position} is not contiguous \
                 from 1"
            ),
            BindingError::RecordedBackwards { sequence } => {
                write!(f, "recordedAt of status {sequence} goes backwards")
            }
            BindingError::BoundaryLater { sequence, what } => write!(
                f,
                "status {sequence} moves {what} later, which the Registry must not do"
            ),
        }
    }
}

/// The bundle's Registry-fixture cap on bindings (`registry-fixture.schema.json`, `maxItems`).
pub const FIXTURE_MAX_BINDINGS: usize = 64;

/// The most bindings a served Organization Registry may hold ([`RegistryEvidence::from_registry_json`]):
/// about 1 MB of JSON, which a browser parses and validates in well under a second.
pub const MAX_REGISTRY_BINDINGS: usize = 4096;

/// One validity-status record (append-only, §6.4).
#[derive(Clone, Debug, PartialEq)]
pub struct StatusRecord {
    pub sequence: u64,
    pub recorded_at: String,
    pub valid_until: Option<String>,
    pub revoked_at: Option<String>,
}

/// One signing-key binding as supplied; nothing in it is trusted until validated.
#[derive(Clone, Debug, PartialEq)]
pub struct BindingRecord {
    pub key_id: String,
    pub principal_type: String,
    pub principal_id: String,
    pub algorithm: String,
    pub public_key: String,
    pub valid_from: String,
    pub validity_history: Vec<StatusRecord>,
}

/// Registry evidence for one Organization and one authoritative revision.
#[derive(Clone, Debug, PartialEq)]
pub struct RegistryEvidence {
    pub organization_id: String,
    pub bindings: Vec<BindingRecord>,
}

/// A binding that passed every check, with its effective validity interval.
#[derive(Clone, Debug)]
pub struct KeyBinding {
    pub key_id: String,
    pub principal: Actor,
    pub public_key: StrictPublicKey,
    pub public_key_text: String,
    pub valid_from: Timestamp,
    /// The earliest `validUntil` ever recorded (§6.4: it can only move earlier).
    pub valid_until: Option<Timestamp>,
    /// The earliest `revokedAt` ever recorded.
    pub revoked_at: Option<Timestamp>,
}

impl KeyBinding {
    /// The half-open interval test of S-5: `validFrom <= t`, `t < validUntil`, `t < revokedAt`.
    pub fn valid_at(&self, t: &Instant) -> bool {
        self.valid_from.instant() <= t
            && self.valid_until.as_ref().is_none_or(|u| t < u.instant())
            && self.revoked_at.as_ref().is_none_or(|r| t < r.instant())
    }
}

/// Registry evidence whose Organization-wide invariants have been established.
#[derive(Clone, Debug)]
pub struct ValidatedRegistry {
    organization_id: String,
    /// Shared with every [`super::Verified`] that used the binding (no copy per document).
    by_key_id: BTreeMap<String, std::sync::Arc<KeyBinding>>,
}

impl ValidatedRegistry {
    pub fn organization_id(&self) -> &str {
        &self.organization_id
    }

    /// Selects the binding for `key_id` (stage 4 selection, S-4); `None` is an unknown key.
    pub fn binding(&self, key_id: &str) -> Option<&std::sync::Arc<KeyBinding>> {
        self.by_key_id.get(key_id)
    }

    pub fn bindings(&self) -> impl Iterator<Item = &KeyBinding> {
        self.by_key_id.values().map(|b| &**b)
    }
}

fn fixture_string(
    obj: &crate::json::Object,
    name: &str,
    max: usize,
    cx: &mut Cx,
) -> Result<String, SchemaError> {
    let v = obj.get(name).ok_or_else(|| cx.missing(name))?;
    cx.at(name.to_owned(), |cx| {
        let s = cx.string(v)?;
        let n = s.chars().count();
        if n == 0 || n > max {
            return Err(cx.err(format!("length {n} is outside 1..={max}")));
        }
        Ok(s.to_owned())
    })
}

fn closed(obj: &crate::json::Object, allowed: &[&str], cx: &Cx) -> Result<(), SchemaError> {
    for (k, _) in obj.iter() {
        if !allowed.contains(&k.as_str()) {
            return Err(cx.unknown(k.as_str()));
        }
    }
    Ok(())
}

impl RegistryEvidence {
    /// Reads the bundle's Registry-fixture shape (`cryptography/registry-fixture.schema.json`):
    /// structure only, deliberately not semantics (those belong to [`Self::validate`]).
    pub fn from_fixture_json(v: &Value) -> Result<RegistryEvidence, SchemaError> {
        Self::from_json_capped(v, FIXTURE_MAX_BINDINGS)
    }

    /// Reads an Organization's served Registry (`GET /api/registry`): the fixture's shape, with
    /// up to [`MAX_REGISTRY_BINDINGS`] bindings instead of the fixture's 64. A running
    /// Organization outgrows the fixture's cap (every enrolled or rotated key is a binding), and a
    /// Registry that no client can read verifies nothing (issue 26).
    pub fn from_registry_json(v: &Value) -> Result<RegistryEvidence, SchemaError> {
        Self::from_json_capped(v, MAX_REGISTRY_BINDINGS)
    }

    fn from_json_capped(v: &Value, cap: usize) -> Result<RegistryEvidence, SchemaError> {
        let mut cx = Cx::new();
        let cx = &mut cx;
        let obj = cx.object(v)?;
        closed(obj, &["organizationId", "bindings"], cx)?;
        let organization_id = fixture_string(obj, "organizationId", 512, cx)?;
        let list = obj.get("bindings").ok_or_else(|| cx.missing("bindings"))?;
        let bindings = cx.at("bindings", |cx| {
            let Value::Array(items) = list else {
                return Err(cx.err("expected an array"));
            };
            if items.is_empty() || items.len() > cap {
                return Err(cx.err(format!("{} bindings (1..={cap} allowed)", items.len())));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, b)| cx.at(i, |cx| Self::binding_from_fixture(b, cx)))
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(RegistryEvidence {
            organization_id,
            bindings,
        })
    }

    fn binding_from_fixture(v: &Value, cx: &mut Cx) -> Result<BindingRecord, SchemaError> {
        let obj = cx.object(v)?;
        closed(
            obj,
            &[
                "keyId",
                "principal",
                "algorithm",
                "publicKey",
                "validFrom",
                "validityHistory",
            ],
            cx,
        )?;
        let key_id = fixture_string(obj, "keyId", 512, cx)?;
        let p = obj
            .get("principal")
            .ok_or_else(|| cx.missing("principal"))?;
        let (principal_type, principal_id) = cx.at("principal", |cx| {
            let po = cx.object(p)?;
            closed(po, &["type", "id"], cx)?;
            let t = fixture_string(po, "type", 16, cx)?;
            if !matches!(t.as_str(), "agent" | "human" | "service") {
                return Err(cx.err(format!(
                    "principal type {t:?} is not agent, human or service"
                )));
            }
            Ok((t, fixture_string(po, "id", 512, cx)?))
        })?;
        let algorithm = fixture_string(obj, "algorithm", 64, cx)?;
        let public_key = fixture_string(obj, "publicKey", 4096, cx)?;
        let valid_from = fixture_string(obj, "validFrom", 128, cx)?;
        let hist = obj
            .get("validityHistory")
            .ok_or_else(|| cx.missing("validityHistory"))?;
        let validity_history = cx.at("validityHistory", |cx| {
            let Value::Array(items) = hist else {
                return Err(cx.err("expected an array"));
            };
            if items.len() > 64 {
                return Err(cx.err("more than 64 status records"));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    cx.at(i, |cx| {
                        let so = cx.object(s)?;
                        closed(
                            so,
                            &["sequence", "recordedAt", "validUntil", "revokedAt"],
                            cx,
                        )?;
                        let seq = so.get("sequence").ok_or_else(|| cx.missing("sequence"))?;
                        let sequence = cx.at("sequence", |cx| {
                            cx.number(seq)?
                                .as_safe_u64()
                                .filter(|n| *n >= 1)
                                .ok_or_else(|| cx.err("sequence must be a positive safe integer"))
                        })?;
                        let opt =
                            |name: &str, cx: &mut Cx| -> Result<Option<String>, SchemaError> {
                                if so.contains_key(name) {
                                    fixture_string(so, name, 128, cx).map(Some)
                                } else {
                                    Ok(None)
                                }
                            };
                        Ok(StatusRecord {
                            sequence,
                            recorded_at: fixture_string(so, "recordedAt", 128, cx)?,
                            valid_until: opt("validUntil", cx)?,
                            revoked_at: opt("revokedAt", cx)?,
                        })
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(BindingRecord {
            key_id,
            principal_type,
            principal_id,
            algorithm,
            public_key,
            valid_from,
            validity_history,
        })
    }

    /// Registry evidence in the bundle's Registry-fixture shape (the inverse of
    /// `RegistryEvidence::from_fixture_json`).
    pub fn to_fixture_json(&self) -> Value {
        let bindings = self
            .bindings
            .iter()
            .map(|b| {
                let principal = crate::json::Object::from_iter([
                    ("type", Value::string(b.principal_type.clone())),
                    ("id", Value::string(b.principal_id.clone())),
                ]);
                let history = b
                    .validity_history
                    .iter()
                    .map(|r| {
                        let mut o = crate::json::Object::new();
                        o.insert("sequence", Value::from(r.sequence));
                        o.insert("recordedAt", Value::string(r.recorded_at.clone()));
                        if let Some(u) = &r.valid_until {
                            o.insert("validUntil", Value::string(u.clone()));
                        }
                        if let Some(r) = &r.revoked_at {
                            o.insert("revokedAt", Value::string(r.clone()));
                        }
                        Value::Object(o)
                    })
                    .collect();
                Value::Object(crate::json::Object::from_iter([
                    ("keyId", Value::string(b.key_id.clone())),
                    ("principal", Value::Object(principal)),
                    ("algorithm", Value::string(b.algorithm.clone())),
                    ("publicKey", Value::string(b.public_key.clone())),
                    ("validFrom", Value::string(b.valid_from.clone())),
                    ("validityHistory", Value::Array(history)),
                ]))
            })
            .collect();
        Value::Object(crate::json::Object::from_iter([
            (
                "organizationId",
                Value::string(self.organization_id.clone()),
            ),
            ("bindings", Value::Array(bindings)),
        ]))
    }

    /// Establishes the Organization-wide invariants over the complete evidence (S-1..S-3).
    /// The error is a protected diagnostic; on the wire every failure is
    /// `AUTH_INVALID_SIGNATURE` (S-6).
    pub fn validate(&self) -> Result<ValidatedRegistry, RegistryError> {
        if !is_absolute_uri(&self.organization_id) {
            return Err(RegistryError::OrganizationId(self.organization_id.clone()));
        }
        let mut by_key_id: BTreeMap<String, std::sync::Arc<KeyBinding>> = BTreeMap::new();
        // public key bytes -> key id, to refuse reuse under another key ID or Principal.
        let mut by_public_key: BTreeMap<[u8; 32], String> = BTreeMap::new();
        for (i, b) in self.bindings.iter().enumerate() {
            let binding = validate_binding(b)
                .map_err(|reason| RegistryError::Binding { index: i, reason })?;
            if let Some(existing) = by_key_id.get(&binding.key_id) {
                // A repeated identical declaration is the same logical binding (§6.4).
                if existing.principal != binding.principal
                    || existing.public_key.as_bytes() != binding.public_key.as_bytes()
                {
                    return Err(RegistryError::Rebound {
                        index: i,
                        key_id: binding.key_id.clone(),
                    });
                }
                if existing.valid_from.instant() != binding.valid_from.instant()
                    || existing.valid_until.as_ref().map(Timestamp::instant)
                        != binding.valid_until.as_ref().map(Timestamp::instant)
                    || existing.revoked_at.as_ref().map(Timestamp::instant)
                        != binding.revoked_at.as_ref().map(Timestamp::instant)
                {
                    return Err(RegistryError::ConflictingValidity {
                        index: i,
                        key_id: binding.key_id.clone(),
                    });
                }
                continue;
            }
            if let Some(other) = by_public_key.get(binding.public_key.as_bytes()) {
                return Err(RegistryError::KeyReuse {
                    index: i,
                    key_id: binding.key_id.clone(),
                    registered_as: other.clone(),
                });
            }
            by_public_key.insert(*binding.public_key.as_bytes(), binding.key_id.clone());
            by_key_id.insert(binding.key_id.clone(), std::sync::Arc::new(binding));
        }
        Ok(ValidatedRegistry {
            organization_id: self.organization_id.clone(),
            by_key_id,
        })
    }
}

fn profile_time(what: &'static str, s: &str) -> Result<Timestamp, BindingError> {
    Timestamp::parse_profile(s).map_err(|e| BindingError::Time {
        what,
        value: s.to_owned(),
        reason: e.to_string(),
    })
}

fn validate_binding(b: &BindingRecord) -> Result<KeyBinding, BindingError> {
    if !is_absolute_uri(&b.key_id) {
        return Err(BindingError::NotAbsoluteUri {
            what: "keyId",
            value: b.key_id.clone(),
        });
    }
    let actor_type = ActorType::from_wire(&b.principal_type)
        .ok_or_else(|| BindingError::UnknownPrincipalType(b.principal_type.clone()))?;
    if !is_absolute_uri(&b.principal_id) {
        return Err(BindingError::NotAbsoluteUri {
            what: "principal id",
            value: b.principal_id.clone(),
        });
    }
    if b.algorithm != "Ed25519" {
        return Err(BindingError::Algorithm(b.algorithm.clone()));
    }
    let raw = b64url_decode(&b.public_key).map_err(|e| BindingError::PublicKey(e.to_string()))?;
    let public_key =
        StrictPublicKey::from_bytes(&raw).map_err(|e| BindingError::PublicKey(e.to_string()))?;
    let valid_from = profile_time("validFrom", &b.valid_from)?;
    let mut valid_until: Option<Timestamp> = None;
    let mut revoked_at: Option<Timestamp> = None;
    let mut last_recorded: Option<Timestamp> = None;
    for (i, s) in b.validity_history.iter().enumerate() {
        if s.sequence != i as u64 + 1 {
            return Err(BindingError::HistoryGap {
                sequence: s.sequence,
                position: i,
            });
        }
        let recorded = profile_time("recordedAt", &s.recorded_at)?;
        if last_recorded
            .as_ref()
            .is_some_and(|prev| recorded.instant() < prev.instant())
        {
            return Err(BindingError::RecordedBackwards {
                sequence: s.sequence,
            });
        }
        last_recorded = Some(recorded);
        for (name, new, slot) in [
            ("validUntil", &s.valid_until, &mut valid_until),
            ("revokedAt", &s.revoked_at, &mut revoked_at),
        ] {
            if let Some(text) = new {
                let t = profile_time(name, text)?;
                // A boundary may be added or moved earlier, never moved later (§6.4).
                if slot.as_ref().is_some_and(|cur| t.instant() > cur.instant()) {
                    return Err(BindingError::BoundaryLater {
                        sequence: s.sequence,
                        what: name,
                    });
                }
                *slot = Some(t);
            }
        }
    }
    Ok(KeyBinding {
        key_id: b.key_id.clone(),
        principal: Actor {
            actor_type,
            id: Id(b.principal_id.clone()),
        },
        public_key,
        public_key_text: b.public_key.clone(),
        valid_from,
        valid_until,
        revoked_at,
    })
}
