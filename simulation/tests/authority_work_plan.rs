//! WorkItem planning end to end through the six verification stages: `work.propose`,
//! `work.authorize`, `work.offer`, `work.accept_offer` and the dependency-insertion ext kind,
//! with every guard's wire code, cooperation limits, a dependency-DAG property test and replay
//! determinism.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use simulation::harness::{Envelope, is};
use simulation::kit::{self, G, M, Rng, WORK_DEADLINE, arr, at, num, obj, one, s, st, t0};
use wasm_core::authority::handlers::{payload, work_plan};
use wasm_core::authority::{Rejection, Submitted};
use wasm_core::json::{Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::work_item::WorkItemState;

const DEP_ADD: &str = "ext.missionweaveprotocol.core.work_dependency_add";

simulation::kit_world!(World);

impl World {
    /// An Organization with a root Mission (budget: 10 000 model tokens, 100 tool calls,
    /// 3 600 compute seconds; deadline two days out) and three Worker Agents.
    fn new() -> World {
        let mut w = World {
            kit: kit::World::new(&[
                ("owner", ActorType::Human),
                ("coord", ActorType::Agent),
                ("worker", ActorType::Agent),
                ("worker2", ActorType::Agent),
                ("delegate", ActorType::Agent),
                ("outsider", ActorType::Agent),
            ]),
        };
        for a in ["coord", "worker", "worker2", "delegate", "outsider"] {
            w.register_card(a, 1, &[]);
            w.session_open(a);
        }
        let budget = obj(vec![
            ("modelTokens", Value::from(10_000u64)),
            ("toolCalls", Value::from(100u64)),
            ("computeSeconds", Value::from(3_600u64)),
        ]);
        let p = kit::root_mission(&w.h, M, G, "Root", budget, &[]);
        let env = kit::in_group(G);
        w.sub("owner", "mission.create", env, p).unwrap();
        w
    }

    /// Registers (or upgrades) an Agent Card with `(capability, version)` pairs.
    fn register_card(&mut self, agent: &str, version: u64, caps: &[(&str, u64)]) {
        let caps = caps
            .iter()
            .map(|(id, v)| {
                obj(vec![
                    ("id", s(id)),
                    ("version", Value::from(*v)),
                    ("constraints", Value::Object(Object::new())),
                ])
            })
            .collect();
        let card = kit::agent_card(&self.h, agent, version, "AAAA", caps, self.now);
        self.register(card);
    }

    /// Adds `who` to the Group with `roles`.
    fn add_member(&mut self, who: &str, roles: &[&str], provisional: bool) {
        let p = payload(vec![
            (
                "principal",
                obj(vec![("type", s("agent")), ("id", s(&self.h.id(who)))]),
            ),
            ("roles", arr(roles)),
            ("provisional", Value::Bool(provisional)),
        ]);
        self.go("owner", "membership.change", p).unwrap();
    }

    fn authorize(
        &mut self,
        id: &str,
        extra: Vec<(&'static str, Value)>,
    ) -> Result<Submitted, Rejection> {
        let mut members = vec![("workItemId", s(id)), ("contract", contract(vec![]))];
        members.extend(extra);
        self.go("coord", "work.authorize", payload(members))
    }

    fn offer(&mut self, id: &str, candidates: &[&str]) -> Result<Submitted, Rejection> {
        let ids: Vec<String> = candidates.iter().map(|c| self.h.id(c)).collect();
        let p = payload(vec![
            ("workItemId", s(id)),
            (
                "candidateAgentIds",
                Value::Array(ids.into_iter().map(Value::string).collect()),
            ),
            ("selectionBasis", Value::Object(Object::new())),
        ]);
        self.go("coord", "work.offer", p)
    }

    fn accept(&mut self, who: &str, id: &str) -> Result<Submitted, Rejection> {
        self.go(
            who,
            "work.accept_offer",
            payload(vec![("workItemId", s(id))]),
        )
    }

    fn dep_add(&mut self, id: &str, dep: &str) -> Result<Submitted, Rejection> {
        let p = payload(vec![("workItemId", s(id)), ("dependencyId", s(dep))]);
        self.go("coord", DEP_ADD, p)
    }
}

impl World {
    /// The MissionOwner issues a one-shot Cooperation Override Grant for `who`'s `action`.
    fn grant_override(&mut self, id: &str, policy: &str, who: &str, kind: &str, action: &str) {
        let p = payload(vec![
            ("grantId", s(id)),
            ("policyName", s(policy)),
            (
                "beneficiary",
                obj(vec![("type", s("agent")), ("id", s(&self.h.id(who)))]),
            ),
            ("targetCommandKind", s(kind)),
            ("targetActionId", s(action)),
            ("reason", s("legitimate extra work")),
            ("expiresAt", s("2026-07-16T08:00:00Z")),
        ]);
        self.go("owner", "policy.grant_cooperation_override", p)
            .unwrap();
    }

    /// `who`'s default envelope, citing `grant` with Action ID `action`.
    fn env_with_grant(&self, who: &str, grant: &str, action: &str) -> Envelope {
        Envelope {
            cooperation_override_grant_id: Some(grant.into()),
            action_id: Some(action.into()),
            ..self.env(who)
        }
    }
}

/// A WorkContract with defaults; `over` replaces or adds members.
fn contract(over: Vec<(&'static str, Value)>) -> Value {
    kit::contract_of(vec![("deadline", s(WORK_DEADLINE))], over)
}

fn tokens(n: u64) -> (&'static str, Value) {
    ("budget", obj(vec![("modelTokens", Value::from(n))]))
}

/// Asserts a rejection with `code` that appended nothing.
fn refused(w: &World, r: &Result<Submitted, Rejection>, code: ErrorCode, seq: u64) {
    assert!(is(r, code), "expected {code}, got {r:?}");
    assert_eq!(w.seq(), seq, "a rejected Command appended Events");
}

// ---------------------------------------------------------------------------------------------
// work.propose
// ---------------------------------------------------------------------------------------------

#[test]
fn propose_accepted_and_each_guard_refused() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], false);
    w.authorize("urn:x:work:b", vec![]).unwrap();
    w.authorize("urn:x:work:a", vec![]).unwrap();
    let rev = w.h.authority.state.missions[M].revision;
    let p = payload(vec![
        ("proposalId", s("urn:x:proposal:1")),
        ("contract", contract(vec![tokens(500)])),
        (
            "dependencyIds",
            arr(&["urn:x:work:b", "urn:x:work:a", "urn:x:work:b"]),
        ),
        ("parentWorkItemId", s("urn:x:work:a")),
    ]);
    let e = one(w.go("worker", "work.propose", p));
    assert_eq!(st(&e, "/kind"), "work.proposed");
    assert_eq!(st(&e, "/payload/proposal/status"), "open");
    assert_eq!(st(&e, "/payload/proposal/proposedBy/id"), w.h.id("worker"));
    assert_eq!(
        at(&e, "/payload/proposal/dependencyIds"),
        &arr(&["urn:x:work:a", "urn:x:work:b"])
    );
    assert_eq!(
        at(&e, "/payload/proposal/authorizedWorkItemId"),
        &Value::Null
    );
    assert_eq!(num(&e, "/payload/proposal/contract/requestedPriority"), 50);
    assert!(e.pointer("/workItemId").is_none());
    assert_eq!(w.h.authority.state.missions[M].revision, rev + 1);
    assert_eq!(
        w.h.authority.state.proposals["urn:x:proposal:1"].status,
        wasm_core::authority::projection::ProposalStatus::Open
    );

    let seq = w.seq();
    let base = |id: &str, c: Value| payload(vec![("proposalId", s(id)), ("contract", c)]);
    // expectedRevision is the Mission's (D-24).
    let env = Envelope {
        expected_revision: Some(rev),
        ..w.env("worker")
    };
    let r = w.sub(
        "worker",
        "work.propose",
        env,
        base("urn:x:proposal:9", contract(vec![])),
    );
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Duplicate id (D-5).
    let r = w.go(
        "worker",
        "work.propose",
        base("urn:x:proposal:1", contract(vec![])),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // An id used by another kind of object is a duplicate too.
    let r = w.go(
        "worker",
        "work.propose",
        base("urn:x:work:a", contract(vec![])),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Deadline after the Mission's (D-6).
    let late = contract(vec![("deadline", s("2026-07-18T08:00:00Z"))]);
    let r = w.go("worker", "work.propose", base("urn:x:proposal:2", late));
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Budget beyond the Mission's, and in a dimension the Mission does not grant (D-6).
    let r = w.go(
        "worker",
        "work.propose",
        base("urn:x:proposal:2", contract(vec![tokens(10_001)])),
    );
    refused(&w, &r, ErrorCode::BudgetExceeded, seq);
    let money = (
        "budget",
        obj(vec![("financialMicrounits", Value::from(1u64))]),
    );
    let r = w.go(
        "worker",
        "work.propose",
        base("urn:x:proposal:2", contract(vec![money])),
    );
    refused(&w, &r, ErrorCode::BudgetExceeded, seq);
    // Unknown dependency, unknown parent (D-4).
    let mut p = base("urn:x:proposal:2", contract(vec![]));
    p.insert("dependencyIds", arr(&["urn:x:work:nope"]));
    let r = w.go("worker", "work.propose", p);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let mut p = base("urn:x:proposal:2", contract(vec![]));
    p.insert("parentWorkItemId", s("urn:x:work:nope"));
    let r = w.go("worker", "work.propose", p);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Schema: unknown member, missing contract, high risk without human approval.
    let mut p = base("urn:x:proposal:2", contract(vec![]));
    p.insert("bogus", Value::Bool(true));
    let r = w.go("worker", "work.propose", p);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go(
        "worker",
        "work.propose",
        payload(vec![("proposalId", s("urn:x:proposal:2"))]),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let risky = contract(vec![("sideEffectRisk", s("destructive"))]);
    let r = w.go("worker", "work.propose", base("urn:x:proposal:2", risky));
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // A provisional member may not propose; a non-member learns nothing about the Group.
    w.add_member("worker2", &["worker"], true);
    let seq = w.seq();
    let r = w.go(
        "worker2",
        "work.propose",
        base("urn:x:proposal:2", contract(vec![])),
    );
    refused(&w, &r, ErrorCode::MembershipRequired, seq);
    let env = Envelope {
        membership_epoch: Some(1),
        ..w.env("outsider")
    };
    let r = w.sub(
        "outsider",
        "work.propose",
        env,
        base("urn:x:proposal:2", contract(vec![])),
    );
    refused(&w, &r, ErrorCode::GroupNotFound, seq);
    w.assert_replays();
}

#[test]
fn proposal_rate_is_limited_per_actor_per_minute() {
    let mut w = World::new();
    w.h.authority.config.limits.proposal_rate_per_minute = 2;
    w.add_member("worker", &["worker"], false);
    let prop = |i: u32| {
        payload(vec![
            ("proposalId", s(&format!("urn:x:proposal:{i}"))),
            ("contract", contract(vec![])),
        ])
    };
    w.go("worker", "work.propose", prop(1)).unwrap();
    w.now = w.now.plus_seconds(10);
    w.go("worker", "work.propose", prop(2)).unwrap();
    w.now = w.now.plus_seconds(10);
    let seq = w.seq();
    let r = w.go("worker", "work.propose", prop(3));
    refused(&w, &r, ErrorCode::RateLimited, seq);
    // Another actor has its own window.
    w.go("coord", "work.propose", prop(4)).unwrap();
    // Citing a grant when no limit is reached is refused (§7).
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:grant:none".into()),
        ..w.env("coord")
    };
    let seq = w.seq();
    let r = w.sub("coord", "work.propose", env, prop(5));
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Sixty seconds after the first proposal, one slot is free again.
    w.now = t0().plus_seconds(60);
    w.go("worker", "work.propose", prop(6)).unwrap();
    let seq = w.seq();
    let r = w.go("worker", "work.propose", prop(7));
    refused(&w, &r, ErrorCode::RateLimited, seq);
    // An approved escalation: a one-shot grant for exactly this Action ID.
    let action = "urn:x:action:extra-proposal";
    w.grant_override(
        "urn:x:override:1",
        "proposal_rate",
        "worker",
        "work.propose",
        action,
    );
    let env = w.env_with_grant("worker", "urn:x:override:1", action);
    one(w.sub("worker", "work.propose", env, prop(7)));
    let g = &w.h.authority.state.override_grants["urn:x:override:1"];
    assert_eq!(g.consumed_at, Some(w.now));
    assert!(w.h.authority.state.groups[G].policy_log.iter().any(|e| {
        e.get("decision").and_then(Value::as_str) == Some("cooperation override consumed")
    }));
    // The grant is spent: another Action ID, or the same grant again, stays RATE_LIMITED.
    let env = w.env_with_grant("worker", "urn:x:override:1", "urn:x:action:again");
    let seq = w.seq();
    let r = w.sub("worker", "work.propose", env, prop(8));
    refused(&w, &r, ErrorCode::RateLimited, seq);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// work.authorize
// ---------------------------------------------------------------------------------------------

#[test]
fn authorize_creates_open_item_conversation_and_account() {
    let mut w = World::new();
    let rev = w.h.authority.state.missions[M].revision;
    // The new item's id comes from the envelope here (payloads.md §2.2).
    let env = Envelope {
        work_item_id: Some("urn:x:work:1".into()),
        ..w.env("coord")
    };
    let p = payload(vec![("contract", contract(vec![tokens(4_000)]))]);
    let e = one(w.sub("coord", "work.authorize", env, p));
    assert_eq!(st(&e, "/kind"), "work.authorized");
    let item = at(&e, "/payload/workItem");
    assert_eq!(st(item, "/id"), "urn:x:work:1");
    assert_eq!(st(item, "/status"), "open");
    assert_eq!(num(item, "/revision"), 1);
    assert_eq!(num(item, "/ownershipEpoch"), 0);
    assert_eq!(num(item, "/delegationDepth"), 0);
    assert_eq!(st(item, "/missionId"), M);
    assert_eq!(st(item, "/groupId"), G);
    assert_eq!(st(item, "/createdBy/id"), w.h.id("coord"));
    assert_eq!(
        st(item, "/conversationId"),
        format!("{G}:work:urn:x:work:1")
    );
    assert_eq!(at(item, "/assigneeId"), &Value::Null);
    assert_eq!(at(item, "/delegationGrantId"), &Value::Null);
    assert_eq!(at(item, "/selectionBasis"), &Value::Null);
    assert_eq!(at(item, "/offeredAgentIds"), &arr(&[]));
    assert_eq!(num(item, "/contract/budget/modelTokens"), 4_000);
    assert_eq!(at(item, "/contract/budget/toolCalls"), &Value::Null);
    assert_eq!(st(item, "/contract/executionApproval"), "not_required");
    assert_eq!(at(&e, "/payload/proposalId"), &Value::Null);
    // No envelope workItemId (payloads.md §4.2).
    assert!(e.pointer("/workItemId").is_none());
    let state = &w.h.authority.state;
    assert!(
        state.groups[G]
            .conversations
            .contains(&work_plan::work_conversation_id(G, "urn:x:work:1"))
    );
    assert_eq!(state.accounts["urn:x:work:1"].parent.as_deref(), Some(M));
    assert_eq!(state.accounts[M].children, vec!["urn:x:work:1".to_owned()]);
    assert_eq!(state.missions[M].revision, rev + 1);

    // A sub-WorkItem: account under its parent, depth 1, sorted dependencies.
    w.authorize("urn:x:work:2", vec![]).unwrap();
    let e = one(w.authorize(
        "urn:x:work:3",
        vec![
            ("contract", contract(vec![tokens(1_000)])),
            ("parentWorkItemId", s("urn:x:work:1")),
            ("dependencyIds", arr(&["urn:x:work:2", "urn:x:work:1"])),
        ],
    ));
    assert_eq!(num(&e, "/payload/workItem/delegationDepth"), 1);
    assert_eq!(
        at(&e, "/payload/workItem/dependencyIds"),
        &arr(&["urn:x:work:1", "urn:x:work:2"])
    );
    assert_eq!(
        w.h.authority.state.accounts["urn:x:work:3"]
            .parent
            .as_deref(),
        Some("urn:x:work:1")
    );
    w.assert_replays();
}

#[test]
fn authorize_from_proposal_keeps_the_proposer() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], false);
    let p = payload(vec![
        ("proposalId", s("urn:x:proposal:1")),
        ("contract", contract(vec![tokens(100)])),
    ]);
    w.go("worker", "work.propose", p).unwrap();
    let seq = w.seq();
    // Unknown proposal (D-4); a different contract (REVISION_CONFLICT).
    let r = w.authorize(
        "urn:x:work:1",
        vec![("proposalId", s("urn:x:proposal:nope"))],
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.authorize("urn:x:work:1", vec![("proposalId", s("urn:x:proposal:1"))]);
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    let r = w.authorize(
        "urn:x:work:1",
        vec![
            ("proposalId", s("urn:x:proposal:1")),
            ("contract", contract(vec![tokens(100)])),
            ("dependencyIds", arr(&[])),
            ("parentWorkItemId", Value::Null),
            ("delegationGrantId", Value::Null),
        ],
    );
    let e = one(r);
    assert_eq!(st(&e, "/payload/proposalId"), "urn:x:proposal:1");
    assert_eq!(st(&e, "/payload/workItem/createdBy/id"), w.h.id("worker"));
    let p = &w.h.authority.state.proposals["urn:x:proposal:1"];
    assert_eq!(
        p.status,
        wasm_core::authority::projection::ProposalStatus::Authorized
    );
    assert_eq!(p.authorized_work_item_id.as_deref(), Some("urn:x:work:1"));
    // A proposal is authorized once.
    let seq = w.seq();
    let r = w.authorize(
        "urn:x:work:2",
        vec![
            ("proposalId", s("urn:x:proposal:1")),
            ("contract", contract(vec![tokens(100)])),
        ],
    );
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    w.assert_replays();
}

#[test]
fn authorize_guards_carry_their_wire_codes() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], false);
    w.authorize(
        "urn:x:work:1",
        vec![("contract", contract(vec![tokens(6_000)]))],
    )
    .unwrap();
    let seq = w.seq();
    // Authority: a Worker, the human MissionOwner, a Coordinator citing a Grant.
    let p = payload(vec![
        ("workItemId", s("urn:x:work:2")),
        ("contract", contract(vec![])),
    ]);
    let r = w.go("worker", "work.authorize", p.clone());
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.go("owner", "work.authorize", p.clone());
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.authorize(
        "urn:x:work:2",
        vec![("delegationGrantId", s("urn:x:grant:1"))],
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // A stale Coordinator Epoch.
    let env = Envelope {
        coordinator_epoch: Some(7),
        ..w.env("coord")
    };
    let r = w.sub("coord", "work.authorize", env, p.clone());
    refused(&w, &r, ErrorCode::AuthStaleCoordinator, seq);
    // expectedRevision is the Mission's (D-24); the current one is accepted further down.
    let env = Envelope {
        expected_revision: Some(1),
        ..w.env("coord")
    };
    let r = w.sub("coord", "work.authorize", env, p.clone());
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Duplicate WorkItem id (D-5).
    let r = w.authorize("urn:x:work:1", vec![]);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Deadline after the Mission's (D-6).
    let r = w.authorize(
        "urn:x:work:2",
        vec![(
            "contract",
            contract(vec![("deadline", s("2026-07-17T08:00:01Z"))]),
        )],
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Budget beyond the Mission's (D-6), and beyond what the ledger has left (§8.2).
    let r = w.authorize(
        "urn:x:work:2",
        vec![("contract", contract(vec![tokens(20_000)]))],
    );
    refused(&w, &r, ErrorCode::BudgetExceeded, seq);
    let r = w.authorize(
        "urn:x:work:2",
        vec![("contract", contract(vec![tokens(4_001)]))],
    );
    refused(&w, &r, ErrorCode::BudgetExceeded, seq);
    assert!(!w.h.authority.state.accounts.contains_key("urn:x:work:2"));
    // DAG: self-dependency, unknown dependency, unknown parent (D-4).
    let r = w.authorize(
        "urn:x:work:2",
        vec![("dependencyIds", arr(&["urn:x:work:2"]))],
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.authorize(
        "urn:x:work:2",
        vec![("dependencyIds", arr(&["urn:x:work:9"]))],
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.authorize(
        "urn:x:work:2",
        vec![("parentWorkItemId", s("urn:x:work:9"))],
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // A sub-WorkItem must fit its parent's account (6 000 tokens).
    let r = w.authorize(
        "urn:x:work:2",
        vec![
            ("contract", contract(vec![tokens(4_000)])),
            ("parentWorkItemId", s("urn:x:work:1")),
        ],
    );
    assert!(r.is_ok(), "{r:?}");
    let seq = w.seq();
    let r = w.authorize(
        "urn:x:work:3",
        vec![
            ("contract", contract(vec![tokens(2_001)])),
            ("parentWorkItemId", s("urn:x:work:1")),
        ],
    );
    refused(&w, &r, ErrorCode::BudgetExceeded, seq);
    // Exactly what remains fits, with the current Mission revision.
    let env = Envelope {
        expected_revision: Some(w.h.authority.state.missions[M].revision),
        ..w.env("coord")
    };
    let p = payload(vec![
        ("workItemId", s("urn:x:work:3")),
        ("contract", contract(vec![tokens(2_000)])),
        ("parentWorkItemId", s("urn:x:work:1")),
    ]);
    one(w.sub("coord", "work.authorize", env, p));
    w.assert_replays();
}

#[test]
fn authorize_delegation_depth_is_a_cooperation_limit() {
    let mut w = World::new();
    w.authorize("urn:x:work:d0", vec![]).unwrap();
    for i in 1..=3 {
        let e = one(w.authorize(
            &format!("urn:x:work:d{i}"),
            vec![("parentWorkItemId", s(&format!("urn:x:work:d{}", i - 1)))],
        ));
        assert_eq!(num(&e, "/payload/workItem/delegationDepth"), i);
    }
    let seq = w.seq();
    let r = w.authorize(
        "urn:x:work:d4",
        vec![("parentWorkItemId", s("urn:x:work:d3"))],
    );
    refused(&w, &r, ErrorCode::RateLimited, seq);
    // An unknown or unusable override grant stays RATE_LIMITED.
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:grant:none".into()),
        ..w.env("coord")
    };
    let p = payload(vec![
        ("workItemId", s("urn:x:work:d4")),
        ("contract", contract(vec![])),
        ("parentWorkItemId", s("urn:x:work:d3")),
    ]);
    let r = w.sub("coord", "work.authorize", env, p.clone());
    refused(&w, &r, ErrorCode::RateLimited, seq);
    // With an approved escalation the fifth level is authorized.
    let action = "urn:x:action:deep";
    w.grant_override(
        "urn:x:override:d",
        "delegation_depth",
        "coord",
        "work.authorize",
        action,
    );
    let env = w.env_with_grant("coord", "urn:x:override:d", action);
    let e = one(w.sub("coord", "work.authorize", env, p));
    assert_eq!(num(&e, "/payload/workItem/delegationDepth"), 4);
    assert!(
        w.h.authority.state.override_grants["urn:x:override:d"]
            .consumed_at
            .is_some()
    );
    w.assert_replays();
}

#[test]
fn authorize_and_offer_on_the_delegation_grant_path() {
    let mut w = World::new();
    w.add_member("delegate", &["work_delegate"], false);
    w.add_member("worker", &["worker"], false);
    w.authorize(
        "urn:x:work:root",
        vec![("contract", contract(vec![tokens(5_000)]))],
    )
    .unwrap();
    w.authorize("urn:x:work:other", vec![]).unwrap();
    fn zero(n: &str) -> (&str, Value) {
        (n, Value::from(0u64))
    }
    let grant = payload(vec![
        ("grantId", s("urn:x:grant:1")),
        ("granteeAgentId", s(&w.h.id("delegate"))),
        ("targetWorkItemId", s("urn:x:work:root")),
        (
            "allowedCapabilities",
            Value::Array(vec![obj(vec![
                ("id", s("code")),
                ("minimumVersion", Value::from(1u64)),
            ])]),
        ),
        (
            "budget",
            obj(vec![
                ("currency", s("EUR")),
                zero("financialMicrounits"),
                ("modelTokens", Value::from(3_000u64)),
                zero("toolCalls"),
                zero("computeSeconds"),
                zero("wallClockSeconds"),
                zero("externalActions"),
            ]),
        ),
        ("maxDescendantDepth", Value::from(1u64)),
        ("expiresAt", s("2026-07-16T08:00:00Z")),
    ]);
    w.go("coord", "membership.grant_delegation", grant).unwrap();
    let delegated = |id: &str, parent: Option<&str>, c: Value| {
        let mut p = payload(vec![
            ("workItemId", s(id)),
            ("contract", c),
            ("delegationGrantId", s("urn:x:grant:1")),
        ]);
        if let Some(parent) = parent {
            p.insert("parentWorkItemId", s(parent));
        }
        p
    };
    let e = one(w.go(
        "delegate",
        "work.authorize",
        delegated(
            "urn:x:work:sub",
            Some("urn:x:work:root"),
            contract(vec![tokens(2_000)]),
        ),
    ));
    assert_eq!(
        st(&e, "/payload/workItem/delegationGrantId"),
        "urn:x:grant:1"
    );
    assert_eq!(st(&e, "/payload/workItem/createdBy/id"), w.h.id("delegate"));
    assert_eq!(num(&e, "/payload/workItem/delegationDepth"), 1);
    let seq = w.seq();
    // Without a parent; outside the subtree; deeper than the Grant allows.
    let r = w.go(
        "delegate",
        "work.authorize",
        delegated("urn:x:work:x", None, contract(vec![])),
    );
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.go(
        "delegate",
        "work.authorize",
        delegated("urn:x:work:x", Some("urn:x:work:other"), contract(vec![])),
    );
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.go(
        "delegate",
        "work.authorize",
        delegated("urn:x:work:x", Some("urn:x:work:sub"), contract(vec![])),
    );
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // Beyond the Grant's cumulative token ceiling (2 000 used of 3 000).
    let r = w.go(
        "delegate",
        "work.authorize",
        delegated(
            "urn:x:work:x",
            Some("urn:x:work:root"),
            contract(vec![tokens(1_001)]),
        ),
    );
    refused(&w, &r, ErrorCode::BudgetExceeded, seq);
    // No Grant cited, or an unknown one.
    let mut p = delegated("urn:x:work:x", Some("urn:x:work:root"), contract(vec![]));
    p.remove("delegationGrantId");
    let r = w.go("delegate", "work.authorize", p);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let mut p = delegated("urn:x:work:x", Some("urn:x:work:root"), contract(vec![]));
    p.insert("delegationGrantId", s("urn:x:grant:nope"));
    let r = w.go("delegate", "work.authorize", p);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);

    // The delegate offers the Grant's root, which becomes attributed to the Grant (a replay
    // note, the Event has no Grant id).
    let p = payload(vec![
        ("workItemId", s("urn:x:work:root")),
        ("candidateAgentIds", arr(&[&w.h.id("worker")])),
        ("selectionBasis", Value::Object(Object::new())),
        ("delegationGrantId", s("urn:x:grant:1")),
    ]);
    // The root's 5 000 tokens do not fit the Grant's remaining 1 000.
    let r = w.go("delegate", "work.offer", p.clone());
    refused(&w, &r, ErrorCode::BudgetExceeded, seq);
    let mut p = p;
    p.insert("workItemId", s("urn:x:work:sub"));
    one(w.go("delegate", "work.offer", p.clone()));
    // A Coordinator-authorized item in the subtree becomes attributed when the delegate offers it.
    w.authorize(
        "urn:x:work:co",
        vec![
            ("contract", contract(vec![tokens(500)])),
            ("parentWorkItemId", s("urn:x:work:root")),
        ],
    )
    .unwrap();
    assert_eq!(w.work("urn:x:work:co").delegation_grant_id, None);
    p.insert("workItemId", s("urn:x:work:co"));
    let e = one(w.go("delegate", "work.offer", p.clone()));
    assert_eq!(st(&e, "/kind"), "work.offer.created");
    assert!(e.pointer("/payload/delegationGrantId").is_none());
    assert_eq!(
        w.work("urn:x:work:co").delegation_grant_id.as_deref(),
        Some("urn:x:grant:1")
    );
    // Outside the subtree.
    let seq = w.seq();
    p.insert("workItemId", s("urn:x:work:other"));
    let r = w.go("delegate", "work.offer", p);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// work.offer
// ---------------------------------------------------------------------------------------------

#[test]
fn offer_records_candidates_expiry_and_selection_basis() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], false);
    w.add_member("worker2", &["worker"], true);
    w.authorize("urn:x:work:1", vec![]).unwrap();
    let basis = obj(vec![
        ("verifiedCapabilityMatches", arr(&["code"])),
        ("expectedCostMicrounits", Value::from(5u64)),
    ]);
    let ids = [w.h.id("worker2"), w.h.id("worker")];
    let p = payload(vec![
        ("workItemId", s("urn:x:work:1")),
        (
            "candidateAgentIds",
            Value::Array(ids.iter().map(|i| s(i)).collect()),
        ),
        ("selectionBasis", basis),
        ("offerExpiresInSeconds", Value::from(60u64)),
    ]);
    let env = Envelope {
        expected_revision: Some(1),
        ..w.env("coord")
    };
    let e = one(w.sub("coord", "work.offer", env, p));
    assert_eq!(st(&e, "/kind"), "work.offer.created");
    assert_eq!(st(&e, "/workItemId"), "urn:x:work:1");
    // Sorted; a provisional candidate is fine.
    let mut sorted = ids.to_vec();
    sorted.sort();
    assert_eq!(
        at(&e, "/payload/candidateAgentIds"),
        &Value::Array(sorted.iter().map(|i| s(i)).collect())
    );
    assert_eq!(st(&e, "/payload/offerExpiresAt"), "2026-07-15T08:01:00Z");
    assert_eq!(
        at(&e, "/payload/selectionBasis/authorizationEligible"),
        &Value::Bool(true)
    );
    assert_eq!(
        at(&e, "/payload/selectionBasis/availabilityEstimate"),
        &Value::Null
    );
    assert_eq!(num(&e, "/payload/selectionBasis/expectedCostMicrounits"), 5);
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Offered);
    assert_eq!(item.revision, 2);
    assert!(item.selection_basis.is_some());

    // A live offer is extended: candidates merge. After expiry they are replaced.
    w.add_member("outsider", &["worker"], false);
    let e = one(w.offer("urn:x:work:1", &["outsider"]));
    assert_eq!(at(&e, "/payload/candidateAgentIds").to_owned(), {
        let mut all = [w.h.id("outsider"), w.h.id("worker"), w.h.id("worker2")];
        all.sort();
        Value::Array(all.iter().map(|i| s(i)).collect())
    });
    w.now = w.now.plus_seconds(301);
    let e = one(w.offer("urn:x:work:1", &["worker"]));
    assert_eq!(
        at(&e, "/payload/candidateAgentIds"),
        &arr(&[&w.h.id("worker")])
    );
    assert_eq!(w.work("urn:x:work:1").revision, 4);
    w.assert_replays();
}

