//! The Protocol view's bundle runner (issues 13/14): `wasm_core::conformance`'s three runners
//! (structural, cryptography, admission) as their own WebAssembly module. The console's
//! module leaves them out (the standalone documents' validators, the admission and cryptography
//! case evaluators: 36 KB of every visit as shipped, docs/console.md "Sizes"); the Protocol view
//! starts `pkg/<hash>/runner-worker.js` (a module worker that loads `runner.js` +
//! `runner_bg.wasm`) only when the bundles are asked for.
//!
//! One call, bytes in and JSON text out, so the page and the worker exchange a transferable
//! `Uint8Array` and a string: [`run_bundles`] reads the files as framed by
//! [`decode_files`] and answers [`report_json`]'s text.
//!
//! The audit bundle verifier (issue 29, "Auditors") lives here too: [`verify_audit`] runs
//! `wasm_core::audit::verify` (the code `weave-console verify-export` runs) in the same worker
//! and answers [`audit_json`]'s text, reporting its progress as it goes. In the console's
//! module the verifier (the audit format, the Agent Card and First-Admission Record checks, the
//! summary) made every deep link download it through the views' shared chunks (docs/console.md
//! "Sizes"); here it is fetched only when a person loads a bundle, and a large bundle is
//! verified off the page's thread.

use std::collections::HashMap;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_core::audit::{AuditError, Summary};
use wasm_core::conformance::{BundleReport, run_admission, run_cryptography, run_structural};
use wasm_core::json::{self, Object, Value};

/// Reads the console's framing of the bundle files (`app::routes::protocol::encode_files`): per
/// file, the path's length (u32, little-endian), the path, the content's length, the content. A
/// truncated buffer or a path that is not UTF-8 is an error.
pub fn decode_files(mut bytes: &[u8]) -> Result<HashMap<String, Vec<u8>>, String> {
    fn part<'a>(bytes: &mut &'a [u8]) -> Result<&'a [u8], String> {
        let (len, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or("truncated file framing")?;
        let len = usize::try_from(u32::from_le_bytes(*len)).map_err(|e| e.to_string())?;
        if rest.len() < len {
            return Err("truncated file framing".into());
        }
        let (this, rest) = rest.split_at(len);
        *bytes = rest;
        Ok(this)
    }
    let mut files = HashMap::new();
    while !bytes.is_empty() {
        let path = std::str::from_utf8(part(&mut bytes)?)
            .map_err(|_| "a file path is not UTF-8".to_string())?
            .to_owned();
        files.insert(path, part(&mut bytes)?.to_vec());
    }
    Ok(files)
}

/// Runs the three official bundles over files held in memory (bundle-relative paths).
pub fn run(files: &HashMap<String, Vec<u8>>) -> [BundleReport; 3] {
    let read = |path: &str| -> Result<Vec<u8>, String> {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| format!("{path}: not served"))
    };
    [
        run_structural(&read),
        run_cryptography(&read),
        run_admission(&read),
    ]
}

/// The reports as JSON: `{"bundles": [{"bundle", "passed", "failures": [{"case", "expected",
/// "got"}]}]}`.
pub fn report_json(reports: &[BundleReport]) -> String {
    let bundles = reports
        .iter()
        .map(|r| {
            let failures = r
                .failures
                .iter()
                .map(|f| {
                    Value::Object(Object::from_iter([
                        ("case", Value::from(f.case.as_str())),
                        ("expected", Value::from(f.expected.as_str())),
                        ("got", Value::from(f.got.as_str())),
                    ]))
                })
                .collect();
            Value::Object(Object::from_iter([
                ("bundle", Value::from(r.bundle)),
                (
                    "passed",
                    Value::from(u64::try_from(r.passed).unwrap_or(u64::MAX)),
                ),
                ("failures", Value::Array(failures)),
            ]))
        })
        .collect();
    json::to_string(&Value::Object(Object::from_iter([(
        "bundles",
        Value::Array(bundles),
    )])))
}

/// The module's one export: framed files in ([`decode_files`]), the three reports out as JSON
/// ([`report_json`]), or `{"error": …}` when the framing cannot be read.
#[wasm_bindgen]
pub fn run_bundles(files: &[u8]) -> String {
    match decode_files(files) {
        Ok(files) => report_json(&run(&files)),
        Err(e) => json::to_string(&Value::Object(Object::from_iter([(
            "error",
            Value::from(e),
        )]))),
    }
}

