//! `group.schema.json`: the Mission Group (§7.1, §7.4, checklist §4 "Retention and archival").

use super::common::Extensions;
use super::{Cx, Id, SchemaError, forbid_if, require_if};
use crate::json::Value;
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `state`: a Group is archived only with a signed snapshot (§7.4).
    pub enum GroupState {
        Active = "active",
        Archived = "archived",
    }
);

object!(
    /// A Mission Group: the ordered, isolated collaboration space of one Mission (§7.1).
    pub struct Group {
        "groupId" => group_id: req Id,
        "missionId" => mission_id: req Id,
        "state" => state: req GroupState,
        "mainConversationId" => main_conversation_id: req Id,
        "createdAt" => created_at: req Timestamp,
        "archivedAt" => archived_at: opt Timestamp,
        /// The signed Group snapshot taken at archival (§7.4).
        "archiveSnapshotId" => archive_snapshot_id: opt Id,
        "extensions" => extensions: opt Extensions,
    }
    check = check_group;
);

const RULE_ARCHIVED: &str =
    "group allOf/0 (state \"archived\" requires archivedAt and archiveSnapshotId)";
const RULE_ACTIVE: &str =
    "group allOf/1 (state \"active\" forbids archivedAt and archiveSnapshotId)";

/// The schema's `allOf`: archival fields are present exactly when the Group is archived.
fn check_group(g: &Group, cx: &mut Cx) -> Result<(), SchemaError> {
    let archived = g.state == GroupState::Archived;
    require_if(
        cx,
        archived,
        g.archived_at.is_some(),
        "archivedAt",
        RULE_ARCHIVED,
    )?;
    require_if(
        cx,
        archived,
        g.archive_snapshot_id.is_some(),
        "archiveSnapshotId",
        RULE_ARCHIVED,
    )?;
    let active = g.state == GroupState::Active;
    forbid_if(
        cx,
        active,
        g.archived_at.is_some(),
        "archivedAt",
        RULE_ACTIVE,
    )?;
    forbid_if(
        cx,
        active,
        g.archive_snapshot_id.is_some(),
        "archiveSnapshotId",
        RULE_ACTIVE,
    )
}

/// Validates `v` as a Mission Group.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Group>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{assert_fails, cases, load, mutate, vector};
    use crate::model::{ToJson, from_value, json_equal};

    const SCHEMA: &str = "group.schema.json";

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let g =
                    from_value::<Group>(&v, false).unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&g.to_json(), &v), "{}: round trip", c.name);
            } else if c
                .instance
                .ends_with("/group-archived-without-snapshot.json")
            {
                assert_fails(
                    validate(&v, false),
                    "",
                    "\"archiveSnapshotId\", required by group allOf/0",
                );
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn rule_archived_requires_archival_fields() {
        let v = vector(SCHEMA, "valid/group.json");
        let archived = mutate(&v, |o| {
            o.insert("state", Value::from("archived"));
            o.insert("archivedAt", Value::from("2026-07-16T00:00:00Z"));
            o.insert(
                "archiveSnapshotId",
                Value::from("urn:missionweaveprotocol:snapshot:one"),
            );
        });
        assert!(validate(&archived, false).is_ok());
        let bad = mutate(&archived, |o| {
            o.remove("archivedAt");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "\"archivedAt\", required by group allOf/0",
        );
        let bad = mutate(&archived, |o| {
            o.remove("archiveSnapshotId");
        });
        assert_fails(
            validate(&bad, false),
            "",
            "\"archiveSnapshotId\", required by group allOf/0",
        );
    }

    #[test]
    fn rule_active_forbids_archival_fields() {
        let v = vector(SCHEMA, "valid/group.json");
        let bad = mutate(&v, |o| {
            o.insert("archivedAt", Value::from("2026-07-16T00:00:00Z"))
        });
        assert_fails(
            validate(&bad, false),
            "/archivedAt",
            "forbidden by group allOf/1",
        );
        let bad = mutate(&v, |o| {
            o.insert(
                "archiveSnapshotId",
                Value::from("urn:missionweaveprotocol:snapshot:one"),
            )
        });
        assert_fails(
            validate(&bad, false),
            "/archiveSnapshotId",
            "forbidden by group allOf/1",
        );
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/group.json");
        let bad = mutate(&v, |o| o.insert("state", Value::from("closed")));
        assert_fails(validate(&bad, false), "/state", "not one of");
        let bad = mutate(&v, |o| o.insert("extra", Value::Null));
        assert_fails(validate(&bad, false), "", "unknown member \"extra\"");
        let ext = mutate(&v, |o| {
            o.insert(
                "extensions",
                crate::model::primitives::testkit::json(
                    r#"{"https://example.org/p": {"version": "1.0.0", "critical": false, "data": 1}}"#,
                ),
            )
        });
        assert!(validate(&ext, false).is_ok());
        let bad = mutate(&v, |o| {
            o.insert(
                "extensions",
                crate::model::primitives::testkit::json(
                    r#"{"not a uri": {"version": "1.0.0", "critical": false, "data": 1}}"#,
                ),
            )
        });
        assert_fails(
            validate(&bad, false),
            "/extensions/not a uri",
            "extension name",
        );
    }

    /// The conditional rules agree with an independent JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = vector(SCHEMA, "valid/group.json");
        let axes = [
            Axis::values(&[], "state", &["active", "archived"]),
            Axis::optional(&[], "archivedAt", Value::from("2026-07-16T00:00:00Z")),
            Axis::optional(&[], "archiveSnapshotId", Value::from("urn:x:snapshot")),
        ];
        let (accepted, rejected) =
            agree_on_matrix(&base, &axes, |v| validate(v, false), |v| oracle.accepts(v));
        assert!(
            accepted > 0 && rejected > 0,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
