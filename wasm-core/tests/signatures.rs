//! Signing (ed25519-dalek) and the batch path of verification (§6.4 stage 6): RFC 8032 §7.1
//! vectors, vectors cross-checked with OpenSSL, `verify_batch == verify` differentially over
//! the official cryptography cases and mutated signed Commands, and the batch path failing
//! closed when its encoding step misbehaves. Native only (proptest).

#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use proptest::prelude::*;
use sha2::{Digest, Sha256, Sha512};
use wasm_core::crypto::ed25519::{
    self, Signer, StrictPublicKey, StrictSignature, challenge, expected_r, public_key_of, sign,
};
use wasm_core::crypto::registry::{
    BindingRecord, RegistryError, RegistryEvidence, ValidatedRegistry,
};
use wasm_core::crypto::verify::{KeyResolver, verify_batch_with};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document, verify, verify_batch};
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::json::{self, Value};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn arr32(v: &[u8]) -> [u8; 32] {
    v.try_into().unwrap()
}

// ---- signing ------------------------------------------------------------------------------

/// RFC 8032 §7.1: TEST 1, 2, 3 and TEST SHA(abc) (seed, public key, message, signature).
const RFC8032: [(&str, &str, &str, &str); 4] = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
    (
        "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
        "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
        "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
        "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704",
    ),
];

/// Produced with OpenSSL 3.0 (Python `cryptography`): seed `SHA-256("seed<i>")`, message byte
/// `j` = `(31 j + i) mod 256`; (message length, public key, signature).
const OPENSSL: [(usize, &str, &str); 9] = [
    (
        0,
        "8f80338eef733ec67c601349c4a8251393b28deb722cfd0a91907744a26d3dab",
        "dad88d9f735434282a6cc50924f71eb03f10acd0f4ea598f0c7f0842c74327ed62c52f2408c0ce65212c7153739ba3957eefbd11f63cc2968c04700bdb33370c",
    ),
    (
        1,
        "cc1983469486418cd66dcdc8664677c263487b736840cfd1532e144386fa7610",
        "8ced41d4d4948d9983816bd4529e8d38b7268ff93d65cd2eca31a48d5a969ea4bde53e70aecfa85b6bbddd1c728929b996df311b319a642727692f3d0269a60f",
    ),
    (
        63,
        "88166617f91bc145b243c2ae6e1088f1208bf17311cca74dbf032fee25b219e0",
        "3483b721c2981ad337b76a864f53131548c9708ea10da05b93effeb78b594a3e4fa7a4d9be9a32efa31f5f416f70f6bbd91631e714087ce318066f640d67ba02",
    ),
    (
        64,
        "6f97404947a00311785785217b1759b002cbae16da26e0801f0dcbe4e00d5f45",
        "c1e15248899f0ba705f60866f89a631d19c0e68bb05ed96ff9897dbca3e023591b5459aa7eda8d2c8ef80b51b8644c3c02b2b983b66e086468d4320575fa9308",
    ),
    (
        65,
        "fb7a8589cbe59427b2e9c91a5091bf43cf2080f1d4f1947af0d214ca825076f0",
        "dac9f02f966274e7f0db432ba9aaa757aa7c18d2662c911e7e616020734c671be5c74c70a6eb6b5094fbb11e45073977c472271fe10b074166c60240eb347000",
    ),
    (
        127,
        "30da57cda802def8dfd764812f2e3c82eb2871b2a14e3bb634f2195ef733796d",
        "46d5fda44cbb1f8ec4faf255e46633caedf73e6a43012049df5f14a8e11a8f7df88c6e61f08d8520b3a33d6b7eae75751566a57a96a40d3989f167e4c4075f0f",
    ),
    (
        128,
        "622c8cb09b558fecfc60ce1ec4b1e3014fe04f4628e06cad58ce9ded4d192a2d",
        "53c7d812d66b51d270c0d878e2cf670306e127cc2a57a30003e29fcbcfe95259af38a1537eefc4675ad5db690e523e195d08a5f2cb8bafff7b0faee049e9ce03",
    ),
    (
        1100,
        "3733056f59780d2f17adf073582634940c6ae57d530345d28e9b6b7cf1d3dcfb",
        "9f536d8bf05ebc2c345a1cb670dafd2467fd8f009db07022ad98f0a9379c8c808ab0daf11a4d851d442bbefb4d8c96bae9a4eadeb52496af2e3f6bbc356c2d0e",
    ),
    (
        4096,
        "423cb2cdd87b3e612517cf77e68d918914b0705d8937ef7e25b24a53620bc9d1",
        "f5cccba7295b40d03811bca17a8c7b4cbcb1fcf833c5313602fd73e88ad0322c25714079fc722141fed3bf857f114206abc2f40deea7a8d459f75c1fa6bd7908",
    ),
];

