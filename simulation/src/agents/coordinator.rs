//! A Coordinator Agent (§7.2, §10, §13.2, §14): it drives one Mission's WorkItem graph from its
//! [`MissionPlan`].
//!
//! Its view is the authority's own state, folded from the Events of the Groups it follows with
//! the authority's reducer ([`evolve::apply`]): a Coordinator has full Group visibility (§8), so
//! its view is exactly the authority's projection of those Groups, and every decision below
//! reads it. Nothing is remembered outside the view except what the plan says and what the
//! operator released, so a replacement Coordinator that replays the log from the start has
//! reconciled the Mission by construction (§7.2) and simply continues.
//!
//! One decision per step, in order: renew the Coordinator lease; post the plan; grant Worker
//! Memberships; authorize released stages and Worker proposals (making the proposer's blocked
//! item depend on the new one); promote a stage to a child Mission; unblock what its
//! dependencies have freed; offer eligible items (and reassign those whose owner's lease lapsed,
//! §11.5); review submissions against their acceptance criteria (§13.2); approve child Missions
//! it owns; submit the Mission for approval once every WorkItem is verified (§7.3); after a
//! change request, authorize the corrective stage.

use super::inbox::Inbox;
use super::plan::{MissionPlan, Release, Stage, work_id_of_proposal};
use super::{
    Agent, Directive, Identity, Outcome, Outgoing, Pace, Pending, obj, principal, str_at, strings,
};
use crate::harness::Envelope;
use std::collections::{BTreeMap, BTreeSet};
use wasm_core::authority::Micros;
use wasm_core::authority::State;
use wasm_core::authority::evolve;
use wasm_core::authority::projection::{EvidenceItem, Mission, SelectionBasis, WorkItem};
use wasm_core::json::{Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::mission::MissionState;
use wasm_core::model::work_item::WorkItemState;

/// What a Command in flight was for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Intent {
    Renew,
    Post,
    Member(String),
    Authorize(String),
    Depend(String, String),
    Child(String),
    Unblock(String),
    Offer(String),
    Accept(String),
    Fail(String),
    ApproveChild(String),
    Submit,
}

pub struct Coordinator {
    me: Identity,
    pace: Pace,
    plan: MissionPlan,
    view: State,
    inboxes: crate::vecmap::VecMap<String, Inbox>,
    pending: Pending<Intent>,
    released: BTreeSet<String>,
    /// The feedback of each change request on this Mission, in order.
    changes: Vec<String>,
    /// Agents whose ownership of a WorkItem lapsed (not offered it again).
    lapsed: BTreeMap<String, BTreeSet<String>>,
    posted: bool,
    view_errors: u64,
    notes: Vec<String>,
}

impl Coordinator {
    pub fn new(me: Identity, plan: MissionPlan, pace: Pace) -> Coordinator {
        Coordinator {
            me,
            pace,
            plan,
            view: State::default(),
            inboxes: crate::vecmap::VecMap::new(),
            pending: Pending::default(),
            released: BTreeSet::new(),
            changes: Vec::new(),
            lapsed: BTreeMap::new(),
            posted: false,
            view_errors: 0,
            notes: Vec::new(),
        }
    }

    /// The Coordinator's view: the authority's projection of the Groups it follows.
    pub fn view(&self) -> &State {
        &self.view
    }

    pub fn plan(&self) -> &MissionPlan {
        &self.plan
    }

    fn note(&mut self, text: String) {
        self.notes.push(format!("{}: {text}", self.me.name));
    }

    fn group(&self) -> String {
        self.plan.group_id()
    }

    fn mission(&self) -> Option<&Mission> {
        self.view.missions.get(&self.plan.mission_id())
    }

