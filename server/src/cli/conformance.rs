//! `weave-console conformance [--root DIR]`: runs the three official bundles through wasm-core
//! and prints `structural: 58 passed, 0 failed` (one line per bundle, then one line per failing
//! evaluation with its stage and wire code). Exits 1 on any failure, 2 on a usage error.

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use wasm_core::conformance::{run_admission, run_cryptography, run_structural};

/// Finds the protocol bundle: `--root`, then `MWP_PROTOCOL_DIR`, then `../shared/protocol`
/// (relative to the working directory, then to the workspace).
pub fn protocol_root(explicit: Option<&str>) -> Result<PathBuf, String> {
    if let Some(dir) = explicit {
        return check_root(PathBuf::from(dir));
    }
    if let Ok(dir) = std::env::var("MWP_PROTOCOL_DIR") {
        return check_root(PathBuf::from(dir));
    }
    let cwd_default = PathBuf::from("../shared/protocol");
    if cwd_default.join("conformance/manifest.json").is_file() {
        return Ok(cwd_default);
    }
    check_root(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/protocol"))
}

fn check_root(dir: PathBuf) -> Result<PathBuf, String> {
    if dir.join("conformance/manifest.json").is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "{} is not a MissionWeaveProtocol bundle (no conformance/manifest.json); \
             pass --root DIR or set MWP_PROTOCOL_DIR",
            dir.display()
        ))
    }
}

/// Reads a bundle-relative path, refusing anything that would leave the bundle.
pub fn reader(root: PathBuf) -> impl Fn(&str) -> Result<Vec<u8>, String> {
    move |rel: &str| {
        let p = Path::new(rel);
        if rel.is_empty() || p.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(format!("{rel}: path leaves the bundle"));
        }
        std::fs::read(root.join(p)).map_err(|e| format!("{rel}: {e}"))
    }
}

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
