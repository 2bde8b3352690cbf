//! The Group Authority: a deterministic, sans-IO reducer (§3, §15).
//!
//! ```text
//!  Verified Command ──▶ receipt? ──yes──▶ the original Events (idempotent retry, §15.1)
//!        │                  └─ other content ──▶ ACTION_ID_COLLISION
//!        ▼
//!  common checks (Session Epoch, Membership)  ──▶ Rejection (wire code, nothing applied)
//!        ▼
//!  decide(state, command, now) ──▶ [EventDraft]   (pure: no state is touched)
//!        ▼
//!  seal: sequence, eventId, occurredAt, signature by the Group Authority key
//!        ▼
//!  evolve(state, event) for each Event            (the only way state changes)
//! ```
//!
//! Because state changes only through [`evolve::apply`], replaying the stored Events rebuilds it
//! exactly: the server after a restart and the browser folding a Group's history run the same
//! code and reach the same projections.

pub mod clock;
pub mod event_view;
pub mod events;
pub mod evolve;
pub mod guards;
pub mod handlers;
pub mod payload;
pub mod projection;
pub mod rejection;
pub mod snapshot;
pub mod state;
pub mod table;

use crate::crypto::{SecretSeed, Verified, ed25519};
use crate::encoding::{b64url_encode, sha256_hash};
use crate::json::{self, Object, Value};
use crate::model::command::Command;
use crate::model::common::{Actor, ActorType};
use crate::model::error::ErrorCode;
use crate::model::{self as m, ToJson};
pub use clock::Micros;
pub use evolve::ApplyError;
pub use rejection::Rejection;
pub use state::{EventRef, Receipt, State};

/// Why a signature could not be spliced into an Event the authority sealed: always a defect
/// (the batch is rejected with `INTERNAL_ERROR`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum SpliceError {
    NoOccurredAt,
    NotAnObject,
    /// The signing bytes' signature slot could not be filled.
    Canonical(String),
}

impl std::fmt::Display for SpliceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpliceError::NoOccurredAt => f.write_str("an Event without occurredAt"),
            SpliceError::NotAnObject => f.write_str("an Event that is not an object"),
            SpliceError::Canonical(why) => f.write_str(why),
        }
    }
}

/// The Group Authority's identity and policy (§5, §20).
///
/// Not `Clone`: it holds the authority's private key. `{:?}` prints no byte of the seed.
#[derive(Debug)]
pub struct AuthorityConfig {
    /// `acceptedBy` of every Event: the Organization service that accepts Commands.
    pub accepted_by: Actor,
    /// The Registry key ID bound to `accepted_by`.
    pub key_id: String,
    /// The Ed25519 seed of that key (the caller supplies it; the core never generates keys).
    pub seed: SecretSeed,
    pub limits: CooperationLimits,
}

impl AuthorityConfig {
    /// An explicit copy, seed included (e.g. for a second, fresh [`Authority`] that replays
    /// the same log).
    pub fn duplicate(&self) -> AuthorityConfig {
        AuthorityConfig {
            accepted_by: self.accepted_by.clone(),
            key_id: self.key_id.clone(),
            seed: self.seed.duplicate(),
            limits: self.limits.clone(),
        }
    }
}

/// Cooperation limits (§20; payloads.md §7 defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CooperationLimits {
    pub message_rate_per_minute: usize,
    pub proposal_rate_per_minute: usize,
    pub max_delegation_depth: u64,
    pub max_queued_work_items: usize,
    pub max_active_work_items: usize,
}

impl Default for CooperationLimits {
    fn default() -> Self {
        CooperationLimits {
            message_rate_per_minute: 120,
            proposal_rate_per_minute: 30,
            max_delegation_depth: 3,
            max_queued_work_items: 100,
            max_active_work_items: 4,
        }
    }
}

/// A verified Command as the handlers read it.
#[derive(Clone, Debug)]
pub struct CommandView {
    /// The typed Command; its `payload` was moved to [`CommandView::payload`].
    pub command: Command,
    pub action_id: String,
    pub actor: Actor,
    pub kind: String,
    pub group_id: Option<String>,
    pub issued_at: Micros,
    pub payload: Object,
    /// `sha256:` of the Command's signing bytes (payloads.md §4.4).
    pub command_hash: String,
    /// `signature.value`, which Approvals and grants record (payloads.md §2.5).
    pub signature_value: String,
    pub extensions: Option<Value>,
}

