//! `weave-console bench core [--ms N]`: the protocol core's throughput on one core, natively
//! (`bench authority` is in `bench_authority.rs`).
//! The same workloads run in Chromium through `scripts/bench-browser.sh` for the ratio.
//! A benchmark, not a test: it prints figures and asserts nothing about time.

use std::process::ExitCode;
use std::time::Instant;

pub fn run(args: &[String]) -> ExitCode {
    let mut budget_ms = 2000.0;
    let mut target: Option<&str> = None;
    let mut it = args.iter();
    // `bench authority` takes its own flags: everything after its name is passed on.
    let mut rest: &[String] = &[];
    while let Some(a) = it.next() {
        match super::split_flag(a) {
            ("--ms", inline) => match super::flag_value("--ms", inline, &mut it)
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| *v > 0.0)
            {
                Some(v) => budget_ms = v,
                None => return crate::usage_error("--ms needs a positive number of milliseconds"),
            },
            (name, None) if !name.starts_with('-') && target.is_none() => {
                target = Some(a);
                if name == "authority" {
                    rest = it.as_slice();
                    break;
                }
            }
            _ => return crate::usage_error(&format!("bench: unknown argument `{a}`")),
        }
    }
    match target {
        Some("core") => core(budget_ms),
        Some("authority") => super::bench_authority::run(rest),
        Some(other) => crate::usage_error(&format!(
            "bench: unknown benchmark `{other}` (`core` or `authority`)"
        )),
        None => crate::usage_error("bench: name a benchmark (`bench core` or `bench authority`)"),
    }
}

fn core(budget_ms: f64) -> ExitCode {
    let start = Instant::now();
    let now_ms = move || start.elapsed().as_secs_f64() * 1000.0;
    println!("bench core: native, one thread, about {budget_ms} ms per workload");
    let mut ok = true;
    for m in wasm_core::bench::run_core(&now_ms, budget_ms) {
        match &m.error {
            None => println!(
                "  {:<40} {:>10.0} /s  ({} iterations in {:.0} ms)",
                m.name,
                m.per_second(),
                m.iterations,
                m.elapsed_ms
            ),
            Some(e) => {
                ok = false;
                println!("  {:<40} FAILED: {e}", m.name);
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
