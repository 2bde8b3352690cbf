//! Strict Ed25519 as §6.4 states it (pure RFC 8032, no ctx/ph variants), on the vetted dalek
//! crates: signing is `ed25519-dalek`'s `SigningKey`, the verification equation is
//! curve25519-dalek's `vartime_double_scalar_mul_basepoint`. This module adds only the
//! protocol's stricter checks, on top of their public types:
//!
//! - encodings are canonical (`y < p`, no negative zero), checked on the bytes;
//! - `A` and `R` are in the prime-order subgroup (`[L]P = I`; `is_torsion_free`), which rejects
//!   small-order *and* mixed-order points (ed25519-dalek's `verify_strict` rejects only
//!   small-order ones);
//! - `A` is not the identity; `S < L`, never reduced;
//! - the equation is cofactorless: `R' = [S]B - [k]A` is encoded and compared byte for byte
//!   with `Renc`.
//!
//! Curves, field arithmetic and scalar multiplication stay in the dalek crates.

use super::secret::SecretSeed;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::IsIdentity;
use ed25519_dalek::Signer as _;
use sha2::{Digest, Sha512};
use std::fmt;

/// Why an encoded point or scalar was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodingError {
    WrongLength,
    /// Not a point on the curve.
    OffCurve,
    /// `y >= p` or negative zero: a second spelling of a point.
    NonCanonical,
    /// The identity point (allowed for `R`, never for a public key).
    Identity,
    /// A point outside the prime-order subgroup (small-order or mixed-order).
    NotPrimeOrder,
    /// `S >= L` (never reduced).
    ScalarOutOfRange,
}

impl fmt::Display for EncodingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EncodingError::WrongLength => "wrong length",
            EncodingError::OffCurve => "not a point on Edwards25519",
            EncodingError::NonCanonical => "noncanonical point encoding",
            EncodingError::Identity => "the identity point",
            EncodingError::NotPrimeOrder => "not in the prime-order subgroup",
            EncodingError::ScalarOutOfRange => "S is not below the group order L",
        })
    }
}

/// Whether `bytes` is the canonical encoding of its point, checked on the bytes alone: `y < p =
/// 2^255 - 19`, and no negative zero, i.e. the sign bit is not set on the two points with
/// `x = 0`, `(0, 1)` and `(0, -1)`.
pub fn is_canonical_encoding(bytes: &[u8; 32]) -> bool {
    let top = bytes[31] & 0x7f;
    let y_ge_p = top == 0x7f && bytes[1..31].iter().all(|b| *b == 0xff) && bytes[0] >= 0xed;
    if y_ge_p {
        return false;
    }
    if bytes[31] & 0x80 != 0 {
        let y_is_one = bytes[0] == 1 && bytes[1..31].iter().all(|b| *b == 0) && top == 0;
        let y_is_minus_one =
            bytes[0] == 0xec && bytes[1..31].iter().all(|b| *b == 0xff) && top == 0x7f;
        if y_is_one || y_is_minus_one {
            return false;
        }
    }
    true
}

/// Decodes a point strictly: canonical, on the curve, `[L]P = I`.
pub fn decode_prime_order_point(bytes: &[u8; 32]) -> Result<EdwardsPoint, EncodingError> {
    let point = decode_canonical_point(bytes)?;
    if !point.is_torsion_free() {
        return Err(EncodingError::NotPrimeOrder);
    }
    Ok(point)
}

/// Decodes a point: on the curve and canonical (order not checked).
fn decode_canonical_point(bytes: &[u8; 32]) -> Result<EdwardsPoint, EncodingError> {
    let point = CompressedEdwardsY(*bytes)
        .decompress()
        .ok_or(EncodingError::OffCurve)?;
    if !is_canonical_encoding(bytes) {
        return Err(EncodingError::NonCanonical);
    }
    Ok(point)
}

/// A strictly validated Ed25519 public key (stage 4): canonical, prime order, not identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrictPublicKey {
    bytes: [u8; 32],
    point: EdwardsPoint,
    /// `-A`, kept so that each verification does not negate it again.
    minus_point: EdwardsPoint,
}

impl StrictPublicKey {
    pub fn from_bytes(bytes: &[u8]) -> Result<StrictPublicKey, EncodingError> {
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| EncodingError::WrongLength)?;
        let point = decode_prime_order_point(&bytes)?;
        if point.is_identity() {
            return Err(EncodingError::Identity);
        }
        Ok(StrictPublicKey {
            bytes,
            point,
            minus_point: -point,
        })
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.bytes
    }
}

/// A signature whose `R` and `S` passed the stage-3 encoding checks.
#[derive(Clone, Copy, Debug)]
pub struct StrictSignature {
    r_bytes: [u8; 32],
    r_point: EdwardsPoint,
    s: Scalar,
}

impl StrictSignature {
    /// Stage 3 in full: 64 bytes, `R` canonical and `[L]R = I` (identity allowed), `0 <= S < L`.
    pub fn from_bytes(bytes: &[u8]) -> Result<StrictSignature, EncodingError> {
        let sig = StrictSignature::parse_deferring_order_check(bytes)?;
        sig.check_r_prime_order()?;
        Ok(sig)
    }