#[test]
fn offer_guards_carry_their_wire_codes() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], false);
    w.add_member("worker2", &["observer"], false);
    w.authorize(
        "urn:x:work:1",
        vec![(
            "contract",
            contract(vec![(
                "requiredCapabilities",
                Value::Array(vec![obj(vec![
                    ("id", s("code")),
                    ("minimumVersion", Value::from(2u64)),
                ])]),
            )]),
        )],
    )
    .unwrap();
    w.authorize("urn:x:work:2", vec![]).unwrap();
    let seq = w.seq();
    // A candidate without the capability at the version asked (then with it).
    let r = w.offer("urn:x:work:1", &["worker"]);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    w.register_card("worker", 2, &[("code", 1)]);
    let seq = w.seq();
    let r = w.offer("urn:x:work:1", &["worker"]);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    w.register_card("worker", 3, &[("code", 2), ("test", 1)]);
    let seq = w.seq();
    // Not a member; not a worker; the Coordinator itself is no worker either.
    let r = w.offer("urn:x:work:2", &["outsider"]);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.offer("urn:x:work:2", &["worker2"]);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.offer("urn:x:work:2", &["coord"]);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // Unknown WorkItem (D-4); duplicate or empty candidates (schema).
    let r = w.offer("urn:x:work:9", &["worker"]);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.offer("urn:x:work:2", &["worker", "worker"]);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.offer("urn:x:work:2", &[]);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // REVISION_CONFLICT against the WorkItem revision.
    let env = Envelope {
        expected_revision: Some(5),
        ..w.env("coord")
    };
    let p = payload(vec![
        ("workItemId", s("urn:x:work:2")),
        ("candidateAgentIds", arr(&[&w.h.id("worker")])),
        ("selectionBasis", Value::Object(Object::new())),
    ]);
    let r = w.sub("coord", "work.offer", env, p.clone());
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Stale Coordinator Epoch; a non-Coordinator.
    let env = Envelope {
        coordinator_epoch: Some(5),
        ..w.env("coord")
    };
    let r = w.sub("coord", "work.offer", env, p.clone());
    refused(&w, &r, ErrorCode::AuthStaleCoordinator, seq);
    let r = w.go("worker", "work.offer", p.clone());
    refused(&w, &r, ErrorCode::AuthForbidden, seq);

    // With the capability: offered, accepted, then a new offer while the owner is live.
    one(w.offer("urn:x:work:1", &["worker"]));
    let e = one(w.accept("worker", "urn:x:work:1"));
    assert_eq!(
        w.work("urn:x:work:1").assigned_capability_versions,
        [("code".to_owned(), 2u64)].into_iter().collect()
    );
    assert_eq!(num(&e, "/payload/agentCardVersion"), 3);
    let seq = w.seq();
    let r = w.offer("urn:x:work:1", &["worker"]);
    refused(&w, &r, ErrorCode::WorkAlreadyOwned, seq);
    // Once the ownership lease (900 s) has run out, the owner is fenced and the item re-offered.
    w.now = w.now.plus_seconds(900);
    one(w.offer("urn:x:work:1", &["worker"]));
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Offered);
    assert_eq!(item.assignee_id, None);
    assert_eq!(item.ownership_epoch, 2);
    assert!(item.assigned_capability_versions.is_empty());
    assert_eq!(item.assigned_agent_card_version, None);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// work.accept_offer
