//! The browser's Event store and fold (`app::fold`): verified Events folded by the authority's
//! own reducer in delivery order (one Group's whole replay, then the next), in chunks, with
//! progress counts; duplicates ignored; a misordered Event refused and never applied; time
//! travel over the log merged in Event time.

use app::fold::{EventLog, Progress, Travel, merge_by_time};
use simulation::harness::{Envelope, Harness};
use wasm_core::authority::Micros;
use wasm_core::authority::Submitted;
use wasm_core::authority::handlers::payload;
use wasm_core::json::{Object, Value};
use wasm_core::model::common::ActorType;

const GA: &str = "urn:x:group:a";
const GB: &str = "urn:x:group:b";

fn s(v: &str) -> Value {
    Value::string(v.to_owned())
}

struct World {
    h: Harness,
    now: Micros,
    /// Every Group Event the authority appended, in its commit order.
    events: Vec<Value>,
}

impl World {
    fn submit(&mut self, who: &str, kind: &str, env: Envelope, p: Object) {
        self.now = Micros(self.now.0 + Micros::PER_SECOND);
        match self.h.submit(who, kind, &env, p, self.now) {
            Ok(Submitted::Appended(es)) => self.events.extend(
                es.into_iter()
                    .map(|e| e.value)
                    .filter(|v| v.pointer("/groupId").is_some()),
            ),
            other => panic!("{kind} not appended: {other:?}"),
        }
    }

    fn create(&mut self, group: &str) {
        let p = payload(vec![
            ("missionId", s(&format!("{group}:mission"))),
            ("groupId", s(group)),
            ("coordinatorId", s(&self.h.id("coord"))),
            ("title", s(group)),
            ("objective", s("Fold it")),
            ("definitionOfDone", Value::Array(vec![s("folded")])),
            ("deadline", s("2099-01-01T00:00:00Z")),
        ]);
        let env = Envelope {
            group_id: Some(group.into()),
            ..Envelope::default()
        };
        self.submit("owner", "mission.create", env, p);
    }

    fn post(&mut self, group: &str, n: usize) {
        let p = payload(vec![
            ("messageId", s(&format!("{group}:message:{n}"))),
            ("conversationId", s(&format!("{group}:mission"))),
            ("content", s(&format!("note {n}"))),
        ]);
        let env = self.h.current_envelope("owner", Some(group));
        self.submit("owner", "message.post", env, p);
    }
}

/// Two Missions whose Messages interleave in time: A, B, A, B, …
fn world() -> World {
    let mut w = World {
        h: Harness::new(&[("owner", ActorType::Human), ("coord", ActorType::Agent)]),
        now: Micros::from_seconds(1_900_000_000),
        events: Vec::new(),
    };
    // The Coordinator's Agent Card (an Organization Event: a human's Group subscriptions never
    // carry it, so the test's log leaves it out too).
    let pk = wasm_core::encoding::b64url_encode(&w.h.principals["coord"].signer.public_key());
    let card = payload(vec![
        ("agentId", s(&w.h.id("coord"))),
        ("version", Value::from(1u64)),
        ("displayName", s("coord")),
        ("owner", s("urn:missionweaveprotocol:human:operations")),
        ("publicKey", s(&pk)),
        ("capabilities", Value::Array(vec![])),
        ("issuedAt", s(&w.now.format())),
        ("signature", s("test")),
    ]);
    w.submit(
        "organization-registry",
        "ext.missionweaveprotocol.registry.agent_card_register",
        Envelope::default(),
        payload(vec![("card", Value::Object(card))]),
    );
    w.create(GA);
    w.create(GB);
    for n in 0..6 {
        w.post(GA, n);
        w.post(GB, n);
    }
    w
}

fn group_of(e: &Value) -> &str {
    e.pointer("/groupId").and_then(Value::as_str).unwrap_or("")
}

fn id_of(e: &Value) -> &str {
    e.pointer("/eventId").and_then(Value::as_str).unwrap_or("")
}

/// As a replay delivers them: Group A's whole history, then Group B's.
fn replay_order(events: &[Value]) -> Vec<Value> {
    let mut v: Vec<Value> = events
        .iter()
        .filter(|e| group_of(e) == GA)
        .cloned()
        .collect();
    v.extend(events.iter().filter(|e| group_of(e) == GB).cloned());
    v
}

