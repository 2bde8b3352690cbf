//! The audit bundle's verifier (`wasm_core::audit`) over a real history: a human creates a
//! Mission and adds a Member through the harness's authority, and the bundle holds the Events,
//! their First-Admission Records and the human's two signed Commands. Each Command verifies
//! and is tied to its Events; then the Commands are attacked: a byte changed anywhere in one,
//! one swapped for another validly signed Command of the same human, one removed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use simulation::harness::{Envelope, Harness};
use simulation::kit::{self, G, M, obj, t0};
use wasm_core::admission::{
    AdmissionLog, AppendOutcome, LookupOutcome, TrustedContext, first_admission,
};
use wasm_core::audit::{self, Assembly, AuditError, Sealer};
use wasm_core::authority::{Micros, Submitted};
use wasm_core::crypto::{DocumentKind, verify};
use wasm_core::json::Value;
use wasm_core::model::common::ActorType;

/// An Admission Log that keeps the records it is given (the authority's store does the same).
#[derive(Default)]
struct Records(Vec<Vec<u8>>);

impl AdmissionLog for Records {
    fn lookup(&mut self, _: &str, _: &str) -> LookupOutcome {
        LookupOutcome::AuthoritativeAbsence
    }
    fn append_or_return_existing(&mut self, _: &str, _: &str, candidate: &[u8]) -> AppendOutcome {
        self.0.push(candidate.to_vec());
        AppendOutcome::Committed {
            record: candidate.to_vec(),
            authenticated_service: kit_service(),
        }
    }
}

fn kit_service() -> wasm_core::model::common::Actor {
    wasm_core::model::common::Actor::new(
        ActorType::Service,
        "urn:missionweaveprotocol:service:group-gateway",
    )
}

/// What a store holding the history has: the Group's Events, the admission records and the
/// human's Commands (bytes as sent).
struct History {
    h: Harness,
    events: Vec<Vec<u8>>,
    records: Records,
    commands: Vec<Vec<u8>>,
    /// The Registry in the `GET /api/registry` shape.
    registry: Value,
}

impl History {
    /// Admits, submits and keeps `bytes` (a human's Command is kept, as the server does).
    fn run(&mut self, bytes: Vec<u8>, now: Micros) {
        let verified = verify(&bytes, DocumentKind::Command, &self.h.registry).unwrap();
        let hash = verified.signing_hash.clone();
        first_admission(&verified, &mut self.records, &mut || TrustedContext {
            admission_record_id: format!(
                "urn:missionweaveprotocol:admission-record:{}",
                &hash[7..]
            ),
            trusted_accepted_at: now.format(),
            accepted_by: kit_service(),
        })
        .unwrap();
        let human = verified.principal.actor_type == ActorType::Human;
        let before = self.events.len();
        match self.h.authority.submit(verified, now).unwrap() {
            Submitted::Appended(es) => self.events.extend(
                es.into_iter()
                    .filter(|e| e.value.pointer("/groupId").and_then(Value::as_str) == Some(G))
                    .map(|e| e.jcs),
            ),
            Submitted::Duplicate(_) => panic!("a duplicate"),
        }
        // The export keeps the records (and Commands) of the exported Group's Events only.
        if self.events.len() == before {
            self.records.0.pop();
        } else if human {
            self.commands.push(bytes);
        }
    }

    fn new() -> History {
        let h = Harness::new(&[("owner", ActorType::Human), ("coord", ActorType::Agent)]);
        let registry = kit::registry_evidence(&h).to_fixture_json();
        let mut w = History {
            h,
            events: Vec::new(),
            records: Records::default(),
            commands: Vec::new(),
            registry,
        };
        for (who, kind, p) in kit::enrolment(&w.h, "coord", vec![], t0()) {
            let env = Envelope::default();
            let bytes = w.h.command(who, kind, &env, p, t0());
            w.run(bytes, t0());
        }
        let create = w.create_command("Root", t0());
        w.run(create, t0());
        let now = Micros(t0().0 + 1_000_000);
        let env = w.h.current_envelope("owner", Some(G));
        let p = kit::membership(&w.h, "coord", "agent", &["worker"]);
        let add = w.h.command("owner", "membership.change", &env, p, now);
        w.run(add, now);
        w
    }

    /// The owner's `mission.create` of Mission `M` titled `title`, with action id 900 (so two
    /// titles give two validly signed Commands of the same decision).
    fn create_command(&mut self, title: &str, now: Micros) -> Vec<u8> {
        let budget = obj(vec![("modelTokens", Value::from(10_000u64))]);
        let p = kit::root_mission(&self.h, M, G, title, budget, &["read"]);
        let env = Envelope {
            action_id: Some("urn:missionweaveprotocol:action:900".into()),
            ..kit::in_group(G)
        };
        self.h.command("owner", "mission.create", &env, p, now)
    }

    fn assembly(&self, commands: Vec<Vec<u8>>) -> Assembly {
        Assembly {
            organization_id: self.h.organization_id.clone(),
            exported_at: "2030-01-01T00:00:00Z".into(),
            groups: vec![(G.to_owned(), self.events.len() as u64)],
            registry: self.registry.clone(),
            agent_cards: vec![],
            events: self.events.clone(),
            admissions: self.records.0.clone(),
            commands,
            artifacts: vec![],
        }
    }

