//! Signed Agent Cards (§6.1), written once for every host that publishes them: the server's
//! development Organization (`server/src/cards.rs`) and the static demo's in-page authority
//! (`demo-node`). A card is a Signed Document (`agent-card.schema.json`, protected time
//! `issuedAt`) signed by an Organization service Principal (§6.4's signer rule for cards); the
//! card the authority registers (`…registry.agent_card_register`, payloads.md §6.33) is derived
//! from the signed document by [`internal_card`], never written by hand, so the two cannot
//! disagree. Pure: no clock, no random source (Ed25519 signatures are deterministic).

use wasm_core::authority::Micros;
use wasm_core::crypto::{DocumentKind, ed25519, sign_document_with};
use wasm_core::encoding::{b64url_encode, sha256_hash};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::common::Actor;

/// Every development and demo Agent Card has this `cardVersion`.
pub const CARD_VERSION: u64 = 1;

/// The input and output schema every development capability declares: any JSON object.
pub const DEV_SCHEMA: &str = "urn:missionweaveprotocol:schema:dev:any-object";

/// The text of [`DEV_SCHEMA`], whose SHA-256 the cards pin (`inputSchemaHash`).
const DEV_SCHEMA_TEXT: &[u8] = br#"{"type":"object"}"#;

/// The capabilities `(id, semver)` of a development or demo Agent, by name. `worker` and the
/// load Agents have `software.python`, the capability the demo's WorkItems require.
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

/// Capabilities `(id, semver)` with the development schema and evidence
/// `urn:missionweaveprotocol:evidence:<label>:<id>`.
pub fn capabilities_json(capabilities: &[(&str, &str)], label: &str) -> Vec<Value> {
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

/// What a card states about one Agent (everything but the signature).
pub struct CardSpec<'a> {
    pub organization_id: &'a str,
    /// The Agent.
    pub agent: &'a Actor,
    pub display_name: &'a str,
    pub description: String,
    /// The accountable owner (an actor object on the card).
    pub owner: &'a Actor,
    /// The Agent's key as the Registry binds it.
    pub key_id: &'a str,
    pub public_key: [u8; 32],
    pub key_valid_from: &'a str,
    /// Where the Agent is reached (`wss://`; an `.invalid` host when it is reached through the
    /// authority instead, RFC 2606).
    pub endpoint_uri: String,
    pub capabilities: &'a [(&'a str, &'a str)],
    /// The evidence label of [`capabilities_json`] (`dev`, `demo`).
    pub evidence_label: &'a str,
    pub issued_at: Micros,
}

/// The card of `spec`, signed by the Organization service `issuer_key_id` / `issuer`.
pub fn signed_document(
    spec: &CardSpec<'_>,
    issuer_key_id: &str,
    issuer: &ed25519::Signer,
) -> Result<Value, String> {
    let mut key = Object::new();
    key.insert("keyId", Value::string(spec.key_id.to_owned()));
    key.insert("algorithm", Value::string("Ed25519"));
    key.insert("publicKey", Value::string(b64url_encode(&spec.public_key)));
    key.insert("validFrom", Value::string(spec.key_valid_from.to_owned()));
    let mut endpoint = Object::new();
    endpoint.insert("transport", Value::string("wss"));
    endpoint.insert("uri", Value::string(spec.endpoint_uri.clone()));
    let mut card = Object::new();
    card.insert("agentId", Value::string(spec.agent.id.0.clone()));
    card.insert(
        "organizationId",
        Value::string(spec.organization_id.to_owned()),
    );
    card.insert("cardVersion", Value::from(CARD_VERSION));
    card.insert("displayName", Value::string(spec.display_name.to_owned()));
    card.insert("description", Value::string(spec.description.clone()));
    card.insert("owner", spec.owner.to_json());
    card.insert("status", Value::string("active"));
    card.insert("protocolVersions", Value::Array(vec![Value::string("0.1")]));
    card.insert("endpoints", Value::Array(vec![Value::Object(endpoint)]));
    card.insert("publicKeys", Value::Array(vec![Value::Object(key)]));
    card.insert(
        "capabilities",
        Value::Array(capabilities_json(spec.capabilities, spec.evidence_label)),
    );
    card.insert("maxConcurrency", Value::from(4u64));
    card.insert(
        "issuedAt",
        Value::string(spec.issued_at.format_whole_seconds()),
    );
    let mut doc = Value::Object(card);
    sign_document_with(&mut doc, DocumentKind::AgentCard, issuer_key_id, issuer).map_err(|e| {
        format!(
            "the Agent Card of {} cannot be signed: {e}",
            spec.display_name
        )
    })?;
    Ok(doc)
}

fn json_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_safe_u64(),
        _ => None,
    }
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
        .and_then(json_u64)
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

/// The body of `GET /api/registry/agent-cards`: `{organizationId, agentCards: [<signed card>]}`.
pub fn agent_cards_json(organization_id: &str, agent_cards: &[Value]) -> String {
    let cards = Object::from_iter([
        ("organizationId", Value::string(organization_id.to_owned())),
        ("agentCards", Value::Array(agent_cards.to_vec())),
    ]);
    json::to_string(&Value::Object(cards))
}
