//! Every JSON Schema `format` the 22 schemas use, checked against the JSON Schema Test Suite's
//! Draft 2020-12 `optional/format` cases (issue 11): a suite nobody here wrote. The suite comes
//! from the PyPI sdist of `jsonschema` (`scripts/fetch-format-suite.sh`, run by
//! `scripts/setup.sh`); natively it is read from `JSON_SCHEMA_TEST_SUITE_DIR` (default
//! `target/fixtures/json-schema-test-suite` beside the workspace), in Chromium from the copy
//! embedded at build time (feature `embedded-bundle`). Missing files fail the tests.

#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use std::collections::BTreeMap;
use wasm_core::json::{self, Value};
use wasm_core::model::{Id, Uri, from_value};
use wasm_core::time::{Timestamp, TimestampError};

macro_rules! cases {
    ($($name:ident $body:block)*) => {$(
        #[cfg_attr(not(target_arch = "wasm32"), test)]
        #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
        fn $name() $body
    )*};
}

/// The formats of the 22 schemas and how often each occurs. A new `format` in the schemas fails
/// `schemas_use_exactly_the_checked_formats` until it has a checker and a suite run here.
const SCHEMA_FORMATS: &[(&str, usize)] = &[("date-time", 1), ("uri", 9)];

/// One of our checks that stands for a schema `format` keyword.
struct Checker {
    format: &'static str,
    name: &'static str,
    check: fn(&str) -> bool,
    /// Suite-valid cases this check refuses on purpose: (case description, why, citing the spec).
    refuses_on_purpose: &'static [(&'static str, &'static str)],
}

const CHECKERS: &[Checker] = &[
    Checker {
        format: "date-time",
        name: "time::Timestamp::parse_rfc3339",
        check: |s| Timestamp::parse_rfc3339(s).is_ok(),
        refuses_on_purpose: &[],
    },
    Checker {
        format: "date-time",
        name: "model Timestamp, plain (common#/$defs/timestamp outside Signed Documents)",
        check: |s| from_value::<Timestamp>(&Value::from(s), false).is_ok(),
        refuses_on_purpose: &[],
    },
    Checker {
        format: "date-time",
        name: "model Timestamp, §2 profile (Signed Documents, Registry, admission)",
        check: |s| from_value::<Timestamp>(&Value::from(s), true).is_ok(),
        refuses_on_purpose: &[
            (
                "a valid date-time with a leap second, UTC",
                "D-5: the timestamp profile allows seconds 00-59 only",
            ),
            (
                "a valid date-time with a leap second, with minus offset",
                "D-5: the timestamp profile allows seconds 00-59 only",
            ),
        ],
    },
    Checker {
        format: "uri",
        name: "id::is_absolute_uri",
        check: wasm_core::id::is_absolute_uri,
        refuses_on_purpose: &[],
    },
    Checker {
        format: "uri",
        name: "model Uri (a bare format: uri)",
        check: |s| from_value::<Uri>(&Value::from(s), false).is_ok(),
        refuses_on_purpose: &[],
    },
    Checker {
        format: "uri",
        name: "model Id (common#/$defs/id: format uri, pattern, maxLength 512; D-10, D-11)",
        check: |s| from_value::<Id>(&Value::from(s), false).is_ok(),
        refuses_on_purpose: &[],
    },
];

#[cfg(not(target_arch = "wasm32"))]
fn read_suite(path: &str) -> Result<Vec<u8>, String> {
    let root = std::env::var("JSON_SCHEMA_TEST_SUITE_DIR").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/fixtures/json-schema-test-suite"
        )
        .into()
    });
    std::fs::read(std::path::Path::new(&root).join(path)).map_err(|e| {
        format!(
            "{root}/{path}: {e}. Run scripts/setup.sh (it fetches the JSON Schema Test Suite) \
             or set JSON_SCHEMA_TEST_SUITE_DIR"
        )
    })
}

#[cfg(target_arch = "wasm32")]
fn read_suite(path: &str) -> Result<Vec<u8>, String> {
    wasm_core::conformance::embedded::read_format_suite(path)
}

