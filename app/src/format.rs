//! Locale-aware formatting through the browser's `Intl` (issue 14): dates and times, relative
//! times ("in 4 min"), numbers and the units of the six budget dimensions. The exact protocol
//! text of a timestamp is kept beside the formatted one (shown on demand). Native builds (the
//! tests) have no `Intl` and fall back to the protocol text and plain digits.

use wasm_core::views::ledger::chart::TimeGrain;

/// An identifier as one value of a URL query (`/ledger?mission=<this>`): protocol ids are
/// absolute URIs and may hold `&`, `#`, `?`, `=` or `%`, which would end or change the query;
/// every byte but the unreserved ones and `:` is percent-encoded (the router decodes it with
/// `decodeURIComponent`), so `urn:a:b` stays readable.
pub fn query_value(id: &str) -> String {
    wasm_core::encoding::url_component(id)
}

/// An identifier as one path segment (`/mission/<this>`): the encoding of [`query_value`], since
/// `/`, `?`, `#` and `%` in an id would end or change the segment as they would a query.
pub fn path_segment(id: &str) -> String {
    query_value(id)
}

/// The in-app path of a Group's Mission view, `/mission/<group id as a path segment>`.
pub fn mission_href(group_id: &str) -> String {
    format!("/mission/{}", path_segment(group_id))
}

/// Whether `value`, read from a URL's path segment or query by the router, names `id`.
///
/// leptos_router 0.8 decodes once more what the browser already decoded (its `ParamsMap` runs
/// `decodeURIComponent` on every value, after `URLSearchParams` or, for an in-app link, after
/// `decodeURI` of the path), so an id that itself holds a `%XX` escape (`urn:a:50%2B`) arrives
/// decoded twice (`urn:a:50+`): it is named by its value as sent or by its [`percent_decoded`]
/// form. Ids without `%` (all the demo's) are named by themselves alone.
pub fn names(value: &str, id: &str) -> bool {
    value == id || (id.contains('%') && percent_decoded(id).as_deref() == Some(value))
}

/// The id among `known` that `value` [`names`], the exact one first; `value` itself if none does
/// (a Group the console has no Event of yet is watched by the value the URL gives).
pub fn named_id<'a>(value: String, known: impl IntoIterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.into_iter().collect();
    if known.contains(&value.as_str()) {
        return value;
    }
    known
        .into_iter()
        .find(|id| names(&value, id))
        .map_or(value, str::to_owned)
}

