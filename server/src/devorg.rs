//! The development Organization: on first run, keys and principals are generated and kept under
//! the data directory (`organization.json`), so that restarts keep the same identities. It is
//! for development and demos only: the file holds private seeds. A deployment supplies its own
//! Registry evidence and keeps private keys where they belong (humans' in their browsers; see
//! docs/authority.md).

use std::io::{Read, Write};
use std::path::Path;
use wasm_core::authority::{AuthorityConfig, CooperationLimits, Micros};
use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::common::{Actor, ActorType};

/// The demo's Principals: (name, type). A development Organization also holds
/// [`LOAD_AGENTS`] load-test Agents, `load-01` … (see [`principal_names`]).
pub const PRINCIPALS: &[(&str, ActorType)] = &[
    ("group-gateway", ActorType::Service),
    ("organization-registry", ActorType::Service),
    ("admission", ActorType::Service),
    ("mission-owner", ActorType::Human),
    ("security-owner", ActorType::Human),
    ("coordinator", ActorType::Agent),
    ("analyst", ActorType::Agent),
    ("developer", ActorType::Agent),
    ("tester", ActorType::Agent),
    ("reviewer", ActorType::Agent),
    // Layout 2: what `weave-console dev principals` hands to external Agents.
    ("worker", ActorType::Agent),
    ("outsider", ActorType::Agent),
    // The §22 demo's further cast (`simulation::agents::plan::CAST`): the control plane that
    // replaces a failed Coordinator, a second Mission's Coordinator and its standby, the child
    // security Mission's Coordinator and Worker, and a second developer whose lease lapses.
    ("control-plane", ActorType::Service),
    ("coordinator-b", ActorType::Agent),
    ("coordinator-standby", ActorType::Agent),
    ("security-lead", ActorType::Agent),
    ("security-auditor", ActorType::Agent),
    ("developer-b", ActorType::Agent),
];

/// Load-test Agents in a development Organization (`load-01` … `load-32`). Bounded so that the
/// whole Registry stays within the bundle's Registry-fixture limit of 64 bindings
/// (`GET /api/registry` serves it in that shape).
pub const LOAD_AGENTS: usize = 32;

/// The layout of `organization.json` written by this version: 2 adds `worker`, `outsider`,
/// the load Agents, `createdAt` (the Agent Cards' `issuedAt`) and this marker. A file without
/// the marker (layout 1) still loads for `serve`; `dev principals` refuses it.
pub const LAYOUT: u64 = 2;

/// The name of load Agent `i` (1-based): `load-01`.
pub fn load_agent_name(i: usize) -> String {
    format!("load-{i:02}")
}

/// Every Principal of a new development Organization, in file order.
pub fn principal_names() -> Vec<(String, ActorType)> {
    let mut all: Vec<(String, ActorType)> = PRINCIPALS
        .iter()
        .map(|(n, t)| ((*n).to_owned(), *t))
        .collect();
    all.extend((1..=LOAD_AGENTS).map(|i| (load_agent_name(i), ActorType::Agent)));
    all
}

/// The scenario pool of a development Organization created by `serve --dev-clock`: fresh
/// Principals that `scenarios --url` maps the behavioural suite's named Principals onto, one
/// set per scenario, so that no scenario sees another's Agent Cards, Sessions or WorkItems
/// (the in-process runner gives each scenario a new Organization). Pool Agents get no Agent
/// Card and no Session at start-up: the runner registers them as the scenario asks.
pub const POOL_HUMANS: usize = 4;
/// Pool Agents: a full run of the suite registers about 50 of them.
pub const POOL_AGENTS: usize = 120;
/// Pool Organization services.
pub const POOL_SERVICES: usize = 2;

/// The pool's Principals, `scn-h01`, `scn-a001`, `scn-s01` ….
pub fn pool_names() -> Vec<(String, ActorType)> {
    let mut all: Vec<(String, ActorType)> = (1..=POOL_HUMANS)
        .map(|i| (format!("scn-h{i:02}"), ActorType::Human))
        .collect();
    all.extend((1..=POOL_AGENTS).map(|i| (format!("scn-a{i:03}"), ActorType::Agent)));
    all.extend((1..=POOL_SERVICES).map(|i| (format!("scn-s{i:02}"), ActorType::Service)));
    all
}

/// When every development key becomes valid (the Registry's `validFrom`).
pub const KEYS_VALID_FROM: &str = "2020-01-01T00:00:00Z";

