//! The test kit: the fixtures that the tests of `simulation` and `app` wrote out once per file
//! (issue 27), kept here in one copy. A clock start, JSON builders, pointer reads, an Agent Card,
//! a signed Artifact manifest, and [`World`], a test Organization in the root Group [`G`] that
//! logs every appended Event so a test can check replay.
//!
//! Tests only: a helper panics where the test would fail anyway, with a message that says what
//! was missing.

use crate::harness::{Envelope, Harness};
use wasm_core::authority::handlers::payload;
use wasm_core::authority::projection::WorkItem;
use wasm_core::authority::{Micros, Rejection, Submitted};
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence};
use wasm_core::crypto::{SecretSeed, ed25519};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::views::SeenRejection;

/// The root Group of the tests' Organizations.
pub const G: &str = "urn:x:group:root";
/// The root Mission, in [`G`].
pub const M: &str = "urn:x:mission:root";
/// The root Mission's deadline: two days after [`t0`].
pub const DEADLINE: &str = "2026-07-17T08:00:00Z";
/// A WorkItem's deadline: one day after [`t0`], inside the Mission's.
pub const WORK_DEADLINE: &str = "2026-07-16T08:00:00Z";
/// The registry service's Command kind that registers an Agent Card.
pub const CARD_REGISTER: &str = "ext.missionweaveprotocol.registry.agent_card_register";
/// The gateway's Command kind that opens an Agent's Session.
pub const SESSION_OPEN: &str = "ext.missionweaveprotocol.identity.session_open";

/// The tests' start of time.
pub fn t0() -> Micros {
    Micros::parse("2026-07-15T08:00:00Z").unwrap_or_else(|| panic!("t0 is a valid time"))
}

/// A JSON string.
pub fn s(v: &str) -> Value {
    Value::string(v.to_owned())
}

/// A JSON number.
pub fn n(v: u64) -> Value {
    Value::from(v)
}

/// A JSON array of strings.
pub fn arr(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|i| s(i)).collect())
}

/// A JSON object of `members`, in order.
pub fn obj(members: Vec<(&'static str, Value)>) -> Value {
    Value::Object(payload(members))
}

/// The member at JSON Pointer `p`.
pub fn at<'v>(v: &'v Value, p: &str) -> &'v Value {
    v.pointer(p).unwrap_or_else(|| panic!("no {p} in {v:?}"))
}

/// The string at JSON Pointer `p`.
pub fn st(v: &Value, p: &str) -> String {
    at(v, p)
        .as_str()
        .unwrap_or_else(|| panic!("{p} is not a string"))
        .to_owned()
}

/// The whole number at JSON Pointer `p`.
pub fn num(v: &Value, p: &str) -> u64 {
    match at(v, p) {
        Value::Number(x) => x
            .as_safe_u64()
            .unwrap_or_else(|| panic!("{p} is not a whole number")),
        other => panic!("{p} is {other:?}"),
    }
}

/// The appended Events of an accepted Command.
pub fn events(r: Result<Submitted, Rejection>) -> Vec<Value> {
    match r {
        Ok(Submitted::Appended(es)) => es.into_iter().map(|e| e.value).collect(),
        other => panic!("expected appended Events, got {other:?}"),
    }
}

/// The single appended Event of an accepted Command.
pub fn one(r: Result<Submitted, Rejection>) -> Value {
    let mut es = events(r);
    assert_eq!(es.len(), 1, "expected one appended Event: {es:?}");
    es.remove(0)
}

/// `agent`'s public key as an Agent Card carries it (unpadded base64url).
pub fn public_key(h: &Harness, agent: &str) -> String {
    b64url_encode(&ed25519::public_key_of(&h.principals[agent].seed))
}

pub use crate::harness::agent_card;