/// The schema files of the protocol bundle, by file name.
#[cfg(not(target_arch = "wasm32"))]
fn schemas() -> Vec<(String, Vec<u8>)> {
    let root = std::env::var("MWP_PROTOCOL_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/protocol").into());
    let dir = std::path::Path::new(&root).join("schemas");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (set MWP_PROTOCOL_DIR)", dir.display()));
    let mut out: Vec<(String, Vec<u8>)> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".schema.json"))
        .map(|p| (p.to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

#[cfg(target_arch = "wasm32")]
fn schemas() -> Vec<(String, Vec<u8>)> {
    wasm_core::conformance::embedded::FILES
        .iter()
        .filter(|(p, _)| p.starts_with("schemas/") && p.ends_with(".schema.json"))
        .map(|(p, b)| ((*p).to_owned(), b.to_vec()))
        .collect()
}

fn show(line: &str) {
    #[cfg(target_arch = "wasm32")]
    wasm_bindgen_test::console_log!("{line}");
    #[cfg(not(target_arch = "wasm32"))]
    println!("{line}");
}

/// Counts every string-valued `format` keyword in `v`.
fn collect_formats(v: &Value, out: &mut BTreeMap<String, usize>) {
    match v {
        Value::Object(o) => {
            for (name, member) in o.iter() {
                if let (true, Some(f)) = (name.as_str() == "format", member.as_str()) {
                    *out.entry(f.to_owned()).or_default() += 1;
                }
                collect_formats(member, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_formats(i, out)),
        _ => {}
    }
}

/// One suite case: (description, data, valid).
fn suite_cases(format: &str) -> Vec<(String, Value, bool)> {
    let path = format!("draft2020-12/optional/format/{format}.json");
    let bytes = read_suite(&path).unwrap_or_else(|e| panic!("{e}"));
    let groups = json::parse(&bytes).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    let Value::Array(groups) = groups else {
        panic!("{path}: not an array of test groups");
    };
    let mut cases = Vec::new();
    for g in &groups {
        assert_eq!(
            g.pointer("/schema/format").and_then(Value::as_str),
            Some(format),
            "{path}: a group tests another format"
        );
        let Some(Value::Array(tests)) = g.pointer("/tests") else {
            panic!("{path}: a group without tests");
        };
        for t in tests {
            let description = t.pointer("/description").and_then(Value::as_str).unwrap();
            let data = t.pointer("/data").unwrap().clone();
            let valid = matches!(t.pointer("/valid"), Some(Value::Bool(true)));
            cases.push((description.to_owned(), data, valid));
        }
    }
    let strings = |valid: bool| {
        cases
            .iter()
            .filter(|(_, d, v)| d.as_str().is_some() && *v == valid)
            .count()
    };
    assert!(
        strings(true) > 0 && strings(false) > 0,
        "{path}: the suite has no valid or no invalid string case"
    );
    cases
}

/// Runs every checker of `format` on the suite's cases; returns the summary lines.
fn run_suite(format: &str) -> Vec<String> {
    let cases = suite_cases(format);
    let mut lines = Vec::new();
    let checkers: Vec<&Checker> = CHECKERS.iter().filter(|c| c.format == format).collect();
    assert!(!checkers.is_empty(), "no checker for format {format}");
    for c in checkers {
        let (mut agree, mut on_purpose, mut wrong) = (0, Vec::new(), Vec::new());
        for (description, data, valid) in &cases {
            // A format applies to strings only: every other instance is valid by construction.
            let ours = data.as_str().is_none_or(c.check);
            let listed = c.refuses_on_purpose.iter().find(|(d, _)| d == description);
            match listed {
                Some((d, why)) if *valid && !ours => on_purpose.push(format!("{d:?} ({why})")),
                Some((d, _)) => wrong.push(format!(
                    "{d:?} is listed as refused on purpose, but suite says {valid}, ours {ours}"
                )),
                None if ours == *valid => agree += 1,
                None => wrong.push(format!(
                    "{description:?}: data {}, suite says {valid}, ours {ours}",
                    json::to_string(data)
                )),
            }
        }
        assert!(
            wrong.is_empty(),
            "{format} via {}: {} disagreement(s):\n  {}",
            c.name,
            wrong.len(),
            wrong.join("\n  ")
        );
        assert_eq!(
            on_purpose.len(),
            c.refuses_on_purpose.len(),
            "{format} via {}: an allow-listed description is not in the suite",
            c.name
        );
        let mut line = format!(
            "{format} via {}: {} cases, {agree} agree",
            c.name,
            cases.len()
        );
        if !on_purpose.is_empty() {
            line.push_str(&format!(
                ", {} allow-listed: {}",
                on_purpose.len(),
                on_purpose.join("; ")
            ));
        }
        show(&line);
        lines.push(line);
    }
    lines
}

cases! {
    schemas_use_exactly_the_checked_formats {
        let files = schemas();
        assert_eq!(files.len(), 22, "the protocol has 22 schemas");
        let mut found = BTreeMap::new();
        for (name, bytes) in &files {
            let v = json::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            collect_formats(&v, &mut found);
        }
        let expected: BTreeMap<String, usize> =
            SCHEMA_FORMATS.iter().map(|(f, n)| ((*f).to_owned(), *n)).collect();
        assert_eq!(found, expected, "the schemas' formats changed: add a checker and its suite run");
        for (format, _) in SCHEMA_FORMATS {
            assert!(CHECKERS.iter().any(|c| c.format == *format), "no checker for {format}");
        }
    }
    date_time_agrees_with_the_suite {
        let lines = run_suite("date-time");
        assert_eq!(lines.len(), 3);
    }
    uri_agrees_with_the_suite {
        let lines = run_suite("uri");
        assert_eq!(lines.len(), 3);
    }
    rfc3339_leap_second_only_at_the_end_of_a_utc_day {
        // RFC 3339 §5.6/§5.7, appendix D: 60 is the 23:59:60 UTC second, after removing the offset.
        for ok in [
            "1998-12-31T23:59:60Z",
            "1998-12-31T23:59:60.5z",
            "1998-12-31T15:59:60.123-08:00",
            "1999-01-01T00:59:60+01:00", // the next local day, and the next year
            "1999-01-01T05:29:60+05:30",
            "1998-12-31T20:59:60-03:00",
            "2016-12-31T23:59:60+00:00",
            "2016-12-31T23:59:60-00:00",
            "2017-01-01T23:58:60+23:59",
            "2016-12-31T00:00:60-23:59", // local time just after midnight
            "2024-02-29T23:59:60Z",
        ] {
            let t = Timestamp::parse_rfc3339(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            // One second after 23:59:59 UTC: midnight of the next UTC day.
            assert_eq!(t.instant().seconds.rem_euclid(86_400), 0, "{ok}");
            assert_eq!(Timestamp::parse_profile(ok).unwrap_err(), TimestampError::LeapSecond, "{ok}");
        }
        for bad in [
            "1998-12-31T23:58:60Z",
            "1998-12-31T22:59:60Z",
            "1998-12-31T00:00:60Z",
            "1998-12-31T23:59:60+01:00", // 22:59:60 UTC
            "1998-12-31T23:59:60-01:00", // 00:59:60 UTC the next day
            "1999-01-01T00:59:60Z",
            "1999-01-01T00:59:60+00:59",
            "1998-12-31T15:59:60-08:01",
            "1998-12-31T15:58:60-08:00",
        ] {
            assert_eq!(
                Timestamp::parse_rfc3339(bad).unwrap_err(),
                TimestampError::MisplacedLeapSecond,
                "{bad}"
            );
            assert!(Timestamp::parse_profile(bad).is_err(), "{bad}");
        }
        assert_eq!(Timestamp::parse_rfc3339("1998-12-31T23:59:61Z").unwrap_err(), TimestampError::InvalidTime);
        for s in ["1998-12-31T23:59:59Z", "1998-12-31T23:58:59+01:00", "1998-12-31T00:00:00-00:00"] {
            assert!(Timestamp::parse_rfc3339(s).is_ok(), "{s}");
        }
    }
}