// ---------------------------------------------------------------------------------------------

#[test]
fn accept_is_atomic_first_wins_and_promotes_a_provisional_member() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], true);
    w.add_member("worker2", &["worker"], false);
    w.authorize("urn:x:work:1", vec![]).unwrap();
    w.offer("urn:x:work:1", &["worker", "worker2"]).unwrap();
    let m_epoch =
        w.h.authority
            .state
            .membership(G, &w.h.id("worker"))
            .unwrap()
            .epoch;
    let env = Envelope {
        expected_revision: Some(2),
        ..w.env("worker")
    };
    let p = payload(vec![
        ("workItemId", s("urn:x:work:1")),
        ("ownershipLeaseSeconds", Value::from(600u64)),
    ]);
    let e = one(w.sub("worker", "work.accept_offer", env.clone(), p.clone()));
    assert_eq!(st(&e, "/kind"), "work.offer.accepted");
    assert_eq!(st(&e, "/workItemId"), "urn:x:work:1");
    assert_eq!(st(&e, "/payload/assigneeId"), w.h.id("worker"));
    assert_eq!(num(&e, "/payload/ownershipEpoch"), 1);
    assert_eq!(
        st(&e, "/payload/ownershipLeaseExpiresAt"),
        "2026-07-15T08:10:00Z"
    );
    assert_eq!(num(&e, "/payload/agentCardVersion"), 1);
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Queued);
    assert_eq!(item.revision, 3);
    assert_eq!(item.ownership_epoch, 1);
    assert!(item.offered_agent_ids.is_empty());
    assert_eq!(item.offer_expires_at, None);
    // The provisional Membership is now active at epoch + 1, silently.
    let m =
        w.h.authority
            .state
            .membership(G, &w.h.id("worker"))
            .unwrap();
    assert_eq!((m.status.as_str(), m.epoch), ("active", m_epoch + 1));
    // The old Membership Epoch is fenced.
    let seq = w.seq();
    let r = w.sub(
        "worker",
        "work.accept_offer",
        Envelope {
            action_id: None,
            ..env
        },
        p,
    );
    refused(&w, &r, ErrorCode::MembershipStale, seq);
    // The losing candidate: WORK_ALREADY_OWNED; the winner again: not offered.
    let r = w.accept("worker2", "urn:x:work:1");
    refused(&w, &r, ErrorCode::WorkAlreadyOwned, seq);
    let r = w.accept("worker", "urn:x:work:1");
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    w.assert_replays();
}

