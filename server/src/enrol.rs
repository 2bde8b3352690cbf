//! `POST /api/enrol`: enrols a human's browser-generated signing key in the development
//! Organization (issue 13, "sign in by generating a key in the browser"). Development only: a
//! server started with a deployment's own Registry (`--registry`) refuses it with
//! `AUTH_FORBIDDEN`, and the development Organization is served on loopback only unless
//! `serve --dev-open` (cli/serve.rs). Only the public key is ever sent; the private key stays in
//! the browser.
//!
//! Body: `{"principalId": "urn:missionweaveprotocol:human:<name>", "keyId":
//! "urn:missionweaveprotocol:key:<name>-<fingerprint>", "publicKey": <base64url, 32 bytes>,
//! "token": <the enrolment token>}`. The token is the one the server printed at start, in the
//! link that opens the console (`/join#token=…`, issue 26): without it any page or any local
//! user could bind a key to `mission-owner` and sign its approvals. Attempts are rate-limited
//! ([`ENROL_BURST`], [`ENROL_PER_MINUTE`]) and the enrolled keys capped ([`MAX_ENROLLED`]).
//! The binding is checked (name rule, strict Ed25519 public key, no clash with an existing key
//! ID or a non-human Principal, and the whole Registry still valid under the core's
//! Organization-wide checks, §6.4) and kept in `DATA/dev-enrolments.json`. Enrolled bindings
//! join the development Registry when the server starts ([`Enrolment::development`]; a stored
//! binding that no longer fits is logged and left out, so the server always starts) and, in a
//! running server, at once: the new whole Registry replaces the [`LiveRegistry`] the authority's
//! verify stage and the binding's HELLO share, and `GET /api/registry` serves it.
//!
//! `GET /api/groups/<principal ID>` lists the Groups that Principal may read (an active
//! Membership, or ownership up the Mission tree, §14; development only, like enrolment): the
//! binding has no "my Groups" frame and a console must know which Groups to SUBSCRIBE to
//! (§16). The request must be signed by that Principal's key (`wasm_core::crypto::request`):
//! the list names Missions and their members. A deployment answers 403.

pub use crate::org::EnrolRequest;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use wasm_core::crypto::ed25519::StrictPublicKey;
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::crypto::request;
use wasm_core::encoding::b64url_decode;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::ErrorCode;

use crate::gateway::hub::Hub;
use crate::live_registry::LiveRegistry;
use crate::wire::WireError;

pub const FILE: &str = "dev-enrolments.json";
use crate::org::HUMAN_PREFIX;
const KEY_PREFIX: &str = "urn:missionweaveprotocol:key:";
/// Enrolled keys are valid from this instant (the development Organization's own bindings
/// start there too), so Commands signed right after enrolment are inside the interval.
const VALID_FROM: &str = "2020-01-01T00:00:00Z";

/// The most keys the development Organization keeps enrolled: a bound on what browsers download
/// (`GET /api/registry`, about 250 bytes a binding) and on the file, far below the served
/// Registry's own cap ([`wasm_core::crypto::registry::MAX_REGISTRY_BINDINGS`]).
pub const MAX_ENROLLED: usize = 512;
/// Enrolment attempts (right or wrong) taken in a burst, then [`ENROL_PER_MINUTE`]: a person
/// signs in a few times an hour; a script guessing tokens is slowed to a crawl.
pub const ENROL_BURST: u32 = 20;
pub const ENROL_PER_MINUTE: u32 = 20;

/// The development enrolment token: printed at start (in the join link), asked of every
/// enrolment. Only its SHA-256 is kept, compared in constant time.
#[derive(Clone)]
pub struct DevToken([u8; 32]);

impl std::fmt::Debug for DevToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DevToken(…)")
    }
}

impl DevToken {
    /// The shortest token taken from the environment: 22 base64url characters, 132 bits.
    pub const MIN_LEN: usize = 22;

    /// A new random token (32 bytes, 43 base64url characters) and its text.
    pub fn generate() -> (DevToken, String) {
        let text = crate::org::new_token();
        (DevToken::of(&text), text)
    }

