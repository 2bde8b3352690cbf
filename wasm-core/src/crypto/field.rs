//! Field and point arithmetic on edwards25519 for the verification tables of
//! [`super::tables`] and the signing comb of [`super::comb`].
//!
//! Why our own: curve25519-dalek keeps its affine Niels points (`(y+x, y-x, 2dxy)`) and the
//! mixed addition that uses them crate-private, so a table of public `EdwardsPoint`s costs a
//! full addition per entry (9 multiplications and 160 bytes read) where a mixed addition costs
//! 7 and an entry fits two cache lines (120 bytes, padded to 128). The tables are read at random
//! and mostly miss the caches, so the bytes count as much as the multiplications.
//!
//! Two kinds of function live here. `add`, `sub`, `neg`, `mul`, `invert`, `to_bytes`,
//! `Point::add_niels` with a constant `negate`, `compress_batch` and the masked `Niels`
//! operations have no branch or memory access that depends on the values: the signing comb
//! uses them on its secret nonce. `Point::from_bytes`, `same_value` and the table code of
//! [`super::tables`] branch on values and are used on public data only (signatures, public
//! keys, the base point). Every result is checked against curve25519-dalek
//! (`tests/ed25519_fast.rs`, and `comb`'s tests for signing).
//!
//! Field elements are five 51-bit limbs (`2^255 - 19`). Reduction is lazy, as in ref10 and
//! curve25519-dalek: `mul` returns limbs below `2^51 + 2^13` and accepts limbs below `2^54`;
//! `add` and `sub` do not carry, and every chain of them between two multiplications stays
//! within those bounds (see each). `to_bytes` carries fully first.

use std::sync::OnceLock;

const MASK: u64 = (1 << 51) - 1;

/// An element of GF(2^255 - 19); limbs below `2^54` (not necessarily canonical).
#[derive(Clone, Copy, Debug)]
pub struct Fe([u64; 5]);

impl Fe {
    pub const ZERO: Fe = Fe([0; 5]);
    pub const ONE: Fe = Fe([1, 0, 0, 0, 0]);

    fn from_u64(v: u64) -> Fe {
        Fe::carry([v & MASK, v >> 51, 0, 0, 0])
    }

    /// Propagates carries so every limb is below `2^51 + 2^13` (limbs in: below `2^63`): the
    /// carry out of the top limb (`2^255`) wraps around as 19.
    #[inline(always)]
    fn carry(mut l: [u64; 5]) -> Fe {
        let top = carry_up(&mut l);
        l[0] += top * 19;
        Fe(l)
    }

    /// Limb-wise, without carrying: for operands below `2^51 + 2^13` (what `mul` returns) the
    /// sum stays below `2^53`, which `mul` accepts (below `2^54`).
    #[inline(always)]
    pub fn add(&self, o: &Fe) -> Fe {
        let (a, b) = (&self.0, &o.0);
        Fe([
            a[0] + b[0],
            a[1] + b[1],
            a[2] + b[2],
            a[3] + b[3],
            a[4] + b[4],
        ])
    }

    /// `self - o`, computed as `self + 2p - o` without carrying: `o` below `2^51 + 2^13` (what
    /// `mul` and `carry` return) never exceeds a limb of `2p`, and the result stays below
    /// `2^54` for `self` below `2^53`.
    #[inline(always)]
    pub fn sub(&self, o: &Fe) -> Fe {
        const P2_0: u64 = (MASK - 18) * 2;
        const P2_I: u64 = MASK * 2;
        let (a, b) = (&self.0, &o.0);
        Fe([
            a[0] + P2_0 - b[0],
            a[1] + P2_I - b[1],
            a[2] + P2_I - b[2],
            a[3] + P2_I - b[3],
            a[4] + P2_I - b[4],
        ])
    }

    /// `-self`; carries first, so any operand within the bounds is accepted.
    pub fn neg(&self) -> Fe {
        Fe::ZERO.sub(&Fe::carry(self.0))
    }

