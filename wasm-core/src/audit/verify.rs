//! Verifying a bundle offline: every line strict and canonical, every signature by its key's
//! validity window (§6.4, the six stages), every Group's sequence gapless and every transition
//! replayed by the authority's own reducer (`evolve::apply`), the admission records bound to
//! the Events they admitted, the humans' signed Commands verified and bound to the Events they
//! caused, the Artifacts' content to their hashes, and the seal. Then the summary: who decided
//! what, when, on which evidence, with which signed Command.

use super::write::seal_message;
use super::{AuditError, EventAt, EventFailure, FORMAT, MAX_BUNDLE_BYTES, MAX_LINES, Section};
use crate::authority::evolve;
use crate::authority::state::State;
use crate::crypto::ed25519::{self, StrictSignature};
use crate::crypto::{DocumentKind, RegistryEvidence, ValidatedRegistry, verify as v};
use crate::encoding::{b64url_decode, is_sha256_hash, sha256_hash};
use crate::json::{self, Object, Value};
use crate::model::common::ActorType;
use crate::model::first_admission_record::{self, FirstAdmissionRecord};
use crate::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A key that signed something in the bundle, for the auditor to compare with a Registry
/// obtained elsewhere (the bundle's own Registry is evidence as exported, not a trust anchor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignerKey {
    pub key_id: String,
    pub principal: String,
    pub public_key: String,
}

/// Who sealed the bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealSummary {
    pub signer: String,
    pub key: SignerKey,
}

/// One selected Group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSummary {
    pub group_id: String,
    pub mission_id: Option<String>,
    pub mission_title: Option<String>,
    pub events: u64,
}

/// The Approval a decision's Event records (§7.3, §12): what was approved, on which evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalSummary {
    pub approval_id: String,
    /// `type:id`.
    pub approver: String,
    pub approved_at: String,
    pub mission_revision: Option<u64>,
    pub work_item_id: Option<String>,
    /// The Artifact set approved (a final or child Mission approval).
    pub artifact_hashes: Vec<String>,
    /// The operations approved (an execution gate).
    pub operations: Vec<String>,
    /// The approving Command's `signature.value`, as the authority recorded it.
    pub command_signature: String,
}

/// The signed Command behind a decision, verified in the bundle: its signature by its
/// signer's key valid at its signed time, and its signing hash the Event's `commandHash`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandSummary {
    /// Its line in the bundle.
    pub line: usize,
    /// The Command's `actionId` (the Events' `cause.id`).
    pub action_id: String,
    /// The Command kind (`mission.approve`, …).
    pub kind: String,
    /// The key that signed it and its signed time (§6.4 stage 4).
    pub key_id: String,
    pub signed_at: String,
    /// Its signing hash (the Events' `commandHash`).
    pub signing_hash: String,
}

/// A decision: an Event a human caused, or one that carries a signed Approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub at: EventAt,
    /// The Event kind (`mission.created`, `mission.approved`, …).
    pub kind: String,
    /// `type:id` of the Event's actor.
    pub decider: String,
    pub occurred_at: String,
    /// The Command's admission (its key and the authority's trusted time), when recorded.
    pub admitted_key: Option<String>,
    pub admitted_at: Option<String>,
    pub approval: Option<ApprovalSummary>,
    /// Whether a human caused it (a human's decision should have its signed Command).
    pub human: bool,
    /// The signed Command that caused it, verified; `None` when the bundle does not hold it
    /// (a store that did not keep it, an Agent's Command, or the console's export).
    pub command: Option<CommandSummary>,
}

/// What a verified bundle says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub organization_id: String,
    pub exported_at: String,
    pub seal: Option<SealSummary>,
    pub groups: Vec<GroupSummary>,
    pub agent_cards: usize,
    pub events: usize,
    /// Signatures checked: Events, Artifact manifests, Agent Cards, the seal.
    pub signatures: usize,
    pub admissions: usize,
    /// Signed Commands verified.
    pub commands: usize,
    pub decisions: Vec<Decision>,
    pub artifacts: usize,
    pub artifact_contents: usize,
    /// The keys that signed the Events (the authority's).
    pub event_keys: Vec<SignerKey>,
}

