//! [`Table`], [`Set`] and [`Log`]: the State's containers, persistent (structural sharing).
//!
//! The console publishes a snapshot of the whole State for its views after every fold (issue
//! 27). With plain maps that copy grew with the history (177.8 ms natively at 100,000 Events);
//! here a copy is a few reference-count increments, and the first change after it copies only
//! the path from the root to the changed entry (`O(log n)` nodes, each entry behind its own
//! pointer), so publishing costs in proportion to what changed. A State nobody else holds is
//! changed in place, as before: the authority, which never snapshots, pays no copies.
//!
//! The trees are `rpds`' red-black tree and vector (thread-safe pointers: the server moves
//! states between threads). The order, the lookups and the values are exactly those of a
//! `BTreeMap<String, V>` (tested below against one).
//!
//! Every [`Table`] holds the same tree type, `String` to a type-erased [`Slot`], whatever its
//! `V`: the tree's code (insert, rebalance, path copy, lookup, drop) is compiled once instead of
//! once per projection type (19 copies of rpds' map in the static demo's module, 67.5 KB of
//! code before wasm-opt), and `Table<V>` is a thin typed wrapper that downcasts. A value is
//! copied on write by its own `Clone`, so the sharing is the same as with the value in the tree.

use rpds::{RedBlackTreeMapSync, RedBlackTreeSetSync, VectorSync};
use std::any::Any;
use std::borrow::Borrow;
use std::marker::PhantomData;
use std::sync::Arc;

/// A table's value, type-erased: every table shares one tree instantiation. Only
/// [`Table<V>`] writes slots, always with a `V`, so a downcast to its `V` never fails.
type Slot = Arc<dyn Any + Send + Sync>;

type Tree = RedBlackTreeMapSync<String, Slot>;

/// A persistent map from an Organization-wide id to a projection, in key order.
pub struct Table<V>(Tree, PhantomData<fn() -> V>);

impl<V> Clone for Table<V> {
    fn clone(&self) -> Self {
        Table(self.0.clone(), PhantomData)
    }
}

impl<V: Any + std::fmt::Debug> std::fmt::Debug for Table<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Equal contents; a table and its unchanged copy compare by pointer, and entries a change did
/// not copy are the same allocation in both (compared by address before by value).
impl<V: Any + PartialEq> PartialEq for Table<V> {
    fn eq(&self, other: &Self) -> bool {
        self.same(other)
            || (self.len() == other.len()
                && self
                    .iter()
                    .zip(other.iter())
                    .all(|((ka, a), (kb, b))| ka == kb && (std::ptr::eq(a, b) || a == b)))
    }
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Table(RedBlackTreeMapSync::new_sync(), PhantomData)
    }
}

/// The entries of a [`Table`] in key order.
pub struct Iter<'a, V> {
    inner: rpds::map::red_black_tree_map::Iter<'a, String, Slot, archery::ArcTK>,
    _v: PhantomData<&'a V>,
}

impl<'a, V: Any> Iterator for Iter<'a, V> {
    type Item = (&'a String, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.inner
            .by_ref()
            .find_map(|(k, s)| s.downcast_ref().map(|v| (k, v)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V: Any> DoubleEndedIterator for Iter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner
            .by_ref()
            .rev()
            .find_map(|(k, s)| s.downcast_ref().map(|v| (k, v)))
    }
}

/// Exact: every slot holds a `V` (see [`Slot`]).
impl<V: Any> ExactSizeIterator for Iter<'_, V> {}

impl<V> Table<V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.0.size()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> {
        self.0.keys()
    }

    /// True when `other` is this very table or a copy of it not changed since (a pointer
    /// comparison: views use it to skip comparing what a fold did not touch).
    pub fn same(&self, other: &Self) -> bool {
        self.0.ptr_eq(&other.0)
    }
}

impl<V: Any> Table<V> {
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.get(key).and_then(|s| s.downcast_ref())
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_, V> {
        Iter {
            inner: self.0.iter(),
            _v: PhantomData,
        }
    }
}

impl<V: Any + Send + Sync + Clone> Table<V> {
    /// The value at `key`, to change in place (copied first if a snapshot shares it).
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        if !self.0.contains_key(key) {
            // rpds' `get_mut` may copy the path even when the key is absent.
            return None;
        }
        let slot = self.0.get_mut(key)?;
        if Arc::get_mut(slot).is_none() {
            // Shared with a copy of the table: this one gets its own value.
            let own: V = slot.downcast_ref::<V>()?.clone();
            *slot = Arc::new(own);
        }
        Arc::get_mut(slot)?.downcast_mut()
    }

