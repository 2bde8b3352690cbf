//! A console-like client against the in-memory node, with nothing but the `/ws` frames: it signs
//! in as the demo's human (the HELLO challenge signed with the demo key), subscribes to every
//! Group it may read, verifies each Event against the Registry the node publishes and folds it
//! with the authority's own reducer (as the console does), waits for the demo's first
//! execution gate, sends a signed grant, and sees the Mission continue. The attacks come first:
//! a forged HELLO, a Command before HELLO, a Command in another's name, a tampered grant, an
//! unknown Group, too many connections.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use demo_node::{DemoHuman, HumanGate, MAX_CONNECTIONS, Node, NodeConfig, Pace};
use simulation::harness::{Envelope, signed_command};
use wasm_core::authority::{Micros, State, evolve};
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::registry::{RegistryEvidence, ValidatedRegistry};
use wasm_core::crypto::{DocumentKind, verify::verify_value};
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::{Actor, ActorType};

fn start() -> Micros {
    Micros::parse("2026-07-15T08:00:00Z").unwrap()
}

fn node() -> Node {
    Node::new(NodeConfig {
        entropy: [7; 32],
        start: start(),
        pace: Pace::default(),
        duplicate_every: 5,
    })
    .unwrap()
}

fn s(v: &str) -> Value {
    Value::string(v.to_owned())
}

fn at<'v>(v: &'v Value, p: &str) -> &'v str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

fn num(v: &Value, p: &str) -> u64 {
    match v.pointer(p) {
        Some(Value::Number(n)) => n.as_safe_u64().unwrap_or(0),
        _ => 0,
    }
}

fn frame(frame_type: &str, n: u64) -> Object {
    let mut o = Object::new();
    o.insert("protocolVersion", s("0.1"));
    o.insert(
        "frameId",
        Value::string(format!("urn:missionweaveprotocol:frame:test:{n}")),
    );
    o.insert("frameType", s(frame_type));
    o
}

/// A `HELLO` `client_init` of `agent_id` with `key_id` (the console's fixed client nonce).
fn client_init(n: u64, agent_id: &str, key_id: &str) -> Object {
    let mut f = frame("HELLO", n);
    f.insert("phase", s("client_init"));
    f.insert("agentId", s(agent_id));
    f.insert("keyId", s(key_id));
    f.insert("clientNonce", Value::string(b64url_encode(&[9u8; 16])));
    f.insert("supportedVersions", Value::Array(vec![s("0.1")]));
    f
}

/// A `SUBSCRIBE` of `groups`, each `(groupId, afterSequence)`.
fn subscribe(n: u64, subscription: &str, groups: &[(String, u64)]) -> Object {
    let mut f = frame("SUBSCRIBE", n);
    f.insert("subscriptionId", s(subscription));
    let groups = groups
        .iter()
        .map(|(g, after)| {
            let mut o = Object::new();
            o.insert("groupId", s(g));
            o.insert("afterSequence", Value::from(*after));
            Value::Object(o)
        })
        .collect();
    f.insert("groups", Value::Array(groups));
    f
}

fn ping(n: u64) -> Object {
    let mut f = frame("PING", n);
    f.insert("nonce", Value::string(b64url_encode(&[1u8; 12])));
    f.insert("sentAt", s("2026-07-15T08:00:00Z"));
    f
}

/// The console's side: one connection, what it has verified and folded.
struct Client {
    conn: u64,
    human: DemoHuman,
    signer: Signer,
    registry: ValidatedRegistry,
    state: State,
    /// Every Event received, verified, in arrival order.
    events: Vec<Value>,
    errors: Vec<Value>,
    /// Events received again (an exact retry's receipt).
    duplicates: Vec<Value>,
    subscribed: Vec<String>,
    next: u64,
}

impl Client {
    fn new(node: &mut Node) -> Client {
        let human = node.demo_human();
        let signer = Signer::from_seed(&human.seed);
        let evidence =
            RegistryEvidence::from_fixture_json(&json::parse_str(&node.registry_json()).unwrap())
                .unwrap();
        Client {
            conn: node.connect().unwrap(),
            human,
            signer,
            registry: evidence.validate().unwrap(),
            state: State::default(),
            events: Vec::new(),
            errors: Vec::new(),
            duplicates: Vec::new(),
            subscribed: Vec::new(),
            next: 0,
        }
    }

    fn send(&mut self, node: &mut Node, f: Object) {
        node.receive(self.conn, &json::to_string(&Value::Object(f)), node.now());
    }

    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Takes this connection's frames: EVENTs are verified (six stages, the Group Authority's
    /// signature) and folded; anything else is returned.
    fn take(&mut self, node: &mut Node) -> Vec<Value> {
        let frames = node.take_frames();
        self.absorb(frames)
    }

