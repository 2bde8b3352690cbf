//! `weave-console scenarios [--dir DIR]`: runs the behavioural conformance suite (scenario
//! files of signed-Command steps) against the embedded authority and prints
//! `scenarios: N passed, M failed` (steps) and the coverage line.

use std::path::PathBuf;
use std::process::ExitCode;
use wasm_core::authority::scenario::{Coverage, run_in_process};

fn default_dir() -> PathBuf {
    let local = PathBuf::from("wasm-core/tests/scenarios");
    if local.is_dir() {
        local
    } else {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../wasm-core/tests/scenarios"
        ))
    }
}

/// `weave-console scenarios`.
#[derive(Debug, clap::Args)]
pub struct ScenariosArgs {
    /// The scenario files (default: wasm-core/tests/scenarios).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// List every scenario and what is not covered yet.
    #[arg(long, short)]
    pub verbose: bool,
}

pub fn run(args: &ScenariosArgs) -> ExitCode {
    let verbose = args.verbose;
    let dir = args.dir.clone().unwrap_or_else(default_dir);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(e) => {
            eprintln!(
                "weave-console scenarios: cannot read {}: {e}",
                dir.display()
            );
            return ExitCode::from(2);
        }
    };
    files.sort();
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut coverage = Coverage::default();
    for f in &files {
        let report = match std::fs::read(f) {
            Ok(bytes) => run_in_process(&bytes),
            Err(e) => {
                eprintln!("{}: {e}", f.display());
                failed += 1;
                continue;
            }
        };
        passed += report.passed_steps();
        failed += report.failed_steps.len().max(usize::from(
            report.steps == 0 && !report.failures.is_empty(),
        ));
        coverage.merge(&report.coverage);
        if verbose || !report.failures.is_empty() {
            println!(
                "  {} ({}): {} of {} steps passed",
                f.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                report.name,
                report.passed_steps(),
                report.steps
            );
        }
        for fail in &report.failures {
            println!("    FAIL {fail}");
        }
    }
    println!(
        "scenarios: {passed} passed, {failed} failed ({} files)",
        files.len()
    );
    println!("{}", coverage.line());
    if verbose {
        for m in coverage.missing() {
            println!("  not covered: {m}");
        }
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
