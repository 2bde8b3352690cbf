//! `POST /api/dev/enrol`: enrols a human's browser-generated signing key in the development
//! Organization (issue 13, "sign in by generating a key in the browser"). Development only: a
//! server started with a deployment's own Registry (`--registry`) refuses it with
//! `AUTH_FORBIDDEN`. Only the public key is ever sent; the private key stays in the browser.
//!
//! Body: `{"principalId": "urn:missionweaveprotocol:human:<name>", "keyId":
//! "urn:missionweaveprotocol:key:<name>-<fingerprint>", "publicKey": <base64url, 32 bytes>}`.
//! The binding is checked (name rule, strict Ed25519 public key, no clash with an existing key
//! ID or a non-human Principal, and the whole Registry still valid under the core's
//! Organization-wide checks, §6.4) and kept in `DATA/dev-enrolments.json`. Enrolled bindings
//! join the development Registry when the server starts ([`extend_registry`]) and, in a running
//! server, at once: the new whole Registry replaces the [`LiveRegistry`] the authority's verify
//! stage and the binding's HELLO share, so the key opens a human session and signs Commands
//! without a restart.
//!
//! `GET /api/dev/groups/<principal ID>` lists the Groups that Principal may read (an active
//! Membership, or ownership up the Mission tree, §14; development only, like enrolment): the
//! binding has no "my Groups" frame and a
//! console must know which Groups to SUBSCRIBE to (§16). A deployment answers 403.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use wasm_core::crypto::ed25519::StrictPublicKey;
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::encoding::b64url_decode;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::ErrorCode;

use crate::gateway::hub::Hub;
use crate::live_registry::LiveRegistry;
use crate::wire::WireError;

pub const FILE: &str = "dev-enrolments.json";
const HUMAN_PREFIX: &str = "urn:missionweaveprotocol:human:";
const KEY_PREFIX: &str = "urn:missionweaveprotocol:key:";
/// Enrolled keys are valid from this instant (the development Organization's own bindings
/// start there too), so Commands signed right after enrolment are inside the interval.
const VALID_FROM: &str = "2020-01-01T00:00:00Z";

/// The enrolment state: the Registry evidence as started plus what was enrolled since.
pub struct Enrolment {
    /// `None` for a deployment's own Organization: every request is refused.
    dev: Option<Mutex<DevEvidence>>,
    /// The running server's shared Registry, swapped after each new enrolment.
    live: Option<LiveRegistry>,
    /// Where Memberships are looked up for `GET /api/dev/groups/…`.
    hub: Option<Arc<Hub>>,
    /// `GET /api/registry`, republished after each new enrolment.
    public: Option<crate::registry_api::PublicRegistry>,
}

struct DevEvidence {
    evidence: RegistryEvidence,
    enrolled: Vec<BindingRecord>,
    path: PathBuf,
}

fn record_of(b: &wasm_core::crypto::KeyBinding) -> BindingRecord {
    BindingRecord {
        key_id: b.key_id.clone(),
        principal_type: b.principal.actor_type.as_str().into(),
        principal_id: b.principal.id.0.clone(),
        algorithm: "Ed25519".into(),
        public_key: b.public_key_text.clone(),
        valid_from: b.valid_from.as_str().to_owned(),
        validity_history: vec![],
    }
}

fn read_enrolled(path: &Path) -> Result<Vec<BindingRecord>, String> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v = json::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    // The file has the Registry-fixture shape, so it is read by the same strict reader.
    RegistryEvidence::from_fixture_json(&v)
        .map(|e| e.bindings)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn fixture_json(organization_id: &str, bindings: &[BindingRecord]) -> String {
    let list = bindings
        .iter()
        .map(|b| {
            let mut p = Object::new();
            p.insert("type", Value::string(b.principal_type.clone()));
            p.insert("id", Value::string(b.principal_id.clone()));
            let mut o = Object::new();
            o.insert("keyId", Value::string(b.key_id.clone()));
            o.insert("principal", Value::Object(p));
            o.insert("algorithm", Value::string(b.algorithm.clone()));
            o.insert("publicKey", Value::string(b.public_key.clone()));
            o.insert("validFrom", Value::string(b.valid_from.clone()));
            o.insert("validityHistory", Value::Array(vec![]));
            Value::Object(o)
        })
        .collect();
    let mut o = Object::new();
    o.insert("organizationId", Value::string(organization_id.to_owned()));
    o.insert("bindings", Value::Array(list));
    json::to_string(&Value::Object(o))
}