    /// [`Client::take`] on frames already taken from the node (all of them this client's).
    fn absorb(&mut self, frames: Vec<(u64, String)>) -> Vec<Value> {
        let mut other = Vec::new();
        for (conn, text) in frames {
            assert_eq!(
                conn, self.conn,
                "a frame for a connection the test did not open"
            );
            let v = json::parse_str(&text).unwrap();
            wasm_core::frame::decode_value(&v)
                .unwrap_or_else(|e| panic!("the node sent a schema-invalid frame: {e:?}\n{text}"));
            match at(&v, "/frameType") {
                "EVENT" => {
                    let e = v.pointer("/event").unwrap().clone();
                    verify_value(e.clone(), DocumentKind::Event, &self.registry)
                        .unwrap_or_else(|err| panic!("an EVENT does not verify: {err}"));
                    // At-least-once: a sequence already folded is a duplicate (the
                    // console's machine drops it the same way).
                    let last = self
                        .state
                        .group(at(&e, "/groupId"))
                        .map_or(0, |g| g.last_sequence);
                    if num(&e, "/sequence") <= last {
                        self.duplicates.push(e);
                        continue;
                    }
                    evolve::apply(&mut self.state, &e).unwrap_or_else(|err| {
                        panic!("an EVENT does not fold in order: {err:?}\n{text}")
                    });
                    self.events.push(e);
                }
                "ERROR" => {
                    self.errors.push(v.clone());
                    other.push(v);
                }
                _ => other.push(v),
            }
        }
        other
    }

    fn hello(&mut self, node: &mut Node, forge: bool) -> Vec<Value> {
        let n = self.id();
        let f = client_init(n, &self.human.principal_id, &self.human.key_id);
        self.send(node, f);
        let got = self.take(node);
        assert_eq!(got.len(), 1, "{got:?}");
        let f = self.response(&got[0], forge);
        self.send(node, f);
        self.take(node)
    }

    /// The `client_response` to `challenge`, its signature altered when `forge`.
    fn response(&mut self, challenge: &Value, forge: bool) -> Object {
        assert_eq!(at(challenge, "/phase"), "server_challenge");
        let transcript = b64url_decode(at(challenge, "/challenge")).unwrap();
        let mut sig = self.signer.sign(&transcript);
        if forge {
            sig[0] ^= 1;
        }
        let n = self.id();
        let mut f = frame("HELLO", n);
        f.insert("phase", s("client_response"));
        f.insert("agentId", s(&self.human.principal_id));
        f.insert("keyId", s(&self.human.key_id));
        f.insert("clientNonce", Value::string(b64url_encode(&[9u8; 16])));
        f.insert("serverNonce", s(at(challenge, "/serverNonce")));
        f.insert("challengeSignature", Value::string(b64url_encode(&sig)));
        f
    }

    /// A new connection of the demo's human, signed in.
    fn signed_in(node: &mut Node) -> Client {
        let mut c = Client::new(node);
        let got = c.hello(node, false);
        assert_eq!(at(&got[0], "/phase"), "server_accept", "{got:?}");
        c
    }

    /// A connection opened with the visitor key (`GET /api/demo/visitor`): the human's
    /// principal, a key only the visitor's own Registry binds.
    fn visitor(node: &mut Node) -> Client {
        let mut c = Client::new(node);
        c.human = node.visitor();
        c.signer = Signer::from_seed(&c.human.seed);
        c
    }

    /// A read-only session of the demo's human, signed in with the visitor key.
    fn visiting(node: &mut Node) -> Client {
        let mut c = Client::visitor(node);
        let got = c.hello(node, false);
        assert_eq!(at(&got[0], "/phase"), "server_accept", "{got:?}");
        c
    }

    /// SUBSCRIBE to the Groups the node says it may read and it does not follow yet.
    fn follow(&mut self, node: &mut Node) {
        let new: Vec<String> = node
            .groups_of(&self.human.principal_id)
            .into_iter()
            .filter(|g| !self.subscribed.contains(g))
            .collect();
        if new.is_empty() {
            return;
        }
        let n = self.id();
        let groups: Vec<(String, u64)> = new.iter().map(|g| (g.clone(), 0)).collect();
        let f = subscribe(
            n,
            &format!("urn:missionweaveprotocol:subscription:test:{n}"),
            &groups,
        );
        self.send(node, f);
        self.subscribed.extend(new);
        let other = self.take(node);
        assert!(other.is_empty(), "{other:?}");
    }

    /// The grant of an execution gate, signed as the console signs it (the Membership Epoch
    /// read from the state it folded).
    /// A final-approval decision, signed as the console signs it: changes requested once for
    /// the first Mission, then approval (the storyline of simulation/tests/agents_demo.rs).
    fn decide_mission(&mut self, gate: &HumanGate, request_changes: bool, now: Micros) -> Vec<u8> {
        let HumanGate::MissionApproval {
            mission_id,
            group_id,
            revision,
            artifact_hashes,
            ..
        } = gate
        else {
            panic!("not a final approval: {gate:?}");
        };
        let mut p = Object::new();
        let kind = if request_changes {
            p.insert("missionRevision", Value::from(*revision));
            p.insert("feedback", s("Add a rollback plan to the release notes"));
            "mission.request_changes"
        } else {
            p.insert(
                "approvalId",
                Value::string(format!("{mission_id}:approval:{revision}")),
            );
            p.insert("missionRevision", Value::from(*revision));
            p.insert(
                "artifactHashes",
                Value::Array(artifact_hashes.iter().map(|h| s(h)).collect()),
            );
            p.insert("acceptancePolicyVersion", s("1.0.0"));
            p.insert("comments", s("Approved"));
            "mission.approve"
        };
        self.sign(group_id, kind, p, now)
    }

