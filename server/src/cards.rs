//! Agent Cards of the development Organization (§6.1). Each card is a real Signed Document
//! (`agent-card.schema.json`, protected time `issuedAt`) signed by the `organization-registry`
//! service: §6.4's signer rule for cards asks for an Organization service Principal. The card
//! the authority registers (`…registry.agent_card_register`, payloads.md §6.33) is the
//! reference's internal shape; it is derived here from the signed document, never written by
//! hand, so the two cannot disagree, and its `signature` is the document's signature value.
//!
//! Everything is deterministic (fixed version, `issuedAt` = the Organization's `createdAt`,
//! Ed25519 signatures are deterministic): the server's first-run bootstrap and
//! `weave-console dev principals` build byte-identical registration Commands, so a second
//! registration is an exact retry (§15.1) and answers with the original Events.

use crate::devorg::{self, DevOrganization, DevPrincipal, Envelope};
use wasm_core::crypto::{DocumentKind, sign_document};
use wasm_core::encoding::{b64url_encode, sha256_hash};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::ToJson;

/// The Principal that signs the development Agent Cards (§6.4: an Organization service).
pub const CARD_ISSUER: &str = "organization-registry";

/// Every development Agent Card has this `cardVersion`.
pub const CARD_VERSION: u64 = 1;

/// The input and output schema every development capability declares: any JSON object.
pub const DEV_SCHEMA: &str = "urn:missionweaveprotocol:schema:dev:any-object";

/// The text of [`DEV_SCHEMA`], whose SHA-256 the cards pin (`inputSchemaHash`).
const DEV_SCHEMA_TEXT: &[u8] = br#"{"type":"object"}"#;

/// Where a development Agent would be reached: `.invalid` (RFC 2606) says it is not; the
/// schema requires a `wss://` endpoint, and development Agents dial the server instead.
const ENDPOINT_BASE: &str = "wss://agents.dev.invalid/";

/// The capabilities `(id, semver)` of a development Agent, by name. `worker` and the load
/// Agents have `software.python`, the capability the demo's WorkItems require.
pub fn capabilities_of(name: &str) -> &'static [(&'static str, &'static str)] {
    match name {
        "coordinator" => &[("mission.coordination", "1.0.0")],
        "worker" => &[("software.python", "1.0.0"), ("software.testing", "1.0.0")],
        "analyst" => &[("requirements.analysis", "1.0.0")],
        "developer" => &[("software.python", "1.0.0"), ("software.rust", "1.0.0")],
        "tester" => &[("software.testing", "1.0.0")],
        "reviewer" => &[("code.review", "1.0.0")],
        n if n.starts_with("load-") => &[("software.python", "1.0.0")],
        _ => &[("general.assistance", "1.0.0")],
    }
}

/// The signed Agent Card document of development Agent `agent`.
pub fn document(org: &DevOrganization, agent: &DevPrincipal) -> Result<Value, String> {
    let issuer = org.require(CARD_ISSUER)?;
    let owner = org.require("mission-owner")?;
    let mut key = Object::new();
    key.insert("keyId", Value::string(agent.key_id.clone()));
    key.insert("algorithm", Value::string("Ed25519"));
    key.insert(
        "publicKey",
        Value::string(b64url_encode(&agent.seed.public_key())),
    );
    key.insert("validFrom", Value::string(devorg::KEYS_VALID_FROM));
    let capabilities = capabilities_json(capabilities_of(&agent.name), "dev");
    let mut endpoint = Object::new();
    endpoint.insert("transport", Value::string("wss"));
    endpoint.insert(
        "uri",
        Value::string(format!("{ENDPOINT_BASE}{}", agent.name)),
    );
    let mut card = Object::new();
    card.insert("agentId", Value::string(agent.actor.id.0.clone()));
    card.insert("organizationId", Value::string(org.organization_id.clone()));
    card.insert("cardVersion", Value::from(CARD_VERSION));
    card.insert("displayName", Value::string(agent.name.clone()));
    card.insert(
        "description",
        Value::string(format!(
            "Development Agent {} (never for production)",
            agent.name
        )),
    );
    card.insert("owner", owner.actor.to_json());
    card.insert("status", Value::string("active"));
    card.insert("protocolVersions", Value::Array(vec![Value::string("0.1")]));
    card.insert("endpoints", Value::Array(vec![Value::Object(endpoint)]));
    card.insert("publicKeys", Value::Array(vec![Value::Object(key)]));
    card.insert("capabilities", Value::Array(capabilities));
    card.insert("maxConcurrency", Value::from(4u64));
    card.insert(
        "issuedAt",
        Value::string(org.created_at.format_whole_seconds()),
    );
    let mut doc = Value::Object(card);
    sign_document(
        &mut doc,
        DocumentKind::AgentCard,
        &issuer.key_id,
        &issuer.seed,
    )
    .map_err(|e| format!("the Agent Card of {} cannot be signed: {e}", agent.name))?;
    Ok(doc)
}