/// `decodeURIComponent`: every `%XX` as its byte, the bytes as UTF-8; `None` where the browser's
/// would throw (a `%` without two hex digits after it, bytes that are not UTF-8), in which case
/// the router keeps the value as it was.
pub fn percent_decoded(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // Two hex digits, not a sign (`from_str_radix` would read "+1").
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A relative-time unit for [`relative`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelUnit {
    Second,
    Minute,
    Hour,
    Day,
}

impl RelUnit {
    fn as_str(self) -> &'static str {
        match self {
            RelUnit::Second => "second",
            RelUnit::Minute => "minute",
            RelUnit::Hour => "hour",
            RelUnit::Day => "day",
        }
    }
}

/// Picks the unit a person reads best for a signed duration in seconds, and the rounded value.
pub fn best_unit(seconds: i64) -> (i64, RelUnit) {
    let a = seconds.unsigned_abs();
    let (div, unit) = if a < 60 {
        (1, RelUnit::Second)
    } else if a < 3600 {
        (60, RelUnit::Minute)
    } else if a < 86_400 {
        (3600, RelUnit::Hour)
    } else {
        (86_400, RelUnit::Day)
    };
    let v = (seconds as f64 / div as f64).round() as i64;
    (v, unit)
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::RelUnit;
    use js_sys::{Array, Object, Reflect};
    use wasm_bindgen::JsValue;

    fn locales(tag: &str) -> Array {
        Array::of1(&JsValue::from_str(tag))
    }

    fn opts(pairs: &[(&str, &str)]) -> Object {
        let o = Object::new();
        for (k, v) in pairs {
            let _ = Reflect::set(&o, &JsValue::from_str(k), &JsValue::from_str(v));
        }
        o
    }

    pub fn relative(tag: &str, value: i64, unit: RelUnit) -> String {
        let f = js_sys::Intl::RelativeTimeFormat::new(
            &locales(tag),
            &opts(&[("numeric", "auto"), ("style", "short")]),
        );
        f.format(value as f64, unit.as_str()).into()
    }

    pub fn date_time(tag: &str, millis: f64) -> String {
        let d = js_sys::Date::new(&JsValue::from_f64(millis));
        d.to_locale_string(
            tag,
            &opts(&[("dateStyle", "medium"), ("timeStyle", "medium")]).into(),
        )
        .into()
    }

    fn call_format(f: &js_sys::Intl::NumberFormat, n: f64) -> String {
        f.format()
            .call1(&JsValue::NULL, &JsValue::from_f64(n))
            .ok()
            .and_then(|v| v.as_string())
            // The browser's own number text: `f64::to_string` would link Rust's float formatting.
            .or_else(|| {
                js_sys::Number::from(n)
                    .to_string_with_radix(10)
                    .ok()
                    .map(String::from)
            })
            .unwrap_or_default()
    }

    pub fn number(tag: &str, n: f64) -> String {
        call_format(
            &js_sys::Intl::NumberFormat::new(&locales(tag), &Object::new()),
            n,
        )
    }

    pub fn unit(tag: &str, n: f64, unit: &str) -> String {
        let o = opts(&[("style", "unit"), ("unit", unit), ("unitDisplay", "short")]);
        call_format(&js_sys::Intl::NumberFormat::new(&locales(tag), &o), n)
    }

    pub fn currency(tag: &str, n: f64, code: &str) -> String {
        let o = opts(&[("style", "currency"), ("currency", code)]);
        call_format(&js_sys::Intl::NumberFormat::new(&locales(tag), &o), n)
    }

    pub fn percent(tag: &str, share: f64) -> String {
        let o = opts(&[("style", "percent")]);
        let _ = Reflect::set(
            &o,
            &JsValue::from_str("maximumFractionDigits"),
            &JsValue::from_f64(1.0),
        );
        call_format(&js_sys::Intl::NumberFormat::new(&locales(tag), &o), share)
    }

    pub fn clock(tag: &str, millis: f64, pairs: &[(&str, &str)]) -> String {
        let d = js_sys::Date::new(&JsValue::from_f64(millis));
        d.to_locale_string(tag, &opts(pairs).into()).into()
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::RelUnit;

    pub fn relative(_: &str, value: i64, unit: RelUnit) -> String {
        format!("{value} {}", unit.as_str())
    }
    pub fn date_time(_: &str, millis: f64) -> String {
        wasm_core::authority::Micros((millis * 1000.0) as i64).format()
    }
    pub fn number(_: &str, n: f64) -> String {
        n.to_string()
    }
    pub fn unit(_: &str, n: f64, unit: &str) -> String {
        format!("{n} {unit}")
    }
    pub fn currency(_: &str, n: f64, code: &str) -> String {
        format!("{n} {code}")
    }
    pub fn percent(_: &str, share: f64) -> String {
        format!("{} %", share * 100.0)
    }
    pub fn clock(_: &str, millis: f64, _: &[(&str, &str)]) -> String {
        wasm_core::authority::Micros((millis * 1000.0) as i64).format()
    }
}

/// "in 4 min" / "dans 4 min" / "4 分鐘後" for `seconds` from now (negative: in the past).
pub fn relative(tag: &str, seconds: i64) -> String {
    let (v, u) = best_unit(seconds);
    imp::relative(tag, v, u)
}

/// A protocol timestamp for a person, in the locale; `None` if the text is not RFC 3339.
pub fn timestamp(tag: &str, protocol_text: &str) -> Option<String> {
    let m = wasm_core::authority::Micros::parse(protocol_text)?;
    Some(imp::date_time(tag, m.0 as f64 / 1000.0))
}

pub fn number(tag: &str, n: f64) -> String {
    imp::number(tag, n)
}

/// Seconds of compute or wall-clock time, with the locale's unit.
pub fn seconds(tag: &str, n: f64) -> String {
    imp::unit(tag, n, "second")
}

pub fn money(tag: &str, n: f64, currency: &str) -> String {
    imp::currency(tag, n, currency)
}

/// A share given in per mille as the locale's percentage, to a tenth ("1.1%", "1,1 %", "1.1%").
pub fn percent(tag: &str, permille: u64) -> String {
    imp::percent(tag, permille as f64 / 1000.0)
}

/// A time-axis label: as much of `at` as the axis' `grain` needs, in the locale (the
/// browser's time zone, as every other time the console shows).
pub fn clock(tag: &str, at: wasm_core::authority::Micros, grain: TimeGrain) -> String {
    let opts: &[(&str, &str)] = match grain {
        TimeGrain::Seconds => &[("timeStyle", "medium")],
        TimeGrain::Minutes => &[("timeStyle", "short")],
        TimeGrain::DateMinutes => &[
            ("month", "short"),
            ("day", "numeric"),
            ("hour", "numeric"),
            ("minute", "2-digit"),
        ],
        TimeGrain::Date => &[("dateStyle", "medium")],
    };
    imp::clock(tag, at.0 as f64 / 1000.0, opts)
}

/// Numbers written into SVG attributes (the DAG's zoom and pan, the ledger's burn-down), formatted
/// from integers: `{}` or `{:.1}` on an `f64` would link the standard library's float formatting
/// (Grisu and Dragon with their tables) into the shipped module, which the size bar
/// (issue 13, 600 KB gzip) cannot afford for numbers that only position shapes.
pub mod svg {
    /// The nearest whole user unit, as an integer (0 for NaN; saturating at the `i64` range).
    pub fn coord(v: f64) -> i64 {
        // `as` saturates and maps NaN to 0.
        v.round() as i64
    }

    /// `v` with at most two decimals and no trailing zeros ("1.25", "-0.5", "3"), for values such as
    /// a zoom factor or a pan offset where a hundredth is the finest step that shows.
    pub fn num(v: f64) -> String {
        let hundredths = coord(v * 100.0);
        let sign = if hundredths < 0 { "-" } else { "" };
        let a = hundredths.unsigned_abs();
        let (int, frac) = (a / 100, a % 100);
        match frac {
            0 => format!("{sign}{int}"),
            f if f % 10 == 0 => format!("{sign}{int}.{}", f / 10),
            f => format!("{sign}{int}.{f:02}"),
        }
    }

    /// `part / whole` of `extent`, in whole units, computed in integers (`whole` 0 counts as 1):
    /// where a value falls on an axis `extent` units long.
    pub fn scale(part: u64, whole: u64, extent: u64) -> i64 {
        let v = u128::from(part) * u128::from(extent) / u128::from(whole.max(1));
        i64::try_from(v).unwrap_or(i64::MAX)
    }

    /// How many columns `c` takes in SVG text: 2 for the East Asian wide and fullwidth
    /// characters (CJK ideographs, kana, Hangul, fullwidth forms), which are about twice as
    /// wide as a Latin letter, 1 for everything else.
    pub fn columns(c: char) -> usize {
        match u32::from(c) {
            0x1100..=0x115F
            | 0x2E80..=0x303E
            | 0x3041..=0x33FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xA000..=0xA4CF
            | 0xAC00..=0xD7A3
            | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F
            | 0xFF00..=0xFF60
            | 0xFFE0..=0xFFE6
            | 0x20000..=0x3FFFD => 2,
            _ => 1,
        }
    }

    /// `text` cut to fit `width` columns ([`columns`]), ending with "…" when it was cut; an
    /// SVG `<text>` does not wrap or ellipsise by itself, so the markup cuts it (the full text
    /// stays in the element's `<title>`).
    pub fn fit(text: &str, width: usize) -> std::borrow::Cow<'_, str> {
        if text.chars().map(columns).sum::<usize>() <= width {
            return std::borrow::Cow::Borrowed(text);
        }
        // Room for the ellipsis (one column).
        let room = width.saturating_sub(1);
        let mut used = 0;
        let mut out = String::with_capacity(text.len().min(width * 4) + 3);
        for c in text.chars() {
            used += columns(c);
            if used > room {
                break;
            }
            out.push(c);
        }
        // No cut word ends in a space before the ellipsis ("payment …").
        out.truncate(out.trim_end().len());
        out.push('…');
        std::borrow::Cow::Owned(out)
    }

    /// `text` on at most two lines: the first of `first` columns, the second of `width`,
    /// cut by [`fit`] when even two lines are too short. The line breaks after the last space
    /// that fits; a word longer than the line, or text without spaces (CJK), breaks where the
    /// line is full. SVG text does not wrap by itself, so the markup breaks it.
    pub fn wrap2(
        text: &str,
        first: usize,
        width: usize,
    ) -> (&str, Option<std::borrow::Cow<'_, str>>) {
        if text.chars().map(columns).sum::<usize>() <= first {
            return (text, None);
        }
        let mut used = 0;
        // Byte offsets: where the last character that fits ends, and the last space that fits.
        let mut full_end = 0;
        let mut space = None;
        for (i, c) in text.char_indices() {
            used += columns(c);
            if used > first {
                break;
            }
            if c == ' ' {
                space = Some(i);
            }
            full_end = i + c.len_utf8();
        }
        let cut = match space {
            Some(i) if !text[..i].trim_end().is_empty() => i,
            _ => full_end,
        };
        let (line, rest) = text.split_at(cut);
        let rest = rest.trim_start();
        if rest.is_empty() {
            return (line.trim_end(), None);
        }
        (line.trim_end(), Some(fit(rest, width)))
    }

    /// `text` on at most three lines, as [`wrap2`] does on two: the first of `first` columns,
    /// the others of `width`, the last cut by [`fit`] when even three are too short.
    pub fn wrap3(
        text: &str,
        first: usize,
        width: usize,
    ) -> (
        &str,
        Option<std::borrow::Cow<'_, str>>,
        Option<std::borrow::Cow<'_, str>>,
    ) {
        let (line, _) = wrap2(text, first, width);
        // `line` is a prefix of `text` (the first line, trimmed at its end).
        let rest = text.get(line.len()..).unwrap_or_default().trim_start();
        if rest.is_empty() {
            return (line, None, None);
        }
        let (second, third) = wrap2(rest, width, width);
        (line, Some(std::borrow::Cow::Borrowed(second)), third)
    }

    /// Whether `text` is cut on two lines of these widths ([`wrap2`] ends it with "…").
    pub fn cut_on_two(text: &str, first: usize, width: usize) -> bool {
        wrap2(text, first, width)
            .1
            .is_some_and(|b| b.ends_with('…'))
    }
}

/// Text for markup the console writes as a string (the Mission view's DAG and WorkItem table,
/// drawn in one `innerHTML` for speed): every piece of protocol or user text — WorkItem titles,
/// Agent and WorkItem ids, blockers — goes through [`markup::escape`] first, so a title such as
/// `<script>` is text, never markup.
pub mod markup {
    /// `s` with `&`, `<`, `>`, `"` and `'` replaced by character references: safe as element
    /// text and inside a double- or single-quoted attribute value (HTML and SVG alike).
    pub fn escape(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        escape_into(&mut out, s);
        out
    }

    /// [`escape`], appended to `out`.
    pub fn escape_into(out: &mut String, s: &str) {
        for c in s.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&#39;"),
                c => out.push(c),
            }
        }
    }
}