    #[inline(always)]
    pub fn mul(&self, o: &Fe) -> Fe {
        #[inline(always)]
        fn m(x: u64, y: u64) -> u128 {
            u128::from(x) * u128::from(y)
        }
        let (a, b) = (&self.0, &o.0);
        let b1 = b[1] * 19;
        let b2 = b[2] * 19;
        let b3 = b[3] * 19;
        let b4 = b[4] * 19;
        // Products below 2^52 * 2^57; five of them below 2^112.
        let c0 = m(a[0], b[0]) + m(a[1], b4) + m(a[2], b3) + m(a[3], b2) + m(a[4], b1);
        let mut c1 = m(a[0], b[1]) + m(a[1], b[0]) + m(a[2], b4) + m(a[3], b3) + m(a[4], b2);
        let mut c2 = m(a[0], b[2]) + m(a[1], b[1]) + m(a[2], b[0]) + m(a[3], b4) + m(a[4], b3);
        let mut c3 = m(a[0], b[3]) + m(a[1], b[2]) + m(a[2], b[1]) + m(a[3], b[0]) + m(a[4], b4);
        let mut c4 = m(a[0], b[4]) + m(a[1], b[3]) + m(a[2], b[2]) + m(a[3], b[1]) + m(a[4], b[0]);
        c1 += c0 >> 51;
        c2 += c1 >> 51;
        c3 += c2 >> 51;
        c4 += c3 >> 51;
        // c4 has no factor 19: below 5 * 2^104 + 2^61, so its carry times 19 fits in 60 bits.
        let top = (c4 >> 51) as u64;
        let mut r0 = (c0 as u64 & MASK) + top * 19;
        let r1 = (c1 as u64 & MASK) + (r0 >> 51);
        r0 &= MASK;
        Fe([r0, r1, c2 as u64 & MASK, c3 as u64 & MASK, c4 as u64 & MASK])
    }

    fn square(&self) -> Fe {
        self.mul(self)
    }

    fn square_n(&self, n: u32) -> Fe {
        let mut r = *self;
        for _ in 0..n {
            r = r.square();
        }
        r
    }

    /// Reads 255 bits, little-endian (the top bit of byte 31 is ignored).
    pub fn from_bytes(b: &[u8; 32]) -> Fe {
        let w = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(x)
        };
        let (w0, w1, w2, w3) = (w(0), w(1), w(2), w(3));
        Fe([
            w0 & MASK,
            ((w0 >> 51) | (w1 << 13)) & MASK,
            ((w1 >> 38) | (w2 << 26)) & MASK,
            ((w2 >> 25) | (w3 << 39)) & MASK,
            (w3 >> 12) & MASK,
        ])
    }

    /// The canonical encoding (the value reduced below `p`), little-endian.
    pub fn to_bytes(&self) -> [u8; 32] {
        // Below 2^51 per limb except a small excess in limb 0, so the value is below 2p.
        let mut l = Fe::carry(self.0).0;
        // q = 1 exactly when the value is at least p (adding 19 carries out of bit 255).
        let mut q = (l[0] + 19) >> 51;
        q = (l[1] + q) >> 51;
        q = (l[2] + q) >> 51;
        q = (l[3] + q) >> 51;
        q = (l[4] + q) >> 51;
        l[0] += 19 * q;
        // Dropping the carry out of the top limb subtracts 2^255: value + 19q - 2^255 q.
        carry_up(&mut l);
        let words = [
            l[0] | (l[1] << 51),
            (l[1] >> 13) | (l[2] << 38),
            (l[2] >> 26) | (l[3] << 25),
            (l[3] >> 39) | (l[4] << 12),
        ];
        let mut out = [0u8; 32];
        for (chunk, w) in out.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Equality of the values (of their canonical encodings).
    fn same_value(&self, o: &Fe) -> bool {
        self.to_bytes() == o.to_bytes()
    }

    fn is_negative(&self) -> bool {
        self.to_bytes()[0] & 1 == 1
    }

    /// `(self^(2^250 - 1), self^11)`, the shared part of inversion and square roots.
    fn pow22501(&self) -> (Fe, Fe) {
        let t0 = self.square(); // 2
        let t1 = t0.square_n(2); // 8
        let t2 = self.mul(&t1); // 9
        let t3 = t0.mul(&t2); // 11
        let t4 = t3.square(); // 22
        let t5 = t2.mul(&t4); // 2^5 - 1
        let t6 = t5.square_n(5).mul(&t5); // 2^10 - 1
        let t7 = t6.square_n(10).mul(&t6); // 2^20 - 1
        let t8 = t7.square_n(20).mul(&t7); // 2^40 - 1
        let t9 = t8.square_n(10).mul(&t6); // 2^50 - 1
        let t10 = t9.square_n(50).mul(&t9); // 2^100 - 1
        let t11 = t10.square_n(100).mul(&t10); // 2^200 - 1
        let t12 = t11.square_n(50).mul(&t9); // 2^250 - 1
        (t12, t3)
    }

    /// `self^(p - 2)`: the inverse (zero for zero).
    pub fn invert(&self) -> Fe {
        let (t, eleven) = self.pow22501();
        t.square_n(5).mul(&eleven) // 2^255 - 32 + 11 = p - 2
    }

    /// `self^((p - 5) / 8) = self^(2^252 - 3)`.
    fn pow_p58(&self) -> Fe {
        let (t, _) = self.pow22501();
        t.square_n(2).mul(self)
    }
}

