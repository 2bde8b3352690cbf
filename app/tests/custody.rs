//! Key custody without WebCrypto: the key file format (what IndexedDB holds and what export
//! downloads), its strict parser, the identity rules, and the seed check after decryption.
//! (Encryption itself is WebCrypto's and runs in the browser test.)

use app::custody::keyfile::{
    self, ITERATIONS, KeyFile, KeyFileError, MAX_ITERATIONS, MIN_ITERATIONS, dev_identity,
    passphrase_ok,
};
use wasm_core::crypto::SecretSeed;

fn seed() -> SecretSeed {
    let mut b = [5u8; 32];
    SecretSeed::take(&mut b)
}

fn file() -> KeyFile {
    let s = seed();
    let (principal_id, key_id) = dev_identity("alice", &s.public_key()).expect("identity");
    KeyFile {
        principal_id,
        key_id,
        public_key: s.public_key(),
        created_at: "2026-12-02T10:00:00Z".into(),
        iterations: ITERATIONS,
        salt: vec![1; 16],
        iv: vec![2; 12],
        ciphertext: vec![3; 48],
    }
}

#[test]
fn the_key_file_round_trips_exactly() {
    let f = file();
    let text = f.to_json();
    assert_eq!(KeyFile::parse(&text), Ok(f.clone()));
    // The documented member order, and no seed in clear.
    assert!(text.starts_with(
        r#"{"format":"missionweave-console-key","version":1,"principalId":"urn:missionweaveprotocol:human:alice","#
    ));
    let seed_b64 = seed().to_b64url();
    assert!(!text.contains(seed_b64.as_str()));
    // Serializing the parsed file gives the same text.
    assert_eq!(KeyFile::parse(&text).expect("parse").to_json(), text);
}

#[test]
fn malformed_or_weak_files_are_refused() {
    let good = file().to_json();
    let cases: Vec<(String, KeyFileError)> = vec![
        ("not json".into(), KeyFileError::NotJson(String::new())),
        (
            good.replace("missionweave-console-key", "other"),
            KeyFileError::Format,
        ),
        (
            good.replace("\"version\":1", "\"version\":2"),
            KeyFileError::Version(2),
        ),
        (good.replace("600000", "1000"), KeyFileError::WeakKdf(1000)),
        (
            good.replace("\"PBKDF2\"", "\"scrypt\""),
            KeyFileError::Field("/kdf"),
        ),
        (
            good.replace("\"AES-GCM\"", "\"AES-CBC\""),
            KeyFileError::Field("/cipher/name"),
        ),
        (
            good.replace(r#""iv":"AgICAgICAgICAgIC""#, r#""iv":"AgIC""#),
            KeyFileError::Field("/cipher/iv"),
        ),
        (
            good.replace(r#""createdAt":"2026-12-02T10:00:00Z","#, ""),
            KeyFileError::Field("/createdAt"),
        ),
    ];
    for (text, want) in cases {
        let got = KeyFile::parse(&text);
        match (&got, &want) {
            (Err(KeyFileError::NotJson(_)), KeyFileError::NotJson(_)) => {}
            _ => assert_eq!(got, Err(want.clone()), "{text}"),
        }
        if let Err(e) = got {
            assert!(!e.to_string().is_empty());
        }
    }
    // Duplicate members are refused by the strict parser, like every protocol input.
    let dup = good.replacen("{\"format\"", "{\"format\":\"x\",\"format\"", 1);
    assert!(matches!(
        KeyFile::parse(&dup),
        Err(KeyFileError::NotJson(_))
    ));
    const { assert!(MIN_ITERATIONS < ITERATIONS) };
}

#[test]
fn a_file_asking_for_more_than_the_most_iterations_is_refused_before_any_derivation() {
    // A hostile file must not make the tab run PBKDF2 for minutes: the count is checked when the
    // file is read, before WebCrypto derives anything.
    let with = |n: u64| file().to_json().replace("600000", &n.to_string());
    let at_most = KeyFile::parse(&with(u64::from(MAX_ITERATIONS))).expect("at the bound");
    assert_eq!(at_most.iterations, MAX_ITERATIONS);
    // Written back unchanged.
    assert_eq!(at_most.to_json(), with(u64::from(MAX_ITERATIONS)));
    let past = MAX_ITERATIONS + 1;
    let refused = KeyFile::parse(&with(u64::from(past)));
    assert_eq!(refused, Err(KeyFileError::CostlyKdf(past)));
    assert_eq!(
        refused.err().map(|e| e.to_string()),
        Some("10000001 PBKDF2 iterations (at most 10000000)".to_owned())
    );
    // Far past it (still a u32), and past a u32: refused, never wrapped into range.
    assert_eq!(
        KeyFile::parse(&with(u64::from(u32::MAX))),
        Err(KeyFileError::CostlyKdf(u32::MAX))
    );
    assert_eq!(
        KeyFile::parse(&with(u64::from(u32::MAX) + 1)),
        Err(KeyFileError::Field("/kdf/iterations"))
    );
    const { assert!(ITERATIONS < MAX_ITERATIONS) };
}

#[test]
fn opening_checks_the_seed_against_the_public_key_and_wipes_the_plaintext() {
    let f = file();
    let mut plain = seed().expose().to_vec();
    let s = f.open(&mut plain).expect("the right seed");
    assert_eq!(s.public_key(), f.public_key);
    assert!(plain.iter().all(|b| *b == 0), "the plaintext is zeroized");
    let mut other = vec![6u8; 32];
    assert_eq!(f.open(&mut other).err(), Some(KeyFileError::KeyMismatch));
    let mut short = vec![5u8; 31];
    assert_eq!(f.open(&mut short).err(), Some(KeyFileError::KeyMismatch));
}

#[test]
fn the_aad_binds_the_ciphertext_to_its_identity() {
    let f = file();
    let mut g = f.clone();
    g.principal_id = "urn:missionweaveprotocol:human:mallory".into();
    assert_ne!(f.aad(), g.aad());
    let mut h = f.clone();
    h.key_id.push('x');
    assert_ne!(f.aad(), h.aad());
}

#[test]
fn development_identities_and_passphrases() {
    let pk = seed().public_key();
    let (p, k) = dev_identity("bob-2", &pk).expect("valid");
    assert_eq!(p, "urn:missionweaveprotocol:human:bob-2");
    assert!(k.starts_with("urn:missionweaveprotocol:key:bob-2-") && k.len() == 35 + 12);
    assert!(wasm_core::id::check_id(&p).is_ok() && wasm_core::id::check_id(&k).is_ok());
    // Another key gets another key ID.
    let mut other = [8u8; 32];
    let (_, k2) = dev_identity("bob-2", &SecretSeed::take(&mut other).public_key()).expect("ok");
    assert_ne!(k, k2);
    for bad in ["", "Bob", "bob smith", "-bob", "bob/x", &"a".repeat(41)] {
        assert!(dev_identity(bad, &pk).is_none(), "{bad:?}");
    }
    assert!(passphrase_ok("twelve chars"));
    assert!(!passphrase_ok("eleven char"));
    // Counted in characters: 12 CJK characters are enough.
    assert!(passphrase_ok("一二三四五六七八九十百千"));
    let _ = keyfile::FORMAT;
}