    /// The envelope of a Coordinator Command in `group` (§15.1: Session, Membership and
    /// Coordinator Epochs from the view).
    fn env(&self, group: &str, coordinating: bool, revision: Option<u64>) -> Envelope {
        let me = self.me.id();
        Envelope {
            group_id: Some(group.to_owned()),
            membership_epoch: self.view.membership(group, me).map(|m| m.epoch),
            coordinator_epoch: if coordinating {
                self.view
                    .mission_of_group(group)
                    .filter(|m| m.coordinator_id == me)
                    .map(|m| m.coordinator_epoch)
            } else {
                None
            },
            expected_revision: revision,
            ..Envelope::default()
        }
    }

    fn send(
        &mut self,
        intent: Intent,
        kind: &str,
        env: Envelope,
        payload: Object,
        now: Micros,
    ) -> Option<Outgoing> {
        match self.me.command(kind, env, payload, now) {
            Ok(out) => {
                self.pending.in_flight = Some((out.action_id.clone(), intent));
                Some(out)
            }
            Err(e) => {
                self.note(format!("cannot sign {kind}: {e}"));
                self.pending.retry_at = Some(now.plus_seconds(1));
                None
            }
        }
    }

    fn released(&self, stage: &Stage) -> bool {
        match stage.release {
            Release::AtStart => true,
            Release::OnDirective => self.released.contains(&stage.key),
        }
    }

    /// The stages this Coordinator should have authorized by now: released plan stages and
    /// one corrective stage per change request.
    fn wanted_stages(&self) -> Vec<Stage> {
        let mut out: Vec<Stage> = self
            .plan
            .stages
            .iter()
            .filter(|s| self.released(s))
            .cloned()
            .collect();
        if let Some(t) = &self.plan.on_changes {
            for (n, feedback) in self.changes.iter().enumerate() {
                let mut s = t.clone();
                s.key = format!("{}-{}", t.key, n + 1);
                let goal = format!("{}: {feedback}", t.contract.goal);
                s.contract.goal = goal.chars().take(500).collect();
                out.push(s);
            }
        }
        out
    }

    /// Who may be offered a WorkItem, in order of preference.
    fn candidates_for(&self, w: &WorkItem) -> Vec<String> {
        if let Some(s) = self
            .wanted_stages()
            .into_iter()
            .find(|s| self.plan.work_id(&s.key) == w.id)
        {
            return s.candidates;
        }
        self.plan.proposal_candidates.clone()
    }

    fn work_items(&self) -> Vec<&WorkItem> {
        let mission = self.plan.mission_id();
        self.view
            .work_items
            .values()
            .filter(|w| w.mission_id == mission)
            .collect()
    }

    fn deps_verified(&self, w: &WorkItem) -> bool {
        w.dependency_ids.iter().all(|d| {
            self.view
                .work_items
                .get(d)
                .is_some_and(|x| x.status == WorkItemState::Verified)
        })
    }

    /// WorkItems authorized from proposals made to unblock `w` (their contract names `w` as
    /// an input).
    fn resolving(&self, w: &WorkItem) -> Vec<String> {
        self.view
            .proposals
            .values()
            .filter(|p| p.contract.inputs.contains(&w.id))
            .filter_map(|p| p.authorized_work_item_id.clone())
            .collect()
    }

    fn selection_basis(&self, w: &WorkItem, agent: &str) -> Value {
        let done = self
            .work_items()
            .iter()
            .filter(|x| {
                x.status == WorkItemState::Verified && x.assignee_id.as_deref() == Some(agent)
            })
            .count();
        SelectionBasis {
            required_capabilities: w.contract.required_capabilities.clone(),
            verified_capability_matches: Vec::new(),
            authorization_eligible: true,
            availability_estimate: Some("a slot within the Worker's weighted share".into()),
            expected_cost_microunits: w.contract.budget.financial_microunits,
            reliability_evidence: vec![format!(
                "{done} WorkItems of this Mission verified for this Agent"
            )],
            policy_rules_applied: vec![
                "stage candidates in order of preference".into(),
                "owners whose lease lapsed are not offered the item again".into(),
            ],
        }
        .to_json()
    }

