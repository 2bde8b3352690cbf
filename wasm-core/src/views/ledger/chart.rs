//! The burn-down chart's geometry, in whole SVG user units computed in integers (the app
//! writes the markup and the locale's labels; no float is formatted in the module).
//!
//! Two panels share one width. The **main** panel runs from the Mission account's opening to
//! the projected exhaustion (or the Mission deadline when the projection falls after it): the
//! effective limit, the used line and the projection up to the limit. Usage of a few percent
//! of the limit is a flat line on the axis there, so when everything used so far is under
//! 1/[`ZOOM_RATIO`] of the main scale a second, **zoomed** panel draws the used line alone on
//! its own value scale and over the time the usage Events cover (opening to the last one): the
//! same data enlarged on both axes, labelled with its own ticks, not a log scale.
//!
//! Ticks are "nice": values are multiples of 1, 2 or 5 × 10ⁿ from 0 up to the first multiple
//! at or above the largest value; times are multiples of a step from [`TIME_STEPS`].

use super::Forecast;
use crate::authority::clock::Micros;

/// The chart's width in user units (it scales to its box).
pub const WIDTH: i64 = 480;
/// Left of the plots: the value labels ("20,000,000").
pub const LEFT: i64 = 84;
/// Right of the plots: half a time label centred on the last tick.
pub const RIGHT: i64 = 48;
/// Above the main plot: the unit of its values.
pub const MAIN_TOP: i64 = 28;
pub const MAIN_HEIGHT: i64 = 170;
/// Between the main plot and the zoomed one: the time labels and the zoomed panel's title.
pub const GAP: i64 = 64;
pub const ZOOM_HEIGHT: i64 = 100;
/// Below the last plot: its time labels.
pub const BOTTOM: i64 = 30;
/// At most this many value steps on a scale.
pub const VALUE_STEPS: u64 = 5;
/// At most this many time ticks on an axis.
pub const TIME_TICKS: i64 = 4;
/// Usage under 1/`ZOOM_RATIO` of the main scale gets the zoomed panel.
pub const ZOOM_RATIO: u64 = 4;
/// At or above this share of the effective limit (per mille) an account is near its limit.
pub const NEAR_PERMILLE: u64 = 800;

const S: i64 = Micros::PER_SECOND;
const DAY: i64 = 86_400 * S;
/// Time-axis steps, smallest first.
pub const TIME_STEPS: [i64; 24] = [
    S,
    2 * S,
    5 * S,
    10 * S,
    15 * S,
    30 * S,
    60 * S,
    120 * S,
    300 * S,
    600 * S,
    900 * S,
    1_800 * S,
    3_600 * S,
    7_200 * S,
    10_800 * S,
    21_600 * S,
    43_200 * S,
    DAY,
    2 * DAY,
    7 * DAY,
    14 * DAY,
    30 * DAY,
    91 * DAY,
    365 * DAY,
];

/// What a time tick's label must show for its step and span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeGrain {
    /// Steps under a minute: hours, minutes and seconds.
    Seconds,
    /// Hours and minutes, within a day.
    Minutes,
    /// The date with hours and minutes: the axis spans a day or more in steps under a day.
    DateMinutes,
    /// Whole-day steps: the date.
    Date,
}

/// The smallest 1, 2 or 5 × 10ⁿ with at most `steps` steps from 0 to `max` (`max` 0 gives 1).
pub fn nice_step(max: u64, steps: u64) -> u64 {
    let steps = steps.max(1);
    let mut pow: u64 = 1;
    loop {
        for m in [1u64, 2, 5] {
            let step = pow.saturating_mul(m);
            if max.div_ceil(step) <= steps {
                return step;
            }
        }
        match pow.checked_mul(10) {
            Some(p) => pow = p,
            None => return u64::MAX,
        }
    }
}

/// The value ticks of a scale: 0, then each multiple of [`nice_step`] up to the first at or
/// above `max` (the scale's top). `max` 0 gives `[0, 1]`, so a scale is never empty.
pub fn value_ticks(max: u64, steps: u64) -> Vec<u64> {
    let max = max.max(1);
    let step = nice_step(max, steps);
    let n = max.div_ceil(step);
    (0..=n).map(|i| i.saturating_mul(step)).collect()
}

/// The time step for `span` microseconds: the smallest of [`TIME_STEPS`] with at most
/// `ticks` multiples in the span, else whole years.
pub fn time_step(span: i64, ticks: i64) -> i64 {
    let room = (ticks - 1).max(1);
    let span = span.max(1);
    TIME_STEPS
        .iter()
        .copied()
        .find(|s| span / s <= room)
        .unwrap_or_else(|| {
            // Whole years: span / room rounded up to a year (positive, so `/` then `+ 1`).
            let years = span / room / (365 * DAY) + 1;
            years.saturating_mul(365 * DAY)
        })
}