    /// Stage 3 without the `[L]R = I` test, which costs a full scalar multiplication. A caller
    /// that defers it must run [`Self::check_r_prime_order`] before reporting any later-stage
    /// failure; on success it is implied, because `[S]B - [k]A` is always in the prime-order
    /// subgroup when `A` is, so the equation can only hold for a prime-order `R`.
    pub fn parse_deferring_order_check(bytes: &[u8]) -> Result<StrictSignature, EncodingError> {
        let (r_bytes, s) = split_signature(bytes)?;
        let r_point = decode_canonical_point(&r_bytes)?;
        Ok(StrictSignature {
            r_bytes,
            r_point,
            s,
        })
    }

    /// `[L]R = I`: small-order and mixed-order `R` fail; the identity passes.
    pub fn check_r_prime_order(&self) -> Result<(), EncodingError> {
        if self.r_point.is_torsion_free() {
            Ok(())
        } else {
            Err(EncodingError::NotPrimeOrder)
        }
    }
}

/// 64 bytes split into `Renc` and a scalar `S` that is below `L` as given (`S >= L` is rejected,
/// never reduced: §6.4 stage 3).
fn split_signature(bytes: &[u8]) -> Result<([u8; 32], Scalar), EncodingError> {
    let bytes: &[u8; 64] = bytes.try_into().map_err(|_| EncodingError::WrongLength)?;
    let (r, s) = bytes.split_at(32);
    let r_bytes: [u8; 32] = r.try_into().map_err(|_| EncodingError::WrongLength)?;
    let s_bytes: [u8; 32] = s.try_into().map_err(|_| EncodingError::WrongLength)?;
    let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes))
        .ok_or(EncodingError::ScalarOutOfRange)?;
    Ok((r_bytes, s))
}

/// A signature whose `S` passed the range check while `Renc` is kept as bytes, undecoded: for
/// the batch path, which compares `Renc` with the encoding of `R' = [S]B - [k]A`. That encoding
/// is canonical and `R'` has prime order, so byte equality implies every stage-3 check on `R`
/// and the equation; any inequality must be re-verified with [`StrictSignature`] to learn the
/// stage that fails.
#[derive(Clone, Copy, Debug)]
pub struct EncodedRSignature {
    r_bytes: [u8; 32],
    s: Scalar,
}

impl EncodedRSignature {
    /// 64 bytes and `0 <= S < L`; `Renc` is not examined.
    pub fn from_bytes(bytes: &[u8]) -> Result<EncodedRSignature, EncodingError> {
        let (r_bytes, s) = split_signature(bytes)?;
        Ok(EncodedRSignature { r_bytes, s })
    }

    pub fn r_bytes(&self) -> &[u8; 32] {
        &self.r_bytes
    }

    pub fn s(&self) -> &Scalar {
        &self.s
    }
}

/// `k = SHA-512(Renc || Aenc || M) mod L` (§6.4 stage 6, RFC 8032 §5.1.7).
pub fn challenge(r_bytes: &[u8; 32], key: &StrictPublicKey, message: &[u8]) -> Scalar {
    let mut h = Sha512::new();
    h.update(r_bytes);
    h.update(key.bytes);
    h.update(message);
    Scalar::from_bytes_mod_order_wide(&h.finalize().into())
}

/// `R' = [S]B - [k]A`, curve25519-dalek's variable-time double-base multiplication (public
/// inputs only). It is in the prime-order subgroup, because `B` and `A` are.
pub fn expected_r(key: &StrictPublicKey, s: &Scalar, k: &Scalar) -> EdwardsPoint {
    EdwardsPoint::vartime_double_scalar_mul_basepoint(k, &key.minus_point, s)
}

/// Stage 6: `[S]B = R + [k]A` with `k = SHA-512(Renc || Aenc || M) mod L`, cofactorless.
///
/// Computed as `R' = [S]B - [k]A`, encoded, and compared byte for byte with `Renc`. `Renc` was
/// checked canonical at stage 3, so equal bytes mean `R' = R`; and because `R'` has prime
/// order, they also prove `[L]R = I`.
pub fn verify(key: &StrictPublicKey, sig: &StrictSignature, message: &[u8]) -> bool {
    let k = challenge(&sig.r_bytes, key, message);
    expected_r(key, &sig.s, &k).compress().to_bytes() == sig.r_bytes
}

/// A signing key: `ed25519-dalek`'s `SigningKey` (RFC 8032 §5.1.6, deterministic, constant
/// time, zeroized on drop), wrapped so that it is neither `Clone` nor printable: `{:?}` shows
/// only the start of the public key.
pub struct Signer {
    key: ed25519_dalek::SigningKey,
}

impl Signer {
    pub fn from_seed(seed: &SecretSeed) -> Signer {
        Signer {
            key: ed25519_dalek::SigningKey::from_bytes(seed.expose()),
        }
    }

    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }

    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signer(public key {:02x?}…)", &self.public_key()[..4])
    }
}

/// Signs `message` with `seed` (deterministic; no randomness needed).
pub fn sign(seed: &SecretSeed, message: &[u8]) -> [u8; 64] {
    Signer::from_seed(seed).sign(message)
}

/// The public key of `seed`.
pub fn public_key_of(seed: &SecretSeed) -> [u8; 32] {
    seed.public_key()
}