impl CommandView {
    /// Builds the view from a six-stage-verified Command, taking its parts (no copies).
    pub fn from_owned(v: Verified) -> Result<CommandView, Rejection> {
        let mut command: Command = match v.command {
            Some(c) => *c,
            None => m::from_value(&v.document, true)
                .map_err(|e| Rejection::new(ErrorCode::SchemaValidationFailed, e.to_string()))?,
        };
        // The payload lives in the view; the typed Command keeps the envelope only.
        let payload = std::mem::take(&mut command.payload);
        let extensions = match v.document {
            Value::Object(mut o) => o.remove("extensions"),
            _ => None,
        };
        Ok(CommandView {
            action_id: command.action_id.0.clone(),
            actor: command.actor.clone(),
            kind: command
                .kind
                .to_json()
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            group_id: command.group_id.as_ref().map(|g| g.0.clone()),
            issued_at: Micros::from_timestamp(&command.issued_at),
            payload,
            command_hash: v.signing_hash,
            signature_value: v.signature,
            extensions,
            command,
        })
    }

    pub fn session_epoch(&self) -> Option<u64> {
        self.command.session_epoch.map(|e| e.0)
    }

    pub fn membership_epoch(&self) -> Option<u64> {
        self.command.membership_epoch.map(|e| e.0)
    }

    pub fn coordinator_epoch(&self) -> Option<u64> {
        self.command.coordinator_epoch.map(|e| e.0)
    }

    pub fn expected_revision(&self) -> Option<u64> {
        self.command.expected_revision.map(|e| e.0)
    }

    pub fn envelope_work_item_id(&self) -> Option<&str> {
        self.command.work_item_id.as_ref().map(|i| i.as_str())
    }

    pub fn envelope_conversation_id(&self) -> Option<&str> {
        self.command.conversation_id.as_ref().map(|i| i.as_str())
    }

    pub fn override_grant_id(&self) -> Option<&str> {
        self.command
            .cooperation_override_grant_id
            .as_ref()
            .map(|i| i.as_str())
    }

    /// The payload with `workItemId` / `conversationId` filled from the envelope when absent
    /// (payloads.md §2.2). The signed payload itself is never changed.
    pub fn payload_filled(&self, work_item: bool, conversation: bool) -> Object {
        let mut p = self.payload.clone();
        if work_item
            && !p.contains_key("workItemId")
            && let Some(w) = self.envelope_work_item_id()
        {
            p.insert("workItemId", Value::string(w.to_owned()));
        }
        if conversation
            && !p.contains_key("conversationId")
            && let Some(c) = self.envelope_conversation_id()
        {
            p.insert("conversationId", Value::string(c.to_owned()));
        }
        p
    }
}

/// The extension under which our Events carry state that the reference's payload shapes leave
/// out but replay needs (e.g. a consumed override grant). Non-critical, so other peers relay it
/// and ignore it (§17.4, §18).
pub const STATE_NOTES_EXTENSION: &str = "urn:missionweaveprotocol:extension:authority-state";

/// An Event a handler wants appended; the authority seals it.
#[derive(Clone, Debug, PartialEq)]
pub struct EventDraft {
    /// `None` for an Organization-scoped Event.
    pub group_id: Option<String>,
    pub kind: String,
    pub payload: Object,
    /// Replay-only facts, sealed into the [`STATE_NOTES_EXTENSION`] entry when not empty.
    pub notes: Object,
}

impl EventDraft {
    pub fn group(group_id: &str, kind: &str, payload: Object) -> EventDraft {
        EventDraft {
            group_id: Some(group_id.to_owned()),
            kind: kind.to_owned(),
            payload,
            notes: Object::new(),
        }
    }

    /// Adds a replay-only note (see [`STATE_NOTES_EXTENSION`]).
    pub fn note(mut self, name: &str, value: Value) -> EventDraft {
        self.notes.insert(name.to_owned(), value);
        self
    }

    pub fn organization(kind: &str, payload: Object) -> EventDraft {
        EventDraft {
            group_id: None,
            kind: kind.to_owned(),
            payload,
            notes: Object::new(),
        }
    }
}

/// A sealed, signed Event and its canonical bytes (what the store keeps and frames carry).
#[derive(Clone, Debug, PartialEq)]
pub struct SignedEvent {
    pub at: EventRef,
    pub value: Value,
    pub jcs: Vec<u8>,
}

