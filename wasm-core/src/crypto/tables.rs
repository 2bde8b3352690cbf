//! Variable-time fixed-base tables for the stage-6 equation of §6.4, `R' = [S]B - [k]A`.
//!
//! Stage 6 runs on public data only (`S`, `k`, `A`, `B` are all in the signed document or the
//! Registry), so table lookups indexed by the scalars may take variable time. Signing never uses
//! these tables (it keeps the constant-time `EdwardsPoint::mul_base`).
//!
//! A [`VerifyTable`] is a signed-digit comb: a scalar below `2^253` (every reduced scalar; `L` is
//! just above `2^252`) is written as `sum d_i 2^(w i)` with `-2^(w-1) < d_i <= 2^(w-1)`, and row
//! `i` of the table holds `[j 2^(w i)]P` for `j = 1 ..= 2^(w-1)`, so `[s]P` costs one point
//! addition per non-zero digit and no doublings. Negative digits subtract the entry (negating an
//! Edwards point is free), which halves each row against unsigned digits.
//!
//! curve25519-dalek 5 keeps its cheaper addition forms (affine and projective Niels points) and
//! its vartime window tables crate-private; the only public tables with Niels entries
//! (`EdwardsBasepointTableRadix*`) select in constant time, which costs more than it saves here.
//! So the entries are full `EdwardsPoint`s added with the public `EdwardsPoint + EdwardsPoint`.
//!
//! Measured on the development machine (x86_64, one core): an addition 0.17 µs; `[S]B - [k]A`
//! with the basepoint table and a key table about 11 µs in a tight loop, against 26 µs for
//! `vartime_double_scalar_mul_basepoint` (plus 4 µs to decompress `R`, which the batch path in
//! `verify::verify_batch` does not need). Inside the authority, between SQLite writes and
//! signing, the tables are partly out of cache; gathering a scalar's entries before adding
//! them (see [`VerifyTable::accumulate`]) overlaps those misses.

use super::ed25519::StrictPublicKey;
use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Window of the shared basepoint table: 24 rows of 1024 points, 3.75 MiB, built once (about
/// 6 ms) on first use. In `bench authority`, windows (11, 8) verified about 1.3 µs faster per
/// Command than (10, 7); beyond that the tables outgrow the caches.
pub const BASEPOINT_WINDOW: u32 = 11;

/// Window of a per-key table: 32 rows of 128 points, [`KEY_TABLE_BYTES`] (640 KiB), built in
/// about 0.8 ms.
pub const KEY_WINDOW: u32 = 8;

/// Memory of one key table (entries only; the few bookkeeping bytes are not counted).
pub const KEY_TABLE_BYTES: usize = table_entries(KEY_WINDOW) * size_of::<EdwardsPoint>();

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
    entries: Vec<EdwardsPoint>,
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
        let mut entries = Vec::with_capacity(rows * half);
        let mut base = *point;
        for _ in 0..rows {
            let mut acc = base;
            entries.push(acc);
            for _ in 1..half {
                acc += base;
                entries.push(acc);
            }
            // The next row's base: 2 * 2^(w-1) = 2^w times this row's.
            base = acc + acc;
        }
        VerifyTable {
            window,
            entries,
            point: *point,
        }
    }

    /// Bytes held by the entries.
    pub fn memory_bytes(&self) -> usize {
        self.entries.len() * size_of::<EdwardsPoint>()
    }

    /// `[s]P`, variable-time in `s`.
    pub fn mul(&self, s: &Scalar) -> EdwardsPoint {
        let mut acc = EdwardsPoint::identity();
        self.accumulate(&mut acc, s, false);
        acc
    }

    /// `acc += [s]P`, or `acc -= [s]P` when `negate`; variable-time in `s`.
    pub fn accumulate(&self, acc: &mut EdwardsPoint, s: &Scalar, negate: bool) {
        let bytes = s.as_bytes();
        if bytes[31] >= 0x20 {
            // Not below 2^253: cannot come from reduced scalars, but stay correct anyway.
            let p = self.point * s;
            if negate {
                *acc -= p;
            } else {
                *acc += p;
            }
            return;
        }
        // Gather the entries first, then add: the loads are independent, so the CPU overlaps
        // their cache misses (the tables outgrow L2), instead of waiting for each in turn
        // inside the chain of additions.
        let mut picked: Vec<(EdwardsPoint, bool)> = Vec::with_capacity(self.rows());
        self.pick(bytes, negate, &mut picked);
        for (entry, subtract) in &picked {
            if *subtract {
                *acc -= entry;
            } else {
                *acc += entry;
            }
        }
    }

    fn rows(&self) -> usize {
        table_rows(self.window)
    }

    /// Copies the entry of every non-zero signed digit of `s` (below `2^253`) into `out`, with
    /// whether it is subtracted.
    fn pick(&self, bytes: &[u8; 32], negate: bool, out: &mut Vec<(EdwardsPoint, bool)>) {
        let w = self.window as usize;
        let half = 1i32 << (w - 1);
        let mask = (1u32 << w) - 1;
        let mut carry = 0i32;
        for (i, row) in self.entries.chunks_exact(1 << (w - 1)).enumerate() {
            let mut d = window_bits(bytes, i * w, mask) as i32 + carry;
            carry = 0;
            if d > half {
                d -= 1 << w;
                carry = 1;
            }
            if d == 0 {
                continue;
            }
            out.push((row[(d.unsigned_abs() - 1) as usize], (d < 0) != negate));
        }
        // The top row holds at most 253 mod w < w bits plus a carry, so nothing is left over.
        debug_assert_eq!(carry, 0);
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

/// `R' = [S]B - [k]A`: with `A`'s table when given, else the standard double-scalar method.
/// Always in the prime-order subgroup, since `A` (stage 4) and `B` are.
pub fn expected_r(
    key: &StrictPublicKey,
    table: Option<&VerifyTable>,
    s: &Scalar,
    k: &Scalar,
) -> EdwardsPoint {
    match table {
        Some(t) => {
            let mut acc = EdwardsPoint::identity();
            VerifyTable::basepoint().accumulate(&mut acc, s, false);
            t.accumulate(&mut acc, k, true);
            acc
        }
        None => EdwardsPoint::vartime_double_scalar_mul_basepoint(k, &-key.point(), s),
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
/// building costs about what 64 uses of the table save (0.8 ms against ~13 µs saved per
/// verification), the ski-rental break-even. At most `capacity` tables exist, each
/// [`KEY_TABLE_BYTES`] (640 KiB; 40 MiB at the default 64); the least recently used one is
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