impl Summary {
    /// The summary as plain text lines (the CLI prints them).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!(
                "audit bundle of {} exported at {}",
                self.organization_id, self.exported_at
            ),
            match &self.seal {
                Some(s) => format!(
                    "sealed by {} with key {} ({})",
                    s.signer, s.key.key_id, s.key.public_key
                ),
                None => "not sealed: the header, Registry, admission records and Artifact list \
                         are as the exporter states them, and Commands may have been left out \
                         (every Event and every Command present is still signed)"
                    .to_owned(),
            },
            format!(
                "verified: {} Events in {} Groups, {} signatures, {} Agent Cards, {} \
                 First-Admission Records, {} signed Commands, {} Artifacts ({} with content)",
                self.events,
                self.groups.len(),
                self.signatures,
                self.agent_cards,
                self.admissions,
                self.commands,
                self.artifacts,
                self.artifact_contents
            ),
        ];
        let human = self.decisions.iter().filter(|d| d.human).count();
        let missing = self.missing_commands();
        if human > 0 {
            let mut s = format!(
                "human decisions: {human}, {} with their signed Command verified, {missing} \
                 without",
                human - missing
            );
            if missing > 0 {
                s.push_str(if self.seal.is_some() {
                    " (Command not recorded: the store kept no Command before it kept humans' \
                     Commands)"
                } else {
                    " (Command not in the bundle: an unsealed export leaves them out)"
                });
            }
            out.push(s);
        }
        for k in &self.event_keys {
            out.push(format!(
                "Events signed by {} with key {} ({})",
                k.principal, k.key_id, k.public_key
            ));
        }
        for g in &self.groups {
            out.push(format!(
                "Group {} (Mission {}{}): {} Events",
                g.group_id,
                g.mission_id.as_deref().unwrap_or("?"),
                g.mission_title
                    .as_deref()
                    .map(|t| format!(" \"{t}\""))
                    .unwrap_or_default(),
                g.events
            ));
        }
        for d in &self.decisions {
            let mut s = format!(
                "{} {} by {} (Group {} sequence {}, Event {})",
                d.occurred_at, d.kind, d.decider, d.at.group_id, d.at.sequence, d.at.event_id
            );
            if let (Some(k), Some(t)) = (&d.admitted_key, &d.admitted_at) {
                s.push_str(&format!("; admitted at {t} under key {k}"));
            }
            match &d.command {
                Some(c) => s.push_str(&format!(
                    "; Command {} ({}) signed at {} under key {}, verified",
                    c.action_id, c.kind, c.signed_at, c.key_id
                )),
                None if d.human => s.push_str(if self.seal.is_some() {
                    "; Command not recorded"
                } else {
                    "; Command not in the bundle"
                }),
                None => {}
            }
            if let Some(a) = &d.approval {
                s.push_str(&format!(
                    "; Approval {} by {} at {}",
                    a.approval_id, a.approver, a.approved_at
                ));
                if let Some(w) = &a.work_item_id {
                    s.push_str(&format!(", WorkItem {w}"));
                }
                if let Some(r) = a.mission_revision {
                    s.push_str(&format!(", Mission revision {r}"));
                }
                if !a.operations.is_empty() {
                    s.push_str(&format!(", operations {}", a.operations.join(" ")));
                }
                if !a.artifact_hashes.is_empty() {
                    s.push_str(&format!(", on Artifacts {}", a.artifact_hashes.join(" ")));
                }
            }
            out.push(s);
        }
        out
    }
}

impl Summary {
    /// How many human decisions have no signed Command in the bundle.
    pub fn missing_commands(&self) -> usize {
        self.decisions
            .iter()
            .filter(|d| d.human && d.command.is_none())
            .count()
    }
}

/// One line: strictly parsed, and its bytes exactly the JCS of what was parsed.
fn canonical_line(raw: &[u8]) -> Result<Value, String> {
    let v = json::parse(raw).map_err(|e| e.to_string())?;
    let again = json::canonicalize(&v).map_err(|e| e.to_string())?;
    if again != raw {
        let at = again
            .iter()
            .zip(raw)
            .position(|(a, b)| a != b)
            .unwrap_or(again.len().min(raw.len()));
        return Err(format!("not in canonical (JCS) form from byte {at}"));
    }
    Ok(v)
}

fn closed(o: &Object, allowed: &[&str]) -> Result<(), String> {
    match o.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((k, _)) => Err(format!("unknown member {:?}", k.as_str())),
        None => Ok(()),
    }
}

