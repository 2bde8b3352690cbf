//! Which language the console speaks (issue 14): the stored choice, else the first of the
//! browser's languages (`navigator.languages`) the console has, else English. Only Traditional
//! Chinese is offered for Chinese, so `zh-TW`, `zh-HK`, `zh-MO` and `zh-Hant-*` select it and
//! `zh-CN`, `zh-SG`, `zh-Hans` do not.

/// The console's locales, by BCP 47 tag, in switcher order.
pub const TAGS: [&str; 3] = ["en", "fr", "zh-Hant"];

/// The localStorage key of the chosen language.
pub const STORAGE_KEY: &str = "missionweave.console.locale";

/// Maps one browser language tag to a console locale, if it has one.
pub fn match_tag(tag: &str) -> Option<&'static str> {
    let t = tag.trim().to_ascii_lowercase();
    let mut parts = t.split(['-', '_']);
    match parts.next()? {
        "en" => Some("en"),
        "fr" => Some("fr"),
        "zh" => {
            let rest: Vec<&str> = parts.collect();
            let traditional = rest.contains(&"hant")
                || (!rest.contains(&"hans")
                    && rest.iter().any(|p| matches!(*p, "tw" | "hk" | "mo")));
            traditional.then_some("zh-Hant")
        }
        _ => None,
    }
}

/// The locale for a first visit (`stored` absent) or a return (`stored` present and known).
pub fn pick(stored: Option<&str>, languages: &[String]) -> &'static str {
    if let Some(s) = stored
        && let Some(t) = TAGS.iter().find(|t| **t == s)
    {
        return t;
    }
    languages.iter().find_map(|l| match_tag(l)).unwrap_or("en")
}

/// Whether a count of `n` takes the singular in locale `tag` (CLDR's cardinal "one" for whole
/// numbers): English 1; French 0 and 1; Chinese has no plural, its one string serves every
/// count. A count string has a `_single` key beside its plural one and this picks between them
/// (the i18n library's own plurals would ship ICU's plural rules for every language).
pub fn singular(tag: &str, n: usize) -> bool {
    match tag {
        "en" => n == 1,
        "fr" => n <= 1,
        _ => false,
    }
}

/// The locale after `current` in switcher order (the `l` shortcut).
pub fn next(current: &str) -> &'static str {
    let i = TAGS.iter().position(|t| *t == current).unwrap_or(0);
    TAGS[(i + 1) % TAGS.len()]
}

use crate::i18n::Locale;
use leptos_i18n::I18nContext;

/// Maps a BCP 47 tag to the generated locale.
pub fn locale_of(tag: &str) -> Locale {
    match tag {
        "fr" => Locale::fr,
        "zh-Hant" => Locale::zh_Hant,
        _ => Locale::en,
    }
}

pub fn tag_of(l: Locale) -> &'static str {
    match l {
        Locale::en => "en",
        Locale::fr => "fr",
        Locale::zh_Hant => "zh-Hant",
    }
}

/// Changes the language at once (no reload) and remembers the choice.
pub fn set_language(i18n: I18nContext<Locale>, tag: &str) {
    let l = locale_of(tag);
    i18n.set_locale(l);
    crate::web::local_set(STORAGE_KEY, tag_of(l));
    crate::web::set_root_attr("lang", tag_of(l));
}
