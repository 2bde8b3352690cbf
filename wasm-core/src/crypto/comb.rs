//! Constant-time `[r]B` for signing (RFC 8032 §5.1.6 step 3): a fixed-base comb of affine
//! Niels points of the base point.
//!
//! Row `i` of the table holds `[j * 2^(W i)]B` for `j = 1 ..= 2^(W-1)`. A scalar below `2^253`
//! is recoded into signed digits `d_i` in `[-(2^(W-1) - 1), 2^(W-1)]`, and `[r]B` is the sum
//! over the rows of `[d_i * 2^(W i)]B`: one mixed addition per row and no doublings.
//!
//! Constant-time, because the nonce `r` is secret: nothing here branches on it or indexes
//! memory by it. The digit recoding is arithmetic on every byte; each row's entry is selected
//! by reading every entry of the row and keeping one under a mask (a zero digit selects the
//! identity, which the complete addition takes like any point); the sign is applied by a
//! masked swap and a masked negation; the field arithmetic of [`super::field`] that is used
//! here (`add`, `sub`, `mul`, the mixed addition with a constant `negate`, and the inversion
//! and encoding of the result) has no data-dependent branches.
//!
//! Why not curve25519-dalek's `mul_base`: its tables select with `subtle`'s per-limb
//! conditional moves and convert each sum back to extended coordinates. Measured here
//! (`cargo test --release -p wasm-core --lib comb_speed -- --ignored --nocapture`, 4,000
//! scalars): this comb 10.3 µs, dalek's radix-32 table 13.8 µs (its fastest; radix 16, 64,
//! 128 and 256 were slower). Widths 4 and 6 measured 11.6 and 11.1 µs: a wider row costs more
//! to scan than the additions it saves. Handling two or four scalars per row scan was no
//! faster.

use super::field::{Niels, Point};
use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::scalar::Scalar;
use std::sync::OnceLock;

/// Digit width.
const W: usize = 5;
/// Entries per row: the digit magnitudes `1 ..= 2^(W-1)`.
const HALF: usize = 1 << (W - 1);
/// Digits of a scalar below `2^253`, plus one for the last carry: 52 rows, 104 KiB.
const ROWS: usize = 253usize.div_ceil(W) + 1;

/// The comb table of the base point.
struct Comb {
    rows: Vec<[Niels; HALF]>,
}

fn table() -> &'static Comb {
    static TABLE: OnceLock<Comb> = OnceLock::new();
    TABLE.get_or_init(Comb::build)
}

/// `[r]B`, constant-time in `r` (a reduced scalar, so below `2^253`).
pub fn mul_base(r: &Scalar) -> Point {
    table().mul(r.as_bytes())
}

impl Comb {
    /// Built from public data only (variable-time is fine here).
    fn build() -> Comb {
        // The base point always decodes; the identity fallback would fail every test.
        let b = Point::from_bytes(&ED25519_BASEPOINT_POINT.compress().to_bytes())
            .unwrap_or(Point::IDENTITY);
        let mut points = Vec::with_capacity(ROWS * HALF);
        let mut base = b;
        for _ in 0..ROWS {
            let mut p = base;
            for _ in 0..HALF {
                points.push(p);
                p = p.add(&base);
            }
            for _ in 0..W {
                base = base.add(&base);
            }
        }
        let rows = Point::to_niels_batch(&points)
            .chunks_exact(HALF)
            .map(|row| {
                let mut r = [Niels::IDENTITY; HALF];
                r.copy_from_slice(row);
                r
            })
            .collect();
        Comb { rows }
    }

    fn mul(&self, scalar: &[u8; 32]) -> Point {
        let digits = recode(scalar);
        let mut acc = Point::IDENTITY;
        for (row, &d) in self.rows.iter().zip(&digits) {
            acc = acc.add_niels(&select(row, d), false);
        }
        acc
    }
}

/// Signed digits `d_i` in `[-(2^(W-1) - 1), 2^(W-1)]` with `sum d_i 2^(W i) = s`, computed
/// without branches on `s`.
fn recode(s: &[u8; 32]) -> [i32; ROWS] {
    let mut d = [0i32; ROWS];
    let mask = (1u32 << W) - 1;
    for (i, di) in d.iter_mut().enumerate() {
        let bit = i * W;
        let mut v = 0u32;
        for k in 0..3 {
            v |= u32::from(s.get(bit / 8 + k).copied().unwrap_or(0)) << (8 * k);
        }
        *di = ((v >> (bit % 8)) & mask) as i32;
    }
    for i in 0..ROWS - 1 {
        // 1 exactly when d_i > 2^(W-1) (d_i is at most 2^W here, with the carry in).
        let carry = (d[i] + HALF as i32 - 1) >> W;
        d[i] -= carry << W;
        d[i + 1] += carry;
    }
    d
}

/// All ones when `x == 0`, else zero, by arithmetic only.
#[inline(always)]
fn zero_mask(x: u32) -> u64 {
    let x = u64::from(x);
    ((x | x.wrapping_neg()) >> 63).wrapping_sub(1)
}

