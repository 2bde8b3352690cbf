//! The Budget Ledger's burn-down geometry (`views::ledger::chart`): nice value and time ticks,
//! the scales, the projection and its cut at the Mission deadline, the zoomed panel, the usage
//! bar's share.

use wasm_core::authority::Micros;
use wasm_core::views::ledger::Forecast;
use wasm_core::views::ledger::chart::{
    self, BurnDown, LEFT, Level, MAIN_HEIGHT, MAIN_TOP, Outlook, TimeGrain, WIDTH,
};

const S: i64 = Micros::PER_SECOND;
/// 2026-12-03T05:00:00Z.
const T0: i64 = 1_796_274_000 * S;

fn at(seconds: i64) -> Micros {
    Micros(T0 + seconds * S)
}

fn is_nice(step: u64) -> bool {
    let mut s = step;
    while s >= 10 && s.is_multiple_of(10) {
        s /= 10;
    }
    matches!(s, 1 | 2 | 5)
}

#[test]
fn value_ticks_start_at_zero_and_end_at_the_first_nice_step_over_the_max() {
    assert_eq!(
        chart::value_ticks(2_000_000, 5),
        vec![0, 500_000, 1_000_000, 1_500_000, 2_000_000]
    );
    assert_eq!(
        chart::value_ticks(22_500, 4),
        vec![0, 10_000, 20_000, 30_000]
    );
    assert_eq!(chart::value_ticks(7, 5), vec![0, 2, 4, 6, 8]);
    // Nothing used: a scale of one unit, never an empty one.
    assert_eq!(chart::value_ticks(0, 5), vec![0, 1]);
    assert_eq!(chart::value_ticks(1, 5), vec![0, 1]);
    // Both ends: 0 below, and the top is at or over the max with the tick before it under it.
    for max in (1..2_000u64).chain([9_999, 10_000, 10_001, 123_456_789, u64::MAX / 3]) {
        for steps in [3u64, 4, 5] {
            let t = chart::value_ticks(max, steps);
            let step = t[1] - t[0];
            assert_eq!(t[0], 0, "{max}/{steps}");
            assert!(is_nice(step), "{max}: step {step}");
            assert!(*t.last().unwrap() >= max, "{max}: top {t:?}");
            assert!(t[t.len() - 2] < max, "{max}: a tick too many {t:?}");
            assert!(t.len() as u64 - 1 <= steps, "{max}: {} steps", t.len() - 1);
            assert!(t.windows(2).all(|w| w[1] - w[0] == step));
        }
    }
    // The smallest nice step that fits, not a larger one.
    assert_eq!(chart::nice_step(1_000, 5), 200);
    assert_eq!(chart::nice_step(1_001, 5), 500);
    assert_eq!(chart::nice_step(u64::MAX, 5), 5_000_000_000_000_000_000);
}

#[test]
fn time_ticks_are_round_multiples_inside_the_span() {
    // 50 minutes from 05:00:07: every 15 minutes from 05:15.
    let (ticks, grain) = chart::time_ticks(at(7), at(3_000), 4);
    assert_eq!(ticks, vec![at(900), at(1_800), at(2_700)]);
    assert_eq!(grain, TimeGrain::Minutes);
    // 40 seconds: 15-second steps, labels with seconds.
    let (ticks, grain) = chart::time_ticks(at(0), at(40), 4);
    assert_eq!(ticks, vec![at(0), at(15), at(30)]);
    assert_eq!(grain, TimeGrain::Seconds);
    // A day and a half in 12-hour steps: the date is on each label; ten days: whole days.
    assert_eq!(
        chart::time_ticks(at(0), at(36 * 3_600), 4).1,
        TimeGrain::DateMinutes
    );
    assert_eq!(
        chart::time_ticks(at(0), at(10 * 86_400), 4).1,
        TimeGrain::Date
    );
    for span in [
        1i64,
        59,
        61,
        3_599,
        3_601,
        86_399,
        86_401,
        40 * 86_400,
        5_000 * 86_400,
    ] {
        for offset in [0i64, 1, 37, 1_234] {
            let (t0, t1) = (at(offset), at(offset + span));
            let (ticks, _) = chart::time_ticks(t0, t1, 4);
            let step = chart::time_step(t1.0 - t0.0, 4);
            assert!(!ticks.is_empty() || step > span * S, "{span}: no tick");
            assert!(ticks.len() <= 4, "{span}: {} ticks", ticks.len());
            assert!(
                ticks
                    .iter()
                    .all(|t| *t >= t0 && *t <= t1 && t.0 % step == 0),
                "{span}+{offset}: {ticks:?}"
            );
        }
    }
}

fn chart(series: &[(Micros, u64)], limit: u64, f: Forecast, now: Micros) -> BurnDown {
    chart::burn_down(series, Some(limit), f, now, at(86_400))
}

#[test]
fn zero_usage_is_a_flat_line_on_the_axis_without_projection_or_zoom() {
    let c = chart(&[(at(0), 0)], 1_000, Forecast::Steady, at(600));
    assert_eq!(c.outlook, Outlook::Steady);
    assert_eq!(c.main.used, vec![(LEFT, MAIN_TOP + MAIN_HEIGHT)]);
    assert_eq!(c.limit, Some((1_000, MAIN_TOP)));
    assert!(c.projection.is_none() && c.exhaustion.is_none() && c.zoom.is_none());
    // The x axis runs to now.
    assert_eq!((c.main.t0, c.main.t1), (at(0), at(600)));
    assert_eq!(c.main.x(at(600)), c.right);
}

