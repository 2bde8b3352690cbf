//! First admission and historical replay beyond the bundle's fixture adapter (S-8..S-15): a real
//! append-or-return-existing log, concurrent winners, typed log failures, and backdating.

#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

macro_rules! cases {
    ($($name:ident $body:block)*) => {$(
        #[cfg_attr(not(target_arch = "wasm32"), test)]
        #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
        fn $name() $body
    )*};
}

use wasm_core::admission::{
    AdmissionLog, AdmissionReason, AppendOutcome, LookupOutcome, MemoryLog, TrustedContext,
    candidate_record, first_admission, historical_replay,
};
use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence, StatusRecord};
use wasm_core::crypto::{DocumentKind, Verified, sign_document, verify};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Value};
use wasm_core::model::common::{Actor, ActorType};
use wasm_core::model::first_admission_record::FirstAdmissionRecord;

fn seed() -> wasm_core::crypto::SecretSeed {
    wasm_core::crypto::SecretSeed::take(&mut [5; 32])
}

fn service(id: &str) -> Actor {
    Actor::new(ActorType::Service, id)
}

/// A signed Command at `issued_at`, verified against a key valid from 07-01 until 08-01.
fn verified(issued_at: &str, action: &str) -> Verified {
    let text = format!(
        r#"{{"protocolVersion":"0.1","actionId":"urn:uuid:{action}","actor":{{"type":"human","id":"urn:h:owner"}},
        "groupId":"urn:g:1","membershipEpoch":1,"kind":"mission.cancel","correlationId":"urn:uuid:c",
        "issuedAt":"{issued_at}","payload":{{"reason":"test"}}}}"#
    );
    let mut doc = json::parse_str(&text).unwrap();
    let seed = seed();
    sign_document(&mut doc, DocumentKind::Command, "urn:k:owner", &seed).unwrap();
    let registry = RegistryEvidence {
        organization_id: "urn:org:acme".into(),
        bindings: vec![BindingRecord {
            key_id: "urn:k:owner".into(),
            principal_type: "human".into(),
            principal_id: "urn:h:owner".into(),
            algorithm: "Ed25519".into(),
            public_key: b64url_encode(&seed.public_key()),
            valid_from: "2026-07-01T00:00:00Z".into(),
            validity_history: vec![StatusRecord {
                sequence: 1,
                recorded_at: "2026-07-01T00:00:00Z".into(),
                valid_until: Some("2026-08-01T00:00:00Z".into()),
                revoked_at: None,
            }],
        }],
    }
    .validate()
    .unwrap();
    verify(
        json::to_string(&doc).as_bytes(),
        DocumentKind::Command,
        &registry,
    )
    .unwrap()
}

fn ctx(id: &str, at: &str) -> TrustedContext {
    TrustedContext {
        admission_record_id: id.into(),
        trusted_accepted_at: at.into(),
        accepted_by: service("urn:svc:admission"),
    }
}

/// A log whose every answer is fixed, for the fail-closed paths.
struct Broken(LookupOutcome, AppendOutcome);

impl AdmissionLog for Broken {
    fn lookup(&mut self, _: &str, _: &str) -> LookupOutcome {
        self.0.clone()
    }
    fn append_or_return_existing(&mut self, _: &str, _: &str, _: &[u8]) -> AppendOutcome {
        self.1.clone()
    }
}

/// A log that commits whatever it is given and answers as `service`; with `reformat` it returns
/// the same record re-serialized with a space (equal value, other bytes), which forces the full
/// validation of the returned bytes. `seen` keeps the candidate bytes it was handed.
struct Echo {
    service: Actor,
    reformat: bool,
    seen: Option<Vec<u8>>,
}

impl Echo {
    fn new(service: Actor, reformat: bool) -> Echo {
        Echo {
            service,
            reformat,
            seen: None,
        }
    }
}

