//! WorkItem execution end to end through the six verification stages: `work.start` and its
//! Execution Lease, `approval.grant_execution`, lease renewal, checkpoint, block/unblock,
//! `artifact.publish`, submit, accept_result, fail, cancel, resource usage and offline
//! reconciliation, with every guard's wire code, the §10.2 rows positively and negatively, a
//! budget property test and replay determinism.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use simulation::harness::{Envelope, is};
use simulation::kit::{
    self, G, M, Rng, WORK_DEADLINE, arr, at, events, n, num, obj, one, s, sign_manifest, st,
};
use wasm_core::authority::handlers::{payload, work_exec};
use wasm_core::authority::state::Account;
use wasm_core::authority::{Micros, Rejection, Submitted};
use wasm_core::json::{Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::work_item::WorkItemState;

const RENEW: &str = "ext.missionweaveprotocol.core.work_execution_lease_renew";
const USAGE: &str = "ext.missionweaveprotocol.core.resource_usage_record";
const USAGE_RECORDED: &str = "ext.missionweaveprotocol.core.resource_usage_recorded";
const OFFLINE: &str = "urn:missionweaveprotocol:extension:bounded-offline-execution";
const NOTES: &str = "urn:missionweaveprotocol:extension:authority-state";

simulation::kit_world!(World);

impl World {
    /// An Organization with a root Mission (10 000 model tokens, 100 tool calls, 3 600 compute
    /// seconds; no money, wall-clock or external actions; permissions `deploy` and `read`), a
    /// Coordinator and two Worker Agents with Agent Cards carrying their real public keys.
    fn new() -> World {
        let mut w = World {
            kit: kit::World::new(&[
                ("owner", ActorType::Human),
                ("coord", ActorType::Agent),
                ("worker", ActorType::Agent),
                ("worker2", ActorType::Agent),
            ]),
        };
        for a in ["coord", "worker", "worker2"] {
            let card = kit::agent_card(&w.h, a, 1, &kit::public_key(&w.h, a), vec![], w.now);
            w.register(card);
            w.session_open(a);
        }
        let budget = obj(vec![
            ("modelTokens", n(10_000)),
            ("toolCalls", n(100)),
            ("computeSeconds", n(3_600)),
        ]);
        let p = kit::root_mission(&w.h, M, G, "Root", budget, &["deploy", "read"]);
        let env = kit::in_group(G);
        w.sub("owner", "mission.create", env, p).unwrap();
        for a in ["worker", "worker2"] {
            let p = kit::membership(&w.h, a, "agent", &["worker"]);
            w.go("owner", "membership.change", p).unwrap();
        }
        w
    }

    fn advance(&mut self, seconds: u64) {
        self.now = self.now.plus_seconds(seconds);
    }

    /// Submits with the default envelope changed by `f`.
    fn go_with(
        &mut self,
        who: &str,
        kind: &str,
        p: Object,
        f: impl FnOnce(&mut Envelope),
    ) -> Result<Submitted, Rejection> {
        let mut env = self.env(who);
        f(&mut env);
        self.sub(who, kind, env, p)
    }

    fn lease(&self, id: &str) -> String {
        self.work(id).execution_lease_id.clone().unwrap()
    }

    fn epoch(&self, id: &str) -> u64 {
        self.work(id).ownership_epoch
    }

    fn authorize(
        &mut self,
        id: &str,
        over: Vec<(&'static str, Value)>,
        extra: Vec<(&'static str, Value)>,
    ) {
        let mut members = vec![("workItemId", s(id)), ("contract", contract(over))];
        members.extend(extra);
        self.go("coord", "work.authorize", payload(members))
            .unwrap();
    }

    /// Authorizes `id`, offers it to the worker, who accepts: `queued`, Ownership Epoch 1.
    fn queued(&mut self, id: &str, over: Vec<(&'static str, Value)>) {
        self.authorize(id, over, vec![]);
        self.offer_accept(id, "worker");
    }

    fn offer_accept(&mut self, id: &str, who: &str) {
        let p = payload(vec![
            ("workItemId", s(id)),
            ("candidateAgentIds", Value::Array(vec![s(&self.h.id(who))])),
            ("selectionBasis", Value::Object(Object::new())),
        ]);
        self.go("coord", "work.offer", p).unwrap();
        self.go(
            who,
            "work.accept_offer",
            payload(vec![("workItemId", s(id))]),
        )
        .unwrap();
    }

    fn start(&mut self, id: &str) -> Result<Submitted, Rejection> {
        let p = payload(vec![
            ("workItemId", s(id)),
            ("ownershipEpoch", n(self.epoch(id))),
        ]);
        self.go("worker", "work.start", p)
    }

    /// `workItemId`, the current `ownershipEpoch` and `executionLeaseId`, plus `extra`.
    fn exec(&self, id: &str, extra: Vec<(&'static str, Value)>) -> Object {
        let mut p = payload(vec![
            ("workItemId", s(id)),
            ("ownershipEpoch", n(self.epoch(id))),
            ("executionLeaseId", s(&self.lease(id))),
        ]);
        for (k, v) in extra {
            p.insert(k, v);
        }
        p
    }

    /// Publishes a signed Artifact for `work` (the worker must hold its lease).
    fn publish(&mut self, work: &str, id: &str, hash_byte: char) -> Result<Submitted, Rejection> {
        let m = self.manifest(work, id, hash_byte, vec![]);
        let p = self.exec(work, vec![("artifact", Value::Object(m))]);
        let p = without(p, "workItemId");
        self.go("worker", "artifact.publish", p)
    }

    /// A manifest for `work` signed by the worker's Agent Card key; `over` changes members
    /// before signing.
    fn manifest(
        &self,
        work: &str,
        id: &str,
        hash_byte: char,
        over: Vec<(&'static str, Value)>,
    ) -> Object {
        let mut m = payload(vec![
            ("id", s(id)),
            (
                "contentHash",
                s(&format!("sha256:{}", hash_byte.to_string().repeat(64))),
            ),
            ("mediaType", s("text/plain")),
            ("schemaUri", Value::Null),
            ("producingAgentId", s(&self.h.id("worker"))),
            ("agentCardVersion", n(1)),
            ("missionId", s(M)),
            ("groupId", s(G)),
            ("workItemId", s(work)),
            ("sourceArtifactHashes", Value::Array(vec![])),
            ("toolVersions", obj(vec![("cargo", s("1.90"))])),
            ("modelVersions", Value::Object(Object::new())),
            ("createdAt", s(&self.now.format())),
            ("dataClassification", s("internal")),
        ]);
        for (k, v) in over {
            m.insert(k, v);
        }
        sign_manifest(m, &self.h.principals["worker"].seed)
    }
}

fn without(mut p: Object, member: &str) -> Object {
    p.remove(member);
    p
}

/// A WorkContract with a 1 000-token, 10-call, 100-second budget; `over` replaces members.
fn contract(over: Vec<(&'static str, Value)>) -> Value {
    let budget = obj(vec![
        ("modelTokens", n(1_000)),
        ("toolCalls", n(10)),
        ("computeSeconds", n(100)),
    ]);
    let members = vec![
        ("allowedResources", arr(&["repo:main", "repo:docs"])),
        ("deadline", s(WORK_DEADLINE)),
        ("budget", budget),
    ];
    kit::contract_of(members, over)
}

fn checkpoint(phase: &str, at: Micros) -> Value {
    obj(vec![
        ("phase", s(phase)),
        ("completedMilestones", arr(&["parsed"])),
        ("nextStep", s("compile")),
        ("createdAt", s(&at.format())),
    ])
}

fn evidence(success: bool) -> Value {
    Value::Array(vec![obj(vec![
        ("kind", s("deterministic-tests")),
        ("description", s("unit tests")),
        ("success", Value::Bool(success)),
        ("data", obj(vec![("passed", n(12))])),
    ])])
}

fn usage(members: Vec<(&'static str, u64)>) -> Value {
    obj(members.into_iter().map(|(k, v)| (k, n(v))).collect())
}

/// Asserts a rejection with `code` that appended nothing.
fn refused(w: &World, r: &Result<Submitted, Rejection>, code: ErrorCode, seq: u64) {
    assert!(is(r, code), "expected {code}, got {r:?}");
    assert_eq!(w.seq(), seq, "a rejected Command appended Events");
}

// ---------------------------------------------------------------------------------------------
// work.start
// ---------------------------------------------------------------------------------------------

#[test]
fn start_issues_a_deterministic_execution_lease() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    let rev = w.work("urn:x:work:1").revision;
    let e = one(w.start("urn:x:work:1"));
    assert_eq!(st(&e, "/kind"), "work.started");
    assert_eq!(st(&e, "/workItemId"), "urn:x:work:1");
    assert_eq!(num(&e, "/payload/ownershipEpoch"), 1);
    let lease = at(&e, "/payload/executionLease").as_object().unwrap();
    let mut names: Vec<&str> = lease.iter().map(|(k, _)| k.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "closedAt",
            "closureReason",
            "expiresAt",
            "groupId",
            "holderAgentId",
            "issuedAt",
            "lastRenewedAt",
            "leaseId",
            "leaseType",
            "missionId",
            "ownershipEpoch",
            "renewalCount",
            "sessionEpoch",
            "startsAt",
            "state",
            "workItemId"
        ]
    );
    let now = w.now.format();
    let expires = w.now.plus_seconds(300).format();
    assert_eq!(st(&e, "/payload/executionLease/leaseType"), "execution");
    assert_eq!(st(&e, "/payload/executionLease/state"), "active");
    assert_eq!(num(&e, "/payload/executionLease/renewalCount"), 0);
    assert_eq!(num(&e, "/payload/executionLease/sessionEpoch"), 1);
    assert_eq!(num(&e, "/payload/executionLease/ownershipEpoch"), 1);
    assert_eq!(
        st(&e, "/payload/executionLease/holderAgentId"),
        w.h.id("worker")
    );
    assert_eq!(st(&e, "/payload/executionLease/missionId"), M);
    assert_eq!(st(&e, "/payload/executionLease/groupId"), G);
    assert_eq!(st(&e, "/payload/executionLease/issuedAt"), now);
    assert_eq!(st(&e, "/payload/executionLease/startsAt"), now);
    assert_eq!(st(&e, "/payload/executionLease/expiresAt"), expires);
    assert_eq!(at(&e, "/payload/executionLease/closedAt"), &Value::Null);
    assert_eq!(
        at(&e, "/payload/executionLease/lastRenewedAt"),
        &Value::Null
    );
    assert_eq!(st(&e, "/payload/executionLeaseExpiresAt"), expires);
    // The Lease ID comes from the Command hash: deterministic, v4-shaped.
    let lease_id = st(&e, "/payload/executionLease/leaseId");
    assert_eq!(lease_id, work_exec::lease_id_for(&st(&e, "/commandHash")));
    assert!(lease_id.starts_with("lease:execution:"));
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Active);
    assert_eq!(item.execution_lease_id.as_deref(), Some(lease_id.as_str()));
    assert_eq!(item.revision, rev + 1);
    // The 900 s ownership lease is not shortened by the 300 s Execution Lease.
    assert_eq!(
        item.ownership_lease_expires_at,
        Some(w.now.plus_seconds(900))
    );
    assert_eq!(w.h.authority.state.leases[&lease_id].state, "active");
    w.assert_replays();
}

#[test]
fn start_guards_carry_their_wire_codes() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    let seq = w.seq();
    let p = |epoch: u64| {
        payload(vec![
            ("workItemId", s("urn:x:work:1")),
            ("ownershipEpoch", n(epoch)),
        ])
    };
    // Payload: an unknown member, a missing ownershipEpoch, a lease out of range.
    let mut bad = p(1);
    bad.insert("bogus", Value::Bool(true));
    let r = w.go("worker", "work.start", bad);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go(
        "worker",
        "work.start",
        payload(vec![("workItemId", s("urn:x:work:1"))]),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let mut bad = p(1);
    bad.insert("executionLeaseSeconds", n(0));
    let r = w.go("worker", "work.start", bad);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Unknown WorkItem (D-4).
    let r = w.go(
        "worker",
        "work.start",
        payload(vec![
            ("workItemId", s("urn:x:work:none")),
            ("ownershipEpoch", n(1)),
        ]),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Stale Ownership Epoch.
    let r = w.go("worker", "work.start", p(2));
    refused(&w, &r, ErrorCode::WorkStaleOwnership, seq);
    // Not the owner.
    let r = w.go("worker2", "work.start", p(1));
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // REVISION_CONFLICT against the WorkItem revision.
    let rev = w.work("urn:x:work:1").revision;
    let r = w.go_with("worker", "work.start", p(1), |e| {
        e.expected_revision = Some(rev + 5)
    });
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Stale Session Epoch.
    let r = w.go_with("worker", "work.start", p(1), |e| e.session_epoch = Some(7));
    refused(&w, &r, ErrorCode::AuthStaleSession, seq);
    // A grant cited though no limit is reached.
    let r = w.go_with("worker", "work.start", p(1), |e| {
        e.cooperation_override_grant_id = Some("urn:x:grant:none".into())
    });
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // The right expectedRevision is accepted.
    let r = w.go_with("worker", "work.start", p(1), |e| {
        e.expected_revision = Some(rev)
    });
    assert_eq!(st(&one(r), "/kind"), "work.started");
    // §10.2: only `queued` starts; an `active` item does not start again.
    let seq = w.seq();
    let r = w.go("worker", "work.start", p(1));
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    // An expired ownership lease (queued item, 900 s) is WORK_LEASE_EXPIRED.
    w.queued("urn:x:work:2", vec![]);
    w.advance(901);
    let seq = w.seq();
    let r = w.go(
        "worker",
        "work.start",
        payload(vec![
            ("workItemId", s("urn:x:work:2")),
            ("ownershipEpoch", n(1)),
        ]),
    );
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    w.assert_replays();
}

#[test]
fn start_needs_verified_dependencies() {
    let mut w = World::new();
    w.queued("urn:x:work:dep", vec![]);
    w.authorize(
        "urn:x:work:main",
        vec![],
        vec![("dependencyIds", arr(&["urn:x:work:dep"]))],
    );
    w.offer_accept("urn:x:work:main", "worker");
    let seq = w.seq();
    let r = w.start("urn:x:work:main");
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let Err(e) = r else { unreachable!() };
    assert_eq!(
        e.details.get("dependencies"),
        Some(&arr(&["urn:x:work:dep"]))
    );
    // Complete the dependency: start, publish, submit, accept.
    w.start("urn:x:work:dep").unwrap();
    w.publish("urn:x:work:dep", "urn:x:artifact:d", 'd')
        .unwrap();
    let p = w.exec(
        "urn:x:work:dep",
        vec![
            ("artifactIds", arr(&["urn:x:artifact:d"])),
            ("evidence", evidence(true)),
        ],
    );
    w.go("worker", "work.submit", p).unwrap();
    let p = payload(vec![
        ("workItemId", s("urn:x:work:dep")),
        ("evidence", evidence(true)),
    ]);
    w.go("coord", "work.accept_result", p).unwrap();
    assert_eq!(
        st(&one(w.start("urn:x:work:main")), "/kind"),
        "work.started"
    );
    w.assert_replays();
}

#[test]
fn start_respects_the_active_work_limit() {
    let mut w = World::new();
    for i in 0..5 {
        w.queued(&format!("urn:x:work:{i}"), vec![]);
    }
    for i in 0..4 {
        w.start(&format!("urn:x:work:{i}")).unwrap();
    }
    let seq = w.seq();
    let r = w.start("urn:x:work:4");
    refused(&w, &r, ErrorCode::RateLimited, seq);
    let Err(e) = r else { unreachable!() };
    assert_eq!(e.details.get("policy"), Some(&s("active_work_items")));
    assert_eq!(e.details.get("active"), Some(&n(5)));
    // After a checkpoint releases one slot the fifth starts.
    let p = w.exec("urn:x:work:0", vec![("checkpoint", checkpoint("a", w.now))]);
    w.go("worker", "work.checkpoint", p).unwrap();
    w.start("urn:x:work:4").unwrap();
}

// ---------------------------------------------------------------------------------------------
// Execution Approval
// ---------------------------------------------------------------------------------------------

fn grant(id: &str, work: &str, epoch: u64, extra: Vec<(&'static str, Value)>) -> Object {
    let mut p = payload(vec![
        ("approvalId", s(id)),
        ("workItemId", s(work)),
        ("ownershipEpoch", n(epoch)),
        ("operations", arr(&["read", "deploy"])),
    ]);
    for (k, v) in extra {
        p.insert(k, v);
    }
    p
}

#[test]
fn execution_approval_gates_start_and_is_not_consumed() {
    let mut w = World::new();
    let risky = vec![
        ("sideEffectRisk", s("high_risk")),
        ("executionApproval", s("human_required")),
    ];
    w.queued("urn:x:work:1", risky);
    let seq = w.seq();
    let r = w.start("urn:x:work:1");
    refused(&w, &r, ErrorCode::ApprovalRequired, seq);

    let p = grant(
        "urn:x:approval:1",
        "urn:x:work:1",
        1,
        vec![
            ("resources", arr(&["repo:main", "repo:main"])),
            ("budget", obj(vec![("modelTokens", n(500))])),
            ("expiresInSeconds", n(600)),
            ("comments", s("go")),
        ],
    );
    let e = one(w.go("owner", "approval.grant_execution", p));
    assert_eq!(st(&e, "/kind"), "approval.execution.granted");
    assert!(e.pointer("/workItemId").is_none(), "no lifted workItemId");
    assert_eq!(st(&e, "/payload/approval/id"), "urn:x:approval:1");
    assert_eq!(st(&e, "/payload/approval/workItemId"), "urn:x:work:1");
    assert_eq!(num(&e, "/payload/approval/ownershipEpoch"), 1);
    assert_eq!(
        at(&e, "/payload/approval/operations"),
        &arr(&["deploy", "read"])
    );
    assert_eq!(at(&e, "/payload/approval/resources"), &arr(&["repo:main"]));
    assert_eq!(num(&e, "/payload/approval/budget/modelTokens"), 500);
    assert_eq!(at(&e, "/payload/approval/budget/toolCalls"), &Value::Null);
    assert_eq!(st(&e, "/payload/approval/approver/type"), "human");
    assert_eq!(
        st(&e, "/payload/approval/expiresAt"),
        w.now.plus_seconds(600).format()
    );
    assert!(!st(&e, "/payload/approval/signature").is_empty());
    // The WorkItem does not change.
    assert_eq!(w.work("urn:x:work:1").status, WorkItemState::Queued);
    w.start("urn:x:work:1").unwrap();
    // Not consumed: a checkpoint and a second start under the same approval.
    let p = w.exec(
        "urn:x:work:1",
        vec![
            ("checkpoint", checkpoint("a", w.now)),
            ("resumeWithinSeconds", n(3_600)),
        ],
    );
    w.go("worker", "work.checkpoint", p).unwrap();
    w.start("urn:x:work:1").unwrap();
    let p = w.exec(
        "urn:x:work:1",
        vec![
            ("checkpoint", checkpoint("b", w.now)),
            ("resumeWithinSeconds", n(3_600)),
        ],
    );
    w.go("worker", "work.checkpoint", p).unwrap();
    // Once it has expired, start needs a new one.
    w.advance(601);
    let seq = w.seq();
    let r = w.start("urn:x:work:1");
    refused(&w, &r, ErrorCode::ApprovalRequired, seq);
    w.assert_replays();
}

#[test]
fn execution_approval_guards_carry_their_wire_codes() {
    let mut w = World::new();
    w.queued(
        "urn:x:work:1",
        vec![("executionApproval", s("policy_required"))],
    );
    w.authorize("urn:x:work:open", vec![], vec![]);
    let seq = w.seq();
    let go = |w: &mut World, who: &str, p: Object| w.go(who, "approval.grant_execution", p);
    // Payload: empty or duplicate operations, unknown member.
    let mut p = grant("urn:x:approval:1", "urn:x:work:1", 1, vec![]);
    p.insert("operations", Value::Array(vec![]));
    let r = go(&mut w, "owner", p);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let p = grant(
        "urn:x:approval:1",
        "urn:x:work:1",
        1,
        vec![("operations", arr(&["read", "read"]))],
    );
    let r = go(&mut w, "owner", p);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Not a human MissionOwner.
    let r = go(
        &mut w,
        "coord",
        grant("urn:x:approval:1", "urn:x:work:1", 1, vec![]),
    );
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // Not queued (open, unowned).
    let r = go(
        &mut w,
        "owner",
        grant("urn:x:approval:1", "urn:x:work:open", 1, vec![]),
    );
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    // Stale Ownership Epoch.
    let r = go(
        &mut w,
        "owner",
        grant("urn:x:approval:1", "urn:x:work:1", 2, vec![]),
    );
    refused(&w, &r, ErrorCode::WorkStaleOwnership, seq);
    // Operations beyond the Mission's permissions, resources beyond the contract (D-6:
    // AUTH_FORBIDDEN), a budget beyond the contract (BUDGET_EXCEEDED), an approval outliving
    // ownership (INVALID_COMMAND).
    let p = grant(
        "urn:x:approval:1",
        "urn:x:work:1",
        1,
        vec![("operations", arr(&["read", "pay"]))],
    );
    let r = go(&mut w, "owner", p);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let p = grant(
        "urn:x:approval:1",
        "urn:x:work:1",
        1,
        vec![("resources", arr(&["repo:secrets"]))],
    );
    let r = go(&mut w, "owner", p);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    for b in [
        obj(vec![("modelTokens", n(1_001))]),
        obj(vec![("financialMicrounits", n(1))]),
    ] {
        let p = grant("urn:x:approval:1", "urn:x:work:1", 1, vec![("budget", b)]);
        let r = go(&mut w, "owner", p);
        refused(&w, &r, ErrorCode::BudgetExceeded, seq);
    }
    let p = grant(
        "urn:x:approval:1",
        "urn:x:work:1",
        1,
        vec![("expiresInSeconds", n(901))],
    );
    let r = go(&mut w, "owner", p);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // expectedRevision is compared with the Mission revision (D-24).
    let rev = w.h.authority.state.missions[M].revision;
    let p = grant("urn:x:approval:1", "urn:x:work:1", 1, vec![]);
    let r = w.go_with("owner", "approval.grant_execution", p.clone(), |e| {
        e.expected_revision = Some(rev + 1)
    });
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    let r = w.go_with("owner", "approval.grant_execution", p, |e| {
        e.expected_revision = Some(rev)
    });
    assert_eq!(st(&one(r), "/kind"), "approval.execution.granted");
    // The id is now taken (D-5).
    let seq = w.seq();
    let r = go(
        &mut w,
        "owner",
        grant("urn:x:approval:1", "urn:x:work:1", 1, vec![]),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // An approval for another Ownership Epoch does not open the gate: re-offer to worker2.
    w.advance(901);
    w.offer_accept("urn:x:work:1", "worker2");
    // The expired owner was fenced (epoch 2) and worker2's acceptance began epoch 3.
    let epoch = w.epoch("urn:x:work:1");
    assert_eq!(epoch, 3);
    let seq = w.seq();
    let p = payload(vec![
        ("workItemId", s("urn:x:work:1")),
        ("ownershipEpoch", n(epoch)),
    ]);
    let r = w.go("worker2", "work.start", p);
    refused(&w, &r, ErrorCode::ApprovalRequired, seq);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// Lease renewal
// ---------------------------------------------------------------------------------------------

#[test]
fn lease_renewal_extends_and_is_fenced() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    w.start("urn:x:work:1").unwrap();
    let lease = w.lease("urn:x:work:1");
    w.advance(100);
    let rev = w.work("urn:x:work:1").revision;
    let e = one(w.go(
        "worker",
        RENEW,
        w.exec("urn:x:work:1", vec![("leaseSeconds", n(600))]),
    ));
    assert_eq!(st(&e, "/kind"), "work.progressed");
    assert_eq!(st(&e, "/workItemId"), "urn:x:work:1");
    let expiry = w.now.plus_seconds(600).format();
    assert_eq!(st(&e, "/payload/executionLease/leaseId"), lease);
    assert_eq!(num(&e, "/payload/executionLease/renewalCount"), 1);
    assert_eq!(
        st(&e, "/payload/executionLease/lastRenewedAt"),
        w.now.format()
    );
    assert_eq!(st(&e, "/payload/executionLease/expiresAt"), expiry);
    assert_eq!(st(&e, "/payload/executionLeaseExpiresAt"), expiry);
    let item = w.work("urn:x:work:1");
    assert_eq!(item.revision, rev + 1);
    assert_eq!(
        item.ownership_lease_expires_at,
        Some(w.now.plus_seconds(600))
    );
    let seq = w.seq();
    // Same instant again: renewal time must advance.
    let r = w.go(
        "worker",
        RENEW,
        w.exec("urn:x:work:1", vec![("leaseSeconds", n(900))]),
    );
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    // A renewal that does not extend.
    w.advance(10);
    let r = w.go(
        "worker",
        RENEW,
        w.exec("urn:x:work:1", vec![("leaseSeconds", n(60))]),
    );
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    // Unknown lease, stale epoch, not the owner, stale revision.
    let mut p = w.exec("urn:x:work:1", vec![]);
    p.insert("executionLeaseId", s("lease:execution:unknown"));
    let r = w.go("worker", RENEW, p);
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    let mut p = w.exec("urn:x:work:1", vec![]);
    p.insert("ownershipEpoch", n(9));
    let r = w.go("worker", RENEW, p);
    refused(&w, &r, ErrorCode::WorkStaleOwnership, seq);
    let r = w.go("worker2", RENEW, w.exec("urn:x:work:1", vec![]));
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let p = w.exec("urn:x:work:1", vec![]);
    let r = w.go_with("worker", RENEW, p, |e| e.expected_revision = Some(1));
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // After expiry the lease cannot be renewed. The ownership lease was replaced by the
    // renewal, so it has run out too.
    w.advance(600);
    let r = w.go("worker", RENEW, w.exec("urn:x:work:1", vec![]));
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// Checkpoint, Session replacement
// ---------------------------------------------------------------------------------------------

#[test]
fn checkpoint_releases_the_lease_and_requeues() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    w.start("urn:x:work:1").unwrap();
    let first = w.lease("urn:x:work:1");
    w.advance(30);
    let rev = w.work("urn:x:work:1").revision;
    let cp = checkpoint("parse", w.now);
    let p = w.exec(
        "urn:x:work:1",
        vec![("checkpoint", cp.clone()), ("resumeWithinSeconds", n(120))],
    );
    let e = one(w.go("worker", "work.checkpoint", p));
    assert_eq!(st(&e, "/kind"), "work.checkpointed");
    assert_eq!(st(&e, "/workItemId"), "urn:x:work:1");
    assert_eq!(st(&e, "/payload/checkpoint/phase"), "parse");
    assert_eq!(
        at(&e, "/payload/checkpoint/stateArtifactHash"),
        &Value::Null
    );
    assert_eq!(
        st(&e, "/payload/ownershipLeaseExpiresAt"),
        w.now.plus_seconds(120).format()
    );
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Queued);
    assert_eq!(item.execution_lease_id, None);
    assert_eq!(item.execution_lease_expires_at, None);
    assert_eq!(item.checkpoints.len(), 1);
    assert_eq!(item.revision, rev + 1);
    let lease = &w.h.authority.state.leases[&first];
    assert_eq!(lease.state, "released");
    assert_eq!(lease.closed_at, Some(w.now));
    assert_eq!(
        lease.closure_reason.as_deref(),
        Some("Worker checkpointed and released its execution slot")
    );
    // §10.2: a `queued` item does not checkpoint.
    let seq = w.seq();
    let p = payload(vec![
        ("workItemId", s("urn:x:work:1")),
        ("ownershipEpoch", n(1)),
        ("executionLeaseId", s(&first)),
        ("checkpoint", cp.clone()),
    ]);
    let r = w.go("worker", "work.checkpoint", p);
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    // Resume: a new lease; the old Lease ID is now stale.
    w.start("urn:x:work:1").unwrap();
    let second = w.lease("urn:x:work:1");
    assert_ne!(first, second);
    let mut p = w.exec("urn:x:work:1", vec![("checkpoint", cp.clone())]);
    p.insert("executionLeaseId", s(&first));
    let seq = w.seq();
    let r = w.go("worker", "work.checkpoint", p);
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    // Unknown lease, stale epoch, missing checkpoint, stale revision.
    let mut p = w.exec("urn:x:work:1", vec![("checkpoint", cp.clone())]);
    p.insert("executionLeaseId", s("lease:execution:unknown"));
    let r = w.go("worker", "work.checkpoint", p);
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    let mut p = w.exec("urn:x:work:1", vec![("checkpoint", cp.clone())]);
    p.insert("ownershipEpoch", n(2));
    let r = w.go("worker", "work.checkpoint", p);
    refused(&w, &r, ErrorCode::WorkStaleOwnership, seq);
    let r = w.go("worker", "work.checkpoint", w.exec("urn:x:work:1", vec![]));
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let p = w.exec("urn:x:work:1", vec![("checkpoint", cp.clone())]);
    let r = w.go_with("worker", "work.checkpoint", p, |e| {
        e.expected_revision = Some(0)
    });
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Once the lease (and with it the ownership lease it extended) has run out.
    w.advance(301);
    let p = w.exec("urn:x:work:1", vec![("checkpoint", cp)]);
    let r = w.go("worker", "work.checkpoint", p);
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    w.assert_replays();
}

#[test]
fn session_replacement_fences_the_old_runtime() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    w.start("urn:x:work:1").unwrap();
    let old_lease = w.lease("urn:x:work:1");
    let old_env = w.env("worker");
    let old_payload = w.exec("urn:x:work:1", vec![("checkpoint", checkpoint("a", w.now))]);
    w.advance(10);
    w.session_open("worker");
    assert_eq!(w.work("urn:x:work:1").status, WorkItemState::Queued);
    assert_eq!(w.h.authority.state.leases[&old_lease].state, "revoked");
    let seq = w.seq();
    // The old runtime, with its old Session Epoch and lease.
    let r = w.sub(
        "worker",
        "work.checkpoint",
        old_env.clone(),
        old_payload.clone(),
    );
    refused(&w, &r, ErrorCode::AuthStaleSession, seq);
    let r = w.sub(
        "worker",
        RENEW,
        old_env,
        without(old_payload.clone(), "checkpoint"),
    );
    refused(&w, &r, ErrorCode::AuthStaleSession, seq);
    // The new runtime cannot use the revoked lease: the item is queued again.
    let r = w.go("worker", "work.checkpoint", old_payload);
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    // It restarts under a new lease bound to Session Epoch 2.
    let e = one(w.start("urn:x:work:1"));
    assert_eq!(num(&e, "/payload/executionLease/sessionEpoch"), 2);
    assert_ne!(st(&e, "/payload/executionLease/leaseId"), old_lease);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// Block and unblock
// ---------------------------------------------------------------------------------------------

#[test]
fn block_and_unblock() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    // §10.2: a `queued` item cannot block; an `active` one cannot be unblocked.
    let seq = w.seq();
    w.start("urn:x:work:1").unwrap();
    let lease = w.lease("urn:x:work:1");
    let seq2 = w.seq();
    assert_eq!(seq2, seq + 1);
    let r = w.go(
        "coord",
        "work.unblock",
        payload(vec![("workItemId", s("urn:x:work:1"))]),
    );
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq2);
    let p = w.exec(
        "urn:x:work:1",
        vec![
            ("reason", s("needs credentials")),
            ("checkpoint", checkpoint("waiting", w.now)),
            ("blockedLeaseSeconds", n(200)),
        ],
    );
    // Missing reason.
    let r = w.go("worker", "work.block", without(p.clone(), "reason"));
    refused(&w, &r, ErrorCode::InvalidCommand, seq2);
    let e = one(w.go("worker", "work.block", p.clone()));
    assert_eq!(st(&e, "/kind"), "work.blocked");
    assert_eq!(st(&e, "/payload/reason"), "needs credentials");
    assert_eq!(
        st(&e, "/payload/ownershipLeaseExpiresAt"),
        w.now.plus_seconds(200).format()
    );
    assert!(e.pointer("/payload/checkpoint").is_none());
    // The checkpoint travels as a replay note.
    assert_eq!(
        st(
            &e,
            &format!(
                "/extensions/{}/data/checkpoint/phase",
                NOTES.replace('/', "~1")
            )
        ),
        "waiting"
    );
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Blocked);
    assert_eq!(item.blocker.as_deref(), Some("needs credentials"));
    assert_eq!(item.checkpoints.len(), 1);
    assert_eq!(w.h.authority.state.leases[&lease].state, "released");
    // A blocked item neither blocks again, starts, nor submits.
    let seq = w.seq();
    let r = w.go("worker", "work.block", p.clone());
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    let r = w.start("urn:x:work:1");
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    // Unblock guards: not the Coordinator, stale Coordinator Epoch, stale revision.
    let up = payload(vec![("workItemId", s("urn:x:work:1"))]);
    let r = w.go("worker", "work.unblock", up.clone());
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.go_with("coord", "work.unblock", up.clone(), |e| {
        e.coordinator_epoch = Some(9)
    });
    refused(&w, &r, ErrorCode::AuthStaleCoordinator, seq);
    let r = w.go_with("coord", "work.unblock", up.clone(), |e| {
        e.expected_revision = Some(1)
    });
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // With the owner's lease live: back to `queued`, ownership kept.
    let e = one(w.go("coord", "work.unblock", up.clone()));
    assert_eq!(st(&e, "/kind"), "work.unblocked");
    assert_eq!(st(&e, "/payload/status"), "queued");
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Queued);
    assert_eq!(item.blocker, None);
    assert_eq!(item.ownership_epoch, 1);
    // Block again and let the blocked lease run out: unblock re-opens with the owner fenced.
    w.start("urn:x:work:1").unwrap();
    let p = w.exec(
        "urn:x:work:1",
        vec![
            ("reason", s("again")),
            ("checkpoint", checkpoint("waiting", w.now)),
            ("blockedLeaseSeconds", n(60)),
        ],
    );
    w.go("worker", "work.block", p).unwrap();
    w.advance(61);
    let e = one(w.go("coord", "work.unblock", up));
    assert_eq!(st(&e, "/payload/status"), "open");
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Open);
    assert_eq!(item.assignee_id, None);
    assert_eq!(item.ownership_epoch, 2);
    assert_eq!(item.ownership_lease_expires_at, None);
    assert_eq!(item.checkpoints.len(), 2);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// Artifacts, submission, acceptance
// ---------------------------------------------------------------------------------------------

#[test]
fn artifact_publish_verifies_the_producer_signature_and_provenance() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    w.queued("urn:x:work:2", vec![]);
    w.start("urn:x:work:1").unwrap();
    let rev = w.work("urn:x:work:1").revision;
    let e = one(w.publish("urn:x:work:1", "urn:x:artifact:a", 'a'));
    assert_eq!(st(&e, "/kind"), "artifact.published");
    assert_eq!(st(&e, "/payload/artifact/id"), "urn:x:artifact:a");
    assert_eq!(at(&e, "/payload/artifact/schemaUri"), &Value::Null);
    assert_eq!(
        at(&e, "/payload/artifact/sourceArtifactHashes"),
        &Value::Array(vec![])
    );
    // The stored manifest still verifies against the producer's card key.
    let card_key = w.h.authority.state.cards[&w.h.id("worker")]
        .public_key
        .clone();
    let stored = w.h.authority.state.artifacts["urn:x:artifact:a"].clone();
    assert!(wasm_core::authority::handlers::artifact::manifest_signature_valid(&stored, &card_key));
    let item = w.work("urn:x:work:1");
    assert_eq!(item.artifact_ids, ["urn:x:artifact:a"]);
    assert_eq!(item.revision, rev + 1);

    let seq = w.seq();
    let publish_with = |w: &mut World, m: Object| {
        let p = without(
            w.exec("urn:x:work:1", vec![("artifact", Value::Object(m))]),
            "workItemId",
        );
        w.go("worker", "artifact.publish", p)
    };
    // D-24: expectedRevision, when sent, is compared with the WorkItem revision.
    let m = w.manifest("urn:x:work:1", "urn:x:artifact:b", 'b', vec![]);
    let p = without(
        w.exec("urn:x:work:1", vec![("artifact", Value::Object(m))]),
        "workItemId",
    );
    let r = w.go_with("worker", "artifact.publish", p, |e| {
        e.expected_revision = Some(1)
    });
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // A tampered manifest: the signature no longer verifies.
    let mut m = w.manifest("urn:x:work:1", "urn:x:artifact:b", 'b', vec![]);
    m.insert("mediaType", s("text/html"));
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // Signed by another key.
    let m = sign_manifest(
        w.manifest("urn:x:work:1", "urn:x:artifact:b", 'b', vec![]),
        &w.h.principals["worker2"].seed,
    );
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // Producer is not the actor.
    let m = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:b",
        'b',
        vec![("producingAgentId", s(&w.h.id("worker2")))],
    );
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // Card version other than the pinned one.
    let m = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:b",
        'b',
        vec![("agentCardVersion", n(2))],
    );
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Another Group; a future creation time; a duplicate id; a bad hash.
    let m = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:b",
        'b',
        vec![("groupId", s("urn:x:group:other"))],
    );
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let future = w.now.plus_seconds(60).format();
    let m = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:b",
        'b',
        vec![("createdAt", s(&future))],
    );
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let m = w.manifest("urn:x:work:1", "urn:x:artifact:a", 'b', vec![]);
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let m = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:b",
        'b',
        vec![("contentHash", s("sha256:xyz"))],
    );
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Provenance: an unknown source; a classification downgrade (D-6: AUTH_FORBIDDEN).
    let unknown = format!("sha256:{}", "e".repeat(64));
    let m = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:b",
        'b',
        vec![("sourceArtifactHashes", arr(&[&unknown]))],
    );
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let secret = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:c",
        'c',
        vec![("dataClassification", s("confidential"))],
    );
    publish_with(&mut w, secret).unwrap();
    let seq = w.seq();
    let source = format!("sha256:{}", "c".repeat(64));
    let m = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:d",
        'd',
        vec![("sourceArtifactHashes", arr(&[&source]))],
    );
    let r = publish_with(&mut w, m);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let m = w.manifest(
        "urn:x:work:1",
        "urn:x:artifact:d",
        'd',
        vec![
            ("sourceArtifactHashes", arr(&[&source])),
            ("dataClassification", s("restricted")),
        ],
    );
    publish_with(&mut w, m).unwrap();
    // Not active (work:2 is queued): no lease to publish under.
    let seq = w.seq();
    let m = w.manifest("urn:x:work:2", "urn:x:artifact:e", 'f', vec![]);
    let p = payload(vec![
        ("artifact", Value::Object(m)),
        ("ownershipEpoch", n(1)),
        ("executionLeaseId", s(&w.lease("urn:x:work:1"))),
    ]);
    let r = w.go("worker", "artifact.publish", p);
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    w.assert_replays();
}