    /// The Evidence review of a submission (§13.2): integrity of the Artifacts, then one
    /// successful Evidence item per acceptance criterion. Returns the verification Evidence,
    /// or what is missing.
    fn review(&self, w: &WorkItem) -> Result<Value, String> {
        let mut hashes = Vec::new();
        for id in &w.artifact_ids {
            let Some(m) = self.view.artifacts.get(id) else {
                return Err(format!("Artifact {id} is not published"));
            };
            let hash = m.get("contentHash").and_then(Value::as_str).unwrap_or("");
            let of_item = m.get("workItemId").and_then(Value::as_str) == Some(w.id.as_str());
            if !of_item || !hash.starts_with("sha256:") || hash.len() != 71 {
                return Err(format!("Artifact {id} fails the integrity check"));
            }
            hashes.push(hash.to_owned());
        }
        if hashes.is_empty() {
            return Err("no Artifact".into());
        }
        let missing: Vec<&String> = w
            .contract
            .acceptance_criteria
            .iter()
            .filter(|c| {
                !w.submission_evidence.iter().any(|e| {
                    e.success && e.data.get("criterion").and_then(Value::as_str) == Some(c.as_str())
                })
            })
            .collect();
        if !missing.is_empty() {
            return Err(format!("no successful Evidence for {missing:?}"));
        }
        let kinds: Vec<String> = w
            .submission_evidence
            .iter()
            .map(|e| e.kind.clone())
            .collect();
        Ok(Value::Array(vec![
            EvidenceItem {
                kind: "artifact-integrity".into(),
                description: format!(
                    "{} content-addressed Artifacts of this WorkItem",
                    hashes.len()
                ),
                success: true,
                artifact_hash: hashes.first().cloned(),
                data: obj(vec![("artifactHashes", strings(&hashes))]),
            }
            .to_json(),
            EvidenceItem {
                kind: "acceptance-review".into(),
                description: "every acceptance criterion has successful Evidence".into(),
                success: true,
                artifact_hash: None,
                data: obj(vec![
                    ("criteria", strings(&w.contract.acceptance_criteria)),
                    ("evidenceKinds", strings(&kinds)),
                ]),
            }
            .to_json(),
        ]))
    }

    /// A child Mission this Coordinator owns that waits for its approval (§14).
    fn child_to_approve(&self) -> Option<Mission> {
        let me = self.me.id();
        self.view
            .missions
            .values()
            .find(|m| {
                m.owner.id.as_str() == me
                    && m.status == MissionState::AwaitingApproval
                    && m.parent_mission_id.is_some()
            })
            .cloned()
    }

