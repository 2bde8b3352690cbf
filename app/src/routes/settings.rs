//! Settings (`/settings`): language, theme, exact timestamps, and examples of the locale's
//! formatting (a relative lease expiry, a number, a date, the budget units).

use crate::components::signing_summary::{dimension_label, figure_text};
use crate::format;
use crate::i18n::*;
use crate::locale::{set_language, tag_of};
use crate::signing::{BudgetFigure, Dimension};
use crate::state::{Theme, use_console};
use leptos::prelude::*;

fn sample(d: Dimension, n: &str, currency: Option<&str>) -> BudgetFigure {
    BudgetFigure {
        pointer: String::new(),
        member: String::new(),
        dimension: d,
        number: n.to_owned(),
        currency: currency.map(str::to_owned),
    }
}

/// A fixed instant for the date example.
const SAMPLE_TIME: &str = "2026-12-02T09:30:00Z";

#[component]
pub fn Settings() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let set_theme = move |t: Theme| {
        console.theme.set(t);
        crate::web::local_set(Theme::STORAGE_KEY, t.as_str());
    };
    let tag = move || tag_of(i18n.get_locale());
    let figures = [
        sample(Dimension::Financial, "1234.5", Some("EUR")),
        sample(Dimension::ModelTokens, "1500000", None),
        sample(Dimension::ToolCalls, "240", None),
        sample(Dimension::ComputeSeconds, "5400", None),
        sample(Dimension::WallClockSeconds, "86400", None),
        sample(Dimension::ExternalSideEffects, "3", None),
    ];
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, settings.title)}</h1>
            <div class="card">
                <h2><label for="settings-lang">{t!(i18n, settings.language)}</label></h2>
                <select id="settings-lang" aria-describedby="settings-lang-hint"
                    on:change=move |ev| set_language(i18n, &event_target_value(&ev))
                    prop:value=tag>
                    <option value="en" lang="en">{t!(i18n, lang.en)}</option>
                    <option value="fr" lang="fr">{t!(i18n, lang.fr)}</option>
                    <option value="zh-Hant" lang="zh-Hant">{t!(i18n, lang.zh_hant)}</option>
                </select>
                <p class="hint" id="settings-lang-hint">{t!(i18n, settings.language_hint)}</p>
            </div>
            <fieldset class="card">
                <legend>{t!(i18n, settings.theme)}</legend>
                <label><input type="radio" name="theme" prop:checked=move || console.theme.get() == Theme::System on:change=move |_| set_theme(Theme::System) />" "{t!(i18n, settings.theme_system)}</label>
                <label><input type="radio" name="theme" prop:checked=move || console.theme.get() == Theme::Light on:change=move |_| set_theme(Theme::Light) />" "{t!(i18n, settings.theme_light)}</label>
                <label><input type="radio" name="theme" prop:checked=move || console.theme.get() == Theme::Dark on:change=move |_| set_theme(Theme::Dark) />" "{t!(i18n, settings.theme_dark)}</label>
            </fieldset>
            <fieldset class="card">
                <legend>{t!(i18n, settings.timestamps)}</legend>
                <label><input type="checkbox" id="exact-times" prop:checked=move || console.exact_times.get() on:change=move |ev| console.exact_times.set(event_target_checked(&ev)) />" "{t!(i18n, settings.timestamps_exact)}</label>
            </fieldset>
            <div class="card" id="samples">
                <h2>{t!(i18n, settings.sample)}</h2>
                <dl>
                    <dt>{t!(i18n, settings.sample_lease_label)}</dt>
                    <dd>{t!(i18n, settings.sample_lease, when = move || format::relative(tag(), 240))}</dd>
                    <dt>{t!(i18n, settings.sample_number)}</dt>
                    <dd>{move || format::number(tag(), 1234567.89)}</dd>
                    <dt>{t!(i18n, settings.sample_date)}</dt>
                    <dd><time datetime=SAMPLE_TIME title=SAMPLE_TIME>
                        {move || if console.exact_times.get() {
                            SAMPLE_TIME.to_string()
                        } else {
                            format::timestamp(tag(), SAMPLE_TIME).unwrap_or_default()
                        }}
                    </time></dd>
                    {figures.into_iter().map(|f| {
                        let d = f.dimension;
                        view! {
                            <dt>{move || dimension_label(i18n, d)}</dt>
                            <dd>{move || figure_text(i18n, &f)}</dd>
                        }
                    }).collect_view()}
                </dl>
            </div>
        </section>
    }
}
