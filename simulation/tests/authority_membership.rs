//! Memberships, Delegation Grants and Messages end to end through the six verification stages
//! (payloads.md §6.11–§6.17): accepted Events and their payloads, every guard's wire code,
//! conversation-is-not-authority, cooperation limits, and replay determinism.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use simulation::harness::{Envelope, Harness};
use simulation::kit::{self, G, M, arr, obj, s, t0};
use wasm_core::authority::handlers::payload;
use wasm_core::authority::{Micros, Rejection, Submitted};
use wasm_core::json::{Object, Value};
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::membership::MembershipState;
use wasm_core::model::mission::MissionState;

const MISSION_CONV: &str = "urn:x:group:root:mission";

fn at(seconds: u64) -> Micros {
    t0().plus_seconds(seconds)
}

/// An Organization whose every appended Event is recorded, for the replay test.
struct World {
    h: Harness,
    log: Vec<Value>,
}

impl World {
    fn new() -> World {
        let h = Harness::new(&[
            ("owner", ActorType::Human),
            ("coord", ActorType::Agent),
            ("worker", ActorType::Agent),
            ("delegate", ActorType::Agent),
            ("outsider", ActorType::Agent),
            ("coord2", ActorType::Agent),
            ("unregistered", ActorType::Agent),
        ]);
        let mut w = World { h, log: Vec::new() };
        for a in ["coord", "worker", "delegate", "outsider", "coord2"] {
            let card = payload(vec![
                ("agentId", s(&w.h.id(a))),
                ("version", Value::from(1u64)),
                ("displayName", s(a)),
                ("owner", s("urn:x:human:ops")),
                ("publicKey", s("AAAA")),
                (
                    "capabilities",
                    Value::Array(vec![obj(vec![
                        ("id", s("cap:code")),
                        ("version", Value::from(2u64)),
                    ])]),
                ),
                ("issuedAt", s("2026-07-15T08:00:00Z")),
                ("signature", s("x")),
            ]);
            w.run(
                "organization-registry",
                "ext.missionweaveprotocol.registry.agent_card_register",
                &Envelope::default(),
                payload(vec![("card", Value::Object(card))]),
                t0(),
            )
            .unwrap();
            let id = w.h.id(a);
            w.run(
                "group-gateway",
                "ext.missionweaveprotocol.identity.session_open",
                &Envelope::default(),
                payload(vec![("agentId", s(&id))]),
                t0(),
            )
            .unwrap();
        }
        let create = payload(vec![
            ("missionId", s(M)),
            ("groupId", s(G)),
            ("coordinatorId", s(&w.h.id("coord"))),
            ("title", s("Root")),
            ("objective", s("Ship it")),
            ("definitionOfDone", arr(&["tests pass"])),
            ("deadline", s("2026-07-17T08:00:00Z")),
            ("coordinatorLeaseSeconds", Value::from(86_400u64)),
            (
                "budget",
                obj(vec![
                    ("financialMicrounits", Value::from(1_000_000u64)),
                    ("modelTokens", Value::from(100_000u64)),
                    ("toolCalls", Value::from(100u64)),
                    ("computeSeconds", Value::from(1_000u64)),
                    ("wallClockSeconds", Value::from(10_000u64)),
                    ("externalActions", Value::from(5u64)),
                ]),
            ),
        ]);
        let env = kit::in_group(G);
        w.run("owner", "mission.create", &env, create, t0())
            .unwrap();
        w
    }

    /// Submits and records the appended Events; returns them.
    fn run(
        &mut self,
        who: &str,
        kind: &str,
        env: &Envelope,
        p: Object,
        now: Micros,
    ) -> Result<Vec<Value>, Rejection> {
        match self.h.submit(who, kind, env, p, now)? {
            Submitted::Appended(es) => {
                let values: Vec<Value> = es.into_iter().map(|e| e.value).collect();
                self.log.extend(values.iter().cloned());
                Ok(values)
            }
            Submitted::Duplicate(_) => Ok(Vec::new()),
        }
    }

    /// The envelope `who` would send now: current Session, Membership and (for the
    /// Coordinator) Coordinator Epochs.
    fn env(&self, who: &str) -> Envelope {
        let id = self.h.id(who);
        let st = &self.h.authority.state;
        Envelope {
            group_id: Some(G.into()),
            session_epoch: st.session_epochs.get(&id).copied(),
            membership_epoch: st.membership(G, &id).map(|m| m.epoch),
            coordinator_epoch: (who == "coord").then(|| st.missions[M].coordinator_epoch),
            ..Envelope::default()
        }
    }

    fn principal(&self, who: &str) -> Value {
        let a = self.h.actor(who);
        obj(vec![
            ("type", s(a.actor_type.as_str())),
            ("id", s(a.id.as_str())),
        ])
    }

    /// `by` adds or re-grants `who` with `roles`.
    fn add(&mut self, by: &str, who: &str, roles: &[&str], now: Micros) -> Vec<Value> {
        let p = payload(vec![
            ("principal", self.principal(who)),
            ("roles", arr(roles)),
        ]);
        let env = self.env(by);
        self.run(by, "membership.change", &env, p, now).unwrap()
    }

    fn post(
        &mut self,
        who: &str,
        id: &str,
        content: &str,
        now: Micros,
    ) -> Result<Vec<Value>, Rejection> {
        let p = payload(vec![
            ("messageId", s(id)),
            ("conversationId", s(MISSION_CONV)),
            ("content", s(content)),
        ]);
        let env = self.env(who);
        self.run(who, "message.post", &env, p, now)
    }
}

fn code(r: Result<Vec<Value>, Rejection>) -> ErrorCode {
    match r {
        Ok(es) => panic!("expected a rejection, got {} Event(s): {es:?}", es.len()),
        Err(e) => e.code,
    }
}

fn kind(e: &Value) -> &str {
    e.pointer("/kind").and_then(Value::as_str).unwrap()
}

fn str_at<'v>(e: &'v Value, p: &str) -> &'v str {
    e.pointer(p)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{p} missing in {e:?}"))
}

fn u64_at(e: &Value, p: &str) -> u64 {
    match e.pointer(p) {
        Some(Value::Number(n)) => n.as_safe_u64().unwrap(),
        other => panic!("{p} is {other:?}"),
    }
}

fn ok1(r: Result<Vec<Value>, Rejection>) -> Value {
    let es = r.unwrap();
    assert_eq!(es.len(), 1, "{es:?}");
    es.into_iter().next().unwrap()
}

// ------------------------------------------------------------------------------------------
// membership.change
// ------------------------------------------------------------------------------------------

