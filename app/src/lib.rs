//! The MissionWeave console: a Leptos app rendered in the browser (CSR), compiled to WebAssembly
//! and served by `weave-console serve` (issue 13). Everything protocol — strict parsing,
//! signature verification, canonicalization and signing — comes from `wasm-core`; this crate
//! adds the views, the socket client, key custody and the translations (issue 14).
//!
//! Layout (docs/console.md):
//! - `app`: the shell (header, navigation, routes, shortcuts, alarms);
//! - `routes/`: one module per view; `components/`: shared pieces (signing summary, …);
//! - `socket/`: the socket client (a sans-IO machine, its driver, the browser transport);
//! - `custody/`: the key file format, WebCrypto encryption and IndexedDB storage;
//! - `commands`: the human's decisions as signed Commands, their outcomes and receipts;
//! - `signing`: the signing-summary model; `locale`, `format`: language choice and `Intl`;
//! - `replay`, `pool`: the first replay's chunked verification (Web Workers) and in-order fold;
//! - `state`: the console-wide reactive state; `web`: small browser helpers (fetch, storage).
#![forbid(unsafe_code)]

// The i18n module (`i18n::Locale`, `use_i18n`, `t!`…) generated at compile time from
// `locales/*.json`; a key used in code but absent from the files does not compile.
#[allow(deprecated)]
mod generated {
    leptos_i18n::load_locales!();
}
pub use generated::i18n;

pub mod app;
pub mod bench;
#[cfg(feature = "bench")]
pub mod bench_page;
pub mod commands;
pub mod components;
pub mod custody;
pub mod fold;
pub mod format;
pub mod locale;
pub mod pool;
pub mod replay;
pub mod routes;
pub mod signing;
pub mod socket;
pub mod state;
pub mod web;

/// The browser entry point (`scripts/build-web.sh` builds with `--features csr`).
#[cfg(feature = "csr")]
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    // The replay's Web Workers load this same module (`pool`): no page to mount there.
    if web_sys::window().is_none() {
        return;
    }
    #[cfg(feature = "bench")]
    leptos::mount::mount_to_body(bench_page::BenchPage);
    #[cfg(not(feature = "bench"))]
    leptos::mount::mount_to_body(app::App);
}