/// Checks one known vector through every signing entry point and both verification paths.
fn check_vector(seed: &[u8; 32], public: &[u8], message: &[u8], signature: &[u8]) {
    let seed = SecretSeed::from_slice(seed).unwrap();
    let signer = Signer::from_seed(&seed);
    assert_eq!(signer.public_key().as_slice(), public);
    assert_eq!(public_key_of(&seed).as_slice(), public);
    assert_eq!(signer.sign(message).as_slice(), signature);
    assert_eq!(sign(&seed, message).as_slice(), signature);
    let key = StrictPublicKey::from_bytes(public).unwrap();
    let sig = StrictSignature::from_bytes(signature).unwrap();
    assert!(ed25519::verify(&key, &sig, message));
    let r_enc = arr32(&signature[..32]);
    let s = Scalar::from_canonical_bytes(arr32(&signature[32..])).unwrap();
    let k = challenge(&r_enc, &key, message);
    assert_eq!(expected_r(&key, &s, &k).compress().to_bytes(), r_enc);
    // One flipped message bit and the equation fails.
    let mut other = message.to_vec();
    other.push(0);
    assert!(!ed25519::verify(&key, &sig, &other));
}

#[test]
fn rfc8032_section_7_1_vectors() {
    assert_eq!(hex(RFC8032[3].2), Sha512::digest(b"abc").to_vec());
    for (seed, public, message, signature) in RFC8032 {
        check_vector(
            &arr32(&hex(seed)),
            &hex(public),
            &hex(message),
            &hex(signature),
        );
    }
}

#[test]
fn vectors_cross_checked_with_openssl() {
    for (i, (len, public, signature)) in OPENSSL.into_iter().enumerate() {
        let seed: [u8; 32] = Sha256::digest(format!("seed{i}")).into();
        let message: Vec<u8> = (0..len).map(|j| ((j * 31 + i) % 256) as u8).collect();
        check_vector(&seed, &hex(public), &message, &hex(signature));
    }
}

// ---- verify_batch == verify ------------------------------------------------------------------

fn describe(r: &Result<wasm_core::crypto::Verified, wasm_core::crypto::VerifyError>) -> String {
    format!("{r:?}")
}

/// Runs `docs` through `verify_batch` and compares each result with `verify` on that document
/// alone.
fn assert_batch_matches(docs: &[&[u8]], kind: DocumentKind, keys: &dyn KeyResolver) {
    let single: Vec<String> = docs
        .iter()
        .map(|d| describe(&verify(d, kind, keys)))
        .collect();
    let batch = verify_batch(docs, kind, keys);
    assert_eq!(batch.len(), docs.len());
    for (i, (b, s)) in batch.iter().zip(&single).enumerate() {
        assert_eq!(&describe(b), s, "document {i} of {}", docs.len());
    }
}

fn bundle_read(path: &str) -> Vec<u8> {
    let root = std::env::var("MWP_PROTOCOL_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/protocol").into());
    std::fs::read(std::path::Path::new(&root).join(path)).unwrap()
}

fn bundle_registry(path: &str) -> Result<ValidatedRegistry, RegistryError> {
    let v = json::parse(&bundle_read(path)).unwrap();
    RegistryEvidence::from_fixture_json(&v)
        .map_err(|e| RegistryError::Unreadable(e.to_string()))
        .and_then(|ev| ev.validate())
}

/// (profile, registry path): the documents one `verify_batch` call can take together.
type GroupKey = (String, String);