/// A card to fill in for `org agent add --card` (`org agent template` prints it): the members
/// an operator states (what the Agent is, can do and where it is reached); the Organization,
/// the key, `issuedAt`, `cardVersion` and the signature are added when it is signed.
pub fn template_json(agent_id: &str) -> String {
    let name = agent_id.rsplit(':').next().unwrap_or("agent");
    json::to_string(&template(
        agent_id,
        &[("software.python", "1.0.0")],
        "urn:missionweaveprotocol:human:the-accountable-human",
        &format!("The Agent {name} (describe what it does)"),
        "example",
    ))
}

/// The card of one of the demo's simulated Agents in an Organization of one's own (`org demo`):
/// the capabilities the demo's WorkItems need, `owner` the accountable human.
pub fn demo_template(agent_id: &str, name: &str, owner_id: &str) -> Value {
    template(
        agent_id,
        capabilities_of(name),
        owner_id,
        &format!("Simulated demo Agent {name}, run by this server (`org demo`)"),
        "demo",
    )
}

/// Capabilities `(id, semver)` with the development schema and evidence
/// `urn:missionweaveprotocol:evidence:<label>:<id>`.
fn capabilities_json(capabilities: &[(&str, &str)], label: &str) -> Vec<Value> {
    let schema_hash = sha256_hash(DEV_SCHEMA_TEXT);
    capabilities
        .iter()
        .map(|(id, version)| {
            let mut c = Object::new();
            c.insert("id", Value::string(id.to_string()));
            c.insert("version", Value::string(version.to_string()));
            c.insert("inputSchema", Value::string(DEV_SCHEMA));
            c.insert("inputSchemaHash", Value::string(schema_hash.clone()));
            c.insert("outputSchema", Value::string(DEV_SCHEMA));
            c.insert("outputSchemaHash", Value::string(schema_hash.clone()));
            c.insert("constraints", Value::Object(Object::new()));
            c.insert(
                "verifiedEvidence",
                Value::Array(vec![Value::string(format!(
                    "urn:missionweaveprotocol:evidence:{label}:{id}"
                ))]),
            );
            Value::Object(c)
        })
        .collect()
}

/// An unsigned card: `capabilities` with the development schema, a `wss://agents.<label>.invalid/`
/// endpoint (RFC 2606: reached through the server instead), `owner` a human.
fn template(
    agent_id: &str,
    capabilities: &[(&str, &str)],
    owner_id: &str,
    description: &str,
    label: &str,
) -> Value {
    let name = agent_id.rsplit(':').next().unwrap_or("agent");
    let capabilities = capabilities_json(capabilities, label);
    let mut endpoint = Object::new();
    endpoint.insert("transport", Value::string("wss"));
    endpoint.insert(
        "uri",
        Value::string(format!("wss://agents.{label}.invalid/{name}")),
    );
    let mut owner = Object::new();
    owner.insert("type", Value::string("human"));
    owner.insert("id", Value::string(owner_id.to_owned()));
    let mut card = Object::new();
    card.insert("agentId", Value::string(agent_id.to_owned()));
    card.insert("displayName", Value::string(name.to_owned()));
    card.insert("description", Value::string(description.to_owned()));
    card.insert("owner", Value::Object(owner));
    card.insert("endpoints", Value::Array(vec![Value::Object(endpoint)]));
    card.insert("capabilities", Value::Array(capabilities));
    card.insert("maxConcurrency", Value::from(4u64));
    Value::Object(card)
}

