//! `format::svg`: the numbers written into SVG attributes are formatted from integers, and say
//! the same as the float text they replace; a node title too long for its box is cut with "…",
//! counting CJK characters as two columns.

use app::format::svg::{columns, coord, cut_on_two, fit, num, scale, wrap2, wrap3};
use std::borrow::Cow;

#[test]
fn coord_rounds_to_the_nearest_unit() {
    assert_eq!(coord(12.4), 12);
    assert_eq!(coord(12.5), 13);
    assert_eq!(coord(-3.6), -4);
    assert_eq!(coord(f64::NAN), 0);
    assert_eq!(coord(1e300), i64::MAX);
}

#[test]
fn num_keeps_two_decimals_without_trailing_zeros() {
    assert_eq!(num(1.0), "1");
    assert_eq!(num(1.25), "1.25");
    assert_eq!(num(1.25 * 1.25), "1.56");
    assert_eq!(num(0.2), "0.2");
    assert_eq!(num(-0.5), "-0.5");
    assert_eq!(num(-0.004), "0");
    assert_eq!(num(-12.07), "-12.07");
    assert_eq!(num(0.0), "0");
}

#[test]
fn num_agrees_with_float_text_for_every_zoom_step() {
    // The DAG's zoom goes by ×1.25 and ÷1.25 between 0.2 and 4.
    let mut z = 0.2f64;
    while z <= 4.0 {
        let expected = format!("{:.2}", z);
        let expected = expected.trim_end_matches('0').trim_end_matches('.');
        assert_eq!(num(z), expected, "zoom {z}");
        z *= 1.25;
    }
}

#[test]
fn scale_places_a_value_on_an_axis() {
    assert_eq!(scale(0, 10, 600), 0);
    assert_eq!(scale(5, 10, 600), 300);
    assert_eq!(scale(10, 10, 600), 600);
    assert_eq!(scale(1, 3, 200), 66);
    assert_eq!(scale(7, 0, 200), 1400);
    assert_eq!(scale(u64::MAX, u64::MAX, 600), 600);
    assert_eq!(scale(u64::MAX, 1, u64::MAX), i64::MAX);
}

#[test]
fn fit_keeps_a_title_that_fits_and_cuts_a_longer_one_with_an_ellipsis() {
    // Exactly fits: 22 columns, kept whole and borrowed.
    let exact = "Document the payment f";
    assert_eq!(exact.chars().count(), 22);
    assert!(matches!(fit(exact, 22), Cow::Borrowed(t) if t == exact));
    // One over: cut to 21 columns and the ellipsis, which is 22 again.
    let over = "Document the payment fl";
    assert_eq!(fit(over, 22), "Document the payment…");
    assert_eq!(
        fit("Document the payment provider's webhooks", 22),
        "Document the payment…"
    );
    // The cut never leaves a space before the ellipsis.
    assert_eq!(fit("abcdefghij klmnopqrstuvwxyz", 12), "abcdefghij…");
    // Empty and short titles are kept.
    assert_eq!(fit("", 22), "");
    assert_eq!(fit("Ship", 22), "Ship");
    // No room at all: the ellipsis alone says something was there.
    assert_eq!(fit("Ship", 0), "…");
}

#[test]
fn fit_counts_characters_not_bytes_and_cjk_as_wide() {
    // French accents are one column each (two bytes each in UTF-8).
    let fr = "Vérifier l’intégrité des reçus émis";
    assert_eq!(fit(fr, 22), "Vérifier l’intégrité…");
    assert_eq!(fit("Édition été", 22), "Édition été");
    // zh-Hant: two columns a character; 11 fit in 22, 12 do not.
    assert_eq!(columns('驗'), 2);
    assert_eq!(columns('é'), 1);
    assert_eq!(columns('a'), 1);
    assert_eq!(columns('，'), 2);
    let eleven = "驗證付款服務供應商的回";
    assert_eq!(fit(eleven, 22), eleven);
    assert_eq!(fit("驗證付款服務供應商的回呼", 22), "驗證付款服務供應商的…");
    // Mixed: "WorkItem " is 9 columns, then 6 ideographs (12) = 21, the 7th would pass 21.
    assert_eq!(
        fit("WorkItem 驗證付款服務供應商", 22),
        "WorkItem 驗證付款服務…"
    );
}

