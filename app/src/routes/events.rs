//! Events (`/events`): every Event received with kind, actor, cause (Action ID), Group and
//! sequence, and its verification: the verified mark with its signing hash, or rejected with
//! its wire code (never applied, alarm raised). One line per Event, read like an auditor's log
//! (issue 29): ids cut to one line, the whole id in the tooltip and the copied text. Filters by
//! kind, WorkItem, actor and Group (`views::timeline::Timeline`); a compact timeline of the same
//! Events grouped by WorkItem (`views::timeline::work_item_lanes`: a row per WorkItem, its
//! Events as marks along time, its goal, opening onto its Events); `?event=<Event ID>` (an
//! alarm's link) scrolls to that Event's row and marks it; the JSON of any Event; **time
//! travel**: "view as of" pins
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
use leptos_router::hooks::use_query_map;
use wasm_core::views::timeline::{Timeline, TimelineQuery, permille, work_item_lanes};

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

/// WorkItems drawn in the compact timeline (those whose Events came last).
pub const LANES: usize = 200;

/// Events listed when a WorkItem's row is opened (its latest).
pub const LANE_EVENTS: usize = 50;

/// Which of the two renderings of the matching Events is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Log,
    Lanes,
}

#[component]
pub fn Events() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let kind = RwSignal::new(String::new());
    let work = RwSignal::new(String::new());
    let actor = RwSignal::new(String::new());
    let group = RwSignal::new(String::new());
    let mode = RwSignal::new(Mode::Log);
    // `?event=<Event ID>`: the row to scroll to and mark (an alarm's link).
    let query = use_query_map();
    let target = Memo::new(move |_| query.with(|q| q.get("event")).filter(|e| !e.is_empty()));
    let shown_json = RwSignal::new(None::<String>);
    // How many of the matching Events are drawn: the latest, [`PAGE`] more per click.
    // `missionweave.console.eventsPage` lowers the page for tests.
    let page = crate::web::local_get("missionweave.console.eventsPage")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(PAGE);
    let shown = RwSignal::new(page);
    let query_of = move || TimelineQuery {
        kinds: Some(kind.get().trim().to_owned())
            .filter(|k| !k.is_empty())
            .into_iter()
            .collect(),
        work_item_id: Some(work.get().trim().to_owned()).filter(|w| !w.is_empty()),
        actor_id: Some(actor.get().trim().to_owned()).filter(|a| !a.is_empty()),
        group_id: Some(group.get().trim().to_owned()).filter(|g| !g.is_empty()),
    };
    let rows = move || {
        let _ = console.progress.get();
        let q = query_of();
        let timeline = console
            .log
            .with_value(|l| Timeline::build(l.folded_events()));
        let hashes = console.events.get();
        let by_id = applied_by_id(&hashes);
        let matching = timeline.filter(&q);
        let total = matching.len();
        // The latest page, reaching back to the Event an alarm's link names if it is earlier.
        let mut from = total.saturating_sub(shown.get());
        if let Some(t) = target.get()
            && let Some(i) = matching.iter().position(|e| e.event_id == t)
        {
            from = from.min(i);
        }
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
    // An alarm's link shows the log, and its row once drawn (the log may still be folding).
    Effect::new(move |_| {
        if target.get().is_some() {
            mode.set(Mode::Log);
        }
    });
    let scrolled = StoredValue::new(None::<String>);
    Effect::new(move |_| {
        console.progress.track();
        console.events.track();
        let Some(id) = target.get() else {
            return;
        };
        if scrolled.with_value(|s| s.as_deref() == Some(id.as_str())) {
            return;
        }
        if crate::web::scroll_to_event_row(&id) {
            scrolled.set_value(Some(id));
        }
    });
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
                <div class="toolbar events-toolbar">
                    <form class="filters" role="search" on:submit=|ev| ev.prevent_default()>
                        <label for="filter-kind">{t!(i18n, events.filter_kind)}</label>
                        <input id="filter-kind" type="search" placeholder="work." bind:value=kind />
                        <label for="filter-work">"WorkItem"</label>
                        <input id="filter-work" type="search" bind:value=work />
                        <label for="filter-actor">{t!(i18n, events.filter_actor)}</label>
                        <input id="filter-actor" type="search" bind:value=actor />
                        <label for="filter-group">{t!(i18n, events.group)}</label>
                        <input id="filter-group" type="search" bind:value=group />
                    </form>
                    <div class="mode-switch" role="group" aria-label=move || t_string!(i18n, events.mode)>
                        <button type="button" id="mode-log" aria-pressed=move || (mode.get() == Mode::Log).to_string()
                            on:click=move |_| mode.set(Mode::Log)>{t!(i18n, events.mode_log)}</button>
                        <button type="button" id="mode-lanes" aria-pressed=move || (mode.get() == Mode::Lanes).to_string()
                            on:click=move |_| mode.set(Mode::Lanes)>{t!(i18n, events.mode_lanes)}</button>
                    </div>
                    <crate::components::audit_export::AuditExport />
                </div>
                {move || {
                    let bad = rejected();
                    (!bad.is_empty()).then(|| view! {
                        <section class="rejected-events" aria-labelledby="rejected-title">
                            <h2 id="rejected-title">{t!(i18n, events.rejected_list)}</h2>
                            <table class="events"><tbody>
                                {bad.into_iter().map(|r| view! { <Row row=r actor=String::new() cause=String::new() position=None shown_json target labels=labels(i18n) /> }).collect_view()}
                            </tbody></table>
                        </section>
                    })
                }}
                {move || (mode.get() == Mode::Lanes).then(|| view! { <Lanes query=Signal::derive(query_of) /> })}
                {move || (mode.get() == Mode::Log).then(|| {
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
                                        <th scope="col" class="col-group">{t!(i18n, events.group)}{heads.0}</th>
                                        <th scope="col" class="col-seq">{t!(i18n, events.sequence)}</th>
                                        <th scope="col">{t!(i18n, events.kind)}</th>
                                        <th scope="col">{t!(i18n, events.actor)}{heads.1}</th>
                                        <th scope="col">{t!(i18n, events.cause)}{heads.2}</th>
                                        <th scope="col">{t!(i18n, events.occurred_at)}</th>
                                        <th scope="col">{t!(i18n, events.signing_hash)}</th>
                                        <th scope="col">{t!(i18n, events.actions)}</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|(r, a, c, at)| view! { <Row row=r actor=a cause=c position=Some(at) shown_json target elide=(groups, actors, causes) labels=labels(i18n) /> }).collect_view()}
                                </tbody>
                            </table>
                            </div>
                        }.into_any()
                    }
                })}
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
    /// The Event named by `?event=` (its row is marked).
    target: Memo<Option<String>>,
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
            let said = reason.clone();
            view! {
                <td class="mark rejected" data-label=labels[6] title=move || format!("{} {said}", t_string!(i18n, events.rejected_hint))>
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
    let targeted = {
        let id = row.event_id.clone();
        move || target.with(|t| t.as_deref() == Some(id.as_str()))
    };
    let targeted2 = targeted.clone();
    let group = row.group_id.clone().unwrap_or_default();
    let (group_title, actor_title, cause_title) = (group.clone(), actor.clone(), cause.clone());
    view! {
        <tr data-event-id=row.event_id.clone() class:pinned=pinned class:target=targeted
            aria-current=move || targeted2().then_some("location")>
            <td data-label=labels[0] title=group_title><Id id=group elide=elide.0 /></td>
            <td data-label=labels[1] class="seq">{row.sequence.map(|s| s.to_string()).unwrap_or_default()}</td>
            <td data-label=labels[2] class="kind" title=row.kind.clone()><code class="kind">{row.kind.split_inclusive('.').map(|p| view! { {p.to_owned()}<wbr /> }).collect_view()}</code></td>
            <td data-label=labels[3] title=actor_title><Id id=actor elide=elide.1 /></td>
            <td data-label=labels[4] title=cause_title><Id id=cause elide=elide.2 /></td>
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

/// The compact timeline (issue 29): a row per WorkItem of the matching Events, ordered by its
/// first Event, its Events as marks on the time axis all rows share, its goal, and its Events
/// (each linked to its row in the log) when opened.
#[component]
fn Lanes(query: Signal<TimelineQuery>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let lanes = move || {
        let _ = console.progress.get();
        let q = query.get();
        console.log.with_value(|l| {
            let timeline = Timeline::build(l.folded_events());
            work_item_lanes(&timeline.filter(&q))
        })
    };
    let tag = move || tag_of(i18n.get_locale());
    view! {
        <section class="work-lanes" aria-labelledby="lanes-title">
            <h2 id="lanes-title">{t!(i18n, events.lanes_title)}</h2>
            <p class="hint">{t!(i18n, events.lanes_hint)}</p>
            {move || {
                let (mut lanes, span) = lanes();
                let Some(span) = span else {
                    return view! { <Empty>{t!(i18n, events.lanes_empty)}</Empty> }.into_any();
                };
                // The WorkItems whose Events came last, when there are more than [`LANES`].
                let total = lanes.len();
                if total > LANES {
                    lanes.sort_by_key(|l| l.last_at);
                    lanes.drain(..total - LANES);
                    lanes.sort_by_key(|l| l.first_at);
                }
                let shown = lanes.len();
                let elide = shared_prefix(lanes.iter().map(|l| l.work_item_id.as_str()));
                let goals: Vec<Option<String>> = console.snapshot.with(|s| {
                    lanes
                        .iter()
                        .map(|l| s.state.work_items.get(&l.work_item_id).map(|w| w.contract.goal.clone()))
                        .collect()
                });
                view! {
                    {(shown < total).then(|| view! {
                        <p class="page-info">{t!(i18n, events.lanes_more, shown = move || format::number(tag(), shown as f64), total = move || format::number(tag(), total as f64))}</p>
                    })}
                    <ol class="lanes" id="work-lanes">
                        {lanes.into_iter().zip(goals).map(|(lane, goal)| view! { <Lane lane goal span elide /> }).collect_view()}
                    </ol>
                }
                .into_any()
            }}
        </section>
    }
}

/// A per-mille as a CSS percentage with one decimal (`125` → `12.5%`), from integers: an `f64`
/// formatted here brought Rust's float formatting into the view's chunk (docs/console.md
/// "Sizes").
pub fn css_percent(permille: u32) -> String {
    format!("{}.{}%", permille / 10, permille % 10)
}

/// One WorkItem's row of the compact timeline.
#[component]
fn Lane(
    lane: wasm_core::views::timeline::WorkItemLane,
    goal: Option<String>,
    span: (wasm_core::authority::Micros, wasm_core::authority::Micros),
    elide: usize,
) -> impl IntoView {
    let i18n = use_i18n();
    let n = lane.marks.len();
    // One mark per hundredth of the axis: a WorkItem with thousands of Events draws 101 at most.
    let mut taken = [false; 101];
    let dots: Vec<(u32, String)> = lane
        .marks
        .iter()
        .filter_map(|m| {
            let at = permille(m.occurred_at, span) / 10;
            let slot = taken.get_mut(at as usize)?;
            (!std::mem::replace(slot, true)).then(|| (at, m.kind.clone()))
        })
        .collect();
    let from = permille(lane.first_at, span);
    let to = permille(lane.last_at, span);
    let earlier = n.saturating_sub(LANE_EVENTS);
    let id = lane.work_item_id.clone();
    let id_title = id.clone();
    let goal_title = goal.clone().unwrap_or_default();
    view! {
        <li class="lane" data-work-item-id=lane.work_item_id.clone()>
            <details>
                <summary>
                    <span class="lane-id" title=id_title><Id id=id elide /></span>
                    <span class="lane-goal" title=goal_title>
                        {match goal {
                            Some(g) => g.into_any(),
                            None => view! { <span class="muted">{t!(i18n, events.no_goal)}</span> }.into_any(),
                        }}
                    </span>
                    <span class="lane-track" aria-hidden="true">
                        <span class="lane-span"
                            style:left=css_percent(from)
                            style:width=css_percent(to.saturating_sub(from))></span>
                        {dots.into_iter().map(|(at, kind)| view! {
                            <span class="lane-mark" style:left=format!("{at}%") title=kind></span>
                        }).collect_view()}
                    </span>
                    <span class="lane-count">
                        {if crate::locale::singular(tag_of(i18n.get_locale()), n) {
                            t!(i18n, events.lane_events_single, n = move || n).into_any()
                        } else {
                            t!(i18n, events.lane_events, n = move || n).into_any()
                        }}
                    </span>
                </summary>
                {(earlier > 0).then(|| view! { <p class="hint">{t!(i18n, events.lane_earlier, n = move || earlier)}</p> })}
                <ol class="lane-events">
                    {lane.marks.into_iter().skip(earlier).map(|m| view! {
                        <li>
                            <a href=crate::alarms::event_link(&m.event_id) title=m.event_id.clone()>
                                <code class="kind">{m.kind}</code>
                            </a>
                            " #"{m.sequence.to_string()}" "
                            <Timestamp exact=m.occurred_at.format() />
                        </li>
                    }).collect_view()}
                </ol>
            </details>
        </li>
    }
}
