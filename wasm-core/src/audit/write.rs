//! Writing a bundle: the parts in, canonical lines out, sealed when a key is given. The
//! exporter (the CLI, the console) gathers the parts; nothing here reads a store.

use super::{AuditError, FORMAT, SEAL_DOMAIN, VERSION};
use crate::crypto::ed25519::Signer;
use crate::encoding::b64url_encode;
use crate::json::{self, Object, Value};
use crate::model::ToJson;
use crate::model::common::Actor;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// What a bundle holds, as the exporter found it.
#[derive(Clone, Debug)]
pub struct Assembly {
    pub organization_id: String,
    /// When the export was taken (RFC 3339 UTC, `Z`): the seal's signed time.
    pub exported_at: String,
    /// The selected Groups with their last sequence at the export.
    pub groups: Vec<(String, u64)>,
    /// The Registry evidence (the `GET /api/registry` shape).
    pub registry: Value,
    /// The Agent Cards in force (signed documents).
    pub agent_cards: Vec<Value>,
    /// The Events, in the authority's append order; each its stored JCS bytes.
    pub events: Vec<Vec<u8>>,
    /// The First-Admission Records of the Commands behind those Events (JCS bytes).
    pub admissions: Vec<Vec<u8>>,
    /// The signed Commands of the humans' decisions among them, as the store kept them
    /// (written in JCS: the signature covers the JCS form, so it still verifies).
    pub commands: Vec<Vec<u8>>,
    /// Artifact hashes with their content when exported.
    pub artifacts: Vec<(String, Option<Vec<u8>>)>,
}

/// The key that seals a bundle: a Principal of the Registry (the CLI uses the Group
/// Authority's own key).
pub struct Sealer<'a> {
    pub signer: &'a Signer,
    pub key_id: &'a str,
    pub principal: &'a Actor,
}

fn line(out: &mut Vec<u8>, v: &Value) -> Result<(), AuditError> {
    json::canonicalize_into(v, out).map_err(|e| AuditError::Write(e.to_string()))?;
    out.push(b'\n');
    Ok(())
}

/// A stored document as one line: parsed and written again in canonical form. A stored Event
/// is canonical already (its bytes are the authority's, byte for byte); one that is not is
/// refused here rather than by the auditor. A First-Admission Record is unsigned: its stored
/// bytes are strict JSON, written here in JCS. A Command is stored as its sender sent it
/// (any spacing and member order): written here in JCS, which its signature covers (§6.4
/// stage 5), so its signature and signing hash are unchanged.
fn raw_line(out: &mut Vec<u8>, bytes: &[u8], what: &str) -> Result<(), AuditError> {
    let v = json::parse(bytes).map_err(|e| AuditError::Write(format!("{what}: {e}")))?;
    let start = out.len();
    line(out, &v)?;
    if what == "an Event" && out.get(start..out.len() - 1) != Some(bytes) {
        return Err(AuditError::Write(format!(
            "{what} is not stored in its canonical form"
        )));
    }
    Ok(())
}

/// The seal's signed message for `before` (every byte before the seal line).
pub(super) fn seal_message(before: &[u8]) -> Vec<u8> {
    let mut m = SEAL_DOMAIN.to_vec();
    m.extend_from_slice(&Sha256::digest(before));
    m
}

/// Writes the bundle: header, Registry, Agent Cards, Events, admission records, Commands,
/// Artifacts, and the seal when `sealer` is given. Artifacts are sorted by hash and deduplicated.
pub fn assemble(a: &Assembly, sealer: Option<&Sealer<'_>>) -> Result<Vec<u8>, AuditError> {
    let mut artifacts = a.artifacts.clone();
    artifacts.sort_by(|x, y| x.0.cmp(&y.0));
    artifacts.dedup_by(|x, y| x.0 == y.0);
    let groups = a
        .groups
        .iter()
        .map(|(g, head)| {
            Value::Object(Object::from_iter([
                ("groupId", Value::string(g.clone())),
                ("head", Value::from(*head)),
            ]))
        })
        .collect();
    let header = Object::from_iter([
        ("format", Value::string(FORMAT)),
        ("version", Value::from(VERSION)),
        ("organizationId", Value::string(a.organization_id.clone())),
        ("exportedAt", Value::string(a.exported_at.clone())),
        ("groups", Value::Array(groups)),
        ("agentCards", Value::from(a.agent_cards.len() as u64)),
        ("events", Value::from(a.events.len() as u64)),
        ("admissions", Value::from(a.admissions.len() as u64)),
        ("commands", Value::from(a.commands.len() as u64)),
        ("artifacts", Value::from(artifacts.len() as u64)),
    ]);
    let mut out = Vec::new();
    line(&mut out, &Value::Object(header))?;
    line(&mut out, &a.registry)?;
    for card in &a.agent_cards {
        line(&mut out, card)?;
    }
    for e in &a.events {
        raw_line(&mut out, e, "an Event")?;
    }
    for r in &a.admissions {
        raw_line(&mut out, r, "a First-Admission Record")?;
    }
    for c in &a.commands {
        raw_line(&mut out, c, "a Command")?;
    }
    for (hash, content) in &artifacts {
        let mut o = Object::from_iter([("hash", Value::string(hash.clone()))]);
        if let Some(c) = content {
            o.insert("content", Value::string(b64url_encode(c)));
        }
        line(&mut out, &Value::Object(o))?;
    }
    if let Some(s) = sealer {
        let signature = s.signer.sign(&seal_message(&out));
        let seal = Object::from_iter([
            ("keyId", Value::string(s.key_id.to_owned())),
            ("signer", s.principal.to_json()),
            ("value", Value::string(b64url_encode(&signature))),
        ]);
        line(
            &mut out,
            &Value::Object(Object::from_iter([("seal", Value::Object(seal))])),
        )?;
    }
    Ok(out)
}

/// The Artifact hashes an Event names (what a bundle's Artifact lines may list): a published
/// manifest's `contentHash`, an Approval's or a submission's `artifactHashes`.
pub fn artifact_hashes(event: &Value, out: &mut BTreeSet<String>) {
    let mut add = |v: Option<&Value>| match v {
        Some(Value::Array(a)) => out.extend(a.iter().filter_map(Value::as_str).map(str::to_owned)),
        Some(Value::String(s)) => {
            out.insert(s.as_str().to_owned());
        }
        _ => {}
    };
    add(event.pointer("/payload/artifact/contentHash"));
    add(event.pointer("/payload/approval/artifactHashes"));
    add(event.pointer("/payload/artifactHashes"));
}
