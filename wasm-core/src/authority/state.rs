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
    ///
    /// The rendering is the JCS of one object (see [`State::projection_hash_by_tree`], which
    /// builds it whole); this writes the same bytes entry by entry into the digest, so that the
    /// cost is linear and the memory one entry's (at 1,000,000 Events building the tree took
    /// minutes: a JSON object's members are a list, and each insertion looked for a duplicate).
    pub fn projection_hash(&self) -> String {
        let mut c = Canon::default();
        match self.write_canonical(&mut c) {
            Ok(()) => c.finish(),
            // As the whole tree's canonicalization failing gave: the hash of no bytes.
            Err(_) => crate::encoding::sha256_hash(&[]),
        }
    }

    fn write_canonical(&self, c: &mut Canon) -> Result<(), crate::json::JcsError> {
        // The root's members in JCS order (all ASCII: byte order is UTF-16 order).
        c.raw(b"{\"accounts\":");
        c.table(&self.accounts, |c, a| c.value(&account_value(a)))?;
        c.raw(b",\"amendments\":");
        c.projections(&self.amendments)?;
        c.raw(b",\"approvals\":");
        c.projections(&self.approvals)?;
        c.raw(b",\"artifacts\":");
        c.projections(&self.artifacts)?;
        c.raw(b",\"cards\":");
        c.projections(&self.cards)?;
        c.raw(b",\"delegationGrants\":");
        c.projections(&self.delegation_grants)?;
        c.raw(b",\"executionApprovals\":");
        c.projections(&self.execution_approvals)?;
        c.raw(b",\"groups\":");
        c.table(&self.groups, |c, g| c.value(&group_value(g)))?;
        c.raw(b",\"leases\":");
        c.projections(&self.leases)?;
        c.raw(b",\"messages\":");
        // The largest table at scale (one entry per `message.posted`): written directly.
        c.table(&self.messages, |c, m| {
            c.message(m);
            Ok(())
        })?;
        c.raw(b",\"missions\":");
        c.projections(&self.missions)?;
        c.raw(b",\"organizationSequence\":");
        c.number(self.org_sequence)?;
        c.raw(b",\"overrideGrants\":");
        c.projections(&self.override_grants)?;
        c.raw(b",\"proposals\":");
        c.projections(&self.proposals)?;
        c.raw(b",\"receipts\":[");
        for (i, (actor, action, r)) in self.receipts.iter().enumerate() {
            c.raw(if i == 0 { b"[" } else { b",[" });
            c.string(actor);
            c.raw(b",");
            c.string(action);
            c.raw(b",");
            c.string(&r.command_hash);
            c.raw(b",[");
            for (j, e) in r.events.iter().enumerate() {
                c.raw(if j == 0 { b"[" } else { b",[" });
                match &e.group_id {
                    Some(g) => c.string(g),
                    None => c.raw(b"null"),
                }
                c.raw(b",");
                c.number(e.sequence)?;
                c.raw(b"]");
            }
            c.raw(b"]]");
        }
        c.raw(b"],\"sessionEpochs\":");
        c.table(&self.session_epochs, |c, v| c.number(*v))?;
        c.raw(b",\"workItems\":");
        c.projections(&self.work_items)?;
        c.raw(b"}");
        Ok(())
    }

    /// [`State::projection_hash`] computed as it was first written: the whole rendering built
    /// as one JSON value, then canonicalized and hashed. Quadratic in the size of the largest
    /// table; kept as the reference the streaming hash is tested against.
    #[doc(hidden)]
    pub fn projection_hash_by_tree(&self) -> String {
        use crate::json::{Object, Value};
        use crate::model::ToJson;
        fn map<T: ToJson + 'static>(m: &Table<T>) -> Value {
            let mut o = Object::new();
            for (k, v) in m {
                o.insert(k.clone(), v.to_json());
            }
            Value::Object(o)
        }
        let mut groups = Object::new();
        for (id, g) in &self.groups {
            groups.insert(id.clone(), group_value(g));
        }
        let mut accounts = Object::new();
        for (id, a) in &self.accounts {
            accounts.insert(id.clone(), account_value(a));
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

/// A Group as the projection hash renders it.
fn group_value(g: &GroupState) -> crate::json::Value {
    use crate::json::{Object, Value};
    use crate::model::ToJson;
    let mut memberships = Object::with_capacity(g.memberships.len());
    for (k, v) in &g.memberships {
        memberships.insert(k.clone(), v.to_json());
    }
    let mut o = Object::new();
    o.insert("group", g.group.to_json());
    o.insert("lastSequence", Value::from(g.last_sequence));
    o.insert("memberships", Value::Object(memberships));
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
    Value::Object(o)
}

/// A ledger account as the projection hash renders it.
fn account_value(a: &Account) -> crate::json::Value {
    use crate::json::{Object, Value};
    let nums = |xs: &[u64; 6]| Value::Array(xs.iter().map(|x| Value::from(*x)).collect());
    let mut o = Object::new();
    o.insert(
        "parent",
        a.parent.clone().map_or(Value::Null, Value::string),
    );
    o.insert("limit", crate::model::ToJson::to_json(&a.limit));
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
    Value::Object(o)
}

/// The canonical rendering written straight into a SHA-256 digest, through a buffer.
#[derive(Default)]
struct Canon {
    digest: sha2::Sha256,
    buf: Vec<u8>,
}

impl Canon {
    /// Hands the buffer to the digest once it holds this much.
    const SPILL: usize = 1 << 16;

    fn spill(&mut self) {
        if self.buf.len() >= Self::SPILL {
            sha2::Digest::update(&mut self.digest, &self.buf);
            self.buf.clear();
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        self.spill();
    }

    fn string(&mut self, s: &str) {
        crate::json::canonical_str_into(s, &mut self.buf);
        self.spill();
    }

    fn value(&mut self, v: &crate::json::Value) -> Result<(), crate::json::JcsError> {
        crate::json::canonicalize_into(v, &mut self.buf)?;
        self.spill();
        Ok(())
    }

    /// An integer as JCS writes the number (plain digits up to 2^53; beyond, the ECMAScript
    /// spelling of the nearest double, as the tree's canonicalization gave).
    fn number(&mut self, n: u64) -> Result<(), crate::json::JcsError> {
        if n <= crate::json::MAX_SAFE_INTEGER {
            let mut digits = [0u8; 20];
            let mut i = digits.len();
            let mut v = n;
            loop {
                i -= 1;
                digits[i] = b'0' + (v % 10) as u8;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            self.raw(&digits[i..]);
            Ok(())
        } else {
            self.value(&crate::json::Value::from(n))
        }
    }

    /// A Message exactly as the JCS of its `to_json` (members in JCS order), without building
    /// it: `tests/snapshot.rs` checks the two agree on every Message of the scenario suite.
    fn message(&mut self, m: &Message) {
        let actor = |c: &mut Canon, a: &crate::model::common::Actor| {
            c.raw(b"{\"id\":");
            c.string(&a.id.0);
            c.raw(b",\"type\":");
            c.string(a.actor_type.as_str());
            c.raw(b"}");
        };
        self.raw(b"{\"author\":");
        actor(self, &m.author);
        self.raw(b",\"content\":");
        self.string(&m.content);
        self.raw(b",\"conversationId\":");
        self.string(&m.conversation_id);
        self.raw(b",\"createdAt\":");
        self.string(&m.created_at.format());
        self.raw(b",\"groupId\":");
        self.string(&m.group_id);
        self.raw(b",\"id\":");
        self.string(&m.id);
        self.raw(b",\"mentions\":[");
        for (i, a) in m.mentions.iter().enumerate() {
            if i > 0 {
                self.raw(b",");
            }
            actor(self, a);
        }
        self.raw(b"]}");
    }

    fn projections<V: crate::model::ToJson + 'static>(
        &mut self,
        t: &Table<V>,
    ) -> Result<(), crate::json::JcsError> {
        self.table(t, |c, v| c.value(&v.to_json()))
    }

    /// A table as a JSON object: its entries in JCS order (UTF-16 code units), which is the
    /// table's own order unless a key holds a character from U+E000 up (its UTF-8 starts at
    /// 0xEE), where UTF-8 and UTF-16 orders can differ.
    fn table<V: 'static>(
        &mut self,
        t: &Table<V>,
        mut each: impl FnMut(&mut Canon, &V) -> Result<(), crate::json::JcsError>,
    ) -> Result<(), crate::json::JcsError> {
        self.raw(b"{");
        let mut entry = |c: &mut Canon, i: usize, k: &String, v: &V| {
            if i > 0 {
                c.raw(b",");
            }
            c.string(k);
            c.raw(b":");
            each(c, v)
        };
        if t.keys().any(|k| k.bytes().any(|b| b >= 0xEE)) {
            let mut entries: Vec<(&String, &V)> = t.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            for (i, (k, v)) in entries.into_iter().enumerate() {
                entry(self, i, k, v)?;
            }
        } else {
            for (i, (k, v)) in t.iter().enumerate() {
                entry(self, i, k, v)?;
            }
        }
        self.raw(b"}");
        Ok(())
    }

    fn finish(mut self) -> String {
        sha2::Digest::update(&mut self.digest, &self.buf);
        let sum = sha2::Digest::finalize(self.digest);
        let mut out = String::with_capacity(71);
        out.push_str("sha256:");
        out.push_str(&crate::encoding::hex(&sum));
        out
    }
}

/// Idempotency receipts (§15.1) by actor, then Action ID: looked up with borrowed keys (no
/// allocation per Command), and an actor's id is stored once, not once per receipt.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Receipts(Table<Table<Receipt>>);

impl Receipts {
    /// The receipts by actor id, then Action ID (the snapshot codec writes them as they are).
    pub(crate) fn by_actor(&self) -> &Table<Table<Receipt>> {
        &self.0
    }

    /// Receipts read back by the snapshot codec.
    pub(crate) fn from_by_actor(by_actor: Table<Table<Receipt>>) -> Receipts {
        Receipts(by_actor)
    }

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
