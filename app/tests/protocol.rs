//! The Protocol view's runner, natively: the three official bundles from files held in memory
//! (as the browser holds them after fetching `/api/protocol/files/…`) give 58/62/30 with no
//! failure; a missing file is reported as a failure, never a crash.

use app::routes::protocol::run_bundles;
use std::collections::HashMap;
use std::path::Path;

fn bundle_root() -> std::path::PathBuf {
    let dir = std::env::var("MWP_PROTOCOL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/protocol"));
    assert!(
        dir.join("conformance/manifest.json").is_file(),
        "set MWP_PROTOCOL_DIR to the protocol bundle ({})",
        dir.display()
    );
    dir
}

fn load(dir: &Path, root: &Path, out: &mut HashMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            load(&p, root, out);
        } else {
            let rel = p
                .strip_prefix(root)
                .expect("rel")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read(&p).expect("read"));
        }
    }
}

fn files() -> HashMap<String, Vec<u8>> {
    let root = bundle_root();
    let mut out = HashMap::new();
    for d in ["schemas", "conformance", "cryptography", "admission"] {
        load(&root.join(d), &root, &mut out);
    }
    out
}

#[test]
fn the_official_bundles_pass_from_memory() {
    let rows = run_bundles(&files());
    let counts: Vec<(&str, usize, usize)> = rows
        .iter()
        .map(|r| (r.bundle.as_str(), r.passed, r.failed))
        .collect();
    assert_eq!(
        counts,
        [
            ("structural", 58, 0),
            ("cryptography", 62, 0),
            ("admission", 30, 0)
        ]
    );
}

#[test]
fn a_missing_or_altered_file_is_a_reported_failure() {
    let mut f = files();
    f.remove("conformance/manifest.json");
    let rows = run_bundles(&f);
    assert!(rows[0].failed > 0, "{:?}", rows[0]);
    let mut f = files();
    let key = f
        .keys()
        .find(|k| {
            k.starts_with("cryptography/") && k.ends_with(".json") && !k.ends_with("manifest.json")
        })
        .cloned()
        .expect("a cryptography file");
    f.get_mut(&key).expect("file").push(b' ');
    let rows = run_bundles(&f);
    assert!(
        rows[1]
            .failures
            .iter()
            .any(|(_, _, got)| got.contains(&key) || !got.is_empty()),
        "{:?}",
        rows[1]
    );
    assert!(rows[1].failed > 0);
}

/// An audit bundle of a real history (a human creates a Mission in an in-memory Organization),
/// assembled as the Events view's export assembles it (unsealed, no admission records), then
/// verified through the runner's code and answer (`protocol_runner::verify_audit_with`, read
/// back by `audit_verify::parse_outcome`), the path the Protocol view's worker takes.
mod audit {
    use app::components::audit_verify::{Outcome, verify_bundle};
    use simulation::harness::Harness;
    use simulation::kit::{self, G, M};
    use wasm_core::audit::{Assembly, assemble};
    use wasm_core::authority::Submitted;
    use wasm_core::json::{self, Value};
    use wasm_core::model::common::ActorType;

    /// The bundle's bytes, its Events (as values) and where the first Event line starts.
    fn bundle() -> (Vec<u8>, Vec<Value>) {
        let mut h = Harness::new(&[("owner", ActorType::Human), ("coord", ActorType::Agent)]);
        let now = kit::t0();
        for (who, kind, p) in kit::enrolment(&h, "coord", vec![], now) {
            h.submit(who, kind, &Default::default(), p, now)
                .expect("enrolled");
        }
        let budget = kit::obj(vec![("modelTokens", Value::from(1_000u64))]);
        let p = kit::root_mission(&h, M, G, "Root", budget, &[]);
        let events: Vec<Value> =
            match h.submit("owner", "mission.create", &kit::in_group(G), p, now) {
                Ok(Submitted::Appended(es)) => es.into_iter().map(|e| e.value).collect(),
                other => panic!("mission.create: {other:?}"),
            };
        assert!(!events.is_empty());
        let registry = kit::registry_evidence(&h).to_fixture_json();
        let head = kit::num(events.last().expect("an Event"), "/sequence");
        let bytes = assemble(
            &Assembly {
                organization_id: h.organization_id.clone(),
                exported_at: "2026-07-15T09:00:00Z".into(),
                groups: vec![(G.to_owned(), head)],
                registry,
                agent_cards: Vec::new(),
                events: events
                    .iter()
                    .map(|e| json::canonicalize(e).expect("JCS"))
                    .collect(),
                admissions: Vec::new(),
                commands: Vec::new(),
                artifacts: Vec::new(),
            },
            None,
        )
        .expect("assembled");
        (bytes, events)
    }

    #[test]
    fn a_bundle_verifies_through_the_runner_and_a_changed_byte_names_its_event() {
        let (bytes, events) = bundle();
        let Ok(Outcome::Verified(v)) = verify_bundle(&bytes) else {
            panic!("not verified: {:?}", verify_bundle(&bytes))
        };
        assert_eq!(v.events, u64::try_from(events.len()).expect("small"));
        assert_eq!((v.groups, v.seal.clone()), (1, None));
        let created = v
            .decisions
            .iter()
            .find(|d| d.kind == "mission.created")
            .expect("the Mission's creation is a decision");
        assert_eq!(created.group_id, G);
        assert!(created.decider.ends_with(":owner"), "{}", created.decider);
        // The bundle holds no Commands: the runner says so for the decision rather than
        // inventing one.
        assert_eq!(created.command, None);
        // One byte of the first Event's signature changed (its line is the third: header,
        // Registry, then the Events, no Agent Card): refused, naming that Event.
        let third = bytes
            .split(|b| *b == b'\n')
            .take(2)
            .map(|l| l.len() + 1)
            .sum::<usize>();
        let line = &bytes[third..];
        let sig = line
            .windows(9)
            .position(|w| w == b"\"value\":\"")
            .expect("a signature value")
            + 12;
        let mut tampered = bytes.clone();
        tampered[third + sig] ^= 0x01;
        match verify_bundle(&tampered) {
            Ok(Outcome::Refused {
                at: Some(at),
                reason,
            }) => {
                assert_eq!(at.line, 3, "{reason}");
                assert_eq!(
                    Some(at.event_id.as_str()),
                    events[0].pointer("/eventId").and_then(Value::as_str)
                );
                assert!(reason.starts_with("signature"), "{reason}");
            }
            other => panic!("not refused with the Event: {other:?}"),
        }
        // Not a bundle at all: refused, no Event named.
        assert!(matches!(
            verify_bundle(b"{}"),
            Ok(Outcome::Refused { at: None, .. })
        ));
    }
}
