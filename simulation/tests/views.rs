//! The console's view models built from real histories: the authority is driven through the
//! six verification stages by the test harness, and each view is asserted on the resulting
//! state and Event log (Mission board, WorkItem DAG and "why not running", critical path,
//! Budget Ledger, approval inbox, timeline and time travel, Conversations, Agents).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(not(target_arch = "wasm32"))]

use simulation::harness::Envelope;
use simulation::kit::{self, DEADLINE, G, M, WORK_DEADLINE, arr, n, obj, s, t0};
use wasm_core::authority::handlers::payload;
use wasm_core::authority::projection::WorkItem;
use wasm_core::authority::{Micros, Rejection};
use wasm_core::crypto::ed25519;
use wasm_core::encoding::{b64url_encode, sha256_hash};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::{Actor, ActorType};
use wasm_core::model::error::ErrorCode;
use wasm_core::model::work_item::WorkItemState;
use wasm_core::views::approvals::{
    ApprovalInbox, ApprovalKind, ApproverRule, ArtifactFacts, ViewerDecision,
};
use wasm_core::views::board::{BoardQuery, Health, MissionBoard};
use wasm_core::views::conversations::{ConversationView, Effective, MessageView};
use wasm_core::views::dag::{DagView, EdgeKind, LeaseProblem, NodeKind, NodeState, WhyNotRunning};
use wasm_core::views::ledger::{AccountKind, Forecast, LedgerView};
use wasm_core::views::timeline::{TimeTravel, Timeline, TimelineQuery, permille, work_item_lanes};
use wasm_core::views::{MissionState, Viewer, Views, WorkState};

const USAGE: &str = "ext.missionweaveprotocol.core.resource_usage_record";

type R = Result<Vec<Value>, Rejection>;

