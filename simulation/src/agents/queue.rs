//! A Worker's per-Group queue (§11.1): "a distinct Event inbox, Cursor, and Work queue for each
//! Group … durable local projections of accepted Group Events … rebuildable by replay".
//!
//! It records what the Group's Events say about this Worker's obligations — offers to it, its
//! ownership and Ownership Epoch, its Execution Leases, checkpoints, approvals, Artifacts — and
//! decides nothing: whether a Command is allowed is the authority's call. A Worker sees a Group
//! only from its Membership's visibility floor (§8), so this is not the authority's full
//! projection; contracts of WorkItems authorized before it joined are simply unknown.

use super::inbox::{Inbox, InboxError};
use super::{str_at, u64_at};
use wasm_core::authority::Micros;
use wasm_core::authority::projection::{WorkContract, WorkItem};
use wasm_core::json::Value;

/// Where a WorkItem stands for this Worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ItemState {
    /// Known (authorized or offered to others), not this Worker's.
    Seen,
    /// Offered to this Worker.
    Offered,
    /// Owned, in this Group's queue: waiting for a slot (§11.3 ownership lease).
    Queued,
    /// Owned and executing under an Execution Lease.
    Active,
    /// Owned and blocked (§11.4).
    Blocked,
    /// Submitted for Coordinator review.
    Submitted,
    /// Accepted by the Coordinator.
    Verified,
    /// No longer this Worker's: reassigned, failed, cancelled, or lost to another Agent.
    Gone,
}

/// This Worker's current Execution Lease on an item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub id: String,
    pub expires_at: Micros,
    pub session_epoch: u64,
}

/// One WorkItem of the Group, as far as this Worker knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueItem {
    pub id: String,
    pub mission_id: Option<String>,
    pub contract: Option<WorkContract>,
    pub state: ItemState,
    pub ownership_epoch: u64,
    pub card_version: Option<u64>,
    pub lease: Option<Lease>,
    pub offer_expires_at: Option<Micros>,
    /// Steps completed, from this Worker's last checkpoint.
    pub steps_done: u64,
    /// An Execution Approval: (Ownership Epoch, expiry).
    pub approval: Option<(u64, Micros)>,
    /// Since when the item has been ready to run (for aging).
    pub ready_since: Micros,
    /// Artifacts published for the item: (id, content hash, producer).
    pub artifacts: Vec<(String, String, String)>,
}

impl QueueItem {
    fn new(id: &str, at: Micros) -> QueueItem {
        QueueItem {
            id: id.to_owned(),
            mission_id: None,
            contract: None,
            state: ItemState::Seen,
            ownership_epoch: 0,
            card_version: None,
            lease: None,
            offer_expires_at: None,
            steps_done: 0,
            approval: None,
            ready_since: at,
            artifacts: Vec::new(),
        }
    }

    /// Owned by this Worker (in its queue, running, blocked or in review).
    pub fn owned(&self) -> bool {
        matches!(
            self.state,
            ItemState::Queued | ItemState::Active | ItemState::Blocked | ItemState::Submitted
        )
    }

    /// Whether the contract asks for an Execution Approval, and none valid is known yet.
    pub fn waits_for_approval(&self, now: Micros) -> bool {
        let gated = self
            .contract
            .as_ref()
            .is_some_and(|c| c.execution_approval != "not_required");
        gated
            && !self
                .approval
                .is_some_and(|(e, exp)| e == self.ownership_epoch && exp > now)
    }
}

/// One Group's inbox and queue.
#[derive(Clone, Debug)]
pub struct GroupQueue {
    pub group_id: String,
    me: String,
    pub inbox: Inbox,
    pub membership_epoch: Option<u64>,
    pub member: bool,
    pub items: crate::vecmap::VecMap<String, QueueItem>,
}

impl GroupQueue {
    pub fn new(group_id: &str, me: &str) -> GroupQueue {
        GroupQueue {
            group_id: group_id.to_owned(),
            me: me.to_owned(),
            inbox: Inbox::new(),
            membership_epoch: None,
            member: false,
            items: crate::vecmap::VecMap::new(),
        }
    }