/// A development Principal and its private key (not `Clone`; `{:?}` shows no key byte).
#[derive(Debug)]
pub struct DevPrincipal {
    pub name: String,
    pub actor: Actor,
    pub key_id: String,
    pub seed: SecretSeed,
    /// One of the scenario pool ([`pool_names`]): no card, no Session at start-up.
    pub pool: bool,
}

#[derive(Debug)]
pub struct DevOrganization {
    pub organization_id: String,
    pub principals: Vec<DevPrincipal>,
    /// The Registry evidence as written (served by `GET /api/registry`).
    pub evidence: RegistryEvidence,
    pub registry: ValidatedRegistry,
    /// The file's layout ([`LAYOUT`]; 1 for a file without the marker).
    pub layout: u64,
    /// When the Organization was created: the `issuedAt` of its Agent Cards (layout 1 files,
    /// which lack it, use [`KEYS_VALID_FROM`]).
    pub created_at: Micros,
}

impl DevOrganization {
    pub fn principal(&self, name: &str) -> Option<&DevPrincipal> {
        self.principals.iter().find(|p| p.name == name)
    }

    /// The Principal `name`, or an error that names it.
    pub fn require(&self, name: &str) -> Result<&DevPrincipal, String> {
        self.principal(name).ok_or_else(|| {
            format!("the development Organization has no Principal {name:?} (organization.json)")
        })
    }

    /// The development Agents, in file order (the scenario pool's are not among them).
    pub fn agents(&self) -> impl Iterator<Item = &DevPrincipal> {
        self.principals
            .iter()
            .filter(|p| p.actor.actor_type == ActorType::Agent && !p.pool)
    }

    /// The scenario pool, in file order (empty unless created by `serve --dev-clock`).
    pub fn pool(&self) -> impl Iterator<Item = &DevPrincipal> {
        self.principals.iter().filter(|p| p.pool)
    }

    /// The Group Authority's configuration: `group-gateway` accepts and signs Events.
    pub fn authority_config(&self) -> Result<AuthorityConfig, String> {
        let gw = self
            .principal("group-gateway")
            .ok_or("no group-gateway principal")?;
        Ok(AuthorityConfig {
            accepted_by: gw.actor.clone(),
            key_id: gw.key_id.clone(),
            seed: gw.seed.duplicate(),
            limits: CooperationLimits::default(),
        })
    }

    pub fn admission_service(&self) -> Result<Actor, String> {
        Ok(self
            .principal("admission")
            .ok_or("no admission principal")?
            .actor
            .clone())
    }
}

/// A JSON integer in the safe range, if `v` is one.
pub fn json_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_safe_u64(),
        _ => None,
    }
}

fn random_bytes(buf: &mut [u8]) -> Result<(), String> {
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))
}

fn random_seed() -> Result<SecretSeed, String> {
    let mut seed = [0u8; 32];
    random_bytes(&mut seed)?;
    Ok(SecretSeed::take(&mut seed))
}

/// A fresh random token (16 base64url characters, 96 bits) for new identifiers: Mission,
/// Group and Approval IDs must be new Organization-wide (payloads.md §2.1).
pub fn random_token() -> Result<String, String> {
    let mut b = [0u8; 12];
    random_bytes(&mut b)?;
    Ok(b64url_encode(&b))
}