/// Adds the enrolled human keys of `data_dir` to the development Registry (at start-up).
pub fn extend_registry(
    registry: &ValidatedRegistry,
    data_dir: &Path,
) -> Result<ValidatedRegistry, String> {
    let enrolled = read_enrolled(&data_dir.join(FILE))?;
    if enrolled.is_empty() {
        return Ok(registry.clone());
    }
    let mut bindings: Vec<BindingRecord> = registry.bindings().map(record_of).collect();
    bindings.extend(enrolled);
    RegistryEvidence {
        organization_id: registry.organization_id().to_owned(),
        bindings,
    }
    .validate()
    .map_err(|e| format!("{FILE}: the Registry with the enrolled keys is invalid: {e}"))
}

/// A refusal with its wire code and HTTP status.
fn refuse(code: ErrorCode, message: &str, status: StatusCode) -> Box<WireError> {
    Box::new(WireError::new(code, message.to_owned()).with_status(status))
}

impl Enrolment {
    /// Enrolment for the development Organization whose Registry is `registry`.
    pub fn development(registry: &ValidatedRegistry, data_dir: &Path) -> Result<Enrolment, String> {
        let path = data_dir.join(FILE);
        let enrolled = read_enrolled(&path)?;
        // `registry` may already hold the enrolled keys (`extend_registry` at start): they are
        // kept once, as enrolments.
        let evidence = RegistryEvidence {
            organization_id: registry.organization_id().to_owned(),
            bindings: registry
                .bindings()
                .map(record_of)
                .filter(|b| !enrolled.iter().any(|e| e.key_id == b.key_id))
                .collect(),
        };
        Ok(Enrolment {
            dev: Some(Mutex::new(DevEvidence {
                evidence,
                enrolled,
                path,
            })),
            live: None,
            public: None,
            hub: None,
        })
    }

    /// A deployment's own Organization: enrolment is refused.
    pub fn refused() -> Enrolment {
        Enrolment {
            dev: None,
            live: None,
            public: None,
            hub: None,
        }
    }

    /// Publishes every new enrolment in `GET /api/registry` too (a browser verifies the
    /// Commands it signed with the enrolled key, issue 13).
    pub fn publishing(mut self, public: crate::registry_api::PublicRegistry) -> Enrolment {
        self.public = Some(public);
        self
    }

    /// Makes enrolments effective at once in a running server: `live` is the Registry the
    /// authority and the binding share; `hub` answers `GET /api/dev/groups/…`.
    pub fn running(mut self, live: LiveRegistry, hub: Arc<Hub>) -> Enrolment {
        self.live = Some(live);
        self.hub = Some(hub);
        self
    }

    /// The Groups `principal_id` may read (`Hub::groups_of`; development only).
    pub fn groups(&self, principal_id: &str) -> Result<Vec<String>, Box<WireError>> {
        if self.dev.is_none() {
            return Err(refuse(
                ErrorCode::AuthForbidden,
                "the Group list is for the development Organization only",
                StatusCode::FORBIDDEN,
            ));
        }
        Ok(self
            .hub
            .as_ref()
            .map(|h| h.groups_of(principal_id))
            .unwrap_or_default())
    }

