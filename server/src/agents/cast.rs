//! The demo's simulated Agents in an Organization of one's own (`weave-console org demo`).
//!
//! The development Organization holds the whole cast of `plan::CAST` with its keys. An
//! Organization made by `org init` holds only what its operator adds, so no execution gate ever
//! opens there until Agents work in it. `org demo --owner NAME` adds the cast's Agents and its
//! control plane to the Organization, as Agents *this server operates*: their keys are made
//! here and kept in [`FILE`] (`0600`, beside `organization-key.json`), their cards signed by the
//! Organization's service key and registered like any `org agent add`. The cast's human is not
//! added: `mission.create` is human-only (§7.1), so the demo proposes its two Missions and a
//! human of the Organization creates them in the console (`GET /api/demo/proposals`), then
//! decides every gate there, with their own key.

use super::{DemoKeys, Member};
use crate::org::{self, OrgDir};
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use simulation::agents::director::{MissionProposal, Opening};
use simulation::agents::{plan, principal_id};
use std::collections::BTreeMap;
use std::path::Path;
use wasm_core::authority::Micros;
use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::registry::BindingRecord;
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;

/// The demo Agents' keys, in the Organization directory.
pub const FILE: &str = "demo-agents.json";
/// `format` of [`FILE`].
const FORMAT: &str = "missionweave-demo-agents";

/// The key ID the demo's identities sign with (`agents::Identity`).
fn key_id(name: &str) -> String {
    format!("urn:missionweaveprotocol:key:{name}")
}

/// The cast this server runs in an Organization: every principal but the human.
fn cast() -> impl Iterator<Item = (&'static str, ActorType)> {
    plan::CAST
        .iter()
        .filter(|(_, t)| *t != ActorType::Human)
        .map(|(n, t)| (*n, *t))
}

/// Adds the demo's Agents and control plane to the Organization of `dir`, with `owner` (a human
/// name of the Organization, invited or not yet) as their accountable owner. Refused when they
/// are there already, or when any of their IDs is taken.
pub fn add(dir: &OrgDir, owner: &str, now: Micros) -> Result<String, String> {
    if !org::human_name_ok(owner) {
        return Err(format!("{owner:?} is not a human name (a-z, 0-9, -)"));
    }
    let path = dir.dir.join(FILE);
    if path.exists() {
        return Err(format!(
            "{} exists: the demo's Agents are in this Organization already",
            path.display()
        ));
    }
    let owner_id = principal_id(ActorType::Human, owner);
    let mut seeds: Vec<(&str, ActorType, SecretSeed)> = cast()
        .map(|(n, t)| {
            let mut raw = crate::gateway::random::<32>();
            (n, t, SecretSeed::take(&mut raw))
        })
        .collect();
    let service = dir.service_seed(&dir.read()?)?;
    // The keys first (create_new: never over another file), then the Registry and cards; a
    // failed update leaves a key file whose keys nothing binds, which the next `org demo`
    // refuses to overwrite and names.
    let mut entries = Vec::new();
    for (n, t, seed) in &seeds {
        let mut o = Object::new();
        o.insert("name", Value::string(*n));
        o.insert("type", Value::string(t.to_string()));
        o.insert("principalId", Value::string(principal_id(*t, n)));
        o.insert("keyId", Value::string(key_id(n)));
        o.insert("seed", Value::string(seed.to_b64url().to_string()));
        entries.push(Value::Object(o));
    }
    let mut file = Object::new();
    file.insert("format", Value::string(FORMAT));
    file.insert("version", Value::from(1u64));
    file.insert("owner", Value::string(owner_id.clone()));
    file.insert("principals", Value::Array(entries));
    let text = zeroize::Zeroizing::new(json::to_string(&Value::Object(file)));
    crate::devorg::write_key_file(&path, text.as_bytes())?;
    let added = dir.update(|f| {
        let mut added = Vec::new();
        for (n, t, seed) in &seeds {
            let id = principal_id(*t, n);
            let key = key_id(n);
            if f.registry
                .bindings
                .iter()
                .any(|b| b.key_id == key || b.principal_id == id)
            {
                return Err(format!(
                    "{id} or {key} is in the Registry already: the demo needs its own names"
                ));
            }
            let public = b64url_encode(&seed.public_key());
            if *t == ActorType::Agent {
                let template = crate::cards::demo_template(&id, n, &owner_id);
                let (card, _) =
                    org::sign_card_as(f, &template, &public, Some(&key), &service, now)?;
                f.agent_cards.push(card);
                f.registry
                    .bindings
                    .push(org::agent_binding(&id, &key, &public, now));
            } else {
                f.registry.bindings.push(BindingRecord {
                    key_id: key.clone(),
                    principal_type: t.to_string(),
                    principal_id: id.clone(),
                    algorithm: "Ed25519".into(),
                    public_key: public,
                    valid_from: now.format_whole_seconds(),
                    validity_history: vec![],
                });
            }
            added.push(id);
        }
        Ok(added)
    });
    seeds.clear();
    let added = added?;
    Ok(format!(
        "Added the demo's {} simulated principals to the Organization (keys in {}, mode 0600; \
         cards signed by the Organization):\n  {}\n`weave-console serve --data {}` runs them. \
         The demo proposes two Missions; {owner} (or any human of the Organization) creates \
         them on the console's board, then decides their execution gates and final approvals \
         under Approvals.",
        added.len(),
        path.display(),
        added.join("\n  "),
        dir.dir.display()
    ))
}

