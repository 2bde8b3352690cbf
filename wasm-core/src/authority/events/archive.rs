//! The Group archival Events (§7.4; payloads.md §6.38).

use super::{EventPayload, Fields, json, object, string};
use crate::authority::clock::Micros;
use crate::authority::event_view::{ApplyError, EventView};
use crate::json::{Object, Value};

/// `group.snapshot.created`: the verified Group Snapshot, by id, through the Group's last
/// sequence.
#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotCreated {
    pub snapshot_id: String,
    pub through_sequence: u64,
    /// Copied from the snapshot document as it is (`null` when it has none).
    pub state_hash: Value,
}

impl EventPayload for SnapshotCreated {
    fn to_object(&self) -> Object {
        object([
            ("snapshotId", string(&self.snapshot_id)),
            ("throughSequence", Value::from(self.through_sequence)),
            ("stateHash", self.state_hash.clone()),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(SnapshotCreated {
            snapshot_id: f.str("snapshotId")?,
            through_sequence: f.u64("throughSequence")?,
            state_hash: f.value("stateHash")?,
        })
    }
}

/// `group.archived`: the Group is archived under that snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupArchived {
    pub snapshot_id: String,
    pub archived_at: Micros,
}

impl EventPayload for GroupArchived {
    fn to_object(&self) -> Object {
        object([
            ("snapshotId", string(&self.snapshot_id)),
            ("archivedAt", json(&self.archived_at)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(GroupArchived {
            snapshot_id: f.str("snapshotId")?,
            archived_at: f.ts("archivedAt")?,
        })
    }
}