    /// Checks and records one enrolment; `Ok(true)` if new, `Ok(false)` if already there.
    pub fn enrol(&self, body: &[u8]) -> Result<(bool, String, String), Box<WireError>> {
        let Some(dev) = &self.dev else {
            return Err(refuse(
                ErrorCode::AuthForbidden,
                "enrolment is for the development Organization only; a deployment registers \
                 keys in its own Registry",
                StatusCode::FORBIDDEN,
            ));
        };
        let invalid = |m: &str| {
            refuse(
                ErrorCode::SchemaValidationFailed,
                m,
                StatusCode::UNPROCESSABLE_ENTITY,
            )
        };
        let v = json::parse(body).map_err(|e| {
            refuse(
                ErrorCode::ProtocolViolation,
                &format!("not strict JSON: {e}"),
                StatusCode::BAD_REQUEST,
            )
        })?;
        let obj = v.as_object().ok_or_else(|| invalid("expected an object"))?;
        for (k, _) in obj.iter() {
            if !["principalId", "keyId", "publicKey"].contains(&k.as_str()) {
                return Err(invalid(&format!("unknown member \"{}\"", k.as_str())));
            }
        }
        let s = |n: &str| obj.get(n).and_then(Value::as_str).map(str::to_owned);
        let (Some(principal_id), Some(key_id), Some(public_key)) =
            (s("principalId"), s("keyId"), s("publicKey"))
        else {
            return Err(invalid("principalId, keyId and publicKey are required"));
        };
        let name = principal_id.strip_prefix(HUMAN_PREFIX).unwrap_or_default();
        let name_ok = !name.is_empty()
            && name.len() <= 40
            && !name.starts_with('-')
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !name_ok {
            return Err(invalid(
                "principalId must be urn:missionweaveprotocol:human:<1-40 of a-z, 0-9, ->",
            ));
        }
        let key_ok = key_id
            .strip_prefix(KEY_PREFIX)
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| {
                rest.len() > 1
                    && rest.len() <= 64
                    && rest.starts_with('-')
                    && rest[1..]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        if !key_ok {
            return Err(invalid(
                "keyId must be urn:missionweaveprotocol:key:<name>-<fingerprint>",
            ));
        }
        let key_bytes =
            b64url_decode(&public_key).map_err(|_| invalid("publicKey is not base64url"))?;
        StrictPublicKey::from_bytes(&key_bytes)
            .map_err(|e| invalid(&format!("publicKey is not a strict Ed25519 key: {e}")))?;
        let record = BindingRecord {
            key_id: key_id.clone(),
            principal_type: "human".into(),
            principal_id: principal_id.clone(),
            algorithm: "Ed25519".into(),
            public_key,
            valid_from: VALID_FROM.into(),
            validity_history: vec![],
        };
        let mut dev = dev.lock().map_err(|_| {
            refuse(
                ErrorCode::InternalError,
                "enrolment state unavailable",
                StatusCode::INTERNAL_SERVER_ERROR,
            )
        })?;
        if dev.enrolled.contains(&record) {
            return Ok((false, principal_id, key_id));
        }
        let clash = dev
            .evidence
            .bindings
            .iter()
            .chain(dev.enrolled.iter())
            .any(|b| {
                b.key_id == key_id
                    || (b.principal_id == principal_id && b.principal_type != "human")
            });
        if clash {
            return Err(refuse(
                ErrorCode::InvalidCommand,
                "this key ID is already bound, or the Principal is not a human",
                StatusCode::CONFLICT,
            ));
        }
        let mut all = dev.evidence.bindings.clone();
        all.extend(dev.enrolled.iter().cloned());
        all.push(record.clone());
        let evidence = RegistryEvidence {
            organization_id: dev.evidence.organization_id.clone(),
            bindings: all,
        };
        let validated = evidence
            .validate()
            .map_err(|e| invalid(&format!("the Registry would be invalid: {e}")))?;
        let mut enrolled = dev.enrolled.clone();
        enrolled.push(record);
        let text = fixture_json(&dev.evidence.organization_id, &enrolled);
        let tmp = dev.path.with_extension("json.tmp");
        std::fs::write(&tmp, text.as_bytes())
            .and_then(|()| std::fs::rename(&tmp, &dev.path))
            .map_err(|e| {
                tracing::error!(error = %e, "cannot write {}", dev.path.display());
                refuse(
                    ErrorCode::InternalError,
                    "the enrolment could not be stored",
                    StatusCode::INTERNAL_SERVER_ERROR,
                )
            })?;
        dev.enrolled = enrolled;
        if let Some(live) = &self.live {
            live.replace(validated);
        }
        if let Some(public) = &self.public {
            public.publish(&evidence);
        }
        tracing::info!(principal = %principal_id, key = %key_id, "development key enrolled");
        Ok((true, principal_id, key_id))
    }
}

async fn enrol(State(state): State<Arc<Enrolment>>, body: Bytes) -> Response {
    match state.enrol(&body) {
        Ok((new, principal_id, key_id)) => {
            let mut o = Object::new();
            o.insert("principalId", Value::string(principal_id));
            o.insert("keyId", Value::string(key_id));
            o.insert("validFrom", Value::string(VALID_FROM));
            o.insert(
                "effective",
                Value::string(if state.live.is_some() {
                    "now"
                } else {
                    "at the next start of the server"
                }),
            );
            (
                if new {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                },
                [(header::CONTENT_TYPE, "application/json")],
                json::to_string(&Value::Object(o)),
            )
                .into_response()
        }
        Err(e) => (*e).into_response(),
    }
}

async fn groups(
    State(state): State<Arc<Enrolment>>,
    axum::extract::Path(principal): axum::extract::Path<String>,
) -> Response {
    match state.groups(&principal) {
        Ok(list) => {
            let mut o = Object::new();
            o.insert(
                "groups",
                Value::Array(list.into_iter().map(Value::string).collect()),
            );
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                json::to_string(&Value::Object(o)),
            )
                .into_response()
        }
        Err(e) => (*e).into_response(),
    }
}

