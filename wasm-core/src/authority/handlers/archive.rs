//! Group archival (§7.4; payloads.md §6.38): an Organization service submits the signed final
//! Group Snapshot of a Group whose Mission is terminal.
//!
//! ```text
//! group_archive (service, groupId) ─▶ group.snapshot.created { snapshotId, throughSequence, stateHash }
//!                                  ─▶ group.archived         { snapshotId, archivedAt }   (primary)
//! ```
//!
//! What is verified about the embedded snapshot, in order (each failure rejects the Command):
//!
//! 1. `createdBy` is a service Principal (`service`, or the reference's `system`, D-28);
//! 2. the protocol document (the snapshot with `system` written as `service`) parses as
//!    `group-snapshot.schema.json` with the §2 timestamp profile;
//! 3. the §6.4 signature envelope: `algorithm` Ed25519, `signature.createdAt` byte-identical to
//!    `createdAt`, which is UTC with an uppercase `Z`;
//! 4. the expected signer `createdBy` is this Group Authority (`acceptedBy`), whose key signs
//!    snapshots, and `signature.keyId` is that key;
//! 5. the Ed25519 signature over the JCS of the protocol document without `signature`;
//! 6. `groupId` is this Group, `throughSequence` its last sequence, `eventIds` exactly the
//!    wire `eventId`s of its Events 1..=`throughSequence` in order (D-27);
//! 7. `createdAt` is no earlier than the latest Group activity the state records and no later
//!    than the Command's `issuedAt`;
//! 8. `snapshotId` is a new Organization-wide identifier.
//!
//! Not verified: the key's Registry validity interval (the authority holds its own key, not the
//! Registry), and `stateHash` and `policyLog` against state (neither does the reference).

use super::mission::wire_event_id;
use super::{Ctx, Decision};
use crate::authority::clock::Micros;
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::archive::{GroupArchived, SnapshotCreated};
use crate::authority::payload::Reader;
use crate::authority::rejection::Rejection;
use crate::authority::state::{GroupState, State};
use crate::authority::{EventDraft, guards, is_service};
use crate::crypto::ed25519;
use crate::encoding::b64url_decode;
use crate::json::{self, Object, Value};
use crate::model::group_snapshot::GroupSnapshot;
use crate::model::{self as m};
use crate::time::Timestamp;

pub const SNAPSHOT_CREATED: &str = "group.snapshot.created";
pub const ARCHIVED: &str = "group.archived";

/// The Extension kind that archives a Group (§18).
pub const GROUP_ARCHIVE: &str = "ext.missionweaveprotocol.core.group_archive";

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        // The snapshot itself is not kept; its id is recorded on the Group by `group.archived`.
        SNAPSHOT_CREATED => Ok(()),
        ARCHIVED => apply_archived(state, ev),
        _ => return None,
    })
}

fn forbidden(message: &str) -> Rejection {
    Rejection::forbidden(format!("Group Snapshot rejected: {message}"))
}

/// The reference's protocol document: `system` Principals written as `service` (D-28).
fn protocol_document(snapshot: &Object) -> Value {
    let mut doc = snapshot.clone();
    let fix = |v: &mut Value| {
        if let Value::Object(a) = v
            && a.get("type").and_then(Value::as_str) == Some("system")
        {
            a.insert("type", Value::string("service"));
        }
    };
    if let Some(c) = doc.get_mut("createdBy") {
        fix(c);
    }
    if let Some(Value::Array(entries)) = doc.get_mut("policyLog") {
        for e in entries {
            if let Value::Object(e) = e
                && let Some(a) = e.get_mut("actor")
            {
                fix(a);
            }
        }
    }
    Value::Object(doc)
}

/// When the Group's last Event was accepted (kept by `evolve::apply`).
fn last_activity(_state: &State, gs: &GroupState) -> Micros {
    gs.last_occurred_at
}

