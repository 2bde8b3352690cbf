//! Protocol identifiers on screen. A `urn:…` id is long (`urn:missionweaveprotocol:agent:
//! coordinator`) and, in a card or a table cell, used to wrap letter by letter. [`Id`] lets it
//! break only after its colons, so it wraps at its own structure, and is never translated.

use leptos::prelude::*;

/// `id` cut after each colon: `"urn:a:b"` → `["urn:", "a:", "b"]`. Joined, the parts are `id`.
pub fn after_colons(id: &str) -> Vec<&str> {
    id.split_inclusive(':').collect()
}

/// The length of the longest prefix ending just after a colon that all of `ids` share and that
/// leaves each of them a non-empty rest: in a table column of ids from one Organization
/// (`urn:missionweaveprotocol:demo:x:checkout:group`, `…:search:group`) the part a reader has
/// to skip on every row. 0 when there is none (or no id).
pub fn shared_prefix<'a>(ids: impl IntoIterator<Item = &'a str>) -> usize {
    let mut ids = ids.into_iter();
    let Some(first) = ids.next() else {
        return 0;
    };
    let mut len = first.len();
    let mut shortest = first.len();
    for id in ids {
        len = first
            .bytes()
            .zip(id.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
        shortest = shortest.min(id.len());
    }
    // Back to just after a colon, short of the shortest id (its rest must not be empty).
    let mut cut = len.min(shortest.saturating_sub(1));
    while cut > 0 && first.as_bytes()[cut - 1] != b':' {
        cut -= 1;
    }
    cut
}

/// A protocol identifier in `<code>`, breakable after each colon (`<wbr>`), never translated.
/// With `elide`, its first `elide` bytes (a column's [`shared_prefix`]) are drawn as "…" but
/// stay in the text for screen readers and copying (visually hidden), and in the tooltip.
#[component]
pub fn Id(#[prop(into)] id: String, #[prop(optional)] elide: usize) -> impl IntoView {
    let (hidden, rest) = match id.split_at_checked(elide) {
        Some((h, r)) if !h.is_empty() && !r.is_empty() => (h.to_owned(), r.to_owned()),
        _ => (String::new(), id.clone()),
    };
    let parts: Vec<String> = after_colons(&rest).into_iter().map(str::to_owned).collect();
    let elided = !hidden.is_empty();
    let title = elided.then(|| id.clone());
    view! {
        <code class="id" class:elided=elided translate="no" title=title>
            {elided.then(|| view! { <span class="sr-only">{hidden}</span> })}
            {parts.into_iter().map(|p| view! { {p}<wbr /> }).collect_view()}
        </code>
    }
}
#[cfg(test)]
mod tests {
    use super::{after_colons, shared_prefix};

    #[test]
    fn a_column_of_ids_shares_the_prefix_up_to_its_last_common_colon() {
        let groups = [
            "urn:missionweaveprotocol:demo:x:checkout:group",
            "urn:missionweaveprotocol:demo:x:search:group",
        ];
        assert_eq!(
            shared_prefix(groups),
            "urn:missionweaveprotocol:demo:x:".len()
        );
        // Sharing part of a segment is not enough: the cut is after a colon.
        assert_eq!(
            shared_prefix(["urn:a:checkout", "urn:a:check"]),
            "urn:a:".len()
        );
        // One distinct id keeps its last segment.
        assert_eq!(shared_prefix(["urn:a:b", "urn:a:b"]), "urn:a:".len());
        assert_eq!(shared_prefix(["urn:a:b"]), "urn:a:".len());
        // An id that is the prefix itself (ending in a colon) keeps a non-empty rest.
        assert_eq!(shared_prefix(["urn:a:", "urn:a:b"]), "urn:".len());
        assert_eq!(shared_prefix(["urn:uuid:1", "x:uuid:1"]), 0);
        assert_eq!(shared_prefix(["no-colon", "no-colon"]), 0);
        assert_eq!(shared_prefix(["", "urn:a"]), 0);
        assert_eq!(shared_prefix(std::iter::empty()), 0);
        // Multi-byte text: the cut is at a colon, so always on a character boundary.
        assert_eq!(shared_prefix(["urn:é:ü", "urn:é:ö"]), "urn:é:".len());
    }

    #[test]
    fn an_id_breaks_after_each_colon_and_its_parts_join_back_to_it() {
        let id = "urn:missionweaveprotocol:agent:coordinator";
        let parts = after_colons(id);
        assert_eq!(
            parts,
            ["urn:", "missionweaveprotocol:", "agent:", "coordinator"]
        );
        assert_eq!(parts.concat(), id);
        assert_eq!(after_colons("no-colon"), ["no-colon"]);
        assert_eq!(after_colons("a::b:"), ["a:", ":", "b:"]);
        assert!(after_colons("").is_empty());
    }
}