    /// Takes one delivered Event (deduplicated and ordered by the inbox) and folds what is
    /// ready; returns the folded Events.
    pub fn deliver(&mut self, event: Value) -> Result<Vec<Value>, InboxError> {
        let ready = self.inbox.accept(event)?;
        for e in &ready {
            self.fold(e);
        }
        Ok(ready)
    }

    fn item(&mut self, id: &str, at: Micros) -> &mut QueueItem {
        self.items
            .or_insert_with(id.to_owned(), || QueueItem::new(id, at))
    }

    /// Folds one Event, in Group order.
    pub fn fold(&mut self, e: &Value) {
        let kind = str_at(e, "/kind").unwrap_or_default();
        let at = str_at(e, "/occurredAt")
            .and_then(Micros::parse)
            .unwrap_or_default();
        let me = self.me.clone();
        let work = str_at(e, "/payload/workItemId").map(str::to_owned);
        match kind {
            "membership.changed"
                if str_at(e, "/payload/membership/principal/id") == Some(me.as_str()) =>
            {
                self.membership_epoch = u64_at(e, "/payload/membership/epoch");
                self.member = str_at(e, "/payload/membership/status") != Some("ended");
            }
            "membership.ended" if str_at(e, "/payload/principal/id") == Some(me.as_str()) => {
                self.member = false;
                self.membership_epoch = self.membership_epoch.map(|x| x + 1);
            }
            "work.authorized" => {
                if let Some(w) = e
                    .pointer("/payload/workItem")
                    .and_then(|v| wasm_core::model::from_value::<WorkItem>(v, false).ok())
                {
                    let item = self.item(&w.id, at);
                    item.mission_id = Some(w.mission_id);
                    item.contract = Some(w.contract);
                }
            }
            "work.offer.created" => {
                let Some(id) = work else { return };
                let mine = e
                    .pointer("/payload/candidateAgentIds")
                    .and_then(|v| match v {
                        Value::Array(a) => Some(a.iter().any(|c| c.as_str() == Some(&me))),
                        _ => None,
                    })
                    .unwrap_or(false);
                let expires = str_at(e, "/payload/offerExpiresAt").and_then(Micros::parse);
                let item = self.item(&id, at);
                if mine {
                    item.state = ItemState::Offered;
                    item.offer_expires_at = expires;
                } else if item.owned() || item.state == ItemState::Offered {
                    // Re-offered elsewhere: a lapsed owner is fenced by the new offer (§11.5).
                    item.state = ItemState::Gone;
                    item.lease = None;
                }
            }
            "work.offer.accepted" => {
                let Some(id) = work else { return };
                let assignee = str_at(e, "/payload/assigneeId") == Some(me.as_str());
                let epoch = u64_at(e, "/payload/ownershipEpoch").unwrap_or(0);
                let card = u64_at(e, "/payload/agentCardVersion");
                let item = self.item(&id, at);
                if assignee {
                    item.state = ItemState::Queued;
                    item.ownership_epoch = epoch;
                    item.card_version = card;
                    item.ready_since = at;
                    item.steps_done = 0;
                } else if item.state == ItemState::Offered || item.owned() {
                    item.state = ItemState::Gone;
                }
            }
            "work.started" => {
                let Some(id) = work else { return };
                let holder = str_at(e, "/payload/executionLease/holderAgentId");
                let lease = Lease {
                    id: str_at(e, "/payload/executionLease/leaseId")
                        .unwrap_or_default()
                        .to_owned(),
                    expires_at: str_at(e, "/payload/executionLeaseExpiresAt")
                        .and_then(Micros::parse)
                        .unwrap_or_default(),
                    session_epoch: u64_at(e, "/payload/executionLease/sessionEpoch").unwrap_or(0),
                };
                let mission = str_at(e, "/payload/executionLease/missionId").map(str::to_owned);
                let item = self.item(&id, at);
                if holder == Some(me.as_str()) {
                    item.state = ItemState::Active;
                    item.lease = Some(lease);
                    if item.mission_id.is_none() {
                        item.mission_id = mission;
                    }
                }
            }
            "work.progressed" => {
                let Some(id) = work else { return };
                let expires = str_at(e, "/payload/executionLeaseExpiresAt").and_then(Micros::parse);
                if let (Some(item), Some(exp)) = (self.items.get_mut(&id), expires)
                    && let Some(l) = item.lease.as_mut()
                {
                    l.expires_at = exp;
                }
            }
            "work.checkpointed" => {
                let Some(id) = work else { return };
                let steps = match e.pointer("/payload/checkpoint/completedMilestones") {
                    Some(Value::Array(a)) => a.len() as u64,
                    _ => 0,
                };
                let item = self.item(&id, at);
                if item.owned() {
                    item.state = ItemState::Queued;
                    item.lease = None;
                    item.steps_done = steps;
                    item.ready_since = at;
                }
            }
            "work.blocked" => {
                let Some(id) = work else { return };
                let item = self.item(&id, at);
                if item.owned() {
                    item.state = ItemState::Blocked;
                    item.lease = None;
                } else if item.state == ItemState::Offered {
                    item.state = ItemState::Gone;
                }
            }
            "work.unblocked" => {
                let Some(id) = work else { return };
                let queued = str_at(e, "/payload/status") == Some("queued");
                let item = self.item(&id, at);
                if item.owned() {
                    item.state = if queued {
                        ItemState::Queued
                    } else {
                        ItemState::Gone
                    };
                    item.ready_since = at;
                }
            }
            "ext.missionweaveprotocol.core.work_execution_lease_revoked" => {
                let Some(id) = work else { return };
                let item = self.item(&id, at);
                if item.owned() {
                    item.state = ItemState::Queued;
                    item.lease = None;
                    item.ready_since = at;
                }
            }
            "work.submitted" => {
                if let Some(id) = work {
                    let item = self.item(&id, at);
                    if item.owned() {
                        item.state = ItemState::Submitted;
                        item.lease = None;
                    }
                }
            }
            "work.result.accepted" => {
                if let Some(id) = work {
                    let item = self.item(&id, at);
                    if item.owned() {
                        item.state = ItemState::Verified;
                    }
                }
            }
            "work.failed" | "work.cancelled" => {
                if let Some(id) = work {
                    let item = self.item(&id, at);
                    if item.owned() || item.state == ItemState::Offered {
                        item.state = ItemState::Gone;
                        item.lease = None;
                    }
                }
            }
            "mission.child.created" => {
                if let Some(id) = str_at(e, "/payload/parentWorkItemId").map(str::to_owned) {
                    let item = self.item(&id, at);
                    if item.owned() || item.state == ItemState::Offered {
                        item.state = ItemState::Gone;
                        item.lease = None;
                    }
                }
            }
            "approval.execution.granted" => {
                let id = str_at(e, "/payload/approval/workItemId").map(str::to_owned);
                let epoch = u64_at(e, "/payload/approval/ownershipEpoch");
                let expires = str_at(e, "/payload/approval/expiresAt").and_then(Micros::parse);
                if let (Some(id), Some(epoch), Some(expires)) = (id, epoch, expires) {
                    self.item(&id, at).approval = Some((epoch, expires));
                }
            }
            "artifact.published" => {
                let a = |p: &str| str_at(e, p).map(str::to_owned);
                if let (Some(id), Some(hash), Some(w), Some(producer)) = (
                    a("/payload/artifact/id"),
                    a("/payload/artifact/contentHash"),
                    a("/payload/artifact/workItemId"),
                    a("/payload/artifact/producingAgentId"),
                ) {
                    self.item(&w, at).artifacts.push((id, hash, producer));
                }
            }
            _ => {}
        }
    }