#[test]
fn submit_then_accept_result_needs_successful_evidence() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    w.queued("urn:x:work:2", vec![]);
    w.start("urn:x:work:1").unwrap();
    w.start("urn:x:work:2").unwrap();
    w.publish("urn:x:work:1", "urn:x:artifact:b", 'b').unwrap();
    w.publish("urn:x:work:1", "urn:x:artifact:a", 'a').unwrap();
    w.publish("urn:x:work:2", "urn:x:artifact:other", 'c')
        .unwrap();
    let lease = w.lease("urn:x:work:1");
    let seq = w.seq();
    // §10.2: a `submitted` item only; accept_result from `active` fails.
    let acc = |ok: bool| {
        payload(vec![
            ("workItemId", s("urn:x:work:1")),
            ("evidence", evidence(ok)),
        ])
    };
    let r = w.go("coord", "work.accept_result", acc(true));
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    // Submit guards: another WorkItem's Artifact, an unknown one, no Evidence, no Artifacts.
    let sub = |w: &World, ids: &[&str], ev: Value| {
        w.exec(
            "urn:x:work:1",
            vec![("artifactIds", arr(ids)), ("evidence", ev)],
        )
    };
    let r = w.go(
        "worker",
        "work.submit",
        sub(&w, &["urn:x:artifact:other"], evidence(true)),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go(
        "worker",
        "work.submit",
        sub(&w, &["urn:x:artifact:none"], evidence(true)),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go(
        "worker",
        "work.submit",
        sub(&w, &["urn:x:artifact:a"], Value::Array(vec![])),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go("worker", "work.submit", sub(&w, &[], evidence(true)));
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go(
        "worker2",
        "work.submit",
        sub(&w, &["urn:x:artifact:a"], evidence(true)),
    );
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let p = sub(&w, &["urn:x:artifact:a"], evidence(true));
    let r = w.go_with("worker", "work.submit", p, |e| {
        e.expected_revision = Some(2)
    });
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Submitted: sorted, deduplicated Artifacts; Evidence with every member.
    let p = sub(
        &w,
        &["urn:x:artifact:b", "urn:x:artifact:a", "urn:x:artifact:b"],
        evidence(true),
    );
    let e = one(w.go("worker", "work.submit", p));
    assert_eq!(st(&e, "/kind"), "work.submitted");
    assert_eq!(
        at(&e, "/payload/artifactIds"),
        &arr(&["urn:x:artifact:a", "urn:x:artifact:b"])
    );
    assert_eq!(at(&e, "/payload/evidence/0/artifactHash"), &Value::Null);
    assert_eq!(at(&e, "/payload/evidence/0/success"), &Value::Bool(true));
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Submitted);
    assert_eq!(item.submission_evidence.len(), 1);
    assert_eq!(item.execution_lease_id, None);
    assert_eq!(w.h.authority.state.leases[&lease].state, "released");
    // Acceptance: unsuccessful evidence is INVALID_COMMAND (D-6); the Coordinator Epoch is
    // required; stale revision; not the Coordinator.
    let seq = w.seq();
    let r = w.go("coord", "work.accept_result", acc(false));
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let mixed = payload(vec![
        ("workItemId", s("urn:x:work:1")),
        (
            "evidence",
            Value::Array(vec![
                at(&evidence(true), "/0").clone(),
                at(&evidence(false), "/0").clone(),
            ]),
        ),
    ]);
    let r = w.go("coord", "work.accept_result", mixed);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go(
        "coord",
        "work.accept_result",
        payload(vec![("workItemId", s("urn:x:work:1"))]),
    );
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go_with("coord", "work.accept_result", acc(true), |e| {
        e.coordinator_epoch = Some(9)
    });
    refused(&w, &r, ErrorCode::AuthStaleCoordinator, seq);
    // Missing entirely, the schema stage refuses it (a Coordinator-only kind).
    let r = w.go_with("coord", "work.accept_result", acc(true), |e| {
        e.coordinator_epoch = None
    });
    refused(&w, &r, ErrorCode::SchemaValidationFailed, seq);
    let r = w.go_with("worker", "work.accept_result", acc(true), |e| {
        e.coordinator_epoch = Some(1)
    });
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.go_with("coord", "work.accept_result", acc(true), |e| {
        e.expected_revision = Some(1)
    });
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    let mission_rev = w.h.authority.state.missions[M].revision;
    let rev = w.work("urn:x:work:1").revision;
    let e = one(w.go_with("coord", "work.accept_result", acc(true), |e| {
        e.expected_revision = Some(rev)
    }));
    assert_eq!(st(&e, "/kind"), "work.result.accepted");
    assert_eq!(st(&e, "/workItemId"), "urn:x:work:1");
    assert_eq!(st(&e, "/payload/evidence/0/kind"), "deterministic-tests");
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Verified);
    assert_eq!(item.ownership_lease_expires_at, None);
    assert_eq!(item.verification_evidence.len(), 1);
    assert_eq!(w.h.authority.state.missions[M].revision, mission_rev + 1);
    // `verified` is terminal: no fail, cancel, second acceptance.
    let seq = w.seq();
    let r = w.go("coord", "work.accept_result", acc(true));
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    let f = payload(vec![
        ("workItemId", s("urn:x:work:1")),
        ("reason", s("late")),
    ]);
    let r = w.go("coord", "work.fail", f.clone());
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    let r = w.go("owner", "work.cancel", f);
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// Fail and cancel
// ---------------------------------------------------------------------------------------------

#[test]
fn fail_by_worker_and_coordinator() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    w.start("urn:x:work:1").unwrap();
    let lease = w.lease("urn:x:work:1");
    let seq = w.seq();
    let reason = ("reason", s("compiler crashed"));
    // A Worker must send both ownershipEpoch and executionLeaseId.
    let p = without(
        w.exec("urn:x:work:1", vec![reason.clone()]),
        "executionLeaseId",
    );
    let r = w.go("worker", "work.fail", p);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let p = payload(vec![("workItemId", s("urn:x:work:1")), reason.clone()]);
    let r = w.go("worker", "work.fail", p);
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    // Not the owner; a stale lease.
    let r = w.go(
        "worker2",
        "work.fail",
        w.exec("urn:x:work:1", vec![reason.clone()]),
    );
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let mut p = w.exec("urn:x:work:1", vec![reason.clone()]);
    p.insert("executionLeaseId", s("lease:execution:old"));
    let r = w.go("worker", "work.fail", p);
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    // D-24: expectedRevision, when sent, is compared with the WorkItem revision.
    let p = w.exec("urn:x:work:1", vec![reason.clone()]);
    let r = w.go_with("worker", "work.fail", p, |e| e.expected_revision = Some(1));
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    let mission_rev = w.h.authority.state.missions[M].revision;
    let e = one(w.go(
        "worker",
        "work.fail",
        w.exec("urn:x:work:1", vec![reason.clone()]),
    ));
    assert_eq!(st(&e, "/kind"), "work.failed");
    assert_eq!(st(&e, "/payload/reason"), "compiler crashed");
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Failed);
    assert_eq!(item.failure_reason.as_deref(), Some("compiler crashed"));
    assert_eq!(item.assignee_id.as_deref(), Some(w.h.id("worker").as_str()));
    assert_eq!(item.ownership_lease_expires_at, None);
    assert_eq!(w.h.authority.state.leases[&lease].state, "revoked");
    assert_eq!(w.h.authority.state.missions[M].revision, mission_rev + 1);
    // `failed` does not fail again; a new offer (by work_plan) reopens it.
    let seq = w.seq();
    let p = payload(vec![("workItemId", s("urn:x:work:1")), reason.clone()]);
    let r = w.go("coord", "work.fail", p);
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    // The Coordinator fails from `open`, `offered`, `queued` and `blocked`; a Worker cannot
    // fail a `queued` item.
    w.authorize("urn:x:work:open", vec![], vec![]);
    w.queued("urn:x:work:q", vec![]);
    let seq = w.seq();
    let p = payload(vec![
        ("workItemId", s("urn:x:work:q")),
        reason.clone(),
        ("ownershipEpoch", n(1)),
        ("executionLeaseId", s("lease:execution:none")),
    ]);
    let r = w.go("worker", "work.fail", p);
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    let p = payload(vec![("workItemId", s("urn:x:work:q")), reason.clone()]);
    let r = w.go_with("coord", "work.fail", p.clone(), |e| {
        e.coordinator_epoch = Some(3)
    });
    refused(&w, &r, ErrorCode::AuthStaleCoordinator, seq);
    for id in ["urn:x:work:open", "urn:x:work:q"] {
        let p = payload(vec![("workItemId", s(id)), reason.clone()]);
        let e = one(w.go("coord", "work.fail", p));
        assert_eq!(st(&e, "/kind"), "work.failed");
        assert_eq!(w.work(id).status, WorkItemState::Failed);
    }
    w.assert_replays();
}