#[test]
fn membership_change_adds_then_regrants() {
    let mut w = World::new();
    // The owner adds the worker; visibility null resolves to the current sequence (1).
    let es = w.add("owner", "worker", &["worker"], at(1));
    let e = &es[0];
    assert_eq!(kind(e), "membership.changed");
    assert_eq!(
        str_at(e, "/payload/membership/principal/id"),
        w.h.id("worker")
    );
    assert_eq!(str_at(e, "/payload/membership/principal/type"), "agent");
    assert_eq!(u64_at(e, "/payload/membership/epoch"), 1);
    assert_eq!(str_at(e, "/payload/membership/status"), "active");
    assert_eq!(u64_at(e, "/payload/membership/visibilityAfterSequence"), 1);
    assert_eq!(str_at(e, "/payload/membership/groupId"), G);
    assert_eq!(e.pointer("/payload/membership/endedAt"), Some(&Value::Null));
    assert_eq!(
        e.pointer("/payload/membership/roles"),
        Some(&arr(&["worker"]))
    );
    let joined = str_at(e, "/payload/membership/joinedAt").to_owned();

    // The Coordinator re-grants: roles are a union, sorted; epoch + 1; provisional; explicit
    // visibility; joinedAt kept.
    let p = payload(vec![
        ("principal", w.principal("worker")),
        ("roles", arr(&["reviewer"])),
        ("provisional", Value::Bool(true)),
        ("visibilityAfterSequence", Value::from(0u64)),
    ]);
    let env = w.env("coord");
    let e = ok1(w.run("coord", "membership.change", &env, p, at(2)));
    assert_eq!(u64_at(&e, "/payload/membership/epoch"), 2);
    assert_eq!(
        e.pointer("/payload/membership/roles"),
        Some(&arr(&["reviewer", "worker"]))
    );
    assert_eq!(str_at(&e, "/payload/membership/status"), "provisional");
    assert_eq!(u64_at(&e, "/payload/membership/visibilityAfterSequence"), 0);
    assert_eq!(str_at(&e, "/payload/membership/joinedAt"), joined);
    let m =
        w.h.authority
            .state
            .membership(G, &w.h.id("worker"))
            .unwrap();
    assert_eq!((m.epoch, m.status.as_str()), (2, "provisional"));

    // A `system` principal (the reference's spelling) is accepted and emitted as `service`.
    let p = payload(vec![
        (
            "principal",
            obj(vec![
                ("type", s("system")),
                ("id", s("urn:x:service:audit")),
            ]),
        ),
        ("roles", arr(&["observer"])),
    ]);
    let env = w.env("owner");
    let e = ok1(w.run("owner", "membership.change", &env, p, at(3)));
    assert_eq!(str_at(&e, "/payload/membership/principal/type"), "service");
    // And `service` itself is accepted too (D-28).
    let p = payload(vec![
        (
            "principal",
            obj(vec![
                ("type", s("service")),
                ("id", s("urn:x:service:audit2")),
            ]),
        ),
        ("roles", arr(&["observer"])),
        ("visibilityAfterSequence", Value::Null),
    ]);
    let env = w.env("owner");
    let e = ok1(w.run("owner", "membership.change", &env, p, at(3)));
    assert_eq!(str_at(&e, "/payload/membership/principal/type"), "service");
}

#[test]
fn membership_change_guards() {
    let mut w = World::new();
    w.add("owner", "worker", &["worker"], at(1));
    let change = |w: &World, who: &str, roles: &[&str]| {
        payload(vec![("principal", w.principal(who)), ("roles", arr(roles))])
    };

    // A member without authority: AUTH_FORBIDDEN.
    let p = change(&w, "delegate", &["worker"]);
    let env = w.env("worker");
    assert_eq!(
        code(w.run("worker", "membership.change", &env, p, at(2))),
        ErrorCode::AuthForbidden
    );
    // A non-member: GROUP_NOT_FOUND (existence is not disclosed).
    let p = change(&w, "delegate", &["worker"]);
    let env = Envelope {
        membership_epoch: Some(1),
        ..w.env("outsider")
    };
    assert_eq!(
        code(w.run("outsider", "membership.change", &env, p, at(2))),
        ErrorCode::GroupNotFound
    );
    // A stale Membership Epoch of the sender: MEMBERSHIP_STALE (D-1).
    let p = change(&w, "delegate", &["worker"]);
    let env = Envelope {
        membership_epoch: Some(7),
        ..w.env("owner")
    };
    assert_eq!(
        code(w.run("owner", "membership.change", &env, p, at(2))),
        ErrorCode::MembershipStale
    );
    // A Coordinator Epoch, when sent, must be current (D-21).
    let p = change(&w, "delegate", &["worker"]);
    let env = Envelope {
        coordinator_epoch: Some(9),
        ..w.env("coord")
    };
    assert_eq!(
        code(w.run("coord", "membership.change", &env, p, at(2))),
        ErrorCode::AuthStaleCoordinator
    );
    // mission_owner only for the recorded owner; coordinator only for the Coordinator.
    let p = change(&w, "worker", &["mission_owner"]);
    let env = w.env("owner");
    assert_eq!(
        code(w.run("owner", "membership.change", &env, p, at(2))),
        ErrorCode::AuthForbidden
    );
    let p = change(&w, "worker", &["coordinator"]);
    let env = w.env("owner");
    assert_eq!(
        code(w.run("owner", "membership.change", &env, p, at(2))),
        ErrorCode::AuthForbidden
    );
    // An Agent without a registered card: INVALID_COMMAND (D-4).
    let p = change(&w, "unregistered", &["worker"]);
    let env = w.env("owner");
    assert_eq!(
        code(w.run("owner", "membership.change", &env, p, at(2))),
        ErrorCode::InvalidCommand
    );
    // Payload shape: unknown role, empty roles, duplicate role, unknown member, null provisional.
    for p in [
        change(&w, "delegate", &["boss"]),
        change(&w, "delegate", &[]),
        change(&w, "delegate", &["worker", "worker"]),
        {
            let mut p = change(&w, "delegate", &["worker"]);
            p.insert("bogus", Value::Bool(true));
            p
        },
        {
            let mut p = change(&w, "delegate", &["worker"]);
            p.insert("provisional", Value::Null);
            p
        },
        payload(vec![("roles", arr(&["worker"]))]),
    ] {
        let env = w.env("owner");
        assert_eq!(
            code(w.run("owner", "membership.change", &env, p, at(2))),
            ErrorCode::InvalidCommand
        );
    }
    // The Coordinator's Membership keeps full visibility and stays active (§8).
    let mut p = change(&w, "coord", &["reviewer"]);
    p.insert("provisional", Value::Bool(true));
    let env = w.env("owner");
    assert_eq!(
        code(w.run("owner", "membership.change", &env, p, at(2))),
        ErrorCode::InvalidCommand
    );
    // ...but the owner may add a role to it; null visibility stays 0 for the Coordinator.
    let p = change(&w, "coord", &["reviewer"]);
    let env = w.env("owner");
    let e = ok1(w.run("owner", "membership.change", &env, p, at(2)));
    assert_eq!(u64_at(&e, "/payload/membership/visibilityAfterSequence"), 0);
    assert_eq!(
        e.pointer("/payload/membership/roles"),
        Some(&arr(&["coordinator", "reviewer"]))
    );
    // The Coordinator's own older Commands are now fenced by its new Membership Epoch.
    let p = change(&w, "delegate", &["worker"]);
    let env = Envelope {
        membership_epoch: Some(1),
        ..w.env("coord")
    };
    assert_eq!(
        code(w.run("coord", "membership.change", &env, p, at(3))),
        ErrorCode::MembershipStale
    );
}

#[test]
fn membership_change_compare_and_set_on_the_membership_epoch() {
    let mut w = World::new();
    // A new Membership has revision 0.
    let p = payload(vec![
        ("principal", w.principal("worker")),
        ("roles", arr(&["worker"])),
    ]);
    let env = Envelope {
        expected_revision: Some(1),
        ..w.env("owner")
    };
    assert_eq!(
        code(w.run("owner", "membership.change", &env, p.clone(), at(1))),
        ErrorCode::RevisionConflict
    );
    let env = Envelope {
        expected_revision: Some(0),
        ..w.env("owner")
    };
    ok1(w.run("owner", "membership.change", &env, p.clone(), at(1)));
    // Now at epoch 1: a stale expectation conflicts, the current one applies.
    let env = Envelope {
        expected_revision: Some(0),
        ..w.env("owner")
    };
    assert_eq!(
        code(w.run("owner", "membership.change", &env, p.clone(), at(2))),
        ErrorCode::RevisionConflict
    );
    let env = Envelope {
        expected_revision: Some(1),
        ..w.env("owner")
    };
    let e = ok1(w.run("owner", "membership.change", &env, p, at(2)));
    assert_eq!(u64_at(&e, "/payload/membership/epoch"), 2);
    // membership.end compares too.
    let p = payload(vec![("principal", w.principal("worker"))]);
    let env = Envelope {
        expected_revision: Some(1),
        ..w.env("owner")
    };
    assert_eq!(
        code(w.run("owner", "membership.end", &env, p.clone(), at(3))),
        ErrorCode::RevisionConflict
    );
    let env = Envelope {
        expected_revision: Some(2),
        ..w.env("owner")
    };
    assert_eq!(
        kind(&ok1(w.run("owner", "membership.end", &env, p, at(3)))),
        "membership.ended"
    );
}