    fn sign(&mut self, group_id: &str, kind: &str, p: Object, now: Micros) -> Vec<u8> {
        let env = Envelope {
            group_id: Some(group_id.to_owned()),
            membership_epoch: self
                .state
                .membership(group_id, &self.human.principal_id)
                .map(|m| m.epoch),
            ..Envelope::default()
        };
        let n = self.id();
        signed_command(
            &Actor::new(ActorType::Human, &self.human.principal_id),
            &self.human.key_id,
            &self.signer,
            &format!("urn:missionweaveprotocol:action:console-{n}"),
            kind,
            &env,
            p,
            now,
        )
        .unwrap()
    }

    fn grant(&mut self, gate: &HumanGate, now: Micros) -> Vec<u8> {
        let HumanGate::ExecutionApproval {
            group_id,
            work_item_id,
            ownership_epoch,
            operations,
            ..
        } = gate
        else {
            panic!("not an execution gate: {gate:?}");
        };
        let mut p = Object::new();
        p.insert(
            "approvalId",
            Value::string(format!(
                "{work_item_id}:execution-approval:{ownership_epoch}"
            )),
        );
        p.insert("workItemId", s(work_item_id));
        p.insert("ownershipEpoch", Value::from(*ownership_epoch));
        p.insert(
            "operations",
            Value::Array(operations.iter().map(|o| s(o)).collect()),
        );
        p.insert("expiresInSeconds", Value::from(3_600u64));
        p.insert("comments", s("Staging deployment approved"));
        self.sign(group_id, "approval.grant_execution", p, now)
    }

    fn command(&mut self, node: &mut Node, bytes: &[u8]) -> Vec<Value> {
        let n = self.id();
        let mut f = frame("COMMAND", n);
        f.insert("command", json::parse(bytes).unwrap());
        self.send(node, f);
        self.take(node)
    }
}

/// Advances the node's clock wake by wake until `until` holds (or the demo waits for nobody).
fn run_until(node: &mut Node, c: &mut Client, until: impl Fn(&Node, &Client) -> bool) {
    let mut now = node.now();
    for _ in 0..20_000 {
        node.tick(now);
        c.follow(node);
        let other = c.take(node);
        assert!(other.is_empty(), "unexpected frames: {other:?}");
        if until(node, c) {
            return;
        }
        match node.next_wake() {
            Some(t) if t > now => now = t,
            Some(_) => now = now.plus_micros(Micros(1_000)),
            None => panic!("the demo stopped:\n{}", node.take_lines().join("\n")),
        }
    }
    panic!("never reached:\n{}", node.take_lines().join("\n"));
}

/// Takes the node's frames and gives each of two clients its own.
fn take_both(node: &mut Node, a: &mut Client, b: &mut Client) -> (Vec<Value>, Vec<Value>) {
    let (mine, theirs): (Vec<_>, Vec<_>) = node
        .take_frames()
        .into_iter()
        .partition(|(c, _)| *c == a.conn);
    (a.absorb(mine), b.absorb(theirs))
}

fn first_execution_gate(node: &Node) -> Option<HumanGate> {
    node.gates()
        .into_iter()
        .find(|g| matches!(g, HumanGate::ExecutionApproval { .. }))
}

/// A node run until its first execution gate, followed all along by a signed-in console.
fn at_first_gate() -> (Node, Client, HumanGate) {
    let mut node = node();
    let mut c = Client::signed_in(&mut node);
    run_until(&mut node, &mut c, |n, _| first_execution_gate(n).is_some());
    let gate = first_execution_gate(&node).unwrap();
    (node, c, gate)
}

fn granted_again<'e>(events: &'e [Value], action: &str) -> &'e Value {
    events
        .iter()
        .find(|e| at(e, "/cause/id") == action)
        .unwrap()
}

/// The ERRORs the ACKs drew: the one past the head, and the one in an inspected Group.
fn codes_len(acks: &[(String, u64)]) -> usize {
    acks.len() - 1
}

fn code(v: &Value) -> &str {
    at(v, "/error/code")
}

#[test]
fn a_forged_hello_is_refused_and_the_connection_closes() {
    let mut node = node();
    let mut c = Client::new(&mut node);
    let got = c.hello(&mut node, true);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(code(&got[0]), "AUTH_INVALID_SIGNATURE");
    assert_eq!(got[0].pointer("/error/fatal"), Some(&Value::Bool(true)));
    assert!(node.is_closed(c.conn));
    // Nothing more is read on a closed connection, and nothing is answered.
    c.follow(&mut node);
    assert!(c.take(&mut node).is_empty());
}

#[test]
fn frames_before_hello_and_a_stranger_key_are_refused() {
    let mut node = node();
    let mut c = Client::new(&mut node);
    c.send(&mut node, ping(1));
    let got = c.take(&mut node);
    assert_eq!(code(&got[0]), "AUTH_REQUIRED");
    assert!(node.is_closed(c.conn));
    // A key the Registry does not bind to that principal (an Agent's key for the human).
    let mut c = Client::new(&mut node);
    let f = client_init(
        1,
        &c.human.principal_id,
        "urn:missionweaveprotocol:key:developer",
    );
    c.send(&mut node, f);
    let got = c.take(&mut node);
    assert_eq!(code(&got[0]), "AUTH_INVALID_SIGNATURE");
    assert_eq!(
        at(&got[0], "/error/message"),
        "unknown key ID for this principal"
    );
}

