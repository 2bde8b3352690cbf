//! The development Organization: on first run, keys and principals are generated and kept under
//! the data directory (`organization.json`), so that restarts keep the same identities. It is
//! for development and demos only: the file holds private seeds. A deployment supplies its own
//! Registry evidence and keeps private keys where they belong (humans' in their browsers; see
//! docs/authority.md).

use std::io::{Read, Write};
use std::path::Path;
use wasm_core::authority::{AuthorityConfig, CooperationLimits};
use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::common::{Actor, ActorType};

/// The demo's Principals: (name, type).
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
    // The §22 demo's further cast (`wasm_core::agents::plan::CAST`): the control plane that
    // replaces a failed Coordinator, a second Mission's Coordinator and its standby, the child
    // security Mission's Coordinator and Worker, and a second developer whose lease lapses.
    ("control-plane", ActorType::Service),
    ("coordinator-b", ActorType::Agent),
    ("coordinator-standby", ActorType::Agent),
    ("security-lead", ActorType::Agent),
    ("security-auditor", ActorType::Agent),
    ("developer-b", ActorType::Agent),
];

/// A development Principal and its private key (not `Clone`; `{:?}` shows no key byte).
#[derive(Debug)]
pub struct DevPrincipal {
    pub name: String,
    pub actor: Actor,
    pub key_id: String,
    pub seed: SecretSeed,
}

#[derive(Debug)]
pub struct DevOrganization {
    pub organization_id: String,
    pub principals: Vec<DevPrincipal>,
    pub registry: ValidatedRegistry,
}

impl DevOrganization {
    pub fn principal(&self, name: &str) -> Option<&DevPrincipal> {
        self.principals.iter().find(|p| p.name == name)
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

fn random_seed() -> Result<SecretSeed, String> {
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(|e| format!("cannot read /dev/urandom for a new key: {e}"))?;
    Ok(SecretSeed::take(&mut seed))
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

/// Reads a file that holds private keys, warning on stderr when other accounts may read it
/// (any group or other permission bit set).
pub fn read_key_file(path: &Path) -> Result<Vec<u8>, String> {
    if let Some(warning) = key_file_warning(path) {
        tracing::warn!("{warning}");
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The warning for a key file that others can read, if it is one.
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
pub fn load_or_create(data_dir: &Path) -> Result<DevOrganization, String> {
    let path = data_dir.join("organization.json");
    if !path.exists() {
        std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
        let mut list = Vec::new();
        for (name, t) in PRINCIPALS {
            let seed = random_seed()?;
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
            p.insert(
                "publicKey",
                Value::string(b64url_encode(&seed.public_key())),
            );
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
        o.insert("principals", Value::Array(list));
        let text = zeroize::Zeroizing::new(json::to_string(&Value::Object(o)));
        write_key_file(&path, text.as_bytes())?;
    }
    let bytes = zeroize::Zeroizing::new(read_key_file(&path)?);
    let v = json::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
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
                valid_from: "2020-01-01T00:00:00Z".into(),
                validity_history: vec![],
            });
            principals.push(DevPrincipal {
                name: s("/name")?,
                actor,
                key_id,
                seed,
            });
        }
    }
    // The Registry is validated by the same Organization-wide checks as any evidence (§6.4).
    let registry = RegistryEvidence {
        organization_id: organization_id.clone(),
        bindings,
    }
    .validate()
    .map_err(|e| format!("organization.json: the Registry is invalid: {e}"))?;
    Ok(DevOrganization {
        organization_id,
        principals,
        registry,
    })
}

/// What the authority needs from an Organization, wherever it comes from.
pub struct OrgSetup {
    pub config: AuthorityConfig,
    pub registry: ValidatedRegistry,
    pub admission_service: Actor,
    /// Present for the development Organization (its Agents are bootstrapped on first run).
    pub dev: Option<DevOrganization>,
}

impl DevOrganization {
    pub fn setup(self) -> Result<OrgSetup, String> {
        Ok(OrgSetup {
            config: self.authority_config()?,
            registry: self.registry.clone(),
            admission_service: self.admission_service()?,
            dev: Some(self),
        })
    }
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
    let read_key = |p: &Path| -> Result<Value, String> {
        let bytes = zeroize::Zeroizing::new(read_key_file(p)?);
        json::parse(&bytes).map_err(|e| format!("{}: {e}", p.display()))
    };
    let evidence = RegistryEvidence::from_fixture_json(&read(registry_file)?)
        .map_err(|e| format!("{}: {e}", registry_file.display()))?;
    let registry = evidence
        .validate()
        .map_err(|e| format!("{}: the Registry is invalid: {e}", registry_file.display()))?;
    let key = read_key(key_file)?;
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
    Ok(OrgSetup {
        config: AuthorityConfig {
            accepted_by: binding.principal.clone(),
            key_id,
            seed,
            limits: CooperationLimits::default(),
        },
        admission_service: binding.principal.clone(),
        registry,
        dev: None,
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
    fn the_development_organization_is_written_0600_and_a_readable_key_file_is_warned_about() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("modes");
        let org = load_or_create(&dir).expect("created");
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
        }
        // A key file is never overwritten in place.
        assert!(write_key_file(&file, b"{}").is_err());
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