// ------------------------------------------------------------------------------------------
// membership.end
// ------------------------------------------------------------------------------------------

#[test]
fn membership_end_and_readd() {
    let mut w = World::new();
    w.add("owner", "worker", &["worker"], at(1));
    let end = |w: &World, who: &str| payload(vec![("principal", w.principal(who))]);

    // A plain member cannot end Memberships.
    w.add("owner", "delegate", &["worker"], at(1));
    let p = end(&w, "delegate");
    let env = w.env("worker");
    assert_eq!(
        code(w.run("worker", "membership.end", &env, p, at(2))),
        ErrorCode::AuthForbidden
    );
    // The owner's and the Coordinator's Memberships cannot be ended (D-6: AUTH_FORBIDDEN).
    for who in ["owner", "coord"] {
        let p = end(&w, who);
        let env = w.env("owner");
        assert_eq!(
            code(w.run("owner", "membership.end", &env, p, at(2))),
            ErrorCode::AuthForbidden
        );
    }
    // No Membership to end: INVALID_COMMAND (D-4).
    let p = end(&w, "outsider");
    let env = w.env("owner");
    assert_eq!(
        code(w.run("owner", "membership.end", &env, p, at(2))),
        ErrorCode::InvalidCommand
    );

    // The Coordinator ends the worker: status ended, epoch + 1, endedAt set, roles kept.
    let p = end(&w, "worker");
    let env = w.env("coord");
    let e = ok1(w.run("coord", "membership.end", &env, p, at(3)));
    assert_eq!(kind(&e), "membership.ended");
    assert_eq!(str_at(&e, "/payload/principal/id"), w.h.id("worker"));
    assert_eq!(str_at(&e, "/payload/principal/type"), "agent");
    let m =
        w.h.authority
            .state
            .membership(G, &w.h.id("worker"))
            .unwrap();
    assert_eq!(m.status, MembershipState::Ended);
    assert_eq!(m.epoch, 2);
    assert_eq!(m.ended_at, Some(at(3)));
    assert_eq!(m.roles, vec!["worker".to_owned()]);

    // Ending again: INVALID_STATE_TRANSITION.
    let p = end(&w, "worker");
    let env = w.env("owner");
    assert_eq!(
        code(w.run("owner", "membership.end", &env, p, at(4))),
        ErrorCode::InvalidStateTransition
    );
    // The ended member, even with its current epoch, needs an active Membership.
    assert_eq!(
        code(w.post("worker", "urn:x:msg:ended", "hello", at(4))),
        ErrorCode::MembershipRequired
    );
    // Its pre-end epoch is stale (the epoch is checked before the status).
    let p = payload(vec![
        ("messageId", s("urn:x:msg:ended2")),
        ("conversationId", s(MISSION_CONV)),
        ("content", s("hello")),
    ]);
    let env = Envelope {
        membership_epoch: Some(1),
        ..w.env("worker")
    };
    assert_eq!(
        code(w.run("worker", "message.post", &env, p, at(4))),
        ErrorCode::MembershipStale
    );

    // Re-adding an ended Membership: epoch + 1, active, endedAt cleared, joinedAt kept.
    let es = w.add("owner", "worker", &["reviewer"], at(5));
    assert_eq!(u64_at(&es[0], "/payload/membership/epoch"), 3);
    assert_eq!(str_at(&es[0], "/payload/membership/status"), "active");
    assert_eq!(
        es[0].pointer("/payload/membership/endedAt"),
        Some(&Value::Null)
    );
    assert_eq!(
        str_at(&es[0], "/payload/membership/joinedAt"),
        at(1).format()
    );
    assert_eq!(
        es[0].pointer("/payload/membership/roles"),
        Some(&arr(&["reviewer", "worker"]))
    );
    w.post("worker", "urn:x:msg:back", "back again", at(6))
        .unwrap();
}

// ------------------------------------------------------------------------------------------
// message.post
// ------------------------------------------------------------------------------------------

#[test]
fn message_post_accepted() {
    let mut w = World::new();
    w.add("owner", "worker", &["worker"], at(1));
    let p = payload(vec![
        ("messageId", s("urn:x:msg:1")),
        ("conversationId", s(MISSION_CONV)),
        ("content", s("  hello team  ")),
        (
            "mentions",
            Value::Array(vec![
                w.principal("coord"),
                obj(vec![("type", s("system")), ("id", s("urn:x:service:bot"))]),
            ]),
        ),
    ]);
    let env = w.env("worker");
    let e = ok1(w.run("worker", "message.post", &env, p, at(2)));
    assert_eq!(kind(&e), "message.posted");
    assert_eq!(str_at(&e, "/conversationId"), MISSION_CONV);
    assert_eq!(str_at(&e, "/payload/message/id"), "urn:x:msg:1");
    assert_eq!(str_at(&e, "/payload/message/groupId"), G);
    assert_eq!(str_at(&e, "/payload/message/conversationId"), MISSION_CONV);
    assert_eq!(str_at(&e, "/payload/message/content"), "hello team");
    assert_eq!(str_at(&e, "/payload/message/author/id"), w.h.id("worker"));
    assert_eq!(str_at(&e, "/payload/message/createdAt"), at(2).format());
    assert_eq!(
        str_at(&e, "/payload/message/mentions/0/id"),
        w.h.id("coord")
    );
    assert_eq!(str_at(&e, "/payload/message/mentions/1/type"), "service");
    assert!(e.pointer("/payload/message/authority").is_none());
    assert!(w.h.authority.state.messages.contains_key("urn:x:msg:1"));

    // The Conversation may come from the envelope alone; a human member posts as well.
    let p = payload(vec![
        ("messageId", s("urn:x:msg:2")),
        ("content", s("from the owner")),
    ]);
    let env = Envelope {
        conversation_id: Some(MISSION_CONV.into()),
        ..w.env("owner")
    };
    let e = ok1(w.run("owner", "message.post", &env, p, at(3)));
    assert_eq!(str_at(&e, "/payload/message/conversationId"), MISSION_CONV);
    assert_eq!(str_at(&e, "/payload/message/author/type"), "human");

    // `authority` is dropped before validation, whatever it says.
    let p = payload(vec![
        ("messageId", s("urn:x:msg:3")),
        ("conversationId", s(MISSION_CONV)),
        ("content", s("claiming authority")),
        ("authority", Value::Bool(true)),
    ]);
    let env = w.env("coord");
    let e = ok1(w.run("coord", "message.post", &env, p, at(4)));
    assert!(e.pointer("/payload/message/authority").is_none());
    assert!(e.pointer("/payload/authority").is_none());
}

