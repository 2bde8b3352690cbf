//! Differential property test: our JCS over the lossless value must equal
//! `serde_json_canonicalizer` (the reference crate) on every value both can represent, and our
//! parser must read back exactly what serde_json writes (D-3). Also: `sort_canonical` and
//! `make_canonical` leave a value as parsing its canonical bytes would give it.

#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use serde_json::Value as SValue;
use wasm_core::json::{self, Value};

fn leaf() -> impl Strategy<Value = SValue> {
    prop_oneof![
        Just(SValue::Null),
        any::<bool>().prop_map(SValue::Bool),
        any::<i64>().prop_map(SValue::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(SValue::Null, SValue::Number)),
        (-400i32..400, any::<u32>()).prop_map(|(e, m)| {
            let f = f64::from(m) * 10f64.powi(e);
            serde_json::Number::from_f64(f).map_or(SValue::Null, SValue::Number)
        }),
        "\\PC{0,12}".prop_map(SValue::String),
        prop::collection::vec(prop::char::any(), 0..6)
            .prop_map(|cs| SValue::String(cs.into_iter().collect())),
    ]
}

fn value() -> impl Strategy<Value = SValue> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(SValue::Array),
            prop::collection::btree_map(
                prop_oneof![
                    "[a-z]{0,4}",
                    "\\PC{0,4}",
                    prop::char::any().prop_map(String::from)
                ],
                inner,
                0..6
            )
            .prop_map(|m| SValue::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn jcs_matches_serde_json_canonicalizer(v in value()) {
        let wire = serde_json::to_string(&v).expect("serializes");
        let ours = wasm_core::json::parse_str(&wire).expect("our parser reads serde_json output");
        let got = wasm_core::json::canonicalize(&ours).expect("finite, well-formed");
        let want = serde_json_canonicalizer::to_vec(&v).expect("reference canonicalizes");
        prop_assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want));
    }

    #[test]
    fn jcs_is_idempotent_and_parse_stable(v in value()) {
        let wire = serde_json::to_string_pretty(&v).expect("serializes");
        let ours = wasm_core::json::parse_str(&wire).expect("parses");
        let once = wasm_core::json::canonicalize(&ours).expect("canonical");
        let twice = wasm_core::json::canonicalize(&wasm_core::json::parse(&once).expect("reparses")).expect("canonical");
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn sort_canonical_orders_members_as_parsing_the_jcs_bytes_does(v in value()) {
        let ours = json::parse_str(&serde_json::to_string(&v).expect("serializes")).expect("parses");
        let back = json::parse(&json::canonicalize(&ours).expect("canonical")).expect("reparses");
        let mut sorted = ours.clone();
        json::sort_canonical(&mut sorted);
        // Same member order everywhere; numbers equal in value (JCS respells them, sorting not).
        prop_assert!(same(&sorted, &back, Numbers::ByValue), "{:?}\n{:?}", sorted, back);
        // Nothing but the order changed: same members, numbers spelled as before.
        prop_assert!(same(&sorted, &ours, Numbers::ByTextInAnyOrder), "{:?}\n{:?}", sorted, ours);
        // Sorting twice changes nothing.
        let mut again = sorted.clone();
        json::sort_canonical(&mut again);
        prop_assert_eq!(&again, &sorted);
    }

    #[test]
    fn make_canonical_is_exactly_parsing_the_jcs_bytes(v in value()) {
        let ours = json::parse_str(&serde_json::to_string_pretty(&v).expect("serializes")).expect("parses");
        let back = json::parse(&json::canonicalize(&ours).expect("canonical")).expect("reparses");
        let mut made = ours;
        json::make_canonical(&mut made);
        prop_assert_eq!(made, back);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Numbers {
    /// Member order must match; numbers compare as binary64 (so `-0` equals `0`).
    ByValue,
    /// Members match by name whatever their order; numbers compare by spelling.
    ByTextInAnyOrder,
}

fn same(a: &Value, b: &Value, how: Numbers) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match how {
            Numbers::ByValue => x.to_f64() == y.to_f64(),
            Numbers::ByTextInAnyOrder => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q, how))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && match how {
                    Numbers::ByValue => x
                        .iter()
                        .zip(y.iter())
                        .all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy, how)),
                    Numbers::ByTextInAnyOrder => x
                        .iter()
                        .all(|(k, vx)| y.iter().any(|(ky, vy)| k == ky && same(vx, vy, how))),
                }
        }
        _ => a == b,
    }
}

#[test]
fn sort_canonical_orders_names_by_utf16_code_units_even_when_ill_formed() {
    let mut v = json::parse_str(
        r#"{"\ue000":5,"\udc00":1,"😀":4,"a":{"b":[{"y":1,"x":2.50}],"a":0},"\ud800":2}"#,
    )
    .expect("parses");
    json::sort_canonical(&mut v);
    // a (0061) < D800 < D83D DE00 < DC00 < E000, in nested objects too; 2.50 keeps its spelling.
    assert_eq!(
        json::to_string(&v),
        "{\"a\":{\"a\":0,\"b\":[{\"x\":2.50,\"y\":1}]},\"\\ud800\":2,\"😀\":4,\"\\udc00\":1,\"\u{e000}\":5}"
    );
    json::make_canonical(&mut v);
    assert_eq!(
        json::to_string(&v),
        "{\"a\":{\"a\":0,\"b\":[{\"x\":2.5,\"y\":1}]},\"\\ud800\":2,\"😀\":4,\"\\udc00\":1,\"\u{e000}\":5}"
    );
}