/// `ext.missionweaveprotocol.core.group_archive` (§7.4; payloads.md §6.38).
pub fn decide_archive(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let snapshot = r.free_object("snapshot");
    if !cmd.payload.contains_key("snapshot") {
        r.error("snapshot", "is required");
    }
    r.finish(&cmd.kind)?;
    if !is_service(&cmd.actor) {
        return Err(Rejection::forbidden(
            "only an Organization service archives a Group",
        ));
    }
    let group_id = cmd
        .group_id
        .as_deref()
        .ok_or_else(|| Rejection::invalid("Command requires a Group"))?;
    let gs = cx
        .state
        .groups
        .get(group_id)
        .ok_or_else(Rejection::group_not_found)?;
    if gs.group.archived_at.is_some() {
        return Err(Rejection::transition("the Group is already archived"));
    }
    let mission = cx
        .state
        .missions
        .get(&gs.group.mission_id)
        .ok_or_else(Rejection::group_not_found)?;
    if !mission.is_terminal() {
        return Err(Rejection::transition(format!(
            "the Mission is {}; only a terminal Mission's Group is archived",
            mission.status
        )));
    }
    if !matches!(
        snapshot.get("createdBy").and_then(|c| c.pointer("/type")),
        Some(Value::String(t)) if matches!(t.as_str(), "service" | "system")
    ) {
        return Err(forbidden("createdBy must be a service Principal"));
    }
    let doc = protocol_document(&snapshot);
    let parsed: GroupSnapshot = m::from_value(&doc, true).map_err(|e| {
        Rejection::invalid(format!("the Group Snapshot does not match its schema: {e}"))
    })?;

    // §6.4 stage 3: the signature envelope.
    if doc.pointer("/signature/algorithm").and_then(Value::as_str) != Some("Ed25519") {
        return Err(forbidden("the signature algorithm must be Ed25519"));
    }
    let created_text = doc
        .pointer("/createdAt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let sig_created = doc
        .pointer("/signature/createdAt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let created_ok = Timestamp::parse_profile(created_text).is_ok_and(|t| t.is_utc_upper_z());
    if !created_ok || sig_created != created_text {
        return Err(forbidden(
            "signature.createdAt must equal createdAt byte for byte, in UTC with an uppercase Z",
        ));
    }
    // Stage 4: the expected signer is `createdBy`; the snapshot authority is this Group
    // Authority, so `createdBy` must be its Principal and the key its key.
    if parsed.created_by.0 != cx.config.accepted_by {
        return Err(forbidden(
            "createdBy is not the Group Authority that signs snapshots",
        ));
    }
    let key_id = doc
        .pointer("/signature/keyId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if key_id != cx.config.key_id {
        return Err(
            forbidden("the snapshot is not signed with the authority key").detail("keyId", key_id),
        );
    }
    // Stages 5–6: JCS without `signature`, then Ed25519.
    let signing = json::canonicalize_without(&doc, "signature")
        .map_err(|e| forbidden(&format!("cannot canonicalize: {e}")))?;
    let value = doc
        .pointer("/signature/value")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let verified = b64url_decode(value).ok().is_some_and(|raw| {
        let key = ed25519::StrictPublicKey::from_bytes(&cx.config.seed.public_key());
        let sig = ed25519::StrictSignature::from_bytes(&raw);
        matches!((key, sig), (Ok(k), Ok(s)) if ed25519::verify(&k, &s, &signing))
    });
    if !verified {
        return Err(forbidden("the signature does not verify"));
    }

    if parsed.group_id.as_str() != group_id {
        return Err(Rejection::invalid("the snapshot is for another Group")
            .detail("expected", group_id)
            .detail("received", parsed.group_id.as_str()));
    }
    let through = parsed.through_sequence.0;
    if through != gs.last_sequence {
        return Err(Rejection::revision(gs.last_sequence, through));
    }
    let ids: Vec<&str> = parsed.event_ids.0.iter().map(|i| i.as_str()).collect();
    let exact = ids.len() as u64 == through
        && ids
            .iter()
            .enumerate()
            .all(|(i, id)| *id == wire_event_id(group_id, i as u64 + 1));
    if !exact {
        return Err(Rejection::invalid(
            "eventIds must list the Group's Event IDs 1..=throughSequence in order",
        ));
    }
    let created_at = Micros::parse(created_text).unwrap_or_default();
    let floor = last_activity(cx.state, gs);
    if created_at < floor || created_at > cmd.issued_at {
        return Err(Rejection::invalid(
            "the snapshot createdAt must lie between the Group's last Event and the Command",
        )
        .detail("createdAt", created_text)
        .detail("notBefore", floor.format())
        .detail("notAfter", cmd.issued_at.format()));
    }
    let snapshot_id = parsed.snapshot_id.as_str().to_owned();
    guards::new_id(cx.state, "Group Snapshot", &snapshot_id)?;
    if cx
        .state
        .groups
        .values()
        .any(|g| g.group.archive_snapshot_id.as_deref() == Some(snapshot_id.as_str()))
    {
        return Err(Rejection::invalid(format!(
            "Group Snapshot id {snapshot_id} is already in use"
        ))
        .detail("id", snapshot_id.as_str()));
    }
    let state_hash = doc.pointer("/stateHash").cloned().unwrap_or(Value::Null);
    Ok(vec![
        EventDraft::group(
            group_id,
            SNAPSHOT_CREATED,
            SnapshotCreated {
                snapshot_id: snapshot_id.clone(),
                through_sequence: through,
                state_hash,
            }
            .to_object(),
        ),
        EventDraft::group(
            group_id,
            ARCHIVED,
            GroupArchived {
                snapshot_id,
                archived_at: cx.now,
            }
            .to_object(),
        ),
    ])
}

fn apply_archived(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let GroupArchived {
        snapshot_id,
        archived_at: at,
    } = GroupArchived::read(ev)?;
    let g = ev.group_id.ok_or_else(|| ApplyError::missing_group(ev))?;
    let gs = state
        .groups
        .get_mut(g)
        .ok_or_else(|| ApplyError::unknown(ev, "Group", g))?;
    gs.group.archived_at = Some(at);
    gs.group.archive_snapshot_id = Some(snapshot_id);
    Ok(())
}