#[test]
fn accept_guards_carry_their_wire_codes() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], false);
    w.add_member("worker2", &["worker"], false);
    w.authorize("urn:x:work:1", vec![]).unwrap();
    let seq = w.seq();
    // Not offered yet.
    let r = w.accept("worker", "urn:x:work:1");
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    w.offer("urn:x:work:1", &["worker"]).unwrap();
    let seq = w.seq();
    // Not a candidate; a human; an unknown WorkItem; a stale revision.
    let r = w.accept("worker2", "urn:x:work:1");
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.accept("owner", "urn:x:work:1");
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.accept("worker", "urn:x:work:9");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let env = Envelope {
        expected_revision: Some(1),
        ..w.env("worker")
    };
    let r = w.sub(
        "worker",
        "work.accept_offer",
        env,
        payload(vec![("workItemId", s("urn:x:work:1"))]),
    );
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // The offer expires after 300 s.
    w.now = w.now.plus_seconds(300);
    let r = w.accept("worker", "urn:x:work:1");
    refused(&w, &r, ErrorCode::WorkOfferExpired, seq);
    // A card that no longer meets the contract.
    w.authorize(
        "urn:x:work:2",
        vec![(
            "contract",
            contract(vec![(
                "requiredCapabilities",
                Value::Array(vec![obj(vec![("id", s("code"))])]),
            )]),
        )],
    )
    .unwrap();
    w.register_card("worker", 2, &[("code", 1)]);
    w.offer("urn:x:work:2", &["worker"]).unwrap();
    w.register_card("worker", 3, &[]);
    let seq = w.seq();
    let r = w.accept("worker", "urn:x:work:2");
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    w.assert_replays();
}