/// The Registry evidence of `h`'s Organization as an audit bundle carries it (§18.2): every
/// Principal's key, valid from 2020 with no status records, as the harness's own Registry.
pub fn registry_evidence(h: &Harness) -> RegistryEvidence {
    RegistryEvidence {
        organization_id: h.organization_id.clone(),
        bindings: h
            .principals
            .values()
            .map(|p| BindingRecord {
                key_id: p.key_id.clone(),
                principal_type: p.actor.actor_type.as_str().into(),
                principal_id: p.actor.id.0.clone(),
                algorithm: "Ed25519".into(),
                public_key: b64url_encode(&ed25519::public_key_of(&p.seed)),
                valid_from: "2020-01-01T00:00:00Z".into(),
                validity_history: vec![],
            })
            .collect(),
    }
}

/// The two Commands that enrol `agent` at `now`: the registry service registers its Agent Card
/// (version 1, its real key, `capabilities`), then the gateway opens its Session. As
/// `(sender, kind, payload)`, for the test to submit its own way (its Action IDs, its log).
pub fn enrolment(
    h: &Harness,
    agent: &str,
    capabilities: Vec<Value>,
    now: Micros,
) -> [(&'static str, &'static str, Object); 2] {
    let card = agent_card(h, agent, 1, &public_key(h, agent), capabilities, now);
    [
        (
            "organization-registry",
            CARD_REGISTER,
            payload(vec![("card", Value::Object(card))]),
        ),
        (
            "group-gateway",
            SESSION_OPEN,
            payload(vec![("agentId", s(&h.id(agent)))]),
        ),
    ]
}

/// The `mission.create` payload of a root Mission coordinated by `coord` for a year: objective
/// "Ship it", done when the tests pass, due at [`DEADLINE`]; `permissions` only when given.
pub fn root_mission(
    h: &Harness,
    mission: &str,
    group: &str,
    title: &str,
    budget: Value,
    permissions: &[&str],
) -> Object {
    let mut p = payload(vec![
        ("missionId", s(mission)),
        ("groupId", s(group)),
        ("coordinatorId", s(&h.id("coord"))),
        ("title", s(title)),
        ("objective", s("Ship it")),
        ("definitionOfDone", arr(&["tests pass"])),
        ("budget", budget),
        ("deadline", s(DEADLINE)),
    ]);
    if !permissions.is_empty() {
        p.insert("permissions", arr(permissions));
    }
    p.insert("coordinatorLeaseSeconds", n(31_536_000));
    p
}

/// The `membership.change` payload that gives `who` (a Principal of type `t`: `agent`,
/// `human`) `roles`.
pub fn membership(h: &Harness, who: &str, t: &str, roles: &[&str]) -> Object {
    payload(vec![
        (
            "principal",
            obj(vec![("type", s(t)), ("id", s(&h.id(who)))]),
        ),
        ("roles", arr(roles)),
    ])
}

/// An envelope that names only `group` (`mission.create` names the Group it creates).
pub fn in_group(group: &str) -> Envelope {
    Envelope {
        group_id: Some(group.into()),
        ..Envelope::default()
    }
}

/// A WorkContract: "Build the thing", one `binary` deliverable accepted when "it runs", then
/// `members` (deadline, budget, resources, …) in order; `over` replaces or adds members last.
pub fn contract_of(members: Vec<(&'static str, Value)>, over: Vec<(&'static str, Value)>) -> Value {
    let mut c = payload(vec![
        ("goal", s("Build the thing")),
        ("deliverables", arr(&["binary"])),
        ("acceptanceCriteria", arr(&["it runs"])),
    ]);
    for (k, v) in members.into_iter().chain(over) {
        c.insert(k, v);
    }
    Value::Object(c)
}

/// Signs an Artifact manifest with `seed` (JCS of the manifest without `signature`).
pub fn sign_manifest(mut m: Object, seed: &SecretSeed) -> Object {
    m.remove("signature");
    let bytes = wasm_core::json::canonicalize(&Value::Object(m.clone()))
        .unwrap_or_else(|e| panic!("a manifest canonicalizes: {e:?}"));
    m.insert("signature", s(&b64url_encode(&ed25519::sign(seed, &bytes))));
    m
}