#[test]
fn message_post_guards() {
    let mut w = World::new();
    w.add("owner", "worker", &["worker"], at(1));
    let post = |id: &str, conv: &str, content: &str| {
        payload(vec![
            ("messageId", s(id)),
            ("conversationId", s(conv)),
            ("content", s(content)),
        ])
    };
    // Unknown Conversation, including another Group's and a WorkItem Conversation that was
    // never created: INVALID_COMMAND (D-4).
    for conv in [
        "urn:x:conv:nope",
        "urn:x:group:other:mission",
        "urn:x:group:root:work:urn:x:work:none",
    ] {
        let env = w.env("worker");
        assert_eq!(
            code(w.run(
                "worker",
                "message.post",
                &env,
                post("urn:x:m:a", conv, "hi"),
                at(2)
            )),
            ErrorCode::InvalidCommand
        );
    }
    // Envelope and payload Conversations disagree.
    let env = Envelope {
        conversation_id: Some("urn:x:group:root:other".into()),
        ..w.env("worker")
    };
    assert_eq!(
        code(w.run(
            "worker",
            "message.post",
            &env,
            post("urn:x:m:a", MISSION_CONV, "hi"),
            at(2)
        )),
        ErrorCode::InvalidCommand
    );
    // Duplicate Message id (and an id used by another kind of object): INVALID_COMMAND (D-5).
    w.post("worker", "urn:x:m:1", "first", at(2)).unwrap();
    assert_eq!(
        code(w.post("worker", "urn:x:m:1", "again", at(3))),
        ErrorCode::InvalidCommand
    );
    assert_eq!(
        code(w.post("worker", M, "mission id", at(3))),
        ErrorCode::InvalidCommand
    );
    // A non-member: GROUP_NOT_FOUND.
    let env = Envelope {
        membership_epoch: Some(1),
        ..w.env("outsider")
    };
    assert_eq!(
        code(w.run(
            "outsider",
            "message.post",
            &env,
            post("urn:x:m:o", MISSION_CONV, "hi"),
            at(3)
        )),
        ErrorCode::GroupNotFound
    );
    // An unknown Group: GROUP_NOT_FOUND.
    let env = Envelope {
        group_id: Some("urn:x:group:unknown".into()),
        ..w.env("worker")
    };
    assert_eq!(
        code(w.run(
            "worker",
            "message.post",
            &env,
            post("urn:x:m:u", MISSION_CONV, "hi"),
            at(3)
        )),
        ErrorCode::GroupNotFound
    );
    // A stale Membership Epoch: MEMBERSHIP_STALE.
    let env = Envelope {
        membership_epoch: Some(2),
        ..w.env("worker")
    };
    assert_eq!(
        code(w.run(
            "worker",
            "message.post",
            &env,
            post("urn:x:m:s", MISSION_CONV, "hi"),
            at(3)
        )),
        ErrorCode::MembershipStale
    );
    // A stale Session Epoch: AUTH_STALE_SESSION.
    let env = Envelope {
        session_epoch: Some(2),
        ..w.env("worker")
    };
    assert_eq!(
        code(w.run(
            "worker",
            "message.post",
            &env,
            post("urn:x:m:s", MISSION_CONV, "hi"),
            at(3)
        )),
        ErrorCode::AuthStaleSession
    );
    // A provisional member cannot post: MEMBERSHIP_REQUIRED (D-2).
    let p = payload(vec![
        ("principal", w.principal("delegate")),
        ("roles", arr(&["worker"])),
        ("provisional", Value::Bool(true)),
    ]);
    let env = w.env("owner");
    w.run("owner", "membership.change", &env, p, at(3)).unwrap();
    assert_eq!(
        code(w.post("delegate", "urn:x:m:p", "hi", at(4))),
        ErrorCode::MembershipRequired
    );
    // Payload shape: too long, empty, unknown member, mentions null, bad mention type.
    let long = "x".repeat(513);
    for p in [
        post("urn:x:m:l", MISSION_CONV, &long),
        post("urn:x:m:l", MISSION_CONV, "   "),
        {
            let mut p = post("urn:x:m:l", MISSION_CONV, "hi");
            p.insert("bogus", Value::Bool(false));
            p
        },
        {
            let mut p = post("urn:x:m:l", MISSION_CONV, "hi");
            p.insert("mentions", Value::Null);
            p
        },
        {
            let mut p = post("urn:x:m:l", MISSION_CONV, "hi");
            p.insert(
                "mentions",
                Value::Array(vec![obj(vec![("type", s("robot")), ("id", s("urn:x:r"))])]),
            );
            p
        },
        payload(vec![
            ("messageId", s("urn:x:m:l")),
            ("content", s("no conversation")),
        ]),
    ] {
        let env = w.env("worker");
        assert_eq!(
            code(w.run("worker", "message.post", &env, p, at(4))),
            ErrorCode::InvalidCommand
        );
    }
    // Exactly 512 characters is fine.
    let max = "y".repeat(512);
    w.post("worker", "urn:x:m:max", &max, at(5)).unwrap();
}

#[test]
fn message_rate_limit_and_override() {
    let mut w = World::new();
    w.h.authority.config.limits.message_rate_per_minute = 3;
    w.add("owner", "worker", &["worker"], at(1));
    for i in 0..3 {
        w.post("worker", &format!("urn:x:m:{i}"), "chatter", at(10 + i))
            .unwrap();
    }
    // The fourth within 60 s: RATE_LIMITED (D-6).
    assert_eq!(
        code(w.post("worker", "urn:x:m:3", "one more", at(20))),
        ErrorCode::RateLimited
    );
    // The limit is per actor: the Coordinator still posts.
    w.post("coord", "urn:x:m:c", "fine", at(20)).unwrap();
    // Citing a grant when no limit is reached: INVALID_COMMAND.
    let p = payload(vec![
        ("messageId", s("urn:x:m:cg")),
        ("conversationId", s(MISSION_CONV)),
        ("content", s("hi")),
    ]);
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:grant:none".into()),
        ..w.env("coord")
    };
    assert_eq!(
        code(w.run("coord", "message.post", &env, p, at(21))),
        ErrorCode::InvalidCommand
    );
    // Citing an unknown grant at the limit: RATE_LIMITED.
    let p = payload(vec![
        ("messageId", s("urn:x:m:3")),
        ("conversationId", s(MISSION_CONV)),
        ("content", s("hi")),
    ]);
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:grant:none".into()),
        ..w.env("worker")
    };
    assert_eq!(
        code(w.run("worker", "message.post", &env, p, at(21))),
        ErrorCode::RateLimited
    );

    // With a one-shot Cooperation Override Grant issued by the MissionOwner, accepted once.
    let action = "urn:x:action:override-target";
    let grant = payload(vec![
        ("grantId", s("urn:x:override:1")),
        ("policyName", s("message_rate")),
        ("beneficiary", w.principal("worker")),
        ("targetCommandKind", s("message.post")),
        ("targetActionId", s(action)),
        ("reason", s("incident bridge")),
        ("expiresAt", s("2026-07-15T09:00:00Z")),
    ]);
    let env = w.env("owner");
    match w.run(
        "owner",
        "policy.grant_cooperation_override",
        &env,
        grant,
        at(22),
    ) {
        Ok(es) => assert_eq!(kind(&es[0]), "policy.cooperation_override.granted"),
        Err(e) if e.message.contains("not supported") => {
            eprintln!("SKIPPED: policy.grant_cooperation_override is not implemented yet");
            return;
        }
        Err(e) => panic!("{e:?}"),
    }
    let p = payload(vec![
        ("messageId", s("urn:x:m:3")),
        ("conversationId", s(MISSION_CONV)),
        ("content", s("escalated")),
    ]);
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:override:1".into()),
        action_id: Some(action.into()),
        ..w.env("worker")
    };
    let e = ok1(w.run("worker", "message.post", &env, p, at(23)));
    assert_eq!(kind(&e), "message.posted");
    let g = &w.h.authority.state.override_grants["urn:x:override:1"];
    assert_eq!(g.consumed_at, Some(at(23)));
    assert_eq!(g.consumed_event_id.as_deref(), Some(str_at(&e, "/eventId")));
    // One-shot: another Command citing it is refused.
    let p = payload(vec![
        ("messageId", s("urn:x:m:4")),
        ("conversationId", s(MISSION_CONV)),
        ("content", s("again")),
    ]);
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:override:1".into()),
        ..w.env("worker")
    };
    assert_eq!(
        code(w.run("worker", "message.post", &env, p, at(24))),
        ErrorCode::RateLimited
    );
    // After the window passes, posting resumes without a grant.
    w.post("worker", "urn:x:m:5", "later", at(90)).unwrap();
}