/// A sealed and applied Event waiting for its signature (see [`Authority::accept`]).
#[derive(Clone, Debug, PartialEq)]
pub struct UnsignedEvent {
    pub at: EventRef,
    /// The Event without `signature`, members in canonical order.
    pub value: Value,
    /// Its canonical bytes (the signing input), with the place of the `signature` member.
    jcs: json::jcs::Slotted,
}

/// A Command accepted by [`Authority::accept`], before its Events are signed.
#[derive(Clone, Debug, PartialEq)]
pub enum Accepted {
    Appended(Vec<UnsignedEvent>),
    Duplicate(Receipt),
}

/// The result of submitting a Command.
#[derive(Clone, Debug, PartialEq)]
pub enum Submitted {
    /// Newly appended Events, primary first… in the order they were appended.
    Appended(Vec<SignedEvent>),
    /// A byte-identical retry: the Events the Command appended the first time.
    Duplicate(Receipt),
}

/// Signs each Event's signing bytes, in order ([`Authority::sign_with`]).
pub type SignAll<'a> = &'a dyn Fn(&[&[u8]]) -> Vec<[u8; 64]>;

/// The Group Authority over one Organization's Groups.
#[derive(Debug)]
pub struct Authority {
    pub state: State,
    pub config: AuthorityConfig,
    signer: ed25519::Signer,
}

impl Authority {
    pub fn new(config: AuthorityConfig) -> Authority {
        Authority {
            state: State::default(),
            signer: ed25519::Signer::from_seed(&config.seed),
            config,
        }
    }

    /// A new Authority with this one's configuration and an empty state, to replay a log into.
    pub fn fresh(&self) -> Authority {
        Authority::new(self.config.duplicate())
    }

    /// The Group Authority's signing key (the server signs a batch's Events on several threads).
    pub fn signer(&self) -> &ed25519::Signer {
        &self.signer
    }

    /// Signs from now on with `key_id` and `seed` (a rotation of the Organization's service
    /// key, §6.4: the caller chooses the key the Registry holds valid at the Events' time; the
    /// Events already signed keep their signature and verify by their own `keyId`).
    pub fn set_signing_key(&mut self, key_id: String, seed: SecretSeed) {
        self.signer = ed25519::Signer::from_seed(&seed);
        self.config.key_id = key_id;
        self.config.seed = seed;
    }

    /// Forgets every applied Event (the state is rebuilt by replaying the log).
    pub fn reset_state(&mut self) {
        self.state = State::default();
    }

    /// Accepts or rejects a verified Command at `now`. On rejection nothing changes.
    pub fn submit(&mut self, verified: Verified, now: Micros) -> Result<Submitted, Rejection> {
        let accepted = self.accept(verified, now)?;
        self.sign(vec![accepted])?
            .pop()
            .ok_or_else(|| Rejection::new(ErrorCode::InternalError, "signing returned no outcome"))
    }

    /// Decides, seals and applies a verified Command at `now`; its Events still need their
    /// signature ([`Authority::sign`]). Splitting the two lets a batch's Events be signed
    /// together (in parallel, by the server) while each Command is still decided against the
    /// state its predecessors left. On rejection nothing changes.
    pub fn accept(&mut self, verified: Verified, now: Micros) -> Result<Accepted, Rejection> {
        let cmd = CommandView::from_owned(verified)?;
        // Idempotency before fencing (D-26): a byte-identical retry returns its Events.
        if let Some(receipt) = self.state.receipts.get(&cmd.actor.id.0, &cmd.action_id) {
            return if receipt.command_hash == cmd.command_hash {
                Ok(Accepted::Duplicate(receipt.clone()))
            } else {
                Err(Rejection::new(
                    ErrorCode::ActionIdCollision,
                    "the action ID was already used for different Command content",
                )
                .detail("actionId", cmd.action_id.as_str()))
            };
        }
        handlers::offline::check_extensions(&cmd)?;
        guards::common(&self.state, &cmd)?;
        let drafts = handlers::decide(&handlers::Ctx {
            state: &self.state,
            cmd: &cmd,
            now,
            config: &self.config,
        })?;
        let events = self.seal(&cmd, drafts, now)?;
        for e in &events {
            if let Err(err) = evolve::apply(&mut self.state, &e.value) {
                // The authority produced this Event itself: failing to apply it is a defect.
                return Err(Rejection::new(
                    ErrorCode::InternalError,
                    format!("the authority could not apply its own Event: {err}"),
                ));
            }
        }
        Ok(Accepted::Appended(events))
    }

