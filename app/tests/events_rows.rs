//! The Events view's row model (`app::routes::events::applied_by_id`): an applied Event shows
//! its verified mark even when a rejected copy under the same Event ID (a tampered copy) came
//! first; the rejected copy stays its own row in the rejected list, never merged.

use app::routes::events::applied_by_id;
use app::state::EventRow;

fn row(id: &str, hash: Option<&str>, rejected: Option<&str>) -> EventRow {
    EventRow {
        event_id: id.into(),
        group_id: Some("urn:missionweaveprotocol:group:alpha".into()),
        sequence: Some(1),
        kind: "work.created".into(),
        occurred_at: "2030-01-01T00:00:00Z".into(),
        signing_hash: hash.map(str::to_owned),
        rejected: rejected.map(|c| (c.to_owned(), "signature does not verify".to_owned())),
    }
}

#[test]
fn a_rejected_copy_before_the_genuine_event_does_not_hide_its_verified_mark() {
    let rows = vec![
        row("ev-1", None, Some("SIGNATURE_INVALID")),
        row("ev-1", Some("sha256:aa"), None),
        row("ev-2", Some("sha256:bb"), None),
    ];
    let by_id = applied_by_id(&rows);
    assert_eq!(by_id.len(), 2);
    let ev1 = by_id.get("ev-1").expect("the applied Event's row");
    assert_eq!(ev1.signing_hash.as_deref(), Some("sha256:aa"));
    assert!(ev1.rejected.is_none());
    // The rejected copy keeps its own row (the view lists rows with `rejected`).
    let rejected: Vec<&EventRow> = rows.iter().filter(|r| r.rejected.is_some()).collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].event_id, "ev-1");
}

#[test]
fn a_rejected_copy_alone_is_no_applied_row_and_after_the_genuine_one_changes_nothing() {
    let only_rejected = vec![row("ev-9", None, Some("SIGNATURE_INVALID"))];
    assert!(applied_by_id(&only_rejected).is_empty());
    let rows = vec![
        row("ev-1", Some("sha256:aa"), None),
        row("ev-1", None, Some("SIGNATURE_INVALID")),
    ];
    let by_id = applied_by_id(&rows);
    assert_eq!(
        by_id.get("ev-1").and_then(|r| r.signing_hash.as_deref()),
        Some("sha256:aa")
    );
}

/// The compact timeline's span, placed by integer per-milles (no float formatting in the
/// Events view's chunk): one decimal, 0 and 100 included.
#[test]
fn a_lane_span_is_a_percentage_from_integers() {
    use app::routes::events::css_percent;
    assert_eq!(css_percent(0), "0.0%");
    assert_eq!(css_percent(125), "12.5%");
    assert_eq!(css_percent(999), "99.9%");
    assert_eq!(css_percent(1000), "100.0%");
}