/// The demo's keys in the Organization of `dir`, when `org demo` added its Agents (`None`
/// otherwise). A key file others may read is refused.
pub fn keys(
    dir: &Path,
    registry: wasm_core::crypto::ValidatedRegistry,
) -> Result<Option<DemoKeys>, String> {
    let path = dir.join(FILE);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = zeroize::Zeroizing::new(crate::devorg::read_key_file(&path)?);
    let v = json::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    if v.pointer("/format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(format!("{}: not a {FORMAT} file", path.display()));
    }
    let Some(Value::Array(list)) = v.pointer("/principals") else {
        return Err(format!("{}: no principals", path.display()));
    };
    let mut members = BTreeMap::new();
    for p in list {
        let text = |k: &str| {
            p.pointer(k)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{}: a principal without {k}", path.display()))
        };
        let name = text("/name")?;
        let seed = SecretSeed::from_b64url(text("/seed")?)
            .ok_or_else(|| format!("{}: {name}'s seed is not 32 bytes", path.display()))?;
        members.insert(
            name.to_owned(),
            Member {
                principal_id: text("/principalId")?.to_owned(),
                key_id: text("/keyId")?.to_owned(),
                seed,
            },
        );
    }
    for (n, _) in cast() {
        if !members.contains_key(n) {
            return Err(format!("{}: no key for the demo's {n}", path.display()));
        }
    }
    Ok(Some(DemoKeys {
        members,
        registry,
        opening: Opening::Proposed,
    }))
}

/// The root Missions the running demo proposes and no human has created yet.
pub type Proposals = std::sync::Arc<std::sync::Mutex<Vec<MissionProposal>>>;

#[derive(Clone)]
struct Served {
    proposals: Proposals,
    registry: crate::live_registry::LiveRegistry,
}

/// `GET /api/demo/proposals`: the Missions the demo waits for, to a human of the Organization
/// (a signed read, `wasm_core::crypto::request`: 401 unsigned, 403 for an Agent or a service,
/// who may not create a root Mission, §7.1).
async fn proposals(
    State(served): State<Served>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> Response {
    let signer = match crate::enrol::signed_reader(
        &served.registry.current(),
        uri.path(),
        crate::enrol::signed_headers(&headers),
        "the demo's proposals",
    ) {
        Ok(s) => s,
        Err(e) => return (*e).into_response(),
    };
    if signer.actor_type != ActorType::Human {
        return (*crate::enrol::refuse(
            ErrorCode::AuthForbidden,
            "only a human creates a root Mission (§7.1)",
            StatusCode::FORBIDDEN,
        ))
        .into_response();
    }
    let list: Vec<Value> = served
        .proposals
        .lock()
        .map(|p| p.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|p| {
            Value::Object(Object::from_iter([
                ("missionId", Value::string(p.mission_id)),
                ("groupId", Value::string(p.group_id)),
                ("title", Value::string(p.title)),
                ("payload", p.payload),
            ]))
        })
        .collect();
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        json::to_string(&Value::Object(Object::from_iter([(
            "proposals",
            Value::Array(list),
        )]))),
    )
        .into_response()
}

/// The demo's route, served while it runs.
pub fn routes(proposals: Proposals, registry: crate::live_registry::LiveRegistry) -> Router {
    Router::new()
        .route("/api/demo/proposals", axum::routing::get(self::proposals))
        .with_state(Served {
            proposals,
            registry,
        })
}