fn count(o: &Object, name: &str) -> Result<usize, String> {
    o.get(name)
        .and_then(|v| match v {
            Value::Number(n) => n.as_safe_u64(),
            _ => None,
        })
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("{name} is not a count"))
}

fn text<'v>(o: &'v Object, name: &str) -> Result<&'v str, String> {
    o.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{name} is missing or not a string"))
}

struct Header {
    organization_id: String,
    exported_at: Timestamp,
    groups: Vec<(String, u64)>,
    agent_cards: usize,
    events: usize,
    admissions: usize,
    commands: usize,
    artifacts: usize,
}

fn header(v: &Value) -> Result<Header, String> {
    let o = v.as_object().ok_or("not an object")?;
    closed(
        o,
        &[
            "format",
            "version",
            "organizationId",
            "exportedAt",
            "groups",
            "agentCards",
            "events",
            "admissions",
            "commands",
            "artifacts",
        ],
    )?;
    if text(o, "format")? != FORMAT {
        return Err(format!("format is not {FORMAT:?}"));
    }
    // Version 1 holds no Commands (and has no count for them); version 2 counts them.
    let commands = match count(o, "version")? {
        1 if o.get("commands").is_none() => 0,
        1 => return Err("a version 1 bundle has no commands".into()),
        2 => count(o, "commands")?,
        _ => return Err(format!("version is not 1 or {}", super::VERSION)),
    };
    let exported_at =
        Timestamp::parse_profile(text(o, "exportedAt")?).map_err(|e| format!("exportedAt: {e}"))?;
    let Some(Value::Array(gs)) = o.get("groups") else {
        return Err("groups is not an array".into());
    };
    let mut groups = Vec::with_capacity(gs.len());
    let mut seen = HashSet::new();
    for g in gs {
        let go = g.as_object().ok_or("a group is not an object")?;
        closed(go, &["groupId", "head"])?;
        let id = text(go, "groupId")?.to_owned();
        let head = count(go, "head")?;
        if !seen.insert(id.clone()) {
            return Err(format!("Group {id} is selected twice"));
        }
        groups.push((id, head as u64));
    }
    Ok(Header {
        organization_id: text(o, "organizationId")?.to_owned(),
        exported_at,
        groups,
        agent_cards: count(o, "agentCards")?,
        events: count(o, "events")?,
        admissions: count(o, "admissions")?,
        commands,
        artifacts: count(o, "artifacts")?,
    })
}

fn key_of(b: &crate::crypto::KeyBinding) -> SignerKey {
    SignerKey {
        key_id: b.key_id.clone(),
        principal: format!("{}:{}", b.principal.actor_type.as_str(), b.principal.id.0),
        public_key: b.public_key_text.clone(),
    }
}

/// The bytes of each line (without its `\n`), refusing what is not JSON Lines as written.
fn split_lines(bytes: &[u8]) -> Result<Vec<&[u8]>, AuditError> {
    if bytes.len() > MAX_BUNDLE_BYTES {
        return Err(AuditError::TooLarge {
            what: "bytes",
            max: MAX_BUNDLE_BYTES,
        });
    }
    if bytes.is_empty() {
        return Err(AuditError::Lines("the file is empty".into()));
    }
    let Some(body) = bytes.strip_suffix(b"\n") else {
        return Err(AuditError::Lines("the last line has no newline".into()));
    };
    let lines: Vec<&[u8]> = body.split(|b| *b == b'\n').collect();
    if lines.len() > MAX_LINES {
        return Err(AuditError::TooLarge {
            what: "lines",
            max: MAX_LINES,
        });
    }
    Ok(lines)
}

/// What the Events name and the later sections check against.
#[derive(Default)]
struct Seen {
    event_ids: HashSet<String>,
    /// Command hash → the actor (`type:id`) of its Events and the `cause.id`s they name.
    commands: BTreeMap<String, Caused>,
    /// Command hash → the decisions its Events are (for the Command lines).
    decided_by: BTreeMap<String, Vec<usize>>,
    /// Command hash → the key its First-Admission Record names.
    admitted_keys: BTreeMap<String, String>,
    /// Decisions waiting for their admission record: command hash → (decision index, whether
    /// a human decided: a human's decision must have one).
    awaiting: BTreeMap<String, Vec<(usize, bool)>>,
    artifact_hashes: BTreeSet<String>,
    last: BTreeMap<String, u64>,
    event_keys: BTreeMap<String, SignerKey>,
    cards: CardKeys,
}

