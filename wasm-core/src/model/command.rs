//! `command.schema.json`: the signed Command envelope (§15.1, checklist I-16, I-17).
//!
//! A Command is a signed request for one structured state transition. Beyond the member types,
//! the schema's ten `allOf` conditionals encode the epoch matrix of §6.3 and §15.1 (who carries
//! `groupId`, `sessionEpoch`, `membershipEpoch` and `coordinatorEpoch`); [`check_command`]
//! implements each one and names it in its error.

use super::common::{Actor, ActorType, Extensions, ProtocolVersion, Signature};
use super::{
    Cx, ExtKind, FromJson, Id, PosInt, SafeInt, SchemaError, ToJson, forbid_if, is_ext_kind,
    require_if,
};
use crate::json::{Object, Value};
use crate::time::Timestamp;
use crate::{object, string_enum};

string_enum!(
    /// `#/$defs/coreCommandKind`: the 32 core Command kinds of §15.1.
    pub enum CoreCommandKind {
        MissionCreate = "mission.create",
        MissionAssignCoordinator = "mission.assign_coordinator",
        MissionRenewCoordinator = "mission.renew_coordinator",
        MissionSubmitForApproval = "mission.submit_for_approval",
        MissionApprove = "mission.approve",
        MissionRequestChanges = "mission.request_changes",
        MissionCancel = "mission.cancel",
        MissionTerminate = "mission.terminate",
        MissionCreateChild = "mission.create_child",
        MissionCreateFollowUp = "mission.create_follow_up",
        MembershipChange = "membership.change",
        MembershipEnd = "membership.end",
        MembershipGrantDelegation = "membership.grant_delegation",
        MessagePost = "message.post",
        MessageCorrect = "message.correct",
        MessageRetract = "message.retract",
        MessageRedact = "message.redact",
        WorkPropose = "work.propose",
        WorkAuthorize = "work.authorize",
        WorkOffer = "work.offer",
        WorkAcceptOffer = "work.accept_offer",
        WorkStart = "work.start",
        WorkCheckpoint = "work.checkpoint",
        WorkBlock = "work.block",
        WorkUnblock = "work.unblock",
        WorkSubmit = "work.submit",
        WorkAcceptResult = "work.accept_result",
        WorkFail = "work.fail",
        WorkCancel = "work.cancel",
        ArtifactPublish = "artifact.publish",
        ApprovalGrantExecution = "approval.grant_execution",
        PolicyGrantCooperationOverride = "policy.grant_cooperation_override",
    }
);

impl CoreCommandKind {
    /// `#/$defs/coordinatorOnlyKind`: kinds whose authority derives from the current
    /// Coordinator lease, so the actor is an Agent carrying `coordinatorEpoch` (§7.2, §15.1).
    pub fn is_coordinator_only(self) -> bool {
        matches!(
            self,
            CoreCommandKind::MissionRenewCoordinator
                | CoreCommandKind::MissionSubmitForApproval
                | CoreCommandKind::MissionCreateChild
                | CoreCommandKind::MembershipGrantDelegation
                | CoreCommandKind::WorkAcceptResult
        )
    }

    /// `mission.create` and `mission.create_follow_up`: human-only, they name the Group being
    /// created and carry no role epochs because its Membership does not exist yet (§15.1).
    pub fn creates_group(self) -> bool {
        matches!(
            self,
            CoreCommandKind::MissionCreate | CoreCommandKind::MissionCreateFollowUp
        )
    }
}

/// The Organization-owned bootstrap Command that registers an Agent Card (§15.1).
pub const AGENT_CARD_REGISTER: &str = "ext.missionweaveprotocol.registry.agent_card_register";
/// The Organization-owned bootstrap Command that activates an Agent Session (§6.3, I-14).
pub const SESSION_OPEN: &str = "ext.missionweaveprotocol.identity.session_open";

/// `#/$defs/organizationScopedKind`: bootstrap kinds with no Group ID and no epochs (§15.1).
pub const ORGANIZATION_SCOPED_COMMAND_KINDS: [&str; 2] = [AGENT_CARD_REGISTER, SESSION_OPEN];

/// A Command `kind`: `anyOf` a core kind or an `ext.<organization>.<profile>.<name>` kind
/// defined by an Extension Profile (§18). The two alternatives are disjoint (no core kind
/// starts with `ext.`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CommandKind {
    Core(CoreCommandKind),
    Ext(ExtKind),
}

impl CommandKind {
    pub fn as_str(&self) -> &str {
        match self {
            CommandKind::Core(k) => k.as_str(),
            CommandKind::Ext(k) => k.as_str(),
        }
    }

