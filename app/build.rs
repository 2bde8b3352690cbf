//! Generates the `i18n` module (`Locale`, `use_i18n`, the keys) from `locales/*.json` into
//! `$OUT_DIR/i18n.rs`, which `src/lib.rs` includes: what `leptos_i18n::load_locales!` does, read
//! from the same `[package.metadata.leptos-i18n]` and the same files, with the one option that
//! macro does not read: `interpolate_display`, so interpolated keys also have string builders
//! (`t_string!`). The views render them through one boxed closure type (`t!` in `src/lib.rs`)
//! instead of one reactive renderer per call site (issue 13's size bar, docs/console.md "Sizes").
//!
//! A key missing from a locale, or present in a locale but not in English, fails the build here
//! (`load_locales!` only warned); a key used in code but absent from the files does not compile.

use leptos_i18n_parser::parse_locales::{
    cfg_file::ConfigFile,
    options::{Config, ParseOptions},
    parse_locales,
};
use std::path::PathBuf;

fn main() {
    // The browser module keeps its relocations: scripts/build-web.sh's splitter (wasm-split-cli)
    // reads them to move each lazily loaded view (`routes::lazy`) into its own wasm chunk.
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo::rustc-link-arg-cdylib=--emit-relocs");
    }
    if let Err(e) = generate() {
        eprintln!("app/build.rs: {e}");
        std::process::exit(1);
    }
}

fn generate() -> Result<(), String> {
    let mut manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=Cargo.toml");
    let cfg: Config = ConfigFile::new(&mut manifest_dir)
        .map_err(|e| e.to_string())?
        .into();
    let cfg = cfg.parse_options(ParseOptions::default().interpolate_display(true));
    let parsed = parse_locales(Some(manifest_dir), cfg).map_err(|e| e.to_string())?;
    for path in parsed.tracked_files.iter().flatten() {
        println!("cargo::rerun-if-changed={path}");
    }
    let warnings: Vec<String> = parsed
        .diag
        .warnings()
        .iter()
        .map(|w| w.to_string())
        .collect();
    let errors: Vec<String> = parsed.diag.errors().iter().map(|e| e.to_string()).collect();
    if !warnings.is_empty() || !errors.is_empty() {
        return Err(format!(
            "the translations are incomplete or invalid:\n{}",
            errors
                .iter()
                .chain(&warnings)
                .map(|m| format!("  {m}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    let code = leptos_i18n_codegen::gen_code(&parsed, None, false, None, true)
        .map_err(|e| e.to_string())?;
    let out = PathBuf::from(env("OUT_DIR")?).join("i18n.rs");
    std::fs::write(&out, code.to_string()).map_err(|e| format!("{}: {e}", out.display()))
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|e| format!("{name}: {e}"))
}