    /// The next Coordinator Command, if any.
    fn decide(&mut self, now: Micros) -> Option<Outgoing> {
        if let Some(child) = self.child_to_approve() {
            let open: Vec<&WorkItem> = self
                .view
                .work_items
                .values()
                .filter(|w| w.mission_id == child.id && w.status != WorkItemState::Verified)
                .collect();
            if open.is_empty() {
                let revision = child.submitted_revision.unwrap_or(child.revision);
                let p = obj(vec![
                    (
                        "approvalId",
                        Value::string(format!("{}:approval:{revision}", child.id)),
                    ),
                    ("missionRevision", Value::from(revision)),
                    ("artifactHashes", strings(&child.submitted_artifact_hashes)),
                    ("acceptancePolicyVersion", Value::string("1.0.0")),
                    (
                        "comments",
                        Value::string("Reviewed by the parent Coordinator as child MissionOwner"),
                    ),
                ]);
                let env = self.env(&child.group_id, false, None);
                self.note(format!(
                    "approves child Mission {} as its MissionOwner (§14)",
                    child.id
                ));
                return self.send(
                    Intent::ApproveChild(child.id.clone()),
                    "mission.approve",
                    env,
                    p,
                    now,
                );
            }
        }
        let g = self.group();
        let m = self.mission()?.clone();
        if m.coordinator_id != self.me.id() || m.is_terminal() {
            return None;
        }
        let expires = m.coordinator_lease_expires_at?;
        if expires <= now {
            // The lease lapsed: only the control plane or the MissionOwner can recover (§7.2).
            return None;
        }
        let lease = self.plan.coordinator_lease_seconds;
        if expires <= now.plus_micros(renew_margin(lease)) {
            let env = self.env(&g, true, None);
            let p = obj(vec![("leaseSeconds", Value::from(lease))]);
            return self.send(Intent::Renew, "mission.renew_coordinator", env, p, now);
        }
        if !self.posted && m.status == MissionState::Active {
            let items = self.work_items().len();
            let text = if items == 0 {
                format!(
                    "Plan for {}: {}. Messages carry no authority; work moves only by Commands.",
                    m.title,
                    self.plan
                        .stages
                        .iter()
                        .filter(|s| s.release == Release::AtStart)
                        .map(|s| s.key.as_str())
                        .collect::<Vec<_>>()
                        .join(" → ")
                )
            } else {
                format!(
                    "{} takes over as Coordinator (epoch {}): {items} WorkItems reconciled from the log.",
                    self.me.name, m.coordinator_epoch
                )
            };
            let p = obj(vec![
                (
                    "messageId",
                    Value::string(format!(
                        "{}:message:{}-{}",
                        self.plan.prefix, self.me.name, m.coordinator_epoch
                    )),
                ),
                (
                    "conversationId",
                    Value::string(
                        wasm_core::authority::handlers::mission::mission_conversation_id(&g),
                    ),
                ),
                ("content", Value::string(text)),
                ("mentions", Value::Array(Vec::new())),
            ]);
            let env = self.env(&g, false, None);
            return self.send(Intent::Post, "message.post", env, p, now);
        }
        if m.status != MissionState::Active {
            return None;
        }
        // Worker Memberships (§8: just in time, scoped; no history before they join).
        let members = self.plan.members.clone();
        for (agent, roles) in members {
            if self.view.membership(&g, &agent).is_none() {
                let p = obj(vec![
                    ("principal", principal("agent", &agent)),
                    ("roles", strings(&roles)),
                ]);
                let env = self.env(&g, true, None);
                return self.send(Intent::Member(agent), "membership.change", env, p, now);
            }
        }
        // Released stages, in plan order.
        for s in self.wanted_stages() {
            let id = self.plan.work_id(&s.key);
            if self.view.work_items.contains_key(&id) {
                continue;
            }
            let deps: Vec<String> = s.after.iter().map(|k| self.plan.work_id(k)).collect();
            if !deps.iter().all(|d| self.view.work_items.contains_key(d)) {
                continue;
            }
            let p = obj(vec![
                ("workItemId", Value::string(id.clone())),
                ("contract", s.contract.to_json()),
                ("dependencyIds", strings(&deps)),
            ]);
            let env = self.env(&g, true, None);
            self.note(format!("authorizes {} \"{}\"", s.key, s.contract.goal));
            return self.send(Intent::Authorize(id), "work.authorize", env, p, now);
        }
        // Worker proposals (§9: a proposal is not executable until authorized).
        let open = self
            .view
            .proposals
            .values()
            .find(|p| {
                p.group_id == g
                    && p.status == wasm_core::authority::projection::ProposalStatus::Open
            })
            .cloned();
        if let Some(prop) = open {
            let id = work_id_of_proposal(&prop.id);
            let mut p = obj(vec![
                ("workItemId", Value::string(id.clone())),
                ("contract", prop.contract.to_json()),
                ("dependencyIds", strings(&prop.dependency_ids)),
                ("proposalId", Value::string(prop.id.clone())),
            ]);
            if let Some(parent) = &prop.parent_work_item_id {
                p.insert("parentWorkItemId", Value::string(parent.clone()));
            }
            let env = self.env(&g, true, None);
            self.note(format!(
                "authorizes {}'s proposal \"{}\"",
                prop.proposed_by.id.as_str(),
                prop.contract.goal
            ));
            return self.send(Intent::Authorize(id), "work.authorize", env, p, now);
        }
        // A blocked item waits for the sub-work proposed to unblock it.
        let depend = self.view.proposals.values().find_map(|p| {
            let new = p.authorized_work_item_id.as_ref()?;
            p.contract.inputs.iter().find_map(|input| {
                let blocked = self.view.work_items.get(input)?;
                (blocked.group_id == g
                    && blocked.status == WorkItemState::Blocked
                    && !blocked.dependency_ids.contains(new)
                    && blocked.id != *new)
                    .then(|| (blocked.id.clone(), new.clone(), blocked.revision))
            })
        });
        if let Some((blocked, new, revision)) = depend {
            let p = obj(vec![
                ("workItemId", Value::string(blocked.clone())),
                ("dependencyId", Value::string(new.clone())),
            ]);
            let env = self.env(&g, true, Some(revision));
            self.note(format!("makes {blocked} depend on {new}"));
            return self.send(
                Intent::Depend(blocked, new),
                "ext.missionweaveprotocol.core.work_dependency_add",
                env,
                p,
                now,
            );
        }
        let items: Vec<WorkItem> = self.work_items().into_iter().cloned().collect();
        // Promote a stage to a child Mission (§14).
        for w in &items {
            let Some(child) = self
                .plan
                .stages
                .iter()
                .find(|s| self.plan.work_id(&s.key) == w.id)
                .and_then(|s| s.child.clone())
            else {
                continue;
            };
            if w.child_mission_id.is_some()
                || w.status != WorkItemState::Open
                || !self.deps_verified(w)
            {
                continue;
            }
            let p = obj(vec![
                ("missionId", Value::string(child.mission_id())),
                ("groupId", Value::string(child.group_id())),
                ("parentWorkItemId", Value::string(w.id.clone())),
                ("coordinatorId", Value::string(child.coordinator.clone())),
                ("title", Value::string(child.title.clone())),
                ("objective", Value::string(child.objective.clone())),
                ("definitionOfDone", strings(&child.definition_of_done)),
                ("deadline", Value::string(child.deadline.format())),
                ("budget", child.budget.to_json()),
                ("permissions", strings(&child.permissions)),
                ("failurePolicy", Value::string("block_parent_work_item")),
                (
                    "coordinatorLeaseSeconds",
                    Value::from(child.coordinator_lease_seconds),
                ),
            ]);
            let env = self.env(&g, true, None);
            self.note(format!(
                "promotes {} to the child Mission \"{}\" (§14)",
                w.id, child.title
            ));
            return self.send(
                Intent::Child(w.id.clone()),
                "mission.create_child",
                env,
                p,
                now,
            );
        }
        // Unblock what the sub-work proposed for it has freed (§11.4).
        if let Some(w) = items.iter().find(|w| {
            let resolving = self.resolving(w);
            w.status == WorkItemState::Blocked
                && w.child_mission_id.is_none()
                && !resolving.is_empty()
                && resolving.iter().all(|r| w.dependency_ids.contains(r))
                && self.deps_verified(w)
        }) {
            let p = obj(vec![("workItemId", Value::string(w.id.clone()))]);
            let env = self.env(&g, true, Some(w.revision));
            self.note(format!("unblocks {}", w.id));
            return self.send(Intent::Unblock(w.id.clone()), "work.unblock", env, p, now);
        }
        // Offers: eligible open items, expired offers, and owners whose lease lapsed (§11.5).
        for w in &items {
            if w.child_mission_id.is_some() || !self.deps_verified(w) {
                continue;
            }
            let lapsed_owner = matches!(w.status, WorkItemState::Queued | WorkItemState::Active)
                && w.assignee_id.is_some()
                && w.ownership_lease_expires_at
                    .is_some_and(|t| t.plus_micros(self.pace.lease_grace) <= now);
            let offer_expired =
                w.status == WorkItemState::Offered && w.offer_expires_at.is_some_and(|t| t <= now);
            if !(w.status == WorkItemState::Open
                || w.status == WorkItemState::Failed
                || lapsed_owner
                || offer_expired)
            {
                continue;
            }
            if lapsed_owner && let Some(a) = &w.assignee_id {
                self.lapsed
                    .entry(w.id.clone())
                    .or_default()
                    .insert(a.clone());
                self.note(format!(
                    "{}'s ownership of {} lapsed: reassigning with a new Ownership Epoch",
                    a, w.id
                ));
            }
            let excluded = self.lapsed.get(&w.id).cloned().unwrap_or_default();
            let all = self.candidates_for(w);
            let Some(agent) = all
                .iter()
                .find(|c| !excluded.contains(*c))
                .or_else(|| all.first())
                .cloned()
            else {
                continue;
            };
            let p = obj(vec![
                ("workItemId", Value::string(w.id.clone())),
                ("candidateAgentIds", strings(std::slice::from_ref(&agent))),
                ("selectionBasis", self.selection_basis(w, &agent)),
                (
                    "offerExpiresInSeconds",
                    Value::from(self.pace.offer_seconds),
                ),
            ]);
            let env = self.env(&g, true, Some(w.revision));
            self.note(format!("offers {} to {agent}", w.id));
            return self.send(Intent::Offer(w.id.clone()), "work.offer", env, p, now);
        }
        // Review submissions against their acceptance criteria (§13.2).
        if let Some(w) = items.iter().find(|w| w.status == WorkItemState::Submitted) {
            let env = self.env(&g, true, Some(w.revision));
            return match self.review(w) {
                Ok(evidence) => {
                    let p = obj(vec![
                        ("workItemId", Value::string(w.id.clone())),
                        ("evidence", evidence),
                    ]);
                    self.note(format!("accepts {} after reviewing its Evidence", w.id));
                    self.send(
                        Intent::Accept(w.id.clone()),
                        "work.accept_result",
                        env,
                        p,
                        now,
                    )
                }
                Err(why) => {
                    let p = obj(vec![
                        ("workItemId", Value::string(w.id.clone())),
                        (
                            "reason",
                            Value::string(why.chars().take(500).collect::<String>()),
                        ),
                    ]);
                    let env = self.env(&g, true, None);
                    self.note(format!("fails {}: {why}", w.id));
                    self.send(Intent::Fail(w.id.clone()), "work.fail", env, p, now)
                }
            };
        }
        // Submit once every WorkItem is verified and every wanted stage exists (§7.3).
        let wanted = self.wanted_stages();
        let complete = !items.is_empty()
            && items
                .iter()
                .all(|w| matches!(w.status, WorkItemState::Verified | WorkItemState::Cancelled))
            && wanted.iter().all(|s| {
                self.view
                    .work_items
                    .contains_key(&self.plan.work_id(&s.key))
            })
            && !self.view.proposals.values().any(|p| {
                p.group_id == g
                    && p.status == wasm_core::authority::projection::ProposalStatus::Open
            });
        if complete {
            let mut hashes: Vec<String> = self
                .view
                .artifacts
                .values()
                .filter(|a| a.get("missionId").and_then(Value::as_str) == Some(m.id.as_str()))
                .filter_map(|a| a.get("contentHash").and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
            hashes.sort();
            hashes.dedup();
            if hashes.is_empty() {
                return None;
            }
            let p = obj(vec![("artifactHashes", strings(&hashes))]);
            let env = self.env(&g, true, Some(m.revision));
            self.note(format!(
                "submits {} for approval (revision {}, {} Artifacts)",
                m.title,
                m.revision,
                hashes.len()
            ));
            return self.send(Intent::Submit, "mission.submit_for_approval", env, p, now);
        }
        None
    }
}

/// A Coordinator renews its lease when a third of it is left.
fn renew_margin(lease_seconds: u64) -> Micros {
    Micros(
        i64::try_from(lease_seconds)
            .unwrap_or(i64::MAX / 2)
            .saturating_mul(Micros::PER_SECOND)
            / 3,
    )
}

impl Agent for Coordinator {
    fn name(&self) -> &str {
        &self.me.name
    }

