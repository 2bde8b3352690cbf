//! [`Table`]: the State's maps from an Organization-wide id to a projection.
//!
//! Each projection is boxed so that every table has the same node layout (`String` keys,
//! pointer values): the B-tree code (search, insertion, node splits) compiled for one is
//! byte-for-byte the code for all of them, and the browser module carries one copy instead of
//! one per projection type (`wasm-opt` merges identical functions). The order, the lookups and
//! the values are exactly those of a `BTreeMap<String, V>`.

use std::borrow::Borrow;
use std::collections::btree_map::{self, BTreeMap};

/// A `BTreeMap<String, V>` with its values boxed (see the module's note).
#[derive(Clone, Debug, PartialEq)]
pub struct Table<V>(BTreeMap<String, Box<V>>);

impl<V> Default for Table<V> {
    fn default() -> Self {
        Table(BTreeMap::new())
    }
}

type Values<'a, V> = std::iter::Map<btree_map::Values<'a, String, Box<V>>, fn(&Box<V>) -> &V>;
type Iter<'a, V> = std::iter::Map<
    btree_map::Iter<'a, String, Box<V>>,
    fn((&'a String, &'a Box<V>)) -> (&'a String, &'a V),
>;

// The B-tree holds `Box<V>`: its iterators yield `&Box<V>`, unboxed here.
#[allow(clippy::borrowed_box)]
fn unbox<V>(v: &Box<V>) -> &V {
    v
}

#[allow(clippy::borrowed_box)]
fn unbox_entry<'a, V>((k, v): (&'a String, &'a Box<V>)) -> (&'a String, &'a V) {
    (k, v)
}

impl<V> Table<V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.get(key).map(|v| &**v)
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.get_mut(key).map(|v| &mut **v)
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.contains_key(key)
    }

    /// Inserts or replaces; the previous value, if any.
    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        self.0.insert(key, Box::new(value)).map(|v| *v)
    }

    /// The value at `key`, inserted as `V::default()` when absent.
    pub fn or_default(&mut self, key: String) -> &mut V
    where
        V: Default,
    {
        self.0.entry(key).or_default()
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        String: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.0.remove(key).map(|v| *v)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values in key order.
    pub fn values(&self) -> Values<'_, V> {
        self.0.values().map(unbox as fn(&Box<V>) -> &V)
    }

    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> {
        self.0.values_mut().map(|v| &mut **v)
    }

    pub fn keys(&self) -> btree_map::Keys<'_, String, Box<V>> {
        self.0.keys()
    }

    /// The entries in key order.
    pub fn iter<'a>(&'a self) -> Iter<'a, V> {
        self.0
            .iter()
            .map(unbox_entry as fn((&'a String, &'a Box<V>)) -> (&'a String, &'a V))
    }
}

/// Panics when `key` is absent, as `BTreeMap`'s indexing does.
impl<V, Q> std::ops::Index<&Q> for Table<V>
where
    String: Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        &self.0[key]
    }
}

impl<'a, V> IntoIterator for &'a Table<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::Table;
    use std::collections::BTreeMap;

    /// The same answers as a `BTreeMap<String, V>` for every operation, in the same order.
    #[test]
    fn behaves_as_a_btreemap() {
        let mut t = Table::new();
        let mut m = BTreeMap::new();
        for (i, k) in ["m", "b", "z", "b", "a", "m"].iter().enumerate() {
            assert_eq!(t.insert(k.to_string(), i), m.insert(k.to_string(), i));
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
        for v in t.values_mut() {
            *v += 1;
        }
        assert_eq!(t.values().copied().collect::<Vec<_>>(), [15, 4, 6, 3]);
        assert_eq!(t.remove("m"), Some(6));
        assert_eq!(t.remove("m"), None);
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
        assert!(std::panic::catch_unwind(|| t["absent"]).is_err());
    }
}
