//! An in-memory Organization for tests, scenarios and benchmarks: named Principals with
//! deterministic test keys, a validated Registry, and an [`Authority`]. Commands are built,
//! signed, run through the six verification stages and then submitted, exactly as the gateway
//! will do. Keys are derived from names (test-only; a real deployment supplies its own).

use std::collections::BTreeMap;
use wasm_core::authority::{
    Authority, AuthorityConfig, CooperationLimits, Micros, Rejection, Submitted,
};
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, ValidatedRegistry};
use wasm_core::crypto::verify::SignError;
use wasm_core::crypto::{DocumentKind, SecretSeed, ed25519, sign_document_with, verify};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::common::{Actor, ActorType};
use wasm_core::model::error::ErrorCode;

/// The Group Authority's service Principal (payloads.md §4.2).
pub const GROUP_AUTHORITY: &str = "urn:missionweaveprotocol:service:group-gateway";
/// The Organization registry service that registers Agent Cards.
pub const REGISTRY_SERVICE: &str = "urn:missionweaveprotocol:service:organization-registry";

/// When every harness key becomes valid (the Registry's `validFrom`).
pub const KEYS_VALID_FROM: &str = "2020-01-01T00:00:00Z";

/// A test Principal and its key (neither `Clone` nor printable: it holds a private key).
#[derive(Debug)]
pub struct Principal {
    pub actor: Actor,
    pub key_id: String,
    pub seed: SecretSeed,
    pub signer: ed25519::Signer,
}

/// Derives a test seed from a name (never for production keys).
pub fn test_seed(name: &str) -> SecretSeed {
    use sha2::Digest;
    let mut raw: [u8; 32] =
        sha2::Sha256::digest(format!("missionweave test key {name}").as_bytes()).into();
    SecretSeed::take(&mut raw)
}

/// An Organization with an Authority and a Registry.
pub struct Harness {
    pub organization_id: String,
    pub principals: BTreeMap<String, Principal>,
    pub registry: ValidatedRegistry,
    /// The Registry as published (`GET /api/registry`'s fixture shape): public keys only.
    pub evidence: RegistryEvidence,
    pub authority: Authority,
    counter: u64,
}

/// Optional envelope members of a Command.
#[derive(Clone, Debug, Default)]
pub struct Envelope {
    pub group_id: Option<String>,
    pub session_epoch: Option<u64>,
    pub membership_epoch: Option<u64>,
    pub coordinator_epoch: Option<u64>,
    pub expected_revision: Option<u64>,
    pub work_item_id: Option<String>,
    pub conversation_id: Option<String>,
    pub cooperation_override_grant_id: Option<String>,
    pub action_id: Option<String>,
    pub extensions: Option<Value>,
}

impl Harness {
    /// An Organization whose Principals are `(name, type)`; ids are
    /// `urn:missionweaveprotocol:<type>:<name>`. The Group Authority and the registry service
    /// are always present.
    pub fn new(principals: &[(&str, ActorType)]) -> Harness {
        Harness::with_seeds(principals, &test_seed)
    }

    /// The same Organization with each Principal's seed from `seed_of` (the in-page demo's
    /// keys, drawn from the page's randomness rather than derived from public names).
    pub fn with_seeds(
        principals: &[(&str, ActorType)],
        seed_of: &dyn Fn(&str) -> SecretSeed,
    ) -> Harness {
        let mut all: Vec<(String, ActorType)> = principals
            .iter()
            .map(|(n, t)| ((*n).to_owned(), *t))
            .collect();
        all.push(("group-gateway".into(), ActorType::Service));
        all.push(("organization-registry".into(), ActorType::Service));
        let mut map = BTreeMap::new();
        let mut bindings = Vec::new();
        for (name, t) in all {
            let id = format!("urn:missionweaveprotocol:{t}:{name}");
            let key_id = format!("urn:missionweaveprotocol:key:{name}");
            let seed = seed_of(&name);
            bindings.push(BindingRecord {
                key_id: key_id.clone(),
                principal_type: t.as_str().into(),
                principal_id: id.clone(),
                algorithm: "Ed25519".into(),
                public_key: b64url_encode(&ed25519::public_key_of(&seed)),
                valid_from: KEYS_VALID_FROM.into(),
                validity_history: vec![],
            });
            map.insert(
                name,
                Principal {
                    actor: Actor::new(t, &id),
                    key_id,
                    signer: ed25519::Signer::from_seed(&seed),
                    seed,
                },
            );
        }
        let organization_id = "urn:missionweaveprotocol:organization:test".to_owned();
        let evidence = RegistryEvidence {
            organization_id: organization_id.clone(),
            bindings,
        };
        let registry = evidence
            .validate()
            .unwrap_or_else(|e| panic!("test registry is invalid: {e}"));
        let gw = &map["group-gateway"];
        let authority = Authority::new(AuthorityConfig {
            accepted_by: gw.actor.clone(),
            key_id: gw.key_id.clone(),
            seed: gw.seed.duplicate(),
            limits: CooperationLimits::default(),
        });
        Harness {
            organization_id,
            principals: map,
            registry,
            evidence,
            authority,
            counter: 0,
        }
    }

