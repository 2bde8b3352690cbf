//! The audit bundle (issue 29, "Auditors"): a self-contained record of some Groups that an
//! auditor checks offline, with no server, by the same code in the CLI and in the browser.
//!
//! The format is JSON Lines, each line one RFC 8785 (JCS) document ending in `\n`, in this
//! order (docs/audit.md):
//!
//! ```text
//!  1        header      {"format","version","organizationId","exportedAt","groups":[{groupId,head}],
//!                        "agentCards","events","admissions","commands","artifacts"}   (the counts)
//!  2        registry    the Registry evidence (the `GET /api/registry` shape)
//!  a lines  Agent Cards in force, signed by the Organization's service (§6.1)
//!  e lines  Events of the selected Groups, in the authority's append order, each exactly as
//!           stored (the signed Event's JCS bytes, §15.2)
//!  d lines  First-Admission Records (§6.4) of the Commands that caused those Events
//!  c lines  the signed Commands of the humans' decisions among them, in JCS (§15.1): each
//!           verified by its signer's key and tied to its Events by `commandHash` and `cause`
//!  f lines  {"hash"[, "content"]}: Artifact hashes the Events name, content optional
//!  last     {"seal":{keyId, signer, value}} (optional): Ed25519 over the bytes before it
//! ```
//!
//! Version 1 (before Commands were kept) has no `commands` count and no Command lines; it is
//! still read.
//!
//! Every line must be canonical: parsed strictly and serialized again it gives the same bytes,
//! so no whitespace, member order or escape can change without the verifier noticing. Every
//! Event carries its authority's signature; the seal covers what is not signed otherwise (the
//! header, the Registry as exported, the admission records, the Artifact list).
//!
//! Sans-IO like the rest of the core: the caller reads the file and passes the time.

mod verify;
mod write;

pub use verify::{
    ApprovalSummary, CommandSummary, Decision, GroupSummary, SealSummary, SignerKey, Summary,
    verify, verify_reporting,
};
pub use write::{Assembly, Sealer, artifact_hashes, assemble};

use crate::authority::ApplyError;
use crate::crypto::VerifyError;
use std::fmt;

/// The header's `format`.
pub const FORMAT: &str = "mwp-audit-bundle";
/// The header's `version` (2: with the humans' signed Commands; 1 is still verified).
pub const VERSION: u64 = 2;
/// The most bytes a bundle may have: it is untrusted input, read whole in a browser tab.
pub const MAX_BUNDLE_BYTES: usize = 64 * 1024 * 1024;
/// The most lines a bundle may have.
pub const MAX_LINES: usize = 1_000_000;
/// What the seal's signature covers: this domain, then the SHA-256 of every byte before the
/// seal line (so a seal is never mistaken for the signature of a protocol document).
pub const SEAL_DOMAIN: &[u8] = b"mwp-audit-bundle/1 seal\n";

/// Where an Event sits, as the error and the summary name it: its line in the bundle, its
/// Group, sequence and Event id (read from the line as well as it can be when the line does
/// not parse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventAt {
    pub line: usize,
    pub group_id: String,
    pub sequence: String,
    pub event_id: String,
}

impl fmt::Display for EventAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the Event at line {} (Group {}, sequence {}, Event {})",
            self.line, self.group_id, self.sequence, self.event_id
        )
    }
}

/// Why an Event line was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventFailure {
    /// The line is not one strict, canonical JSON document.
    Unreadable(String),
    /// The six stages of §6.4 refused the Event (its signature, its key's validity window at
    /// its `occurredAt`, its schema).
    Signature(VerifyError),
    /// Its Artifact manifest's signature is not by its producer's Agent Card key.
    Manifest(String),
    /// The reducer refused it (a gap, a reordering, a transition that does not hold).
    Replay(ApplyError),
    /// Its Group is not one the header selects (or it is Organization-scoped).
    NotSelected,
    /// Its Event id appeared before.
    Duplicate,
    /// A human's decision without the First-Admission Record of its Command.
    NoAdmission(String),
    /// Its Command's First-Admission Record names another Principal.
    AdmissionMismatch(String),
}

