//! The three official bundles as tests: natively from `MWP_PROTOCOL_DIR` (default
//! `../shared/protocol` beside the workspace); in Chromium from the copy embedded at build time
//! (feature `embedded-bundle`).

#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use wasm_core::conformance::{BundleReport, run_admission, run_cryptography, run_structural};

#[cfg(not(target_arch = "wasm32"))]
fn read(path: &str) -> Result<Vec<u8>, String> {
    let root = std::env::var("MWP_PROTOCOL_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/protocol").into());
    std::fs::read(std::path::Path::new(&root).join(path)).map_err(|e| format!("{path}: {e}"))
}

#[cfg(target_arch = "wasm32")]
fn read(path: &str) -> Result<Vec<u8>, String> {
    wasm_core::conformance::embedded::read(path)
}

fn show(r: &BundleReport) {
    #[cfg(target_arch = "wasm32")]
    wasm_bindgen_test::console_log!("{r}");
    #[cfg(not(target_arch = "wasm32"))]
    println!("{r}");
}

macro_rules! cases {
    ($($name:ident $body:block)*) => {$(
        #[cfg_attr(not(target_arch = "wasm32"), test)]
        #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
        fn $name() $body
    )*};
}

cases! {
    agent_cards_need_an_organization_service_signer {
        // §6.4: an Agent Card's expected signer is any Organization service Principal. The
        // bundle's valid card re-signed by the registry service verifies; the same card signed
        // by the Agent's own (valid, registered) key is refused at key resolution.
        use wasm_core::crypto::{DocumentKind, SecretSeed, Stage, sign_document, verify};
        use wasm_core::crypto::registry::RegistryEvidence;
        use wasm_core::json::{self, Value};
        let registry = RegistryEvidence::from_fixture_json(
            &json::parse(&read("cryptography/keys/registry-valid.json").unwrap()).unwrap(),
        )
        .unwrap()
        .validate()
        .unwrap();
        let key = |name: &str| {
            let v = json::parse(&read(&format!("cryptography/keys/signing-{name}.json")).unwrap())
                .unwrap();
            let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap().to_owned();
            (s("/keyId"), SecretSeed::from_b64url(&s("/seed")).unwrap())
        };
        let card = read("cryptography/vectors/signed-documents/valid/agent-card.json").unwrap();
        let signed_by = |name: &str| {
            let (key_id, seed) = key(name);
            let mut doc = json::parse(&card).unwrap();
            sign_document(&mut doc, DocumentKind::AgentCard, &key_id, &seed).unwrap();
            json::to_string(&doc).into_bytes()
        };
        let by_service = verify(&signed_by("organization-registry"), DocumentKind::AgentCard, &registry)
            .unwrap();
        assert_eq!(by_service.principal.actor_type.as_str(), "service");
        let by_agent = verify(&signed_by("developer-one"), DocumentKind::AgentCard, &registry)
            .expect_err("an Agent may not sign its own card");
        assert_eq!(by_agent.stage, Stage::KeyResolution, "{by_agent}");
        assert!(by_agent.reason.contains("service"), "{by_agent}");
        // And a human's key is refused the same way.
        let by_human = verify(&signed_by("mission-owner"), DocumentKind::AgentCard, &registry)
            .expect_err("a human may not sign an Agent Card");
        assert_eq!(by_human.stage, Stage::KeyResolution, "{by_human}");
    }
    cryptography_bundle_62_of_62 {
        let r = run_cryptography(&read);
        show(&r);
        assert_eq!((r.passed, r.failed()), (62, 0), "{r}");
    }
    structural_bundle_58_of_58 {
        let r = run_structural(&read);
        show(&r);
        assert_eq!((r.passed, r.failed()), (58, 0), "{r}");
    }
    admission_bundle_30_of_30 {
        let r = run_admission(&read);
        show(&r);
        assert_eq!((r.passed, r.failed()), (30, 0), "{r}");
    }
    deferred_r_order_check_still_reports_stage_3 {
        // A mixed-order R must fail at signature-envelope even when a later stage would fail
        // too (here: the key is unknown, stage 4; and the payload is tampered, stage 6).
        use wasm_core::crypto::{DocumentKind, Stage, registry::RegistryEvidence, verify};
        let registry = RegistryEvidence::from_fixture_json(
            &wasm_core::json::parse(&read("cryptography/keys/registry-valid.json").unwrap()).unwrap(),
        )
        .unwrap()
        .validate();
        let doc = read("cryptography/vectors/signed-documents/invalid/command-signature-r-mixed-order.json").unwrap();
        let text = String::from_utf8(doc).unwrap();
        let unknown_key = text.replace("crypto-vector-rfc8032-1\"", "crypto-vector-unknown\"");
        assert_ne!(unknown_key, text);
        let tampered = text.replace("payload-signature-must-be-covered", "payload-signature-tampered");
        assert_ne!(tampered, text);
        for t in [text, unknown_key, tampered] {
            let e = verify(t.as_bytes(), DocumentKind::Command, &registry).unwrap_err();
            assert_eq!(e.stage, Stage::SignatureEnvelope, "{e}");
        }
    }
    a_tampered_bundle_is_reported_not_passed {
        // Flip one byte of one declared artifact: the runner must refuse the bundle.
        let tampered = |path: &str| -> Result<Vec<u8>, String> {
            let mut b = read(path)?;
            if path == "cryptography/keys/registry-valid.json"
                && let Some(x) = b.iter_mut().find(|c| **c == b'Z')
            {
                *x = b'z';
            }
            Ok(b)
        };
        let r = run_cryptography(&tampered);
        assert!(r.failures.iter().any(|f| f.case == "bundle integrity" && f.got.contains("registry-valid.json")), "{r}");
    }
}
