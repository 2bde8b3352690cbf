//! `weave-console export` and `verify-export` (issue 29, "Auditors") on the §22 demo's data:
//! the export is taken while the server runs, verified offline, and then attacked: one byte
//! changed anywhere (every byte of a small bundle, a systematic sample and every Event's
//! signature and payload of the demo's), an Event removed, two Events swapped. Each is refused,
//! and a damaged Event line is named (line, Group, sequence, Event id).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod support;
use support::BIN;
use wasm_core::audit::{self, Assembly, AuditError, EventFailure, Sealer};
use wasm_core::authority::ApplyError;
use wasm_core::json::{self, Value};

fn export(data: &Path, mission: &str, out: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(["export", "--with-artifacts", "--data"])
        .arg(data)
        .args(["--mission", mission, "--out"])
        .arg(out)
        .output()
        .unwrap()
}

fn verify_cli(file: &Path) -> std::process::Output {
    Command::new(BIN)
        .arg("verify-export")
        .arg(file)
        .output()
        .unwrap()
}

/// Writes `bytes` to `file` and runs the CLI's verifier on it, which must fail (exit 1): its
/// stderr, to check what it names.
fn cli_refuses(file: &Path, bytes: &[u8]) -> String {
    std::fs::write(file, bytes).unwrap();
    let v = verify_cli(file);
    assert_eq!(v.status.code(), Some(1));
    String::from_utf8_lossy(&v.stderr).into_owned()
}

/// The stored Events of `kind` (their JCS), read from the store read-only.
fn logged(data: &Path, kind: &str) -> Vec<Vec<u8>> {
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        data.join("authority.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) else {
        return Vec::new();
    };
    let Ok(mut stmt) = conn.prepare("SELECT jcs FROM log WHERE kind = ?1") else {
        return Vec::new();
    };
    stmt.query_map([kind], |r| r.get(0))
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
}