#[test]
fn wrap2_breaks_a_title_after_the_last_space_that_fits_and_cuts_only_past_two_lines() {
    // Fits on the first line: one line, the text itself.
    assert_eq!(
        wrap2("Implement the checkout service", 35, 35),
        ("Implement the checkout service", None)
    );
    assert_eq!(wrap2("", 35, 35), ("", None));
    // One column too many for the first line: broken at the last space, nothing lost.
    let t = "Security review of the checkout service (child Mission)";
    let (a, b) = wrap2(t, 35, 35);
    assert_eq!(a, "Security review of the checkout");
    assert_eq!(b.as_deref(), Some("service (child Mission)"));
    assert_eq!(format!("{a} {}", b.unwrap_or_default()), t);
    // The first line can be shorter (the critical path's "◆ " takes two columns of it).
    let (a, b) = wrap2("Deploy the checkout service to staging", 33, 35);
    assert_eq!(
        (a, b.as_deref()),
        ("Deploy the checkout service to", Some("staging"))
    );
    let (a, b) = wrap2("Deploy the checkout service to staging", 29, 35);
    assert_eq!(
        (a, b.as_deref()),
        ("Deploy the checkout service", Some("to staging"))
    );
    // Longer than two lines: the second is cut with "…", never the first.
    let (a, b) = wrap2("Document the payment provider's API schema", 19, 19);
    assert_eq!(
        (a, b.as_deref()),
        ("Document the", Some("payment provider's…"))
    );
    // A word longer than the line breaks where the line is full.
    let (a, b) = wrap2("urn:missionweaveprotocol:work:api", 10, 30);
    assert_eq!(
        (a, b.as_deref()),
        ("urn:missio", Some("nweaveprotocol:work:api"))
    );
    // CJK text (no spaces, two columns a character) breaks between characters.
    let (a, b) = wrap2("驗證付款服務供應商的回呼", 10, 10);
    assert_eq!((a, b.as_deref()), ("驗證付款服", Some("務供應商…")));
    let (a, b) = wrap2("驗證付款服務供應商的回呼", 12, 12);
    assert_eq!((a, b.as_deref()), ("驗證付款服務", Some("供應商的回呼")));
}

#[test]
fn wrap3_continues_where_two_lines_cut_and_cuts_only_past_three() {
    let t = "Security review of the checkout service (child Mission)";
    // Two lines of 30 columns cut it; three keep it whole, broken at spaces.
    assert!(cut_on_two(t, 30, 30));
    let (a, b, c) = wrap3(t, 30, 30);
    assert_eq!(
        (a, b.as_deref(), c.as_deref()),
        (
            "Security review of the",
            Some("checkout service (child"),
            Some("Mission)")
        )
    );
    assert_eq!(
        format!("{a} {} {}", b.unwrap_or_default(), c.unwrap_or_default()),
        t
    );
    // What fits two lines takes two; one line, one.
    assert!(!cut_on_two(t, 35, 35));
    let (a, b, c) = wrap3(t, 35, 35);
    assert_eq!(
        (a, b.as_deref(), c),
        (
            "Security review of the checkout",
            Some("service (child Mission)"),
            None
        )
    );
    assert_eq!(
        wrap3("Test the checkout service", 30, 30),
        ("Test the checkout service", None, None)
    );
    assert_eq!(wrap3("", 30, 30), ("", None, None));
    // Longer than three lines: the third is cut with "…".
    let (_, _, c) = wrap3(t, 10, 10);
    assert!(c.as_deref().is_some_and(|c| c.ends_with('…')), "{c:?}");
    assert!(!cut_on_two("", 1, 1));
}
