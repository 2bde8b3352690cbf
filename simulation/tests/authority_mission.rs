//! Mission lifecycle end to end through the six verification stages (§7, §14, §20;
//! payloads.md §6.3–§6.10, §6.32, §6.38): Coordinator replacement and renewal, submission,
//! approval and change requests, cancellation and termination with their propagation, child
//! Missions, one-shot Cooperation Override Grants and Group archival. Every §7.1 row is
//! exercised positively and negatively, every guard with its wire code, and every scenario ends
//! with a replay check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use simulation::harness::{Envelope, Harness};
use simulation::kit::{self, G, M, WORK_DEADLINE, arr, at, num, obj, s, st, t0};
use wasm_core::authority::handlers::payload;
use wasm_core::authority::projection::{Mission, WorkItem};
use wasm_core::authority::{Micros, Rejection, Submitted};
use wasm_core::crypto::{DocumentKind, ed25519, sign_document};
use wasm_core::encoding::{b64url_encode, sha256_hash};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::membership::MembershipState;
use wasm_core::model::mission::MissionState;
use wasm_core::model::work_item::WorkItemState;

const ARCHIVE: &str = "ext.missionweaveprotocol.core.group_archive";
const GRANT: &str = "policy.grant_cooperation_override";

type R = Result<Vec<Value>, Rejection>;

fn tokens(n: u64) -> Value {
    obj(vec![("modelTokens", Value::from(n))])
}

/// A WorkContract with a deadline and a model-token budget.
fn contract(deadline: &str, budget: u64) -> Value {
    kit::contract_of(
        vec![("deadline", s(deadline)), ("budget", tokens(budget))],
        vec![],
    )
}

fn kinds(es: &[Value]) -> Vec<String> {
    es.iter().map(|e| st(e, "/kind")).collect()
}

fn one(r: R) -> Value {
    match r {
        Ok(mut es) if es.len() == 1 => es.remove(0),
        other => panic!("expected one appended Event, got {other:?}"),
    }
}

#[track_caller]
fn refused(r: &R, code: ErrorCode) {
    match r {
        Err(e) if e.code == code => {}
        other => panic!("expected {code}, got {other:?}"),
    }
}

/// A harness, the log of every appended Event (for replay) and a clock.
struct World {
    h: Harness,
    log: Vec<Value>,
    now: Micros,
}

impl World {
    /// An Organization with a root Mission `M` in Group `G` (budget 10 000 model tokens and
    /// 100 tool calls, permissions `deploy` and `read`, deadline two days out, a one-year
    /// Coordinator lease held by `coord`).
    fn new() -> World {
        let h = Harness::new(&[
            ("owner", ActorType::Human),
            ("stranger", ActorType::Human),
            ("coord", ActorType::Agent),
            ("coord2", ActorType::Agent),
            ("sub", ActorType::Agent),
            ("worker", ActorType::Agent),
        ]);
        let mut w = World {
            h,
            log: Vec::new(),
            now: t0(),
        };
        for a in ["coord", "coord2", "sub", "worker"] {
            for (who, kind, p) in kit::enrolment(&w.h, a, vec![], w.now) {
                w.sub(who, kind, Envelope::default(), p).unwrap();
            }
        }
        w.create_root(M, G);
        w
    }

    fn create_root(&mut self, mission: &str, group: &str) {
        let budget = obj(vec![
            ("modelTokens", Value::from(10_000u64)),
            ("toolCalls", Value::from(100u64)),
        ]);
        let p = kit::root_mission(&self.h, mission, group, "Root", budget, &["deploy", "read"]);
        let env = kit::in_group(group);
        self.sub("owner", "mission.create", env, p).unwrap();
    }

    /// Submits at `self.now` and records the appended Events.
    fn sub(&mut self, who: &str, kind: &str, env: Envelope, p: Object) -> R {
        match self.h.submit(who, kind, &env, p, self.now)? {
            Submitted::Appended(es) => {
                let vs: Vec<Value> = es.into_iter().map(|e| e.value).collect();
                self.log.extend(vs.iter().cloned());
                Ok(vs)
            }
            Submitted::Duplicate(r) => panic!("unexpected duplicate {r:?}"),
        }
    }

    /// `who`'s envelope in `group`: its current Session and Membership Epochs, and the
    /// Coordinator Epoch when it is the Coordinator there.
    fn env(&self, who: &str, group: &str) -> Envelope {
        let mut env = self.h.current_envelope(who, Some(group));
        // A non-member still sends one (the schema requires it of Agents and humans).
        if env.membership_epoch.is_none() && self.h.actor(who).actor_type != ActorType::Service {
            env.membership_epoch = Some(1);
        }
        env
    }

    /// `who`'s envelope claiming Coordinator Epoch `epoch` (for refused Coordinator kinds).
    fn env_as_coordinator(&self, who: &str, group: &str, epoch: u64) -> Envelope {
        Envelope {
            coordinator_epoch: Some(epoch),
            ..self.env(who, group)
        }
    }

    fn go(&mut self, who: &str, group: &str, kind: &str, p: Object) -> R {
        let env = self.env(who, group);
        self.sub(who, kind, env, p)
    }

    fn go_env(&mut self, who: &str, kind: &str, env: Envelope, p: Object) -> R {
        self.sub(who, kind, env, p)
    }

    fn mission(&self, id: &str) -> &Mission {
        &self.h.authority.state.missions[id]
    }

    fn work(&self, id: &str) -> &WorkItem {
        &self.h.authority.state.work_items[id]
    }

    fn seq(&self, group: &str) -> u64 {
        self.h.authority.state.groups[group].last_sequence
    }

    /// The name of the Principal with `id`.
    fn name(&self, id: &str) -> String {
        self.h
            .principals
            .iter()
            .find(|(_, p)| p.actor.id.as_str() == id)
            .map(|(n, _)| n.clone())
            .unwrap()
    }

    fn coordinator(&self, group: &str) -> String {
        let m = self.h.authority.state.mission_of_group(group).unwrap();
        self.name(&m.coordinator_id)
    }

    fn owner_of(&self, group: &str) -> String {
        let m = self.h.authority.state.mission_of_group(group).unwrap();
        self.name(m.owner.id.as_str())
    }

    /// The Coordinator authorizes a WorkItem.
    fn authorize(&mut self, group: &str, id: &str, deadline: &str, budget: u64) {
        let p = payload(vec![
            ("workItemId", s(id)),
            ("contract", contract(deadline, budget)),
        ]);
        let c = self.coordinator(group);
        self.go(&c, group, "work.authorize", p).unwrap();
    }

    /// `create_child` payload for a child with `coordinator`, a deadline and a token budget.
    fn child_payload(
        &self,
        mission: &str,
        group: &str,
        parent_work: &str,
        coordinator: &str,
        deadline: &str,
        budget: u64,
    ) -> Object {
        payload(vec![
            ("missionId", s(mission)),
            ("groupId", s(group)),
            ("parentWorkItemId", s(parent_work)),
            ("coordinatorId", s(&self.h.id(coordinator))),
            ("title", s("Child")),
            ("objective", s("Do the sub-part")),
            ("definitionOfDone", arr(&["sub-part done"])),
            ("deadline", s(deadline)),
            ("budget", tokens(budget)),
            ("permissions", arr(&["read"])),
            ("coordinatorLeaseSeconds", Value::from(31_536_000u64)),
        ])
    }

    /// The parent Group's Coordinator creates a child Mission.
    fn create_child(&mut self, parent_group: &str, p: Object) -> R {
        let c = self.coordinator(parent_group);
        self.go(&c, parent_group, "mission.create_child", p)
    }

    /// The Group's Coordinator adds `who` as a Worker.
    fn add_worker(&mut self, group: &str, who: &str) {
        if self
            .h
            .authority
            .state
            .membership(group, &self.h.id(who))
            .is_some()
        {
            return;
        }
        let p = kit::membership(&self.h, who, "agent", &["worker"]);
        let c = self.coordinator(group);
        self.go(&c, group, "membership.change", p).unwrap();
    }

    /// Offer, accept, start: the WorkItem is `active` under `who`'s Execution Lease.
    fn start(&mut self, group: &str, work: &str, who: &str) {
        self.add_worker(group, who);
        let c = self.coordinator(group);
        let p = payload(vec![
            ("workItemId", s(work)),
            ("candidateAgentIds", arr(&[&self.h.id(who)])),
            ("selectionBasis", Value::Object(Object::new())),
        ]);
        self.go(&c, group, "work.offer", p).unwrap();
        self.go(
            who,
            group,
            "work.accept_offer",
            payload(vec![("workItemId", s(work))]),
        )
        .unwrap();
        let epoch = self.work(work).ownership_epoch;
        let p = payload(vec![
            ("workItemId", s(work)),
            ("ownershipEpoch", Value::from(epoch)),
        ]);
        self.go(who, group, "work.start", p).unwrap();
    }