    /// Signs the Events of accepted Commands with the Group Authority key.
    ///
    /// On `Err` nothing is returned for the whole batch, and the state (which already applied
    /// these Events in [`Authority::accept`]) is ahead of the log: the caller must rebuild it
    /// from its store ([`Authority::reset_state`] and replay), as for a failed write.
    pub fn sign(&self, accepted: Vec<Accepted>) -> Result<Vec<Submitted>, Rejection> {
        self.sign_with(accepted, &|messages| {
            messages.iter().map(|m| self.signer.sign(m)).collect()
        })
    }

    /// [`Authority::sign`] with the signing of the batch's messages passed in: `sign_all` gets
    /// each Event's JCS signing bytes and returns their signatures in order (the server spreads
    /// them over its cores). Fails closed: an answer with too few or too many signatures, or an
    /// Event whose signature cannot be spliced in, rejects the whole batch.
    pub fn sign_with(
        &self,
        accepted: Vec<Accepted>,
        sign_all: SignAll<'_>,
    ) -> Result<Vec<Submitted>, Rejection> {
        let defect = |what: &str| {
            Rejection::new(
                ErrorCode::InternalError,
                format!("the authority could not sign its Events: {what}"),
            )
        };
        let messages: Vec<&[u8]> = accepted
            .iter()
            .flat_map(|a| match a {
                Accepted::Appended(es) => es.as_slice(),
                Accepted::Duplicate(_) => &[],
            })
            .map(|e| e.jcs.bytes.as_slice())
            .collect();
        let signatures = sign_all(&messages);
        if signatures.len() != messages.len() {
            return Err(defect(&format!(
                "{} signatures for {} Events",
                signatures.len(),
                messages.len()
            )));
        }
        let mut signatures = signatures.into_iter();
        let mut out = Vec::with_capacity(accepted.len());
        for a in accepted {
            out.push(match a {
                Accepted::Duplicate(r) => Submitted::Duplicate(r),
                Accepted::Appended(es) => {
                    let mut signed = Vec::with_capacity(es.len());
                    for e in es {
                        let sig = signatures
                            .next()
                            .ok_or_else(|| defect("a missing signature"))?;
                        signed.push(
                            self.attach_signature(e, &sig)
                                .map_err(|e| defect(&e.to_string()))?,
                        );
                    }
                    Submitted::Appended(signed)
                }
            });
        }
        Ok(out)
    }

    /// Splices `signature` into a sealed Event's canonical members and value.
    fn attach_signature(
        &self,
        e: UnsignedEvent,
        sig: &[u8; 64],
    ) -> Result<SignedEvent, SpliceError> {
        let UnsignedEvent { at, mut value, jcs } = e;
        // `signature.createdAt` is the Event's own `occurredAt` (the protected time, §6.4).
        let occurred_at = value
            .pointer("/occurredAt")
            .cloned()
            .ok_or(SpliceError::NoOccurredAt)?;
        let mut s = Object::new();
        // In JCS member order, like everything else in the value.
        s.insert("algorithm", Value::string("Ed25519"));
        s.insert("createdAt", occurred_at);
        s.insert("keyId", Value::string(self.config.key_id.clone()));
        s.insert("value", Value::string(b64url_encode(sig)));
        let signature = Value::Object(s);
        let jcs = jcs
            .fill(&signature)
            .map_err(|e| SpliceError::Canonical(e.to_string()))?;
        // Member order as in the stored bytes (replay parses those); the rest is already sorted.
        match &mut value {
            Value::Object(o) => o.insert_canonical("signature", signature),
            _ => return Err(SpliceError::NotAnObject),
        }
        Ok(SignedEvent { at, value, jcs })
    }

    /// Applies a stored Event (replay after restart, or in the browser).
    pub fn replay(&mut self, event: &Value) -> Result<(), ApplyError> {
        evolve::apply(&mut self.state, event)
    }