/// The signed cards of every development Agent (layout 2; a layout-1 Organization registered
/// placeholder cards, so it serves none rather than documents it never registered).
pub fn documents(org: &DevOrganization) -> Result<Vec<Value>, String> {
    if org.layout < devorg::LAYOUT {
        return Ok(Vec::new());
    }
    org.agents().map(|a| document(org, a)).collect()
}

/// What the authority needs to serve the development Organization, its Agents' cards among
/// the public Registry (`GET /api/registry/agent-cards`).
pub fn setup(org: DevOrganization) -> Result<devorg::OrgSetup, String> {
    let public = crate::registry_api::PublicRegistry::new(&org.evidence, &documents(&org)?);
    Ok(devorg::OrgSetup {
        config: org.authority_config()?,
        registry: org.registry.clone(),
        admission_service: org.admission_service()?,
        public,
        dev: Some(org),
        service_keys: None,
    })
}

fn text<'v>(doc: &'v Value, pointer: &str) -> Result<&'v str, String> {
    doc.pointer(pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the Agent Card lacks {pointer}"))
}

/// The internal card of payloads.md §6.33, derived from a signed Agent Card document: the
/// capability `version` is the semver's major number (the internal shape counts integers
/// from 1), `owner` is the Organization ID (a plain string there), `publicKey` the card's
/// first key, and `signature` the document's signature value.
pub fn internal_card(doc: &Value) -> Result<Object, String> {
    let capabilities = match doc.pointer("/capabilities") {
        Some(Value::Array(list)) => list
            .iter()
            .map(|c| {
                let version = text(c, "/version")?;
                let major = version
                    .split('.')
                    .next()
                    .and_then(|m| m.parse::<u64>().ok())
                    .filter(|m| *m >= 1)
                    .ok_or_else(|| format!("capability version {version:?} has no major ≥ 1"))?;
                let mut o = Object::new();
                o.insert("id", Value::string(text(c, "/id")?.to_owned()));
                o.insert("version", Value::from(major));
                o.insert(
                    "inputSchema",
                    Value::string(text(c, "/inputSchema")?.to_owned()),
                );
                o.insert(
                    "outputSchema",
                    Value::string(text(c, "/outputSchema")?.to_owned()),
                );
                o.insert(
                    "constraints",
                    c.pointer("/constraints")
                        .cloned()
                        .unwrap_or(Value::Object(Object::new())),
                );
                o.insert(
                    "verifiedEvidence",
                    c.pointer("/verifiedEvidence")
                        .cloned()
                        .unwrap_or(Value::Array(vec![])),
                );
                Ok(Value::Object(o))
            })
            .collect::<Result<Vec<_>, String>>()?,
        _ => return Err("the Agent Card has no capabilities".into()),
    };
    let version = doc
        .pointer("/cardVersion")
        .and_then(devorg::json_u64)
        .ok_or("the Agent Card has no cardVersion")?;
    let mut card = Object::new();
    card.insert("agentId", Value::string(text(doc, "/agentId")?.to_owned()));
    card.insert("version", Value::from(version));
    card.insert(
        "displayName",
        Value::string(text(doc, "/displayName")?.to_owned()),
    );
    card.insert(
        "owner",
        Value::string(text(doc, "/organizationId")?.to_owned()),
    );
    card.insert(
        "publicKey",
        Value::string(text(doc, "/publicKeys/0/publicKey")?.to_owned()),
    );
    card.insert("capabilities", Value::Array(capabilities));
    card.insert(
        "issuedAt",
        Value::string(text(doc, "/issuedAt")?.to_owned()),
    );
    card.insert(
        "signature",
        Value::string(text(doc, "/signature/value")?.to_owned()),
    );
    Ok(card)
}

/// The signed `…registry.agent_card_register` Command of development Agent `agent`, in the
/// reference's bootstrap form (payloads.md §6.33): actor `organization-registry`, action ID
/// `registry-bootstrap:sha256:<hex of the card's JCS>`, `issuedAt` = the card's `issuedAt`.
pub fn register_command(org: &DevOrganization, agent: &DevPrincipal) -> Result<Vec<u8>, String> {
    let issuer = org.require(CARD_ISSUER)?;
    let doc = document(org, agent)?;
    register_signed(issuer, &doc, org.created_at)
}

