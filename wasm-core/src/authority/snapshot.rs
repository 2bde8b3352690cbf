//! A snapshot of the authority's [`State`]: every field, encoded so that a restart can load it
//! instead of replaying the whole log (issue 28, "Fast takeover"; §5: projections are
//! rebuildable, so a snapshot is only ever a cache of the replay it stands for).
//!
//! Binary, not the project's JSON: at 1,000,000 Events the State holds about a million
//! Messages and as many receipts, and parsing their JSON text (then reading each member by
//! name) cost several times the few allocations per entry a binary reader needs. The format
//! is private to this module and versioned; nothing but [`decode`] reads it.
//!
//! ```text
//! magic "MWPSNAP\0" · format version (u32 LE) · projection hash (string) · SHA-256 of the
//! body (32 bytes) · body (every field of State, in declaration order)
//! ```
//!
//! A snapshot is refused whole, never half-used: a wrong magic or version, a body whose digest
//! differs (a flipped or lost byte anywhere, including in the fields `projection_hash` does not
//! cover: the rate-limit windows, the orphan accounts, each Group's `last_occurred_at`), a body
//! that does not decode exactly to its end, or a decoded State whose
//! [`State::projection_hash`] is not the one recorded. The caller then replays the whole log.
//! Every length read from the input is bounded by the bytes left, so corrupt input cannot
//! make it allocate more than the input's size, and nothing here panics on input.

use super::clock::Micros;
use super::projection::*;
use super::state::{Account, EventRef, GroupState, Receipt, Receipts, State};
use super::table::{Log, Set, Table};
use crate::json::{Object, Value};
use crate::model::Id;
use crate::model::common::{Actor, ActorType};
use crate::model::membership::MembershipState;
use crate::model::mission::MissionState;
use crate::model::work_item::WorkItemState;
use std::collections::{BTreeMap, VecDeque};

/// The first bytes of every snapshot.
pub const MAGIC: &[u8; 8] = b"MWPSNAP\0";

/// The format version this code writes and reads. Bump it whenever the State's fields or their
/// encoding change: an older snapshot is then refused (and the log replayed), never misread.
pub const FORMAT_VERSION: u32 = 1;

/// Why a snapshot was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    /// Not a snapshot: the first bytes are not [`MAGIC`].
    NotASnapshot,
    /// A snapshot of another format version.
    Version { found: u32, expected: u32 },
    /// The input ends inside the header or the body.
    Truncated,
    /// The body's bytes are not those the header's digest was taken of.
    Digest,
    /// A value of the body is malformed (what, and at which byte of the body).
    Malformed { what: &'static str, at: usize },
    /// Bytes are left after the State's last field.
    TrailingBytes(usize),
    /// The decoded State's projection hash is not the one recorded in the snapshot.
    HashMismatch { recorded: String, decoded: String },
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::NotASnapshot => f.write_str("not a State snapshot (bad magic)"),
            SnapshotError::Version { found, expected } => write!(
                f,
                "snapshot format version {found}, this build reads {expected}"
            ),
            SnapshotError::Truncated => f.write_str("snapshot truncated"),
            SnapshotError::Digest => f.write_str("snapshot body does not match its digest"),
            SnapshotError::Malformed { what, at } => {
                write!(f, "malformed snapshot: {what} at body byte {at}")
            }
            SnapshotError::TrailingBytes(n) => {
                write!(f, "{n} bytes after the snapshot's last field")
            }
            SnapshotError::HashMismatch { recorded, decoded } => write!(
                f,
                "snapshot records projection {recorded} but decodes to {decoded}"
            ),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// Encodes every field of `state`, with the format version, its projection hash and the
/// body's digest.
pub fn encode(state: &State) -> Vec<u8> {
    let mut body = Vec::with_capacity(1 << 16);
    state.put(&mut body);
    let hash = state.projection_hash();
    let mut out = Vec::with_capacity(body.len() + 128);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    hash.put(&mut out);
    out.extend_from_slice(&digest(&body));
    out.extend_from_slice(&body);
    out
}

/// Decodes a snapshot written by [`encode`], refusing anything that is not exactly one (see the
/// module's documentation).
pub fn decode(bytes: &[u8]) -> Result<State, SnapshotError> {
    let (recorded, body) = header(bytes)?;
    let mut r = Reader { bytes: body, at: 0 };
    let state = State::load(&mut r)?;
    if r.at != body.len() {
        return Err(SnapshotError::TrailingBytes(body.len() - r.at));
    }
    let decoded = state.projection_hash();
    if decoded != recorded {
        return Err(SnapshotError::HashMismatch { recorded, decoded });
    }
    Ok(state)
}

/// The projection hash a snapshot records, read from its header alone (logs; no check of the
/// body).
pub fn recorded_hash(bytes: &[u8]) -> Result<String, SnapshotError> {
    let mut r = Reader {
        bytes: fixed_header(bytes)?,
        at: 0,
    };
    String::load(&mut r)
}

/// Magic and version checked; the rest of the input.
fn fixed_header(bytes: &[u8]) -> Result<&[u8], SnapshotError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(SnapshotError::NotASnapshot);
    }
    let rest = &bytes[MAGIC.len()..];
    let Some((version, rest)) = rest.split_first_chunk::<4>() else {
        return Err(SnapshotError::Truncated);
    };
    let found = u32::from_le_bytes(*version);
    if found != FORMAT_VERSION {
        return Err(SnapshotError::Version {
            found,
            expected: FORMAT_VERSION,
        });
    }
    Ok(rest)
}