#[test]
fn connections_are_bounded() {
    let mut node = node();
    let conns: Vec<_> = (0..MAX_CONNECTIONS).map(|_| node.connect()).collect();
    assert!(conns.iter().all(Option::is_some));
    assert_eq!(node.connect(), None);
    node.disconnect(conns[0].unwrap());
    assert!(node.connect().is_some());
}

#[test]
fn a_console_signs_in_follows_the_demo_and_grants_the_first_execution_gate() {
    let mut node = node();
    let mut c = Client::signed_in(&mut node);

    // An unknown Group and one that does not exist look the same.
    let f = subscribe(
        90,
        "urn:missionweaveprotocol:subscription:x",
        &[("urn:missionweaveprotocol:group:nowhere".into(), 0)],
    );
    c.send(&mut node, f);
    let got = c.take(&mut node);
    assert_eq!(code(&got[0]), "GROUP_NOT_FOUND");
    assert!(!node.is_closed(c.conn));

    run_until(&mut node, &mut c, |n, _| first_execution_gate(n).is_some());
    let gate = first_execution_gate(&node).unwrap();
    let HumanGate::ExecutionApproval {
        work_item_id,
        group_id,
        ..
    } = gate.clone()
    else {
        unreachable!()
    };
    // The console saw the demo fill the board: both root Missions and the gated WorkItem,
    // from verified Events only.
    assert!(c.state.missions.len() >= 2, "{}", c.state.missions.len());
    assert!(c.state.work_items.contains_key(&work_item_id));
    assert!(
        !c.events
            .iter()
            .any(|e| at(e, "/kind") == "work.started" && at(e, "/workItemId") == work_item_id),
        "the gated work started before its grant"
    );

    // Attacks first. A grant in another principal's name (signed by the human, but its
    // actor names another human).
    let mut forged = json::parse(&c.grant(&gate, node.now())).unwrap();
    if let Value::Object(o) = &mut forged
        && let Some(Value::Object(a)) = o.get_mut("actor")
    {
        a.insert("id", s("urn:missionweaveprotocol:human:someone-else"));
    }
    let got = c.command(&mut node, json::to_string(&forged).as_bytes());
    assert_eq!(code(&got[0]), "AUTH_FORBIDDEN", "{got:?}");
    // A grant whose payload was changed after signing: the six stages refuse it.
    let mut tampered = json::parse(&c.grant(&gate, node.now())).unwrap();
    if let Value::Object(o) = &mut tampered
        && let Some(Value::Object(p)) = o.get_mut("payload")
    {
        p.insert("expiresInSeconds", Value::from(86_400u64));
    }
    let got = c.command(&mut node, json::to_string(&tampered).as_bytes());
    assert_eq!(code(&got[0]), "AUTH_INVALID_SIGNATURE", "{got:?}");
    assert!(
        !node.is_closed(c.conn),
        "a refused Command keeps the session"
    );
    assert_eq!(first_execution_gate(&node), Some(gate.clone()));

    // The real grant: accepted, its Events come back to the sender.
    let bytes = c.grant(&gate, node.now());
    let action = at(&json::parse(&bytes).unwrap(), "/actionId").to_owned();
    let before = c.events.len();
    let other = c.command(&mut node, &bytes);
    assert!(other.is_empty(), "{other:?}");
    let granted: Vec<&Value> = c.events[before..]
        .iter()
        .filter(|e| at(e, "/kind") == "approval.execution.granted")
        .collect();
    assert_eq!(
        granted.len(),
        1,
        "the grant's Event reached the console once"
    );
    assert_eq!(at(granted[0], "/cause/id"), action);
    assert_eq!(at(granted[0], "/groupId"), group_id);

    // An exact retry: the original Events again, nothing new in the log.
    let head = node.heads();
    c.command(&mut node, &bytes);
    assert_eq!(node.heads(), head);
    assert_eq!(c.duplicates.len(), 1);
    assert_eq!(c.duplicates[0], *granted_again(&c.events, &action));

    // The Mission continues: the granted work starts and is submitted, seen live.
    run_until(&mut node, &mut c, |_, c| {
        c.events
            .iter()
            .any(|e| at(e, "/kind") == "work.submitted" && at(e, "/workItemId") == work_item_id)
    });
    assert!(
        c.events
            .iter()
            .any(|e| at(e, "/kind") == "work.started" && at(e, "/workItemId") == work_item_id)
    );

    // ACK: a Cursor within the head is kept; one past it is refused; one in a Group where the
    // human only inspects (no Membership) is answered as an unknown Group.
    let member_of = |c: &Client, g: &String| {
        c.state
            .membership(g, &c.human.principal_id)
            .is_some_and(|m| m.is_active())
    };
    let g = c
        .subscribed
        .iter()
        .find(|g| member_of(&c, g))
        .unwrap()
        .clone();
    let seq = c.state.group(&g).unwrap().last_sequence;
    let mut acks = vec![(g.clone(), seq), (g.clone(), seq + 1_000)];
    if let Some(inspected) = c.subscribed.iter().find(|g| !member_of(&c, g)) {
        acks.push((inspected.clone(), 1));
    }
    for (n, (group, sequence)) in acks.iter().enumerate() {
        let mut f = frame("ACK", 200 + n as u64);
        let mut item = Object::new();
        item.insert("groupId", s(group));
        item.insert("sequence", Value::from(*sequence));
        f.insert("acknowledgements", Value::Array(vec![Value::Object(item)]));
        f.insert("sentAt", s("2026-07-15T08:00:00Z"));
        c.send(&mut node, f);
    }
    let got = c.take(&mut node);
    let codes: Vec<&str> = got.iter().map(code).collect();
    let mut want = vec!["PROTOCOL_VIOLATION"];
    if acks.len() == 3 {
        want.push("GROUP_NOT_FOUND");
    }
    assert_eq!(codes, want);
    assert_eq!(node.cursor(&c.human.principal_id, &g), Some(seq));

    // The console's view equals the node's: every Event of every Group it follows, in order.
    for (group, head) in node.heads() {
        if c.subscribed.contains(&group) {
            let got = c.state.group(&group).map_or(0, |g| g.last_sequence);
            assert_eq!(got, head, "{group}");
        }
    }
    assert_eq!(c.errors.len(), 3 + codes_len(&acks), "{:?}", c.errors);
}