    /// The core kind, if this is one.
    pub fn core(&self) -> Option<CoreCommandKind> {
        match self {
            CommandKind::Core(k) => Some(*k),
            CommandKind::Ext(_) => None,
        }
    }

    /// `#/$defs/organizationScopedKind`.
    pub fn is_organization_scoped(&self) -> bool {
        ORGANIZATION_SCOPED_COMMAND_KINDS.contains(&self.as_str())
    }

    /// `#/$defs/coordinatorOnlyKind` (only core kinds are Coordinator-only).
    pub fn is_coordinator_only(&self) -> bool {
        self.core()
            .is_some_and(CoreCommandKind::is_coordinator_only)
    }

    fn is(&self, k: CoreCommandKind) -> bool {
        self.core() == Some(k)
    }
}

impl std::fmt::Display for CommandKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromJson for CommandKind {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        if let Some(k) = CoreCommandKind::from_wire(s) {
            Ok(CommandKind::Core(k))
        } else if is_ext_kind(s) {
            Ok(CommandKind::Ext(ExtKind(s.to_owned())))
        } else {
            Err(cx.err(format!(
                "{s:?} is neither a core Command kind nor an ext.<organization>.<profile>.<name> \
                 kind (anyOf)"
            )))
        }
    }
}

impl ToJson for CommandKind {
    fn to_json(&self) -> Value {
        match self {
            CommandKind::Core(k) => Value::string(k.as_str()),
            CommandKind::Ext(k) => Value::string(k.as_str().to_owned()),
        }
    }
}

object!(
    /// The signed Command envelope (§15.1). Signed Document: protected time `issuedAt`,
    /// expected signer exactly `actor` (§6.4).
    pub struct Command {
        "protocolVersion" => protocol_version: req ProtocolVersion,
        /// Stable Action ID: `(actor ID, actionId)` is the idempotency key (§15.1).
        "actionId" => action_id: req Id,
        "actor" => actor: req Actor,
        /// Agent Session Epoch: agents only (§6.3).
        "sessionEpoch" => session_epoch: opt PosInt,
        "membershipEpoch" => membership_epoch: opt PosInt,
        /// Required when authority derives from the Coordinator lease (§7.2, §15.1).
        "coordinatorEpoch" => coordinator_epoch: opt PosInt,
        "groupId" => group_id: opt Id,
        "conversationId" => conversation_id: opt Id,
        "workItemId" => work_item_id: opt Id,
        /// Required when the Command uses a one-shot cooperation escalation (§15.1, semantic).
        "cooperationOverrideGrantId" => cooperation_override_grant_id: opt Id,
        "kind" => kind: req CommandKind,
        /// Optimistic concurrency (§15.3).
        "expectedRevision" => expected_revision: opt SafeInt,
        "correlationId" => correlation_id: req Id,
        "causedByEventId" => caused_by_event_id: opt Id,
        "issuedAt" => issued_at: req Timestamp,
        "payload" => payload: req Object,
        "extensions" => extensions: opt Extensions,
        "signature" => signature: req Signature,
    }
    check = check_command;
);

/// `allOf[0]`.
pub const RULE_TERMINATE_ACTOR: &str =
    "the mission.terminate rule: issued by an agent or service, never a human (§7.1, §15.1)";
/// `allOf[1]` `then`.
pub const RULE_AGENT: &str = "the agent Command rule (§6.3, §15.1)";
/// `allOf[1]` `else`.
pub const RULE_NO_SESSION: &str =
    "the rule that human and service Commands carry no Agent Session Epoch (§6.3)";
/// `allOf[2]`.
pub const RULE_SERVICE: &str =
    "the rule that service Commands carry no Membership or Coordinator Epoch (§15.1)";
/// `allOf[3]`.
pub const RULE_CORE_GROUP: &str = "the rule that core Command kinds are Group-scoped (§15.1)";
/// `allOf[4]`.
pub const RULE_HUMAN: &str =
    "the human Command rule (except mission.create and mission.create_follow_up) (§15.1)";
/// `allOf[5]` and `allOf[6]`.
pub const RULE_CREATES_GROUP: &str =
    "the mission.create / mission.create_follow_up rule: human actor, no role epochs (§15.1)";
/// `allOf[7]`.
pub const RULE_ORGANIZATION_SCOPED: &str = "the Organization-scoped bootstrap Command rule: service actor, no Group ID, no epochs \
     (§15.1)";
/// `allOf[8]`.
pub const RULE_COORDINATOR_ONLY: &str =
    "the Coordinator-only Command rule: agent actor with coordinatorEpoch (§7.2, §15.1)";