/// SplitMix64: tiny, deterministic, good enough for choosing Commands (the property tests
/// name their seed, so a failure replays).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.bits() % n }
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items`, or `None` when there is none.
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        if items.is_empty() {
            None
        } else {
            Some(items[self.below(items.len() as u64) as usize].clone())
        }
    }

    /// At most `max` of `items`, each taken at a 35 % chance, in order.
    pub fn subset<T: Clone>(&mut self, items: &[T], max: usize) -> Vec<T> {
        let mut out = Vec::new();
        for i in items {
            if out.len() < max && self.chance(35) {
                out.push(i.clone());
            }
        }
        out
    }
}

/// A harness, the log of every appended Event (for replay) and a clock.
pub struct World {
    pub h: Harness,
    pub log: Vec<Value>,
    pub now: Micros,
}

impl World {
    /// An Organization of `principals` at [`t0`], with nothing submitted yet.
    pub fn new(principals: &[(&str, ActorType)]) -> World {
        World {
            h: Harness::new(principals),
            log: Vec::new(),
            now: t0(),
        }
    }

    /// Submits at `self.now` and records appended Events.
    pub fn sub(
        &mut self,
        who: &str,
        kind: &str,
        env: Envelope,
        p: Object,
    ) -> Result<Submitted, Rejection> {
        let r = self.h.submit(who, kind, &env, p, self.now);
        if let Ok(Submitted::Appended(es)) = &r {
            self.log.extend(es.iter().map(|e| e.value.clone()));
        }
        r
    }

    /// The envelope a Principal sends in the root Group: its current Session and Membership
    /// Epochs, and the Coordinator Epoch when it is the Coordinator.
    pub fn env(&self, who: &str) -> Envelope {
        self.h.current_envelope(who, Some(G))
    }

    /// Submits as `who` with its default envelope.
    pub fn go(&mut self, who: &str, kind: &str, p: Object) -> Result<Submitted, Rejection> {
        let env = self.env(who);
        self.sub(who, kind, env, p)
    }

    /// The root Group's last sequence.
    pub fn seq(&self) -> u64 {
        self.h.authority.state.groups[G].last_sequence
    }

    /// The WorkItem `id`.
    pub fn work(&self, id: &str) -> &WorkItem {
        &self.h.authority.state.work_items[id]
    }

    /// The registry service registers `card`.
    pub fn register(&mut self, card: Object) {
        let p = payload(vec![("card", Value::Object(card))]);
        if let Err(e) = self.sub(
            "organization-registry",
            CARD_REGISTER,
            Envelope::default(),
            p,
        ) {
            panic!("the card is registered: {e:?}");
        }
    }

    /// The gateway opens `agent`'s Session.
    pub fn session_open(&mut self, agent: &str) {
        let p = payload(vec![("agentId", s(&self.h.id(agent)))]);
        if let Err(e) = self.sub("group-gateway", SESSION_OPEN, Envelope::default(), p) {
            panic!("the Session opens: {e:?}");
        }
    }

    /// A fresh Authority replaying every appended Event reaches the identical state.
    pub fn assert_replays(&self) {
        let mut fresh = self.h.authority.fresh();
        for e in &self.log {
            if let Err(r) = fresh.replay(e) {
                panic!("an appended Event replays: {r:?}");
            }
        }
        assert_eq!(
            format!("{:?}", fresh.state),
            format!("{:?}", self.h.authority.state)
        );
    }
}

/// A test Organization that also keeps the rejections each Principal saw, as the console
/// records them (the input of the views' rejection lists), and numbers its own Action IDs.
/// Its [`World`]'s fields are reached through `Deref`.
pub struct Witness {
    pub world: World,
    pub seen: Vec<SeenRejection>,
}

impl std::ops::Deref for Witness {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

impl std::ops::DerefMut for Witness {
    fn deref_mut(&mut self) -> &mut World {
        &mut self.world
    }
}

impl Witness {
    /// An Organization of `principals` at [`t0`], with nothing submitted yet.
    pub fn new(principals: &[(&str, ActorType)]) -> Witness {
        Witness {
            world: World::new(principals),
            seen: Vec::new(),
        }
    }

    /// Submits at `self.now` (Action ID `urn:x:action:N` unless `env` names one); records the
    /// appended Events, or the rejection as the sender's console sees it.
    pub fn sub(
        &mut self,
        who: &str,
        kind: &str,
        env: Envelope,
        p: Object,
    ) -> Result<Vec<Value>, Rejection> {
        let action = format!("urn:x:action:{}", self.log.len() + self.seen.len() + 1_000);
        let action_id = env.action_id.clone().unwrap_or(action);
        let env = Envelope {
            action_id: Some(action_id.clone()),
            ..env
        };
        let w = &mut self.world;
        match w.h.submit(who, kind, &env, p, w.now) {
            Ok(Submitted::Appended(es)) => {
                let vs: Vec<Value> = es.into_iter().map(|e| e.value).collect();
                w.log.extend(vs.iter().cloned());
                Ok(vs)
            }
            Ok(Submitted::Duplicate(r)) => panic!("unexpected duplicate {r:?}"),
            Err(r) => {
                self.seen.push(SeenRejection {
                    at: w.now,
                    actor: w.h.actor(who),
                    command_kind: kind.to_owned(),
                    action_id,
                    group_id: env.group_id.clone(),
                    work_item_id: env.work_item_id.clone(),
                    rejection: r.clone(),
                });
                Err(r)
            }
        }
    }

    /// Submits as `who` in `group` with its current envelope there.
    pub fn go(
        &mut self,
        who: &str,
        group: &str,
        kind: &str,
        p: Object,
    ) -> Result<Vec<Value>, Rejection> {
        let env = self.h.current_envelope(who, Some(group));
        self.sub(who, kind, env, p)
    }
}

/// Declares a test file's own World over the kit's: `kit_world!(World)` wraps [`World`],
/// `kit_world!(World: Witness)` wraps [`Witness`], and either may add fields of its own
/// (`kit_world!(World: Witness { counter: u8 })`); the kit's value is the field `kit`. The kit's
/// fields and methods are reached through `Deref`, and `sub` and `go` are repeated on the
/// wrapper so that a payload argument may borrow the World (two-phase borrows do not reach
/// through `DerefMut`).
#[macro_export]
macro_rules! kit_world {
    ($name:ident $({ $($field:ident : $ty:ty),* $(,)? })?) => {
        $crate::kit_world!(@struct $name, $crate::kit::World,
            wasm_core::authority::Submitted, { $($($field: $ty),*)? });

        impl $name {
            fn go(&mut self, who: &str, kind: &str, p: wasm_core::json::Object)
                -> Result<wasm_core::authority::Submitted, wasm_core::authority::Rejection> {
                self.kit.go(who, kind, p)
            }
        }
    };
    ($name:ident : Witness $({ $($field:ident : $ty:ty),* $(,)? })?) => {
        $crate::kit_world!(@struct $name, $crate::kit::Witness,
            Vec<wasm_core::json::Value>, { $($($field: $ty),*)? });

        impl $name {
            fn go(&mut self, who: &str, group: &str, kind: &str, p: wasm_core::json::Object)
                -> Result<Vec<wasm_core::json::Value>, wasm_core::authority::Rejection> {
                self.kit.go(who, group, kind, p)
            }
        }
    };
    (@struct $name:ident, $inner:ty, $out:ty, { $($field:ident : $ty:ty),* }) => {
        /// The kit's test Organization with this file's steps.
        struct $name {
            kit: $inner,
            $($field: $ty,)*
        }

        impl std::ops::Deref for $name {
            type Target = $inner;
            fn deref(&self) -> &$inner {
                &self.kit
            }
        }

        impl std::ops::DerefMut for $name {
            fn deref_mut(&mut self) -> &mut $inner {
                &mut self.kit
            }
        }

        impl $name {
            fn sub(&mut self, who: &str, kind: &str, env: $crate::harness::Envelope,
                p: wasm_core::json::Object) -> Result<$out, wasm_core::authority::Rejection> {
                self.kit.sub(who, kind, env, p)
            }
        }
    };
}