#[test]
fn accept_respects_the_queued_work_limit() {
    let mut w = World::new();
    w.h.authority.config.limits.max_queued_work_items = 1;
    w.add_member("worker", &["worker"], false);
    for id in ["urn:x:work:1", "urn:x:work:2"] {
        w.authorize(id, vec![]).unwrap();
        w.offer(id, &["worker"]).unwrap();
    }
    one(w.accept("worker", "urn:x:work:1"));
    let seq = w.seq();
    let r = w.accept("worker", "urn:x:work:2");
    refused(&w, &r, ErrorCode::RateLimited, seq);
    // A grant for another policy does not help; one for queued_work_items does.
    let action = "urn:x:action:second";
    w.grant_override(
        "urn:x:override:a",
        "active_work_items",
        "worker",
        "work.accept_offer",
        action,
    );
    let env = w.env_with_grant("worker", "urn:x:override:a", action);
    let p = payload(vec![("workItemId", s("urn:x:work:2"))]);
    let seq = w.seq();
    let r = w.sub("worker", "work.accept_offer", env, p.clone());
    refused(&w, &r, ErrorCode::RateLimited, seq);
    w.grant_override(
        "urn:x:override:q",
        "queued_work_items",
        "worker",
        "work.accept_offer",
        action,
    );
    let env = w.env_with_grant("worker", "urn:x:override:q", action);
    one(w.sub("worker", "work.accept_offer", env, p));
    assert_eq!(w.work("urn:x:work:2").status, WorkItemState::Queued);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// …core.work_dependency_add
// ---------------------------------------------------------------------------------------------

#[test]
fn dependency_add_accepted_and_each_guard_refused() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], false);
    for id in ["urn:x:work:a", "urn:x:work:b", "urn:x:work:c"] {
        w.authorize(id, vec![]).unwrap();
    }
    let rev = w.h.authority.state.missions[M].revision;
    let env = Envelope {
        expected_revision: Some(1),
        work_item_id: Some("urn:x:work:a".into()),
        ..w.env("coord")
    };
    let e = one(w.sub(
        "coord",
        DEP_ADD,
        env,
        payload(vec![("dependencyId", s("urn:x:work:c"))]),
    ));
    assert_eq!(st(&e, "/kind"), "work.contract.revised");
    assert_eq!(st(&e, "/workItemId"), "urn:x:work:a");
    assert_eq!(st(&e, "/payload/dependencyId"), "urn:x:work:c");
    assert_eq!(num(&e, "/payload/revision"), 2);
    one(w.dep_add("urn:x:work:a", "urn:x:work:b"));
    assert_eq!(
        w.work("urn:x:work:a").dependency_ids,
        vec!["urn:x:work:b".to_owned(), "urn:x:work:c".to_owned()]
    );
    assert_eq!(w.work("urn:x:work:a").revision, 3);
    assert_eq!(w.h.authority.state.missions[M].revision, rev + 2);
    one(w.dep_add("urn:x:work:b", "urn:x:work:c"));

    let seq = w.seq();
    // Cycles: direct and transitive; a self-dependency; a repeated edge.
    let r = w.dep_add("urn:x:work:b", "urn:x:work:a");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.dep_add("urn:x:work:c", "urn:x:work:a");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.dep_add("urn:x:work:a", "urn:x:work:a");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.dep_add("urn:x:work:a", "urn:x:work:b");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Unknown WorkItems (D-4).
    let r = w.dep_add("urn:x:work:a", "urn:x:work:z");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.dep_add("urn:x:work:z", "urn:x:work:a");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // REVISION_CONFLICT on the dependent WorkItem.
    let env = Envelope {
        expected_revision: Some(1),
        ..w.env("coord")
    };
    let p = payload(vec![
        ("workItemId", s("urn:x:work:c")),
        ("dependencyId", s("urn:x:work:x")),
    ]);
    w.authorize("urn:x:work:x", vec![]).unwrap();
    let seq = w.seq();
    let mut p2 = p.clone();
    p2.insert("workItemId", s("urn:x:work:a"));
    let r = w.sub("coord", DEP_ADD, env.clone(), p2);
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Stale Coordinator Epoch; not the Coordinator.
    let env = Envelope {
        coordinator_epoch: Some(2),
        ..w.env("coord")
    };
    let r = w.sub("coord", DEP_ADD, env, p.clone());
    refused(&w, &r, ErrorCode::AuthStaleCoordinator, seq);
    let r = w.go("worker", DEP_ADD, p.clone());
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // Eligible while offered and queued.
    w.offer("urn:x:work:c", &["worker"]).unwrap();
    one(w.go("coord", DEP_ADD, p));
    w.accept("worker", "urn:x:work:c").unwrap();
    let item = w.work("urn:x:work:c");
    assert_eq!(item.status, WorkItemState::Queued);
    assert_eq!(
        work_plan::dependencies_verified(&w.h.authority.state, item),
        Err(vec!["urn:x:work:x".to_owned()])
    );
    assert_eq!(
        work_plan::dependencies_verified(&w.h.authority.state, w.work("urn:x:work:x")),
        Ok(())
    );
    // c → b would close b → c.
    let seq = w.seq();
    let r = w.dep_add("urn:x:work:c", "urn:x:work:b");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Not while the WorkItem is active.
    w.authorize("urn:x:work:y", vec![]).unwrap();
    w.offer("urn:x:work:y", &["worker"]).unwrap();
    w.accept("worker", "urn:x:work:y").unwrap();
    let p = payload(vec![
        ("workItemId", s("urn:x:work:y")),
        ("ownershipEpoch", Value::from(1u64)),
    ]);
    one(w.go("worker", "work.start", p));
    assert_eq!(w.work("urn:x:work:y").status, WorkItemState::Active);
    let seq = w.seq();
    let r = w.dep_add("urn:x:work:y", "urn:x:work:a");
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    w.assert_replays();
}

