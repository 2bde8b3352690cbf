//! Events (`/events`): every Event received with kind, actor, cause (Action ID), Group and
//! sequence, and its verification: the verified mark with its signing hash, or rejected with
//! its wire code (never applied, alarm raised). Filters by kind, WorkItem and actor
//! (`views::timeline::Timeline`); the JSON of any Event; **time travel**: "view as of" pins
//! every view to the state just after that Event (replayed by the reducer, `Console::travel_to`)
//! with a banner and a way back to live. Open sequence gaps are shown, never papered over (§16).

use crate::components::ident::{Id, shared_prefix};
use crate::components::live::Timestamp;
use crate::components::states::{Empty, StreamStates};
use crate::components::wire;
use crate::format;
use crate::i18n::*;
use crate::locale::tag_of;
use crate::state::{EventRow, use_console};
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use wasm_core::views::timeline::{Timeline, TimelineQuery};

/// The row of each applied Event, by Event ID, for the table of folded Events: one lookup per
/// row, not a scan of every row per row (100,000 Events would be 10^10). A rejected copy that
/// shares an applied Event's ID (a tampered copy, before or after the genuine one) is never
/// taken for it: it keeps its own row in the rejected list, and the applied Event shows its
/// verified mark.
pub fn applied_by_id(rows: &[EventRow]) -> std::collections::HashMap<&str, &EventRow> {
    let mut by_id = std::collections::HashMap::new();
    for r in rows.iter().filter(|r| r.rejected.is_none()) {
        by_id.entry(r.event_id.as_str()).or_insert(r);
    }
    by_id
}

/// Rows drawn at first, and added by each "Show earlier Events": the table draws the latest
/// matching Events, never a whole long history at once (each row is live: marks, time travel,
/// its JSON on demand). The `localStorage` key `missionweave.console.eventsPage` lowers it.
pub const PAGE: usize = 500;

