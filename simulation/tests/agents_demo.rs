//! The §22 proof of concept end to end: the demo's Agents against the in-process authority
//! (`Harness`: every Command built, signed, verified in six stages and submitted), every Event
//! delivered to the demo (some twice), the human decisions played by the test, on a simulated
//! clock the test advances (no sleeps). Asserts the story's milestones and each failure
//! injection's effect. Runs natively and, through wasm-bindgen-test, in headless Chromium: the
//! same Agents and authority, entirely in a browser tab.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use simulation::agents::director::{Delivery, Demo, DemoConfig, HumanGate, Opening, Request};
use simulation::agents::{Outcome, Pace, plan};
use simulation::harness::{Envelope, Harness, test_seed};
use std::collections::BTreeMap;
use wasm_core::authority::handlers::payload;
use wasm_core::authority::{Micros, Submitted};
use wasm_core::json::Value;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::mission::MissionState;
use wasm_core::model::work_item::WorkItemState;

/// How long the simulated human takes to decide.
const HUMAN_DELAY_SECONDS: u64 = 300;

fn s(v: &str) -> Value {
    Value::string(v.to_owned())
}

fn st<'v>(v: &'v Value, p: &str) -> &'v str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

fn num(v: &Value, p: &str) -> u64 {
    match v.pointer(p) {
        Some(Value::Number(n)) => n.as_safe_u64().unwrap_or(0),
        _ => 0,
    }
}

struct Run {
    h: Harness,
    demo: Demo,
    now: Micros,
    /// Every Event the authority appended, in order.
    log: Vec<Value>,
    lines: Vec<String>,
    /// Gate key → (when first seen, log length then).
    paused: BTreeMap<String, (Micros, usize)>,
    decisions: Vec<String>,
    /// The proposed Missions the test's human created ([`Opening::Proposed`]).
    created: Vec<String>,
}

impl Run {
    fn new() -> Run {
        Run::opening(Opening::CastHuman)
    }

    /// A run whose root Missions are created by the cast's human (`CastHuman`), or proposed to
    /// a human whose key the demo does not hold (`Proposed`: the test plays that human).
    fn opening(opening: Opening) -> Run {
        let mut h = Harness::new(plan::CAST);
        let start = Micros::parse("2026-07-15T08:00:00Z").unwrap();
        h.bootstrap_agents(&plan::agent_names(), start).unwrap();
        let demo = Demo::new(
            DemoConfig {
                run: "t".into(),
                start,
                pace: Pace::default(),
                duplicate_every: 5,
                delivery: Delivery::Bus,
                opening,
            },
            &|name| (opening == Opening::CastHuman || name != plan::HUMAN).then(|| test_seed(name)),
            Some(h.registry.clone()),
        )
        .unwrap();
        Run {
            h,
            demo,
            now: start,
            log: Vec::new(),
            lines: Vec::new(),
            paused: BTreeMap::new(),
            decisions: Vec::new(),
            created: Vec::new(),
        }
    }

    /// The outcome of a submission; its Events are delivered to the demo first.
    fn settle(&mut self, r: Result<Submitted, wasm_core::authority::Rejection>) -> Outcome {
        match r {
            Ok(Submitted::Appended(events)) => {
                let values: Vec<Value> = events.iter().map(|e| e.value.clone()).collect();
                for e in &events {
                    self.demo.deliver(&e.jcs, self.now).unwrap();
                }
                self.log.extend(values.iter().cloned());
                Outcome::Appended(values)
            }
            Ok(Submitted::Duplicate(_)) => Outcome::Duplicate(Vec::new()),
            Err(e) => Outcome::Rejected {
                code: e.code,
                message: e.message,
            },
        }
    }

    fn handle(&mut self, r: Request) {
        match r {
            Request::OpenSession { id, agent_id, .. } => {
                let p = payload(vec![("agentId", s(&agent_id))]);
                let res = self.h.submit(
                    "group-gateway",
                    "ext.missionweaveprotocol.identity.session_open",
                    &Envelope::default(),
                    p,
                    self.now,
                );
                let o = self.settle(res);
                self.demo.outcome(id, o, self.now);
            }
            Request::Submit { id, bytes, .. } => {
                let res = self.h.submit_bytes(&bytes, self.now);
                let o = self.settle(res);
                self.demo.outcome(id, o, self.now);
            }
            other => panic!("the bus delivery asks for no {other:?}"),
        }
    }

