//! `GET /api/registry` and `GET /api/registry/agent-cards`: the Organization's public Registry
//! evidence, so that a client (an Agent in another language, the console) verifies Events and
//! Commands (§6.4 stage 4) without rebuilding the Registry by hand.
//!
//! - `/api/registry` is exactly the bundle's Registry-fixture shape
//!   (`cryptography/registry-fixture.schema.json`: `{organizationId, bindings: [{keyId,
//!   principal, algorithm, publicKey, validFrom, validityHistory}]}`), which is closed, so it
//!   parses with `RegistryEvidence::from_fixture_json` as it is.
//! - `/api/registry/agent-cards` is `{organizationId, agentCards: [<signed Agent Card>]}`:
//!   the Organization's Agent Cards as Signed Documents (`agent-card.schema.json`), each
//!   verifiable against the Registry above (§6.1, §6.4).
//!
//! Both are built at start-up from public material only: the evidence holds public keys
//! and validity, the cards public keys and capabilities. No private key reaches either. A key
//! enrolled since in the development Organization (`POST /api/enrol`) is published at once
//! ([`PublicRegistry::publish`]), so a browser can verify the Commands it signs with it (the
//! stored Approval of its decisions, issue 13).

use axum::Router;
use axum::http::header;
use axum::routing::get;
use std::sync::{Arc, RwLock};
use wasm_core::crypto::registry::RegistryEvidence;
use wasm_core::json::{self, Value};

/// The two public documents, serialized (the Registry again after each enrolment).
#[derive(Clone, Debug)]
pub struct PublicRegistry {
    registry: Arc<RwLock<Arc<str>>>,
    agent_cards: Arc<RwLock<Arc<str>>>,
}

fn cards_text(organization_id: &str, agent_cards: &[Value]) -> Arc<str> {
    simulation::cards::agent_cards_json(organization_id, agent_cards).into()
}

fn swap(slot: &RwLock<Arc<str>>, text: Arc<str>) {
    match slot.write() {
        Ok(mut w) => *w = text,
        Err(poisoned) => *poisoned.into_inner() = text,
    }
}

fn read(slot: &RwLock<Arc<str>>) -> Arc<str> {
    match slot.read() {
        Ok(r) => Arc::clone(&r),
        Err(poisoned) => Arc::clone(&poisoned.into_inner()),
    }
}

impl PublicRegistry {
    pub fn new(evidence: &RegistryEvidence, agent_cards: &[Value]) -> PublicRegistry {
        PublicRegistry {
            registry: Arc::new(RwLock::new(json::to_string(&fixture_json(evidence)).into())),
            agent_cards: Arc::new(RwLock::new(cards_text(
                &evidence.organization_id,
                agent_cards,
            ))),
        }
    }

    /// Serves `evidence` from now on (already validated as a whole by the caller).
    pub fn publish(&self, evidence: &RegistryEvidence) {
        swap(
            &self.registry,
            json::to_string(&fixture_json(evidence)).into(),
        );
    }

    /// Serves `evidence` and `agent_cards` from now on (an Organization's file changed).
    pub fn publish_with_cards(&self, evidence: &RegistryEvidence, agent_cards: &[Value]) {
        self.publish(evidence);
        swap(
            &self.agent_cards,
            cards_text(&evidence.organization_id, agent_cards),
        );
    }

    /// The Registry-fixture JSON served now.
    pub(crate) fn registry_text(&self) -> Arc<str> {
        read(&self.registry)
    }

    /// The Agent Cards JSON served now (`{organizationId, agentCards}`).
    pub(crate) fn agent_cards_text(&self) -> Arc<str> {
        read(&self.agent_cards)
    }
}

/// Registry evidence in the bundle's Registry-fixture shape (moved to the core, where the
/// audit bundle writes it too).
pub fn fixture_json(evidence: &RegistryEvidence) -> Value {
    evidence.to_fixture_json()
}

/// The two routes, merged into the console's router (`serve::router`).
pub fn routes(public: &PublicRegistry) -> Router {
    let registry = public.clone();
    let cards = public.clone();
    Router::new()
        .route(
            "/api/registry",
            get(move || {
                let body = registry.registry_text().to_string();
                async move { ([(header::CONTENT_TYPE, "application/json")], body) }
            }),
        )
        .route(
            "/api/registry/agent-cards",
            get(move || {
                let body = read(&cards.agent_cards).to_string();
                async move { ([(header::CONTENT_TYPE, "application/json")], body) }
            }),
        )
}

