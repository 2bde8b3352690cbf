//! Protocol identifiers on screen. A `urn:…` id is long (`urn:missionweaveprotocol:agent:
//! coordinator`) and, in a card or a table cell, used to wrap letter by letter. [`Id`] lets it
//! break only after its colons, so it wraps at its own structure, and is never translated.

use leptos::prelude::*;

/// `id` cut after each colon: `"urn:a:b"` → `["urn:", "a:", "b"]`. Joined, the parts are `id`.
pub fn after_colons(id: &str) -> Vec<&str> {
    id.split_inclusive(':').collect()
}

/// A protocol identifier in `<code>`, breakable after each colon (`<wbr>`), never translated.
#[component]
pub fn Id(#[prop(into)] id: String) -> impl IntoView {
    let parts: Vec<String> = after_colons(&id).into_iter().map(str::to_owned).collect();
    view! {
        <code class="id" translate="no">
            {parts.into_iter().map(|p| view! { {p}<wbr /> }).collect_view()}
        </code>
    }
}
#[cfg(test)]
mod tests {
    use super::after_colons;

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
