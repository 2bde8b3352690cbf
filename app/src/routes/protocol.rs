//! Protocol (`/protocol`): the official MissionWeaveProtocol 0.1 bundles run in this browser, on
//! request, by the same WebAssembly core that verifies every Event, with the counts per bundle
//! (structural 58, cryptography 62, admission 30), beside the server's own native run. The
//! bundle files are fetched from the server, which serves `MWP_PROTOCOL_DIR` read-only
//! (`/api/protocol/…`): embedding them would add their 519 KB (55 KB gzip) to every page load
//! for a check most visits never run.

use crate::i18n::*;
use leptos::prelude::*;

/// One bundle's outcome, as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct BundleRow {
    pub bundle: String,
    pub passed: usize,
    pub failed: usize,
    /// (case, expected, got) of each failing evaluation.
    pub failures: Vec<(String, String, String)>,
}

#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
enum Run {
    Idle,
    Fetching(usize),
    Running,
    Done(Vec<BundleRow>),
    Failed(String),
}

/// Runs the three official bundles over files already in memory.
pub fn run_bundles(files: &std::collections::HashMap<String, Vec<u8>>) -> Vec<BundleRow> {
    let read = |path: &str| -> Result<Vec<u8>, String> {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| format!("{path}: not served"))
    };
    [
        wasm_core::conformance::run_structural(&read),
        wasm_core::conformance::run_cryptography(&read),
        wasm_core::conformance::run_admission(&read),
    ]
    .into_iter()
    .map(|r| BundleRow {
        bundle: r.bundle.to_string(),
        passed: r.passed,
        failed: r.failed(),
        failures: r
            .failures
            .iter()
            .map(|f| (f.case.clone(), f.expected.clone(), f.got.clone()))
            .collect(),
    })
    .collect()
}

#[cfg(target_arch = "wasm32")]
async fn fetch_and_run(state: RwSignal<Run>) {
    use std::collections::HashMap;
    let result: Result<Vec<BundleRow>, String> = async {
        let index = crate::web::get_bytes("/api/protocol/index").await?;
        let v = wasm_core::json::parse(&index).map_err(|e| e.to_string())?;
        let paths: Vec<String> = match v.pointer("/files") {
            Some(wasm_core::json::Value::Array(a)) => a
                .iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect(),
            _ => return Err("no file list".into()),
        };
        state.set(Run::Fetching(paths.len()));
        let mut files = HashMap::new();
        for p in paths {
            let bytes = crate::web::get_bytes(&format!("/api/protocol/files/{p}")).await?;
            files.insert(p, bytes);
        }
        state.set(Run::Running);
        // Let the browser paint "Running…" before the (synchronous) run.
        crate::web::yield_now().await;
        Ok(run_bundles(&files))
    }
    .await;
    state.set(match result {
        Ok(rows) => Run::Done(rows),
        Err(e) => Run::Failed(e),
    });
}

