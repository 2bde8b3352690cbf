//! A Mission (`/mission`, `/mission/:group`): its WorkItem DAG drawn as SVG from the core's own
//! layout (`views::layout::LiveLayout` over `views::dag::DagView`): each node with its state
//! (text and symbol), owner Agent, Ownership Epoch, lease countdown and "why not running"; the
//! critical path outlined; child-Mission nodes link into the child. A live Event that changes
//! only attributes patches the node in place (`LiveLayout::update_node`, no new layout); a new
//! WorkItem or dependency lays the graph out again. Zoom and pan by buttons, wheel and keys
//! (`+` `-` `0`, arrows). More than [`MAX_NODES`] nodes after collapsing fan-outs: a list.

use crate::components::live::{Countdown, state_label, why_view};
use crate::components::session;
use crate::components::states::{Empty, StreamStates};
use crate::format::svg;
use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;
use wasm_core::views::dag::{DagNode, DagView, NodeKind};
use wasm_core::views::layout::{CollapseOptions, LiveLayout, Sugiyama};

/// The size guard: a collapsed graph larger than this is listed, not drawn.
pub const MAX_NODES: usize = 2_000;

/// Updates `live` with `dag`: node by node (`update_node`) when the structure (nodes, edges)
/// is unchanged, a new layout otherwise. Returns how many layouts were made in total.
pub fn apply_dag(live: &mut LiveLayout<Sugiyama>, dag: DagView) -> Result<usize, String> {
    let same = live.dag().nodes.len() == dag.nodes.len()
        && live.dag().edges == dag.edges
        && live
            .dag()
            .nodes
            .iter()
            .zip(&dag.nodes)
            .all(|(a, b)| a.id == b.id);
    if same {
        let changed: Vec<DagNode> = dag
            .nodes
            .iter()
            .filter(|n| live.attrs(&n.id) != Some(n))
            .cloned()
            .collect();
        for n in changed {
            live.update_node(n).map_err(|e| e.to_string())?;
        }
    } else {
        live.refresh(dag).map_err(|e| e.to_string())?;
    }
    Ok(live.layouts)
}