    /// The human MissionOwner's decision at a gate (signed by the human's own key).
    fn decide(&mut self, gate: &HumanGate) {
        let human = plan::HUMAN;
        let (group, kind, p) = match gate {
            HumanGate::ExecutionApproval {
                group_id,
                work_item_id,
                ownership_epoch,
                operations,
                ..
            } => (
                group_id.clone(),
                "approval.grant_execution",
                payload(vec![
                    (
                        "approvalId",
                        s(&format!(
                            "{work_item_id}:execution-approval:{ownership_epoch}"
                        )),
                    ),
                    ("workItemId", s(work_item_id)),
                    ("ownershipEpoch", Value::from(*ownership_epoch)),
                    (
                        "operations",
                        Value::Array(operations.iter().map(|o| s(o)).collect()),
                    ),
                    ("expiresInSeconds", Value::from(3_600u64)),
                    ("comments", s("Staging deployment approved")),
                ]),
            ),
            HumanGate::MissionApproval {
                mission_id,
                group_id,
                revision,
                artifact_hashes,
                ..
            } => {
                let first_look_at_checkout = *mission_id == self.demo.plans().a.mission_id()
                    && !self.decisions.iter().any(|d| d.starts_with("changes"));
                if first_look_at_checkout {
                    (
                        group_id.clone(),
                        "mission.request_changes",
                        payload(vec![
                            ("missionRevision", Value::from(*revision)),
                            ("feedback", s("Add a rollback plan to the release notes")),
                        ]),
                    )
                } else {
                    (
                        group_id.clone(),
                        "mission.approve",
                        payload(vec![
                            (
                                "approvalId",
                                s(&format!("{mission_id}:approval:{revision}")),
                            ),
                            ("missionRevision", Value::from(*revision)),
                            (
                                "artifactHashes",
                                Value::Array(artifact_hashes.iter().map(|h| s(h)).collect()),
                            ),
                            ("acceptancePolicyVersion", s("1.0.0")),
                            ("comments", s("Approved")),
                        ]),
                    )
                }
            }
        };
        let env = self.h.current_envelope(human, Some(&group));
        let res = self.h.submit(human, kind, &env, p, self.now);
        assert!(res.is_ok(), "{kind}: {res:?}");
        self.settle(res);
        let label = if kind == "mission.request_changes" {
            "changes"
        } else {
            kind
        };
        self.decisions.push(format!("{label} {}", gate.key()));
    }

    /// Runs the demo until both root Missions are approved.
    fn run(&mut self) {
        let delay = Micros::from_seconds(i64::try_from(HUMAN_DELAY_SECONDS).unwrap());
        for _ in 0..200_000 {
            let reqs = self.demo.requests(self.now);
            self.lines.extend(self.demo.take_log());
            if !reqs.is_empty() {
                for r in reqs {
                    self.handle(r);
                }
                continue;
            }
            // A human of the Organization creates each proposed Mission, as proposed.
            if let Some(p) = self.demo.proposals().first().cloned() {
                let Value::Object(payload) = p.payload.clone() else {
                    panic!("a proposal's payload is an object");
                };
                let env = Envelope {
                    group_id: Some(p.group_id.clone()),
                    ..Envelope::default()
                };
                let res = self
                    .h
                    .submit(plan::HUMAN, "mission.create", &env, payload, self.now);
                assert!(res.is_ok(), "mission.create of {}: {res:?}", p.title);
                self.settle(res);
                self.created.push(p.mission_id);
                continue;
            }
            let mut acted = false;
            for g in self.demo.gates(self.now) {
                let (since, _) = *self
                    .paused
                    .entry(g.key())
                    .or_insert((self.now, self.log.len()));
                if self.now >= since.plus_micros(delay) {
                    self.check_paused(&g);
                    self.decide(&g);
                    acted = true;
                    break;
                }
            }
            if acted {
                continue;
            }
            if self.demo.finished() {
                self.lines.extend(self.demo.take_log());
                return;
            }
            let human = self
                .demo
                .gates(self.now)
                .iter()
                .filter_map(|g| self.paused.get(&g.key()).map(|(t, _)| t.plus_micros(delay)))
                .min();
            let next = [self.demo.next_wake(), human]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or_else(|| {
                    panic!(
                        "the demo is stuck at {}:\n{}",
                        self.now,
                        self.lines.join("\n")
                    )
                });
            assert!(next > self.now, "time must move forward");
            self.now = next;
        }
        panic!("the demo did not finish:\n{}", self.lines.join("\n"));
    }

