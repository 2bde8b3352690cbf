//! Agents: the registered Agent Cards (§6.1) with their capabilities and verified Evidence, the
//! durable Session Epoch (§6.3), the Agent's Memberships in the Groups the viewer sees and its
//! WorkItems there. Presence (§6.2) is live-only (PRESENCE frames, never in the state): the view
//! leaves a slot the UI fills.
//!
//! The console reads the cards from the registry (they are Organization documents, not in any
//! Group log it folds), so the parts that do not need `State::cards` are free functions it
//! calls too: [`visible_groups`], [`memberships_in`], [`last_seen`] and [`standing`].

use super::Viewer;
use crate::authority::clock::Micros;
use crate::authority::state::State;
use crate::json::Value;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

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
    /// The Group's Mission's title: what a person recognises (the URNs stay in the tooltip).
    pub mission_title: String,
    pub roles: Vec<String>,
    pub status: crate::model::membership::MembershipState,
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
        let groups = visible_groups(state, viewer);
        let mut ids: BTreeSet<&str> = BTreeSet::new();
        for m in state.missions.values().filter(|m| viewer.sees(state, m)) {
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
                memberships: memberships_in(state, &groups, &c.agent_id),
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

/// The Groups of the Missions `viewer` sees (§8): the only Groups whose Memberships it is shown.
pub fn visible_groups<'a>(state: &'a State, viewer: &Viewer) -> BTreeSet<&'a str> {
    state
        .missions
        .values()
        .filter(|m| viewer.sees(state, m))
        .map(|m| m.group_id.as_str())
        .collect()
}

/// `agent_id`'s Memberships in `groups` (ended ones included: the history of who worked
/// there), in Group id order.
pub fn memberships_in(
    state: &State,
    groups: &BTreeSet<&str>,
    agent_id: &str,
) -> Vec<MembershipView> {
    groups
        .iter()
        .filter_map(|g| {
            let group = state.groups.get(*g)?;
            group.memberships.get(agent_id).map(|m| MembershipView {
                group_id: group.group.id.clone(),
                mission_id: group.group.mission_id.clone(),
                mission_title: state
                    .mission_of_group(g)
                    .map(|m| m.title.clone())
                    .unwrap_or_default(),
                roles: m.roles.clone(),
                status: m.status,
                epoch: m.epoch,
            })
        })
        .collect()
}

/// The instant of the last Event each of `agents` caused in `events` (log order): the presence a
/// console can observe, since PING presence goes to the server only (§6.2). One pass from the
/// newest Event back that stops once every Agent is found (a scan per Agent costs Agents ×
/// Events on every live Event).
pub fn last_seen(events: &[Value], agents: &[&str]) -> BTreeMap<String, Micros> {
    let mut found: BTreeMap<String, Micros> = BTreeMap::new();
    for e in events.iter().rev() {
        if found.len() == agents.len() {
            break;
        }
        let Some(actor) = e.pointer("/actor/id").and_then(Value::as_str) else {
            continue;
        };
        if agents.contains(&actor)
            && !found.contains_key(actor)
            && let Some(at) = e
                .pointer("/occurredAt")
                .and_then(Value::as_str)
                .and_then(Micros::parse)
        {
            found.insert(actor.to_owned(), at);
        }
    }
    found
}

/// The Agents view's order as a key: the Agents with a Membership in the viewer's Groups first,
/// the most recently seen first (never seen last), then by name and id. The rest of the
/// Organization follows in the same order.
pub fn standing<'a>(
    member: bool,
    last: Option<Micros>,
    name: &'a str,
    agent_id: &'a str,
) -> (bool, Reverse<Option<i64>>, &'a str, &'a str) {
    (!member, Reverse(last.map(|m| m.0)), name, agent_id)
}

#[cfg(test)]
mod tests {
    use super::{Micros, last_seen, standing};
    use crate::json;

    fn event(actor: &str, at: &str) -> json::Value {
        json::parse(
            format!(r#"{{"actor":{{"type":"agent","id":"{actor}"}},"occurredAt":"{at}"}}"#)
                .as_bytes(),
        )
        .expect("json")
    }

    #[test]
    fn each_agent_is_last_seen_at_its_newest_event_and_an_agent_without_one_is_not_seen() {
        let events = [
            event("urn:a", "2026-12-03T07:00:00Z"),
            event("urn:b", "2026-12-03T07:01:00Z"),
            event("urn:a", "2026-12-03T07:02:00Z"),
            event("urn:other", "2026-12-03T07:03:00Z"),
            json::parse(br#"{"occurredAt":"2026-12-03T07:04:00Z"}"#).expect("json"),
            json::parse(br#"{"actor":{"type":"agent","id":"urn:b"}}"#).expect("json"),
        ];
        let seen = last_seen(&events, &["urn:a", "urn:b", "urn:c"]);
        assert_eq!(
            seen.get("urn:a"),
            Micros::parse("2026-12-03T07:02:00Z").as_ref()
        );
        // A newer Event without an instant does not hide the one before it.
        assert_eq!(
            seen.get("urn:b"),
            Micros::parse("2026-12-03T07:01:00Z").as_ref()
        );
        assert_eq!(seen.get("urn:c"), None);
        assert_eq!(seen.len(), 2);
        assert!(last_seen(&[], &["urn:a"]).is_empty());
        // Once every Agent is found the scan stops: an older Event cannot replace a newer one.
        let one = last_seen(&events, &["urn:a"]);
        assert_eq!(
            one.get("urn:a"),
            Micros::parse("2026-12-03T07:02:00Z").as_ref()
        );
    }

    #[test]
    fn members_first_most_recent_first_never_seen_last_then_by_name_and_id() {
        let at = |t: &str| Micros::parse(t);
        let mut rows = [
            (false, at("2026-12-03T08:00:00Z"), "zed", "urn:z"),
            (true, None, "quiet", "urn:q"),
            (true, at("2026-12-03T06:00:00Z"), "old", "urn:o"),
            (true, at("2026-12-03T07:00:00Z"), "new", "urn:n"),
            (false, None, "bee", "urn:b2"),
            (false, None, "bee", "urn:b1"),
            (true, None, "ant", "urn:a"),
        ];
        rows.sort_by(|a, b| standing(a.0, a.1, a.2, a.3).cmp(&standing(b.0, b.1, b.2, b.3)));
        let ids: Vec<&str> = rows.iter().map(|r| r.3).collect();
        assert_eq!(
            ids,
            [
                "urn:n", "urn:o", "urn:a", "urn:q", "urn:z", "urn:b1", "urn:b2"
            ]
        );
    }
}