    fn seal(
        &self,
        cmd: &CommandView,
        drafts: Vec<EventDraft>,
        now: Micros,
    ) -> Result<Vec<UnsignedEvent>, Rejection> {
        let mut next: std::collections::BTreeMap<Option<String>, u64> = Default::default();
        let occurred_at = now.format();
        let mut out = Vec::with_capacity(drafts.len());
        for d in drafts {
            let last = *next
                .entry(d.group_id.clone())
                .or_insert_with(|| match &d.group_id {
                    Some(g) => self.state.groups.get(g).map_or(0, |s| s.last_sequence),
                    None => self.state.org_sequence,
                });
            let sequence = last + 1;
            next.insert(d.group_id.clone(), sequence);
            let event_id = event_id(d.group_id.as_deref().unwrap_or("organization"), sequence);
            // Up to 17 members, 18 with the signature added later.
            let mut e = Object::with_capacity(18);
            e.insert("protocolVersion", Value::string("0.1"));
            e.insert("eventId", Value::string(event_id));
            if let Some(g) = &d.group_id {
                e.insert("groupId", Value::string(g.clone()));
                e.insert("sequence", Value::from(sequence));
                e.insert("aggregateRevision", Value::from(sequence));
            }
            e.insert("kind", Value::string(d.kind.clone()));
            e.insert("actor", cmd.actor.to_json());
            let mut cause = Object::new();
            cause.insert("type", Value::string("command"));
            cause.insert("id", Value::string(cmd.action_id.clone()));
            e.insert("cause", Value::Object(cause));
            e.insert(
                "correlationId",
                Value::string(cmd.command.correlation_id.0.clone()),
            );
            // Lifted from the payload's top level or its nested message, workItem, artifact or
            // membership (payloads.md §4.2).
            for (member, pointer) in [
                ("conversationId", "/conversationId"),
                ("workItemId", "/workItemId"),
            ] {
                let found = std::iter::once(d.payload.get(member))
                    .chain(
                        ["message", "workItem", "artifact", "membership"]
                            .iter()
                            .map(|n| d.payload.get(n).and_then(|o| o.pointer(pointer))),
                    )
                    .flatten()
                    .filter_map(Value::as_str)
                    .find(|s| crate::id::check_id(s).is_ok());
                if let Some(s) = found {
                    e.insert(member, Value::string(s.to_owned()));
                }
            }
            e.insert("occurredAt", Value::string(occurred_at.clone()));
            e.insert("payload", Value::Object(d.payload));
            e.insert("acceptedBy", self.config.accepted_by.to_json());
            e.insert("commandHash", Value::string(cmd.command_hash.clone()));
            let mut extensions = match &cmd.extensions {
                Some(Value::Object(x)) => x.clone(),
                _ => Object::new(),
            };
            if !d.notes.is_empty() {
                let mut entry = Object::new();
                entry.insert("version", Value::string("0.1.0"));
                entry.insert("critical", Value::Bool(false));
                entry.insert("data", Value::Object(d.notes));
                extensions.insert(STATE_NOTES_EXTENSION, Value::Object(entry));
            }
            if !extensions.is_empty() {
                e.insert("extensions", Value::Object(extensions));
            }
            // Canonicalize once; the signature member is spliced into the same bytes later.
            let jcs = json::jcs::canonical_with_slot(&e, "signature").map_err(|err| {
                Rejection::new(
                    ErrorCode::InternalError,
                    format!("the authority could not canonicalize its own Event: {err}"),
                )
            })?;
            let mut value = Value::Object(e);
            // Apply exactly what will be stored: member order and number spellings become what
            // replay parses from the canonical bytes (free-form evidence data, manifests…).
            json::make_canonical(&mut value);
            out.push(UnsignedEvent {
                at: EventRef {
                    group_id: d.group_id,
                    sequence,
                },
                value,
                jcs,
            });
        }
        Ok(out)
    }
}

/// The wire `eventId` of the Event at `sequence` in `scope` (a Group id, or `"organization"` for
/// the Organization log): deterministic, so decisions can cite Events they are about to append
/// (payloads.md D-27) and replay reproduces them.
pub fn event_id(scope: &str, sequence: u64) -> String {
    let input = json::to_string(&Value::Array(vec![
        Value::string(scope.to_owned()),
        Value::from(sequence),
    ]));
    format!(
        "urn:missionweaveprotocol:event:{}",
        &sha256_hash(input.as_bytes())[7..]
    )
}

/// The `service` actor type, for handlers that check it.
pub fn is_service(a: &Actor) -> bool {
    a.actor_type == ActorType::Service
}
