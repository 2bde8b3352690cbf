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

#[test]
fn a_path_segment_is_encoded_like_a_query_value() {
    use app::format::path_segment;
    assert_eq!(
        path_segment("urn:missionweaveprotocol:demo:x:checkout:group"),
        "urn:missionweaveprotocol:demo:x:checkout:group"
    );
    // `/` would add a segment, `?` and `#` would end the path.
    assert_eq!(
        path_segment("https://h/g/1?x#y"),
        "https:%2F%2Fh%2Fg%2F1%3Fx%23y"
    );
}

/// The router decodes values twice (format::names): an id with a `%XX` escape is still named.
#[test]
fn an_id_is_named_by_itself_or_by_its_form_decoded_once_more() {
    use app::format::{named_id, names, percent_decoded};
    assert_eq!(
        percent_decoded("urn:a:50%2B%20x").as_deref(),
        Some("urn:a:50+ x")
    );
    assert_eq!(percent_decoded("urn:a:%C3%A9").as_deref(), Some("urn:a:é"));
    // Where decodeURIComponent throws: a lone %, a sign or non-hex after it, bytes not UTF-8.
    for bad in [
        "urn:a:50%",
        "urn:a:%2",
        "urn:a:%+1",
        "urn:a:%zz",
        "urn:a:%C3",
    ] {
        assert_eq!(percent_decoded(bad), None, "{bad}");
    }
    assert!(names("urn:a:b", "urn:a:b"));
    assert!(names("urn:a:50+", "urn:a:50%2B"));
    assert!(names("urn:a:50%2B", "urn:a:50%2B"));
    assert!(!names("urn:a:c", "urn:a:b"));
    // An id without `%` is not named by a value that merely decodes to it.
    assert!(!names("urn:a:%62", "urn:a:b"));
    let known = ["urn:a:50%2B", "urn:a:50+", "urn:a:b"];
    // The exact id first, then the id decoded once more, else the value as given.
    assert_eq!(
        named_id("urn:a:50+".into(), known.iter().copied()),
        "urn:a:50+"
    );
    assert_eq!(
        named_id("urn:a:50+".into(), known[..1].iter().copied()),
        "urn:a:50%2B"
    );
    assert_eq!(
        named_id("urn:a:new".into(), known.iter().copied()),
        "urn:a:new"
    );
}
