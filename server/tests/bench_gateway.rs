//! `weave-console bench gateway` end to end at a tiny size: it starts its servers, runs the
//! rows, the stalled subscribers and the fan-out, and prints every figure. A benchmark asserts
//! nothing about time; this only checks that it runs and reports what it promises.

#![allow(clippy::unwrap_used)]

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_weave-console");

#[test]
fn a_tiny_run_prints_every_figure() {
    let out = Command::new(BIN)
        .args(["bench", "gateway", "--agents", "2", "--groups", "1"])
        .args(["--sizes", "60,120", "--measure", "40"])
        .args(["--low-load-agents", "2", "--low-load-measure", "20"])
        .args([
            "--subscribers",
            "5",
            "--stalled",
            "2",
            "--fanout-commands",
            "2",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "baseline pass",
        "measured pass",
        "in process before the passes (bench authority at the same sizes",
        "in process after the passes (bench authority at the same sizes",
        "inside the timed windows, presigning excluded",
        "% of ",
        "40 accepted (0 refused)",
        "CPU per Command: server",
        "fan-out of one Command to 5 sockets",
        "low load in process (2 closed loops",
        "low load over the binding (2 Agents",
        "20 accepted (0 refused)",
        "targets, low load (2 Agents):",
        "targets, row 1:",
        "targets, row 2:",
        "memory: server RSS with 2 stalled subscribers minus without",
        "load average at the end",
    ] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    // Two rows in each pass, and the low-load row in the measured pass.
    assert_eq!(text.matches("accepted (0 refused)").count(), 5, "{text}");
    // Each row of the measured pass is compared with both in-process runs; no row is printed
    // against a reference that did not run.
    assert_eq!(text.matches("(the mean of ").count(), 2, "{text}");
    assert!(!text.contains("(one run)"), "{text}");
    // Every row and both references say what the other processes took meanwhile.
    assert_eq!(text.matches("other processes ").count(), 6, "{text}");
    assert!(!text.contains("other processes not measured"), "{text}");
}