/// Carries each limb into the next, leaving every limb below `2^51`, and returns the carry out
/// of the top limb (the multiple of `2^255` removed).
#[inline(always)]
fn carry_up(l: &mut [u64; 5]) -> u64 {
    let mut c = 0;
    for limb in l.iter_mut() {
        *limb += c;
        c = *limb >> 51;
        *limb &= MASK;
    }
    c
}

struct Constants {
    /// `d = -121665 / 121666`.
    d: Fe,
    /// `2d`, the factor of the Niels form.
    d2: Fe,
    /// A square root of -1: `2^((p - 1) / 4)`.
    sqrt_m1: Fe,
}

fn constants() -> &'static Constants {
    static C: OnceLock<Constants> = OnceLock::new();
    C.get_or_init(|| {
        let d = Fe::from_u64(121_665)
            .neg()
            .mul(&Fe::from_u64(121_666).invert());
        // (p - 1) / 4 = 2^253 - 5 = (2^250 - 1) * 8 + 3: 2^((2^250 - 1) * 8) * 2^3.
        let two = Fe::from_u64(2);
        let (t, _) = two.pow22501();
        let sqrt_m1 = t.square_n(3).mul(&Fe::from_u64(8));
        Constants {
            d,
            d2: d.add(&d),
            sqrt_m1,
        }
    })
}

/// A point in extended coordinates `(X : Y : Z : T)`, `x = X/Z`, `y = Y/Z`, `xy = T/Z`.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    x: Fe,
    y: Fe,
    z: Fe,
    t: Fe,
}

/// An affine point in Niels form `(y + x, y - x, 2dxy)`, padded to two cache lines.
#[derive(Clone, Copy, Debug)]
#[repr(align(128))]
pub struct Niels {
    y_plus_x: Fe,
    y_minus_x: Fe,
    xy2d: Fe,
}

impl Niels {
    /// The neutral element: `y + x = 1`, `y - x = 1`, `2dxy = 0`.
    pub const IDENTITY: Niels = Niels {
        y_plus_x: Fe::ONE,
        y_minus_x: Fe::ONE,
        xy2d: Fe::ZERO,
    };

    /// All limbs zero (not a point): the start of a masked selection.
    pub const ZERO_LIMBS: Niels = Niels {
        y_plus_x: Fe::ZERO,
        y_minus_x: Fe::ZERO,
        xy2d: Fe::ZERO,
    };

    /// One word from each of the entry's two cache lines (bytes 0..8 and 112..120), XORed: reading
    /// it brings the whole entry in. Variable-time tables use it to load all the entries of a
    /// scalar at once, with their misses overlapping, before the additions need them.
    #[inline(always)]
    pub fn probe(&self) -> u64 {
        self.y_plus_x.0[0] ^ self.xy2d.0[4]
    }

    /// `self |= o & mask`, limb by limb (constant-time selection with an all-ones or all-zero
    /// mask).
    #[inline(always)]
    pub fn or_masked(&mut self, o: &Niels, mask: u64) {
        for (a, b) in [
            (&mut self.y_plus_x, &o.y_plus_x),
            (&mut self.y_minus_x, &o.y_minus_x),
            (&mut self.xy2d, &o.xy2d),
        ] {
            for (x, y) in a.0.iter_mut().zip(&b.0) {
                *x |= y & mask;
            }
        }
    }

