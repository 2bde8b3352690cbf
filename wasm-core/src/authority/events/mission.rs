//! The Mission Events (§7, §14; payloads.md §6.1–§6.10).

use super::{EventPayload, Fields, json, object, opt_string, string, strings};
use crate::authority::clock::Micros;
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::projection::{Approval, Group, Mission};
use crate::json::{Object, Value};

/// What a new Mission comes from: a MissionOwner's `mission.create` /
/// `mission.create_follow_up` (`followUpOfMissionId`, `null` for a new root), or a
/// `mission.create_child` whose parent-Group Event is `parentEventId` (D-27).
#[derive(Clone, Debug, PartialEq)]
pub enum CreatedFrom {
    Owner {
        follow_up_of_mission_id: Option<String>,
    },
    Parent {
        parent_event_id: String,
    },
}

/// `mission.created` and `mission.follow_up.created`: the Mission and its Group, whole.
#[derive(Clone, Debug, PartialEq)]
pub struct MissionCreated {
    pub mission: Mission,
    pub group: Group,
    pub from: CreatedFrom,
}

impl EventPayload for MissionCreated {
    fn to_object(&self) -> Object {
        let last = match &self.from {
            CreatedFrom::Owner {
                follow_up_of_mission_id,
            } => ("followUpOfMissionId", opt_string(follow_up_of_mission_id)),
            CreatedFrom::Parent { parent_event_id } => ("parentEventId", string(parent_event_id)),
        };
        object([
            ("mission", json(&self.mission)),
            ("group", json(&self.group)),
            last,
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        let from = if ev.payload.contains_key("parentEventId") {
            CreatedFrom::Parent {
                parent_event_id: f.str("parentEventId")?,
            }
        } else {
            CreatedFrom::Owner {
                follow_up_of_mission_id: f.opt_str("followUpOfMissionId"),
            }
        };
        Ok(MissionCreated {
            mission: f.model("mission")?,
            group: f.model("group")?,
            from,
        })
    }
}

/// `mission.child.created` (parent Group): the parent WorkItem is promoted to the child.
#[derive(Clone, Debug, PartialEq)]
pub struct ChildCreated {
    pub parent_mission_id: String,
    pub parent_work_item_id: String,
    pub child_mission_id: String,
    pub child_group_id: String,
}

impl EventPayload for ChildCreated {
    fn to_object(&self) -> Object {
        object([
            ("parentMissionId", string(&self.parent_mission_id)),
            ("parentWorkItemId", string(&self.parent_work_item_id)),
            ("childMissionId", string(&self.child_mission_id)),
            ("childGroupId", string(&self.child_group_id)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(ChildCreated {
            parent_mission_id: f.str("parentMissionId")?,
            parent_work_item_id: f.str("parentWorkItemId")?,
            child_mission_id: f.str("childMissionId")?,
            child_group_id: f.str("childGroupId")?,
        })
    }
}

/// `mission.coordinator.assigned` (§7.2): a replacement Coordinator at the next epoch.
#[derive(Clone, Debug, PartialEq)]
pub struct CoordinatorAssigned {
    pub previous_coordinator_id: String,
    pub coordinator_id: String,
    pub coordinator_epoch: u64,
    pub lease_expires_at: Micros,
}

impl EventPayload for CoordinatorAssigned {
    fn to_object(&self) -> Object {
        object([
            (
                "previousCoordinatorId",
                string(&self.previous_coordinator_id),
            ),
            ("coordinatorId", string(&self.coordinator_id)),
            ("coordinatorEpoch", Value::from(self.coordinator_epoch)),
            ("leaseExpiresAt", json(&self.lease_expires_at)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(CoordinatorAssigned {
            previous_coordinator_id: f.str("previousCoordinatorId")?,
            coordinator_id: f.str("coordinatorId")?,
            coordinator_epoch: f.u64("coordinatorEpoch")?,
            lease_expires_at: f.ts("leaseExpiresAt")?,
        })
    }
}

/// `mission.coordinator.renewed` (§7.2): the same Coordinator, a later lease.
#[derive(Clone, Debug, PartialEq)]
pub struct CoordinatorRenewed {
    pub coordinator_epoch: u64,
    pub lease_expires_at: Micros,
}

impl EventPayload for CoordinatorRenewed {
    fn to_object(&self) -> Object {
        object([
            ("coordinatorEpoch", Value::from(self.coordinator_epoch)),
            ("leaseExpiresAt", json(&self.lease_expires_at)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(CoordinatorRenewed {
            coordinator_epoch: f.u64("coordinatorEpoch")?,
            lease_expires_at: f.ts("leaseExpiresAt")?,
        })
    }
}

/// `mission.submitted_for_approval` (§7.3): the revision and Artifact hashes awaiting approval.
#[derive(Clone, Debug, PartialEq)]
pub struct SubmittedForApproval {
    pub mission_id: String,
    pub mission_revision: u64,
    pub artifact_hashes: Vec<String>,
}

impl EventPayload for SubmittedForApproval {
    fn to_object(&self) -> Object {
        object([
            ("missionId", string(&self.mission_id)),
            ("missionRevision", Value::from(self.mission_revision)),
            ("artifactHashes", strings(&self.artifact_hashes)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(SubmittedForApproval {
            mission_id: f.str("missionId")?,
            mission_revision: f.u64("missionRevision")?,
            artifact_hashes: f.model("artifactHashes")?,
        })
    }
}

one_member!(
    /// `mission.approved` (§7.3): the signed Approval, whole.
    MissionApproved { approval: Approval = "approval" }
);

/// `mission.changes_requested` (§7.3): back to `active` at `newRevision`.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangesRequested {
    pub mission_id: String,
    pub feedback: String,
    pub new_revision: u64,
}

impl EventPayload for ChangesRequested {
    fn to_object(&self) -> Object {
        object([
            ("missionId", string(&self.mission_id)),
            ("feedback", string(&self.feedback)),
            ("newRevision", Value::from(self.new_revision)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(ChangesRequested {
            mission_id: f.str("missionId")?,
            feedback: f.str("feedback")?,
            new_revision: f.u64("newRevision")?,
        })
    }
}

/// `mission.cancelled` and `mission.terminated`; `sourceEventId` marks one propagated from a
/// parent's cancellation or a child's failure (§14).
#[derive(Clone, Debug, PartialEq)]
pub struct MissionClosed {
    pub mission_id: String,
    pub reason: String,
    /// Absent (not `null`) on the Mission's own cancellation or termination.
    pub source_event_id: Option<String>,
}

impl EventPayload for MissionClosed {
    fn to_object(&self) -> Object {
        let mut o = object([
            ("missionId", string(&self.mission_id)),
            ("reason", string(&self.reason)),
        ]);
        if let Some(s) = &self.source_event_id {
            o.insert("sourceEventId", string(s));
        }
        o
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(MissionClosed {
            mission_id: f.str("missionId")?,
            reason: f.str("reason")?,
            source_event_id: if ev.payload.contains_key("sourceEventId") {
                Some(f.str("sourceEventId")?)
            } else {
                None
            },
        })
    }
}
