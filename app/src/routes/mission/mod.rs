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
//! and table markup and their patches; this module the data step ([`apply_dag`]) and the
//! components.

mod geometry;
mod markup;

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
use wasm_bindgen::JsCast;
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

/// Moves every lease countdown of the WorkItem table to `now` (their text only).
fn tick_countdowns(i18n: I18nContext<Locale>, now: Micros) {
    let Some(list) = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector_all("table.work-items time.countdown").ok())
    else {
        return;
    };
    for k in 0..list.length() {
        let Some(el) = list.item(k) else { continue };
        let at = el
            .dyn_ref::<web_sys::Element>()
            .and_then(|e| e.get_attribute("data-at"))
            .and_then(|a| a.parse::<i64>().ok());
        if let Some(at) = at {
            el.set_text_content(Some(&when(i18n, Micros(at), now)));
        }
    }
}

/// The DAG node id of the node element an event happened in, if it is a selectable one.
fn node_target(ev: &web_sys::Event) -> Option<String> {
    let el: web_sys::Element = ev.target()?.dyn_into().ok()?;
    el.closest("[data-node-id][role=button]")
        .ok()??
        .get_attribute("data-node-id")
}

/// The in-app path of the child-Mission link (`/mission/…`) an event happened in, if any.
fn link_target(ev: &web_sys::Event) -> Option<String> {
    let el: web_sys::Element = ev.target()?.dyn_into().ok()?;
    el.closest("a[href]")
        .ok()??
        .get_attribute("href")
        .filter(|h| h.starts_with("/mission/"))
}

/// Focuses the element `id` (an SVG element's `focus`, called by name: web-sys binds it on
/// `HTMLElement` only).
fn focus_element(id: &str) {
    let Some(el) = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
    else {
        return;
    };
    if let Ok(f) = js_sys::Reflect::get(&el, &"focus".into())
        && let Ok(f) = f.dyn_into::<js_sys::Function>()
    {
        let _ = f.call0(&el);
    }
}

