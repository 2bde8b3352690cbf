//! The core benchmark in Chromium (not a test of speed: it prints figures and asserts only that
//! the workloads ran). Run by `scripts/bench-browser.sh`, which also runs the native bench and
//! prints the ratio.

#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test::wasm_bindgen_test]
fn bench_core_in_browser() {
    let now = || js_sys::Date::now();
    let budget: f64 = option_env!("BENCH_MS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000.0);
    for m in simulation::bench::run_core(&now, budget) {
        assert!(m.error.is_none(), "{}: {:?}", m.name, m.error);
        wasm_bindgen_test::console_log!(
            "BENCH wasm {} {:.0} /s ({} iterations in {:.0} ms)",
            m.name,
            m.per_second(),
            m.iterations,
            m.elapsed_ms
        );
    }
}