    /// A token given by the operator (`WEAVE_DEV_TOKEN`, for scripts that open the console).
    pub fn from_text(text: &str) -> Result<DevToken, String> {
        let ok = text.len() >= Self::MIN_LEN
            && text.len() <= 256
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(format!(
                "WEAVE_DEV_TOKEN must be {} to 256 base64url characters (A-Z a-z 0-9 - _)",
                Self::MIN_LEN
            ));
        }
        Ok(DevToken::of(text))
    }

    fn of(text: &str) -> DevToken {
        DevToken(crate::org::sha256(text.as_bytes()))
    }

    /// Whether `text` is the token (the digests compared without an early exit).
    pub fn matches(&self, text: &str) -> bool {
        crate::org::same_bytes(&self.0, &DevToken::of(text).0)
    }
}

/// A token bucket over every enrolment attempt.
struct Limiter {
    burst: f64,
    per_second: f64,
    tokens: f64,
    last: std::time::Instant,
}

impl Limiter {
    fn new(burst: u32, per_minute: u32) -> Limiter {
        Limiter {
            burst: f64::from(burst),
            per_second: f64::from(per_minute) / 60.0,
            tokens: f64::from(burst),
            last: std::time::Instant::now(),
        }
    }

    /// Takes one attempt; `Err(ms)` says how long until the next is allowed.
    fn take(&mut self) -> Result<(), u64> {
        let now = std::time::Instant::now();
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - self.tokens) / self.per_second.max(f64::MIN_POSITIVE);
            Err((wait * 1000.0).ceil().min(3_600_000.0) as u64)
        }
    }
}

/// The enrolment state: the Registry evidence as started plus what was enrolled since.
pub struct Enrolment {
    /// Whose keys are enrolled, and how.
    kind: Kind,
    /// Every attempt, right or wrong ([`ENROL_BURST`], [`ENROL_PER_MINUTE`]).
    limiter: Mutex<Limiter>,
    /// The running server's shared Registry, swapped after each new enrolment.
    live: Option<LiveRegistry>,
    /// Where Memberships are looked up for `GET /api/groups/…`.
    hub: Option<Arc<Hub>>,
    /// `GET /api/registry`, republished after each new enrolment.
    public: Option<crate::registry_api::PublicRegistry>,
}

/// What is enrolled where.
enum Kind {
    /// A deployment's Registry file (`--registry`): keys are registered there, not here.
    Refused,
    /// The development Organization: any name, with the token printed at start.
    Dev(Mutex<DevEvidence>),
    /// An Organization of `org init`: an invitation's name, once (`crate::org`).
    Org(crate::org::OrgDir),
}

/// What an enrolment did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The key is bound now.
    New,
    /// The same binding again (a retry): nothing changed.
    Again,
    /// The key waits for an administrator's `org confirm`.
    Pending,
}

struct DevEvidence {
    evidence: RegistryEvidence,
    enrolled: Vec<BindingRecord>,
    path: PathBuf,
    token: DevToken,
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

/// The stored enrolments; a file that cannot be read is moved aside (and said so), never
/// allowed to stop the server from starting.
fn read_enrolled(path: &Path) -> Vec<BindingRecord> {
    if !path.exists() {
        return Vec::new();
    }
    let read = std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| json::parse(&bytes).map_err(|e| e.to_string()))
        // The file has the served Registry's shape, read by the same strict reader.
        .and_then(|v| RegistryEvidence::from_registry_json(&v).map_err(|e| e.to_string()));
    match read {
        Ok(e) => e.bindings,
        Err(e) => {
            let aside = path.with_extension(format!("json.unreadable-{}", now_secs()));
            let moved = std::fs::rename(path, &aside);
            tracing::error!(
                error = %e,
                moved_to = %aside.display(),
                moved = moved.is_ok(),
                "{} cannot be read; starting without its enrolments",
                path.display()
            );
            Vec::new()
        }
    }
}

fn now_secs() -> i64 {
    crate::runtime::now().0 / 1_000_000
}

/// `base` plus as many of `enrolled` as keep the Registry valid (all of them, normally: each
/// was checked when enrolled). Those left out are logged.
fn admit(
    base: &RegistryEvidence,
    enrolled: Vec<BindingRecord>,
) -> Result<(ValidatedRegistry, Vec<BindingRecord>), String> {
    let all = RegistryEvidence {
        organization_id: base.organization_id.clone(),
        bindings: base
            .bindings
            .iter()
            .cloned()
            .chain(enrolled.clone())
            .collect(),
    };
    if let Ok(v) = all.validate() {
        return Ok((v, enrolled));
    }
    // One at a time: keep each that still fits.
    let mut kept = Vec::new();
    let mut current = base.clone();
    for b in enrolled {
        let mut next = current.clone();
        next.bindings.push(b.clone());
        match next.validate() {
            Ok(_) => {
                current = next;
                kept.push(b);
            }
            Err(e) => {
                tracing::error!(key = %b.key_id, error = %e, "a stored enrolment is left out")
            }
        }
    }
    let v = current
        .validate()
        .map_err(|e| format!("the development Registry is invalid: {e}"))?;
    Ok((v, kept))
}

