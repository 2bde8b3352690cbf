//! The benchmark page (feature `bench`; never in the shipped console): built by
//! `scripts/bench-console.sh` into its own directory and driven there by Playwright in Chromium.
//! It fetches the history the native run wrote (`bench/history.jsonl`), then measures with the
//! console's own code ([`crate::bench`]): the replay (verify + fold in chunks, the progress bar
//! painted between chunks, then every projection), the DAG layout and first paint of the
//! Mission's WorkItems (the Mission view's own `DagGraph` and WorkItem table, `Details`), and one
//! live node update patched into them (`patch_graph`, `patch_rows`, as the Mission view does).
//! Its output is machine-read figures (`BENCH wasm …` lines), not console text, so it has no
//! translations.

use crate::bench;
use crate::i18n::*;
use crate::routes::mission::{
    DagGraph, Detail, Details, TABLE_PAGE, detail_at, frame_of, graph_markup, patch_graph,
    patch_rows, rows_markup_first, screen_scale, table_prefixes, with_words,
};
use leptos::prelude::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use wasm_bindgen_futures::JsFuture;
use wasm_core::authority::Micros;
use wasm_core::views::layout::{LiveLayout, Sugiyama};

use crate::web::{next_frame, perf_now as now_ms};

/// The animation-frame callback that asks for the next frame itself.
type FrameCallback = Rc<RefCell<Option<Closure<dyn FnMut()>>>>;

/// Records the progress bar's value at every animation frame (each frame the browser paints)
/// until stopped: the paints the user sees, whichever thread does the work.
struct Paints {
    seen: Rc<RefCell<Vec<u32>>>,
    stop: Rc<Cell<bool>>,
}

impl Paints {
    fn watch(progress: RwSignal<u32>) -> Paints {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let stop = Rc::new(Cell::new(false));
        let frame: FrameCallback = Rc::new(RefCell::new(None));
        let (s, st, f) = (seen.clone(), stop.clone(), frame.clone());
        // The closure holds itself (to ask for the next frame): it is leaked once stopped,
        // one small closure per replay of the benchmark page.
        *frame.borrow_mut() = Some(Closure::new(move || {
            if st.get() {
                return;
            }
            s.borrow_mut().push(progress.get_untracked());
            if let (Some(w), Some(cb)) = (crate::web::window(), f.borrow().as_ref()) {
                let _ = w.request_animation_frame(cb.as_ref().unchecked_ref());
            }
        }));
        if let (Some(w), Some(cb)) = (crate::web::window(), frame.borrow().as_ref()) {
            let _ = w.request_animation_frame(cb.as_ref().unchecked_ref());
        }
        Paints { seen, stop }
    }

    /// Stops; returns the frames painted and the distinct values they showed.
    fn stop(self) -> (usize, usize) {
        self.stop.set(true);
        let mut seen = self.seen.borrow().clone();
        let frames = seen.len();
        seen.dedup();
        (frames, seen.len())
    }
}

/// Resolves when the next frame has been rendered: at the next animation frame (the start of
/// the frame, returned), then in the first task after it, which runs once the browser has done
/// that frame's style, layout and paint. Returns (frame start, after the frame) in ms.
async fn after_paint() -> (f64, f64) {
    next_frame().await;
    let start = now_ms();
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let cb = Closure::once_into_js(move || {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        });
        if let Some(w) = crate::web::window() {
            let _ = w.set_timeout_with_callback(cb.unchecked_ref());
        }
    });
    let _ = JsFuture::from(p).await;
    (start, now_ms())
}

/// Makes the browser compute style and layout now (reading a layout-dependent property), so
/// that cost is measured where it is caused; the paint is left to the frame.
fn force_layout() -> i32 {
    crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
        .map_or(0, |e| e.scroll_height())
}

#[component]
pub fn BenchPage() -> impl IntoView {
    view! {
        <I18nContextProvider>
            <BenchRun />
        </I18nContextProvider>
    }
}

