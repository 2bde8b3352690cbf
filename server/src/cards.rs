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
pub use simulation::cards::{CARD_VERSION, DEV_SCHEMA, capabilities_of, internal_card};
use simulation::cards::{CardSpec, capabilities_json, signed_document};
use wasm_core::crypto::ed25519;
use wasm_core::encoding::sha256_hash;
use wasm_core::json::{self, Object, Value};

/// The Principal that signs the development Agent Cards (§6.4: an Organization service).
pub const CARD_ISSUER: &str = "organization-registry";

/// Where a development Agent would be reached: `.invalid` (RFC 2606) says it is not; the
/// schema requires a `wss://` endpoint, and development Agents dial the server instead.
const ENDPOINT_BASE: &str = "wss://agents.dev.invalid/";

/// The signed Agent Card document of development Agent `agent` (built and signed by
/// `simulation::cards`, which the static demo's node shares).
pub fn document(org: &DevOrganization, agent: &DevPrincipal) -> Result<Value, String> {
    let issuer = org.require(CARD_ISSUER)?;
    let owner = org.require("mission-owner")?;
    let spec = CardSpec {
        organization_id: &org.organization_id,
        agent: &agent.actor,
        display_name: &agent.name,
        description: format!("Development Agent {} (never for production)", agent.name),
        owner: &owner.actor,
        key_id: &agent.key_id,
        public_key: agent.seed.public_key(),
        key_valid_from: devorg::KEYS_VALID_FROM,
        endpoint_uri: format!("{ENDPOINT_BASE}{}", agent.name),
        capabilities: capabilities_of(&agent.name),
        evidence_label: "dev",
        issued_at: org.created_at,
    };
    signed_document(
        &spec,
        &issuer.key_id,
        &ed25519::Signer::from_seed(&issuer.seed),
    )
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
    use wasm_core::crypto::{DocumentKind, sign_document, verify};
    use wasm_core::encoding::b64url_encode;

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