#[test]
fn the_whole_demo_runs_to_both_final_approvals_through_the_frames_alone() {
    let mut node = node();
    let mut c = Client::signed_in(&mut node);
    let mut decided = Vec::new();
    let mut changes_requested = false;
    for _ in 0..64 {
        run_until(&mut node, &mut c, |n, _| {
            n.finished() || n.gates().iter().any(|g| !decided.contains(&g.key()))
        });
        if node.finished() {
            break;
        }
        let gate = node
            .gates()
            .into_iter()
            .find(|g| !decided.contains(&g.key()))
            .unwrap();
        let bytes = match &gate {
            HumanGate::ExecutionApproval { .. } => c.grant(&gate, node.now()),
            HumanGate::MissionApproval {
                artifact_hashes, ..
            } => {
                // What the human approves is readable: each Artifact's content is kept and
                // matches its hash (GET /api/artifacts/{hash} on a server).
                assert!(!artifact_hashes.is_empty());
                for h in artifact_hashes {
                    let (_, bytes) = node
                        .artifact(h)
                        .unwrap_or_else(|| panic!("no content for {h}"));
                    assert_eq!(wasm_core::encoding::sha256_hash(bytes), *h);
                }
                let first = !changes_requested;
                changes_requested = true;
                c.decide_mission(&gate, first, node.now())
            }
        };
        let other = c.command(&mut node, &bytes);
        assert!(other.is_empty(), "{} refused: {other:?}", gate.key());
        decided.push(gate.key());
    }
    assert!(
        node.finished(),
        "the demo did not finish:\n{}",
        node.take_lines().join("\n")
    );
    let kinds = |k: &str| c.events.iter().filter(|e| at(e, "/kind") == k).count();
    assert!(kinds("approval.execution.granted") >= 1);
    assert_eq!(kinds("mission.changes_requested"), 1);
    assert!(
        kinds("mission.approved") >= 2,
        "{}",
        kinds("mission.approved")
    );
    // Every Group the console follows is whole and in order on its side.
    for (group, head) in node.heads() {
        if c.subscribed.contains(&group) {
            assert_eq!(c.state.group(&group).map_or(0, |g| g.last_sequence), head);
        }
    }
    assert!(c.errors.is_empty(), "{:?}", c.errors);
}

#[test]
fn the_sender_gets_its_own_events_without_subscribing_and_subscribers_see_them_too() {
    let (mut node, mut watcher, gate) = at_first_gate();
    let HumanGate::ExecutionApproval { group_id, .. } = gate.clone() else {
        unreachable!()
    };
    // A second session of the same human (another tab) that subscribes to nothing.
    let sender = Client::signed_in(&mut node);
    let conn = sender.conn;
    // It signs with the Membership Epoch the watcher folded (its own view is empty).
    let bytes = watcher.grant(&gate, node.now());
    let action = at(&json::parse(&bytes).unwrap(), "/actionId").to_owned();
    let mut f = frame("COMMAND", 77);
    f.insert("command", json::parse(&bytes).unwrap());
    node.receive(conn, &json::to_string(&Value::Object(f)), node.now());
    let frames = node.take_frames();
    let own: Vec<Value> = frames
        .iter()
        .filter(|(c, _)| *c == conn)
        .map(|(_, t)| json::parse_str(t).unwrap())
        .collect();
    assert!(!own.is_empty(), "the sender got nothing");
    for f in &own {
        assert_eq!(at(f, "/frameType"), "EVENT", "{f:?}");
        // Only Groups where it holds a Membership after the Command.
        let g = at(f, "/event/groupId");
        assert!(
            node.groups_of(&sender.human.principal_id)
                .contains(&g.to_owned())
        );
    }
    assert!(
        own.iter()
            .any(|f| at(f, "/event/kind") == "approval.execution.granted"
                && at(f, "/event/cause/id") == action
                && at(f, "/event/groupId") == group_id)
    );
    // The watcher, subscribed live, got the same Event by fan-out.
    let watched = frames
        .iter()
        .filter(|(c, _)| *c == watcher.conn)
        .any(|(_, t)| {
            let v = json::parse_str(t).unwrap();
            at(&v, "/event/cause/id") == action
        });
    assert!(watched);
}