/// The root Missions the demo's human created.
fn root_missions(data: &Path) -> Vec<String> {
    logged(data, "mission.created")
        .iter()
        .filter_map(|b| json::parse(b).ok())
        .filter(|v| v.pointer("/actor/type").and_then(Value::as_str) == Some("human"))
        .filter_map(|v| {
            v.pointer("/payload/mission/id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// The WorkItems whose execution the human must approve (`human_required`), from the
/// store's `work.authorized` Events.
fn gated_work_items(data: &Path) -> Vec<String> {
    logged(data, "work.authorized")
        .iter()
        .filter(|b| {
            b.windows(36)
                .any(|w| w == b"\"executionApproval\":\"human_required\"")
        })
        .filter_map(|b| json::parse(b).ok())
        .filter_map(|v| {
            v.pointer("/payload/workItem/id")
                .or_else(|| v.pointer("/workItemId"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// The lines of a bundle, each with its `\n`, and the byte offset each starts at.
fn lines(bytes: &[u8]) -> Vec<(usize, &[u8])> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            out.push((start, &bytes[start..=i]));
            start = i + 1;
        }
    }
    out
}

fn header(bytes: &[u8]) -> Value {
    json::parse(lines(bytes)[0].1.strip_suffix(b"\n").unwrap()).unwrap()
}

fn count(h: &Value, name: &str) -> usize {
    match h.pointer(&format!("/{name}")) {
        Some(Value::Number(n)) => n.as_safe_u64().unwrap() as usize,
        _ => panic!("no {name}"),
    }
}

/// The 0-based line indexes of the Event lines.
fn event_lines(bytes: &[u8]) -> std::ops::Range<usize> {
    let h = header(bytes);
    let first = 2 + count(&h, "agentCards");
    first..first + count(&h, "events")
}

/// The span of `"name":"…"`'s value in `line`, if any.
fn value_span(line: &[u8], name: &str) -> Option<std::ops::Range<usize>> {
    let key = format!("\"{name}\":\"");
    let at = line.windows(key.len()).position(|w| w == key.as_bytes())? + key.len();
    let len = line[at..].iter().position(|b| *b == b'"')?;
    Some(at..at + len)
}

/// Changes the byte at `pos` and checks the verifier refuses the result; a change inside an
/// Event line must name that Event (its line, and its id unless the id itself was changed).
fn refused_at(bytes: &[u8], pos: usize, events: &std::ops::Range<usize>, all: &[(usize, &[u8])]) {
    let mut t = bytes.to_vec();
    t[pos] ^= 0x01;
    let r = audit::verify(&t);
    let Err(e) = r else {
        panic!(
            "a change of byte {pos} ({:?}) was accepted",
            bytes[pos] as char
        )
    };
    let line = all
        .iter()
        .position(|(start, l)| pos >= *start && pos < start + l.len())
        .unwrap();
    if events.contains(&line) {
        let (start, l) = all[line];
        let AuditError::Event { at, .. } = &e else {
            panic!("byte {pos} of Event line {}: {e}", line + 1)
        };
        assert_eq!(at.line, line + 1, "byte {pos}: {e}");
        let id = value_span(l, "eventId").unwrap();
        // The member `"eventId":"…"` itself, name and value: a change there leaves no id to name.
        let key = "\"eventId\":\"".len();
        let inside_id = (start + id.start - key..start + id.end + 1).contains(&pos);
        if !inside_id {
            let original = std::str::from_utf8(&l[id]).unwrap();
            assert_eq!(at.event_id, original, "byte {pos}: {e}");
        }
    }
}

#[test]
fn an_export_of_the_demo_verifies_offline_and_every_change_is_refused() {
    let dir = support::temp("audit", "demo");
    let data = dir.join("data");
    let server = support::serve(|c| {
        c.args(["--addr", "127.0.0.1:0", "--data"]).arg(&data);
    });
    // The demo runs until the child Mission is approved by its owner (an Approval on two
    // Artifacts) and the development human has granted the first execution gate (`dev
    // approve execution`, as the demo asks); the export is taken meanwhile, from the store
    // the server is writing.
    let out = dir.join("bundle.jsonl");
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut granted = false;
    let (mission, summary) = 'wait: loop {
        assert!(Instant::now() < deadline, "the demo reached no approval");
        std::thread::sleep(Duration::from_millis(500));
        let gated = if granted {
            Vec::new()
        } else {
            gated_work_items(&data)
        };
        for w in &gated {
            let o = Command::new(BIN)
                .args(["dev", "approve", "execution", "--work-item", w])
                .args(["--operations", "deploy", "--url"])
                .arg(format!("http://{}", server.addr))
                .arg("--data")
                .arg(&data)
                .output()
                .unwrap();
            if o.status.success() {
                granted = true;
                break;
            }
        }
        for mission in root_missions(&data) {
            let o = export(&data, &mission, &out);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let v = verify_cli(&out);
            assert!(
                v.status.success(),
                "an export of a running server verifies: {}",
                String::from_utf8_lossy(&v.stderr)
            );
            let text = String::from_utf8_lossy(&v.stdout).into_owned();
            if text.contains(" mission.approved by ")
                && text.contains(" approval.execution.granted by human:")
            {
                break 'wait (mission, text);
            }
        }
    };
    drop(server);
    println!("{summary}");
    assert!(summary.contains("verify-export: OK"));
    assert!(summary.contains("sealed by service:"));
    assert!(summary.contains("mission.created by human:"), "{summary}");
    assert!(summary.contains("; admitted at "), "{summary}");
    // The humans' decisions with their own signed Commands, verified: the creation and the
    // approval, each with the Command's id.
    for kind in ["mission.created", "approval.execution.granted"] {
        let line = summary
            .lines()
            .find(|l| l.contains(&format!(" {kind} by human:")))
            .unwrap_or_else(|| panic!("no {kind} in {summary}"));
        assert!(
            line.contains("; Command urn:") && line.contains(", verified"),
            "{line}"
        );
    }
    assert!(!summary.contains("Command not recorded"), "{summary}");
    assert!(summary.contains(", on Artifacts sha256:"), "{summary}");
    assert!(
        summary.contains(&format!("(Mission {mission} ")),
        "{summary}"
    );

    let bytes = std::fs::read(&out).unwrap();
    let s = audit::verify(&bytes).unwrap();
    assert!(s.groups.len() >= 2, "the child Mission's Group is exported");
    assert!(s.commands >= 2 && s.missing_commands() == 0, "{s:?}");
    let approval = s
        .decisions
        .iter()
        .find(|d| d.kind == "approval.execution.granted" && d.human)
        .and_then(|d| d.command.clone())
        .expect("the approval's Command");
    assert!(s.artifacts > 0 && s.artifact_contents == s.artifacts);
    let all = lines(&bytes);
    let events = event_lines(&bytes);

    // The CLI: a changed signature byte fails, naming the Event.
    let target = events.start + events.len() / 2;
    let (start, line) = all[target];
    let sig = value_span(line, "value").unwrap();
    let mut t = bytes.clone();
    t[start + sig.start + 3] ^= 0x01;
    let bad = dir.join("tampered.jsonl");
    let err = cli_refuses(&bad, &t);
    let id = std::str::from_utf8(&line[value_span(line, "eventId").unwrap()]).unwrap();
    assert!(
        err.contains(&format!("line {}", target + 1)) && err.contains(id),
        "{err}"
    );

    // The approval's Command: one byte changed (in its signature, in its payload) makes the
    // CLI fail naming the Command (line and id); a Command of the same human swapped in for it
    // (the creation's, validly signed) fails too; cut out of the sealed bundle, refused.
    let (cmd_start, cmd_line) = all[approval.line - 1];
    let names_approval = format!(
        "line {} (the Command {})",
        approval.line, approval.action_id
    );
    assert!(
        std::str::from_utf8(cmd_line)
            .unwrap()
            .contains(&approval.action_id)
    );
    let sig = value_span(cmd_line, "value").unwrap();
    let payload = cmd_line
        .windows(10)
        .position(|w| w == b"\"payload\":")
        .unwrap();
    for pos in [cmd_start + sig.start + 5, cmd_start + payload + 12] {
        let mut t = bytes.clone();
        t[pos] ^= 0x01;
        let err = cli_refuses(&bad, &t);
        assert!(err.contains(&names_approval), "{err}");
    }
    // The same decision signed again by the same human with one member changed (its
    // correlationId): a valid signature of that human, but not the Command the authority
    // accepted (its signing hash is not the Events' commandHash).
    let mut doc = json::parse(cmd_line.strip_suffix(b"\n").unwrap()).unwrap();
    let signer_id = doc
        .pointer("/actor/id")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let org = json::parse(&std::fs::read(data.join("organization.json")).unwrap()).unwrap();
    let Some(Value::Array(principals)) = org.pointer("/principals") else {
        panic!("no principals")
    };
    let name = principals
        .iter()
        .find(|p| p.pointer("/actor/id").and_then(Value::as_str) == Some(signer_id.as_str()))
        .and_then(|p| p.pointer("/name").and_then(Value::as_str))
        .expect("the approver is a development Principal");
    let human = support::Principal::of(&org, name);
    if let Value::Object(o) = &mut doc {
        o.remove("signature");
        o.insert(
            "correlationId",
            Value::string("urn:uuid:another-correlation"),
        );
    }
    wasm_core::crypto::sign_document(
        &mut doc,
        wasm_core::crypto::DocumentKind::Command,
        &human.key_id,
        &human.seed,
    )
    .unwrap();
    let mut swapped = json::canonicalize(&doc).unwrap();
    swapped.push(b'\n');
    let mut t = Vec::new();
    for (i, (_, l)) in all.iter().enumerate() {
        t.extend_from_slice(if i + 1 == approval.line { &swapped } else { l });
    }
    let err = cli_refuses(&bad, &t);
    assert!(
        err.contains(&names_approval) && err.contains("is the commandHash of no Event"),
        "{err}"
    );

    // A systematic sample of every position, and in each Event line a byte of its signature,
    // of its payload and its final newline.
    let mut positions: Vec<usize> = (0..bytes.len()).step_by(211).collect();
    for i in events.clone() {
        let (start, l) = all[i];
        let sig = value_span(l, "value").unwrap();
        positions.push(start + sig.start + sig.len() / 2);
        let payload = l.windows(10).position(|w| w == b"\"payload\":").unwrap();
        positions.push(start + payload + 12);
        positions.push(start + l.len() - 1);
    }
    for pos in &positions {
        refused_at(&bytes, *pos, &events, &all);
    }
    println!("{} changed bytes refused", positions.len());

    // An Event removed: the gap is named at the next Event of its Group.
    let group_of = |l: &[u8]| {
        std::str::from_utf8(&l[value_span(l, "groupId").unwrap()])
            .unwrap()
            .to_owned()
    };
    let first_group = group_of(all[events.start].1);
    let same: Vec<usize> = events
        .clone()
        .filter(|i| group_of(all[*i].1) == first_group)
        .collect();
    let removed = same[3];
    let mut t = Vec::new();
    for (i, (_, l)) in all.iter().enumerate() {
        if i != removed {
            t.extend_from_slice(l);
        }
    }
    match audit::verify(&t) {
        Err(AuditError::Event { at, failure }) => {
            assert_eq!(at.group_id, first_group);
            assert_eq!(at.sequence, "5");
            assert!(
                matches!(
                    *failure,
                    EventFailure::Replay(ApplyError::OutOfOrder {
                        sequence: 5,
                        last: 3,
                        ..
                    })
                ),
                "{failure}"
            );
        }
        other => panic!("a removed Event: {other:?}"),
    }
    // Two Events of one Group swapped.
    let mut t = Vec::new();
    for i in 0..all.len() {
        let j = if i == same[4] {
            same[5]
        } else if i == same[5] {
            same[4]
        } else {
            i
        };
        t.extend_from_slice(all[j].1);
    }
    match audit::verify(&t) {
        Err(AuditError::Event { at, failure }) => {
            assert_eq!(
                (at.group_id.as_str(), at.sequence.as_str()),
                (first_group.as_str(), "6")
            );
            assert!(matches!(
                *failure,
                EventFailure::Replay(ApplyError::OutOfOrder { .. })
            ));
        }
        other => panic!("swapped Events: {other:?}"),
    }

    // A small bundle (the first Events of the root Group, the keys they need), sealed by the
    // same authority key: every single byte changed is refused.
    let org = server::devorg::load(&data).unwrap();
    let config = org.authority_config().unwrap();
    let first: Vec<Vec<u8>> = same[..4]
        .iter()
        .map(|i| all[*i].1.strip_suffix(b"\n").unwrap().to_vec())
        .collect();
    let registry = json::parse(all[1].1.strip_suffix(b"\n").unwrap()).unwrap();
    let needed: Vec<String> = first
        .iter()
        .flat_map(|e| {
            let v = json::parse(e).unwrap();
            let mut ids = vec![
                v.pointer("/actor/id")
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_owned(),
            ];
            ids.push(
                v.pointer("/acceptedBy/id")
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_owned(),
            );
            ids
        })
        .collect();
    let Some(Value::Array(bindings)) = registry.pointer("/bindings") else {
        panic!("bindings")
    };
    let mut small_registry = registry.clone();
    if let Value::Object(o) = &mut small_registry {
        o.insert(
            "bindings",
            Value::Array(
                bindings
                    .iter()
                    .filter(|b| {
                        b.pointer("/principal/id")
                            .and_then(Value::as_str)
                            .is_some_and(|id| needed.iter().any(|n| n == id))
                    })
                    .cloned()
                    .collect(),
            ),
        );
    }
    let admissions: Vec<Vec<u8>> = {
        let hashes: Vec<String> = first
            .iter()
            .filter_map(|e| {
                json::parse(e)
                    .unwrap()
                    .pointer("/commandHash")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect();
        let h = header(&bytes);
        let at = 2 + count(&h, "agentCards") + count(&h, "events");
        all[at..at + count(&h, "admissions")]
            .iter()
            .map(|(_, l)| l.strip_suffix(b"\n").unwrap().to_vec())
            .filter(|r| {
                let v = json::parse(r).unwrap();
                let sh = v.pointer("/signingHash").and_then(Value::as_str).unwrap();
                hashes.iter().any(|h| h == sh)
            })
            .collect()
    };
    let signer = wasm_core::crypto::ed25519::Signer::from_seed(&config.seed);
    let small = audit::assemble(
        &Assembly {
            organization_id: s.organization_id.clone(),
            exported_at: s.exported_at.clone(),
            groups: vec![(first_group.clone(), 4)],
            registry: small_registry,
            agent_cards: vec![],
            events: first,
            admissions,
            commands: vec![],
            artifacts: vec![],
        },
        Some(&Sealer {
            signer: &signer,
            key_id: &config.key_id,
            principal: &config.accepted_by,
        }),
    )
    .unwrap();
    let small_summary = audit::verify(&small).unwrap();
    assert_eq!(small_summary.events, 4);
    assert!(small_summary.seal.is_some());
    let small_lines = lines(&small);
    let small_events = event_lines(&small);
    let started = Instant::now();
    for pos in 0..small.len() {
        refused_at(&small, pos, &small_events, &small_lines);
    }
    println!(
        "every byte of a {}-byte bundle changed: {} refused ({} ms)",
        small.len(),
        small.len(),
        started.elapsed().as_millis()
    );

    // A data directory written before Commands were kept (its log has no `command` column,
    // as an older server left it): the export still verifies, and says of each human decision
    // that its Command was not recorded.
    {
        let conn = rusqlite::Connection::open(data.join("authority.sqlite")).unwrap();
        conn.execute_batch("ALTER TABLE log DROP COLUMN command")
            .unwrap();
    }
    let old = dir.join("old.jsonl");
    let o = export(&data, &mission, &old);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = verify_cli(&old);
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    assert!(
        text.contains(" approval.execution.granted by human:")
            && text.contains("; Command not recorded"),
        "{text}"
    );
    assert!(text.contains("0 signed Commands"), "{text}");
}