    /// The active WorkItem's owner publishes a signed Artifact; returns its content hash.
    fn publish(&mut self, group: &str, work: &str, who: &str, artifact: &str) -> String {
        let w = self.work(work).clone();
        let hash = sha256_hash(artifact.as_bytes());
        let mut manifest = payload(vec![
            ("id", s(artifact)),
            ("contentHash", s(&hash)),
            ("mediaType", s("text/plain")),
            ("schemaUri", Value::Null),
            ("producingAgentId", s(&self.h.id(who))),
            ("agentCardVersion", Value::from(1u64)),
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
        let p = payload(vec![
            ("artifact", Value::Object(manifest)),
            ("ownershipEpoch", Value::from(w.ownership_epoch)),
            (
                "executionLeaseId",
                s(w.execution_lease_id.as_deref().unwrap()),
            ),
        ]);
        self.go(who, group, "artifact.publish", p).unwrap();
        hash
    }

    /// The full Worker path to `verified`: start, publish `artifact`, submit, accept. Returns
    /// the Artifact's content hash.
    fn deliver(&mut self, group: &str, work: &str, who: &str, artifact: &str) -> String {
        self.start(group, work, who);
        let hash = self.publish(group, work, who, artifact);
        let w = self.work(work).clone();
        let p = payload(vec![
            ("workItemId", s(work)),
            ("ownershipEpoch", Value::from(w.ownership_epoch)),
            (
                "executionLeaseId",
                s(w.execution_lease_id.as_deref().unwrap()),
            ),
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

    /// The Coordinator submits the Mission of `group` for approval.
    fn submit(&mut self, group: &str, hashes: &[&str]) -> R {
        let c = self.coordinator(group);
        self.go(
            &c,
            group,
            "mission.submit_for_approval",
            payload(vec![("artifactHashes", arr(hashes))]),
        )
    }

    fn approve_payload(&self, approval: &str, revision: u64, hashes: &[&str]) -> Object {
        payload(vec![
            ("approvalId", s(approval)),
            ("missionRevision", Value::from(revision)),
            ("artifactHashes", arr(hashes)),
            ("acceptancePolicyVersion", s("1.0.0")),
            ("comments", s("looks good")),
        ])
    }

    fn reason(text: &str) -> Object {
        payload(vec![("reason", s(text))])
    }

    /// A fresh Authority replaying every appended Event reaches the identical state.
    fn assert_replays(&self) {
        let mut fresh = self.h.authority.fresh();
        for e in &self.log {
            fresh.replay(e).unwrap();
        }
        assert_eq!(
            format!("{:?}", fresh.state),
            format!("{:?}", self.h.authority.state)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// mission.assign_coordinator and mission.renew_coordinator (§7.2)
// ---------------------------------------------------------------------------------------------

#[test]
fn assign_coordinator_replaces_and_fences_the_old_coordinator() {
    let mut w = World::new();
    let assign = |id: &str| {
        payload(vec![
            ("coordinatorId", s(id)),
            ("leaseSeconds", Value::from(600u64)),
        ])
    };
    let coord2 = w.h.id("coord2");
    let seq = w.seq(G);
    // The Coordinator is not the MissionOwner.
    refused(
        &w.go("coord", G, "mission.assign_coordinator", assign(&coord2)),
        ErrorCode::AuthForbidden,
    );
    // A Principal without a Membership learns nothing about the Group.
    refused(
        &w.go("stranger", G, "mission.assign_coordinator", assign(&coord2)),
        ErrorCode::GroupNotFound,
    );
    // An unregistered Agent (D-4).
    refused(
        &w.go(
            "owner",
            G,
            "mission.assign_coordinator",
            assign("urn:x:agent:nobody"),
        ),
        ErrorCode::InvalidCommand,
    );
    // The current Coordinator again.
    let coord = w.h.id("coord");
    refused(
        &w.go("owner", G, "mission.assign_coordinator", assign(&coord)),
        ErrorCode::InvalidStateTransition,
    );
    // expectedRevision is compared with the Mission revision (D-24).
    let env = Envelope {
        expected_revision: Some(9),
        ..w.env("owner", G)
    };
    refused(
        &w.go_env("owner", "mission.assign_coordinator", env, assign(&coord2)),
        ErrorCode::RevisionConflict,
    );
    // Unknown payload member; leaseSeconds out of range.
    let mut p = assign(&coord2);
    p.insert("bogus", Value::Bool(true));
    refused(
        &w.go("owner", G, "mission.assign_coordinator", p),
        ErrorCode::InvalidCommand,
    );
    let mut p = assign(&coord2);
    p.insert("leaseSeconds", Value::from(0u64));
    refused(
        &w.go("owner", G, "mission.assign_coordinator", p),
        ErrorCode::InvalidCommand,
    );
    // Stale Membership Epoch (D-1).
    let env = Envelope {
        membership_epoch: Some(7),
        ..w.env("owner", G)
    };
    refused(
        &w.go_env("owner", "mission.assign_coordinator", env, assign(&coord2)),
        ErrorCode::MembershipStale,
    );
    assert_eq!(w.seq(G), seq, "rejections appended nothing");

    let rev = w.mission(M).revision;
    let env = Envelope {
        expected_revision: Some(rev),
        ..w.env("owner", G)
    };
    let e = one(w.go_env("owner", "mission.assign_coordinator", env, assign(&coord2)));
    assert_eq!(st(&e, "/kind"), "mission.coordinator.assigned");
    assert_eq!(st(&e, "/payload/previousCoordinatorId"), coord);
    assert_eq!(st(&e, "/payload/coordinatorId"), coord2);
    assert_eq!(num(&e, "/payload/coordinatorEpoch"), 2);
    assert_eq!(
        st(&e, "/payload/leaseExpiresAt"),
        w.now.plus_seconds(600).format()
    );
    let m = w.mission(M);
    assert_eq!(
        (m.coordinator_id.as_str(), m.coordinator_epoch),
        (coord2.as_str(), 2)
    );
    assert_eq!(m.revision, rev, "the Mission revision does not change");
    let st_ = &w.h.authority.state;
    let old = st_.membership(G, &coord).unwrap();
    assert_eq!(
        (old.status.as_str(), old.epoch, old.roles.len()),
        ("ended", 2, 0)
    );
    assert!(old.ended_at.is_some());
    let new = st_.membership(G, &coord2).unwrap();
    assert_eq!(
        (new.status.as_str(), new.epoch, new.roles.clone()),
        ("active", 1, vec!["coordinator".to_owned()])
    );

    // The old Coordinator is fenced: with its old Membership Epoch…
    let env = Envelope {
        membership_epoch: Some(1),
        coordinator_epoch: Some(1),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.renew_coordinator", env, Object::new()),
        ErrorCode::MembershipStale,
    );
    // …and with its current one its Membership (left without roles) has ended.
    let env = Envelope {
        coordinator_epoch: Some(1),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.renew_coordinator", env, Object::new()),
        ErrorCode::MembershipRequired,
    );
    // The new Coordinator with the old Coordinator Epoch.
    let env = Envelope {
        coordinator_epoch: Some(1),
        ..w.env("coord2", G)
    };
    refused(
        &w.go_env("coord2", "mission.renew_coordinator", env, Object::new()),
        ErrorCode::AuthStaleCoordinator,
    );
    one(w.go("coord2", G, "mission.renew_coordinator", Object::new()));

    // An Organization service (the control plane, §7.2) appoints the first Agent again: its
    // ended Membership is reactivated with the role, at the next epoch.
    let e = one(w.go(
        "organization-registry",
        G,
        "mission.assign_coordinator",
        assign(&coord),
    ));
    assert_eq!(num(&e, "/payload/coordinatorEpoch"), 3);
    let st_ = &w.h.authority.state;
    let back = st_.membership(G, &coord).unwrap();
    assert_eq!(
        (back.status.as_str(), back.epoch, back.roles.clone()),
        ("active", 3, vec!["coordinator".to_owned()])
    );
    assert!(back.ended_at.is_none());
    assert_eq!(
        st_.membership(G, &coord2).unwrap().status,
        MembershipState::Ended
    );
    w.assert_replays();
}

#[test]
fn assign_coordinator_transfers_child_ownership() {
    let mut w = World::new();
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    let p = w.child_payload(
        "urn:x:mission:c1",
        "urn:x:group:c1",
        "urn:x:work:1",
        "coord2",
        "2026-07-16T06:00:00Z",
        100,
    );
    w.create_child(G, p).unwrap();
    let (coord, sub) = (w.h.id("coord"), w.h.id("sub"));
    assert_eq!(w.mission("urn:x:mission:c1").owner.id.as_str(), coord);
    w.go(
        "owner",
        G,
        "mission.assign_coordinator",
        payload(vec![("coordinatorId", s(&sub))]),
    )
    .unwrap();
    let c1 = w.mission("urn:x:mission:c1");
    assert_eq!(c1.owner.id.as_str(), sub);
    assert_eq!(c1.owner.actor_type, ActorType::Agent);
    let st_ = &w.h.authority.state;
    let old = st_.membership("urn:x:group:c1", &coord).unwrap();
    assert_eq!((old.status.as_str(), old.epoch), ("ended", 2));
    let new = st_.membership("urn:x:group:c1", &sub).unwrap();
    assert_eq!(
        (new.status.as_str(), new.epoch, new.roles.clone()),
        ("active", 1, vec!["mission_owner".to_owned()])
    );
    // The new owner acts as the child's MissionOwner.
    let e = one(w.go(
        "sub",
        "urn:x:group:c1",
        "mission.cancel",
        World::reason("replanned"),
    ));
    assert_eq!(st(&e, "/kind"), "mission.cancelled");
    w.assert_replays();
}

#[test]
fn renew_coordinator_extends_or_shortens_the_lease() {
    let mut w = World::new();
    let renew = |n: u64| payload(vec![("leaseSeconds", Value::from(n))]);
    w.add_worker(G, "worker");
    let seq = w.seq(G);
    // A member Agent that is not the Coordinator (a human is refused by the schema: the kind is
    // Coordinator-only).
    let env = w.env_as_coordinator("worker", G, 1);
    refused(
        &w.go_env("worker", "mission.renew_coordinator", env, renew(60)),
        ErrorCode::AuthForbidden,
    );
    refused(
        &w.go("owner", G, "mission.renew_coordinator", renew(60)),
        ErrorCode::SchemaValidationFailed,
    );
    // A stale Coordinator Epoch; a missing one is refused by the schema already (D-21).
    let env = Envelope {
        coordinator_epoch: Some(5),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.renew_coordinator", env, renew(60)),
        ErrorCode::AuthStaleCoordinator,
    );
    let env = Envelope {
        coordinator_epoch: None,
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.renew_coordinator", env, renew(60)),
        ErrorCode::SchemaValidationFailed,
    );
    let env = Envelope {
        expected_revision: Some(0),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.renew_coordinator", env, renew(60)),
        ErrorCode::RevisionConflict,
    );
    assert_eq!(w.seq(G), seq);
    // Renewal can shorten the lease.
    let e = one(w.go("coord", G, "mission.renew_coordinator", renew(60)));
    assert_eq!(st(&e, "/kind"), "mission.coordinator.renewed");
    assert_eq!(num(&e, "/payload/coordinatorEpoch"), 1);
    assert_eq!(
        st(&e, "/payload/leaseExpiresAt"),
        w.now.plus_seconds(60).format()
    );
    assert_eq!(
        w.mission(M).coordinator_lease_expires_at,
        Some(w.now.plus_seconds(60))
    );
    // Once the lease has run out it cannot be renewed; only a replacement recovers.
    w.now = w.now.plus_seconds(61);
    refused(
        &w.go("coord", G, "mission.renew_coordinator", renew(60)),
        ErrorCode::WorkLeaseExpired,
    );
    let coord2 = w.h.id("coord2");
    w.go(
        "owner",
        G,
        "mission.assign_coordinator",
        payload(vec![("coordinatorId", s(&coord2))]),
    )
    .unwrap();
    one(w.go("coord2", G, "mission.renew_coordinator", renew(3600)));
    // Terminal Mission.
    w.go("owner", G, "mission.cancel", World::reason("stop"))
        .unwrap();
    refused(
        &w.go("coord2", G, "mission.renew_coordinator", renew(60)),
        ErrorCode::InvalidStateTransition,
    );
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// mission.submit_for_approval, mission.request_changes, mission.approve (§7.1, §7.3)
// ---------------------------------------------------------------------------------------------

#[test]
fn submit_request_changes_and_approve() {
    let mut w = World::new();
    // No WorkItem yet.
    refused(
        &w.submit(G, &["sha256:00"]),
        ErrorCode::InvalidStateTransition,
    );
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    // A WorkItem that is neither verified nor cancelled.
    refused(
        &w.submit(G, &["sha256:00"]),
        ErrorCode::InvalidStateTransition,
    );
    let h1 = w.deliver(G, "urn:x:work:1", "worker", "urn:x:artifact:1");
    // A cancelled WorkItem does not block submission.
    w.authorize(G, "urn:x:work:2", WORK_DEADLINE, 1000);
    w.go(
        "coord",
        G,
        "work.cancel",
        payload(vec![
            ("workItemId", s("urn:x:work:2")),
            ("reason", s("dropped")),
        ]),
    )
    .unwrap();
    let seq = w.seq(G);
    // Unknown hash (D-4), empty list, wrong sender, stale epoch, wrong revision.
    refused(
        &w.submit(G, &[&sha256_hash(b"other")]),
        ErrorCode::InvalidCommand,
    );
    refused(&w.submit(G, &[]), ErrorCode::InvalidCommand);
    let env = w.env_as_coordinator("worker", G, 1);
    refused(
        &w.go_env(
            "worker",
            "mission.submit_for_approval",
            env,
            payload(vec![("artifactHashes", arr(&[&h1]))]),
        ),
        ErrorCode::AuthForbidden,
    );
    let p = payload(vec![("artifactHashes", arr(&[&h1]))]);
    let env = Envelope {
        coordinator_epoch: Some(2),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.submit_for_approval", env, p.clone()),
        ErrorCode::AuthStaleCoordinator,
    );
    let rev = w.mission(M).revision;
    let env = Envelope {
        expected_revision: Some(rev - 1),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.submit_for_approval", env, p.clone()),
        ErrorCode::RevisionConflict,
    );
    // `active` → approve / request_changes is not a §7.1 transition.
    refused(
        &w.go(
            "owner",
            G,
            "mission.approve",
            w.approve_payload("urn:x:approval:1", rev, &[&h1]),
        ),
        ErrorCode::InvalidStateTransition,
    );
    let changes = |rev: u64| {
        payload(vec![
            ("missionRevision", Value::from(rev)),
            ("feedback", s("please add docs")),
        ])
    };
    refused(
        &w.go("owner", G, "mission.request_changes", changes(rev)),
        ErrorCode::InvalidStateTransition,
    );
    assert_eq!(w.seq(G), seq);

    // active → awaiting_approval (hashes sorted and deduplicated).
    let env = Envelope {
        expected_revision: Some(rev),
        ..w.env("coord", G)
    };
    let p = payload(vec![("artifactHashes", arr(&[&h1, &h1]))]);
    let e = one(w.go_env("coord", "mission.submit_for_approval", env, p));
    assert_eq!(st(&e, "/kind"), "mission.submitted_for_approval");
    assert_eq!(st(&e, "/payload/missionId"), M);
    assert_eq!(num(&e, "/payload/missionRevision"), rev);
    assert_eq!(at(&e, "/payload/artifactHashes"), &arr(&[&h1]));
    let m = w.mission(M);
    assert_eq!(m.status, MissionState::AwaitingApproval);
    assert_eq!(m.submitted_revision, Some(rev));
    assert_eq!(m.revision, rev, "submission does not change the revision");
    // Submitting twice.
    refused(&w.submit(G, &[&h1]), ErrorCode::InvalidStateTransition);

    // awaiting_approval → active by request_changes.
    refused(
        &w.go("owner", G, "mission.request_changes", changes(rev + 1)),
        ErrorCode::RevisionConflict,
    );
    refused(
        &w.go("coord", G, "mission.request_changes", changes(rev)),
        ErrorCode::AuthForbidden,
    );
    let mut p = changes(rev);
    p.insert("feedback", s(""));
    refused(
        &w.go("owner", G, "mission.request_changes", p),
        ErrorCode::InvalidCommand,
    );
    let e = one(w.go("owner", G, "mission.request_changes", changes(rev)));
    assert_eq!(st(&e, "/kind"), "mission.changes_requested");
    assert_eq!(st(&e, "/payload/missionId"), M);
    assert_eq!(st(&e, "/payload/feedback"), "please add docs");
    assert_eq!(num(&e, "/payload/newRevision"), rev + 1);
    let m = w.mission(M);
    assert_eq!(
        (m.status.as_str(), m.revision, m.submitted_revision),
        ("active", rev + 1, None)
    );
    assert!(m.submitted_artifact_hashes.is_empty());

    // Resubmit at the new revision, then approve.
    one(w.submit(G, &[&h1]));
    let rev = rev + 1;
    let seq = w.seq(G);
    refused(
        &w.go(
            "owner",
            G,
            "mission.approve",
            w.approve_payload("urn:x:approval:1", rev - 1, &[&h1]),
        ),
        ErrorCode::RevisionConflict,
    );
    refused(
        &w.go(
            "owner",
            G,
            "mission.approve",
            w.approve_payload("urn:x:approval:1", rev, &[&h1, &sha256_hash(b"x")]),
        ),
        ErrorCode::RevisionConflict,
    );
    refused(
        &w.go(
            "owner",
            G,
            "mission.approve",
            w.approve_payload(M, rev, &[&h1]),
        ),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.go(
            "coord",
            G,
            "mission.approve",
            w.approve_payload("urn:x:approval:1", rev, &[&h1]),
        ),
        ErrorCode::AuthForbidden,
    );
    let env = Envelope {
        expected_revision: Some(rev + 3),
        ..w.env("owner", G)
    };
    refused(
        &w.go_env(
            "owner",
            "mission.approve",
            env,
            w.approve_payload("urn:x:approval:1", rev, &[&h1]),
        ),
        ErrorCode::RevisionConflict,
    );
    assert_eq!(w.seq(G), seq);
    let e = one(w.go(
        "owner",
        G,
        "mission.approve",
        w.approve_payload("urn:x:approval:1", rev, &[&h1, &h1]),
    ));
    assert_eq!(st(&e, "/kind"), "mission.approved");
    assert_eq!(st(&e, "/payload/approval/id"), "urn:x:approval:1");
    assert_eq!(st(&e, "/payload/approval/missionId"), M);
    assert_eq!(num(&e, "/payload/approval/missionRevision"), rev);
    assert_eq!(at(&e, "/payload/approval/artifactHashes"), &arr(&[&h1]));
    assert_eq!(st(&e, "/payload/approval/approver/id"), w.h.id("owner"));
    assert_eq!(st(&e, "/payload/approval/acceptancePolicyVersion"), "1.0.0");
    assert_eq!(st(&e, "/payload/approval/comments"), "looks good");
    assert_eq!(st(&e, "/payload/approval/approvedAt"), w.now.format());
    assert!(!st(&e, "/payload/approval/signature").is_empty());
    let m = w.mission(M);
    assert_eq!(m.status, MissionState::Approved);
    assert_eq!(m.approved_artifact_hashes, vec![h1.clone()]);
    assert!(
        w.h.authority
            .state
            .approvals
            .contains_key("urn:x:approval:1")
    );

    // approved is terminal: no transition leaves it.
    let seq = w.seq(G);
    refused(
        &w.go(
            "owner",
            G,
            "mission.approve",
            w.approve_payload("urn:x:approval:2", rev, &[&h1]),
        ),
        ErrorCode::InvalidStateTransition,
    );
    refused(
        &w.go("owner", G, "mission.request_changes", changes(rev)),
        ErrorCode::InvalidStateTransition,
    );
    refused(&w.submit(G, &[&h1]), ErrorCode::InvalidStateTransition);
    refused(
        &w.go("owner", G, "mission.cancel", World::reason("late")),
        ErrorCode::InvalidStateTransition,
    );
    refused(
        &w.go("coord", G, "mission.terminate", World::reason("late")),
        ErrorCode::InvalidStateTransition,
    );
    refused(
        &w.go(
            "owner",
            G,
            "mission.assign_coordinator",
            payload(vec![("coordinatorId", s(&w.h.id("coord2")))]),
        ),
        ErrorCode::InvalidStateTransition,
    );
    assert_eq!(w.seq(G), seq);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// mission.create_child (§7.1 row 3, §14, §20)
// ---------------------------------------------------------------------------------------------

#[test]
fn create_child_promotes_the_parent_work_item() {
    let mut w = World::new();
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    w.start(G, "urn:x:work:1", "worker");
    let lease = w.work("urn:x:work:1").execution_lease_id.clone().unwrap();
    let (rev, wrev) = (w.mission(M).revision, w.work("urn:x:work:1").revision);
    let p = w.child_payload(
        "urn:x:mission:c1",
        "urn:x:group:c1",
        "urn:x:work:1",
        "coord2",
        "2026-07-16T06:00:00Z",
        100,
    );
    let es = w.create_child(G, p).unwrap();
    assert_eq!(kinds(&es), ["mission.child.created", "mission.created"]);
    let (primary, created) = (&es[0], &es[1]);
    assert_eq!(st(primary, "/groupId"), G);
    assert_eq!(st(primary, "/payload/parentMissionId"), M);
    assert_eq!(st(primary, "/payload/parentWorkItemId"), "urn:x:work:1");
    assert_eq!(st(primary, "/payload/childMissionId"), "urn:x:mission:c1");
    assert_eq!(st(primary, "/payload/childGroupId"), "urn:x:group:c1");
    assert_eq!(st(created, "/groupId"), "urn:x:group:c1");
    assert_eq!(num(created, "/sequence"), 1);
    // D-27: the wire eventId of the primary Event.
    assert_eq!(
        st(created, "/payload/parentEventId"),
        st(primary, "/eventId")
    );
    assert!(created.pointer("/payload/followUpOfMissionId").is_none());
    assert_eq!(st(created, "/payload/mission/parentMissionId"), M);
    assert_eq!(
        st(created, "/payload/mission/parentWorkItemId"),
        "urn:x:work:1"
    );
    assert_eq!(
        st(created, "/payload/mission/childFailurePolicy"),
        "block_parent_work_item"
    );
    assert_eq!(st(created, "/payload/mission/owner/id"), w.h.id("coord"));
    assert_eq!(st(created, "/payload/mission/owner/type"), "agent");
    assert_eq!(
        st(created, "/payload/mission/coordinatorId"),
        w.h.id("coord2")
    );
    assert_eq!(
        st(created, "/payload/group/mainConversationId"),
        "urn:x:group:c1:mission"
    );

    // The parent WorkItem is linked, blocked, and its owner fenced.
    let pw = w.work("urn:x:work:1");
    assert_eq!(pw.child_mission_id.as_deref(), Some("urn:x:mission:c1"));
    assert_eq!(pw.status, WorkItemState::Blocked);
    assert_eq!(
        pw.blocker.as_deref(),
        Some("awaiting child Mission urn:x:mission:c1")
    );
    assert_eq!(pw.revision, wrev + 1);
    assert_eq!((pw.assignee_id.clone(), pw.ownership_epoch), (None, 2));
    assert!(pw.execution_lease_id.is_none());
    assert_ne!(w.h.authority.state.leases[&lease].state, "active");
    assert_eq!(w.mission(M).revision, rev + 1);
    // Child Memberships and the ledger account under the parent WorkItem.
    let st_ = &w.h.authority.state;
    let owner = st_.membership("urn:x:group:c1", &w.h.id("coord")).unwrap();
    assert_eq!(
        (owner.roles.clone(), owner.epoch),
        (vec!["mission_owner".to_owned()], 1)
    );
    let c = st_.membership("urn:x:group:c1", &w.h.id("coord2")).unwrap();
    assert_eq!(
        (c.roles.clone(), c.epoch),
        (vec!["coordinator".to_owned()], 1)
    );
    assert_eq!(
        st_.accounts["urn:x:mission:c1"].parent.as_deref(),
        Some("urn:x:work:1")
    );
    assert!(
        st_.accounts["urn:x:work:1"]
            .children
            .contains(&"urn:x:mission:c1".to_owned())
    );

    // A child coordinated by its own owner: one Membership with both roles, epoch 2.
    w.authorize(G, "urn:x:work:2", WORK_DEADLINE, 1000);
    let p = w.child_payload(
        "urn:x:mission:c2",
        "urn:x:group:c2",
        "urn:x:work:2",
        "coord",
        "2026-07-16T06:00:00Z",
        100,
    );
    w.create_child(G, p).unwrap();
    let both =
        w.h.authority
            .state
            .membership("urn:x:group:c2", &w.h.id("coord"))
            .unwrap();
    assert_eq!(
        (both.roles.clone(), both.epoch),
        (
            vec!["coordinator".to_owned(), "mission_owner".to_owned()],
            2
        )
    );
    // The child's Coordinator works in the child Group with that Membership.
    w.authorize(
        "urn:x:group:c2",
        "urn:x:work:c2a",
        "2026-07-16T05:00:00Z",
        50,
    );
    w.assert_replays();
}

#[test]
fn create_child_guards_carry_their_wire_codes() {
    let mut w = World::new();
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    w.authorize(G, "urn:x:work:done", WORK_DEADLINE, 1000);
    w.go(
        "coord",
        G,
        "work.cancel",
        payload(vec![
            ("workItemId", s("urn:x:work:done")),
            ("reason", s("no")),
        ]),
    )
    .unwrap();
    let base = |w: &World| {
        w.child_payload(
            "urn:x:mission:c1",
            "urn:x:group:c1",
            "urn:x:work:1",
            "coord2",
            "2026-07-16T06:00:00Z",
            100,
        )
    };
    let with = |w: &World, k: &'static str, v: Value| {
        let mut p = base(w);
        p.insert(k, v);
        p
    };
    w.add_worker(G, "worker");
    let seq = w.seq(G);
    // A member Agent that is not the parent Coordinator.
    let env = w.env_as_coordinator("worker", G, 1);
    refused(
        &w.go_env("worker", "mission.create_child", env, base(&w)),
        ErrorCode::AuthForbidden,
    );
    // Stale Coordinator Epoch; missing (the schema requires it for this kind).
    let env = Envelope {
        coordinator_epoch: Some(2),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.create_child", env, base(&w)),
        ErrorCode::AuthStaleCoordinator,
    );
    let env = Envelope {
        coordinator_epoch: None,
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.create_child", env, base(&w)),
        ErrorCode::SchemaValidationFailed,
    );
    let env = Envelope {
        expected_revision: Some(99),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.create_child", env, base(&w)),
        ErrorCode::RevisionConflict,
    );
    // Identifiers in use (D-5), an unregistered Coordinator, an unknown WorkItem (D-4).
    refused(
        &w.create_child(G, with(&w, "missionId", s(M))),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.create_child(G, with(&w, "groupId", s(G))),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.create_child(G, with(&w, "coordinatorId", s("urn:x:agent:nobody"))),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.create_child(G, with(&w, "parentWorkItemId", s("urn:x:work:none"))),
        ErrorCode::InvalidCommand,
    );
    // A closed WorkItem cannot be promoted.
    refused(
        &w.create_child(G, with(&w, "parentWorkItemId", s("urn:x:work:done"))),
        ErrorCode::InvalidStateTransition,
    );
    // Deadlines: past, after the parent Mission, after the WorkItem contract (D-6).
    refused(
        &w.create_child(G, with(&w, "deadline", s("2026-07-15T07:00:00Z"))),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.create_child(G, with(&w, "deadline", s("2026-07-18T00:00:00Z"))),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.create_child(G, with(&w, "deadline", s("2026-07-16T09:00:00Z"))),
        ErrorCode::InvalidCommand,
    );
    // Budgets: beyond the parent Mission, a dimension the WorkItem contract does not grant,
    // beyond the WorkItem contract (D-6: BUDGET_EXCEEDED).
    refused(
        &w.create_child(G, with(&w, "budget", tokens(20_000))),
        ErrorCode::BudgetExceeded,
    );
    refused(
        &w.create_child(
            G,
            with(&w, "budget", obj(vec![("toolCalls", Value::from(1u64))])),
        ),
        ErrorCode::BudgetExceeded,
    );
    refused(
        &w.create_child(G, with(&w, "budget", tokens(1001))),
        ErrorCode::BudgetExceeded,
    );
    // Permissions beyond the parent's (D-6: AUTH_FORBIDDEN).
    refused(
        &w.create_child(G, with(&w, "permissions", arr(&["read", "delete"]))),
        ErrorCode::AuthForbidden,
    );
    // Payload shape.
    refused(
        &w.create_child(G, with(&w, "failurePolicy", s("ignore"))),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.create_child(G, with(&w, "definitionOfDone", arr(&[]))),
        ErrorCode::InvalidCommand,
    );
    // A grant cited although no limit is reached.
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:grant:none".into()),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.create_child", env, base(&w)),
        ErrorCode::InvalidCommand,
    );
    assert_eq!(w.seq(G), seq, "rejections appended nothing");

    // The ledger counts siblings: a sub-WorkItem already holds 950 of the 1000 tokens.
    let p = payload(vec![
        ("workItemId", s("urn:x:work:1a")),
        ("contract", contract(WORK_DEADLINE, 950)),
        ("parentWorkItemId", s("urn:x:work:1")),
    ]);
    w.go("coord", G, "work.authorize", p).unwrap();
    refused(&w.create_child(G, base(&w)), ErrorCode::BudgetExceeded);
    // 50 tokens still fit; the WorkItem then has its child and cannot be promoted again.
    w.create_child(G, with(&w, "budget", tokens(50))).unwrap();
    assert_eq!(
        w.work("urn:x:work:1").child_mission_id.as_deref(),
        Some("urn:x:mission:c1")
    );
    let mut p = base(&w);
    p.insert("missionId", s("urn:x:mission:c9"));
    p.insert("groupId", s("urn:x:group:c9"));
    p.insert("budget", tokens(0));
    refused(&w.create_child(G, p), ErrorCode::InvalidStateTransition);

    // A parent Mission that is no longer active.
    w.authorize(G, "urn:x:work:3", WORK_DEADLINE, 10);
    w.go("owner", G, "mission.cancel", World::reason("stop"))
        .unwrap();
    let mut p = base(&w);
    p.insert("missionId", s("urn:x:mission:c3"));
    p.insert("groupId", s("urn:x:group:c3"));
    p.insert("parentWorkItemId", s("urn:x:work:3"));
    refused(&w.create_child(G, p), ErrorCode::InvalidStateTransition);
    w.assert_replays();
}

#[test]
fn delegation_depth_needs_a_one_shot_override() {
    let mut w = World::new();
    w.h.authority.config.limits.max_delegation_depth = 1;
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    let p = w.child_payload(
        "urn:x:mission:c1",
        "urn:x:group:c1",
        "urn:x:work:1",
        "coord2",
        "2026-07-16T06:00:00Z",
        500,
    );
    w.create_child(G, p).unwrap();
    let cg = "urn:x:group:c1";
    w.authorize(cg, "urn:x:work:2", "2026-07-16T05:00:00Z", 100);
    let grandchild = w.child_payload(
        "urn:x:mission:c2",
        "urn:x:group:c2",
        "urn:x:work:2",
        "sub",
        "2026-07-16T04:00:00Z",
        50,
    );
    // Depth 2 > 1: RATE_LIMITED (D-6), before the role checks.
    let r = w.create_child(cg, grandchild.clone());
    refused(&r, ErrorCode::RateLimited);
    let e = r.unwrap_err();
    assert_eq!(
        e.details.get("policy").and_then(Value::as_str),
        Some("delegation_depth")
    );
    let env = w.env_as_coordinator("coord", cg, 1);
    refused(
        &w.go_env("coord", "mission.create_child", env, grandchild.clone()),
        ErrorCode::RateLimited,
    );

    // The child's MissionOwner (the parent Coordinator Agent) issues a one-shot grant.
    let action = "urn:x:action:grandchild";
    let grant = payload(vec![
        ("grantId", s("urn:x:grant:1")),
        ("policyName", s("delegation_depth")),
        (
            "beneficiary",
            obj(vec![("type", s("agent")), ("id", s(&w.h.id("coord2")))]),
        ),
        ("targetCommandKind", s("mission.create_child")),
        ("targetActionId", s(action)),
        ("reason", s("the sub-part is itself complex")),
        ("expiresAt", s("2026-07-15T09:00:00Z")),
    ]);
    let e = one(w.go("coord", cg, GRANT, grant));
    assert_eq!(st(&e, "/kind"), "policy.cooperation_override.granted");
    assert_eq!(
        st(&e, "/payload/cooperationOverrideGrant/approver/id"),
        w.h.id("coord")
    );
    let granted_event = st(&e, "/eventId");
    let cite = |w: &World, action: &str| Envelope {
        cooperation_override_grant_id: Some("urn:x:grant:1".into()),
        action_id: Some(action.into()),
        ..w.env("coord2", cg)
    };
    // Another Action ID, or no citation: still limited.
    refused(
        &w.go_env(
            "coord2",
            "mission.create_child",
            cite(&w, "urn:x:action:other"),
            grandchild.clone(),
        ),
        ErrorCode::RateLimited,
    );
    let env = Envelope {
        action_id: Some(action.into()),
        ..w.env("coord2", cg)
    };
    refused(
        &w.go_env("coord2", "mission.create_child", env, grandchild.clone()),
        ErrorCode::RateLimited,
    );
    // The exact Action ID with the grant: accepted, the grant consumed with the primary Event.
    let es = w
        .go_env(
            "coord2",
            "mission.create_child",
            cite(&w, action),
            grandchild.clone(),
        )
        .unwrap();
    assert_eq!(kinds(&es), ["mission.child.created", "mission.created"]);
    let g = &w.h.authority.state.override_grants["urn:x:grant:1"];
    assert_eq!(g.consumed_at, Some(w.now));
    assert_eq!(
        g.consumed_event_id.as_deref(),
        Some(st(&es[0], "/eventId").as_str())
    );
    let log = &w.h.authority.state.groups[cg].policy_log;
    let decisions: Vec<&str> = log
        .iter()
        .map(|e| e.get("decision").and_then(Value::as_str).unwrap())
        .collect();
    assert_eq!(
        decisions,
        [
            "cooperation override granted",
            "cooperation override consumed"
        ]
    );
    assert_eq!(
        log[0]
            .get("details")
            .and_then(|d| d.pointer("/grantedEventId")),
        Some(&s(&granted_event))
    );
    assert_eq!(
        w.mission("urn:x:mission:c2").parent_mission_id.as_deref(),
        Some("urn:x:mission:c1")
    );
    // The grant is one-shot.
    w.authorize(cg, "urn:x:work:3", "2026-07-16T05:00:00Z", 100);
    let mut again = grandchild;
    again.insert("missionId", s("urn:x:mission:c3"));
    again.insert("groupId", s("urn:x:group:c3"));
    again.insert("parentWorkItemId", s("urn:x:work:3"));
    refused(
        &w.go_env(
            "coord2",
            "mission.create_child",
            cite(&w, "urn:x:action:again"),
            again,
        ),
        ErrorCode::RateLimited,
    );
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// mission.approve of a child Mission (§14)
// ---------------------------------------------------------------------------------------------

/// Separation of duties (M-8, S-17): a parent Coordinator that names itself the child's
/// Coordinator is the child's MissionOwner *and* its submitter; it may not approve its own
/// submission (`AUTH_FORBIDDEN`, `guards::not_self_approval`), and nothing changes.
#[test]
fn a_coordinator_may_not_approve_the_child_it_submitted() {
    let mut w = World::new();
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    let p = w.child_payload(
        "urn:x:mission:c1",
        "urn:x:group:c1",
        "urn:x:work:1",
        "coord",
        "2026-07-16T06:00:00Z",
        500,
    );
    w.create_child(G, p).unwrap();
    let cg = "urn:x:group:c1";
    assert_eq!(
        (w.owner_of(cg), w.coordinator(cg)),
        ("coord".into(), "coord".into())
    );
    w.authorize(cg, "urn:x:work:2", "2026-07-16T05:00:00Z", 100);
    let h = w.deliver(cg, "urn:x:work:2", "worker", "urn:x:artifact:child");
    let e = one(w.submit(cg, &[&h]));
    let rev = num(&e, "/payload/missionRevision");
    let before = w.mission("urn:x:mission:c1").clone();
    refused(
        &w.go(
            "coord",
            cg,
            "mission.approve",
            w.approve_payload("urn:x:approval:self", rev, &[&h]),
        ),
        ErrorCode::AuthForbidden,
    );
    assert_eq!(w.mission("urn:x:mission:c1").status, before.status);
    assert_eq!(w.mission("urn:x:mission:c1").revision, before.revision);
    w.assert_replays();
}

#[test]
fn approving_a_child_verifies_the_parent_work_item() {
    let mut w = World::new();
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    let p = w.child_payload(
        "urn:x:mission:c1",
        "urn:x:group:c1",
        "urn:x:work:1",
        "coord2",
        "2026-07-16T06:00:00Z",
        500,
    );
    w.create_child(G, p).unwrap();
    let cg = "urn:x:group:c1";
    w.authorize(cg, "urn:x:work:2", "2026-07-16T05:00:00Z", 100);
    let h = w.deliver(cg, "urn:x:work:2", "worker", "urn:x:artifact:child");
    let e = one(w.submit(cg, &[&h]));
    let rev = num(&e, "/payload/missionRevision");
    let (prev, wrev) = (w.mission(M).revision, w.work("urn:x:work:1").revision);
    // The child's MissionOwner is the parent Coordinator Agent, in the child Group.
    assert_eq!(w.owner_of(cg), "coord");
    refused(
        &w.go(
            "coord2",
            cg,
            "mission.approve",
            w.approve_payload("urn:x:approval:c1", rev, &[&h]),
        ),
        ErrorCode::AuthForbidden,
    );
    let es = w
        .go(
            "coord",
            cg,
            "mission.approve",
            w.approve_payload("urn:x:approval:c1", rev, &[&h]),
        )
        .unwrap();
    assert_eq!(kinds(&es), ["mission.approved", "work.result.accepted"]);
    assert_eq!(st(&es[0], "/groupId"), cg);
    assert_eq!(st(&es[0], "/payload/approval/approver/type"), "agent");
    let f = &es[1];
    assert_eq!(st(f, "/groupId"), G);
    assert_eq!(st(f, "/workItemId"), "urn:x:work:1");
    assert_eq!(st(f, "/payload/workItemId"), "urn:x:work:1");
    assert_eq!(st(f, "/payload/childMissionId"), "urn:x:mission:c1");
    assert_eq!(st(f, "/payload/childApprovalId"), "urn:x:approval:c1");
    assert_eq!(st(f, "/payload/sourceEventId"), st(&es[0], "/eventId"));
    assert!(f.pointer("/payload/evidence").is_none());
    let pw = w.work("urn:x:work:1");
    assert_eq!(pw.status, WorkItemState::Verified);
    assert_eq!(pw.blocker, None);
    assert_eq!(pw.artifact_ids, vec!["urn:x:artifact:child".to_owned()]);
    assert_eq!(pw.verification_evidence.len(), 1);
    assert_eq!(pw.verification_evidence[0].kind, "child_mission_approval");
    assert_eq!(pw.revision, wrev + 1);
    assert_eq!(w.mission(M).revision, prev + 1);
    assert_eq!(w.mission("urn:x:mission:c1").status, MissionState::Approved);
    // The child's approved Artifacts became the parent WorkItem's: the parent may submit them
    // (§14), while a hash outside its Mission tree is refused.
    refused(
        &w.submit(
            G,
            &["sha256:0000000000000000000000000000000000000000000000000000000000000000"],
        ),
        ErrorCode::InvalidCommand,
    );
    assert!(w.submit(G, &[&h]).is_ok());
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// mission.cancel (§7.1: MissionOwner or Organization policy; propagation to descendants)
// ---------------------------------------------------------------------------------------------

/// Root `M` → `c1` (parent WorkItem `work:1`, Coordinator `coord2`) → `c2` (parent WorkItem
/// `work:2` in `c1`, Coordinator `sub`), each with the given child-failure policies.
fn tree(w: &mut World, c1_policy: &str, c2_policy: &str) {
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    let mut p = w.child_payload(
        "urn:x:mission:c1",
        "urn:x:group:c1",
        "urn:x:work:1",
        "coord2",
        "2026-07-16T06:00:00Z",
        500,
    );
    p.insert("failurePolicy", s(c1_policy));
    w.create_child(G, p).unwrap();
    w.authorize(
        "urn:x:group:c1",
        "urn:x:work:2",
        "2026-07-16T05:00:00Z",
        100,
    );
    let mut p = w.child_payload(
        "urn:x:mission:c2",
        "urn:x:group:c2",
        "urn:x:work:2",
        "sub",
        "2026-07-16T04:00:00Z",
        50,
    );
    p.insert("failurePolicy", s(c2_policy));
    w.create_child("urn:x:group:c1", p).unwrap();
    w.authorize("urn:x:group:c2", "urn:x:work:3", "2026-07-16T03:00:00Z", 10);
}

#[test]
fn cancel_propagates_to_every_open_descendant() {
    let mut w = World::new();
    tree(&mut w, "block_parent_work_item", "block_parent_work_item");
    w.authorize(G, "urn:x:work:open", WORK_DEADLINE, 10);
    w.start(G, "urn:x:work:open", "worker");
    let lease = w
        .work("urn:x:work:open")
        .execution_lease_id
        .clone()
        .unwrap();
    let seq = w.seq(G);
    // The Coordinator may not cancel (§7.1); a non-member learns nothing.
    refused(
        &w.go("coord", G, "mission.cancel", World::reason("x")),
        ErrorCode::AuthForbidden,
    );
    refused(
        &w.go("stranger", G, "mission.cancel", World::reason("x")),
        ErrorCode::GroupNotFound,
    );
    let env = Envelope {
        expected_revision: Some(0),
        ..w.env("owner", G)
    };
    refused(
        &w.go_env("owner", "mission.cancel", env, World::reason("x")),
        ErrorCode::RevisionConflict,
    );
    refused(
        &w.go("owner", G, "mission.cancel", Object::new()),
        ErrorCode::InvalidCommand,
    );
    assert_eq!(w.seq(G), seq);

    let es = w
        .go(
            "owner",
            G,
            "mission.cancel",
            World::reason("priorities changed"),
        )
        .unwrap();
    assert_eq!(
        kinds(&es),
        [
            "mission.cancelled",
            "mission.cancelled",
            "mission.cancelled"
        ]
    );
    assert_eq!(st(&es[0], "/groupId"), G);
    assert_eq!(st(&es[0], "/payload/missionId"), M);
    assert_eq!(st(&es[0], "/payload/reason"), "priorities changed");
    assert!(es[0].pointer("/payload/sourceEventId").is_none());
    // Deepest first, each citing the primary Event by its wire eventId (D-27).
    let primary = st(&es[0], "/eventId");
    for (e, (g, m)) in es[1..].iter().zip([
        ("urn:x:group:c2", "urn:x:mission:c2"),
        ("urn:x:group:c1", "urn:x:mission:c1"),
    ]) {
        assert_eq!(st(e, "/groupId"), g);
        assert_eq!(st(e, "/payload/missionId"), m);
        assert_eq!(
            st(e, "/payload/reason"),
            format!("parent Mission {M} cancelled")
        );
        assert_eq!(st(e, "/payload/sourceEventId"), primary);
    }
    for m in [M, "urn:x:mission:c1", "urn:x:mission:c2"] {
        assert_eq!(w.mission(m).status, MissionState::Cancelled);
    }
    assert_eq!(
        w.mission(M).failure_reason.as_deref(),
        Some("priorities changed")
    );
    // Every unfinished WorkItem is cancelled silently, its owner fenced.
    for id in [
        "urn:x:work:1",
        "urn:x:work:2",
        "urn:x:work:3",
        "urn:x:work:open",
    ] {
        assert_eq!(w.work(id).status, WorkItemState::Cancelled, "{id}");
    }
    let open = w.work("urn:x:work:open");
    assert_eq!((open.assignee_id.clone(), open.ownership_epoch), (None, 2));
    assert_eq!(w.h.authority.state.leases[&lease].state, "revoked");
    // cancelled is terminal.
    refused(
        &w.go("owner", G, "mission.cancel", World::reason("again")),
        ErrorCode::InvalidStateTransition,
    );
    w.assert_replays();
}

#[test]
fn cancelling_a_child_leaves_the_parent_work_item_blocked_and_services_may_cancel() {
    let mut w = World::new();
    tree(&mut w, "block_parent_work_item", "block_parent_work_item");
    // The child's owner (the parent Coordinator) cancels c1; c2 follows; work:1 stays blocked.
    let es = w
        .go(
            "coord",
            "urn:x:group:c1",
            "mission.cancel",
            World::reason("replan"),
        )
        .unwrap();
    assert_eq!(kinds(&es), ["mission.cancelled", "mission.cancelled"]);
    assert_eq!(w.work("urn:x:work:1").status, WorkItemState::Blocked);
    assert_eq!(w.mission(M).status, MissionState::Active);
    // An Organization service skips the owner check.
    let e = one(w.go(
        "organization-registry",
        G,
        "mission.cancel",
        World::reason("policy"),
    ));
    assert_eq!(st(&e, "/actor/type"), "service");
    assert_eq!(w.mission(M).status, MissionState::Cancelled);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// mission.terminate (§7.1: Coordinator or Organization policy; child-failure propagation)
// ---------------------------------------------------------------------------------------------

#[test]
fn terminate_by_the_coordinator_or_a_service_only() {
    let mut w = World::new();
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 10);
    w.authorize(G, "urn:x:work:2", WORK_DEADLINE, 10);
    w.go(
        "coord",
        G,
        "work.cancel",
        payload(vec![("workItemId", s("urn:x:work:2")), ("reason", s("no"))]),
    )
    .unwrap();
    let seq = w.seq(G);
    // D-22: a human (even the MissionOwner) uses mission.cancel instead; the schema already
    // refuses a human actor for this kind.
    refused(
        &w.go("owner", G, "mission.terminate", World::reason("x")),
        ErrorCode::SchemaValidationFailed,
    );
    let env = Envelope {
        coordinator_epoch: Some(4),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.terminate", env, World::reason("x")),
        ErrorCode::AuthStaleCoordinator,
    );
    let env = Envelope {
        coordinator_epoch: None,
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.terminate", env, World::reason("x")),
        ErrorCode::SchemaValidationFailed,
    );
    let env = Envelope {
        expected_revision: Some(100),
        ..w.env("coord", G)
    };
    refused(
        &w.go_env("coord", "mission.terminate", env, World::reason("x")),
        ErrorCode::RevisionConflict,
    );
    assert_eq!(w.seq(G), seq);
    let e = one(w.go("coord", G, "mission.terminate", World::reason("infeasible")));
    assert_eq!(st(&e, "/kind"), "mission.terminated");
    assert_eq!(st(&e, "/payload/missionId"), M);
    assert_eq!(st(&e, "/payload/reason"), "infeasible");
    assert_eq!(w.mission(M).status, MissionState::Failed);
    assert_eq!(w.work("urn:x:work:1").status, WorkItemState::Failed);
    assert_eq!(
        w.work("urn:x:work:2").status,
        WorkItemState::Cancelled,
        "closed items stay closed"
    );
    refused(
        &w.go("coord", G, "mission.terminate", World::reason("again")),
        ErrorCode::InvalidStateTransition,
    );
    // A service terminates another Mission.
    w.create_root("urn:x:mission:two", "urn:x:group:two");
    let e = one(w.go(
        "organization-registry",
        "urn:x:group:two",
        "mission.terminate",
        World::reason("policy"),
    ));
    assert_eq!(st(&e, "/kind"), "mission.terminated");
    assert_eq!(w.mission("urn:x:mission:two").status, MissionState::Failed);
    w.assert_replays();
}

#[test]
fn terminated_child_blocks_or_fails_the_parent_work_item() {
    let mut w = World::new();
    tree(&mut w, "block_parent_work_item", "fail_parent_work_item");
    // The child's owner who is not its Coordinator cannot terminate it (D-22).
    let env = w.env_as_coordinator("coord", "urn:x:group:c1", 1);
    refused(
        &w.go_env("coord", "mission.terminate", env, World::reason("x")),
        ErrorCode::AuthForbidden,
    );
    // c2 (fail_parent_work_item) fails: work:2 in c1 fails, c1 stays active.
    let (rev1, wrev2) = (
        w.mission("urn:x:mission:c1").revision,
        w.work("urn:x:work:2").revision,
    );
    let es = w
        .go(
            "sub",
            "urn:x:group:c2",
            "mission.terminate",
            World::reason("tool broke"),
        )
        .unwrap();
    assert_eq!(kinds(&es), ["mission.terminated", "work.failed"]);
    let r = "child Mission urn:x:mission:c2 failed: tool broke";
    assert_eq!(st(&es[1], "/groupId"), "urn:x:group:c1");
    assert_eq!(st(&es[1], "/payload/workItemId"), "urn:x:work:2");
    assert_eq!(st(&es[1], "/payload/reason"), r);
    assert_eq!(st(&es[1], "/payload/sourceEventId"), st(&es[0], "/eventId"));
    let w2 = w.work("urn:x:work:2");
    assert_eq!(
        (w2.status.as_str(), w2.failure_reason.as_deref()),
        ("failed", Some(r))
    );
    assert_eq!(w2.revision, wrev2 + 1);
    assert_eq!(w.mission("urn:x:mission:c1").revision, rev1 + 1);
    assert_eq!(w.mission("urn:x:mission:c1").status, MissionState::Active);
    assert_eq!(w.work("urn:x:work:3").status, WorkItemState::Failed);

    // c1 (block_parent_work_item) fails: work:1 in the root becomes blocked on it.
    let es = w
        .go(
            "coord2",
            "urn:x:group:c1",
            "mission.terminate",
            World::reason("no way"),
        )
        .unwrap();
    assert_eq!(kinds(&es), ["mission.terminated", "work.blocked"]);
    let r = "child Mission urn:x:mission:c1 failed: no way";
    assert_eq!(st(&es[1], "/groupId"), G);
    assert_eq!(st(&es[1], "/payload/reason"), r);
    assert_eq!(st(&es[1], "/payload/sourceEventId"), st(&es[0], "/eventId"));
    assert!(es[1].pointer("/payload/ownershipLeaseExpiresAt").is_none());
    let w1 = w.work("urn:x:work:1");
    assert_eq!(
        (w1.status.as_str(), w1.blocker.as_deref()),
        ("blocked", Some(r))
    );
    assert_eq!(w.mission(M).status, MissionState::Active);
    w.assert_replays();
}

#[test]
fn fail_parent_mission_propagates_up_the_tree() {
    let mut w = World::new();
    tree(&mut w, "fail_parent_mission", "fail_parent_mission");
    w.authorize(G, "urn:x:work:other", WORK_DEADLINE, 10);
    let es = w
        .go(
            "sub",
            "urn:x:group:c2",
            "mission.terminate",
            World::reason("fatal"),
        )
        .unwrap();
    assert_eq!(
        kinds(&es),
        [
            "mission.terminated",
            "work.failed",
            "mission.terminated",
            "work.failed",
            "mission.terminated"
        ]
    );
    let groups: Vec<String> = es.iter().map(|e| st(e, "/groupId")).collect();
    assert_eq!(
        groups,
        ["urn:x:group:c2", "urn:x:group:c1", "urn:x:group:c1", G, G]
    );
    let r2 = "child Mission urn:x:mission:c2 failed: fatal";
    let r1 = format!("child Mission urn:x:mission:c1 failed: {r2}");
    assert_eq!(st(&es[1], "/payload/reason"), r2);
    assert_eq!(st(&es[2], "/payload/missionId"), "urn:x:mission:c1");
    assert_eq!(st(&es[2], "/payload/reason"), r2);
    assert_eq!(st(&es[2], "/payload/sourceEventId"), st(&es[1], "/eventId"));
    assert_eq!(st(&es[3], "/payload/workItemId"), "urn:x:work:1");
    assert_eq!(st(&es[3], "/payload/reason"), r1);
    assert_eq!(st(&es[3], "/payload/sourceEventId"), st(&es[2], "/eventId"));
    assert_eq!(st(&es[4], "/payload/missionId"), M);
    assert_eq!(st(&es[4], "/payload/sourceEventId"), st(&es[3], "/eventId"));
    for m in [M, "urn:x:mission:c1", "urn:x:mission:c2"] {
        assert_eq!(w.mission(m).status, MissionState::Failed, "{m}");
    }
    for id in [
        "urn:x:work:1",
        "urn:x:work:2",
        "urn:x:work:3",
        "urn:x:work:other",
    ] {
        assert_eq!(w.work(id).status, WorkItemState::Failed, "{id}");
    }
    assert_eq!(
        w.work("urn:x:work:1").failure_reason.as_deref(),
        Some(r1.as_str())
    );
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// policy.grant_cooperation_override (§20)
// ---------------------------------------------------------------------------------------------

#[test]
fn grant_cooperation_override_guards() {
    let mut w = World::new();
    let coord = w.h.id("coord");
    let grant = |id: &str, policy: &str, who: &str, kind: &str, action: &str, expires: &str| {
        payload(vec![
            ("grantId", s(id)),
            ("policyName", s(policy)),
            (
                "beneficiary",
                obj(vec![("type", s("agent")), ("id", s(who))]),
            ),
            ("targetCommandKind", s(kind)),
            ("targetActionId", s(action)),
            ("reason", s("burst of messages")),
            ("expiresAt", s(expires)),
        ])
    };
    let ok = |id: &str| {
        grant(
            id,
            "message_rate",
            &coord,
            "message.post",
            "urn:x:action:burst",
            "2026-07-15T09:00:00Z",
        )
    };
    let e = one(w.go("owner", G, GRANT, ok("urn:x:grant:1")));
    assert_eq!(st(&e, "/kind"), "policy.cooperation_override.granted");
    let g = at(&e, "/payload/cooperationOverrideGrant");
    assert_eq!(st(g, "/id"), "urn:x:grant:1");
    assert_eq!(st(g, "/missionId"), M);
    assert_eq!(st(g, "/groupId"), G);
    assert_eq!(st(g, "/policyName"), "message_rate");
    assert_eq!(st(g, "/beneficiary/id"), coord);
    assert_eq!(st(g, "/targetCommandKind"), "message.post");
    assert_eq!(st(g, "/targetActionId"), "urn:x:action:burst");
    assert_eq!(st(g, "/approver/id"), w.h.id("owner"));
    assert_eq!(st(g, "/grantedAt"), w.now.format());
    assert_eq!(st(g, "/expiresAt"), "2026-07-15T09:00:00Z");
    assert_eq!(at(g, "/consumedAt"), &Value::Null);
    assert_eq!(at(g, "/consumedEventId"), &Value::Null);
    assert!(!st(g, "/signature").is_empty());
    let entry = &w.h.authority.state.groups[G].policy_log[0];
    assert_eq!(
        entry.get("decision").and_then(Value::as_str),
        Some("cooperation override granted")
    );
    // An Organization service may issue one too.
    one(w.go("organization-registry", G, GRANT, ok("urn:x:grant:2")));

    let seq = w.seq(G);
    // Not the MissionOwner.
    refused(
        &w.go("coord", G, GRANT, ok("urn:x:grant:3")),
        ErrorCode::AuthForbidden,
    );
    // A grant to oneself: self-approval (S-17), refused though the owner is admitted.
    let mut to_self = ok("urn:x:grant:3");
    to_self.insert(
        "beneficiary",
        obj(vec![("type", s("human")), ("id", s(&w.h.id("owner")))]),
    );
    refused(&w.go("owner", G, GRANT, to_self), ErrorCode::AuthForbidden);
    // Duplicate id (D-5); kind not gated by the policy; unknown policy.
    refused(
        &w.go("owner", G, GRANT, ok("urn:x:grant:1")),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.go(
            "owner",
            G,
            GRANT,
            grant(
                "urn:x:grant:3",
                "message_rate",
                &coord,
                "work.propose",
                "urn:x:a",
                "2026-07-15T09:00:00Z",
            ),
        ),
        ErrorCode::InvalidCommand,
    );
    refused(
        &w.go(
            "owner",
            G,
            GRANT,
            grant(
                "urn:x:grant:3",
                "everything",
                &coord,
                "message.post",
                "urn:x:a",
                "2026-07-15T09:00:00Z",
            ),
        ),
        ErrorCode::InvalidCommand,
    );
    // Expiry in the past or after the Mission deadline (D-6: INVALID_COMMAND).
    for expires in ["2026-07-15T07:00:00Z", "2026-07-18T00:00:00Z"] {
        refused(
            &w.go(
                "owner",
                G,
                GRANT,
                grant(
                    "urn:x:grant:3",
                    "message_rate",
                    &coord,
                    "message.post",
                    "urn:x:a",
                    expires,
                ),
            ),
            ErrorCode::InvalidCommand,
        );
    }
    // A beneficiary without a Membership in this Group.
    let worker = w.h.id("worker");
    refused(
        &w.go(
            "owner",
            G,
            GRANT,
            grant(
                "urn:x:grant:3",
                "message_rate",
                &worker,
                "message.post",
                "urn:x:a",
                "2026-07-15T09:00:00Z",
            ),
        ),
        ErrorCode::AuthForbidden,
    );
    // An Action ID the beneficiary has already used.
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 10);
    let used = st(w.log.last().unwrap(), "/cause/id");
    refused(
        &w.go(
            "owner",
            G,
            GRANT,
            grant(
                "urn:x:grant:3",
                "message_rate",
                &coord,
                "message.post",
                &used,
                "2026-07-15T09:00:00Z",
            ),
        ),
        ErrorCode::InvalidStateTransition,
    );
    let env = Envelope {
        expected_revision: Some(77),
        ..w.env("owner", G)
    };
    refused(
        &w.go_env("owner", GRANT, env, ok("urn:x:grant:3")),
        ErrorCode::RevisionConflict,
    );
    assert_eq!(w.seq(G), seq + 1, "only the authorization was appended");
    // A terminal Mission.
    w.go("owner", G, "mission.cancel", World::reason("stop"))
        .unwrap();
    refused(
        &w.go("owner", G, GRANT, ok("urn:x:grant:3")),
        ErrorCode::InvalidStateTransition,
    );
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// ext.missionweaveprotocol.core.group_archive (§7.4)
// ---------------------------------------------------------------------------------------------

impl World {
    /// The wire eventIds of `group`'s Events, in sequence order.
    fn event_ids(&self, group: &str) -> Vec<String> {
        self.log
            .iter()
            .filter(|e| e.pointer("/groupId").and_then(Value::as_str) == Some(group))
            .map(|e| st(e, "/eventId"))
            .collect()
    }

    /// A snapshot of `group` signed by `signer` (a Principal name) with `edit` applied first.
    fn snapshot(&self, group: &str, signer: &str, edit: impl FnOnce(&mut Object)) -> Value {
        let ids = self.event_ids(group);
        let mut o = payload(vec![
            ("snapshotId", s(&format!("{group}:snapshot"))),
            ("groupId", s(group)),
            ("throughSequence", Value::from(ids.len() as u64)),
            ("eventIds", Value::Array(ids.iter().map(|i| s(i)).collect())),
            ("stateHash", s(&sha256_hash(b"state"))),
            (
                "policyLog",
                Value::Array(vec![obj(vec![
                    ("entryId", s("urn:x:policy:1")),
                    ("decision", s("Mission closed")),
                    (
                        "actor",
                        obj(vec![("type", s("human")), ("id", s(&self.h.id("owner")))]),
                    ),
                    ("occurredAt", s(&self.now.format())),
                    ("details", Value::Object(Object::new())),
                ])]),
            ),
            (
                "createdBy",
                obj(vec![
                    ("type", s("service")),
                    ("id", s(&self.h.id("group-gateway"))),
                ]),
            ),
            ("createdAt", s(&self.now.format())),
        ]);
        edit(&mut o);
        let mut doc = Value::Object(o);
        let p = &self.h.principals[signer];
        sign_document(&mut doc, DocumentKind::GroupSnapshot, &p.key_id, &p.seed).unwrap();
        doc
    }

    fn archive(&mut self, who: &str, group: &str, snapshot: Value) -> R {
        let env = kit::in_group(group);
        self.go_env(who, ARCHIVE, env, payload(vec![("snapshot", snapshot)]))
    }
}

#[test]
fn group_archive_verifies_the_signed_snapshot() {
    let mut w = World::new();
    // Only a terminal Mission's Group is archived.
    let snap = w.snapshot(G, "group-gateway", |_| {});
    refused(
        &w.archive("organization-registry", G, snap),
        ErrorCode::InvalidStateTransition,
    );
    w.go("owner", G, "mission.cancel", World::reason("done"))
        .unwrap();
    w.now = w.now.plus_seconds(5);
    let good = w.snapshot(G, "group-gateway", |_| {});
    let seq = w.seq(G);
    // Only a service archives.
    let env = w.env("owner", G);
    refused(
        &w.go_env(
            "owner",
            ARCHIVE,
            env,
            payload(vec![("snapshot", good.clone())]),
        ),
        ErrorCode::AuthForbidden,
    );
    refused(
        &w.archive("organization-registry", "urn:x:group:none", good.clone()),
        ErrorCode::GroupNotFound,
    );
    refused(
        &w.go_env(
            "organization-registry",
            ARCHIVE,
            kit::in_group(G),
            Object::new(),
        ),
        ErrorCode::InvalidCommand,
    );
    // createdBy must be a service, and this Group Authority.
    let human = w.snapshot(G, "group-gateway", |o| {
        o.insert(
            "createdBy",
            obj(vec![("type", s("human")), ("id", s(&w.h.id("owner")))]),
        );
    });
    refused(
        &w.archive("organization-registry", G, human),
        ErrorCode::AuthForbidden,
    );
    let other = w.snapshot(G, "organization-registry", |o| {
        o.insert(
            "createdBy",
            obj(vec![
                ("type", s("service")),
                ("id", s(&w.h.id("organization-registry"))),
            ]),
        );
    });
    refused(
        &w.archive("organization-registry", G, other),
        ErrorCode::AuthForbidden,
    );
    // Another key, a tampered document, a bad envelope.
    let wrong_key = w.snapshot(G, "organization-registry", |_| {});
    refused(
        &w.archive("organization-registry", G, wrong_key),
        ErrorCode::AuthForbidden,
    );
    let mut tampered = good.clone();
    if let Value::Object(o) = &mut tampered {
        o.insert("stateHash", s(&sha256_hash(b"forged")));
    }
    refused(
        &w.archive("organization-registry", G, tampered),
        ErrorCode::AuthForbidden,
    );
    let mut envelope = good.clone();
    if let Value::Object(o) = &mut envelope
        && let Some(Value::Object(sig)) = o.get_mut("signature")
    {
        sig.insert("createdAt", s("2026-07-15T08:00:00Z"));
    }
    refused(
        &w.archive("organization-registry", G, envelope),
        ErrorCode::AuthForbidden,
    );
    // Schema: an empty policy log.
    let empty = w.snapshot(G, "group-gateway", |o| {
        o.insert("policyLog", Value::Array(vec![]));
    });
    refused(
        &w.archive("organization-registry", G, empty),
        ErrorCode::InvalidCommand,
    );
    // Another Group; a stale sequence; inexact Event IDs.
    let other_group = w.snapshot(G, "group-gateway", |o| {
        o.insert("groupId", s("urn:x:group:elsewhere"));
    });
    refused(
        &w.archive("organization-registry", G, other_group),
        ErrorCode::InvalidCommand,
    );
    let stale = w.snapshot(G, "group-gateway", |o| {
        o.insert("throughSequence", Value::from(1u64));
    });
    refused(
        &w.archive("organization-registry", G, stale),
        ErrorCode::RevisionConflict,
    );
    let mut ids = w.event_ids(G);
    ids.swap(0, 1);
    let shuffled = w.snapshot(G, "group-gateway", |o| {
        o.insert("eventIds", Value::Array(ids.iter().map(|i| s(i)).collect()));
    });
    refused(
        &w.archive("organization-registry", G, shuffled),
        ErrorCode::InvalidCommand,
    );
    // createdAt before the last Event, or after the Command.
    let early = w.snapshot(G, "group-gateway", |o| {
        o.insert("createdAt", s("2026-07-15T07:59:00Z"));
    });
    refused(
        &w.archive("organization-registry", G, early),
        ErrorCode::InvalidCommand,
    );
    let late = w.snapshot(G, "group-gateway", |o| {
        o.insert("createdAt", s(&t0().plus_seconds(3600).format()));
    });
    refused(
        &w.archive("organization-registry", G, late),
        ErrorCode::InvalidCommand,
    );
    // An identifier already in use (D-5).
    let reused = w.snapshot(G, "group-gateway", |o| {
        o.insert("snapshotId", s(M));
    });
    refused(
        &w.archive("organization-registry", G, reused),
        ErrorCode::InvalidCommand,
    );
    assert_eq!(w.seq(G), seq, "rejections appended nothing");

    let es = w.archive("organization-registry", G, good.clone()).unwrap();
    assert_eq!(kinds(&es), ["group.snapshot.created", "group.archived"]);
    assert_eq!(st(&es[0], "/payload/snapshotId"), format!("{G}:snapshot"));
    assert_eq!(num(&es[0], "/payload/throughSequence"), seq);
    assert_eq!(st(&es[0], "/payload/stateHash"), sha256_hash(b"state"));
    assert_eq!(st(&es[1], "/payload/snapshotId"), format!("{G}:snapshot"));
    assert_eq!(st(&es[1], "/payload/archivedAt"), w.now.format());
    let g = &w.h.authority.state.groups[G].group;
    assert_eq!(g.archived_at, Some(w.now));
    assert_eq!(
        g.archive_snapshot_id.as_deref(),
        Some(format!("{G}:snapshot").as_str())
    );
    // Archived once.
    let again = w.snapshot(G, "group-gateway", |o| {
        o.insert("snapshotId", s("urn:x:snapshot:again"));
    });
    refused(
        &w.archive("organization-registry", G, again),
        ErrorCode::InvalidStateTransition,
    );

    // The reference's `system` spelling of the creator is accepted (D-28): the signature
    // covers the protocol document, where it reads `service`.
    w.create_root("urn:x:mission:two", "urn:x:group:two");
    w.go(
        "owner",
        "urn:x:group:two",
        "mission.cancel",
        World::reason("x"),
    )
    .unwrap();
    let mut sys = w.snapshot("urn:x:group:two", "group-gateway", |_| {});
    if let Value::Object(o) = &mut sys
        && let Some(Value::Object(c)) = o.get_mut("createdBy")
    {
        c.insert("type", s("system"));
    }
    let reused_snapshot = w.snapshot("urn:x:group:two", "group-gateway", |o| {
        o.insert("snapshotId", s(&format!("{G}:snapshot")));
    });
    refused(
        &w.archive("organization-registry", "urn:x:group:two", reused_snapshot),
        ErrorCode::InvalidCommand,
    );
    let es = w
        .archive("organization-registry", "urn:x:group:two", sys)
        .unwrap();
    assert_eq!(kinds(&es), ["group.snapshot.created", "group.archived"]);
    w.assert_replays();
}

// ---------------------------------------------------------------------------------------------
// §7.1 "non-terminal" rows from `awaiting_approval`
// ---------------------------------------------------------------------------------------------

#[test]
fn awaiting_approval_can_be_reassigned_cancelled_or_terminated() {
    let mut w = World::new();
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    let h = w.deliver(G, "urn:x:work:1", "worker", "urn:x:artifact:1");
    one(w.submit(G, &[&h]));
    let rev = w.mission(M).revision;
    // request_changes also compares expectedRevision with the Mission (D-24).
    let env = Envelope {
        expected_revision: Some(rev + 1),
        ..w.env("owner", G)
    };
    let p = payload(vec![
        ("missionRevision", Value::from(rev)),
        ("feedback", s("more")),
    ]);
    refused(
        &w.go_env("owner", "mission.request_changes", env, p),
        ErrorCode::RevisionConflict,
    );
    // A replacement Coordinator while awaiting approval.
    let e = one(w.go(
        "owner",
        G,
        "mission.assign_coordinator",
        payload(vec![("coordinatorId", s(&w.h.id("coord2")))]),
    ));
    assert_eq!(num(&e, "/payload/coordinatorEpoch"), 2);
    assert_eq!(w.mission(M).status, MissionState::AwaitingApproval);
    // awaiting_approval → failed by the (new) Coordinator.
    let e = one(w.go("coord2", G, "mission.terminate", World::reason("abandoned")));
    assert_eq!(st(&e, "/kind"), "mission.terminated");
    assert_eq!(w.mission(M).status, MissionState::Failed);
    assert_eq!(
        w.work("urn:x:work:1").status,
        WorkItemState::Verified,
        "finished items stay"
    );

    // awaiting_approval → cancelled by the MissionOwner.
    w.create_root("urn:x:mission:two", "urn:x:group:two");
    let g2 = "urn:x:group:two";
    w.authorize(g2, "urn:x:work:two", WORK_DEADLINE, 1000);
    let h2 = w.deliver(g2, "urn:x:work:two", "worker", "urn:x:artifact:two");
    one(w.submit(g2, &[&h2]));
    let e = one(w.go(
        "owner",
        g2,
        "mission.cancel",
        World::reason("no longer needed"),
    ));
    assert_eq!(st(&e, "/kind"), "mission.cancelled");
    assert_eq!(
        w.mission("urn:x:mission:two").status,
        MissionState::Cancelled
    );
    let rev2 = w.mission("urn:x:mission:two").revision;
    refused(
        &w.go(
            "owner",
            g2,
            "mission.approve",
            w.approve_payload("urn:x:approval:two", rev2, &[&h2]),
        ),
        ErrorCode::InvalidStateTransition,
    );
    w.assert_replays();
}

/// **work** (D-4): a WorkItem is found only in its own Group. The child's Coordinator naming
/// the parent Group's WorkItem from the child Group gets `INVALID_COMMAND`, and nothing moves
/// in either Group.
#[test]
fn a_work_item_of_another_group_is_not_found() {
    let mut w = World::new();
    w.authorize(G, "urn:x:work:1", WORK_DEADLINE, 1000);
    w.authorize(G, "urn:x:work:2", WORK_DEADLINE, 10);
    let p = w.child_payload(
        "urn:x:mission:c1",
        "urn:x:group:c1",
        "urn:x:work:1",
        "coord2",
        "2026-07-16T06:00:00Z",
        100,
    );
    w.create_child(G, p).unwrap();
    let (root_seq, child_seq) = (w.seq(G), w.seq("urn:x:group:c1"));
    let before = w.work("urn:x:work:2").clone();
    let cancel = payload(vec![("workItemId", s("urn:x:work:2")), ("reason", s("no"))]);
    refused(
        &w.go("coord2", "urn:x:group:c1", "work.cancel", cancel.clone()),
        ErrorCode::InvalidCommand,
    );
    assert_eq!(w.work("urn:x:work:2").status, before.status);
    assert_eq!(w.work("urn:x:work:2").revision, before.revision);
    assert_eq!((w.seq(G), w.seq("urn:x:group:c1")), (root_seq, child_seq));
    // In its own Group, by its own Coordinator, the same Command is accepted.
    w.go("coord", G, "work.cancel", cancel).unwrap();
    assert_eq!(w.work("urn:x:work:2").status, WorkItemState::Cancelled);
}
