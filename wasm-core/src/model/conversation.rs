//! `conversation.schema.json`: Conversations inside a Group (§9; checklist §5).

use super::common::{Actor, Extensions};
use super::{Cx, Id, NonEmpty, SafeInt, SchemaError, Str, require_if};
use crate::json::Value;
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `type` (§9).
    pub enum ConversationType {
        Group = "group",
        WorkItem = "work_item",
        Review = "review",
        Restricted = "restricted",
    }
);

string_enum!(
    /// `access.mode`: the whole Group, or only the listed members.
    pub enum AccessMode {
        Group = "group",
        Restricted = "restricted",
    }
);

object!(
    /// `access`: who can read the Conversation (§9). A restricted one lists its members.
    pub struct ConversationAccess {
        "mode" => mode: req AccessMode,
        "members" => members: opt NonEmpty<Actor>,
    }
    check = check_access;
);

/// `access.allOf/0`: `if mode = restricted then required [members]`.
fn check_access(a: &ConversationAccess, cx: &mut Cx) -> Result<(), SchemaError> {
    require_if(
        cx,
        a.mode == AccessMode::Restricted,
        a.members.is_some(),
        "members",
        "conversation access allOf/0 (mode \"restricted\" requires members)",
    )
}

object!(
    /// A Conversation (§9).
    pub struct Conversation {
        "conversationId" => conversation_id: req Id,
        "missionId" => mission_id: req Id,
        "groupId" => group_id: req Id,
        "type" => conversation_type: req ConversationType,
        /// Required for a `work_item` Conversation.
        "primaryWorkItemId" => primary_work_item_id: opt Id,
        "title" => title: req Str<1, 500>,
        "access" => access: req ConversationAccess,
        "createdBy" => created_by: req Actor,
        "createdAt" => created_at: req Timestamp,
        "state" => state: req ConversationState,
        "revision" => revision: req SafeInt,
        "extensions" => extensions: opt Extensions,
    }
    check = check_conversation;
);

string_enum!(
    /// `state`.
    pub enum ConversationState {
        Active = "active",
        Closed = "closed",
    }
);

/// The schema's `allOf`: a `work_item` Conversation names its WorkItem (allOf/0) and a
/// `restricted` Conversation has restricted access (allOf/1).
fn check_conversation(c: &Conversation, cx: &mut Cx) -> Result<(), SchemaError> {
    require_if(
        cx,
        c.conversation_type == ConversationType::WorkItem,
        c.primary_work_item_id.is_some(),
        "primaryWorkItemId",
        "conversation allOf/0 (type \"work_item\" requires primaryWorkItemId)",
    )?;
    if c.conversation_type == ConversationType::Restricted
        && c.access.mode != AccessMode::Restricted
    {
        return cx.at("access", |cx| {
            cx.at("mode", |cx| {
                Err(cx.err(format!(
                    "must be \"restricted\", found \"{}\": conversation allOf/1 (type \
                     \"restricted\" requires access.mode \"restricted\")",
                    c.access.mode
                )))
            })
        });
    }
    Ok(())
}

/// Validates `v` as a Conversation.
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Conversation>(v, timestamp_profile).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::primitives::testkit::{
        assert_fails, cases, edit, json, load, mutate, vector,
    };
    use crate::model::{ToJson, from_value, json_equal};

    const SCHEMA: &str = "conversation.schema.json";
    const MEMBERS: &str =
        r#"[{"type": "human", "id": "urn:missionweaveprotocol:human:mission-owner"}]"#;

    #[test]
    fn manifest_vectors() {
        let all = cases(SCHEMA);
        assert!(all.len() >= 2);
        for c in all {
            let v = load(&c.instance);
            if c.valid {
                let x = from_value::<Conversation>(&v, false)
                    .unwrap_or_else(|e| panic!("{}: {e}", c.name));
                assert!(json_equal(&x.to_json(), &v), "{}: round trip", c.name);
            } else if c
                .instance
                .ends_with("/conversation-work-item-without-primary.json")
            {
                assert_fails(
                    validate(&v, false),
                    "",
                    "\"primaryWorkItemId\", required by conversation allOf/0",
                );
            } else {
                panic!("unexpected invalid vector {}", c.instance);
            }
        }
    }

    #[test]
    fn rule_work_item_needs_primary() {
        let v = vector(SCHEMA, "valid/conversation.json");
        let bad = mutate(&v, |o| {
            o.remove("primaryWorkItemId");
        });
        assert_fails(validate(&bad, false), "", "conversation allOf/0");
        // Other types do not need it.
        let ok = mutate(&bad, |o| o.insert("type", Value::from("review")));
        assert!(validate(&ok, false).is_ok());
    }

    #[test]
    fn rule_restricted_access_needs_members() {
        let v = vector(SCHEMA, "valid/conversation.json");
        let bad = edit(&v, &["access"], |o| {
            o.insert("mode", Value::from("restricted"))
        });
        assert_fails(
            validate(&bad, false),
            "/access",
            "\"members\", required by conversation access allOf/0",
        );
        let ok = edit(&bad, &["access"], |o| o.insert("members", json(MEMBERS)));
        assert!(validate(&ok, false).is_ok());
        let bad = edit(&bad, &["access"], |o| o.insert("members", json("[]")));
        assert_fails(validate(&bad, false), "/access/members", "at least 1");
    }

    #[test]
    fn rule_restricted_type_needs_restricted_access() {
        let v = vector(SCHEMA, "valid/conversation.json");
        let bad = mutate(&v, |o| o.insert("type", Value::from("restricted")));
        assert_fails(
            validate(&bad, false),
            "/access/mode",
            "conversation allOf/1",
        );
        let ok = edit(&bad, &["access"], |o| {
            o.insert("mode", Value::from("restricted"));
            o.insert("members", json(MEMBERS));
        });
        assert!(validate(&ok, false).is_ok());
    }

    #[test]
    fn member_rules() {
        let v = vector(SCHEMA, "valid/conversation.json");
        let bad = mutate(&v, |o| o.insert("title", Value::from("")));
        assert_fails(validate(&bad, false), "/title", "outside 1..=500");
        let bad = mutate(&v, |o| o.insert("state", Value::from("archived")));
        assert_fails(validate(&bad, false), "/state", "not one of");
        let bad = edit(&v, &["access"], |o| o.insert("public", Value::from(true)));
        assert_fails(
            validate(&bad, false),
            "/access",
            "unknown member \"public\"",
        );
        let bad = mutate(&v, |o| o.insert("revision", json("-1")));
        assert_fails(validate(&bad, false), "/revision", "outside 0..=");
    }

    /// The conditional rules agree with an independent JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn conditional_matrix_agrees_with_a_json_schema_validator() {
        use crate::model::testkit::{Axis, agree_on_matrix};
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = vector(SCHEMA, "valid/conversation.json");
        let axes = [
            Axis::values(&[], "type", &["group", "work_item", "review", "restricted"]),
            Axis::optional(&[], "primaryWorkItemId", Value::from("urn:x:work-item")),
            Axis::values(&["access"], "mode", &["group", "restricted"]),
            Axis::optional(&["access"], "members", json(MEMBERS)),
        ];
        let (accepted, rejected) =
            agree_on_matrix(&base, &axes, |v| validate(v, false), |v| oracle.accepts(v));
        assert!(
            accepted > 0 && rejected > 0,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