/// What the Events caused by one Command say of it.
struct Caused {
    /// `type:id`.
    actor: String,
    /// The `cause.id` of those whose cause is a Command: its `actionId`.
    action_ids: BTreeSet<String>,
}

/// Verifies a bundle; the first failure, in file order, is the error.
pub fn verify(bytes: &[u8]) -> Result<Summary, AuditError> {
    verify_reporting(bytes, &mut |_, _| {})
}

/// [`verify`], telling `progress` (lines checked, lines in the bundle) after each Event line
/// (the lines that cost: a signature check and a replay each), so that a caller verifying a
/// large bundle off the page (the console's bundle runner) can show how far it is.
pub fn verify_reporting(
    bytes: &[u8],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Summary, AuditError> {
    let lines = split_lines(bytes)?;
    let line_err = |i: usize, section: Section, reason: String| AuditError::Line {
        line: i + 1,
        section,
        reason,
    };
    let first = lines.first().copied().unwrap_or_default();
    let h = canonical_line(first)
        .and_then(|v| header(&v))
        .map_err(|r| line_err(0, Section::Header, r))?;
    let registry_raw = lines.get(1).copied().unwrap_or_default();
    let registry: ValidatedRegistry = canonical_line(registry_raw)
        .and_then(|v| RegistryEvidence::from_registry_json(&v).map_err(|e| e.to_string()))
        .and_then(|e| e.validate().map_err(|e| e.to_string()))
        .map_err(|r| line_err(1, Section::Registry, r))?;
    if registry.organization_id() != h.organization_id {
        return Err(line_err(
            1,
            Section::Registry,
            format!(
                "the Registry is {}'s, the header names {}",
                registry.organization_id(),
                h.organization_id
            ),
        ));
    }
    let cards_at = 2;
    let events_at = cards_at + h.agent_cards;
    let admissions_at = events_at.saturating_add(h.events);
    let commands_at = admissions_at.saturating_add(h.admissions);
    let artifacts_at = commands_at.saturating_add(h.commands);
    let end = artifacts_at.saturating_add(h.artifacts);
    let sealed = lines.len() == end + 1;
    let mut signatures = 0usize;
    let mut seen = Seen::default();
    for i in cards_at..events_at {
        let raw = lines.get(i).copied().unwrap_or_default();
        let card = canonical_line(raw)
            .and_then(|c| {
                v::verify_value(c, DocumentKind::AgentCard, &registry).map_err(|e| e.to_string())
            })
            .map_err(|r| line_err(i, Section::AgentCard, r))?;
        card_keys(&card.document, &mut seen.cards);
        signatures += 1;
    }
    let mut state = State::default();
    let mut decisions = Vec::new();
    if lines.len() != end && !sealed {
        // Still check the Events first, so that a removed Event is named by the gap it leaves.
        let last = admissions_at.min(lines.len());
        for i in events_at..last {
            let raw = lines.get(i).copied().unwrap_or_default();
            event(i, raw, &h, &registry, &mut state, &mut seen, &mut decisions)?;
        }
        return Err(AuditError::Count {
            expected: end,
            found: lines.len(),
        });
    }
    for i in events_at..admissions_at {
        let raw = lines.get(i).copied().unwrap_or_default();
        signatures += event(i, raw, &h, &registry, &mut state, &mut seen, &mut decisions)?;
        progress(i + 1, lines.len());
    }
    for (g, head) in &h.groups {
        let found = seen.last.get(g).copied().unwrap_or(0);
        if found != *head {
            return Err(AuditError::Head {
                group_id: g.clone(),
                head: *head,
                found,
            });
        }
    }
    let mut admitted = BTreeSet::new();
    for i in admissions_at..commands_at {
        let raw = lines.get(i).copied().unwrap_or_default();
        let rec = canonical_line(raw)
            .and_then(|r| {
                first_admission_record::validate(&r, true)
                    .map_err(|e| e.to_string())
                    .and_then(|()| {
                        crate::model::from_value::<FirstAdmissionRecord>(&r, true)
                            .map_err(|e| e.to_string())
                    })
            })
            .map_err(|r| line_err(i, Section::Admission, r))?;
        let hash = rec.signing_hash.0.clone();
        let principal = format!(
            "{}:{}",
            rec.principal.actor_type.as_str(),
            rec.principal.id.0
        );
        let reason = if rec.organization_id.0 != h.organization_id {
            Some("of another Organization".to_owned())
        } else if !admitted.insert(hash.clone()) {
            Some(format!("{hash} is recorded twice"))
        } else {
            match seen.commands.get(&hash).map(|c| &c.actor) {
                None => Some(format!("no Event of the bundle was caused by {hash}")),
                Some(actor) if *actor != principal => Some(format!(
                    "it admits {principal}, the Events name {actor} as their actor"
                )),
                Some(_) => match registry.binding(&rec.key_id.0) {
                    Some(b) if key_of(b).principal == principal => None,
                    Some(_) => Some(format!("key {} is not {principal}'s", rec.key_id.0)),
                    None => Some(format!("key {} is not in the Registry", rec.key_id.0)),
                },
            }
        };
        if let Some(r) = reason {
            return Err(line_err(i, Section::Admission, r));
        }
        seen.admitted_keys
            .insert(hash.clone(), rec.key_id.0.clone());
        for (d, _) in seen.awaiting.remove(&hash).unwrap_or_default() {
            if let Some(dec) = decisions.get_mut(d) {
                let dec: &mut Decision = dec;
                dec.admitted_key = Some(rec.key_id.0.clone());
                dec.admitted_at = Some(rec.trusted_accepted_at.as_str().to_owned());
            }
        }
    }
    // A sealed bundle (the CLI's, which reads the store) holds every record; an unsealed one
    // (the console's, which holds none) says so in its summary.
    if let Some((hash, d)) = seen.awaiting.iter().filter(|_| sealed).find_map(|(h, ds)| {
        ds.iter()
            .find(|(_, human)| *human)
            .and_then(|(d, _)| decisions.get(*d))
            .map(|d| (h, d))
    }) {
        return Err(AuditError::Event {
            at: Box::new(d.at.clone()),
            failure: Box::new(EventFailure::NoAdmission(hash.clone())),
        });
    }
    let mut commanded = BTreeSet::new();
    for i in commands_at..artifacts_at {
        let raw = lines.get(i).copied().unwrap_or_default();
        signatures += command(i, raw, &registry, &seen, &mut commanded, &mut decisions)?;
    }
    let mut artifact_contents = 0;
    let mut previous: Option<String> = None;
    for i in artifacts_at..end {
        let raw = lines.get(i).copied().unwrap_or_default();
        let with_content = canonical_line(raw)
            .and_then(|a| artifact(&a, previous.as_deref(), &seen.artifact_hashes))
            .map_err(|r| line_err(i, Section::Artifact, r))?;
        artifact_contents += usize::from(with_content.1);
        previous = Some(with_content.0);
    }
    let seal = if sealed {
        signatures += 1;
        Some(seal(bytes, end, &lines, &registry, &h.exported_at)?)
    } else {
        None
    };
    let groups = h
        .groups
        .iter()
        .map(|(g, head)| {
            let mission = state.mission_of_group(g);
            GroupSummary {
                group_id: g.clone(),
                mission_id: mission.map(|m| m.id.clone()),
                mission_title: mission.map(|m| m.title.clone()),
                events: *head,
            }
        })
        .collect();
    Ok(Summary {
        organization_id: h.organization_id,
        exported_at: h.exported_at.as_str().to_owned(),
        seal,
        groups,
        agent_cards: h.agent_cards,
        events: h.events,
        signatures,
        admissions: h.admissions,
        commands: h.commands,
        decisions,
        artifacts: h.artifacts,
        artifact_contents,
        event_keys: seen.event_keys.into_values().collect(),
    })
}

/// The Approval an Event records (`mission.approved`, `approval.execution.granted`): the
/// authority's projection of the approving Command, whose `signature` is that Command's
/// `signature.value`. The human's signature itself is checked on the Command's own line
/// (kept since version 2 of the format; docs/audit.md).
fn approval_of(kind: &str, doc: &Value) -> Option<ApprovalSummary> {
    if !matches!(kind, "mission.approved" | "approval.execution.granted") {
        return None;
    }
    let a = doc.pointer("/payload/approval")?;
    let s = |p: &str| a.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let approver = match (s("/approver/type"), s("/approver/id")) {
        (Some(t), Some(i)) => format!("{t}:{i}"),
        _ => "?".to_owned(),
    };
    Some(ApprovalSummary {
        approval_id: s("/id").unwrap_or_default(),
        approver,
        approved_at: s("/approvedAt").unwrap_or_default(),
        mission_revision: a.pointer("/missionRevision").and_then(|n| match n {
            Value::Number(n) => n.as_safe_u64(),
            _ => None,
        }),
        work_item_id: s("/workItemId"),
        artifact_hashes: hashes_at(a, "/artifactHashes"),
        operations: hashes_at(a, "/operations"),
        command_signature: s("/signature").unwrap_or_default(),
    })
}

/// An `artifact.published` manifest, as the authority checked it (`decide_publish`): signed by
/// a key of its producer's Agent Card of the pinned version (from the bundle's cards), or by
/// the producer's Registry key. Returns its content hash.
fn manifest(doc: &Value, cards: &CardKeys, registry: &ValidatedRegistry) -> Result<String, String> {
    let Some(Value::Object(m)) = doc.pointer("/payload/artifact") else {
        return Err("no manifest".into());
    };
    let producer = m
        .get("producingAgentId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = match m.get("agentCardVersion") {
        Some(Value::Number(n)) => n.as_safe_u64(),
        _ => None,
    };
    let from_card = version
        .and_then(|v| cards.get(&(producer.to_owned(), v)))
        .into_iter()
        .flatten()
        .cloned();
    let from_registry = registry
        .bindings()
        .filter(|b| b.principal.actor_type == ActorType::Agent && b.principal.id.0 == producer)
        .map(|b| b.public_key_text.clone());
    let keys: Vec<String> = from_card.chain(from_registry).collect();
    if !keys
        .iter()
        .any(|k| crate::authority::handlers::artifact::manifest_signature_valid(m, k))
    {
        return Err(format!(
            "the Artifact manifest's signature is not by a key of {producer}'s Agent Card"
        ));
    }
    m.get("contentHash")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "the manifest has no contentHash".into())
}

