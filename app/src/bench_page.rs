//! The benchmark page (feature `bench`; never in the shipped console): built by
//! `scripts/bench-console.sh` into its own directory and driven there by Playwright in Chromium.
//! It fetches the history the native run wrote (`bench/history.jsonl`), then measures with the
//! console's own code ([`crate::bench`]): the replay (verify + fold in chunks, the progress bar
//! painted between chunks, then every projection), the DAG layout and first paint of the
//! Mission's WorkItems (the Mission view's own `Edges` and `Nodes`), and one live node update.
//! Its output is machine-read figures (`BENCH wasm …` lines), not console text, so it has no
//! translations.

use crate::bench;
use crate::i18n::*;
use crate::routes::mission::{Edges, Nodes};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use wasm_bindgen_futures::JsFuture;
use wasm_core::authority::Micros;
use wasm_core::views::layout::{LiveLayout, Sugiyama};

fn now_ms() -> f64 {
    crate::web::window()
        .and_then(|w| w.performance())
        .map_or_else(js_sys::Date::now, |p| p.now())
}

/// Resolves at the next animation frame (after the browser painted the previous one).
async fn next_frame() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let cb = Closure::once_into_js(move || {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        });
        if let Some(w) = crate::web::window() {
            let _ = w.request_animation_frame(cb.unchecked_ref());
        }
    });
    let _ = JsFuture::from(p).await;
}

#[component]
pub fn BenchPage() -> impl IntoView {
    let progress = RwSignal::new(0u32);
    let lines = RwSignal::new(Vec::<String>::new());
    let done = RwSignal::new(false);
    let live: StoredValue<Option<LiveLayout<Sugiyama>>> = StoredValue::new(None);
    let version = RwSignal::new(0u32);
    let selected = RwSignal::new(None::<String>);
    let say = move |s: String| lines.update(|l| l.push(s));
    leptos::task::spawn_local(async move {
        if let Err(e) = run(progress, say, live, version).await {
            say(format!("BENCH wasm error {e}"));
        }
        done.set(true);
    });
    view! {
        <I18nContextProvider>
            <main id="bench">
                <progress id="replay-progress" max="1000" value=move || progress.get()></progress>
                <pre id="results">{move || lines.get().join("\n")}</pre>
                {move || done.get().then(|| view! { <p id="done">"done"</p> })}
                <svg id="dag" class="dag" viewBox="0 0 4000 4000">
                    {move || {
                        version.get();
                        view! {
                            <Edges live />
                            <Nodes live critical=Vec::new() selected />
                        }
                    }}
                </svg>
            </main>
        </I18nContextProvider>
    }
}

async fn run(
    progress: RwSignal<u32>,
    say: impl Fn(String) + Copy,
    live: StoredValue<Option<LiveLayout<Sugiyama>>>,
    version: RwSignal<u32>,
) -> Result<(), String> {
    let text = crate::web::get_text("/bench/history.jsonl").await?;
    let all: Vec<&str> = text.lines().collect();
    let (replayed, last) = all.split_at(all.len().saturating_sub(1));
    say(format!("BENCH wasm fetched {} Events", all.len()));
    next_frame().await;

    // Replay: verify and fold in slices of ~40 ms, the progress bar painted between slices.
    let mut r = bench::Replay::new(bench::registry());
    let mut frames = 0u32;
    let mut seen = Vec::new();
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
        let pm = u32::try_from(i * 1000 / replayed.len()).unwrap_or(1000);
        progress.set(pm);
        seen.push(pm);
        next_frame().await;
        frames += 1;
    }
    let fold_ms = now_ms() - t0;
    let now = Micros::from_seconds(1_893_456_000 + 86_400);
    let t = now_ms();
    let p = bench::project(&r.log, now);
    let project_ms = now_ms() - t;
    seen.dedup();
    say(format!(
        "BENCH wasm verified+folded {} Events ({} failed, {} refused) in {:.0} ms: {:.0} /s",
        r.verified,
        r.failed,
        r.log.refusals().len(),
        fold_ms,
        r.verified as f64 / (fold_ms / 1e3)
    ));
    say(format!(
        "BENCH wasm projections {project_ms:.0} ms ({p:?}); replay total {:.0} ms; progress bar painted {frames} times with {} distinct values",
        fold_ms + project_ms,
        seen.len()
    ));
    next_frame().await;

    // DAG: layout, then first paint (the frame after the nodes are in the document).
    let t = now_ms();
    let layout = bench::layout(&r.log, now)?;
    let layout_ms = now_ms() - t;
    let (items, drawn) = (layout.dag().nodes.len(), layout.nodes.len());
    live.set_value(Some(layout));
    version.update(|v| *v += 1);
    next_frame().await;
    let paint_ms = now_ms() - t;
    let in_doc = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector_all("#dag [data-node-id]").ok())
        .map_or(0, |l| l.length());
    say(format!(
        "BENCH wasm DAG of {items} WorkItems ({drawn} drawn nodes, {in_doc} in the document): layout {layout_ms:.1} ms, layout + first paint {paint_ms:.1} ms"
    ));

    // One live node update: fold the next Event, patch the laid-out DAG, draw again.
    let mut next = bench::Replay::new(bench::registry());
    for line in last {
        next.receive(line);
    }
    let event = next.log.events().first().cloned().ok_or("no last Event")?;
    let t = now_ms();
    let mut layouts = 0;
    let mut err = None;
    live.update_value(|l| {
        if let Some(l) = l {
            match bench::live_update(&mut r.log, l, event, now) {
                Ok(n) => layouts = n,
                Err(e) => err = Some(e),
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    let model_ms = now_ms() - t;
    version.update(|v| *v += 1);
    next_frame().await;
    let total_ms = now_ms() - t;
    say(format!(
        "BENCH wasm live node update: fold + DAG + patch {model_ms:.2} ms (layouts {layouts}); with the SVG drawn again and painted {total_ms:.1} ms"
    ));
    Ok(())
}
