//! Differential tests of the fast parser and writers against [`super::reference`] (the code
//! they replaced): on valid, hostile and mutated input they must accept, reject (same error
//! kind and offset) and write exactly alike.

#![allow(clippy::unwrap_used)]

use super::reference;
use super::{Value, canonicalize, canonicalize_without, jcs, parse, plain_run, to_string};
use proptest::prelude::*;

/// A JSON string literal built from pieces that exercise every branch of the string reader:
/// plain runs, named escapes, `\u` escapes (paired, lone and reversed surrogates), raw
/// controls and bad escapes.
fn string_lit() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z0-9 ~/]{1,12}",
        2 => "[^\"\\\\\\p{Cc}]{1,6}",
        1 => prop::sample::select(vec![
            "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0000", "\\u001f",
            "\\u00e9", "\\u20ac", "\\ud83d\\ude00", "\\ud800", "\\udc00", "\\udbff\\udfff",
            "\\ude00\\ud83d", "\\ud800\\u0041", "\\ud800\\ud800\\udc00", "\\ue000", "\\uFFFF",
            "😀", "\u{e000}", "\u{fb33}", "\u{7f}", "é",
        ])
        .prop_map(str::to_owned),
        1 => any::<u16>().prop_map(|u| format!("\\u{u:04x}")),
        1 => any::<u16>().prop_map(|u| format!("\\u{u:04X}")),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|p| format!("\"{}\"", p.concat()))
}

fn number_lit() -> impl Strategy<Value = String> {
    prop_oneof![
        "-?(0|[1-9][0-9]{0,17})",
        "-?(0|[1-9][0-9]{0,3})(\\.[0-9]{1,4})?([eE][+-]?[0-9]{1,3})?",
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        prop::sample::select(vec![
            "-0",
            "0",
            "-0.0",
            "1e400",
            "-1e400",
            "1e-400",
            "999999999999999",
            "1000000000000000",
            "9007199254740993",
            "1E21",
            "5e-324",
            "100000000000000000000",
        ])
        .prop_map(str::to_owned),
    ]
}

/// Valid JSON text (duplicate names aside) with objects up to past both the linear duplicate
/// scan and the on-stack sort.
fn json_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        number_lit(),
        string_lit(),
    ];
    leaf.prop_recursive(4, 96, 40, |inner| {
        let name = prop_oneof![
            8 => "\"[a-z]{1,4}\"",
            1 => "\"[a-c]\"",
            1 => string_lit(),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((name, inner), 0..40).prop_map(|m| {
                let m: Vec<String> = m.into_iter().map(|(k, v)| format!("{k} : {v}")).collect();
                format!("{{ {} }}", m.join(",\n"))
            }),
        ]
    })
}

/// Bytes that break JSON in interesting places.
fn mutate(text: String, edits: Vec<(usize, u8, usize)>) -> Vec<u8> {
    const TOKENS: &[&[u8]] = &[
        b"\"",
        b"\\",
        b"\\u",
        b"\\ud800",
        b"{",
        b"}",
        b"[",
        b"]",
        b",",
        b":",
        b"\x01",
        b"\xff",
        b"\xc3",
        b"\xed\xa0\x80",
        b"\xef\xbb\xbf",
        b"-",
        b".",
        b"e",
        b"0",
        b"tru",
        b" ",
    ];
    let mut b = text.into_bytes();
    for (at, token, cut) in edits {
        let at = at % (b.len() + 1);
        let token = TOKENS[usize::from(token) % TOKENS.len()];
        let cut = (cut % 3).min(b.len() - at);
        b.splice(at..at + cut, token.iter().copied());
    }
    b
}

/// Every writer, new against old, on one parsed value.
fn same_output(v: &Value) {
    assert_eq!(to_string(v), reference::compact::to_string(v));
    assert_eq!(canonicalize(v), reference::jcs::canonicalize(v));
    for skip in ["a", "signature", "\u{fffd}"] {
        assert_eq!(
            canonicalize_without(v, skip),
            reference::jcs::canonicalize_without(v, skip)
        );
    }
    if let Value::Object(o) = v {
        // The slotted form against the oracle's members: without the slot, then with it.
        for slot in ["signature", "a", "", "\u{fffd}", "zz~/x"] {
            let new = jcs::canonical_with_slot(o, slot);
            assert_eq!(
                new.as_ref().map(|s| s.bytes.clone()).map_err(Clone::clone),
                reference::jcs::canonicalize_without(v, slot)
            );
            let Ok(slotted) = new else { continue };
            let mut without = o.clone();
            without.remove(slot);
            let Ok(parts) = reference::jcs::canonical_members(&without) else {
                panic!("the oracle refused what the slotted writer took")
            };
            for (_, value) in o.iter().take(2) {
                let mut old = parts.clone();
                let expected = reference::jcs::insert_member(&mut old, slot, value)
                    .map(|()| reference::jcs::join_members(&old));
                assert_eq!(slotted.fill(value), expected);
            }
        }
    }
}

