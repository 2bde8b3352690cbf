//! Stable sorting through one shared instance of the standard library's sort.
//!
//! `slice::sort_by` is monomorphized per element type and comparator: in the console's module
//! each of the views' sorts was its own copy of the sort (about 3 KB of code each). These
//! functions sort positions (`usize`) with a `dyn` comparator, so every caller shares one copy,
//! then move the elements into that order; the result is the same as `sort_by`'s (stable).

use std::cmp::Ordering;

/// `v.sort_by(cmp)`: stable, equal elements keep their order.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let mut order: Vec<usize> = (0..v.len()).collect();
    sort_positions(&mut order, &mut |a, b| cmp(&v[a], &v[b]));
    permute(v, &mut order);
}

/// `v.sort_by_key(key)`.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// `v.sort()`.
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp);
}

/// The one instance of the standard library's stable sort (on positions).
#[inline(never)]
fn sort_positions(order: &mut [usize], cmp: &mut dyn FnMut(usize, usize) -> Ordering) {
    order.sort_by(|&a, &b| cmp(a, b));
}

/// Puts `v[order[i]]` at `i`, following each cycle of the permutation once (`order` is used up).
fn permute<T>(v: &mut [T], order: &mut [usize]) {
    for start in 0..v.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start || from == at {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sorts_like_the_standard_library_and_keeps_equal_elements_in_order() {
        let mut v = vec![(3, 'a'), (1, 'b'), (3, 'c'), (2, 'd'), (1, 'e')];
        sort_by_key(&mut v, |p| p.0);
        assert_eq!(v, [(1, 'b'), (1, 'e'), (2, 'd'), (3, 'a'), (3, 'c')]);
        let mut s = vec!["b".to_owned(), "a".to_owned(), "c".to_owned()];
        sort(&mut s);
        assert_eq!(s, ["a", "b", "c"]);
        let mut empty: Vec<u8> = Vec::new();
        sort(&mut empty);
        assert!(empty.is_empty());
    }

    #[test]
    fn a_reversing_comparator_is_not_a_sort() {
        let mut v = vec![1, 2, 3];
        sort_by(&mut v, |a, b| b.cmp(a));
        assert_eq!(v, [3, 2, 1]);
        assert_ne!(v, [1, 2, 3]);
    }

    proptest! {
        #[test]
        fn same_result_as_sort_by(v in proptest::collection::vec((0u8..8, any::<u16>()), 0..200)) {
            let mut ours = v.clone();
            let mut std_ = v;
            sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
            std_.sort_by_key(|a| a.0);
            prop_assert_eq!(ours, std_);
        }
    }
}