/// A tiny deterministic PRNG (SplitMix64), so the property test needs no dependency.
/// Kahn's algorithm over the recorded dependency edges of the Mission's WorkItems.
fn acyclic(w: &World) -> bool {
    let items = &w.h.authority.state.work_items;
    let mut indegree: std::collections::BTreeMap<&str, usize> =
        items.keys().map(|k| (k.as_str(), 0)).collect();
    for item in items.values() {
        *indegree.get_mut(item.id.as_str()).unwrap() = item.dependency_ids.len();
    }
    let mut ready: Vec<&str> = indegree
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(k, _)| *k)
        .collect();
    let mut done = 0;
    while let Some(k) = ready.pop() {
        done += 1;
        // Everything that depends on k loses one unmet dependency.
        for item in items.values() {
            if item.dependency_ids.iter().any(|d| d == k) {
                let n = indegree.get_mut(item.id.as_str()).unwrap();
                *n -= 1;
                if *n == 0 {
                    ready.push(item.id.as_str());
                }
            }
        }
    }
    done == items.len()
}

#[test]
fn random_dependency_insertions_never_produce_a_cycle() {
    for seed in 0..4u64 {
        let mut w = World::new();
        let n = 9;
        let ids: Vec<String> = (0..n).map(|i| format!("urn:x:work:p{i}")).collect();
        for id in &ids {
            w.authorize(id, vec![]).unwrap();
        }
        let mut rng = Rng(seed);
        let (mut accepted, mut refused_cycles) = (0, 0);
        for _ in 0..120 {
            let (a, b) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
            let (id, dep) = (&ids[a], &ids[b]);
            let would_cycle = work_plan::creates_cycle(&w.h.authority.state, id, dep);
            let duplicate = w.work(id).dependency_ids.contains(dep);
            let seq = w.seq();
            let r = w.dep_add(id, dep);
            if would_cycle || duplicate {
                assert!(is(&r, ErrorCode::InvalidCommand), "{id} → {dep}: {r:?}");
                assert_eq!(w.seq(), seq);
                refused_cycles += usize::from(would_cycle);
            } else {
                assert!(r.is_ok(), "{id} → {dep}: {r:?}");
                accepted += 1;
            }
            assert!(acyclic(&w), "seed {seed}: a cycle after {id} → {dep}");
        }
        assert!(
            accepted > 5 && refused_cycles > 5,
            "{accepted} {refused_cycles}"
        );
        // Replay of this history reaches the same state.
        let mut fresh = w.h.authority.fresh();
        for e in &w.log {
            fresh.replay(e).unwrap();
        }
        assert_eq!(
            format!("{:?}", fresh.state),
            format!("{:?}", w.h.authority.state)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------------------------

#[test]
fn replay_of_every_appended_event_rebuilds_identical_state() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], true);
    w.add_member("worker2", &["worker"], false);
    w.register_card("worker", 2, &[("code", 4)]);
    w.register_card("worker2", 2, &[("code", 1)]);
    let p = payload(vec![
        ("proposalId", s("urn:x:proposal:1")),
        ("contract", contract(vec![tokens(300)])),
    ]);
    w.go("worker2", "work.propose", p).unwrap();
    w.authorize(
        "urn:x:work:1",
        vec![
            ("proposalId", s("urn:x:proposal:1")),
            ("contract", contract(vec![tokens(300)])),
        ],
    )
    .unwrap();
    w.authorize(
        "urn:x:work:2",
        vec![
            ("parentWorkItemId", s("urn:x:work:1")),
            ("dependencyIds", arr(&["urn:x:work:1"])),
            (
                "contract",
                contract(vec![
                    tokens(200),
                    (
                        "requiredCapabilities",
                        Value::Array(vec![obj(vec![("id", s("code"))])]),
                    ),
                ]),
            ),
        ],
    )
    .unwrap();
    w.authorize("urn:x:work:3", vec![]).unwrap();
    w.dep_add("urn:x:work:3", "urn:x:work:2").unwrap();
    w.offer("urn:x:work:2", &["worker"]).unwrap();
    w.accept("worker", "urn:x:work:2").unwrap();
    w.offer("urn:x:work:1", &["worker2"]).unwrap();
    w.now = w.now.plus_seconds(30);
    w.offer("urn:x:work:1", &["worker"]).unwrap();
    w.accept("worker2", "urn:x:work:1").unwrap();
    // An expired owner fenced by a re-offer.
    w.now = w.now.plus_seconds(1_000);
    w.offer("urn:x:work:2", &["worker2", "worker"]).unwrap();
    let item = w.work("urn:x:work:2");
    assert_eq!((item.ownership_epoch, item.assignee_id.clone()), (2, None));
    w.accept("worker2", "urn:x:work:2").unwrap();
    assert_eq!(
        w.work("urn:x:work:2").assigned_capability_versions,
        [("code".to_owned(), 1u64)].into_iter().collect()
    );
    assert_eq!(w.work("urn:x:work:2").ownership_epoch, 3);

    let mut fresh = w.h.authority.fresh();
    for e in &w.log {
        fresh.replay(e).unwrap();
    }
    assert_eq!(
        format!("{:?}", fresh.state),
        format!("{:?}", w.h.authority.state)
    );
}

