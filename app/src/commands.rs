//! The human's decisions as signed Commands (issue 13, write side). Everything protocol is
//! `wasm-core`'s: the facts a Command binds (Mission revision, submitted Artifact hashes,
//! Ownership Epoch, Membership Epoch) are read from the replayed `State`, who may decide is the
//! inbox's [`ViewerDecision`] (the authority's own guards), the document is canonicalized and
//! signed by `crypto::sign_document_with` (ed25519-dalek), and receipts are verified by the six
//! stages of §6.4. Nothing here touches the network or a clock: the caller passes the time and
//! random bytes, so the same code runs in the browser and in the native tests.
//!
//! - A human Command carries the Membership Epoch of its Group and never a Session Epoch
//!   (§15.1, H-1).
//! - Approval is compare-and-set (§15.3, H-6): `mission.*` decisions send `expectedRevision`
//!   (the Mission's revision) besides `missionRevision` (the submitted one), where the reference
//!   ignores it (payloads.md §6.7); an Execution Approval is bound by its Ownership Epoch; a
//!   `work.cancel` sends the WorkItem's revision.
//! - MissionWeaveProtocol 0.1 has no deny Command (§15.1's kinds; spec-checklist §14.7: the
//!   `denied` decision "has no transition"): an execution gate is refused by cancelling the
//!   WorkItem (`work.cancel`), a final approval by `mission.request_changes` or `mission.cancel`,
//!   and an override request by not granting it (nothing is signed; [`Decision::is_signed`]).

use crate::signing::{SigningSummary, SummaryError, summarize};
use wasm_core::authority::Micros;
use wasm_core::authority::state::State;
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::registry::ValidatedRegistry;
use wasm_core::crypto::{DocumentKind, sign_document_with, verify::verify_value};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::common::{Actor, ActorType};
use wasm_core::model::error::{ErrorCode, ProtocolError};
use wasm_core::model::membership::MembershipState;
use wasm_core::views::approvals::{ApprovalItem, ApprovalKind, ViewerDecision};

/// The acceptance policy version a final Approval names (payloads.md §6.7: a free string; the
/// reference's HumanControl uses this one).
pub const ACCEPTANCE_POLICY_VERSION: &str = "1.0.0";
/// `feedback` and `reason` are ids of at most 512 characters (payloads.md §6.8).
pub const MAX_TEXT: usize = 512;
/// An Execution Approval's default lifetime (payloads.md §6.31 default).
pub const DEFAULT_EXECUTION_SECONDS: u64 = 300;
/// A Cooperation Override Grant's default lifetime.
pub const DEFAULT_OVERRIDE_SECONDS: u64 = 3_600;

/// The signing human: a Registry key bound to a human Principal (spec-checklist §13.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Author {
    pub principal_id: String,
    pub key_id: String,
}

impl Author {
    pub fn actor(&self) -> Actor {
        Actor::new(ActorType::Human, &self.principal_id)
    }
}

/// What the human decided about one inbox item.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// `mission.approve` at the submitted revision and Artifact hashes.
    ApproveMission { comments: Option<String> },
    /// `mission.request_changes` with the human's feedback.
    RequestChanges { feedback: String },
    /// `mission.cancel`.
    CancelMission { reason: String },
    /// `approval.grant_execution` to the WorkItem's current owner.
    GrantExecution {
        operations: Vec<String>,
        resources: Vec<String>,
        expires_in_seconds: u64,
        comments: Option<String>,
    },
    /// `work.cancel`: the only way 0.1 has to refuse an execution gate.
    CancelWork { reason: String },
    /// `policy.grant_cooperation_override` for the rejected Command's exact Action ID.
    GrantOverride {
        reason: String,
        expires_in_seconds: u64,
    },
    /// Declining an override request: 0.1 has no Command for it, nothing is signed, and the
    /// authority keeps refusing the Command (`RATE_LIMITED`).
    DeclineOverride,
}

impl Decision {
    /// Whether this decision is a signed Command (declining an override is not).
    pub fn is_signed(&self) -> bool {
        !matches!(self, Decision::DeclineOverride)
    }
}