#[component]
fn BenchRun() -> impl IntoView {
    let i18n = use_i18n();
    let progress = RwSignal::new(0u32);
    let lines = RwSignal::new(Vec::<String>::new());
    let done = RwSignal::new(false);
    let live: StoredValue<Option<LiveLayout<Sugiyama>>> = StoredValue::new(None);
    let version = RwSignal::new(0u64);
    let selected = RwSignal::new(None::<String>);
    // The level the graph is drawn at: the Mission view's at the fitted zoom, set before the
    // first paint; the frame A/B switches it.
    let detail = RwSignal::new(Detail::Full);
    // The table's id prefixes, as the Mission view computes them with each drawing.
    let prefixes = Memo::new(move |_| {
        version.get();
        live.with_value(|l| l.as_ref().map(|l| table_prefixes(l.dag())))
            .unwrap_or_default()
    });
    let say = move |s: String| lines.update(|l| l.push(s));
    let view_box = move || {
        version.get();
        let (w, h) = live.with_value(|l| l.as_ref().map_or((0, 0), |l| (l.width, l.height)));
        format!("-20 -20 {} {}", w + 40, h + 40)
    };
    leptos::task::spawn_local(async move {
        if let Err(e) = run(i18n, progress, say, live, version, detail).await {
            say(format!("BENCH wasm error {e}"));
        }
        done.set(true);
    });
    view! {
        <main id="bench">
            <progress id="replay-progress" max="1000" value=move || progress.get()></progress>
            <pre id="results">{move || lines.get().join("\n")}</pre>
            {move || done.get().then(|| view! { <p id="done">"done"</p> })}
            // As in the Mission view (with the console's stylesheet): the frame, the whole graph
            // in the viewBox.
            <div class="dag-frame">
                <svg id="dag" class="dag" viewBox=view_box>
                    <g>
                        <DagGraph live version selected detail=detail.into() />
                    </g>
                </svg>
            </div>
            <Details live version selected prefixes />
        </main>
    }
}