impl fmt::Display for EventFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventFailure::Unreadable(r) => write!(f, "unreadable: {r}"),
            EventFailure::Signature(e) => write!(f, "signature: {e}"),
            EventFailure::Manifest(r) => write!(f, "{r}"),
            EventFailure::Replay(e) => write!(f, "replay: {e}"),
            EventFailure::NotSelected => f.write_str("its Group is not selected by the header"),
            EventFailure::Duplicate => f.write_str("its Event id appears twice"),
            EventFailure::NoAdmission(h) => {
                write!(f, "no First-Admission Record for its Command {h}")
            }
            EventFailure::AdmissionMismatch(r) => write!(f, "First-Admission Record: {r}"),
        }
    }
}

/// The part of the bundle a non-Event line belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Header,
    Registry,
    AgentCard,
    Admission,
    Command,
    Artifact,
    Seal,
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Section::Header => "header",
            Section::Registry => "Registry",
            Section::AgentCard => "Agent Card",
            Section::Admission => "First-Admission Record",
            Section::Command => "Command",
            Section::Artifact => "Artifact",
            Section::Seal => "seal",
        })
    }
}

/// Why a bundle was refused; the first failure found, in file order (an Event's failure names
/// the Event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditError {
    /// Larger than [`MAX_BUNDLE_BYTES`] or [`MAX_LINES`].
    TooLarge { what: &'static str, max: usize },
    /// Not lines of JSON: empty, a carriage return, an empty line, no final newline.
    Lines(String),
    /// The line count does not match the header's counts.
    Count { expected: usize, found: usize },
    /// A line other than an Event's: unreadable, not canonical, or not of its section's shape.
    Line {
        line: usize,
        section: Section,
        reason: String,
    },
    /// An Event line.
    Event {
        at: Box<EventAt>,
        failure: Box<EventFailure>,
    },
    /// A selected Group's Events stop before (or go past) the header's head.
    Head {
        group_id: String,
        head: u64,
        found: u64,
    },
    /// A Command line: unreadable, its signature or key refused, or not the Command of the
    /// Events that name it (named by its line and `actionId`, read from the line as well as
    /// it can be).
    Command {
        line: usize,
        action_id: String,
        reason: String,
    },
    /// The seal does not verify.
    Seal { line: usize, reason: String },
    /// An exporter that could not write the bundle (a value that has no JCS form).
    Write(String),
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditError::TooLarge { what, max } => write!(f, "more than {max} {what}"),
            AuditError::Lines(r) => write!(f, "not an audit bundle: {r}"),
            AuditError::Count { expected, found } => write!(
                f,
                "the header announces {expected} lines, the bundle has {found}"
            ),
            AuditError::Line {
                line,
                section,
                reason,
            } => write!(f, "line {line} ({section}): {reason}"),
            AuditError::Event { at, failure } => write!(f, "{at}: {failure}"),
            AuditError::Head {
                group_id,
                head,
                found,
            } => write!(
                f,
                "Group {group_id}: the header says its last sequence is {head}, the bundle \
                 holds Events up to {found}"
            ),
            AuditError::Command {
                line,
                action_id,
                reason,
            } => write!(f, "line {line} (the Command {action_id}): {reason}"),
            AuditError::Seal { line, reason } => write!(f, "line {line} (seal): {reason}"),
            AuditError::Write(r) => write!(f, "the bundle cannot be written: {r}"),
        }
    }
}

impl std::error::Error for AuditError {}

/// The sequence number, Group and Event id of an Event line, read without parsing (the line
/// may not parse): what an error names when the line itself is damaged.
fn lenient_event_at(line_no: usize, raw: &[u8]) -> EventAt {
    EventAt {
        line: line_no,
        group_id: lenient_member(raw, "groupId"),
        sequence: lenient_member(raw, "sequence"),
        event_id: lenient_member(raw, "eventId"),
    }
}

/// The first member `name`'s string or number, read from a line without parsing it (`?`
/// when it cannot be read).
fn lenient_member(raw: &[u8], name: &str) -> String {
    fn member<'a>(raw: &'a [u8], name: &str) -> Option<&'a [u8]> {
        let key = format!("\"{name}\":");
        let start = raw.windows(key.len()).position(|w| w == key.as_bytes())? + key.len();
        let rest = raw.get(start..)?;
        if let Some(s) = rest.strip_prefix(b"\"") {
            let end = s.iter().position(|b| *b == b'"')?;
            s.get(..end)
        } else {
            let end = rest
                .iter()
                .position(|b| !b.is_ascii_digit())
                .unwrap_or(rest.len());
            rest.get(..end)
        }
    }
    member(raw, name).map_or_else(
        || "?".to_owned(),
        |b| String::from_utf8_lossy(b).into_owned(),
    )
}

#[cfg(test)]
mod tests;
