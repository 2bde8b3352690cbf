//! Variable-time fixed-base tables for the stage-6 equation of §6.4, `R' = [S]B - [k]A`.
//!
//! Stage 6 runs on public data only (`S`, `k`, `A`, `B` are all in the signed document or the
//! Registry), so table lookups indexed by the scalars may take variable time. Signing never uses
//! these tables (it has its own constant-time comb, [`super::comb`]).
//!
//! A [`VerifyTable`] is a signed-digit comb: a scalar below `2^253` (every reduced scalar; `L` is
//! just above `2^252`) is written as `sum d_i 2^(w i)` with `-2^(w-1) < d_i <= 2^(w-1)`, and row
//! `i` of the table holds `[j 2^(w i)]P` for `j = 1 ..= 2^(w-1)`, so `[s]P` costs one point
//! addition per non-zero digit and no doublings. Negative digits subtract the entry (negating an
//! Edwards point is free), which halves each row against unsigned digits.
//!
//! The entries are affine Niels points of our own variable-time arithmetic ([`super::field`]):
//! curve25519-dalek keeps that form and its mixed addition crate-private, and with its public
//! `EdwardsPoint + EdwardsPoint` an entry cost 9 multiplications and 160 bytes instead of 7
//! and 128 (two aligned cache lines).
//!
//! Measured (`bench authority`, x86_64, one core): with `EdwardsPoint` entries the tables took
//! about 11 µs per `[S]B - [k]A` in a tight loop against 26 µs for
//! `vartime_double_scalar_mul_basepoint`, but 16-22 µs inside the authority, where they are
//! partly out of cache. Each table entry is used about once in sixteen batches, so inside the
//! authority most picked entries come from memory. Reading one word of each cache line of all
//! the picked entries first (`VerifyTable::probe`, both scalars of the equation at once), before
//! any addition, overlaps those misses. With new scalars and the caches flushed between batches
//! of 64 (`measure_signing_and_verification` in `tests/ed25519_fast.rs`), that took `[S]B - [k]A`
//! from 21.7-22.6 µs to 15.3-16.3 µs in a noisy stretch (14.95 to 10.3-10.9 µs in a quiet one,
//! against 9.1-9.5 µs with every entry in L1), where copying the entries out first had not.

use super::ed25519::StrictPublicKey;
use super::field::{Niels, Point};
use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::scalar::Scalar;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Window of the shared basepoint table: 24 rows of 1024 points, 3 MiB, built once on first
/// use. In `bench authority`, windows (11, 8) verified about 1.3 µs faster per
/// Command than (10, 7); beyond that the tables outgrow the caches.
pub const BASEPOINT_WINDOW: u32 = 11;

/// Window of a per-key table: 32 rows of 128 points, [`KEY_TABLE_BYTES`] (512 KiB).
pub const KEY_WINDOW: u32 = 8;

/// Memory of one key table (entries only; the few bookkeeping bytes are not counted).
pub const KEY_TABLE_BYTES: usize = table_entries(KEY_WINDOW) * size_of::<Niels>();

/// Scalars handled by the digit recoding are below `2^253`.
const SCALAR_BITS: usize = 253;

/// Rows for window `w`: `floor(253 / w) + 1`, so that the top digit absorbs the last carry.
const fn table_rows(window: u32) -> usize {
    SCALAR_BITS / window as usize + 1
}

const fn table_entries(window: u32) -> usize {
    table_rows(window) << (window - 1)
}

/// A signed-digit comb table of a prime-order point for vartime `[s]P` (public scalars only).
#[derive(Clone)]
pub struct VerifyTable {
    window: u32,
    /// `table_rows(window)` rows of `2^(window-1)` points, row-major.
    entries: Vec<Niels>,
    /// The point itself, for the (unreachable with reduced scalars) fallback beyond `2^253`.
    point: EdwardsPoint,
}

impl std::fmt::Debug for VerifyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "VerifyTable(w = {}, {} bytes)",
            self.window,
            self.memory_bytes()
        )
    }
}

impl VerifyTable {
    /// The table of a strictly validated public key (prime order, so every `R'` computed with it
    /// is in the prime-order subgroup).
    pub fn for_key(key: &StrictPublicKey) -> VerifyTable {
        VerifyTable::build(key.point(), KEY_WINDOW)
    }