#[component]
pub fn Mission() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let params = use_params_map();
    let group = move || params.with(|p| p.get("group"));
    Effect::new(move |_| {
        if let Some(g) = group() {
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
                .map(|m| (m.group_id.clone(), m.title.clone(), m.status.clone()))
                .collect::<Vec<_>>()
        }))
    };
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, mission.title)}</h1>
            <p class="intro">{t!(i18n, mission.intro)}</p>
            {move || group().map(|g| view! { <p class="group-id">{t!(i18n, mission.group, id = move || g.clone())}</p> })}
            <StreamStates>
                {move || match group() {
                    Some(g) => view! { <Dag group=g /> }.into_any(),
                    None => {
                        let list = missions().unwrap_or_default();
                        if list.is_empty() {
                            view! { <Empty>{t!(i18n, mission.empty)}</Empty> }.into_any()
                        } else {
                            view! {
                                <ul class="mission-list">
                                    {list.into_iter().map(|(g, title, st)| view! {
                                        <li><a href=format!("/mission/{g}") translate="no">{title}</a>" "<span class="state">{move || state_label(i18n, &st)}</span></li>
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

#[component]
fn Dag(group: String) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let live: StoredValue<Option<LiveLayout<Sugiyama>>> = StoredValue::new(None);
    let layouts = RwSignal::new(0usize);
    let selected = RwSignal::new(None::<String>);
    let zoom = RwSignal::new(1.0f64);
    let pan = RwSignal::new((0.0f64, 0.0f64));
    let g2 = group.clone();
    // The DagView as of the snapshot; the layout follows it (patched or relaid).
    let drawn = Memo::new(move |_| {
        let now = console.view_now();
        let dag = console.snapshot.with(|s| {
            let m = s.state.mission_of_group(&g2)?;
            DagView::build(&s.state, &m.id.clone(), now)
        })?;
        let mut err = None;
        live.update_value(|l| match l {
            Some(l) => {
                if let Err(e) = apply_dag(l, dag.clone()) {
                    err = Some(e);
                }
            }
            None => {
                match LiveLayout::new(
                    Sugiyama::default(),
                    CollapseOptions {
                        max_nodes: MAX_NODES,
                        ..CollapseOptions::default()
                    },
                    dag.clone(),
                ) {
                    Ok(n) => *l = Some(n),
                    Err(e) => err = Some(e.to_string()),
                }
            }
        });
        layouts.set(live.with_value(|l| l.as_ref().map_or(0, |l| l.layouts)));
        Some((dag, err))
    });
    let key = move |ev: leptos::ev::KeyboardEvent| {
        let step = 40.0 / zoom.get_untracked();
        match ev.key().as_str() {
            "+" | "=" => zoom.update(|z| *z = (*z * 1.25).min(4.0)),
            "-" => zoom.update(|z| *z = (*z / 1.25).max(0.2)),
            "0" => {
                zoom.set(1.0);
                pan.set((0.0, 0.0));
            }
            "ArrowLeft" => pan.update(|p| p.0 += step),
            "ArrowRight" => pan.update(|p| p.0 -= step),
            "ArrowUp" => pan.update(|p| p.1 += step),
            "ArrowDown" => pan.update(|p| p.1 -= step),
            _ => return,
        }
        ev.prevent_default();
    };
    let wheel = move |ev: leptos::ev::WheelEvent| {
        ev.prevent_default();
        let f = if ev.delta_y() < 0.0 { 1.1 } else { 1.0 / 1.1 };
        zoom.update(|z| *z = (*z * f).clamp(0.2, 4.0));
    };
    let dragging = StoredValue::new(None::<(i32, i32)>);
    view! {
        {move || match drawn.get() {
            None => view! { <Empty>{t!(i18n, mission.not_visible)}</Empty> }.into_any(),
            Some((dag, Some(err))) => view! {
                <p class="note" role="status"><span class="icon" aria-hidden="true">"⚠"</span>" "{t!(i18n, mission.too_large, detail = move || err.clone())}</p>
                <NodeList dag=dag />
            }.into_any(),
            Some((dag, None)) => {
                let critical = dag.critical_path.work_item_ids.clone();
                let crit_n = critical.len();
                let (w, h) = live.with_value(|l| l.as_ref().map_or((0, 0), |l| (l.width, l.height)));
                view! {
                    <div class="dag-tools toolbar">
                        <button type="button" id="zoom-in" on:click=move |_| zoom.update(|z| *z = (*z * 1.25).min(4.0))>{t!(i18n, mission.zoom_in)}</button>
                        <button type="button" id="zoom-out" on:click=move |_| zoom.update(|z| *z = (*z / 1.25).max(0.2))>{t!(i18n, mission.zoom_out)}</button>
                        <button type="button" id="zoom-reset" on:click=move |_| { zoom.set(1.0); pan.set((0.0, 0.0)); }>{t!(i18n, mission.zoom_reset)}</button>
                        <span class="hint">{t!(i18n, mission.keys_hint)}</span>
                    </div>
                    <p class="legend">
                        <span class="critical-mark">"◆ "</span>{t!(i18n, mission.critical_path, n = move || crit_n)}
                        " · "{t!(i18n, mission.layouts, n = move || layouts.get())}
                    </p>
                    <div class="dag-frame">
                        <svg id="dag" class="dag" role="group" tabindex="0"
                            aria-label=move || t_string!(i18n, mission.dag_label)
                            viewBox=format!("-20 -20 {} {}", w + 40, h + 40)
                            on:keydown=key on:wheel=wheel
                            on:pointerdown=move |ev| dragging.set_value(Some((ev.client_x(), ev.client_y())))
                            on:pointerup=move |_| dragging.set_value(None)
                            on:pointerleave=move |_| dragging.set_value(None)
                            on:pointermove=move |ev| {
                                if let Some((x, y)) = dragging.get_value() {
                                    let z = zoom.get_untracked();
                                    pan.update(|p| { p.0 += f64::from(ev.client_x() - x) / z; p.1 += f64::from(ev.client_y() - y) / z; });
                                    dragging.set_value(Some((ev.client_x(), ev.client_y())));
                                }
                            }>
                            <g transform=move || { let (x, y) = pan.get(); format!("scale({}) translate({} {})", svg::num(zoom.get()), svg::num(x), svg::num(y)) }>
                                <Edges live />
                                <Nodes live critical selected />
                            </g>
                        </svg>
                    </div>
                    <Details dag=dag selected />
                }.into_any()
            }
        }}
    }
}

#[component]
pub fn Edges(live: StoredValue<Option<LiveLayout<Sugiyama>>>) -> impl IntoView {
    let paths: Vec<String> = live.with_value(|l| {
        l.as_ref()
            .map(|l| {
                l.edges
                    .iter()
                    .map(|e| {
                        let mut d = String::new();
                        for (i, p) in e.points.iter().enumerate() {
                            d.push_str(&format!(
                                "{}{} {} ",
                                if i == 0 { "M" } else { "L" },
                                p.x,
                                p.y
                            ));
                        }
                        d
                    })
                    .collect()
            })
            .unwrap_or_default()
    });
    view! { {paths.into_iter().map(|d| view! { <path class="edge" d=d></path> }).collect_view()} }
}

/// A drawn node: id, top-left x and y, width, height, members collapsed into it, its
/// attributes, member ids.
type NodeBox = (
    String,
    i64,
    i64,
    i64,
    i64,
    usize,
    Option<DagNode>,
    Vec<String>,
);

#[component]
pub fn Nodes(
    live: StoredValue<Option<LiveLayout<Sugiyama>>>,
    critical: Vec<String>,
    selected: RwSignal<Option<String>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let nodes: Vec<NodeBox> = live.with_value(|l| {
        l.as_ref()
            .map(|l| {
                let d = Sugiyama::default();
                let (w, h) = (d.node_width, d.node_height);
                l.nodes
                    .iter()
                    .map(|n| {
                        (
                            n.id.clone(),
                            n.position.x,
                            n.position.y,
                            w,
                            h,
                            n.count,
                            l.attrs(&n.id).cloned(),
                            n.members.clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    });
    nodes
        .into_iter()
        .map(|(id, x, y, w, h, count, attrs, members)| {
            let crit = members.iter().any(|m| critical.contains(m));
            let st = attrs.as_ref().map_or("", |a| a.state.as_str());
            let title = attrs.as_ref().map(|a| a.title.clone()).unwrap_or_else(|| id.clone());
            let owner = attrs.as_ref().and_then(|a| a.owner.clone()).map(|o| o.rsplit(':').next().unwrap_or_default().to_owned()).unwrap_or_else(|| "—".into());
            let epoch = attrs.as_ref().map_or(0, |a| a.ownership_epoch);
            let child = attrs.as_ref().and_then(|a| match &a.kind {
                NodeKind::ChildMission { group_id } => Some(group_id.clone()),
                NodeKind::WorkItem => None,
            });
            let id2 = id.clone();
            let label_title = title.clone();
            let short: String = title.chars().take(22).collect();
            let class = format!("node state-{st}{}", if crit { " critical" } else { "" });
            let body = view! {
                <rect x=x y=y width=w height=h rx="6" class="box"></rect>
                <text x=x + 6 y=y + 14 class="title">{if crit { format!("◆ {short}") } else { short }}</text>
                <text x=x + 6 y=y + 28 class="st">{move || state_label(i18n, st)}{(count > 1).then(|| format!(" ×{count}"))}</text>
                <text x=x + 6 y=y + 42 class="owner">{owner.clone()}" · e"{epoch}</text>
            };
            let label = move || format!("{label_title} — {}", state_label(i18n, st));
            match child {
                Some(g) => view! {
                    <a href=format!("/mission/{g}") class=class.clone() data-node-id=id.clone() data-critical=crit.to_string() translate="no">
                        <title>{label}</title>
                        {body}
                    </a>
                }.into_any(),
                None => view! {
                    <g class=class.clone() tabindex="0" role="button" data-node-id=id.clone() data-critical=crit.to_string()
                        translate="no" aria-pressed=move || (selected.get().as_deref() == Some(id2.as_str())).to_string()
                        on:click={ let id = id.clone(); move |_| selected.set(Some(id.clone())) }
                        on:keydown={ let id = id.clone(); move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Enter" || ev.key() == " " { ev.prevent_default(); selected.set(Some(id.clone())) } }>
                        <title>{label}</title>
                        {body}
                    </g>
                }.into_any(),
            }
        })
        .collect_view()
}

/// The selected node's facts (or every node's when none is selected), as text.
#[component]
fn Details(dag: DagView, selected: RwSignal<Option<String>>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    move || {
        let sel = selected.get();
        let now = console.view_now();
        let nodes: Vec<DagNode> = dag
            .nodes
            .iter()
            .filter(|n| sel.as_ref().is_none_or(|s| *s == n.id))
            .cloned()
            .collect();
        view! {
            <section class="dag-details" aria-live="polite" aria-labelledby="details-title">
                <h2 id="details-title">{t!(i18n, mission.details)}</h2>
                <NodeRows nodes=nodes now=now critical=dag.critical_path.work_item_ids.clone() />
            </section>
        }
    }
}

#[component]
fn NodeList(dag: DagView) -> impl IntoView {
    let console = use_console();
    let now = console.view_now();
    let critical = dag.critical_path.work_item_ids.clone();
    view! { <NodeRows nodes=dag.nodes now=now critical=critical /> }
}

#[component]
fn NodeRows(
    nodes: Vec<DagNode>,
    now: wasm_core::authority::Micros,
    critical: Vec<String>,
) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <table class="work-items">
            <thead><tr>
                <th scope="col">"WorkItem"</th>
                <th scope="col">{t!(i18n, mission.state)}</th>
                <th scope="col">{t!(i18n, mission.owner)}</th>
                <th scope="col">"Ownership Epoch"</th>
                <th scope="col">"Execution Lease"</th>
                <th scope="col">{t!(i18n, mission.why_not_running)}</th>
            </tr></thead>
            <tbody>
                {nodes.into_iter().map(|n| {
                    let st = n.state.as_str();
                    let crit = critical.contains(&n.id);
                    let why = n.why_not_running.clone();
                    let running = n.running;
                    view! {
                        <tr data-work-item=n.id.clone()>
                            <td>{crit.then_some("◆ ")}<code>{n.id.clone()}</code><br/><span translate="no">{n.title.clone()}</span></td>
                            <td>{move || state_label(i18n, st)}</td>
                            <td><code>{n.owner.clone().unwrap_or_else(|| "—".into())}</code></td>
                            <td>{n.ownership_epoch}</td>
                            <td>{n.execution_lease_expires_at.map(|at| view! { <Countdown at=at /> })}</td>
                            <td>{if running {
                                view! { <span class="running">"▶ "{t!(i18n, mission.running)}</span> }.into_any()
                            } else {
                                view! { <ul class="why">{why.iter().map(|w| view! { <li>{why_view(i18n, w, now)}</li> }).collect_view()}</ul> }.into_any()
                            }}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}