/// Sets `aria-pressed` on the drawn node `id` (if drawn and selectable).
fn set_pressed(l: &LiveLayout<Sugiyama>, id: Option<&str>, pressed: bool) {
    let Some(vi) = id.and_then(|id| l.nodes.iter().position(|n| n.id == id)) else {
        return;
    };
    if let Some(el) = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(&node_dom_id(vi)))
        && el.has_attribute("aria-pressed")
    {
        let _ = el.set_attribute("aria-pressed", if pressed { "true" } else { "false" });
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

/// What the Mission view shows; it changes rarely (the nodes are patched under it).
#[derive(Clone, Debug, PartialEq)]
enum Shape {
    NotVisible,
    /// Past the size guard: listed (the reason).
    TooLarge(String),
    Drawn,
}

#[component]
fn Dag(group: String) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let live: StoredValue<Option<LiveLayout<Sugiyama>>> = StoredValue::new(None);
    // The DAG when it is listed instead of drawn (past the size guard).
    let listed: StoredValue<Option<DagView>> = StoredValue::new(None);
    let shape = RwSignal::new(Shape::NotVisible);
    // Bumped when everything is to be drawn anew (a new layout, another DAG).
    let version = RwSignal::new(0u64);
    // The WorkItem table's id prefixes, computed anew with each drawing; a live patch that
    // would change them draws the whole table anew instead (`version`).
    let prefixes = Memo::new(move |_| {
        version.get();
        live.with_value(|l| l.as_ref().map(|l| table_prefixes(l.dag())))
            .or_else(|| listed.with_value(|d| d.as_ref().map(table_prefixes)))
            .unwrap_or_default()
    });
    let layouts = RwSignal::new(0usize);
    let crit_n = RwSignal::new(0usize);
    // `?work_item=<id>` (the Approvals view's "in the graph" link) opens with that node selected.
    let selected = RwSignal::new(
        leptos_router::hooks::use_query_map()
            .with_untracked(|q| q.get("work_item"))
            .map(|w| {
                console.snapshot.with_untracked(|s| {
                    crate::format::named_id(w, s.state.work_items.keys().map(String::as_str))
                })
            }),
    );
    let zoom = RwSignal::new(1.0f64);
    let pan = RwSignal::new((0.0f64, 0.0f64));
    // The level of detail follows the on-screen scale: the `<svg>`'s size (measured when it is
    // mounted and when the window is resized), the layout's, and the zoom.
    let svg_ref = NodeRef::<leptos::svg::Svg>::new();
    let frame = RwSignal::new(guess_frame());
    let measure = move || {
        if let Some(f) = svg_ref.get_untracked().and_then(|el| frame_of(&el))
            && frame.get_untracked() != f
        {
            frame.set(f);
        }
    };
    // Measured again after each new drawing: the `<svg>`'s height follows the layout's shape
    // (`svg.dag`, `height: auto` from the viewBox), so a new layout can change it.
    Effect::new(move |_| {
        version.get();
        if svg_ref.get().is_some() {
            measure();
        }
    });
    // The boxes follow the frame's width (a small Mission's, [`refit`]): laid out again when
    // it asks for other boxes.
    Effect::new(move |_| {
        let width = frame.get().0;
        let mut again = None;
        live.update_value(|l| {
            if let Some(l) = l
                && refit(l, width)
            {
                again = Some(l.layouts);
            }
        });
        if let Some(n) = again {
            layouts.set(n);
            version.update(|v| *v += 1);
        }
    });
    let resized = window_event_listener(leptos::ev::resize, move |_| measure());
    on_cleanup(move || resized.remove());
    let fitted = Memo::new(move |_| {
        version.get();
        let dims = live.with_value(|l| l.as_ref().map_or((0, 0), |l| (l.width, l.height)));
        screen_scale(frame.get(), dims, 1.0)
    });
    // A small graph whose fitted text is too small to read (a phone) starts zoomed in; `zoom`
    // is relative to that start.
    let base = Memo::new(move |_| start_zoom(fitted.get()));
    let detail = Memo::new(move |_| detail_at(fitted.get() * base.get() * zoom.get()));
    // A node focused when the zoom crosses the threshold is focused again in the new drawing
    // (its element was replaced).
    let refocus = StoredValue::new(None::<String>);
    Effect::new(move |prev: Option<Detail>| {
        let now = detail.get();
        if prev.is_some_and(|p| p != now)
            && let Some(id) = refocus.get_value()
        {
            request_animation_frame(move || {
                live.with_value(|l| {
                    if let Some(vi) = l
                        .as_ref()
                        .and_then(|l| l.nodes.iter().position(|n| n.id == id))
                    {
                        focus_element(&node_dom_id(vi));
                    }
                });
            });
        }
        now
    });
    let zoom_in = move || {
        let most = max_zoom(fitted.get_untracked()) / base.get_untracked();
        zoom.update(|z| *z = (*z * 1.25).min(most));
    };
    let zoom_out = move || zoom.update(|z| *z = (*z / 1.25).max(0.2));
    // The DagView as of the snapshot; the layout follows it (patched or laid out again), and
    // the document follows the layout (the changed nodes rewritten, or all drawn anew).
    // The state the drawn DAG was built from (a new DAG is rebuilt from it).
    let built_from: StoredValue<Option<Arc<State>>> = StoredValue::new(None);
    Effect::new(move |_| {
        let now = console.view_now();
        let next = console.snapshot.with(|s| {
            let mission = s.state.mission_of_group(&group)?.id.clone();
            let dag = built_from.with_value(|old| {
                live.with_value(|l| {
                    listed.with_value(|d| {
                        let prev = l.as_ref().map(LiveLayout::dag).or(d.as_ref());
                        next_dag(prev.zip(old.as_deref()), &s.state, &mission, now)
                    })
                })
            })?;
            Some((dag, s.state.clone()))
        });
        let (dag, from) = next.unzip();
        built_from.set_value(from);
        untrack(|| {
            let set_shape = |s: Shape| {
                if shape.get_untracked() != s {
                    shape.set(s);
                }
            };
            let Some(dag) = dag else {
                live.set_value(None);
                listed.set_value(None);
                set_shape(Shape::NotVisible);
                return;
            };
            let n = dag.critical_path.work_item_ids.len();
            if crit_n.get_untracked() != n {
                crit_n.set(n);
            }
            let mut outcome: Result<DagUpdate, String> = Ok(DagUpdate::default());
            live.update_value(|l| match l {
                Some(drawn) => {
                    outcome = apply_dag(drawn, dag);
                    // A new layout may be of another size class (boxes fitted or not).
                    if let Ok(u) = &mut outcome
                        && u.redraw
                        && refit(drawn, frame.get_untracked().0)
                    {
                        u.layouts = drawn.layouts;
                    }
                    if outcome.is_err() {
                        // Past the size guard now: list what the layout was given.
                        listed.set_value(l.take().map(|d| d.dag().clone()));
                    }
                }
                None => {
                    let options = CollapseOptions {
                        max_nodes: MAX_NODES,
                        ..CollapseOptions::default()
                    };
                    let before = listed.with_value(|d| d.as_ref().map(|d| d.nodes.clone()));
                    let engine = engine_for(dag.nodes.len(), frame.get_untracked().0);
                    match LiveLayout::new(engine, options, dag.clone()) {
                        Ok(new) => {
                            outcome = Ok(DagUpdate {
                                layouts: new.layouts,
                                redraw: true,
                                changed: Vec::new(),
                            });
                            listed.set_value(None);
                            *l = Some(new);
                        }
                        Err(e) => {
                            // Still listed: rewrite only the changed rows when the nodes are
                            // the same ones.
                            let changed = before.as_ref().filter(|b| {
                                b.len() == dag.nodes.len()
                                    && b.iter().zip(&dag.nodes).all(|(x, y)| x.id == y.id)
                            });
                            let rows = changed.map(|b| {
                                b.iter()
                                    .zip(&dag.nodes)
                                    .enumerate()
                                    .filter(|(_, (x, y))| x != y)
                                    .map(|(i, _)| i)
                                    .collect::<Vec<_>>()
                            });
                            listed.set_value(Some(dag));
                            let was_listed = matches!(shape.get_untracked(), Shape::TooLarge(_));
                            let same_prefixes = listed
                                .with_value(|d| d.as_ref().map(table_prefixes))
                                == Some(prefixes.get_untracked());
                            match rows {
                                Some(rows) if was_listed && same_prefixes => {
                                    listed.with_value(|d| {
                                        if let Some(d) = d {
                                            let p = prefixes.get_untracked();
                                            with_words(i18n, now, |w| patch_rows(d, &rows, w, &p));
                                        }
                                    })
                                }
                                _ => version.update(|v| *v += 1),
                            }
                            outcome = Err(e.to_string());
                        }
                    }
                }
            });
            match outcome {
                Err(e) => set_shape(Shape::TooLarge(e)),
                Ok(u) => {
                    if layouts.get_untracked() != u.layouts {
                        layouts.set(u.layouts);
                    }
                    let same = live.with_value(|l| {
                        l.as_ref().map(|l| table_prefixes(l.dag()))
                            == Some(prefixes.get_untracked())
                    });
                    if u.redraw || (!u.changed.is_empty() && !same) {
                        version.update(|v| *v += 1);
                    } else if !u.changed.is_empty() {
                        let p = prefixes.get_untracked();
                        live.with_value(|l| {
                            if let Some(l) = l {
                                with_words(i18n, now, |w| {
                                    patch_graph(l, &u.changed, w, detail.get_untracked());
                                    patch_rows(l.dag(), &u.changed, w, &p);
                                });
                            }
                        });
                    }
                    set_shape(Shape::Drawn);
                }
            }
        });
    });
    // The lease countdowns follow the clock.
    Effect::new(move |_| {
        let now = console.view_now();
        untrack(|| tick_countdowns(i18n, now));
    });
    // The selected node is `aria-pressed`, the one before no longer.
    Effect::new(move |prev: Option<Option<String>>| {
        let sel = selected.get();
        live.with_value(|l| {
            if let Some(l) = l {
                set_pressed(l, prev.flatten().as_deref(), false);
                set_pressed(l, sel.as_deref(), true);
            }
        });
        sel
    });
    let key = move |ev: leptos::ev::KeyboardEvent| {
        let step = 40.0 / (base.get_untracked() * zoom.get_untracked());
        refocus.set_value(node_target(&ev));
        match ev.key().as_str() {
            "+" | "=" => zoom_in(),
            "-" => zoom_out(),
            "0" => {
                zoom.set(1.0);
                pan.set((0.0, 0.0));
            }
            "ArrowLeft" => pan.update(|p| p.0 += step),
            "ArrowRight" => pan.update(|p| p.0 -= step),
            "ArrowUp" => pan.update(|p| p.1 += step),
            "ArrowDown" => pan.update(|p| p.1 -= step),
            // Escape lets go of the selected node (the table lists every WorkItem again).
            "Escape" if selected.with_untracked(Option::is_some) => selected.set(None),
            // Enter or Space on a node selects it (delegated from the node).
            "Enter" | " " => match node_target(&ev) {
                Some(id) => selected.set(Some(id)),
                None => return,
            },
            _ => return,
        }
        ev.prevent_default();
    };
    let navigate = StoredValue::new_local(use_navigate());
    let click = move |ev: leptos::ev::MouseEvent| {
        // A child Mission's node is an SVG `<a>` in markup the router never sees: left alone,
        // the browser would load the page anew and the unlocked key would be locked again.
        // A plain click follows it in the app; a modified one (new tab) is the browser's.
        if !(ev.ctrl_key() || ev.meta_key() || ev.shift_key() || ev.alt_key() || ev.button() != 0)
            && let Some(href) = link_target(&ev)
        {
            ev.prevent_default();
            navigate.with_value(|go| go(&href, Default::default()));
            return;
        }
        if let Some(id) = node_target(&ev) {
            selected.set(Some(id));
        }
    };
    let wheel = move |ev: leptos::ev::WheelEvent| {
        ev.prevent_default();
        let f = if ev.delta_y() < 0.0 { 1.1 } else { 1.0 / 1.1 };
        let max = max_zoom(fitted.get_untracked()) / base.get_untracked();
        // Not `f64::clamp`: it panics when `max` < 0.2, and its panic message alone brings
        // `<f64 as Debug>` (Grisu and Dragon, about 9 KB gzip) into the module.
        zoom.update(|z| *z = (*z * f).min(max).max(0.2));
    };
    let dragging = StoredValue::new(None::<(i32, i32)>);
    let all_rows = Signal::derive(move || {
        version.get();
        let now = untrack(|| console.view_now());
        let p = prefixes.get();
        listed.with_value(|d| {
            d.as_ref()
                .map(|d| with_words(i18n, now, |w| rows_markup(d, None, w, &p)))
                .unwrap_or_default()
        })
    });
    view! {
        {move || match shape.get() {
            Shape::NotVisible => view! { <Empty>{t!(i18n, mission.not_visible)}</Empty> }.into_any(),
            Shape::TooLarge(err) => view! {
                <p class="note" role="status"><span class="icon" aria-hidden="true">"⚠"</span>" "{t!(i18n, mission.too_large, detail = move || err.clone())}</p>
                <WorkItemTable rows=all_rows prefixes=prefixes.into() />
            }.into_any(),
            Shape::Drawn => {
                let view_box = move || {
                    version.get();
                    let dims = live.with_value(|l| l.as_ref().map_or((0, 0), |l| (l.width, l.height)));
                    view_box(dims, frame.get().0)
                };
                view! {
                    <div class="dag-tools toolbar">
                        <button type="button" id="zoom-in" on:click=move |_| zoom_in()>{t!(i18n, mission.zoom_in)}</button>
                        <button type="button" id="zoom-out" on:click=move |_| zoom_out()>{t!(i18n, mission.zoom_out)}</button>
                        <button type="button" id="zoom-reset" on:click=move |_| { zoom.set(1.0); pan.set((0.0, 0.0)); }>{t!(i18n, mission.zoom_reset)}</button>
                        <span class="hint">{t!(i18n, mission.keys_hint)}</span>
                    </div>
                    // How many layouts this view computed (a live update patches nodes without
                    // one): for whoever diagnoses the view, not a figure for the reader.
                    <p class="legend" data-layouts=move || layouts.get().to_string()>
                        <span class="critical-mark">"◆ "</span>{move || {
                            let n = crit_n.get();
                            // Every WorkItem verified, failed or cancelled: no path, not "0 WorkItems".
                            if n == 0 {
                                t!(i18n, mission.critical_path_none).into_any()
                            } else if crate::locale::singular(crate::locale::tag_of(i18n.get_locale()), n) {
                                t!(i18n, mission.critical_path_single, n = move || n).into_any()
                            } else {
                                t!(i18n, mission.critical_path, n = move || n).into_any()
                            }
                        }}
                    </p>
                    {move || (detail.get() == Detail::Far).then(|| view! {
                        <p class="legend far-legend" id="far-legend">{t!(i18n, mission.far_legend)}</p>
                    })}
                    <div class="dag-frame">
                        <svg id="dag" class="dag" role="group" tabindex="0" node_ref=svg_ref
                            data-detail=move || if detail.get() == Detail::Far { "far" } else { "full" }
                            aria-label=move || t_string!(i18n, mission.dag_label)
                            viewBox=view_box
                            on:keydown=key on:wheel=wheel on:click=click
                            on:pointerdown=move |ev| dragging.set_value(Some((ev.client_x(), ev.client_y())))
                            on:pointerup=move |_| dragging.set_value(None)
                            on:pointerleave=move |_| dragging.set_value(None)
                            on:pointermove=move |ev| {
                                if let Some((x, y)) = dragging.get_value() {
                                    let z = base.get_untracked() * zoom.get_untracked();
                                    pan.update(|p| { p.0 += f64::from(ev.client_x() - x) / z; p.1 += f64::from(ev.client_y() - y) / z; });
                                    dragging.set_value(Some((ev.client_x(), ev.client_y())));
                                }
                            }>
                            <g transform=move || { let (x, y) = pan.get(); format!("scale({}) translate({} {})", svg::num(base.get() * zoom.get()), svg::num(x), svg::num(y)) }>
                                <DagGraph live version selected detail=detail.into() />
                            </g>
                        </svg>
                    </div>
                    <Details live version selected prefixes />
                }.into_any()
            }
        }}
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