#[component]
pub fn Events() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let kind = RwSignal::new(String::new());
    let work = RwSignal::new(String::new());
    let actor = RwSignal::new(String::new());
    let shown_json = RwSignal::new(None::<String>);
    // How many of the matching Events are drawn: the latest, [`PAGE`] more per click.
    // `missionweave.console.eventsPage` lowers the page for tests.
    let page = crate::web::local_get("missionweave.console.eventsPage")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(PAGE);
    let shown = RwSignal::new(page);
    let rows = move || {
        let _ = console.progress.get();
        let q = TimelineQuery {
            kinds: Some(kind.get().trim().to_owned())
                .filter(|k| !k.is_empty())
                .into_iter()
                .collect(),
            work_item_id: Some(work.get().trim().to_owned()).filter(|w| !w.is_empty()),
            actor_id: Some(actor.get().trim().to_owned()).filter(|a| !a.is_empty()),
            group_id: None,
        };
        let timeline = console
            .log
            .with_value(|l| Timeline::build(l.folded_events()));
        let hashes = console.events.get();
        let by_id = applied_by_id(&hashes);
        let matching = timeline.filter(&q);
        let total = matching.len();
        let from = total.saturating_sub(shown.get());
        let rows = matching[from..]
            .iter()
            .map(|e| {
                let row = by_id
                    .get(e.event_id.as_str())
                    .map(|r| (*r).clone())
                    .unwrap_or_else(|| EventRow {
                        event_id: e.event_id.clone(),
                        group_id: e.group_id.clone(),
                        sequence: Some(e.sequence),
                        kind: e.kind.clone(),
                        occurred_at: e.occurred_at.format(),
                        signing_hash: None,
                        rejected: None,
                    });
                (row, e.actor.id.0.clone(), e.cause_id.clone(), e.position)
            })
            .collect::<Vec<_>>();
        (total, rows)
    };
    let rejected = move || {
        console
            .events
            .get()
            .into_iter()
            .filter(|r| r.rejected.is_some())
            .collect::<Vec<_>>()
    };
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, events.title)}</h1>
            <p class="intro">{t!(i18n, events.intro)}</p>
            <crate::components::audit_export::AuditExport />
            <ul class="gaps">
                <For
                    each=move || console.gaps.get()
                    key=|g| g.clone()
                    children=move |(group, from, to)| view! {
                        <li class="gap" title=move || t_string!(i18n, events.gap_hint)>
                            <span class="icon" aria-hidden="true">"⚠"</span>" "
                            {t!(i18n, events.gap, group = move || group.clone(), from = move || from, to = move || to)}
                        </li>
                    }
                />
            </ul>
            <StreamStates>
                <form class="toolbar" role="search" on:submit=|ev| ev.prevent_default()>
                    <label for="filter-kind">{t!(i18n, events.filter_kind)}</label>
                    <input id="filter-kind" type="search" placeholder="work." bind:value=kind />
                    <label for="filter-work">"WorkItem"</label>
                    <input id="filter-work" type="search" bind:value=work />
                    <label for="filter-actor">{t!(i18n, events.filter_actor)}</label>
                    <input id="filter-actor" type="search" bind:value=actor />
                </form>
                {move || {
                    let bad = rejected();
                    (!bad.is_empty()).then(|| view! {
                        <section class="rejected-events" aria-labelledby="rejected-title">
                            <h2 id="rejected-title">{t!(i18n, events.rejected_list)}</h2>
                            <table class="events"><tbody>
                                {bad.into_iter().map(|r| view! { <Row row=r actor=String::new() cause=String::new() position=None shown_json labels=labels(i18n) /> }).collect_view()}
                            </tbody></table>
                        </section>
                    })
                }}
                {move || {
                    let (total, rows) = rows();
                    if rows.is_empty() {
                        view! { <Empty>{t!(i18n, events.empty)}</Empty> }.into_any()
                    } else {
                        let drawn = rows.len();
                        // Each id column drawn without the prefix all its rows share (shown once,
                        // in the column's header): the rows keep what tells them apart.
                        // (Empty cells, such as an Event without a cause, take no part.)
                        let groups = shared_prefix(rows.iter().filter_map(|(r, ..)| r.group_id.as_deref()).filter(|i| !i.is_empty()));
                        let actors = shared_prefix(rows.iter().map(|(_, a, ..)| a.as_str()).filter(|i| !i.is_empty()));
                        let causes = shared_prefix(rows.iter().map(|(_, _, c, _)| c.as_str()).filter(|i| !i.is_empty()));
                        let prefix_of = |n: usize, id: Option<&str>| {
                            let p = id.and_then(|i| i.get(..n)).unwrap_or("").to_owned();
                            (!p.is_empty()).then(|| view! { <br /><Id id=format!("{p}…") /> })
                        };
                        let heads = (
                            prefix_of(groups, rows.iter().filter_map(|(r, ..)| r.group_id.as_deref()).find(|i| !i.is_empty())),
                            prefix_of(actors, rows.iter().map(|(_, a, ..)| a.as_str()).find(|i| !i.is_empty())),
                            prefix_of(causes, rows.iter().map(|(_, _, c, _)| c.as_str()).find(|i| !i.is_empty())),
                        );
                        let tag = move || tag_of(i18n.get_locale());
                        view! {
                            {(drawn < total).then(|| view! {
                                <p class="page-info" id="events-page">
                                    {t!(i18n, events.page_info, shown = move || format::number(tag(), drawn as f64), total = move || format::number(tag(), total as f64))}" "
                                    <button type="button" id="events-earlier" on:click=move |_| shown.update(|n| *n = n.saturating_add(page))>
                                        {t!(i18n, events.show_earlier)}
                                    </button>
                                </p>
                            })}
                            <div class="table-scroll" role="region" tabindex="0" aria-label=move || t_string!(i18n, events.title)>
                            <table class="events" id="events-table">
                                <thead>
                                    <tr>
                                        <th scope="col">{t!(i18n, events.group)}{heads.0}</th>
                                        <th scope="col">{t!(i18n, events.sequence)}</th>
                                        <th scope="col">{t!(i18n, events.kind)}</th>
                                        <th scope="col">{t!(i18n, events.actor)}{heads.1}</th>
                                        <th scope="col">{t!(i18n, events.cause)}{heads.2}</th>
                                        <th scope="col">{t!(i18n, events.occurred_at)}</th>
                                        <th scope="col">{t!(i18n, events.signing_hash)}</th>
                                        <th scope="col">{t!(i18n, events.actions)}</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|(r, a, c, at)| view! { <Row row=r actor=a cause=c position=Some(at) shown_json elide=(groups, actors, causes) labels=labels(i18n) /> }).collect_view()}
                                </tbody>
                            </table>
                            </div>
                        }.into_any()
                    }
                }}
            </StreamStates>
        </section>
    }
}

