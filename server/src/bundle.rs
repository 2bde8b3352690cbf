//! The protocol bundle on disk (`../shared/protocol`, or `MWP_PROTOCOL_DIR`): where it is, a
//! reader that cannot leave it, and the conformance summary the console's front page shows.

use std::path::{Component, Path, PathBuf};

/// Said by `GET /api/core/conformance` when the bundle is missing; the reason (which names
/// paths) goes to the log.
const BUNDLE_MISSING: &str = "set MWP_PROTOCOL_DIR on the server (details in its log)";

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

/// The protocol core's conformance, run once at start-up and shown on the console's front page:
/// `{"bundles": [{"bundle", "passed", "failed", "failures": [{case, expected, got}]}]}`, or
/// `{"error": …}` when the bundle cannot be found. No path reaches it: the bundle's location
/// (and why it was not found) goes to the log, and any mention of it in a failure is replaced.
pub fn conformance_json(root: Result<PathBuf, String>) -> String {
    use wasm_core::json::{Object, Value};
    let mut out = Object::new();
    match root {
        Err(e) => {
            tracing::warn!(reason = %e, "no protocol bundle: conformance not run");
            out.insert("error", Value::string(BUNDLE_MISSING));
        }
        Ok(root) => {
            tracing::info!(bundle = %root.display(), "running the protocol core's conformance");
            let hide = |text: &str| hide_paths(text, &root);
            let read = reader(root.clone());
            let reports = [
                wasm_core::conformance::run_structural(&read),
                wasm_core::conformance::run_cryptography(&read),
                wasm_core::conformance::run_admission(&read),
            ];
            let bundles = reports
                .iter()
                .map(|r| {
                    let mut b = Object::new();
                    b.insert("bundle", Value::string(r.bundle));
                    b.insert("passed", Value::from(r.passed as u64));
                    b.insert("failed", Value::from(r.failed() as u64));
                    let failures = r
                        .failures
                        .iter()
                        .map(|f| {
                            let mut o = Object::new();
                            o.insert("case", Value::string(hide(&f.case)));
                            o.insert("expected", Value::string(hide(&f.expected)));
                            o.insert("got", Value::string(hide(&f.got)));
                            Value::Object(o)
                        })
                        .collect();
                    b.insert("failures", Value::Array(failures));
                    Value::Object(b)
                })
                .collect();
            out.insert("bundles", Value::Array(bundles));
        }
    }
    wasm_core::json::to_string(&Value::Object(out))
}

/// `text` with the bundle's location (as given and absolute) replaced by `<bundle>`.
fn hide_paths(text: &str, root: &Path) -> String {
    let mut out = text.to_owned();
    let absolute = root.canonicalize().ok();
    for p in [Some(root), absolute.as_deref()].into_iter().flatten() {
        let p = p.display().to_string();
        if !p.is_empty() && p != "." {
            out = out.replace(&p, "<bundle>");
        }
    }
    out
}