#[test]
fn cancel_fences_the_owner() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    w.start("urn:x:work:1").unwrap();
    let lease = w.lease("urn:x:work:1");
    let seq = w.seq();
    let p = payload(vec![
        ("workItemId", s("urn:x:work:1")),
        ("reason", s("scope cut")),
    ]);
    // A Worker cannot cancel; a missing reason; a stale revision.
    let r = w.go("worker", "work.cancel", p.clone());
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.go("owner", "work.cancel", without(p.clone(), "reason"));
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let r = w.go_with("owner", "work.cancel", p.clone(), |e| {
        e.expected_revision = Some(1)
    });
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    let mission_rev = w.h.authority.state.missions[M].revision;
    let e = one(w.go("owner", "work.cancel", p.clone()));
    assert_eq!(st(&e, "/kind"), "work.cancelled");
    assert_eq!(st(&e, "/payload/reason"), "scope cut");
    let item = w.work("urn:x:work:1");
    assert_eq!(item.status, WorkItemState::Cancelled);
    assert_eq!(item.assignee_id, None);
    assert_eq!(item.ownership_epoch, 2);
    assert_eq!(item.execution_lease_id, None);
    let l = &w.h.authority.state.leases[&lease];
    assert_eq!(l.state, "revoked");
    assert_eq!(
        l.closure_reason.as_deref(),
        Some("WorkItem ownership was fenced")
    );
    assert_eq!(w.h.authority.state.missions[M].revision, mission_rev + 1);
    // `cancelled` is terminal.
    let seq = w.seq();
    let r = w.go("coord", "work.cancel", p);
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    // The Coordinator cancels an open item.
    w.authorize("urn:x:work:2", vec![], vec![]);
    let p = payload(vec![
        ("workItemId", s("urn:x:work:2")),
        ("reason", s("dup")),
    ]);
    assert_eq!(
        st(&one(w.go("coord", "work.cancel", p)), "/kind"),
        "work.cancelled"
    );
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// Resource usage and the ledger
// ---------------------------------------------------------------------------------------------

