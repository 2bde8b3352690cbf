//! RFC 3339 timestamps and the §2 timestamp profile (checklist D-5..D-9).
//!
//! The lexical text is kept beside the parsed instant and never rewritten (D-6). Instants compare
//! exactly with fractions of any length (D-7): `chrono`/`time` stop at nanoseconds, which would
//! make `.1234560000000000001` equal `.1234560000000000002`.

use std::cmp::Ordering;
use std::fmt;

/// A parsed RFC 3339 `date-time` that remembers its exact spelling.
#[derive(Clone, Debug)]
pub struct Timestamp {
    text: String,
    instant: Instant,
    year: u32,
    second: u32,
    unknown_local_offset: bool,
}

/// An exact instant: whole seconds since 1970-01-01T00:00:00Z and the fractional digits
/// with trailing zeros removed (an absent fraction is zero).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instant {
    pub seconds: i64,
    pub fraction: String,
}

impl Ord for Instant {
    fn cmp(&self, other: &Self) -> Ordering {
        self.seconds.cmp(&other.seconds).then_with(|| {
            // Digit strings without trailing zeros compare like their zero-padded forms.
            self.fraction.as_bytes().cmp(other.fraction.as_bytes())
        })
    }
}

impl PartialOrd for Instant {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Why a string is not an RFC 3339 `date-time`, or not in the §2 profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimestampError {
    Syntax,
    InvalidDate,
    InvalidTime,
    InvalidOffset,
    /// Profile: year `0000` (the profile allows `0001`..`9999`).
    YearZero,
    /// RFC 3339 §5.7: a second of `60` anywhere but 23:59:60 UTC (after removing the offset).
    MisplacedLeapSecond,
    /// Profile: leap-second spelling `:60`.
    LeapSecond,
    /// Profile: the unknown-local-offset spelling `-00:00`.
    UnknownLocalOffset,
}

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimestampError::Syntax => "not an RFC 3339 date-time",
            TimestampError::InvalidDate => "not a valid Gregorian date",
            TimestampError::InvalidTime => "hour, minute or second out of range",
            TimestampError::InvalidOffset => "UTC offset out of range",
            TimestampError::MisplacedLeapSecond => {
                "a second of 60 is only valid at 23:59:60 UTC (RFC 3339 §5.7)"
            }
            TimestampError::YearZero => "year 0000 is outside the timestamp profile (0001-9999)",
            TimestampError::LeapSecond => "leap seconds are not supported in v0.1",
            TimestampError::UnknownLocalOffset => "the -00:00 offset is not permitted",
        })
    }
}

impl std::error::Error for TimestampError {}

