//! `weave-console conformance [--root DIR]`: runs the three official bundles through wasm-core
//! and prints `structural: 58 passed, 0 failed` (one line per bundle, then one line per failing
//! evaluation with its stage and wire code). Exits 1 on any failure, 2 on a usage error.

use crate::bundle::{protocol_root, reader};
use std::process::ExitCode;
use wasm_core::conformance::{run_admission, run_cryptography, run_structural};

/// `weave-console conformance`.
#[derive(Debug, clap::Args)]
pub struct ConformanceArgs {
    /// The protocol bundle (default: env MWP_PROTOCOL_DIR, else ../shared/protocol).
    #[arg(long, value_name = "DIR")]
    pub root: Option<String>,
}

pub fn run(args: &ConformanceArgs) -> ExitCode {
    let root = match protocol_root(args.root.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("weave-console conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let read = reader(root);
    let reports = [
        run_structural(&read),
        run_cryptography(&read),
        run_admission(&read),
    ];
    for r in &reports {
        println!("{r}");
    }
    if reports.iter().all(|r| r.ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
