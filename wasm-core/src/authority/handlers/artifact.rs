//! Artifact publication (§13.1; payloads.md §6.30, §9.2).
//!
//! ```text
//! artifact.publish (owning Worker, current Execution Lease, status active)
//!   ─ manifest: compact, producer-signed (Ed25519 over JCS of the 14 other members, verified
//!     with the public key of the producer's Agent Card, not a Registry key)
//!   ─ provenance: every source hash stored, in this Mission's lineage, classification never
//!     downgraded
//!   ─▶ artifact.published {artifact}: stored; its id joins the WorkItem's artifactIds (sorted);
//!      WorkItem revision + 1
//! ```

use super::work_exec::strip_strings;
use super::{Ctx, Decision, payload};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::artifact::ArtifactPublished;
use crate::authority::payload::Reader;
use crate::authority::projection::Mission;
use crate::authority::rejection::Rejection;
use crate::authority::state::State;
use crate::authority::{EventDraft, guards};
use crate::crypto::ed25519;
use crate::encoding::{b64url_decode, is_sha256_hash};
use crate::json::{Object, Value};
use crate::model::error::ErrorCode;
use crate::model::work_item::WorkItemState;

pub const PUBLISHED: &str = "artifact.published";

/// `dataClassification`, lowest first.
pub const CLASSIFICATIONS: [&str; 4] = ["public", "internal", "confidential", "restricted"];

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        PUBLISHED => apply_published(state, ev),
        _ => return None,
    })
}

fn rank(classification: &str) -> usize {
    CLASSIFICATIONS
        .iter()
        .position(|c| *c == classification)
        .unwrap_or(0)
}

/// A string-to-string map (`toolVersions`, `modelVersions`); absent means `{}`.
fn string_map(r: &mut Reader, name: &str) -> Object {
    let o = r.free_object(name);
    for (k, v) in o.iter() {
        if !matches!(v, Value::String(_)) {
            r.error(&format!("{name}.{}", k.as_str()), "expected a string");
        }
    }
    match strip_strings(Value::Object(o)) {
        Value::Object(o) => o,
        _ => Object::new(),
    }
}

/// Reads the compact manifest with every member present, in the form the producer signs
/// (payloads.md §9.2): strings stripped, `null` / `[]` / `{}` for empty values, `createdAt` in
/// UTC with `Z`. Returns the manifest object (with `signature`).
fn read_manifest(r: &mut Reader) -> Object {
    let id = r.id("id");
    let content_hash = r.string("contentHash");
    if !content_hash.is_empty() && !is_sha256_hash(&content_hash) {
        r.error("contentHash", "must match ^sha256:[0-9a-f]{64}$");
    }
    let media_type = r.id("mediaType");
    let schema_uri = r.opt_string("schemaUri");
    let producer = r.id("producingAgentId");
    let card_version = r.int("agentCardVersion", 1, crate::json::MAX_SAFE_INTEGER, None);
    let mission_id = r.id("missionId");
    let group_id = r.id("groupId");
    let work_item_id = r.id("workItemId");
    let sources = r.strings("sourceArtifactHashes");
    for (i, s) in sources.iter().enumerate() {
        if !is_sha256_hash(s) {
            r.error(
                &format!("sourceArtifactHashes[{i}]"),
                "must match ^sha256:[0-9a-f]{64}$",
            );
        }
        if sources[..i].contains(s) {
            r.error(
                "sourceArtifactHashes",
                "Artifact source hashes must be unique",
            );
        }
    }
    if sources.contains(&content_hash) {
        r.error(
            "sourceArtifactHashes",
            "Artifact cannot cite its own content hash as provenance",
        );
    }
    let tool_versions = string_map(r, "toolVersions");
    let model_versions = string_map(r, "modelVersions");
    let created_at = r.ts("createdAt");
    let classification = r.choice("dataClassification", &CLASSIFICATIONS, None);
    let signature = r.id("signature");
    payload(vec![
        ("id", Value::string(id)),
        ("contentHash", Value::string(content_hash)),
        ("mediaType", Value::string(media_type)),
        ("schemaUri", schema_uri.map_or(Value::Null, Value::string)),
        ("producingAgentId", Value::string(producer)),
        ("agentCardVersion", Value::from(card_version)),
        ("missionId", Value::string(mission_id)),
        ("groupId", Value::string(group_id)),
        ("workItemId", Value::string(work_item_id)),
        (
            "sourceArtifactHashes",
            Value::Array(sources.into_iter().map(Value::string).collect()),
        ),
        ("toolVersions", Value::Object(tool_versions)),
        ("modelVersions", Value::Object(model_versions)),
        ("createdAt", Value::string(created_at.format())),
        ("dataClassification", Value::string(classification)),
        ("signature", Value::string(signature)),
    ])
}

fn text<'o>(o: &'o Object, name: &str) -> &'o str {
    o.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// Whether the manifest's `signature` verifies over the JCS of the manifest without it, with
/// the base64url Ed25519 public key `public_key`.
pub fn manifest_signature_valid(manifest: &Object, public_key: &str) -> bool {
    let mut unsigned = manifest.clone();
    let Some(Value::String(sig)) = unsigned.remove("signature") else {
        return false;
    };
    let Ok(bytes) = crate::json::canonicalize(&Value::Object(unsigned)) else {
        return false;
    };
    let key = b64url_decode(public_key)
        .ok()
        .and_then(|k| ed25519::StrictPublicKey::from_bytes(&k).ok());
    let sig = b64url_decode(sig.as_str())
        .ok()
        .and_then(|s| ed25519::StrictSignature::from_bytes(&s).ok());
    match (key, sig) {
        (Some(k), Some(s)) => ed25519::verify(&k, &s, &bytes),
        _ => false,
    }
}

