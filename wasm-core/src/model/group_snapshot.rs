//! `group-snapshot.schema.json`: the signed final Group Snapshot (§7.4, checklist M-12).
//!
//! Archival produces a signed snapshot through a sequence, with the Event IDs it covers, a
//! state hash and a non-empty Policy Log (vector `group-snapshot-without-policy-log`). It is
//! created by a service (the Group Authority, via `ext.missionweaveprotocol.core.group_archive`).
//! No conditional rules.

use super::common::{Actor, ServiceActor, Signature};
use super::{Id, NonEmpty, NonEmptyUnique, PosInt, SchemaError, Sha256Hash, Str};
use crate::json::{Object, Value};
use crate::object;
use crate::time::Timestamp;

object!(
    /// `policyLog[]`: one policy decision linked into the snapshot.
    pub struct PolicyLogEntry {
        "entryId" => entry_id: req Id,
        "decision" => decision: req Str<1, 4000>,
        "actor" => actor: req Actor,
        "occurredAt" => occurred_at: req Timestamp,
        "details" => details: req Object,
    }
);

object!(
    /// The Group Snapshot (§7.4). Signed Document: protected time `createdAt`, expected signer
    /// exactly `createdBy`, which the schema restricts to a service (§6.4).
    pub struct GroupSnapshot {
        "snapshotId" => snapshot_id: req Id,
        "groupId" => group_id: req Id,
        "throughSequence" => through_sequence: req PosInt,
        "eventIds" => event_ids: req NonEmptyUnique<Id>,
        "stateHash" => state_hash: req Sha256Hash,
        "policyLog" => policy_log: req NonEmpty<PolicyLogEntry>,
        /// Inline `{type: const "service", id}` in the schema, i.e. a service actor.
        "createdBy" => created_by: req ServiceActor,
        "createdAt" => created_at: req Timestamp,
        "signature" => signature: req Signature,
    }
);

/// Parses `v` as a [`GroupSnapshot`] and discards it (the conformance runner's schema stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<GroupSnapshot>(v, timestamp_profile).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testkit::{assert_fails, cases, edit, load, mutate, vector};
    use crate::model::{ToJson, from_value};

    const SCHEMA: &str = "group-snapshot.schema.json";

    fn parse(v: &Value) -> Result<GroupSnapshot, SchemaError> {
        from_value::<GroupSnapshot>(v, true)
    }

    fn ok(v: &Value) -> GroupSnapshot {
        parse(v).unwrap_or_else(|e| panic!("expected valid: {e}"))
    }

    fn set(v: &Value, name: &str, value: Value) -> Value {
        mutate(v, |o| o.insert(name.to_owned(), value))
    }

    #[test]
    fn conformance_vectors() {
        let all = cases(SCHEMA);
        assert!(all.iter().any(|c| c.valid));
        assert_eq!(all.iter().filter(|c| !c.valid).count(), 1);
        for case in all {
            let v = load(&case.instance);
            if case.valid {
                for profile in [false, true] {
                    let s = from_value::<GroupSnapshot>(&v, profile)
                        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
                    assert_eq!(
                        from_value::<GroupSnapshot>(&s.to_json(), profile),
                        Ok(s.clone())
                    );
                }
            } else {
                assert!(
                    case.instance
                        .ends_with("group-snapshot-without-policy-log.json")
                );
                assert_fails(parse(&v), "/policyLog", "at least 1");
            }
        }
    }

    #[test]
    fn signed_document_vector_parses_with_the_timestamp_profile() {
        let v = load("cryptography/vectors/signed-documents/valid/group-snapshot.json");
        ok(&v);
        assert_eq!(validate(&v, true), Ok(()));
    }

    #[test]
    fn members() {
        let v = vector(SCHEMA, "valid/group-snapshot.json");
        ok(&v);
        for t in ["agent", "human"] {
            assert_fails(
                parse(&edit(&v, &["createdBy"], |o| o.insert("type", t.into()))),
                "/createdBy/type",
                "must be \"service\"",
            );
        }
        assert_fails(
            parse(&edit(&v, &["createdBy"], |o| o.insert("name", "x".into()))),
            "/createdBy",
            "unknown member",
        );
        assert_fails(
            parse(&set(&v, "throughSequence", 0u64.into())),
            "/throughSequence",
            "outside 1..=",
        );
        assert_fails(
            parse(&set(&v, "eventIds", Value::Array(vec![]))),
            "/eventIds",
            "at least 1",
        );
        assert_fails(
            parse(&set(
                &v,
                "eventIds",
                Value::Array(vec!["urn:e:1".into(), "urn:e:1".into()]),
            )),
            "/eventIds",
            "uniqueItems",
        );
        assert_fails(
            parse(&set(&v, "stateHash", "sha256:xyz".into())),
            "/stateHash",
            "sha256:",
        );
        let entry = |f: &dyn Fn(&mut Object)| parse(&edit(&v, &["policyLog", "0"], |o| f(o)));
        assert_fails(
            entry(&|o| o.insert("decision", "".into())),
            "/policyLog/0/decision",
            "outside 1..=4000",
        );
        assert_fails(
            entry(&|o| o.insert("details", Value::Array(vec![]))),
            "/policyLog/0/details",
            "expected an object",
        );
        assert_fails(
            entry(&|o| o.insert("occurredAt", "2026-02-30T00:00:00Z".into())),
            "/policyLog/0/occurredAt",
            "",
        );
        assert_fails(
            entry(&|o| o.insert("occurredAt", "0000-01-01T00:00:00Z".into())),
            "/policyLog/0/occurredAt",
            "year 0000",
        );
        assert_fails(
            entry(&|o| {
                o.remove("details");
            }),
            "/policyLog/0",
            "missing required member \"details\"",
        );
        assert_fails(
            entry(&|o| o.insert("note", "x".into())),
            "/policyLog/0",
            "unknown member",
        );
        for m in [
            "snapshotId",
            "groupId",
            "throughSequence",
            "eventIds",
            "stateHash",
            "policyLog",
            "createdBy",
            "createdAt",
            "signature",
        ] {
            let r = parse(&mutate(&v, |o| {
                o.remove(m);
            }));
            assert_fails(r, "", &format!("missing required member \"{m}\""));
        }
    }
}
