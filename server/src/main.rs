//! `weave-console`: the MissionWeave console's server and command-line tool.
//!
//! Subcommands: `serve` (the default), `conformance`, `scenarios`, `bench`, `dev`, `org`, `export`,
//! `verify-export`, `help`
//! (`cli::Cli`).

use std::process::ExitCode;

/// mimalloc: the authority allocates many short-lived JSON values per Command; the system
/// allocator took about an eighth of its CPU time (perf).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use server::cli;

fn main() -> ExitCode {
    use clap::Parser;
    match cli::Cli::parse().into_command() {
        cli::Command::Serve(a) => cli::serve::run(*a),
        cli::Command::Conformance(a) => cli::conformance::run(&a),
        cli::Command::Scenarios(a) => cli::scenarios::run(&a),
        cli::Command::Bench(b) => cli::bench::run(b),
        cli::Command::Dev(d) => cli::dev::run(d),
        cli::Command::Org(o) => cli::org::run(o),
        cli::Command::Backup(b) => cli::backup::run_backup(&b),
        cli::Command::Restore(r) => cli::backup::run_restore(&r),
        cli::Command::Export(a) => cli::audit::run_export(&a),
        cli::Command::VerifyExport(a) => cli::audit::run_verify(&a),
    }
}