#[test]
fn verify_batch_equals_verify_on_the_official_cases() {
    let manifest = json::parse(&bundle_read("cryptography/manifest.json")).unwrap();
    let Some(Value::Array(cases)) = manifest.pointer("/cases") else {
        panic!("no cases");
    };
    let mut groups: Vec<(GroupKey, Vec<Vec<u8>>)> = Vec::new();
    let mut evaluations = 0;
    for case in cases {
        let Some(Value::Array(evals)) = case.pointer("/evaluations") else {
            panic!("no evaluations");
        };
        for e in evals {
            let text = |p: &str| e.pointer(p).and_then(Value::as_str).map(str::to_owned);
            let Some(doc) = text("/document") else {
                continue; // the JCS-only case
            };
            evaluations += 1;
            let key = (text("/profileId").unwrap(), text("/registry").unwrap());
            let bytes = bundle_read(&doc);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, docs)) => docs.push(bytes),
                None => groups.push((key, vec![bytes])),
            }
        }
    }
    assert_eq!(
        evaluations, 61,
        "62 evaluations, one of them canonicalization only"
    );
    let mut all_docs = 0;
    for ((profile, registry_path), docs) in &groups {
        let kind = DocumentKind::from_wire(profile).unwrap();
        let registry = bundle_registry(registry_path);
        let refs: Vec<&[u8]> = docs.iter().map(Vec::as_slice).collect();
        for d in &refs {
            assert_batch_matches(&[d], kind, &registry);
        }
        // The whole group, three times over (duplicates in one batch).
        let tripled: Vec<&[u8]> = refs.iter().chain(&refs).chain(&refs).copied().collect();
        assert_batch_matches(&tripled, kind, &registry);
        all_docs += docs.len();
    }
    assert_eq!(all_docs, 61);
}

fn seeds(i: usize) -> SecretSeed {
    SecretSeed::take(&mut [[11u8; 32], [12u8; 32], [13u8; 32]][i])
}
const AGENTS: [&str; 3] = [
    "urn:missionweaveprotocol:agent:a",
    "urn:missionweaveprotocol:agent:b",
    "urn:missionweaveprotocol:agent:c",
];
const KEY_IDS: [&str; 3] = [
    "urn:missionweaveprotocol:key:a",
    "urn:missionweaveprotocol:key:b",
    "urn:missionweaveprotocol:key:c",
];

fn registry() -> ValidatedRegistry {
    RegistryEvidence {
        organization_id: "urn:missionweaveprotocol:organization:fast".into(),
        bindings: (0..3)
            .map(|i| BindingRecord {
                key_id: KEY_IDS[i].into(),
                principal_type: "agent".into(),
                principal_id: AGENTS[i].into(),
                algorithm: "Ed25519".into(),
                public_key: b64url_encode(&public_key_of(&seeds(i))),
                valid_from: "2026-07-01T00:00:00Z".into(),
                validity_history: vec![],
            })
            .collect(),
    }
    .validate()
    .unwrap()
}

/// A signed `work.checkpoint` Command by agent `actor`, signed with `SEEDS[seed]` under
/// `KEY_IDS[key]`.
fn command(actor: usize, key: usize, seed: usize, n: u32) -> String {
    let text = format!(
        r#"{{"protocolVersion":"0.1","actionId":"urn:uuid:6f1c1a52-4a8e-4d3a-9a43-0d2b1f7c{n:04x}",
        "actor":{{"type":"agent","id":"{}"}},"sessionEpoch":3,"membershipEpoch":2,
        "groupId":"urn:missionweaveprotocol:group:fast","workItemId":"urn:missionweaveprotocol:work-item:w-{n}",
        "kind":"work.checkpoint","expectedRevision":12,
        "correlationId":"urn:uuid:0b6f3f3e-8c55-4b7e-a1d4-2f0c9f9d7a01","issuedAt":"2026-07-15T00:00:00Z",
        "payload":{{"ownershipEpoch":4,"leaseId":"urn:missionweaveprotocol:lease:w-{n}",
        "checkpoint":{{"uri":"urn:missionweaveprotocol:artifact:checkpoint-{n}",
        "contentHash":"sha256:5c6f1b3bd6a1e4f0d6a5c8e4b2f1a0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3",
        "summary":"Parsed {n} of 20 input files."}},"progress":{{"completed":14,"total":20}}}}}}"#,
        AGENTS[actor]
    );
    let mut doc = json::parse_str(&text).unwrap();
    sign_document(&mut doc, DocumentKind::Command, KEY_IDS[key], &seeds(seed)).unwrap();
    json::to_string(&doc)
}