/// Why no Command was built.
#[derive(Clone, Debug, PartialEq)]
pub enum BuildError {
    /// The viewer may not decide this item (self-approval, not admitted, no viewer): the
    /// console does not offer it.
    NotOffered(ViewerDecision),
    /// The decision does not apply to this kind of item.
    NotApplicable,
    /// The item is gone from the current state (decided meanwhile, or time travel).
    Gone,
    /// The author holds no Membership in the Group, so there is no epoch to carry.
    NoMembership(String),
    /// A required text (feedback, reason) is empty.
    EmptyText,
    /// A text is longer than [`MAX_TEXT`].
    TooLong,
    /// An Execution Approval needs at least one operation.
    NoOperations,
    /// No key is unlocked: nothing can be signed.
    Locked,
    /// Signing failed (an invalid timestamp; never expected).
    Sign(String),
    Summary(SummaryError),
}

/// The fresh parts of a Command: its Action ID and the instant it is issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fresh {
    pub action_id: String,
    pub issued_at: Micros,
}

/// A lowercase `urn:uuid:` (version 4) from 16 random bytes (H-3: absolute, lowercase).
pub fn uuid_urn(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = wasm_core::encoding::hex(&b);
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

impl Fresh {
    pub fn new(random: [u8; 16], issued_at: Micros) -> Fresh {
        Fresh {
            action_id: uuid_urn(random),
            issued_at,
        }
    }

    /// An object id derived from the Action ID (one Approval or Grant per Command).
    fn object_id(&self, what: &str) -> String {
        let tail = self
            .action_id
            .strip_prefix("urn:uuid:")
            .unwrap_or(&self.action_id);
        format!("urn:missionweaveprotocol:{what}:{tail}")
    }
}

/// A stable key of an inbox item across snapshots (the card keeps its typed text while the
/// item stays the same decision).
pub fn item_key(i: &ApprovalItem) -> String {
    match &i.kind {
        ApprovalKind::MissionFinal { revision, .. } => format!("final {} {revision}", i.mission_id),
        ApprovalKind::ExecutionGate {
            work_item_id,
            ownership_epoch,
            ..
        } => format!("gate {work_item_id} {ownership_epoch}"),
        ApprovalKind::CooperationOverride {
            target_action_id, ..
        } => format!("override {target_action_id}"),
        ApprovalKind::BudgetEscalation { action_id, .. } => format!("budget {action_id}"),
    }
}

/// The default lifetime of an Execution Approval at `now`: [`DEFAULT_EXECUTION_SECONDS`], cut
/// to end before the owner's ownership lease does (payloads.md §6.31: `now + expiresInSeconds ≤
/// ownershipLeaseExpiresAt`).
pub fn execution_seconds(item: &ApprovalItem, now: Micros) -> u64 {
    match &item.kind {
        ApprovalKind::ExecutionGate {
            ownership_lease_expires_at: Some(until),
            ..
        } => {
            let left = (until.0 - now.0) / 1_000_000 - 1;
            u64::try_from(left)
                .unwrap_or(1)
                .clamp(1, DEFAULT_EXECUTION_SECONDS)
        }
        _ => DEFAULT_EXECUTION_SECONDS,
    }
}

/// An unsigned Command, ready to be summarized and signed.
#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    pub kind: String,
    pub action_id: String,
    pub group_id: String,
    pub mission_id: String,
    /// The Command document without `signature`.
    pub document: Value,
}

impl Draft {
    /// What the signature will cover (the canonical JSON is the signed bytes).
    pub fn summary(&self) -> Result<SigningSummary, BuildError> {
        summarize(&self.document).map_err(BuildError::Summary)
    }
}

fn text(t: &str) -> Result<String, BuildError> {
    let t = t.trim();
    if t.is_empty() {
        return Err(BuildError::EmptyText);
    }
    if t.chars().count() > MAX_TEXT {
        return Err(BuildError::TooLong);
    }
    Ok(t.to_owned())
}