/// A provisional Membership may accept the offer it was invited to (§8), but an ended one may
/// not, even when its Agent is still a candidate of a live offer: `MEMBERSHIP_REQUIRED`, and
/// the WorkItem stays offered. The console's **active-member** question gives the same answer.
#[test]
fn an_ended_member_cannot_accept_an_offer() {
    let mut w = World::new();
    w.add_member("worker", &["worker"], false);
    w.authorize("urn:x:work:1", vec![]).unwrap();
    w.offer("urn:x:work:1", &["worker"]).unwrap();
    let end = payload(vec![(
        "principal",
        obj(vec![("type", s("agent")), ("id", s(&w.h.id("worker")))]),
    )]);
    w.go("owner", "membership.end", end).unwrap();
    let seq = w.seq();
    let r = w.accept("worker", "urn:x:work:1");
    refused(&w, &r, ErrorCode::MembershipRequired, seq);
    assert_eq!(w.work("urn:x:work:1").status, WorkItemState::Offered);
    assert!(w.work("urn:x:work:1").assignee_id.is_none());

    let g = &w.h.authority.state.groups[G];
    let worker = w.h.actor("worker");
    let e = wasm_core::authority::guards::active_member_of(g, &worker).unwrap_err();
    assert_eq!(e.code, ErrorCode::MembershipRequired);
    let outsider = w.h.actor("outsider");
    let e = wasm_core::authority::guards::active_member_of(g, &outsider).unwrap_err();
    assert_eq!(e.code, ErrorCode::GroupNotFound);
    let coord = w.h.actor("coord");
    assert!(wasm_core::authority::guards::active_member_of(g, &coord).is_ok());
    w.assert_replays();
}