impl Timestamp {
    /// Parses a generic RFC 3339 `date-time` (JSON Schema `format: date-time`, checked against
    /// the JSON Schema Test Suite in `tests/formats.rs`).
    pub fn parse_rfc3339(text: &str) -> Result<Timestamp, TimestampError> {
        let b = text.as_bytes();
        let num = |range: std::ops::Range<usize>| -> Result<u32, TimestampError> {
            let s = b.get(range).ok_or(TimestampError::Syntax)?;
            if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
                return Err(TimestampError::Syntax);
            }
            Ok(s.iter().fold(0u32, |a, d| a * 10 + u32::from(d - b'0')))
        };
        let lit = |i: usize, set: &[u8]| -> Result<(), TimestampError> {
            match b.get(i) {
                Some(c) if set.contains(c) => Ok(()),
                _ => Err(TimestampError::Syntax),
            }
        };
        let year = num(0..4)?;
        lit(4, b"-")?;
        let month = num(5..7)?;
        lit(7, b"-")?;
        let day = num(8..10)?;
        lit(10, b"Tt")?;
        let hour = num(11..13)?;
        lit(13, b":")?;
        let minute = num(14..16)?;
        lit(16, b":")?;
        let second = num(17..19)?;
        let mut i = 19;
        let mut fraction = String::new();
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return Err(TimestampError::Syntax);
            }
            fraction = text[start..i].trim_end_matches('0').to_owned();
        }
        let (offset_minutes, unknown_local_offset) = match b.get(i) {
            Some(b'Z' | b'z') if i + 1 == b.len() => (0i64, false),
            Some(sign @ (b'+' | b'-')) if i + 6 == b.len() => {
                let oh = num(i + 1..i + 3)?;
                lit(i + 3, b":")?;
                let om = num(i + 4..i + 6)?;
                if oh > 23 || om > 59 {
                    return Err(TimestampError::InvalidOffset);
                }
                let m = i64::from(oh * 60 + om);
                let neg = *sign == b'-';
                (if neg { -m } else { m }, neg && m == 0)
            }
            _ => return Err(TimestampError::Syntax),
        };
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return Err(TimestampError::InvalidDate);
        }
        if hour > 23 || minute > 59 || second > 60 {
            return Err(TimestampError::InvalidTime);
        }
        // RFC 3339 §5.7 and appendix D: a leap second is the last second of a UTC day, so the
        // local minute minus the offset must be 23:59 (which may be another local date).
        if second == 60 && (i64::from(hour * 60 + minute) - offset_minutes).rem_euclid(1440) != 1439
        {
            return Err(TimestampError::MisplacedLeapSecond);
        }
        let days = days_from_civil(i64::from(year), month, day);
        let seconds =
            days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)
                - offset_minutes * 60;
        Ok(Timestamp {
            text: text.to_owned(),
            instant: Instant { seconds, fraction },
            year,
            second,
            unknown_local_offset,
        })
    }

    /// Parses a timestamp that must also satisfy the §2 profile (D-5).
    pub fn parse_profile(text: &str) -> Result<Timestamp, TimestampError> {
        let t = Timestamp::parse_rfc3339(text)?;
        t.check_profile()?;
        Ok(t)
    }

    /// The §2 profile on top of RFC 3339: year 0001..9999, no leap second, no `-00:00`.
    pub fn check_profile(&self) -> Result<(), TimestampError> {
        if self.year == 0 {
            return Err(TimestampError::YearZero);
        }
        if self.second > 59 {
            return Err(TimestampError::LeapSecond);
        }
        if self.unknown_local_offset {
            return Err(TimestampError::UnknownLocalOffset);
        }
        Ok(())
    }

    /// True when the text ends with the uppercase `Z` designator (required of the protected
    /// signed time and `signature.createdAt`, §6.4, D-8).
    pub fn is_utc_upper_z(&self) -> bool {
        self.text.ends_with('Z')
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn instant(&self) -> &Instant {
        &self.instant
    }
}

