//! `weave-console bench core [--ms N]`: the protocol core's throughput on one core, natively
//! (`bench authority` is in `bench_authority.rs`).
//! The same workloads run in Chromium through `scripts/bench-browser.sh` for the ratio.
//! A benchmark, not a test: it prints figures and asserts nothing about time.

use std::process::ExitCode;
use std::time::Instant;

/// `weave-console bench …`.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// The protocol core's workloads on one core (six-stage verification, JCS, Ed25519).
    Core(CoreArgs),
    /// Accepted durable signed Commands per second at each history size, against Ed25519
    /// verifications per second on one core measured in the same run: rows for one thread
    /// (pinned to one core), then for --threads N verifying and signing.
    Authority(super::bench_authority::AuthorityArgs),
    /// The binding end to end: N Agents over loopback TLS in closed loops over G Groups
    /// (accepted Commands/s, p50/p99 latency, as history grows), the server's memory while
    /// subscribers stall, and the fan-out latency to 1,000 sockets; `bench authority` in the
    /// same run for comparison.
    Gateway(super::bench_gateway::GatewayArgs),
    /// Restart time at a large history: the whole log replayed, against the newest snapshot
    /// of the State and the Events after it (encode, size, decode, replay).
    Restart(super::bench_restart::RestartArgs),
}

#[derive(Debug, clap::Args)]
pub struct CoreArgs {
    /// Milliseconds per workload.
    #[arg(long, default_value_t = 2000.0, value_parser = positive_ms)]
    pub ms: f64,
}

fn positive_ms(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err("needs a positive number of milliseconds".into()),
    }
}

pub fn run(command: BenchCommand) -> ExitCode {
    match command {
        BenchCommand::Core(a) => core(a.ms),
        BenchCommand::Authority(a) => super::bench_authority::run(&a),
        // Over PostgreSQL the gateway bench runs a cluster beside the single node.
        BenchCommand::Gateway(a) => match &a.store {
            Some(store) => super::bench_cluster::run(&a, store),
            None => super::bench_gateway::run(&a),
        },
        BenchCommand::Restart(a) => super::bench_restart::run(&a),
    }
}

fn core(budget_ms: f64) -> ExitCode {
    let start = Instant::now();
    let now_ms = move || start.elapsed().as_secs_f64() * 1000.0;
    println!("bench core: native, one thread, about {budget_ms} ms per workload");
    let mut ok = true;
    for m in simulation::bench::run_core(&now_ms, budget_ms) {
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