/// The public keys of each verified Agent Card, by `(agentId, cardVersion)`.
type CardKeys = BTreeMap<(String, u64), Vec<String>>;

fn card_keys(card: &Value, out: &mut CardKeys) {
    let agent = card.pointer("/agentId").and_then(Value::as_str);
    let version = match card.pointer("/cardVersion") {
        Some(Value::Number(n)) => n.as_safe_u64(),
        _ => None,
    };
    if let (Some(a), Some(v), Some(Value::Array(keys))) =
        (agent, version, card.pointer("/publicKeys"))
    {
        out.entry((a.to_owned(), v)).or_default().extend(
            keys.iter()
                .filter_map(|k| k.pointer("/publicKey").and_then(Value::as_str))
                .map(str::to_owned),
        );
    }
}

fn hashes_at(v: &Value, pointer: &str) -> Vec<String> {
    match v.pointer(pointer) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// One Event line; returns how many signatures it held.
fn event(
    i: usize,
    raw: &[u8],
    h: &Header,
    registry: &ValidatedRegistry,
    state: &mut State,
    seen: &mut Seen,
    decisions: &mut Vec<Decision>,
) -> Result<usize, AuditError> {
    let fail = |at: EventAt, failure| AuditError::Event {
        at: Box::new(at),
        failure: Box::new(failure),
    };
    let doc = canonical_line(raw).map_err(|r| {
        fail(
            super::lenient_event_at(i + 1, raw),
            EventFailure::Unreadable(r),
        )
    })?;
    // From here the line parsed: name the Event by what it says.
    let at = super::lenient_event_at(i + 1, raw);
    let verified = v::verify_value(doc, DocumentKind::Event, registry)
        .map_err(|e| fail(at.clone(), EventFailure::Signature(e)))?;
    let doc = &verified.document;
    let mut signatures = 1;
    let group = doc.pointer("/groupId").and_then(Value::as_str);
    if !group.is_some_and(|g| h.groups.iter().any(|(s, _)| s == g)) {
        return Err(fail(at, EventFailure::NotSelected));
    }
    let event_id = doc
        .pointer("/eventId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !seen.event_ids.insert(event_id.to_owned()) {
        return Err(fail(at, EventFailure::Duplicate));
    }
    let kind = doc
        .pointer("/kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let approval = approval_of(&kind, doc);
    if kind == "artifact.published" {
        let hash = manifest(doc, &seen.cards, registry)
            .map_err(|r| fail(at.clone(), EventFailure::Manifest(r)))?;
        signatures += 1;
        seen.artifact_hashes.insert(hash);
    }
    evolve::apply(state, doc).map_err(|e| fail(at.clone(), EventFailure::Replay(e)))?;
    if let Some(a) = &approval {
        seen.artifact_hashes
            .extend(a.artifact_hashes.iter().cloned());
    }
    seen.artifact_hashes
        .extend(hashes_at(doc, "/payload/artifactHashes"));
    if let Some(g) = group {
        let sequence = doc
            .pointer("/sequence")
            .and_then(|n| match n {
                Value::Number(n) => n.as_safe_u64(),
                _ => None,
            })
            .unwrap_or(0);
        seen.last.insert(g.to_owned(), sequence);
    }
    seen.event_keys
        .entry(verified.key_id.clone())
        .or_insert_with(|| key_of(&verified.binding));
    let actor_type = doc.pointer("/actor/type").and_then(Value::as_str);
    let actor = format!(
        "{}:{}",
        actor_type.unwrap_or("?"),
        doc.pointer("/actor/id")
            .and_then(Value::as_str)
            .unwrap_or("?")
    );
    let command_hash = doc
        .pointer("/commandHash")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(c) = &command_hash {
        let caused = seen.commands.entry(c.clone()).or_insert_with(|| Caused {
            actor: actor.clone(),
            action_ids: BTreeSet::new(),
        });
        if caused.actor != actor {
            return Err(fail(
                at,
                EventFailure::AdmissionMismatch(format!(
                    "its Command {c} caused Events of {} and of {actor}",
                    caused.actor
                )),
            ));
        }
        if doc.pointer("/cause/type").and_then(Value::as_str) == Some("command")
            && let Some(id) = doc.pointer("/cause/id").and_then(Value::as_str)
        {
            caused.action_ids.insert(id.to_owned());
        }
    }
    let human = actor_type == Some(ActorType::Human.as_str());
    if human || approval.is_some() {
        if let Some(c) = &command_hash {
            seen.awaiting
                .entry(c.clone())
                .or_default()
                .push((decisions.len(), human));
            seen.decided_by
                .entry(c.clone())
                .or_default()
                .push(decisions.len());
        }
        decisions.push(Decision {
            at,
            kind,
            decider: actor,
            occurred_at: doc
                .pointer("/occurredAt")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            admitted_key: None,
            admitted_at: None,
            approval,
            human,
            command: None,
        });
    }
    Ok(signatures)
}

/// One Command line: canonical; the six stages of §6.4 (its signature by the key bound to its
/// actor, valid at its signed time, in the bundle's Registry); its signing hash the
/// `commandHash` of Events of the bundle, whose actor it is and whose `cause.id` is its
/// `actionId`; once; and signed with the key its First-Admission Record names. Returns how
/// many signatures it held.
fn command(
    i: usize,
    raw: &[u8],
    registry: &ValidatedRegistry,
    seen: &Seen,
    commanded: &mut BTreeSet<String>,
    decisions: &mut [Decision],
) -> Result<usize, AuditError> {
    let fail = |reason: String| AuditError::Command {
        line: i + 1,
        action_id: super::lenient_member(raw, "actionId"),
        reason,
    };
    let doc = canonical_line(raw).map_err(|r| fail(format!("unreadable: {r}")))?;
    let verified = v::verify_value(doc, DocumentKind::Command, registry)
        .map_err(|e| fail(format!("signature: {e}")))?;
    let hash = &verified.signing_hash;
    let principal = format!(
        "{}:{}",
        verified.principal.actor_type.as_str(),
        verified.principal.id.0
    );
    let action_id = verified
        .document
        .pointer("/actionId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let caused = seen.commands.get(hash).ok_or_else(|| {
        fail(format!(
            "its signing hash {hash} is the commandHash of no Event in the bundle"
        ))
    })?;
    if caused.actor != principal {
        return Err(fail(format!(
            "signed by {principal}, its Events name {} as their actor",
            caused.actor
        )));
    }
    if let Some(other) = caused.action_ids.iter().find(|a| **a != action_id) {
        return Err(fail(format!(
            "its actionId is {action_id}, its Events name {other} as their cause"
        )));
    }
    if !commanded.insert(hash.clone()) {
        return Err(fail(format!("{hash} appears twice")));
    }
    if let Some(k) = seen.admitted_keys.get(hash)
        && *k != verified.key_id
    {
        return Err(fail(format!(
            "signed with key {}, its First-Admission Record admitted key {k}",
            verified.key_id
        )));
    }
    let summary = CommandSummary {
        line: i + 1,
        action_id,
        kind: verified
            .document
            .pointer("/kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        key_id: verified.key_id.clone(),
        signed_at: verified.protected_time.as_str().to_owned(),
        signing_hash: hash.clone(),
    };
    for d in seen.decided_by.get(hash).into_iter().flatten() {
        if let Some(dec) = decisions.get_mut(*d) {
            dec.command = Some(summary.clone());
        }
    }
    Ok(1)
}

/// One Artifact line: its hash (named by an Event, in ascending order) and whether it carries
/// content (which must hash to it).
fn artifact(
    a: &Value,
    previous: Option<&str>,
    named: &BTreeSet<String>,
) -> Result<(String, bool), String> {
    let o = a.as_object().ok_or("not an object")?;
    closed(o, &["hash", "content"])?;
    let hash = text(o, "hash")?;
    if !is_sha256_hash(hash) {
        return Err(format!("{hash:?} is not a sha256: hash"));
    }
    if previous.is_some_and(|p| p >= hash) {
        return Err("Artifacts are not in ascending hash order".into());
    }
    if !named.contains(hash) {
        return Err(format!("no Event names Artifact {hash}"));
    }
    let content = match o.get("content") {
        None => false,
        Some(c) => {
            let bytes = c
                .as_str()
                .ok_or("content is not a string")
                .and_then(|t| b64url_decode(t).map_err(|_| "content is not base64url"))?;
            if sha256_hash(&bytes) != hash {
                return Err(format!("the content does not hash to {hash}"));
            }
            true
        }
    };
    Ok((hash.to_owned(), content))
}

/// The last line: the seal over every byte before it, by a key valid at `exportedAt`.
fn seal(
    bytes: &[u8],
    index: usize,
    lines: &[&[u8]],
    registry: &ValidatedRegistry,
    exported_at: &Timestamp,
) -> Result<SealSummary, AuditError> {
    let err = |reason: String| AuditError::Seal {
        line: index + 1,
        reason,
    };
    let raw = lines.get(index).copied().unwrap_or_default();
    let v = canonical_line(raw).map_err(err)?;
    let outer = v.as_object().ok_or_else(|| err("not an object".into()))?;
    closed(outer, &["seal"]).map_err(err)?;
    let o = outer
        .get("seal")
        .and_then(Value::as_object)
        .ok_or_else(|| err("seal is not an object".into()))?;
    closed(o, &["keyId", "signer", "value"]).map_err(err)?;
    let key_id = text(o, "keyId").map_err(err)?;
    let signer: crate::model::common::Actor = o
        .get("signer")
        .ok_or_else(|| err("signer is missing".into()))
        .and_then(|s| crate::model::from_value(s, true).map_err(|e| err(e.to_string())))?;
    let binding = registry
        .binding(key_id)
        .ok_or_else(|| err(format!("key {key_id} is not in the Registry")))?;
    if binding.principal != signer {
        return Err(err(format!("key {key_id} is not the signer's")));
    }
    if !binding.valid_at(exported_at.instant()) {
        return Err(err(format!(
            "key {key_id} is not valid at exportedAt {}",
            exported_at.as_str()
        )));
    }
    let sig = text(o, "value")
        .map_err(err)
        .and_then(|t| b64url_decode(t).map_err(|e| err(e.to_string())))
        .and_then(|raw| StrictSignature::from_bytes(&raw).map_err(|e| err(e.to_string())))?;
    let before = bytes.len() - raw.len() - 1;
    let message = seal_message(bytes.get(..before).unwrap_or_default());
    if !ed25519::verify(&binding.public_key, &sig, &message) {
        return Err(err(
            "the signature does not hold for the bytes before it".into()
        ));
    }
    Ok(SealSummary {
        signer: format!("{}:{}", signer.actor_type.as_str(), signer.id.0),
        key: key_of(binding),
    })
}