/// The recorded projection hash and the body, whose digest is checked.
fn header(bytes: &[u8]) -> Result<(String, &[u8]), SnapshotError> {
    let rest = fixed_header(bytes)?;
    let mut r = Reader { bytes: rest, at: 0 };
    let recorded = String::load(&mut r)?;
    let Some((sum, body)) = rest[r.at..].split_first_chunk::<32>() else {
        return Err(SnapshotError::Truncated);
    };
    if digest(body) != *sum {
        return Err(SnapshotError::Digest);
    }
    Ok((recorded, body))
}

fn digest(body: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(body).into()
}

/// The body being read and the position in it.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn malformed(&self, what: &'static str) -> SnapshotError {
        SnapshotError::Malformed { what, at: self.at }
    }

    fn byte(&mut self) -> Result<u8, SnapshotError> {
        let b = *self.bytes.get(self.at).ok_or(SnapshotError::Truncated)?;
        self.at += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], SnapshotError> {
        let end = self.at.checked_add(n).ok_or(SnapshotError::Truncated)?;
        let out = self
            .bytes
            .get(self.at..end)
            .ok_or(SnapshotError::Truncated)?;
        self.at = end;
        Ok(out)
    }

    /// LEB128, at most ten bytes, the last one not overflowing 64 bits.
    fn varint(&mut self) -> Result<u64, SnapshotError> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(self.malformed("integer over 64 bits"));
            }
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(self.malformed("integer over 64 bits"))
    }

    /// A count of items that each take at least one byte: never more than the bytes left, so
    /// that a corrupt count cannot reserve more memory than the input holds.
    fn count(&mut self) -> Result<usize, SnapshotError> {
        let n = self.varint()?;
        let left = self.bytes.len() - self.at;
        match usize::try_from(n) {
            Ok(n) if n <= left => Ok(n),
            _ => Err(self.malformed("count larger than the bytes left")),
        }
    }
}

fn put_varint(mut v: u64, w: &mut Vec<u8>) {
    while v >= 0x80 {
        w.push((v as u8) | 0x80);
        v >>= 7;
    }
    w.push(v as u8);
}

/// One value's encoding: `put` writes it, `get` reads back exactly what `put` wrote.
trait Codec: Sized {
    fn put(&self, w: &mut Vec<u8>);
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError>;
}

impl Codec for u64 {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(*self, w);
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        r.varint()
    }
}

/// Zigzag, so that small negative instants stay short too.
impl Codec for i64 {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(((*self << 1) ^ (*self >> 63)) as u64, w);
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let z = r.varint()?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }
}

impl Codec for bool {
    fn put(&self, w: &mut Vec<u8>) {
        w.push(u8::from(*self));
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        match r.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(r.malformed("boolean")),
        }
    }
}

impl Codec for String {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(self.len() as u64, w);
        w.extend_from_slice(self.as_bytes());
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let n = r.count()?;
        let at = r.at;
        let bytes = r.take(n)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(SnapshotError::Malformed {
                what: "string not UTF-8",
                at,
            }),
        }
    }
}

impl Codec for Micros {
    fn put(&self, w: &mut Vec<u8>) {
        self.0.put(w);
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        Ok(Micros(i64::load(r)?))
    }
}

impl Codec for Id {
    fn put(&self, w: &mut Vec<u8>) {
        self.0.put(w);
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        Ok(Id(String::load(r)?))
    }
}

impl<T: Codec> Codec for Option<T> {
    fn put(&self, w: &mut Vec<u8>) {
        match self {
            None => w.push(0),
            Some(v) => {
                w.push(1);
                v.put(w);
            }
        }
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        match r.byte()? {
            0 => Ok(None),
            1 => Ok(Some(T::load(r)?)),
            _ => Err(r.malformed("option tag")),
        }
    }
}