pub fn routes(state: Enrolment) -> Router {
    Router::new()
        .route("/api/dev/enrol", post(enrol))
        .route("/api/dev/groups/{principal}", axum::routing::get(groups))
        .with_state(Arc::new(state))
        .layer(axum::extract::DefaultBodyLimit::max(4096))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_core::crypto::SecretSeed;
    use wasm_core::encoding::b64url_encode;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weave-enrol-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn key(n: u8) -> String {
        let mut b = [n; 32];
        b64url_encode(&SecretSeed::take(&mut b).public_key())
    }

    fn dev_registry() -> ValidatedRegistry {
        RegistryEvidence {
            organization_id: "urn:missionweaveprotocol:organization:dev".into(),
            bindings: vec![BindingRecord {
                key_id: "urn:missionweaveprotocol:key:group-gateway".into(),
                principal_type: "service".into(),
                principal_id: "urn:missionweaveprotocol:service:group-gateway".into(),
                algorithm: "Ed25519".into(),
                public_key: key(1),
                valid_from: VALID_FROM.into(),
                validity_history: vec![],
            }],
        }
        .validate()
        .expect("registry")
    }

    fn body(principal: &str, key_id: &str, public_key: &str) -> Vec<u8> {
        format!(r#"{{"principalId":"{principal}","keyId":"{key_id}","publicKey":"{public_key}"}}"#)
            .into_bytes()
    }

    const ALICE: &str = "urn:missionweaveprotocol:human:alice";
    const ALICE_KEY: &str = "urn:missionweaveprotocol:key:alice-abc123";

    #[test]
    fn a_human_key_is_enrolled_once_persisted_and_joins_the_registry_at_start() {
        let dir = temp_dir("ok");
        let e = Enrolment::development(&dev_registry(), &dir).expect("enrolment");
        let b = body(ALICE, ALICE_KEY, &key(2));
        assert_eq!(
            e.enrol(&b).map_err(|e| e.document()),
            Ok((true, ALICE.into(), ALICE_KEY.into()))
        );
        // The same binding again: idempotent.
        assert_eq!(e.enrol(&b).map(|r| r.0).ok(), Some(false));
        // Kept in the Registry-fixture shape; at the next start it is part of the Registry.
        let r = extend_registry(&dev_registry(), &dir).expect("extended");
        let binding = r.binding(ALICE_KEY).expect("enrolled binding");
        assert_eq!(binding.principal.id.0, ALICE);
        assert_eq!(binding.public_key_text, key(2));
        assert!(
            r.binding("urn:missionweaveprotocol:key:group-gateway")
                .is_some()
        );
        // A new server instance reads the file back and still refuses a clash.
        let again = Enrolment::development(&r, &dir).expect("reopened");
        let clash = again
            .enrol(&body(ALICE, ALICE_KEY, &key(3)))
            .expect_err("clash");
        assert_eq!(
            clash.document().pointer("/code").and_then(Value::as_str),
            Some("INVALID_COMMAND")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_enrolled_key_is_published_in_the_public_registry_at_once() {
        let dir = temp_dir("public");
        let registry = dev_registry();
        let public = crate::registry_api::PublicRegistry::new(
            &crate::registry_api::evidence_of(&registry),
            &[],
        );
        let parse = |p: &crate::registry_api::PublicRegistry| {
            let v = json::parse(p.registry_text().as_bytes()).expect("json");
            RegistryEvidence::from_fixture_json(&v)
                .expect("fixture shape")
                .validate()
                .expect("valid")
        };
        assert!(parse(&public).binding(ALICE_KEY).is_none());
        let e = Enrolment::development(&registry, &dir)
            .expect("enrolment")
            .publishing(public.clone());
        e.enrol(&body(ALICE, ALICE_KEY, &key(2)))
            .map_err(|e| e.document())
            .expect("enrolled");
        // The served Registry (`GET /api/registry`) now binds the key to the human.
        let served = parse(&public);
        let b = served.binding(ALICE_KEY).expect("published");
        assert_eq!(b.principal.id.0, ALICE);
        assert_eq!(b.public_key_text, key(2));
        assert!(
            served
                .binding("urn:missionweaveprotocol:key:group-gateway")
                .is_some()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_deployment_refuses_enrolment() {
        let e = Enrolment::refused();
        let err = e
            .enrol(&body(ALICE, ALICE_KEY, &key(2)))
            .expect_err("refused");
        assert_eq!(
            err.document().pointer("/code").and_then(Value::as_str),
            Some("AUTH_FORBIDDEN")
        );
    }

    #[test]
    fn malformed_enrolments_are_refused() {
        let dir = temp_dir("bad");
        let e = Enrolment::development(&dev_registry(), &dir).expect("enrolment");
        let code = |b: &[u8]| {
            e.enrol(b)
                .expect_err("refused")
                .document()
                .pointer("/code")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let k = key(2);
        for (b, want) in [
            (b"{".to_vec(), "PROTOCOL_VIOLATION"),
            (br#"{"principalId":"x","principalId":"y"}"#.to_vec(), "PROTOCOL_VIOLATION"),
            (body("urn:missionweaveprotocol:agent:alice", ALICE_KEY, &k), "SCHEMA_VALIDATION_FAILED"),
            (body("urn:missionweaveprotocol:human:Alice", ALICE_KEY, &k), "SCHEMA_VALIDATION_FAILED"),
            (body(ALICE, "urn:missionweaveprotocol:key:bob-1", &k), "SCHEMA_VALIDATION_FAILED"),
            (body(ALICE, "urn:missionweaveprotocol:key:alice", &k), "SCHEMA_VALIDATION_FAILED"),
            (body(ALICE, ALICE_KEY, "AAAA"), "SCHEMA_VALIDATION_FAILED"),
            // The identity point is not a usable Ed25519 key (§6.4 strict keys).
            (body(ALICE, ALICE_KEY, &b64url_encode(&{
                let mut p = [0u8; 32];
                p[0] = 1;
                p
            })), "SCHEMA_VALIDATION_FAILED"),
            (
                format!(r#"{{"principalId":"{ALICE}","keyId":"{ALICE_KEY}","publicKey":"{k}","seed":"x"}}"#)
                    .into_bytes(),
                "SCHEMA_VALIDATION_FAILED",
            ),
            // The Group Authority's key ID cannot be taken over.
            (
                body(ALICE, "urn:missionweaveprotocol:key:group-gateway", &k),
                "SCHEMA_VALIDATION_FAILED",
            ),
        ] {
            assert_eq!(code(&b).as_deref(), Some(want), "{}", String::from_utf8_lossy(&b));
        }
        assert!(!dir.join(FILE).exists(), "nothing was stored");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
