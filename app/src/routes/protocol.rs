//! Protocol (`/protocol`): the official MissionWeaveProtocol 0.1 bundles run in this browser, on
//! request, by the same WebAssembly core (`wasm-core`) that verifies every Event, with the
//! counts per bundle (structural 58, cryptography 62, admission 30), beside the server's own
//! native run. The bundle files are fetched from the server, which serves `MWP_PROTOCOL_DIR`
//! read-only (`/api/protocol/…`): embedding them would add their 519 KB (55 KB gzip) to every
//! page load for a check most visits never run. For the same reason the runners are not in the
//! console's module either: they are the `protocol-runner` crate, its own module
//! (`pkg/<hash>/runner_bg.wasm`; 36 KB less shipped on every visit, docs/console.md "Sizes"),
//! loaded in a module worker (`runner-worker.js`) only when the person asks for the run.

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
    LoadingRunner,
    Fetching(usize),
    Running,
    Done(Vec<BundleRow>),
    /// The bundle files could not be fetched.
    FetchFailed(String),
    /// The runner's module did not load, or it stopped without a report.
    RunnerFailed(String),
}

/// Frames the bundle files for the runner (`protocol_runner::decode_files` reads it back): per
/// file, the path's length (u32, little-endian), the path, the content's length, the content;
/// paths in sorted order. Bundle files are far below 4 GiB; a larger one is refused.
pub fn encode_files(files: &std::collections::HashMap<String, Vec<u8>>) -> Result<Vec<u8>, String> {
    let mut paths: Vec<&String> = files.keys().collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        for part in [p.as_bytes(), files[p].as_slice()] {
            let len = u32::try_from(part.len()).map_err(|_| format!("{p}: too large"))?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    Ok(out)
}

/// Reads the runner's JSON answer (`protocol_runner::report_json`, or `{"error"}`).
pub fn parse_report(text: &str) -> Result<Vec<BundleRow>, String> {
    use wasm_core::json::Value;
    let v = wasm_core::json::parse(text.as_bytes()).map_err(|e| e.to_string())?;
    if let Some(e) = v.pointer("/error").and_then(Value::as_str) {
        return Err(e.to_owned());
    }
    let Some(Value::Array(bundles)) = v.pointer("/bundles") else {
        return Err("the runner's answer has no bundles".into());
    };
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    bundles
        .iter()
        .map(|b| {
            let bundle = text(b, "/bundle").ok_or("a bundle without a name")?;
            let passed = match b.pointer("/passed") {
                Some(Value::Number(n)) => n.as_safe_u64().and_then(|n| usize::try_from(n).ok()),
                _ => None,
            }
            .ok_or("a bundle without a passed count")?;
            let Some(Value::Array(list)) = b.pointer("/failures") else {
                return Err("a bundle without its failures".into());
            };
            let failures = list
                .iter()
                .map(|f| Some((text(f, "/case")?, text(f, "/expected")?, text(f, "/got")?)))
                .collect::<Option<Vec<_>>>()
                .ok_or("an ill-formed failure")?;
            Ok(BundleRow {
                bundle,
                passed,
                failed: failures.len(),
                failures,
            })
        })
        .collect()
}

/// Runs the three official bundles over files already in memory, natively: the same framing,
/// runner and answer as the browser's worker (the console's tests use it).
#[cfg(not(target_arch = "wasm32"))]
pub fn run_bundles(files: &std::collections::HashMap<String, Vec<u8>>) -> Vec<BundleRow> {
    let framed = encode_files(files).unwrap_or_default();
    parse_report(&protocol_runner::run_bundles(&framed)).unwrap_or_default()
}

#[cfg(target_arch = "wasm32")]
async fn fetch_and_run(state: RwSignal<Run>) {
    use std::collections::HashMap;
    let runner = match crate::runner::Runner::load().await {
        Ok(r) => r,
        Err(e) => return state.set(Run::RunnerFailed(e)),
    };
    let files: Result<HashMap<String, Vec<u8>>, String> = async {
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
        Ok(files)
    }
    .await;
    let files = match files {
        Ok(f) => f,
        Err(e) => return state.set(Run::FetchFailed(e)),
    };
    state.set(Run::Running);
    let report = match encode_files(&files) {
        Ok(framed) => runner.run(framed).await,
        Err(e) => Err(e),
    };
    state.set(match report.and_then(|text| parse_report(&text)) {
        Ok(rows) => Run::Done(rows),
        Err(e) => Run::RunnerFailed(e),
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
        if matches!(
            state.get_untracked(),
            Run::LoadingRunner | Run::Fetching(_) | Run::Running
        ) {
            return;
        }
        state.set(Run::LoadingRunner);
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(fetch_and_run(state));
    };
    let busy = move || {
        matches!(
            state.get(),
            Run::LoadingRunner | Run::Fetching(_) | Run::Running
        )
    };
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
                    Run::LoadingRunner => view! { <p class="state loading" data-state="loading-runner">{t!(i18n, protocol.loading_runner)}</p> }.into_any(),
                    Run::Running => view! { <p class="state loading">{t!(i18n, protocol.running)}</p> }.into_any(),
                    Run::FetchFailed(e) => view! { <p class="state error" data-state="error">{t!(i18n, protocol.fetch_error, detail = move || e.clone())}</p> }.into_any(),
                    Run::RunnerFailed(e) => view! { <p class="state error" data-state="runner-error">{t!(i18n, protocol.runner_error, detail = move || e.clone())}</p> }.into_any(),
                    Run::Done(rows) => view! { <Results rows /> }.into_any(),
                }}
            </div>
            {move || server.get().map(|s| view! { <p class="hint" id="server-conformance">{t!(i18n, protocol.server, summary = move || s.clone())}</p> })}
            <crate::components::audit_verify::AuditVerify />
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
            } else if crate::locale::singular(crate::locale::tag_of(i18n.get_locale()), failed) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn the_runner_reads_the_framing_it_is_sent() {
        let mut files = HashMap::new();
        files.insert("conformance/x.json".to_string(), b"{\"a\":1}".to_vec());
        files.insert("schemas/e".to_string(), Vec::new());
        let framed = encode_files(&files).expect("framed");
        assert_eq!(protocol_runner::decode_files(&framed), Ok(files));
    }

    #[test]
    fn a_report_is_read_and_a_broken_one_refused() {
        let rows = parse_report(
            r#"{"bundles":[{"bundle":"structural","passed":57,"failures":[{"case":"c","expected":"e","got":"g"}]}]}"#,
        )
        .expect("report");
        assert_eq!(
            rows,
            [BundleRow {
                bundle: "structural".into(),
                passed: 57,
                failed: 1,
                failures: vec![("c".into(), "e".into(), "g".into())],
            }]
        );
        assert_eq!(
            parse_report(r#"{"error":"truncated file framing"}"#),
            Err("truncated file framing".to_string())
        );
        for broken in [
            "",
            "{}",
            r#"{"bundles":[{"passed":1,"failures":[]}]}"#,
            r#"{"bundles":[{"bundle":"x","passed":-1,"failures":[]}]}"#,
            r#"{"bundles":[{"bundle":"x","passed":1}]}"#,
            r#"{"bundles":[{"bundle":"x","passed":1,"failures":[{"case":"c"}]}]}"#,
        ] {
            assert!(parse_report(broken).is_err(), "{broken}");
        }
    }
}
