//! `format::svg`: the numbers written into SVG attributes are formatted from integers, and say
//! the same as the float text they replace.

use app::format::svg::{coord, num, scale};

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