/// The entry for digit `d` (the identity for 0, negated for `d < 0`), reading every entry.
///
/// The row's masks are computed first and passed through one `black_box`, so the optimizer
/// cannot turn them back into a branch or an index. One barrier per row instead of one per
/// entry: 128.2k instead of 132.8k instructions per `mul_base` under callgrind.
#[inline(always)]
fn select(row: &[Niels; HALF], d: i32) -> Niels {
    let negative = (d >> 31) as u32 & 1;
    let abs = ((d ^ -(negative as i32)) + negative as i32) as u32;
    // Entries 1..=HALF, then the identity (abs == 0), then the negation (d < 0).
    let mut masks = [0u64; HALF + 2];
    for (j, m) in (1u32..).zip(masks.iter_mut()) {
        *m = zero_mask(abs ^ j);
    }
    masks[HALF] = zero_mask(abs);
    masks[HALF + 1] = zero_mask(negative ^ 1);
    let masks = std::hint::black_box(masks);
    let mut out = Niels::ZERO_LIMBS;
    for (entry, &m) in row.iter().zip(&masks) {
        out.or_masked(entry, m);
    }
    out.or_masked(&Niels::IDENTITY, masks[HALF]);
    out.negate_masked(masks[HALF + 1]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::edwards::EdwardsPoint;

    fn scalars(n: u32, seed: u8) -> Vec<Scalar> {
        let mut x = [seed; 64];
        (0..n)
            .map(|i| {
                x[..4].copy_from_slice(&i.to_le_bytes());
                for j in 4..64 {
                    x[j] = x[j].wrapping_mul(31).wrapping_add(x[j - 1] ^ (i as u8));
                }
                Scalar::from_bytes_mod_order_wide(&x)
            })
            .collect()
    }

    /// Every digit pattern the recoding can meet at its edges, and 300 random scalars, give
    /// curve25519-dalek's `mul_base`, encoding for encoding.
    #[test]
    fn the_comb_equals_dalek_mul_base() {
        let mut edge = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, -Scalar::from(2u64)];
        for k in [15u64, 16, 17, 31, 32, 33, 0x10_8421, 0xffff_ffff] {
            edge.push(Scalar::from(k));
            edge.push(-Scalar::from(k));
        }
        // Fifty equal 5-bit digits: 16 is the largest magnitude in every row, 17 and 31 carry
        // into every row, 15 is the largest that needs no carry.
        let repeated = |digit: u64| {
            (0..50).fold(Scalar::ZERO, |acc, _| {
                acc * Scalar::from(32u64) + Scalar::from(digit)
            })
        };
        edge.extend([repeated(16), repeated(17), repeated(31), repeated(15)]);
        // Repeated bytes, reduced mod L.
        let bytes = |byte: u8| Scalar::from_bytes_mod_order([byte; 32]);
        edge.extend([bytes(0x42), bytes(0x84), bytes(0xff)]);
        for s in edge.iter().chain(&scalars(300, 3)) {
            let want = EdwardsPoint::mul_base(s).compress().to_bytes();
            assert_eq!(mul_base(s).compress(), want, "{s:?}");
        }
    }

    #[test]
    fn recoded_digits_stay_in_range_and_sum_to_the_scalar() {
        for s in scalars(500, 9) {
            let d = recode(s.as_bytes());
            assert!(
                d.iter().all(|&d| -(HALF as i32) < d && d <= HALF as i32),
                "{d:?}"
            );
            // Horner's rule from the top digit: sum d_i 2^(W i) as a Scalar.
            let radix = Scalar::from(1u64 << W);
            let sum = d.iter().rev().fold(Scalar::ZERO, |acc, &d| {
                let digit = Scalar::from(d.unsigned_abs());
                acc * radix + if d < 0 { -digit } else { digit }
            });
            assert_eq!(sum, s);
        }
    }

    #[test]
    #[ignore = "prints timings; run with --ignored --nocapture in release"]
    fn comb_speed() {
        use curve25519_dalek::traits::BasepointTable;
        let scalars = scalars(4000, 5);
        let radix32 = curve25519_dalek::edwards::EdwardsBasepointTableRadix32::create(
            &ED25519_BASEPOINT_POINT,
        );
        let _ = mul_base(&scalars[0]);
        let per = |t: std::time::Instant| t.elapsed().as_secs_f64() * 1e6 / scalars.len() as f64;
        for _ in 0..4 {
            let t = std::time::Instant::now();
            for s in &scalars {
                std::hint::black_box(mul_base(s));
            }
            let ours = per(t);
            let t = std::time::Instant::now();
            for s in &scalars {
                std::hint::black_box(radix32.mul_base(s));
            }
            println!(
                "comb W={W}: {ours:.2} µs, curve25519-dalek radix-32: {:.2} µs",
                per(t)
            );
        }
    }
}
