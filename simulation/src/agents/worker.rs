//! A Worker Agent (§10.3, §11): per-Group inboxes and queues ([`GroupQueue`]), a weighted-fair
//! Scheduler over them ([`Scheduler`]) and a number of isolated execution slots.
//!
//! Each decision is one Command, in this order: propose sub-work for a blocked item, accept an
//! offer it can commit to (admission control against its queue capacity, §10.3), act on a
//! running item whose step is due (renew the lease, checkpoint for a preemption, block, record
//! the step's resource usage, publish its Artifact, submit with Evidence), and start the item
//! the Scheduler picks for a free slot. Preemption is cooperative (§11.3): the Scheduler asks,
//! and the item checkpoints at its next step boundary and re-enters its Group's queue.
//!
//! Scripted faults ([`Fault`]) make the demo's failure injections happen inside a Worker: a
//! blocker that needs proposed sub-work, and a hang that lets a lease lapse.

use super::plan::{self, prefix_of_group, steps_of};
use super::queue::{GroupQueue, ItemState, QueueItem};
use super::sched::{Candidate, Scheduler};
use super::{
    Agent, ArtifactContent, Directive, Identity, Outcome, Outgoing, Pace, Pending, obj, strings,
    whole_seconds,
};
use crate::harness::Envelope;
use crate::vecmap::VecMap;
use std::collections::{BTreeMap, BTreeSet};
use wasm_core::authority::Micros;
use wasm_core::authority::projection::{Checkpoint, EvidenceItem, ResourceUsage, WorkContract};
use wasm_core::json::{Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::error::ErrorCode;

/// Sub-work a blocked Worker proposes (§9: any member may propose; only the Coordinator makes
/// it executable).
#[derive(Clone, Debug)]
pub struct Proposal {
    pub key: String,
    pub goal: String,
    pub deliverables: Vec<String>,
    pub criteria: Vec<String>,
}

/// A scripted fault of one Worker.
#[derive(Clone, Debug)]
pub enum Fault {
    /// After `after_steps` steps of `work_item`, block on `reason` and propose sub-work.
    Block {
        work_item: String,
        after_steps: u64,
        reason: String,
        proposal: Proposal,
    },
    /// After `after_steps` steps of `work_item`, hang for `duration`: no renewal, no Command.
    Stall {
        work_item: String,
        after_steps: u64,
        duration: Micros,
    },
}

impl Fault {
    fn work_item(&self) -> &str {
        match self {
            Fault::Block { work_item, .. } | Fault::Stall { work_item, .. } => work_item,
        }
    }

    fn after_steps(&self) -> u64 {
        match self {
            Fault::Block { after_steps, .. } | Fault::Stall { after_steps, .. } => *after_steps,
        }
    }
}

/// How a Worker works.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Declared maximum concurrency (§11.1: isolated execution slots).
    pub slots: usize,
    /// Owned items (queued, running, blocked) it commits to at most (§10.3 admission control).
    pub queue_capacity: usize,
    /// The `kind` of the Evidence it produces.
    pub evidence_kind: String,
    pub ownership_lease_seconds: u64,
    pub execution_lease_seconds: u64,
    pub faults: Vec<Fault>,
}

/// What a Command in flight was for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Intent {
    Accept(String, String),
    Start(String, String),
    Renew(String, String),
    Usage(String, String),
    Checkpoint(String, String),
    Block(String, String),
    Propose(String, String),
    Publish(String, String),
    Submit(String, String),
}

impl Intent {
    fn target(&self) -> (&str, &str) {
        match self {
            Intent::Accept(g, w)
            | Intent::Start(g, w)
            | Intent::Renew(g, w)
            | Intent::Usage(g, w)
            | Intent::Checkpoint(g, w)
            | Intent::Block(g, w)
            | Intent::Propose(g, w)
            | Intent::Publish(g, w)
            | Intent::Submit(g, w) => (g, w),
        }
    }
}

/// A running item in one slot.
#[derive(Clone, Debug)]
struct Run {
    next_at: Micros,
    preempt: bool,
    steps_since_renewal: u64,
    /// Steps completed since this start: a preempted item first finishes the step in
    /// progress, so its checkpoint records real progress.
    progressed: u64,
}