    pub fn actor(&self, name: &str) -> Actor {
        self.principals[name].actor.clone()
    }

    pub fn id(&self, name: &str) -> String {
        self.principals[name].actor.id.0.clone()
    }

    /// The envelope `who` would send now in `group`: its current Session Epoch (Agents), its
    /// Membership Epoch there, and the Coordinator Epoch when it coordinates that Group's Mission.
    pub fn current_envelope(&self, who: &str, group: Option<&str>) -> Envelope {
        let id = self.id(who);
        let st = &self.authority.state;
        let agent = self.principals[who].actor.actor_type == ActorType::Agent;
        Envelope {
            group_id: group.map(str::to_owned),
            session_epoch: if agent {
                st.session_epochs.get(&id).copied()
            } else {
                None
            },
            membership_epoch: group.and_then(|g| st.membership(g, &id).map(|m| m.epoch)),
            coordinator_epoch: group
                .and_then(|g| st.mission_of_group(g))
                .filter(|m| m.coordinator_id == id)
                .map(|m| m.coordinator_epoch),
            ..Envelope::default()
        }
    }

    /// Builds and signs a Command; returns its wire bytes.
    pub fn command(
        &mut self,
        who: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        issued_at: Micros,
    ) -> Vec<u8> {
        self.counter += 1;
        let p = &self.principals[who];
        let action = env
            .action_id
            .clone()
            .unwrap_or_else(|| format!("urn:missionweaveprotocol:action:{}", self.counter));
        signed_command(
            &p.actor, &p.key_id, &p.signer, &action, kind, env, payload, issued_at,
        )
        .unwrap_or_else(|e| panic!("test Command cannot be signed: {e}"))
    }

    /// Verifies (six stages) and submits signed bytes at `now`.
    pub fn submit_bytes(&mut self, bytes: &[u8], now: Micros) -> Result<Submitted, Rejection> {
        let verified = verify(bytes, DocumentKind::Command, &self.registry).map_err(|e| {
            Rejection::new(e.wire_code(), format!("{} stage: {}", e.stage, e.reason))
        })?;
        self.authority.submit(verified, now)
    }

    /// Builds, signs, verifies and submits a Command issued at `now`.
    pub fn submit(
        &mut self,
        who: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Result<Submitted, Rejection> {
        let bytes = self.command(who, kind, env, payload, now);
        self.submit_bytes(&bytes, now)
    }

    /// Registers an Agent Card for each named Agent and opens a Session for it.
    pub fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), Rejection> {
        for a in agents {
            let agent_id = self.id(a);
            let pk = b64url_encode(&self.principals[*a].signer.public_key());
            let card = agent_card(self, a, 1, &pk, vec![], now);
            let p = wasm_core::authority::handlers::payload(vec![("card", Value::Object(card))]);
            self.submit(
                "organization-registry",
                "ext.missionweaveprotocol.registry.agent_card_register",
                &Envelope::default(),
                p,
                now,
            )?;
            let p =
                wasm_core::authority::handlers::payload(vec![("agentId", Value::string(agent_id))]);
            self.submit(
                "group-gateway",
                "ext.missionweaveprotocol.identity.session_open",
                &Envelope::default(),
                p,
                now,
            )?;
        }
        Ok(())
    }
}