    /// The shared table of the base point `B`, built on first use.
    pub fn basepoint() -> &'static VerifyTable {
        static TABLE: OnceLock<VerifyTable> = OnceLock::new();
        TABLE.get_or_init(|| VerifyTable::build(&ED25519_BASEPOINT_POINT, BASEPOINT_WINDOW))
    }

    /// `window` must be in `2..=16` (the digit reader takes at most three bytes).
    fn build(point: &EdwardsPoint, window: u32) -> VerifyTable {
        debug_assert!((2..=16).contains(&window));
        let half = 1usize << (window - 1);
        let rows = table_rows(window);
        let mut points = Vec::with_capacity(rows * half);
        // Our coordinates of a prime-order point that dalek holds: through its encoding, which
        // always decodes. (Were it not to, the table would compute wrong `R'`s, every comparison
        // in `verify_batch` would fail over to `verify`, and the answers would stay exact.)
        let mut base = Point::from_bytes(&point.compress().to_bytes()).unwrap_or(Point::IDENTITY);
        for _ in 0..rows {
            let mut acc = base;
            points.push(acc);
            for _ in 1..half {
                acc = acc.add(&base);
                points.push(acc);
            }
            // The next row's base: 2 * 2^(w-1) = 2^w times this row's.
            base = acc.add(&acc);
        }
        VerifyTable {
            window,
            entries: Point::to_niels_batch(&points),
            point: *point,
        }
    }

    /// Bytes held by the entries.
    pub fn memory_bytes(&self) -> usize {
        self.entries.len() * size_of::<Niels>()
    }

    /// `[s]P`, variable-time in `s`.
    pub fn mul(&self, s: &Scalar) -> Point {
        let mut acc = Point::IDENTITY;
        self.accumulate(&mut acc, s, false);
        acc
    }

    /// `acc += [s]P`, or `acc -= [s]P` when `negate`; variable-time in `s`.
    pub fn accumulate(&self, acc: &mut Point, s: &Scalar, negate: bool) {
        let bytes = s.as_bytes();
        if !below_2_253(s) {
            // Not below 2^253: cannot come from reduced scalars, but stay correct anyway.
            let p = if negate {
                -(self.point * s)
            } else {
                self.point * s
            };
            // A valid point always decodes (see `build` for why a failure would stay exact).
            if let Some(p) = Point::from_bytes(&p.compress().to_bytes()) {
                *acc = acc.add(&p);
            }
            return;
        }
        let mut picks = Picks::new();
        self.pick(bytes, negate, &mut picks);
        std::hint::black_box(self.probe(&picks));
        self.add_picked(acc, &picks);
    }

    fn rows(&self) -> usize {
        table_rows(self.window)
    }

    /// Records the entry of every non-zero signed digit of `s` (below `2^253`) in `out`, with
    /// whether it is subtracted.
    fn pick(&self, bytes: &[u8; 32], negate: bool, out: &mut Picks) {
        let w = self.window as usize;
        let half = 1i32 << (w - 1);
        let mask = (1u32 << w) - 1;
        let mut carry = 0i32;
        for i in 0..self.rows() {
            let mut d = window_bits(bytes, i * w, mask) as i32 + carry;
            carry = 0;
            if d > half {
                d -= 1 << w;
                carry = 1;
            }
            if d == 0 {
                continue;
            }
            let entry = (i << (w - 1)) + (d.unsigned_abs() - 1) as usize;
            out.push(entry, (d < 0) != negate);
        }
        // The top row holds at most 253 mod w < w bits plus a carry, so nothing is left over.
        debug_assert_eq!(carry, 0);
    }

    /// Reads one word of each cache line of the picked entries. The reads are independent and
    /// few instructions apart, so their misses overlap (the tables are larger than the caches and
    /// each entry is used rarely, so in the authority most picked entries come from memory);
    /// inside the chain of additions, or copied one by one, they did not overlap as much.
    fn probe(&self, picks: &Picks) -> u64 {
        picks
            .iter()
            .filter_map(|(i, _)| self.entries.get(i))
            .fold(0, |a, e| a ^ e.probe())
    }

    /// `acc += ±entry` for every pick.
    fn add_picked(&self, acc: &mut Point, picks: &Picks) {
        for (i, subtract) in picks.iter() {
            if let Some(entry) = self.entries.get(i) {
                *acc = acc.add_niels(entry, subtract);
            }
        }
    }
}

