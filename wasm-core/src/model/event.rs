//! `event.schema.json`: the signed Event envelope (§15.2).
//!
//! An Event is an immutable accepted fact, signed by the accepting authority. A Group Event
//! carries the Group ordering context (`groupId`, `sequence`, `aggregateRevision`); the two
//! Organization-scoped facts (Agent Card registration, Session activation) are service-issued
//! and carry none of it. [`check_event`] implements the schema's one `if/then/else`.

use super::common::{Actor, ActorType, Extensions, ProtocolVersion, Signature};
use super::{
    Cx, ExtKind, FromJson, Id, PosInt, SafeInt, SchemaError, Sha256Hash, ToJson, forbid_if,
    is_ext_kind, require_if,
};
use crate::json::{Object, Value};
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// The 36 core Event kinds (§15.2): past-tense facts of the 32 core Commands plus
    /// `work.contract.revised`, `work.progressed`, `group.snapshot.created`, `group.archived`.
    pub enum CoreEventKind {
        MissionCreated = "mission.created",
        MissionCoordinatorAssigned = "mission.coordinator.assigned",
        MissionCoordinatorRenewed = "mission.coordinator.renewed",
        MissionSubmittedForApproval = "mission.submitted_for_approval",
        MissionApproved = "mission.approved",
        MissionChangesRequested = "mission.changes_requested",
        MissionCancelled = "mission.cancelled",
        MissionTerminated = "mission.terminated",
        MissionChildCreated = "mission.child.created",
        MissionFollowUpCreated = "mission.follow_up.created",
        MembershipChanged = "membership.changed",
        MembershipEnded = "membership.ended",
        MembershipDelegationGranted = "membership.delegation.granted",
        MessagePosted = "message.posted",
        MessageCorrected = "message.corrected",
        MessageRetracted = "message.retracted",
        MessageRedacted = "message.redacted",
        WorkProposed = "work.proposed",
        WorkAuthorized = "work.authorized",
        WorkOfferCreated = "work.offer.created",
        WorkOfferAccepted = "work.offer.accepted",
        WorkContractRevised = "work.contract.revised",
        WorkStarted = "work.started",
        WorkProgressed = "work.progressed",
        WorkCheckpointed = "work.checkpointed",
        WorkBlocked = "work.blocked",
        WorkUnblocked = "work.unblocked",
        WorkSubmitted = "work.submitted",
        WorkResultAccepted = "work.result.accepted",
        WorkFailed = "work.failed",
        WorkCancelled = "work.cancelled",
        ArtifactPublished = "artifact.published",
        ApprovalExecutionGranted = "approval.execution.granted",
        PolicyCooperationOverrideGranted = "policy.cooperation_override.granted",
        GroupSnapshotCreated = "group.snapshot.created",
        GroupArchived = "group.archived",
    }
);

/// The Organization-scoped fact of an Agent Card registration (§15.2).
pub const AGENT_CARD_REGISTERED: &str = "ext.missionweaveprotocol.registry.agent_card_registered";
/// The Organization-scoped fact of a Session activation (§6.3, I-14).
pub const SESSION_OPENED: &str = "ext.missionweaveprotocol.identity.session_opened";

/// The kinds the schema's `if` singles out: no Group ordering context, service actor (§15.2).
pub const ORGANIZATION_SCOPED_EVENT_KINDS: [&str; 2] = [AGENT_CARD_REGISTERED, SESSION_OPENED];

/// An Event `kind`: `anyOf` a core kind or an `ext.<organization>.<profile>.<name>` kind (§18).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    Core(CoreEventKind),
    Ext(ExtKind),
}

impl EventKind {
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::Core(k) => k.as_str(),
            EventKind::Ext(k) => k.as_str(),
        }
    }

    /// The core kind, if this is one.
    pub fn core(&self) -> Option<CoreEventKind> {
        match self {
            EventKind::Core(k) => Some(*k),
            EventKind::Ext(_) => None,
        }
    }

    /// True for the two Organization-scoped facts, which are not Group Events (§15.2).
    pub fn is_organization_scoped(&self) -> bool {
        ORGANIZATION_SCOPED_EVENT_KINDS.contains(&self.as_str())
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromJson for EventKind {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        if let Some(k) = CoreEventKind::from_wire(s) {
            Ok(EventKind::Core(k))
        } else if is_ext_kind(s) {
            Ok(EventKind::Ext(ExtKind(s.to_owned())))
        } else {
            Err(cx.err(format!(
                "{s:?} is neither a core Event kind nor an ext.<organization>.<profile>.<name> \
                 kind (anyOf)"
            )))
        }
    }
}