impl<T: Codec> Codec for Vec<T> {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(self.len() as u64, w);
        for v in self {
            v.put(w);
        }
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let n = r.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(T::load(r)?);
        }
        Ok(out)
    }
}

impl<T: Codec> Codec for VecDeque<T> {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(self.len() as u64, w);
        for v in self {
            v.put(w);
        }
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        Ok(Vec::<T>::load(r)?.into())
    }
}

impl<A: Codec, B: Codec> Codec for (A, B) {
    fn put(&self, w: &mut Vec<u8>) {
        self.0.put(w);
        self.1.put(w);
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        Ok((A::load(r)?, B::load(r)?))
    }
}

/// Keys in order, strictly increasing: a map that decodes has no duplicate and no key out of
/// place, so it is the map that was written.
impl<K: Codec + Ord, V: Codec> Codec for BTreeMap<K, V> {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(self.len() as u64, w);
        for (k, v) in self {
            k.put(w);
            v.put(w);
        }
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let n = r.count()?;
        let mut out = BTreeMap::new();
        for _ in 0..n {
            let k = K::load(r)?;
            if out.last_key_value().is_some_and(|(last, _)| *last >= k) {
                return Err(r.malformed("map keys out of order"));
            }
            out.insert(k, V::load(r)?);
        }
        Ok(out)
    }
}

impl Codec for [u64; 6] {
    fn put(&self, w: &mut Vec<u8>) {
        for v in self {
            v.put(w);
        }
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let mut out = [0u64; 6];
        for v in &mut out {
            *v = u64::load(r)?;
        }
        Ok(out)
    }
}

/// Free-form JSON objects (policy-log entries, Artifact manifests, evidence data, card
/// constraints) as the project's lossless compact JSON (number spellings, member order and
/// unpaired surrogates kept), parsed back strictly: few, and of no fixed shape.
impl Codec for Object {
    fn put(&self, w: &mut Vec<u8>) {
        crate::json::to_string(&Value::Object(self.clone())).put(w);
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let at = r.at;
        let text = String::load(r)?;
        match crate::json::parse(text.as_bytes()) {
            Ok(Value::Object(o)) => Ok(o),
            _ => Err(SnapshotError::Malformed {
                what: "JSON object",
                at,
            }),
        }
    }
}

/// String enums by their position in the schema's list.
macro_rules! enums {
    ($($ty:ident),* $(,)?) => {$(
        impl Codec for $ty {
            fn put(&self, w: &mut Vec<u8>) {
                let i = $ty::ALL.iter().position(|v| v == self).unwrap_or(0);
                put_varint(i as u64, w);
            }
            fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
                let i = r.varint()?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| $ty::ALL.get(i).copied())
                    .ok_or_else(|| r.malformed(stringify!($ty)))
            }
        }
    )*};
}

enums!(
    ActorType,
    MissionState,
    MembershipState,
    WorkItemState,
    ProposalStatus
);

/// Records field by field, in the order listed. Encoding destructures the whole struct and
/// decoding builds it with a struct literal, so a field added to a projection and not listed
/// here does not compile.
macro_rules! records {
    ($($ty:ident { $($f:ident),* $(,)? })*) => {$(
        impl Codec for $ty {
            fn put(&self, w: &mut Vec<u8>) {
                let $ty { $($f),* } = self;
                $( $f.put(w); )*
            }
            fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
                Ok($ty { $($f: Codec::load(r)?),* })
            }
        }
    )*};
}

