//! Runners for the three official bundles (§22, checklist V-2, V-3), sans-IO: the caller passes
//! a function that reads a bundle file by its path relative to the bundle root. The server's
//! `weave-console conformance` reads from disk; the browser tests read an embedded copy.

mod admission;
mod cryptography;
mod structural;

pub use admission::run_admission;
pub use cryptography::run_cryptography;
pub use structural::run_structural;

use crate::encoding::sha256_hash;
use crate::json::{self, Value};
use std::fmt;

/// Reads a bundle file by its bundle-relative path (e.g. `cryptography/manifest.json`).
pub type ReadFile<'a> = &'a dyn Fn(&str) -> Result<Vec<u8>, String>;

/// Why an evaluation did not give its expected outcome; the text is the report's `got`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseError {
    /// A bundle file that cannot be read (the reader's own message, which names the path).
    Read(String),
    /// A bundle file that is not JSON.
    Parse { path: String, reason: String },
    /// A fixture that is malformed or names what this runner does not know (a profile, a
    /// status, a mode); the bundle, not the implementation, is at fault.
    Fixture(String),
    /// The implementation's outcome differs from the expected one: what it gave instead.
    Mismatch(String),
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaseError::Read(why) | CaseError::Fixture(why) | CaseError::Mismatch(why) => {
                f.write_str(why)
            }
            CaseError::Parse { path, reason } => write!(f, "{path}: {reason}"),
        }
    }
}

impl std::error::Error for CaseError {}

/// One failed evaluation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Case and evaluation names.
    pub case: String,
    pub expected: String,
    pub got: String,
}

/// The outcome of one bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BundleReport {
    pub bundle: &'static str,
    pub passed: usize,
    pub failures: Vec<Failure>,
}

impl BundleReport {
    fn new(bundle: &'static str) -> BundleReport {
        BundleReport {
            bundle,
            ..BundleReport::default()
        }
    }

    fn record(&mut self, case: String, expected: String, got: Result<(), CaseError>) {
        match got {
            Ok(()) => self.passed += 1,
            Err(got) => self.failures.push(Failure {
                case,
                expected,
                got: got.to_string(),
            }),
        }
    }

    /// A failure of the bundle itself (digest, artifact hash, unreadable manifest).
    fn integrity(&mut self, what: String) {
        self.failures.push(Failure {
            case: "bundle integrity".into(),
            expected: "pinned digests".into(),
            got: what,
        });
    }

    pub fn failed(&self) -> usize {
        self.failures.len()
    }

    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }
}

impl fmt::Display for BundleReport {
    /// `structural: 58 passed, 0 failed`, then one indented line per failure.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} passed, {} failed",
            self.bundle,
            self.passed,
            self.failed()
        )?;
        for fail in &self.failures {
            write!(
                f,
                "\n  FAIL {}: expected {}, got {}",
                fail.case, fail.expected, fail.got
            )?;
        }
        Ok(())
    }
}

fn read_json(read: ReadFile, path: &str) -> Result<Value, CaseError> {
    let bytes = read(path).map_err(CaseError::Read)?;
    json::parse(&bytes).map_err(|e| CaseError::Parse {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// Verifies `artifactDigest` (JCS of the manifest without that member, SHA-256) and every
/// declared artifact's exact bytes (V-3).
fn check_integrity(read: ReadFile, manifest: &Value, report: &mut BundleReport) {
    let declared = manifest
        .pointer("/artifactDigest")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match json::canonicalize_without(manifest, "artifactDigest") {
        Ok(bytes) => {
            let actual = sha256_hash(&bytes);
            if actual != declared {
                report.integrity(format!(
                    "artifactDigest {declared} but the manifest hashes to {actual}"
                ));
            }
        }
        Err(e) => report.integrity(format!("manifest cannot be canonicalized: {e}")),
    }
    let Some(Value::Array(artifacts)) = manifest.pointer("/artifacts") else {
        report.integrity("manifest has no artifacts list".into());
        return;
    };
    for a in artifacts {
        let path = a
            .pointer("/path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let want = a
            .pointer("/sha256")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let want_len = a.pointer("/byteLength").and_then(|v| match v {
            Value::Number(n) => n.as_safe_u64(),
            _ => None,
        });
        match read(path) {
            Ok(bytes) => {
                let got = sha256_hash(&bytes);
                if got != want {
                    report.integrity(format!("{path}: sha256 {got}, manifest says {want}"));
                } else if want_len.is_some_and(|n| n != bytes.len() as u64) {
                    report.integrity(format!(
                        "{path}: {} bytes, manifest says {want_len:?}",
                        bytes.len()
                    ));
                }
            }
            Err(e) => report.integrity(format!("{path}: {e}")),
        }
    }
}

fn str_of<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

/// The bundle, and the JSON Schema Test Suite's format files, embedded at build time (feature
/// `embedded-bundle`), for runs without a file system such as the browser tests.
#[cfg(feature = "embedded-bundle")]
pub mod embedded {
    include!(concat!(env!("OUT_DIR"), "/bundle.rs"));

    /// Reads an embedded bundle file by its bundle-relative path.
    pub fn read(path: &str) -> Result<Vec<u8>, String> {
        FILES
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, b)| b.to_vec())
            .ok_or_else(|| format!("{path}: not in the embedded bundle"))
    }

    /// Reads an embedded JSON Schema Test Suite file by its suite-relative path, e.g.
    /// `draft2020-12/optional/format/uri.json` (for `tests/formats.rs` in the browser).
    pub fn read_format_suite(path: &str) -> Result<Vec<u8>, String> {
        FORMAT_SUITE_FILES
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, b)| b.to_vec())
            .ok_or_else(|| {
                format!(
                    "{path}: not in the embedded JSON Schema Test Suite (build with \
                     JSON_SCHEMA_TEST_SUITE_DIR set, or run scripts/setup.sh first)"
                )
            })
    }
}