fn opt_text(t: &Option<String>) -> Result<Option<String>, BuildError> {
    match t.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) => text(t).map(Some),
    }
}

fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::string(s.clone())).collect())
}

/// Builds the Command for `decision` on `item`, as `author`, from the current `state`.
pub fn draft(
    state: &State,
    item: &ApprovalItem,
    author: &Author,
    decision: &Decision,
    fresh: &Fresh,
) -> Result<Draft, BuildError> {
    if item.viewer != ViewerDecision::MayApprove {
        return Err(BuildError::NotOffered(item.viewer.clone()));
    }
    let mission = state
        .missions
        .get(&item.mission_id)
        .ok_or(BuildError::Gone)?;
    let membership = state
        .membership(&item.group_id, &author.principal_id)
        .filter(|m| m.status != MembershipState::Ended)
        .ok_or_else(|| BuildError::NoMembership(item.group_id.clone()))?;
    let mut p = Object::new();
    let mut expected_revision = None;
    let kind = match (&item.kind, decision) {
        (
            ApprovalKind::MissionFinal {
                revision,
                artifact_hashes,
                ..
            },
            Decision::ApproveMission { comments },
        ) => {
            if mission.status != wasm_core::views::MissionState::AwaitingApproval {
                return Err(BuildError::Gone);
            }
            p.insert("approvalId", Value::string(fresh.object_id("approval")));
            p.insert("missionRevision", Value::from(*revision));
            p.insert("artifactHashes", strings(artifact_hashes));
            p.insert(
                "acceptancePolicyVersion",
                Value::string(ACCEPTANCE_POLICY_VERSION),
            );
            if let Some(c) = opt_text(comments)? {
                p.insert("comments", Value::string(c));
            }
            expected_revision = Some(mission.revision);
            "mission.approve"
        }
        (ApprovalKind::MissionFinal { revision, .. }, Decision::RequestChanges { feedback }) => {
            if mission.status != wasm_core::views::MissionState::AwaitingApproval {
                return Err(BuildError::Gone);
            }
            p.insert("missionRevision", Value::from(*revision));
            p.insert("feedback", Value::string(text(feedback)?));
            expected_revision = Some(mission.revision);
            "mission.request_changes"
        }
        (
            ApprovalKind::MissionFinal { .. } | ApprovalKind::BudgetEscalation { .. },
            Decision::CancelMission { reason },
        ) => {
            p.insert("reason", Value::string(text(reason)?));
            expected_revision = Some(mission.revision);
            "mission.cancel"
        }
        (
            ApprovalKind::ExecutionGate {
                work_item_id,
                ownership_epoch,
                ..
            },
            Decision::GrantExecution {
                operations,
                resources,
                expires_in_seconds,
                comments,
            },
        ) => {
            if operations.is_empty() {
                return Err(BuildError::NoOperations);
            }
            p.insert("approvalId", Value::string(fresh.object_id("approval")));
            p.insert("workItemId", Value::string(work_item_id.clone()));
            p.insert("ownershipEpoch", Value::from(*ownership_epoch));
            p.insert("operations", strings(operations));
            p.insert("resources", strings(resources));
            p.insert("expiresInSeconds", Value::from(*expires_in_seconds));
            if let Some(c) = opt_text(comments)? {
                p.insert("comments", Value::string(c));
            }
            "approval.grant_execution"
        }
        (ApprovalKind::ExecutionGate { work_item_id, .. }, Decision::CancelWork { reason })
        | (
            ApprovalKind::BudgetEscalation {
                work_item_id: Some(work_item_id),
                ..
            },
            Decision::CancelWork { reason },
        ) => {
            let w = state.work_items.get(work_item_id).ok_or(BuildError::Gone)?;
            p.insert("workItemId", Value::string(work_item_id.clone()));
            p.insert("reason", Value::string(text(reason)?));
            expected_revision = Some(w.revision);
            "work.cancel"
        }
        (
            ApprovalKind::CooperationOverride {
                policy,
                target_command_kind,
                target_action_id,
            },
            Decision::GrantOverride {
                reason,
                expires_in_seconds,
            },
        ) => {
            let beneficiary = item.requested_by.as_ref().ok_or(BuildError::Gone)?;
            // No later than the Mission deadline (payloads.md §6.32).
            let expires = fresh
                .issued_at
                .plus_seconds(*expires_in_seconds)
                .min(mission.deadline);
            p.insert("grantId", Value::string(fresh.object_id("grant")));
            p.insert("policyName", Value::string(policy.clone()));
            p.insert("beneficiary", beneficiary.to_json());
            p.insert(
                "targetCommandKind",
                Value::string(target_command_kind.clone()),
            );
            p.insert("targetActionId", Value::string(target_action_id.clone()));
            p.insert("reason", Value::string(text(reason)?));
            p.insert("expiresAt", Value::string(expires.format_whole_seconds()));
            expected_revision = Some(mission.revision);
            "policy.grant_cooperation_override"
        }
        _ => return Err(BuildError::NotApplicable),
    };
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("actionId", Value::string(fresh.action_id.clone()));
    o.insert("actor", author.actor().to_json());
    // Humans carry their Membership Epoch, never a Session Epoch (§15.1, H-1).
    o.insert("membershipEpoch", Value::from(membership.epoch));
    o.insert("groupId", Value::string(item.group_id.clone()));
    o.insert("kind", Value::string(kind));
    if let Some(r) = expected_revision {
        o.insert("expectedRevision", Value::from(r));
    }
    o.insert("correlationId", Value::string(fresh.action_id.clone()));
    // `issuedAt` doubles as `signature.createdAt` (checklist §13.2: byte-identical, `Z`).
    o.insert(
        "issuedAt",
        Value::string(fresh.issued_at.format_whole_seconds()),
    );
    o.insert("payload", Value::Object(p));
    Ok(Draft {
        kind: kind.to_owned(),
        action_id: fresh.action_id.clone(),
        group_id: item.group_id.clone(),
        mission_id: item.mission_id.clone(),
        document: Value::Object(o),
    })
}