/// `candidate` lies strictly below `ancestor_id` in the Mission tree.
fn is_descendant(state: &State, candidate: &Mission, ancestor_id: &str) -> bool {
    let mut seen = 0usize;
    let mut parent = candidate.parent_mission_id.as_deref();
    while let Some(p) = parent {
        if p == ancestor_id {
            return true;
        }
        seen += 1;
        if seen > state.missions.len() {
            return false;
        }
        parent = state
            .missions
            .get(p)
            .and_then(|m| m.parent_mission_id.as_deref());
    }
    false
}

/// `artifact.publish`: the owning Worker publishes a producer-signed manifest.
pub fn decide_publish(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let manifest = r.nested("artifact", true, read_manifest);
    let epoch = r.int("ownershipEpoch", 1, crate::json::MAX_SAFE_INTEGER, None);
    let lease_id = r.id("executionLeaseId");
    r.finish(&cmd.kind)?;
    let manifest = manifest.ok_or_else(|| Rejection::invalid("artifact is required"))?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    let w = guards::work(cx.state, g, text(&manifest, "workItemId"))?;
    // D-24: expectedRevision is compared wherever it is sent (the reference ignores it).
    guards::revision(cmd, w.revision)?;
    guards::work_owner(w, cmd, epoch, cx.now)?;
    if w.status != WorkItemState::Active {
        return Err(Rejection::transition(format!(
            "cannot publish an Artifact for a WorkItem that is {}",
            w.status
        ))
        .detail("workItemId", w.id.as_str()));
    }
    guards::exec_lease(cx.state, w, cmd, &lease_id, cx.now)?;
    let artifact_id = text(&manifest, "id");
    guards::new_id(cx.state, "Artifact", artifact_id)?;
    if text(&manifest, "groupId") != g.group.id || text(&manifest, "missionId") != mission.id {
        return Err(Rejection::invalid(
            "Artifact provenance does not match the Command Group",
        ));
    }
    let producer = text(&manifest, "producingAgentId");
    if producer != cmd.actor.id.as_str() {
        return Err(Rejection::forbidden(
            "Artifact producer must be the current WorkItem owner",
        ));
    }
    let card_version = match manifest.get("agentCardVersion") {
        Some(Value::Number(n)) => n.as_safe_u64(),
        _ => None,
    };
    if card_version != w.assigned_agent_card_version {
        return Err(Rejection::new(
            ErrorCode::RevisionConflict,
            "Artifact Agent Card version differs from the pinned assignment version",
        )
        .detail(
            "currentRevision",
            w.assigned_agent_card_version.unwrap_or(0),
        )
        .detail("expectedRevision", card_version.unwrap_or(0)));
    }
    let card = guards::card(cx.state, producer)?;
    if !manifest_signature_valid(&manifest, &card.public_key) {
        return Err(Rejection::forbidden(
            "Artifact manifest signature is invalid",
        ));
    }
    let created_at = crate::authority::Micros::parse(text(&manifest, "createdAt"));
    if created_at.is_none_or(|t| t > cx.now) {
        return Err(Rejection::invalid(
            "Artifact creation time cannot be in the future",
        ));
    }
    let own_rank = rank(text(&manifest, "dataClassification"));
    let sources: Vec<&str> = match manifest.get("sourceArtifactHashes") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for hash in sources {
        let found: Vec<&Object> = cx
            .state
            .artifacts
            .values()
            .filter(|a| text(a, "contentHash") == hash)
            .collect();
        if found.is_empty() {
            return Err(Rejection::invalid(
                "Artifact provenance source is not present in authoritative state",
            )
            .detail("sourceArtifactHash", hash));
        }
        let related: Vec<&&Object> = found
            .iter()
            .filter(|a| {
                cx.state
                    .missions
                    .get(text(a, "missionId"))
                    .is_some_and(|source| {
                        source.id == mission.id
                            || is_descendant(cx.state, mission, &source.id)
                            || is_descendant(cx.state, source, &mission.id)
                    })
            })
            .collect();
        if related.is_empty() {
            return Err(Rejection::forbidden(
                "Artifact provenance cannot cross unrelated Mission boundaries without publication",
            )
            .detail("sourceArtifactHash", hash));
        }
        let required = related
            .iter()
            .map(|a| rank(text(a, "dataClassification")))
            .max()
            .unwrap_or(0);
        // D-6: a classification downgrade is a permission failure, not an approval gate.
        if own_rank < required {
            return Err(Rejection::forbidden(
                "derived Artifact cannot downgrade its source classification",
            )
            .detail("sourceArtifactHash", hash)
            .detail("requiredClassification", CLASSIFICATIONS[required]));
        }
    }
    Ok(vec![EventDraft::group(
        &g.group.id,
        PUBLISHED,
        ArtifactPublished { artifact: manifest }.to_object(),
    )])
}

pub fn apply_published(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let ArtifactPublished { artifact: manifest } = ArtifactPublished::read(ev)?;
    let id = text(&manifest, "id").to_owned();
    let work_id = text(&manifest, "workItemId").to_owned();
    let w = state
        .work_items
        .get_mut(&work_id)
        .ok_or_else(|| ApplyError::unknown(ev, "WorkItem", &work_id))?;
    w.artifact_ids.push(id.clone());
    crate::order::sort(&mut w.artifact_ids);
    w.revision += 1;
    w.updated_at = ev.occurred_at;
    state.artifacts.insert(id, manifest);
    Ok(())
}
