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

const SEED: [u8; 32] = [5; 32];

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
    sign_document(&mut doc, DocumentKind::Command, "urn:k:owner", &SEED).unwrap();
    let registry = RegistryEvidence {
        organization_id: "urn:org:acme".into(),
        bindings: vec![BindingRecord {
            key_id: "urn:k:owner".into(),
            principal_type: "human".into(),
            principal_id: "urn:h:owner".into(),
            algorithm: "Ed25519".into(),
            public_key: b64url_encode(&wasm_core::crypto::ed25519::public_key_of(&SEED)),
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

cases! {
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
}