/// A count as a JSON number (counts of a bundle are far below 2^53).
fn count(n: usize) -> Value {
    Value::from(u64::try_from(n).unwrap_or(u64::MAX))
}

fn object<const N: usize>(members: [(&'static str, Value); N]) -> Value {
    Value::Object(Object::from_iter(members))
}

/// What the Protocol view shows of a verification, as JSON: `{"verified": {"events",
/// "groups", "signatures", "seal": {"signer", "keyId"} | null, "decisions": [{"occurredAt",
/// "kind", "decider", "groupId", "sequence", "eventId", "evidence": [hash or operation]}]}}`,
/// or `{"refused": {"at": {"line", "groupId", "sequence", "eventId"} | null, "reason"}}` (an
/// Event's failure names the Event; any other failure has no `at`). Read back by
/// `app::components::audit_verify::parse_outcome`.
pub fn audit_json(outcome: &Result<Summary, AuditError>) -> String {
    let doc = match outcome {
        Ok(s) => {
            let seal = s.seal.as_ref().map_or(Value::Null, |seal| {
                object([
                    ("signer", Value::from(seal.signer.as_str())),
                    ("keyId", Value::from(seal.key.key_id.as_str())),
                ])
            });
            let decisions = s
                .decisions
                .iter()
                .map(|d| {
                    let evidence = d
                        .approval
                        .iter()
                        .flat_map(|a| a.artifact_hashes.iter().chain(a.operations.iter()))
                        .map(|h| Value::from(h.as_str()))
                        .collect();
                    object([
                        ("occurredAt", Value::from(d.occurred_at.as_str())),
                        ("kind", Value::from(d.kind.as_str())),
                        ("decider", Value::from(d.decider.as_str())),
                        ("groupId", Value::from(d.at.group_id.as_str())),
                        ("sequence", Value::from(d.at.sequence.as_str())),
                        ("eventId", Value::from(d.at.event_id.as_str())),
                        ("evidence", Value::Array(evidence)),
                        ("human", Value::Bool(d.human)),
                        (
                            "command",
                            d.command.as_ref().map_or(Value::Null, |c| {
                                object([
                                    ("actionId", Value::from(c.action_id.as_str())),
                                    ("kind", Value::from(c.kind.as_str())),
                                    ("signingHash", Value::from(c.signing_hash.as_str())),
                                ])
                            }),
                        ),
                    ])
                })
                .collect();
            object([(
                "verified",
                object([
                    ("events", count(s.events)),
                    ("groups", count(s.groups.len())),
                    ("signatures", count(s.signatures)),
                    ("seal", seal),
                    ("decisions", Value::Array(decisions)),
                ]),
            )])
        }
        Err(e) => {
            let (at, reason) = match e {
                AuditError::Event { at, failure } => (
                    object([
                        ("line", count(at.line)),
                        ("groupId", Value::from(at.group_id.as_str())),
                        ("sequence", Value::from(at.sequence.as_str())),
                        ("eventId", Value::from(at.event_id.as_str())),
                    ]),
                    failure.to_string(),
                ),
                other => (Value::Null, other.to_string()),
            };
            object([(
                "refused",
                object([("at", at), ("reason", Value::from(reason))]),
            )])
        }
    };
    json::to_string(&doc)
}

/// `progress`, told only when the hundredths done change: a large bundle posts a hundred
/// messages to the page, not one per Event.
fn by_hundredths(progress: &mut dyn FnMut(usize, usize)) -> impl FnMut(usize, usize) + '_ {
    let mut told = 0usize;
    move |done: usize, total: usize| {
        let hundredths = done.saturating_mul(100) / total.max(1);
        if hundredths > told {
            told = hundredths;
            progress(done, total);
        }
    }
}

/// Verifies an audit bundle ([`wasm_core::audit::verify_reporting`]) and answers
/// [`audit_json`]'s text; `progress` hears (lines checked, lines in all) at most once per
/// hundredth of the bundle.
pub fn verify_audit_with(bundle: &[u8], progress: &mut dyn FnMut(usize, usize)) -> String {
    audit_json(&wasm_core::audit::verify_reporting(
        bundle,
        &mut by_hundredths(progress),
    ))
}

/// The module's audit export: the bundle's bytes in, [`audit_json`]'s text out; `progress` is
/// called with (lines checked, lines in all) as [`verify_audit_with`] says (the worker posts
/// them to the page).
#[wasm_bindgen]
pub fn verify_audit(bundle: &[u8], progress: &js_sys::Function) -> String {
    verify_audit_with(bundle, &mut |done, total| {
        // A progress report that cannot be delivered changes nothing of the verification.
        let _ = progress.call2(
            &wasm_bindgen::JsValue::NULL,
            &wasm_bindgen::JsValue::from(u32::try_from(done).unwrap_or(u32::MAX)),
            &wasm_bindgen::JsValue::from(u32::try_from(total).unwrap_or(u32::MAX)),
        );
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The console's framing (`app::routes::protocol::encode_files`), for these tests.
    fn encode_files(files: &HashMap<String, Vec<u8>>) -> Vec<u8> {
        let mut paths: Vec<&String> = files.keys().collect();
        paths.sort();
        let mut out = Vec::new();
        for p in paths {
            for part in [p.as_bytes(), files[p].as_slice()] {
                out.extend_from_slice(&u32::try_from(part.len()).expect("small").to_le_bytes());
                out.extend_from_slice(part);
            }
        }
        out
    }

    #[test]
    fn framing_round_trips_and_refuses_truncation() {
        let mut files = HashMap::new();
        files.insert("a/b.json".to_string(), b"{}".to_vec());
        files.insert("empty".to_string(), Vec::new());
        files.insert("z".to_string(), vec![0, 255, 7]);
        let bytes = encode_files(&files);
        assert_eq!(decode_files(&bytes), Ok(files));
        assert_eq!(decode_files(&[]), Ok(HashMap::new()));
        for cut in [1, 4, 5, bytes.len() - 1] {
            assert_eq!(
                decode_files(&bytes[..cut]),
                Err("truncated file framing".to_string()),
                "cut at {cut}"
            );
        }
        assert!(decode_files(&[1, 0, 0, 0, 0xff, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn unreadable_framing_is_an_error_report() {
        let out = run_bundles(&[9, 0, 0, 0, b'x']);
        let v = json::parse(out.as_bytes()).expect("JSON");
        assert_eq!(
            v.pointer("/error").and_then(Value::as_str),
            Some("truncated file framing")
        );
    }

    #[test]
    fn no_files_is_three_failing_reports() {
        let v = json::parse(run_bundles(&[]).as_bytes()).expect("JSON");
        let Some(Value::Array(bundles)) = v.pointer("/bundles") else {
            panic!("no bundles: {v:?}")
        };
        let names: Vec<_> = bundles
            .iter()
            .map(|b| b.pointer("/bundle").and_then(Value::as_str))
            .collect();
        assert_eq!(
            names,
            [Some("structural"), Some("cryptography"), Some("admission")]
        );
        for b in bundles {
            assert!(
                matches!(b.pointer("/failures"), Some(Value::Array(f)) if !f.is_empty()),
                "{b:?}"
            );
        }
    }

    fn at(line: usize, sequence: &str) -> wasm_core::audit::EventAt {
        wasm_core::audit::EventAt {
            line,
            group_id: "urn:g:1".into(),
            sequence: sequence.into(),
            event_id: format!("urn:e:{sequence}"),
        }
    }

    #[test]
    fn a_verified_bundle_is_answered_with_what_the_view_shows() {
        use wasm_core::audit::{ApprovalSummary, CommandSummary, Decision, SealSummary, SignerKey};
        let key = SignerKey {
            key_id: "urn:k:seal".into(),
            principal: "service:urn:s".into(),
            public_key: "AAAA".into(),
        };
        let decision = |sequence: &str, approval: Option<ApprovalSummary>| Decision {
            at: at(7, sequence),
            kind: "execution.approved".into(),
            decider: "human:urn:h:alice".into(),
            occurred_at: "2026-12-02T10:00:00Z".into(),
            admitted_key: None,
            admitted_at: None,
            // The grant carries its human's signed Command; the other one has none.
            command: approval.as_ref().map(|_| CommandSummary {
                line: 9,
                action_id: "urn:c:grant".into(),
                kind: "approval.grant_execution".into(),
                key_id: "urn:k:alice".into(),
                signed_at: "2026-12-02T09:59:59Z".into(),
                signing_hash: "sha256:cc".into(),
            }),
            human: true,
            approval,
        };
        let summary = Summary {
            organization_id: "urn:o".into(),
            exported_at: "2026-12-02T11:00:00Z".into(),
            seal: Some(SealSummary {
                signer: "service:urn:s".into(),
                key: key.clone(),
            }),
            groups: Vec::new(),
            agent_cards: 2,
            events: 41,
            signatures: 44,
            admissions: 1,
            commands: 1,
            decisions: vec![
                decision(
                    "5",
                    Some(ApprovalSummary {
                        approval_id: "urn:a".into(),
                        approver: "human:urn:h:alice".into(),
                        approved_at: "2026-12-02T10:00:00Z".into(),
                        mission_revision: None,
                        work_item_id: Some("urn:w".into()),
                        artifact_hashes: vec!["sha256:aa".into()],
                        operations: vec!["deploy".into()],
                        command_signature: "sig".into(),
                    }),
                ),
                decision("6", None),
            ],
            artifacts: 0,
            artifact_contents: 0,
            event_keys: vec![key],
        };
        let v = json::parse(audit_json(&Ok(summary)).as_bytes()).expect("JSON");
        let n = |p: &str| match v.pointer(p) {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        assert_eq!(
            (
                n("/verified/events"),
                n("/verified/groups"),
                n("/verified/signatures")
            ),
            (Some(41), Some(0), Some(44))
        );
        let s = |p: &str| v.pointer(p).and_then(Value::as_str);
        assert_eq!(s("/verified/seal/keyId"), Some("urn:k:seal"));
        assert_eq!(s("/verified/decisions/0/eventId"), Some("urn:e:5"));
        assert_eq!(s("/verified/decisions/0/evidence/0"), Some("sha256:aa"));
        assert_eq!(s("/verified/decisions/0/evidence/1"), Some("deploy"));
        assert_eq!(s("/verified/decisions/1/sequence"), Some("6"));
        assert_eq!(
            s("/verified/decisions/0/command/actionId"),
            Some("urn:c:grant")
        );
        assert_eq!(
            s("/verified/decisions/0/command/signingHash"),
            Some("sha256:cc")
        );
        assert_eq!(
            v.pointer("/verified/decisions/1/command"),
            Some(&Value::Null)
        );
        assert_eq!(
            v.pointer("/verified/decisions/1/human"),
            Some(&Value::Bool(true))
        );
        assert!(
            matches!(v.pointer("/verified/decisions/1/evidence"), Some(Value::Array(e)) if e.is_empty())
        );
    }

    #[test]
    fn a_refusal_names_the_event_or_says_why_without_one() {
        use wasm_core::audit::EventFailure;
        let e = AuditError::Event {
            at: Box::new(at(12, "9")),
            failure: Box::new(EventFailure::Duplicate),
        };
        let v = json::parse(audit_json(&Err(e)).as_bytes()).expect("JSON");
        let s = |p: &str| v.pointer(p).and_then(Value::as_str);
        assert_eq!(s("/refused/at/eventId"), Some("urn:e:9"));
        assert_eq!(s("/refused/at/groupId"), Some("urn:g:1"));
        assert_eq!(s("/refused/reason"), Some("its Event id appears twice"));
        assert!(
            matches!(v.pointer("/refused/at/line"), Some(Value::Number(n)) if n.as_safe_u64() == Some(12))
        );
        // Not an Event's failure: no Event named, the verifier's own words.
        let v = json::parse(verify_audit_with(b"{}", &mut |_, _| {}).as_bytes()).expect("JSON");
        assert_eq!(v.pointer("/refused/at"), Some(&Value::Null));
        assert!(
            v.pointer("/refused/reason")
                .and_then(Value::as_str)
                .is_some_and(|r| r.starts_with("not an audit bundle")),
            "{v:?}"
        );
    }

    #[test]
    fn progress_is_told_at_most_once_a_hundredth() {
        let heard = |total: usize| {
            let mut heard = Vec::new();
            let mut record = |d, t| heard.push((d, t));
            let mut step = by_hundredths(&mut record);
            for done in 1..=total {
                step(done, total);
            }
            drop(step);
            heard
        };
        let big = heard(1000);
        assert_eq!(big.len(), 100);
        assert_eq!(big.first(), Some(&(10, 1000)));
        assert_eq!(big.last(), Some(&(1000, 1000)));
        // A small bundle: every line is a hundredth or more.
        assert_eq!(heard(3), [(1, 3), (2, 3), (3, 3)]);
        // A bundle the verifier stops at before any Event: nothing to tell.
        let mut told = 0;
        verify_audit_with(b"{}\n", &mut |_, _| told += 1);
        assert_eq!(told, 0);
    }
}
