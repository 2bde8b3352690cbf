//! A real Organization in a data directory (issue 26, "A real Organization, from the command
//! line"): what `weave-console org …` writes and `serve --data DIR` serves instead of the
//! development Organization.
//!
//! Two files (three after a rotation of the service key), in a `0700` directory:
//!
//! - `DIR/organization-key.json` (`0600`): `{"keyId", "seed"}`, the Group Authority key of the
//!   Organization's service Principal. It signs every Event, opens Sessions, writes
//!   First-Admission Records and signs the Agent Cards (§6.4: a card's signer is an Organization
//!   service). No other private key is ever written: a human's key is made in their browser and
//!   only its public half enrolled; an Agent's stays with its operator.
//!   After `org key rotate service` ([`OrgDir::rotate_service`]) the replaced key is kept in
//!   `DIR/organization-key.previous.json` (`0600`) until the next rotation; both are bound to
//!   the service Principal, each with its validity window, and the running server signs with
//!   the one valid at each signed time (`crate::service_keys`).
//! - `DIR/org.json` (`0600`: it holds the invitations' token digests): the Organization's public
//!   Registry evidence (the served shape, validity windows included), its signed Agent Cards,
//!   the invitations and the enrolments. Every writer (the command line, the running server's
//!   enrolment) takes an exclusive lock on `DIR/org.lock` around read-modify-write and replaces
//!   the file atomically; the running server notices a change within a second
//!   ([`watch`]), validates the whole Registry again and swaps it in, so a rotation or a
//!   revocation is effective at once.
//!
//! Invitations (`org invite human NAME`): a random token whose SHA-256 is kept; the link carries
//! the token in its fragment (`https://HOST/join#token=…&name=NAME`, never in a log). An
//! enrolment (`POST /api/enrol`) spends it: once, before expiry, for that name only. With
//! `requireConfirmation` the key waits for `org confirm`; otherwise it is bound at once.

use std::io::Write;
use std::path::{Path, PathBuf};

use wasm_core::authority::{AuthorityConfig, CooperationLimits, Micros};
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, StatusRecord};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::{b64url_encode, hex, sha256_hash};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::{Actor, ActorType};

/// The Organization file.
pub const FILE: &str = "org.json";
/// The service key file: the key `org.json` names (`service.keyId`).
pub const KEY_FILE: &str = "organization-key.json";
/// The service key the last `org key rotate service` replaced, kept through its grace period
/// (Events the running server signs with it until it switches stay valid).
pub const PREVIOUS_KEY_FILE: &str = "organization-key.previous.json";
/// The new key while a rotation writes it (renamed to [`KEY_FILE`] once `org.json` binds it).
const NEXT_KEY_FILE: &str = "organization-key.next.json";
/// The grace period of `org key rotate service` unless `--grace` says otherwise: the old key
/// stays valid this long after the new one is bound.
pub const DEFAULT_ROTATION_GRACE_SECONDS: u64 = 300;
/// The shortest grace accepted: a running server notices the rotation within a second
/// ([`watch`]) and signs with the old key until then, so its window must outlast that.
pub const MIN_ROTATION_GRACE_SECONDS: u64 = 10;
/// The lock every writer holds.
const LOCK_FILE: &str = "org.lock";
/// `format` of [`FILE`].
const FORMAT: &str = "missionweave-organization";
pub const HUMAN_PREFIX: &str = "urn:missionweaveprotocol:human:";
const KEY_PREFIX: &str = "urn:missionweaveprotocol:key:";
/// A key enrolled now is valid from a minute ago: a browser whose clock is a little behind the
/// server's signs its first Command inside the window (the key signed nothing before).
const ENROLMENT_BACKDATE_SECONDS: u64 = 60;
/// The most invitations kept (used and expired ones included; `org invite` refuses past it).
pub const MAX_INVITATIONS: usize = 1024;

/// One invitation of a human.
#[derive(Clone, Debug, PartialEq)]
pub struct Invitation {
    pub id: String,
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    pub name: String,
    pub role: Option<String>,
    pub created_at: Micros,
    pub expires_at: Micros,
    /// The key this invitation's enrolment replaces (`org key rotate` of a human): it stops
    /// being valid when the new one is bound.
    pub replaces: Option<String>,
    /// When it was spent, and the key it enrolled.
    pub used: Option<(Micros, String)>,
}

/// One enrolled key (pending or confirmed).
#[derive(Clone, Debug, PartialEq)]
pub struct Enrolled {
    pub invitation: String,
    pub principal_id: String,
    pub key_id: String,
    pub public_key: String,
    pub at: Micros,
    pub confirmed_at: Option<Micros>,
}

/// The Organization file, read.
#[derive(Clone, Debug, PartialEq)]
pub struct OrgFile {
    pub organization_id: String,
    pub name: String,
    pub created_at: Micros,
    pub service: Actor,
    pub service_key_id: String,
    pub require_confirmation: bool,
    pub registry: RegistryEvidence,
    pub agent_cards: Vec<Value>,
    pub invitations: Vec<Invitation>,
    pub enrolments: Vec<Enrolled>,
}

/// The lowercase slug of an Organization or human name: `a-z 0-9 -`, 1..=40.
pub fn slug(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    (!out.is_empty() && out.len() <= 40).then_some(out)
}

/// Whether `name` is a human's name as the console enrols it (`a-z 0-9 -`, 1..=40, not starting
/// with `-`).
pub fn human_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A one-time secret (an invitation, the development enrolment token): 32 random bytes,
/// base64url.
pub fn new_token() -> String {
    b64url_encode(&crate::gateway::random::<32>())
}

pub fn sha256(b: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(b).into()
}

/// Equal byte strings (token digests), compared without an early exit.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The 12 hex digits of a public key's SHA-256 that key IDs end with.
pub fn key_fingerprint(public_key: &[u8]) -> String {
    hex(&sha256(public_key))[..12].to_owned()
}

/// An enrolment request as posted: a human's public key, bound to the name its Principal ID
/// carries, and the token that allows it (the development token or an invitation's).
pub struct EnrolRequest {
    pub principal_id: String,
    pub key_id: String,
    pub public_key: String,
    pub token: Option<String>,
}

impl EnrolRequest {
    /// The human's name (`urn:missionweaveprotocol:human:<name>`).
    pub fn name(&self) -> &str {
        self.principal_id
            .strip_prefix(HUMAN_PREFIX)
            .unwrap_or_default()
    }
}

fn token_hash(token: &str) -> String {
    hex(&sha256(token.as_bytes()))
}

fn time_text(t: Micros) -> String {
    t.format_whole_seconds()
}

fn s(v: &Value, p: &str) -> Result<String, String> {
    v.pointer(p)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("{FILE}: {p} is missing or not text"))
}

fn opt_s(v: &Value, p: &str) -> Option<String> {
    v.pointer(p).and_then(Value::as_str).map(str::to_owned)
}