    /// While a gate waited, nothing the gate guards happened.
    fn check_paused(&self, gate: &HumanGate) {
        let (_, from) = self.paused[&gate.key()];
        if let HumanGate::ExecutionApproval { work_item_id, .. } = gate {
            let started = self.log[from..]
                .iter()
                .any(|e| st(e, "/kind") == "work.started" && st(e, "/workItemId") == work_item_id);
            assert!(
                !started,
                "{work_item_id} started before its execution approval"
            );
        }
    }

    fn events(&self, kind: &str) -> Vec<(usize, &Value)> {
        self.log
            .iter()
            .enumerate()
            .filter(|(_, e)| st(e, "/kind") == kind)
            .collect()
    }

    fn first(&self, kind: &str, work: &str) -> usize {
        self.events(kind)
            .into_iter()
            .find(|(_, e)| st(e, "/workItemId") == work)
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("no {kind} for {work}"))
    }

    fn all(&self, kind: &str, work: &str) -> Vec<usize> {
        self.events(kind)
            .into_iter()
            .filter(|(_, e)| st(e, "/workItemId") == work)
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_two_mission_demo_runs_to_approval_with_every_failure_injection() {
    let mut run = Run::new();
    run.run();
    let text = run.lines.join("\n");
    println!("{text}");
    let start = Micros::parse("2026-07-15T08:00:00Z").unwrap();
    let first_gate = run.demo.record().first_gate_at.expect("a human gate");
    println!(
        "simulated time to the first human gate: {:.1} s; to the end: {:.1} s; {} Events",
        (first_gate.0 - start.0) as f64 / 1e6,
        (run.now.0 - start.0) as f64 / 1e6,
        run.log.len()
    );
    let state = &run.h.authority.state;
    let plans = run.demo.plans().clone();
    let (a, b) = (&plans.a, &plans.b);
    let security = a.stage("security").unwrap().child.clone().unwrap();
    let rec = run.demo.record().clone();

    // Both root Missions and the child security Mission are approved.
    for p in [a, b, &security] {
        assert_eq!(
            state.missions[&p.mission_id()].status,
            MissionState::Approved,
            "{}",
            p.title
        );
    }
    // Every WorkItem of the demo ended verified.
    for w in state.work_items.values() {
        assert_eq!(
            w.status,
            WorkItemState::Verified,
            "{} is {}",
            w.id,
            w.status
        );
    }
    // The parent WorkItem became verified through the child's approval (§14).
    let sec = &state.work_items[&a.work_id("security")];
    assert_eq!(
        sec.child_mission_id.as_deref(),
        Some(security.mission_id().as_str())
    );
    assert_eq!(sec.verification_evidence[0].kind, "child_mission_approval");

    // The first human gate is the execution approval of the deployment, and work waited.
    assert!(matches!(
        rec.gates.first(),
        Some(HumanGate::ExecutionApproval { work_item_id, .. }) if *work_item_id == a.work_id("integration")
    ));
    let integration = a.work_id("integration");
    let granted = run
        .events("approval.execution.granted")
        .into_iter()
        .find(|(_, e)| st(e, "/payload/approval/workItemId") == integration)
        .map(|(i, _)| i)
        .expect("the execution approval");
    assert!(run.first("work.started", &integration) > granted);
    assert_eq!(
        run.log[granted]
            .pointer("/actor/type")
            .and_then(Value::as_str),
        Some("human")
    );

    // A human change request reopened Checkout; a corrective WorkItem followed (§7.3).
    let changes = run.events("mission.changes_requested");
    assert_eq!(changes.len(), 1);
    assert_eq!(
        state.work_items[&a.work_id("changes-1")].status,
        WorkItemState::Verified
    );
    assert_eq!(
        run.events("mission.submitted_for_approval").len(),
        4,
        "A twice, B, child"
    );

    // Worker-proposed sub-work, authorized by the Coordinator; blocked and resumed work.
    let imp = a.work_id("implementation");
    let blocked = run.first("work.blocked", &imp);
    let proposed = run.events("work.proposed");
    assert_eq!(proposed.len(), 1);
    assert_eq!(
        st(proposed[0].1, "/actor/id"),
        plan::agent_id(plan::DEVELOPER)
    );
    let schema = plan::work_id_of_proposal(st(proposed[0].1, "/payload/proposal/id"));
    let authorized = run
        .events("work.authorized")
        .into_iter()
        .find(|(_, e)| st(e, "/payload/workItem/id") == schema)
        .unwrap();
    assert!(authorized.0 > proposed[0].0);
    assert_eq!(
        st(authorized.1, "/payload/proposalId"),
        st(proposed[0].1, "/payload/proposal/id")
    );
    let revised = run.first("work.contract.revised", &imp);
    let unblocked = run.first("work.unblocked", &imp);
    let starts = run.all("work.started", &imp);
    assert!(blocked < revised && revised < unblocked);
    assert!(run.first("work.result.accepted", &schema) < unblocked);
    assert_eq!(starts.len(), 2, "started, blocked, resumed");
    assert!(starts[1] > unblocked);

    // Checkpoint preemption on a high-priority arrival (§11.3).
    let review = a.work_id("review");
    let hotfix = a.work_id("hotfix-review");
    let checkpointed = run.first("work.checkpointed", &review);
    let review_starts = run.all("work.started", &review);
    let hotfix_start = run.first("work.started", &hotfix);
    assert!(review_starts[0] < checkpointed && checkpointed < hotfix_start);
    assert!(
        review_starts.iter().any(|s| *s > hotfix_start),
        "the preempted review resumed after the urgent one"
    );
    let cp = &state.work_items[&review].checkpoints[0];
    assert!(
        !cp.completed_milestones.is_empty(),
        "resumed from a real checkpoint"
    );
    assert_eq!(state.work_items[&hotfix].contract.requested_priority, 95);

    // The shared reviewer served both Missions from per-Group queues.
    let reviewer = plan::agent_id(plan::REVIEWER);
    for p in [a, b] {
        assert!(
            state
                .work_items
                .values()
                .any(|w| w.mission_id == p.mission_id()
                    && w.assignee_id.as_deref() == Some(&reviewer))
        );
    }

    // Multiple execution slots: the analyst ran both Missions' requirements at once.
    let (ra, rb) = (a.work_id("requirements"), b.work_id("requirements"));
    let both_started = run
        .first("work.started", &ra)
        .max(run.first("work.started", &rb));
    let first_done = run
        .first("work.submitted", &ra)
        .min(run.first("work.submitted", &rb));
    assert!(both_started < first_done, "two slots in use at once");

    // Lease expiry and reassignment: the flaky developer's renewal came too late.
    let bimp = b.work_id("implementation");
    assert!(rec.rejections.iter().any(|r| r.agent == plan::DEVELOPER_B
        && r.kind == "ext.missionweaveprotocol.core.work_execution_lease_renew"
        && r.code == ErrorCode::WorkLeaseExpired));
    let accepted: Vec<&Value> = run
        .events("work.offer.accepted")
        .into_iter()
        .filter(|(_, e)| st(e, "/workItemId") == bimp)
        .map(|(_, e)| e)
        .collect();
    assert_eq!(accepted.len(), 2, "{accepted:#?}");
    assert_eq!(
        st(accepted[0], "/payload/assigneeId"),
        plan::agent_id(plan::DEVELOPER_B)
    );
    assert_eq!(
        st(accepted[1], "/payload/assigneeId"),
        plan::agent_id(plan::DEVELOPER)
    );
    // The lapsed owner was fenced, so the new owner holds a higher Ownership Epoch (§11.5).
    let (old_epoch, new_epoch) = (
        num(accepted[0], "/payload/ownershipEpoch"),
        num(accepted[1], "/payload/ownershipEpoch"),
    );
    assert!(new_epoch > old_epoch);
    assert_eq!(state.work_items[&bimp].ownership_epoch, new_epoch);

    // Coordinator failure and epoch replacement by the control plane (§7.2).
    assert_eq!(
        rec.replacements,
        [(
            b.mission_id(),
            plan::agent_id(plan::COORDINATOR_B),
            plan::agent_id(plan::STANDBY)
        )]
    );
    let (assigned_at, assigned) = run.events("mission.coordinator.assigned")[0];
    assert_eq!(st(assigned, "/actor/type"), "service");
    assert_eq!(num(assigned, "/payload/coordinatorEpoch"), 2);
    assert!(
        !rec.late_commands.is_empty(),
        "the old Coordinator's late Command"
    );
    for r in &rec.late_commands {
        assert_eq!(r.agent, plan::COORDINATOR_B);
        assert!(
            matches!(
                r.code,
                ErrorCode::MembershipStale
                    | ErrorCode::AuthStaleCoordinator
                    | ErrorCode::AuthForbidden
            ),
            "{r:?}"
        );
    }
    let old = plan::agent_id(plan::COORDINATOR_B);
    assert!(
        run.log[assigned_at..]
            .iter()
            .all(|e| st(e, "/actor/id") != old),
        "nothing from the replaced Coordinator after the replacement"
    );
    assert_eq!(state.missions[&b.mission_id()].coordinator_epoch, 2);

    // Worker restart: the reviewer's lease was revoked and its queues rebuilt identically.
    assert_eq!(rec.restarts.len(), 1);
    let r = &rec.restarts[0];
    assert_eq!(r.agent, plan::REVIEWER);
    assert!(!r.before.is_empty());
    assert_eq!(r.after.as_ref(), Some(&r.before));
    assert!(
        run.events("ext.missionweaveprotocol.core.work_execution_lease_revoked")
            .iter()
            .any(|(_, e)| st(e, "/workItemId") == b.work_id("review"))
    );

    // Temporary disconnection and reconnect from the Cursor.
    assert_eq!(rec.reconnections.len(), 1);
    let c = &rec.reconnections[0];
    assert_eq!(
        (c.agent.as_str(), c.group.as_str()),
        (plan::TESTER, a.group_id().as_str())
    );
    assert!(c.missed > 0 && c.replayed > c.missed, "{c:?}");
    let tester = run.demo.agent(plan::TESTER).unwrap();
    assert_eq!(
        tester.cursor(&a.group_id()),
        Some(state.groups[&a.group_id()].last_sequence),
        "no gap after the reconnect"
    );

    // Duplicate delivery changed nothing: every duplicate was dropped by an inbox, and the
    // retransmitted Command appended nothing.
    assert!(rec.duplicate_deliveries > 10);
    assert!(run.demo.duplicates_dropped() >= rec.duplicate_deliveries);
    assert_eq!(
        rec.retransmissions,
        [(plan::TESTER.to_owned(), "work.submit".to_owned(), true)]
    );

    // Budget usage was recorded within every limit (§12).
    assert!(
        run.events("ext.missionweaveprotocol.core.resource_usage_recorded")
            .len()
            > 20
    );
    for p in [a, b] {
        let acct = &state.accounts[&p.mission_id()];
        assert!(acct.total[1] > 0);
        for d in 0..6 {
            assert!(acct.total[d] <= acct.limit.get(d).unwrap_or(0));
        }
    }
    assert_eq!(
        state.accounts[&integration].total[5], 1,
        "the deployment's external action"
    );

    // Evidence-based review: the reviewer's Evidence cites the reviewed Artifacts, its Artifact
    // derives from them, and the Coordinator's verification records the integrity check.
    let rv = &state.work_items[&review];
    assert!(
        rv.submission_evidence
            .iter()
            .all(|e| e.kind == "code-review")
    );
    let art = &state.artifacts[&rv.artifact_ids[0]];
    assert!(matches!(art.get("sourceArtifactHashes"), Some(Value::Array(h)) if h.len() >= 2));
    assert_eq!(rv.verification_evidence[0].kind, "artifact-integrity");

    // Only the injected failures were refused.
    for r in &rec.rejections {
        let expected = (r.agent == plan::DEVELOPER_B && r.code == ErrorCode::WorkLeaseExpired)
            || r.agent == plan::COORDINATOR_B;
        assert!(expected, "unexpected rejection {r:?}\n{text}");
    }
    assert_eq!(run.demo.view_errors(), 0);

    // The director's and the Coordinators' views equal the authority's projection.
    let view = run.demo.view();
    for (id, w) in &state.work_items {
        assert_eq!(view.work_items.get(id), Some(w));
    }
    for p in plans.all() {
        assert_eq!(
            view.missions.get(&p.mission_id()),
            state.missions.get(&p.mission_id())
        );
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_forged_event_never_reaches_an_agent() {
    let mut run = Run::new();
    // Run until Checkout's Group has a few Events.
    let group = run.demo.plans().a.group_id();
    while run
        .log
        .iter()
        .filter(|e| st(e, "/groupId") == group)
        .count()
        < 3
    {
        let reqs = run.demo.requests(run.now);
        assert!(!reqs.is_empty(), "the demo started");
        for r in reqs {
            run.handle(r);
        }
    }
    let genuine = run
        .log
        .iter()
        .find(|e| st(e, "/groupId") == group && st(e, "/kind") == "mission.created")
        .cloned()
        .unwrap();
    // The same Event with its title changed: the authority's signature no longer holds.
    let text = wasm_core::json::to_string(&genuine).replace("Checkout service", "Forged service");
    let err = run.demo.deliver(text.as_bytes(), run.now).unwrap_err();
    assert!(err.contains("verification"), "{err}");
    assert_eq!(
        run.demo.view().missions[&run.demo.plans().a.mission_id()].title,
        "Checkout service"
    );
    // A genuine Event delivered again is a duplicate: nothing changes.
    let before = run.demo.view().groups[&group].last_sequence;
    let bytes = wasm_core::json::canonicalize(&genuine).unwrap();
    run.demo.deliver(&bytes, run.now).unwrap();
    assert_eq!(run.demo.view().groups[&group].last_sequence, before);
}

/// A console that follows several Groups receives each Group's Events in order but the Groups
/// interleaved as its subscriptions happen to deliver them (§16 orders within a Group only). The
/// demo's Groups folded one whole Group after another, in either order of Groups, must give the
/// state the authority's interleaving gives (the root MissionOwner follows the child Mission's
/// Group too, §14).
#[test]
fn the_demo_folded_group_by_group_in_any_group_order_gives_the_same_state() {
    use wasm_core::authority::evolve;
    use wasm_core::authority::state::State;
    let mut run = Run::new();
    run.run();
    let grouped: Vec<&Value> = run
        .log
        .iter()
        .filter(|e| e.pointer("/groupId").and_then(Value::as_str).is_some())
        .collect();
    let mut in_order = State::default();
    for e in &grouped {
        evolve::apply(&mut in_order, e).unwrap();
    }
    // The authority's own order never opens an account before its parent.
    assert!(in_order.orphan_accounts.is_empty());
    let mut groups: Vec<&str> = Vec::new();
    for e in &grouped {
        let g = e.pointer("/groupId").and_then(Value::as_str).unwrap();
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    assert!(groups.len() >= 3, "{groups:?}");
    for order in [groups.clone(), groups.iter().rev().copied().collect()] {
        let mut state = State::default();
        for g in &order {
            for e in grouped
                .iter()
                .filter(|e| e.pointer("/groupId").and_then(Value::as_str) == Some(g))
            {
                evolve::apply(&mut state, e).unwrap_or_else(|r| panic!("{g}: {r}"));
            }
        }
        let differ = |a: String, b: String| -> String {
            let (a, b): (Vec<&str>, Vec<&str>) = (a.split(", ").collect(), b.split(", ").collect());
            a.iter()
                .zip(&b)
                .filter(|(x, y)| x != y)
                .take(6)
                .map(|(x, y)| format!("{x} <> {y}"))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        // Every WorkItem, Mission and account, as its Debug text by id, in both states.
        let dump = |st: &State| -> std::collections::BTreeMap<String, String> {
            let mut out = std::collections::BTreeMap::new();
            out.extend(
                st.work_items
                    .iter()
                    .map(|(k, v)| (format!("work {k}"), format!("{v:?}"))),
            );
            out.extend(
                st.missions
                    .iter()
                    .map(|(k, v)| (format!("mission {k}"), format!("{v:?}"))),
            );
            out.extend(
                st.accounts
                    .iter()
                    .map(|(k, v)| (format!("account {k}"), format!("{v:?}"))),
            );
            out
        };
        let (want, got) = (dump(&in_order), dump(&state));
        let bad: Vec<String> = want
            .iter()
            .filter(|(k, w)| got.get(*k) != Some(*w))
            .map(|(k, w)| {
                let o = got.get(k).cloned().unwrap_or_default();
                format!("{k}: {}", differ(o, w.clone()))
            })
            .collect();
        assert!(
            bad.is_empty(),
            "{:?}:\n{}",
            order
                .iter()
                .map(|g| g.rsplit(':').nth(1).unwrap_or(""))
                .collect::<Vec<_>>(),
            bad.join("\n")
        );
        assert_eq!(state.work_items.len(), in_order.work_items.len());
        assert_eq!(state.missions.len(), in_order.missions.len());
        assert_eq!(state.accounts.len(), in_order.accounts.len());
        assert!(
            state.orphan_accounts.is_empty(),
            "{:?}",
            state.orphan_accounts
        );
    }
}

/// The same demo folded in interleavings a console's subscriptions can produce (each Group in
/// order, the Groups mixed at random, seeded): every Event applies, and every view builds on
/// every intermediate state without panicking, whatever it holds of a Mission tree.
#[test]
fn every_view_builds_on_every_state_of_random_group_interleavings() {
    use wasm_core::authority::evolve;
    use wasm_core::authority::state::State;
    use wasm_core::model::common::{Actor, ActorType};
    use wasm_core::views::{Viewer, Views, dag::DagView, ledger::LedgerView};
    let mut run = Run::new();
    run.run();
    let mut per_group: Vec<(String, Vec<&Value>)> = Vec::new();
    for e in &run.log {
        let Some(g) = e.pointer("/groupId").and_then(Value::as_str) else {
            continue;
        };
        match per_group.iter_mut().find(|(k, _)| k == g) {
            Some((_, v)) => v.push(e),
            None => per_group.push((g.to_owned(), vec![e])),
        }
    }
    let human = Viewer::Principal(Actor::new(
        ActorType::Human,
        &simulation::agents::principal_id(ActorType::Human, plan::HUMAN),
    ));
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..6 {
        let mut next = vec![0usize; per_group.len()];
        let mut state = State::default();
        let mut step = 0usize;
        loop {
            let open: Vec<usize> = (0..per_group.len())
                .filter(|&i| next[i] < per_group[i].1.len())
                .collect();
            if open.is_empty() {
                break;
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = open[(seed % open.len() as u64) as usize];
            let e = per_group[i].1[next[i]];
            next[i] += 1;
            evolve::apply(&mut state, e)
                .unwrap_or_else(|r| panic!("round {round}, step {step}: {r}"));
            step += 1;
            // Every few Events (and at the end), everything a console draws.
            if step.is_multiple_of(7) || (open.len() == 1 && next[i] == per_group[i].1.len()) {
                let now = run.now;
                let _ = Views::build(&state, &human, now);
                let _ = Views::build(&state, &Viewer::Organization, now);
                for m in state.missions.keys() {
                    let _ = DagView::build(&state, m, now);
                    let _ = LedgerView::build(&state, m, &[], &[]);
                }
            }
        }
    }
}

/// In an Organization of one's own the demo holds no human key (`mission.create` is human-only,
/// §7.1): it proposes its two root Missions, signs nothing for them, and runs to approval once
/// a human of the Organization has created them as proposed.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn proposed_missions_created_by_a_human_run_the_demo_to_approval() {
    let mut run = Run::opening(Opening::Proposed);
    let start = run.now;
    // Before anyone acts: two proposals, and no Command for them.
    let first = run.demo.requests(start);
    assert!(
        first
            .iter()
            .all(|r| !matches!(r, Request::Submit { kind, .. } if kind == "mission.create")),
        "the demo signed a mission.create itself"
    );
    let plans = run.demo.plans().clone();
    let proposed: Vec<String> = run
        .demo
        .proposals()
        .iter()
        .map(|p| p.mission_id.clone())
        .collect();
    assert_eq!(proposed, vec![plans.a.mission_id(), plans.b.mission_id()]);
    for r in first {
        run.handle(r);
    }
    run.run();
    assert_eq!(
        run.created, proposed,
        "the human created exactly the proposals"
    );
    assert!(
        run.demo.proposals().is_empty(),
        "created proposals are withdrawn"
    );
    let state = &run.h.authority.state;
    for p in [&plans.a, &plans.b] {
        let m = &state.missions[&p.mission_id()];
        assert_eq!(m.status, MissionState::Approved, "{}", p.title);
        assert_eq!(m.owner.id.0, "urn:missionweaveprotocol:human:mission-owner");
    }
    assert!(
        run.demo.record().first_gate_at.is_some(),
        "a human gate was reached"
    );
}