    fn agent_id(&self) -> &str {
        self.me.id()
    }

    fn session_opened(&mut self, epoch: u64, _now: Micros) {
        self.me.session_epoch = Some(epoch);
    }

    fn deliver(&mut self, group: &str, event: Value, _now: Micros) {
        let inbox = self.inboxes.or_default(group.to_owned());
        let ready = match inbox.accept(event) {
            Ok(r) => r,
            Err(e) => {
                self.note(format!("dropped an Event of {group}: {e}"));
                return;
            }
        };
        for e in ready {
            if let Err(err) = evolve::apply(&mut self.view, &e) {
                self.view_errors += 1;
                self.note(format!("view could not fold an Event: {err}"));
            }
            if str_at(&e, "/kind") == Some("mission.changes_requested")
                && str_at(&e, "/payload/missionId") == Some(self.plan.mission_id().as_str())
            {
                let feedback = str_at(&e, "/payload/feedback").unwrap_or("changes requested");
                self.changes.push(feedback.to_owned());
            }
        }
    }

    fn outcome(&mut self, action_id: &str, outcome: &Outcome, now: Micros) {
        let Some(intent) = self.pending.settle(action_id) else {
            return;
        };
        match outcome {
            Outcome::Appended(_) | Outcome::Duplicate(_) => {
                self.pending.awaiting = outcome.group_events();
                if intent == Intent::Post {
                    self.posted = true;
                }
            }
            Outcome::Rejected { code, message } => {
                self.note(format!("{intent:?} was refused: {code} ({message})"));
                // Optimistic concurrency (§15.3): a conflict means the view is behind; it
                // catches up from the log and decides again.
                let backoff = match code {
                    ErrorCode::RevisionConflict | ErrorCode::InvalidStateTransition => {
                        self.pace.retry
                    }
                    _ => Micros(self.pace.retry.0 * 4),
                };
                if intent == Intent::Post {
                    self.posted = true;
                }
                self.pending.retry_at = Some(now.plus_micros(backoff));
            }
        }
    }