    /// Negates the point when `mask` is all ones (swaps `y + x` and `y - x`, negates `2dxy`),
    /// without branching on it.
    #[inline(always)]
    pub fn negate_masked(&mut self, mask: u64) {
        for (a, b) in self.y_plus_x.0.iter_mut().zip(self.y_minus_x.0.iter_mut()) {
            let t = (*a ^ *b) & mask;
            *a ^= t;
            *b ^= t;
        }
        let neg = Fe::ZERO.sub(&self.xy2d);
        for (x, n) in self.xy2d.0.iter_mut().zip(&neg.0) {
            *x ^= (*x ^ n) & mask;
        }
    }
}

impl Point {
    pub const IDENTITY: Point = Point {
        x: Fe::ZERO,
        y: Fe::ONE,
        z: Fe::ONE,
        t: Fe::ZERO,
    };

    /// Decodes a point (RFC 8032 §5.1.3); `None` if the bytes encode none. The caller has
    /// already validated the encoding where canonicity matters (keys are strictly checked).
    pub fn from_bytes(bytes: &[u8; 32]) -> Option<Point> {
        let c = constants();
        let y = Fe::from_bytes(bytes);
        let yy = y.square();
        let u = yy.sub(&Fe::ONE);
        let v = yy.mul(&c.d).add(&Fe::ONE);
        let v3 = v.square().mul(&v);
        let v7 = v3.square().mul(&v);
        let mut x = u.mul(&v3).mul(&u.mul(&v7).pow_p58());
        let vxx = v.mul(&x.square());
        if vxx.same_value(&u) {
        } else if vxx.same_value(&u.neg()) {
            x = x.mul(&c.sqrt_m1);
        } else {
            return None;
        }
        let sign = bytes[31] >> 7 == 1;
        if x.is_negative() != sign {
            if x.to_bytes() == [0; 32] {
                return None;
            }
            x = x.neg();
        }
        Some(Point {
            x,
            y,
            z: Fe::ONE,
            t: x.mul(&y),
        })
    }

    /// `self + o` (complete twisted Edwards addition, 9 multiplications).
    pub fn add(&self, o: &Point) -> Point {
        let c = constants();
        let a = self.y.sub(&self.x).mul(&o.y.sub(&o.x));
        let b = self.y.add(&self.x).mul(&o.y.add(&o.x));
        let cc = self.t.mul(&c.d2).mul(&o.t);
        let zz = self.z.mul(&o.z);
        let d = zz.add(&zz);
        Point::from_completed(b.sub(&a), b.add(&a), d.add(&cc), d.sub(&cc))
    }

    /// `self + n`, or `self - n` when `negate` (mixed addition, 7 multiplications).
    #[inline(always)]
    pub fn add_niels(&self, n: &Niels, negate: bool) -> Point {
        let (pp, mm) = if negate {
            (&n.y_minus_x, &n.y_plus_x)
        } else {
            (&n.y_plus_x, &n.y_minus_x)
        };
        let a = self.y.sub(&self.x).mul(mm);
        let b = self.y.add(&self.x).mul(pp);
        let cc = self.t.mul(&n.xy2d);
        let d = self.z.add(&self.z);
        if negate {
            Point::from_completed(b.sub(&a), b.add(&a), d.sub(&cc), d.add(&cc))
        } else {
            Point::from_completed(b.sub(&a), b.add(&a), d.add(&cc), d.sub(&cc))
        }
    }

    /// From the completed form `((E : G), (H : F))`-style products to extended coordinates.
    #[inline(always)]
    fn from_completed(e: Fe, h: Fe, g: Fe, f: Fe) -> Point {
        Point {
            x: e.mul(&f),
            y: h.mul(&g),
            z: g.mul(&f),
            t: e.mul(&h),
        }
    }

    /// The encoding (RFC 8032 §5.1.2) of each point, with one shared inversion.
    pub fn compress_batch(points: &[Point]) -> Vec<[u8; 32]> {
        let inverses = invert_batch(points.iter().map(|p| p.z));
        points
            .iter()
            .zip(inverses)
            .map(|(p, zi)| p.encode_with(&zi))
            .collect()
    }