/// Whether the signed-digit recoding covers `s` (every reduced scalar is below `2^253`).
fn below_2_253(s: &Scalar) -> bool {
    s.as_bytes()[31] < 0x20
}

/// The entries a scalar selects from one table: at most one per row, on the stack (128 rows is
/// the most any window from 2 up has). Indices are below the table's length by construction; one
/// dropped or skipped anyway would only make `verify_batch`'s comparison fail, and it then
/// re-verifies that document the standard way, so answers stay exact.
struct Picks {
    entries: [(u32, bool); 128],
    len: usize,
}

impl Picks {
    fn new() -> Picks {
        Picks {
            entries: [(0, false); 128],
            len: 0,
        }
    }

    fn push(&mut self, entry: usize, subtract: bool) {
        if let (Some(slot), Ok(entry)) = (self.entries.get_mut(self.len), u32::try_from(entry)) {
            *slot = (entry, subtract);
            self.len += 1;
        }
    }

    fn iter(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.entries[..self.len]
            .iter()
            .map(|&(i, subtract)| (i as usize, subtract))
    }
}

/// Bits `bit .. bit + w` of a little-endian 256-bit integer (zero beyond the end).
fn window_bits(bytes: &[u8; 32], bit: usize, mask: u32) -> u32 {
    let byte = bit / 8;
    let mut v = 0u32;
    for (k, b) in bytes.iter().skip(byte).take(3).enumerate() {
        v |= u32::from(*b) << (8 * k);
    }
    (v >> (bit % 8)) & mask
}

/// A candidate `R'` of stage 6, in whichever arithmetic computed it.
#[derive(Clone, Copy, Debug)]
pub enum ExpectedR {
    Table(Point),
    Standard(EdwardsPoint),
}

impl ExpectedR {
    pub fn compress(&self) -> [u8; 32] {
        match self {
            ExpectedR::Table(p) => p.compress(),
            ExpectedR::Standard(p) => p.compress().to_bytes(),
        }
    }

    /// The encodings of all candidates, each kind with one shared inversion.
    pub fn compress_all(candidates: &[ExpectedR]) -> Vec<[u8; 32]> {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for c in candidates {
            match c {
                ExpectedR::Table(p) => ours.push(*p),
                ExpectedR::Standard(p) => theirs.push(*p),
            }
        }
        let mut ours = Point::compress_batch(&ours).into_iter();
        let mut theirs = EdwardsPoint::compress_batch_alloc(&theirs).into_iter();
        candidates
            .iter()
            .map(|c| match c {
                ExpectedR::Table(_) => ours.next().unwrap_or_default(),
                ExpectedR::Standard(_) => theirs.next().map(|e| e.to_bytes()).unwrap_or_default(),
            })
            .collect()
    }
}

/// `R' = [S]B - [k]A`: with `A`'s table when given, else the standard double-scalar method.
/// Always in the prime-order subgroup, since `A` (stage 4) and `B` are.
pub fn expected_r(
    key: &StrictPublicKey,
    table: Option<&VerifyTable>,
    s: &Scalar,
    k: &Scalar,
) -> ExpectedR {
    match table {
        Some(t) if below_2_253(s) && below_2_253(k) => {
            // Both scalars' entries are read before any addition, so all their misses overlap.
            let b = VerifyTable::basepoint();
            let (mut from_b, mut from_key) = (Picks::new(), Picks::new());
            b.pick(s.as_bytes(), false, &mut from_b);
            t.pick(k.as_bytes(), true, &mut from_key);
            std::hint::black_box(b.probe(&from_b) ^ t.probe(&from_key));
            let mut acc = Point::IDENTITY;
            b.add_picked(&mut acc, &from_b);
            t.add_picked(&mut acc, &from_key);
            ExpectedR::Table(acc)
        }
        Some(t) => {
            let mut acc = Point::IDENTITY;
            VerifyTable::basepoint().accumulate(&mut acc, s, false);
            t.accumulate(&mut acc, k, true);
            ExpectedR::Table(acc)
        }
        None => ExpectedR::Standard(EdwardsPoint::vartime_double_scalar_mul_basepoint(
            k,
            &-key.point(),
            s,
        )),
    }
}

struct KeyEntry {
    /// Uses since the entry was created or its table evicted.
    uses: u32,
    last_used: u64,
    table: Option<Box<VerifyTable>>,
}