#[component]
pub fn Protocol() -> impl IntoView {
    let i18n = use_i18n();
    let state = RwSignal::new(Run::Idle);
    let server = RwSignal::new(None::<String>);
    #[cfg(target_arch = "wasm32")]
    leptos::task::spawn_local(async move {
        if let Ok(bytes) = crate::web::get_bytes("/api/core/conformance").await
            && let Ok(v) = wasm_core::json::parse(&bytes)
            && let Some(wasm_core::json::Value::Array(b)) = v.pointer("/bundles")
        {
            let parts: Vec<String> = b
                .iter()
                .map(|x| {
                    let s = |p: &str| {
                        x.pointer(p)
                            .map(|v| wasm_core::json::to_string(v).trim_matches('"').to_owned())
                            .unwrap_or_default()
                    };
                    format!("{} {}/{}", s("/bundle"), s("/passed"), s("/failed"))
                })
                .collect();
            server.set(Some(parts.join(" · ")));
        }
    });
    let run = move |_| {
        if matches!(state.get_untracked(), Run::Fetching(_) | Run::Running) {
            return;
        }
        state.set(Run::Fetching(0));
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(fetch_and_run(state));
    };
    let busy = move || matches!(state.get(), Run::Fetching(_) | Run::Running);
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, protocol.title)}</h1>
            <p class="intro">{t!(i18n, protocol.intro)}</p>
            <button type="button" id="run-bundles" class="primary" on:click=run disabled=busy>
                {t!(i18n, protocol.run)}
            </button>
            <div id="bundle-status" role="status" aria-live="polite">
                {move || match state.get() {
                    Run::Idle => ().into_any(),
                    Run::Fetching(n) => view! { <p class="state loading">{t!(i18n, protocol.fetching, n = move || n)}</p> }.into_any(),
                    Run::Running => view! { <p class="state loading">{t!(i18n, protocol.running)}</p> }.into_any(),
                    Run::Failed(e) => view! { <p class="state error" data-state="error">{t!(i18n, protocol.fetch_error, detail = move || e.clone())}</p> }.into_any(),
                    Run::Done(rows) => view! { <Results rows /> }.into_any(),
                }}
            </div>
            {move || server.get().map(|s| view! { <p class="hint" id="server-conformance">{t!(i18n, protocol.server, summary = move || s.clone())}</p> })}
        </section>
    }
}

#[component]
fn Results(rows: Vec<BundleRow>) -> impl IntoView {
    let i18n = use_i18n();
    let passed: usize = rows.iter().map(|r| r.passed).sum();
    let failed: usize = rows.iter().map(|r| r.failed).sum();
    let failures: Vec<(String, String, String)> = rows
        .iter()
        .flat_map(|r| {
            r.failures
                .iter()
                .map(move |(c, e, g)| (format!("{}/{c}", r.bundle), e.clone(), g.clone()))
        })
        .collect();
    view! {
        <p id="bundle-summary" class="summary" data-state=if failed == 0 { "ok" } else { "error" }>
            <span class="icon" aria-hidden="true">{if failed == 0 { "✓" } else { "✗" }}</span>" "
            {move || if failed == 0 {
                t!(i18n, protocol.all_pass, n = move || passed).into_any()
            } else if crate::locale::singular(crate::app::tag_of(i18n.get_locale()), failed) {
                t!(i18n, protocol.some_fail_single, n = move || failed).into_any()
            } else {
                t!(i18n, protocol.some_fail, n = move || failed).into_any()
            }}
        </p>
        <table class="bundles" id="bundle-table">
            <thead>
                <tr>
                    <th scope="col">{t!(i18n, protocol.bundle)}</th>
                    <th scope="col">{t!(i18n, protocol.passed)}</th>
                    <th scope="col">{t!(i18n, protocol.failed)}</th>
                    <th scope="col">{t!(i18n, protocol.result)}</th>
                </tr>
            </thead>
            <tbody>
                {rows.into_iter().map(|r| {
                    let total = r.passed + r.failed;
                    let (p, f) = (r.passed, r.failed);
                    view! {
                        <tr data-bundle=r.bundle.clone()>
                            <td><code>{r.bundle.clone()}</code></td>
                            <td>{p.to_string()}</td>
                            <td>{f.to_string()}</td>
                            <td>
                                <meter min="0" max=total.to_string() value=p.to_string()
                                    aria-labelledby=format!("bar-{}", r.bundle)>
                                </meter>
                                <span class="bar-text" id=format!("bar-{}", r.bundle)>
                                    {t!(i18n, protocol.bar, passed = move || p, total = move || total)}
                                </span>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <ul class="failures">
            {failures.into_iter().map(|(c, e, g)| view! {
                <li>{t!(i18n, protocol.failure, case = move || c.clone(), expected = move || e.clone(), got = move || g.clone())}</li>
            }).collect_view()}
        </ul>
    }
}