    fn sealed(&self, commands: Vec<Vec<u8>>) -> Vec<u8> {
        let gw = &self.h.principals["group-gateway"];
        audit::assemble(
            &self.assembly(commands),
            Some(&Sealer {
                signer: &gw.signer,
                key_id: &gw.key_id,
                principal: &gw.actor,
            }),
        )
        .unwrap()
    }
}

/// The 0-based index and byte range (with its `\n`) of each line.
fn lines(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    out
}

#[test]
fn a_humans_signed_commands_verify_and_name_their_decisions() {
    let w = History::new();
    assert_eq!(w.commands.len(), 2, "mission.create and membership.change");
    let bundle = w.sealed(w.commands.clone());
    let s = audit::verify(&bundle).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.commands, 2);
    assert_eq!(s.missing_commands(), 0);
    let humans: Vec<_> = s.decisions.iter().filter(|d| d.human).collect();
    assert!(!humans.is_empty());
    for d in &humans {
        let c = d
            .command
            .as_ref()
            .expect("every human decision has its Command");
        assert_eq!(c.key_id, "urn:missionweaveprotocol:key:owner");
    }
    let created = humans
        .iter()
        .find(|d| d.kind == "mission.created")
        .expect("the Mission's creation");
    let c = created.command.as_ref().unwrap();
    assert_eq!(
        (c.action_id.as_str(), c.kind.as_str()),
        ("urn:missionweaveprotocol:action:900", "mission.create")
    );
    let text = s.lines().join("\n");
    assert!(
        text.contains(
            "mission.created by human:urn:missionweaveprotocol:human:owner (Group urn:x:group:root"
        ) && text
            .contains("; Command urn:missionweaveprotocol:action:900 (mission.create) signed at ")
            && text.contains(", verified"),
        "{text}"
    );
    assert!(text.contains("human decisions: "), "{text}");
}

#[test]
fn every_byte_changed_in_a_command_is_refused_naming_the_command() {
    let w = History::new();
    let bundle = w.sealed(w.commands.clone());
    let all = lines(&bundle);
    let first_command = 2 + w.events.len() + w.records.0.len();
    let mut refused = 0;
    for (n, line) in all[first_command..first_command + 2].iter().enumerate() {
        let line_no = first_command + n + 1;
        // Every byte but the newline (a changed newline splits or joins lines: refused by the
        // count, without a Command to name).
        for pos in line.start..line.end - 1 {
            let mut t = bundle.clone();
            t[pos] ^= 0x01;
            match audit::verify(&t) {
                Err(AuditError::Command { line, .. }) if line == line_no => refused += 1,
                other => panic!("byte {pos} of the Command at line {line_no}: {other:?}"),
            }
        }
        let mut t = bundle.clone();
        t[line.end - 1] = b' ';
        assert!(audit::verify(&t).is_err());
    }
    println!("{refused} changed Command bytes refused, each naming its Command's line");
}

#[test]
fn a_command_swapped_for_another_signed_by_the_same_human_is_refused() {
    let mut w = History::new();
    // The same decision reworded and signed again by the same human: a valid signature, but
    // not the Command the authority accepted (its hash is not the Events' commandHash).
    let other = w.create_command("Another title", t0());
    assert!(verify(&other, DocumentKind::Command, &w.h.registry).is_ok());
    let mut commands = w.commands.clone();
    commands[0] = other;
    let e = audit::verify(&w.sealed(commands)).expect_err("a swapped Command");
    match &e {
        AuditError::Command {
            action_id, reason, ..
        } => {
            assert_eq!(action_id, "urn:missionweaveprotocol:action:900");
            assert!(reason.contains("is the commandHash of no Event"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // The same Command twice.
    let twice = vec![w.commands[0].clone(), w.commands[0].clone()];
    let e = audit::verify(&w.sealed(twice)).expect_err("twice");
    assert!(e.to_string().contains("appears twice"), "{e}");
}

#[test]
fn a_removed_command_is_refused_in_a_sealed_bundle_and_reported_otherwise() {
    let w = History::new();
    let bundle = w.sealed(w.commands.clone());
    let all = lines(&bundle);
    let first_command = 2 + w.events.len() + w.records.0.len();
    // The line cut out of a sealed bundle: the header's count no longer holds (the seal line
    // is then read where the header puts the second Command, and is not one).
    let mut cut = bundle.clone();
    cut.drain(all[first_command].clone());
    let e = audit::verify(&cut).expect_err("a Command cut out of a sealed bundle");
    assert!(
        matches!(e, AuditError::Command { line, .. } if line == first_command + 2),
        "{e}"
    );
    // An unsealed bundle without it (the console's export holds no Command): it verifies,
    // and the decision says its Command is not in the bundle.
    let unsealed = audit::assemble(&w.assembly(w.commands[1..].to_vec()), None)
        .unwrap_or_else(|e| panic!("{e}"));
    let s = audit::verify(&unsealed).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.missing_commands(), 1);
    let text = s.lines().join("\n");
    assert!(
        text.contains("mission.created by human:") && text.contains("; Command not in the bundle"),
        "{text}"
    );
    // A sealed bundle of a store that kept no Command (written before Commands were kept):
    // verified, every human decision "Command not recorded".
    let old = w.sealed(vec![]);
    let s = audit::verify(&old).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.missing_commands(),
        s.decisions.iter().filter(|d| d.human).count()
    );
    assert!(s.lines().join("\n").contains("; Command not recorded"));
}