/// A signed Command, kept byte for byte until its outcome (H-3: a retry is byte-identical).
#[derive(Clone, Debug, PartialEq)]
pub struct SignedCommand {
    pub kind: String,
    pub action_id: String,
    pub group_id: String,
    pub mission_id: String,
    /// The wire text (sent unchanged over the socket and over HTTP).
    pub text: String,
    /// `sha256:` of the signed bytes.
    pub signing_hash: String,
    /// `signature.value`: the authority stores it as the Approval's or Grant's signature.
    pub signature_value: String,
}

/// Signs `draft` with the unlocked key (ed25519-dalek, through wasm-core).
pub fn sign(draft: Draft, author: &Author, signer: &Signer) -> Result<SignedCommand, BuildError> {
    let mut doc = draft.document;
    let signing_hash = sign_document_with(&mut doc, DocumentKind::Command, &author.key_id, signer)
        .map_err(|e| BuildError::Sign(e.to_string()))?;
    let signature_value = doc
        .pointer("/signature/value")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(SignedCommand {
        kind: draft.kind,
        action_id: draft.action_id,
        group_id: draft.group_id,
        mission_id: draft.mission_id,
        text: json::to_string(&doc),
        signing_hash,
        signature_value,
    })
}

/// What the authority answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The Command's Events (an exact retry: the original ones, `duplicate`).
    Accepted { events: Vec<Value>, duplicate: bool },
    /// The wire error (§19).
    Refused(Box<ProtocolError>),
}

/// Reads the answer of `POST /api/commands` (`{"status", "events"}` or the error document).
pub fn http_outcome(status: u16, body: &str) -> Result<Outcome, String> {
    let v = json::parse(body.as_bytes()).map_err(|e| format!("HTTP {status}: {e}"))?;
    if status == 200 {
        let duplicate = v.pointer("/status").and_then(Value::as_str) == Some("duplicate");
        return match v.pointer("/events") {
            Some(Value::Array(events)) => Ok(Outcome::Accepted {
                events: events.clone(),
                duplicate,
            }),
            _ => Err("HTTP 200 without events".into()),
        };
    }
    wasm_core::model::from_value::<ProtocolError>(&v, false)
        .map(|e| Outcome::Refused(Box::new(e)))
        .map_err(|e| format!("HTTP {status}: not an error document: {e}"))
}