/// `allOf[9]`.
pub const RULE_AGENT_TERMINATE: &str = "the agent-issued mission.terminate rule (§15.1)";

/// Fails at `/<member>/type` when an `if … then: {properties: {<member>: {type: …}}}` rule
/// restricts the actor type and `ok` is false.
fn actor_type_rule(
    cx: &mut Cx,
    ok: bool,
    member: &str,
    actual: ActorType,
    want: &str,
    rule: &str,
) -> Result<(), SchemaError> {
    if ok {
        return Ok(());
    }
    cx.at(member.to_owned(), |cx| {
        cx.at("type", |cx| {
            Err(cx.err(format!(
                "actor type \"{actual}\" is not allowed by {rule}: it must be {want}"
            )))
        })
    })
}

/// The schema's `allOf` conditionals, in schema order. Each `if` tests members that are
/// already known valid (they parsed), so it applies exactly when its `const`/`enum` matches.
pub fn check_command(c: &Command, cx: &mut Cx) -> Result<(), SchemaError> {
    use CoreCommandKind as K;
    let actor = c.actor.actor_type;
    let (agent, human, service) = (
        actor == ActorType::Agent,
        actor == ActorType::Human,
        actor == ActorType::Service,
    );
    let has_group = c.group_id.is_some();
    let has_session = c.session_epoch.is_some();
    let has_membership = c.membership_epoch.is_some();
    let has_coordinator = c.coordinator_epoch.is_some();
    let terminate = c.kind.is(K::MissionTerminate);
    let creates_group = c.kind.core().is_some_and(K::creates_group);

    // allOf[0]: mission.terminate → actor.type ∈ {agent, service}.
    actor_type_rule(
        cx,
        !(terminate && human),
        "actor",
        actor,
        "\"agent\" or \"service\"",
        RULE_TERMINATE_ACTOR,
    )?;

    // allOf[1]: agent → groupId, sessionEpoch, membershipEpoch; else → no sessionEpoch.
    require_if(cx, agent, has_group, "groupId", RULE_AGENT)?;
    require_if(cx, agent, has_session, "sessionEpoch", RULE_AGENT)?;
    require_if(cx, agent, has_membership, "membershipEpoch", RULE_AGENT)?;
    forbid_if(cx, !agent, has_session, "sessionEpoch", RULE_NO_SESSION)?;

    // allOf[2]: service → no membershipEpoch, no coordinatorEpoch.
    forbid_if(cx, service, has_membership, "membershipEpoch", RULE_SERVICE)?;
    forbid_if(
        cx,
        service,
        has_coordinator,
        "coordinatorEpoch",
        RULE_SERVICE,
    )?;

    // allOf[3]: a core kind → groupId.
    require_if(
        cx,
        c.kind.core().is_some(),
        has_group,
        "groupId",
        RULE_CORE_GROUP,
    )?;

    // allOf[4]: human and kind ∉ {mission.create, mission.create_follow_up} (ext kinds
    // included) → groupId, membershipEpoch.
    let human_in_group = human && !creates_group;
    require_if(cx, human_in_group, has_group, "groupId", RULE_HUMAN)?;
    require_if(
        cx,
        human_in_group,
        has_membership,
        "membershipEpoch",
        RULE_HUMAN,
    )?;

    // allOf[5], allOf[6]: mission.create / mission.create_follow_up → humanActor, no
    // membershipEpoch, no coordinatorEpoch.
    actor_type_rule(
        cx,
        !creates_group || human,
        "actor",
        actor,
        "\"human\"",
        RULE_CREATES_GROUP,
    )?;
    forbid_if(
        cx,
        creates_group,
        has_membership,
        "membershipEpoch",
        RULE_CREATES_GROUP,
    )?;
    forbid_if(
        cx,
        creates_group,
        has_coordinator,
        "coordinatorEpoch",
        RULE_CREATES_GROUP,
    )?;

    // allOf[7]: Organization-scoped kinds → service actor, none of groupId and the epochs.
    let org = c.kind.is_organization_scoped();
    actor_type_rule(
        cx,
        !org || service,
        "actor",
        actor,
        "\"service\"",
        RULE_ORGANIZATION_SCOPED,
    )?;
    forbid_if(cx, org, has_group, "groupId", RULE_ORGANIZATION_SCOPED)?;
    forbid_if(
        cx,
        org,
        has_session,
        "sessionEpoch",
        RULE_ORGANIZATION_SCOPED,
    )?;
    forbid_if(
        cx,
        org,
        has_membership,
        "membershipEpoch",
        RULE_ORGANIZATION_SCOPED,
    )?;
    forbid_if(
        cx,
        org,
        has_coordinator,
        "coordinatorEpoch",
        RULE_ORGANIZATION_SCOPED,
    )?;

    // allOf[8]: Coordinator-only kinds → agentActor, coordinatorEpoch.
    let coordinator_only = c.kind.is_coordinator_only();
    actor_type_rule(
        cx,
        !coordinator_only || agent,
        "actor",
        actor,
        "\"agent\"",
        RULE_COORDINATOR_ONLY,
    )?;
    require_if(
        cx,
        coordinator_only,
        has_coordinator,
        "coordinatorEpoch",
        RULE_COORDINATOR_ONLY,
    )?;

    // allOf[9]: agent and mission.terminate → coordinatorEpoch.
    require_if(
        cx,
        agent && terminate,
        has_coordinator,
        "coordinatorEpoch",
        RULE_AGENT_TERMINATE,
    )?;

    Ok(())
}

