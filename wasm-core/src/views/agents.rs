//! Agents: the registered Agent Cards (§6.1) with their capabilities and verified Evidence, the
//! durable Session Epoch (§6.3), the Agent's Memberships in the Groups the viewer sees and its
//! WorkItems there. Presence (§6.2) is live-only (PRESENCE frames, never in the state): the view
//! leaves a slot the UI fills.

use super::Viewer;
use crate::authority::state::State;
use std::collections::BTreeSet;

/// Live presence, filled by the UI from the connection; the state never has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    Online,
    Busy,
    Offline,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CapabilityView {
    pub id: String,
    pub version: u64,
    pub verified_evidence: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MembershipView {
    pub group_id: String,
    pub mission_id: String,
    pub roles: Vec<String>,
    pub status: String,
    pub epoch: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AgentView {
    pub agent_id: String,
    pub display_name: String,
    pub card_version: u64,
    pub owner: String,
    pub capabilities: Vec<CapabilityView>,
    /// `None` before the first Session.
    pub session_epoch: Option<u64>,
    pub memberships: Vec<MembershipView>,
    /// WorkItems it owns (in visible Missions), in id order.
    pub work_items: Vec<String>,
    /// The live-only slot (always `None` here).
    pub presence: Option<Presence>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentsView {
    /// In Agent id order.
    pub agents: Vec<AgentView>,
}

impl AgentsView {
    /// The Agents `viewer` may see: every card for the Organization view; for a Principal, the
    /// Agents that are members or Coordinators of a Mission it sees.
    pub fn build(state: &State, viewer: &Viewer) -> AgentsView {
        let visible: Vec<_> = state
            .missions
            .values()
            .filter(|m| viewer.sees(state, m))
            .collect();
        let groups: BTreeSet<&str> = visible.iter().map(|m| m.group_id.as_str()).collect();
        let mut ids: BTreeSet<&str> = BTreeSet::new();
        for m in &visible {
            ids.insert(m.coordinator_id.as_str());
            if let Some(g) = state.groups.get(&m.group_id) {
                ids.extend(g.memberships.keys().map(String::as_str));
            }
        }
        let agents = state
            .cards
            .values()
            .filter(|c| *viewer == Viewer::Organization || ids.contains(c.agent_id.as_str()))
            .map(|c| AgentView {
                agent_id: c.agent_id.clone(),
                display_name: c.display_name.clone(),
                card_version: c.version,
                owner: c.owner.clone(),
                capabilities: c
                    .capabilities
                    .iter()
                    .map(|k| CapabilityView {
                        id: k.id.clone(),
                        version: k.version,
                        verified_evidence: k.verified_evidence.clone(),
                    })
                    .collect(),
                session_epoch: state.session_epochs.get(&c.agent_id).copied(),
                memberships: state
                    .groups
                    .values()
                    .filter(|g| groups.contains(g.group.id.as_str()))
                    .filter_map(|g| {
                        g.memberships.get(&c.agent_id).map(|m| MembershipView {
                            group_id: g.group.id.clone(),
                            mission_id: g.group.mission_id.clone(),
                            roles: m.roles.clone(),
                            status: m.status.clone(),
                            epoch: m.epoch,
                        })
                    })
                    .collect(),
                work_items: state
                    .work_items
                    .values()
                    .filter(|w| w.assignee_id.as_deref() == Some(c.agent_id.as_str()))
                    .filter(|w| groups.contains(w.group_id.as_str()))
                    .map(|w| w.id.clone())
                    .collect(),
                presence: None,
            })
            .collect();
        AgentsView { agents }
    }

    pub fn agent(&self, id: &str) -> Option<&AgentView> {
        self.agents.iter().find(|a| a.agent_id == id)
    }
}
