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
        .args(["--sizes", "60,120", "--measure", "40", "--windows", "3"])
        .args(["--low-load-agents", "2", "--low-load-measure", "20"])
        .args([
            "--subscribers",
            "5",
            "--stalled",
            "2",
            "--fanout-commands",
            "2",
        ])
        .args(["--idle-sockets", "20", "--slowloris", "4"])
        .args(["--slowloris-interval-ms", "100", "--abuse-measure", "40"])
        .args(["--abuse-settle-ms", "300"])
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
        "targets, row 1 (2 closed loops, history size 1):",
        "targets, row 2 (2 closed loops, history size 2):",
        "targets, row 3 (6 closed loops, history size 2):",
        "6 closed loops (2 Agents × 3)",
        "best row under the p99 bound: ",
        "memory: server RSS with 2 stalled subscribers minus without",
        "load average at the end",
        "abuse row (2 closed loops",
        "with 20 idle sessions (TLS + HELLO, silent",
        "and 4 slowloris connections",
    ] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    // Three rows in each pass (two history sizes, then 3 in flight per Agent at the last),
    // and the low-load row in the measured pass.
    assert_eq!(text.matches("accepted (0 refused)").count(), 7, "{text}");
    assert_eq!(
        text.matches("closed loops (2 Agents × 1)").count(),
        4,
        "{text}"
    );
    // Each row of the measured pass is compared with both in-process runs; no row is printed
    // against a reference that did not run.
    assert_eq!(text.matches("(the mean of ").count(), 3, "{text}");
    assert!(!text.contains("(one run)"), "{text}");
    // Every row, the abuse row and both references say what the other processes took
    // meanwhile.
    assert_eq!(text.matches("other processes ").count(), 9, "{text}");
    assert!(!text.contains("other processes not measured"), "{text}");
}
