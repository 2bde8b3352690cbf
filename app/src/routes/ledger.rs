//! The Budget Ledger (`/ledger`, `?mission=<id>`): for a Mission and the accounts below it, the
//! six dimensions allocated / used / remaining / effective limit (§12, `views::ledger`), an SVG
//! burn-down of the Mission account with the projected exhaustion, and the `BUDGET_EXCEEDED`
//! rejections the human's Commands received.

use crate::app::tag_of;
use crate::components::ident::Id;
use crate::components::live::dimension_label;
use crate::components::states::{Empty, StreamStates};
use crate::format;
use crate::format::svg;
use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use wasm_core::authority::projection::DIMENSIONS;
use wasm_core::views::ledger::{Forecast, LedgerView};

#[component]
pub fn Ledger() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let query = use_query_map();
    let picked = RwSignal::new(None::<String>);
    let dimension = RwSignal::new(1usize);
    let missions = move || {
        let Some(viewer) = console.viewer.get() else {
            return Vec::new();
        };
        console.snapshot.with(|s| {
            s.state
                .missions
                .values()
                .filter(|m| viewer.sees(&s.state, m))
                .map(|m| (m.id.clone(), m.title.clone()))
                .collect::<Vec<_>>()
        })
    };
    let mission = move || {
        picked
            .get()
            .or_else(|| query.with(|q| q.get("mission")))
            .or_else(|| missions().first().map(|m| m.0.clone()))
    };
    let ledger = move || {
        let id = mission()?;
        let seen = console.rejections.get();
        let events = console.log.with_value(|l| l.folded_events().to_vec());
        console
            .snapshot
            .with(|s| LedgerView::build(&s.state, &id, &events, &seen))
    };
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, ledger.title)}</h1>
            <p class="intro">{t!(i18n, ledger.intro)}</p>
            <StreamStates>
                <form class="toolbar" on:submit=|ev| ev.prevent_default()>
                    <label for="ledger-mission">"Mission"</label>
                    <select id="ledger-mission" on:change=move |ev| picked.set(Some(event_target_value(&ev)))>
                        {move || { let cur = mission(); missions().into_iter().map(|(id, title)| {
                            let sel = cur.as_deref() == Some(id.as_str());
                            view! { <option value=id.clone() selected=sel translate="no">{title}</option> }
                        }).collect_view() }}
                    </select>
                    <label for="ledger-dimension">{t!(i18n, ledger.dimension)}</label>
                    <select id="ledger-dimension" on:change=move |ev| dimension.set(event_target_value(&ev).parse().unwrap_or(1))>
                        {DIMENSIONS.iter().enumerate().map(|(i, d)| view! {
                            <option value=i.to_string() selected=i == 1>{move || dimension_label(i18n, d)}</option>
                        }).collect_view()}
                    </select>
                </form>
                {move || match ledger() {
                    None => view! { <Empty>{t!(i18n, ledger.empty)}</Empty> }.into_any(),
                    Some(l) => view! { <LedgerBody ledger=l dimension=dimension.get() /> }.into_any(),
                }}
            </StreamStates>
        </section>
    }
}

fn num(tag: &str, n: Option<u64>) -> String {
    n.map(|n| format::number(tag, n as f64))
        .unwrap_or_else(|| "—".into())
}

