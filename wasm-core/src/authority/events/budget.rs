//! The resource ledger Event (§12; payloads.md §6.37).

use super::{EventPayload, Fields, json, object, string};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::projection::{ResourceBudget, ResourceUsage};
use crate::json::{Object, Value};

/// `…core.resource_usage_recorded`: one six-dimensional charge to a WorkItem and its
/// ancestry, with the WorkItem's cumulative usage and remaining budget after it.
#[derive(Clone, Debug, PartialEq)]
pub struct UsageRecorded {
    pub work_item_id: String,
    pub execution_lease_id: String,
    pub ownership_epoch: u64,
    pub usage_delta: ResourceUsage,
    pub cumulative_usage: ResourceUsage,
    pub remaining_budget: ResourceBudget,
}

impl EventPayload for UsageRecorded {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("executionLeaseId", string(&self.execution_lease_id)),
            ("ownershipEpoch", Value::from(self.ownership_epoch)),
            ("usageDelta", json(&self.usage_delta)),
            ("cumulativeUsage", json(&self.cumulative_usage)),
            ("remainingBudget", json(&self.remaining_budget)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(UsageRecorded {
            work_item_id: f.str("workItemId")?,
            execution_lease_id: f.str("executionLeaseId")?,
            ownership_epoch: f.u64("ownershipEpoch")?,
            usage_delta: f.model("usageDelta")?,
            cumulative_usage: f.model("cumulativeUsage")?,
            remaining_budget: f.model("remainingBudget")?,
        })
    }
}