#[test]
fn usage_at_the_limit_reaches_the_limit_line() {
    let series = [(at(0), 0), (at(60), 400), (at(120), 1_000)];
    let c = chart(&series, 1_000, Forecast::Exhausted, at(120));
    let (_, limit_y) = c.limit.unwrap();
    assert_eq!(c.main.used.last(), Some(&(c.right, limit_y)));
    assert_eq!(c.outlook, Outlook::Exhausted);
    assert!(c.projection.is_none() && c.zoom.is_none());
    // Steps: usage holds until the next usage Event, then rises.
    let y = |v| c.main.y(v);
    let x = |s| c.main.x(at(s));
    assert_eq!(
        c.main.used,
        vec![
            (x(0), y(0)),
            (x(60), y(0)),
            (x(60), y(400)),
            (x(120), y(400)),
            (x(120), y(1_000))
        ]
    );
}

#[test]
fn a_projection_within_the_deadline_ends_on_the_limit_at_the_marked_exhaustion() {
    let series = [(at(0), 0), (at(600), 100)];
    let c = chart(&series, 1_000, Forecast::At(at(6_000)), at(900));
    assert_eq!(c.outlook, Outlook::Within { at: at(6_000) });
    assert_eq!(c.main.t1, at(6_000));
    let (_, limit_y) = c.limit.unwrap();
    assert_eq!(c.exhaustion, Some((c.right, limit_y)));
    let [from, to] = c.projection.unwrap();
    assert_eq!(from, (c.main.x(at(600)), c.main.y(100)));
    assert_eq!(to, (c.right, limit_y));
    // The deadline (a day later) is off this axis.
    assert_eq!(c.deadline, None);
}

#[test]
fn a_projection_beyond_the_mission_deadline_stops_at_the_deadline_unmarked() {
    let series = [(at(0), 0), (at(3_600), 100)];
    // 1 000 reached after 36 000 s at this rate; the deadline is at 7 200 s.
    let deadline = at(7_200);
    let c = chart::burn_down(
        &series,
        Some(1_000),
        Forecast::At(at(36_000)),
        at(3_600),
        deadline,
    );
    assert_eq!(c.outlook, Outlook::AfterDeadline { at: at(36_000) });
    assert_eq!(c.exhaustion, None);
    assert_eq!(c.main.t1, deadline);
    assert_eq!(c.deadline, Some(c.right));
    let [from, to] = c.projection.unwrap();
    assert_eq!(from, (c.main.x(at(3_600)), c.main.y(100)));
    // At the deadline the line has climbed 900 × 3 600 / 32 400 = 100 more: 200.
    assert_eq!(to, (c.right, c.main.y(200)));
    assert!(
        to.1 > c.limit.unwrap().1,
        "the projection stays under the limit"
    );
}

#[test]
fn one_sample_at_now_still_has_a_time_axis() {
    let c = chart(&[(at(0), 0)], 1_000, Forecast::Steady, at(0));
    assert_eq!(c.main.t1, at(1), "one second wide");
    assert_eq!(c.main.used.len(), 1);
    assert!(!c.main.x_ticks.is_empty());
    // No sample at all: an empty chart at now.
    let c = chart::burn_down(&[], None, Forecast::NotGranted, at(5), at(10));
    assert!(c.main.used.is_empty() && c.limit.is_none() && c.projection.is_none());
    assert_eq!(c.outlook, Outlook::NotGranted);
    assert_eq!(c.main.y_ticks.last().map(|t| t.0), Some(1));
}

#[test]
fn small_usage_gets_a_zoomed_panel_on_its_own_scale() {
    // The demo's shape: 22 500 of 2 000 000 tokens.
    let series = [(at(0), 0), (at(300), 7_500), (at(600), 22_500)];
    let c = chart(&series, 2_000_000, Forecast::At(at(50_000)), at(700));
    // On the main scale it is 2 units above the axis: unreadable.
    let main_rise = c.main.bottom - c.main.y(22_500);
    assert!(main_rise <= 2, "{main_rise}");
    let z = c.zoom.as_ref().expect("zoomed panel");
    assert_eq!(
        z.y_ticks.iter().map(|t| t.0).collect::<Vec<_>>(),
        vec![0, 10_000, 20_000, 30_000]
    );
    // Zoomed: 3/4 of the panel's height, over the time the usage Events cover (opening to the
    // last one, not to now: the line is flat after it).
    assert_eq!(z.bottom - z.y(22_500), 75);
    assert_eq!((z.t0, z.t1), (at(0), at(600)));
    assert_eq!(z.used.last(), Some(&(c.right, z.y(22_500))));
    assert!(z.top > c.main.bottom, "below the main panel");
    assert_eq!(c.height, z.bottom + chart::BOTTOM);
    assert_eq!(z.used.last(), Some(&(z.x(at(600)), z.y(22_500))));
    // Usage over a quarter of the scale needs no zoom.
    let c = chart(
        &[(at(0), 0), (at(60), 600)],
        2_000,
        Forecast::Steady,
        at(60),
    );
    assert!(c.zoom.is_none());
    assert_eq!(c.width, WIDTH);
}

#[test]
fn usage_share_and_level_for_the_table_bar() {
    assert_eq!(chart::usage_permille(22_500, Some(2_000_000)), Some(11));
    assert_eq!(chart::usage_permille(0, Some(5)), Some(0));
    assert_eq!(chart::usage_permille(5, Some(5)), Some(1_000));
    assert_eq!(chart::usage_permille(1, None), None);
    assert_eq!(chart::usage_permille(0, Some(0)), None);
    assert_eq!(chart::level(11), Level::Normal);
    assert_eq!(chart::level(799), Level::Normal);
    assert_eq!(chart::level(800), Level::Near);
    assert_eq!(chart::level(999), Level::Near);
    assert_eq!(chart::level(1_000), Level::AtLimit);
    assert_eq!(chart::level(1_500), Level::AtLimit);
}