impl ToJson for EventKind {
    fn to_json(&self) -> Value {
        match self {
            EventKind::Core(k) => Value::string(k.as_str()),
            EventKind::Ext(k) => Value::string(k.as_str().to_owned()),
        }
    }
}

string_enum!(
    /// `cause.type`: what produced the Event (an accepted Command, a prior Event, a timer or a
    /// policy decision, §15.2).
    pub enum CauseType {
        Command = "command",
        Event = "event",
        Timer = "timer",
        Policy = "policy",
    }
);

object!(
    /// `cause`: the Command, Event, timer or policy decision that caused the Event.
    pub struct EventCause {
        "type" => cause_type: req CauseType,
        "id" => id: req Id,
    }
);

object!(
    /// The signed Event envelope (§15.2). Signed Document: protected time `occurredAt`,
    /// expected signer exactly `acceptedBy` (§6.4).
    pub struct Event {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        "eventId" => event_id: req Id,
        "groupId" => group_id: opt Id,
        /// Strictly increasing Group sequence, from 1 (§15.2, D-15).
        "sequence" => sequence: opt PosInt,
        "aggregateRevision" => aggregate_revision: opt SafeInt,
        "kind" => kind: req EventKind,
        "actor" => actor: req Actor,
        "cause" => cause: req EventCause,
        "correlationId" => correlation_id: req Id,
        "conversationId" => conversation_id: opt Id,
        "workItemId" => work_item_id: opt Id,
        "occurredAt" => occurred_at: req Timestamp,
        "payload" => payload: req Object,
        /// The accepting Group Authority or Organization Event service, and the signer.
        "acceptedBy" => accepted_by: req Actor,
        "commandHash" => command_hash: opt Sha256Hash,
        "extensions" => extensions: opt Extensions,
        "signature" => signature: req Signature,
    }
    check = check_event;
);

/// `allOf[0]` `then`.
pub const RULE_ORGANIZATION_SCOPED: &str = "the Organization-scoped Event rule: service actor, no groupId, sequence or \
     aggregateRevision (§15.2)";
/// `allOf[0]` `else`.
pub const RULE_GROUP_EVENT: &str =
    "the Group Event rule: groupId, sequence and aggregateRevision (§15.2)";

/// The schema's `allOf[0]`: `if` kind is Organization-scoped `then` service actor and no Group
/// ordering context, `else` the full Group ordering context.
pub fn check_event(e: &Event, cx: &mut Cx) -> Result<(), SchemaError> {
    let has_group = e.group_id.is_some();
    let has_sequence = e.sequence.is_some();
    let has_revision = e.aggregate_revision.is_some();
    if e.kind.is_organization_scoped() {
        let actor = e.actor.actor_type;
        if actor != ActorType::Service {
            return cx.at("actor", |cx| {
                cx.at("type", |cx| {
                    Err(cx.err(format!(
                        "actor type \"{actor}\" is not allowed by {RULE_ORGANIZATION_SCOPED}: \
                         it must be \"service\""
                    )))
                })
            });
        }
        forbid_if(cx, true, has_group, "groupId", RULE_ORGANIZATION_SCOPED)?;
        forbid_if(cx, true, has_sequence, "sequence", RULE_ORGANIZATION_SCOPED)?;
        forbid_if(
            cx,
            true,
            has_revision,
            "aggregateRevision",
            RULE_ORGANIZATION_SCOPED,
        )?;
    } else {
        require_if(cx, true, has_group, "groupId", RULE_GROUP_EVENT)?;
        require_if(cx, true, has_sequence, "sequence", RULE_GROUP_EVENT)?;
        require_if(
            cx,
            true,
            has_revision,
            "aggregateRevision",
            RULE_GROUP_EVENT,
        )?;
    }
    Ok(())
}