/// A bounded cache of per-key [`VerifyTable`]s for the authority's batch verification.
///
/// A key gets a table only after `build_after` uses, so cold keys stay on the standard path:
/// building costs about what 64 uses of the table save (1.5 ms against ~22 µs saved per
/// verification: 13.0 against 35.5 µs per signature in `tests/ed25519_fast.rs`), the
/// ski-rental break-even. At most `capacity` tables exist, each [`KEY_TABLE_BYTES`] (512 KiB;
/// 32 MiB at the default 64); the least recently used one is
/// dropped for a new one, and its key must earn its table again, so more than `capacity` hot
/// keys cost at most about what the tables save. Use counters of keys without a table are
/// bounded as well (`4 * capacity + 16` keys, least recently used forgotten first).
///
/// Tables depend only on the public key bytes, never on a binding's validity or Registry
/// revision, so they stay correct across Registry updates.
pub struct KeyTables {
    capacity: usize,
    build_after: u32,
    entries: BTreeMap<[u8; 32], KeyEntry>,
    built: usize,
    clock: u64,
}

impl Default for KeyTables {
    fn default() -> KeyTables {
        KeyTables::new(KeyTables::DEFAULT_CAPACITY, KeyTables::DEFAULT_BUILD_AFTER)
    }
}

impl std::fmt::Debug for KeyTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeyTables({} keys tracked, {} tables, {} bytes)",
            self.entries.len(),
            self.built,
            self.memory_bytes()
        )
    }
}

impl KeyTables {
    pub const DEFAULT_CAPACITY: usize = 64;
    pub const DEFAULT_BUILD_AFTER: u32 = 64;

    /// At most `capacity` tables (0 disables them); a key's table is built on its use number
    /// `build_after + 1` (0 builds on first use).
    pub fn new(capacity: usize, build_after: u32) -> KeyTables {
        KeyTables {
            capacity,
            build_after,
            entries: BTreeMap::new(),
            built: 0,
            clock: 0,
        }
    }

    /// Number of tables built and held.
    pub fn tables(&self) -> usize {
        self.built
    }

    /// Bytes held by the tables.
    pub fn memory_bytes(&self) -> usize {
        self.entries
            .values()
            .filter_map(|e| e.table.as_ref())
            .map(|t| t.memory_bytes())
            .sum()
    }

    fn tracked_limit(&self) -> usize {
        self.capacity.saturating_mul(4).saturating_add(16)
    }

    /// Records one use of `key` and returns its table, building it when the key has become hot.
    pub fn table_for(&mut self, key: &StrictPublicKey) -> Option<&VerifyTable> {
        self.clock += 1;
        let id = *key.as_bytes();
        if !self.entries.contains_key(&id) && self.entries.len() >= self.tracked_limit() {
            self.forget_coldest();
        }
        let clock = self.clock;
        let entry = self.entries.entry(id).or_insert(KeyEntry {
            uses: 0,
            last_used: clock,
            table: None,
        });
        entry.uses = entry.uses.saturating_add(1);
        entry.last_used = clock;
        let wants_table =
            entry.table.is_none() && self.capacity > 0 && entry.uses > self.build_after;
        if wants_table {
            if self.built >= self.capacity {
                self.evict_table();
            }
            if let Some(entry) = self.entries.get_mut(&id) {
                entry.table = Some(Box::new(VerifyTable::for_key(key)));
                self.built += 1;
            }
        }
        self.entries.get(&id).and_then(|e| e.table.as_deref())
    }

    /// Drops the least recently used table; its key starts counting again.
    fn evict_table(&mut self) {
        let coldest = self
            .entries
            .iter()
            .filter(|(_, e)| e.table.is_some())
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| *id);
        if let Some(entry) = coldest.and_then(|id| self.entries.get_mut(&id)) {
            entry.table = None;
            entry.uses = 0;
            self.built -= 1;
        }
    }

    /// Forgets the least recently used key that has no table (or, failing that, any key).
    fn forget_coldest(&mut self) {
        let coldest = self
            .entries
            .iter()
            .min_by_key(|(_, e)| (e.table.is_some(), e.last_used))
            .map(|(id, _)| *id);
        if let Some(entry) = coldest.and_then(|id| self.entries.remove(&id))
            && entry.table.is_some()
        {
            self.built -= 1;
        }
    }
}
