//! The Budget Ledger (`/ledger`, `?mission=<id>`): for a Mission and the accounts below it, the
//! six dimensions allocated / used / remaining / effective limit (§12, `views::ledger`), an SVG
//! burn-down of the Mission account with the projected exhaustion, and the `BUDGET_EXCEEDED`
//! rejections the human's Commands received.

use crate::components::ident::{Id, shared_prefix};
use crate::components::live::dimension_label;
use crate::components::states::{Empty, StreamStates};
use crate::format;
use crate::format::markup;
use crate::i18n::*;
use crate::locale::tag_of;
use crate::state::use_console;
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use leptos_router::hooks::use_query_map;
use wasm_core::authority::Micros;
use wasm_core::authority::projection::DIMENSIONS;
use wasm_core::views::ledger::chart::{self, BurnDown, Level, Outlook, Panel};
use wasm_core::views::ledger::{AccountKind, AccountLine, Forecast, LedgerView};

#[component]
pub fn Ledger() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let query = use_query_map();
    let picked = RwSignal::new(None::<String>);
    let dimension = RwSignal::new(1usize);
    // A Mission with many WorkItems has six rows per account: the table can be cut to the
    // dimension picked for the burn-down, one row per account.
    let only = RwSignal::new(false);
    let missions = move || {
        let Some(viewer) = console.viewer.get() else {
            return Vec::new();
        };
        console.snapshot.with(|s| {
            s.state
                .missions
                .values()
                .filter(|m| viewer.sees(&s.state, m))
                .map(|m| (m.id.clone(), m.title.clone(), m.is_terminal()))
                .collect::<Vec<_>>()
        })
    };
    let mission = move || {
        picked
            .get()
            .or_else(|| {
                let m = query.with(|q| q.get("mission"))?;
                Some(console.snapshot.with(|s| {
                    crate::format::named_id(m, s.state.missions.keys().map(String::as_str))
                }))
            })
            .or_else(|| {
                // The first Mission still open: a finished one uses nothing more.
                let all = missions();
                all.iter()
                    .find(|m| !m.2)
                    .or_else(|| all.first())
                    .map(|m| m.0.clone())
            })
    };
    let ledger = move || {
        let id = mission()?;
        let seen = console.rejections.get();
        // Read in place: a copy of every folded Event per update would grow with the log.
        console.log.with_value(|l| {
            console
                .snapshot
                .with(|s| LedgerView::build(&s.state, &id, l.folded_events(), &seen))
        })
    };
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, ledger.title)}</h1>
            <p class="intro">{t!(i18n, ledger.intro)}</p>
            <StreamStates>
                <form class="toolbar" on:submit=|ev| ev.prevent_default()>
                    <label for="ledger-mission">"Mission"</label>
                    <select id="ledger-mission" on:change=move |ev| picked.set(Some(event_target_value(&ev)))>
                        {move || { let cur = mission(); missions().into_iter().map(|(id, title, _)| {
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
                    <label class="check">
                        <input type="checkbox" id="ledger-only" bind:checked=only />
                        {t!(i18n, ledger.only_dimension)}
                    </label>
                </form>
                {move || match ledger() {
                    None => view! { <Empty>{t!(i18n, ledger.empty)}</Empty> }.into_any(),
                    Some(l) => view! { <LedgerBody ledger=l dimension=dimension.get() only=only.get() /> }.into_any(),
                }}
            </StreamStates>
        </section>
    }
}

/// How much of each account's id the ledger leaves out (`components::ident::Id`'s `elide`):
/// the prefix the accounts of its own Mission share. The picked Mission's accounts share its
/// stem (shown once under the header); a child Mission's (below its parent WorkItem) have a
/// stem of their own, and cutting every row back to what both stems share would leave ids too
/// long for one line. Rows come parent first ([`LedgerView`]'s order); a row whose parent is
/// not listed counts with the first row's Mission.
pub fn account_elisions(rows: &[AccountLine]) -> Vec<usize> {
    use std::collections::BTreeMap;
    let mut mission_of: BTreeMap<&str, &str> = BTreeMap::new();
    let root = rows.first().map_or("", |a| a.account_id.as_str());
    let owners: Vec<&str> = rows
        .iter()
        .map(|a| {
            let m = match a.kind {
                AccountKind::Mission => a.account_id.as_str(),
                AccountKind::WorkItem => a
                    .parent
                    .as_deref()
                    .and_then(|p| mission_of.get(p).copied())
                    .unwrap_or(root),
            };
            mission_of.insert(a.account_id.as_str(), m);
            m
        })
        .collect();
    let mut stems: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &owners {
        if !stems.contains_key(m) {
            let ids = rows
                .iter()
                .zip(&owners)
                .filter(|(_, o)| *o == m)
                .map(|(a, _)| a.account_id.as_str());
            stems.insert(m, shared_prefix(ids));
        }
    }
    owners
        .iter()
        .map(|m| stems.get(m).copied().unwrap_or(0))
        .collect()
}

fn num(tag: &str, n: Option<u64>) -> String {
    n.map(|n| format::number(tag, n as f64))
        .unwrap_or_else(|| "—".into())
}

/// The unit a dimension's figures count, for the chart's value axis and its summary.
fn unit_label(i18n: I18nContext<Locale>, d: &str) -> String {
    match d {
        "financialMicrounits" => t_string!(i18n, ledger.microunits_unit),
        "modelTokens" => t_string!(i18n, ledger.tokens_unit),
        "toolCalls" => t_string!(i18n, ledger.tool_calls_unit),
        "computeSeconds" | "wallClockSeconds" => t_string!(i18n, ledger.seconds_unit),
        _ => t_string!(i18n, ledger.side_effects_unit),
    }
    .to_owned()
}

/// The usage bar of one figure: used / effective limit as a `<meter>` (hidden from assistive
/// technology: the percentage beside it says the same), the percentage in text, and near or
/// at the limit a sign and a word, so the state is never told by colour alone.
#[component]
fn UsageBar(used: u64, limit: Option<u64>) -> impl IntoView {
    let i18n = use_i18n();
    let tag = move || tag_of(i18n.get_locale());
    match chart::usage_permille(used, limit) {
        None => view! { <span class="pct">"—"</span> }.into_any(),
        Some(p) => {
            let level = chart::level(p);
            let word = match level {
                Level::Normal => None,
                Level::Near => Some(
                    view! { <span class="level near">"⚠ "{t!(i18n, ledger.near_limit)}</span> }
                        .into_any(),
                ),
                Level::AtLimit => Some(
                    view! { <span class="level at-limit">"✖ "{t!(i18n, ledger.at_limit)}</span> }
                        .into_any(),
                ),
            };
            view! {
                <meter min="0" max="1000" low="800" high="999" optimum="0" value=p.min(1000).to_string() aria-hidden="true"></meter>
                <span class="pct">{move || format::percent(tag(), p)}</span>
                {word}
            }
            .into_any()
        }
    }
}

#[component]
fn LedgerBody(ledger: LedgerView, dimension: usize, only: bool) -> impl IntoView {
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
    let series: Vec<(Micros, u64)> = ledger
        .series
        .iter()
        .map(|p| (p.at, p.cumulative[dimension.min(5)]))
        .collect();
    let rejections = ledger.rejections.clone();
    let now = console.view_now();
    let c = chart::burn_down(&series, limit, forecast, now, ledger.deadline);
    let deadline = ledger.deadline;
    let used = c.used;
    let outlook = c.outlook;
    let th = move |label: fn(I18nContext<Locale>) -> String| move || label(i18n);
    // The account ids' shared prefix, once under the column's header; each account shows its
    // title and the rest of its id (a child Mission's accounts: after their own Mission's).
    let elisions = account_elisions(&rows);
    let elide = elisions.first().copied().unwrap_or(0);
    let prefix = rows
        .first()
        .and_then(|a| a.account_id.get(..elide))
        .filter(|p| !p.is_empty())
        .map(|p| view! { <br /><Id id=format!("{p}…") /> });
    view! {
        // The picture first (the dimension picked above it), then every figure.
        <section aria-labelledby="burn-title">
            <h2 id="burn-title">{t!(i18n, ledger.burn_down)}" — "{move || dimension_label(i18n, dim)}</h2>
            <svg class="burn-down" id="burn-down" viewBox=format!("0 0 {} {}", c.width, c.height) role="img"
                aria-label=move || format!("{} — {}", t_string!(i18n, ledger.burn_down_label), dimension_label(i18n, dim))
                aria-describedby="burn-summary"
                inner_html={
                    let c = c.clone();
                    move || chart_markup(&c, tag(), &ChartWords {
                        unit: unit_label(i18n, dim),
                        limit: t_string!(i18n, ledger.effective_limit).to_owned(),
                        deadline: t_string!(i18n, ledger.legend_deadline).to_owned(),
                        zoom: t_string!(i18n, ledger.zoom_title).to_owned(),
                    })
                }>
            </svg>
            <ul class="chart-legend" id="burn-legend" aria-label=move || t_string!(i18n, ledger.legend)>
                <li><Swatch class="usage" />{t!(i18n, ledger.legend_used)}</li>
                {c.limit.map(|_| view! { <li><Swatch class="limit" />{t!(i18n, ledger.effective_limit)}</li> })}
                {c.projection.map(|_| view! { <li><Swatch class="projection" />{t!(i18n, ledger.legend_projection)}</li> })}
                {c.exhaustion.map(|_| view! { <li><svg class="swatch" viewBox="0 0 28 12" aria-hidden="true"><path class="exhaustion" d="M14 1 L19 6 L14 11 L9 6 Z"></path></svg>{t!(i18n, ledger.legend_exhaustion)}</li> })}
                {c.deadline.map(|_| view! { <li><Swatch class="deadline" />{t!(i18n, ledger.legend_deadline)}</li> })}
            </ul>
            <div id="burn-summary">
                {limit.map(|lim| view! { <p>{move || {
                    let used_text = format!("{} {}", format::number(tag(), used as f64), unit_label(i18n, dim));
                    let lim_text = num(tag(), Some(lim));
                    let pct = chart::usage_permille(used, Some(lim))
                        .map_or_else(|| "—".to_owned(), |p| format::percent(tag(), p));
                    t!(i18n, ledger.summary, used = move || used_text.clone(), limit = move || lim_text.clone(), percent = move || pct.clone())
                }}</p> })}
                <p id="forecast">{move || match outlook {
                    Outlook::NotGranted => t!(i18n, ledger.not_granted).into_any(),
                    Outlook::Exhausted => view! { "✖ "{t!(i18n, ledger.exhausted)} }.into_any(),
                    Outlook::Steady => t!(i18n, ledger.steady).into_any(),
                    Outlook::Finished => t!(i18n, ledger.finished).into_any(),
                    Outlook::Within { at } => {
                        let when = when_text(tag(), at);
                        t!(i18n, ledger.exhaustion_at, when = move || when.clone()).into_any()
                    }
                    Outlook::AfterDeadline { at } => {
                        let when = when_text(tag(), at);
                        let due = when_text(tag(), deadline);
                        t!(i18n, ledger.beyond_deadline, when = move || when.clone(), deadline = move || due.clone()).into_any()
                    }
                }}</p>
            </div>
        </section>
        <table class="ledger" id="ledger-table">
            <caption>{t!(i18n, ledger.dimensions)}</caption>
            <thead><tr>
                <th scope="col">{t!(i18n, ledger.account)}{prefix}</th>
                <th scope="col">{t!(i18n, ledger.dimension)}</th>
                <th scope="col">{t!(i18n, ledger.allocated)}</th>
                <th scope="col">{t!(i18n, ledger.used)}</th>
                <th scope="col">{t!(i18n, ledger.remaining)}</th>
                <th scope="col">{t!(i18n, ledger.effective_limit)}</th>
                <th scope="col">{t!(i18n, ledger.usage)}</th>
            </tr></thead>
            // One row group per account: its id once, as the header of its six dimensions.
            // On a phone the cells stack (style/console.css), each named by its `data-label`.
            {rows.into_iter().zip(elisions).map(|(a, elide)| {
                let id = a.account_id.clone();
                let title = a.title.clone();
                let depth = a.depth;
                let figures: Vec<_> = a.figures.into_iter().filter(|f| !only || f.dimension == dim).collect();
                let span = figures.len().max(1).to_string();
                let class = match a.kind {
                    AccountKind::Mission => "account mission",
                    AccountKind::WorkItem => "account work-item",
                };
                view! {
                    <tbody class=class>
                        {figures.into_iter().enumerate().map(|(i, f)| {
                            let d = f.dimension;
                            let head = (i == 0).then(|| view! {
                                <th scope="rowgroup" rowspan=span.clone() class=format!("depth-{}", depth.min(4))>
                                    {(!title.is_empty()).then(|| view! { <span class="account-title" translate="no">{title.clone()}</span><br /> })}
                                    <Id id=id.clone() elide />
                                </th>
                            });
                            view! {
                                <tr>
                                    {head}
                                    <td class="dim">{move || dimension_label(i18n, d)}</td>
                                    <td class="num" data-label=th(|i| t_string!(i, ledger.allocated).to_owned())>{move || num(tag(), f.allocated)}</td>
                                    <td class="num" data-label=th(|i| t_string!(i, ledger.used).to_owned())>{move || num(tag(), Some(f.used))}</td>
                                    <td class="num" data-label=th(|i| t_string!(i, ledger.remaining).to_owned())>{move || num(tag(), f.remaining)}</td>
                                    <td class="num" data-label=th(|i| t_string!(i, ledger.effective_limit).to_owned())>{move || num(tag(), f.effective_limit)}</td>
                                    <td class="usage"><UsageBar used=f.used limit=f.effective_limit /></td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                }
            }).collect_view()}
        </table>
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

/// A protocol instant as the locale's date and time.
fn when_text(tag: &str, at: Micros) -> String {
    format::timestamp(tag, &at.format()).unwrap_or_else(|| at.format())
}

/// A legend's sample of a line: the same class, so the same stroke and dash pattern.
#[component]
fn Swatch(class: &'static str) -> impl IntoView {
    view! {
        <svg class="swatch" viewBox="0 0 28 12" aria-hidden="true">
            <line class=class x1="0" x2="28" y1="6" y2="6"></line>
        </svg>
    }
}

/// The chart's words, translated.
pub struct ChartWords {
    pub unit: String,
    pub limit: String,
    pub deadline: String,
    pub zoom: String,
}

/// `<text>` at (x, y) with its anchor and class; the text escaped.
fn text(out: &mut String, x: i64, y: i64, anchor: &str, class: &str, t: &str) {
    out.push_str(&format!(
        r#"<text x="{x}" y="{y}" text-anchor="{anchor}" class="{class}">"#
    ));
    markup::escape_into(out, t);
    out.push_str("</text>");
}

fn line(out: &mut String, class: &str, (x1, y1): (i64, i64), (x2, y2): (i64, i64)) {
    out.push_str(&format!(
        r#"<line class="{class}" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"></line>"#
    ));
}

/// One panel's grid, axes, tick labels and used line.
fn panel_markup(out: &mut String, c: &BurnDown, p: &Panel, tag: &str) {
    for (v, y) in &p.y_ticks {
        line(out, "grid", (c.left, *y), (c.right, *y));
        text(
            out,
            c.left - 6,
            y + 4,
            "end",
            "tick tick-y",
            &format::number(tag, *v as f64),
        );
    }
    for (t, x) in &p.x_ticks {
        line(out, "axis", (*x, p.bottom), (*x, p.bottom + 5));
        text(
            out,
            *x,
            p.bottom + 19,
            "middle",
            "tick tick-x",
            &format::clock(tag, *t, p.grain),
        );
    }
    line(out, "axis", (c.left, p.top), (c.left, p.bottom));
    line(out, "axis", (c.left, p.bottom), (c.right, p.bottom));
    if let Some((first, rest)) = p.used.split_first() {
        let mut d = format!("M{} {}", first.0, first.1);
        for (x, y) in rest {
            d.push_str(&format!(" L{x} {y}"));
        }
        out.push_str(&format!(r#"<path class="usage" d="{d}"></path>"#));
    }
    if let Some((x, y)) = p.used.last() {
        out.push_str(&format!(
            r#"<circle class="usage-end" cx="{x}" cy="{y}" r="3"></circle>"#
        ));
    }
}

/// The burn-down's SVG content from its geometry ([`chart::burn_down`]): every number an
/// integer, every word escaped ([`markup::escape`]).
pub fn chart_markup(c: &BurnDown, tag: &str, words: &ChartWords) -> String {
    let mut out = String::with_capacity(4096);
    let m = &c.main;
    text(&mut out, 2, m.top - 14, "start", "unit", &words.unit);
    panel_markup(&mut out, c, m, tag);
    if let Some((_, y)) = c.limit {
        line(&mut out, "limit", (c.left, y), (c.right, y));
        text(
            &mut out,
            // At the left end under the line: the right end above it is the exhaustion's time,
            // the unit is above the left end.
            c.left + 4,
            y + 16,
            "start",
            "label limit-label",
            &words.limit,
        );
    }
    if let Some(x) = c.deadline {
        line(&mut out, "deadline", (x, m.top), (x, m.bottom));
        text(&mut out, x - 4, m.top + 30, "end", "label", &words.deadline);
    }
    if let Some([(x1, y1), (x2, y2)]) = c.projection {
        out.push_str(&format!(
            r#"<path class="projection" d="M{x1} {y1} L{x2} {y2}"></path>"#
        ));
    }
    if let (Some((x, y)), Outlook::Within { at }) = (c.exhaustion, c.outlook) {
        out.push_str(&format!(
            r#"<path class="exhaustion" d="M{x} {} L{} {y} L{x} {} L{} {y} Z"></path>"#,
            y - 6,
            x + 6,
            y + 6,
            x - 6
        ));
        text(
            &mut out,
            x,
            y - 10,
            "end",
            "label exhaustion-label",
            &format::clock(tag, at, m.grain),
        );
    }
    if let Some(z) = &c.zoom {
        text(
            &mut out,
            2,
            z.top - 14,
            "start",
            "label zoom-title",
            &words.zoom,
        );
        panel_markup(&mut out, c, z, tag);
    }
    out
}