/// Parses `v` as an [`Event`] and discards it (the conformance runner's schema stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Event>(v, timestamp_profile).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::from_value;
    use crate::model::testkit::{assert_fails, cases, edit, load, mutate, vector};

    const SCHEMA: &str = "event.schema.json";

    fn parse(v: &Value) -> Result<Event, SchemaError> {
        from_value::<Event>(v, true)
    }

    fn ok(v: &Value) -> Event {
        parse(v).unwrap_or_else(|e| panic!("expected valid: {e}"))
    }

    fn group_event() -> Value {
        vector(SCHEMA, "valid/event.json")
    }

    fn org_event() -> Value {
        vector(SCHEMA, "valid/organization-session-opened-event.json")
    }

    fn set(v: &Value, name: &str, value: Value) -> Value {
        mutate(v, |o| o.insert(name.to_owned(), value))
    }

    fn del(v: &Value, name: &str) -> Value {
        mutate(v, |o| {
            o.remove(name);
        })
    }

    #[test]
    fn kind_table_matches_the_schema() {
        assert_eq!(CoreEventKind::ALL.len(), 36);
        let schema = load(&format!("schemas/{SCHEMA}"));
        let enum_list: Vec<String> = match schema.pointer("/properties/kind/anyOf/0/enum") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => panic!("no kind enum"),
        };
        let ours: Vec<&str> = CoreEventKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(ours, enum_list);
        let org: Vec<String> = match schema.pointer("/allOf/0/if/properties/kind/enum") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => panic!("no Organization-scoped enum"),
        };
        assert_eq!(ORGANIZATION_SCOPED_EVENT_KINDS.to_vec(), org);
    }

    #[test]
    fn event_kind_any_of() {
        let k = |s: &str| from_value::<EventKind>(&Value::from(s), false);
        assert_eq!(
            k("group.archived"),
            Ok(EventKind::Core(CoreEventKind::GroupArchived))
        );
        assert!(k(SESSION_OPENED).expect("ext").is_organization_scoped());
        assert!(
            k(AGENT_CARD_REGISTERED)
                .expect("ext")
                .is_organization_scoped()
        );
        assert!(
            !k("ext.missionweaveprotocol.core.resource_usage_recorded")
                .expect("ext")
                .is_organization_scoped()
        );
        // A Command kind is not an Event kind.
        assert_fails(k("mission.create"), "", "neither a core Event kind");
        assert_fails(k("ext.acme"), "", "neither a core Event kind");
    }

    #[test]
    fn conformance_vectors() {
        let expected: &[(&str, &str, &str)] = &[
            ("event-zero-sequence.json", "/sequence", "outside 1..="),
            (
                "group-event-missing-authority-context.json",
                "",
                RULE_GROUP_EVENT,
            ),
        ];
        let all = cases(SCHEMA);
        assert_eq!(all.iter().filter(|c| !c.valid).count(), expected.len());
        assert!(all.iter().any(|c| c.valid));
        for case in all {
            let v = load(&case.instance);
            if case.valid {
                for profile in [false, true] {
                    let e = from_value::<Event>(&v, profile)
                        .unwrap_or_else(|err| panic!("{}: {err}", case.name));
                    assert_eq!(from_value::<Event>(&e.to_json(), profile), Ok(e.clone()));
                }
            } else {
                let (_, pointer, needle) = expected
                    .iter()
                    .find(|(f, _, _)| case.instance.ends_with(f))
                    .unwrap_or_else(|| panic!("no expectation for {}", case.instance));
                assert_fails(from_value::<Event>(&v, false), pointer, needle);
                assert_fails(from_value::<Event>(&v, true), pointer, needle);
            }
        }
    }

    #[test]
    fn signed_document_vector_parses_with_the_timestamp_profile() {
        let v = load("cryptography/vectors/signed-documents/valid/event.json");
        ok(&v);
        assert_eq!(validate(&v, true), Ok(()));
        let leap = set(&v, "occurredAt", Value::from("2026-06-30T23:59:60Z"));
        assert_eq!(validate(&leap, false), Ok(()));
        assert_fails(parse(&leap), "/occurredAt", "leap seconds");
    }

    #[test]
    fn closed_objects_and_member_types() {
        let v = group_event();
        assert_fails(
            parse(&set(&v, "extra", Value::Null)),
            "",
            "unknown member \"extra\"",
        );
        assert_fails(
            parse(&edit(&v, &["cause"], |o| o.insert("extra", Value::Null))),
            "/cause",
            "unknown member",
        );
        assert_fails(
            parse(&edit(&v, &["cause"], |o| {
                o.insert("type", Value::from("message"))
            })),
            "/cause/type",
            "is not one of",
        );
        assert_fails(
            parse(&edit(&v, &["cause"], |o| {
                o.remove("id");
            })),
            "/cause",
            "missing required member \"id\"",
        );
        assert_fails(
            parse(&set(&v, "commandHash", Value::from("sha256:AA"))),
            "/commandHash",
            "sha256:",
        );
        let half = Value::Number(crate::json::Number::from_f64(1.5).expect("finite"));
        assert_fails(
            parse(&set(&v, "aggregateRevision", half)),
            "/aggregateRevision",
            "not an integer",
        );
        ok(&set(&v, "aggregateRevision", Value::from(0u64)));
        for m in [
            "protocolVersion",
            "eventId",
            "kind",
            "actor",
            "cause",
            "correlationId",
            "occurredAt",
            "payload",
            "acceptedBy",
            "signature",
        ] {
            assert_fails(
                parse(&del(&v, m)),
                "",
                &format!("missing required member \"{m}\""),
            );
        }
    }

    // allOf[0] else: every other kind (core or ext) is a Group Event.
    #[test]
    fn rule_group_event() {
        let v = group_event();
        ok(&v);
        for m in ["groupId", "sequence", "aggregateRevision"] {
            let needle = format!("missing member \"{m}\", required by {RULE_GROUP_EVENT}");
            assert_fails(parse(&del(&v, m)), "", &needle);
        }
        let ext = set(
            &v,
            "kind",
            Value::from("ext.missionweaveprotocol.core.resource_usage_recorded"),
        );
        ok(&ext);
        assert_fails(parse(&del(&ext, "sequence")), "", RULE_GROUP_EVENT);
    }

    // allOf[0] then: the Organization-scoped facts.
    #[test]
    fn rule_organization_scoped() {
        for k in ORGANIZATION_SCOPED_EVENT_KINDS {
            let v = set(&org_event(), "kind", Value::from(k));
            ok(&v);
            let g = Value::from("urn:missionweaveprotocol:group:one");
            assert_fails(
                parse(&set(&v, "groupId", g)),
                "/groupId",
                RULE_ORGANIZATION_SCOPED,
            );
            assert_fails(
                parse(&set(&v, "sequence", Value::from(1u64))),
                "/sequence",
                RULE_ORGANIZATION_SCOPED,
            );
            assert_fails(
                parse(&set(&v, "aggregateRevision", Value::from(0u64))),
                "/aggregateRevision",
                RULE_ORGANIZATION_SCOPED,
            );
            let agent = edit(&v, &["actor"], |o| o.insert("type", Value::from("agent")));
            assert_fails(parse(&agent), "/actor/type", RULE_ORGANIZATION_SCOPED);
        }
    }

    /// Every kind × actor type × presence of the Group ordering context agrees with a JSON
    /// Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn ordering_context_matrix_agrees_with_a_json_schema_validator() {
        let oracle = crate::model::command::oracle::Oracle::new(SCHEMA);
        let base = mutate(&group_event(), |o| {
            for m in ["groupId", "sequence", "aggregateRevision"] {
                o.remove(m);
            }
        });
        let mut kinds: Vec<&str> = CoreEventKind::ALL.iter().map(|k| k.as_str()).collect();
        kinds.extend(ORGANIZATION_SCOPED_EVENT_KINDS);
        kinds.push("ext.missionweaveprotocol.core.resource_usage_recorded");
        let (mut accepted, mut rejected) = (0, 0);
        for t in ["agent", "human", "service"] {
            for k in &kinds {
                for mask in 0..8u32 {
                    let v = edit(&set(&base, "kind", Value::from(*k)), &["actor"], |o| {
                        o.insert("type", Value::from(t))
                    });
                    let v = mutate(&v, |o| {
                        if mask & 1 != 0 {
                            o.insert("groupId", Value::from("urn:missionweaveprotocol:group:g"));
                        }
                        if mask & 2 != 0 {
                            o.insert("sequence", Value::from(7u64));
                        }
                        if mask & 4 != 0 {
                            o.insert("aggregateRevision", Value::from(0u64));
                        }
                    });
                    let ours = validate(&v, true);
                    assert_eq!(
                        ours.is_ok(),
                        oracle.accepts(&v),
                        "{t} {k} mask {mask:03b}: {ours:?}"
                    );
                    if ours.is_ok() {
                        accepted += 1;
                    } else {
                        rejected += 1;
                    }
                }
            }
        }
        assert!(
            accepted > 100 && rejected > 500,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