/// Parses `v` as a [`Command`] and discards it (the conformance runner's schema stage).
pub fn validate(v: &Value, timestamp_profile: bool) -> Result<(), SchemaError> {
    super::from_value::<Command>(v, timestamp_profile).map(drop)
}

/// Test support: the official schemas compiled by an independent JSON Schema validator (`boon`,
/// Draft 2020-12, format assertion on), to cross-check the hand-written conditionals.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) mod oracle {
    use crate::json::Value;

    /// `^P(?!$)(?:[0-9]+D)?(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]+)?S)?)?$`
    /// without look-around: a day part, a non-empty time part, or both.
    const DURATION_WITHOUT_LOOKAROUND: &str = concat!(
        r"^P(?:[0-9]+D(?:T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]+)?S)?|[0-9]+M(?:[0-9]+(?:\.[0-9]+)?S)?",
        r"|[0-9]+(?:\.[0-9]+)?S))?|T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]+)?S)?",
        r"|[0-9]+M(?:[0-9]+(?:\.[0-9]+)?S)?|[0-9]+(?:\.[0-9]+)?S))$"
    );

    pub struct Oracle {
        schemas: boon::Schemas,
        index: boon::SchemaIndex,
    }

    impl Oracle {
        /// Registers every bundle schema by its `$id` and compiles `schemas/<schema_file>`.
        pub fn new(schema_file: &str) -> Oracle {
            let dir = crate::model::testkit::protocol_dir().join("schemas");
            let mut compiler = boon::Compiler::new();
            compiler.enable_format_assertions();
            let entries =
                std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            for entry in entries.flatten() {
                let path = entry.path();
                if !path.to_string_lossy().ends_with(".schema.json") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
                let mut json: serde_json::Value =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
                // `boon` compiles patterns with the `regex` crate, which has no look-around;
                // `common#/$defs/duration` is the one pattern that uses it. Swap in an
                // equivalent look-around-free spelling (in memory only).
                if let Some(p) = json.pointer_mut("/$defs/duration/pattern") {
                    *p = serde_json::Value::from(DURATION_WITHOUT_LOOKAROUND);
                }
                let id = json["$id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no $id"))
                    .to_owned();
                compiler
                    .add_resource(&id, json)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            let mut schemas = boon::Schemas::new();
            let url = format!("https://missionweaveprotocol.dev/schemas/0.1/{schema_file}");
            let index = compiler
                .compile(&url, &mut schemas)
                .unwrap_or_else(|e| panic!("{e}"));
            Oracle { schemas, index }
        }

        /// Whether the reference validator accepts `v`.
        pub fn accepts(&self, v: &Value) -> bool {
            let text = crate::json::to_string(v);
            let json: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
            self.schemas.validate(&json, self.index).is_ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::from_value;
    use crate::model::testkit::{assert_fails, cases, edit, load, mutate, vector};

    const SCHEMA: &str = "command.schema.json";

    fn parse(v: &Value) -> Result<Command, SchemaError> {
        from_value::<Command>(v, true)
    }

    fn ok(v: &Value) -> Command {
        parse(v).unwrap_or_else(|e| panic!("expected valid: {e}"))
    }

    /// The conformance vector `command.json`: an agent Coordinator-only Command.
    fn agent_cmd() -> Value {
        vector(SCHEMA, "valid/command.json")
    }

    /// The conformance vector of a human `mission.create`.
    fn human_create() -> Value {
        vector(SCHEMA, "valid/human-mission-create-command.json")
    }

    /// The conformance vector of the service `session_open` bootstrap Command.
    fn service_open() -> Value {
        vector(SCHEMA, "valid/service-session-open-command.json")
    }

    fn set(v: &Value, name: &str, value: Value) -> Value {
        mutate(v, |o| o.insert(name.to_owned(), value))
    }

    fn del(v: &Value, name: &str) -> Value {
        mutate(v, |o| {
            o.remove(name);
        })
    }

    fn kind(v: &Value, k: &str) -> Value {
        set(v, "kind", Value::from(k))
    }

    fn actor_type(v: &Value, t: &str) -> Value {
        edit(v, &["actor"], |o| o.insert("type", Value::from(t)))
    }

    fn epoch(n: u64) -> Value {
        Value::from(n)
    }

    #[test]
    fn kind_tables_match_the_schema() {
        assert_eq!(CoreCommandKind::ALL.len(), 32);
        let coordinator: Vec<_> = CoreCommandKind::ALL
            .iter()
            .filter(|k| k.is_coordinator_only())
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            coordinator,
            [
                "mission.renew_coordinator",
                "mission.submit_for_approval",
                "mission.create_child",
                "membership.grant_delegation",
                "work.accept_result"
            ]
        );
        // The enum lists, read from the schema itself.
        let schema = load(&format!("schemas/{SCHEMA}"));
        let list = |p: &str| -> Vec<String> {
            match schema.pointer(p) {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
                _ => panic!("no {p}"),
            }
        };
        let core: Vec<String> = CoreCommandKind::ALL
            .iter()
            .map(|k| k.as_str().to_owned())
            .collect();
        assert_eq!(core, list("/$defs/coreCommandKind/enum"));
        assert_eq!(coordinator, list("/$defs/coordinatorOnlyKind/enum"));
        assert_eq!(
            ORGANIZATION_SCOPED_COMMAND_KINDS.to_vec(),
            list("/$defs/organizationScopedKind/enum")
        );
        for k in CoreCommandKind::ALL {
            let parsed = from_value::<CommandKind>(&Value::from(k.as_str()), false);
            assert_eq!(parsed, Ok(CommandKind::Core(*k)));
        }
    }

    #[test]
    fn command_kind_any_of() {
        let k = |s: &str| from_value::<CommandKind>(&Value::from(s), false);
        assert!(matches!(
            k("ext.acme.review.request"),
            Ok(CommandKind::Ext(_))
        ));
        let org = k(SESSION_OPEN).expect("session_open");
        assert!(org.is_organization_scoped());
        assert!(!org.is_coordinator_only());
        assert!(
            k(AGENT_CARD_REGISTER)
                .expect("register")
                .is_organization_scoped()
        );
        assert!(
            k("mission.renew_coordinator")
                .expect("core")
                .is_coordinator_only()
        );
        for bad in [
            "mission.unknown",
            "ext.acme.two",
            "ext.Acme.review.x",
            "Mission.create",
            "",
        ] {
            assert_fails(k(bad), "", "neither a core Command kind");
        }
        assert_fails(
            from_value::<CommandKind>(&Value::from(3u64), false),
            "",
            "expected a string",
        );
        let long = format!("ext.acme.review.{}", "a".repeat(150));
        assert_fails(k(&long), "", "neither a core Command kind");
    }

    #[test]
    fn conformance_valid_vectors_parse() {
        let all = cases(SCHEMA);
        assert!(all.iter().filter(|c| c.valid).count() >= 4);
        for case in all.iter().filter(|c| c.valid) {
            let v = load(&case.instance);
            for profile in [false, true] {
                let c = from_value::<Command>(&v, profile)
                    .unwrap_or_else(|e| panic!("{}: {e}", case.name));
                // Round trip through the typed model.
                assert_eq!(from_value::<Command>(&c.to_json(), profile), Ok(c.clone()));
            }
        }
    }

    #[test]
    fn conformance_invalid_vectors_fail_for_the_expected_rule() {
        let expected: &[(&str, &str, &str)] = &[
            (
                "command-missing-signature.json",
                "",
                "missing required member \"signature\"",
            ),
            (
                "command-action-id-trailing-line-feed.json",
                "/actionId",
                "absolute RFC 3986 URI",
            ),
            (
                "command-action-id-relative-reference.json",
                "/actionId",
                "absolute RFC 3986 URI",
            ),
            (
                "command-action-id-iri-only.json",
                "/actionId",
                "absolute RFC 3986 URI",
            ),
            (
                "human-command-with-session-epoch.json",
                "/sessionEpoch",
                RULE_NO_SESSION,
            ),
            (
                "agent-command-missing-session-epoch.json",
                "",
                "\"sessionEpoch\", required by the agent Command rule",
            ),
            (
                "agent-command-missing-membership-epoch.json",
                "",
                "\"membershipEpoch\", required by the agent Command rule",
            ),
            (
                "coordinator-command-missing-coordinator-epoch.json",
                "",
                RULE_COORDINATOR_ONLY,
            ),
        ];
        let invalid: Vec<_> = cases(SCHEMA).into_iter().filter(|c| !c.valid).collect();
        assert_eq!(
            invalid.len(),
            expected.len(),
            "manifest has new invalid command cases"
        );
        for case in invalid {
            let (_, pointer, needle) = expected
                .iter()
                .find(|(f, _, _)| case.instance.ends_with(f))
                .unwrap_or_else(|| panic!("no expectation for {}", case.instance));
            let v = load(&case.instance);
            assert_fails(from_value::<Command>(&v, false), pointer, needle);
            assert_fails(from_value::<Command>(&v, true), pointer, needle);
        }
    }

    #[test]
    fn signed_document_vectors_parse_with_the_timestamp_profile() {
        for f in [
            "command.json",
            "command-alternate-json-serialization.json",
            "command-timestamp-fractional-precision.json",
        ] {
            let v = load(&format!("cryptography/vectors/signed-documents/valid/{f}"));
            parse(&v).unwrap_or_else(|e| panic!("{f}: {e}"));
            assert_eq!(validate(&v, true), Ok(()));
        }
    }

    #[test]
    fn schema_stage_crypto_vectors_fail() {
        let expected: &[(&str, &str, &str)] = &[
            ("command-leap-second.json", "/issuedAt", "leap seconds"),
            ("command-year-zero.json", "/issuedAt", "year 0000"),
            ("command-unknown-local-offset.json", "/issuedAt", "-00:00"),
            (
                "command-unsupported-algorithm.json",
                "/signature/algorithm",
                "must be \"Ed25519\"",
            ),
            (
                "command-padded-signature.json",
                "/signature/value",
                "not unpadded base64url",
            ),
        ];
        for (f, pointer, needle) in expected {
            let v = load(&format!(
                "cryptography/vectors/signed-documents/invalid/{f}"
            ));
            assert_fails(parse(&v), pointer, needle);
            assert!(validate(&v, true).is_err(), "{f}");
        }
        // The three timestamp-profile failures are profile-only: generic RFC 3339 accepts them
        // (leap second and -00:00) or rejects them only by the profile (year 0000).
        let leap = load("cryptography/vectors/signed-documents/invalid/command-leap-second.json");
        assert_eq!(validate(&leap, false), Ok(()));
        let offset =
            load("cryptography/vectors/signed-documents/invalid/command-unknown-local-offset.json");
        assert_eq!(validate(&offset, false), Ok(()));
    }

    #[test]
    fn closed_object_and_member_types() {
        let v = agent_cmd();
        assert_fails(
            parse(&set(&v, "permissions", Value::Null)),
            "",
            "unknown member \"permissions\"",
        );
        assert_fails(
            parse(&set(&v, "protocolVersion", Value::from("0.2"))),
            "/protocolVersion",
            "must be",
        );
        assert_fails(
            parse(&set(&v, "sessionEpoch", epoch(0))),
            "/sessionEpoch",
            "outside 1..=",
        );
        assert_fails(
            parse(&set(&v, "expectedRevision", Value::from("4"))),
            "/expectedRevision",
            "expected a number",
        );
        assert_fails(
            parse(&set(&v, "payload", Value::Array(vec![]))),
            "/payload",
            "expected an object",
        );
        assert_fails(
            parse(&set(&v, "issuedAt", Value::from("2026-07-15"))),
            "/issuedAt",
            "RFC 3339",
        );
        assert_fails(
            parse(&set(&v, "kind", Value::from("mission.nope"))),
            "/kind",
            "neither",
        );
        assert_fails(
            parse(&edit(&v, &["actor"], |o| {
                o.insert("name", Value::from("x"))
            })),
            "/actor",
            "unknown member \"name\"",
        );
        for member in [
            "protocolVersion",
            "actionId",
            "actor",
            "kind",
            "correlationId",
            "issuedAt",
            "payload",
        ] {
            assert_fails(
                parse(&del(&v, member)),
                "",
                &format!("missing required member \"{member}\""),
            );
        }
        // expectedRevision is a safeInteger: 0 is allowed.
        ok(&set(&v, "expectedRevision", epoch(0)));
    }

    // allOf[0]: mission.terminate is never human-issued.
    #[test]
    fn rule_terminate_actor() {
        let agent = set(
            &kind(&agent_cmd(), "mission.terminate"),
            "coordinatorEpoch",
            epoch(4),
        );
        ok(&agent);
        let service = service_open();
        let service = set(
            &kind(&service, "mission.terminate"),
            "groupId",
            Value::from("urn:g:1"),
        );
        ok(&service);
        let human = actor_type(
            &del(&del(&agent, "sessionEpoch"), "coordinatorEpoch"),
            "human",
        );
        assert_fails(parse(&human), "/actor/type", RULE_TERMINATE_ACTOR);
    }

    // allOf[1] then: an agent Command carries groupId, sessionEpoch, membershipEpoch.
    #[test]
    fn rule_agent_epochs() {
        let v = kind(&del(&agent_cmd(), "coordinatorEpoch"), "message.post");
        ok(&v);
        for m in ["groupId", "sessionEpoch", "membershipEpoch"] {
            let needle = format!("missing member \"{m}\", required by {RULE_AGENT}");
            assert_fails(parse(&del(&v, m)), "", &needle);
        }
        // Also for ext kinds, which are not Group-scoped by allOf[3].
        let ext = kind(&v, "ext.acme.review.request");
        ok(&ext);
        assert_fails(parse(&del(&ext, "groupId")), "", RULE_AGENT);
    }

    // allOf[1] else: human and service Commands carry no sessionEpoch.
    #[test]
    fn rule_no_session_epoch() {
        let human = human_create();
        ok(&human);
        assert_fails(
            parse(&set(&human, "sessionEpoch", epoch(1))),
            "/sessionEpoch",
            RULE_NO_SESSION,
        );
        let service = set(
            &kind(&service_open(), "mission.cancel"),
            "groupId",
            Value::from("urn:g:1"),
        );
        ok(&service);
        assert_fails(
            parse(&set(&service, "sessionEpoch", epoch(1))),
            "/sessionEpoch",
            RULE_NO_SESSION,
        );
    }

    // allOf[2]: service Commands carry no membershipEpoch or coordinatorEpoch.
    #[test]
    fn rule_service_epochs() {
        let service = set(
            &kind(&service_open(), "mission.cancel"),
            "groupId",
            Value::from("urn:g:1"),
        );
        ok(&service);
        assert_fails(
            parse(&set(&service, "membershipEpoch", epoch(2))),
            "/membershipEpoch",
            RULE_SERVICE,
        );
        assert_fails(
            parse(&set(&service, "coordinatorEpoch", epoch(2))),
            "/coordinatorEpoch",
            RULE_SERVICE,
        );
    }

    // allOf[3]: every core kind is Group-scoped.
    #[test]
    fn rule_core_kind_needs_group() {
        let service = kind(&service_open(), "mission.cancel");
        assert_fails(parse(&service), "", RULE_CORE_GROUP);
        ok(&set(&service, "groupId", Value::from("urn:g:1")));
        // A non-bootstrap ext kind from a service needs no Group.
        ok(&kind(
            &service_open(),
            "ext.missionweaveprotocol.core.resource_usage_record",
        ));
    }

    // allOf[4]: a human Command outside Group creation carries groupId and membershipEpoch.
    #[test]
    fn rule_human_in_group() {
        let human = set(
            &kind(&human_create(), "mission.approve"),
            "membershipEpoch",
            epoch(1),
        );
        ok(&human);
        assert_fails(parse(&del(&human, "membershipEpoch")), "", RULE_HUMAN);
        // Ext kinds fall under the rule too (the `not enum` matches them) …
        let ext = kind(&human, "ext.acme.review.request");
        ok(&ext);
        assert_fails(parse(&del(&ext, "groupId")), "", RULE_HUMAN);
        assert_fails(parse(&del(&ext, "membershipEpoch")), "", RULE_HUMAN);
        // … but mission.create is exempt.
        ok(&human_create());
    }

    // allOf[5] and allOf[6]: Group creation is human-only and carries no role epochs.
    #[test]
    fn rule_creates_group() {
        for k in ["mission.create", "mission.create_follow_up"] {
            let v = kind(&human_create(), k);
            ok(&v);
            assert_fails(
                parse(&set(&v, "membershipEpoch", epoch(1))),
                "/membershipEpoch",
                RULE_CREATES_GROUP,
            );
            assert_fails(
                parse(&set(&v, "coordinatorEpoch", epoch(1))),
                "/coordinatorEpoch",
                RULE_CREATES_GROUP,
            );
            // A service actor passes allOf[1..4] with this shape, so only this rule objects.
            assert_fails(
                parse(&actor_type(&v, "service")),
                "/actor/type",
                RULE_CREATES_GROUP,
            );
        }
        // An agent with its epochs passes allOf[1] but still fails this rule.
        let agent = actor_type(&human_create(), "agent");
        let agent = set(
            &set(&agent, "sessionEpoch", epoch(1)),
            "membershipEpoch",
            epoch(1),
        );
        assert_fails(parse(&agent), "/actor/type", RULE_CREATES_GROUP);
    }

    // allOf[7]: the Organization-scoped bootstrap kinds.
    #[test]
    fn rule_organization_scoped() {
        for k in ORGANIZATION_SCOPED_COMMAND_KINDS {
            let v = kind(&service_open(), k);
            ok(&v);
            assert_fails(
                parse(&set(&v, "groupId", Value::from("urn:g:1"))),
                "/groupId",
                RULE_ORGANIZATION_SCOPED,
            );
            // Human actor: only this rule applies once groupId/membershipEpoch are present.
            let human = actor_type(&v, "human");
            assert_fails(parse(&human), "", RULE_HUMAN);
            let human = set(
                &set(&human, "groupId", Value::from("urn:g:1")),
                "membershipEpoch",
                epoch(1),
            );
            assert_fails(parse(&human), "/actor/type", RULE_ORGANIZATION_SCOPED);
            let agent = actor_type(&v, "agent");
            let agent = set(
                &set(&agent, "sessionEpoch", epoch(1)),
                "groupId",
                Value::from("urn:g:1"),
            );
            let agent = set(&agent, "membershipEpoch", epoch(1));
            assert_fails(parse(&agent), "/actor/type", RULE_ORGANIZATION_SCOPED);
        }
    }

    // allOf[8]: Coordinator-only kinds need an agent with coordinatorEpoch.
    #[test]
    fn rule_coordinator_only() {
        for k in CoreCommandKind::ALL
            .iter()
            .filter(|k| k.is_coordinator_only())
        {
            let v = kind(&agent_cmd(), k.as_str());
            ok(&v);
            assert_fails(
                parse(&del(&v, "coordinatorEpoch")),
                "",
                RULE_COORDINATOR_ONLY,
            );
            let human = actor_type(&del(&del(&v, "sessionEpoch"), "coordinatorEpoch"), "human");
            assert_fails(parse(&human), "/actor/type", RULE_COORDINATOR_ONLY);
        }
        // Not Coordinator-only: no coordinatorEpoch needed.
        ok(&kind(&del(&agent_cmd(), "coordinatorEpoch"), "work.start"));
    }

    // allOf[9]: an agent-issued mission.terminate carries coordinatorEpoch.
    #[test]
    fn rule_agent_terminate() {
        let v = kind(&agent_cmd(), "mission.terminate");
        ok(&v);
        assert_fails(
            parse(&del(&v, "coordinatorEpoch")),
            "",
            RULE_AGENT_TERMINATE,
        );
    }

    /// The whole epoch matrix (actor type × every core kind, both bootstrap kinds and another
    /// ext kind × presence of groupId and the three epochs) agrees with a JSON Schema validator.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn epoch_matrix_agrees_with_a_json_schema_validator() {
        let oracle = super::oracle::Oracle::new(SCHEMA);
        let base = mutate(&agent_cmd(), |o| {
            for m in [
                "groupId",
                "sessionEpoch",
                "membershipEpoch",
                "coordinatorEpoch",
            ] {
                o.remove(m);
            }
        });
        let mut kinds: Vec<&str> = CoreCommandKind::ALL.iter().map(|k| k.as_str()).collect();
        kinds.extend(ORGANIZATION_SCOPED_COMMAND_KINDS);
        kinds.push("ext.missionweaveprotocol.core.group_archive");
        let (mut accepted, mut rejected) = (0, 0);
        for t in ["agent", "human", "service"] {
            for k in &kinds {
                for mask in 0..16u32 {
                    let v = mutate(&kind(&actor_type(&base, t), k), |o| {
                        if mask & 1 != 0 {
                            o.insert("groupId", Value::from("urn:missionweaveprotocol:group:g"));
                        }
                        if mask & 2 != 0 {
                            o.insert("sessionEpoch", Value::from(2u64));
                        }
                        if mask & 4 != 0 {
                            o.insert("membershipEpoch", Value::from(3u64));
                        }
                        if mask & 8 != 0 {
                            o.insert("coordinatorEpoch", Value::from(4u64));
                        }
                    });
                    let ours = validate(&v, true);
                    assert_eq!(
                        ours.is_ok(),
                        oracle.accepts(&v),
                        "{t} {k} mask {mask:04b}: ours {ours:?}"
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
            accepted > 50 && rejected > 500,
            "{accepted} accepted, {rejected} rejected"
        );
    }
}