fn accounts(w: &World) -> Vec<(String, Account)> {
    w.h.authority
        .state
        .accounts
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn usage_record_charges_the_whole_ancestry_atomically() {
    let mut w = World::new();
    w.queued("urn:x:work:p", vec![]);
    w.authorize(
        "urn:x:work:c",
        vec![(
            "budget",
            obj(vec![("modelTokens", n(600)), ("toolCalls", n(4))]),
        )],
        vec![("parentWorkItemId", s("urn:x:work:p"))],
    );
    w.offer_accept("urn:x:work:c", "worker");
    w.start("urn:x:work:p").unwrap();
    w.start("urn:x:work:c").unwrap();
    let rev = w.work("urn:x:work:p").revision;
    let mission_rev = w.h.authority.state.missions[M].revision;
    let rec = |w: &World, id: &str, u: Value| w.exec(id, vec![("usageDelta", u)]);
    let e = one(w.go(
        "worker",
        USAGE,
        rec(
            &w,
            "urn:x:work:p",
            usage(vec![("modelTokens", 500), ("toolCalls", 2)]),
        ),
    ));
    assert_eq!(st(&e, "/kind"), USAGE_RECORDED);
    assert_eq!(st(&e, "/workItemId"), "urn:x:work:p");
    assert_eq!(num(&e, "/payload/ownershipEpoch"), 1);
    assert_eq!(st(&e, "/payload/executionLeaseId"), w.lease("urn:x:work:p"));
    assert_eq!(num(&e, "/payload/usageDelta/modelTokens"), 500);
    assert_eq!(num(&e, "/payload/usageDelta/externalActions"), 0);
    assert_eq!(num(&e, "/payload/cumulativeUsage/modelTokens"), 500);
    assert_eq!(num(&e, "/payload/cumulativeUsage/toolCalls"), 2);
    // Remaining: the minimum along WorkItem and Mission; null where no limit is granted.
    assert_eq!(num(&e, "/payload/remainingBudget/modelTokens"), 500);
    assert_eq!(num(&e, "/payload/remainingBudget/toolCalls"), 8);
    assert_eq!(num(&e, "/payload/remainingBudget/computeSeconds"), 100);
    assert_eq!(
        at(&e, "/payload/remainingBudget/financialMicrounits"),
        &Value::Null
    );
    assert!(e.pointer("/payload/offlineReconciliation").is_none());
    // No revision moves.
    assert_eq!(w.work("urn:x:work:p").revision, rev);
    assert_eq!(w.h.authority.state.missions[M].revision, mission_rev);
    // The child's usage is added to the parent WorkItem and the Mission; its remaining budget
    // is bounded by the parent's.
    let e = one(w.go(
        "worker",
        USAGE,
        rec(&w, "urn:x:work:c", usage(vec![("modelTokens", 400)])),
    ));
    assert_eq!(num(&e, "/payload/cumulativeUsage/modelTokens"), 400);
    assert_eq!(num(&e, "/payload/remainingBudget/modelTokens"), 100);
    assert_eq!(
        at(&e, "/payload/remainingBudget/computeSeconds"),
        &Value::Null
    );
    let acc = &w.h.authority.state.accounts;
    assert_eq!(acc["urn:x:work:p"].total[1], 900);
    assert_eq!(acc["urn:x:work:p"].direct[1], 500);
    assert_eq!(acc["urn:x:work:c"].total[1], 400);
    assert_eq!(acc[M].total[1], 900);
    assert_eq!(acc[M].total[2], 2);

    // Overflow in ONE dimension rejects the whole charge: nothing appended, every account
    // unchanged.
    let before = accounts(&w);
    let seq = w.seq();
    let over = [
        // The WorkItem's own limit, with another dimension that would fit.
        (
            "urn:x:work:p",
            usage(vec![("toolCalls", 1), ("modelTokens", 101)]),
        ),
        // A dimension the contract does not grant (null).
        (
            "urn:x:work:p",
            usage(vec![("toolCalls", 1), ("wallClockSeconds", 1)]),
        ),
        // The child fits its own limit (550 <= 600) but its parent does not (1 050 > 1 000).
        ("urn:x:work:c", usage(vec![("modelTokens", 150)])),
        // The child's own limit (4 tool calls).
        ("urn:x:work:c", usage(vec![("toolCalls", 5)])),
    ];
    for (id, u) in over {
        let r = w.go("worker", USAGE, rec(&w, id, u));
        refused(&w, &r, ErrorCode::BudgetExceeded, seq);
        assert_eq!(accounts(&w), before);
    }
    // D-24: expectedRevision, when sent, is compared with the WorkItem revision.
    let p = rec(&w, "urn:x:work:p", usage(vec![("toolCalls", 1)]));
    let r = w.go_with("worker", USAGE, p, |e| e.expected_revision = Some(1));
    refused(&w, &r, ErrorCode::RevisionConflict, seq);
    // Payload and lease guards.
    let r = w.go("worker", USAGE, rec(&w, "urn:x:work:p", usage(vec![])));
    refused(&w, &r, ErrorCode::InvalidCommand, seq);
    let mut p = rec(&w, "urn:x:work:p", usage(vec![("toolCalls", 1)]));
    p.insert("executionLeaseId", s("lease:execution:unknown"));
    let r = w.go("worker", USAGE, p);
    refused(&w, &r, ErrorCode::WorkLeaseExpired, seq);
    let mut p = rec(&w, "urn:x:work:p", usage(vec![("toolCalls", 1)]));
    p.insert("executionLeaseId", s(&w.lease("urn:x:work:c")));
    let r = w.go("worker", USAGE, p);
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let mut p = rec(&w, "urn:x:work:p", usage(vec![("toolCalls", 1)]));
    p.insert("ownershipEpoch", n(2));
    let r = w.go("worker", USAGE, p);
    refused(&w, &r, ErrorCode::WorkStaleOwnership, seq);
    let r = w.go(
        "worker2",
        USAGE,
        rec(&w, "urn:x:work:p", usage(vec![("toolCalls", 1)])),
    );
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    let r = w.go(
        "owner",
        USAGE,
        rec(&w, "urn:x:work:p", usage(vec![("toolCalls", 1)])),
    );
    refused(&w, &r, ErrorCode::AuthForbidden, seq);
    // An Organization service may charge a closed lease.
    let lease = w.lease("urn:x:work:p");
    let p = w.exec("urn:x:work:p", vec![("checkpoint", checkpoint("x", w.now))]);
    w.go("worker", "work.checkpoint", p).unwrap();
    let p = payload(vec![
        ("workItemId", s("urn:x:work:p")),
        ("ownershipEpoch", n(1)),
        ("executionLeaseId", s(&lease)),
        ("usageDelta", usage(vec![("computeSeconds", 7)])),
    ]);
    let env = kit::in_group(G);
    let seq = w.seq();
    let r = w.sub("worker", USAGE, w.env("worker"), p.clone());
    refused(&w, &r, ErrorCode::InvalidStateTransition, seq);
    let e = one(w.sub("group-gateway", USAGE, env, p));
    assert_eq!(num(&e, "/payload/cumulativeUsage/computeSeconds"), 7);
    assert_eq!(w.h.authority.state.accounts[M].total[3], 7);
    w.assert_replays();
}

/// A tiny deterministic PRNG (SplitMix64), so the property test needs no dependency.
#[test]
fn random_usage_never_exceeds_a_limit_and_totals_add_up() {
    const DIMS: [&str; 6] = [
        "financialMicrounits",
        "modelTokens",
        "toolCalls",
        "computeSeconds",
        "wallClockSeconds",
        "externalActions",
    ];
    for seed in 0..3u64 {
        let mut w = World::new();
        w.queued("urn:x:work:p", vec![]);
        w.authorize(
            "urn:x:work:c",
            vec![(
                "budget",
                obj(vec![
                    ("modelTokens", n(400)),
                    ("toolCalls", n(6)),
                    ("computeSeconds", n(50)),
                ]),
            )],
            vec![("parentWorkItemId", s("urn:x:work:p"))],
        );
        w.offer_accept("urn:x:work:c", "worker");
        w.start("urn:x:work:p").unwrap();
        w.start("urn:x:work:c").unwrap();
        let items = ["urn:x:work:p", "urn:x:work:c"];
        let leases = [w.lease(items[0]), w.lease(items[1])];
        let mut sums = [[0u64; 6]; 2];
        let mut rng = Rng(seed);
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..250 {
            let which = rng.below(2) as usize;
            let mut delta = [0u64; 6];
            // Mostly granted dimensions, sometimes an ungranted one.
            for (i, d) in delta.iter_mut().enumerate() {
                let max = match i {
                    1 => 90,
                    2 => 3,
                    3 => 12,
                    _ => u64::from(rng.below(40) == 0),
                };
                if rng.below(2) == 0 {
                    *d = rng.below(max + 1);
                }
            }
            if delta.iter().all(|d| *d == 0) {
                delta[1] = 1;
            }
            let u = obj(DIMS.iter().zip(delta).map(|(k, v)| (*k, n(v))).collect());
            let p = payload(vec![
                ("workItemId", s(items[which])),
                ("ownershipEpoch", n(1)),
                ("executionLeaseId", s(&leases[which])),
                ("usageDelta", u),
            ]);
            let before = accounts(&w);
            let seq = w.seq();
            let env = kit::in_group(G);
            match w.sub("group-gateway", USAGE, env, p) {
                Ok(_) => {
                    accepted += 1;
                    for (s, d) in sums[which].iter_mut().zip(delta) {
                        *s += d;
                    }
                }
                Err(e) => {
                    assert_eq!(e.code, ErrorCode::BudgetExceeded, "{e:?}");
                    assert_eq!(w.seq(), seq);
                    assert_eq!(accounts(&w), before);
                    rejected += 1;
                }
            }
            let acc = &w.h.authority.state.accounts;
            // No account over its limit; nothing in an ungranted dimension.
            for (id, a) in acc.iter() {
                for i in 0..6 {
                    match a.limit.get(i) {
                        Some(cap) => assert!(a.total[i] <= cap, "{id} {} over", DIMS[i]),
                        None => assert_eq!(a.total[i], 0, "{id} {} not granted", DIMS[i]),
                    }
                }
            }
            // Totals are the sums of the accepted deltas, up the tree.
            let (p, c) = (&acc[items[0]], &acc[items[1]]);
            for i in 0..6 {
                assert_eq!(c.direct[i], sums[1][i]);
                assert_eq!(c.total[i], sums[1][i]);
                assert_eq!(p.direct[i], sums[0][i]);
                assert_eq!(p.total[i], sums[0][i] + sums[1][i]);
                assert_eq!(acc[M].total[i], sums[0][i] + sums[1][i]);
            }
        }
        assert!(accepted > 10 && rejected > 10, "{accepted} {rejected}");
        w.assert_replays();
    }
}

// ---------------------------------------------------------------------------------------------
// Offline reconciliation (§11.5; payloads.md §9.3)
// ---------------------------------------------------------------------------------------------

struct Offline {
    w: World,
    lease: String,
    lease_expires: Micros,
    started: Micros,
}

/// The worker started at t0 + 0 (lease 300 s, Session 1), lost its connection at +60, and
/// reconnected at +120 (Session 2, lease revoked), then restarted the WorkItem.
fn offline_world() -> Offline {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    let started = w.now;
    w.start("urn:x:work:1").unwrap();
    let lease = w.lease("urn:x:work:1");
    let lease_expires = w.work("urn:x:work:1").execution_lease_expires_at.unwrap();
    w.advance(120);
    w.session_open("worker");
    w.start("urn:x:work:1").unwrap();
    w.advance(5);
    Offline {
        w,
        lease,
        lease_expires,
        started,
    }
}

impl Offline {
    fn binding(&self, over: Vec<(&'static str, Value)>) -> Value {
        let mut b = payload(vec![
            ("agentId", s(&self.w.h.id("worker"))),
            ("groupId", s(G)),
            ("workItemId", s("urn:x:work:1")),
            ("sessionEpoch", n(1)),
            ("ownershipEpoch", n(1)),
            ("executionLeaseId", s(&self.lease)),
            ("disconnectedAt", s(&self.started.plus_seconds(60).format())),
            ("bufferedAt", s(&self.started.plus_seconds(90).format())),
            ("graceDeadline", s(&self.started.plus_seconds(200).format())),
            ("executionLeaseExpiresAt", s(&self.lease_expires.format())),
            (
                "resourceUsageDelta",
                usage(vec![("modelTokens", 50), ("toolCalls", 1)]),
            ),
        ]);
        for (k, v) in over {
            b.insert(k, v);
        }
        Value::Object(b)
    }

    fn checkpoint(
        &mut self,
        binding: Value,
        version: &str,
        critical: bool,
    ) -> Result<Submitted, Rejection> {
        let ext = obj(vec![(
            OFFLINE,
            obj(vec![
                ("version", s(version)),
                ("critical", Value::Bool(critical)),
                ("data", binding),
            ]),
        )]);
        let p = self.w.exec(
            "urn:x:work:1",
            vec![(
                "checkpoint",
                checkpoint("offline", self.started.plus_seconds(90)),
            )],
        );
        self.w
            .go_with("worker", "work.checkpoint", p, |e| e.extensions = Some(ext))
    }
}

#[test]
fn offline_progress_reconciles_usage_before_the_checkpoint() {
    let mut o = offline_world();
    let e = events(o.checkpoint(o.binding(vec![]), "0.1.0", true));
    assert_eq!(e.len(), 2);
    assert_eq!(st(&e[0], "/kind"), USAGE_RECORDED);
    assert_eq!(st(&e[1], "/kind"), "work.checkpointed");
    assert_eq!(num(&e[1], "/sequence"), num(&e[0], "/sequence") + 1);
    assert_eq!(st(&e[0], "/payload/executionLeaseId"), o.lease);
    assert_eq!(num(&e[0], "/payload/usageDelta/modelTokens"), 50);
    assert_eq!(num(&e[0], "/payload/cumulativeUsage/modelTokens"), 50);
    let rec = at(&e[0], "/payload/offlineReconciliation");
    assert_eq!(num(rec, "/executionSessionEpoch"), 1);
    assert_eq!(num(rec, "/reconciliationSessionEpoch"), 2);
    assert_eq!(st(rec, "/reconciledAt"), o.w.now.format());
    assert_eq!(st(rec, "/bufferedAt"), o.started.plus_seconds(90).format());
    assert_eq!(st(rec, "/progressActionId"), st(&e[1], "/cause/id"));
    // Both Events carry the extension.
    let key = format!("/extensions/{}", OFFLINE.replace('/', "~1"));
    assert!(e[0].pointer(&key).is_some() && e[1].pointer(&key).is_some());
    assert_eq!(o.w.h.authority.state.accounts["urn:x:work:1"].total[1], 50);
    assert_eq!(o.w.h.authority.state.accounts[M].total[2], 1);
    assert_eq!(o.w.work("urn:x:work:1").status, WorkItemState::Queued);
    o.w.assert_replays();
}

#[test]
fn offline_progress_without_usage_appends_only_the_checkpoint() {
    let mut o = offline_world();
    let b = o.binding(vec![("resourceUsageDelta", usage(vec![]))]);
    let e = events(o.checkpoint(b, "0.1.0", true));
    assert_eq!(e.len(), 1);
    assert_eq!(st(&e[0], "/kind"), "work.checkpointed");
    assert_eq!(o.w.h.authority.state.accounts["urn:x:work:1"].total, [0; 6]);
}

#[test]
fn offline_binding_checks_carry_their_wire_codes() {
    let mut o = offline_world();
    let seq = o.w.seq();
    let before = accounts(&o.w);
    let cases: Vec<(Value, &str, bool, ErrorCode)> = vec![
        // Version / criticality, shape, window order, external actions.
        (
            o.binding(vec![]),
            "0.2.0",
            true,
            ErrorCode::UnknownCriticalExtension,
        ),
        (o.binding(vec![]), "0.1.0", false, ErrorCode::InvalidCommand),
        (
            o.binding(vec![("bogus", n(1))]),
            "0.1.0",
            true,
            ErrorCode::InvalidCommand,
        ),
        (
            o.binding(vec![(
                "graceDeadline",
                s(&o.started.plus_seconds(80).format()),
            )]),
            "0.1.0",
            true,
            ErrorCode::InvalidCommand,
        ),
        (
            o.binding(vec![(
                "resourceUsageDelta",
                usage(vec![("externalActions", 1)]),
            )]),
            "0.1.0",
            true,
            ErrorCode::InvalidCommand,
        ),
        // Another Agent, another Group.
        (
            o.binding(vec![("agentId", s(&o.w.h.id("worker2")))]),
            "0.1.0",
            true,
            ErrorCode::AuthForbidden,
        ),
        (
            o.binding(vec![("groupId", s("urn:x:group:other"))]),
            "0.1.0",
            true,
            ErrorCode::AuthForbidden,
        ),
        // Another WorkItem (unknown), a stale Ownership Epoch.
        (
            o.binding(vec![("workItemId", s("urn:x:work:none"))]),
            "0.1.0",
            true,
            ErrorCode::InvalidCommand,
        ),
        (
            o.binding(vec![("ownershipEpoch", n(2))]),
            "0.1.0",
            true,
            ErrorCode::WorkStaleOwnership,
        ),
        // An unknown historical lease; the wrong Session Epoch for it; a wrong expiry.
        (
            o.binding(vec![("executionLeaseId", s("lease:execution:none"))]),
            "0.1.0",
            true,
            ErrorCode::WorkLeaseExpired,
        ),
        (
            o.binding(vec![("sessionEpoch", n(2))]),
            "0.1.0",
            true,
            ErrorCode::AuthStaleSession,
        ),
        (
            o.binding(vec![
                (
                    "executionLeaseExpiresAt",
                    s(&o.lease_expires.plus_seconds(10).format()),
                ),
                ("graceDeadline", s(&o.started.plus_seconds(200).format())),
            ]),
            "0.1.0",
            true,
            ErrorCode::WorkLeaseExpired,
        ),
        // Disconnected before the lease started.
        (
            o.binding(vec![(
                "disconnectedAt",
                s(&o.started.minus_seconds(5).format()),
            )]),
            "0.1.0",
            true,
            ErrorCode::WorkLeaseExpired,
        ),
        // Buffered after the lease was closed (revoked at +120).
        (
            o.binding(vec![(
                "bufferedAt",
                s(&o.started.plus_seconds(121).format()),
            )]),
            "0.1.0",
            true,
            ErrorCode::WorkLeaseExpired,
        ),
        // Buffered after the Command was issued.
        (
            o.binding(vec![
                ("bufferedAt", s(&o.w.now.plus_seconds(10).format())),
                ("graceDeadline", s(&o.w.now.plus_seconds(11).format())),
                (
                    "executionLeaseExpiresAt",
                    s(&o.w.now.plus_seconds(12).format()),
                ),
            ]),
            "0.1.0",
            true,
            ErrorCode::InvalidCommand,
        ),
        // The charge overflows one dimension: neither the usage nor the checkpoint.
        (
            o.binding(vec![(
                "resourceUsageDelta",
                usage(vec![("modelTokens", 1_001)]),
            )]),
            "0.1.0",
            true,
            ErrorCode::BudgetExceeded,
        ),
    ];
    for (binding, version, critical, code) in cases {
        let r = o.checkpoint(binding.clone(), version, critical);
        assert!(is(&r, code), "{binding:?}: expected {code}, got {r:?}");
        assert_eq!(o.w.seq(), seq);
        assert_eq!(accounts(&o.w), before);
        assert_eq!(o.w.work("urn:x:work:1").status, WorkItemState::Active);
    }
    // The checkpoint must stay inside the bound WorkItem.
    o.w.queued("urn:x:work:2", vec![]);
    o.w.start("urn:x:work:2").unwrap();
    let seq = o.w.seq();
    let ext = obj(vec![(
        OFFLINE,
        obj(vec![
            ("version", s("0.1.0")),
            ("critical", Value::Bool(true)),
            ("data", o.binding(vec![])),
        ]),
    )]);
    let p = o.w.exec(
        "urn:x:work:2",
        vec![("checkpoint", checkpoint("x", o.w.now))],
    );
    let r =
        o.w.go_with("worker", "work.checkpoint", p, |e| e.extensions = Some(ext));
    refused(&o.w, &r, ErrorCode::AuthForbidden, seq);
}

// ---------------------------------------------------------------------------------------------
// A whole lifecycle, replayed
// ---------------------------------------------------------------------------------------------

#[test]
fn replay_of_every_appended_event_rebuilds_identical_state() {
    let mut w = World::new();
    let risky = vec![
        ("sideEffectRisk", s("destructive")),
        ("executionApproval", s("human_required")),
    ];
    w.queued("urn:x:work:1", risky);
    w.queued("urn:x:work:2", vec![]);
    w.queued("urn:x:work:3", vec![]);
    w.go(
        "owner",
        "approval.grant_execution",
        grant("urn:x:approval:1", "urn:x:work:1", 1, vec![]),
    )
    .unwrap();
    w.start("urn:x:work:1").unwrap();
    w.advance(10);
    w.go("worker", RENEW, w.exec("urn:x:work:1", vec![]))
        .unwrap();
    w.go(
        "worker",
        USAGE,
        w.exec(
            "urn:x:work:1",
            vec![("usageDelta", usage(vec![("modelTokens", 10)]))],
        ),
    )
    .unwrap();
    w.publish("urn:x:work:1", "urn:x:artifact:1", '1').unwrap();
    let p = w.exec(
        "urn:x:work:1",
        vec![
            ("artifactIds", arr(&["urn:x:artifact:1"])),
            ("evidence", evidence(true)),
        ],
    );
    w.go("worker", "work.submit", p).unwrap();
    let p = payload(vec![
        ("workItemId", s("urn:x:work:1")),
        ("evidence", evidence(true)),
    ]);
    w.go("coord", "work.accept_result", p).unwrap();
    w.start("urn:x:work:2").unwrap();
    let p = w.exec(
        "urn:x:work:2",
        vec![
            ("reason", s("blocked")),
            ("checkpoint", checkpoint("b", w.now)),
        ],
    );
    w.go("worker", "work.block", p).unwrap();
    w.go(
        "coord",
        "work.unblock",
        payload(vec![("workItemId", s("urn:x:work:2"))]),
    )
    .unwrap();
    w.start("urn:x:work:2").unwrap();
    w.advance(5);
    w.session_open("worker");
    w.start("urn:x:work:2").unwrap();
    w.go(
        "worker",
        "work.fail",
        w.exec("urn:x:work:2", vec![("reason", s("broken"))]),
    )
    .unwrap();
    w.go(
        "owner",
        "work.cancel",
        payload(vec![("workItemId", s("urn:x:work:3")), ("reason", s("no"))]),
    )
    .unwrap();
    assert_eq!(w.work("urn:x:work:1").status, WorkItemState::Verified);
    assert_eq!(w.work("urn:x:work:2").status, WorkItemState::Failed);
    assert_eq!(w.work("urn:x:work:3").status, WorkItemState::Cancelled);
    w.assert_replays();
}

/// An Execution Lease is usable strictly before its `expiresAt` (§11.3): at that instant it is
/// expired, for the authority's **exec-lease** and for the DAG's "why not running".
#[test]
fn an_execution_lease_expires_at_its_expiry_instant() {
    let mut w = World::new();
    w.queued("urn:x:work:1", vec![]);
    w.start("urn:x:work:1").unwrap();
    let id = w.lease("urn:x:work:1");
    let lease = &w.h.authority.state.leases[&id];
    let end = lease.expires_at;
    use wasm_core::authority::guards::execution_lease_live;
    assert!(execution_lease_live(lease, w.now));
    assert!(execution_lease_live(lease, Micros(end.0 - 1)));
    assert!(!execution_lease_live(lease, end));
    assert!(!execution_lease_live(lease, Micros(end.0 + 1)));
}