    fn step(&mut self, now: Micros) -> Option<Outgoing> {
        self.me.session_epoch?;
        let inboxes = &self.inboxes;
        if !self
            .pending
            .ready(now, |g| inboxes.get(g).map(Inbox::cursor))
        {
            return None;
        }
        self.decide(now)
    }

    fn next_wake(&self) -> Option<Micros> {
        if self.pending.in_flight.is_some() {
            return None;
        }
        let mut t: Vec<Micros> = Vec::new();
        t.extend(self.pending.retry_at);
        if let Some(m) = self.mission()
            && m.coordinator_id == self.me.id()
            && !m.is_terminal()
            && let Some(exp) = m.coordinator_lease_expires_at
        {
            t.push(Micros(
                exp.0 - renew_margin(self.plan.coordinator_lease_seconds).0,
            ));
            for w in self.work_items() {
                if matches!(w.status, WorkItemState::Queued | WorkItemState::Active)
                    && let Some(o) = w.ownership_lease_expires_at
                {
                    t.push(o.plus_micros(self.pace.lease_grace));
                }
                if w.status == WorkItemState::Offered
                    && let Some(o) = w.offer_expires_at
                {
                    t.push(o);
                }
            }
        }
        t.into_iter().min()
    }

    fn cursor(&self, group: &str) -> Option<u64> {
        self.inboxes.get(group).map(Inbox::cursor)
    }

    fn duplicates(&self) -> u64 {
        self.inboxes.values().map(Inbox::duplicates).sum()
    }

    fn directive(&mut self, d: &Directive) {
        if let Directive::Release(key) = d
            && self.released.insert(key.clone())
        {
            self.note(format!("is told to release {key}"));
        }
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn view_errors(&self) -> u64 {
        self.view_errors
    }
}