/// A refusal with its wire code and HTTP status.
pub(crate) fn refuse(code: ErrorCode, message: &str, status: StatusCode) -> Box<WireError> {
    Box::new(WireError::new(code, message.to_owned()).with_status(status))
}

/// Reads and checks an enrolment body (strict JSON, closed members, the name rule, the key ID
/// form, a strict Ed25519 public key); the token is the caller's to check.
pub fn parse_request(body: &[u8]) -> Result<EnrolRequest, Box<WireError>> {
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
        if !["principalId", "keyId", "publicKey", "token"].contains(&k.as_str()) {
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
    if !crate::org::human_name_ok(name) {
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
    Ok(EnrolRequest {
        principal_id,
        key_id,
        public_key,
        token: s("token"),
    })
}

impl Enrolment {
    /// Enrolment for the development Organization whose Registry is `registry`, guarded by
    /// `token`: the Registry with the stored enrolments (what the server starts with) and the
    /// enrolment state.
    pub fn development(
        registry: &ValidatedRegistry,
        data_dir: &Path,
        token: DevToken,
    ) -> Result<(ValidatedRegistry, Enrolment), String> {
        let path = data_dir.join(FILE);
        let enrolled = read_enrolled(&path);
        // `registry` may already hold enrolled keys: they are kept once, as enrolments.
        let evidence = RegistryEvidence {
            organization_id: registry.organization_id().to_owned(),
            bindings: registry
                .bindings()
                .map(record_of)
                .filter(|b| !enrolled.iter().any(|e| e.key_id == b.key_id))
                .collect(),
        };
        let (validated, enrolled) = admit(&evidence, enrolled)?;
        Ok((
            validated,
            Enrolment {
                kind: Kind::Dev(Mutex::new(DevEvidence {
                    evidence,
                    enrolled,
                    path,
                    token,
                })),
                limiter: Mutex::new(Limiter::new(ENROL_BURST, ENROL_PER_MINUTE)),
                live: None,
                public: None,
                hub: None,
            },
        ))
    }

    /// A deployment's own Registry file: enrolment is refused.
    pub fn refused() -> Enrolment {
        Enrolment::of(Kind::Refused)
    }

    /// An Organization of `org init` in `dir`: enrolment by invitation.
    pub fn organization(dir: &Path) -> Enrolment {
        Enrolment::of(Kind::Org(crate::org::OrgDir::new(dir)))
    }

    fn of(kind: Kind) -> Enrolment {
        Enrolment {
            kind,
            limiter: Mutex::new(Limiter::new(ENROL_BURST, ENROL_PER_MINUTE)),
            live: None,
            public: None,
            hub: None,
        }
    }

    /// Another attempt rate (tests enrol hundreds of keys at once).
    #[cfg(test)]
    pub fn with_rate(self, burst: u32, per_minute: u32) -> Enrolment {
        if let Ok(mut l) = self.limiter.lock() {
            *l = Limiter::new(burst, per_minute);
        }
        self
    }

    /// Serves the whole Registry, stored enrolments included, in `GET /api/registry` now and
    /// after every new enrolment (a browser verifies the Commands it signs with an enrolled key).
    pub fn publishing(mut self, public: crate::registry_api::PublicRegistry) -> Enrolment {
        if let Kind::Dev(dev) = &self.kind
            && let Ok(d) = dev.lock()
        {
            public.publish(&d.whole());
        }
        self.public = Some(public);
        self
    }

    /// Makes enrolments effective at once in a running server: `live` is the Registry the
    /// authority and the binding share; `hub` answers `GET /api/groups/…`.
    pub fn running(mut self, live: LiveRegistry, hub: Arc<Hub>) -> Enrolment {
        self.live = Some(live);
        self.hub = Some(hub);
        self
    }

    /// The Groups the signer of a signed `GET path` may read, if it asks for its own
    /// (`Hub::groups_of`): the list tells which Missions exist, so it is for the member alone
    /// (issue 26, "Non-members learn nothing"). Any Organization's console needs it: the
    /// binding has no "my Groups" frame (§16).
    pub fn groups(
        &self,
        principal_id: &str,
        path: &str,
        headers: request::SignedHeaders<'_>,
    ) -> Result<Vec<String>, Box<WireError>> {
        let registry = self
            .live
            .as_ref()
            .map(LiveRegistry::current)
            .ok_or_else(unsigned)?;
        let signer = signed_reader(&registry, path, headers, "a Group list")?;
        if signer.id.0 != principal_id {
            return Err(refuse(
                ErrorCode::AuthForbidden,
                "a Principal may list only its own Groups",
                StatusCode::FORBIDDEN,
            ));
        }
        Ok(self
            .hub
            .as_ref()
            .map(|h| h.groups_of(principal_id))
            .unwrap_or_default())
    }

    /// Checks and records one enrolment: the outcome, the Principal and the key ID.
    pub fn enrol(&self, body: &[u8]) -> Result<(Outcome, String, String), Box<WireError>> {
        let dev = match &self.kind {
            Kind::Refused => {
                return Err(refuse(
                    ErrorCode::AuthForbidden,
                    "this server's Registry is a file its operator keeps (--registry): keys are \
                     registered there, not enrolled here",
                    StatusCode::FORBIDDEN,
                ));
            }
            Kind::Dev(dev) => Some(dev),
            Kind::Org(_) => None,
        };
        let unavailable = || {
            refuse(
                ErrorCode::InternalError,
                "enrolment state unavailable",
                StatusCode::INTERNAL_SERVER_ERROR,
            )
        };
        // Every attempt counts, before anything is read: guessing is slow whatever is sent.
        if let Err(ms) = self.limiter.lock().map_err(|_| unavailable())?.take() {
            let e = WireError::new(
                ErrorCode::RateLimited,
                format!(
                    "too many enrolment attempts; try again in {} s",
                    ms.div_ceil(1000)
                ),
            )
            .retry_after(ms)
            .with_status(StatusCode::TOO_MANY_REQUESTS);
            return Err(Box::new(e));
        }
        let req = parse_request(body)?;
        let Some(dev) = dev else {
            return self.enrol_invited(&req);
        };
        let EnrolRequest {
            principal_id,
            key_id,
            public_key,
            token,
        } = req;
        let token_ok =
            token.is_some_and(|t| dev.lock().map(|d| d.token.matches(&t)).unwrap_or(false));
        if !token_ok {
            tracing::warn!("an enrolment without the right token was refused");
            return Err(refuse(
                ErrorCode::AuthForbidden,
                "enrolment needs the token this server printed when it started (the link \
                 scripts/run.sh prints carries it)",
                StatusCode::FORBIDDEN,
            ));
        }
        let invalid = |m: &str| {
            refuse(
                ErrorCode::SchemaValidationFailed,
                m,
                StatusCode::UNPROCESSABLE_ENTITY,
            )
        };
        let record = BindingRecord {
            key_id: key_id.clone(),
            principal_type: "human".into(),
            principal_id: principal_id.clone(),
            algorithm: "Ed25519".into(),
            public_key,
            valid_from: VALID_FROM.into(),
            validity_history: vec![],
        };
        let mut dev = dev.lock().map_err(|_| unavailable())?;
        if dev.enrolled.contains(&record) {
            return Ok((Outcome::Again, principal_id, key_id));
        }
        if dev.enrolled.len() >= MAX_ENROLLED {
            return Err(refuse(
                ErrorCode::InvalidCommand,
                &format!(
                    "the development Organization keeps at most {MAX_ENROLLED} enrolled keys; \
                     start with a new data directory, or serve your own Organization"
                ),
                StatusCode::CONFLICT,
            ));
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
        let mut enrolled = dev.enrolled.clone();
        enrolled.push(record);
        let evidence = RegistryEvidence {
            organization_id: dev.evidence.organization_id.clone(),
            bindings: dev
                .evidence
                .bindings
                .iter()
                .chain(enrolled.iter())
                .cloned()
                .collect(),
        };
        let validated = evidence
            .validate()
            .map_err(|e| invalid(&format!("the Registry would be invalid: {e}")))?;
        let text = json::to_string(&crate::registry_api::fixture_json(&RegistryEvidence {
            organization_id: dev.evidence.organization_id.clone(),
            bindings: enrolled.clone(),
        }));
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
        Ok((Outcome::New, principal_id, key_id))
    }

    /// An Organization's enrolment: the invitation's token spends it (`org::OrgDir::enrol`);
    /// a bound key is served at once.
    fn enrol_invited(
        &self,
        req: &EnrolRequest,
    ) -> Result<(Outcome, String, String), Box<WireError>> {
        let Kind::Org(dir) = &self.kind else {
            return Err(refuse(
                ErrorCode::InternalError,
                "enrolment state unavailable",
                StatusCode::INTERNAL_SERVER_ERROR,
            ));
        };
        use crate::org::{EnrolOutcome, EnrolRefusal};
        let forbidden = |m: String| refuse(ErrorCode::AuthForbidden, &m, StatusCode::FORBIDDEN);
        let done = |o| Ok((o, req.principal_id.clone(), req.key_id.clone()));
        match dir.enrol(req, crate::runtime::now()) {
            Ok(EnrolOutcome::Pending) => {
                tracing::info!(principal = %req.principal_id, key = %req.key_id, "a key waits for confirmation");
                done(Outcome::Pending)
            }
            Ok(EnrolOutcome::Bound) => {
                tracing::info!(principal = %req.principal_id, key = %req.key_id, "a key was enrolled by invitation");
                self.reload_org();
                done(Outcome::New)
            }
            Err(EnrolRefusal::AlreadyDone) => done(Outcome::Again),
            Err(EnrolRefusal::NoInvitation) => Err(forbidden(
                "enrolment needs an invitation: open the link your administrator gave you \
                 (weave-console org invite human NAME)"
                    .into(),
            )),
            Err(EnrolRefusal::Used) => Err(forbidden(
                "this invitation was used already; ask your administrator for a new one".into(),
            )),
            Err(EnrolRefusal::Expired) => Err(forbidden(
                "this invitation has expired; ask your administrator for a new one".into(),
            )),
            Err(EnrolRefusal::OtherName(n)) => {
                Err(forbidden(format!("this invitation is for the name {n:?}")))
            }
            Err(EnrolRefusal::KeyTaken) => Err(refuse(
                ErrorCode::InvalidCommand,
                "this key ID is already bound",
                StatusCode::CONFLICT,
            )),
            Err(EnrolRefusal::Store(e)) => {
                tracing::error!(error = %e, "an enrolment could not be stored");
                Err(refuse(
                    ErrorCode::InternalError,
                    "the enrolment could not be stored",
                    StatusCode::INTERNAL_SERVER_ERROR,
                ))
            }
        }
    }

    /// Serves the development enrolments stored now (another node of a cluster enrolled a
    /// key: the nodes share the data directory, docs/cluster.md). Nothing changes when the
    /// file holds what this node serves already.
    pub fn reload_dev(&self) {
        let Kind::Dev(dev) = &self.kind else {
            return;
        };
        let Ok(mut dev) = dev.lock() else { return };
        let stored = read_enrolled(&dev.path);
        if stored == dev.enrolled {
            return;
        }
        match admit(&dev.evidence, stored) {
            Ok((validated, enrolled)) => {
                dev.enrolled = enrolled;
                if let Some(live) = &self.live {
                    live.replace(validated);
                }
                if let Some(public) = &self.public {
                    public.publish(&dev.whole());
                }
                tracing::info!(keys = dev.enrolled.len(), "development enrolments reloaded");
            }
            Err(e) => tracing::error!(error = %e, "the stored enrolments were not applied"),
        }
    }

    /// Serves the Organization file's Registry and cards now (after an enrolment here, or a
    /// change by `weave-console org …`, [`crate::org::watch`]).
    pub fn reload_org(&self) {
        let Kind::Org(dir) = &self.kind else {
            return;
        };
        match dir.read().and_then(|f| {
            let v = f
                .registry
                .validate()
                .map_err(|e| format!("the Registry is invalid: {e}"))?;
            Ok((f, v))
        }) {
            Ok((f, validated)) => {
                if let Some(live) = &self.live {
                    live.replace(validated);
                }
                if let Some(public) = &self.public {
                    public.publish_with_cards(&f.registry, &f.agent_cards);
                }
            }
            Err(e) => tracing::error!(error = %e, "the Organization file was not applied"),
        }
    }
}

impl DevEvidence {
    /// The whole Registry evidence: the Organization's own bindings and the enrolled ones.
    fn whole(&self) -> RegistryEvidence {
        RegistryEvidence {
            organization_id: self.evidence.organization_id.clone(),
            bindings: self
                .evidence
                .bindings
                .iter()
                .chain(self.enrolled.iter())
                .cloned()
                .collect(),
        }
    }
}

async fn enrol(State(state): State<Arc<Enrolment>>, body: Bytes) -> Response {
    match state.enrol(&body) {
        Ok((outcome, principal_id, key_id)) => {
            let mut o = Object::new();
            o.insert("principalId", Value::string(principal_id));
            o.insert("keyId", Value::string(key_id));
            o.insert("validFrom", Value::string(VALID_FROM));
            o.insert(
                "effective",
                Value::string(match outcome {
                    Outcome::Pending => "after an administrator's confirmation (org confirm)",
                    _ if state.live.is_some() => "now",
                    _ => "at the next start of the server",
                }),
            );
            (
                match outcome {
                    Outcome::New => StatusCode::CREATED,
                    Outcome::Again => StatusCode::OK,
                    Outcome::Pending => StatusCode::ACCEPTED,
                },
                [(header::CONTENT_TYPE, "application/json")],
                json::to_string(&Value::Object(o)),
            )
                .into_response()
        }
        Err(e) => (*e).into_response(),
    }
}

/// Who signed a console read of `path` (`wasm_core::crypto::request`) with a key `registry`
/// holds valid now, or the one 401 every unsigned, stale or forged read gets (what failed goes
/// to the log only: `what` names the read there).
pub fn signed_reader(
    registry: &wasm_core::crypto::ValidatedRegistry,
    path: &str,
    headers: request::SignedHeaders<'_>,
    what: &str,
) -> Result<wasm_core::model::common::Actor, Box<WireError>> {
    let who =
        request::verify(registry, "GET", path, headers, crate::runtime::now()).map_err(|e| {
            tracing::info!(reason = %e, read = what, "an unauthenticated read");
            unsigned()
        })?;
    crate::request_log::record_principal(who.id.as_str());
    Ok(who)
}

fn unsigned() -> Box<WireError> {
    refuse(
        ErrorCode::AuthRequired,
        "sign the request with your Registry key (wasm_core::crypto::request)",
        StatusCode::UNAUTHORIZED,
    )
}

/// The signed-request headers of `headers`.
pub fn signed_headers(headers: &HeaderMap) -> request::SignedHeaders<'_> {
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    request::SignedHeaders {
        key_id: h(request::KEY_HEADER),
        signed_at: h(request::TIME_HEADER),
        signature: h(request::SIGNATURE_HEADER),
    }
}

async fn groups(
    State(state): State<Arc<Enrolment>>,
    axum::extract::Path(principal): axum::extract::Path<String>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    match state.groups(&principal, uri.path(), signed_headers(&headers)) {
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

pub fn routes(state: Arc<Enrolment>) -> Router {
    Router::new()
        .route("/api/enrol", post(enrol))
        .route("/api/groups/{principal}", axum::routing::get(groups))
        .with_state(state)
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

    /// A distinct strict public key per `i` (beyond 255).
    fn key_n(i: u32) -> String {
        let mut b = [0u8; 32];
        b[..4].copy_from_slice(&i.to_le_bytes());
        b[31] = 0x5a;
        b64url_encode(&SecretSeed::take(&mut b).public_key())
    }

    const TOKEN: &str = "test-token-0123456789abcdef";

    fn token() -> DevToken {
        DevToken::from_text(TOKEN).expect("token")
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

    fn open(dir: &Path) -> (ValidatedRegistry, Enrolment) {
        Enrolment::development(&dev_registry(), dir, token()).expect("enrolment")
    }

    fn body_with(principal: &str, key_id: &str, public_key: &str, token: Option<&str>) -> Vec<u8> {
        let t = token.map_or(String::new(), |t| format!(r#","token":"{t}""#));
        format!(
            r#"{{"principalId":"{principal}","keyId":"{key_id}","publicKey":"{public_key}"{t}}}"#
        )
        .into_bytes()
    }

    fn body(principal: &str, key_id: &str, public_key: &str) -> Vec<u8> {
        body_with(principal, key_id, public_key, Some(TOKEN))
    }

    fn code(e: &WireError) -> String {
        e.document()
            .pointer("/code")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    const ALICE: &str = "urn:missionweaveprotocol:human:alice";
    const ALICE_KEY: &str = "urn:missionweaveprotocol:key:alice-abc123";
    const OWNER: &str = "urn:missionweaveprotocol:human:mission-owner";

    #[test]
    fn a_human_key_is_enrolled_once_persisted_and_joins_the_registry_at_start() {
        let dir = temp_dir("ok");
        let (_, e) = open(&dir);
        let b = body(ALICE, ALICE_KEY, &key(2));
        assert_eq!(
            e.enrol(&b).map_err(|e| e.document()),
            Ok((Outcome::New, ALICE.into(), ALICE_KEY.into()))
        );
        // The same binding again: idempotent.
        assert_eq!(e.enrol(&b).map(|r| r.0).ok(), Some(Outcome::Again));
        // At the next start it is part of the Registry.
        let (r, again) = open(&dir);
        let binding = r.binding(ALICE_KEY).expect("enrolled binding");
        assert_eq!(binding.principal.id.0, ALICE);
        assert_eq!(binding.public_key_text, key(2));
        assert!(
            r.binding("urn:missionweaveprotocol:key:group-gateway")
                .is_some()
        );
        // A new server instance reads the file back and still refuses a clash.
        let clash = again
            .enrol(&body(ALICE, ALICE_KEY, &key(3)))
            .expect_err("clash");
        assert_eq!(code(&clash), "INVALID_COMMAND");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The attack: a page or a local user binds its own key to the demo's MissionOwner, with no
    /// token, a wrong one, or one of the right length but other text. All get 403 and nothing
    /// is stored; the token's holder gets through, for a new human and for mission-owner again.
    #[test]
    fn enrolment_without_the_token_is_refused_and_stores_nothing() {
        let dir = temp_dir("token");
        let (_, e) = open(&dir);
        let owner_key = "urn:missionweaveprotocol:key:mission-owner-evil1";
        let wrong = "test-token-0123456789abcdeF";
        for t in [None, Some(""), Some("nope"), Some(wrong)] {
            let err = e
                .enrol(&body_with(OWNER, owner_key, &key(9), t))
                .expect_err("refused");
            assert_eq!(code(&err), "AUTH_FORBIDDEN", "{t:?}");
            assert_eq!(err.status, StatusCode::FORBIDDEN);
        }
        assert!(!dir.join(FILE).exists(), "nothing was stored");
        assert!(
            e.enrol(&body(OWNER, owner_key, &key(9)))
                .expect("enrolled")
                .0
                == Outcome::New
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn tokens_are_checked_as_text_and_never_shown() {
        assert!(DevToken::from_text("short").is_err());
        assert!(DevToken::from_text("has spaces in it, 22 chars+").is_err());
        assert!(DevToken::from_text(&"a".repeat(257)).is_err());
        let (t, text) = DevToken::generate();
        assert_eq!(text.len(), 43);
        assert!(t.matches(&text));
        assert!(!t.matches(&text[1..]));
        assert!(!format!("{t:?}").contains(&text));
        let (other, _) = DevToken::generate();
        assert!(!other.matches(&text), "each start has its own token");
    }

    /// A guessing script is slowed down: past the burst, attempts are refused with
    /// `RATE_LIMITED` and a retry delay, whether or not they carry the token.
    #[test]
    fn enrolment_attempts_are_rate_limited() {
        let dir = temp_dir("rate");
        let (_, e) = open(&dir);
        let e = e.with_rate(3, 1);
        for _ in 0..3 {
            let err = e
                .enrol(&body_with(
                    ALICE,
                    ALICE_KEY,
                    &key(2),
                    Some("wrong-token-wrong-token"),
                ))
                .expect_err("wrong");
            assert_eq!(code(&err), "AUTH_FORBIDDEN");
        }
        let err = e
            .enrol(&body(ALICE, ALICE_KEY, &key(2)))
            .expect_err("limited");
        assert_eq!(code(&err), "RATE_LIMITED");
        assert_eq!(err.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(err.retry_after_ms.is_some_and(|ms| ms > 0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// 200 enrolments (fifteen used to push the served Registry past the fixture's 64 bindings:
    /// browsers could not parse it, and after 65 the server did not start). The served Registry
    /// still parses and validates with every key, a restart keeps them all in the Registry and
    /// in `GET /api/registry`, and the cap refuses more, clearly.
    #[test]
    fn two_hundred_enrolments_survive_a_restart_and_the_registry_stays_readable() {
        let dir = temp_dir("many");
        let served = |p: &crate::registry_api::PublicRegistry| {
            let v = json::parse(p.registry_text().as_bytes()).expect("json");
            RegistryEvidence::from_registry_json(&v)
                .expect("served shape")
                .validate()
                .expect("valid")
        };
        let (registry, e) = open(&dir);
        let public = crate::registry_api::PublicRegistry::new(
            &crate::registry_api::evidence_of(&registry),
            &[],
        );
        let e = e.with_rate(1000, 1000).publishing(public.clone());
        for i in 0..200u32 {
            let name = format!("human-{i}");
            let b = body(
                &format!("{HUMAN_PREFIX}{name}"),
                &format!("{KEY_PREFIX}{name}-k{i}"),
                &key_n(i),
            );
            assert!(e.enrol(&b).map_err(|e| e.document()).expect("enrolled").0 == Outcome::New);
        }
        assert_eq!(served(&public).bindings().count(), 201);
        drop(e);
        // Restart: the Registry the server starts with, and the one it serves.
        let (registry, e) = open(&dir);
        assert_eq!(registry.bindings().count(), 201);
        let public = crate::registry_api::PublicRegistry::new(
            &crate::registry_api::evidence_of(&dev_registry()),
            &[],
        );
        let _e = e.publishing(public.clone());
        let r = served(&public);
        assert_eq!(
            r.bindings().count(),
            201,
            "enrolled keys served after a restart"
        );
        assert!(r.binding(&format!("{KEY_PREFIX}human-199-k199")).is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_number_of_enrolled_keys_is_capped() {
        let dir = temp_dir("cap");
        let (_, e) = open(&dir);
        let e = e.with_rate(10_000, 10_000);
        for i in 0..MAX_ENROLLED as u32 {
            let b = body(
                &format!("{HUMAN_PREFIX}h{i}"),
                &format!("{KEY_PREFIX}h{i}-k"),
                &key_n(i),
            );
            e.enrol(&b)
                .map_err(|e| e.document())
                .expect("under the cap");
        }
        let over = e
            .enrol(&body(ALICE, ALICE_KEY, &key(2)))
            .expect_err("over the cap");
        assert_eq!(code(&over), "INVALID_COMMAND");
        assert_eq!(over.status, StatusCode::CONFLICT);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A damaged file does not keep the server from starting: it is moved aside and the
    /// Organization's own Registry is served.
    #[test]
    fn an_unreadable_enrolment_file_is_moved_aside_not_fatal() {
        let dir = temp_dir("damaged");
        std::fs::write(dir.join(FILE), b"{not json").expect("write");
        let (r, _) = open(&dir);
        assert_eq!(r.bindings().count(), 1);
        assert!(!dir.join(FILE).exists());
        let aside = std::fs::read_dir(&dir)
            .expect("dir")
            .flatten()
            .any(|f| f.file_name().to_string_lossy().contains("unreadable"));
        assert!(aside, "kept for the operator");
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
            RegistryEvidence::from_registry_json(&v)
                .expect("served shape")
                .validate()
                .expect("valid")
        };
        assert!(parse(&public).binding(ALICE_KEY).is_none());
        let (_, e) = open(&dir);
        let e = e.publishing(public.clone());
        e.enrol(&body(ALICE, ALICE_KEY, &key(2)))
            .map_err(|e| e.document())
            .expect("enrolled");
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
        assert_eq!(code(&err), "AUTH_FORBIDDEN");
    }

    #[test]
    fn malformed_enrolments_are_refused() {
        let dir = temp_dir("bad");
        let (_, e) = open(&dir);
        let e = e.with_rate(100, 100);
        let code_of = |b: &[u8]| e.enrol(b).map_err(|e| code(&e)).err();
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
                format!(r#"{{"principalId":"{ALICE}","keyId":"{ALICE_KEY}","publicKey":"{k}","token":"{TOKEN}","seed":"x"}}"#)
                    .into_bytes(),
                "SCHEMA_VALIDATION_FAILED",
            ),
            // The Group Authority's key ID cannot be taken over.
            (
                body(ALICE, "urn:missionweaveprotocol:key:group-gateway", &k),
                "SCHEMA_VALIDATION_FAILED",
            ),
        ] {
            assert_eq!(code_of(&b).as_deref(), Some(want), "{}", String::from_utf8_lossy(&b));
        }
        assert!(!dir.join(FILE).exists(), "nothing was stored");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
