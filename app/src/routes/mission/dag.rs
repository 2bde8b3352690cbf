//! The Mission's DAG view: [`Drawing`] follows the console's snapshot (the DAG rebuilt from
//! the one drawn, then patched node by node, laid out again, or listed past the size guard),
//! and [`Dag`] puts the drawing, the toolbar, the legend and the details table on the page.

use super::viewport::{self, Viewport};
use super::*;

/// What the Mission view shows; it changes rarely (the nodes are patched under it).
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    NotVisible,
    /// Past the size guard: listed (the reason).
    TooLarge(String),
    Drawn,
}

/// The drawing's state: reactive handles only, so it is `Copy` and shared by the effects.
#[derive(Clone, Copy)]
struct Drawing {
    live: StoredValue<Option<LiveLayout<Sugiyama>>>,
    /// The DAG when it is listed instead of drawn (past the size guard).
    listed: StoredValue<Option<DagView>>,
    /// The state the drawn DAG was built from (the next DAG is rebuilt from it).
    built_from: StoredValue<Option<Arc<State>>>,
    shape: RwSignal<Shape>,
    /// Bumped when everything is to be drawn anew (a new layout, another DAG).
    version: RwSignal<u64>,
    /// The WorkItem table's id prefixes, computed anew with each drawing; a live patch that
    /// would change them draws the whole table anew instead (`version`).
    prefixes: Memo<Prefixes>,
    layouts: RwSignal<usize>,
    crit_n: RwSignal<usize>,
    /// The `<svg>`'s size on screen.
    frame: RwSignal<(f64, f64)>,
    detail: Memo<Detail>,
}

impl Drawing {
    fn set_shape(&self, s: Shape) {
        if self.shape.get_untracked() != s {
            self.shape.set(s);
        }
    }

    /// The DAG as of `state` for `group`, rebuilt from the one drawn when there is one.
    fn next(&self, state: &Arc<State>, group: &str, now: Micros) -> Option<DagView> {
        let mission = state.mission_of_group(group)?.id.clone();
        let dag = self.built_from.with_value(|old| {
            self.live.with_value(|l| {
                self.listed.with_value(|d| {
                    let prev = l.as_ref().map(LiveLayout::dag).or(d.as_ref());
                    next_dag(prev.zip(old.as_deref()), state, &mission, now)
                })
            })
        });
        self.built_from
            .set_value(dag.is_some().then(|| state.clone()));
        dag
    }

    /// Shows `dag`: patched into the drawing, laid out anew, or listed; the document follows
    /// (the changed nodes rewritten, or everything drawn anew).
    fn show(&self, dag: Option<DagView>, i18n: I18nContext<Locale>, now: Micros) {
        let Some(dag) = dag else {
            self.live.set_value(None);
            self.listed.set_value(None);
            self.set_shape(Shape::NotVisible);
            return;
        };
        let n = dag.critical_path.work_item_ids.len();
        if self.crit_n.get_untracked() != n {
            self.crit_n.set(n);
        }
        let drawn = self.live.with_value(Option::is_some);
        let outcome = if drawn {
            self.patch(dag)
        } else {
            self.lay_out_or_list(dag, i18n, now)
        };
        match outcome {
            Err(e) => self.set_shape(Shape::TooLarge(e)),
            Ok(u) => {
                self.redraw_changed(&u, i18n, now);
                self.set_shape(Shape::Drawn);
            }
        }
    }

    /// Into the drawn layout ([`apply_dag`]); past the size guard now, what the layout was
    /// given is listed.
    fn patch(&self, dag: DagView) -> Result<DagUpdate, String> {
        let mut outcome = Ok(DagUpdate::default());
        let width = self.frame.get_untracked().0;
        self.live.update_value(|l| {
            let Some(drawn) = l else { return };
            outcome = apply_dag(drawn, dag);
            // A new layout may be of another size class (boxes fitted or not).
            if let Ok(u) = &mut outcome
                && u.redraw
                && refit(drawn, width)
            {
                u.layouts = drawn.layouts;
            }
            if outcome.is_err() {
                self.listed.set_value(l.take().map(|d| d.dag().clone()));
            }
        });
        outcome
    }

