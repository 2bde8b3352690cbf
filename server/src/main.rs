//! `weave-console`: the MissionWeave console's server and command-line tool.
//!
//! Subcommands: `serve` (the default), `conformance`, `bench`, `help`.
//! Arguments are parsed by hand to keep the build lean.

mod authority;
mod cli;
mod devorg;
mod runtime;
mod store;
mod wire;

#[cfg(test)]
mod http_tests;

use std::process::ExitCode;

/// mimalloc: the authority allocates many short-lived JSON values per Command; the system
/// allocator took about an eighth of its CPU time (perf).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
weave-console: MissionWeave console and embedded protocol authority (MissionWeaveProtocol 0.1)

Usage:
  weave-console [serve] [--addr HOST:PORT] [--public DIR]
  weave-console conformance [--root DIR]
  weave-console scenarios [--dir DIR] [--verbose]
  weave-console bench core [--ms N]
  weave-console bench authority [--sizes N,N,...] [--measure N] [--batch N] [--threads N]
  weave-console help

Subcommands:
  serve        Serve the console (the default when no subcommand is given).
                 --addr HOST:PORT  listen address (default 127.0.0.1:8080, env WEAVE_ADDR)
                 --public DIR      static files to serve (default: the workspace's public/)
  conformance  Run the protocol core against the official conformance vectors.
                 --root DIR        protocol bundle (default: env MWP_PROTOCOL_DIR, else ../shared/protocol)
  scenarios    Run the behavioural scenarios (signed Commands and expected Events or wire
               error codes) against the embedded authority, with a coverage line.
                 --dir DIR         scenario files (default: wasm-core/tests/scenarios)
  bench        Run benchmarks; they print figures and assert nothing.
                 core       the protocol core's workloads on one core (--ms: time per workload)
                 authority  accepted durable signed Commands per second at each history
                            size (default 1000,10000,100000,1000000 Events), against Ed25519
                            verifications per second on one core measured in the same run;
                            rows for one thread (pinned to one core), then for --threads N
                            (default: every core) verifying and signing;
                            --measure: Commands per row (default 4000), --batch: Commands per
                            transaction (default 64)
  help         Print this help.

Options:
  -h, --help     Print this help.
  -V, --version  Print the version.
";

/// Exit code for usage errors (unknown subcommand, unknown or malformed flag).
pub(crate) const EXIT_USAGE: u8 = 2;

/// Prints `msg` and a pointer to the help on stderr and returns the usage exit code.
pub(crate) fn usage_error(msg: &str) -> ExitCode {
    eprintln!("weave-console: {msg}");
    eprintln!("Run `weave-console help` for usage.");
    ExitCode::from(EXIT_USAGE)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, rest) = match args.split_first() {
        None => ("serve", &args[..]),
        // Flags without a subcommand belong to the default subcommand, `serve`
        // (except the global -h/-V, handled below).
        Some((first, _))
            if first.starts_with('-')
                && !matches!(first.as_str(), "-h" | "--help" | "-V" | "--version") =>
        {
            ("serve", &args[..])
        }
        Some((first, rest)) => (first.as_str(), rest),
    };
    match cmd {
        "serve" => cli::serve::run(rest),
        "conformance" => cli::conformance::run(rest),
        "bench" => cli::bench::run(rest),
        "scenarios" => cli::scenarios::run(rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        "-V" | "--version" => {
            println!("weave-console {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        other => usage_error(&format!("unknown subcommand `{other}`")),
    }
}