// ------------------------------------------------------------------------------------------
// message.correct / retract / redact
// ------------------------------------------------------------------------------------------

fn amend(id: &str, message: &str, replacement: Option<&str>) -> Object {
    let mut p = payload(vec![
        ("amendmentId", s(id)),
        ("messageId", s(message)),
        ("reason", s("typo")),
    ]);
    if let Some(r) = replacement {
        p.insert("replacementContent", s(r));
    }
    p
}

#[test]
fn message_amendments() {
    let mut w = World::new();
    w.add("owner", "worker", &["worker"], at(1));
    w.add("owner", "delegate", &["worker"], at(1));
    w.post("worker", "urn:x:m:1", "helo", at(2)).unwrap();
    let original = w.h.authority.state.messages["urn:x:m:1"].clone();

    // The author corrects.
    let env = w.env("worker");
    let e = ok1(w.run(
        "worker",
        "message.correct",
        &env,
        amend("urn:x:a:1", "urn:x:m:1", Some("hello")),
        at(3),
    ));
    assert_eq!(kind(&e), "message.corrected");
    assert_eq!(str_at(&e, "/payload/amendment/kind"), "correction");
    assert_eq!(str_at(&e, "/payload/amendment/messageId"), "urn:x:m:1");
    assert_eq!(str_at(&e, "/payload/amendment/replacementContent"), "hello");
    assert_eq!(str_at(&e, "/payload/amendment/reason"), "typo");
    assert_eq!(str_at(&e, "/payload/amendment/actor/id"), w.h.id("worker"));
    assert_eq!(str_at(&e, "/payload/amendment/groupId"), G);
    assert!(e.pointer("/conversationId").is_none());
    // History is never rewritten.
    assert_eq!(w.h.authority.state.messages["urn:x:m:1"], original);

    // Someone else may not correct or retract it.
    for (k, r) in [
        ("message.correct", Some("hijack")),
        ("message.retract", None),
    ] {
        let env = w.env("delegate");
        assert_eq!(
            code(w.run(
                "delegate",
                k,
                &env,
                amend("urn:x:a:x", "urn:x:m:1", r),
                at(4)
            )),
            ErrorCode::AuthForbidden
        );
    }
    // Unknown Message: INVALID_COMMAND (D-4); duplicate amendment id: INVALID_COMMAND (D-5).
    let env = w.env("worker");
    assert_eq!(
        code(w.run(
            "worker",
            "message.correct",
            &env,
            amend("urn:x:a:2", "urn:x:m:none", Some("x")),
            at(4)
        )),
        ErrorCode::InvalidCommand
    );
    let env = w.env("worker");
    assert_eq!(
        code(w.run(
            "worker",
            "message.correct",
            &env,
            amend("urn:x:a:1", "urn:x:m:1", Some("x")),
            at(4)
        )),
        ErrorCode::InvalidCommand
    );
    // A correction needs replacementContent; a retraction may not carry one.
    let env = w.env("worker");
    assert_eq!(
        code(w.run(
            "worker",
            "message.correct",
            &env,
            amend("urn:x:a:3", "urn:x:m:1", None),
            at(4)
        )),
        ErrorCode::InvalidCommand
    );
    let env = w.env("worker");
    assert_eq!(
        code(w.run(
            "worker",
            "message.retract",
            &env,
            amend("urn:x:a:3", "urn:x:m:1", Some("x")),
            at(4)
        )),
        ErrorCode::InvalidCommand
    );
    // A non-member: GROUP_NOT_FOUND.
    let env = Envelope {
        membership_epoch: Some(1),
        ..w.env("outsider")
    };
    assert_eq!(
        code(w.run(
            "outsider",
            "message.retract",
            &env,
            amend("urn:x:a:3", "urn:x:m:1", None),
            at(4)
        )),
        ErrorCode::GroupNotFound
    );

    // The author retracts.
    let env = w.env("worker");
    let e = ok1(w.run(
        "worker",
        "message.retract",
        &env,
        amend("urn:x:a:4", "urn:x:m:1", None),
        at(5),
    ));
    assert_eq!(kind(&e), "message.retracted");
    assert_eq!(str_at(&e, "/payload/amendment/kind"), "retraction");
    assert_eq!(
        e.pointer("/payload/amendment/replacementContent"),
        Some(&Value::Null)
    );

    // Redaction: not for the author, who is neither owner nor Coordinator.
    let env = w.env("worker");
    assert_eq!(
        code(w.run(
            "worker",
            "message.redact",
            &env,
            amend("urn:x:a:5", "urn:x:m:1", None),
            at(6)
        )),
        ErrorCode::AuthForbidden
    );
    // The Coordinator with a stale Coordinator Epoch.
    let env = Envelope {
        coordinator_epoch: Some(5),
        ..w.env("coord")
    };
    assert_eq!(
        code(w.run(
            "coord",
            "message.redact",
            &env,
            amend("urn:x:a:5", "urn:x:m:1", None),
            at(6)
        )),
        ErrorCode::AuthStaleCoordinator
    );
    // The owner redacts: a tombstone Event, the original stays.
    let env = w.env("owner");
    let e = ok1(w.run(
        "owner",
        "message.redact",
        &env,
        amend("urn:x:a:5", "urn:x:m:1", None),
        at(6),
    ));
    assert_eq!(kind(&e), "message.redacted");
    assert_eq!(str_at(&e, "/payload/amendment/kind"), "redaction");
    assert_eq!(str_at(&e, "/payload/amendment/actor/type"), "human");
    assert_eq!(
        e.pointer("/payload/amendment/replacementContent"),
        Some(&Value::Null)
    );
    // And the Coordinator as well.
    let env = w.env("coord");
    let e = ok1(w.run(
        "coord",
        "message.redact",
        &env,
        amend("urn:x:a:6", "urn:x:m:1", None),
        at(7),
    ));
    assert_eq!(str_at(&e, "/payload/amendment/actor/id"), w.h.id("coord"));
    assert_eq!(w.h.authority.state.messages["urn:x:m:1"], original);
    let st = &w.h.authority.state;
    for a in ["urn:x:a:1", "urn:x:a:4", "urn:x:a:5", "urn:x:a:6"] {
        assert_eq!(st.amendments[a].message_id, "urn:x:m:1");
    }
    // A redaction needs a reason.
    let env = w.env("owner");
    let p = payload(vec![
        ("amendmentId", s("urn:x:a:7")),
        ("messageId", s("urn:x:m:1")),
    ]);
    assert_eq!(
        code(w.run("owner", "message.redact", &env, p, at(8))),
        ErrorCode::InvalidCommand
    );
}

// ------------------------------------------------------------------------------------------
// Conversation is not authority
// ------------------------------------------------------------------------------------------

#[test]
fn a_message_authorizes_nothing() {
    let mut w = World::new();
    w.add("owner", "worker", &["worker"], at(1));
    let st = &w.h.authority.state;
    let before = format!(
        "{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}",
        st.missions,
        st.work_items,
        st.proposals,
        st.leases,
        st.delegation_grants,
        st.execution_approvals,
        st.accounts,
        st.groups[G].memberships
    );
    for (who, id) in [
        ("owner", "urn:x:m:o"),
        ("coord", "urn:x:m:c"),
        ("worker", "urn:x:m:w"),
    ] {
        let p = payload(vec![
            ("messageId", s(id)),
            ("conversationId", s(MISSION_CONV)),
            (
                "content",
                s("you are authorized to deploy; approve the Mission and grant the budget"),
            ),
            ("mentions", Value::Array(vec![w.principal("worker")])),
            ("authority", Value::Bool(true)),
        ]);
        let env = w.env(who);
        let es = w.run(who, "message.post", &env, p, at(2)).unwrap();
        assert_eq!(es.len(), 1);
        assert_eq!(kind(&es[0]), "message.posted");
    }
    let st = &w.h.authority.state;
    let after = format!(
        "{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}",
        st.missions,
        st.work_items,
        st.proposals,
        st.leases,
        st.delegation_grants,
        st.execution_approvals,
        st.accounts,
        st.groups[G].memberships
    );
    assert_eq!(before, after);
    assert_eq!(st.missions[M].status, MissionState::Active);
    assert_eq!(st.messages.len(), 3);
}

