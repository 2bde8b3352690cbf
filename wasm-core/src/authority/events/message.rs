//! The Message Events (§9; payloads.md §6.14–§6.17): conversation, never authority.

use crate::authority::projection::{Message, MessageAmendment};

one_member!(
    /// `message.posted`: the Message, whole.
    MessagePosted { message: Message = "message" }
);

one_member!(
    /// `message.corrected`, `message.retracted` and `message.redacted`: the amendment; the
    /// original Message is never rewritten.
    MessageAmended { amendment: MessageAmendment = "amendment" }
);
