//! The views loaded on first use. Each view below lives in its own wasm chunk
//! (`pkg/<hash>/split_*.wasm`, cut out of the main module by scripts/build-web.sh's splitter,
//! `wasm-split-cli`); the chunk shares the main module's memory and table, so nothing is
//! duplicated, and a visit to the board does not download the other views' code (issue 13's
//! size bar, docs/console.md "Sizes"). Natively (tests, clippy) the same functions are plain
//! calls.
//!
//! Leptos's own `#[lazy]` / `#[lazy_route]` panic when a chunk cannot be fetched, and a panic
//! aborts the whole module; these split points are `fallible`, so a chunk that fails to load
//! shows an error with a retry instead of a dead page.
//!
//! The split points are `wasm_split_helpers::wasm_split` (re-exported by Leptos), whose
//! expansion declares the loader imports and exports the view's entry point: that generated
//! code is the only `unsafe` in this crate (`unsafe_code` is denied everywhere else).
#![allow(unsafe_code)]

use crate::i18n::*;
use crate::routes;
use leptos::prelude::*;
use leptos::wasm_split::{SplitLoaderError, wasm_split};
use send_wrapper::SendWrapper;

/// A view that is loaded on first use, each its own wasm chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    Mission,
    Ledger,
    Approvals,
    Events,
    Conversations,
    Agents,
    Protocol,
    SignIn,
    Settings,
}

/// The view of `chunk`, once its chunk is loaded (at once natively, and in the browser after
/// the first load).
async fn load(chunk: Chunk) -> Result<AnyView, SplitLoaderError> {
    match chunk {
        Chunk::Mission => mission().await,
        Chunk::Ledger => ledger().await,
        Chunk::Approvals => approvals().await,
        Chunk::Events => events().await,
        Chunk::Conversations => conversations().await,
        Chunk::Agents => agents().await,
        Chunk::Protocol => protocol().await,
        Chunk::SignIn => sign_in().await,
        Chunk::Settings => settings().await,
    }
}

// One split point per view; the view is built untracked, as a component's body is, so the
// signals it reads while being built do not re-run the loader.
#[wasm_split(mission, wasm_split_path = ::leptos::wasm_split, fallible)]
fn mission() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::mission::Mission /> }.into_any()
    }))
}
#[wasm_split(ledger, wasm_split_path = ::leptos::wasm_split, fallible)]
fn ledger() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| view! { <routes::ledger::Ledger /> }.into_any()))
}
#[wasm_split(approvals, wasm_split_path = ::leptos::wasm_split, fallible)]
fn approvals() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::approvals::Approvals /> }.into_any()
    }))
}
#[wasm_split(events, wasm_split_path = ::leptos::wasm_split, fallible)]
fn events() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| view! { <routes::events::Events /> }.into_any()))
}
#[wasm_split(conversations, wasm_split_path = ::leptos::wasm_split, fallible)]
fn conversations() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::conversations::Conversations /> }.into_any()
    }))
}
#[wasm_split(agents, wasm_split_path = ::leptos::wasm_split, fallible)]
fn agents() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| view! { <routes::agents::Agents /> }.into_any()))
}
#[wasm_split(protocol, wasm_split_path = ::leptos::wasm_split, fallible)]
fn protocol() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::protocol::Protocol /> }.into_any()
    }))
}
#[wasm_split(sign_in, wasm_split_path = ::leptos::wasm_split, fallible)]
fn sign_in() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| view! { <routes::sign_in::SignIn /> }.into_any()))
}
#[wasm_split(settings, wasm_split_path = ::leptos::wasm_split, fallible)]
fn settings() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::settings::Settings /> }.into_any()
    }))
}

/// The route's view for `chunk`: the designed loading state while its chunk is fetched, then
/// the view; if the chunk cannot be fetched, an alert with a retry (the loader keeps no failed
/// attempt, so a retry fetches again).
pub fn lazy_view(chunk: Chunk) -> impl IntoView {
    let i18n = use_i18n();
    let pending = RwSignal::new(true);
    let failed = RwSignal::new(false);
    let attempt = RwSignal::new(0u32);
    let content = move || {
        attempt.track();
        // The loader's future is not `Send` (its error type is not); the browser runs it on
        // its one thread.
        let fut = SendWrapper::new(async move {
            let result = load(chunk).await;
            pending.set(false);
            failed.set(result.is_err());
            result.ok()
        });
        Suspend::new(fut)
    };
    let retry = move |_| {
        pending.set(true);
        failed.set(false);
        attempt.update(|n| *n += 1);
    };
    view! {
        {move || {
            pending
                .get()
                .then(|| {
                    view! {
                        <p class="state loading" role="status" data-chunk-loading="">
                            <span class="icon" aria-hidden="true">"◌"</span>
                            " "
                            {t!(i18n, states.loading_view)}
                        </p>
                    }
                })
        }}
        {move || {
            failed
                .get()
                .then(|| {
                    view! {
                        <div class="state error" role="alert" data-chunk-error="">
                            <p>
                                <span class="icon" aria-hidden="true">"✕"</span>
                                " "
                                {t!(i18n, states.view_unavailable)}
                            </p>
                            <button type="button" on:click=retry>
                                {t!(i18n, states.retry)}
                            </button>
                        </div>
                    }
                })
        }}
        {content}
    }
}