/// The time ticks in `[t0, t1]`: the multiples of [`time_step`] (UTC), and the grain their
/// labels need.
pub fn time_ticks(t0: Micros, t1: Micros, ticks: i64) -> (Vec<Micros>, TimeGrain) {
    let span = t1.0.saturating_sub(t0.0).max(1);
    let step = time_step(span, ticks);
    let grain = if step < 60 * S {
        TimeGrain::Seconds
    } else if step >= DAY {
        TimeGrain::Date
    } else if span >= DAY {
        TimeGrain::DateMinutes
    } else {
        TimeGrain::Minutes
    };
    let mut at = t0.0.div_euclid(step).saturating_mul(step);
    if at < t0.0 {
        at = at.saturating_add(step);
    }
    let mut out = Vec::new();
    while at <= t1.0 && out.len() < 64 {
        out.push(Micros(at));
        at = match at.checked_add(step) {
            Some(n) => n,
            None => break,
        };
    }
    (out, grain)
}

/// `part / whole` of `extent` (`part` clamped to `[0, whole]`; `whole` ≤ 0 gives 0).
fn lerp(part: i128, whole: i128, extent: i64) -> i64 {
    if whole <= 0 {
        return 0;
    }
    let v = part.clamp(0, whole) * i128::from(extent) / whole;
    i64::try_from(v).unwrap_or(extent)
}

/// One plot: its place, its scales and its used line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Panel {
    /// y of the plot's top edge and of its time axis.
    pub top: i64,
    pub bottom: i64,
    pub t0: Micros,
    pub t1: Micros,
    /// Value ticks with their y; the last is the scale's top.
    pub y_ticks: Vec<(u64, i64)>,
    /// Time ticks with their x.
    pub x_ticks: Vec<(Micros, i64)>,
    pub grain: TimeGrain,
    /// The used line through the samples, as steps (usage holds until the next usage Event).
    pub used: Vec<(i64, i64)>,
}

impl Panel {
    fn new(top: i64, height: i64, t0: Micros, t1: Micros, max: u64, steps: u64) -> Panel {
        let bottom = top + height;
        let values = value_ticks(max, steps);
        let scale_top = values.last().copied().unwrap_or(1);
        let (times, grain) = time_ticks(t0, t1, TIME_TICKS);
        let mut p = Panel {
            top,
            bottom,
            t0,
            t1,
            y_ticks: Vec::new(),
            x_ticks: Vec::new(),
            grain,
            used: Vec::new(),
        };
        p.y_ticks = values.iter().map(|v| (*v, p.y_of(*v, scale_top))).collect();
        p.x_ticks = times.iter().map(|t| (*t, p.x(*t))).collect();
        p
    }

    /// The scale's top value.
    pub fn scale_top(&self) -> u64 {
        self.y_ticks.last().map_or(1, |t| t.0)
    }

    pub fn x(&self, t: Micros) -> i64 {
        LEFT + lerp(
            i128::from(t.0) - i128::from(self.t0.0),
            i128::from(self.t1.0) - i128::from(self.t0.0),
            WIDTH - LEFT - RIGHT,
        )
    }

    pub fn y(&self, v: u64) -> i64 {
        self.y_of(v, self.scale_top())
    }

    fn y_of(&self, v: u64, top: u64) -> i64 {
        self.bottom - lerp(i128::from(v), i128::from(top), self.bottom - self.top)
    }

    fn trace(&mut self, series: &[(Micros, u64)]) {
        let mut prev: Option<u64> = None;
        for (t, v) in series {
            let x = self.x(*t);
            if let Some(p) = prev {
                self.used.push((x, self.y(p)));
            }
            self.used.push((x, self.y(*v)));
            prev = Some(*v);
        }
        self.used.dedup();
    }
}

/// What the chart says about exhaustion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outlook {
    NotGranted,
    /// Nothing left now.
    Exhausted,
    /// No recent usage: no projection.
    Steady,
    /// The Mission is finished: no projection.
    Finished,
    /// The limit is reached at `at`, on or before the Mission deadline: marked on the chart.
    Within {
        at: Micros,
    },
    /// At the recent rate the limit would be reached only at `at`, after the Mission
    /// deadline: the projection is drawn up to the deadline, no exhaustion is marked.
    AfterDeadline {
        at: Micros,
    },
}

