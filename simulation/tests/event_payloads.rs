//! The typed Event payloads (`authority::events`) against every Event the scenario suite
//! produces: reading a stored payload and writing it back gives the same canonical bytes, so
//! the structs name every member, and `null` and absent members come back as they were.

#![allow(clippy::unwrap_used)]
#![cfg(not(target_arch = "wasm32"))]

use simulation::harness::{Envelope, Harness};
use simulation::kit;
use simulation::scenario::{Answer, Target, run};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use wasm_core::authority::Micros;
use wasm_core::authority::evolve::view;
use wasm_core::authority::handlers::reencode;
use wasm_core::json::{Object, Value, canonicalize};

/// A Harness that keeps every Event it answers with.
struct Recording {
    world: Harness,
    events: Rc<RefCell<Vec<Value>>>,
}

impl Recording {
    fn record(&mut self, answer: Answer) -> Answer {
        if let Answer::Events(es) = &answer {
            self.events.borrow_mut().extend(es.iter().cloned());
        }
        answer
    }
}

impl Target for Recording {
    fn submit(&mut self, bytes: &[u8], now: Micros) -> Answer {
        let a = Target::submit(&mut self.world, bytes, now);
        self.record(a)
    }
    fn principal_id(&self, name: &str) -> Option<String> {
        Target::principal_id(&self.world, name)
    }
    fn principal_names(&self) -> Vec<String> {
        Target::principal_names(&self.world)
    }
    fn command(
        &mut self,
        name: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Vec<u8> {
        Target::command(&mut self.world, name, kind, env, payload, now)
    }
    /// As `Harness::bootstrap_agents`, through `submit` so that its Events are kept.
    fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), String> {
        for a in agents {
            for (who, kind, payload) in kit::enrolment(&self.world, a, vec![], now) {
                let bytes = self.command(who, kind, &Envelope::default(), payload, now);
                if let Answer::Error { code, message } = self.submit(&bytes, now) {
                    return Err(format!("{code}: {message}"));
                }
            }
        }
        Ok(())
    }
}

/// Every Event of every scenario, in the order they were appended (one world per file).
fn scenario_events() -> Vec<Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let events = Rc::new(RefCell::new(Vec::new()));
    for f in &files {
        let text = std::fs::read(f).unwrap();
        let report = run(&text, |principals| {
            Ok(Recording {
                world: Harness::new(principals),
                events: events.clone(),
            })
        });
        assert!(
            report.failures.is_empty(),
            "{}: {:?}",
            f.display(),
            report.failures
        );
    }
    events.take()
}

#[test]
fn typed_payloads_round_trip_every_scenario_event() {
    let events = scenario_events();
    assert!(events.len() > 100, "only {} Events", events.len());
    let mut typed = BTreeSet::new();
    let mut untyped = BTreeSet::new();
    for e in &events {
        let ev = view(e).unwrap();
        match reencode(&ev) {
            None => {
                untyped.insert(ev.kind.to_owned());
            }
            Some(r) => {
                let again = r.unwrap_or_else(|err| panic!("{}: {err}", ev.event_id));
                let stored = canonicalize(&Value::Object(ev.payload.clone())).unwrap();
                let written = canonicalize(&Value::Object(again)).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&written),
                    String::from_utf8_lossy(&stored),
                    "{} ({})",
                    ev.event_id,
                    ev.kind
                );
                typed.insert(ev.kind.to_owned());
            }
        }
    }
    println!(
        "{} Events; typed kinds {}: {typed:?}; untyped kinds {}: {untyped:?}",
        events.len(),
        typed.len(),
        untyped.len()
    );
    assert!(
        untyped.is_empty(),
        "kinds without a typed payload: {untyped:?}"
    );
}

/// A stored-Event envelope around `payload` (the members `evolve::view` reads).
fn event(kind: &str, sequence: u64, payload: &str) -> Value {
    wasm_core::json::parse_str(&format!(
        r#"{{"eventId":"urn:missionweaveprotocol:event:{sequence}","kind":"{kind}",
            "groupId":"urn:missionweaveprotocol:group:g","sequence":{sequence},
            "actor":{{"type":"agent","id":"urn:missionweaveprotocol:agent:w"}},
            "occurredAt":"2026-07-01T00:00:00Z","cause":{{"id":"a-{sequence}"}},
            "payload":{payload}}}"#
    ))
    .unwrap()
}

#[test]
fn optional_members_are_absent_or_null_as_the_reference_writes_them() {
    use wasm_core::authority::events::EventPayload;
    use wasm_core::authority::events::mission::MissionClosed;
    use wasm_core::authority::events::work_exec::WorkClosed;
    // `sourceEventId` marks the propagated variants only: absent, never `null`, otherwise.
    let own = WorkClosed {
        work_item_id: "w".into(),
        reason: "r".into(),
        source_event_id: None,
    };
    assert_eq!(
        wasm_core::json::to_string(&Value::Object(own.to_object())),
        r#"{"workItemId":"w","reason":"r"}"#
    );
    let propagated = MissionClosed {
        mission_id: "m".into(),
        reason: "r".into(),
        source_event_id: Some("e".into()),
    };
    assert_eq!(
        wasm_core::json::to_string(&Value::Object(propagated.to_object())),
        r#"{"missionId":"m","reason":"r","sourceEventId":"e"}"#
    );
}

#[test]
fn apply_errors_name_the_kind_and_the_member_or_entity() {
    use wasm_core::authority::events::EventPayload;
    use wasm_core::authority::events::work_exec::WorkClosed;
    use wasm_core::authority::evolve::{ApplyError, apply};
    use wasm_core::authority::state::State;

    let lacking = event("work.failed", 1, r#"{"workItemId":"w"}"#);
    let err = WorkClosed::read(&view(&lacking).unwrap()).unwrap_err();
    assert_eq!(
        err,
        ApplyError::MissingMember {
            kind: "work.failed".into(),
            member: "reason",
        }
    );
    assert_eq!(err.to_string(), "work.failed: payload lacks reason");

    // A Group this state has never seen: its first Event must be sequence 1.
    let mut state = State::default();
    let gap = event("work.failed", 2, r#"{"workItemId":"w","reason":"r"}"#);
    let err = apply(&mut state, &gap).unwrap_err();
    assert!(matches!(
        err,
        ApplyError::OutOfOrder {
            sequence: 2,
            last: 0,
            ..
        }
    ));
    assert!(err.to_string().contains("does not follow"), "{err}");

    let unknown_kind = event("work.teleported", 1, "{}");
    assert!(matches!(
        apply(&mut state, &unknown_kind),
        Err(ApplyError::NoTransition { .. })
    ));

    let unknown_item = event("work.failed", 1, r#"{"workItemId":"w","reason":"r"}"#);
    assert_eq!(
        apply(&mut state, &unknown_item).unwrap_err().to_string(),
        "work.failed: unknown WorkItem w"
    );

    let mut no_payload = event("work.failed", 1, "{}");
    if let Value::Object(o) = &mut no_payload {
        o.insert("payload", Value::Null);
    }
    assert_eq!(
        view(&no_payload).unwrap_err(),
        ApplyError::EnvelopeMissing("payload")
    );
}
