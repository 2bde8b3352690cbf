//! `weave-console`: the MissionWeave console's server and command-line tool.
//!
//! Subcommands: `serve` (the default), `conformance`, `scenarios`, `bench`, `dev`, `help`
//! (`cli::Cli`).

mod agents;
mod artifacts;
mod authority;
mod cards;
mod cli;
mod console;
mod devclock;
mod devorg;
mod enrol;
mod gateway;
mod guard;
mod live_registry;
mod org;
mod proxy;
mod registry_api;
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

fn main() -> ExitCode {
    use clap::Parser;
    match cli::Cli::parse().into_command() {
        cli::Command::Serve(a) => cli::serve::run(a),
        cli::Command::Conformance(a) => cli::conformance::run(&a),
        cli::Command::Scenarios(a) => cli::scenarios::run(&a),
        cli::Command::Bench(b) => cli::bench::run(b),
        cli::Command::Dev(d) => cli::dev::run(d),
        cli::Command::Org(o) => cli::org::run(o),
    }
}
