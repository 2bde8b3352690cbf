//! The Organization Events: Agent Card registration (§6.1) and Session opening (§6.3), with
//! the lease revocations a new Session Epoch causes in the Agent's Groups.

use super::{EventPayload, Fields, json, object, string};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::projection::AgentCardRecord;
use crate::json::{Object, Value};

/// `…registry.agent_card_registered`. The reference carries `agentId` and `version` only; the
/// card itself is ours, so that replay rebuilds the registry (docs/authority.md).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentCardRegistered {
    pub agent_id: String,
    pub version: u64,
    pub card: AgentCardRecord,
}

impl EventPayload for AgentCardRegistered {
    fn to_object(&self) -> Object {
        object([
            ("agentId", string(&self.agent_id)),
            ("version", Value::from(self.version)),
            ("card", json(&self.card)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(AgentCardRegistered {
            agent_id: f.str("agentId")?,
            version: f.u64("version")?,
            card: f.model("card")?,
        })
    }
}

/// `…identity.session_opened`: the Agent's new Session Epoch fences its older runtimes (§6.3).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionOpened {
    pub agent_id: String,
    pub session_epoch: u64,
}

impl EventPayload for SessionOpened {
    fn to_object(&self) -> Object {
        object([
            ("agentId", string(&self.agent_id)),
            ("sessionEpoch", Value::from(self.session_epoch)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(SessionOpened {
            agent_id: f.str("agentId")?,
            session_epoch: f.u64("sessionEpoch")?,
        })
    }
}

/// `…core.work_execution_lease_revoked`: a new Session Epoch revoked the Agent's Execution
/// Lease (§6.3, I-13); the WorkItem returns to `queued`.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseRevoked {
    pub work_item_id: String,
    pub execution_lease_id: String,
    pub reason: String,
    pub status: String,
    pub session_epoch: u64,
}

impl EventPayload for LeaseRevoked {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("executionLeaseId", string(&self.execution_lease_id)),
            ("reason", string(&self.reason)),
            ("status", string(&self.status)),
            ("sessionEpoch", Value::from(self.session_epoch)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(LeaseRevoked {
            work_item_id: f.str("workItemId")?,
            execution_lease_id: f.str("executionLeaseId")?,
            reason: f.str("reason")?,
            status: f.str("status")?,
            session_epoch: f.u64("sessionEpoch")?,
        })
    }
}
