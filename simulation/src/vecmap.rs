//! [`VecMap`]: a sorted `Vec` of pairs with binary search, for the small maps of the demo's
//! Agents and node (a handful of Agents, at most 16 connections, the Commands in flight).
//!
//! Each `BTreeMap<K, V>` monomorphizes the whole B-tree (insert with node splits, removal with
//! rebalancing, iteration, drop) for its key and value types: 6 to 8 KB of wasm code per pair in
//! the static demo's module (issue 30). A `VecMap` costs a binary search and a `Vec` insert or
//! remove per pair. Same order and answers as a `BTreeMap`; linear inserts and removals, which
//! is nothing at these sizes.

use std::borrow::Borrow;

/// A map in key order over a sorted `Vec<(K, V)>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord, V> VecMap<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let i = self.find(key).ok()?;
        self.entries.get(i).map(|(_, v)| v)
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let i = self.find(key).ok()?;
        self.entries.get_mut(i).map(|(_, v)| v)
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    /// Inserts or replaces; the previous value, if any.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => self
                .entries
                .get_mut(i)
                .map(|(_, v)| std::mem::replace(v, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// The value at `key`, inserted as `V::default()` when absent (`entry(key).or_default()`).
    pub fn or_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (key, V::default()));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// The value at `key`, inserted as `make()` when absent (`entry(key).or_insert_with(make)`).
    pub fn or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (key, make()));
                i
            }
        };
        &mut self.entries[i].1
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let i = self.find(key).ok()?;
        Some(self.entries.remove(i).1)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

/// Panics when `key` is absent, as `BTreeMap`'s indexing does.
impl<K: Ord + Borrow<Q>, V, Q: Ord + ?Sized> std::ops::Index<&Q> for VecMap<K, V> {
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        match self.get(key) {
            Some(v) => v,
            None => panic!("key not found in the map"),
        }
    }
}

impl<'a, K: Ord, V> IntoIterator for &'a VecMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::VecMap;
    use std::collections::BTreeMap;

    /// The same answers and order as a `BTreeMap` for every operation.
    #[test]
    fn behaves_as_a_btreemap() {
        let mut v = VecMap::new();
        let mut b = BTreeMap::new();
        for (i, k) in ["m", "b", "z", "b", "a", "m", "q"].iter().enumerate() {
            assert_eq!(v.insert(k.to_string(), i), b.insert(k.to_string(), i));
        }
        assert_eq!(v.len(), b.len());
        assert!(!v.is_empty() && VecMap::<u8, u8>::new().is_empty());
        assert_eq!(v.get("b"), b.get("b"));
        assert_eq!(v.get("nope"), None);
        assert!(v.contains_key("z") && !v.contains_key("y"));
        *v.get_mut("a").expect("a") += 10;
        *b.get_mut("a").expect("a") += 10;
        assert_eq!(v.get_mut("nope"), None);
        *v.or_default("n".into()) += 7;
        *b.entry("n".to_string()).or_default() += 7;
        *v.or_insert_with("a".into(), || 100) += 1;
        *b.entry("a".to_string()).or_insert_with(|| 100) += 1;
        *v.or_insert_with("p".into(), || 100) += 1;
        *b.entry("p".to_string()).or_insert_with(|| 100) += 1;
        assert_eq!((v["p"], v["n"]), (101, 7));
        assert!(std::panic::catch_unwind(|| v["absent"]).is_err());
        *v.or_default("a".into()) += 1;
        *b.entry("a".to_string()).or_default() += 1;
        assert_eq!(v.remove("m"), b.remove("m"));
        assert_eq!(v.remove("m"), None);
        v.retain(|k, x| {
            *x += 1;
            k != "q"
        });
        b.retain(|k, x| {
            *x += 1;
            k != "q"
        });
        for x in v.values_mut() {
            *x *= 2;
        }
        for x in b.values_mut() {
            *x *= 2;
        }
        let pairs = |m: &BTreeMap<String, usize>| {
            m.iter().map(|(k, x)| (k.clone(), *x)).collect::<Vec<_>>()
        };
        assert_eq!(
            v.iter().map(|(k, x)| (k.clone(), *x)).collect::<Vec<_>>(),
            pairs(&b)
        );
        assert_eq!(
            v.keys().rev().collect::<Vec<_>>(),
            b.keys().rev().collect::<Vec<_>>()
        );
        assert_eq!(
            v.values().collect::<Vec<_>>(),
            b.values().collect::<Vec<_>>()
        );
        assert_eq!((&v).into_iter().count(), b.len());
    }
}
