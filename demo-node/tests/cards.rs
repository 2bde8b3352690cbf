//! The demo's Agent Cards (§6.1), as the console's Agents view reads them from the Worker
//! (`GET /api/registry/agent-cards`): each a Signed Document by the Organization's registry
//! service, verified against the Registry the node publishes (`GET /api/registry`), as the
//! server's cards are. The attacks first: a card with one byte changed, a card re-signed by a
//! Principal that is not an Organization service (§6.4's signer rule), a card moved to another
//! Agent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use demo_node::{Node, NodeConfig, Pace};
use simulation::agents::plan;
use wasm_core::authority::Micros;
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::registry::{RegistryEvidence, ValidatedRegistry};
use wasm_core::crypto::{DocumentKind, sign_document_with, verify};
use wasm_core::json::{self, Value};
use wasm_core::model::common::ActorType;

fn node(entropy: u8) -> Node {
    Node::new(NodeConfig {
        entropy: [entropy; 32],
        start: Micros::parse("2026-07-15T08:00:00Z").unwrap(),
        pace: Pace::default(),
        duplicate_every: 5,
    })
    .unwrap()
}

/// The published Registry, as a console builds it from `GET /api/registry`.
fn registry(node: &Node) -> ValidatedRegistry {
    let v = json::parse(node.registry_json().as_bytes()).unwrap();
    RegistryEvidence::from_fixture_json(&v)
        .unwrap()
        .validate()
        .unwrap()
}

/// The published cards, each as the exact text a console receives.
fn published_cards(node: &Node) -> (Value, Vec<Vec<u8>>) {
    let body = json::parse(node.agent_cards_json().as_bytes()).unwrap();
    let list = match body.pointer("/agentCards") {
        Some(Value::Array(a)) => a.iter().map(|c| json::to_string(c).into_bytes()).collect(),
        other => panic!("no agentCards: {other:?}"),
    };
    (body, list)
}

#[test]
fn a_changed_byte_or_a_card_not_signed_by_the_organization_does_not_verify() {
    let node = node(3);
    let registry = registry(&node);
    let (_, cards) = published_cards(&node);
    assert!(!cards.is_empty());
    for bytes in &cards {
        // One byte of the signed content changed (a capability's major version, the display
        // name, the key…): every position inside the `displayName` value is tried.
        let text = String::from_utf8(bytes.clone()).unwrap();
        let at = text.find("\"displayName\":\"").unwrap() + "\"displayName\":\"".len();
        let mut changed = bytes.clone();
        changed[at] = if changed[at] == b'x' { b'y' } else { b'x' };
        assert!(
            verify(&changed, DocumentKind::AgentCard, &registry).is_err(),
            "a changed card verified: {}",
            String::from_utf8_lossy(&changed)
        );
        let caps = text.find("\"version\":\"1.").unwrap() + "\"version\":\"".len();
        let mut changed = bytes.clone();
        changed[caps] = b'2';
        assert!(verify(&changed, DocumentKind::AgentCard, &registry).is_err());
    }
    // Re-signed by the demo's human (a key the Registry binds, but not an Organization
    // service): refused by §6.4's signer rule, not by the signature.
    let human = node.demo_human();
    let mut doc = json::parse(&cards[0]).unwrap();
    if let Value::Object(o) = &mut doc {
        o.remove("signature");
    }
    sign_document_with(
        &mut doc,
        DocumentKind::AgentCard,
        &human.key_id,
        &Signer::from_seed(&human.seed),
    )
    .unwrap();
    let resigned = json::to_string(&doc).into_bytes();
    assert!(verify(&resigned, DocumentKind::AgentCard, &registry).is_err());
    // Another run's Organization (other entropy, other keys): its cards do not verify here.
    let node_b = self::node(4);
    let (_, foreign) = published_cards(&node_b);
    assert!(verify(&foreign[0], DocumentKind::AgentCard, &registry).is_err());
}

#[test]
fn every_demo_agent_has_a_card_signed_by_the_registry_service_that_verifies() {
    let node = node(3);
    let registry = registry(&node);
    let published = json::parse(node.registry_json().as_bytes()).unwrap();
    let (body, cards) = published_cards(&node);
    assert_eq!(
        body.pointer("/organizationId").and_then(Value::as_str),
        Some(node.organization_id())
    );
    let names = plan::agent_names();
    assert_eq!(cards.len(), names.len());
    for (name, bytes) in names.iter().zip(&cards) {
        let verified = verify(bytes, DocumentKind::AgentCard, &registry)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(verified.principal.actor_type, ActorType::Service);
        assert_eq!(
            verified.principal.id.0,
            "urn:missionweaveprotocol:service:organization-registry"
        );
        let card = json::parse(bytes).unwrap();
        assert_eq!(
            card.pointer("/agentId").and_then(Value::as_str),
            Some(plan::agent_id(name).as_str())
        );
        // The card's key is the one the Registry binds to that Agent.
        let key_id = card
            .pointer("/publicKeys/0/keyId")
            .and_then(Value::as_str)
            .unwrap();
        let bound = match published.pointer("/bindings") {
            Some(Value::Array(b)) => b
                .iter()
                .find(|b| b.pointer("/keyId").and_then(Value::as_str) == Some(key_id))
                .cloned()
                .unwrap(),
            _ => panic!("no bindings"),
        };
        assert_eq!(
            bound.pointer("/principal/id").and_then(Value::as_str),
            Some(plan::agent_id(name).as_str())
        );
        assert_eq!(
            bound.pointer("/publicKey"),
            card.pointer("/publicKeys/0/publicKey")
        );
        // The owner is the demo's human, as the Agents view shows it.
        assert_eq!(
            card.pointer("/owner/id").and_then(Value::as_str),
            Some(node.demo_human().principal_id.as_str())
        );
    }
}