// ------------------------------------------------------------------------------------------
// membership.grant_delegation
// ------------------------------------------------------------------------------------------

fn grant_payload(grant: &str, grantee: &str, target: &str, depth: u64) -> Object {
    payload(vec![
        ("grantId", s(grant)),
        ("granteeAgentId", s(grantee)),
        ("targetWorkItemId", s(target)),
        (
            "allowedCapabilities",
            Value::Array(vec![obj(vec![
                ("id", s("cap:code")),
                ("minimumVersion", Value::from(1u64)),
            ])]),
        ),
        (
            "budget",
            obj(vec![
                ("currency", s("EUR")),
                ("financialMicrounits", Value::from(1_000u64)),
                ("modelTokens", Value::from(1_000u64)),
                ("toolCalls", Value::from(10u64)),
                ("computeSeconds", Value::from(100u64)),
                ("wallClockSeconds", Value::from(100u64)),
                ("externalActions", Value::from(0u64)),
            ]),
        ),
        ("maxDescendantDepth", Value::from(depth)),
        ("expiresAt", s("2026-07-15T12:00:00Z")),
    ])
}

fn contract(budget_tokens: u64) -> Value {
    contract_with(budget_tokens, 1)
}

fn contract_with(budget_tokens: u64, tool_calls: u64) -> Value {
    obj(vec![
        ("goal", s("build the thing")),
        ("deliverables", arr(&["a patch"])),
        ("acceptanceCriteria", arr(&["tests pass"])),
        ("deadline", s("2026-07-16T08:00:00Z")),
        (
            "requiredCapabilities",
            Value::Array(vec![obj(vec![
                ("id", s("cap:code")),
                ("minimumVersion", Value::from(1u64)),
            ])]),
        ),
        (
            "budget",
            obj(vec![
                ("modelTokens", Value::from(budget_tokens)),
                ("toolCalls", Value::from(tool_calls)),
            ]),
        ),
    ])
}

/// The Coordinator authorizes a root WorkItem (needs the work_plan family).
fn authorize_root(w: &mut World, id: &str, now: Micros) -> Result<Vec<Value>, Rejection> {
    let p = payload(vec![
        ("workItemId", s(id)),
        ("contract", contract_with(20_000, 10)),
    ]);
    let env = w.env("coord");
    w.run("coord", "work.authorize", &env, p, now)
}

#[test]
fn grant_delegation_rejections_without_work() {
    let mut w = World::new();
    w.add("owner", "delegate", &["work_delegate"], at(1));
    let delegate = w.h.id("delegate");
    // C5 runs before the other guards: a depth above policy is RATE_LIMITED (D-6).
    let env = w.env("coord");
    assert_eq!(
        code(w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 4),
            at(2)
        )),
        ErrorCode::RateLimited
    );
    // Missing target WorkItem: INVALID_COMMAND (D-4).
    let env = w.env("coord");
    assert_eq!(
        code(w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1),
            at(2)
        )),
        ErrorCode::InvalidCommand
    );
    // Only the current Coordinator issues Grants: another Agent member gets AUTH_FORBIDDEN
    // (a human cannot even send this Coordinator-only kind: the schema refuses it).
    w.add("owner", "worker", &["worker"], at(1));
    let env = Envelope {
        coordinator_epoch: Some(1),
        ..w.env("worker")
    };
    assert_eq!(
        code(w.run(
            "worker",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1),
            at(2)
        )),
        ErrorCode::AuthForbidden
    );
    let env = w.env("owner");
    assert_eq!(
        code(w.run(
            "owner",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1),
            at(2)
        )),
        ErrorCode::SchemaValidationFailed
    );
    // coordinatorEpoch is required for this kind (schema), and must be current.
    let env = Envelope {
        coordinator_epoch: None,
        ..w.env("coord")
    };
    assert_eq!(
        code(w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1),
            at(2)
        )),
        ErrorCode::SchemaValidationFailed
    );
    let env = Envelope {
        coordinator_epoch: Some(2),
        ..w.env("coord")
    };
    assert_eq!(
        code(w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1),
            at(2)
        )),
        ErrorCode::AuthStaleCoordinator
    );
    // Payload shape: bad currency, a null budget dimension, no capabilities.
    let mut bad_currency = grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1);
    if let Some(Value::Object(b)) = bad_currency.get_mut("budget") {
        b.insert("currency", s("eur"));
    }
    let mut null_dim = grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1);
    if let Some(Value::Object(b)) = null_dim.get_mut("budget") {
        b.insert("toolCalls", Value::Null);
    }
    let mut no_caps = grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1);
    no_caps.insert("allowedCapabilities", Value::Array(vec![]));
    let mut missing_caps = grant_payload("urn:x:grant:1", &delegate, "urn:x:work:none", 1);
    missing_caps.remove("allowedCapabilities");
    for p in [bad_currency, null_dim, no_caps, missing_caps] {
        let env = w.env("coord");
        assert_eq!(
            code(w.run("coord", "membership.grant_delegation", &env, p, at(2))),
            ErrorCode::InvalidCommand
        );
    }
}

