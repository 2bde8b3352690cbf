//! Runs every behavioural scenario in `tests/scenarios/` against the in-process authority
//! (the same files `weave-console scenarios` runs) and prints the coverage line.

#![allow(clippy::unwrap_used)]
#![cfg(not(target_arch = "wasm32"))]

use simulation::harness::{Envelope, Harness};
use simulation::scenario::{Answer, Coverage, Target, run, run_in_process};
use wasm_core::authority::Micros;
use wasm_core::json::Object;

/// The scenario files, in name order.
fn scenario_files() -> Vec<std::path::PathBuf> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_scenario_passes() {
    let files = scenario_files();
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

/// A target that owns its world and is reached only through the `Target` trait, as a live
/// server will be: it keeps its own copy of every byte it was sent, and checks that each
/// Command it receives is exactly one it signed.
struct Remote {
    world: Harness,
    signed: Vec<Vec<u8>>,
}

impl Target for Remote {
    fn submit(&mut self, bytes: &[u8], now: Micros) -> Answer {
        assert!(
            self.signed.iter().any(|b| b == bytes),
            "the runner sent bytes this target did not sign"
        );
        Target::submit(&mut self.world, bytes, now)
    }
    fn principal_id(&self, name: &str) -> Option<String> {
        Target::principal_id(&self.world, name)
    }
    fn principal_names(&self) -> Vec<String> {
        Target::principal_names(&self.world)
    }
    fn command(
        &mut self,
        name: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Vec<u8> {
        let bytes = Target::command(&mut self.world, name, kind, env, payload, now);
        self.signed.push(bytes.clone());
        bytes
    }
    fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), String> {
        Target::bootstrap_agents(&mut self.world, agents, now)
    }
}

#[test]
fn the_runner_drives_any_target_through_the_trait() {
    let files = scenario_files();
    let text = std::fs::read(&files[0]).unwrap();
    let local = run_in_process(&text);
    let mut opened = 0;
    let remote = run(&text, |principals| {
        Ok(Remote {
            world: Harness::new(principals),
            signed: Vec::new(),
        })
    });
    assert!(remote.failures.is_empty(), "{:?}", remote.failures);
    assert_eq!(remote.steps, local.steps);
    assert_eq!(remote.passed_steps(), local.passed_steps());
    assert_eq!(remote.coverage.line(), local.coverage.line());
    // The target could not be opened: one clear failure, no steps run.
    let refused = run(&text, |_| -> Result<Remote, String> {
        opened += 1;
        Err("no such server".into())
    });
    assert_eq!(opened, 1);
    assert_eq!(refused.steps, 0);
    assert_eq!(refused.failures, ["target: no such server"]);
}