impl PartialEq for Timestamp {
    /// Byte equality of the spelling; use [`Timestamp::instant`] to compare instants.
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn is_leap(y: u32) -> bool {
    (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Formats whole seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`, for callers that hold
/// an instant (the sans-IO core never reads a clock itself).
pub fn format_utc(seconds: i64) -> String {
    let mut out = String::with_capacity(27);
    push_utc(&mut out, seconds);
    out
}

/// Appends `YYYY-MM-DDTHH:MM:SSZ` to `out` (digits written directly: every Event and admission
/// record formats a time, and `format!` was a measurable part of deciding a Command).
pub fn push_utc(out: &mut String, seconds: i64) {
    let (y, m, d, rem) = civil_from_seconds(seconds);
    if (0..=9999).contains(&y) {
        push_digits(out, y, 4);
    } else {
        // Outside the profile's years (callers validate instants they accept); kept printable.
        out.push_str(&format!("{y:04}"));
    }
    for (sep, v) in [
        ('-', m),
        ('-', d),
        ('T', rem / 3600),
        (':', (rem % 3600) / 60),
        (':', rem % 60),
    ] {
        out.push(sep);
        push_digits(out, v, 2);
    }
    out.push('Z');
}

/// The proleptic Gregorian (year, month, day) of `seconds` since the Unix epoch, and the
/// seconds into that day (the inverse of `days_from_civil`).
fn civil_from_seconds(seconds: i64) -> (i64, i64, i64, i64) {
    let days = seconds.div_euclid(86_400);
    let rem = seconds.rem_euclid(86_400);
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d, rem)
}

/// Appends the `width` low decimal digits of `v` (0 <= v < 10^width), zero-padded.
pub(crate) fn push_digits(out: &mut String, v: i64, width: u32) {
    let mut div = 10i64.pow(width.saturating_sub(1));
    while div > 0 {
        let digit = (v / div).rem_euclid(10) as u8;
        out.push(char::from(b'0' + digit));
        div /= 10;
    }
}

#[cfg(test)]
mod format_tests {
    use super::*;

    /// The formatter as first written (with `format!`), kept as the oracle for the digits.
    fn oracle(seconds: i64) -> String {
        let (y, m, d, rem) = civil_from_seconds(seconds);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            (rem % 3600) / 60,
            rem % 60
        )
    }

    proptest::proptest! {
        #[test]
        fn direct_digits_match_format(seconds in -62_167_219_200i64..253_402_300_800) {
            proptest::prop_assert_eq!(format_utc(seconds), oracle(seconds));
        }
    }

    #[test]
    fn edges() {
        for s in [
            0,
            -1,
            59,
            86_399,
            951_782_400,
            -62_167_219_200,
            253_402_300_799,
        ] {
            assert_eq!(format_utc(s), oracle(s));
        }
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(253_402_300_799), "9999-12-31T23:59:59Z");
        // Years outside 0000-9999 still print (validated elsewhere).
        assert_eq!(format_utc(253_402_300_800), oracle(253_402_300_800));
    }
}

#[cfg(test)]
mod leap_second_tests {
    use super::*;
    use proptest::prelude::*;

    /// `YYYY-MM-DDThh:mm:ss.5±hh:mm` (or `Z` when the offset is zero and `z` is set).
    fn text(
        (y, mo, d): (u32, u32, u32),
        (h, mi, s): (u32, u32, u32),
        offset: i64,
        z: bool,
    ) -> String {
        let zone = if offset == 0 && z {
            "Z".to_owned()
        } else {
            let sign = if offset < 0 { '-' } else { '+' };
            format!("{sign}{:02}:{:02}", offset.abs() / 60, offset.abs() % 60)
        };
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.5{zone}")
    }

    fn date() -> impl Strategy<Value = (u32, u32, u32)> {
        (1u32..=9999, 1u32..=12).prop_flat_map(|(y, m)| (Just(y), Just(m), 1..=days_in_month(y, m)))
    }

    proptest! {
        /// Seconds 00-59 always parse; a 60 parses exactly when the same text with 59 is
        /// 23:59:59 UTC (RFC 3339 §5.7), and is then one second after it. Half of the cases
        /// put the local time on 23:59 UTC for the drawn offset, so both answers are common.
        #[test]
        fn sixty_only_in_the_last_utc_minute(
            day in date(),
            (h, mi) in (0u32..24, 0u32..60),
            offset in -1439i64..=1439,
            on_utc_day_end in any::<bool>(),
            z in any::<bool>(),
            s in 0u32..60,
        ) {
            let (h, mi) = if on_utc_day_end {
                let local = (1439 + offset).rem_euclid(1440);
                (local as u32 / 60, local as u32 % 60)
            } else {
                (h, mi)
            };
            let plain = Timestamp::parse_rfc3339(&text(day, (h, mi, s), offset, z));
            prop_assert!(plain.is_ok(), "{plain:?}");
            let fifty_nine = Timestamp::parse_rfc3339(&text(day, (h, mi, 59), offset, z))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let last_utc_second = fifty_nine.instant().seconds.rem_euclid(86_400) == 86_399;
            let sixty = Timestamp::parse_rfc3339(&text(day, (h, mi, 60), offset, z));
            match sixty {
                Ok(t) => {
                    prop_assert!(last_utc_second, "{t} accepted");
                    prop_assert_eq!(t.instant().seconds, fifty_nine.instant().seconds + 1);
                    prop_assert_eq!(t.check_profile(), Err(TimestampError::LeapSecond));
                }
                Err(e) => {
                    prop_assert!(!last_utc_second, "refused: {e}");
                    prop_assert_eq!(e, TimestampError::MisplacedLeapSecond);
                }
            }
        }
    }
}