impl AdmissionLog for Echo {
    fn lookup(&mut self, _: &str, _: &str) -> LookupOutcome {
        LookupOutcome::AuthoritativeAbsence
    }
    fn append_or_return_existing(&mut self, _: &str, _: &str, candidate: &[u8]) -> AppendOutcome {
        self.seen = Some(candidate.to_vec());
        let mut record = candidate.to_vec();
        if self.reformat {
            record.insert(1, b' ');
        }
        AppendOutcome::Committed {
            record,
            authenticated_service: self.service.clone(),
        }
    }
}

/// First admission of `v` under `cx`, once through our own bytes (fast path) and once through
/// re-serialized bytes (full validation); both results, as their complete debug text.
fn both_paths(v: &Verified, cx: &TrustedContext, answering: &Actor) -> (String, String) {
    let run = |reformat| {
        let mut log = Echo::new(answering.clone(), reformat);
        format!("{:?}", first_admission(v, &mut log, &mut || cx.clone()))
    };
    (run(false), run(true))
}

cases! {
    a_record_is_self_anchoring_only_when_it_is_the_document_or_signs_its_bytes {
        // S-14: a log that returns the admitted document itself as its record is refused as
        // `event-self-anchoring`; a record is that only when it equals the document, or when
        // it is a signed object whose signing hash (its JCS without `signature`) is the
        // document's. Anything else that is not a record fails the record schema instead.
        use simulation::harness::{Envelope, Harness};
        use wasm_core::authority::{Micros, Submitted};
        // A Signed Event of a Group Authority, verified.
        let mut h = Harness::new(&[("a1", ActorType::Agent)]);
        let t = Micros::parse("2026-07-15T08:00:00Z").unwrap();
        let card = wasm_core::authority::handlers::payload(vec![
            ("agentId", Value::string(h.id("a1"))),
            ("version", Value::from(1u64)),
            ("displayName", Value::string("a1")),
            ("owner", Value::string("urn:test:human:ops")),
            ("publicKey", Value::string("AAAA")),
            ("capabilities", Value::Array(vec![])),
            ("issuedAt", Value::string(t.format())),
            ("signature", Value::string("test")),
        ]);
        let submitted = h
            .submit(
                "organization-registry",
                "ext.missionweaveprotocol.registry.agent_card_register",
                &Envelope::default(),
                wasm_core::authority::handlers::payload(vec![("card", Value::Object(card))]),
                t,
            )
            .unwrap();
        let Submitted::Appended(events) = submitted else { panic!("appended") };
        let event = json::to_string(&events[0].value);
        let v = verify(event.as_bytes(), DocumentKind::Event, &h.registry).unwrap();
        let found = |record: &Value| {
            let mut log = Broken(
                LookupOutcome::Found {
                    record: json::to_string(record).into_bytes(),
                    authenticated_service: service("urn:svc:admission"),
                },
                AppendOutcome::Unavailable,
            );
            first_admission(&v, &mut log, &mut || ctx("urn:adm:a", "2026-07-15T00:00:05Z"))
                .expect_err("never admitted")
                .reason
        };
        // The document itself.
        assert_eq!(found(&v.document), AdmissionReason::EventSelfAnchoring);
        // The same signing bytes under another signature value.
        let mut resigned = v.document.clone();
        if let Value::Object(o) = &mut resigned
            && let Some(Value::Object(sig)) = o.get_mut("signature")
        {
            sig.insert("value", Value::string("AAAA"));
        }
        assert_eq!(found(&resigned), AdmissionReason::EventSelfAnchoring);
        // The signing bytes without any `signature` member: not a signed object, so the
        // record schema refuses it.
        let mut unsigned = v.document.clone();
        if let Value::Object(o) = &mut unsigned {
            o.remove("signature");
        }
        assert_eq!(found(&unsigned), AdmissionReason::RecordSchemaInvalid);
        // Another signed document (another signing hash).
        let other = verified("2026-07-15T00:00:01Z", "other");
        assert_eq!(found(&other.document), AdmissionReason::RecordSchemaInvalid);
        // A Command is never refused as self-anchoring, even when its log returns it.
        let command = verified("2026-07-15T00:00:02Z", "command");
        let mut log = Broken(
            LookupOutcome::Found {
                record: json::to_string(&command.document).into_bytes(),
                authenticated_service: service("urn:svc:admission"),
            },
            AppendOutcome::Unavailable,
        );
        let err = first_admission(&command, &mut log, &mut || ctx("urn:adm:c", "2026-07-15T00:00:05Z"))
            .expect_err("not a record");
        assert_eq!(err.reason, AdmissionReason::RecordSchemaInvalid);
    }
    first_admission_appends_once_then_is_idempotent {
        let v = verified("2026-07-15T00:00:00Z", "1");
        let mut log = MemoryLog::new(service("urn:svc:admission"));
        let a = first_admission(&v, &mut log, &mut || ctx("urn:adm:1", "2026-07-15T00:00:05Z")).unwrap();
        assert_eq!(a.admission_record_id, "urn:adm:1");
        assert_eq!(log.len(), 1);
        // A retry finds the record; the trusted context is not even asked for.
        let b = first_admission(&v, &mut log, &mut || panic!("no new trusted time on retry")).unwrap();
        assert_eq!((b.admission_record_id.as_str(), log.len()), ("urn:adm:1", 1));
        // The record has exactly the nine members, no signature (S-8).
        let Value::Object(o) = &a.record else { panic!() };
        assert_eq!(o.len(), 9);
        assert!(!o.contains_key("signature"));
        assert!(!log.is_empty());
        // Historical replay validates the same record and never appends.
        assert_eq!(historical_replay(&v, &mut log).unwrap().admission_record_id, "urn:adm:1");
    }
    a_concurrent_winner_is_accepted_after_validation {
        let v = verified("2026-07-15T00:00:00Z", "2");
        let mut log = MemoryLog::new(service("urn:svc:admission"));
        // Another admitter wins the race with its own id and time.
        let winner = candidate_record(&v, &ctx("urn:adm:winner", "2026-07-15T00:00:01Z"));
        let bytes = json::to_string(&winner);
        assert!(matches!(
            log.append_or_return_existing(&v.organization_id, &v.signing_hash, bytes.as_bytes()),
            AppendOutcome::Committed { .. }
        ));
        // Our lookup raced before the append: simulate by a log that says "absent" first.
        struct Racy(MemoryLog, bool);
        impl AdmissionLog for Racy {
            fn lookup(&mut self, o: &str, h: &str) -> LookupOutcome {
                if self.1 { self.1 = false; LookupOutcome::AuthoritativeAbsence } else { self.0.lookup(o, h) }
            }
            fn append_or_return_existing(&mut self, o: &str, h: &str, c: &[u8]) -> AppendOutcome {
                self.0.append_or_return_existing(o, h, c)
            }
        }
        let mut racy = Racy(log, true);
        let a = first_admission(&v, &mut racy, &mut || ctx("urn:adm:loser", "2026-07-15T00:00:02Z")).unwrap();
        assert_eq!(a.admission_record_id, "urn:adm:winner");
        assert_eq!(a.trusted_accepted_at.as_str(), "2026-07-15T00:00:01Z");
    }
    backdated_documents_are_refused_at_trusted_time {
        // Signed "before" expiry, presented after it: the trusted time decides (S-11).
        let v = verified("2026-07-31T23:59:59Z", "3");
        let mut log = MemoryLog::new(service("urn:svc:admission"));
        let e = first_admission(&v, &mut log, &mut || ctx("urn:adm:3", "2026-08-01T00:00:00Z")).unwrap_err();
        assert_eq!(e.reason, AdmissionReason::TrustedTimeOutsideKeyInterval);
        assert!(log.is_empty(), "no candidate was appended");
        let e = first_admission(&v, &mut log, &mut || ctx("urn:adm:3", "2026-08-01t00:00:00")).unwrap_err();
        assert_eq!(e.reason, AdmissionReason::MalformedTrustedTime);
    }
    an_admission_record_id_is_never_reused_across_keys {
        let mut log = MemoryLog::new(service("urn:svc:admission"));
        let a = verified("2026-07-15T00:00:00Z", "4");
        let b = verified("2026-07-15T00:00:00Z", "5");
        first_admission(&a, &mut log, &mut || ctx("urn:adm:same", "2026-07-15T00:00:05Z")).unwrap();
        let e = first_admission(&b, &mut log, &mut || ctx("urn:adm:same", "2026-07-15T00:00:06Z")).unwrap_err();
        assert_eq!(e.reason, AdmissionReason::RecordConflict);
    }
    a_record_from_another_service_or_principal_is_refused {
        let v = verified("2026-07-15T00:00:00Z", "6");
        let good = json::to_string(&candidate_record(&v, &ctx("urn:adm:6", "2026-07-15T00:00:05Z"))).into_bytes();
        let mut other_service = Broken(
            LookupOutcome::Found { record: good.clone(), authenticated_service: service("urn:svc:other") },
            AppendOutcome::Indeterminate,
        );
        assert_eq!(historical_replay(&v, &mut other_service).unwrap_err().reason, AdmissionReason::RecordBindingMismatch);
        let forged = String::from_utf8(good).unwrap().replace("urn:h:owner", "urn:h:someone-else");
        let mut other_principal = Broken(
            LookupOutcome::Found { record: forged.into_bytes(), authenticated_service: service("urn:svc:admission") },
            AppendOutcome::Indeterminate,
        );
        assert_eq!(historical_replay(&v, &mut other_principal).unwrap_err().reason, AdmissionReason::RecordBindingMismatch);
        let mut garbage = Broken(
            LookupOutcome::Found { record: b"{\"a\":1,\"a\":2}".to_vec(), authenticated_service: service("urn:svc:admission") },
            AppendOutcome::Indeterminate,
        );
        assert_eq!(historical_replay(&v, &mut garbage).unwrap_err().reason, AdmissionReason::RecordSchemaInvalid);
    }
    every_typed_log_failure_fails_closed {
        let v = verified("2026-07-15T00:00:00Z", "7");
        for (lookup, reason) in [
            (LookupOutcome::Unavailable, AdmissionReason::LogUnavailable),
            (LookupOutcome::Indeterminate, AdmissionReason::LogIndeterminate),
            (LookupOutcome::Unauthenticated, AdmissionReason::LogAuthenticationFailed),
            (LookupOutcome::IntegrityFailed, AdmissionReason::AppendIntegrityNotEstablished),
        ] {
            let mut log = Broken(lookup, AppendOutcome::Indeterminate);
            assert_eq!(first_admission(&v, &mut log, &mut || ctx("urn:adm:7", "2026-07-15T00:00:05Z")).unwrap_err().reason, reason);
        }
        for (append, reason) in [
            (AppendOutcome::CommitFailed, AdmissionReason::CommitFailed),
            (AppendOutcome::Unavailable, AdmissionReason::LogUnavailable),
            (AppendOutcome::Conflict, AdmissionReason::RecordConflict),
            (AppendOutcome::IntegrityFailed, AdmissionReason::AppendIntegrityNotEstablished),
        ] {
            let mut log = Broken(LookupOutcome::AuthoritativeAbsence, append);
            let e = first_admission(&v, &mut log, &mut || ctx("urn:adm:7", "2026-07-15T00:00:05Z")).unwrap_err();
            assert_eq!(e.reason, reason);
            assert_eq!(e.wire_code().as_str(), "AUTH_INVALID_SIGNATURE");
        }
    }
    the_candidate_bytes_are_the_strict_json_of_the_candidate_record {
        let v = verified("2026-07-15T00:00:00Z", "8");
        let odd = [
            "urn:adm:8",
            "urn:adm:quote\"back\\slash",
            "urn:adm:ctl\n\t\r\u{1}\u{1f}\u{7f}",
            "urn:adm:é-€-😀",
            "",
        ];
        for id in odd {
            for service_id in ["urn:svc:admission", "urn:svc:\"odd\"\u{0}"] {
                let cx = TrustedContext {
                    admission_record_id: id.into(),
                    trusted_accepted_at: "2026-07-15T00:00:05.123456+02:00".into(),
                    accepted_by: service(service_id),
                };
                let mut log = Echo::new(cx.accepted_by.clone(), false);
                let _ = first_admission(&v, &mut log, &mut || cx.clone());
                let expected = json::to_string(&candidate_record(&v, &cx));
                assert_eq!(String::from_utf8(log.seen.unwrap()).unwrap(), expected, "{id:?}");
            }
        }
    }
    the_fast_path_admits_exactly_what_full_validation_admits {
        let v = verified("2026-07-15T00:00:00Z", "9");
        let svc = service("urn:svc:admission");
        let (fast, slow) = both_paths(&v, &ctx("urn:adm:9", "2026-07-15T00:00:05.5Z"), &svc);
        assert!(fast.starts_with("Ok("), "{fast}");
        assert_eq!(fast, slow);
        // The Admitted record is the parsed record, member for member.
        let mut log = Echo::new(svc.clone(), false);
        let a = first_admission(&v, &mut log, &mut || ctx("urn:adm:9", "2026-07-15T00:00:05.5Z")).unwrap();
        assert_eq!(a.record, json::parse(&log.seen.unwrap()).unwrap());
        let typed: FirstAdmissionRecord = wasm_core::model::from_value(&a.record, true).unwrap();
        assert_eq!(typed.trusted_accepted_at, a.trusted_accepted_at);
        assert_eq!(typed.accepted_by.0, a.accepted_by);
        assert_eq!(typed.admission_record_id.0, a.admission_record_id);
    }
    the_fast_path_refuses_exactly_what_full_validation_refuses {
        let v = verified("2026-07-15T00:00:00Z", "10");
        let svc = service("urn:svc:admission");
        let long = format!("urn:adm:{}", "x".repeat(600));
        let mut human = ctx("urn:adm:10", "2026-07-15T00:00:05Z");
        human.accepted_by = Actor::new(ActorType::Human, "urn:svc:admission");
        let cases = [
            // Another service answered for the log: acceptedBy is not the authenticated one.
            (ctx("urn:adm:10", "2026-07-15T00:00:05Z"), service("urn:svc:other"), "RecordBindingMismatch"),
            // The trusted context itself breaks the record schema.
            (ctx("not an id", "2026-07-15T00:00:05Z"), svc.clone(), "RecordSchemaInvalid"),
            (ctx("urn:adm:%zz", "2026-07-15T00:00:05Z"), svc.clone(), "RecordSchemaInvalid"),
            (ctx(&long, "2026-07-15T00:00:05Z"), svc.clone(), "RecordSchemaInvalid"),
            (human.clone(), human.accepted_by.clone(), "RecordSchemaInvalid"),
        ];
        for (cx, answering, reason) in cases {
            let (fast, slow) = both_paths(&v, &cx, &answering);
            assert!(fast.contains(reason), "{fast}");
            assert_eq!(fast, slow);
        }
        // Identifiers outside the plain `scheme:path` shape still go through the full check.
        for id in ["urn:adm:%41", "https://example.com/adm/1?x=1#f", "urn:adm:a?b", "HTTP://[::1]:80/a"] {
            let (fast, slow) = both_paths(&v, &ctx(id, "2026-07-15T00:00:05Z"), &svc);
            assert!(fast.starts_with("Ok("), "{id}: {fast}");
            assert_eq!(fast, slow);
        }
    }
    a_log_answering_other_bytes_is_validated_in_full {
        let v = verified("2026-07-15T00:00:00Z", "11");
        let svc = service("urn:svc:admission");
        let cx = ctx("urn:adm:11", "2026-07-15T00:00:05Z");
        let ours = json::to_string(&candidate_record(&v, &cx));
        /// Commits, but returns `record` instead of the candidate.
        struct Swapping(Vec<u8>, Actor);
        impl AdmissionLog for Swapping {
            fn lookup(&mut self, _: &str, _: &str) -> LookupOutcome {
                LookupOutcome::AuthoritativeAbsence
            }
            fn append_or_return_existing(&mut self, _: &str, _: &str, _: &[u8]) -> AppendOutcome {
                AppendOutcome::Committed { record: self.0.clone(), authenticated_service: self.1.clone() }
            }
        }
        for (from, to, member) in [
            ("urn:k:owner", "urn:k:other", "keyId"),
            ("urn:h:owner", "urn:h:someone-else", "principal"),
            ("urn:org:acme", "urn:org:other", "organizationId"),
        ] {
            let swapped = ours.replace(from, to);
            assert_ne!(swapped, ours);
            let mut log = Swapping(swapped.clone().into_bytes(), svc.clone());
            let e = first_admission(&v, &mut log, &mut || cx.clone()).unwrap_err();
            assert_eq!(e.reason, AdmissionReason::RecordBindingMismatch);
            assert!(e.detail.contains(member), "{member}: {}", e.detail);
            // The same error as replaying that record (the unchanged full validation).
            let mut found = Broken(
                LookupOutcome::Found { record: swapped.into_bytes(), authenticated_service: svc.clone() },
                AppendOutcome::Indeterminate,
            );
            assert_eq!(historical_replay(&v, &mut found).unwrap_err(), e);
        }
        // A concurrent winner's record (other id, other time) is validated and accepted.
        let winner = json::to_string(&candidate_record(&v, &ctx("urn:adm:winner", "2026-07-15T00:00:01Z")));
        let mut log = Swapping(winner.into_bytes(), svc.clone());
        let a = first_admission(&v, &mut log, &mut || cx.clone()).unwrap();
        assert_eq!(a.admission_record_id, "urn:adm:winner");
        // Garbage is a schema failure, as before.
        let mut log = Swapping(b"{}".to_vec(), svc);
        let e = first_admission(&v, &mut log, &mut || cx.clone()).unwrap_err();
        assert_eq!(e.reason, AdmissionReason::RecordSchemaInvalid);
    }
    the_memory_log_refuses_id_reuse_among_many_records {
        let v = verified("2026-07-15T00:00:00Z", "12");
        let mut log = MemoryLog::new(service("urn:svc:admission"));
        const N: usize = 5_000;
        for i in 0..N {
            let record = json::to_string(&candidate_record(&v, &ctx(&format!("urn:adm:{i}"), "2026-07-15T00:00:05Z")));
            let hash = format!("sha256:{i:064x}");
            assert!(matches!(
                log.append_or_return_existing(&v.organization_id, &hash, record.as_bytes()),
                AppendOutcome::Committed { .. }
            ));
        }
        assert_eq!(log.len(), N);
        // Any id already used under another logical key is refused (S-12), first to last.
        for i in [0, 1, N / 2, N - 1] {
            let e = first_admission(&v, &mut log, &mut || ctx(&format!("urn:adm:{i}"), "2026-07-15T00:00:06Z")).unwrap_err();
            assert_eq!(e.reason, AdmissionReason::RecordConflict);
        }
        assert_eq!(log.len(), N, "a refused candidate is not stored");
        // The same logical key again: the stored record comes back, whatever id is offered.
        let hash = format!("sha256:{:064x}", 7);
        let again = json::to_string(&candidate_record(&v, &ctx("urn:adm:fresh", "2026-07-15T00:00:06Z")));
        let AppendOutcome::Existing { record, .. } =
            log.append_or_return_existing(&v.organization_id, &hash, again.as_bytes())
        else {
            panic!("expected the existing record")
        };
        assert_eq!(json::parse(&record).unwrap().pointer("/admissionRecordId").unwrap().as_str(), Some("urn:adm:7"));
        // ... unless it binds another key: a conflict.
        let other_key = again.replace("urn:k:owner", "urn:k:other");
        assert!(matches!(
            log.append_or_return_existing(&v.organization_id, &hash, other_key.as_bytes()),
            AppendOutcome::Conflict
        ));
        // A fresh id is admitted, once; its id is then taken too.
        let a = first_admission(&v, &mut log, &mut || ctx("urn:adm:fresh", "2026-07-15T00:00:06Z")).unwrap();
        assert_eq!((a.admission_record_id.as_str(), log.len()), ("urn:adm:fresh", N + 1));
        let w = verified("2026-07-15T00:00:00Z", "13");
        let e = first_admission(&w, &mut log, &mut || ctx("urn:adm:fresh", "2026-07-15T00:00:07Z")).unwrap_err();
        assert_eq!(e.reason, AdmissionReason::RecordConflict);
        let b = first_admission(&w, &mut log, &mut || ctx("urn:adm:w", "2026-07-15T00:00:07Z")).unwrap();
        assert_eq!((b.admission_record_id.as_str(), log.len()), ("urn:adm:w", N + 2));
    }
}

