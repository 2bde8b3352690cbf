//! Strict Ed25519 as §6.4 states it (pure RFC 8032, no ctx/ph variants).
//!
//! `ed25519-dalek`'s `verify_strict` rejects only small-order points; it neither rejects
//! mixed-order points nor reliably reports a non-canonical `y >= p` at the normative stage. So the
//! encodings are checked here, before the equation: decompress, re-compress and compare bytes
//! (catches `y >= p` and negative zero), require `[L]P = I` (torsion-free), and, for a public key,
//! not the identity. The equation `[S]B = R + [k]A` is then evaluated directly.

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::IsIdentity;
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

/// Whether `bytes` is the canonical encoding of its point, checked on the bytes alone (no
/// field inversion): `y < p = 2^255 - 19`, and no negative zero, i.e. the sign bit is not set
/// on the two points with `x = 0`, `(0, 1)` and `(0, -1)`.
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

/// Decodes a point: canonical and on the curve (order not checked).
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
}

impl StrictPublicKey {
    pub fn from_bytes(bytes: &[u8]) -> Result<StrictPublicKey, EncodingError> {
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| EncodingError::WrongLength)?;
        let point = decode_prime_order_point(&bytes)?;
        if point.is_identity() {
            return Err(EncodingError::Identity);
        }
        Ok(StrictPublicKey { bytes, point })
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
        let bytes: [u8; 64] = bytes.try_into().map_err(|_| EncodingError::WrongLength)?;
        let mut r_bytes = [0u8; 32];
        r_bytes.copy_from_slice(&bytes[..32]);
        let mut s_bytes = [0u8; 32];
        s_bytes.copy_from_slice(&bytes[32..]);
        let r_point = decode_canonical_point(&r_bytes)?;
        let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes))
            .ok_or(EncodingError::ScalarOutOfRange)?;
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

/// Stage 6: `[S]B = R + [k]A` with `k = SHA-512(Renc || Aenc || M) mod L`.
///
/// Computed as `R' = [S]B - [k]A` and compared with the decoded `R` as points (projective
/// equality, no inversion); `Renc` was checked canonical at stage 3, so this is the same as
/// comparing encodings.
pub fn verify(key: &StrictPublicKey, sig: &StrictSignature, message: &[u8]) -> bool {
    let mut h = Sha512::new();
    h.update(sig.r_bytes);
    h.update(key.bytes);
    h.update(message);
    let k = Scalar::from_bytes_mod_order_wide(&h.finalize().into());
    let r = EdwardsPoint::vartime_double_scalar_mul_basepoint(&k, &(-key.point), &sig.s);
    r == sig.r_point
}

/// A signing key with its expanded secret and public key computed once (signing many Events).
#[derive(Clone)]
pub struct Signer(ed25519_dalek::SigningKey);

impl Signer {
    pub fn from_seed(seed: &[u8; 32]) -> Signer {
        Signer(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer as _;
        self.0.sign(message).to_bytes()
    }

    pub fn public_key(&self) -> [u8; 32] {
        self.0.verifying_key().to_bytes()
    }
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer(public key {:02x?})", &self.public_key()[..4])
    }
}

/// Signs `message` with the 32-byte RFC 8032 seed (deterministic; no randomness needed).
pub fn sign(seed: &[u8; 32], message: &[u8]) -> [u8; 64] {
    use ed25519_dalek::Signer;
    ed25519_dalek::SigningKey::from_bytes(seed)
        .sign(message)
        .to_bytes()
}

/// The public key of a 32-byte seed.
pub fn public_key_of(seed: &[u8; 32]) -> [u8; 32] {
    ed25519_dalek::SigningKey::from_bytes(seed)
        .verifying_key()
        .to_bytes()
}
