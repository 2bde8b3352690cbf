//! Conversations (§9): each Conversation's Messages with their correction, retraction and
//! redaction chains (`State.messages`, `State.amendments`; amendments are new facts, never
//! rewrites, §4 invariant 6) and the latest effective content.
//!
//! **Invariant: a Message is never rendered as an action** (§4 invariant 2, §9: "Interfaces MUST
//! NOT present a Message as an executable assignment"). [`MessageView`] has no member that names
//! a Command, a WorkItem to start or an approval to give; the UI can only show text. A test
//! destructures the type exhaustively, so adding such a member breaks the build of the tests.
//! A redacted Message carries no content at all in the view.

use super::Viewer;
use crate::authority::clock::Micros;
use crate::authority::projection::{Message, MessageAmendment};
use crate::authority::state::State;
use crate::model::common::Actor;
use std::collections::BTreeMap;

/// An amendment's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmendmentKind {
    Correction,
    Retraction,
    Redaction,
}

impl AmendmentKind {
    fn parse(s: &str) -> Option<AmendmentKind> {
        match s {
            "correction" => Some(AmendmentKind::Correction),
            "retraction" => Some(AmendmentKind::Retraction),
            "redaction" => Some(AmendmentKind::Redaction),
            _ => None,
        }
    }
}

/// One link of a Message's amendment chain.
#[derive(Clone, Debug, PartialEq)]
pub struct AmendmentView {
    pub id: String,
    pub kind: AmendmentKind,
    pub actor: Actor,
    pub created_at: Micros,
    pub reason: String,
    /// A correction's new text (`None` once the Message is redacted).
    pub replacement: Option<String>,
}

/// What to show for a Message now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effective {
    Original(String),
    /// The latest correction's text.
    Corrected(String),
    Retracted,
    Redacted,
}

/// One Message: text and its history, nothing actionable.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageView {
    pub id: String,
    pub author: Actor,
    pub created_at: Micros,
    pub mentions: Vec<Actor>,
    /// The posted text (`None` once redacted).
    pub original: Option<String>,
    pub effective: Effective,
    /// Oldest first.
    pub chain: Vec<AmendmentView>,
}

/// One Conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct ConversationView {
    pub conversation_id: String,
    pub group_id: String,
    pub mission_id: String,
    /// The Mission's title, what a person reads first (empty before its Mission is known).
    pub mission_title: String,
    /// Oldest first.
    pub messages: Vec<MessageView>,
}

impl ConversationView {
    /// Every Conversation of every Mission `viewer` sees, in id order.
    pub fn all(state: &State, viewer: &Viewer) -> Vec<ConversationView> {
        // One pass over the Messages and one over the amendments, grouped, instead of a scan of
        // every Message per Conversation and of every amendment per Message (quadratic: 21 s of
        // the 100,000-Event console benchmark, docs/benchmarks.md).
        let mut messages: BTreeMap<(&str, &str), Vec<&Message>> = BTreeMap::new();
        for m in state.messages.values() {
            messages
                .entry((m.group_id.as_str(), m.conversation_id.as_str()))
                .or_default()
                .push(m);
        }
        let amendments = amendments_by_message(state);
        let mut out = Vec::new();
        for m in state.missions.values().filter(|m| viewer.sees(state, m)) {
            if let Some(g) = state.groups.get(&m.group_id) {
                for c in &g.conversations {
                    let of_c = messages
                        .get(&(m.group_id.as_str(), c.as_str()))
                        .map_or(&[][..], Vec::as_slice);
                    out.push(conversation(state, &m.group_id, c, of_c, &amendments));
                }
            }
        }
        out
    }

    /// Conversation `conversation_id` of Group `group_id`.
    pub fn build(state: &State, group_id: &str, conversation_id: &str) -> ConversationView {
        let of_c: Vec<&Message> = state
            .messages
            .values()
            .filter(|m| m.group_id == group_id && m.conversation_id == conversation_id)
            .collect();
        let amendments = amendments_by_message(state);
        conversation(state, group_id, conversation_id, &of_c, &amendments)
    }
}