/// Writes a key file in place of `path` (which may exist): a new 0600 file beside it, then
/// renamed over it, so a reader never sees a half-written or world-readable file.
pub fn replace_key_file(path: &Path, contents: &[u8]) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    write_key_file(&tmp, contents)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// Writes a file that holds private keys: created new, readable and writable by the owner only
/// (mode 0600 on Unix), so that no other account on the machine can read it.
pub fn write_key_file(path: &Path, contents: &[u8]) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads a file that holds private keys, refusing it when other accounts may read it (any
/// group or other permission bit set): a key others could have read must be replaced, not used
/// (issue 26, "refused, not warned about").
pub fn read_key_file(path: &Path) -> Result<Vec<u8>, String> {
    if let Some(problem) = key_file_warning(path) {
        return Err(problem);
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The data directory, created `0700` when missing (it holds the Organization's keys, the
/// Event store and the enrolments); an existing one is left as its operator made it.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Why a key file must not be used because others can read it, if they can.
pub fn key_file_warning(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            return Some(format!(
                "{} holds private keys but is readable by other accounts (mode {:o}); \
                 restrict it with `chmod 600 {}`",
                path.display(),
                mode & 0o777,
                path.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    None
}

/// Loads `DIR/organization.json`, creating it with fresh keys on first run.
#[cfg_attr(not(test), allow(dead_code))]
pub fn load_or_create(data_dir: &Path) -> Result<DevOrganization, String> {
    load_or_create_with(data_dir, false)
}

/// [`load_or_create`]; a new file also holds the scenario pool when `pool` is set.
pub fn load_or_create_with(data_dir: &Path, pool: bool) -> Result<DevOrganization, String> {
    let path = data_dir.join("organization.json");
    if !path.exists() {
        private_dir(data_dir)?;
        create(&path, crate::clock::now(), pool)?;
    }
    load_file(&path)
}

/// Loads the development Organization of an existing data directory, refusing one that holds
/// none (`dev` commands must never create keys a running server does not know).
pub fn load(data_dir: &Path) -> Result<DevOrganization, String> {
    let path = data_dir.join("organization.json");
    if !path.is_file() {
        return Err(format!(
            "{} holds no development Organization (no organization.json): start \
             `weave-console serve --data {}` first, or pass the data directory the server uses",
            data_dir.display(),
            data_dir.display()
        ));
    }
    load_file(&path)
}

fn create(path: &Path, now: Micros, pool: bool) -> Result<(), String> {
    {
        let mut list = Vec::new();
        let pool_names = if pool { pool_names() } else { Vec::new() };
        let pooled: std::collections::BTreeSet<&str> =
            pool_names.iter().map(|(n, _)| n.as_str()).collect();
        for (name, t) in principal_names().into_iter().chain(pool_names.clone()) {
            let seed = random_seed()?;
            let mut p = Object::new();
            p.insert("name", Value::string(name.clone()));
            p.insert(
                "actor",
                Actor::new(t, &format!("urn:missionweaveprotocol:{t}:{name}")).to_json(),
            );
            p.insert(
                "keyId",
                Value::string(format!("urn:missionweaveprotocol:key:{name}")),
            );
            p.insert("seed", Value::string(seed.to_b64url().to_string()));
            p.insert(
                "publicKey",
                Value::string(b64url_encode(&seed.public_key())),
            );
            if pooled.contains(name.as_str()) {
                p.insert("pool", Value::Bool(true));
            }
            list.push(Value::Object(p));
        }
        let mut o = Object::new();
        o.insert(
            "organizationId",
            Value::string("urn:missionweaveprotocol:organization:dev"),
        );
        o.insert(
            "warning",
            Value::string("development Organization: private test seeds, never for production"),
        );
        o.insert("layout", Value::from(LAYOUT));
        o.insert("createdAt", Value::string(now.format_whole_seconds()));
        o.insert("principals", Value::Array(list));
        let text = zeroize::Zeroizing::new(json::to_string(&Value::Object(o)));
        write_key_file(path, text.as_bytes())?;
    }
    Ok(())
}

fn load_file(path: &Path) -> Result<DevOrganization, String> {
    let bytes = zeroize::Zeroizing::new(read_key_file(path)?);
    let v = json::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let layout = match v.pointer("/layout") {
        None => 1,
        Some(l) => json_u64(l).ok_or("organization.json: layout must be a positive integer")?,
    };
    let created_at = match v.pointer("/createdAt").and_then(Value::as_str) {
        Some(t) => Micros::parse(t).ok_or("organization.json: createdAt is not a timestamp")?,
        None => Micros::parse(KEYS_VALID_FROM).ok_or("KEYS_VALID_FROM")?,
    };
    let organization_id = v
        .pointer("/organizationId")
        .and_then(Value::as_str)
        .ok_or("organization.json: no organizationId")?
        .to_owned();
    let mut principals = Vec::new();
    let mut bindings = Vec::new();
    if let Some(Value::Array(list)) = v.pointer("/principals") {
        for p in list {
            let s = |ptr: &str| {
                p.pointer(ptr)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or(format!("organization.json: principal lacks {ptr}"))
            };
            let actor: Actor = wasm_core::model::from_value(
                p.pointer("/actor")
                    .ok_or("organization.json: principal lacks actor")?,
                false,
            )
            .map_err(|e| format!("organization.json: {e}"))?;
            let seed =
                SecretSeed::from_b64url(&s("/seed")?).ok_or("organization.json: bad seed")?;
            let key_id = s("/keyId")?;
            bindings.push(BindingRecord {
                key_id: key_id.clone(),
                principal_type: actor.actor_type.as_str().into(),
                principal_id: actor.id.0.clone(),
                algorithm: "Ed25519".into(),
                public_key: b64url_encode(&seed.public_key()),
                valid_from: KEYS_VALID_FROM.into(),
                validity_history: vec![],
            });
            principals.push(DevPrincipal {
                name: s("/name")?,
                actor,
                key_id,
                seed,
                pool: matches!(p.pointer("/pool"), Some(Value::Bool(true))),
            });
        }
    }
    // The Registry is validated by the same Organization-wide checks as any evidence (§6.4).
    let evidence = RegistryEvidence {
        organization_id: organization_id.clone(),
        bindings,
    };
    let registry = evidence
        .validate()
        .map_err(|e| format!("organization.json: the Registry is invalid: {e}"))?;
    Ok(DevOrganization {
        organization_id,
        principals,
        evidence,
        registry,
        layout,
        created_at,
    })
}

/// Optional envelope members of a development Command (the rest are always present).
#[derive(Clone, Debug, Default)]
pub struct Envelope {
    pub group_id: Option<String>,
    pub session_epoch: Option<u64>,
    pub membership_epoch: Option<u64>,
    pub coordinator_epoch: Option<u64>,
    pub work_item_id: Option<String>,
    pub expected_revision: Option<u64>,
}

/// A Command signed by `who` (`command.schema.json`; protected time `issuedAt`, whole seconds
/// in UTC with `Z`, §6.4), as the bytes to submit. The correlation ID is the action ID.
pub fn signed_command(
    who: &DevPrincipal,
    kind: &str,
    action_id: &str,
    env: &Envelope,
    payload: Object,
    t: Micros,
) -> Result<Vec<u8>, String> {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("actionId", Value::string(action_id.to_owned()));
    o.insert("actor", who.actor.to_json());
    for (k, v) in [
        ("sessionEpoch", env.session_epoch),
        ("membershipEpoch", env.membership_epoch),
        ("coordinatorEpoch", env.coordinator_epoch),
    ] {
        if let Some(v) = v {
            o.insert(k, Value::from(v));
        }
    }
    for (k, v) in [
        ("groupId", &env.group_id),
        ("workItemId", &env.work_item_id),
    ] {
        if let Some(v) = v {
            o.insert(k, Value::string(v.clone()));
        }
    }
    o.insert("kind", Value::string(kind.to_owned()));
    if let Some(r) = env.expected_revision {
        o.insert("expectedRevision", Value::from(r));
    }
    o.insert("correlationId", Value::string(action_id.to_owned()));
    o.insert("issuedAt", Value::string(t.format_whole_seconds()));
    o.insert("payload", Value::Object(payload));
    let mut doc = Value::Object(o);
    wasm_core::crypto::sign_document(
        &mut doc,
        wasm_core::crypto::DocumentKind::Command,
        &who.key_id,
        &who.seed,
    )
    .map_err(|e| format!("{kind} cannot be signed: {e}"))?;
    Ok(json::to_string(&doc).into_bytes())
}

/// What the authority needs from an Organization, wherever it comes from.
pub struct OrgSetup {
    pub config: AuthorityConfig,
    pub registry: ValidatedRegistry,
    pub admission_service: Actor,
    /// What `GET /api/registry` serves.
    pub public: crate::registry_api::PublicRegistry,
    /// Present for the development Organization (its Agents are bootstrapped on first run).
    pub dev: Option<DevOrganization>,
    /// The service keys with their validity windows (an Organization of `org init`, whose
    /// service key rotates); `None`: `config`'s one key signs everything.
    pub service_keys: Option<crate::service_keys::ServiceKeys>,
}

/// The Group Authority's key file `{"keyId", "seed"}` (refused when others may read it): its key
/// ID, its seed and the Organization service Principal the Registry binds it to, once the seed is
/// shown to be that binding's key.
pub fn read_authority_key(
    key_file: &Path,
    registry: &ValidatedRegistry,
) -> Result<(String, SecretSeed, Actor), String> {
    let bytes = zeroize::Zeroizing::new(read_key_file(key_file)?);
    let key = json::parse(&bytes).map_err(|e| format!("{}: {e}", key_file.display()))?;
    let key_id = key
        .pointer("/keyId")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{}: no keyId", key_file.display()))?
        .to_owned();
    let seed = key
        .pointer("/seed")
        .and_then(Value::as_str)
        .and_then(SecretSeed::from_b64url)
        .ok_or_else(|| format!("{}: seed must be 32 bytes of base64url", key_file.display()))?;
    let binding = registry
        .binding(&key_id)
        .ok_or_else(|| format!("{key_id} is not in the Registry"))?;
    if binding.principal.actor_type != ActorType::Service {
        return Err(format!(
            "{key_id} is bound to a {}, not an Organization service",
            binding.principal.actor_type
        ));
    }
    if binding.public_key.as_bytes() != &seed.public_key() {
        return Err(format!(
            "{}: the seed does not match the Registry's key {key_id}",
            key_file.display()
        ));
    }
    let service = binding.principal.clone();
    Ok((key_id, seed, service))
}

/// A deployment's own Organization: Registry evidence in the bundle's Registry-fixture shape
/// (`{organizationId, bindings: [{keyId, principal, algorithm, publicKey, validFrom,
/// validityHistory}]}`), validated by the core's Organization-wide checks, and the Group
/// Authority's key file `{"keyId": …, "seed": <base64url 32 bytes>}`, whose binding must name an
/// Organization service Principal: that service accepts and signs Events and writes
/// First-Admission Records.
pub fn from_deployment(registry_file: &Path, key_file: &Path) -> Result<OrgSetup, String> {
    let read = |p: &Path| -> Result<Value, String> {
        let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
        json::parse(&bytes).map_err(|e| format!("{}: {e}", p.display()))
    };
    let evidence = RegistryEvidence::from_fixture_json(&read(registry_file)?)
        .map_err(|e| format!("{}: {e}", registry_file.display()))?;
    let registry = evidence
        .validate()
        .map_err(|e| format!("{}: the Registry is invalid: {e}", registry_file.display()))?;
    let (key_id, seed, service) = read_authority_key(key_file, &registry)?;
    Ok(OrgSetup {
        config: AuthorityConfig {
            accepted_by: service.clone(),
            key_id,
            seed,
            limits: CooperationLimits::default(),
        },
        admission_service: service,
        registry,
        // A deployment registers its own Agent Cards; the server has none to serve.
        public: crate::registry_api::PublicRegistry::new(&evidence, &[]),
        dev: None,
        service_keys: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("weave-devorg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn the_development_organization_is_written_0600_and_a_readable_key_file_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let parent = temp_dir("modes");
        // A new data directory is made 0700, its parents as they come.
        let dir = parent.join("data");
        let org = load_or_create(&dir).expect("created");
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("organization.json");
        assert_eq!(mode(&file), 0o600);
        assert_eq!(key_file_warning(&file), None);
        // Loading it again gives the same keys.
        let again = load_or_create(&dir).expect("loaded");
        for (a, b) in org.principals.iter().zip(&again.principals) {
            assert_eq!(a.seed.expose(), b.seed.expose());
        }
        // Readable by the group or others: a warning that names the file and the fix.
        for loose in [0o640, 0o604, 0o644] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(loose)).expect("chmod");
            let warning = key_file_warning(&file).expect("a warning");
            assert!(warning.contains("organization.json") && warning.contains("chmod 600"));
            assert!(warning.contains(&format!("{loose:o}")), "{warning}");
            // …and the server does not start with it.
            let refused = load_or_create(&dir).expect_err("a readable key file is refused");
            assert!(refused.contains("chmod 600"), "{refused}");
        }
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(load_or_create(&dir).is_ok());
        // A key file is never overwritten in place.
        assert!(write_key_file(&file, b"{}").is_err());
        let _ = std::fs::remove_dir_all(&parent);
    }

    #[test]
    fn a_dev_clock_organization_has_the_scenario_pool_without_cards() {
        let dir = temp_dir("pool");
        let org = load_or_create_with(&dir, true).expect("created");
        assert_eq!(
            org.principals.len(),
            PRINCIPALS.len() + LOAD_AGENTS + POOL_HUMANS + POOL_AGENTS + POOL_SERVICES
        );
        assert_eq!(
            org.pool().count(),
            POOL_HUMANS + POOL_AGENTS + POOL_SERVICES
        );
        for (name, kind) in [
            ("scn-h01", ActorType::Human),
            ("scn-a120", ActorType::Agent),
            ("scn-s02", ActorType::Service),
        ] {
            let p = org.principal(name).expect(name);
            assert!(p.pool && p.actor.actor_type == kind, "{name}");
            assert_eq!(
                p.actor.id.0,
                format!("urn:missionweaveprotocol:{kind}:{name}")
            );
        }
        // Pool Agents are not development Agents: no card, no Session at start-up.
        assert!(org.agents().all(|a| !a.pool));
        let named_agents = PRINCIPALS
            .iter()
            .filter(|(_, t)| *t == ActorType::Agent)
            .count();
        assert_eq!(org.agents().count(), named_agents + LOAD_AGENTS);
        assert!(
            org.registry
                .binding("urn:missionweaveprotocol:key:scn-a001")
                .is_some()
        );
        // The file keeps the marks; a second load reads the same pool.
        let again = load(&dir).expect("loaded");
        assert_eq!(again.pool().count(), org.pool().count());
        // Without --dev-clock a new Organization has no pool.
        let plain = temp_dir("no-pool");
        assert_eq!(load_or_create(&plain).expect("created").pool().count(), 0);
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&plain);
    }

    #[test]
    fn a_new_organization_has_layout_2_and_every_principal() {
        let dir = temp_dir("layout");
        let org = load_or_create(&dir).expect("created");
        assert_eq!(org.layout, LAYOUT);
        assert_eq!(org.principals.len(), PRINCIPALS.len() + LOAD_AGENTS);
        for name in ["worker", "outsider", "load-01", "load-32", "mission-owner"] {
            assert!(org.principal(name).is_some(), "{name}");
        }
        // Within the Registry-fixture limit that GET /api/registry serves.
        assert!(org.evidence.bindings.len() <= 64);
        // `load` reads it and never creates one.
        assert_eq!(
            load(&dir).expect("loaded").principals.len(),
            org.principals.len()
        );
        let empty = temp_dir("layout-empty");
        let err = load(&empty).expect_err("no organization.json");
        assert!(err.contains("holds no development Organization"), "{err}");
        assert!(!empty.join("organization.json").exists());
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&empty);
    }

    #[test]
    fn a_layout_1_file_still_loads() {
        // An older weave-console's file: no layout, no createdAt, the first ten Principals.
        let dir = temp_dir("layout1");
        let mut list = Vec::new();
        for (name, t) in &PRINCIPALS[..10] {
            let seed = random_seed().expect("seed");
            let mut p = Object::new();
            p.insert("name", Value::string(*name));
            p.insert(
                "actor",
                Actor::new(*t, &format!("urn:missionweaveprotocol:{t}:{name}")).to_json(),
            );
            p.insert(
                "keyId",
                Value::string(format!("urn:missionweaveprotocol:key:{name}")),
            );
            p.insert("seed", Value::string(seed.to_b64url().to_string()));
            list.push(Value::Object(p));
        }
        let mut o = Object::new();
        o.insert(
            "organizationId",
            Value::string("urn:missionweaveprotocol:organization:dev"),
        );
        o.insert("principals", Value::Array(list));
        write_key_file(
            &dir.join("organization.json"),
            json::to_string(&Value::Object(o)).as_bytes(),
        )
        .expect("written");
        let org = load_or_create(&dir).expect("a layout-1 file loads");
        assert_eq!(org.layout, 1);
        assert_eq!(org.principals.len(), 10);
        assert!(org.principal("worker").is_none());
        assert_eq!(
            org.created_at,
            Micros::parse(KEYS_VALID_FROM).expect("time")
        );
        // It registered placeholder cards, so it serves none rather than unregistered ones.
        assert!(crate::cards::documents(&org).expect("cards").is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_key_file_is_replaced_atomically_and_stays_0600() {
        let dir = temp_dir("replace");
        let file = dir.join("p.json");
        replace_key_file(&file, b"one").expect("first");
        replace_key_file(&file, b"two").expect("second");
        assert_eq!(std::fs::read(&file).expect("read"), b"two");
        #[cfg(unix)]
        assert_eq!(mode(&file), 0o600);
        let left: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_debug_of_the_organization_shows_a_seed() {
        let dir = temp_dir("debug");
        let org = load_or_create(&dir).expect("created");
        let shown = format!("{org:?}");
        for p in &org.principals {
            let b64 = p.seed.to_b64url();
            assert!(!shown.contains(&b64[..12]));
            assert!(!shown.contains(&format!("{:?}", &p.seed.expose()[..6])));
        }
        assert!(shown.contains("<redacted>"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