records! {
    Actor { actor_type, id }
    ResourceBudget { financial_microunits, model_tokens, tool_calls, compute_seconds, wall_clock_seconds, external_actions }
    DelegationBudget { currency, financial_microunits, model_tokens, tool_calls, compute_seconds, wall_clock_seconds, external_actions }
    CapabilityRequirement { id, minimum_version }
    RetryPolicy { max_attempts, initial_backoff_seconds, maximum_backoff_seconds }
    WorkContract { goal, deliverables, acceptance_criteria, inputs, allowed_tools, allowed_resources, deadline, requested_priority, estimated_duration_seconds, required_capabilities, budget, retry_policy, exclusive, side_effect_risk, execution_approval }
    SelectionBasis { required_capabilities, verified_capability_matches, authorization_eligible, availability_estimate, expected_cost_microunits, reliability_evidence, policy_rules_applied }
    EvidenceItem { kind, description, success, artifact_hash, data }
    Checkpoint { phase, completed_milestones, next_step, state_artifact_hash, created_at }
    Mission { approved_artifact_hashes, budget, child_failure_policy, coordinator_epoch, coordinator_id, coordinator_lease_expires_at, created_at, deadline, definition_of_done, failure_reason, follow_up_of_mission_id, group_id, id, objective, owner, parent_mission_id, parent_work_item_id, permissions, revision, status, submitted_artifact_hashes, submitted_revision, title, updated_at }
    Group { archive_snapshot_id, archived_at, created_at, id, main_conversation_id, mission_id }
    Membership { ended_at, epoch, group_id, joined_at, principal, roles, status, visibility_after_sequence }
    Message { author, content, conversation_id, created_at, group_id, id, mentions }
    MessageAmendment { actor, created_at, group_id, id, kind, message_id, reason, replacement_content }
    WorkProposal { authorized_work_item_id, contract, created_at, dependency_ids, group_id, id, mission_id, parent_work_item_id, proposed_by, status, updated_at }
    WorkItem { artifact_ids, assigned_agent_card_version, assigned_capability_versions, assignee_id, blocker, checkpoints, child_mission_id, contract, conversation_id, created_at, created_by, delegation_depth, delegation_grant_id, dependency_ids, execution_lease_expires_at, execution_lease_id, failure_reason, group_id, id, mission_id, offer_expires_at, offered_agent_ids, ownership_epoch, ownership_lease_expires_at, parent_work_item_id, revision, selection_basis, status, submission_evidence, updated_at, verification_evidence }
    ExecutionLease { closed_at, closure_reason, expires_at, group_id, holder_agent_id, issued_at, last_renewed_at, lease_id, lease_type, mission_id, ownership_epoch, renewal_count, session_epoch, starts_at, state, work_item_id }
    Approval { acceptance_policy_version, approved_at, approver, artifact_hashes, comments, id, mission_id, mission_revision, signature }
    ExecutionApproval { approved_at, approver, budget, comments, expires_at, group_id, id, mission_id, operations, ownership_epoch, resources, signature, work_item_id }
    CooperationOverrideGrant { approver, beneficiary, consumed_at, consumed_event_id, expires_at, granted_at, group_id, id, mission_id, policy_name, reason, signature, target_action_id, target_command_kind }
    DelegationGrant { allowed_capabilities, budget, coordinator_epoch, expires_at, granted_at, granted_by, grantee_agent_id, grantee_membership_epoch, group_id, id, max_descendant_depth, mission_id, target_work_item_id }
    CardCapability { id, version, input_schema, output_schema, constraints, verified_evidence }
    AgentCardRecord { agent_id, version, display_name, owner, public_key, capabilities, issued_at, signature }
    GroupState { group, last_sequence, last_occurred_at, memberships, conversations, policy_log, recent }
    Account { parent, limit, children, direct, total }
    EventRef { group_id, sequence }
    Receipt { command_hash, events }
    State { cards, session_epochs, missions, groups, work_items, proposals, messages, amendments, leases, approvals, execution_approvals, delegation_grants, override_grants, artifacts, accounts, orphan_accounts, receipts, org_sequence }
}

/// Entries in key order, strictly increasing (so a decoded table is the one written: rpds'
/// tree is built by the same inserts whatever their order, but a duplicate would be lost).
impl<V: Codec + Clone + Send + Sync + 'static> Codec for Table<V> {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(self.len() as u64, w);
        for (k, v) in self {
            k.put(w);
            v.put(w);
        }
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let n = r.count()?;
        let mut out = Table::new();
        // The previous key, in a buffer reused for every entry.
        let mut last = String::new();
        for i in 0..n {
            let k = String::load(r)?;
            if i > 0 && last >= k {
                return Err(r.malformed("table keys out of order"));
            }
            let v = V::load(r)?;
            last.clear();
            last.push_str(&k);
            out.insert(k, v);
        }
        Ok(out)
    }
}

impl Codec for Set {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(self.len() as u64, w);
        for k in self {
            k.put(w);
        }
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let n = r.count()?;
        let mut out = Set::default();
        let mut last = String::new();
        for i in 0..n {
            let k = String::load(r)?;
            if i > 0 && last >= k {
                return Err(r.malformed("set members out of order"));
            }
            last.clear();
            last.push_str(&k);
            out.insert(k);
        }
        Ok(out)
    }
}

impl<T: Codec + Clone> Codec for Log<T> {
    fn put(&self, w: &mut Vec<u8>) {
        put_varint(self.len() as u64, w);
        for v in self.iter() {
            v.put(w);
        }
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        let n = r.count()?;
        let mut out = Log::default();
        for _ in 0..n {
            out.push(T::load(r)?);
        }
        Ok(out)
    }
}

impl Codec for Receipts {
    fn put(&self, w: &mut Vec<u8>) {
        self.by_actor().put(w);
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, SnapshotError> {
        Ok(Receipts::from_by_actor(Table::load(r)?))
    }
}
