//! The WorkItem execution Events (§10.2, §11.3–§11.5; payloads.md §6.22–§6.29, §6.36).

use super::{EventPayload, Fields, json, object, string, strings};
use crate::authority::clock::Micros;
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::projection::{Checkpoint, EvidenceItem, ExecutionLease};
use crate::json::{Object, Value};

/// `work.started` (a new Execution Lease) and `work.progressed` (the renewed one): the lease
/// is embedded whole so replay rebuilds it.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseIssued {
    pub work_item_id: String,
    pub ownership_epoch: u64,
    pub execution_lease: ExecutionLease,
    pub execution_lease_expires_at: Micros,
}

impl EventPayload for LeaseIssued {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("ownershipEpoch", Value::from(self.ownership_epoch)),
            ("executionLease", json(&self.execution_lease)),
            (
                "executionLeaseExpiresAt",
                json(&self.execution_lease_expires_at),
            ),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(LeaseIssued {
            work_item_id: f.str("workItemId")?,
            ownership_epoch: f.u64("ownershipEpoch")?,
            execution_lease: f.model("executionLease")?,
            execution_lease_expires_at: f.ts("executionLeaseExpiresAt")?,
        })
    }
}

/// `work.checkpointed`: durable progress, the lease released, ownership kept until
/// `ownershipLeaseExpiresAt`.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkCheckpointed {
    pub work_item_id: String,
    pub checkpoint: Checkpoint,
    pub ownership_lease_expires_at: Micros,
}

impl EventPayload for WorkCheckpointed {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("checkpoint", json(&self.checkpoint)),
            (
                "ownershipLeaseExpiresAt",
                json(&self.ownership_lease_expires_at),
            ),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(WorkCheckpointed {
            work_item_id: f.str("workItemId")?,
            checkpoint: f.model("checkpoint")?,
            ownership_lease_expires_at: f.ts("ownershipLeaseExpiresAt")?,
        })
    }
}

/// Who blocked a WorkItem: its Worker (a bounded blocked lease), or the failure of its linked
/// child Mission under `block_parent_work_item` (§14; marked by `sourceEventId`).
#[derive(Clone, Debug, PartialEq)]
pub enum BlockedBy {
    Worker { ownership_lease_expires_at: Micros },
    ChildFailure { source_event_id: String },
}

/// `work.blocked`. The Worker's checkpoint travels as a replay note, not in the payload.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkBlocked {
    pub work_item_id: String,
    pub reason: String,
    pub by: BlockedBy,
}

impl EventPayload for WorkBlocked {
    fn to_object(&self) -> Object {
        let last = match &self.by {
            BlockedBy::Worker {
                ownership_lease_expires_at,
            } => ("ownershipLeaseExpiresAt", json(ownership_lease_expires_at)),
            BlockedBy::ChildFailure { source_event_id } => {
                ("sourceEventId", string(source_event_id))
            }
        };
        object([
            ("workItemId", string(&self.work_item_id)),
            ("reason", string(&self.reason)),
            last,
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        let by = if ev.payload.contains_key("sourceEventId") {
            BlockedBy::ChildFailure {
                source_event_id: f.str("sourceEventId")?,
            }
        } else {
            BlockedBy::Worker {
                ownership_lease_expires_at: f.ts("ownershipLeaseExpiresAt")?,
            }
        };
        Ok(WorkBlocked {
            work_item_id: f.str("workItemId")?,
            reason: f.str("reason")?,
            by,
        })
    }
}

/// `work.unblocked`: `queued` while the owner's lease is live, otherwise `open`.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkUnblocked {
    pub work_item_id: String,
    pub status: String,
}

impl EventPayload for WorkUnblocked {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("status", string(&self.status)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(WorkUnblocked {
            work_item_id: f.str("workItemId")?,
            status: f.str("status")?,
        })
    }
}

/// `work.submitted`: the Worker's published Artifacts (sorted, unique) and Evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkSubmitted {
    pub work_item_id: String,
    pub artifact_ids: Vec<String>,
    pub evidence: Vec<EvidenceItem>,
}

impl EventPayload for WorkSubmitted {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("artifactIds", strings(&self.artifact_ids)),
            ("evidence", json(&self.evidence)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(WorkSubmitted {
            work_item_id: f.str("workItemId")?,
            artifact_ids: f.model("artifactIds")?,
            evidence: f.model("evidence")?,
        })
    }
}

/// Who accepted a WorkItem's result: its Coordinator with verification Evidence, or the
/// approval of its linked child Mission (payloads.md §6.7, marked by `childMissionId`).
#[derive(Clone, Debug, PartialEq)]
pub enum AcceptedBy {
    Coordinator {
        evidence: Vec<EvidenceItem>,
    },
    ChildApproval {
        child_mission_id: String,
        child_approval_id: String,
        source_event_id: String,
    },
}

/// `work.result.accepted`.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultAccepted {
    pub work_item_id: String,
    pub by: AcceptedBy,
}

impl EventPayload for ResultAccepted {
    fn to_object(&self) -> Object {
        let id = ("workItemId", string(&self.work_item_id));
        match &self.by {
            AcceptedBy::Coordinator { evidence } => object([id, ("evidence", json(evidence))]),
            AcceptedBy::ChildApproval {
                child_mission_id,
                child_approval_id,
                source_event_id,
            } => object([
                id,
                ("childMissionId", string(child_mission_id)),
                ("childApprovalId", string(child_approval_id)),
                ("sourceEventId", string(source_event_id)),
            ]),
        }
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        let work_item_id = f.str("workItemId")?;
        let by = match f.opt_str("childMissionId") {
            Some(child_mission_id) => AcceptedBy::ChildApproval {
                child_mission_id,
                child_approval_id: f.str("childApprovalId")?,
                source_event_id: f.str("sourceEventId")?,
            },
            None => AcceptedBy::Coordinator {
                evidence: f.model("evidence")?,
            },
        };
        Ok(ResultAccepted { work_item_id, by })
    }
}

/// `work.failed` and `work.cancelled`; a `sourceEventId` marks the failure of a linked child
/// Mission under `fail_parent_work_item` / `fail_parent_mission` (§14), which fences the owner.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkClosed {
    pub work_item_id: String,
    pub reason: String,
    /// Absent (not `null`) on the Coordinator's or Worker's own failure and on cancellation.
    pub source_event_id: Option<String>,
}

impl EventPayload for WorkClosed {
    fn to_object(&self) -> Object {
        let mut o = object([
            ("workItemId", string(&self.work_item_id)),
            ("reason", string(&self.reason)),
        ]);
        if let Some(s) = &self.source_event_id {
            o.insert("sourceEventId", string(s));
        }
        o
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(WorkClosed {
            work_item_id: f.str("workItemId")?,
            reason: f.str("reason")?,
            source_event_id: if ev.payload.contains_key("sourceEventId") {
                Some(f.str("sourceEventId")?)
            } else {
                None
            },
        })
    }
}