async fn run(
    i18n: leptos_i18n::I18nContext<Locale>,
    progress: RwSignal<u32>,
    say: impl Fn(String) + Copy,
    live: StoredValue<Option<LiveLayout<Sugiyama>>>,
    version: RwSignal<u64>,
    detail: RwSignal<Detail>,
) -> Result<(), String> {
    let text = crate::web::get_text("/bench/history.jsonl").await?;
    let all: Vec<&str> = text.lines().collect();
    let (replayed, last) = all.split_at(all.len().saturating_sub(1));
    say(format!("BENCH wasm fetched {} Events", all.len()));
    next_frame().await;

    let now = Micros::from_seconds(1_893_456_000 + 86_400);
    let registry = bench::registry();

    // 1. Pool off, as before: each Event through `RegistryCheck` (one `verify_value`) and
    //    folded, in slices of ~40 ms on the page's thread.
    let off = {
        let mut r = bench::Replay::new(registry.clone());
        progress.set(0);
        next_frame().await;
        let paints = Paints::watch(progress);
        let t0 = now_ms();
        let mut i = 0;
        while i < replayed.len() {
            let slice = now_ms();
            while i < replayed.len() && now_ms() - slice < 40.0 {
                let end = (i + 200).min(replayed.len());
                for line in &replayed[i..end] {
                    r.receive(line);
                }
                r.fold(end - i);
                i = end;
            }
            // Of the whole history (the log only knows the Events received so far).
            progress.set(u32::try_from(i * 1000 / replayed.len()).unwrap_or(1000));
            next_frame().await;
        }
        let fold_ms = now_ms() - t0;
        let (frames, distinct) = paints.stop();
        let t = now_ms();
        let p = bench::project(&r.log, now);
        let project_ms = now_ms() - t;
        say(format!(
            "BENCH wasm pool off (1 thread, RegistryCheck per Event): verified+folded {} Events ({} failed, {} refused) in {:.0} ms: {:.0} /s",
            r.verified,
            r.failed,
            r.log.refusals().len(),
            fold_ms,
            r.verified as f64 / (fold_ms / 1e3)
        ));
        say(format!(
            "BENCH wasm pool off projections {project_ms:.0} ms ({p:?}); replay total {:.0} ms; progress bar painted {frames} times with {distinct} distinct values",
            fold_ms + project_ms,
        ));
        p
    };
    next_frame().await;

    // 2. Pool off, chunked: the fallback path (`pool::replay_here`, the batch verification of
    //    `replay::verify_chunk` on the page's thread).
    {
        let mut log = crate::fold::EventLog::new();
        progress.set(0);
        next_frame().await;
        let paints = Paints::watch(progress);
        let t0 = now_ms();
        let p = crate::pool::replay_here(
            replayed,
            Some(&registry),
            &mut log,
            crate::replay::CHUNK,
            &mut |p| progress.set(p.per_mille()),
        )
        .await;
        let fold_ms = now_ms() - t0;
        let (frames, distinct) = paints.stop();
        say(format!(
            "BENCH wasm fallback (1 thread, chunks of {}, batch verification): verified+folded {} Events ({} rejected, {} refused) in {:.0} ms: {:.0} /s; progress bar painted {frames} times with {distinct} distinct values",
            crate::replay::CHUNK,
            p.applied,
            p.rejections.len(),
            log.refusals().len(),
            fold_ms,
            p.applied as f64 / (fold_ms / 1e3)
        ));
    }
    next_frame().await;

    // 3. The pool: workers verify, this thread folds in order as chunks come back. Starting
    //    the workers (each compiles the module) is part of the replay's time.
    let size = crate::pool::default_size();
    let url = crate::pool::worker_url().ok_or("no boot.js script to find worker.js by")?;
    progress.set(0);
    next_frame().await;
    let paints = Paints::watch(progress);
    let t0 = now_ms();
    let mut pool =
        crate::pool::Pool::start(&url, size, bench::registry_fixture().as_bytes()).await?;
    let start_ms = now_ms() - t0;
    let mut r = bench::Replay::new(registry.clone());
    let p = pool
        .replay(
            replayed,
            Some(&registry),
            &mut r.log,
            crate::replay::CHUNK,
            &mut |p| progress.set(p.per_mille()),
        )
        .await;
    let fold_ms = now_ms() - t0;
    let alive = pool.alive();
    drop(pool);
    let (frames, distinct) = paints.stop();
    let t = now_ms();
    let projected = bench::project(&r.log, now);
    let project_ms = now_ms() - t;
    say(format!(
        "BENCH wasm pool of {size} workers ({alive} alive at the end; started in {start_ms:.0} ms, included): verified+folded {} Events ({} rejected, {} refused) in {:.0} ms: {:.0} /s",
        p.applied,
        p.rejections.len(),
        r.log.refusals().len(),
        fold_ms,
        p.applied as f64 / (fold_ms / 1e3)
    ));
    say(format!(
        "BENCH wasm projections {project_ms:.0} ms ({projected:?}); replay total {:.0} ms; progress bar painted {frames} times with {distinct} distinct values",
        fold_ms + project_ms,
    ));
    say(format!(
        "BENCH wasm pool and pool off agree on every projection: {}",
        projected == off
    ));
    if projected != off || p.applied + p.rejections.len() + p.duplicates != replayed.len() {
        return Err("the pooled replay differs from the one-thread replay".into());
    }
    next_frame().await;

    // DAG: layout, then first paint: the graph and the WorkItem table in the document, and the
    // frame that shows them rendered.
    let t = now_ms();
    let layout = bench::layout(&r.log, now)?;
    let layout_ms = now_ms() - t;
    let (items, drawn) = (layout.dag().nodes.len(), layout.nodes.len());
    // The level the Mission view draws at its initial (fitted) zoom, from the `<svg>`'s size
    // on this page (styled as in the Mission view).
    let frame = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("dag"))
        .and_then(|el| frame_of(&el))
        .ok_or("the <svg> has no size")?;
    let scale = screen_scale(frame, (layout.width, layout.height), 1.0);
    let fitted = detail_at(scale);
    say(format!(
        "BENCH wasm level of detail at the fitted zoom: {fitted:?} (<svg> {:.0}×{:.0} px, layout {}×{}: {scale:.3} px per unit, node text {:.2} px tall)",
        frame.0,
        frame.1,
        layout.width,
        layout.height,
        scale * crate::routes::mission::TEXT_UNITS
    ));
    detail.set(fitted);
    live.set_value(Some(layout));
    version.update(|v| *v += 1);
    // The render effects run: the markup is built and parsed into the document.
    leptos::task::tick().await;
    let parsed_ms = now_ms() - t;
    force_layout();
    let styled_ms = now_ms() - t;
    let (frame, painted) = after_paint().await;
    let (paint_ms, frame_ms) = (painted - t, painted - frame);
    let count = |sel: &str| {
        crate::web::window()
            .and_then(|w| w.document())
            .and_then(|d| d.query_selector_all(sel).ok())
            .map_or(0, |l| l.length())
    };
    let (in_doc, rows) = (
        count("#dag [data-node-id]"),
        count("table.work-items tbody tr"),
    );
    say(format!(
        "BENCH wasm DAG of {items} WorkItems ({drawn} drawn nodes, {in_doc} in the document, {rows} table rows), drawn {fitted:?}: layout {layout_ms:.1} ms, layout + first paint {paint_ms:.1} ms (in the document after {parsed_ms:.1} ms, styled and laid out after {styled_ms:.1} ms, the frame that paints it {frame_ms:.1} ms)"
    ));

    // Where first paint goes: the two markup strings built again, alone (not part of a figure
    // above; the parse, DOM and rendering are the rest).
    let t = now_ms();
    let graph_len = live.with_value(|l| {
        l.as_ref().map_or(0, |l| {
            with_words(i18n, now, |w| graph_markup(l, w, None, fitted).len())
        })
    });
    let graph_ms = now_ms() - t;
    let t = now_ms();
    let rows_len = live.with_value(|l| {
        l.as_ref().map_or(0, |l| {
            with_words(i18n, now, |w| {
                rows_markup_first(l.dag(), None, TABLE_PAGE, w, &table_prefixes(l.dag())).len()
            })
        })
    });
    let rows_ms = now_ms() - t;
    say(format!(
        "BENCH wasm DAG markup built: graph {graph_ms:.1} ms ({graph_len} B), table rows {rows_ms:.1} ms ({rows_len} B)"
    ));

    // One live node update: fold the next Event, patch the laid-out DAG, rewrite the changed
    // nodes' elements and rows (as the Mission view does), and let the browser render the frame.
    let mut next = bench::Replay::new(bench::registry());
    for line in last {
        next.receive(line);
    }
    let event = next.log.events().first().cloned().ok_or("no last Event")?;
    // Start on a fresh frame, as an Event arriving from the socket would.
    // The console keeps the state it drew from (the snapshot it published after the previous
    // fold); the update publishes the next one (both copies of the persistent State).
    let t = now_ms();
    let before = r.log.state().clone();
    let copy_ms = now_ms() - t;
    after_paint().await;
    let t = now_ms();
    let mut update = Err("no layout".to_owned());
    live.update_value(|l| {
        if let Some(l) = l {
            update = bench::live_update(&mut r.log, &before, l, event, now);
        }
    });
    let (update, published) = update?;
    let model_ms = now_ms() - t;
    let t_patch = now_ms();
    let mut patched = (0, 0);
    if update.redraw {
        version.update(|v| *v += 1);
    } else {
        live.with_value(|l| {
            if let Some(l) = l {
                with_words(i18n, now, |w| {
                    patched = (
                        patch_graph(l, &update.changed, w, fitted),
                        patch_rows(l.dag(), &update.changed, w, &table_prefixes(l.dag())),
                    );
                });
            }
        });
    }
    let patch_ms = now_ms() - t_patch;
    let t_style = now_ms();
    force_layout();
    let style_ms = now_ms() - t_style;
    let (frame, painted) = after_paint().await;
    let frame_ms = painted - frame;
    let total_ms = painted - t;
    say(format!(
        "BENCH wasm live node update ({fitted:?}): fold + snapshot + DAG + patch {model_ms:.2} ms (layouts {}, {} DAG nodes changed{}); elements rewritten {patch_ms:.2} ms ({} nodes, {} rows); style and layout {style_ms:.1} ms; the frame that paints it {frame_ms:.1} ms; work {:.1} ms; to the painted frame (with the wait for it) {total_ms:.1} ms, the snapshot included (a copy of the State alone {copy_ms:.3} ms)",
        update.layouts,
        update.changed.len(),
        if update.redraw { ", drawn anew" } else { "" },
        patched.0,
        patched.1,
        model_ms + patch_ms + style_ms + frame_ms
    ));
    // The same patch again, the graph's node and the table's row each alone, each with its
    // frame: which of the two the browser's rendering costs.
    for (what, graph, table) in [("graph node", true, false), ("table row", false, true)] {
        after_paint().await;
        let t = now_ms();
        live.with_value(|l| {
            if let Some(l) = l {
                with_words(i18n, now, |w| {
                    if graph {
                        patch_graph(l, &update.changed, w, fitted);
                    }
                    if table {
                        patch_rows(l.dag(), &update.changed, w, &table_prefixes(l.dag()));
                    }
                });
            }
        });
        let patch_ms = now_ms() - t;
        let t = now_ms();
        force_layout();
        let style_ms = now_ms() - t;
        let (frame, painted) = after_paint().await;
        say(format!(
            "BENCH wasm the same patch ({fitted:?}), {what} alone: rewritten {patch_ms:.2} ms; style and layout {style_ms:.1} ms; the frame that paints it {:.1} ms",
            painted - frame
        ));
    }
    frame_ab(i18n, live, detail, &update.changed, now, &say).await;
    // Zooming in past the threshold: the whole graph drawn anew with its text, and its frame.
    if fitted == Detail::Far {
        after_paint().await;
        let t = now_ms();
        detail.set(Detail::Full);
        leptos::task::tick().await;
        let parsed_ms = now_ms() - t;
        force_layout();
        let styled_ms = now_ms() - t;
        let (frame, painted) = after_paint().await;
        say(format!(
            "BENCH wasm switch to full text (zoomed in past the threshold, the whole graph drawn anew): {:.1} ms to the painted frame (in the document after {parsed_ms:.1} ms, styled and laid out after {styled_ms:.1} ms, the frame that paints it {:.1} ms)",
            painted - t,
            painted - frame
        ));
        detail.set(fitted);
    }
    // Time travel: the merged log replayed to the Event before the last, the DAG as of then
    // rebuilt from the live one; then one Event further back.
    let travelled = live.with_value(|l| {
        l.as_ref()
            .map(|l| bench::travel(&r.log, l.dag(), &published, now, now_ms))
    });
    if let Some(tr) = travelled {
        let tr = tr?;
        say(format!("BENCH wasm {}", tr.line()));
    }
    Ok(())
}