/// The whole chart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BurnDown {
    pub width: i64,
    pub height: i64,
    /// x of the plots' left and right edges.
    pub left: i64,
    pub right: i64,
    pub main: Panel,
    /// The effective limit and its y on the main panel.
    pub limit: Option<(u64, i64)>,
    /// The projection: from the last sample towards the limit (cut at the deadline).
    pub projection: Option<[(i64, i64); 2]>,
    /// The projected exhaustion's point, when it falls within the deadline.
    pub exhaustion: Option<(i64, i64)>,
    /// The Mission deadline's x, when inside the main panel's time range.
    pub deadline: Option<i64>,
    /// The used line enlarged, when it is small on the main scale (module documentation).
    pub zoom: Option<Panel>,
    /// The last sample's value: used so far.
    pub used: u64,
    pub outlook: Outlook,
}

/// The chart of `series` (cumulative usage after each usage Event, the opening point first)
/// against the effective `limit`, with the ledger's `forecast`, at `now`, for a Mission due
/// at `deadline`.
pub fn burn_down(
    series: &[(Micros, u64)],
    limit: Option<u64>,
    forecast: Forecast,
    now: Micros,
    deadline: Micros,
) -> BurnDown {
    let (t_last, used) = series.last().copied().unwrap_or((now, 0));
    let t0 = series.first().map_or(now, |p| p.0);
    let mut t1 = Micros(t_last.0.max(now.0));
    let outlook = match forecast {
        Forecast::NotGranted => Outlook::NotGranted,
        Forecast::Exhausted => Outlook::Exhausted,
        Forecast::Steady => Outlook::Steady,
        Forecast::Finished => Outlook::Finished,
        Forecast::At(at) if at.0 <= deadline.0 => {
            t1 = Micros(t1.0.max(at.0));
            Outlook::Within { at }
        }
        Forecast::At(at) => {
            t1 = Micros(t1.0.max(deadline.0));
            Outlook::AfterDeadline { at }
        }
    };
    let one_second = |a: Micros, b: Micros| {
        if b.0 > a.0 {
            b
        } else {
            Micros(a.0.saturating_add(S))
        }
    };
    let t1 = one_second(t0, t1);
    let max_used = series.iter().map(|p| p.1).max().unwrap_or(0);
    let top = max_used.max(limit.unwrap_or(0));
    let mut main = Panel::new(MAIN_TOP, MAIN_HEIGHT, t0, t1, top, VALUE_STEPS);
    main.trace(series);
    let last = (main.x(t_last), main.y(used));
    let (projection, exhaustion) = match (outlook, limit) {
        (Outlook::Within { at }, Some(l)) => {
            let end = (main.x(at), main.y(l));
            (Some([last, end]), Some(end))
        }
        (Outlook::AfterDeadline { at }, Some(l)) => {
            // The straight line from the last sample to (at, l), read at the axis' end.
            let run = i128::from(at.0) - i128::from(t_last.0);
            let gone = i128::from(t1.0) - i128::from(t_last.0);
            let rise = i128::from(l.saturating_sub(used));
            let v = if run > 0 {
                used.saturating_add(u64::try_from(rise * gone.clamp(0, run) / run).unwrap_or(0))
            } else {
                l
            };
            (Some([last, (main.x(t1), main.y(v))]), None)
        }
        _ => (None, None),
    };
    let deadline_x = (deadline.0 >= t0.0 && deadline.0 <= t1.0).then(|| main.x(deadline));
    let zoom =
        (max_used > 0 && max_used.saturating_mul(ZOOM_RATIO) < main.scale_top()).then(|| {
            let mut z = Panel::new(
                main.bottom + GAP,
                ZOOM_HEIGHT,
                t0,
                one_second(t0, t_last),
                max_used,
                VALUE_STEPS - 1,
            );
            z.trace(series);
            z
        });
    let height = zoom.as_ref().map_or(main.bottom, |z| z.bottom) + BOTTOM;
    BurnDown {
        width: WIDTH,
        height,
        left: LEFT,
        right: WIDTH - RIGHT,
        limit: limit.map(|l| (l, main.y(l))),
        main,
        projection,
        exhaustion,
        deadline: deadline_x,
        zoom,
        used,
        outlook,
    }
}

/// `used` of `limit` in per mille (rounded down; `None` when nothing is granted or the
/// limit is 0), for the usage bar and its percentage.
pub fn usage_permille(used: u64, limit: Option<u64>) -> Option<u64> {
    let l = limit.filter(|l| *l > 0)?;
    Some(u64::try_from(u128::from(used) * 1000 / u128::from(l)).unwrap_or(u64::MAX))
}

/// How close an account is to its limit, said in words beside the bar (not by colour alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Normal,
    /// At or above [`NEAR_PERMILLE`].
    Near,
    /// The effective limit reached (nothing left).
    AtLimit,
}

pub fn level(permille: u64) -> Level {
    if permille >= 1000 {
        Level::AtLimit
    } else if permille >= NEAR_PERMILLE {
        Level::Near
    } else {
        Level::Normal
    }
}