    /// Nothing drawn yet (or listed): lay `dag` out, or list it when it is past the size
    /// guard, rewriting only the changed rows when the listed nodes are the same ones.
    fn lay_out_or_list(
        &self,
        dag: DagView,
        i18n: I18nContext<Locale>,
        now: Micros,
    ) -> Result<DagUpdate, String> {
        let options = CollapseOptions {
            max_nodes: MAX_NODES,
            ..CollapseOptions::default()
        };
        let before = self
            .listed
            .with_value(|d| d.as_ref().map(|d| d.nodes.clone()));
        let engine = engine_for(dag.nodes.len(), self.frame.get_untracked().0);
        let e = match LiveLayout::new(engine, options, dag.clone()) {
            Ok(new) => {
                let u = DagUpdate {
                    layouts: new.layouts,
                    redraw: true,
                    changed: Vec::new(),
                };
                self.listed.set_value(None);
                self.live.set_value(Some(new));
                return Ok(u);
            }
            Err(e) => e,
        };
        let rows = before
            .as_ref()
            .filter(|b| {
                b.len() == dag.nodes.len() && b.iter().zip(&dag.nodes).all(|(x, y)| x.id == y.id)
            })
            .map(|b| {
                b.iter()
                    .zip(&dag.nodes)
                    .enumerate()
                    .filter(|(_, (x, y))| x != y)
                    .map(|(i, _)| i)
                    .collect::<Vec<_>>()
            });
        self.listed.set_value(Some(dag));
        let was_listed = matches!(self.shape.get_untracked(), Shape::TooLarge(_));
        let p = self.prefixes.get_untracked();
        let same_prefixes = self
            .listed
            .with_value(|d| d.as_ref().map(table_prefixes))
            .as_ref()
            == Some(&p);
        match rows {
            Some(rows) if was_listed && same_prefixes => self.listed.with_value(|d| {
                if let Some(d) = d {
                    with_words(i18n, now, |w| patch_rows(d, &rows, w, &p));
                }
            }),
            _ => self.version.update(|v| *v += 1),
        }
        Err(e.to_string())
    }

    /// After a drawn update: everything drawn anew, or only the changed nodes and rows
    /// rewritten (unless their id prefixes changed: then the table is written anew).
    fn redraw_changed(&self, u: &DagUpdate, i18n: I18nContext<Locale>, now: Micros) {
        if self.layouts.get_untracked() != u.layouts {
            self.layouts.set(u.layouts);
        }
        let p = self.prefixes.get_untracked();
        let same = self
            .live
            .with_value(|l| l.as_ref().map(|l| table_prefixes(l.dag())) == Some(p.clone()));
        if u.redraw || (!u.changed.is_empty() && !same) {
            self.version.update(|v| *v += 1);
        } else if !u.changed.is_empty() {
            self.live.with_value(|l| {
                if let Some(l) = l {
                    with_words(i18n, now, |w| {
                        patch_graph(l, &u.changed, w, self.detail.get_untracked());
                        patch_rows(l.dag(), &u.changed, w, &p);
                    });
                }
            });
        }
    }
}