pub struct Worker {
    me: Identity,
    cfg: WorkerConfig,
    pace: Pace,
    generation: u32,
    groups: VecMap<String, GroupQueue>,
    sched: Scheduler,
    running: BTreeMap<(String, String), Run>,
    pending: Pending<Intent>,
    stalled_until: Option<Micros>,
    faults_done: BTreeSet<usize>,
    proposed: BTreeSet<String>,
    /// Items not to try before a time (a start refused for a reason that may pass).
    hold: VecMap<String, Micros>,
    /// Items whose start needs an Execution Approval that has not arrived.
    gated: BTreeSet<String>,
    notes: Vec<String>,
    /// Contents of the Artifacts whose manifests this Worker built, not yet taken by its driver.
    contents: Vec<ArtifactContent>,
}

/// The media type of the demo's Artifacts (the manifest's `mediaType`).
const MEDIA_TYPE: &str = "text/markdown";

impl Worker {
    pub fn new(me: Identity, cfg: WorkerConfig, pace: Pace, generation: u32) -> Worker {
        Worker {
            me,
            cfg,
            pace,
            generation,
            groups: VecMap::new(),
            sched: Scheduler::default(),
            running: BTreeMap::new(),
            pending: Pending::default(),
            stalled_until: None,
            faults_done: BTreeSet::new(),
            proposed: BTreeSet::new(),
            hold: VecMap::new(),
            gated: BTreeSet::new(),
            notes: Vec::new(),
            contents: Vec::new(),
        }
    }

    fn note(&mut self, text: String) {
        self.notes.push(format!("{}: {text}", self.me.name));
    }

    /// The per-Group queues (read-only, for tests and the director).
    pub fn queues(&self) -> &VecMap<String, GroupQueue> {
        &self.groups
    }

    fn item(&self, g: &str, w: &str) -> Option<&QueueItem> {
        self.groups.get(g)?.items.get(w)
    }

    fn item_mut(&mut self, g: &str, w: &str) -> Option<&mut QueueItem> {
        self.groups.get_mut(g)?.items.get_mut(w)
    }

    fn env(&self, g: &str) -> Envelope {
        Envelope {
            group_id: Some(g.to_owned()),
            membership_epoch: self.groups.get(g).and_then(|q| q.membership_epoch),
            ..Envelope::default()
        }
    }

