//! Differential property test: our JCS over the lossless value must equal
//! `serde_json_canonicalizer` (the reference crate) on every value both can represent, and our
//! parser must read back exactly what serde_json writes (D-3).

#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use serde_json::Value as SValue;

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
}