    /// This Worker's items in the queue (not Seen, not Gone), for comparison after a restart:
    /// `group item state epoch`, with a running item shown as queued (a restart revokes its
    /// Execution Lease and returns it to the queue, §11.3).
    pub fn summary(&self) -> Vec<String> {
        self.items
            .values()
            .filter(|i| !matches!(i.state, ItemState::Seen | ItemState::Gone))
            .map(|i| {
                let state = match i.state {
                    ItemState::Active => ItemState::Queued,
                    s => s,
                };
                format!(
                    "{} {} {:?} epoch {}",
                    self.group_id, i.id, state, i.ownership_epoch
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_core::json::Object;

    const ME: &str = "urn:missionweaveprotocol:agent:reviewer";

    fn event(group: &str, seq: u64, kind: &str, payload: Vec<(&'static str, Value)>) -> Value {
        let mut o = Object::new();
        o.insert("groupId", Value::string(group.to_owned()));
        o.insert("sequence", Value::from(seq));
        o.insert(
            "eventId",
            Value::string(format!("urn:x:event:{group}:{seq}")),
        );
        o.insert("kind", Value::string(kind.to_owned()));
        o.insert("occurredAt", Value::string("2026-07-15T08:00:00Z"));
        o.insert("payload", Value::Object(crate::agents::obj(payload)));
        Value::Object(o)
    }

    fn s(v: &str) -> Value {
        Value::string(v.to_owned())
    }

    fn history(group: &str) -> Vec<Value> {
        vec![
            event(
                group,
                5,
                "membership.changed",
                vec![(
                    "membership",
                    Value::Object(crate::agents::obj(vec![
                        ("principal", crate::agents::principal("agent", ME)),
                        ("epoch", Value::from(1u64)),
                        ("status", s("active")),
                    ])),
                )],
            ),
            event(
                group,
                6,
                "work.offer.created",
                vec![
                    ("workItemId", s(&format!("{group}:w1"))),
                    ("candidateAgentIds", crate::agents::strings(&[ME])),
                    ("offerExpiresAt", s("2026-07-15T09:00:00Z")),
                ],
            ),
            event(
                group,
                7,
                "work.offer.accepted",
                vec![
                    ("workItemId", s(&format!("{group}:w1"))),
                    ("assigneeId", s(ME)),
                    ("ownershipEpoch", Value::from(1u64)),
                    ("agentCardVersion", Value::from(1u64)),
                ],
            ),
            event(
                group,
                8,
                "work.offer.created",
                vec![
                    ("workItemId", s(&format!("{group}:w2"))),
                    (
                        "candidateAgentIds",
                        crate::agents::strings(&["urn:x:agent:other"]),
                    ),
                    ("offerExpiresAt", s("2026-07-15T09:00:00Z")),
                ],
            ),
        ]
    }

    #[test]
    fn each_group_has_its_own_queue_and_duplicates_change_nothing() {
        let mut a = GroupQueue::new("urn:x:group:a", ME);
        let mut b = GroupQueue::new("urn:x:group:b", ME);
        for e in history("urn:x:group:a") {
            a.deliver(e.clone()).unwrap();
            a.deliver(e).unwrap(); // delivered twice
        }
        b.deliver(history("urn:x:group:b").remove(0)).unwrap();
        assert_eq!(a.inbox.duplicates(), 4);
        assert_eq!(a.membership_epoch, Some(1));
        assert_eq!(
            a.summary(),
            ["urn:x:group:a urn:x:group:a:w1 Queued epoch 1"]
        );
        assert_eq!(a.items["urn:x:group:a:w2"].state, ItemState::Seen);
        // Group b's queue holds nothing of Group a's.
        assert!(b.summary().is_empty());
        assert!(b.items.keys().all(|k| k.starts_with("urn:x:group:b")));
    }

    #[test]
    fn a_queue_rebuilt_by_replay_equals_the_live_one() {
        let mut live = GroupQueue::new("urn:x:group:a", ME);
        let h = history("urn:x:group:a");
        // Live: out of order after the first Event, with a duplicate.
        for i in [0usize, 2, 1, 3, 3] {
            live.deliver(h[i].clone()).unwrap();
        }
        let mut rebuilt = GroupQueue::new("urn:x:group:a", ME);
        for e in h {
            rebuilt.deliver(e).unwrap();
        }
        assert_eq!(live.items, rebuilt.items);
        assert_eq!(live.inbox.cursor(), rebuilt.inbox.cursor());
    }
}
