//! A Mission (`/mission`, `/mission/:group`): its WorkItem DAG drawn as SVG from the core's own
//! layout (`views::layout::LiveLayout` over `views::dag::DagView`): each node with its state
//! (text and symbol), owner Agent, Ownership Epoch, lease countdown and "why not running"; the
//! critical path outlined; child-Mission nodes link into the child. Zoom and pan by buttons,
//! wheel and keys (`+` `-` `0`, arrows). More than [`MAX_NODES`] nodes after collapsing
//! fan-outs: a list.
//!
//! **Rendering** (issue 13: first paint of 2,000 WorkItems under 500 ms, one live node update
//! under 16 ms). The graph and the WorkItem table are each written as one markup string
//! ([`graph_markup`], [`rows_markup`]) and handed to the browser's parser in one `innerHTML`,
//! instead of a reactive `view!` per node: every piece of protocol text in them (WorkItem titles,
//! Agent and WorkItem ids, blockers) is escaped ([`crate::format::markup`]). A live Event that
//! changes only attributes is patched (`LiveLayout::update_node`, no new layout) and then only
//! the changed nodes' elements are rewritten ([`patch_graph`], [`patch_rows`]); a new WorkItem
//! or dependency lays the graph out again and draws it anew. Elements carry index-based DOM ids
//! (`dag-v{i}`, `dag-row-{i}`), never protocol ids, so no untrusted text is ever put into a
//! selector. Clicks and keys on nodes are delegated to the `<svg>` (one listener, not 2,000).
//! Zoomed out so far that node text would be unreadable ([`detail_at`]), each node is drawn as
//! one element without text ([`Detail::Far`]): the browser repaints the whole `<svg>` for one
//! changed node, and 2,000 nodes of text made that frame 15–55 ms.
//!
//! `geometry` holds the sizes, the layout engine, the `viewBox` and the zoom; `markup` the graph
//! and table markup and their patches; `dag` the drawing that follows the snapshot and the DAG
//! view; `viewport` zoom, pan, keys and the DOM touches between drawings; this module the data
//! step ([`apply_dag`]) and the other components.

mod dag;
mod geometry;
mod markup;
mod viewport;

use dag::Dag;

pub use geometry::*;
pub use markup::*;

use crate::components::ident::Id;
use crate::components::live::{ChildOf, Countdown, state_label, when};
use crate::components::session;
use crate::components::states::{Empty, NarrowedNote, StreamStates};
use crate::format::svg;
use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use leptos_router::hooks::{use_navigate, use_params_map};
use std::sync::Arc;
use wasm_core::authority::Micros;
use wasm_core::authority::state::State;
use wasm_core::views::dag::{DagNode, DagView};
use wasm_core::views::layout::{CollapseOptions, LiveLayout, Sugiyama};

/// The size guard: a collapsed graph larger than this is listed, not drawn.
pub const MAX_NODES: usize = 2_000;

/// What [`apply_dag`] did to the drawing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DagUpdate {
    /// Layouts made so far, in total.
    pub layouts: usize,
    /// Everything is to be drawn anew: the graph was laid out again, or its DAG nodes changed.
    pub redraw: bool,
    /// Otherwise: the DAG nodes (indices into `LiveLayout::dag().nodes`) whose attributes
    /// changed, in order; only their elements are rewritten.
    pub changed: Vec<usize>,
}

/// Updates `live` with `dag`: node by node (`update_node`, no new layout) when the DAG's nodes
/// and edges are the same, a new layout otherwise; says what to draw again.
pub fn apply_dag(live: &mut LiveLayout<Sugiyama>, dag: DagView) -> Result<DagUpdate, String> {
    let before = live.layouts;
    let same = live.dag().nodes.len() == dag.nodes.len()
        && live.dag().edges == dag.edges
        && live
            .dag()
            .nodes
            .iter()
            .zip(&dag.nodes)
            .all(|(a, b)| a.id == b.id);
    if !same {
        live.refresh(dag).map_err(|e| e.to_string())?;
        return Ok(DagUpdate {
            layouts: live.layouts,
            redraw: true,
            changed: Vec::new(),
        });
    }
    let DagView {
        nodes,
        now,
        critical_path,
        ..
    } = dag;
    let changed: Vec<(usize, DagNode)> = nodes
        .into_iter()
        .enumerate()
        .filter(|(i, n)| live.dag().nodes.get(*i) != Some(n))
        .collect();
    let indices = changed.iter().map(|(i, _)| *i).collect();
    for (_, n) in changed {
        live.update_node(n).map_err(|e| e.to_string())?;
    }
    live.set_dag_facts(now, critical_path);
    let redraw = live.layouts != before;
    Ok(DagUpdate {
        layouts: live.layouts,
        redraw,
        changed: if redraw { Vec::new() } else { indices },
    })
}