/// The registration Command of a signed card `doc`, by `issuer` at `issued_at` (the action ID
/// is the card's content hash, so sending it again is an exact retry, §15.1).
pub fn register_signed(
    issuer: &DevPrincipal,
    doc: &Value,
    issued_at: wasm_core::authority::Micros,
) -> Result<Vec<u8>, String> {
    let card = Value::Object(internal_card(doc)?);
    let jcs = json::canonicalize(&card).map_err(|e| e.to_string())?;
    let action = format!("registry-bootstrap:{}", sha256_hash(&jcs));
    let mut payload = Object::new();
    payload.insert("card", card);
    devorg::signed_command(
        issuer,
        "ext.missionweaveprotocol.registry.agent_card_register",
        &action,
        &Envelope::default(),
        payload,
        issued_at,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_core::crypto::verify;

    fn org(name: &str) -> (DevOrganization, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("weave-cards-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (devorg::load_or_create(&dir).expect("organization"), dir)
    }

    #[test]
    fn every_development_agent_card_verifies_as_a_signed_agent_card() {
        let (org, dir) = org("verify");
        let docs = documents(&org).expect("cards");
        assert_eq!(docs.len(), org.agents().count());
        for doc in &docs {
            let bytes = json::to_string(doc).into_bytes();
            // Schema (agent-card.schema.json), envelope, key resolution, JCS and Ed25519.
            let verified = verify(&bytes, DocumentKind::AgentCard, &org.registry)
                .unwrap_or_else(|e| panic!("{doc:?}: {e}"));
            assert_eq!(verified.principal, org.require(CARD_ISSUER).unwrap().actor);
        }
        // The worker can take the demo's WorkItems.
        let worker = org.require("worker").unwrap();
        let card = document(&org, worker).unwrap();
        let caps = card.pointer("/capabilities").unwrap();
        assert!(
            json::to_string(caps).contains("\"software.python\""),
            "{caps:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_changed_or_agent_signed_card_does_not_verify() {
        let (org, dir) = org("tamper");
        let worker = org.require("worker").unwrap();
        let mut doc = document(&org, worker).unwrap();
        // One changed member breaks the signature.
        if let Value::Object(o) = &mut doc {
            o.insert("maxConcurrency", Value::from(5u64));
        }
        let bytes = json::to_string(&doc).into_bytes();
        assert!(verify(&bytes, DocumentKind::AgentCard, &org.registry).is_err());
        // Signed by the Agent itself: not an Organization service (§6.4's signer rule).
        let mut doc = document(&org, worker).unwrap();
        sign_document(
            &mut doc,
            DocumentKind::AgentCard,
            &worker.key_id,
            &worker.seed,
        )
        .unwrap();
        let bytes = json::to_string(&doc).into_bytes();
        assert!(verify(&bytes, DocumentKind::AgentCard, &org.registry).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_internal_card_follows_the_document_and_registration_is_deterministic() {
        let (org, dir) = org("internal");
        let worker = org.require("worker").unwrap();
        let doc = document(&org, worker).unwrap();
        let card = Value::Object(internal_card(&doc).unwrap());
        assert_eq!(
            card.pointer("/signature").and_then(Value::as_str),
            doc.pointer("/signature/value").and_then(Value::as_str)
        );
        assert_eq!(card.pointer("/version").and_then(devorg::json_u64), Some(1));
        assert_eq!(
            card.pointer("/capabilities/0/id").and_then(Value::as_str),
            Some("software.python")
        );
        assert_eq!(
            card.pointer("/capabilities/0/version")
                .and_then(devorg::json_u64),
            Some(1)
        );
        assert_eq!(
            card.pointer("/publicKey").and_then(Value::as_str),
            Some(b64url_encode(&worker.seed.public_key()).as_str())
        );
        // Byte-identical Commands: a second registration is an exact retry.
        assert_eq!(
            register_command(&org, worker).unwrap(),
            register_command(&org, worker).unwrap()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