#[test]
fn post_commands_refuses_before_it_accepts_and_answers_as_the_server() {
    let (mut node, mut watcher, gate) = at_first_gate();
    let now = node.now();
    // Past the body bound: 413, nothing submitted.
    let head = node.heads();
    let (status, body) = node.post_command(&vec![b' '; demo_node::MAX_COMMAND_BYTES + 1], now);
    assert_eq!(status, 413);
    assert_eq!(
        at(&json::parse_str(&body).unwrap(), "/code"),
        "PROTOCOL_VIOLATION"
    );
    // Not JSON, and a grant changed after signing: 422 with the authority's codes.
    let (status, _) = node.post_command(b"{\"kind\":", now);
    assert_eq!(status, 422);
    let mut tampered = json::parse(&watcher.grant(&gate, now)).unwrap();
    if let Value::Object(o) = &mut tampered
        && let Some(Value::Object(p)) = o.get_mut("payload")
    {
        p.insert("comments", s("Granted to everything"));
    }
    let (status, body) = node.post_command(json::to_string(&tampered).as_bytes(), now);
    assert_eq!(status, 422);
    let doc = json::parse_str(&body).unwrap();
    assert_eq!(at(&doc, "/code"), "AUTH_INVALID_SIGNATURE");
    assert_eq!(at(&doc, "/relatedActionId"), at(&tampered, "/actionId"));
    assert_eq!(node.heads(), head);
    let _ = node.take_frames();

    // The grant: accepted with its Events; subscribers get them by fan-out.
    let bytes = watcher.grant(&gate, now);
    let action = at(&json::parse(&bytes).unwrap(), "/actionId").to_owned();
    let (status, body) = node.post_command(&bytes, now);
    assert_eq!(status, 200, "{body}");
    let answer = json::parse_str(&body).unwrap();
    assert_eq!(at(&answer, "/status"), "accepted");
    let Some(Value::Array(events)) = answer.pointer("/events") else {
        panic!("no events: {body}")
    };
    assert!(events.iter().any(|e| at(e, "/kind") == "approval.execution.granted"
        && at(e, "/cause/id") == action));
    watcher.take(&mut node);
    assert!(watcher.events.iter().any(|e| at(e, "/cause/id") == action));
    // The same bytes again: the original Events, as a duplicate.
    let (status, again) = node.post_command(&bytes, node.now());
    assert_eq!(status, 200);
    let again = json::parse_str(&again).unwrap();
    assert_eq!(at(&again, "/status"), "duplicate");
    assert_eq!(again.pointer("/events"), answer.pointer("/events"));
}

#[test]
fn late_or_replayed_challenges_an_expired_session_and_oversized_lists_are_refused() {
    // A challenge answered after its 30 s.
    let mut node = node();
    let mut c = Client::new(&mut node);
    let n = c.id();
    let f = client_init(n, &c.human.principal_id, &c.human.key_id);
    c.send(&mut node, f.clone());
    let challenge = c.take(&mut node).remove(0);
    let r = c.response(&challenge, false);
    let late = node.now().plus_seconds(31);
    node.receive(c.conn, &json::to_string(&Value::Object(r.clone())), late);
    let got = c.take(&mut node);
    assert_eq!(at(&got[0], "/error/message"), "challenge expired");
    assert!(node.is_closed(c.conn));
    // The same (valid-looking) response on another connection: its challenge is not this one's.
    let mut other = Client::new(&mut node);
    other.send(&mut node, f);
    other.take(&mut node);
    other.send(&mut node, r);
    let got = other.take(&mut node);
    assert_eq!(
        at(&got[0], "/error/message"),
        "HELLO challenge transcript does not match"
    );

    // A session past its 12 hours: the next frame ends it.
    let mut node = self::node();
    let mut c = Client::signed_in(&mut node);
    // 257 Groups in one SUBSCRIBE: refused as a whole, the session stays.
    let groups: Vec<(String, u64)> = (0..257)
        .map(|i| (format!("urn:missionweaveprotocol:group:g{i}"), 0))
        .collect();
    let f = subscribe(10, "urn:missionweaveprotocol:subscription:many", &groups);
    c.send(&mut node, f);
    let got = c.take(&mut node);
    assert_eq!(got.len(), 1, "one refusal, not one per Group");
    assert_eq!(code(&got[0]), "PROTOCOL_VIOLATION");
    assert!(!node.is_closed(c.conn));
    let text = json::to_string(&Value::Object(ping(11)));
    node.receive(c.conn, &text, node.now());
    assert_eq!(at(&c.take(&mut node)[0], "/frameType"), "PING");
    node.receive(c.conn, &text, node.now().plus_seconds(12 * 3600 + 1));
    let got = c.take(&mut node);
    assert_eq!(code(&got[0]), "AUTH_REQUIRED");
    assert_eq!(
        at(&got[0], "/error/message"),
        "the session has expired; HELLO again"
    );
    assert!(node.is_closed(c.conn));
}