/// The DAG of `mission` in `state` at `now`: rebuilt from `prev` — the DAG drawn, built from
/// the state `old` — when there is one (only the nodes whose inputs changed are recomputed,
/// `DagView::rebuild`), built in full otherwise.
pub fn next_dag(
    prev: Option<(&DagView, &State)>,
    state: &State,
    mission: &str,
    now: Micros,
) -> Option<DagView> {
    match prev {
        Some((d, old)) if d.mission_id == mission => DagView::rebuild(d, old, state, now),
        _ => DagView::build(state, mission, now),
    }
}

#[component]
pub fn Mission() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let params = use_params_map();
    // The Group the path names (`format::named_id`: the router may have decoded it twice).
    let group = Memo::new(move |_| {
        let g = params.with(|p| p.get("group"))?;
        Some(
            console
                .snapshot
                .with(|s| crate::format::named_id(g, s.state.groups.keys().map(String::as_str))),
        )
    });
    Effect::new(move |_| {
        if let Some(g) = group.get() {
            session::watch(g);
        }
    });
    let missions = move || {
        let viewer = console.viewer.get()?;
        Some(console.snapshot.with(|s| {
            s.state
                .missions
                .values()
                .filter(|m| viewer.sees(&s.state, m))
                .map(|m| (m.group_id.clone(), m.title.clone(), m.status))
                .collect::<Vec<_>>()
        }))
    };
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, mission.title)}</h1>
            <p class="intro">{t!(i18n, mission.intro)}</p>
            {move || group.get().map(|g| view! { <MissionHeader group=g.clone() /><p class="group-id">"Group "<Id id=g.clone() /></p> })}
            <StreamStates>
                {move || match group.get() {
                    Some(g) => view! { <Dag group=g /> }.into_any(),
                    None => {
                        let list = missions().unwrap_or_default();
                        if list.is_empty() {
                            view! { <Empty>{t!(i18n, mission.empty)}</Empty> }.into_any()
                        } else {
                            view! {
                                <ul class="mission-list">
                                    {list.into_iter().map(|(g, title, st)| view! {
                                        <li><a href=crate::format::mission_href(&g) translate="no">{title}</a>" "<span class="state">{move || state_label(i18n, st.as_str())}</span></li>
                                    }).collect_view()}
                                </ul>
                            }.into_any()
                        }
                    }
                }}
            </StreamStates>
        </section>
    }
}

/// What a person needs to know which Mission the graph is: its title, state, Coordinator,
/// deadline and ledger, and for a child Mission the parent it serves (a link back up).
#[derive(Clone, Debug, PartialEq)]
struct Heading {
    mission_id: String,
    title: String,
    status: wasm_core::views::MissionState,
    coordinator_id: String,
    deadline: Micros,
    /// The parent Mission's Group and title (§14: a child Mission serves a parent WorkItem).
    parent: Option<(String, String)>,
}

#[component]
fn MissionHeader(group: String) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let heading = Memo::new(move |_| {
        console.snapshot.with(|s| {
            let m = s.state.mission_of_group(&group)?;
            let parent = m
                .parent_mission_id
                .as_deref()
                .and_then(|p| s.state.missions.get(p))
                .map(|p| (p.group_id.clone(), p.title.clone()));
            Some(Heading {
                mission_id: m.id.clone(),
                title: m.title.clone(),
                status: m.status,
                coordinator_id: m.coordinator_id.clone(),
                deadline: m.deadline,
                parent,
            })
        })
    });
    move || {
        heading.get().map(|h| {
            let ledger = format!(
                "/ledger?mission={}",
                crate::format::query_value(&h.mission_id)
            );
            let st = h.status;
            view! {
                <div class="mission-heading">
                    <h2 translate="no">{h.title.clone()}</h2>
                    {h.parent.clone().map(|(g, title)| view! {
                        <ChildOf group=g title />
                    })}
                    <p class="mission-state">
                        <strong>{move || state_label(i18n, st.as_str())}</strong>
                        " · Coordinator "<Id id=h.coordinator_id.clone() />
                        " · "{t!(i18n, board.deadline)}" "<Countdown at=h.deadline />
                        " · "<a href=ledger>{t!(i18n, nav.ledger)}</a>
                    </p>
                </div>
            }
        })
    }
}