fn signature_of(doc: &str) -> String {
    let v = json::parse_str(doc).unwrap();
    v.pointer("/signature/value")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned()
}

/// Replaces the signature value with `f(raw 64 bytes)`.
fn with_signature(doc: &str, f: impl FnOnce(&mut [u8; 64])) -> String {
    let old = signature_of(doc);
    let mut raw: [u8; 64] = b64url_decode(&old).unwrap().try_into().unwrap();
    f(&mut raw);
    doc.replace(&old, &b64url_encode(&raw))
}

const L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// Special `R` encodings: identity, order 2, order 4, negative zero, `y = p`, `y = p + 1`,
/// off-curve, a mixed-order point, a valid but unrelated point.
fn special_r(choice: u8, r: &[u8; 32]) -> [u8; 32] {
    let mut b = [0u8; 32];
    match choice % 9 {
        0 => b[0] = 1,
        1 => {
            b = [0xff; 32];
            b[0] = 0xec;
            b[31] = 0x7f;
        }
        2 => {} // y = 0: the two points of order 4
        3 => {
            b[0] = 1;
            b[31] = 0x80;
        }
        4 => {
            b = [0xff; 32];
            b[0] = 0xed;
            b[31] = 0x7f;
        }
        5 => {
            b = [0xff; 32];
            b[0] = 0xee;
            b[31] = 0x7f;
        }
        6 => b[0] = 2,
        7 => {
            let p = CompressedEdwardsY(*r).decompress().unwrap();
            let mut t = [0xffu8; 32];
            t[0] = 0xec;
            t[31] = 0x7f;
            let torsion = CompressedEdwardsY(t).decompress().unwrap();
            b = (p + torsion).compress().to_bytes();
        }
        _ => {
            b = EdwardsPoint::mul_base(&Scalar::from(7u8))
                .compress()
                .to_bytes()
        }
    }
    b
}

#[derive(Clone, Debug)]
enum Mutation {
    None,
    FlipSignatureBit(usize),
    SpecialR(u8),
    SpecialRUnknownKey(u8),
    SOutOfRange(u8),
    Payload,
    WrongSeed,
    WrongPrincipalKey,
    Truncate(usize),
    SchemaBreak,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => Just(Mutation::None),
        3 => (0..512usize).prop_map(Mutation::FlipSignatureBit),
        2 => any::<u8>().prop_map(Mutation::SpecialR),
        1 => any::<u8>().prop_map(Mutation::SpecialRUnknownKey),
        1 => any::<u8>().prop_map(Mutation::SOutOfRange),
        1 => Just(Mutation::Payload),
        1 => Just(Mutation::WrongSeed),
        1 => Just(Mutation::WrongPrincipalKey),
        1 => (0..2000usize).prop_map(Mutation::Truncate),
        1 => Just(Mutation::SchemaBreak),
    ]
}