/// The median of `v` (0 when empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The drawings the frame after a graph patch is measured with, alternated round by round:
/// (name, level of detail, with the far level's `<title>` tooltips). The full text drawing is
/// the baseline (the Mission view's before the far level); "no title" asks whether the unpainted
/// `<title>`s cost anything in the repaint.
const VARIANTS: [(&str, Detail, bool); 3] = [
    ("as drawn (full text)", Detail::Full, true),
    ("far level: one <rect> and its <title>", Detail::Far, true),
    ("far level, no <title>", Detail::Far, false),
];

/// How many rounds [`frame_ab`] alternates the variants for.
const ROUNDS: usize = 9;

/// Removes every `<title>` of the drawn graph (the "no title" variant).
fn drop_titles() {
    let list = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector_all("#dag title").ok());
    if let Some(list) = list {
        for k in 0..list.length() {
            if let Some(el) = list
                .item(k)
                .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
            {
                el.remove();
            }
        }
    }
}

/// What "the frame that paints it" is made of, at each level of detail ([`VARIANTS`], the
/// whole graph drawn anew at the variant's level first). Round by round: an empty frame
/// (nothing changed, measured as [`after_paint`] measures every frame: from the
/// animation-frame callback to the first task after it) as the baseline, then the graph node
/// patched alone (rewrite, style and layout, its frame). Prints the medians; the frame's own
/// work is the patched frame less the empty one.
async fn frame_ab(
    i18n: leptos_i18n::I18nContext<Locale>,
    live: StoredValue<Option<LiveLayout<Sugiyama>>>,
    detail: RwSignal<Detail>,
    changed: &[usize],
    now: Micros,
    say: &impl Fn(String),
) {
    let n = VARIANTS.len();
    let (mut empty, mut rewrite, mut style, mut frame, mut total) = (
        vec![Vec::new(); n],
        vec![Vec::new(); n],
        vec![Vec::new(); n],
        vec![Vec::new(); n],
        vec![Vec::new(); n],
    );
    let restore = detail.get_untracked();
    for _ in 0..ROUNDS {
        for (k, &(_, level, titles)) in VARIANTS.iter().enumerate() {
            // Drawn anew at this level (a new `version` of the same layout).
            detail.set(level);
            leptos::task::tick().await;
            if !titles {
                drop_titles();
            }
            // Settle: the redraw's own frames.
            after_paint().await;
            after_paint().await;
            let (f, p) = after_paint().await;
            empty[k].push(p - f);
            after_paint().await;
            let t = now_ms();
            live.with_value(|l| {
                if let Some(l) = l {
                    with_words(i18n, now, |w| patch_graph(l, changed, w, level));
                }
            });
            if !titles {
                drop_titles();
            }
            let t_style = now_ms();
            force_layout();
            let t_frame = now_ms();
            let (f, p) = after_paint().await;
            rewrite[k].push(t_style - t);
            style[k].push(t_frame - t_style);
            frame[k].push(p - f);
            total[k].push(t_frame - t + p - f);
        }
    }
    detail.set(restore);
    leptos::task::tick().await;
    for (k, (name, _, _)) in VARIANTS.iter().enumerate() {
        let (e, fr) = (median(empty[k].clone()), median(frame[k].clone()));
        say(format!(
            "BENCH wasm frame A/B ({name}; median of {ROUNDS}, variants alternated): empty frame {e:.1} ms; graph node alone: rewritten {:.2} ms, style and layout {:.1} ms, its frame {fr:.1} ms (the frame's own work {:.1} ms over the empty one); to the painted frame {:.1} ms; work without the wait {:.1} ms",
            median(rewrite[k].clone()),
            median(style[k].clone()),
            fr - e,
            median(total[k].clone()),
            median(rewrite[k].clone()) + median(style[k].clone()) + (fr - e).max(0.0),
        ));
    }
}