/// A contract with a 1 000-token, 10-call budget; `over` replaces members.
fn contract(over: Vec<(&'static str, Value)>) -> Value {
    let budget = obj(vec![("modelTokens", n(1_000)), ("toolCalls", n(10))]);
    let members = vec![
        ("allowedResources", arr(&["repo:main"])),
        ("deadline", s(WORK_DEADLINE)),
        ("budget", budget),
    ];
    kit::contract_of(members, over)
}

simulation::kit_world!(World: Witness);

impl World {
    /// An Organization with a root Mission (10 000 tokens, 100 tool calls), its owner, a
    /// second human member (`reviewer`), a stranger, a Coordinator and two Workers; `worker`'s
    /// card has capability `rust` version 1.
    fn new() -> World {
        let mut w = World {
            kit: kit::Witness::new(&[
                ("owner", ActorType::Human),
                ("reviewer", ActorType::Human),
                ("stranger", ActorType::Human),
                ("coord", ActorType::Agent),
                ("worker", ActorType::Agent),
                ("worker2", ActorType::Agent),
            ]),
        };
        for a in ["coord", "worker", "worker2"] {
            let caps = if a == "worker" {
                vec![obj(vec![
                    ("id", s("rust")),
                    ("version", n(1)),
                    ("verifiedEvidence", arr(&["urn:x:evidence:rust"])),
                ])]
            } else {
                vec![]
            };
            for (who, kind, p) in kit::enrolment(&w.h, a, caps, w.now) {
                w.sub(who, kind, Envelope::default(), p).unwrap();
            }
        }
        w.create_root(M, G, "Root", "owner");
        for a in ["worker", "worker2"] {
            w.member(G, a, "agent", &["worker"]);
        }
        w.member(G, "reviewer", "human", &["reviewer"]);
        w
    }

    fn create_root(&mut self, mission: &str, group: &str, title: &str, owner: &str) {
        let budget = obj(vec![("modelTokens", n(10_000)), ("toolCalls", n(100))]);
        let p = kit::root_mission(&self.h, mission, group, title, budget, &["deploy", "read"]);
        let env = kit::in_group(group);
        self.sub(owner, "mission.create", env, p).unwrap();
    }

    fn member(&mut self, group: &str, who: &str, t: &str, roles: &[&str]) {
        let p = kit::membership(&self.h, who, t, roles);
        let owner = self.owner_of(group);
        self.go(&owner, group, "membership.change", p).unwrap();
    }

    fn state(&self) -> &wasm_core::authority::State {
        &self.h.authority.state
    }

    fn work(&self, id: &str) -> &WorkItem {
        &self.state().work_items[id]
    }

    fn name(&self, id: &str) -> String {
        self.h
            .principals
            .iter()
            .find(|(_, p)| p.actor.id.as_str() == id)
            .map(|(n, _)| n.clone())
            .unwrap()
    }

    fn coordinator(&self, group: &str) -> String {
        let m = self.state().mission_of_group(group).unwrap();
        self.name(&m.coordinator_id)
    }

    fn owner_of(&self, group: &str) -> String {
        let m = self.state().mission_of_group(group).unwrap();
        self.name(m.owner.id.as_str())
    }

    fn authorize(
        &mut self,
        group: &str,
        id: &str,
        over: Vec<(&'static str, Value)>,
        extra: Vec<(&'static str, Value)>,
    ) {
        let mut members = vec![("workItemId", s(id)), ("contract", contract(over))];
        members.extend(extra);
        let c = self.coordinator(group);
        self.go(&c, group, "work.authorize", payload(members))
            .unwrap();
    }

    fn offer(&mut self, group: &str, work: &str, who: &str, seconds: u64) {
        let c = self.coordinator(group);
        let p = payload(vec![
            ("workItemId", s(work)),
            ("candidateAgentIds", arr(&[&self.h.id(who)])),
            ("selectionBasis", Value::Object(Object::new())),
            ("offerExpiresInSeconds", n(seconds)),
        ]);
        self.go(&c, group, "work.offer", p).unwrap();
    }

    fn accept(&mut self, group: &str, work: &str, who: &str, lease: u64) {
        self.go(
            who,
            group,
            "work.accept_offer",
            payload(vec![
                ("workItemId", s(work)),
                ("ownershipLeaseSeconds", n(lease)),
            ]),
        )
        .unwrap();
    }

    fn queue(&mut self, group: &str, work: &str, who: &str) {
        self.offer(group, work, who, 300);
        self.accept(group, work, who, 86_400);
    }

    fn start(&mut self, group: &str, work: &str, who: &str, seconds: u64) -> R {
        let p = payload(vec![
            ("workItemId", s(work)),
            ("ownershipEpoch", n(self.work(work).ownership_epoch)),
            ("executionLeaseSeconds", n(seconds)),
        ]);
        self.go(who, group, "work.start", p)
    }

    fn usage(&mut self, group: &str, work: &str, who: &str, tokens: u64) -> R {
        let w = self.work(work).clone();
        let p = payload(vec![
            ("workItemId", s(work)),
            ("ownershipEpoch", n(w.ownership_epoch)),
            (
                "executionLeaseId",
                s(w.execution_lease_id.as_deref().unwrap()),
            ),
            ("usageDelta", obj(vec![("modelTokens", n(tokens))])),
        ]);
        self.go(who, group, USAGE, p)
    }

    /// (Authorize,) start, publish, submit, accept: `verified`. Returns the Artifact's hash.
    fn deliver(&mut self, group: &str, work: &str, who: &str, artifact: &str) -> String {
        self.deliver_content(group, work, who, artifact, artifact)
    }

    /// [`Self::deliver`] with the Artifact's content apart from its id.
    fn deliver_content(
        &mut self,
        group: &str,
        work: &str,
        who: &str,
        artifact: &str,
        content: &str,
    ) -> String {
        let hash = self.submit_content(group, work, who, artifact, content);
        let c = self.coordinator(group);
        let p = payload(vec![
            ("workItemId", s(work)),
            (
                "evidence",
                Value::Array(vec![obj(vec![
                    ("kind", s("review")),
                    ("description", s("reviewed")),
                    ("success", Value::Bool(true)),
                ])]),
            ),
        ]);
        self.go(&c, group, "work.accept_result", p).unwrap();
        assert_eq!(self.work(work).status, WorkItemState::Verified);
        hash
    }

    /// (Authorize,) start, publish, submit: `submitted`. Returns the Artifact's hash.
    fn submit_work(&mut self, group: &str, work: &str, who: &str, artifact: &str) -> String {
        self.submit_content(group, work, who, artifact, artifact)
    }

    /// [`Self::submit_work`] with the Artifact's content apart from its id (two Artifacts may
    /// hold the same bytes).
    fn submit_content(
        &mut self,
        group: &str,
        work: &str,
        who: &str,
        artifact: &str,
        content: &str,
    ) -> String {
        if !self.state().work_items.contains_key(work) {
            self.authorize(group, work, vec![], vec![]);
        }
        self.queue(group, work, who);
        self.start(group, work, who, 3_600).unwrap();
        let w = self.work(work).clone();
        let hash = sha256_hash(content.as_bytes());
        let mut manifest = payload(vec![
            ("id", s(artifact)),
            ("contentHash", s(&hash)),
            ("mediaType", s("text/plain")),
            ("schemaUri", Value::Null),
            ("producingAgentId", s(&self.h.id(who))),
            ("agentCardVersion", n(1)),
            ("missionId", s(&w.mission_id)),
            ("groupId", s(group)),
            ("workItemId", s(work)),
            ("sourceArtifactHashes", Value::Array(vec![])),
            ("toolVersions", Value::Object(Object::new())),
            ("modelVersions", Value::Object(Object::new())),
            ("createdAt", s(&self.now.format())),
            ("dataClassification", s("internal")),
        ]);
        let bytes = json::canonicalize(&Value::Object(manifest.clone())).unwrap();
        let sig = b64url_encode(&ed25519::sign(&self.h.principals[who].seed, &bytes));
        manifest.insert("signature", s(&sig));
        let lease = w.execution_lease_id.clone().unwrap();
        let p = payload(vec![
            ("artifact", Value::Object(manifest)),
            ("ownershipEpoch", n(w.ownership_epoch)),
            ("executionLeaseId", s(&lease)),
        ]);
        self.go(who, group, "artifact.publish", p).unwrap();
        let p = payload(vec![
            ("workItemId", s(work)),
            ("ownershipEpoch", n(w.ownership_epoch)),
            ("executionLeaseId", s(&lease)),
            ("artifactIds", arr(&[artifact])),
            (
                "evidence",
                Value::Array(vec![obj(vec![
                    ("kind", s("deterministic-tests")),
                    ("description", s("all tests pass")),
                ])]),
            ),
        ]);
        self.go(who, group, "work.submit", p).unwrap();
        hash
    }

    fn submit_mission(&mut self, group: &str, hashes: &[&str]) -> R {
        let c = self.coordinator(group);
        self.go(
            &c,
            group,
            "mission.submit_for_approval",
            payload(vec![("artifactHashes", arr(hashes))]),
        )
    }

    fn viewer(&self, who: &str) -> Viewer {
        Viewer::Principal(self.h.actor(who))
    }

    fn dag(&self, mission: &str) -> DagView {
        DagView::build(self.state(), mission, self.now).unwrap()
    }

    fn why(&self, work: &str) -> Vec<WhyNotRunning> {
        self.dag(&self.work(work).mission_id.clone())
            .node(work)
            .unwrap()
            .why_not_running
            .clone()
    }

    fn advance(&mut self, seconds: u64) {
        self.now = self.now.plus_seconds(seconds);
    }
}

// ---------------------------------------------------------------------------------------------
// Mission board
// ---------------------------------------------------------------------------------------------

/// Missions in four columns, visibility by Membership and ownership, derived progress,
/// blockers, budget health, pending approvals, filter and the Mission tree.
#[test]
fn board_columns_progress_visibility_and_filter() {
    let mut w = World::new();
    // Root: three WorkItems, one verified, one cancelled, one open → 1 / 2.
    let hash = w.deliver(G, "urn:x:w:done", "worker", "urn:x:art:1");
    w.authorize(G, "urn:x:w:cancel", vec![], vec![]);
    w.go(
        "owner",
        G,
        "work.cancel",
        payload(vec![
            ("workItemId", s("urn:x:w:cancel")),
            ("reason", s("not needed")),
        ]),
    )
    .unwrap();
    w.authorize(G, "urn:x:w:open", vec![], vec![]);
    // A second Mission, submitted for approval.
    w.create_root(
        "urn:x:mission:b",
        "urn:x:group:b",
        "Billing export",
        "owner",
    );
    w.authorize("urn:x:group:b", "urn:x:w:b1", vec![], vec![]);
    w.member("urn:x:group:b", "worker", "agent", &["worker"]);
    let hb = w.deliver("urn:x:group:b", "urn:x:w:b1", "worker", "urn:x:art:b");
    w.submit_mission("urn:x:group:b", &[&hb]).unwrap();
    // A third, cancelled; a fourth owned by the stranger (invisible to the owner).
    w.create_root("urn:x:mission:c", "urn:x:group:c", "Cancelled one", "owner");
    w.go(
        "owner",
        "urn:x:group:c",
        "mission.cancel",
        payload(vec![("reason", s("dropped"))]),
    )
    .unwrap();
    w.create_root(
        "urn:x:mission:d",
        "urn:x:group:d",
        "Someone else's",
        "stranger",
    );

    let inbox = ApprovalInbox::build(w.state(), &w.viewer("owner"), &[], w.now);
    let board = MissionBoard::build(w.state(), &w.viewer("owner"), &inbox, w.now);
    let col = |s: MissionState| {
        board
            .columns
            .iter()
            .find(|(c, _)| *c == s)
            .unwrap()
            .1
            .iter()
            .map(|c| c.mission_id.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(col(MissionState::Active), vec![M]);
    assert_eq!(col(MissionState::AwaitingApproval), vec!["urn:x:mission:b"]);
    assert_eq!(col(MissionState::Cancelled), vec!["urn:x:mission:c"]);
    assert!(col(MissionState::Approved).is_empty() && col(MissionState::Failed).is_empty());
    assert!(
        board.card("urn:x:mission:d").is_none(),
        "not the owner's, no Membership"
    );

    let root = board.card(M).unwrap();
    assert_eq!((root.progress.accepted, root.progress.total), (1, 2));
    assert_eq!(root.progress.per_mille(), 500);
    assert_eq!(root.coordinator_id, w.h.id("coord"));
    assert_eq!(root.deadline, Micros::parse(DEADLINE).unwrap());
    assert_eq!(root.pending_approvals, 0);
    let b = board.card("urn:x:mission:b").unwrap();
    assert_eq!((b.progress.accepted, b.progress.total), (1, 1));
    assert_eq!(b.pending_approvals, 1, "the final approval");
    // Budget health: no usage yet; financial dimensions are not granted.
    let tokens = root
        .budget
        .iter()
        .find(|d| d.dimension == "modelTokens")
        .unwrap();
    assert_eq!(
        (tokens.used, tokens.limit, tokens.health),
        (0, Some(10_000), Health::Ok)
    );
    let money = root
        .budget
        .iter()
        .find(|d| d.dimension == "financialMicrounits")
        .unwrap();
    assert_eq!(money.health, Health::NotGranted);
    let _ = hash;

    // Filter and search: pure over the board.
    let q = |q: BoardQuery| {
        board
            .filter(&q)
            .iter()
            .map(|c| c.mission_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        q(BoardQuery {
            text: Some("billing".into()),
            ..Default::default()
        }),
        vec!["urn:x:mission:b"]
    );
    assert_eq!(
        q(BoardQuery {
            with_pending_approvals: true,
            ..Default::default()
        }),
        vec!["urn:x:mission:b"]
    );
    assert_eq!(
        q(BoardQuery {
            states: vec![MissionState::Active, MissionState::Cancelled],
            ..Default::default()
        }),
        vec![M, "urn:x:mission:c"]
    );
    assert!(
        q(BoardQuery {
            coordinator_id: Some("urn:x:nobody".into()),
            ..Default::default()
        })
        .is_empty()
    );
    assert_eq!(q(BoardQuery::default()).len(), 3);

    // Visibility: the reviewer (a member of the root Group only) sees the root alone; the
    // stranger sees its own; the Organization sees all four.
    let board_of = |v: &Viewer| MissionBoard::build(w.state(), v, &ApprovalInbox::default(), w.now);
    let ids = |b: MissionBoard| b.cards().map(|c| c.mission_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(board_of(&w.viewer("reviewer"))), vec![M]);
    assert_eq!(
        ids(board_of(&w.viewer("stranger"))),
        vec!["urn:x:mission:d"]
    );
    assert_eq!(ids(board_of(&Viewer::Organization)).len(), 4);
}

/// A blocked WorkItem is a blocker; usage moves budget health; the Mission tree links a child
/// Mission (which the root owner sees through ownership of the root, H-10) and a follow-up.
#[test]
fn board_blockers_budget_health_and_tree() {
    let mut w = World::new();
    w.authorize(
        G,
        "urn:x:w:1",
        vec![("budget", obj(vec![("modelTokens", n(9_000))]))],
        vec![],
    );
    w.queue(G, "urn:x:w:1", "worker");
    w.start(G, "urn:x:w:1", "worker", 3_600).unwrap();
    w.usage(G, "urn:x:w:1", "worker", 8_500).unwrap();
    let inbox = ApprovalInbox::default();
    let board = MissionBoard::build(w.state(), &w.viewer("owner"), &inbox, w.now);
    let tokens = board
        .card(M)
        .unwrap()
        .budget
        .iter()
        .find(|d| d.dimension == "modelTokens")
        .cloned()
        .unwrap();
    assert_eq!((tokens.used, tokens.health), (8_500, Health::Warning));

    // Block it; then promote another WorkItem to a child Mission.
    let wi = w.work("urn:x:w:1").clone();
    let p = payload(vec![
        ("workItemId", s("urn:x:w:1")),
        ("ownershipEpoch", n(wi.ownership_epoch)),
        (
            "executionLeaseId",
            s(wi.execution_lease_id.as_deref().unwrap()),
        ),
        ("reason", s("waiting for credentials")),
        (
            "checkpoint",
            obj(vec![
                ("phase", s("setup")),
                ("completedMilestones", arr(&[])),
                ("createdAt", s(&w.now.format())),
            ]),
        ),
    ]);
    w.go("worker", G, "work.block", p).unwrap();
    w.authorize(
        G,
        "urn:x:w:2",
        vec![(
            "budget",
            obj(vec![("modelTokens", n(500)), ("toolCalls", n(5))]),
        )],
        vec![],
    );
    let child = payload(vec![
        ("missionId", s("urn:x:mission:child")),
        ("groupId", s("urn:x:group:child")),
        ("parentWorkItemId", s("urn:x:w:2")),
        ("coordinatorId", s(&w.h.id("worker2"))),
        ("title", s("Child")),
        ("objective", s("Do the sub-part")),
        ("definitionOfDone", arr(&["sub-part done"])),
        ("deadline", s(WORK_DEADLINE)),
        (
            "budget",
            obj(vec![("modelTokens", n(400)), ("toolCalls", n(0))]),
        ),
        ("permissions", arr(&["read"])),
        ("coordinatorLeaseSeconds", n(31_536_000)),
    ]);
    w.go("coord", G, "mission.create_child", child).unwrap();
    let board = MissionBoard::build(w.state(), &w.viewer("owner"), &inbox, w.now);
    // A dimension granted as 0 and unused grants nothing: not "exhausted" (the demo's child
    // Mission grants 0 external side effects, and its card said "Budget health ✖"; here tool calls).
    let health = |d: &str| {
        board
            .card("urn:x:mission:child")
            .and_then(|c| c.budget.iter().find(|x| x.dimension == d))
            .map(|x| x.health)
    };
    assert_eq!(health("toolCalls"), Some(Health::NotGranted));
    assert_eq!(health("modelTokens"), Some(Health::Ok));
    let root = board.card(M).unwrap();
    let blockers: Vec<_> = root
        .blockers
        .iter()
        .map(|b| (b.work_item_id.as_str(), b.state, b.reason.clone()))
        .collect();
    assert_eq!(
        blockers,
        vec![
            (
                "urn:x:w:1",
                WorkState::Blocked,
                Some("waiting for credentials".to_owned())
            ),
            (
                "urn:x:w:2",
                WorkState::Blocked,
                Some("awaiting child Mission urn:x:mission:child".to_owned())
            ),
        ]
    );
    assert!(
        board.card("urn:x:mission:child").is_some(),
        "the root owner sees the child"
    );
    assert_eq!(board.roots.len(), 1);
    assert_eq!(board.roots[0].mission_id, M);
    assert_eq!(board.roots[0].children[0].mission_id, "urn:x:mission:child");
    // The reviewer (root Group only) does not see the child.
    let b2 = MissionBoard::build(w.state(), &w.viewer("reviewer"), &inbox, w.now);
    assert!(b2.card("urn:x:mission:child").is_none());
}

// ---------------------------------------------------------------------------------------------
// WorkItem DAG: every "why not running" reason from a real history
// ---------------------------------------------------------------------------------------------

#[test]
fn why_not_running_dependencies_capability_offer_and_ready() {
    let mut w = World::new();
    w.authorize(G, "urn:x:w:a", vec![], vec![]);
    w.authorize(
        G,
        "urn:x:w:b",
        vec![],
        vec![("dependencyIds", arr(&["urn:x:w:a"]))],
    );
    // Nothing in the way of a: it waits for an offer.
    assert_eq!(w.why("urn:x:w:a"), vec![WhyNotRunning::NotOffered]);
    assert_eq!(
        w.why("urn:x:w:b"),
        vec![WhyNotRunning::Dependencies(vec!["urn:x:w:a".into()])]
    );
    // Capability: rust ≥ 2, and worker's card has rust 1 → no Agent can be offered it.
    let req = Value::Array(vec![obj(vec![("id", s("rust")), ("minimumVersion", n(2))])]);
    w.authorize(
        G,
        "urn:x:w:cap",
        vec![("requiredCapabilities", req)],
        vec![],
    );
    match &w.why("urn:x:w:cap")[..] {
        [WhyNotRunning::Capability { requirements }] => {
            assert_eq!(requirements[0].id, "rust");
            assert_eq!(requirements[0].minimum_version, 2);
        }
        other => panic!("{other:?}"),
    }
    // rust ≥ 1 is met by worker: not a capability problem.
    let req = Value::Array(vec![obj(vec![("id", s("rust")), ("minimumVersion", n(1))])]);
    w.authorize(
        G,
        "urn:x:w:cap1",
        vec![("requiredCapabilities", req)],
        vec![],
    );
    assert_eq!(w.why("urn:x:w:cap1"), vec![WhyNotRunning::NotOffered]);
    // Offered: awaiting acceptance; then the offer expires.
    w.offer(G, "urn:x:w:a", "worker", 60);
    assert_eq!(
        w.why("urn:x:w:a"),
        vec![WhyNotRunning::AwaitingAcceptance {
            candidates: vec![w.h.id("worker")]
        }]
    );
    let offered_at = w.now;
    w.advance(61);
    assert_eq!(
        w.why("urn:x:w:a"),
        vec![WhyNotRunning::Lease(LeaseProblem::OfferExpired {
            at: offered_at.plus_seconds(60)
        })]
    );
    // Re-offer, accept: queued and ready to start; then running.
    w.offer(G, "urn:x:w:a", "worker", 60);
    w.accept(G, "urn:x:w:a", "worker", 600);
    assert_eq!(w.why("urn:x:w:a"), vec![WhyNotRunning::ReadyToStart]);
    w.start(G, "urn:x:w:a", "worker", 300).unwrap();
    let dag = w.dag(M);
    let a = dag.node("urn:x:w:a").unwrap();
    assert!(a.running && a.why_not_running.is_empty());
    assert_eq!(a.owner.as_deref(), Some(w.h.id("worker").as_str()));
    assert_eq!(a.ownership_epoch, 1);
    assert_eq!(a.execution_lease_expires_at, Some(w.now.plus_seconds(300)));
    // The Execution Lease runs out.
    w.advance(301);
    assert_eq!(
        w.why("urn:x:w:a"),
        vec![WhyNotRunning::Lease(LeaseProblem::ExecutionExpired {
            at: w.now.minus_seconds(1)
        })]
    );
}

#[test]
fn why_not_running_approval_lease_and_budget() {
    let mut w = World::new();
    // Approval: a human_required contract, queued, no Execution Approval.
    w.authorize(
        G,
        "urn:x:w:gate",
        vec![("executionApproval", s("human_required"))],
        vec![],
    );
    w.queue(G, "urn:x:w:gate", "worker");
    assert_eq!(
        w.why("urn:x:w:gate"),
        vec![WhyNotRunning::Approval {
            execution_approval: "human_required".into()
        }]
    );
    // The same predicate the authority enforces: work.start is refused with APPROVAL_REQUIRED.
    let r = w.start(G, "urn:x:w:gate", "worker", 300);
    assert_eq!(r.unwrap_err().code, ErrorCode::ApprovalRequired);
    let p = payload(vec![
        ("approvalId", s("urn:x:approval:gate")),
        ("workItemId", s("urn:x:w:gate")),
        ("ownershipEpoch", n(1)),
        ("operations", arr(&["deploy"])),
        ("expiresInSeconds", n(600)),
    ]);
    w.go("owner", G, "approval.grant_execution", p).unwrap();
    assert_eq!(w.why("urn:x:w:gate"), vec![WhyNotRunning::ReadyToStart]);

    // Lease: an ownership lease of 60 s runs out while queued.
    w.authorize(G, "urn:x:w:lease", vec![], vec![]);
    w.offer(G, "urn:x:w:lease", "worker2", 300);
    w.accept(G, "urn:x:w:lease", "worker2", 60);
    let until = w.now.plus_seconds(60);
    w.advance(61);
    assert!(w.why("urn:x:w:lease").contains(&WhyNotRunning::Lease(
        LeaseProblem::OwnershipExpired { at: until }
    )));
    // …and work.start agrees.
    let r = w.start(G, "urn:x:w:lease", "worker2", 300);
    assert_eq!(r.unwrap_err().code, ErrorCode::WorkLeaseExpired);

    // Budget: the WorkItem's 1 000 tokens are used up while it runs.
    w.authorize(G, "urn:x:w:budget", vec![], vec![]);
    w.queue(G, "urn:x:w:budget", "worker2");
    w.start(G, "urn:x:w:budget", "worker2", 3_600).unwrap();
    w.usage(G, "urn:x:w:budget", "worker2", 1_000).unwrap();
    assert_eq!(
        w.why("urn:x:w:budget"),
        vec![WhyNotRunning::Budget {
            dimension: "modelTokens",
            account: "urn:x:w:budget".into()
        }]
    );
    assert!(!w.dag(M).node("urn:x:w:budget").unwrap().running);
    // The ledger refuses one more token, as the view said.
    let r = w.usage(G, "urn:x:w:budget", "worker2", 1);
    assert_eq!(r.unwrap_err().code, ErrorCode::BudgetExceeded);
}

#[test]
fn why_not_running_blocked_child_review_finished_and_mission_state() {
    let mut w = World::new();
    w.authorize(G, "urn:x:w:p", vec![], vec![]);
    let child = payload(vec![
        ("missionId", s("urn:x:mission:child")),
        ("groupId", s("urn:x:group:child")),
        ("parentWorkItemId", s("urn:x:w:p")),
        ("coordinatorId", s(&w.h.id("worker2"))),
        ("title", s("Child")),
        ("objective", s("Do the sub-part")),
        ("definitionOfDone", arr(&["sub-part done"])),
        ("deadline", s(WORK_DEADLINE)),
        ("budget", obj(vec![("modelTokens", n(400))])),
        ("permissions", arr(&["read"])),
        ("coordinatorLeaseSeconds", n(31_536_000)),
    ]);
    w.go("coord", G, "mission.create_child", child).unwrap();
    assert_eq!(
        w.why("urn:x:w:p"),
        vec![WhyNotRunning::ChildMission {
            mission_id: "urn:x:mission:child".into()
        }]
    );
    // The child is a node of the parent's DAG, linked from its WorkItem.
    let dag = w.dag(M);
    let c = dag.node("urn:x:mission:child").unwrap();
    assert_eq!(
        c.kind,
        NodeKind::ChildMission {
            group_id: "urn:x:group:child".into()
        }
    );
    assert_eq!(c.state, NodeState::Mission(MissionState::Active));
    assert_eq!(c.owner.as_deref(), Some(w.h.id("worker2").as_str()));
    assert!(dag.edges.iter().any(|e| e.from == "urn:x:w:p"
        && e.to == "urn:x:mission:child"
        && e.kind == EdgeKind::ChildMission));

    // Submitted: awaiting review; verified: finished.
    w.submit_work(G, "urn:x:w:r", "worker", "urn:x:art:r");
    assert_eq!(w.why("urn:x:w:r"), vec![WhyNotRunning::AwaitingReview]);
    w.go(
        "coord",
        G,
        "work.accept_result",
        payload(vec![
            ("workItemId", s("urn:x:w:r")),
            (
                "evidence",
                Value::Array(vec![obj(vec![
                    ("kind", s("review")),
                    ("description", s("ok")),
                ])]),
            ),
        ]),
    )
    .unwrap();
    assert_eq!(
        w.why("urn:x:w:r"),
        vec![WhyNotRunning::Finished(WorkState::Verified)]
    );
    // The Mission is cancelled: open work can no longer run.
    w.authorize(G, "urn:x:w:o", vec![], vec![]);
    w.go(
        "owner",
        G,
        "mission.cancel",
        payload(vec![("reason", s("stop"))]),
    )
    .unwrap();
    let why = w.why("urn:x:w:o");
    assert!(
        why == vec![WhyNotRunning::Finished(WorkState::Cancelled)]
            || why.contains(&WhyNotRunning::MissionNotActive(MissionState::Cancelled)),
        "{why:?}"
    );
}

#[test]
fn why_not_running_blocked_by_the_worker_and_mission_awaiting_approval() {
    let mut w = World::new();
    let h = w.deliver(G, "urn:x:w:1", "worker", "urn:x:art:1");
    w.submit_mission(G, &[&h]).unwrap();
    // awaiting_approval: no WorkItem transition is accepted; a verified item is finished.
    assert_eq!(
        w.why("urn:x:w:1"),
        vec![WhyNotRunning::Finished(WorkState::Verified)]
    );
    let mut w = World::new();
    w.authorize(G, "urn:x:w:b", vec![], vec![]);
    w.queue(G, "urn:x:w:b", "worker");
    w.start(G, "urn:x:w:b", "worker", 3_600).unwrap();
    let wi = w.work("urn:x:w:b").clone();
    let p = payload(vec![
        ("workItemId", s("urn:x:w:b")),
        ("ownershipEpoch", n(wi.ownership_epoch)),
        (
            "executionLeaseId",
            s(wi.execution_lease_id.as_deref().unwrap()),
        ),
        ("reason", s("needs a key")),
        (
            "checkpoint",
            obj(vec![
                ("phase", s("p")),
                ("completedMilestones", arr(&[])),
                ("createdAt", s(&w.now.format())),
            ]),
        ),
    ]);
    w.go("worker", G, "work.block", p).unwrap();
    assert_eq!(
        w.why("urn:x:w:b"),
        vec![WhyNotRunning::Blocked {
            blocker: Some("needs a key".into())
        }]
    );
}

/// The critical path: the longest chain of unfinished WorkItems weighted by
/// `estimatedDurationSeconds` (default 3 600 s); verified items drop out.
#[test]
fn critical_path_follows_the_heaviest_unfinished_chain() {
    let mut w = World::new();
    let est = |secs: u64| vec![("estimatedDurationSeconds", n(secs))];
    w.authorize(G, "urn:x:w:1", est(100), vec![]);
    w.authorize(
        G,
        "urn:x:w:2",
        est(200),
        vec![("dependencyIds", arr(&["urn:x:w:1"]))],
    );
    w.authorize(
        G,
        "urn:x:w:3",
        est(300),
        vec![("dependencyIds", arr(&["urn:x:w:2"]))],
    );
    w.authorize(G, "urn:x:w:4", est(500), vec![]); // alone: 500 < 600
    w.authorize(
        G,
        "urn:x:w:5",
        vec![],
        vec![("dependencyIds", arr(&["urn:x:w:4"]))],
    ); // 500 + 3 600
    let dag = w.dag(M);
    assert_eq!(
        dag.critical_path.work_item_ids,
        vec!["urn:x:w:4", "urn:x:w:5"]
    );
    assert_eq!(dag.critical_path.weight_seconds, 4_100);
    assert!(dag.node("urn:x:w:5").unwrap().on_critical_path);
    assert!(!dag.node("urn:x:w:1").unwrap().on_critical_path);
    // Finish 4 and 5: the chain 1 → 2 → 3 (600 s) becomes critical.
    w.deliver(G, "urn:x:w:4", "worker", "urn:x:art:4");
    w.deliver(G, "urn:x:w:5", "worker", "urn:x:art:5");
    let dag = w.dag(M);
    assert_eq!(
        dag.critical_path.work_item_ids,
        vec!["urn:x:w:1", "urn:x:w:2", "urn:x:w:3"]
    );
    assert_eq!(dag.critical_path.weight_seconds, 600);
    // Dependency edges point from the dependency to the dependent.
    assert!(
        dag.edges.iter().any(|e| e.from == "urn:x:w:1"
            && e.to == "urn:x:w:2"
            && e.kind == EdgeKind::Dependency)
    );
}

// ---------------------------------------------------------------------------------------------
// Budget Ledger
// ---------------------------------------------------------------------------------------------

/// Allocated, used, remaining and the effective limit inherited from ancestors; the burn-down
/// series and its projection; BUDGET_EXCEEDED rejections listed.
/// The ledger's projected exhaustion of dimension `dim`.
fn forecast_of(ledger: &LedgerView, dim: &str) -> Forecast {
    ledger
        .forecast
        .iter()
        .find(|(d, _)| *d == dim)
        .expect("every dimension has a forecast")
        .1
}

#[test]
fn ledger_figures_inherit_from_ancestors() {
    let mut w = World::new();
    // P: 1 000 tokens; S: 600 tokens under P (a sub-WorkItem).
    w.authorize(G, "urn:x:w:p", vec![], vec![]);
    w.authorize(
        G,
        "urn:x:w:s",
        vec![("budget", obj(vec![("modelTokens", n(600))]))],
        vec![("parentWorkItemId", s("urn:x:w:p"))],
    );
    w.queue(G, "urn:x:w:p", "worker");
    w.start(G, "urn:x:w:p", "worker", 3_600).unwrap();
    w.usage(G, "urn:x:w:p", "worker", 300).unwrap();
    w.advance(600);
    w.usage(G, "urn:x:w:p", "worker", 400).unwrap();
    // Over the limit: refused, and the client saw it.
    w.advance(60);
    assert!(w.usage(G, "urn:x:w:p", "worker", 301).is_err());

    let ledger = LedgerView::build(w.state(), M, &w.log, &w.seen).unwrap();
    let fig = |acct: &str, dim: &str| {
        ledger
            .account(acct)
            .unwrap()
            .figures
            .iter()
            .find(|f| f.dimension == dim)
            .cloned()
            .unwrap()
    };
    let root = fig(M, "modelTokens");
    assert_eq!(
        (
            root.allocated,
            root.allocated_to_children,
            root.used,
            root.used_directly
        ),
        (Some(10_000), 1_000, 700, 0)
    );
    assert_eq!(
        (root.remaining, root.effective_limit),
        (Some(9_300), Some(10_000))
    );
    let p = fig("urn:x:w:p", "modelTokens");
    assert_eq!(
        (
            p.allocated,
            p.allocated_to_children,
            p.used,
            p.used_directly
        ),
        (Some(1_000), 600, 700, 700)
    );
    assert_eq!((p.remaining, p.effective_limit), (Some(300), Some(1_000)));
    // S may use 600 by its own limit, but P has only 300 left: inherited.
    let sub = fig("urn:x:w:s", "modelTokens");
    assert_eq!(
        (sub.allocated, sub.used, sub.remaining, sub.effective_limit),
        (Some(600), 0, Some(300), Some(300))
    );
    // Tool calls: granted but unused; money: not granted anywhere.
    assert_eq!(fig("urn:x:w:p", "toolCalls").remaining, Some(10));
    assert_eq!(
        fig("urn:x:w:s", "toolCalls").remaining,
        None,
        "S's contract grants none"
    );
    assert_eq!(fig("urn:x:w:s", "financialMicrounits").remaining, None);
    // Tree order: the Mission, then P, then S.
    let order: Vec<_> = ledger
        .accounts
        .iter()
        .map(|a| (a.account_id.as_str(), a.depth))
        .collect();
    assert_eq!(order, vec![(M, 0), ("urn:x:w:p", 1), ("urn:x:w:s", 2)]);

    // Burn-down: an opening zero, then 300, then 700.
    let tokens: Vec<u64> = ledger.series.iter().map(|p| p.cumulative[1]).collect();
    assert_eq!(tokens, vec![0, 300, 700]);
    // In time order whatever order the Events come in: the console holds each Group's log
    // apart, so a Mission with a child Mission in another Group gives them out of time order
    // (the burn-down's line went back in time).
    let reversed: Vec<_> = w.log.iter().rev().cloned().collect();
    let again = LedgerView::build(w.state(), M, &reversed, &w.seen).unwrap();
    assert_eq!(again.series, ledger.series);
    assert!(ledger.series.windows(2).all(|p| p[0].at <= p[1].at));
    // Recent rate: 700 tokens over (creation → last usage); 9 300 left at that rate.
    let first = ledger.series[0].at;
    let last = ledger.series[2].at;
    let span = (last.0 - first.0) as u128;
    let expect = last.0 + (9_300u128 * span / 700) as i64;
    let f = forecast_of(&ledger, "modelTokens");
    assert_eq!(f, Forecast::At(Micros(expect)));
    let f = forecast_of(&ledger, "toolCalls");
    assert_eq!(f, Forecast::Steady);
    let f = forecast_of(&ledger, "computeSeconds");
    assert_eq!(f, Forecast::NotGranted);
    // Once the Mission is finished, nothing more is used: no exhaustion is projected.
    w.go(
        "owner",
        G,
        "mission.cancel",
        payload(vec![("reason", s("out of scope"))]),
    )
    .unwrap();
    let done = LedgerView::build(w.state(), M, &w.log, &w.seen).unwrap();
    let f = forecast_of(&done, "modelTokens");
    assert_eq!(
        f,
        Forecast::Finished,
        "a cancelled Mission projects nothing"
    );

    // The rejection is listed with its dimension and account.
    assert_eq!(ledger.rejections.len(), 1);
    let r = &ledger.rejections[0];
    assert_eq!(r.command_kind, USAGE);
    assert_eq!(r.dimension.as_deref(), Some("modelTokens"));
    assert_eq!(r.account.as_deref(), Some("urn:x:w:p"));
    assert_eq!(r.actor_id, w.h.id("worker"));

    // A WorkItem's series counts only its own subtree.
    let s_series = wasm_core::views::ledger::usage_series(w.state(), "urn:x:w:s", t0(), &w.log);
    assert_eq!(s_series.len(), 1);
}

/// A child Mission's account sits under its parent WorkItem: its figures inherit the parent
/// WorkItem's headroom.
#[test]
fn ledger_child_mission_inherits_from_parent_work_item() {
    let mut w = World::new();
    w.authorize(
        G,
        "urn:x:w:p",
        vec![("budget", obj(vec![("modelTokens", n(500))]))],
        vec![],
    );
    let child = payload(vec![
        ("missionId", s("urn:x:mission:child")),
        ("groupId", s("urn:x:group:child")),
        ("parentWorkItemId", s("urn:x:w:p")),
        ("coordinatorId", s(&w.h.id("coord"))),
        ("title", s("Child")),
        ("objective", s("Do the sub-part")),
        ("definitionOfDone", arr(&["sub-part done"])),
        ("deadline", s(WORK_DEADLINE)),
        ("budget", obj(vec![("modelTokens", n(400))])),
        ("permissions", arr(&["read"])),
        ("coordinatorLeaseSeconds", n(31_536_000)),
    ]);
    w.go("coord", G, "mission.create_child", child).unwrap();
    let ledger = LedgerView::build(w.state(), M, &w.log, &[]).unwrap();
    let ids: Vec<_> = ledger
        .accounts
        .iter()
        .map(|a| a.account_id.as_str())
        .collect();
    assert_eq!(ids, vec![M, "urn:x:w:p", "urn:x:mission:child"]);
    // Each line carries what a person reads first: the Mission's title, the WorkItem's goal.
    let st = w.state();
    let titles: Vec<_> = ledger
        .accounts
        .iter()
        .map(|a| (a.title.as_str(), a.kind))
        .collect();
    assert_eq!(
        titles,
        vec![
            (st.missions[M].title.as_str(), AccountKind::Mission),
            (
                st.work_items["urn:x:w:p"].contract.goal.as_str(),
                AccountKind::WorkItem
            ),
            (
                st.missions["urn:x:mission:child"].title.as_str(),
                AccountKind::Mission
            ),
        ]
    );
    assert!(titles.iter().all(|(t, _)| !t.is_empty()));
    assert_ne!(titles[0].0, titles[2].0);
    let child_line = ledger.account("urn:x:mission:child").unwrap();
    assert_eq!(child_line.parent.as_deref(), Some("urn:x:w:p"));
    let t = child_line
        .figures
        .iter()
        .find(|f| f.dimension == "modelTokens")
        .unwrap();
    assert_eq!(
        (t.allocated, t.remaining, t.effective_limit),
        (Some(400), Some(400), Some(400))
    );
    let child_ledger = LedgerView::build(w.state(), "urn:x:mission:child", &w.log, &[]).unwrap();
    assert_eq!(child_ledger.accounts[0].account_id, "urn:x:mission:child");
}

// ---------------------------------------------------------------------------------------------
// Approval inbox
// ---------------------------------------------------------------------------------------------

#[test]
fn inbox_final_approval_with_revision_hashes_evidence_and_approver_rule() {
    let mut w = World::new();
    let h = w.deliver(G, "urn:x:w:1", "worker", "urn:x:art:1");
    w.submit_mission(G, &[&h]).unwrap();
    let revision = w.state().missions[M].submitted_revision.unwrap();
    let inbox = ApprovalInbox::build(w.state(), &w.viewer("owner"), &[], w.now);
    assert_eq!(inbox.items.len(), 1);
    let item = &inbox.items[0];
    match &item.kind {
        ApprovalKind::MissionFinal {
            revision: r,
            artifact_hashes,
            artifacts,
            evidence,
        } => {
            assert_eq!(*r, revision);
            assert_eq!(artifact_hashes, &vec![h.clone()]);
            // What each hash is, from its published manifest and WorkItem.
            assert_eq!(
                artifacts,
                &vec![ArtifactFacts {
                    content_hash: h.clone(),
                    media_type: Some("text/plain".into()),
                    producer: Some(w.h.id("worker")),
                    classification: Some("internal".into()),
                    work_item_id: Some("urn:x:w:1".into()),
                    work_item_goal: Some("Build the thing".into()),
                }]
            );
            assert_eq!(
                (
                    evidence.items,
                    evidence.successful,
                    evidence.verified_work_items,
                    evidence.work_items
                ),
                (2, 2, 1, 1)
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(item.rule, ApproverRule::MissionOwner);
    assert_eq!(item.rule.command_kind(), Some("mission.approve"));
    assert_eq!(item.approvers, vec![w.h.actor("owner")]);
    assert_eq!(item.viewer, ViewerDecision::MayApprove);
    assert_eq!(item.requested_by, Some(w.h.actor("coord")));
    // The reviewer is a member but not the MissionOwner: AUTH_FORBIDDEN, as the authority says.
    let inbox = ApprovalInbox::build(w.state(), &w.viewer("reviewer"), &[], w.now);
    match &inbox.items[0].viewer {
        ViewerDecision::NotAdmitted { code, .. } => assert_eq!(*code, ErrorCode::AuthForbidden),
        other => panic!("{other:?}"),
    }
    let r = w.go(
        "reviewer",
        G,
        "mission.approve",
        payload(vec![
            ("approvalId", s("urn:x:approval:1")),
            ("missionRevision", n(revision)),
            ("artifactHashes", arr(&[&h])),
            ("acceptancePolicyVersion", s("1.0.0")),
        ]),
    );
    assert_eq!(r.unwrap_err().code, ErrorCode::AuthForbidden);
    // The Coordinator that submitted it: self-approval, refused.
    let inbox = ApprovalInbox::build(w.state(), &w.viewer("coord"), &[], w.now);
    assert_eq!(inbox.items[0].viewer, ViewerDecision::SelfApproval);
    // Approved: the item is gone.
    w.go(
        "owner",
        G,
        "mission.approve",
        payload(vec![
            ("approvalId", s("urn:x:approval:2")),
            ("missionRevision", n(revision)),
            ("artifactHashes", arr(&[&h])),
            ("acceptancePolicyVersion", s("1.0.0")),
        ]),
    )
    .unwrap();
    assert!(
        ApprovalInbox::build(w.state(), &w.viewer("owner"), &[], w.now)
            .items
            .is_empty()
    );
}

/// Each submitted hash is described by the manifest published with it — the latest when two
/// Artifacts hold the same bytes —, in the submission's order.
#[test]
fn inbox_final_approval_describes_each_hash_by_its_latest_manifest() {
    let mut w = World::new();
    let h1 = w.deliver(G, "urn:x:w:1", "worker", "urn:x:art:1");
    w.advance(60);
    let h2 = w.deliver(G, "urn:x:w:2", "worker", "urn:x:art:2");
    w.advance(60);
    // urn:x:w:3 publishes the bytes of urn:x:art:1 again, later: its manifest describes h1.
    let again = w.deliver_content(G, "urn:x:w:3", "worker", "urn:x:art:3", "urn:x:art:1");
    assert_eq!(again, h1);
    w.submit_mission(G, &[&h2, &h1]).unwrap();
    let inbox = ApprovalInbox::build(w.state(), &w.viewer("owner"), &[], w.now);
    let facts = match &inbox.items[0].kind {
        ApprovalKind::MissionFinal { artifacts, .. } => artifacts.clone(),
        other => panic!("{other:?}"),
    };
    let by: Vec<_> = facts
        .iter()
        .map(|f| (f.content_hash.clone(), f.work_item_id.clone()))
        .collect();
    assert_eq!(
        by,
        vec![
            (h2, Some("urn:x:w:2".to_owned())),
            (h1, Some("urn:x:w:3".to_owned())),
        ]
    );
    assert!(
        facts
            .iter()
            .all(|f| f.media_type.as_deref() == Some("text/plain"))
    );
}
#[test]
fn inbox_execution_gate_and_its_human_owner_rule() {
    let mut w = World::new();
    w.authorize(
        G,
        "urn:x:w:gate",
        vec![
            ("executionApproval", s("human_required")),
            ("sideEffectRisk", s("high_risk")),
            ("goal", s("Deploy the service to staging")),
            ("allowedTools", arr(&["deploy-cli"])),
        ],
        vec![],
    );
    w.queue(G, "urn:x:w:gate", "worker");
    let inbox = ApprovalInbox::build(w.state(), &w.viewer("owner"), &[], w.now);
    assert_eq!(inbox.items.len(), 1);
    let item = &inbox.items[0];
    match &item.kind {
        ApprovalKind::ExecutionGate {
            work_item_id,
            goal,
            allowed_tools,
            allowed_resources,
            ownership_epoch,
            execution_approval,
            side_effect_risk,
            ..
        } => {
            assert_eq!(
                (work_item_id.as_str(), *ownership_epoch),
                ("urn:x:w:gate", 1)
            );
            // What the human lets run: the contract's goal, tools and resources.
            assert_eq!(goal, "Deploy the service to staging");
            assert_eq!(allowed_tools, &["deploy-cli".to_owned()]);
            assert_eq!(allowed_resources, &["repo:main".to_owned()]);
            assert_eq!(
                (execution_approval.as_str(), side_effect_risk.as_str()),
                ("human_required", "high_risk")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(item.rule, ApproverRule::HumanMissionOwner);
    assert_eq!(item.viewer, ViewerDecision::MayApprove);
    // The owning Worker may not approve its own gate.
    let inbox = ApprovalInbox::build(w.state(), &w.viewer("worker"), &[], w.now);
    assert_eq!(inbox.items[0].viewer, ViewerDecision::SelfApproval);
    // The Coordinator (an Agent) is not admitted: the handler's rule.
    let inbox = ApprovalInbox::build(w.state(), &w.viewer("coord"), &[], w.now);
    assert!(matches!(
        &inbox.items[0].viewer,
        ViewerDecision::NotAdmitted {
            code: ErrorCode::AuthForbidden,
            ..
        }
    ));
    let p = payload(vec![
        ("approvalId", s("urn:x:approval:gate")),
        ("workItemId", s("urn:x:w:gate")),
        ("ownershipEpoch", n(1)),
        ("operations", arr(&["deploy"])),
    ]);
    w.go("owner", G, "approval.grant_execution", p).unwrap();
    assert!(
        ApprovalInbox::build(w.state(), &w.viewer("owner"), &[], w.now)
            .items
            .is_empty()
    );
}

#[test]
fn inbox_cooperation_override_and_budget_escalation_from_seen_rejections() {
    let mut w = World::new();
    w.h.authority.config.limits.message_rate_per_minute = 1;
    let post = |w: &mut World, who: &str, id: &str| {
        let p = payload(vec![
            ("messageId", s(id)),
            ("conversationId", s(&format!("{G}:mission"))),
            ("content", s("hello")),
        ]);
        w.go(who, G, "message.post", p)
    };
    post(&mut w, "worker", "urn:x:m:1").unwrap();
    let r = post(&mut w, "worker", "urn:x:m:2");
    assert_eq!(r.unwrap_err().code, ErrorCode::RateLimited);
    // The owner hits the limit too: its own request.
    post(&mut w, "owner", "urn:x:m:3").unwrap();
    assert!(post(&mut w, "owner", "urn:x:m:4").is_err());
    // A budget escalation.
    w.authorize(G, "urn:x:w:1", vec![], vec![]);
    w.queue(G, "urn:x:w:1", "worker2");
    w.start(G, "urn:x:w:1", "worker2", 3_600).unwrap();
    assert!(w.usage(G, "urn:x:w:1", "worker2", 2_000).is_err());

    let inbox = ApprovalInbox::build(w.state(), &w.viewer("owner"), &w.seen, w.now);
    let kinds: Vec<_> = inbox
        .items
        .iter()
        .map(|i| match &i.kind {
            ApprovalKind::CooperationOverride {
                policy,
                target_command_kind,
                ..
            } => format!("override {policy} {target_command_kind}"),
            ApprovalKind::BudgetEscalation {
                dimension,
                work_item_id,
                ..
            } => format!(
                "budget {} {}",
                dimension.clone().unwrap(),
                work_item_id.clone().unwrap()
            ),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "override message_rate message.post",
            "override message_rate message.post",
            "budget modelTokens urn:x:w:1"
        ]
    );
    let by = |i: usize| inbox.items[i].requested_by.clone().unwrap();
    assert_eq!(
        (by(0), inbox.items[0].viewer.clone()),
        (w.h.actor("worker"), ViewerDecision::MayApprove)
    );
    // The owner's own override request: self-approval, refused, though the rule admits the owner.
    assert_eq!(
        (by(1), inbox.items[1].viewer.clone()),
        (w.h.actor("owner"), ViewerDecision::SelfApproval)
    );
    assert_eq!(inbox.items[1].rule, ApproverRule::MissionOwnerOrService);
    assert!(inbox.items[1].approvers.contains(&w.h.actor("owner")));
    assert_eq!(inbox.items[2].rule, ApproverRule::BudgetOwner);
    assert_eq!(inbox.items[2].rule.command_kind(), None);

    // The owner grants the worker's override: that request leaves the inbox.
    let target = w.seen[0].action_id.clone();
    let p = payload(vec![
        ("grantId", s("urn:x:grant:1")),
        ("policyName", s("message_rate")),
        (
            "beneficiary",
            obj(vec![("type", s("agent")), ("id", s(&w.h.id("worker")))]),
        ),
        ("targetCommandKind", s("message.post")),
        ("targetActionId", s(&target)),
        ("reason", s("release day")),
        ("expiresAt", s(DEADLINE)),
    ]);
    w.go("owner", G, "policy.grant_cooperation_override", p)
        .unwrap();
    let inbox = ApprovalInbox::build(w.state(), &w.viewer("owner"), &w.seen, w.now);
    assert_eq!(inbox.items.len(), 2);
    assert!(
        inbox
            .items
            .iter()
            .all(|i| i.requested_by != Some(w.h.actor("worker")))
    );
    // A viewer who does not see the Mission gets nothing.
    assert!(
        ApprovalInbox::build(w.state(), &w.viewer("stranger"), &w.seen, w.now)
            .items
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// Timeline and time travel
// ---------------------------------------------------------------------------------------------

/// A varied history: planning, execution, usage, Messages and amendments, a child Mission.
fn rich_world() -> World {
    let mut w = World::new();
    w.authorize(G, "urn:x:w:1", vec![], vec![]);
    w.authorize(
        G,
        "urn:x:w:2",
        vec![],
        vec![("dependencyIds", arr(&["urn:x:w:1"]))],
    );
    let h = w.deliver(G, "urn:x:w:1", "worker", "urn:x:art:1");
    w.queue(G, "urn:x:w:2", "worker2");
    w.advance(30);
    w.start(G, "urn:x:w:2", "worker2", 600).unwrap();
    w.usage(G, "urn:x:w:2", "worker2", 250).unwrap();
    let p = payload(vec![
        ("messageId", s("urn:x:m:1")),
        ("conversationId", s(&format!("{G}:mission"))),
        ("content", s("deploy now")),
    ]);
    w.go("coord", G, "message.post", p).unwrap();
    w.go(
        "coord",
        G,
        "message.correct",
        payload(vec![
            ("amendmentId", s("urn:x:a:1")),
            ("messageId", s("urn:x:m:1")),
            ("reason", s("typo")),
            ("replacementContent", s("deploy tomorrow")),
        ]),
    )
    .unwrap();
    w.authorize(
        G,
        "urn:x:w:3",
        vec![("budget", obj(vec![("modelTokens", n(500))]))],
        vec![],
    );
    let child = payload(vec![
        ("missionId", s("urn:x:mission:child")),
        ("groupId", s("urn:x:group:child")),
        ("parentWorkItemId", s("urn:x:w:3")),
        ("coordinatorId", s(&w.h.id("coord"))),
        ("title", s("Child")),
        ("objective", s("Sub-part")),
        ("definitionOfDone", arr(&["done"])),
        ("deadline", s(WORK_DEADLINE)),
        ("budget", obj(vec![("modelTokens", n(400))])),
        ("permissions", arr(&["read"])),
        ("coordinatorLeaseSeconds", n(31_536_000)),
    ]);
    w.go("coord", G, "mission.create_child", child).unwrap();
    let _ = h;
    w
}

#[test]
fn timeline_lists_every_event_and_filters() {
    let w = rich_world();
    let t = Timeline::build(&w.log);
    assert_eq!(t.entries.len(), w.log.len());
    // Organization Events (card registrations, sessions) number their own log.
    let org: Vec<u64> = t
        .entries
        .iter()
        .filter(|e| e.group_id.is_none())
        .map(|e| e.sequence)
        .collect();
    assert_eq!(org, (1..=6).collect::<Vec<u64>>());
    let root: Vec<u64> = t
        .entries
        .iter()
        .filter(|e| e.group_id.as_deref() == Some(G))
        .map(|e| e.sequence)
        .collect();
    assert_eq!(root, (1..=root.len() as u64).collect::<Vec<_>>());
    let first = &t.entries[0];
    assert!(first.cause_id.starts_with("urn:x:action:"));
    assert_eq!(first.actor.id.0, w.h.id("organization-registry"));
    // Filters.
    let q = |q: TimelineQuery| {
        t.filter(&q)
            .iter()
            .map(|e| e.kind.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        q(TimelineQuery {
            work_item_id: Some("urn:x:w:2".into()),
            kinds: vec!["work.".into()],
            ..Default::default()
        }),
        vec![
            "work.authorized",
            "work.offer.created",
            "work.offer.accepted",
            "work.started"
        ]
    );
    assert_eq!(
        q(TimelineQuery {
            kinds: vec!["message.corrected".into()],
            ..Default::default()
        }),
        vec!["message.corrected"]
    );
    let by_worker2 = t.filter(&TimelineQuery {
        actor_id: Some(w.h.id("worker2")),
        ..Default::default()
    });
    assert!(by_worker2.iter().all(|e| e.actor.id.0 == w.h.id("worker2")));
    assert_eq!(by_worker2.len(), 3, "accept, start, usage");
    assert_eq!(
        q(TimelineQuery {
            group_id: Some("urn:x:group:child".into()),
            ..Default::default()
        }),
        vec!["mission.created"]
    );
}

/// The compact timeline: one lane per WorkItem, its Events in log order as marks placed on the
/// axis all lanes share; Events naming no WorkItem are in no lane (issue 29).
#[test]
fn timeline_groups_events_by_work_item_on_one_time_axis() {
    let w = rich_world();
    let t = Timeline::build(&w.log);
    let all = t.filter(&TimelineQuery::default());
    let (lanes, span) = work_item_lanes(&all);
    let ids: Vec<&str> = lanes.iter().map(|l| l.work_item_id.as_str()).collect();
    assert_eq!(
        ids,
        ["urn:x:w:1", "urn:x:w:2", "urn:x:w:3"],
        "by first Event"
    );
    // Every Event that names a WorkItem is in its lane, once, in log order; no other Event is.
    let named = all.iter().filter(|e| e.work_item_id.is_some()).count();
    assert_eq!(lanes.iter().map(|l| l.marks.len()).sum::<usize>(), named);
    assert!(
        named < all.len(),
        "the history has Events without a WorkItem"
    );
    for lane in &lanes {
        let expected: Vec<usize> = all
            .iter()
            .filter(|e| e.work_item_id.as_deref() == Some(lane.work_item_id.as_str()))
            .map(|e| e.position)
            .collect();
        let got: Vec<usize> = lane.marks.iter().map(|m| m.position).collect();
        assert_eq!(got, expected, "{}", lane.work_item_id);
        assert_eq!(lane.group_id.as_deref(), Some(G));
        assert!(
            lane.marks
                .iter()
                .all(|m| lane.first_at <= m.occurred_at && m.occurred_at <= lane.last_at)
        );
    }
    // w:2's lane starts with its authorization (the WorkItem in the payload) and holds its usage.
    let w2: Vec<&str> = lanes[1]
        .marks
        .iter()
        .filter(|m| m.kind.starts_with("work."))
        .map(|m| m.kind.as_str())
        .collect();
    assert_eq!(
        w2,
        [
            "work.authorized",
            "work.offer.created",
            "work.offer.accepted",
            "work.started"
        ]
    );
    // The shared axis: w:2 started 30 s after w:1's first Event, so its last mark lies later.
    let span = span.unwrap();
    assert!(span.0 < span.1);
    assert_eq!(permille(span.0, span), 0);
    assert_eq!(permille(span.1, span), 1000);
    assert_eq!(
        permille(Micros(span.0.0 - 5), span),
        0,
        "clamped before the axis"
    );
    assert!(permille(lanes[1].last_at, span) > permille(lanes[0].first_at, span));
    assert_eq!(
        permille(span.0, (span.0, span.0)),
        0,
        "an axis of no length"
    );
    // A filter narrows the lanes: the Group of the child Mission names no WorkItem.
    let child = t.filter(&TimelineQuery {
        group_id: Some("urn:x:group:child".into()),
        ..Default::default()
    });
    assert_eq!(work_item_lanes(&child), (Vec::new(), None));
}

/// Time travel equals a fresh replay up to N, for random N in random order (property).
#[test]
fn time_travel_equals_a_fresh_replay_of_every_prefix() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let w = rich_world();
    let log = w.log.clone();
    let tt = std::cell::RefCell::new(TimeTravel::new(log.clone()));
    assert_eq!(
        tt.borrow_mut()
            .state_at(log.len())
            .unwrap()
            .projection_hash(),
        w.state().projection_hash()
    );
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    runner
        .run(&proptest::collection::vec(0..=log.len(), 1..6), |ns| {
            for n in ns {
                let mut fresh = w.h.authority.fresh();
                for e in &log[..n] {
                    fresh.replay(e).unwrap();
                }
                prop_assert_eq!(
                    tt.borrow_mut().state_at(n).unwrap().projection_hash(),
                    fresh.state.projection_hash()
                );
            }
            Ok(())
        })
        .unwrap();
    // Out of range is refused.
    assert!(tt.borrow_mut().state_at(log.len() + 1).is_err());
}

#[test]
fn time_travel_is_incremental_forward_and_builds_views_at_a_position() {
    let w = rich_world();
    let mut tt = TimeTravel::new(w.log.clone());
    let n = tt.len();
    tt.state_at(n / 2).unwrap();
    tt.state_at(n).unwrap();
    assert_eq!(
        tt.applied, n,
        "moving forward applies only the Events in between"
    );
    // Back to the position just after the root's `mission.created`.
    let at = tt.position_after(Some(G), 1).unwrap();
    let now = tt.time_at(at).unwrap();
    let views = tt.views_at(at, &w.viewer("owner"), now).unwrap();
    let card = views.board.card(M).unwrap();
    assert_eq!(card.state, MissionState::Active);
    assert_eq!(card.progress.total, 0);
    // At the end, the same views as from the live state.
    let live = Views::build(w.state(), &w.viewer("owner"), w.now);
    let end = tt.views_at(n, &w.viewer("owner"), w.now).unwrap();
    assert_eq!(end.board, live.board);
    assert_eq!(end.approvals, live.approvals);
    assert_eq!(end.conversations, live.conversations);
    assert_eq!(end.agents, live.agents);
    assert_eq!(tt.position_after(None, 1), Some(1));
    assert_eq!(tt.position_after(Some("urn:x:group:none"), 1), None);
}

// ---------------------------------------------------------------------------------------------
// Conversations and Agents
// ---------------------------------------------------------------------------------------------

#[test]
fn conversations_show_amendment_chains_and_never_actions() {
    let mut w = World::new();
    let conv = format!("{G}:mission");
    let post = |w: &mut World, who: &str, id: &str, text: &str| {
        let p = payload(vec![
            ("messageId", s(id)),
            ("conversationId", s(&conv)),
            ("content", s(text)),
        ]);
        w.go(who, G, "message.post", p).unwrap();
    };
    post(&mut w, "coord", "urn:x:m:1", "deploy to production now");
    post(&mut w, "worker", "urn:x:m:2", "starting");
    post(&mut w, "worker2", "urn:x:m:3", "secret token abc");
    let amend = |w: &mut World, who: &str, kind: &str, id: &str, msg: &str, repl: Option<&str>| {
        let mut p = payload(vec![
            ("amendmentId", s(id)),
            ("messageId", s(msg)),
            ("reason", s("why")),
        ]);
        if let Some(r) = repl {
            p.insert("replacementContent", s(r));
        }
        w.go(who, G, kind, p).unwrap();
    };
    amend(
        &mut w,
        "coord",
        "message.correct",
        "urn:x:a:1",
        "urn:x:m:1",
        Some("deploy to staging"),
    );
    w.advance(1);
    amend(
        &mut w,
        "coord",
        "message.correct",
        "urn:x:a:2",
        "urn:x:m:1",
        Some("deploy to staging tomorrow"),
    );
    amend(
        &mut w,
        "worker",
        "message.retract",
        "urn:x:a:3",
        "urn:x:m:2",
        None,
    );
    amend(
        &mut w,
        "worker2",
        "message.correct",
        "urn:x:a:4",
        "urn:x:m:3",
        Some("token xyz"),
    );
    amend(
        &mut w,
        "owner",
        "message.redact",
        "urn:x:a:5",
        "urn:x:m:3",
        None,
    );

    let c = ConversationView::build(w.state(), G, &conv);
    assert_eq!(c.mission_id, M);
    assert_eq!(c.mission_title, w.state().missions[M].title);
    assert!(!c.mission_title.is_empty());
    let m: Vec<&MessageView> = c.messages.iter().collect();
    assert_eq!(
        m[0].effective,
        Effective::Corrected("deploy to staging tomorrow".into())
    );
    assert_eq!(m[0].original.as_deref(), Some("deploy to production now"));
    assert_eq!(
        m[0].chain.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        vec!["urn:x:a:1", "urn:x:a:2"]
    );
    assert_eq!(m[1].effective, Effective::Retracted);
    assert_eq!(m[2].effective, Effective::Redacted);
    assert_eq!(m[2].original, None, "a redacted Message carries no content");
    assert!(m[2].chain.iter().all(|a| a.replacement.is_none()));
    // "deploy to production now" changed nothing: no WorkItem, no Mission change.
    assert!(w.state().work_items.is_empty());

    // The invariant, checked by the compiler: MessageView has exactly these members and none
    // is an action (adding one breaks this destructuring).
    let MessageView {
        id,
        author,
        created_at,
        mentions,
        original,
        effective,
        chain,
    } = m[0].clone();
    let _ = (id, author, created_at, mentions, original, effective, chain);
    // The Conversations of the root Group: the Mission Conversation.
    let all = ConversationView::all(w.state(), &w.viewer("owner"));
    assert_eq!(
        all.iter()
            .map(|c| c.conversation_id.clone())
            .collect::<Vec<_>>(),
        vec![conv.clone()]
    );
    // `all` groups Messages and amendments in one pass; it must show what `build` shows.
    assert_eq!(all[0], c);
    assert!(ConversationView::all(w.state(), &w.viewer("stranger")).is_empty());
}

#[test]
fn agents_show_cards_capabilities_sessions_and_a_presence_slot() {
    let mut w = World::new();
    w.authorize(G, "urn:x:w:1", vec![], vec![]);
    w.queue(G, "urn:x:w:1", "worker");
    let v = wasm_core::views::agents::AgentsView::build(w.state(), &w.viewer("owner"));
    let ids: Vec<_> = v.agents.iter().map(|a| w.name(&a.agent_id)).collect();
    assert_eq!(ids, vec!["coord", "worker", "worker2"]);
    let a = v.agent(&w.h.id("worker")).unwrap();
    assert_eq!(a.card_version, 1);
    assert_eq!(a.capabilities[0].id, "rust");
    assert_eq!(
        a.capabilities[0].verified_evidence,
        vec!["urn:x:evidence:rust".to_owned()]
    );
    assert_eq!(a.session_epoch, Some(1));
    assert_eq!(a.memberships[0].roles, vec!["worker".to_owned()]);
    let mission = &w.state().missions[&a.memberships[0].mission_id];
    assert_eq!(a.memberships[0].mission_title, mission.title);
    assert!(!mission.title.is_empty());
    assert_eq!(a.work_items, vec!["urn:x:w:1".to_owned()]);
    assert_eq!(a.presence, None);
    // The console builds the Memberships from the registry's cards with the same functions.
    use wasm_core::views::agents::{memberships_in, visible_groups};
    let groups = visible_groups(w.state(), &w.viewer("owner"));
    assert!(!groups.is_empty());
    assert_eq!(
        memberships_in(w.state(), &groups, &w.h.id("worker")),
        a.memberships
    );
    assert!(memberships_in(w.state(), &groups, "urn:x:agent:nobody").is_empty());
    assert!(visible_groups(w.state(), &w.viewer("stranger")).is_empty());
    assert!(
        memberships_in(
            w.state(),
            &visible_groups(w.state(), &w.viewer("stranger")),
            &w.h.id("worker")
        )
        .is_empty()
    );
    // The stranger sees no Mission, so no Agent.
    assert!(
        wasm_core::views::agents::AgentsView::build(w.state(), &w.viewer("stranger"))
            .agents
            .is_empty()
    );
    let _ = Actor::new(ActorType::Agent, "x");
}

// ---------------------------------------------------------------------------------------------
// The laid-out DAG under live Events
// ---------------------------------------------------------------------------------------------

/// A WorkItem starting (a live Event) patches its node; every coordinate stays. Authorizing a
/// new WorkItem changes the structure and lays the graph out again.
#[test]
fn live_events_patch_the_laid_out_dag_and_structure_changes_relayout() {
    use wasm_core::views::layout::{CollapseOptions, LiveLayout, Refresh, Sugiyama};
    let mut w = World::new();
    w.authorize(G, "urn:x:w:1", vec![], vec![]);
    w.authorize(
        G,
        "urn:x:w:2",
        vec![],
        vec![("dependencyIds", arr(&["urn:x:w:1"]))],
    );
    w.authorize(
        G,
        "urn:x:w:3",
        vec![],
        vec![("dependencyIds", arr(&["urn:x:w:1"]))],
    );
    w.queue(G, "urn:x:w:1", "worker");
    let mut live =
        LiveLayout::new(Sugiyama::default(), CollapseOptions::default(), w.dag(M)).unwrap();
    let before: Vec<_> = live
        .nodes
        .iter()
        .map(|n| (n.id.clone(), n.position))
        .collect();
    w.start(G, "urn:x:w:1", "worker", 600).unwrap();
    assert_eq!(
        live.refresh(w.dag(M)).unwrap(),
        Refresh::Patched { changed: 1 }
    );
    let after: Vec<_> = live
        .nodes
        .iter()
        .map(|n| (n.id.clone(), n.position))
        .collect();
    assert_eq!(before, after);
    let n1 = live.attrs("urn:x:w:1").unwrap();
    assert!(n1.running);
    assert_eq!(
        live.node_of("urn:x:w:1").unwrap().state,
        NodeState::Work(WorkState::Active)
    );
    // Layers: w1 above its dependents.
    fn y<L: wasm_core::views::layout::Layout>(live: &LiveLayout<L>, id: &str) -> i64 {
        live.node_of(id).unwrap().position.y
    }
    assert!(y(&live, "urn:x:w:1") < y(&live, "urn:x:w:2"));
    assert!(y(&live, "urn:x:w:1") < y(&live, "urn:x:w:3"));
    w.authorize(
        G,
        "urn:x:w:4",
        vec![],
        vec![("dependencyIds", arr(&["urn:x:w:3"]))],
    );
    assert_eq!(live.refresh(w.dag(M)).unwrap(), Refresh::Relaid);
    assert!(y(&live, "urn:x:w:3") < y(&live, "urn:x:w:4"));
}

/// `DagView::rebuild` (the live update's DAG, recomputing only the nodes whose inputs changed)
/// equals a full `DagView::build` after every Event of a rich history — WorkItems authorized,
/// delivered, queued, started with a lease, charged, a child Mission created — and as the
/// clock moves past leases.
#[test]
fn the_dag_rebuilt_from_the_last_one_equals_a_full_build_after_every_event() {
    let w = rich_world();
    let mut fresh = w.h.authority.fresh();
    let mut prev: Option<(DagView, wasm_core::authority::State)> = None;
    let mut now = t0();
    let mut rebuilt = 0;
    for (k, e) in w.log.iter().enumerate() {
        fresh.replay(e).unwrap();
        if k % 3 == 0 {
            now = now.plus_seconds(300);
        }
        let full = DagView::build(&fresh.state, M, now);
        if let Some((d, old)) = &prev {
            assert_eq!(
                DagView::rebuild(d, old, &fresh.state, now),
                full,
                "after Event {k}"
            );
            rebuilt += 1;
        }
        prev = full.map(|d| (d, fresh.state.clone()));
    }
    assert!(rebuilt > 10, "{rebuilt}");
    // The clock alone: the running WorkItem's Execution Lease runs out.
    let (d, old) = prev.unwrap();
    let later = now.plus_seconds(3_600);
    assert_eq!(
        DagView::rebuild(&d, &old, &fresh.state, later),
        DagView::build(&fresh.state, M, later)
    );
}