fn mutated(actor: usize, n: u32, m: &Mutation) -> String {
    let doc = command(actor, actor, actor, n);
    match m {
        Mutation::None => doc,
        Mutation::FlipSignatureBit(bit) => with_signature(&doc, |s| s[bit / 8] ^= 1 << (bit % 8)),
        Mutation::SpecialR(c) => with_signature(&doc, |s| {
            let r = special_r(*c, &s[..32].try_into().unwrap());
            s[..32].copy_from_slice(&r);
        }),
        Mutation::SpecialRUnknownKey(c) => with_signature(&doc, |s| {
            let r = special_r(*c, &s[..32].try_into().unwrap());
            s[..32].copy_from_slice(&r);
        })
        .replace(KEY_IDS[actor], "urn:missionweaveprotocol:key:unknown"),
        Mutation::SOutOfRange(c) => with_signature(&doc, |s| {
            let mut v = L;
            match c % 3 {
                0 => {}
                1 => v[0] += 1,
                _ => v[31] = 0xff,
            }
            s[32..].copy_from_slice(&v);
        }),
        Mutation::Payload => doc.replace("of 20 input files", "of 21 input files"),
        Mutation::WrongSeed => command(actor, actor, (actor + 1) % 3, n),
        Mutation::WrongPrincipalKey => command(actor, (actor + 1) % 3, (actor + 1) % 3, n),
        Mutation::Truncate(at) => doc[..(*at).min(doc.len() - 1)].to_owned(),
        Mutation::SchemaBreak => doc.replace("\"sessionEpoch\":3,", ""),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn verify_batch_equals_verify_on_mutated_commands(
        items in prop::collection::vec((0..3usize, 0..40u32, mutation()), 1..24)
    ) {
        let registry = registry();
        let docs: Vec<String> = items.iter().map(|(a, n, m)| mutated(*a, *n, m)).collect();
        let refs: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
        assert_batch_matches(&refs, DocumentKind::Command, &registry);
    }
}

#[test]
fn every_mutation_kind_in_one_batch() {
    let registry = registry();
    let mut docs = Vec::new();
    for n in 0..3 {
        for a in 0..3 {
            docs.push(mutated(a, n, &Mutation::None));
        }
    }
    let ms = [
        Mutation::FlipSignatureBit(0),
        Mutation::FlipSignatureBit(255),
        Mutation::FlipSignatureBit(256),
        Mutation::FlipSignatureBit(511),
        Mutation::SOutOfRange(0),
        Mutation::SOutOfRange(1),
        Mutation::SOutOfRange(2),
        Mutation::Payload,
        Mutation::WrongSeed,
        Mutation::WrongPrincipalKey,
        Mutation::Truncate(10),
        Mutation::SchemaBreak,
    ];
    for (i, m) in ms.iter().enumerate() {
        docs.push(mutated(i % 3, 50 + i as u32, m));
    }
    for c in 0..9u8 {
        docs.push(mutated(0, 70, &Mutation::SpecialR(c)));
        docs.push(mutated(1, 71, &Mutation::SpecialRUnknownKey(c)));
    }
    let refs: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let ok = refs
        .iter()
        .filter(|d| verify(d, DocumentKind::Command, &registry).is_ok())
        .count();
    assert_eq!(ok, 9, "only the unmutated ones verify");
    assert_batch_matches(&refs, DocumentKind::Command, &registry);
}

fn scalar_from(bytes: &[u8]) -> Scalar {
    Scalar::from_bytes_mod_order_wide(&Sha512::digest(bytes).into())
}

/// The batch path's "cannot happen" answers from the encoding step: too few encodings, too many,
/// or wrong ones. Each must end as exactly what `verify` says of each document alone (here:
/// valid ones still verify through the single path, invalid ones are still rejected), and never
/// as an acceptance the single path would refuse.
#[test]
fn a_misbehaving_batch_encoding_never_accepts() {
    let registry = registry();
    let mut docs = Vec::new();
    for n in 0..4 {
        docs.push(mutated(n as usize % 3, n, &Mutation::None));
        docs.push(mutated(
            n as usize % 3,
            10 + n,
            &Mutation::FlipSignatureBit(3),
        ));
        docs.push(mutated(n as usize % 3, 20 + n, &Mutation::Payload));
    }
    let refs: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let single: Vec<String> = refs
        .iter()
        .map(|d| describe(&verify(d, DocumentKind::Command, &registry)))
        .collect();
    let honest = |p: &[EdwardsPoint]| EdwardsPoint::compress_batch_alloc(p);
    let too_few = |p: &[EdwardsPoint]| {
        let mut v = EdwardsPoint::compress_batch_alloc(p);
        v.pop();
        v
    };
    let too_many = |p: &[EdwardsPoint]| {
        let mut v = EdwardsPoint::compress_batch_alloc(p);
        v.push(CompressedEdwardsY([0u8; 32]));
        v
    };
    let none = |_: &[EdwardsPoint]| Vec::new();
    // Every encoding replaced by the identity's, as a zero `Z` in a batch inversion would give.
    let identity = |p: &[EdwardsPoint]| {
        let mut one = [0u8; 32];
        one[0] = 1;
        vec![CompressedEdwardsY(one); p.len()]
    };
    // The invalid documents' own `Renc` echoed back: the equation must still be checked.
    let echo = |p: &[EdwardsPoint]| {
        let mut v = EdwardsPoint::compress_batch_alloc(p);
        v.reverse();
        v
    };
    type Encode<'a> = &'a dyn Fn(&[EdwardsPoint]) -> Vec<CompressedEdwardsY>;
    let seams: [(&str, Encode); 6] = [
        ("honest", &honest),
        ("too few", &too_few),
        ("too many", &too_many),
        ("none", &none),
        ("identity", &identity),
        ("reordered", &echo),
    ];
    for (name, encode) in seams {
        let got = verify_batch_with(&refs, DocumentKind::Command, &registry, encode);
        assert_eq!(got.len(), refs.len(), "{name}");
        for (i, (g, s)) in got.iter().zip(&single).enumerate() {
            assert_eq!(&describe(g), s, "{name}: document {i}");
        }
        let accepted = got.iter().filter(|r| r.is_ok()).count();
        assert_eq!(
            accepted, 4,
            "{name}: only the four unmutated documents verify"
        );
    }
}

// ---- measurements (cargo test --release --test signatures -- --ignored --nocapture) ----------

fn best_of<F: FnMut()>(rounds: usize, per_round: usize, mut f: F) -> f64 {
    f();
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        for _ in 0..per_round {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e6 / per_round as f64);
    }
    best
}