/// The Events table's column names, in order: each cell repeats its own (`data-label`), which
/// a phone shows above the value when a row is stacked as a card. Read in the view's reactive
/// block, so a language change draws the rows anew with the new names.
fn labels(i18n: I18nContext<Locale>) -> [&'static str; 8] {
    [
        t_string!(i18n, events.group),
        t_string!(i18n, events.sequence),
        t_string!(i18n, events.kind),
        t_string!(i18n, events.actor),
        t_string!(i18n, events.cause),
        t_string!(i18n, events.occurred_at),
        t_string!(i18n, events.signing_hash),
        t_string!(i18n, events.actions),
    ]
}

#[component]
fn Row(
    row: EventRow,
    actor: String,
    cause: String,
    /// Its position in the folded log, for its JSON (written only when opened).
    position: Option<usize>,
    shown_json: RwSignal<Option<String>>,
    /// How much of the Group, actor and cause ids to draw as "…" ([`shared_prefix`]).
    #[prop(optional)]
    elide: (usize, usize, usize),
    /// The column names ([`labels`]).
    labels: [&'static str; 8],
) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let mark = match (&row.signing_hash, &row.rejected) {
        (Some(h), _) => {
            let h = h.clone();
            let whole = h.clone();
            view! {
                <td class="mark verified" data-label=labels[6] title=move || t_string!(i18n, events.verified_hint)>
                    <span class="icon" aria-hidden="true">"✓"</span>" "{t!(i18n, events.verified)}" "
                    <code class="hash" title=whole>{h}</code>
                </td>
            }
            .into_any()
        }
        (None, Some((code, reason))) => {
            let code2 = code.clone();
            let reason = reason.clone();
            view! {
                <td class="mark rejected" data-label=labels[6] title=move || t_string!(i18n, events.rejected_hint)>
                    <span class="icon" aria-hidden="true">"✗"</span>" "{t!(i18n, events.rejected)}" "
                    <code>{code.clone()}</code>" "
                    {move || wire::explain_text(i18n.get_locale(), &code2).unwrap_or_default()}
                    <span class="reason">{reason}</span>
                </td>
            }
            .into_any()
        }
        _ => view! { <td></td> }.into_any(),
    };
    let id = row.event_id.clone();
    let id2 = row.event_id.clone();
    let id3 = row.event_id.clone();
    let applied = row.rejected.is_none();
    let pinned = move || {
        console
            .snapshot
            .with(|s| s.as_of.as_ref().is_some_and(|a| a.event_id == id3))
    };
    let open = {
        let id = row.event_id.clone();
        move || shown_json.get().as_deref() == Some(id.as_str())
    };
    let open2 = open.clone();
    view! {
        <tr data-event-id=row.event_id.clone() class:pinned=pinned>
            <td data-label=labels[0]><Id id=row.group_id.clone().unwrap_or_default() elide=elide.0 /></td>
            <td data-label=labels[1]>{row.sequence.map(|s| s.to_string()).unwrap_or_default()}</td>
            <td data-label=labels[2] class="kind"><code class="kind">{row.kind.split_inclusive('.').map(|p| view! { {p.to_owned()}<wbr /> }).collect_view()}</code></td>
            <td data-label=labels[3]><Id id=actor elide=elide.1 /></td>
            <td data-label=labels[4]><Id id=cause elide=elide.2 /></td>
            <td data-label=labels[5]><Timestamp exact=row.occurred_at.clone() /></td>
            {mark}
            <td class="actions" data-label=labels[7]>
                {applied.then(|| view! {
                    <button type="button" class="as-of" on:click=move |_| { console.travel_to(&id); }>
                        {t!(i18n, events.view_as_of)}
                    </button>
                    <button type="button" class="show-json" aria-expanded=move || open().to_string()
                        on:click=move |_| shown_json.update(|s| *s = if s.as_deref() == Some(id2.as_str()) { None } else { Some(id2.clone()) })>
                        "JSON"
                    </button>
                })}
            </td>
        </tr>
        {move || open2().then(|| {
            let json = position
                .and_then(|at| console.log.with_value(|l| l.folded_events().get(at).map(wasm_core::json::to_string)))
                .unwrap_or_default();
            view! {
                <tr class="json-row"><td colspan="8"><pre class="json"><code>{json}</code></pre></td></tr>
            }
        })}
    }
}
