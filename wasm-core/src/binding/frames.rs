//! Frames every host of the binding writes the same way.

/// An `EVENT` frame around an Event's stored JCS bytes, not re-parsed: the same bytes the
/// authority signed reach the client (built by appending: it runs for every Event sent).
/// Bytes that are not UTF-8 (not expected of stored JCS) are replaced, never sent raw.
pub fn event_frame(frame_id: &str, jcs: &[u8]) -> String {
    const HEAD: &str = r#"{"protocolVersion":"0.1","frameId":""#;
    const TYPE: &str = r#"","frameType":"EVENT","event":"#;
    let event = match std::str::from_utf8(jcs) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(jcs),
    };
    let mut f = String::with_capacity(HEAD.len() + frame_id.len() + TYPE.len() + event.len() + 1);
    f.push_str(HEAD);
    f.push_str(frame_id);
    f.push_str(TYPE);
    f.push_str(&event);
    f.push('}');
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{self, Value};

    #[test]
    fn the_event_is_carried_byte_for_byte() {
        let jcs = br#"{"b":1,"a":"\u00e9"}"#;
        let f = event_frame("urn:f:1", jcs);
        assert!(f.contains(r#""event":{"b":1,"a":"\u00e9"}}"#), "{f}");
        let v = json::parse(f.as_bytes()).expect("json");
        assert_eq!(
            v.pointer("/frameType").and_then(Value::as_str),
            Some("EVENT")
        );
        assert_eq!(
            v.pointer("/frameId").and_then(Value::as_str),
            Some("urn:f:1")
        );
    }
}