    /// The encoding of one point (one inversion, nothing allocated).
    pub fn compress(&self) -> [u8; 32] {
        self.encode_with(&self.z.invert())
    }

    /// The encoding, given `1 / Z`.
    fn encode_with(&self, z_inverse: &Fe) -> [u8; 32] {
        let x = self.x.mul(z_inverse);
        let mut bytes = self.y.mul(z_inverse).to_bytes();
        bytes[31] |= u8::from(x.is_negative()) << 7;
        bytes
    }

    /// The affine Niels form of each point, with one shared inversion.
    pub fn to_niels_batch(points: &[Point]) -> Vec<Niels> {
        let d2 = constants().d2;
        let inverses = invert_batch(points.iter().map(|p| p.z));
        points
            .iter()
            .zip(inverses)
            .map(|(p, zi)| {
                let x = p.x.mul(&zi);
                let y = p.y.mul(&zi);
                Niels {
                    y_plus_x: y.add(&x),
                    y_minus_x: y.sub(&x),
                    xy2d: x.mul(&y).mul(&d2),
                }
            })
            .collect()
    }
}

/// Montgomery's trick: every inverse for one inversion and three multiplications each. The
/// inputs are `Z` coordinates, never zero for points produced by complete addition.
fn invert_batch(zs: impl Iterator<Item = Fe>) -> Vec<Fe> {
    let zs: Vec<Fe> = zs.collect();
    let mut prefix = Vec::with_capacity(zs.len());
    let mut acc = Fe::ONE;
    for z in &zs {
        prefix.push(acc);
        acc = acc.mul(z);
    }
    let mut inv = acc.invert();
    let mut out = vec![Fe::ZERO; zs.len()];
    for i in (0..zs.len()).rev() {
        out[i] = inv.mul(&prefix[i]);
        inv = inv.mul(&zs[i]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fe(bytes: [u8; 32]) -> Fe {
        Fe::from_bytes(&bytes)
    }

    #[test]
    fn constants_have_their_defining_properties() {
        let c = constants();
        // d * 121666 = -121665
        assert_eq!(
            c.d.mul(&Fe::from_u64(121_666)).to_bytes(),
            Fe::from_u64(121_665).neg().to_bytes()
        );
        assert_eq!(
            c.sqrt_m1.square().to_bytes(),
            Fe::ONE.neg().to_bytes(),
            "sqrt(-1)^2 = -1"
        );
    }

    #[test]
    fn encoding_is_canonical_and_round_trips() {
        // p itself and p + 1 encode as 0 and 1; 2^255 - 1 (= p + 18) as 18.
        let mut p = [0xffu8; 32];
        p[0] = 0xed;
        p[31] = 0x7f;
        assert_eq!(fe(p).to_bytes(), [0; 32]);
        let mut p1 = p;
        p1[0] = 0xee;
        assert_eq!(fe(p1).to_bytes(), Fe::ONE.to_bytes());
        let all = [0xffu8; 32];
        assert_eq!(fe(all).to_bytes(), Fe::from_u64(18).to_bytes());
        let mut x = [0u8; 32];
        for (i, b) in x.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        x[31] &= 0x7f;
        assert_eq!(fe(x).to_bytes(), x);
    }

    #[test]
    fn inversion_and_arithmetic_agree() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        for _ in 0..200 {
            let mut b = [0u8; 32];
            for chunk in b.chunks_exact_mut(8) {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                chunk.copy_from_slice(&seed.to_le_bytes());
            }
            let a = fe(b);
            if a.to_bytes() == [0; 32] {
                continue;
            }
            assert_eq!(a.mul(&a.invert()).to_bytes(), Fe::ONE.to_bytes());
            // (a + a) - a = a and a * (1 + 1) = a + a
            assert_eq!(a.add(&a).sub(&a).to_bytes(), a.to_bytes());
            assert_eq!(a.mul(&Fe::from_u64(2)).to_bytes(), a.add(&a).to_bytes());
            assert_eq!(a.neg().add(&a).to_bytes(), [0; 32]);
        }
    }
}