/// One Event of a receipt, verified (§6.4) in this browser.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiptEvent {
    pub event_id: String,
    pub kind: String,
    pub group_id: Option<String>,
    pub sequence: Option<u64>,
    pub signing_hash: String,
}

/// The stored Approval (or Grant) of an accepted decision, checked again.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredDecision {
    /// `approval` or `cooperationOverrideGrant` (the Event payload member).
    pub member: &'static str,
    pub id: String,
    /// Its `signature` is this Command's signature value…
    pub signature: String,
    /// …which verifies, with the author's Registry key, over the Command's canonical form:
    /// the Command's signing hash.
    pub command_signing_hash: String,
}

/// An accepted Command, verified: its Events and the stored decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Receipt {
    pub action_id: String,
    pub events: Vec<ReceiptEvent>,
    pub stored: Option<StoredDecision>,
}

/// Why a receipt is not trusted.
#[derive(Clone, Debug, PartialEq)]
pub enum ReceiptError {
    /// No Event.
    Empty,
    /// An Event fails verification (its wire code and reason).
    Event(ErrorCode, String),
    /// An Event was caused by another Command.
    NotOurs(String),
    /// The stored Approval or Grant does not carry this Command's signature.
    SignatureMismatch,
    /// The Command itself does not verify against the Registry.
    Command(ErrorCode, String),
}

/// Verifies the Events that answer `cmd` (six stages, Group Authority key) and the stored
/// Approval or Grant they carry: its `signature` must be `cmd`'s, and `cmd` must verify with
/// the author's Registry key (§6.4), so the stored decision is the one the human signed.
pub fn verify_receipt(
    cmd: &SignedCommand,
    events: &[Value],
    registry: &ValidatedRegistry,
) -> Result<Receipt, ReceiptError> {
    if events.is_empty() {
        return Err(ReceiptError::Empty);
    }
    let mut out = Vec::new();
    let mut stored = None;
    for e in events {
        let v = verify_value(e.clone(), DocumentKind::Event, registry)
            .map_err(|x| ReceiptError::Event(x.wire_code(), x.to_string()))?;
        let s = |p: &str| e.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let event_id = s("/eventId").unwrap_or_default();
        if s("/cause/id").as_deref() != Some(cmd.action_id.as_str()) {
            return Err(ReceiptError::NotOurs(event_id));
        }
        for member in ["approval", "cooperationOverrideGrant"] {
            if let Some(Value::Object(a)) = e.pointer(&format!("/payload/{member}")) {
                let signature = a
                    .get("signature")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if signature != cmd.signature_value {
                    return Err(ReceiptError::SignatureMismatch);
                }
                let command = json::parse(cmd.text.as_bytes()).map_err(|x| {
                    ReceiptError::Command(ErrorCode::SchemaValidationFailed, x.to_string())
                })?;
                let checked = verify_value(command, DocumentKind::Command, registry)
                    .map_err(|x| ReceiptError::Command(x.wire_code(), x.to_string()))?;
                stored = Some(StoredDecision {
                    member,
                    id: a
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    signature,
                    command_signing_hash: checked.signing_hash,
                });
            }
        }
        out.push(ReceiptEvent {
            event_id,
            kind: s("/kind").unwrap_or_default(),
            group_id: s("/groupId"),
            sequence: e.pointer("/sequence").and_then(|n| match n {
                Value::Number(n) => n.as_safe_u64(),
                _ => None,
            }),
            signing_hash: v.signing_hash,
        });
    }
    Ok(Receipt {
        action_id: cmd.action_id.clone(),
        events: out,
        stored,
    })
}

