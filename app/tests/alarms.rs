//! Alarms a person can read (`app::alarms`, issue 29): many tampered Events are one alarm per
//! cause with their count, naming the first few (Group, sequence, Event ID, signer), each
//! linked to its row in the Events view; a refused handshake, an ended connection and a broken
//! frame are their own causes, never "an Event failed verification".

use app::alarms::{Alarms, Cause, MAX_CAUSES, MAX_DETAILS, Occurrence, event_link, of_output};
use app::socket::machine::{Output, Rejected};
use wasm_core::model::error::{ErrorCode, ProtocolError};

const GROUP: &str = "urn:missionweaveprotocol:group:checkout";

fn tampered(seq: u64) -> Output {
    Output::Rejected(Rejected {
        event_id: Some(format!("urn:uuid:00000000-0000-4000-8000-{seq:012}")),
        group_id: Some(GROUP.to_owned()),
        sequence: Some(seq),
        signer: Some("urn:missionweaveprotocol:key:authority:1".to_owned()),
        code: ErrorCode::AuthInvalidSignature,
        reason: "signature does not verify".to_owned(),
    })
}

fn error(code: ErrorCode, message: &str) -> ProtocolError {
    let mut o = wasm_core::json::Object::new();
    o.insert("code", wasm_core::json::Value::string(code.as_str()));
    o.insert(
        "message",
        wasm_core::json::Value::string(message.to_owned()),
    );
    o.insert("retryable", wasm_core::json::Value::Bool(false));
    o.insert(
        "occurredAt",
        wasm_core::json::Value::string("2026-12-02T10:00:00Z"),
    );
    match wasm_core::model::from_value::<ProtocolError>(&wasm_core::json::Value::Object(o), true) {
        Ok(e) => e,
        Err(e) => panic!("a valid error object: {e:?}"),
    }
}

fn raise_all(outputs: &[Output]) -> Alarms {
    let mut alarms = Alarms::default();
    for o in outputs {
        if let Some((cause, what)) = of_output(o) {
            alarms.raise(cause, what);
        }
    }
    alarms
}

#[test]
fn forty_one_tampered_events_are_one_alarm_naming_the_first_few() {
    let outputs: Vec<Output> = (1..=41).map(tampered).collect();
    let alarms = raise_all(&outputs);
    assert_eq!(alarms.causes().len(), 1, "one alarm for one cause");
    let a = &alarms.causes()[0];
    assert_eq!(
        a.cause,
        Cause::EventRejected {
            code: "AUTH_INVALID_SIGNATURE".into()
        }
    );
    assert_eq!(a.count, 41);
    assert_eq!(a.details.len(), MAX_DETAILS, "bounded");
    assert_eq!(a.unnamed(), 41 - MAX_DETAILS as u64);
    // The first ones, each named in full.
    for (i, d) in a.details.iter().enumerate() {
        let seq = i as u64 + 1;
        assert_eq!(d.group_id.as_deref(), Some(GROUP));
        assert_eq!(d.sequence, Some(seq));
        assert_eq!(
            d.event_id.as_deref(),
            Some(format!("urn:uuid:00000000-0000-4000-8000-{seq:012}").as_str())
        );
        assert_eq!(
            d.signer.as_deref(),
            Some("urn:missionweaveprotocol:key:authority:1")
        );
        assert_eq!(d.reason, "signature does not verify");
    }
    assert!(a.cause.about_events());
}

#[test]
fn causes_are_kept_apart_and_handshake_and_connection_failures_are_not_event_failures() {
    let outputs = vec![
        tampered(2),
        Output::HandshakeRefused(error(
            ErrorCode::AuthInvalidSignature,
            "challenge signature does not verify",
        )),
        Output::ServerError(error(
            ErrorCode::AuthStaleSession,
            "replaced by a newer session",
        )),
        Output::BadFrame {
            code: ErrorCode::ProtocolViolation,
            message: "duplicate member".into(),
        },
        Output::HandshakeRefused(error(
            ErrorCode::AuthInvalidSignature,
            "challenge signature does not verify",
        )),
        Output::Rejected(Rejected {
            code: ErrorCode::SchemaValidationFailed,
            ..match tampered(3) {
                Output::Rejected(r) => r,
                _ => unreachable!(),
            }
        }),
        // Outputs that are no failure raise nothing.
        Output::GapClosed {
            group_id: GROUP.into(),
        },
        Output::Open,
    ];
    let alarms = raise_all(&outputs);
    let causes: Vec<(&Cause, u64)> = alarms
        .causes()
        .iter()
        .map(|a| (&a.cause, a.count))
        .collect();
    assert_eq!(
        causes,
        [
            (
                &Cause::EventRejected {
                    code: "AUTH_INVALID_SIGNATURE".into()
                },
                1
            ),
            (
                &Cause::HandshakeRefused {
                    code: "AUTH_INVALID_SIGNATURE".into()
                },
                2
            ),
            (
                &Cause::ConnectionEnded {
                    code: "AUTH_STALE_SESSION".into()
                },
                1
            ),
            (
                &Cause::BadFrame {
                    code: "PROTOCOL_VIOLATION".into()
                },
                1
            ),
            (
                &Cause::EventRejected {
                    code: "SCHEMA_VALIDATION_FAILED".into()
                },
                1
            ),
        ]
    );
    // The handshake's alarm carries the server's words, named once however often repeated, and
    // is not about Events (no Event link, the wording of a refused handshake).
    let handshake = &alarms.causes()[1];
    assert!(!handshake.cause.about_events());
    assert_eq!(
        handshake.details,
        [Occurrence::said("challenge signature does not verify")]
    );
    assert_eq!(handshake.unnamed(), 1);
}

#[test]
fn causes_are_bounded_and_a_dismissed_alarm_comes_back_on_a_new_occurrence() {
    let mut alarms = Alarms::default();
    for i in 0..MAX_CAUSES + 5 {
        alarms.raise(
            Cause::Other {
                code: format!("CODE_{i}"),
            },
            Occurrence::said("x"),
        );
    }
    assert_eq!(alarms.causes().len(), MAX_CAUSES);
    assert_eq!(alarms.overflow, 5);
    let first = alarms.causes()[0].id;
    alarms.dismiss(first);
    assert_eq!(alarms.causes().len(), MAX_CAUSES - 1);
    assert!(alarms.causes().iter().all(|a| a.id != first));
    alarms.raise(
        Cause::Other {
            code: "CODE_0".into(),
        },
        Occurrence::said("again"),
    );
    let back = alarms.causes().last().map(|a| (a.id, a.count));
    assert!(matches!(back, Some((id, 1)) if id != first), "{back:?}");
}

#[test]
fn an_event_link_names_the_event_in_the_events_view_query() {
    assert_eq!(
        event_link("urn:uuid:0a1b-2c"),
        "/events?event=urn:uuid:0a1b-2c"
    );
    // Anything that would end or split the query is escaped.
    assert_eq!(
        event_link("a b&c#d?e/é"),
        "/events?event=a%20b%26c%23d%3Fe%2F%C3%A9"
    );
}