fn same_parse(bytes: &[u8]) {
    let new = parse(bytes);
    assert_eq!(
        new,
        reference::parse::parse(bytes),
        "{}",
        String::from_utf8_lossy(bytes)
    );
    if let Ok(v) = new {
        same_output(&v);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn parse_and_writers_match_the_reference(text in json_text()) {
        same_parse(text.as_bytes());
    }

    #[test]
    fn mutated_input_is_judged_like_the_reference(
        text in json_text(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..4),
    ) {
        same_parse(&mutate(text, edits));
    }

    #[test]
    fn utf16_cmp_is_code_unit_order(a in "\\PC{0,6}", b in "\\PC{0,6}", p in "\\PC{0,3}") {
        for (x, y) in [(a.clone(), b.clone()), (format!("{p}{a}"), format!("{p}{b}")), (a.clone(), a.clone())] {
            prop_assert_eq!(
                jcs::utf16_cmp(&x, &y),
                x.encode_utf16().cmp(y.encode_utf16()),
                "{:?} {:?}", x, y
            );
        }
    }

    #[test]
    fn plain_run_stops_at_the_first_byte_to_escape(s in prop::collection::vec(
        prop_oneof![4 => 0x20u8..0x7f, 1 => any::<u8>(), 1 => Just(b'"'), 1 => Just(b'\\')], 0..40)
    ) {
        let want = s.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(s.len());
        prop_assert_eq!(plain_run(&s), want);
    }
}

#[test]
fn integer_fast_path_is_the_ecmascript_spelling() {
    let mut cases: Vec<String> = ["0", "-0", "7", "-7", "999999999999999", "-999999999999999"]
        .map(str::to_owned)
        .to_vec();
    let mut n: u64 = 1;
    while n < 10_000_000_000_000_000 {
        for m in [n - 1, n, n + 1, n * 3 + 7] {
            cases.push(m.to_string());
            cases.push(format!("-{m}"));
        }
        n *= 10;
    }
    // 16 digits: exact only up to 2^53.
    for m in [
        9_007_199_254_740_991u64,
        9_007_199_254_740_993,
        9_999_999_999_999_999,
    ] {
        cases.push(m.to_string());
        cases.push(format!("-{m}"));
    }
    for text in cases {
        let v = parse(text.as_bytes()).unwrap();
        let want = ryu_js::Buffer::new()
            .format_finite(text.parse::<f64>().unwrap())
            .to_owned();
        assert_eq!(
            String::from_utf8(canonicalize(&v).unwrap()).unwrap(),
            want,
            "{text}"
        );
        assert_eq!(canonicalize(&v), reference::jcs::canonicalize(&v), "{text}");
    }
}

#[test]
fn large_objects_and_errors_match_the_reference() {
    // Past the linear duplicate scan (16) and the on-stack sort (32), duplicates early and late.
    for n in [15, 16, 17, 32, 33, 200] {
        let members: Vec<String> = (0..n).map(|i| format!("\"k{}\":{i}", n - i)).collect();
        same_parse(format!("{{{}}}", members.join(",")).as_bytes());
        for dup in [1, n - 1] {
            let mut m = members.clone();
            m.push(format!("\"k{}\":0", n - dup));
            m.push("\"tail\":".to_owned());
            same_parse(format!("{{{}}}", m.join(",")).as_bytes());
        }
    }
    for text in [
        r#"{"a":1e400,"\ud800":1,"b":"\udc00"}"#,
        r#"{"z":[1,{"q":"\ud800"}],"a":1e400}"#,
        r#"{"a~/":[0,1e999],"b":{"\udfff":2}}"#,
        r#"{"signature":"\ud800","a":1}"#,
        r#"[{"x":1,"\ud800":2,"\ud801":3}]"#,
        r#""\ud800\u12G4""#,
        r#""\ud800\"#,
        r#""\ud800\u"#,
        "\"\\ud800\\x\"",
        "\"abc\\u00e9\u{1}\"",
    ] {
        same_parse(text.as_bytes());
    }
}

#[test]
fn inline_numbers_do_not_grow_values() {
    assert!(size_of::<super::Number>() <= size_of::<super::JsonString>());
    assert_eq!(size_of::<Value>(), size_of::<super::JsonString>());
}
