//! The signing summary dialog: what a signature covers, line by line, with the canonical JSON
//! (the signed bytes) on demand. Kinds, identifiers, hashes and JSON stay verbatim; labels and
//! figures follow the locale.

use crate::format;
use crate::i18n::*;
use crate::locale::tag_of;
use crate::signing::{BudgetFigure, Dimension, SigningSummary};
use leptos::prelude::*;
use leptos_i18n::I18nContext;

/// A budget figure in the reader's locale (the exact number stays in the canonical JSON).
pub fn figure_text(i18n: I18nContext<Locale>, f: &BudgetFigure) -> String {
    let tag = tag_of(i18n.get_locale());
    let n: f64 = f.number.parse().unwrap_or(f64::NAN);
    let count = format::number(tag, n);
    match f.dimension {
        Dimension::Financial => match &f.currency {
            Some(c) => format::money(tag, n, c),
            None => count,
        },
        Dimension::ModelTokens => format!("{count} {}", t_string!(i18n, ledger.tokens_unit)),
        Dimension::ToolCalls => format!("{count} {}", t_string!(i18n, ledger.tool_calls_unit)),
        Dimension::ComputeSeconds | Dimension::WallClockSeconds => format::seconds(tag, n),
        Dimension::ExternalSideEffects => {
            format!("{count} {}", t_string!(i18n, ledger.side_effects_unit))
        }
    }
}

pub fn dimension_label(i18n: I18nContext<Locale>, d: Dimension) -> String {
    match d {
        Dimension::Financial => t_string!(i18n, ledger.financial),
        Dimension::ModelTokens => t_string!(i18n, ledger.tokens),
        Dimension::ToolCalls => t_string!(i18n, ledger.tool_calls),
        Dimension::ComputeSeconds => t_string!(i18n, ledger.compute),
        Dimension::WallClockSeconds => t_string!(i18n, ledger.wall_clock),
        Dimension::ExternalSideEffects => t_string!(i18n, ledger.side_effects),
    }
    .to_string()
}

#[component]
pub fn SigningSummaryDialog(
    summary: SigningSummary,
    #[prop(into)] on_sign: Callback<()>,
    #[prop(into)] on_cancel: Callback<()>,
) -> impl IntoView {
    let i18n = use_i18n();
    let show_json = RwSignal::new(false);
    let s = StoredValue::new(summary);
    let none = move || t_string!(i18n, signing.none).to_string();
    view! {
        <div class="dialog signing" role="dialog" aria-modal="true" aria-labelledby="signing-title">
            <h2 id="signing-title">{t!(i18n, signing.title)}</h2>
            <p>{t!(i18n, signing.intro)}</p>
            <dl>
                <dt>{t!(i18n, signing.kind)}</dt>
                <dd><code>{s.with_value(|s| s.kind.clone())}</code></dd>
                <dt>{t!(i18n, signing.group)}</dt>
                <dd><code>{move || s.with_value(|s| s.group_id.clone()).unwrap_or_else(none)}</code></dd>
                <dt>{t!(i18n, signing.target)}</dt>
                <dd>
                    {move || {
                        let t = s.with_value(|s| s.targets.clone());
                        if t.is_empty() {
                            none().into_any()
                        } else {
                            view! {
                                <ul>
                                    {t.into_iter().map(|(m, id)| view! { <li><code>{m}</code>" "<code>{id}</code></li> }).collect_view()}
                                </ul>
                            }.into_any()
                        }
                    }}
                </dd>
                <dt>{t!(i18n, signing.mission_revision)}</dt>
                <dd>{move || s.with_value(|s| s.mission_revision).map(|r| r.to_string()).unwrap_or_else(none)}</dd>
                <dt>{t!(i18n, signing.artifacts)}</dt>
                <dd>
                    {move || {
                        let h = s.with_value(|s| s.artifact_hashes.clone());
                        if h.is_empty() {
                            none().into_any()
                        } else {
                            view! { <ul>{h.into_iter().map(|h| view! { <li><code class="hash">{h}</code></li> }).collect_view()}</ul> }.into_any()
                        }
                    }}
                </dd>
                <dt>{t!(i18n, signing.budget)}</dt>
                <dd>
                    {move || {
                        let b = s.with_value(|s| s.budget.clone());
                        if b.is_empty() {
                            none().into_any()
                        } else {
                            view! {
                                <ul>
                                    {b.into_iter().map(|f| {
                                        let d = f.dimension;
                                        let member = f.member.clone();
                                        let label = move || dimension_label(i18n, d);
                                        let value = move || figure_text(i18n, &f);
                                        view! { <li>{t!(i18n, signing.figure, label, value)}" "<code>{member}</code></li> }
                                    }).collect_view()}
                                </ul>
                            }.into_any()
                        }
                    }}
                </dd>
            </dl>
            <button type="button" aria-expanded=move || show_json.get().to_string() on:click=move |_| show_json.update(|v| *v = !*v)>
                {move || if show_json.get() { t_string!(i18n, signing.canonical_hide) } else { t_string!(i18n, signing.canonical_show) }}
            </button>
            <Show when=move || show_json.get()>
                <pre class="canonical"><code>{s.with_value(|s| s.canonical_json.clone())}</code></pre>
            </Show>
            <div class="actions">
                <button type="button" class="primary" on:click=move |_| on_sign.run(())>{t!(i18n, signing.sign)}</button>
                <button type="button" on:click=move |_| on_cancel.run(())>{t!(i18n, signing.cancel)}</button>
            </div>
        </div>
    }
}