impl Harness {
    /// Registers a signed Agent Card (`crate::cards`, signed by `organization-registry`, the
    /// §6.4 signer of cards) for each named Agent, owned by the human `owner`, and opens a
    /// Session for it. The registered card is derived from the signed document, so the
    /// documents returned (what `GET /api/registry/agent-cards` publishes) and the Registry's
    /// cards agree.
    pub fn bootstrap_signed_agents(
        &mut self,
        agents: &[&str],
        owner: &str,
        now: Micros,
    ) -> Result<Vec<Value>, String> {
        let issuer = self
            .principals
            .get("organization-registry")
            .ok_or("no organization-registry")?;
        let owner = &self
            .principals
            .get(owner)
            .ok_or_else(|| format!("no owner {owner}"))?
            .actor;
        let mut docs = Vec::with_capacity(agents.len());
        for a in agents {
            let p = self
                .principals
                .get(*a)
                .ok_or_else(|| format!("no Agent {a}"))?;
            let spec = crate::cards::CardSpec {
                organization_id: &self.organization_id,
                agent: &p.actor,
                display_name: a,
                description: format!("Simulated demo Agent {a}, run by the in-page authority"),
                owner,
                key_id: &p.key_id,
                public_key: p.signer.public_key(),
                key_valid_from: KEYS_VALID_FROM,
                endpoint_uri: format!("wss://agents.demo.invalid/{a}"),
                capabilities: crate::cards::capabilities_of(a),
                evidence_label: "demo",
                issued_at: now,
            };
            docs.push(crate::cards::signed_document(
                &spec,
                &issuer.key_id,
                &issuer.signer,
            )?);
        }
        for (a, doc) in agents.iter().zip(&docs) {
            let card = crate::cards::internal_card(doc)?;
            let p = wasm_core::authority::handlers::payload(vec![("card", Value::Object(card))]);
            self.submit(
                "organization-registry",
                "ext.missionweaveprotocol.registry.agent_card_register",
                &Envelope::default(),
                p,
                now,
            )
            .map_err(|e| format!("the card of {a} was refused: {e:?}"))?;
            let p = wasm_core::authority::handlers::payload(vec![(
                "agentId",
                Value::string(self.id(a)),
            )]);
            self.submit(
                "group-gateway",
                "ext.missionweaveprotocol.identity.session_open",
                &Envelope::default(),
                p,
                now,
            )
            .map_err(|e| format!("the Session of {a} was refused: {e:?}"))?;
        }
        Ok(docs)
    }
}

/// Builds a Command document from `env` (every member it sets; the Action ID doubles as the
/// correlation ID), signs it as `actor` with `key_id` (§6.4, §15.1) and returns its wire bytes.
/// The harness and the simulated Agents (`crate::agents`) build their Commands here.
#[allow(clippy::too_many_arguments)]
pub fn signed_command(
    actor: &Actor,
    key_id: &str,
    signer: &ed25519::Signer,
    action_id: &str,
    kind: &str,
    env: &Envelope,
    payload: Object,
    issued_at: Micros,
) -> Result<Vec<u8>, SignError> {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("actionId", Value::string(action_id.to_owned()));
    o.insert("actor", actor.to_json());
    let opt = |o: &mut Object, k: &'static str, v: &Option<u64>| {
        if let Some(v) = v {
            o.insert(k, Value::from(*v));
        }
    };
    opt(&mut o, "sessionEpoch", &env.session_epoch);
    opt(&mut o, "membershipEpoch", &env.membership_epoch);
    opt(&mut o, "coordinatorEpoch", &env.coordinator_epoch);
    for (k, v) in [
        ("groupId", &env.group_id),
        ("conversationId", &env.conversation_id),
        ("workItemId", &env.work_item_id),
        (
            "cooperationOverrideGrantId",
            &env.cooperation_override_grant_id,
        ),
    ] {
        if let Some(v) = v {
            o.insert(k, Value::string(v.clone()));
        }
    }
    o.insert("kind", Value::string(kind.to_owned()));
    opt(&mut o, "expectedRevision", &env.expected_revision);
    o.insert("correlationId", Value::string(action_id.to_owned()));
    o.insert("issuedAt", Value::string(issued_at.format_whole_seconds()));
    o.insert("payload", Value::Object(payload));
    if let Some(x) = &env.extensions {
        o.insert("extensions", x.clone());
    }
    let mut doc = Value::Object(o);
    sign_document_with(&mut doc, DocumentKind::Command, key_id, signer)?;
    Ok(json::to_string(&doc).into_bytes())
}

/// Whether `r` carries `code` (for tests).
pub fn is(r: &Result<Submitted, Rejection>, code: ErrorCode) -> bool {
    matches!(r, Err(e) if e.code == code)
}

/// An Agent Card for `agent` (owner `operations`, display name its name, a placeholder
/// signature: the registry service registers it).
pub fn agent_card(
    h: &Harness,
    agent: &str,
    version: u64,
    public_key: &str,
    capabilities: Vec<Value>,
    issued_at: Micros,
) -> Object {
    let s = |v: &str| Value::string(v.to_owned());
    wasm_core::authority::handlers::payload(vec![
        ("agentId", s(&h.id(agent))),
        ("version", Value::from(version)),
        ("displayName", s(agent)),
        ("owner", s("urn:missionweaveprotocol:human:operations")),
        ("publicKey", s(public_key)),
        ("capabilities", Value::Array(capabilities)),
        ("issuedAt", s(&issued_at.format())),
        ("signature", s("test")),
    ])
}
