//! Frames every host of the binding writes the same way.

use crate::authority::Micros;
use crate::encoding::b64url_encode;
use crate::frame::Ping;
use crate::json::{self, Object, Value};

/// Bytes of the fresh nonce of a host's `PING` echo.
pub const PING_NONCE_BYTES: usize = 18;

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

/// The echo of a client's `PING` (§17.3): a fresh nonce, the client's nonce in
/// `replyToNonce`, the host's time in `sentAt`. A `PING` that answers the host's own (it
/// carries `replyToNonce`) is not echoed, or two echoing peers would never stop: `None`, and
/// `draw` (the frame's identifier and the fresh nonce) is not called.
pub fn ping_echo(
    ping: &Ping,
    now: Micros,
    draw: impl FnOnce() -> (String, [u8; PING_NONCE_BYTES]),
) -> Option<String> {
    if ping.reply_to_nonce.is_some() {
        return None;
    }
    let (frame_id, nonce) = draw();
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("frameId", Value::string(frame_id));
    o.insert("frameType", Value::string("PING"));
    o.insert("nonce", Value::string(b64url_encode(&nonce)));
    o.insert(
        "replyToNonce",
        Value::string(ping.nonce.as_str().to_owned()),
    );
    o.insert("sentAt", Value::string(now.format()));
    Some(json::to_string(&Value::Object(o)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{self, Frame};

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

    fn ping(reply: bool) -> Ping {
        let reply = if reply {
            r#","replyToNonce":"BBBB""#
        } else {
            ""
        };
        let text = format!(
            r#"{{"protocolVersion":"0.1","frameId":"urn:f:p","frameType":"PING","nonce":"AAAA"{reply},"sentAt":"2026-07-15T08:00:00Z"}}"#
        );
        match frame::decode(text.as_bytes()) {
            Ok(Frame::Ping(p)) => p,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_ping_is_echoed_with_its_nonce_and_an_echo_is_not() {
        let now = Micros::parse("2026-07-15T08:00:01Z").expect("time");
        let f = ping_echo(&ping(false), now, || {
            ("urn:f:e".into(), [1; PING_NONCE_BYTES])
        })
        .expect("echoed");
        let Ok(Frame::Ping(e)) = frame::decode(f.as_bytes()) else {
            panic!("{f}");
        };
        assert_eq!(e.frame_id.as_str(), "urn:f:e");
        assert_eq!(e.reply_to_nonce.as_ref().map(|n| n.as_str()), Some("AAAA"));
        assert_eq!(e.nonce.as_str(), b64url_encode(&[1; PING_NONCE_BYTES]));
        assert_eq!(e.sent_at.as_str(), "2026-07-15T08:00:01Z");
        let mut drawn = false;
        let none = ping_echo(&ping(true), now, || {
            drawn = true;
            (String::new(), [0; PING_NONCE_BYTES])
        });
        assert_eq!(none, None);
        assert!(!drawn, "no identifier or randomness is spent on an answer");
    }
}