/// The drawn graph (edges and nodes) of `live` at `detail`, written as one markup string
/// ([`graph_markup`]) whenever `version` moves, the level of detail or the language changes;
/// between those, [`patch_graph`] rewrites single nodes. The Mission view and the benchmark
/// page both draw with it.
#[component]
pub fn DagGraph(
    live: StoredValue<Option<LiveLayout<Sugiyama>>>,
    version: RwSignal<u64>,
    selected: RwSignal<Option<String>>,
    detail: Signal<Detail>,
) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console_now();
    let markup = move || {
        version.get();
        let detail = detail.get();
        let now = untrack(console);
        let sel = selected.get_untracked();
        live.with_value(|l| {
            l.as_ref()
                .map(|l| with_words(i18n, now, |w| graph_markup(l, w, sel.as_deref(), detail)))
                .unwrap_or_default()
        })
    };
    view! { <g class="dag-graph" inner_html=markup></g> }
}

/// The instant the markup measures leases against: the console's, or the clock when there is
/// no console (the benchmark page).
fn use_console_now() -> impl Fn() -> Micros + Copy {
    let console = use_context::<crate::state::Console>();
    move || console.map_or_else(crate::web::now, |c| c.view_now())
}

/// The WorkItem table: a header, and rows written as one markup string. Its wrapper scrolls
/// sideways when the table is wider than the screen (its headers break only between words, so
/// it has a minimum width); as a scrolling region it is focusable and named, for the keyboard.
#[component]
pub fn WorkItemTable(rows: Signal<String>, prefixes: Signal<Prefixes>) -> impl IntoView {
    let i18n = use_i18n();
    // Each id column's shared prefix, once under its header (the rows draw "…" in its place).
    let head = move |p: String| (!p.is_empty()).then(|| view! { <br /><Id id=format!("{p}…") /> });
    view! {
        <div class="table-scroll work-items-scroll" role="region" tabindex="0"
            aria-label=move || t_string!(i18n, mission.details)>
        <table class="work-items">
            <thead><tr>
                <th scope="col">"WorkItem"{move || head(prefixes.with(|p| p.work_item.clone()))}</th>
                <th scope="col">{t!(i18n, mission.state)}</th>
                <th scope="col">{t!(i18n, mission.owner)}{move || head(prefixes.with(|p| p.owner.clone()))}</th>
                <th scope="col">"Ownership Epoch"</th>
                <th scope="col">"Execution Lease"</th>
                <th scope="col">{t!(i18n, mission.why_not_running)}</th>
            </tr></thead>
            <tbody inner_html=move || rows.get()></tbody>
        </table>
        </div>
    }
}

/// The selected node's facts (or, when none is selected, the first [`TABLE_PAGE`] nodes' with
/// a "list all" button), as a table whose rows [`patch_rows`] rewrites one by one on live
/// updates.
#[component]
pub fn Details(
    live: StoredValue<Option<LiveLayout<Sugiyama>>>,
    version: RwSignal<u64>,
    selected: RwSignal<Option<String>>,
    prefixes: Memo<Prefixes>,
) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console_now();
    let show_all = RwSignal::new(false);
    let limit = move || {
        if show_all.get() {
            usize::MAX
        } else {
            TABLE_PAGE
        }
    };
    let rows = Signal::derive(move || {
        version.get();
        let sel = selected.get();
        let limit = limit();
        let now = untrack(console);
        let p = prefixes.get();
        live.with_value(|l| {
            l.as_ref()
                .map(|l| {
                    with_words(i18n, now, |w| {
                        rows_markup_first(l.dag(), sel.as_deref(), limit, w, &p)
                    })
                })
                .unwrap_or_default()
        })
    });
    // Set when the table lists only the first page: (shown, total) for the note.
    let cut = Signal::derive(move || {
        version.get();
        let total = live.with_value(|l| l.as_ref().map_or(0, |l| l.dag().nodes.len()));
        (selected.with(Option::is_none) && total > limit()).then_some((TABLE_PAGE, total))
    });
    let tag = move || crate::locale::tag_of(i18n.get_locale());
    view! {
        <section class="dag-details" aria-live="polite" aria-labelledby="details-title">
            <h2 id="details-title">{t!(i18n, mission.details)}</h2>
            {move || cut.get().map(|(shown, total)| {
                let (shown, total) = (
                    crate::format::number(tag(), shown as f64),
                    crate::format::number(tag(), total as f64),
                );
                let t2 = total.clone();
                view! {
                    <p class="note table-cut" role="status">
                        {t!(i18n, mission.rows_shown, shown = move || shown.clone(), total = move || total.clone())}
                        " "
                        <button type="button" class="show-all-rows" on:click=move |_| show_all.set(true)>
                            {t!(i18n, mission.show_all_rows, total = move || t2.clone())}
                        </button>
                    </p>
                }
            })}
            // A selected node narrows the table to its row: say so, with the way back.
            <NarrowedNote
                narrowed=selected
                class="selected-only"
                button_class="clear-selection"
                back=move || t!(i18n, mission.list_every)
            >
                {t!(i18n, mission.selected_only)}
            </NarrowedNote>
            <WorkItemTable rows prefixes=prefixes.into() />
        </section>
    }
}
