//! Conversations and Messages (§9; payloads.md §6.14–§6.17).
//!
//! ```text
//! message.post      any active member ─▶ message.posted {message}
//! message.correct   the author        ─▶ message.corrected {amendment: correction}
//! message.retract   the author        ─▶ message.retracted {amendment: retraction}
//! message.redact    owner/Coordinator ─▶ message.redacted  {amendment: redaction}
//! ```
//!
//! **Conversation is not authority (§4 invariant 2, §9).** A Message is only conversation: its
//! projection has no `authority` member, a payload member `authority` is dropped before the
//! payload is read (as the reference does), and applying `message.posted` touches nothing but
//! the Message store. Whatever a Message says, no WorkItem, Mission, Membership or budget
//! changes.
//!
//! **History is append-only (§4 invariant 6).** Corrections, retractions and redactions are new
//! amendment records with Events of their own; the original Message and its `message.posted`
//! Event are never altered. A redaction carries its policy `reason` for audit.
//!
//! Wire codes follow payloads.md §12: an unknown Conversation or Message is `INVALID_COMMAND`
//! (D-4), a duplicate Message or amendment id `INVALID_COMMAND` (D-5), the `message_rate`
//! limit `RATE_LIMITED` (D-6), a non-author correction `AUTH_FORBIDDEN`.

use super::cooperation::{self, Policy};
use super::{Ctx, Decision};
use crate::authority::event_view::{ApplyError, EventView};
use crate::authority::events::EventPayload;
use crate::authority::events::message::{MessageAmended, MessagePosted};
use crate::authority::payload::Reader;
use crate::authority::projection::{Message, MessageAmendment};
use crate::authority::rejection::Rejection;
use crate::authority::state::State;
use crate::authority::{EventDraft, guards};
use crate::json::{Object, Value};
use crate::model::Id;
use crate::model::common::{Actor, ActorType};

pub const POSTED: &str = "message.posted";
pub const CORRECTED: &str = "message.corrected";
pub const RETRACTED: &str = "message.retracted";
pub const REDACTED: &str = "message.redacted";

pub fn apply(state: &mut State, ev: &EventView) -> Option<Result<(), ApplyError>> {
    Some(match ev.kind {
        POSTED => apply_posted(state, ev),
        CORRECTED | RETRACTED | REDACTED => apply_amended(state, ev),
        _ => return None,
    })
}

/// How many `message.posted` Events `actor_id` has in `group_id` after `now` − 60 s (§20).
pub fn recent_messages(cx: &Ctx, group_id: Option<&str>, actor_id: &str) -> usize {
    let horizon = cx.now.minus_seconds(60);
    group_id
        .and_then(|g| cx.state.groups.get(g))
        .map_or(0, |g| g.recent_count(actor_id, POSTED, horizon))
}

