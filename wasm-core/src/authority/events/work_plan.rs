//! The WorkItem planning Events (§10.1–§10.4; payloads.md §6.18–§6.21, §6.35).

use super::{EventPayload, Fields, json, object, opt_string, string, strings};
use crate::authority::clock::Micros;
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::projection::{SelectionBasis, WorkItem, WorkProposal};
use crate::json::{Object, Value};

one_member!(
    /// `work.proposed`: the proposal, whole.
    WorkProposed { proposal: WorkProposal = "proposal" }
);

/// `work.authorized`: the new WorkItem, whole, and the proposal it authorizes (`null` when
/// the Coordinator authorized it directly).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkAuthorized {
    pub work_item: WorkItem,
    pub proposal_id: Option<String>,
}

impl EventPayload for WorkAuthorized {
    fn to_object(&self) -> Object {
        object([
            ("workItem", json(&self.work_item)),
            ("proposalId", opt_string(&self.proposal_id)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(WorkAuthorized {
            work_item: f.model("workItem")?,
            proposal_id: f.opt_str("proposalId"),
        })
    }
}

/// `work.offer.created` (§10.3): every live candidate (earlier ones merged, sorted). The
/// Delegation Grant an offer is attributed to travels as a replay note.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferCreated {
    pub work_item_id: String,
    pub candidate_agent_ids: Vec<String>,
    pub offer_expires_at: Micros,
    pub selection_basis: SelectionBasis,
}

impl EventPayload for OfferCreated {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("candidateAgentIds", strings(&self.candidate_agent_ids)),
            ("offerExpiresAt", json(&self.offer_expires_at)),
            ("selectionBasis", json(&self.selection_basis)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(OfferCreated {
            work_item_id: f.str("workItemId")?,
            candidate_agent_ids: f.model("candidateAgentIds")?,
            offer_expires_at: f.model("offerExpiresAt")?,
            selection_basis: f.model("selectionBasis")?,
        })
    }
}

/// `work.offer.accepted` (§10.3): ownership at the next Ownership Epoch, the Agent Card
/// version pinned. The pinned capability versions travel as a replay note.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferAccepted {
    pub work_item_id: String,
    pub assignee_id: String,
    pub ownership_epoch: u64,
    pub ownership_lease_expires_at: Micros,
    pub agent_card_version: u64,
}

impl EventPayload for OfferAccepted {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("assigneeId", string(&self.assignee_id)),
            ("ownershipEpoch", Value::from(self.ownership_epoch)),
            (
                "ownershipLeaseExpiresAt",
                json(&self.ownership_lease_expires_at),
            ),
            ("agentCardVersion", Value::from(self.agent_card_version)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(OfferAccepted {
            work_item_id: f.str("workItemId")?,
            assignee_id: f.str("assigneeId")?,
            ownership_epoch: f.u64("ownershipEpoch")?,
            ownership_lease_expires_at: f.model("ownershipLeaseExpiresAt")?,
            agent_card_version: f.u64("agentCardVersion")?,
        })
    }
}

/// `work.contract.revised` (§10.4): a dependency edge added, at WorkItem `revision`.
#[derive(Clone, Debug, PartialEq)]
pub struct ContractRevised {
    pub work_item_id: String,
    pub dependency_id: String,
    pub revision: u64,
}

impl EventPayload for ContractRevised {
    fn to_object(&self) -> Object {
        object([
            ("workItemId", string(&self.work_item_id)),
            ("dependencyId", string(&self.dependency_id)),
            ("revision", Value::from(self.revision)),
        ])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let f = Fields::of(ev);
        Ok(ContractRevised {
            work_item_id: f.str("workItemId")?,
            dependency_id: f.str("dependencyId")?,
            revision: f.u64("revision")?,
        })
    }
}
