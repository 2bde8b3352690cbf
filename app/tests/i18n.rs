//! Translations: every key in every locale (one resource file per locale, `app/locales/`),
//! the same interpolation variables in each, the 27 wire-code explanations present and
//! distinct, the glossary nouns kept in English, and the language choice on a first visit.

use app::locale::{TAGS, match_tag, next, pick, singular};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn load(tag: &str) -> Value {
    let path = format!("{}/locales/{tag}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("locale file");
    serde_json::from_str(&text).expect("valid JSON")
}

/// Flattened `a.b` keys and their strings.
fn flatten(v: &Value, prefix: &str, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(v, &p, out);
            }
        }
        Value::String(s) => {
            out.insert(prefix.to_owned(), s.clone());
        }
        other => panic!("{prefix}: not a string: {other}"),
    }
}

fn strings(tag: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    flatten(&load(tag), "", &mut out);
    out
}

fn vars(s: &str) -> BTreeSet<String> {
    s.split("{{")
        .skip(1)
        .filter_map(|p| p.split("}}").next())
        .map(|v| v.trim().to_owned())
        .collect()
}

#[test]
fn every_key_is_in_every_locale_with_the_same_variables() {
    let en = strings("en");
    assert!(en.len() > 150, "{} keys", en.len());
    for tag in TAGS {
        let other = strings(tag);
        let missing: Vec<&String> = en.keys().filter(|k| !other.contains_key(*k)).collect();
        let extra: Vec<&String> = other.keys().filter(|k| !en.contains_key(*k)).collect();
        assert!(missing.is_empty(), "{tag} lacks {missing:?}");
        assert!(extra.is_empty(), "{tag} has keys English lacks: {extra:?}");
        for (k, s) in &other {
            assert!(!s.trim().is_empty(), "{tag}.{k} is empty");
            assert_eq!(
                vars(s),
                vars(&en[k]),
                "{tag}.{k}: interpolation variables differ"
            );
        }
    }
}

#[test]
fn the_27_wire_codes_are_explained_in_every_language() {
    use wasm_core::model::error::ErrorCode;
    let codes: Vec<String> = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_ascii_lowercase())
        .collect();
    assert_eq!(codes.len(), 27);
    for tag in TAGS {
        let s = strings(tag);
        let mut seen = BTreeSet::new();
        for c in &codes {
            let text = s
                .get(&format!("wire.{c}"))
                .unwrap_or_else(|| panic!("{tag}: no explanation for {c}"));
            assert!(
                seen.insert(text.clone()),
                "{tag}: {c} repeats another explanation"
            );
        }
        let wire = s.keys().filter(|k| k.starts_with("wire.")).count();
        assert_eq!(wire, 27, "{tag}: {wire} wire entries");
    }
}

#[test]
fn translations_are_translated_and_keep_the_glossary_nouns() {
    let en = strings("en");
    let fr = strings("fr");
    let zh = strings("zh-Hant");
    // Sentences differ from English (only names, glossary nouns and language endonyms may not).
    let same_fr = en.iter().filter(|(k, v)| fr[*k] == **v).count();
    let same_zh = en.iter().filter(|(k, v)| zh[*k] == **v).count();
    assert!(same_fr < 25, "{same_fr} French strings equal English");
    assert!(same_zh < 25, "{same_zh} Chinese strings equal English");
    // Glossary nouns stay in English inside translated sentences (CONTEXT.md).
    for noun in [
        "Mission",
        "WorkItem",
        "Group",
        "Event",
        "Approval",
        "Registry",
        "Session Epoch",
    ] {
        for (tag, s) in [("fr", &fr), ("zh-Hant", &zh)] {
            let english: usize = en.values().filter(|v| v.contains(noun)).count();
            let kept: usize = s.values().filter(|v| v.contains(noun)).count();
            assert!(
                kept * 10 >= english * 8,
                "{tag}: \"{noun}\" appears in {kept} strings, English has {english}"
            );
        }
    }
    // Chinese text is in Traditional characters, not Simplified ones.
    let all_zh: String = zh.values().cloned().collect();
    for simplified in ['这', '个', '连', '线', '设', '签', '证', '时', '无', '认'] {
        assert!(
            !all_zh.contains(simplified),
            "Simplified character {simplified}"
        );
    }
    assert!(all_zh.contains('連') && all_zh.contains('證'));
}