/// Amendments keyed by (Group, Message).
type AmendmentsByMessage<'s> = BTreeMap<(&'s str, &'s str), Vec<&'s MessageAmendment>>;

/// Every amendment, keyed by (Group, Message).
fn amendments_by_message(state: &State) -> AmendmentsByMessage<'_> {
    let mut out = AmendmentsByMessage::new();
    for a in state.amendments.values() {
        out.entry((a.group_id.as_str(), a.message_id.as_str()))
            .or_default()
            .push(a);
    }
    out
}

/// The view of one Conversation from its Messages, oldest first.
fn conversation(
    state: &State,
    group_id: &str,
    conversation_id: &str,
    messages: &[&Message],
    amendments: &AmendmentsByMessage<'_>,
) -> ConversationView {
    let mut messages: Vec<MessageView> = messages
        .iter()
        .map(|m| {
            let of_m = amendments
                .get(&(m.group_id.as_str(), m.id.as_str()))
                .map_or(&[][..], Vec::as_slice);
            message_view_with(m, of_m)
        })
        .collect();
    crate::order::sort_by(&mut messages, |a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    let mission_id = state
        .groups
        .get(group_id)
        .map(|g| g.group.mission_id.clone())
        .unwrap_or_default();
    let mission_title = state
        .mission_of_group(group_id)
        .map(|m| m.title.clone())
        .unwrap_or_default();
    ConversationView {
        conversation_id: conversation_id.to_owned(),
        group_id: group_id.to_owned(),
        mission_id,
        mission_title,
        messages,
    }
}

/// A Message with its chain: redaction hides every text, retraction withdraws it, and
/// otherwise the latest correction is the effective text.
pub fn message_view(state: &State, m: &Message) -> MessageView {
    let of_m: Vec<&MessageAmendment> = state
        .amendments
        .values()
        .filter(|a| a.message_id == m.id && a.group_id == m.group_id)
        .collect();
    message_view_with(m, &of_m)
}

/// [`message_view`] from the Message's own amendments (in any order).
fn message_view_with(m: &Message, amendments: &[&MessageAmendment]) -> MessageView {
    let mut amendments: Vec<_> = amendments
        .iter()
        .filter_map(|a| AmendmentKind::parse(&a.kind).map(|k| (k, *a)))
        .collect();
    crate::order::sort_by(&mut amendments, |a, b| {
        a.1.created_at
            .cmp(&b.1.created_at)
            .then_with(|| a.1.id.cmp(&b.1.id))
    });
    let redacted = amendments
        .iter()
        .any(|(k, _)| *k == AmendmentKind::Redaction);
    let retracted = amendments
        .iter()
        .any(|(k, _)| *k == AmendmentKind::Retraction);
    let latest_correction = amendments
        .iter()
        .rev()
        .find(|(k, _)| *k == AmendmentKind::Correction)
        .and_then(|(_, a)| a.replacement_content.clone());
    let effective = if redacted {
        Effective::Redacted
    } else if retracted {
        Effective::Retracted
    } else if let Some(text) = latest_correction {
        Effective::Corrected(text)
    } else {
        Effective::Original(m.content.clone())
    };
    MessageView {
        id: m.id.clone(),
        author: m.author.clone(),
        created_at: m.created_at,
        mentions: m.mentions.clone(),
        original: (!redacted).then(|| m.content.clone()),
        effective,
        chain: amendments
            .into_iter()
            .map(|(kind, a)| AmendmentView {
                id: a.id.clone(),
                kind,
                actor: a.actor.clone(),
                created_at: a.created_at,
                reason: a.reason.clone(),
                replacement: if redacted {
                    None
                } else {
                    a.replacement_content.clone()
                },
            })
            .collect(),
    }
}