fn t(v: &Value, p: &str) -> Result<Micros, String> {
    Micros::parse(&s(v, p)?).ok_or_else(|| format!("{FILE}: {p} is not a time"))
}

fn opt_t(v: &Value, p: &str) -> Result<Option<Micros>, String> {
    match v.pointer(p) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => t(v, p).map(Some),
    }
}

impl OrgFile {
    fn to_value(&self) -> Value {
        let mut o = Object::new();
        o.insert("format", Value::string(FORMAT));
        o.insert("version", Value::from(1u64));
        o.insert(
            "organizationId",
            Value::string(self.organization_id.clone()),
        );
        o.insert("name", Value::string(self.name.clone()));
        o.insert("createdAt", Value::string(time_text(self.created_at)));
        o.insert(
            "service",
            Value::Object(Object::from_iter([
                ("principalId", Value::string(self.service.id.0.clone())),
                ("keyId", Value::string(self.service_key_id.clone())),
            ])),
        );
        o.insert(
            "requireConfirmation",
            Value::Bool(self.require_confirmation),
        );
        o.insert(
            "registry",
            crate::registry_api::fixture_json(&self.registry),
        );
        o.insert("agentCards", Value::Array(self.agent_cards.clone()));
        let invitations = self
            .invitations
            .iter()
            .map(|i| {
                let mut o = Object::new();
                o.insert("id", Value::string(i.id.clone()));
                o.insert("tokenSha256", Value::string(i.token_hash.clone()));
                o.insert("name", Value::string(i.name.clone()));
                if let Some(r) = &i.role {
                    o.insert("role", Value::string(r.clone()));
                }
                o.insert("createdAt", Value::string(time_text(i.created_at)));
                o.insert("expiresAt", Value::string(time_text(i.expires_at)));
                if let Some(k) = &i.replaces {
                    o.insert("replacesKeyId", Value::string(k.clone()));
                }
                if let Some((at, key)) = &i.used {
                    o.insert("usedAt", Value::string(time_text(*at)));
                    o.insert("usedByKeyId", Value::string(key.clone()));
                }
                Value::Object(o)
            })
            .collect();
        o.insert("invitations", Value::Array(invitations));
        let enrolments = self
            .enrolments
            .iter()
            .map(|e| {
                let mut o = Object::new();
                o.insert("invitation", Value::string(e.invitation.clone()));
                o.insert("principalId", Value::string(e.principal_id.clone()));
                o.insert("keyId", Value::string(e.key_id.clone()));
                o.insert("publicKey", Value::string(e.public_key.clone()));
                o.insert("at", Value::string(time_text(e.at)));
                if let Some(c) = e.confirmed_at {
                    o.insert("confirmedAt", Value::string(time_text(c)));
                }
                Value::Object(o)
            })
            .collect();
        o.insert("enrolments", Value::Array(enrolments));
        Value::Object(o)
    }