/// The refusal as the views keep it (`SeenRejection`: the inbox and the ledger read them).
pub fn seen_rejection(
    cmd: &SignedCommand,
    author: &Author,
    error: &ProtocolError,
    at: Micros,
) -> wasm_core::views::SeenRejection {
    let mut rejection = wasm_core::authority::Rejection::new(error.code, error.message.0.clone());
    if let Some(d) = &error.details {
        rejection.details = d.clone();
    }
    let work_item_id = json::parse(cmd.text.as_bytes()).ok().and_then(|v| {
        v.pointer("/payload/workItemId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    wasm_core::views::SeenRejection {
        at,
        actor: author.actor(),
        command_kind: cmd.kind.clone(),
        action_id: cmd.action_id.clone(),
        group_id: Some(cmd.group_id.clone()),
        work_item_id,
        rejection,
    }
}

/// A root Mission the server's demo proposes to the Organization's humans (`GET
/// /api/demo/proposals`, a signed read): `mission.create` is human-only (§7.1), so in an
/// Organization of one's own the demo's Agents wait for a person to create their Missions.
#[derive(Clone, Debug, PartialEq)]
pub struct MissionProposal {
    pub mission_id: String,
    pub group_id: String,
    pub title: String,
    pub objective: String,
    pub coordinator_id: String,
    pub deadline: String,
    /// The `mission.create` payload, signed exactly as proposed (the summary shows it).
    pub payload: Value,
}

/// The proposals of a `GET /api/demo/proposals` answer; `Ok(empty)` when the server runs no
/// such demo (404). A proposal that is not a well-formed root `mission.create` for its own
/// Group is left out: the console signs nothing it cannot describe.
pub fn proposals_of(status: u16, body: &[u8]) -> Result<Vec<MissionProposal>, String> {
    if status == 404 {
        return Ok(Vec::new());
    }
    if status != 200 {
        return Err(crate::web::http_error(status, body));
    }
    let v = json::parse(body).map_err(|e| e.to_string())?;
    let Some(Value::Array(list)) = v.pointer("/proposals") else {
        return Err("no \"proposals\" list".to_owned());
    };
    Ok(list.iter().filter_map(proposal).collect())
}

fn proposal(p: &Value) -> Option<MissionProposal> {
    let s = |v: &Value, k: &str| v.pointer(k).and_then(Value::as_str).map(str::to_owned);
    let payload = p.pointer("/payload")?.clone();
    let group_id = s(p, "/groupId")?;
    let mission_id = s(p, "/missionId")?;
    // The payload names the same Mission and Group, and is a root creation (no follow-up).
    if s(&payload, "/groupId")? != group_id
        || s(&payload, "/missionId")? != mission_id
        || payload.pointer("/followUpOfMissionId").is_some()
    {
        return None;
    }
    Some(MissionProposal {
        title: s(&payload, "/title")?,
        objective: s(&payload, "/objective")?,
        coordinator_id: s(&payload, "/coordinatorId")?,
        deadline: s(&payload, "/deadline")?,
        mission_id,
        group_id,
        payload,
    })
}

/// The human's `mission.create` of a proposal: the envelope of a root creation (the Group
/// being created; no Session, Membership or Coordinator Epoch, I-16) around the proposed
/// payload.
pub fn create_mission(p: &MissionProposal, author: &Author, fresh: &Fresh) -> Draft {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("actionId", Value::string(fresh.action_id.clone()));
    o.insert("actor", author.actor().to_json());
    o.insert("groupId", Value::string(p.group_id.clone()));
    o.insert("kind", Value::string("mission.create"));
    o.insert("correlationId", Value::string(fresh.action_id.clone()));
    o.insert(
        "issuedAt",
        Value::string(fresh.issued_at.format_whole_seconds()),
    );
    o.insert("payload", p.payload.clone());
    Draft {
        kind: "mission.create".to_owned(),
        action_id: fresh.action_id.clone(),
        group_id: p.group_id.clone(),
        mission_id: p.mission_id.clone(),
        document: Value::Object(o),
    }
}