#[test]
fn a_replay_longer_than_a_page_ends_with_the_continuation_and_resumes_without_a_gap() {
    let mut node = node();
    node.set_replay_page(10);
    let mut c = Client::signed_in(&mut node);
    // Run the demo (nobody follows yet) until the first Group holds more than three pages.
    let mut now = node.now();
    let group = loop {
        node.tick(now);
        if let Some((g, _)) = node.heads().into_iter().find(|(_, h)| *h > 35) {
            break g;
        }
        now = node.next_wake().filter(|t| *t > now).unwrap();
    };
    let head = node
        .heads()
        .into_iter()
        .find(|(g, _)| *g == group)
        .unwrap()
        .1;
    let mut after = 0u64;
    let mut pages = 0;
    loop {
        let f = subscribe(
            300 + pages,
            "urn:missionweaveprotocol:subscription:paged",
            &[(group.clone(), after)],
        );
        c.send(&mut node, f);
        pages += 1;
        let other = c.take(&mut node);
        let folded = c.state.group(&group).map_or(0, |g| g.last_sequence);
        match other.as_slice() {
            // The last page: live from here.
            [] => break,
            [e] => {
                assert_eq!(code(e), "BACKPRESSURE");
                assert_eq!(at(e, "/error/details/reason"), "replay_page");
                assert_eq!(num(e, "/error/details/resumeAfterSequence"), folded);
                assert_eq!(folded, after + 10, "a page is 10 Events, contiguous");
                after = folded;
            }
            more => panic!("{more:?}"),
        }
    }
    assert_eq!(pages, head.div_ceil(10), "{head} Events in pages of 10");
    assert_eq!(c.state.group(&group).unwrap().last_sequence, head);
    // Live after the last page: the next Events of the Group arrive without a SUBSCRIBE.
    let live = (0..10_000).any(|_| {
        now = node
            .next_wake()
            .filter(|t| *t > now)
            .unwrap_or(now.plus_seconds(1));
        node.tick(now);
        c.take(&mut node);
        c.state.group(&group).unwrap().last_sequence > head
    });
    assert!(live, "no live Event of {group} after the last page");
}

#[test]
fn a_read_only_session_appends_nothing_keeps_no_cursor_and_its_key_signs_nothing() {
    // The visitor key is not in the Registry that verifies Commands (GET /api/registry).
    let probe = node();
    assert!(!probe.registry_json().contains(demo_node::VISITOR_KEY_ID));
    assert_eq!(
        probe.visitor().principal_id,
        probe.demo_human().principal_id
    );
    assert_ne!(
        probe.visitor().seed.public_key(),
        probe.demo_human().seed.public_key()
    );

    // The visitor key claimed for an Agent: refused at once, fatally.
    let mut node = node();
    let agent = json::parse_str(&node.registry_json()).unwrap();
    let agent = match agent.pointer("/bindings") {
        Some(Value::Array(b)) => b
            .iter()
            .find(|b| at(b, "/principal/type") == "agent")
            .map(|b| at(b, "/principal/id").to_owned())
            .unwrap(),
        _ => panic!("no bindings"),
    };
    let mut c = Client::visitor(&mut node);
    let f = client_init(1, &agent, demo_node::VISITOR_KEY_ID);
    c.send(&mut node, f);
    let got = c.take(&mut node);
    assert_eq!(code(&got[0]), "AUTH_INVALID_SIGNATURE", "{got:?}");
    assert_eq!(got[0].pointer("/error/fatal"), Some(&Value::Bool(true)));
    assert!(node.is_closed(c.conn));
    // A forged signature over the visitor's challenge: refused fatally.
    let mut c = Client::visitor(&mut node);
    let got = c.hello(&mut node, true);
    assert_eq!(code(&got[0]), "AUTH_INVALID_SIGNATURE", "{got:?}");
    assert!(node.is_closed(c.conn));

    // At the first gate: a read-only session beside the human's.
    let (mut node, mut human, gate) = at_first_gate();
    let mut visitor = Client::visiting(&mut node);
    let n = visitor.id();
    let groups: Vec<(String, u64)> = node
        .groups_of(&visitor.human.principal_id)
        .into_iter()
        .map(|g| (g, 0))
        .collect();
    visitor.subscribed = groups.iter().map(|(g, _)| g.clone()).collect();
    let f = subscribe(n, "urn:missionweaveprotocol:subscription:visitor", &groups);
    visitor.send(&mut node, f);
    let (v_other, h_other) = take_both(&mut node, &mut visitor, &mut human);
    assert!(
        v_other.is_empty() && h_other.is_empty(),
        "{v_other:?} {h_other:?}"
    );
    assert!(!visitor.events.is_empty(), "the visitor reads nothing");
    let heads = node.heads();
    let org = node.organization_events();

    // A grant correctly signed with the human's real key, and one signed with the visitor
    // key: both refused on the read-only session before any stage runs.
    let real = human.grant(&gate, node.now());
    let action = at(&json::parse(&real).unwrap(), "/actionId").to_owned();
    visitor.state = human.state.clone();
    let forged = visitor.grant(&gate, node.now());
    for bytes in [&real, &forged] {
        let got = visitor.command(&mut node, bytes);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(code(&got[0]), "AUTH_FORBIDDEN", "{got:?}");
        assert!(
            at(&got[0], "/error/message").contains("sign in to decide"),
            "{got:?}"
        );
        assert_eq!(
            at(&got[0], "/error/relatedActionId"),
            at(&json::parse(bytes).unwrap(), "/actionId")
        );
        assert!(!node.is_closed(visitor.conn), "the visitor keeps reading");
    }
    // The visitor-signed grant over HTTP: its signature verifies against nothing.
    let (status, body) = node.post_command(&forged, node.now());
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        at(&json::parse_str(&body).unwrap(), "/code"),
        "AUTH_INVALID_SIGNATURE"
    );
    // An ACK: refused, no Cursor kept.
    let member = visitor
        .subscribed
        .iter()
        .find(|g| {
            human
                .state
                .membership(g, &human.human.principal_id)
                .is_some_and(|m| m.is_active())
        })
        .unwrap()
        .clone();
    let mut f = frame("ACK", 500);
    let mut item = Object::new();
    item.insert("groupId", s(&member));
    item.insert("sequence", Value::from(1u64));
    f.insert("acknowledgements", Value::Array(vec![Value::Object(item)]));
    f.insert("sentAt", s("2026-07-15T08:00:00Z"));
    visitor.send(&mut node, f);
    let (got, h_other) = take_both(&mut node, &mut visitor, &mut human);
    assert!(h_other.is_empty(), "{h_other:?}");
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(code(&got[0]), "AUTH_FORBIDDEN");
    assert_eq!(node.cursor(&visitor.human.principal_id, &member), None);
    // Nothing appended anywhere; the gate still waits for the human.
    assert_eq!(node.heads(), heads);
    assert_eq!(node.organization_events(), org);
    assert_eq!(first_execution_gate(&node), Some(gate.clone()));
    // A PING is answered.
    visitor.send(&mut node, ping(501));
    let (got, _) = take_both(&mut node, &mut visitor, &mut human);
    assert_eq!(at(&got[0], "/frameType"), "PING", "{got:?}");

    // The human's session grants the same bytes: accepted, and the visitor reads the Event.
    let n = human.id();
    let mut f = frame("COMMAND", n);
    f.insert("command", json::parse(&real).unwrap());
    human.send(&mut node, f);
    let (v_other, h_other) = take_both(&mut node, &mut visitor, &mut human);
    assert!(
        v_other.is_empty() && h_other.is_empty(),
        "{v_other:?} {h_other:?}"
    );
    assert!(visitor.events.iter().any(|e| at(e, "/kind")
        == "approval.execution.granted"
        && at(e, "/cause/id") == action));
    assert_eq!(visitor.errors.len(), 3, "{:?}", visitor.errors);
}

