//! The authority's state: every projection, keyed by its Organization-wide identifier, plus the
//! per-Group order and the idempotency receipts. It changes only by applying Events
//! ([`super::evolve`]), so replaying a history rebuilds it exactly, in the server and in the
//! browser alike.

use super::clock::Micros;
use super::projection::*;
use super::table::{Log, Set, Table};
use crate::json::Object;
use std::collections::{BTreeMap, VecDeque};

/// Where an Event sits: a Group and its sequence, or the Organization log.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventRef {
    /// `None` for Organization-scoped Events.
    pub group_id: Option<String>,
    pub sequence: u64,
}

/// What an accepted Command produced, kept for ever for idempotent retries (§15.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub command_hash: String,
    pub events: Vec<EventRef>,
}

/// One Group: its projection, order, Memberships, Conversations and policy log.
#[derive(Clone, Debug)]
pub struct GroupState {
    pub group: Group,
    pub last_sequence: u64,
    /// When the Group's last Event was accepted.
    pub last_occurred_at: super::clock::Micros,
    /// Memberships by Principal id.
    pub memberships: Table<Membership>,
    pub conversations: Set,
    /// Authorization, budget and override decisions needed for audit (§4, §20).
    pub policy_log: Log<Object>,
    /// Recent acceptance times per (actor id, event kind), for the cooperation rate limits.
    pub recent: BTreeMap<(String, String), VecDeque<Micros>>,
}

/// One ledger account (§12; payloads.md §8): a root Mission, a WorkItem (under its Mission or
/// parent WorkItem) or a child Mission (under its parent WorkItem).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Account {
    /// The parent account id; `None` for a root Mission.
    pub parent: Option<String>,
    /// The limit; a `null` dimension grants nothing.
    pub limit: ResourceBudget,
    /// Direct child account ids, in allocation order.
    pub children: Vec<String>,
    /// Usage charged directly to this account.
    pub direct: [u64; 6],
    /// Usage of this account and everything below it.
    pub total: [u64; 6],
}

/// The whole authoritative state of one Organization's Groups.
#[derive(Clone, Debug, Default)]
pub struct State {
    pub cards: Table<AgentCardRecord>,
    /// The durable Session Epoch of each Agent (§6.3).
    pub session_epochs: Table<u64>,
    pub missions: Table<Mission>,
    pub groups: Table<GroupState>,
    pub work_items: Table<WorkItem>,
    pub proposals: Table<WorkProposal>,
    pub messages: Table<Message>,
    pub amendments: Table<MessageAmendment>,
    pub leases: Table<ExecutionLease>,
    pub approvals: Table<Approval>,
    pub execution_approvals: Table<ExecutionApproval>,
    pub delegation_grants: Table<DelegationGrant>,
    pub override_grants: Table<CooperationOverrideGrant>,
    /// Published Artifact manifests by Artifact id.
    pub artifacts: Table<Object>,
    /// Ledger accounts by Mission or WorkItem id.
    pub accounts: Table<Account>,
    /// Accounts opened before their parent account, by the parent's id (a console folding a
    /// child Mission's Group before its parent's; never in the authority's own order).
    pub orphan_accounts: BTreeMap<String, Vec<String>>,
    /// Receipts by (actor id, Action ID) (§15.1; D-25).
    pub receipts: Receipts,
    /// The last Organization-scoped Event number.
    pub org_sequence: u64,
}

impl GroupState {
    /// How many `kind` Events `actor` had accepted in this Group after `horizon`: a binary
    /// search, as the window is in acceptance order (the rate limits of §20 stay O(log n)).
    pub fn recent_count(&self, actor: &str, kind: &str, horizon: super::clock::Micros) -> usize {
        self.recent
            .get(&(actor.to_owned(), kind.to_owned()))
            .map_or(0, |w| w.len() - w.partition_point(|t| *t <= horizon))
    }
}

impl State {
    pub fn group(&self, id: &str) -> Option<&GroupState> {
        self.groups.get(id)
    }

    pub fn mission_of_group(&self, group_id: &str) -> Option<&Mission> {
        let g = self.groups.get(group_id)?;
        self.missions.get(&g.group.mission_id)
    }

    /// The owners of `mission` and of every Mission above it, nearest first: who may inspect
    /// it without a Membership in its Group (§14: the root MissionOwner inspects the complete
    /// Mission tree; H-10). The ancestry is acyclic (§14); the bound only guards a corrupt
    /// state.
    pub fn owners_up_the_tree<'a>(
        &'a self,
        mission: &'a Mission,
    ) -> Vec<&'a crate::model::common::Actor> {
        let mut out = Vec::new();
        let mut cur = Some(mission);
        for _ in 0..64 {
            let Some(m) = cur else { break };
            out.push(&m.owner);
            cur = m
                .parent_mission_id
                .as_deref()
                .and_then(|p| self.missions.get(p));
        }
        out
    }

    pub fn membership(&self, group_id: &str, principal_id: &str) -> Option<&Membership> {
        self.groups.get(group_id)?.memberships.get(principal_id)
    }

    /// The Organization-wide identifier namespace: an id used by any kind of object.
    pub fn id_in_use(&self, id: &str) -> bool {
        self.missions.contains_key(id)
            || self.groups.contains_key(id)
            || self.work_items.contains_key(id)
            || self.proposals.contains_key(id)
            || self.messages.contains_key(id)
            || self.amendments.contains_key(id)
            || self.approvals.contains_key(id)
            || self.execution_approvals.contains_key(id)
            || self.delegation_grants.contains_key(id)
            || self.override_grants.contains_key(id)
            || self.artifacts.contains_key(id)
    }
}