/// `message.post` (payloads.md §6.14).
pub fn decide_post(cx: &Ctx) -> Decision {
    let cmd = cx.cmd;
    // The envelope's conversationId fills the payload (§2.2); `authority` is dropped unread:
    // a Message never carries authority, whatever the sender claims (invariant 2).
    let mut body = cmd.payload_filled(false, true);
    body.remove("authority");
    let mut r = Reader::new(&body);
    let message_id = r.id("messageId");
    let conversation_id = r.id("conversationId");
    let content = r.text("content");
    let mentions = r.nested_list("mentions", |r| {
        let t = r.choice("type", &["agent", "human", "service", "system"], None);
        let id = r.id("id");
        Actor {
            actor_type: match t.as_str() {
                "agent" => ActorType::Agent,
                "human" => ActorType::Human,
                _ => ActorType::Service,
            },
            id: Id(id),
        }
    });
    r.finish(&cmd.kind)?;
    if let Some(env) = cmd.envelope_conversation_id()
        && env != conversation_id
    {
        return Err(Rejection::invalid(
            "payload conversationId differs from the envelope conversationId",
        )
        .detail("expected", env)
        .detail("received", conversation_id.as_str()));
    }

    // C5: the message rate (§20).
    let limit = cx.config.limits.message_rate_per_minute;
    let count = recent_messages(cx, cmd.group_id.as_deref(), cmd.actor.id.as_str());
    let mut details = Object::new();
    details.insert("limit", Value::from(limit as u64));
    details.insert("windowSeconds", Value::from(60u64));
    let override_grant = cooperation::check(cx, Policy::MessageRate, count >= limit, details)?;
    // C6: offline progress, appended before the Message (payloads.md §9.3).
    let offline = super::offline::reconcile(cx)?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::non_terminal_mission(mission)?;
    guards::active_member(g, cmd)?;
    if !g.conversations.contains(&conversation_id) {
        return Err(Rejection::not_found("Conversation", &conversation_id));
    }
    guards::new_id(cx.state, "Message", &message_id)?;
    let message = Message {
        author: cmd.actor.clone(),
        content,
        conversation_id,
        created_at: cx.now,
        group_id: g.group.id.clone(),
        id: message_id,
        mentions,
    };
    let draft = EventDraft::group(&g.group.id, POSTED, MessagePosted { message }.to_object());
    let mut drafts: Vec<EventDraft> = offline.into_iter().collect();
    drafts.push(cooperation::consume(draft, override_grant));
    Ok(drafts)
}

/// Stores the Message and nothing else: conversation is not authority.
pub fn apply_posted(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let MessagePosted { message: m } = MessagePosted::read(ev)?;
    state.messages.insert(m.id.clone(), m);
    Ok(())
}

/// The three amendment kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amend {
    Correct,
    Retract,
    Redact,
}

impl Amend {
    fn amendment_kind(self) -> &'static str {
        match self {
            Amend::Correct => "correction",
            Amend::Retract => "retraction",
            Amend::Redact => "redaction",
        }
    }

    fn event_kind(self) -> &'static str {
        match self {
            Amend::Correct => CORRECTED,
            Amend::Retract => RETRACTED,
            Amend::Redact => REDACTED,
        }
    }
}

/// `message.correct`, `message.retract` (the author) and `message.redact` (the MissionOwner or
/// the Coordinator) (payloads.md §6.15–§6.17).
pub fn decide_amend(cx: &Ctx, how: Amend) -> Decision {
    let cmd = cx.cmd;
    let mut r = Reader::new(&cmd.payload);
    let amendment_id = r.id("amendmentId");
    let message_id = r.id("messageId");
    let replacement = (how == Amend::Correct).then(|| r.text("replacementContent"));
    let reason = r.text("reason");
    r.finish(&cmd.kind)?;

    let (g, mission) = guards::group(cx.state, cmd)?;
    guards::non_terminal_mission(mission)?;
    guards::active_member(g, cmd)?;
    let message = match cx.state.messages.get(&message_id) {
        Some(m) if m.group_id == g.group.id => m,
        _ => return Err(Rejection::not_found("Message", &message_id)),
    };
    guards::new_id(cx.state, "amendment", &amendment_id)?;
    match how {
        Amend::Correct | Amend::Retract => {
            if message.author != cmd.actor {
                return Err(Rejection::forbidden(
                    "only the author may correct or retract a Message",
                ));
            }
        }
        Amend::Redact => {
            guards::owner_or_coordinator(g, mission, cmd, cx.now)?;
        }
    }
    let amendment = MessageAmendment {
        actor: cmd.actor.clone(),
        created_at: cx.now,
        group_id: g.group.id.clone(),
        id: amendment_id,
        kind: how.amendment_kind().into(),
        message_id,
        reason,
        replacement_content: replacement,
    };
    Ok(vec![EventDraft::group(
        &g.group.id,
        how.event_kind(),
        MessageAmended { amendment }.to_object(),
    )])
}

/// Records the amendment; the original Message is never rewritten.
pub fn apply_amended(state: &mut State, ev: &EventView) -> Result<(), ApplyError> {
    let MessageAmended { amendment: a } = MessageAmended::read(ev)?;
    state.amendments.insert(a.id.clone(), a);
    Ok(())
}
