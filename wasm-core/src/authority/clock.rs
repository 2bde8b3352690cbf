//! Authority time: whole microseconds since the Unix epoch, passed in by the caller (sans-IO).
//!
//! Payload timestamps are read as RFC 3339 with an offset and truncated to microseconds; Event
//! timestamps are written in UTC with an uppercase `Z` and either no fraction or exactly six
//! digits, the reference authority's form (payloads.md §2.1, §2.6).

use crate::json::Value;
use crate::model::{Cx, FromJson, SchemaError, ToJson};
use crate::time::{Timestamp, format_utc};
use std::fmt;

/// An instant in microseconds since 1970-01-01T00:00:00Z.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Micros(pub i64);

impl Micros {
    pub const PER_SECOND: i64 = 1_000_000;

    /// Truncates a parsed timestamp to microseconds.
    pub fn from_timestamp(t: &Timestamp) -> Micros {
        let i = t.instant();
        let mut frac = 0i64;
        for (n, d) in i.fraction.bytes().take(6).enumerate() {
            frac += i64::from(d - b'0') * 10i64.pow(5 - n as u32);
        }
        Micros(
            i.seconds
                .saturating_mul(Self::PER_SECOND)
                .saturating_add(frac),
        )
    }

    /// Parses RFC 3339 with an offset (`Z` or `±hh:mm`).
    pub fn parse(text: &str) -> Option<Micros> {
        Timestamp::parse_rfc3339(text)
            .ok()
            .map(|t| Micros::from_timestamp(&t))
    }

    pub fn from_seconds(s: i64) -> Micros {
        Micros(s.saturating_mul(Self::PER_SECOND))
    }

    pub fn plus_seconds(self, s: u64) -> Micros {
        Micros(
            self.0.saturating_add(
                i64::try_from(s)
                    .unwrap_or(i64::MAX)
                    .saturating_mul(Self::PER_SECOND),
            ),
        )
    }

    pub fn minus_seconds(self, s: u64) -> Micros {
        Micros(
            self.0.saturating_sub(
                i64::try_from(s)
                    .unwrap_or(i64::MAX)
                    .saturating_mul(Self::PER_SECOND),
            ),
        )
    }

    /// `self` later by `d` (saturating).
    pub fn plus_micros(self, d: Micros) -> Micros {
        Micros(self.0.saturating_add(d.0))
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, dropping any fraction (for signed times in tests and tools).
    pub fn format_whole_seconds(self) -> String {
        format_utc(self.0.div_euclid(Self::PER_SECOND))
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, or with exactly six fractional digits when not whole.
    pub fn format(self) -> String {
        let secs = self.0.div_euclid(Self::PER_SECOND);
        let micros = self.0.rem_euclid(Self::PER_SECOND);
        let mut out = format_utc(secs);
        if micros != 0 {
            out.pop(); // the `Z`
            out.push('.');
            crate::time::push_digits(&mut out, micros, 6);
            out.push('Z');
        }
        out
    }
}

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format())
    }
}

impl FromJson for Micros {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        Micros::parse(s).ok_or_else(|| cx.err(format!("{s:?} is not an RFC 3339 timestamp")))
    }
}

impl ToJson for Micros {
    fn to_json(&self) -> Value {
        Value::string(self.format())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_the_reference() {
        let t = Micros::parse("2026-07-15T08:01:11Z").unwrap_or_default();
        assert_eq!(t.format(), "2026-07-15T08:01:11Z");
        let f = Micros::parse("2026-07-15T10:01:11.12+02:00").unwrap_or_default();
        assert_eq!(f.format(), "2026-07-15T08:01:11.120000Z");
        let trunc = Micros::parse("2026-07-15T08:01:11.1234569Z").unwrap_or_default();
        assert_eq!(trunc.format(), "2026-07-15T08:01:11.123456Z");
        assert_eq!(t.plus_seconds(60).format(), "2026-07-15T08:02:11Z");
        assert!(
            Micros::parse("2026-07-15T08:01:11").is_none(),
            "an offset is required"
        );
    }

    proptest::proptest! {
        /// Every instant of the profile's years formats and parses back to itself.
        #[test]
        fn format_round_trips(us in -62_135_596_800_000_000i64..253_402_300_799_999_999) {
            let text = Micros(us).format();
            proptest::prop_assert_eq!(Micros::parse(&text), Some(Micros(us)), "{}", text);
        }
    }
}
