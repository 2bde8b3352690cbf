//! With the `embedded-bundle` feature, embeds the official protocol bundle (schemas,
//! conformance, cryptography, admission) so that runs without a file system — the browser tests
//! and the browser benchmark — can execute the same runners. The bundle is read from
//! `MWP_PROTOCOL_DIR`, or `../shared/protocol` beside the workspace; it is never copied into the
//! repository.
//!
//! The same feature embeds the JSON Schema Test Suite's Draft 2020-12 `optional/format` files
//! (`tests/formats.rs`), read from `JSON_SCHEMA_TEST_SUITE_DIR`, or the cache that
//! `scripts/setup.sh` fills (`target/fixtures/json-schema-test-suite` beside the workspace);
//! the suite is not ours to commit either.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=MWP_PROTOCOL_DIR");
    println!("cargo:rerun-if-env-changed=JSON_SCHEMA_TEST_SUITE_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("bundle.rs");
    let mut code = String::from("pub static FILES: &[(&str, &[u8])] = &[\n");
    if std::env::var_os("CARGO_FEATURE_EMBEDDED_BUNDLE").is_some() {
        let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
        let root = std::env::var("MWP_PROTOCOL_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| manifest_dir.join("../../shared/protocol"));
        let root = root.canonicalize().unwrap_or(root);
        println!("cargo:rerun-if-changed={}", root.display());
        let mut files = Vec::new();
        for dir in ["schemas", "conformance", "cryptography", "admission"] {
            collect(&root.join(dir), &root, &mut files);
        }
        if files.is_empty() {
            println!(
                "cargo:warning=embedded-bundle: no bundle files under {} (set MWP_PROTOCOL_DIR)",
                root.display()
            );
        }
        files.sort();
        for (rel, abs) in files {
            code.push_str(&format!("    ({rel:?}, include_bytes!({abs:?})),\n"));
        }
    }
    code.push_str("];\n");
    code.push_str("pub static FORMAT_SUITE_FILES: &[(&str, &[u8])] = &[\n");
    if std::env::var_os("CARGO_FEATURE_EMBEDDED_BUNDLE").is_some() {
        let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
        let root = std::env::var("JSON_SCHEMA_TEST_SUITE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| manifest_dir.join("../target/fixtures/json-schema-test-suite"));
        let root = root.canonicalize().unwrap_or(root);
        let dir = root.join("draft2020-12/optional/format");
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files = Vec::new();
        collect(&dir, &root, &mut files);
        if files.is_empty() {
            println!(
                "cargo:warning=embedded-bundle: no JSON Schema Test Suite files under {} \
                 (run scripts/setup.sh or set JSON_SCHEMA_TEST_SUITE_DIR)",
                dir.display()
            );
        }
        files.sort();
        for (rel, abs) in files {
            code.push_str(&format!("    ({rel:?}, include_bytes!({abs:?})),\n"));
        }
    }
    code.push_str("];\n");
    if let Err(e) = std::fs::write(&out, code) {
        println!("cargo:warning=cannot write {}: {e}", out.display());
    }
}

fn collect(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, root, out);
        } else if let Ok(rel) = p.strip_prefix(root) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.push((rel, p.to_string_lossy().into_owned()));
        }
    }
}
