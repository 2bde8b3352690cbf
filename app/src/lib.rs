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
//! - `state`: the console-wide reactive state; `web`: small browser helpers (fetch, storage);
//! - `join`: the join link the server prints (`/join#token=…&name=…`).
// Denied, not forbidden: `routes::lazy`'s split points expand to `unsafe` (the chunk loaders).
#![deny(unsafe_code)]

// The i18n module (`i18n::Locale`, `use_i18n`, `t!`…) generated from `locales/*.json` by
// `build.rs` (leptos_i18n's code generator with `interpolate_display`); a key used in code but
// absent from the files does not compile, a key missing from one locale fails the build.
#[allow(deprecated, missing_docs, unused_imports, clippy::all)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/i18n.rs"));
}
/// The generated module, with `t!` replaced by [`t_boxed!`].
pub mod i18n {
    pub use crate::generated::i18n::*;
    // An explicit import shadows the glob's `t` (leptos_i18n's).
    pub use crate::t_boxed as t;
}

/// `t!` for the views: a plain key (`t!(i18n, board.title)`) or an interpolated key whose values
/// are all `move ||` closures (`t!(i18n, board.revision, n = move || rev)`, or the shorthand
/// `t!(i18n, signing.figure, label, value)` naming closures) becomes the same reactive
/// translation behind one boxed closure type per output type: `Box<dyn FnMut() -> &str + Send>`
/// for plain keys, `Box<dyn FnMut() -> String + Send>` for interpolated ones (the values'
/// closures are called inside it, and the whole sentence is built with `t_string!`). Other forms
/// go to `leptos_i18n::t!` unchanged.
///
/// Why: `leptos_i18n::t!` expands to its own `move ||` closure at every call site, and an
/// interpolated key renders each value as a reactive child of its own type; Leptos instantiates
/// its reactive renderer (`RenderEffect`, build, rebuild, drop glue) once per closure type, so
/// the ~260 plain keys and ~50 interpolated sites of the views were as many copies of that
/// machinery in the shipped module (issue 13's size bar, docs/console.md "Sizes"). Behind the
/// box there is one copy per output type. The text, its tracking of the locale and of the
/// values' signals, and its re-rendering on a change are the same; an interpolated sentence is
/// one text node instead of one per part.
///
/// The views get it as `t!` from `use crate::i18n::*` (the `i18n` module re-exports it).
#[macro_export]
macro_rules! t_boxed {
    ($i18n:ident, $($key:ident).+) => {
        $crate::boxed_view(leptos_i18n::t!($i18n, $($key).+))
    };
    ($i18n:ident, $($key:ident).+, $($var:ident = move || $val:expr),+ $(,)?) => {
        $crate::boxed_view(move || leptos_i18n::t_string!($i18n, $($key).+, $($var = $val),+))
    };
    ($i18n:ident, $($key:ident).+, $($var:ident),+ $(,)?) => {
        $crate::boxed_view(move || leptos_i18n::t_string!($i18n, $($key).+, $($var = $var()),+))
    };
    ($($rest:tt)*) => {
        leptos_i18n::t!($($rest)*)
    };
}

/// Boxes a reactive view function (see [`t_boxed!`]): one `Render` instantiation per output type
/// instead of one per closure.
pub fn boxed_view<V>(f: impl FnMut() -> V + Send + 'static) -> Box<dyn FnMut() -> V + Send> {
    Box::new(f)
}

pub mod alarms;
pub mod app;
pub mod bench;
#[cfg(feature = "bench")]
pub mod bench_page;
pub mod commands;
pub mod components;
pub mod custody;
pub mod fold;
pub mod format;
pub mod join;
pub mod locale;
pub mod pool;
pub mod replay;
pub mod routes;
#[cfg(target_arch = "wasm32")]
pub mod runner;
pub mod signing;
pub mod socket;
pub mod state;
pub mod web;

/// The browser entry point (`scripts/build-web.sh` builds with `--features csr`).
#[cfg(feature = "csr")]
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    // With `panic = "immediate-abort"` (a nightly `-Zbuild-std` build) no hook ever runs: leaving
    // it out drops its panic-message formatting from the module.
    #[cfg(not(panic = "immediate-abort"))]
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