#[component]
fn LedgerBody(ledger: LedgerView, dimension: usize) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let tag = move || tag_of(i18n.get_locale());
    let dim = DIMENSIONS.get(dimension).copied().unwrap_or("modelTokens");
    let rows = ledger.accounts.clone();
    let forecast = ledger
        .forecast
        .iter()
        .find(|(d, _)| *d == dim)
        .map(|(_, f)| *f)
        .unwrap_or(Forecast::Steady);
    let limit = ledger
        .accounts
        .first()
        .and_then(|a| a.figures.iter().find(|f| f.dimension == dim))
        .and_then(|f| f.effective_limit);
    let series: Vec<(i64, u64)> = ledger
        .series
        .iter()
        .map(|p| (p.at.0, p.cumulative[dimension.min(5)]))
        .collect();
    let rejections = ledger.rejections.clone();
    let now = console.view_now();
    view! {
        <table class="ledger" id="ledger-table">
            <caption>{t!(i18n, ledger.dimensions)}</caption>
            <thead><tr>
                <th scope="col">{t!(i18n, ledger.account)}</th>
                <th scope="col">{t!(i18n, ledger.dimension)}</th>
                <th scope="col">{t!(i18n, ledger.allocated)}</th>
                <th scope="col">{t!(i18n, ledger.used)}</th>
                <th scope="col">{t!(i18n, ledger.remaining)}</th>
                <th scope="col">{t!(i18n, ledger.effective_limit)}</th>
            </tr></thead>
            // One row group per account: its id once, as the header of its six dimensions.
            {rows.into_iter().map(|a| {
                let id = a.account_id.clone();
                let depth = a.depth;
                let span = a.figures.len().max(1).to_string();
                view! {
                    <tbody class="account">
                        {a.figures.into_iter().enumerate().map(|(i, f)| {
                            let d = f.dimension;
                            let head = (i == 0).then(|| view! {
                                <th scope="rowgroup" rowspan=span.clone() class=format!("depth-{}", depth.min(4))><Id id=id.clone() /></th>
                            });
                            view! {
                                <tr>
                                    {head}
                                    <td>{move || dimension_label(i18n, d)}</td>
                                    <td class="num">{move || num(tag(), f.allocated)}</td>
                                    <td class="num">{move || num(tag(), Some(f.used))}</td>
                                    <td class="num">{move || num(tag(), f.remaining)}</td>
                                    <td class="num">{move || num(tag(), f.effective_limit)}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                }
            }).collect_view()}
        </table>
        <section aria-labelledby="burn-title">
            <h2 id="burn-title">{t!(i18n, ledger.burn_down)}" — "{move || dimension_label(i18n, dim)}</h2>
            <BurnDown series=series limit=limit forecast=forecast now=now.0 />
            <p id="forecast">{move || match forecast {
                Forecast::NotGranted => t!(i18n, ledger.not_granted).into_any(),
                Forecast::Exhausted => view! { "✖ "{t!(i18n, ledger.exhausted)} }.into_any(),
                Forecast::Steady => t!(i18n, ledger.steady).into_any(),
                Forecast::At(at) => {
                    let when = format::timestamp(tag(), &at.format()).unwrap_or_else(|| at.format());
                    t!(i18n, ledger.exhaustion_at, when = move || when.clone()).into_any()
                }
            }}</p>
        </section>
        <section aria-labelledby="rej-title">
            <h2 id="rej-title">"BUDGET_EXCEEDED"</h2>
            {if rejections.is_empty() {
                view! { <p>{t!(i18n, ledger.no_rejections)}</p> }.into_any()
            } else {
                view! { <ul class="rejections">{rejections.into_iter().map(|r| view! {
                    <li><code>{r.command_kind}</code>" · "<code>{r.actor_id}</code>" · "{r.dimension.unwrap_or_default()}" · "{r.account.unwrap_or_default()}" — "<span translate="no">{r.message}</span></li>
                }).collect_view()}</ul> }.into_any()
            }}
        </section>
    }
}

/// Cumulative usage over time, the limit as a line, and the projection to exhaustion dashed.
#[component]
fn BurnDown(
    series: Vec<(i64, u64)>,
    limit: Option<u64>,
    forecast: Forecast,
    now: i64,
) -> impl IntoView {
    let i18n = use_i18n();
    // Whole user units, computed in integers (`format::svg`): no float formatting is linked.
    let (w, h): (u64, u64) = (600, 200);
    let t0 = series.first().map_or(now, |p| p.0);
    let mut t1 = series.last().map_or(now, |p| p.0).max(now);
    if let Forecast::At(at) = forecast {
        t1 = t1.max(at.0);
    }
    let top = series
        .iter()
        .map(|p| p.1)
        .max()
        .unwrap_or(0)
        .max(limit.unwrap_or(0))
        .max(1);
    let span = t1.saturating_sub(t0).max(1).unsigned_abs();
    let x = move |t: i64| svg::scale(t.saturating_sub(t0).max(0).unsigned_abs(), span, w);
    let y = move |v: u64| h as i64 - svg::scale(v, top, h);
    let mut d = String::new();
    for (i, (t, v)) in series.iter().enumerate() {
        d.push_str(&format!(
            "{}{} {} ",
            if i == 0 { "M" } else { "L" },
            x(*t),
            y(*v)
        ));
    }
    let projection = match (forecast, series.last(), limit) {
        (Forecast::At(at), Some((t, v)), Some(l)) => {
            Some(format!("M{} {} L{} {}", x(*t), y(*v), x(at.0), y(l)))
        }
        _ => None,
    };
    view! {
        <svg class="burn-down" id="burn-down" viewBox=format!("-4 -4 {} {}", w + 8, h + 8) role="img"
            aria-label=move || t_string!(i18n, ledger.burn_down_label)>
            <rect x="0" y="0" width=w height=h class="frame"></rect>
            {limit.map(|l| view! { <line x1="0" x2=w y1=y(l) y2=y(l) class="limit"></line> })}
            <path d=d class="usage"></path>
            {projection.map(|p| view! { <path d=p class="projection"></path> })}
        </svg>
    }
}