#[test]
fn folds_in_chunks_with_progress_to_the_authoritys_state() {
    let w = world();
    let delivered = replay_order(&w.events);
    let mut log = EventLog::new();
    assert_eq!(log.progress().per_mille(), 1000, "nothing to fold is done");
    for e in &delivered {
        assert!(log.push(e.clone()));
    }
    // A duplicate (replay overlap) is not stored twice.
    assert!(!log.push(delivered[0].clone()));
    let total = delivered.len();
    assert_eq!(
        log.progress(),
        Progress {
            folded: 0,
            known: total,
            refused: 0
        }
    );
    let mut steps = Vec::new();
    while log.fold(5) > 0 {
        steps.push(log.progress());
    }
    // Chunks of at most five, counts rising to the total.
    assert_eq!(steps.len(), total.div_ceil(5));
    assert!(steps.windows(2).all(|p| p[0].folded < p[1].folded));
    assert!(steps[0].per_mille() < 1000 && !steps[0].done());
    assert!(log.progress().done());
    assert_eq!(log.pending(), 0);
    assert!(log.refusals().is_empty(), "{:?}", log.refusals());
    // The same Missions, Messages and Group positions as the authority that sealed them.
    let auth = &w.h.authority.state;
    let mine = log.state();
    assert_eq!(mine.missions.len(), 2);
    assert_eq!(
        mine.missions.keys().collect::<Vec<_>>(),
        auth.missions.keys().collect::<Vec<_>>()
    );
    assert_eq!(mine.messages.len(), 12);
    for g in [GA, GB] {
        assert_eq!(mine.groups[g].last_sequence, auth.groups[g].last_sequence);
        assert_eq!(mine.groups[g].memberships, auth.groups[g].memberships);
    }
    assert_eq!(
        mine.messages.keys().collect::<Vec<_>>(),
        auth.messages.keys().collect::<Vec<_>>()
    );
}

#[test]
fn a_misordered_event_is_refused_and_never_applied() {
    let w = world();
    let a: Vec<Value> = w
        .events
        .iter()
        .filter(|e| group_of(e) == GA)
        .cloned()
        .collect();
    let mut log = EventLog::new();
    log.push(a[0].clone());
    // Sequence 3 before 2: the reducer's order check refuses it; the state keeps sequence 1.
    log.push(a[2].clone());
    log.fold(10);
    assert_eq!(log.refusals().len(), 1);
    assert_eq!(log.refusals()[0].event_id, id_of(&a[2]));
    assert!(log.refusals()[0].reason.contains("does not follow"));
    assert_eq!(log.state().groups[GA].last_sequence, 1);
    assert_eq!(log.progress().refused, 1);
    // An Event without an ID is not stored at all.
    assert!(!log.push(Value::Object(Object::new())));
}

#[test]
fn merging_keeps_each_groups_order_and_interleaves_by_time() {
    let w = world();
    let merged = merge_by_time(&replay_order(&w.events));
    // Exactly the authority's commit order (each Command a second apart).
    let ids: Vec<&str> = merged.iter().map(id_of).collect();
    let want: Vec<&str> = w.events.iter().map(id_of).collect();
    assert_eq!(ids, want);
}

#[test]
fn time_travel_pins_the_state_as_of_an_event_and_not_later() {
    let w = world();
    let mut log = EventLog::new();
    for e in replay_order(&w.events) {
        log.push(e);
    }
    log.fold(usize::MAX);
    let mut travel = Travel::new(&log);
    assert_eq!(travel.len(), w.events.len());
    // Group B's third Message (B sequence 4: created, then Messages 0, 1, 2).
    let pick = w
        .events
        .iter()
        .filter(|e| group_of(e) == GB)
        .nth(3)
        .expect("B's third Message");
    let (as_of, state) = travel.select(id_of(pick)).expect("in the log");
    assert_eq!(as_of.group_id.as_deref(), Some(GB));
    assert_eq!(as_of.sequence, 4);
    assert_eq!(as_of.event_id, id_of(pick));
    // As of then: A has posted 0, 1, 2 (each before B's of the same number), B 0, 1, 2.
    assert_eq!(state.messages.len(), 6);
    assert_eq!(state.groups[GA].last_sequence, 4);
    assert_eq!(state.groups[GB].last_sequence, 4);
    // Later, back to the end: the live state.
    let last = id_of(w.events.last().expect("events"));
    let (end, state) = travel.select(last).expect("last");
    assert_eq!(end.position, w.events.len());
    assert_eq!(state.messages.len(), 12);
    // And back again to an earlier point (from a checkpoint, same answer).
    let (_, again) = travel.select(id_of(pick)).expect("again");
    assert_eq!(again.messages.len(), 6);
    assert!(travel.select("urn:x:event:nope").is_err());
}
