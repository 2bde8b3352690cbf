//! Every symbol the console writes (status marks, icons, punctuation) is drawn by the fonts a
//! plain Debian desktop has — DejaVu Sans, and Noto Sans CJK for zh-Hant — so that no status
//! shows as an empty box ("tofu"): status is never colour alone (issue 13), and a mark that
//! does not render is no mark. `⏸`, `⏳`, `⏮` and `🔒` did exactly that on the board, the
//! time-travel banner and the sign-in state. A new symbol joins [`DRAWN`] once checked with
//! `fc-list ":charset=<hex>" family` (it must list DejaVu Sans, or Noto Sans CJK for CJK
//! punctuation).

use std::path::Path;

/// The symbols checked against DejaVu Sans (Noto Sans CJK TC for the CJK punctuation).
const DRAWN: &str = "§·×–—’…→↻⇤∅−≤≥⊘█■▶◆○◌●◑◔◕◷☀☾⚑⚠⚷✓✔✕✖✗、。（），：；＝？";

/// The non-ASCII characters of `text` that are not letters (symbols and punctuation).
fn symbols(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars().filter(|c| !c.is_ascii() && !c.is_alphabetic())
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs" || x == "json") {
            out.push(p);
        }
    }
}

/// Symbols of `text` not in [`DRAWN`], with their code points.
fn undrawn(text: &str) -> Vec<String> {
    let mut out: Vec<String> = symbols(text)
        .filter(|c| !DRAWN.contains(*c))
        .map(|c| format!("{c} U+{:04X}", c as u32))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_symbol_in_the_console_and_its_translations_is_one_the_fonts_draw() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("locales"), &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable source");
        for s in undrawn(&text) {
            bad.push(format!("{}: {s}", f.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "symbols no checked font draws:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_the_symbols_that_showed_as_boxes() {
    assert_eq!(
        undrawn("⏳ 1 · ⏸ awaiting approval ⏮ 🔒 — état vérifié 等待核准"),
        ["⏮ U+23EE", "⏳ U+23F3", "⏸ U+23F8", "🔒 U+1F512"]
    );
    assert!(undrawn("⚑ 1 · ◷ 等待核准，已驗證").is_empty());
}
