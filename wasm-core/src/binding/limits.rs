//! The binding's bounds (the schemas set none on these): what a Command and a frame may
//! weigh, how many Groups one frame may list, where a replay page ends, and how long a
//! challenge and a session last. Both hosts of `/ws` and the HTTP edge read them from here.

use super::error::Refusal;
use crate::json::Value;
use crate::model::error::ErrorCode;

/// The largest Command a host reads: 1,265,536 bytes. PROTOCOL.md sets no byte limit on a
/// Command or a frame (§17.1 asks only for one JSON text per WebSocket message; §17.4 sends
/// large content as an Artifact, by reference), and a Command's `payload` is an open object,
/// so the bound comes from the schemas: the largest bounded string any document carries
/// inline is a Message text part, 100,000 characters (`message.schema.json`); one character
/// takes at most 12 bytes of JSON (an escaped surrogate pair, `\uD83D\uDE00`); the envelope
/// around it (identifiers of at most 512 characters, the actor, the signature) fits in 64 KiB.
pub const MAX_COMMAND_BYTES: usize = 100_000 * 12 + 64 * 1024;

/// The largest frame read: a `COMMAND` around the largest Command, plus the frame's members.
pub const MAX_FRAME_BYTES: usize = MAX_COMMAND_BYTES + 4096;

/// Groups one `SUBSCRIBE` or `ACK` may list, at most (the frame schema sets no `maxItems`):
/// each listed Group can cost a replay or a reply, so a frame listing more is refused as a
/// whole, before any of them is looked at.
pub const MAX_FRAME_ITEMS: usize = 256;

/// Events one `SUBSCRIBE` replays per Group before the continuation (binding.md): a
/// subscriber far behind gets its history in pages, each ended by `BACKPRESSURE` with its
/// `resumeAfterSequence` (`error::continuation`), never in one unbounded burst.
pub const REPLAY_PAGE: usize = 1000;

/// Where a replay page ends: the page after `start` carries the Events `start + 1 ..= end`,
/// at most `page` of them. A host that reaches `end` before the head ends the page with the
/// continuation; one that reaches the head first goes live.
pub fn page_end(start: u64, page: usize) -> u64 {
    start.saturating_add(u64::try_from(page).unwrap_or(u64::MAX))
}

/// How long a `server_challenge` may be answered, in seconds (payloads.md §10.1).
pub const CHALLENGE_SECONDS: u64 = 30;

/// How long a session lasts, in seconds: the `expiresAt` of `server_accept`, 12 hours; past
/// it the next frame gets a fatal `AUTH_REQUIRED` and the client says `HELLO` again.
pub const SESSION_SECONDS: u64 = 12 * 3600;

/// The refusal of a `SUBSCRIBE` or `ACK` listing more than [`MAX_FRAME_ITEMS`] Groups (a
/// `PROTOCOL_VIOLATION`; the connection stays open).
pub fn too_many_items(v: &Value) -> Option<Refusal> {
    let (what, list) = match v.pointer("/frameType").and_then(Value::as_str) {
        Some("SUBSCRIBE") => ("SUBSCRIBE", "/groups"),
        Some("ACK") => ("ACK", "/acknowledgements"),
        _ => return None,
    };
    let Some(Value::Array(items)) = v.pointer(list) else {
        return None;
    };
    (items.len() > MAX_FRAME_ITEMS).then(|| {
        Refusal::new(
            ErrorCode::ProtocolViolation,
            format!(
                "a {what} may list at most {MAX_FRAME_ITEMS} Groups (this one lists {}); send \
                 several",
                items.len()
            ),
        )
        .about_frame(v.pointer("/frameId").and_then(Value::as_str))
        .detail("maxItems", Value::from(MAX_FRAME_ITEMS as u64))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn subscribe(n: usize) -> Value {
        let groups: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"groupId":"urn:g:{i}","afterSequence":0}}"#))
            .collect();
        let text = format!(
            r#"{{"frameId":"urn:f:1","frameType":"SUBSCRIBE","groups":[{}]}}"#,
            groups.join(",")
        );
        json::parse(text.as_bytes()).expect("json")
    }

    #[test]
    fn a_frame_listing_too_many_groups_is_refused_as_a_whole() {
        assert_eq!(too_many_items(&subscribe(MAX_FRAME_ITEMS)), None);
        let e = too_many_items(&subscribe(MAX_FRAME_ITEMS + 1)).expect("refused");
        assert_eq!(e.code, ErrorCode::ProtocolViolation);
        assert_eq!(
            e.message,
            "a SUBSCRIBE may list at most 256 Groups (this one lists 257); send several"
        );
        assert_eq!(e.related_frame_id.as_deref(), Some("urn:f:1"));
        assert_eq!(e.details.get("maxItems"), Some(&Value::from(256u64)));
        assert_eq!(MAX_FRAME_BYTES, 1_265_536 + 4096);
    }

    #[test]
    fn a_replay_page_ends_a_page_after_its_start() {
        assert_eq!(page_end(0, REPLAY_PAGE), 1000);
        assert_eq!(page_end(35, 10), 45);
        // A page of none ends where it starts; a page past the end of sequences stops there.
        assert_eq!(page_end(7, 0), 7);
        assert_eq!(page_end(u64::MAX - 1, 10), u64::MAX);
    }
}