#[test]
fn the_first_visit_follows_the_browser_languages() {
    let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(pick(None, &l(&["fr-CA", "en"])), "fr");
    assert_eq!(pick(None, &l(&["de", "zh-TW"])), "zh-Hant");
    assert_eq!(pick(None, &l(&["zh-Hant-HK"])), "zh-Hant");
    assert_eq!(pick(None, &l(&["zh-CN", "zh"])), "en");
    assert_eq!(pick(None, &l(&["zh-Hans-HK"])), "en");
    assert_eq!(pick(None, &l(&[])), "en");
    assert_eq!(pick(None, &l(&["ja", "EN-gb"])), "en");
    // A stored choice wins; an unknown stored value is ignored.
    assert_eq!(pick(Some("zh-Hant"), &l(&["fr"])), "zh-Hant");
    assert_eq!(pick(Some("de"), &l(&["fr"])), "fr");
    assert_eq!(match_tag("fr_FR"), Some("fr"));
    assert_eq!(match_tag("zh-mo"), Some("zh-Hant"));
    assert_eq!(next("en"), "fr");
    assert_eq!(next("fr"), "zh-Hant");
    assert_eq!(next("zh-Hant"), "en");
}

#[test]
fn the_generated_lookups_match_the_files() {
    use app::i18n::Locale;
    use wasm_core::model::error::ErrorCode;
    // The compile-time module (`t!`, `td_string!`) and the files say the same thing.
    for (tag, l) in [
        ("en", Locale::en),
        ("fr", Locale::fr),
        ("zh-Hant", Locale::zh_Hant),
    ] {
        let s = strings(tag);
        for c in [
            ErrorCode::BudgetExceeded,
            ErrorCode::CursorTooOld,
            ErrorCode::InternalError,
        ] {
            let key = format!("wire.{}", c.as_str().to_ascii_lowercase());
            assert_eq!(app::components::wire::explain(l, c), s[&key], "{tag} {key}");
        }
        assert_eq!(app::components::wire::explain_text(l, "NOT_A_CODE"), None);
        assert_eq!(app::locale::tag_of(l), tag);
        assert_eq!(app::locale::locale_of(tag), l);
    }
}

#[test]
fn counts_take_the_singular_by_each_languages_rule_and_every_pair_exists() {
    // English: only 1; French: 0 and 1; Chinese: no plural.
    assert!(singular("en", 1));
    assert!(!singular("en", 0) && !singular("en", 2) && !singular("en", 21));
    assert!(singular("fr", 0) && singular("fr", 1));
    assert!(!singular("fr", 2) && !singular("fr", 100));
    assert!(!singular("zh-Hant", 1) && !singular("zh-Hant", 2));
    // Every `_single` key has its plural beside it, with the same variables, in every locale;
    // English and French say them differently, Chinese may say them alike.
    for tag in TAGS {
        let s = strings(tag);
        let pairs: Vec<(&String, &String)> = s
            .iter()
            .filter_map(|(k, v)| {
                let plural = k.strip_suffix("_single")?;
                Some((
                    v,
                    s.get(plural)
                        .unwrap_or_else(|| panic!("{tag}.{plural} missing")),
                ))
            })
            .collect();
        assert!(pairs.len() >= 3, "{tag}: {} count pairs", pairs.len());
        for (one, many) in pairs {
            assert_eq!(vars(one), vars(many), "{tag}: {one} / {many}");
            if tag != "zh-Hant" {
                assert_ne!(one, many, "{tag}: the singular says the plural");
            }
        }
    }
    assert_eq!(
        strings("en")["mission.critical_path_single"],
        "critical path: {{ n }} WorkItem"
    );
}
