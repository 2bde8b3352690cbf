//! `presence-record.schema.json`: ephemeral Agent presence (§6.2, checklist I-7..I-9).
//!
//! Presence is separate from the Agent Card, carries no signature, may travel inside a `PING`
//! frame and never counts as offer acceptance or lease renewal.

use super::common::CapabilityRef;
use super::{Id, PosInt, SafeInt, SchemaError};
use crate::json::Value;
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `status`: the Agent's self-reported availability (§6.2).
    pub enum PresenceStatus {
        Online = "online",
        Busy = "busy",
        Away = "away",
        Draining = "draining",
        Offline = "offline",
    }
);

object!(
    /// `capacity`: slot counts; never another Group's queue position (I-9).
    pub struct Capacity {
        "maxSlots" => max_slots: req PosInt,
        "activeSlots" => active_slots: req SafeInt,
        "availableSlots" => available_slots: req SafeInt,
        "queuedItems" => queued_items: req SafeInt,
    }
);

string_enum!(
    /// `capabilityAvailability[].status`.
    pub enum AvailabilityStatus {
        Available = "available",
        Degraded = "degraded",
        Unavailable = "unavailable",
    }
);

object!(
    /// One `capabilityAvailability` item: a pinned capability and its current availability.
    pub struct CapabilityAvailability {
        "capability" => capability: req CapabilityRef,
        "status" => status: req AvailabilityStatus,
    }
);

object!(
    /// A Presence Record (§6.2).
    pub struct PresenceRecord {
        "agentId" => agent_id: req Id,
        /// The Session Epoch of the reporting runtime (§6.3).
        "sessionEpoch" => session_epoch: req PosInt,
        "status" => status: req PresenceStatus,
        "capacity" => capacity: req Capacity,
        "capabilityAvailability" => capability_availability: req Vec<CapabilityAvailability>,
        "estimatedResponseMs" => estimated_response_ms: opt SafeInt,
        "lastHeartbeat" => last_heartbeat: req Timestamp,
        "expiresAt" => expires_at: req Timestamp,
    }
);

/// Validates `v` as a Presence Record.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<PresenceRecord>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{assert_fails, cases, edit, load, mutate, vector};
    use crate::model::{ToJson, from_value, json_equal};

    const SCHEMA: &str = "presence-record.schema.json";

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let p = from_value::<PresenceRecord>(&v, false)
                    .unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&p.to_json(), &v), "{}: round trip", c.name);
            } else if c.instance.ends_with("/presence-with-credentials.json") {
                assert_fails(validate(&v, false), "", "unknown member \"credentials\"");
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/presence-record.json");
        let bad = mutate(&v, |o| o.insert("sessionEpoch", Value::from(0u64)));
        assert_fails(validate(&bad, false), "/sessionEpoch", "outside 1..=");
        let bad = mutate(&v, |o| o.insert("status", Value::from("idle")));
        assert_fails(validate(&bad, false), "/status", "\"idle\" is not one of");
        let bad = edit(&v, &["capacity"], |o| {
            o.remove("queuedItems");
        });
        assert_fails(
            validate(&bad, false),
            "/capacity",
            "missing required member \"queuedItems\"",
        );
        let bad = edit(&v, &["capabilityAvailability", "0"], |o| {
            o.insert("status", Value::from("gone"))
        });
        assert_fails(
            validate(&bad, false),
            "/capabilityAvailability/0/status",
            "not one of",
        );
        let bad = mutate(&v, |o| {
            o.remove("expiresAt");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "missing required member \"expiresAt\"",
        );
        let bad = mutate(&v, |o| o.insert("lastHeartbeat", Value::from("2026-07-15")));
        assert_fails(validate(&bad, false), "/lastHeartbeat", "RFC 3339");
    }
}