    /// Inserts or replaces.
    pub fn insert(&mut self, key: String, value: V) {
        self.0.insert_mut(key, Arc::new(value));
    }

    /// The value at `key`, inserted as `V::default()` when absent.
    pub fn or_default(&mut self, key: String) -> &mut V
    where
        V: Default,
    {
        if !self.0.contains_key(&key) {
            self.0.insert_mut(key.clone(), Arc::new(V::default()));
        }
        self.get_mut(&key)
            .expect("the entry was just inserted or was present")
    }

    /// Changes every value in place (`rpds` has no mutable iterator: each is looked up).
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut V)) {
        let keys: Vec<String> = self.0.keys().cloned().collect();
        for k in &keys {
            if let Some(v) = self.get_mut(k) {
                f(v);
            }
        }
    }
}

impl<V> Table<V> {
    /// Removes `key`; whether it was present.
    pub fn remove<Q>(&mut self, key: &Q) -> bool
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.remove_mut(key)
    }
}

/// Panics when `key` is absent, as `BTreeMap`'s indexing does.
impl<V: Any, Q> std::ops::Index<&Q> for Table<V>
where
    String: Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        match self.get(key) {
            Some(v) => v,
            None => panic!("key not found in the table"),
        }
    }
}

impl<'a, V: Any> IntoIterator for &'a Table<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A persistent ordered set of ids (a Group's Conversations).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Set(RedBlackTreeSetSync<String>);

impl Set {
    pub fn insert(&mut self, id: String) {
        self.0.insert_mut(id);
    }

    pub fn contains(&self, id: &str) -> bool {
        self.0.contains(id)
    }

    pub fn len(&self) -> usize {
        self.0.size()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The ids in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &String> {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a Set {
    type Item = &'a String;
    type IntoIter = rpds::set::red_black_tree_set::Iter<'a, String, archery::ArcTK>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A persistent append-only list (a Group's policy log): appending after a copy shares every
/// entry already there.
#[derive(Clone, Debug, PartialEq)]
pub struct Log<T>(VectorSync<T>);

impl<T> Default for Log<T> {
    fn default() -> Self {
        Log(VectorSync::new_sync())
    }
}

impl<T> Log<T> {
    pub fn push(&mut self, entry: T) {
        self.0.push_back_mut(entry);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn last(&self) -> Option<&T> {
        self.0.last()
    }

    pub fn get(&self, index: usize) -> Option<&T> {
        self.0.get(index)
    }

    /// Changes every entry in place.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut T))
    where
        T: Clone,
    {
        for i in 0..self.0.len() {
            if let Some(e) = self.0.get_mut(i) {
                f(e);
            }
        }
    }

    /// The entries in the order they were appended.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.0.iter()
    }
}

/// Panics when `index` is out of bounds, as a `Vec`'s indexing does.
impl<T> std::ops::Index<usize> for Log<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        &self.0[index]
    }
}

#[cfg(test)]
mod tests {
    use super::{Log, Set, Table};
    use std::collections::BTreeMap;

    /// The same answers as a `BTreeMap<String, V>` for every operation, in the same order.
    #[test]
    fn behaves_as_a_btreemap() {
        let mut t = Table::new();
        let mut m = BTreeMap::new();
        for (i, k) in ["m", "b", "z", "b", "a", "m"].iter().enumerate() {
            t.insert(k.to_string(), i);
            m.insert(k.to_string(), i);
        }
        assert_eq!(t.len(), 4);
        assert!(!t.is_empty());
        assert_eq!(t.get("b"), Some(&3));
        assert_eq!(t.get("q"), None);
        assert!(t.contains_key("z"));
        assert!(!t.contains_key("y"));
        *t.get_mut("a").expect("a") += 10;
        *m.get_mut("a").expect("a") += 10;
        assert_eq!(t.get_mut("nope"), None);
        assert_eq!(
            t.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>(),
            m.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>()
        );
        assert_eq!(t.values().rev().copied().collect::<Vec<_>>(), [2, 5, 3, 14]);
        assert_eq!(t.keys().cloned().collect::<Vec<_>>(), ["a", "b", "m", "z"]);
        t.for_each_mut(|v| *v += 1);
        assert_eq!(t.values().copied().collect::<Vec<_>>(), [15, 4, 6, 3]);
        t.for_each_mut(|v| *v -= 1);
        assert!(t.remove("m"));
        assert!(!t.remove("m"));
        assert_eq!((&t).into_iter().count(), 3);
        let copy = t.clone();
        assert_eq!(copy, t);
        t.insert("n".into(), 0);
        assert_ne!(copy, t);
        assert!(Table::<u8>::default().is_empty());
        *t.or_default("n".into()) += 7;
        *t.or_default("o".into()) += 1;
        assert_eq!((t["n"], t["o"]), (7, 1));
        t.insert("n".into(), 0);
        t.remove("o");
        assert_eq!(t["n"], 0);
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t["absent"])).is_err());
    }

    /// A copy (the console's snapshot) never sees a later change, and a change to the copy
    /// never reaches the original: the sharing is invisible except through [`Table::same`].
    #[test]
    fn a_snapshot_is_unaffected_by_later_changes() {
        let mut live: Table<Vec<u32>> = Table::new();
        for i in 0..200u32 {
            live.insert(format!("w{i:03}"), vec![i]);
        }
        let snapshot = live.clone();
        assert!(snapshot.same(&live));
        live.get_mut("w007").expect("w007").push(99);
        live.insert("w500".into(), vec![500]);
        live.remove("w100");
        *live.or_default("w600".into()) = vec![6];
        assert!(!snapshot.same(&live));
        assert_eq!(snapshot.get("w007"), Some(&vec![7]));
        assert_eq!(live.get("w007"), Some(&vec![7, 99]));
        assert_eq!((snapshot.len(), live.len()), (200, 201));
        assert!(snapshot.contains_key("w100") && !live.contains_key("w100"));
        assert!(!snapshot.contains_key("w500") && !snapshot.contains_key("w600"));
        // Untouched entries are equal in both; the tables differ in exactly the touched ones.
        let differ: Vec<&String> = snapshot
            .iter()
            .filter(|(k, v)| live.get(k.as_str()) != Some(*v))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(differ, ["w007", "w100"]);
        // Changing the copy leaves the original alone.
        let mut other = snapshot.clone();
        other.get_mut("w001").expect("w001").clear();
        assert_eq!(snapshot.get("w001"), Some(&vec![1]));
        // A lookup of an absent key changes nothing, not even the sharing.
        let mut probe = snapshot.clone();
        assert_eq!(probe.get_mut("zzz"), None);
        assert!(probe.same(&snapshot));
    }

    /// Equality is by contents, whatever the sharing: tables built apart with the same entries
    /// are equal; a different length, key or value is not; a copy changed and changed back (other
    /// allocations) is equal again.
    #[test]
    fn equality_is_by_contents_whatever_the_sharing() {
        let build = |pairs: &[(&str, u32)]| {
            let mut t = Table::new();
            for (k, v) in pairs {
                t.insert(k.to_string(), *v);
            }
            t
        };
        let a = build(&[("a", 1), ("b", 2)]);
        let b = build(&[("b", 2), ("a", 1)]);
        assert!(!a.same(&b));
        assert_eq!(a, b);
        assert_ne!(a, build(&[("a", 1)]));
        assert_ne!(a, build(&[("a", 1), ("c", 2)]));
        assert_ne!(a, build(&[("a", 1), ("b", 3)]));
        let mut c = a.clone();
        *c.get_mut("a").expect("a") = 5;
        assert_ne!(a, c);
        *c.get_mut("a").expect("a") = 1;
        assert!(!a.same(&c));
        assert_eq!(a, c);
    }

    #[test]
    fn a_set_and_a_log_share_too() {
        let mut s = Set::default();
        for id in ["c", "a", "b", "a"] {
            s.insert(id.into());
        }
        let copy = s.clone();
        s.insert("d".into());
        assert_eq!(
            s.iter().map(String::as_str).collect::<Vec<_>>(),
            ["a", "b", "c", "d"]
        );
        assert_eq!((copy.len(), s.len()), (3, 4));
        assert!(s.contains("d") && !copy.contains("d") && !copy.is_empty());
        assert!(Set::default().is_empty());
        assert_eq!((&copy).into_iter().count(), 3);

        let mut log = Log::default();
        assert!(log.is_empty());
        log.push(1);
        assert!(!log.is_empty());
        log.push(2);
        let before = log.clone();
        log.push(3);
        assert_eq!(log.iter().copied().collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(before.iter().copied().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(
            (log.len(), log.last(), before.last()),
            (3, Some(&3), Some(&2))
        );
        assert_eq!((log[0], log.get(2), before.get(2)), (1, Some(&3), None));
        log.for_each_mut(|e| *e *= 10);
        assert_eq!(log.iter().copied().collect::<Vec<_>>(), [10, 20, 30]);
        assert_eq!(before.iter().copied().collect::<Vec<_>>(), [1, 2]);
    }
}