#[component]
pub fn Dag(group: String) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let live: StoredValue<Option<LiveLayout<Sugiyama>>> = StoredValue::new(None);
    let listed: StoredValue<Option<DagView>> = StoredValue::new(None);
    let version = RwSignal::new(0u64);
    let prefixes = Memo::new(move |_| {
        version.get();
        live.with_value(|l| l.as_ref().map(|l| table_prefixes(l.dag())))
            .or_else(|| listed.with_value(|d| d.as_ref().map(table_prefixes)))
            .unwrap_or_default()
    });
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
    // The level of detail follows the on-screen scale: the `<svg>`'s size (measured when it is
    // mounted and when the window is resized), the layout's, and the zoom.
    let svg_ref = NodeRef::<leptos::svg::Svg>::new();
    let frame = RwSignal::new(guess_frame());
    let fitted = Memo::new(move |_| {
        version.get();
        let dims = live.with_value(|l| l.as_ref().map_or((0, 0), |l| (l.width, l.height)));
        screen_scale(frame.get(), dims, 1.0)
    });
    // A small graph whose fitted text is too small to read (a phone) starts zoomed in; `zoom`
    // is relative to that start.
    let base = Memo::new(move |_| start_zoom(fitted.get()));
    let vp = Viewport::new(fitted, base);
    let detail = Memo::new(move |_| detail_at(fitted.get() * base.get() * vp.zoom.get()));
    let drawing = Drawing {
        live,
        listed,
        built_from: StoredValue::new(None),
        shape: RwSignal::new(Shape::NotVisible),
        version,
        prefixes,
        layouts: RwSignal::new(0),
        crit_n: RwSignal::new(0),
        frame,
        detail,
    };
    follow_the_frame(drawing, svg_ref);
    follow_the_detail(drawing, vp);
    // The DagView as of the snapshot; the layout follows it, and the document the layout.
    Effect::new(move |_| {
        let now = console.view_now();
        let dag = console
            .snapshot
            .with(|s| drawing.next(&s.state, &group, now));
        untrack(|| drawing.show(dag, i18n, now));
    });
    // The lease countdowns follow the clock.
    Effect::new(move |_| {
        let now = console.view_now();
        untrack(|| viewport::tick_countdowns(i18n, now));
    });
    // The selected node is `aria-pressed`, the one before no longer.
    Effect::new(move |prev: Option<Option<String>>| {
        let sel = selected.get();
        live.with_value(|l| {
            if let Some(l) = l {
                viewport::set_pressed(l, prev.flatten().as_deref(), false);
                viewport::set_pressed(l, sel.as_deref(), true);
            }
        });
        sel
    });
    let navigate = StoredValue::new_local(use_navigate());
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
        {move || match drawing.shape.get() {
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
                    <DagToolbar vp />
                    <CriticalLegend layouts=drawing.layouts crit_n=drawing.crit_n />
                    {move || (detail.get() == Detail::Far).then(|| view! {
                        <p class="legend far-legend" id="far-legend">{t!(i18n, mission.far_legend)}</p>
                    })}
                    <div class="dag-frame">
                        <svg id="dag" class="dag" role="group" tabindex="0" node_ref=svg_ref
                            data-detail=move || if detail.get() == Detail::Far { "far" } else { "full" }
                            aria-label=move || t_string!(i18n, mission.dag_label)
                            viewBox=view_box
                            on:keydown=move |ev| vp.key(&ev, selected)
                            on:wheel=move |ev| vp.wheel(&ev)
                            on:click=move |ev| viewport::click(&ev, selected, |href| navigate.with_value(|go| go(href, Default::default())))
                            on:pointerdown=move |ev| vp.press(&ev)
                            on:pointerup=move |_| vp.release()
                            on:pointerleave=move |_| vp.release()
                            on:pointermove=move |ev| vp.drag(&ev)>
                            <g transform=move || { let (x, y) = vp.pan.get(); format!("scale({}) translate({} {})", svg::num(vp.scale()), svg::num(x), svg::num(y)) }>
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

/// Measures the `<svg>` when it is mounted, after each new drawing (its height follows the
/// layout's shape: `svg.dag`, `height: auto` from the viewBox) and on resize; lays the graph
/// out again when the frame's width asks for other boxes ([`refit`]: a small Mission's).
fn follow_the_frame(drawing: Drawing, svg_ref: NodeRef<leptos::svg::Svg>) {
    let Drawing {
        live,
        version,
        layouts,
        frame,
        ..
    } = drawing;
    let measure = move || {
        if let Some(f) = svg_ref.get_untracked().and_then(|el| frame_of(&el))
            && frame.get_untracked() != f
        {
            frame.set(f);
        }
    };
    Effect::new(move |_| {
        version.get();
        if svg_ref.get().is_some() {
            measure();
        }
    });
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
}

/// A node focused when the zoom crosses the level-of-detail threshold is focused again in the
/// new drawing (its element was replaced).
fn follow_the_detail(drawing: Drawing, vp: Viewport) {
    let (live, detail) = (drawing.live, drawing.detail);
    Effect::new(move |prev: Option<Detail>| {
        let now = detail.get();
        if prev.is_some_and(|p| p != now)
            && let Some(id) = vp.refocus.get_value()
        {
            request_animation_frame(move || {
                live.with_value(|l| {
                    if let Some(vi) = l
                        .as_ref()
                        .and_then(|l| l.nodes.iter().position(|n| n.id == id))
                    {
                        viewport::focus_element(&node_dom_id(vi));
                    }
                });
            });
        }
        now
    });
}

/// Zoom in, out and back, and the keys that do the same.
#[component]
fn DagToolbar(vp: Viewport) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="dag-tools toolbar">
            <button type="button" id="zoom-in" on:click=move |_| vp.zoom_in()>{t!(i18n, mission.zoom_in)}</button>
            <button type="button" id="zoom-out" on:click=move |_| vp.zoom_out()>{t!(i18n, mission.zoom_out)}</button>
            <button type="button" id="zoom-reset" on:click=move |_| vp.reset()>{t!(i18n, mission.zoom_reset)}</button>
            <span class="hint">{t!(i18n, mission.keys_hint)}</span>
        </div>
    }
}

/// The critical path's length. It carries how many layouts this view computed (a live update
/// patches nodes without one): for whoever diagnoses the view, not a figure for the reader.
#[component]
fn CriticalLegend(layouts: RwSignal<usize>, crit_n: RwSignal<usize>) -> impl IntoView {
    let i18n = use_i18n();
    view! {
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
    }
}