/// The cost of one first admission as the server pays it (a map-backed log that stages the
/// candidate and answers `Committed` with it), for distinct verified Commands. Run with
/// `cargo test -p wasm-core --release --test admission -- --ignored --nocapture`.
#[cfg(not(target_arch = "wasm32"))]
#[test]
#[ignore = "timing; run in release"]
fn first_admission_cost() {
    use simulation::harness::{Envelope, Harness};
    use std::collections::HashMap;
    use wasm_core::authority::Micros;

    struct MapLog(HashMap<(String, String), Vec<u8>>, Actor);
    impl AdmissionLog for MapLog {
        fn lookup(&mut self, o: &str, h: &str) -> LookupOutcome {
            match self.0.get(&(o.to_owned(), h.to_owned())) {
                Some(r) => LookupOutcome::Found {
                    record: r.clone(),
                    authenticated_service: self.1.clone(),
                },
                None => LookupOutcome::AuthoritativeAbsence,
            }
        }
        fn append_or_return_existing(&mut self, o: &str, h: &str, c: &[u8]) -> AppendOutcome {
            self.0.insert((o.to_owned(), h.to_owned()), c.to_vec());
            AppendOutcome::Committed {
                record: c.to_vec(),
                authenticated_service: self.1.clone(),
            }
        }
    }

    const N: usize = 20_000;
    let mut h = Harness::new(&[("owner", ActorType::Human)]);
    let now = Micros::parse("2026-07-15T00:00:00Z").unwrap();
    let env = Envelope {
        group_id: Some("urn:missionweaveprotocol:group:g".into()),
        membership_epoch: Some(1),
        ..Envelope::default()
    };
    let commands: Vec<Verified> = (0..N)
        .map(|_| {
            let mut payload = json::Object::new();
            payload.insert("reason", Value::string("timing"));
            let bytes = h.command("owner", "mission.cancel", &env, payload, now);
            verify(&bytes, DocumentKind::Command, &h.registry).unwrap()
        })
        .collect();
    let svc = h.actor("group-gateway");
    for round in 0..5 {
        let mut log = MapLog(HashMap::with_capacity(N), svc.clone());
        let t = std::time::Instant::now();
        for (i, v) in commands.iter().enumerate() {
            let id = format!(
                "urn:missionweaveprotocol:admission-record:{}",
                &v.signing_hash[7..]
            );
            let at = Micros(now.0 + i as i64).format();
            let mut trusted = || TrustedContext {
                admission_record_id: id.clone(),
                trusted_accepted_at: at.clone(),
                accepted_by: svc.clone(),
            };
            std::hint::black_box(first_admission(v, &mut log, &mut trusted).unwrap());
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / N as f64;
        println!("round {round}: {us:.2} µs per first_admission ({N} distinct Commands)");
    }
}