/// The evidence behind a validated Registry whose bindings have no validity history (test
/// Organizations of the harness).
#[cfg(test)]
pub fn evidence_of(registry: &wasm_core::crypto::ValidatedRegistry) -> RegistryEvidence {
    RegistryEvidence {
        organization_id: registry.organization_id().to_owned(),
        bindings: registry
            .bindings()
            .map(|b| wasm_core::crypto::registry::BindingRecord {
                key_id: b.key_id.clone(),
                principal_type: b.principal.actor_type.as_str().into(),
                principal_id: b.principal.id.0.clone(),
                algorithm: "Ed25519".into(),
                public_key: b.public_key_text.clone(),
                valid_from: b.valid_from.as_str().into(),
                validity_history: vec![],
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;
    use wasm_core::crypto::{DocumentKind, verify};

    fn bundle() -> std::path::PathBuf {
        std::env::var("MWP_PROTOCOL_DIR").map_or_else(
            |_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/protocol").into(),
            Into::into,
        )
    }

    async fn get_body(router: Router, path: &str) -> (StatusCode, Vec<u8>) {
        let r = router
            .oneshot(Request::get(path).body(Body::empty()).expect("request"))
            .await
            .expect("answer");
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 22)
            .await
            .expect("body");
        (status, bytes.to_vec())
    }

    #[test]
    fn the_fixture_shape_round_trips_the_bundles_registry() {
        let text = std::fs::read(bundle().join("cryptography/keys/registry-valid.json"))
            .expect("registry-valid.json");
        let v = json::parse(&text).expect("json");
        let evidence = RegistryEvidence::from_fixture_json(&v).expect("fixture");
        let again = RegistryEvidence::from_fixture_json(&fixture_json(&evidence)).expect("again");
        // Validity history included (the fixture has a validUntil record).
        assert_eq!(again, evidence);
        assert!(
            again
                .bindings
                .iter()
                .any(|b| !b.validity_history.is_empty())
        );
    }

    #[tokio::test]
    async fn the_development_registry_is_served_without_a_private_key() {
        let dir = std::env::temp_dir().join(format!("weave-registry-api-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let org = crate::devorg::load_or_create(&dir).expect("organization");
        let cards = crate::cards::documents(&org).expect("cards");
        let public = PublicRegistry::new(&org.evidence, &cards);

        let (status, body) = get_body(routes(&public), "/api/registry").await;
        assert_eq!(status, StatusCode::OK);
        let v = json::parse(&body).expect("json");
        let evidence = RegistryEvidence::from_fixture_json(&v).expect("the fixture shape");
        let registry = evidence.validate().expect("a valid Registry");
        assert_eq!(registry.organization_id(), org.organization_id);
        assert_eq!(evidence.bindings.len(), org.principals.len());
        for p in &org.principals {
            let b = registry.binding(&p.key_id).expect("every key is served");
            assert_eq!(b.public_key.as_bytes(), &p.seed.public_key());
        }

        let (status, cards_body) = get_body(routes(&public), "/api/registry/agent-cards").await;
        assert_eq!(status, StatusCode::OK);
        let v = json::parse(&cards_body).expect("json");
        let Some(Value::Array(served)) = v.pointer("/agentCards") else {
            panic!("no agentCards: {v:?}");
        };
        assert_eq!(served.len(), org.agents().count());
        for card in served {
            // Each verifies against the served Registry alone.
            verify(
                json::to_string(card).as_bytes(),
                DocumentKind::AgentCard,
                &registry,
            )
            .expect("a signed Agent Card");
        }

        // No seed, in any spelling, appears in either document.
        let texts = [
            String::from_utf8(body).expect("utf-8"),
            String::from_utf8(cards_body).expect("utf-8"),
        ];
        for p in &org.principals {
            let seed = p.seed.to_b64url();
            let hex = wasm_core::encoding::hex(p.seed.expose());
            for t in &texts {
                assert!(!t.contains(seed.as_str()), "{}'s seed is served", p.name);
                assert!(!t.contains(&hex), "{}'s seed is served", p.name);
                assert!(!t.contains("\"seed\"") && !t.contains("privateKey"));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