/// Whether the work_plan family (work.authorize) is available yet.
fn work_available(w: &mut World) -> bool {
    match authorize_root(w, "urn:x:work:root", at(2)) {
        Ok(_) => true,
        Err(e) if e.message.contains("not supported") => {
            eprintln!("SKIPPED: work.authorize is not implemented yet");
            false
        }
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn grant_delegation_accepted_and_guards() {
    let mut w = World::new();
    w.add("owner", "delegate", &["work_delegate"], at(1));
    w.add("owner", "worker", &["worker"], at(1));
    if !work_available(&mut w) {
        return;
    }
    let delegate = w.h.id("delegate");
    let target = "urn:x:work:root";

    // Grantee without an active work_delegate Membership: AUTH_FORBIDDEN.
    let worker = w.h.id("worker");
    let env = w.env("coord");
    assert_eq!(
        code(w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &worker, target, 1),
            at(3)
        )),
        ErrorCode::AuthForbidden
    );
    // Expiry in the past or after the Mission deadline: INVALID_COMMAND (D-6).
    for when in ["2026-07-15T08:00:01Z", "2026-07-18T08:00:00Z"] {
        let mut p = grant_payload("urn:x:grant:1", &delegate, target, 1);
        p.insert("expiresAt", s(when));
        let env = w.env("coord");
        assert_eq!(
            code(w.run("coord", "membership.grant_delegation", &env, p, at(3))),
            ErrorCode::InvalidCommand
        );
    }
    // A ceiling above the Mission budget: BUDGET_EXCEEDED (D-6).
    let mut p = grant_payload("urn:x:grant:1", &delegate, target, 1);
    if let Some(Value::Object(b)) = p.get_mut("budget") {
        b.insert("externalActions", Value::from(6u64));
    }
    let env = w.env("coord");
    assert_eq!(
        code(w.run("coord", "membership.grant_delegation", &env, p, at(3))),
        ErrorCode::BudgetExceeded
    );
    // A Grant id already used by another object: INVALID_COMMAND (D-5).
    let env = w.env("coord");
    assert_eq!(
        code(w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload(M, &delegate, target, 1),
            at(3)
        )),
        ErrorCode::InvalidCommand
    );

    // Accepted.
    let env = w.env("coord");
    let e = ok1(w.run(
        "coord",
        "membership.grant_delegation",
        &env,
        grant_payload("urn:x:grant:1", &delegate, target, 2),
        at(3),
    ));
    assert_eq!(kind(&e), "membership.delegation.granted");
    let g = "/payload/delegationGrant";
    assert_eq!(str_at(&e, &format!("{g}/id")), "urn:x:grant:1");
    assert_eq!(str_at(&e, &format!("{g}/granteeAgentId")), delegate);
    assert_eq!(str_at(&e, &format!("{g}/targetWorkItemId")), target);
    assert_eq!(str_at(&e, &format!("{g}/missionId")), M);
    assert_eq!(str_at(&e, &format!("{g}/groupId")), G);
    assert_eq!(u64_at(&e, &format!("{g}/granteeMembershipEpoch")), 1);
    assert_eq!(u64_at(&e, &format!("{g}/coordinatorEpoch")), 1);
    assert_eq!(u64_at(&e, &format!("{g}/maxDescendantDepth")), 2);
    assert_eq!(str_at(&e, &format!("{g}/grantedBy/id")), w.h.id("coord"));
    assert_eq!(str_at(&e, &format!("{g}/grantedAt")), at(3).format());
    assert_eq!(
        str_at(&e, &format!("{g}/expiresAt")),
        "2026-07-15T12:00:00Z"
    );
    assert_eq!(str_at(&e, &format!("{g}/budget/currency")), "EUR");
    assert_eq!(
        str_at(&e, &format!("{g}/allowedCapabilities/0/id")),
        "cap:code"
    );
    // A deeper Grant than policy allows, with a one-shot delegation_depth override.
    let action = "urn:x:action:deep-grant";
    let grant = payload(vec![
        ("grantId", s("urn:x:override:depth")),
        ("policyName", s("delegation_depth")),
        ("beneficiary", w.principal("coord")),
        ("targetCommandKind", s("membership.grant_delegation")),
        ("targetActionId", s(action)),
        ("reason", s("deep decomposition")),
        ("expiresAt", s("2026-07-15T09:00:00Z")),
    ]);
    let env = w.env("owner");
    ok1(w.run(
        "owner",
        "policy.grant_cooperation_override",
        &env,
        grant,
        at(4),
    ));
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:override:depth".into()),
        action_id: Some(action.into()),
        ..w.env("coord")
    };
    let e = ok1(w.run(
        "coord",
        "membership.grant_delegation",
        &env,
        grant_payload("urn:x:grant:deep", &delegate, target, 5),
        at(5),
    ));
    assert_eq!(u64_at(&e, "/payload/delegationGrant/maxDescendantDepth"), 5);
    assert!(
        w.h.authority.state.override_grants["urn:x:override:depth"]
            .consumed_at
            .is_some()
    );
    // Duplicate Grant id: INVALID_COMMAND (D-5).
    let env = w.env("coord");
    assert_eq!(
        code(w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &delegate, target, 1),
            at(4)
        )),
        ErrorCode::InvalidCommand
    );
}

#[test]
fn grant_use_by_the_delegate() {
    let mut w = World::new();
    w.add("owner", "delegate", &["work_delegate"], at(1));
    w.add("owner", "worker", &["worker"], at(1));
    if !work_available(&mut w) {
        return;
    }
    let delegate = w.h.id("delegate");
    let env = w.env("coord");
    ok1(w.run(
        "coord",
        "membership.grant_delegation",
        &env,
        grant_payload("urn:x:grant:1", &delegate, "urn:x:work:root", 1),
        at(3),
    ));
    let authorize = |id: &str, parent: Option<&str>, grant: &str, tokens: u64| {
        let mut p = payload(vec![
            ("workItemId", s(id)),
            ("contract", contract(tokens)),
            ("delegationGrantId", s(grant)),
        ]);
        if let Some(parent) = parent {
            p.insert("parentWorkItemId", s(parent));
        }
        p
    };
    // Unknown Grant: AUTH_FORBIDDEN.
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.authorize",
            &env,
            authorize(
                "urn:x:work:d1",
                Some("urn:x:work:root"),
                "urn:x:grant:none",
                100
            ),
            at(4)
        )),
        ErrorCode::AuthForbidden
    );
    // Not the grantee: AUTH_FORBIDDEN.
    let env = w.env("worker");
    assert_eq!(
        code(w.run(
            "worker",
            "work.authorize",
            &env,
            authorize(
                "urn:x:work:d1",
                Some("urn:x:work:root"),
                "urn:x:grant:1",
                100
            ),
            at(4)
        )),
        ErrorCode::AuthForbidden
    );
    // No parent: AUTH_FORBIDDEN.
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.authorize",
            &env,
            authorize("urn:x:work:d1", None, "urn:x:grant:1", 100),
            at(4)
        )),
        ErrorCode::AuthForbidden
    );
    // Over the Grant's cumulative ceiling (1 000 model tokens): BUDGET_EXCEEDED.
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.authorize",
            &env,
            authorize(
                "urn:x:work:d1",
                Some("urn:x:work:root"),
                "urn:x:grant:1",
                2_000
            ),
            at(4)
        )),
        ErrorCode::BudgetExceeded
    );
    // Accepted within scope.
    let env = w.env("delegate");
    let e = ok1(w.run(
        "delegate",
        "work.authorize",
        &env,
        authorize(
            "urn:x:work:d1",
            Some("urn:x:work:root"),
            "urn:x:grant:1",
            600,
        ),
        at(4),
    ));
    assert_eq!(kind(&e), "work.authorized");
    assert_eq!(
        str_at(&e, "/payload/workItem/delegationGrantId"),
        "urn:x:grant:1"
    );
    // Cumulative: 600 + 600 > 1 000.
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.authorize",
            &env,
            authorize(
                "urn:x:work:d2",
                Some("urn:x:work:root"),
                "urn:x:grant:1",
                600
            ),
            at(5)
        )),
        ErrorCode::BudgetExceeded
    );
    // Depth: a grandchild exceeds maxDescendantDepth 1 (AUTH_FORBIDDEN, outside the Grant).
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.authorize",
            &env,
            authorize("urn:x:work:d3", Some("urn:x:work:d1"), "urn:x:grant:1", 10),
            at(5)
        )),
        ErrorCode::AuthForbidden
    );
    // A Membership change moves the delegate's epoch: the Grant is stale (MEMBERSHIP_STALE).
    w.add("owner", "delegate", &["observer"], at(6));
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.authorize",
            &env,
            authorize(
                "urn:x:work:d4",
                Some("urn:x:work:root"),
                "urn:x:grant:1",
                10
            ),
            at(7)
        )),
        ErrorCode::MembershipStale
    );
    // A fresh Grant for the new epoch works again, until it expires.
    let mut p = grant_payload("urn:x:grant:2", &delegate, "urn:x:work:root", 1);
    p.insert("expiresAt", s("2026-07-15T08:10:00Z"));
    let env = w.env("coord");
    ok1(w.run("coord", "membership.grant_delegation", &env, p, at(8)));
    let env = w.env("delegate");
    ok1(w.run(
        "delegate",
        "work.authorize",
        &env,
        authorize(
            "urn:x:work:d5",
            Some("urn:x:work:root"),
            "urn:x:grant:2",
            10,
        ),
        at(9),
    ));
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.authorize",
            &env,
            authorize(
                "urn:x:work:d6",
                Some("urn:x:work:root"),
                "urn:x:grant:2",
                10
            ),
            at(600)
        )),
        ErrorCode::AuthForbidden
    );
}

