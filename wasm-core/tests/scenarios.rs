//! Runs every behavioural scenario in `tests/scenarios/` against the in-process authority
//! (the same files `weave-console scenarios` runs) and prints the coverage line.

#![allow(clippy::unwrap_used)]
#![cfg(not(target_arch = "wasm32"))]

use wasm_core::authority::scenario::{Coverage, run_in_process};

#[test]
fn every_scenario_passes() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut coverage = Coverage::default();
    let mut failures = Vec::new();
    for f in &files {
        let r = run_in_process(&std::fs::read(f).unwrap());
        coverage.merge(&r.coverage);
        for fail in &r.failures {
            failures.push(format!("{}: {fail}", f.display()));
        }
    }
    println!("scenarios: {} files; {}", files.len(), coverage.line());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
