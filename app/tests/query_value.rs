//! Ids in a URL query (`format::query_value`): readable where they can be, never able to end
//! or change the query.

use app::format::query_value;

#[test]
fn an_urn_stays_readable() {
    assert_eq!(
        query_value("urn:missionweaveprotocol:demo:x:checkout:mission"),
        "urn:missionweaveprotocol:demo:x:checkout:mission"
    );
}

#[test]
fn the_bytes_that_would_end_or_change_a_query_are_percent_encoded() {
    assert_eq!(
        query_value("https://h/p?a=1&b=2#f"),
        "https:%2F%2Fh%2Fp%3Fa%3D1%26b%3D2%23f"
    );
    assert_eq!(query_value("urn:a:50%+x y"), "urn:a:50%25%2Bx%20y");
    // Non-ASCII text: each UTF-8 byte.
    assert_eq!(query_value("urn:a:é"), "urn:a:%C3%A9");
}