impl State {
    /// A hash of every projection (Missions, Groups with their Memberships, Conversations and
    /// policy logs, WorkItems, proposals, Messages and amendments, leases, approvals, grants,
    /// Artifacts, Agent Cards, Session Epochs, ledger accounts, receipts and the Group
    /// sequences), over a canonical rendering: two states are the same exactly when their
    /// hashes are. Replaying the same prefix of a history always gives the same hash (§5).
    pub fn projection_hash(&self) -> String {
        use crate::json::{Object, Value};
        use crate::model::ToJson;
        fn map<T: ToJson>(m: &Table<T>) -> Value {
            let mut o = Object::new();
            for (k, v) in m {
                o.insert(k.clone(), v.to_json());
            }
            Value::Object(o)
        }
        let mut groups = Object::new();
        for (id, g) in &self.groups {
            let mut o = Object::new();
            o.insert("group", g.group.to_json());
            o.insert("lastSequence", Value::from(g.last_sequence));
            o.insert("memberships", map(&g.memberships));
            o.insert(
                "conversations",
                Value::Array(
                    g.conversations
                        .iter()
                        .map(|c| Value::string(c.clone()))
                        .collect(),
                ),
            );
            o.insert(
                "policyLog",
                Value::Array(
                    g.policy_log
                        .iter()
                        .map(|e| Value::Object(e.clone()))
                        .collect(),
                ),
            );
            groups.insert(id.clone(), Value::Object(o));
        }
        let mut accounts = Object::new();
        for (id, a) in &self.accounts {
            let nums = |xs: &[u64; 6]| Value::Array(xs.iter().map(|x| Value::from(*x)).collect());
            let mut o = Object::new();
            o.insert(
                "parent",
                a.parent.clone().map_or(Value::Null, Value::string),
            );
            o.insert("limit", a.limit.to_json());
            o.insert(
                "children",
                Value::Array(
                    a.children
                        .iter()
                        .map(|c| Value::string(c.clone()))
                        .collect(),
                ),
            );
            o.insert("direct", nums(&a.direct));
            o.insert("total", nums(&a.total));
            accounts.insert(id.clone(), Value::Object(o));
        }
        let mut receipts = Vec::new();
        for (actor, action, r) in self.receipts.iter() {
            let events = r
                .events
                .iter()
                .map(|e| {
                    Value::Array(vec![
                        e.group_id.clone().map_or(Value::Null, Value::string),
                        Value::from(e.sequence),
                    ])
                })
                .collect();
            receipts.push(Value::Array(vec![
                Value::string(actor.clone()),
                Value::string(action.clone()),
                Value::string(r.command_hash.clone()),
                Value::Array(events),
            ]));
        }
        let mut sessions = Object::new();
        for (k, v) in &self.session_epochs {
            sessions.insert(k.clone(), Value::from(*v));
        }
        let mut root = Object::new();
        root.insert("cards", map(&self.cards));
        root.insert("sessionEpochs", Value::Object(sessions));
        root.insert("missions", map(&self.missions));
        root.insert("groups", Value::Object(groups));
        root.insert("workItems", map(&self.work_items));
        root.insert("proposals", map(&self.proposals));
        root.insert("messages", map(&self.messages));
        root.insert("amendments", map(&self.amendments));
        root.insert("leases", map(&self.leases));
        root.insert("approvals", map(&self.approvals));
        root.insert("executionApprovals", map(&self.execution_approvals));
        root.insert("delegationGrants", map(&self.delegation_grants));
        root.insert("overrideGrants", map(&self.override_grants));
        root.insert("artifacts", map(&self.artifacts));
        root.insert("accounts", Value::Object(accounts));
        root.insert("receipts", Value::Array(receipts));
        root.insert("organizationSequence", Value::from(self.org_sequence));
        let bytes = crate::json::canonicalize(&Value::Object(root)).unwrap_or_default();
        crate::encoding::sha256_hash(&bytes)
    }
}

/// Idempotency receipts (§15.1) by actor, then Action ID: looked up with borrowed keys (no
/// allocation per Command), and an actor's id is stored once, not once per receipt.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Receipts(Table<Table<Receipt>>);

impl Receipts {
    pub fn get(&self, actor: &str, action: &str) -> Option<&Receipt> {
        self.0.get(actor)?.get(action)
    }

    pub fn contains(&self, actor: &str, action: &str) -> bool {
        self.get(actor, action).is_some()
    }

    /// How many receipts there are.
    pub fn len(&self) -> usize {
        self.0.values().map(Table::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.values().all(Table::is_empty)
    }

    /// Records that (`actor`, `action`) appended the Event at `at` (the receipt is created
    /// with `command_hash` by the Command's first Event).
    pub fn record(&mut self, actor: &str, action: &str, command_hash: &str, at: EventRef) {
        let new = || Receipt {
            command_hash: command_hash.to_owned(),
            events: Vec::new(),
        };
        if let Some(by_action) = self.0.get_mut(actor) {
            if let Some(receipt) = by_action.get_mut(action) {
                receipt.events.push(at);
                return;
            }
            let mut receipt = new();
            receipt.events.push(at);
            by_action.insert(action.to_owned(), receipt);
            return;
        }
        let mut receipt = new();
        receipt.events.push(at);
        let mut by_action = Table::new();
        by_action.insert(action.to_owned(), receipt);
        self.0.insert(actor.to_owned(), by_action);
    }

    /// Every receipt in (actor, Action ID) order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &String, &Receipt)> {
        self.0
            .iter()
            .flat_map(|(actor, m)| m.iter().map(move |(action, r)| (actor, action, r)))
    }
}
