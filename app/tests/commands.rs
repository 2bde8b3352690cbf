//! The console's decisions, natively, through the real authority: the Commands the Approvals
//! view builds (`app::commands`) from the replayed state and the inbox are signed with the
//! human's key and submitted to the Group Authority (`wasm_core::authority`, the reducer the
//! server runs) after the six verification stages (the test harness's Registry); the answers are
//! checked as the console checks them (receipt verified again, stored Approval's signature).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use app::commands::{
    self, Author, BuildError, Decision, Fresh, Outcome, SignedCommand, http_outcome, item_key,
    uuid_urn, verify_receipt,
};
use simulation::harness::Envelope;
use simulation::kit::{self, DEADLINE, G, M, WORK_DEADLINE, arr, n, obj, s};
use wasm_core::authority::handlers::payload;
use wasm_core::authority::{Rejection, Submitted};
use wasm_core::crypto::ed25519;
use wasm_core::encoding::{b64url_encode, sha256_hash};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::mission::MissionState;
use wasm_core::model::work_item::WorkItemState;
use wasm_core::views::Viewer;
use wasm_core::views::approvals::{ApprovalInbox, ApprovalItem, ApprovalKind, ViewerDecision};

fn contract(over: Vec<(&'static str, Value)>) -> Value {
    let budget = obj(vec![("modelTokens", n(100)), ("toolCalls", n(10))]);
    let members = vec![
        ("allowedResources", arr(&["repo:main"])),
        ("deadline", s(WORK_DEADLINE)),
        ("budget", budget),
    ];
    kit::contract_of(members, over)
}

// The authority behind a harness Organization, its Event log, the rejections each principal
// saw, a clock, and the console's nonce counter.
simulation::kit_world!(World: Witness { counter: u8 });

impl World {
    /// A root Mission owned by the human `owner` (permissions `deploy`, `read`), Coordinator
    /// `coord`, Workers `worker` and `worker2`.
    fn new() -> World {
        let mut w = World {
            kit: kit::Witness::new(&[
                ("owner", ActorType::Human),
                ("coord", ActorType::Agent),
                ("worker", ActorType::Agent),
                ("worker2", ActorType::Agent),
            ]),
            counter: 0,
        };
        for a in ["coord", "worker", "worker2"] {
            for (who, kind, p) in kit::enrolment(&w.h, a, vec![], w.now) {
                w.sub(who, kind, Envelope::default(), p).unwrap();
            }
        }
        let budget = obj(vec![("modelTokens", n(10_000)), ("toolCalls", n(100))]);
        let p = kit::root_mission(&w.h, M, G, "Root", budget, &["deploy", "read"]);
        let env = kit::in_group(G);
        w.sub("owner", "mission.create", env, p).unwrap();
        for a in ["worker", "worker2"] {
            let p = kit::membership(&w.h, a, "agent", &["worker"]);
            w.go("owner", G, "membership.change", p).unwrap();
        }
        w
    }

    fn state(&self) -> &wasm_core::authority::State {
        &self.h.authority.state
    }

    fn authorize(&mut self, group: &str, id: &str, over: Vec<(&'static str, Value)>) {
        let p = payload(vec![("workItemId", s(id)), ("contract", contract(over))]);
        self.go("coord", group, "work.authorize", p).unwrap();
    }

    fn queue(&mut self, group: &str, work: &str, who: &str) {
        let p = payload(vec![
            ("workItemId", s(work)),
            ("candidateAgentIds", arr(&[&self.h.id(who)])),
            ("selectionBasis", Value::Object(Object::new())),
            ("offerExpiresInSeconds", n(300)),
        ]);
        self.go("coord", group, "work.offer", p).unwrap();
        let p = payload(vec![
            ("workItemId", s(work)),
            ("ownershipLeaseSeconds", n(86_400)),
        ]);
        self.go(who, group, "work.accept_offer", p).unwrap();
    }

    fn start(&mut self, group: &str, work: &str, who: &str) -> Result<Vec<Value>, Rejection> {
        let epoch = self.state().work_items[work].ownership_epoch;
        let p = payload(vec![
            ("workItemId", s(work)),
            ("ownershipEpoch", n(epoch)),
            ("executionLeaseSeconds", n(3_600)),
        ]);
        self.go(who, group, "work.start", p)
    }

    /// A WorkItem delivered to `verified` with one Artifact; returns its hash.
    fn deliver(&mut self, work: &str, artifact: &str) -> String {
        self.authorize(G, work, vec![]);
        self.deliver_in(G, M, work, artifact)
    }

    /// An authorized WorkItem of `group` delivered to `verified` by `worker`.
    fn deliver_in(&mut self, group: &str, mission: &str, work: &str, artifact: &str) -> String {
        self.queue(group, work, "worker");
        self.start(group, work, "worker").unwrap();
        let w = self.state().work_items[work].clone();
        let hash = sha256_hash(artifact.as_bytes());
        let mut manifest = payload(vec![
            ("id", s(artifact)),
            ("contentHash", s(&hash)),
            ("mediaType", s("text/plain")),
            ("schemaUri", Value::Null),
            ("producingAgentId", s(&self.h.id("worker"))),
            ("agentCardVersion", n(1)),
            ("missionId", s(mission)),
            ("groupId", s(group)),
            ("workItemId", s(work)),
            ("sourceArtifactHashes", Value::Array(vec![])),
            ("toolVersions", Value::Object(Object::new())),
            ("modelVersions", Value::Object(Object::new())),
            ("createdAt", s(&self.now.format())),
            ("dataClassification", s("internal")),
        ]);
        let bytes = json::canonicalize(&Value::Object(manifest.clone())).unwrap();
        let sig = b64url_encode(&ed25519::sign(&self.h.principals["worker"].seed, &bytes));
        manifest.insert("signature", s(&sig));
        let lease = w.execution_lease_id.clone().unwrap();
        let p = payload(vec![
            ("artifact", Value::Object(manifest)),
            ("ownershipEpoch", n(w.ownership_epoch)),
            ("executionLeaseId", s(&lease)),
        ]);
        self.go("worker", group, "artifact.publish", p).unwrap();
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
        self.go("worker", group, "work.submit", p).unwrap();
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
        self.go("coord", group, "work.accept_result", p).unwrap();
        hash
    }

    fn submit_mission(&mut self, hashes: &[&str]) {
        self.go(
            "coord",
            G,
            "mission.submit_for_approval",
            payload(vec![("artifactHashes", arr(hashes))]),
        )
        .unwrap();
    }

    /// The owner's inbox as the console builds it.
    fn inbox(&self, who: &str) -> Vec<ApprovalItem> {
        let viewer = Viewer::Principal(self.h.actor(who));
        ApprovalInbox::build(self.state(), &viewer, &self.seen, self.now).items
    }

    fn author(&self, who: &str) -> Author {
        Author {
            principal_id: self.h.id(who),
            key_id: self.h.principals[who].key_id.clone(),
        }
    }

    fn fresh(&mut self) -> Fresh {
        self.counter += 1;
        Fresh::new([self.counter; 16], self.now)
    }

    /// Builds and signs `decision` on `item` as the console does.
    fn sign(&mut self, who: &str, item: &ApprovalItem, decision: &Decision) -> SignedCommand {
        let fresh = self.fresh();
        let author = self.author(who);
        let draft = commands::draft(self.state(), item, &author, decision, &fresh).unwrap();
        commands::sign(draft, &author, &self.h.principals[who].signer).unwrap()
    }

    /// Submits the console's bytes to the authority (six stages, then the reducer).
    fn send(&mut self, cmd: &SignedCommand) -> Result<Vec<Value>, Rejection> {
        let now = self.now;
        match self.h.submit_bytes(cmd.text.as_bytes(), now) {
            Ok(Submitted::Appended(es)) => {
                let vs: Vec<Value> = es.into_iter().map(|e| e.value).collect();
                self.log.extend(vs.iter().cloned());
                Ok(vs)
            }
            Ok(Submitted::Duplicate(r)) => panic!("unexpected duplicate {r:?}"),
            Err(r) => Err(r),
        }
    }
}

fn only(items: Vec<ApprovalItem>) -> ApprovalItem {
    assert_eq!(items.len(), 1, "{items:?}");
    items.into_iter().next().unwrap()
}

#[test]
fn action_ids_are_lowercase_uuid_urns() {
    let a = uuid_urn([0xAB; 16]);
    assert_eq!(a, "urn:uuid:abababab-abab-4bab-abab-abababababab");
    assert_ne!(uuid_urn([1; 16]), uuid_urn([2; 16]));
}

#[test]
fn the_final_approval_is_accepted_and_its_stored_approval_verified_again() {
    let mut w = World::new();
    let h1 = w.deliver("urn:x:w:1", "urn:x:art:1");
    let h2 = w.deliver("urn:x:w:2", "urn:x:art:2");
    w.submit_mission(&[&h2, &h1]);
    let item = only(w.inbox("owner"));
    let ApprovalKind::MissionFinal {
        revision,
        artifact_hashes,
        ..
    } = item.kind.clone()
    else {
        panic!("{item:?}")
    };
    assert_eq!(item.viewer, ViewerDecision::MayApprove);
    let author = w.author("owner");
    let fresh = w.fresh();
    let draft = commands::draft(
        w.state(),
        &item,
        &author,
        &Decision::ApproveMission {
            comments: Some("  looks right ".into()),
        },
        &fresh,
    )
    .unwrap();
    // What the signing summary shows is what is signed.
    let summary = draft.summary().unwrap();
    assert_eq!(summary.kind, "mission.approve");
    assert_eq!(summary.mission_revision, Some(revision));
    let mut expected = vec![h1.clone(), h2.clone()];
    expected.sort();
    assert_eq!(artifact_hashes, expected);
    assert_eq!(summary.artifact_hashes, expected);
    let cmd = commands::sign(draft, &author, &w.h.principals["owner"].signer).unwrap();
    assert_eq!(
        sha256_hash(summary.canonical_json.as_bytes()),
        cmd.signing_hash
    );
    // A human Command: Membership Epoch, no Session Epoch; Approval compare-and-set on the
    // Mission's revision (H-6), the submitted revision in the payload.
    let doc = json::parse(cmd.text.as_bytes()).unwrap();
    assert_eq!(doc.pointer("/membershipEpoch"), Some(&n(1)));
    assert!(doc.pointer("/sessionEpoch").is_none());
    let mission_revision = w.state().missions[M].revision;
    assert_eq!(doc.pointer("/expectedRevision"), Some(&n(mission_revision)));
    assert_eq!(doc.pointer("/payload/missionRevision"), Some(&n(revision)));
    assert_eq!(doc.pointer("/payload/comments"), Some(&s("looks right")));
    assert!(cmd.action_id.starts_with("urn:uuid:"));

    let events = w.send(&cmd).unwrap();
    assert_eq!(w.state().missions[M].status, MissionState::Approved);
    let receipt = verify_receipt(&cmd, &events, &w.h.registry).unwrap();
    assert_eq!(receipt.events.len(), 1);
    assert_eq!(receipt.events[0].kind, "mission.approved");
    assert!(receipt.events[0].signing_hash.starts_with("sha256:"));
    let stored = receipt.stored.unwrap();
    assert_eq!(stored.member, "approval");
    assert_eq!(stored.signature, cmd.signature_value);
    assert_eq!(stored.command_signing_hash, cmd.signing_hash);
    assert_eq!(
        events[0]
            .pointer("/payload/approval/id")
            .and_then(Value::as_str),
        Some(stored.id.as_str())
    );
    // The inbox is empty now.
    assert!(w.inbox("owner").is_empty());

    // A receipt whose stored Approval carries another signature is not trusted.
    let mut forged = cmd.clone();
    forged.signature_value = "AAAA".into();
    assert_eq!(
        verify_receipt(&forged, &events, &w.h.registry),
        Err(commands::ReceiptError::SignatureMismatch)
    );
    // An Event altered after signing fails verification.
    let mut tampered = events[0].clone();
    if let Value::Object(o) = &mut tampered {
        o.insert("sequence", n(999));
    }
    assert!(matches!(
        verify_receipt(&cmd, &[tampered], &w.h.registry),
        Err(commands::ReceiptError::Event(
            ErrorCode::AuthInvalidSignature,
            _
        ))
    ));
    // An exact retry of the same bytes returns the original receipt (§15.1).
    let now = w.now;
    match w.h.submit_bytes(cmd.text.as_bytes(), now) {
        Ok(Submitted::Duplicate(_)) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn request_changes_needs_feedback_and_reopens_the_mission() {
    let mut w = World::new();
    let h = w.deliver("urn:x:w:1", "urn:x:art:1");
    w.submit_mission(&[&h]);
    let item = only(w.inbox("owner"));
    let author = w.author("owner");
    let fresh = w.fresh();
    // No feedback: nothing to sign.
    assert_eq!(
        commands::draft(
            w.state(),
            &item,
            &author,
            &Decision::RequestChanges {
                feedback: "   ".into()
            },
            &fresh
        ),
        Err(BuildError::EmptyText)
    );
    assert_eq!(
        commands::draft(
            w.state(),
            &item,
            &author,
            &Decision::RequestChanges {
                feedback: "x".repeat(513)
            },
            &fresh
        ),
        Err(BuildError::TooLong)
    );
    let revision = w.state().missions[M].revision;
    let cmd = w.sign(
        "owner",
        &item,
        &Decision::RequestChanges {
            feedback: "Add the load test".into(),
        },
    );
    let events = w.send(&cmd).unwrap();
    assert_eq!(
        events[0].pointer("/kind"),
        Some(&s("mission.changes_requested"))
    );
    assert_eq!(
        events[0].pointer("/payload/feedback"),
        Some(&s("Add the load test"))
    );
    let m = &w.state().missions[M];
    assert_eq!((m.status.as_str(), m.revision), ("active", revision + 1));
    let receipt = verify_receipt(&cmd, &events, &w.h.registry).unwrap();
    assert_eq!(receipt.stored, None, "a change request stores no Approval");
    assert!(w.inbox("owner").is_empty());
}

#[test]
fn a_stale_revision_is_refused_with_revision_conflict() {
    let mut w = World::new();
    let h = w.deliver("urn:x:w:1", "urn:x:art:1");
    w.submit_mission(&[&h]);
    // The console signs an approval of this submission…
    let stale_item = only(w.inbox("owner"));
    let stale = w.sign(
        "owner",
        &stale_item,
        &Decision::ApproveMission { comments: None },
    );
    // …while another console requests changes and the Coordinator resubmits.
    let changes = w.sign(
        "owner",
        &stale_item,
        &Decision::RequestChanges {
            feedback: "one more test".into(),
        },
    );
    w.send(&changes).unwrap();
    let h2 = w.deliver("urn:x:w:2", "urn:x:art:2");
    w.submit_mission(&[&h, &h2]);
    let r = w.send(&stale).unwrap_err();
    assert_eq!(r.code, ErrorCode::RevisionConflict);
    assert_eq!(w.state().missions[M].status, MissionState::AwaitingApproval);
    // The HTTP answer of such a refusal is read as the wire error itself.
    let body = format!(
        r#"{{"code":"REVISION_CONFLICT","message":"{}","retryable":false,"relatedActionId":"{}","expectedRevision":{},"currentRevision":{},"occurredAt":"2026-07-15T08:00:00Z"}}"#,
        r.message,
        stale.action_id,
        w.state().missions[M].revision,
        w.state().missions[M].revision - 1
    );
    match http_outcome(422, &body).unwrap() {
        Outcome::Refused(e) => {
            assert_eq!(e.code, ErrorCode::RevisionConflict);
            assert_eq!(
                e.related_action_id.as_ref().map(|a| a.as_str().to_owned()),
                Some(stale.action_id.clone())
            );
            // Kept as a rejection the views read.
            let seen = commands::seen_rejection(&stale, &w.author("owner"), &e, w.now);
            assert_eq!(seen.rejection.code, ErrorCode::RevisionConflict);
            assert_eq!(seen.command_kind, "mission.approve");
        }
        other => panic!("{other:?}"),
    }
    // The fresh item binds the new submission and is accepted.
    let item = only(w.inbox("owner"));
    assert_ne!(item_key(&item), item_key(&stale_item));
    let cmd = w.sign("owner", &item, &Decision::ApproveMission { comments: None });
    let events = w.send(&cmd).unwrap();
    assert!(verify_receipt(&cmd, &events, &w.h.registry).is_ok());
    assert!(matches!(
        http_outcome(200, &format!(r#"{{"status":"accepted","events":[{}]}}"#, json::to_string(&events[0]))),
        Ok(Outcome::Accepted { duplicate: false, ref events }) if events.len() == 1
    ));
}

#[test]
fn the_execution_gate_is_granted_and_the_worker_may_start() {
    let mut w = World::new();
    w.authorize(
        G,
        "urn:x:w:gate",
        vec![
            ("executionApproval", s("human_required")),
            ("sideEffectRisk", s("high_risk")),
        ],
    );
    w.queue(G, "urn:x:w:gate", "worker");
    assert_eq!(
        w.start(G, "urn:x:w:gate", "worker").unwrap_err().code,
        ErrorCode::ApprovalRequired
    );
    let item = only(w.inbox("owner"));
    assert!(matches!(
        item.kind,
        ApprovalKind::ExecutionGate {
            ownership_epoch: 1,
            ..
        }
    ));
    // The Worker that owns the gated WorkItem is not offered its own gate.
    let own = only(w.inbox("worker"));
    assert_eq!(own.viewer, ViewerDecision::SelfApproval);
    let fresh = w.fresh();
    let grant = Decision::GrantExecution {
        operations: vec!["deploy".into()],
        resources: vec![],
        expires_in_seconds: commands::execution_seconds(&item, w.now),
        comments: None,
    };
    assert_eq!(
        commands::draft(w.state(), &own, &w.author("owner"), &grant, &fresh),
        Err(BuildError::NotOffered(ViewerDecision::SelfApproval))
    );
    // No operation chosen: nothing to sign.
    assert_eq!(
        commands::draft(
            w.state(),
            &item,
            &w.author("owner"),
            &Decision::GrantExecution {
                operations: vec![],
                resources: vec![],
                expires_in_seconds: 300,
                comments: None
            },
            &fresh
        ),
        Err(BuildError::NoOperations)
    );
    // A decision that does not fit the item is not built.
    assert_eq!(
        commands::draft(
            w.state(),
            &item,
            &w.author("owner"),
            &Decision::ApproveMission { comments: None },
            &fresh
        ),
        Err(BuildError::NotApplicable)
    );
    let cmd = w.sign("owner", &item, &grant);
    let doc = json::parse(cmd.text.as_bytes()).unwrap();
    assert_eq!(doc.pointer("/payload/ownershipEpoch"), Some(&n(1)));
    assert!(doc.pointer("/sessionEpoch").is_none());
    let events = w.send(&cmd).unwrap();
    assert_eq!(
        events[0].pointer("/kind"),
        Some(&s("approval.execution.granted"))
    );
    let receipt = verify_receipt(&cmd, &events, &w.h.registry).unwrap();
    let stored = receipt.stored.unwrap();
    assert_eq!(stored.signature, cmd.signature_value);
    assert_eq!(stored.command_signing_hash, cmd.signing_hash);
    // The gate is satisfied: the Worker starts.
    assert!(w.inbox("owner").is_empty());
    w.start(G, "urn:x:w:gate", "worker").unwrap();
    assert_eq!(
        w.state().work_items["urn:x:w:gate"].status,
        WorkItemState::Active
    );
}

#[test]
fn denying_an_execution_gate_cancels_the_work_item() {
    let mut w = World::new();
    w.authorize(
        G,
        "urn:x:w:gate",
        vec![("executionApproval", s("human_required"))],
    );
    w.queue(G, "urn:x:w:gate", "worker");
    let item = only(w.inbox("owner"));
    let revision = w.state().work_items["urn:x:w:gate"].revision;
    let cmd = w.sign(
        "owner",
        &item,
        &Decision::CancelWork {
            reason: "not this week".into(),
        },
    );
    let doc = json::parse(cmd.text.as_bytes()).unwrap();
    assert_eq!(doc.pointer("/kind"), Some(&s("work.cancel")));
    assert_eq!(doc.pointer("/expectedRevision"), Some(&n(revision)));
    let events = w.send(&cmd).unwrap();
    assert_eq!(events[0].pointer("/kind"), Some(&s("work.cancelled")));
    assert_eq!(
        w.state().work_items["urn:x:w:gate"].status,
        WorkItemState::Cancelled
    );
    assert!(w.inbox("owner").is_empty());
    // The owner could also cancel the Mission (mission.cancel, Mission revision bound).
    let w2_item = {
        let mut w2 = World::new();
        let h = w2.deliver("urn:x:w:1", "urn:x:art:1");
        w2.submit_mission(&[&h]);
        let item = only(w2.inbox("owner"));
        let cmd = w2.sign(
            "owner",
            &item,
            &Decision::CancelMission {
                reason: "superseded".into(),
            },
        );
        w2.send(&cmd).unwrap();
        assert_eq!(w2.state().missions[M].status, MissionState::Cancelled);
        item
    };
    assert!(matches!(w2_item.kind, ApprovalKind::MissionFinal { .. }));
}

/// The message rate lets one Message per minute through; the second is `RATE_LIMITED`.
fn rate_limited_world() -> (World, String) {
    let mut w = World::new();
    w.h.authority.config.limits.message_rate_per_minute = 1;
    let post = |w: &mut World, who: &str, id: &str, action: &str| {
        let mut env = w.h.current_envelope(who, Some(G));
        env.action_id = Some(action.to_owned());
        let p = payload(vec![
            ("messageId", s(id)),
            ("conversationId", s(&format!("{G}:mission"))),
            ("content", s("hello")),
        ]);
        w.sub(who, "message.post", env, p)
    };
    post(&mut w, "worker", "urn:x:m:1", "urn:x:action:post-1").unwrap();
    let target = "urn:x:action:post-2".to_owned();
    assert_eq!(
        post(&mut w, "worker", "urn:x:m:2", &target)
            .unwrap_err()
            .code,
        ErrorCode::RateLimited
    );
    (w, target)
}

#[test]
fn declining_an_override_signs_nothing_and_the_authority_keeps_refusing() {
    let (mut w, target) = rate_limited_world();
    let item = only(w.inbox("owner"));
    assert!(
        matches!(&item.kind, ApprovalKind::CooperationOverride { target_action_id, .. } if *target_action_id == target)
    );
    assert_eq!(item.viewer, ViewerDecision::MayApprove);
    // Declining is not a Command (0.1 has no deny kind): nothing is built or signed.
    assert!(!Decision::DeclineOverride.is_signed());
    let fresh = w.fresh();
    assert_eq!(
        commands::draft(
            w.state(),
            &item,
            &w.author("owner"),
            &Decision::DeclineOverride,
            &fresh
        ),
        Err(BuildError::NotApplicable)
    );
    // Without a grant the retry of the limited Command is still refused.
    let mut env = w.h.current_envelope("worker", Some(G));
    env.action_id = Some(target.clone());
    let p = payload(vec![
        ("messageId", s("urn:x:m:2")),
        ("conversationId", s(&format!("{G}:mission"))),
        ("content", s("hello")),
    ]);
    assert_eq!(
        w.sub("worker", "message.post", env, p).unwrap_err().code,
        ErrorCode::RateLimited
    );
    assert!(w.state().override_grants.is_empty());
}

#[test]
fn granting_an_override_lets_exactly_that_command_through() {
    let (mut w, target) = rate_limited_world();
    let item = only(w.inbox("owner"));
    let cmd = w.sign(
        "owner",
        &item,
        &Decision::GrantOverride {
            reason: "release notes".into(),
            expires_in_seconds: 600,
        },
    );
    let events = w.send(&cmd).unwrap();
    let receipt = verify_receipt(&cmd, &events, &w.h.registry).unwrap();
    let stored = receipt.stored.unwrap();
    assert_eq!(stored.member, "cooperationOverrideGrant");
    assert_eq!(stored.signature, cmd.signature_value);
    let grant = events[0]
        .pointer("/payload/cooperationOverrideGrant/id")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let mut env = w.h.current_envelope("worker", Some(G));
    env.action_id = Some(target);
    env.cooperation_override_grant_id = Some(grant);
    let p = payload(vec![
        ("messageId", s("urn:x:m:2")),
        ("conversationId", s(&format!("{G}:mission"))),
        ("content", s("hello")),
    ]);
    w.sub("worker", "message.post", env, p).unwrap();
    assert!(w.inbox("owner").is_empty());
}

#[test]
fn self_approval_is_not_offered_and_the_authority_refuses_it() {
    // The owner's own rate-limited Command: the inbox marks it, the console builds nothing.
    let (mut w, _) = rate_limited_world();
    let mut env = w.h.current_envelope("owner", Some(G));
    env.action_id = Some("urn:x:action:owner-post".into());
    let p = payload(vec![
        ("messageId", s("urn:x:m:owner")),
        ("conversationId", s(&format!("{G}:mission"))),
        ("content", s("from the owner")),
    ]);
    // The owner posts once (allowed), then is limited.
    let mut env1 = env.clone();
    env1.action_id = Some("urn:x:action:owner-post-0".into());
    let mut p1 = p.clone();
    p1.insert("messageId", s("urn:x:m:owner0"));
    w.sub("owner", "message.post", env1, p1).unwrap();
    assert_eq!(
        w.sub("owner", "message.post", env, p).unwrap_err().code,
        ErrorCode::RateLimited
    );
    let own = w
        .inbox("owner")
        .into_iter()
        .find(|i| i.requested_by == Some(w.h.actor("owner")))
        .unwrap();
    assert_eq!(own.viewer, ViewerDecision::SelfApproval);
    let fresh = w.fresh();
    let grant = Decision::GrantOverride {
        reason: "me".into(),
        expires_in_seconds: 600,
    };
    assert_eq!(
        commands::draft(w.state(), &own, &w.author("owner"), &grant, &fresh),
        Err(BuildError::NotOffered(ViewerDecision::SelfApproval))
    );
    // Signed by hand anyway: the authority refuses a grant to oneself (AUTH_FORBIDDEN).
    let p = payload(vec![
        ("grantId", s("urn:x:grant:self")),
        ("policyName", s("message_rate")),
        (
            "beneficiary",
            obj(vec![("type", s("human")), ("id", s(&w.h.id("owner")))]),
        ),
        ("targetCommandKind", s("message.post")),
        ("targetActionId", s("urn:x:action:owner-post")),
        ("reason", s("me")),
        ("expiresAt", s("2026-07-15T09:00:00Z")),
    ]);
    let r = w
        .go("owner", G, "policy.grant_cooperation_override", p)
        .unwrap_err();
    assert_eq!(r.code, ErrorCode::AuthForbidden);
    assert!(r.message.contains("self-approval"), "{}", r.message);
}

#[test]
fn a_coordinator_never_approves_the_child_mission_it_submitted() {
    let mut w = World::new();
    // p1 is promoted to a child Mission whose Coordinator is the parent Coordinator itself,
    // so the child's MissionOwner (the parent Coordinator) is also its submitter.
    w.authorize(G, "urn:x:w:p1", vec![]);
    w.queue(G, "urn:x:w:p1", "worker");
    w.start(G, "urn:x:w:p1", "worker").unwrap();
    let p = payload(vec![
        ("missionId", s("urn:x:mission:child")),
        ("groupId", s("urn:x:group:child")),
        ("parentWorkItemId", s("urn:x:w:p1")),
        ("coordinatorId", s(&w.h.id("coord"))),
        ("title", s("Child")),
        ("objective", s("Do the sub-part")),
        ("definitionOfDone", arr(&["sub-part done"])),
        ("deadline", s("2026-07-16T06:00:00Z")),
        ("budget", obj(vec![("modelTokens", n(50))])),
        ("permissions", arr(&["read"])),
        ("coordinatorLeaseSeconds", n(31_536_000)),
    ]);
    w.go("coord", G, "mission.create_child", p).unwrap();
    let c = "urn:x:group:child";
    let child = w.state().mission_of_group(c).unwrap().clone();
    assert_eq!(child.owner, w.h.actor("coord"));
    assert_eq!(child.coordinator_id, w.h.id("coord"));
    // One WorkItem delivered in the child, whose Artifact is submitted.
    let p = payload(vec![
        (
            "principal",
            obj(vec![("type", s("agent")), ("id", s(&w.h.id("worker")))]),
        ),
        ("roles", arr(&["worker"])),
    ]);
    w.go("coord", c, "membership.change", p).unwrap();
    let p = payload(vec![
        ("workItemId", s("urn:x:w:c1")),
        (
            "contract",
            contract(vec![
                ("budget", obj(vec![("modelTokens", n(10))])),
                ("deadline", s("2026-07-16T05:00:00Z")),
            ]),
        ),
    ]);
    w.go("coord", c, "work.authorize", p).unwrap();
    let hash = w.deliver_in(c, "urn:x:mission:child", "urn:x:w:c1", "urn:x:art:c1");
    w.go(
        "coord",
        c,
        "mission.submit_for_approval",
        payload(vec![("artifactHashes", arr(&[&hash]))]),
    )
    .unwrap();
    let submitted = w.state().missions["urn:x:mission:child"]
        .submitted_revision
        .unwrap();
    let r = w
        .go(
            "coord",
            c,
            "mission.approve",
            payload(vec![
                ("approvalId", s("urn:x:approval:self")),
                ("missionRevision", n(submitted)),
                ("artifactHashes", arr(&[&hash])),
                ("acceptancePolicyVersion", s("1.0.0")),
            ]),
        )
        .unwrap_err();
    assert_eq!(r.code, ErrorCode::AuthForbidden);
    assert!(r.message.contains("self-approval"), "{}", r.message);
    assert_eq!(
        w.state().missions["urn:x:mission:child"].status,
        MissionState::AwaitingApproval
    );
    // The inbox agrees: the Coordinator sees its own submission as self-approval.
    let viewer = Viewer::Principal(w.h.actor("coord"));
    let items = ApprovalInbox::build(w.state(), &viewer, &[], w.now).items;
    assert!(
        items
            .iter()
            .any(|i| i.mission_id == "urn:x:mission:child"
                && i.viewer == ViewerDecision::SelfApproval)
    );
}

/// The demo's proposals (`GET /api/demo/proposals`): the console reads them, leaves out one whose
/// payload does not create the Group it names, and the human's `mission.create` of a proposal
/// is a root creation the authority accepts, with that human as MissionOwner.
#[test]
fn a_proposed_mission_is_created_by_the_human_who_signs_it() {
    let mut w = World::new();
    let coordinator = w.h.id("coord");
    let proposal = |mission: &str,
                    group: &str,
                    payload_mission: &str,
                    payload_group: &str,
                    follow_up: Option<&str>| {
        let mut p = payload(vec![
            ("missionId", s(payload_mission)),
            ("groupId", s(payload_group)),
            ("coordinatorId", s(&coordinator)),
            ("title", s("Second")),
            ("objective", s("Ship the second thing")),
            ("definitionOfDone", arr(&["it ships"])),
            ("deadline", s(DEADLINE)),
            ("permissions", arr(&["deploy"])),
        ]);
        if let Some(f) = follow_up {
            p.insert("followUpOfMissionId", s(f));
        }
        obj(vec![
            ("missionId", s(mission)),
            ("groupId", s(group)),
            ("title", s("Second")),
            ("payload", Value::Object(p)),
        ])
    };
    let (m2, g2) = ("urn:x:mission:second", "urn:x:group:second");
    let body = json::to_string(&obj(vec![(
        "proposals",
        Value::Array(vec![
            proposal(m2, g2, m2, g2, None),
            // Names one Group and creates another: never offered.
            proposal(
                "urn:x:mission:third",
                "urn:x:group:third",
                "urn:x:mission:third",
                G,
                None,
            ),
            // Names one Mission and creates another: never offered.
            proposal(
                "urn:x:mission:fourth",
                "urn:x:group:fourth",
                "urn:x:mission:other",
                "urn:x:group:fourth",
                None,
            ),
            // A follow-up, not a root creation: never offered.
            proposal(
                "urn:x:mission:fifth",
                "urn:x:group:fifth",
                "urn:x:mission:fifth",
                "urn:x:group:fifth",
                Some(M),
            ),
        ]),
    )]));
    let list = commands::proposals_of(200, body.as_bytes()).unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    let p = &list[0];
    assert_eq!(
        (p.title.as_str(), p.coordinator_id.as_str()),
        ("Second", coordinator.as_str())
    );
    assert_eq!(commands::proposals_of(404, b"").unwrap(), vec![]);
    assert!(commands::proposals_of(401, b"{}").is_err());
    assert!(commands::proposals_of(200, b"{}").is_err());

    let fresh = w.fresh();
    let author = w.author("owner");
    let draft = commands::create_mission(p, &author, &fresh);
    let summary = draft.summary().unwrap();
    assert_eq!(summary.kind, "mission.create");
    assert_eq!(summary.group_id.as_deref(), Some("urn:x:group:second"));
    for epoch in ["/membershipEpoch", "/sessionEpoch", "/coordinatorEpoch"] {
        assert!(draft.document.pointer(epoch).is_none(), "{epoch} (I-16)");
    }
    let cmd = commands::sign(draft, &author, &w.h.principals["owner"].signer).unwrap();
    let events = w.send(&cmd).unwrap();
    assert_eq!(
        events[0].pointer("/kind").and_then(Value::as_str),
        Some("mission.created")
    );
    let m = &w.state().missions["urn:x:mission:second"];
    assert_eq!(m.owner.id.0, w.h.id("owner"));
    // An Agent may not do the same (§7.1: human-only).
    let fresh = w.fresh();
    let agent = w.author("coord");
    let forged = commands::create_mission(p, &agent, &fresh);
    let forged = commands::sign(forged, &agent, &w.h.principals["coord"].signer).unwrap();
    assert!(w.send(&forged).is_err());
}
