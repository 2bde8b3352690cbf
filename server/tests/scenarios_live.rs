//! `weave-console scenarios --url`: the whole behavioural suite against a spawned server over
//! the binding (TLS, the development certificate from the principals file), with the same
//! `scenarios:` and `coverage:` lines as in process; a second run against the same server
//! passes too (fresh Principals, Groups and Missions per run). And the refusals: a server
//! without the development clock, a principals file of another server, `--dev-clock` off
//! loopback.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::{BIN, Server};

fn temp(name: &str) -> PathBuf {
    support::temp("sclive", name)
}

/// `serve --tls` on a free loopback port with `extra` flags.
fn serve(data: &Path, extra: &[&str]) -> Server {
    support::serve(|c| {
        c.args(["--addr", "127.0.0.1:0", "--tls", "--data"])
            .arg(data)
            .args(extra);
    })
}

fn scenario_file(data: &Path, out: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(["dev", "principals", "--scenarios", "--data"])
        .arg(data)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// The two summary lines of a `scenarios` run.
fn summary(out: &std::process::Output) -> (String, String) {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |p: &str| {
        text.lines()
            .find(|l| l.starts_with(p))
            .unwrap_or_else(|| panic!("no {p} line in:\n{text}"))
            .to_owned()
    };
    (line("scenarios:"), line("coverage:"))
}

#[test]
fn the_whole_suite_passes_over_the_binding_as_in_process() {
    let dir = temp("suite");
    let data = dir.join("data");
    let server = serve(&data, &["--dev-clock"]);
    let file = dir.join("scenario-principals.json");
    let out = scenario_file(&data, &file);
    assert!(out.status.success(), "{out:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the file holds private keys");
    }

    let local = Command::new(BIN).arg("scenarios").output().unwrap();
    assert!(local.status.success());
    let (local_steps, local_coverage) = summary(&local);
    assert!(local_steps.contains(" 0 failed"), "{local_steps}");

    let url = format!("wss://{}/ws", server.addr);
    for run in 1..=2 {
        let live = Command::new(BIN)
            .args(["scenarios", "--url", &url, "--principals"])
            .arg(&file)
            .output()
            .unwrap();
        let (steps, coverage) = summary(&live);
        println!("run {run} over {url}: {steps}; {coverage}");
        assert_eq!(
            (steps.as_str(), coverage.as_str()),
            (local_steps.as_str(), local_coverage.as_str()),
            "run {run}:\n{}",
            String::from_utf8_lossy(&live.stdout)
        );
        assert!(live.status.success(), "run {run}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn refusals_name_what_is_missing() {
    let dir = temp("refusals");
    // A server without the development clock has no scenario pool either.
    let plain = dir.join("plain");
    let server = serve(&plain, &[]);
    let out = scenario_file(&plain, &dir.join("none.json"));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no scenario pool"),
        "{out:?}"
    );
    // A principals file of another server: its keys are not served here.
    let other = dir.join("other");
    let other_server = serve(&other, &["--dev-clock"]);
    let file = dir.join("other.json");
    assert!(scenario_file(&other, &file).status.success());
    let cert = plain.join("tls/dev-cert.pem");
    let out = Command::new(BIN)
        .args([
            "scenarios",
            "--url",
            &format!("wss://{}/ws", server.addr),
            "--principals",
        ])
        .arg(&file)
        .arg("--ca")
        .arg(&cert)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not belong to this server"),
        "{out:?}"
    );
    // --url needs --principals.
    let out = Command::new(BIN)
        .args(["scenarios", "--url", "wss://127.0.0.1:9/ws"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // The development clock only on loopback.
    let out = Command::new(BIN)
        .args(["serve", "--dev-clock", "--addr", "0.0.0.0:0", "--data"])
        .arg(dir.join("public-clock"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("loopback addresses only"),
        "{out:?}"
    );
    drop(other_server);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
