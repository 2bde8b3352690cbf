//! An in-process stand-in for the binding's subscriptions (§16, §17.2), and the network faults
//! the demo injects on it.
//!
//! It keeps each Group's committed Events in order (its replay log), which Agent follows which
//! Group, and whether that subscription is connected. Subscribing replays the log after a
//! position, as `SUBSCRIBE.afterSequence` does; a temporary disconnection drops live delivery
//! for one Group until a reconnect replays from the Agent's Cursor (with a few duplicates
//! around the cut, as at-least-once delivery allows); a partition cuts an Agent off entirely
//! and holds the Commands it sends until it heals. Every `dup_every`-th delivery is made twice.
//!
//! When the WebSocket binding's client lands, the runner's transport replaces this: the Agents
//! do not change, they already dedupe, order and resume by Cursor.

use super::inbox::{Inbox, InboxError};
use crate::vecmap::VecMap;
use std::collections::BTreeSet;
use wasm_core::json::Value;

#[derive(Debug, Default)]
pub struct Bus {
    order: VecMap<String, Inbox>,
    log: VecMap<String, Vec<Value>>,
    /// Agent → Group → connected.
    subs: VecMap<String, VecMap<String, bool>>,
    partitioned: BTreeSet<String>,
    deliveries: u64,
    /// Every this many deliveries, one is duplicated (0: never).
    pub dup_every: u64,
}

impl Bus {
    pub fn new(dup_every: u64) -> Bus {
        Bus {
            dup_every,
            ..Bus::default()
        }
    }

    /// Appends a committed Event to its Group's log; returns the Events that are now in order
    /// (none for a duplicate; several when it fills a gap).
    pub fn append(&mut self, group: &str, event: Value) -> Result<Vec<Value>, InboxError> {
        let ready = self.order.or_default(group.to_owned()).accept(event)?;
        self.log
            .or_default(group.to_owned())
            .extend(ready.iter().cloned());
        Ok(ready)
    }

    /// The log of `group` after `after` (`SUBSCRIBE.afterSequence` replay).
    pub fn replay(&self, group: &str, after: u64) -> Vec<Value> {
        let Some(log) = self.log.get(group) else {
            return Vec::new();
        };
        let first = log
            .first()
            .and_then(|e| super::u64_at(e, "/sequence"))
            .unwrap_or(1);
        let skip = usize::try_from((after + 1).saturating_sub(first)).unwrap_or(usize::MAX);
        log.iter().skip(skip).cloned().collect()
    }

    /// The highest sequence of `group` in the log.
    pub fn last_sequence(&self, group: &str) -> u64 {
        self.log
            .get(group)
            .and_then(|l| l.last())
            .and_then(|e| super::u64_at(e, "/sequence"))
            .unwrap_or(0)
    }

    pub fn subscribe(&mut self, agent: &str, group: &str) {
        self.subs
            .or_default(agent.to_owned())
            .insert(group.to_owned(), true);
    }

    pub fn is_subscribed(&self, agent: &str, group: &str) -> bool {
        self.subs.get(agent).is_some_and(|s| s.contains_key(group))
    }

    /// The Groups `agent` follows.
    pub fn groups_of(&self, agent: &str) -> Vec<String> {
        self.subs
            .get(agent)
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets every subscription of `agent` (its process is gone).
    pub fn drop_agent(&mut self, agent: &str) {
        self.subs.remove(agent);
        self.partitioned.remove(agent);
    }

    /// Agents that receive `group`'s live Events now.
    pub fn targets(&self, group: &str) -> Vec<String> {
        self.subs
            .iter()
            .filter(|(a, s)| s.get(group) == Some(&true) && !self.partitioned.contains(*a))
            .map(|(a, _)| a.clone())
            .collect()
    }

    /// Whether the next delivery is one of the duplicated ones.
    pub fn duplicate_next(&mut self) -> bool {
        self.deliveries += 1;
        self.dup_every != 0 && self.deliveries.is_multiple_of(self.dup_every)
    }

    /// A temporary disconnection of `agent` from `group`.
    pub fn disconnect(&mut self, agent: &str, group: &str) {
        if let Some(c) = self.subs.get_mut(agent).and_then(|s| s.get_mut(group)) {
            *c = false;
        }
    }

    pub fn reconnect(&mut self, agent: &str, group: &str) {
        if let Some(c) = self.subs.get_mut(agent).and_then(|s| s.get_mut(group)) {
            *c = true;
        }
    }

    pub fn partition(&mut self, agent: &str) {
        self.partitioned.insert(agent.to_owned());
    }

    pub fn heal(&mut self, agent: &str) {
        self.partitioned.remove(agent);
    }

    pub fn is_partitioned(&self, agent: &str) -> bool {
        self.partitioned.contains(agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_core::json::Object;

    fn ev(seq: u64) -> Value {
        let mut o = Object::new();
        o.insert("sequence", Value::from(seq));
        o.insert("eventId", Value::string(format!("urn:x:event:{seq}")));
        Value::Object(o)
    }

    #[test]
    fn replay_after_a_position_and_live_targets() {
        let mut b = Bus::new(0);
        for s in [1, 3, 2, 2] {
            b.append("g", ev(s)).unwrap();
        }
        assert_eq!(b.last_sequence("g"), 3);
        assert_eq!(b.replay("g", 1).len(), 2);
        assert_eq!(b.replay("g", 0).len(), 3);
        b.subscribe("a", "g");
        b.subscribe("b", "g");
        b.disconnect("b", "g");
        assert_eq!(b.targets("g"), ["a"]);
        b.reconnect("b", "g");
        b.partition("a");
        assert_eq!(b.targets("g"), ["b"]);
    }
}