#[test]
fn a_visitor_reads_the_demo_running_with_each_decision_awaiting_the_human() {
    let mut node = node();
    let mut visitor = Client::visiting(&mut node);
    // The human decides over HTTP (`POST /api/commands`), signing with the Membership
    // Epochs the visitor's view holds (the same principal's).
    let mut decider = Client::new(&mut node);
    let mut decided = Vec::new();
    let mut seen = 0;
    for _ in 0..64 {
        run_until(&mut node, &mut visitor, |n, _| {
            n.finished() || n.gates().iter().any(|g| !decided.contains(&g.key()))
        });
        if node.finished() {
            break;
        }
        // Every decision awaiting the human, as the visitor reads it: its WorkItem's goal or
        // its Mission's title, from verified Events only, and nothing of it decided yet.
        let folded: Vec<String> = visitor.events.iter().map(json::to_string).collect();
        for g in node.gates() {
            let (id, text) = match &g {
                HumanGate::ExecutionApproval {
                    work_item_id, goal, ..
                } => {
                    assert!(visitor.state.work_items.contains_key(work_item_id));
                    (work_item_id, goal)
                }
                HumanGate::MissionApproval {
                    mission_id, title, ..
                } => {
                    assert!(visitor.state.missions.contains_key(mission_id));
                    (mission_id, title)
                }
            };
            assert!(
                folded
                    .iter()
                    .any(|e| e.contains(id.as_str()) && e.contains(text.as_str())),
                "the visitor cannot read {text:?} of {id}"
            );
            seen += 1;
        }
        assert!(visitor.state.missions.len() >= 2);
        let gate = node
            .gates()
            .into_iter()
            .find(|g| !decided.contains(&g.key()))
            .unwrap();
        decider.state = visitor.state.clone();
        let bytes = match &gate {
            HumanGate::ExecutionApproval { .. } => decider.grant(&gate, node.now()),
            HumanGate::MissionApproval { .. } => decider.decide_mission(&gate, false, node.now()),
        };
        let (status, body) = node.post_command(&bytes, node.now());
        assert_eq!(status, 200, "{} refused: {body}", gate.key());
        decided.push(gate.key());
    }
    assert!(node.finished(), "{}", node.take_lines().join("\n"));
    assert!(seen >= 3, "{seen} decisions read");
    // The visitor read every decision's Event and sent nothing that was refused.
    let kinds = |k: &str| {
        visitor
            .events
            .iter()
            .filter(|e| at(e, "/kind") == k)
            .count()
    };
    assert!(kinds("approval.execution.granted") >= 1);
    assert!(kinds("mission.approved") >= 2);
    for (group, head) in node.heads() {
        if visitor.subscribed.contains(&group) {
            assert_eq!(
                visitor.state.group(&group).map_or(0, |g| g.last_sequence),
                head
            );
        }
    }
    assert!(visitor.errors.is_empty(), "{:?}", visitor.errors);
}