    fn from_value(v: &Value) -> Result<OrgFile, String> {
        if opt_s(v, "/format").as_deref() != Some(FORMAT) {
            return Err(format!("{FILE}: not a {FORMAT} file"));
        }
        let registry = RegistryEvidence::from_registry_json(
            v.pointer("/registry")
                .ok_or_else(|| format!("{FILE}: no registry"))?,
        )
        .map_err(|e| format!("{FILE}: registry: {e}"))?;
        let list = |p: &str| match v.pointer(p) {
            Some(Value::Array(a)) => Ok(a.clone()),
            _ => Err(format!("{FILE}: {p} is not a list")),
        };
        let invitations = list("/invitations")?
            .iter()
            .map(|i| {
                let used = match (opt_t(i, "/usedAt")?, opt_s(i, "/usedByKeyId")) {
                    (Some(at), Some(k)) => Some((at, k)),
                    _ => None,
                };
                Ok(Invitation {
                    id: s(i, "/id")?,
                    token_hash: s(i, "/tokenSha256")?,
                    name: s(i, "/name")?,
                    role: opt_s(i, "/role"),
                    created_at: t(i, "/createdAt")?,
                    expires_at: t(i, "/expiresAt")?,
                    replaces: opt_s(i, "/replacesKeyId"),
                    used,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let enrolments = list("/enrolments")?
            .iter()
            .map(|e| {
                Ok(Enrolled {
                    invitation: s(e, "/invitation")?,
                    principal_id: s(e, "/principalId")?,
                    key_id: s(e, "/keyId")?,
                    public_key: s(e, "/publicKey")?,
                    at: t(e, "/at")?,
                    confirmed_at: opt_t(e, "/confirmedAt")?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(OrgFile {
            organization_id: s(v, "/organizationId")?,
            name: s(v, "/name")?,
            created_at: t(v, "/createdAt")?,
            service: Actor::new(ActorType::Service, &s(v, "/service/principalId")?),
            service_key_id: s(v, "/service/keyId")?,
            require_confirmation: matches!(
                v.pointer("/requireConfirmation"),
                Some(Value::Bool(true))
            ),
            registry,
            agent_cards: list("/agentCards")?,
            invitations,
            enrolments,
        })
    }

    /// The binding of `key_id`, for an update of its validity.
    fn binding_mut(&mut self, key_id: &str) -> Option<&mut BindingRecord> {
        self.registry
            .bindings
            .iter_mut()
            .find(|b| b.key_id == key_id)
    }

    /// Ends a key's validity at `at` (`revoked`: `revokedAt`, else `validUntil`), as an
    /// appended status record (§6.4: the history only grows, a boundary only moves earlier).
    pub fn end_key(&mut self, key_id: &str, at: Micros, revoked: bool) -> Result<(), String> {
        let b = self
            .binding_mut(key_id)
            .ok_or_else(|| format!("no key {key_id} in the Registry"))?;
        let sequence = b.validity_history.len() as u64 + 1;
        let when = time_text(at);
        b.validity_history.push(StatusRecord {
            sequence,
            recorded_at: when.clone(),
            valid_until: (!revoked).then(|| when.clone()),
            revoked_at: revoked.then_some(when),
        });
        Ok(())
    }

    /// Binds an enrolled key (at confirmation, or at once), ending the key its invitation
    /// replaces.
    fn bind(&mut self, e: &Enrolled, now: Micros) -> Result<(), String> {
        self.registry.bindings.push(BindingRecord {
            key_id: e.key_id.clone(),
            principal_type: "human".into(),
            principal_id: e.principal_id.clone(),
            algorithm: "Ed25519".into(),
            public_key: e.public_key.clone(),
            valid_from: time_text(now.minus_seconds(ENROLMENT_BACKDATE_SECONDS)),
            validity_history: vec![],
        });
        let replaces = self
            .invitations
            .iter()
            .find(|i| i.id == e.invitation)
            .and_then(|i| i.replaces.clone());
        if let Some(old) = replaces
            && self.binding_mut(&old).is_some()
        {
            self.end_key(&old, now, false)?;
        }
        self.registry
            .validate()
            .map(|_| ())
            .map_err(|e| format!("the Registry would be invalid: {e}"))
    }
}

/// An Organization's data directory.
#[derive(Clone, Debug)]
pub struct OrgDir {
    pub dir: PathBuf,
}

/// What `org init` made, for its summary.
pub struct Created {
    pub file: OrgFile,
    pub key_path: PathBuf,
}

impl OrgDir {
    pub fn new(dir: &Path) -> OrgDir {
        OrgDir {
            dir: dir.to_path_buf(),
        }
    }

    /// Whether `dir` holds an Organization made by `org init`.
    pub fn exists(dir: &Path) -> bool {
        dir.join(FILE).is_file()
    }

    fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// `org init`: a new Organization with its service Principal and Group Authority key.
    /// Refuses a directory that already holds an Organization (this one or the development one).
    pub fn init(
        &self,
        name: &str,
        require_confirmation: bool,
        now: Micros,
    ) -> Result<Created, String> {
        let org_slug = slug(name).ok_or_else(|| {
            format!("{name:?}: an Organization name needs 1 to 40 letters or digits")
        })?;
        if self.dir.join(FILE).exists() || self.dir.join("organization.json").exists() {
            return Err(format!(
                "{} already holds an Organization; use another --data directory",
                self.dir.display()
            ));
        }
        crate::devorg::private_dir(&self.dir)?;
        let mut raw = crate::gateway::random::<32>();
        let seed = SecretSeed::take(&mut raw);
        let fingerprint = key_fingerprint(&seed.public_key());
        let service_id = format!("urn:missionweaveprotocol:service:{org_slug}:group-authority");
        let key_id = format!("{KEY_PREFIX}{org_slug}-group-authority-{fingerprint}");
        let mut key = Object::new();
        key.insert("keyId", Value::string(key_id.clone()));
        key.insert("seed", Value::string(seed.to_b64url().to_string()));
        let text = zeroize::Zeroizing::new(json::to_string(&Value::Object(key)));
        let key_path = self.dir.join(KEY_FILE);
        crate::devorg::write_key_file(&key_path, text.as_bytes())?;
        let file = OrgFile {
            organization_id: format!("urn:missionweaveprotocol:organization:{org_slug}"),
            name: name.trim().to_owned(),
            created_at: now,
            service: Actor::new(ActorType::Service, &service_id),
            service_key_id: key_id.clone(),
            require_confirmation,
            registry: RegistryEvidence {
                organization_id: format!("urn:missionweaveprotocol:organization:{org_slug}"),
                bindings: vec![BindingRecord {
                    key_id,
                    principal_type: "service".into(),
                    principal_id: service_id,
                    algorithm: "Ed25519".into(),
                    public_key: b64url_encode(&seed.public_key()),
                    valid_from: time_text(now),
                    validity_history: vec![],
                }],
            },
            agent_cards: vec![],
            invitations: vec![],
            enrolments: vec![],
        };
        file.registry
            .validate()
            .map_err(|e| format!("the new Registry is invalid: {e}"))?;
        self.write(&file)?;
        Ok(Created { file, key_path })
    }

    /// The file as it is now.
    pub fn read(&self) -> Result<OrgFile, String> {
        let path = self.path();
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v = json::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        OrgFile::from_value(&v)
    }

    fn write(&self, file: &OrgFile) -> Result<(), String> {
        let path = self.path();
        let tmp = self.dir.join(format!("{FILE}.tmp"));
        let text = json::to_string(&file.to_value());
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut f = options
            .open(&tmp)
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Read, change and write the file under the directory's exclusive lock; the change is
    /// written only if `change` succeeds and the Registry is still valid as a whole.
    pub fn update<T>(
        &self,
        change: impl FnOnce(&mut OrgFile) -> Result<T, String>,
    ) -> Result<T, String> {
        let lock_path = self.dir.join(LOCK_FILE);
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let lock = options
            .open(&lock_path)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        lock.lock()
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        let mut file = self.read()?;
        let out = change(&mut file)?;
        file.registry
            .validate()
            .map_err(|e| format!("the Registry would be invalid: {e}"))?;
        self.write(&file)?;
        drop(lock);
        Ok(out)
    }

    /// The service key (refused when others may read the file).
    pub fn service_seed(&self, file: &OrgFile) -> Result<SecretSeed, String> {
        let path = self.dir.join(KEY_FILE);
        let registry = file
            .registry
            .validate()
            .map_err(|e| format!("{FILE}: the Registry is invalid: {e}"))?;
        let (key_id, seed, _) = crate::devorg::read_authority_key(&path, &registry)?;
        if key_id != file.service_key_id {
            return Err(format!(
                "{}: its keyId is not the Organization's service key {}",
                path.display(),
                file.service_key_id
            ));
        }
        Ok(seed)
    }

    /// Every service key held in the directory ([`KEY_FILE`], and during a rotation
    /// [`PREVIOUS_KEY_FILE`] and [`NEXT_KEY_FILE`]) that the Registry binds to the service
    /// Principal, each with its binding's window. A file that is absent, or whose key the
    /// Registry does not bind to the service, is left out; one others may read is refused.
    pub fn held_keys(&self, file: &OrgFile) -> Result<Vec<crate::service_keys::HeldKey>, String> {
        let registry = file
            .registry
            .validate()
            .map_err(|e| format!("{FILE}: the Registry is invalid: {e}"))?;
        let mut out: Vec<crate::service_keys::HeldKey> = Vec::new();
        // In the order a rotation moves them (`rotate_service`: the current file to the
        // previous, then the next to the current), so one pass finds both keys whenever it
        // runs during the renames.
        for name in [NEXT_KEY_FILE, KEY_FILE, PREVIOUS_KEY_FILE] {
            let path = self.dir.join(name);
            if !path.exists() {
                continue;
            }
            let (key_id, seed, principal) =
                match crate::devorg::read_authority_key(&path, &registry) {
                    Ok(k) => k,
                    Err(e) if crate::devorg::key_file_warning(&path).is_some() => return Err(e),
                    Err(_) => continue,
                };
            if principal != file.service || out.iter().any(|k| k.key_id == key_id) {
                continue;
            }
            if let Some(k) = crate::service_keys::HeldKey::bound(&key_id, seed, &registry) {
                out.push(k);
            }
        }
        // The key `org.json` names first: it signs when two were bound in the same second.
        out.sort_by_key(|k| k.key_id != file.service_key_id);
        if out.is_empty() {
            return Err(format!(
                "{}: no service key the Registry binds to {}",
                self.dir.display(),
                file.service.id.0
            ));
        }
        Ok(out)
    }

    /// `org key rotate service`: a new Ed25519 key for the service Principal, bound from
    /// `now`; the current key's validity ends at `now + grace` (§6.4: what it signed before
    /// then still verifies, by its window at the signed time). The Agent Cards in force are
    /// signed again by the new key (next `cardVersion`, `issuedAt` now). The old key file is
    /// kept as [`PREVIOUS_KEY_FILE`] (the running server may sign with it until it notices
    /// the rotation, within a second). Refused during the grace period of an earlier rotation
    /// (two keys are already valid) and for a grace shorter than
    /// [`MIN_ROTATION_GRACE_SECONDS`].
    pub fn rotate_service(&self, grace: u64, now: Micros) -> Result<Rotated, String> {
        if grace < MIN_ROTATION_GRACE_SECONDS {
            return Err(format!(
                "--grace must be at least {MIN_ROTATION_GRACE_SECONDS} seconds: a running server \
                 signs with the old key until it notices the rotation (within a second)"
            ));
        }
        // Whole seconds, as every Registry time this file writes: the new key is valid from
        // a moment no later than now.
        let now = Micros::parse(&time_text(now)).unwrap_or(now);
        let before = self.read()?;
        self.service_seed(&before)?;
        let org_slug = before
            .organization_id
            .rsplit(':')
            .next()
            .and_then(slug)
            .unwrap_or_else(|| "organization".into());
        let mut raw = crate::gateway::random::<32>();
        let seed = SecretSeed::take(&mut raw);
        let public_key = b64url_encode(&seed.public_key());
        let new_key_id = format!(
            "{KEY_PREFIX}{org_slug}-group-authority-{}",
            key_fingerprint(&seed.public_key())
        );
        let next = self.dir.join(NEXT_KEY_FILE);
        // A leftover of a rotation that stopped before `org.json` bound its key: never bound,
        // so nothing was signed with it.
        if next.exists() {
            let bound = crate::devorg::read_authority_key(
                &next,
                &before.registry.validate().map_err(|e| e.to_string())?,
            )
            .is_ok();
            if bound {
                return Err(format!(
                    "{} holds a bound key: a rotation did not finish; rename it to {KEY_FILE} \
                     (after moving {KEY_FILE} to {PREVIOUS_KEY_FILE}) and try again",
                    next.display()
                ));
            }
            std::fs::remove_file(&next).map_err(|e| format!("{}: {e}", next.display()))?;
        }
        let mut key = Object::new();
        key.insert("keyId", Value::string(new_key_id.clone()));
        key.insert("seed", Value::string(seed.to_b64url().to_string()));
        let text = zeroize::Zeroizing::new(json::to_string(&Value::Object(key)));
        crate::devorg::write_key_file(&next, text.as_bytes())?;
        let ends = now.plus_seconds(grace);
        let outcome = self.update(|f| {
            let old_key_id = f.service_key_id.clone();
            let registry = f
                .registry
                .validate()
                .map_err(|e| format!("the Registry is invalid: {e}"))?;
            let at = |m: Micros| {
                wasm_core::time::Timestamp::parse_profile(&m.format())
                    .map_err(|e| format!("{}: {e}", m.format()))
            };
            let now_ts = at(now)?;
            // Another service key still valid now: an earlier rotation's grace period.
            if let Some(other) = registry.bindings().find(|b| {
                b.principal.id == f.service.id
                    && b.key_id != old_key_id
                    && b.valid_at(now_ts.instant())
            }) {
                let until = other.valid_until.as_ref().map_or("no end", |t| t.as_str());
                return Err(format!(
                    "a rotation is in its grace period: {} is still valid (until {until}); \
                     rotate again after that",
                    other.key_id
                ));
            }
            let old = registry
                .binding(&old_key_id)
                .ok_or_else(|| format!("{old_key_id} is not in the Registry"))?;
            // The old key's end moves earlier only (§6.4); an already ended key keeps its end.
            let ends_ts = at(ends)?;
            let current_end = [&old.valid_until, &old.revoked_at]
                .into_iter()
                .flatten()
                .map(|t| t.instant().clone())
                .min();
            let old_ends = match current_end {
                Some(e) if &e <= ends_ts.instant() => None,
                _ => Some(ends),
            };
            f.registry.bindings.push(BindingRecord {
                key_id: new_key_id.clone(),
                principal_type: "service".into(),
                principal_id: f.service.id.0.clone(),
                algorithm: "Ed25519".into(),
                public_key: public_key.clone(),
                valid_from: time_text(now),
                validity_history: vec![],
            });
            if let Some(e) = old_ends {
                f.end_key(&old_key_id, e, false)?;
            }
            f.service_key_id = new_key_id.clone();
            let cards = resign_cards(f, &new_key_id, &seed, now)?;
            Ok(Rotated {
                old_key_id,
                new_key_id: new_key_id.clone(),
                old_valid_until: old_ends.unwrap_or(ends),
                cards,
            })
        });
        let rotated = match outcome {
            Ok(r) => r,
            Err(e) => {
                let _ = std::fs::remove_file(&next);
                return Err(e);
            }
        };
        // `org.json` binds the new key and names it: the files follow. Until both renames are
        // done, `held_keys` finds each key under one of the three names.
        let current = self.dir.join(KEY_FILE);
        let previous = self.dir.join(PREVIOUS_KEY_FILE);
        std::fs::rename(&current, &previous)
            .and_then(|()| std::fs::rename(&next, &current))
            .map_err(|e| format!("{}: {e}", self.dir.display()))?;
        Ok(rotated)
    }

    /// `org invite human NAME`: a new invitation; its token is returned once and never stored.
    pub fn invite(
        &self,
        name: &str,
        role: Option<&str>,
        expires_in: u64,
        replaces: Option<String>,
        now: Micros,
    ) -> Result<(Invitation, String), String> {
        if !human_name_ok(name) {
            return Err(format!(
                "{name:?}: a human's name is 1 to 40 of a-z, 0-9 and -, not starting with -"
            ));
        }
        let token = new_token();
        let invitation = Invitation {
            id: format!("inv-{}", &token_hash(&token)[..16]),
            token_hash: token_hash(&token),
            name: name.to_owned(),
            role: role.map(str::to_owned),
            created_at: now,
            expires_at: now.plus_seconds(expires_in),
            replaces,
            used: None,
        };
        let kept = invitation.clone();
        self.update(|f| {
            if f.invitations.len() >= MAX_INVITATIONS {
                return Err(format!(
                    "the Organization keeps at most {MAX_INVITATIONS} invitations"
                ));
            }
            f.invitations.push(kept);
            Ok(())
        })?;
        Ok((invitation, token))
    }

    /// Spends the invitation `token` for `req` (the running server's `POST /api/enrol`).
    pub fn enrol(&self, req: &EnrolRequest, now: Micros) -> Result<EnrolOutcome, EnrolRefusal> {
        let Some(token) = req.token.as_deref() else {
            return Err(EnrolRefusal::NoInvitation);
        };
        let digest = token_hash(token);
        let name = req.name().to_owned();
        let mut refusal = None;
        let outcome = self.update(|f| {
            let Some(inv) = f
                .invitations
                .iter_mut()
                .find(|i| same_bytes(i.token_hash.as_bytes(), digest.as_bytes()))
            else {
                refusal = Some(EnrolRefusal::NoInvitation);
                return Err(String::new());
            };
            if let Some((_, key)) = &inv.used {
                refusal = Some(if key == &req.key_id {
                    EnrolRefusal::AlreadyDone
                } else {
                    EnrolRefusal::Used
                });
                return Err(String::new());
            }
            if now >= inv.expires_at {
                refusal = Some(EnrolRefusal::Expired);
                return Err(String::new());
            }
            if inv.name != name {
                refusal = Some(EnrolRefusal::OtherName(inv.name.clone()));
                return Err(String::new());
            }
            if f.registry.bindings.iter().any(|b| b.key_id == req.key_id)
                || f.enrolments.iter().any(|e| e.key_id == req.key_id)
            {
                refusal = Some(EnrolRefusal::KeyTaken);
                return Err(String::new());
            }
            inv.used = Some((now, req.key_id.clone()));
            let e = Enrolled {
                invitation: inv.id.clone(),
                principal_id: req.principal_id.clone(),
                key_id: req.key_id.clone(),
                public_key: req.public_key.clone(),
                at: now,
                confirmed_at: (!f.require_confirmation).then_some(now),
            };
            if f.require_confirmation {
                f.enrolments.push(e);
                return Ok(EnrolOutcome::Pending);
            }
            f.bind(&e, now)?;
            f.enrolments.push(e);
            Ok(EnrolOutcome::Bound)
        });
        match outcome {
            Ok(o) => Ok(o),
            Err(e) => Err(refusal.unwrap_or(EnrolRefusal::Store(e))),
        }
    }

    /// `org confirm`: binds a pending enrolment (by key ID or by name: its only pending one).
    pub fn confirm(&self, which: &str, now: Micros) -> Result<Enrolled, String> {
        self.update(|f| {
            let pending: Vec<usize> = f
                .enrolments
                .iter()
                .enumerate()
                .filter(|(_, e)| {
                    e.confirmed_at.is_none()
                        && (e.key_id == which
                            || e.principal_id.strip_prefix(HUMAN_PREFIX) == Some(which))
                })
                .map(|(i, _)| i)
                .collect();
            let i = match pending.as_slice() {
                [i] => *i,
                [] => return Err(format!("no pending enrolment for {which}")),
                _ => {
                    return Err(format!(
                        "{which} has several pending enrolments: name one by its key ID"
                    ));
                }
            };
            f.enrolments[i].confirmed_at = Some(now);
            let e = f.enrolments[i].clone();
            f.bind(&e, now)?;
            Ok(e)
        })
    }
}

/// What `org key rotate service` did.
#[derive(Clone, Debug, PartialEq)]
pub struct Rotated {
    pub old_key_id: String,
    pub new_key_id: String,
    /// When the old key stops being valid.
    pub old_valid_until: Micros,
    /// The Agent Cards signed again by the new key.
    pub cards: usize,
}

/// Signs each Agent Card again with the new service key: the same content, the next
/// `cardVersion`, `issuedAt` now (a card is replaced in place, as `org key rotate agent` does).
/// Returns how many.
fn resign_cards(
    f: &mut OrgFile,
    key_id: &str,
    seed: &SecretSeed,
    now: Micros,
) -> Result<usize, String> {
    for card in &mut f.agent_cards {
        let Value::Object(o) = card else {
            return Err("an Agent Card is not a JSON object".into());
        };
        let mut o = o.clone();
        let version = o
            .get("cardVersion")
            .and_then(crate::devorg::json_u64)
            .unwrap_or(0);
        o.remove("signature");
        o.insert("cardVersion", Value::from(version + 1));
        o.insert("issuedAt", Value::string(time_text(now)));
        let mut doc = Value::Object(o);
        sign_document(&mut doc, DocumentKind::AgentCard, key_id, seed)
            .map_err(|e| format!("an Agent Card cannot be signed again: {e}"))?;
        wasm_core::model::agent_card::validate(&doc, true)
            .map_err(|e| format!("an Agent Card signed again is not valid: {e}"))?;
        *card = doc;
    }
    Ok(f.agent_cards.len())
}

/// What an enrolment did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnrolOutcome {
    /// The key is in the Registry now.
    Bound,
    /// The key waits for an administrator's `org confirm`.
    Pending,
}

/// Why an invitation did not enrol a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnrolRefusal {
    /// No token, or one no invitation has.
    NoInvitation,
    /// Spent already, by another key.
    Used,
    /// Spent by this very key (a retry): nothing to do.
    AlreadyDone,
    Expired,
    /// The invitation is for another name.
    OtherName(String),
    /// The key ID is bound already.
    KeyTaken,
    /// The file could not be read or written (logged, not sent).
    Store(String),
}

/// The SHA-256 content hash of a card document's JCS (the action ID of its registration).
pub fn card_hash(doc: &Value) -> Result<String, String> {
    json::canonicalize(doc)
        .map(|jcs| sha256_hash(&jcs))
        .map_err(|e| e.to_string())
}

/// The Registry binding of an Agent's key, valid from `now`.
pub fn agent_binding(agent_id: &str, key_id: &str, public_key: &str, now: Micros) -> BindingRecord {
    BindingRecord {
        key_id: key_id.to_owned(),
        principal_type: "agent".into(),
        principal_id: agent_id.to_owned(),
        algorithm: "Ed25519".into(),
        public_key: public_key.to_owned(),
        valid_from: now.format_whole_seconds(),
        validity_history: vec![],
    }
}

/// The signed card: `template` with the Organization, the key, `issuedAt`, the next
/// `cardVersion` and the service's signature; schema-checked by signing. Returns it and the
/// key ID it names (`urn:missionweaveprotocol:key:<name>-<fingerprint>`).
pub fn sign_card(
    f: &OrgFile,
    template: &Value,
    public_key: &str,
    seed: &wasm_core::crypto::SecretSeed,
    now: Micros,
) -> Result<(Value, String), String> {
    sign_card_as(f, template, public_key, None, seed, now)
}

/// [`sign_card`] naming the key `key_id` when given.
pub fn sign_card_as(
    f: &OrgFile,
    template: &Value,
    public_key: &str,
    key_id: Option<&str>,
    seed: &wasm_core::crypto::SecretSeed,
    now: Micros,
) -> Result<(Value, String), String> {
    let Value::Object(t) = template else {
        return Err("the card must be a JSON object".into());
    };
    let agent_id = t
        .get("agentId")
        .and_then(Value::as_str)
        .ok_or("the card has no agentId")?
        .to_owned();
    let name = agent_id.rsplit(':').next().unwrap_or("agent");
    let slug = slug(name).unwrap_or_else(|| "agent".into());
    let key_id = key_id.map(str::to_owned).unwrap_or_else(|| {
        format!(
            "urn:missionweaveprotocol:key:{slug}-{}",
            key_fingerprint(&wasm_core::encoding::b64url_decode(public_key).unwrap_or_default())
        )
    });
    let previous = f
        .agent_cards
        .iter()
        .filter(|c| c.pointer("/agentId").and_then(Value::as_str) == Some(agent_id.as_str()))
        .filter_map(|c| c.pointer("/cardVersion").and_then(crate::devorg::json_u64))
        .max()
        .unwrap_or(0);
    let mut card = Object::new();
    for (k, v) in t.iter() {
        if ![
            "organizationId",
            "publicKeys",
            "issuedAt",
            "signature",
            "cardVersion",
        ]
        .contains(&k.as_str())
        {
            card.insert(k.clone(), v.clone());
        }
    }
    card.insert("organizationId", Value::string(f.organization_id.clone()));
    card.insert("cardVersion", Value::from(previous + 1));
    if !card.contains_key("status") {
        card.insert("status", Value::string("active"));
    }
    if !card.contains_key("protocolVersions") {
        card.insert("protocolVersions", Value::Array(vec![Value::string("0.1")]));
    }
    let mut key = Object::new();
    key.insert("keyId", Value::string(key_id.clone()));
    key.insert("algorithm", Value::string("Ed25519"));
    key.insert("publicKey", Value::string(public_key.to_owned()));
    key.insert("validFrom", Value::string(now.format_whole_seconds()));
    card.insert("publicKeys", Value::Array(vec![Value::Object(key)]));
    card.insert("issuedAt", Value::string(now.format_whole_seconds()));
    let mut doc = Value::Object(card);
    sign_document(&mut doc, DocumentKind::AgentCard, &f.service_key_id, seed)
        .map_err(|e| format!("the Agent Card is not valid: {e}"))?;
    wasm_core::model::agent_card::validate(&doc, true)
        .map_err(|e| format!("the Agent Card is not valid: {e}"))?;
    Ok((doc, key_id))
}

/// What the authority needs to serve the Organization of `dir`: it signs first with the
/// service key valid now (after a rotation, the new one), then with whichever held key is
/// valid at each batch's time ([`crate::service_keys`]).
pub fn setup(dir: &Path) -> Result<crate::devorg::OrgSetup, String> {
    setup_at(dir, crate::clock::now())
}

/// [`setup`] at `now`.
pub fn setup_at(dir: &Path, now: Micros) -> Result<crate::devorg::OrgSetup, String> {
    let org = OrgDir::new(dir);
    let file = org.read()?;
    // The key `org.json` names must be there (and readable only by us).
    org.service_seed(&file)?;
    let registry = file
        .registry
        .validate()
        .map_err(|e| format!("{FILE}: the Registry is invalid: {e}"))?;
    let keys = crate::service_keys::ServiceKeys::new(org.held_keys(&file)?);
    let first = keys.at(now).ok_or_else(|| {
        format!(
            "no service key of {} is valid now (held: {}): see docs/operations.md, \"The \
             authority's key\"",
            dir.display(),
            keys.key_ids().join(", ")
        )
    })?;
    Ok(crate::devorg::OrgSetup {
        config: AuthorityConfig {
            accepted_by: file.service.clone(),
            key_id: first.key_id.clone(),
            seed: first.seed.duplicate(),
            limits: CooperationLimits::default(),
        },
        admission_service: file.service.clone(),
        registry,
        public: crate::registry_api::PublicRegistry::new(&file.registry, &file.agent_cards),
        dev: None,
        service_keys: Some(keys),
    })
}

/// The running server's side of the directory: applies each change of [`FILE`] (by
/// `weave-console org …` or an enrolment) within a second — the whole Registry validated again
/// and swapped in, the cards served, the service keys held and their windows replaced in
/// `keys` (after `org key rotate service` every signer switches to the new key: no restart) —
/// and registers each Agent's newest card with the authority (signed by the service key valid
/// at the card's `issuedAt`; the Command's action ID is the card's content hash and its
/// `issuedAt` the card's, so sending it again after a restart is an exact retry, §15.1).
///
/// `ready` is told once the cards present at start are registered (the demo's Agents say HELLO
/// only after that: an Agent without a registered card is refused).
pub async fn watch(
    dir: OrgDir,
    reload: impl Fn() + Send + 'static,
    authority: crate::runtime::AuthorityHandle,
    keys: crate::service_keys::ServiceKeys,
    mut ready: Option<tokio::sync::oneshot::Sender<()>>,
) {
    let service = match dir.read() {
        Ok(f) => f.service,
        Err(e) => {
            tracing::error!(error = %e, "the Organization directory is not watched");
            return;
        }
    };
    let mut last = None;
    let mut registered: std::collections::HashSet<String> = std::collections::HashSet::new();
    loop {
        // `org.json` and the key files: a rotation renames the key files after it writes
        // `org.json`, and the keys held are read again once they are in place.
        let stamp: Vec<_> = [FILE, KEY_FILE, PREVIOUS_KEY_FILE, NEXT_KEY_FILE]
            .iter()
            .map(|f| {
                std::fs::metadata(dir.dir.join(f))
                    .ok()
                    .map(|m| (m.modified().ok(), m.len()))
            })
            .collect();
        let stamp = Some(stamp);
        if stamp != last {
            last = stamp;
            reload();
            if let Ok(f) = dir.read() {
                match dir.held_keys(&f) {
                    Ok(held) => {
                        let ids: Vec<String> = held.iter().map(|k| k.key_id.clone()).collect();
                        if ids != keys.key_ids() {
                            tracing::info!(keys = ?ids, "the service keys held changed");
                        }
                        keys.replace(held);
                    }
                    Err(e) => tracing::error!(error = %e, "the service keys were not read again"),
                }
                register_cards(&f, &service, &keys, &authority, &mut registered).await;
            }
        }
        if let Some(tx) = ready.take() {
            let _ = tx.send(());
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Registers each Agent's newest card not yet registered by this process (an older version
/// would be refused: a card's version only increases).
async fn register_cards(
    f: &OrgFile,
    service: &Actor,
    keys: &crate::service_keys::ServiceKeys,
    authority: &crate::runtime::AuthorityHandle,
    registered: &mut std::collections::HashSet<String>,
) {
    let mut newest: std::collections::BTreeMap<&str, (u64, &Value)> = Default::default();
    for card in &f.agent_cards {
        let Some(agent) = card.pointer("/agentId").and_then(Value::as_str) else {
            continue;
        };
        let version = card
            .pointer("/cardVersion")
            .and_then(crate::devorg::json_u64)
            .unwrap_or(0);
        if newest.get(agent).is_none_or(|(v, _)| *v < version) {
            newest.insert(agent, (version, card));
        }
    }
    for (_, (_, card)) in newest {
        let Ok(hash) = card_hash(card) else { continue };
        if registered.contains(&hash) {
            continue;
        }
        let issued = card
            .pointer("/issuedAt")
            .and_then(Value::as_str)
            .and_then(Micros::parse)
            .unwrap_or(f.created_at);
        let Some(key) = keys.at(issued) else {
            tracing::warn!(card = %hash, "no held service key was valid when the card was issued");
            continue;
        };
        let issuer = crate::devorg::DevPrincipal {
            name: "group-authority".into(),
            actor: service.clone(),
            key_id: key.key_id.clone(),
            seed: key.seed.duplicate(),
            pool: false,
        };
        let reply = match crate::cards::register_signed(&issuer, card, issued) {
            Ok(bytes) => authority.submit(bytes).await,
            Err(e) => {
                tracing::error!(error = %e, "an Agent Card cannot be registered");
                continue;
            }
        };
        match reply {
            crate::runtime::Reply::Done(_) => {
                tracing::info!(card = %hash, "Agent Card registered");
                registered.insert(hash);
            }
            crate::runtime::Reply::Refused(e) => tracing::warn!(
                card = %hash,
                refusal = %json::to_string(&e.document()),
                "an Agent Card was not registered"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new Organization in `temp(tag)` (confirmation required or not) and one invitation of
    /// `name` (`role`, an hour): the directory, the Organization, the invitation and its token.
    fn invited(
        tag: &str,
        confirm: bool,
        name: &str,
        role: Option<&str>,
    ) -> (PathBuf, OrgDir, Invitation, String) {
        let dir = temp(tag);
        let org = OrgDir::new(&dir);
        org.init("Acme", confirm, now()).expect("init");
        let (inv, token) = org.invite(name, role, 3600, None, now()).expect("invited");
        (dir, org, inv, token)
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weave-org-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn now() -> Micros {
        Micros::parse("2026-12-06T06:00:00Z").expect("time")
    }

    fn request(name: &str, n: u8, token: Option<&str>) -> crate::enrol::EnrolRequest {
        let seed = SecretSeed::take(&mut [n; 32]);
        crate::enrol::EnrolRequest {
            principal_id: format!("{HUMAN_PREFIX}{name}"),
            key_id: format!("{KEY_PREFIX}{name}-k{n}"),
            public_key: b64url_encode(&seed.public_key()),
            token: token.map(str::to_owned),
        }
    }

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
    }

    #[test]
    fn init_makes_a_private_directory_a_service_key_and_a_valid_registry() {
        let dir = temp("init");
        let org = OrgDir::new(&dir);
        let made = org.init("Acme Robotics", false, now()).expect("init");
        assert_eq!(
            made.file.organization_id,
            "urn:missionweaveprotocol:organization:acme-robotics"
        );
        #[cfg(unix)]
        {
            assert_eq!(mode(&dir), 0o700);
            assert_eq!(mode(&dir.join(KEY_FILE)), 0o600);
            assert_eq!(mode(&dir.join(FILE)), 0o600);
        }
        let file = org.read().expect("read back");
        assert_eq!(file, made.file);
        let seed = org
            .service_seed(&file)
            .expect("the key matches the Registry");
        let text = std::fs::read_to_string(dir.join(FILE)).expect("text");
        assert!(
            !text.contains(seed.to_b64url().as_str()),
            "no private key in org.json"
        );
        // Nothing of the development Organization.
        assert!(!dir.join("organization.json").exists());
        let s = setup(&dir).expect("served");
        assert!(s.dev.is_none());
        assert_eq!(s.config.accepted_by, file.service);
        // Twice: refused.
        assert!(org.init("Acme", false, now()).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The attacks on an invitation: no token, a made-up one, another name, a second use, a
    /// late use. Each is refused and binds nothing; the invited human with the token is bound,
    /// once.
    #[test]
    fn an_invitation_enrols_its_name_once_before_expiry() {
        let (dir, org, inv, token) = invited("invite", false, "alice", Some("approver"));
        assert_eq!(inv.name, "alice");
        let text = std::fs::read_to_string(dir.join(FILE)).expect("text");
        assert!(!text.contains(&token), "only the token's digest is kept");
        let bound = |o: &OrgDir| o.read().expect("read").registry.bindings.len();
        let at = now().plus_seconds(10);
        for (req, want) in [
            (request("alice", 2, None), EnrolRefusal::NoInvitation),
            (
                request("alice", 2, Some("made-up-token-made-up-token")),
                EnrolRefusal::NoInvitation,
            ),
            (
                request("mallory", 3, Some(&token)),
                EnrolRefusal::OtherName("alice".into()),
            ),
        ] {
            assert_eq!(org.enrol(&req, at), Err(want));
        }
        assert_eq!(bound(&org), 1, "nothing bound");
        assert_eq!(
            org.enrol(&request("alice", 2, Some(&token)), at),
            Ok(EnrolOutcome::Bound)
        );
        assert_eq!(bound(&org), 2);
        // The same request again: already done; another key with the same link: used.
        assert_eq!(
            org.enrol(&request("alice", 2, Some(&token)), at),
            Err(EnrolRefusal::AlreadyDone)
        );
        assert_eq!(
            org.enrol(&request("alice", 4, Some(&token)), at),
            Err(EnrolRefusal::Used)
        );
        // Expired: a second invitation used an hour late.
        let (_, late) = org.invite("bob", None, 60, None, now()).expect("invited");
        assert_eq!(
            org.enrol(&request("bob", 5, Some(&late)), now().plus_seconds(61)),
            Err(EnrolRefusal::Expired)
        );
        assert_eq!(bound(&org), 2);
        // The bound key is valid now (a minute back for a slow clock).
        let r = org
            .read()
            .expect("read")
            .registry
            .validate()
            .expect("valid");
        let b = r.binding(&format!("{KEY_PREFIX}alice-k2")).expect("bound");
        let at_ts =
            wasm_core::time::Timestamp::parse_profile(&at.format_whole_seconds()).expect("t");
        assert!(b.valid_at(at_ts.instant()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn with_confirmation_a_key_waits_for_an_administrator() {
        let (dir, org, _, token) = invited("confirm", true, "carol", None);
        assert_eq!(
            org.enrol(&request("carol", 6, Some(&token)), now()),
            Ok(EnrolOutcome::Pending)
        );
        let file = org.read().expect("read");
        assert_eq!(
            file.registry.bindings.len(),
            1,
            "not bound before confirmation"
        );
        assert_eq!(file.enrolments.len(), 1);
        assert!(org.confirm("dave", now()).is_err());
        let e = org.confirm("carol", now()).expect("confirmed");
        assert_eq!(e.key_id, format!("{KEY_PREFIX}carol-k6"));
        assert_eq!(org.read().expect("read").registry.bindings.len(), 2);
        assert!(
            org.confirm("carol", now()).is_err(),
            "nothing pending any more"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Rotation of a human: a new invitation that replaces the old key; when the new key is
    /// bound, the old one's validity ends then (Commands it signed before still verify).
    /// Revocation: `revokedAt` now.
    #[test]
    fn rotation_and_revocation_end_a_key_by_its_validity_window() {
        let (dir, org, _, t1) = invited("rotate", false, "erin", None);
        org.enrol(&request("erin", 7, Some(&t1)), now())
            .expect("bound");
        let old = format!("{KEY_PREFIX}erin-k7");
        let later = now().plus_seconds(600);
        let (_, t2) = org
            .invite("erin", None, 3600, Some(old.clone()), later)
            .expect("rotation invitation");
        org.enrol(&request("erin", 8, Some(&t2)), later)
            .expect("new key");
        let r = org
            .read()
            .expect("read")
            .registry
            .validate()
            .expect("valid");
        let ts = |m: Micros| {
            wasm_core::time::Timestamp::parse_profile(&m.format_whole_seconds()).expect("t")
        };
        let old_b = r.binding(&old).expect("kept, with its window");
        assert!(old_b.valid_at(ts(now().plus_seconds(1)).instant()));
        assert!(!old_b.valid_at(ts(later).instant()));
        let new_b = r.binding(&format!("{KEY_PREFIX}erin-k8")).expect("new");
        assert!(new_b.valid_at(ts(later).instant()));
        // Revoke the new one.
        let revoke_at = later.plus_seconds(60);
        org.update(|f| f.end_key(&format!("{KEY_PREFIX}erin-k8"), revoke_at, true))
            .expect("revoked");
        let r = org
            .read()
            .expect("read")
            .registry
            .validate()
            .expect("valid");
        let b = r.binding(&format!("{KEY_PREFIX}erin-k8")).expect("kept");
        assert!(
            b.valid_at(ts(later).instant()),
            "earlier signatures still verify"
        );
        assert!(!b.valid_at(ts(revoke_at).instant()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `org key rotate service`: refused with too short a grace and during an earlier
    /// rotation's grace; the new key bound from now, the old one valid through the grace, the
    /// old key file kept; the key the server signs with follows the windows; the cards are
    /// signed again by the new key; after the grace a second rotation is accepted.
    #[test]
    fn the_service_key_rotates_with_a_grace_period() {
        let dir = temp("rotate-service");
        let org = OrgDir::new(&dir);
        org.init("Acme", false, now()).expect("init");
        let seed = SecretSeed::take(&mut [5u8; 32]);
        let card = crate::cards::demo_template(
            "urn:missionweaveprotocol:agent:acme-builder",
            "builder",
            "urn:missionweaveprotocol:human:alice",
        );
        org.update(|f| {
            let s = org.service_seed(f)?;
            let (doc, _) = sign_card(f, &card, &b64url_encode(&seed.public_key()), &s, now())?;
            f.agent_cards.push(doc);
            Ok(())
        })
        .expect("a card");
        let old = org.read().expect("read").service_key_id;
        assert!(
            org.rotate_service(5, now())
                .expect_err("too short")
                .contains("at least 10 seconds")
        );
        let at = now().plus_seconds(100);
        let r = org.rotate_service(60, at).expect("rotated");
        assert_eq!(r.old_key_id, old);
        assert_eq!(r.old_valid_until, at.plus_seconds(60));
        assert_eq!(r.cards, 1);
        let f = org.read().expect("read");
        assert_eq!(f.service_key_id, r.new_key_id);
        #[cfg(unix)]
        {
            assert_eq!(mode(&dir.join(KEY_FILE)), 0o600);
            assert_eq!(mode(&dir.join(PREVIOUS_KEY_FILE)), 0o600);
        }
        assert!(!dir.join(NEXT_KEY_FILE).exists());
        // The card, signed again by the new key, verifies.
        let registry = f.registry.validate().expect("valid");
        assert_eq!(
            f.agent_cards[0]
                .pointer("/signature/keyId")
                .and_then(Value::as_str),
            Some(r.new_key_id.as_str())
        );
        wasm_core::crypto::verify(
            json::to_string(&f.agent_cards[0]).as_bytes(),
            DocumentKind::AgentCard,
            &registry,
        )
        .expect("the card verifies");
        // Inside the grace: refused.
        assert!(
            org.rotate_service(60, at.plus_seconds(30))
                .expect_err("in the grace")
                .contains("grace period")
        );
        // The key that signs follows the windows.
        let key_at = |t: Micros| {
            setup_at(&dir, t)
                .ok()
                .and_then(|s| s.service_keys)
                .and_then(|k| k.at(t))
                .map(|k| k.key_id.clone())
        };
        assert_eq!(key_at(at.minus_seconds(1)), Some(old.clone()));
        assert_eq!(key_at(at), Some(r.new_key_id.clone()));
        assert_eq!(key_at(at.plus_seconds(59)), Some(r.new_key_id.clone()));
        let keys = setup_at(&dir, at)
            .expect("setup")
            .service_keys
            .expect("keys");
        assert_eq!(keys.key_ids().len(), 2, "both held during the grace");
        // After the grace: a second rotation; the first key's file is gone.
        let r2 = org
            .rotate_service(60, at.plus_seconds(61))
            .expect("after the grace");
        assert_eq!(r2.old_key_id, r.new_key_id);
        let f = org.read().expect("read");
        let held: Vec<String> = org
            .held_keys(&f)
            .expect("held")
            .iter()
            .map(|k| k.key_id.clone())
            .collect();
        assert_eq!(held, vec![r2.new_key_id.clone(), r.new_key_id.clone()]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A rotation in the same second as `org init` (both keys `validFrom` the same second):
    /// the new key, the one `org.json` names, signs from then on.
    #[test]
    fn a_rotation_in_the_second_of_init_signs_with_the_new_key() {
        let dir = temp("rotate-same-second");
        let org = OrgDir::new(&dir);
        org.init("Acme", false, now()).expect("init");
        let r = org
            .rotate_service(DEFAULT_ROTATION_GRACE_SECONDS, now())
            .expect("rotated");
        for t in [now(), now().plus_seconds(1)] {
            let s = setup_at(&dir, t).expect("setup");
            assert_eq!(s.config.key_id, r.new_key_id);
            let keys = s.service_keys.expect("keys");
            assert_eq!(
                keys.at(t).map(|k| k.key_id.clone()),
                Some(r.new_key_id.clone())
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_and_slugs() {
        assert_eq!(
            slug("Acme Robotics, Inc.").as_deref(),
            Some("acme-robotics-inc")
        );
        assert_eq!(slug("  ").as_deref(), None);
        assert!(human_name_ok("mission-owner"));
        assert!(!human_name_ok("Alice") && !human_name_ok("-x") && !human_name_ok(""));
    }
}