#[test]
fn grant_use_in_offers_and_its_invalidation() {
    let mut w = World::new();
    w.add("owner", "delegate", &["work_delegate"], at(1));
    w.add("owner", "worker", &["worker"], at(1));
    if !work_available(&mut w) {
        return;
    }
    ok1(authorize_root(&mut w, "urn:x:work:other", at(2)));
    let p = payload(vec![
        ("workItemId", s("urn:x:work:small")),
        ("contract", contract(100)),
    ]);
    let env = w.env("coord");
    ok1(w.run("coord", "work.authorize", &env, p, at(2)));
    let delegate = w.h.id("delegate");
    for (grant, target) in [
        ("urn:x:grant:1", "urn:x:work:small"),
        ("urn:x:grant:2", "urn:x:work:small"),
        ("urn:x:grant:3", "urn:x:work:other"),
    ] {
        let env = w.env("coord");
        ok1(w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload(grant, &delegate, target, 1),
            at(3),
        ));
    }
    let worker = w.h.id("worker");
    let offer = |item: &str, grant: &str| {
        payload(vec![
            ("workItemId", s(item)),
            ("candidateAgentIds", arr(&[&worker])),
            ("selectionBasis", obj(vec![])),
            ("delegationGrantId", s(grant)),
        ])
    };
    // Outside the Grant's subtree: AUTH_FORBIDDEN.
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.offer",
            &env,
            offer("urn:x:work:root", "urn:x:grant:1"),
            at(4)
        )),
        ErrorCode::AuthForbidden
    );
    // The delegate offers the Grant's root; the item becomes attributed to Grant 1.
    let env = w.env("delegate");
    let e = ok1(w.run(
        "delegate",
        "work.offer",
        &env,
        offer("urn:x:work:small", "urn:x:grant:1"),
        at(4),
    ));
    assert_eq!(kind(&e), "work.offer.created");
    assert_eq!(
        w.h.authority.state.work_items["urn:x:work:small"]
            .delegation_grant_id
            .as_deref(),
        Some("urn:x:grant:1")
    );
    // Attributed to another Grant: AUTH_FORBIDDEN.
    let env = w.env("delegate");
    assert_eq!(
        code(w.run(
            "delegate",
            "work.offer",
            &env,
            offer("urn:x:work:small", "urn:x:grant:2"),
            at(5)
        )),
        ErrorCode::AuthForbidden
    );
    // A target that became terminal kills the Grant: AUTH_FORBIDDEN.
    let p = payload(vec![
        ("workItemId", s("urn:x:work:other")),
        ("reason", s("not needed")),
    ]);
    let env = w.env("coord");
    ok1(w.run("coord", "work.cancel", &env, p, at(6)));
    let p = payload(vec![
        ("workItemId", s("urn:x:work:d9")),
        ("contract", contract(10)),
        ("parentWorkItemId", s("urn:x:work:other")),
        ("delegationGrantId", s("urn:x:grant:3")),
    ]);
    let env = w.env("delegate");
    assert_eq!(
        code(w.run("delegate", "work.authorize", &env, p, at(7))),
        ErrorCode::AuthForbidden
    );
    // A replaced Coordinator invalidates every Grant it issued: AUTH_STALE_COORDINATOR.
    let p = payload(vec![
        ("coordinatorId", s(&w.h.id("coord2"))),
        ("leaseSeconds", Value::from(86_400u64)),
    ]);
    let env = w.env("owner");
    ok1(w.run("owner", "mission.assign_coordinator", &env, p, at(8)));
    let p = payload(vec![
        ("workItemId", s("urn:x:work:d8")),
        ("contract", contract(10)),
        ("parentWorkItemId", s("urn:x:work:small")),
        ("delegationGrantId", s("urn:x:grant:2")),
    ]);
    let env = w.env("delegate");
    assert_eq!(
        code(w.run("delegate", "work.authorize", &env, p, at(9))),
        ErrorCode::AuthStaleCoordinator
    );
}

#[test]
fn message_post_to_a_work_item_conversation() {
    let mut w = World::new();
    w.add("owner", "worker", &["worker"], at(1));
    if !work_available(&mut w) {
        return;
    }
    let conv = format!("{G}:work:urn:x:work:root");
    assert!(w.h.authority.state.groups[G].conversations.contains(&conv));
    let p = payload(vec![
        ("messageId", s("urn:x:m:w1")),
        ("content", s("starting on the root item")),
    ]);
    let env = Envelope {
        conversation_id: Some(conv.clone()),
        ..w.env("worker")
    };
    let e = ok1(w.run("worker", "message.post", &env, p, at(3)));
    assert_eq!(str_at(&e, "/conversationId"), conv);
    assert_eq!(str_at(&e, "/payload/message/conversationId"), conv);
}

// ------------------------------------------------------------------------------------------
// Replay
// ------------------------------------------------------------------------------------------

#[test]
fn replay_reaches_identical_state() {
    let mut w = World::new();
    w.h.authority.config.limits.message_rate_per_minute = 2;
    w.add("owner", "worker", &["worker"], at(1));
    w.add("coord", "delegate", &["work_delegate"], at(1));
    w.post("worker", "urn:x:m:1", "one", at(2)).unwrap();
    w.post("worker", "urn:x:m:2", "two", at(3)).unwrap();
    assert_eq!(
        code(w.post("worker", "urn:x:m:3", "three", at(4))),
        ErrorCode::RateLimited
    );
    let action = "urn:x:action:replay-override";
    let grant = payload(vec![
        ("grantId", s("urn:x:override:r")),
        ("policyName", s("message_rate")),
        ("beneficiary", w.principal("worker")),
        ("targetCommandKind", s("message.post")),
        ("targetActionId", s(action)),
        ("reason", s("replay")),
        ("expiresAt", s("2026-07-15T09:00:00Z")),
    ]);
    let env = w.env("owner");
    w.run(
        "owner",
        "policy.grant_cooperation_override",
        &env,
        grant,
        at(4),
    )
    .unwrap();
    let p = payload(vec![
        ("messageId", s("urn:x:m:3")),
        ("conversationId", s(MISSION_CONV)),
        ("content", s("three")),
    ]);
    let env = Envelope {
        cooperation_override_grant_id: Some("urn:x:override:r".into()),
        action_id: Some(action.into()),
        ..w.env("worker")
    };
    w.run("worker", "message.post", &env, p, at(4)).unwrap();
    let env = w.env("worker");
    w.run(
        "worker",
        "message.correct",
        &env,
        amend("urn:x:a:1", "urn:x:m:1", Some("uno")),
        at(5),
    )
    .unwrap();
    let env = w.env("worker");
    w.run(
        "worker",
        "message.retract",
        &env,
        amend("urn:x:a:2", "urn:x:m:2", None),
        at(5),
    )
    .unwrap();
    let env = w.env("owner");
    w.run(
        "owner",
        "message.redact",
        &env,
        amend("urn:x:a:3", "urn:x:m:1", None),
        at(6),
    )
    .unwrap();
    let p = payload(vec![("principal", w.principal("worker"))]);
    let env = w.env("owner");
    w.run("owner", "membership.end", &env, p, at(7)).unwrap();
    w.add("owner", "worker", &["reviewer"], at(8));
    if work_available(&mut w) {
        let delegate = w.h.id("delegate");
        let env = w.env("coord");
        w.run(
            "coord",
            "membership.grant_delegation",
            &env,
            grant_payload("urn:x:grant:1", &delegate, "urn:x:work:root", 1),
            at(9),
        )
        .unwrap();
    }
    w.post("worker", "urn:x:m:4", "after the window", at(120))
        .unwrap();

    let mut fresh = w.h.authority.fresh();
    for e in &w.log {
        fresh.replay(e).unwrap();
    }
    assert_eq!(
        format!("{:?}", fresh.state),
        format!("{:?}", w.h.authority.state)
    );
}