    fn send(
        &mut self,
        intent: Intent,
        kind: &str,
        payload: Object,
        now: Micros,
    ) -> Option<Outgoing> {
        let env = self.env(intent.target().0);
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

    /// Keeps the slot table equal to the items running under this Session's leases.
    fn sync_running(&mut self, now: Micros) {
        let session = self.me.session_epoch;
        let mut live = BTreeSet::new();
        for (g, q) in &self.groups {
            for (w, i) in &q.items {
                if i.state == ItemState::Active
                    && i.lease.as_ref().map(|l| l.session_epoch) == session
                {
                    live.insert((g.clone(), w.clone()));
                }
            }
        }
        self.running.retain(|k, _| live.contains(k));
        for k in live {
            self.running.entry(k).or_insert(Run {
                next_at: now.plus_micros(self.pace.step),
                preempt: false,
                steps_since_renewal: 0,
                progressed: 0,
            });
        }
    }

    /// Items ready to start: owned, queued, not waiting for an approval or a hold.
    fn startable(&self, now: Micros) -> Vec<Candidate> {
        let mut out = Vec::new();
        for (g, q) in &self.groups {
            for (w, i) in &q.items {
                let held = self.hold.get(w).is_some_and(|t| *t > now);
                let gated =
                    i.waits_for_approval(now) || (self.gated.contains(w) && i.approval.is_none());
                if i.state == ItemState::Queued && !held && !gated {
                    out.push(Candidate {
                        group: g.clone(),
                        item: w.clone(),
                        priority: i.contract.as_ref().map_or(50, |c| c.requested_priority),
                        ready_since: i.ready_since,
                    });
                }
            }
        }
        out
    }

    fn fault_for(&self, w: &str, steps_done: u64) -> Option<(usize, Fault)> {
        self.cfg
            .faults
            .iter()
            .enumerate()
            .find(|(i, f)| {
                !self.faults_done.contains(i) && f.work_item() == w && f.after_steps() == steps_done
            })
            .map(|(i, f)| (i, f.clone()))
    }

    fn exec_payload(i: &QueueItem, extra: Vec<(&'static str, Value)>) -> Object {
        let mut p = obj(vec![
            ("workItemId", Value::string(i.id.clone())),
            ("ownershipEpoch", Value::from(i.ownership_epoch)),
            (
                "executionLeaseId",
                Value::string(i.lease.as_ref().map(|l| l.id.clone()).unwrap_or_default()),
            ),
        ]);
        for (k, v) in extra {
            p.insert(k, v);
        }
        p
    }

    fn checkpoint(i: &QueueItem, phase: &str, now: Micros) -> Value {
        let steps = i.steps_done;
        Checkpoint {
            phase: phase.to_owned(),
            completed_milestones: (1..=steps).map(|n| format!("step {n}")).collect(),
            next_step: Some(format!("step {}", steps + 1)),
            state_artifact_hash: None,
            created_at: whole_seconds(now),
        }
        .to_json()
    }

    /// The usage of one simulated step (§12: every dimension it touches is budgeted).
    fn usage(i: &QueueItem, last: bool) -> Value {
        let external = i.contract.as_ref().is_some_and(|c| {
            matches!(
                c.side_effect_risk.as_str(),
                "external" | "high_risk" | "destructive"
            )
        });
        ResourceUsage {
            financial_microunits: 12_000,
            model_tokens: 1_500,
            tool_calls: 4,
            compute_seconds: 30,
            wall_clock_seconds: 60,
            external_actions: u64::from(last && external),
        }
        .to_json()
    }

    /// Hashes of the Artifacts of the WorkItems this item takes as inputs (its provenance,
    /// §13.1).
    fn input_hashes(&self, g: &str, i: &QueueItem) -> Vec<String> {
        let Some(c) = &i.contract else {
            return Vec::new();
        };
        let mut out: Vec<String> = c
            .inputs
            .iter()
            .filter_map(|w| self.item(g, w))
            .flat_map(|x| x.artifacts.iter().map(|(_, h, _)| h.clone()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn my_artifacts(&self, i: &QueueItem) -> Vec<(String, String)> {
        i.artifacts
            .iter()
            .filter(|(_, _, p)| p == self.me.id())
            .map(|(id, h, _)| (id.clone(), h.clone()))
            .collect()
    }

    /// The text of the item's result: its goal and who made it (the simulated work's output).
    fn content(&self, i: &QueueItem) -> String {
        let goal = i.contract.as_ref().map_or("work", |c| c.goal.as_str());
        format!(
            "{goal}\nby {} (ownership epoch {}, {} steps)\n",
            self.me.id(),
            i.ownership_epoch,
            i.steps_done
        )
    }

    /// A signed Artifact manifest for the item's result (payloads.md §9.2).
    fn manifest(&self, g: &str, i: &QueueItem, now: Micros) -> Option<Object> {
        let content = self.content(i);
        let hash = wasm_core::encoding::sha256_hash(content.as_bytes());
        let sources: Vec<String> = self
            .input_hashes(g, i)
            .into_iter()
            .filter(|h| *h != hash)
            .collect();
        let mut m = obj(vec![
            (
                "id",
                Value::string(format!(
                    "{}:artifact:{}-g{}-e{}",
                    i.id, self.me.name, self.generation, i.ownership_epoch
                )),
            ),
            ("contentHash", Value::string(hash)),
            ("mediaType", Value::string(MEDIA_TYPE)),
            ("schemaUri", Value::Null),
            ("producingAgentId", Value::string(self.me.id().to_owned())),
            ("agentCardVersion", Value::from(i.card_version.unwrap_or(1))),
            ("missionId", Value::string(i.mission_id.clone()?)),
            ("groupId", Value::string(g.to_owned())),
            ("workItemId", Value::string(i.id.clone())),
            ("sourceArtifactHashes", strings(&sources)),
            (
                "toolVersions",
                Value::Object(obj(vec![("cargo", Value::string("1.90"))])),
            ),
            ("modelVersions", Value::Object(Object::new())),
            ("createdAt", Value::string(whole_seconds(now).format())),
            ("dataClassification", Value::string("internal")),
        ]);
        let bytes = wasm_core::json::canonicalize(&Value::Object(m.clone())).ok()?;
        let signature = self.me.sign_bytes(&bytes);
        m.insert(
            "signature",
            Value::string(wasm_core::encoding::b64url_encode(&signature)),
        );
        Some(m)
    }

    /// Evidence mapped to each acceptance criterion (§13.2).
    fn evidence(&self, g: &str, i: &QueueItem) -> Value {
        let mine = self.my_artifacts(i);
        let hash = mine.last().map(|(_, h)| h.clone());
        let inputs = self.input_hashes(g, i);
        let criteria = i
            .contract
            .as_ref()
            .map(|c| c.acceptance_criteria.clone())
            .unwrap_or_else(|| vec!["work done".into()]);
        Value::Array(
            criteria
                .iter()
                .map(|c| {
                    EvidenceItem {
                        kind: self.cfg.evidence_kind.clone(),
                        description: c.clone(),
                        success: true,
                        artifact_hash: hash.clone(),
                        data: obj(vec![
                            ("criterion", Value::string(c.clone())),
                            ("method", Value::string(self.cfg.evidence_kind.clone())),
                            ("steps", Value::from(i.steps_done)),
                            ("inputArtifacts", strings(&inputs)),
                        ]),
                    }
                    .to_json()
                })
                .collect(),
        )
    }

    /// A running item whose step is due: its next safe action.
    fn act(&mut self, g: &str, w: &str, now: Micros) -> Option<Outgoing> {
        let i = self.item(g, w)?.clone();
        let run = self.running.get(&(g.to_owned(), w.to_owned()))?.clone();
        let lease = i.lease.clone()?;
        if let Some((n, fault)) = self.fault_for(w, i.steps_done)
            && let Fault::Stall { duration, .. } = fault
        {
            self.faults_done.insert(n);
            self.stalled_until = Some(now.plus_micros(duration));
            self.note(format!(
                "hangs for {} s while running {w} (its lease will lapse)",
                duration.0 / Micros::PER_SECOND
            ));
            return None;
        }
        let key = (g.to_owned(), w.to_owned());
        if lease.expires_at <= now.plus_micros(self.pace.step).plus_micros(self.pace.step)
            || run.steps_since_renewal >= 4
        {
            let p = Self::exec_payload(
                &i,
                vec![(
                    "leaseSeconds",
                    Value::from(self.cfg.execution_lease_seconds),
                )],
            );
            return self.send(
                Intent::Renew(key.0, key.1),
                "ext.missionweaveprotocol.core.work_execution_lease_renew",
                p,
                now,
            );
        }
        if run.preempt && run.progressed > 0 {
            let phase = i
                .contract
                .as_ref()
                .map_or("work".to_owned(), |c| c.goal.clone());
            let p = Self::exec_payload(
                &i,
                vec![
                    ("checkpoint", Self::checkpoint(&i, &phase, now)),
                    (
                        "resumeWithinSeconds",
                        Value::from(self.pace.resume_within_seconds),
                    ),
                ],
            );
            self.note(format!(
                "checkpoints {w} after step {} to yield its slot (preemption, §11.3)",
                i.steps_done
            ));
            return self.send(Intent::Checkpoint(key.0, key.1), "work.checkpoint", p, now);
        }
        if let Some((n, Fault::Block { reason, .. })) = self.fault_for(w, i.steps_done) {
            self.faults_done.insert(n);
            let phase = i
                .contract
                .as_ref()
                .map_or("work".to_owned(), |c| c.goal.clone());
            let p = Self::exec_payload(
                &i,
                vec![
                    ("reason", Value::string(reason.clone())),
                    ("checkpoint", Self::checkpoint(&i, &phase, now)),
                    (
                        "blockedLeaseSeconds",
                        Value::from(self.pace.blocked_lease_seconds),
                    ),
                ],
            );
            self.note(format!("blocks {w}: {reason}"));
            return self.send(Intent::Block(key.0, key.1), "work.block", p, now);
        }
        let total = i.contract.as_ref().map_or(2, steps_of);
        if i.steps_done < total {
            let last = i.steps_done + 1 == total;
            let p = Self::exec_payload(&i, vec![("usageDelta", Self::usage(&i, last))]);
            return self.send(
                Intent::Usage(key.0, key.1),
                "ext.missionweaveprotocol.core.resource_usage_record",
                p,
                now,
            );
        }
        let published = self.my_artifacts(&i);
        let this_epoch = format!("-e{}", i.ownership_epoch);
        if !published.iter().any(|(id, _)| id.ends_with(&this_epoch)) {
            let Some(m) = self.manifest(g, &i, now) else {
                self.note(format!(
                    "cannot build the Artifact of {w} (Mission unknown)"
                ));
                self.pending.retry_at = Some(now.plus_micros(self.pace.retry));
                return None;
            };
            // The content goes to the driver's store with the Command that names its hash.
            let bytes = self.content(&i).into_bytes();
            self.contents.push(ArtifactContent {
                content_hash: wasm_core::encoding::sha256_hash(&bytes),
                media_type: MEDIA_TYPE.to_owned(),
                bytes,
            });
            let mut p = Self::exec_payload(&i, vec![("artifact", Value::Object(m))]);
            p.remove("workItemId");
            return self.send(Intent::Publish(key.0, key.1), "artifact.publish", p, now);
        }
        let ids: Vec<String> = published.into_iter().map(|(id, _)| id).collect();
        let p = Self::exec_payload(
            &i,
            vec![
                ("artifactIds", strings(&ids)),
                ("evidence", self.evidence(g, &i)),
            ],
        );
        self.note(format!(
            "submits {w} with Evidence for each acceptance criterion"
        ));
        self.send(Intent::Submit(key.0, key.1), "work.submit", p, now)
    }

    /// Sub-work proposed by a Worker blocked on `w` (its Fault says what).
    fn propose(&mut self, g: &str, w: &str, now: Micros) -> Option<Outgoing> {
        let proposal = self.cfg.faults.iter().find_map(|f| match f {
            Fault::Block {
                work_item,
                proposal,
                ..
            } if work_item == w => Some(proposal.clone()),
            _ => None,
        })?;
        let blocked = self.item(g, w)?;
        let deadline = blocked.contract.as_ref()?.deadline;
        let c: WorkContract = plan::contract(
            &proposal.goal,
            &proposal
                .deliverables
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            &proposal
                .criteria
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            deadline,
            plan::Terms {
                inputs: vec![w.to_owned()],
                ..plan::Terms::default()
            },
        );
        let p = obj(vec![
            (
                "proposalId",
                Value::string(format!("{}:proposal:{}", prefix_of_group(g), proposal.key)),
            ),
            ("contract", c.to_json()),
            ("dependencyIds", Value::Array(Vec::new())),
        ]);
        self.proposed.insert(w.to_owned());
        self.note(format!(
            "proposes sub-work \"{}\" to unblock {w}",
            proposal.goal
        ));
        self.send(
            Intent::Propose(g.to_owned(), w.to_owned()),
            "work.propose",
            p,
            now,
        )
    }

    fn owned_count(&self) -> usize {
        self.groups
            .values()
            .flat_map(|q| q.items.values())
            .filter(|i| {
                matches!(
                    i.state,
                    ItemState::Queued | ItemState::Active | ItemState::Blocked
                )
            })
            .count()
    }

    /// Marks running items that should yield to urgent waiting work (§11.3 step 1).
    fn request_preemptions(&mut self, now: Micros) {
        if self.running.len() < self.cfg.slots {
            return;
        }
        let waiting = self.startable(now);
        let keys: Vec<(String, String)> = self.running.keys().cloned().collect();
        for (g, w) in keys {
            if self
                .running
                .get(&(g.clone(), w.clone()))
                .is_none_or(|r| r.preempt)
            {
                continue;
            }
            let Some(i) = self.item(&g, &w) else { continue };
            let cand = Candidate {
                group: g.clone(),
                item: w.clone(),
                priority: i.contract.as_ref().map_or(50, |c| c.requested_priority),
                ready_since: i.ready_since,
            };
            if let Some(n) = self.sched.preempt(&cand, &waiting) {
                let urgent = waiting[n].item.clone();
                if let Some(r) = self.running.get_mut(&(g.clone(), w.clone())) {
                    r.preempt = true;
                }
                self.note(format!(
                    "the Scheduler asks {w} to yield to urgent {urgent} at its next checkpoint"
                ));
                return;
            }
        }
    }
}

impl Agent for Worker {
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
        if !self.groups.contains_key(group) {
            self.groups
                .insert(group.to_owned(), GroupQueue::new(group, self.me.id()));
            if self.sched.weight(group) == 1 {
                self.sched.set_weight(group, 1);
            }
        }
        let result = self.groups.get_mut(group).map(|q| q.deliver(event));
        if let Some(Err(e)) = result {
            self.note(format!("dropped an Event of {group}: {e}"));
        }
    }

    fn outcome(&mut self, action_id: &str, outcome: &Outcome, now: Micros) {
        let Some(intent) = self.pending.settle(action_id) else {
            return;
        };
        let (g, w) = {
            let (g, w) = intent.target();
            (g.to_owned(), w.to_owned())
        };
        match outcome {
            Outcome::Appended(_) | Outcome::Duplicate(_) => {
                self.pending.awaiting = outcome.group_events();
                match &intent {
                    Intent::Usage(..) => {
                        if let Some(i) = self.item_mut(&g, &w) {
                            i.steps_done += 1;
                        }
                        self.sched.charge(&g, 1);
                        if let Some(r) = self.running.get_mut(&(g.clone(), w.clone())) {
                            // A step is a safe point: a pending preemption checkpoints now.
                            r.next_at = if r.preempt {
                                now
                            } else {
                                now.plus_micros(self.pace.step)
                            };
                            r.steps_since_renewal += 1;
                            r.progressed += 1;
                        }
                    }
                    Intent::Renew(..) => {
                        if let Some(r) = self.running.get_mut(&(g.clone(), w.clone())) {
                            r.steps_since_renewal = 0;
                        }
                    }
                    Intent::Accept(..) => self.note(format!("accepted {w}")),
                    Intent::Start(..) => self.note(format!("started {w}")),
                    _ => {}
                }
            }
            Outcome::Rejected { code, message } => {
                self.note(format!(
                    "{:?} on {w} was refused: {code} ({message})",
                    intent
                ));
                self.pending.retry_at = Some(now.plus_micros(self.pace.retry));
                match code {
                    ErrorCode::WorkLeaseExpired
                    | ErrorCode::WorkStaleOwnership
                    | ErrorCode::WorkAlreadyOwned
                    | ErrorCode::WorkOfferExpired
                    | ErrorCode::AuthForbidden => {
                        // Fenced (§11.5): this Worker no longer owns the item.
                        if let Some(i) = self.item_mut(&g, &w) {
                            i.state = ItemState::Gone;
                            i.lease = None;
                        }
                        self.running.remove(&(g.clone(), w.clone()));
                        self.note(format!("drops {w}: it is no longer this Worker's"));
                    }
                    ErrorCode::ApprovalRequired if matches!(intent, Intent::Start(..)) => {
                        self.gated.insert(w.clone());
                    }
                    _ if matches!(intent, Intent::Start(..) | Intent::Accept(..)) => {
                        self.hold.insert(
                            w.clone(),
                            now.plus_micros(self.pace.retry).plus_micros(self.pace.step),
                        );
                    }
                    _ => {}
                }
            }
        }
    }

    fn step(&mut self, now: Micros) -> Option<Outgoing> {
        self.me.session_epoch?;
        let groups = &self.groups;
        if !self
            .pending
            .ready(now, |g| groups.get(g).map(|q| q.inbox.cursor()))
        {
            return None;
        }
        if let Some(t) = self.stalled_until {
            if t > now {
                return None;
            }
            self.stalled_until = None;
        }
        self.sync_running(now);
        // Propose sub-work for an item blocked by a scripted blocker.
        let blocked: Option<(String, String)> = self.groups.iter().find_map(|(g, q)| {
            q.items
                .values()
                .find(|i| i.state == ItemState::Blocked && !self.proposed.contains(&i.id))
                .filter(|i| {
                    self.cfg
                        .faults
                        .iter()
                        .any(|f| matches!(f, Fault::Block { work_item, .. } if *work_item == i.id))
                })
                .map(|i| (g.clone(), i.id.clone()))
        });
        if let Some((g, w)) = blocked {
            return self.propose(&g, &w, now);
        }
        // Accept an offer this Worker can commit to (admission control, §10.3).
        let offer = self.groups.iter().find_map(|(g, q)| {
            q.items
                .values()
                .find(|i| {
                    i.state == ItemState::Offered
                        && i.offer_expires_at.is_some_and(|t| t > now)
                        && self.hold.get(&i.id).is_none_or(|t| *t <= now)
                })
                .map(|i| (g.clone(), i.id.clone()))
        });
        if let Some((g, w)) = offer
            && self.owned_count() < self.cfg.queue_capacity
            && self.groups.get(&g).is_some_and(|q| q.member)
        {
            let gated = self
                .item(&g, &w)
                .is_some_and(|i| i.waits_for_approval(now) || self.gated.contains(&w));
            let lease = if gated {
                self.pace.gated_ownership_seconds
            } else {
                self.cfg.ownership_lease_seconds
            };
            let p = obj(vec![
                ("workItemId", Value::string(w.clone())),
                ("ownershipLeaseSeconds", Value::from(lease)),
            ]);
            return self.send(Intent::Accept(g, w), "work.accept_offer", p, now);
        }
        self.request_preemptions(now);
        // A running item whose step is due.
        let due = self
            .running
            .iter()
            .filter(|(_, r)| r.next_at <= now)
            .min_by_key(|(_, r)| r.next_at)
            .map(|(k, _)| k.clone());
        if let Some((g, w)) = due {
            return self.act(&g, &w, now);
        }
        // A free slot: the Scheduler picks across the per-Group queues (§11.1).
        if self.running.len() < self.cfg.slots {
            let cands = self.startable(now);
            if let Some(n) = self.sched.pick(&cands, now) {
                let c = &cands[n];
                let (g, w) = (c.group.clone(), c.item.clone());
                let epoch = self.item(&g, &w).map_or(0, |i| i.ownership_epoch);
                let p = obj(vec![
                    ("workItemId", Value::string(w.clone())),
                    ("ownershipEpoch", Value::from(epoch)),
                    (
                        "executionLeaseSeconds",
                        Value::from(self.cfg.execution_lease_seconds),
                    ),
                ]);
                return self.send(Intent::Start(g, w), "work.start", p, now);
            }
        }
        None
    }

    fn next_wake(&self) -> Option<Micros> {
        if self.pending.in_flight.is_some() {
            return None;
        }
        let mut t: Vec<Micros> = Vec::new();
        t.extend(self.stalled_until);
        t.extend(self.pending.retry_at);
        if self.stalled_until.is_none() {
            t.extend(self.running.values().map(|r| r.next_at));
        }
        t.extend(self.hold.values().copied());
        t.into_iter().min()
    }

    fn cursor(&self, group: &str) -> Option<u64> {
        self.groups.get(group).map(|q| q.inbox.cursor())
    }

    fn duplicates(&self) -> u64 {
        self.groups.values().map(|q| q.inbox.duplicates()).sum()
    }

    fn directive(&mut self, d: &Directive) {
        if let Directive::Weight { group, weight } = d {
            self.sched.set_weight(group, *weight);
        }
    }

    fn summary(&self) -> Vec<String> {
        self.groups.values().flat_map(GroupQueue::summary).collect()
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    fn take_artifacts(&mut self) -> Vec<ArtifactContent> {
        std::mem::take(&mut self.contents)
    }
}