#[test]
#[ignore = "measurement; run with --release"]
fn measure_signing_and_verification() {
    use std::hint::black_box;
    let signer = Signer::from_seed(&SecretSeed::take(&mut [21u8; 32]));
    let messages: Vec<Vec<u8>> = (0..64u32)
        .map(|i| (0..1100u32).map(|j| (i * 7 + j) as u8).collect())
        .collect();
    let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    let key = StrictPublicKey::from_bytes(&signer.public_key()).unwrap();
    let sigs: Vec<[u8; 64]> = refs.iter().map(|m| signer.sign(m)).collect();
    let (rounds, n) = (15, 20);
    let sign1 = best_of(rounds, n, || {
        black_box(signer.sign(black_box(refs[0])));
    });
    let sha = best_of(rounds, n, || {
        black_box(Sha512::digest(black_box(refs[0])));
    });
    let single = best_of(rounds, 1, || {
        for (m, s) in refs.iter().zip(&sigs) {
            let sig = StrictSignature::parse_deferring_order_check(s).unwrap();
            assert!(ed25519::verify(&key, &sig, m));
        }
    }) / 64.0;
    let (s1, k1) = (scalar_from(b"S"), scalar_from(b"k"));
    let eq_double = best_of(rounds, n, || {
        black_box(expected_r(&key, black_box(&s1), black_box(&k1)));
    });
    let pts: Vec<EdwardsPoint> = (0..64u32)
        .map(|i| EdwardsPoint::mul_base(&Scalar::from(i + 1)))
        .collect();
    let inv = best_of(rounds, 1, || {
        black_box(EdwardsPoint::compress_batch_alloc(black_box(&pts)));
    }) / 64.0;
    let registry = registry();
    let docs: Vec<String> = (0..64).map(|i| command(0, 0, 0, i)).collect();
    let doc_refs: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
    let six_single = best_of(rounds, 1, || {
        for d in &doc_refs {
            assert!(verify(d, DocumentKind::Command, &registry).is_ok());
        }
    }) / 64.0;
    let six_batch = best_of(rounds, 1, || {
        let r = verify_batch(&doc_refs, DocumentKind::Command, &registry);
        assert!(r.iter().all(Result::is_ok));
    }) / 64.0;
    println!("SHA-512 of 1.1 KB: {sha:.2} µs");
    println!("sign 1.1 KB (ed25519-dalek): {sign1:.2} µs");
    println!("single path (decode R, SHA-512, double-scalar, encode, compare): {single:.2} µs");
    println!("    [S]B - [k]A alone (curve25519-dalek double-scalar): {eq_double:.2} µs");
    println!("    batch compression share: {inv:.2} µs per point");
    println!(
        "six stages, typical Command ({} bytes): verify {six_single:.2} µs, verify_batch of 64 \
         {six_batch:.2} µs per document",
        docs[0].len()
    );
}
