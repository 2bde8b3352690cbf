//! The binding's bounds (the schemas set none on these): what a Command and a frame may
//! weigh, and how many Groups one frame may list. Both hosts of `/ws` and the HTTP edge read
//! them from here.

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
}
