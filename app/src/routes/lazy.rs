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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

impl Chunk {
    /// The lazily loaded view an in-app path opens (`/mission/…`, `/approvals?mission=…`), if
    /// any: the board (`/`, `/board`) is in the main module, other paths are not views.
    pub fn of_path(path: &str) -> Option<Chunk> {
        let first = path
            .strip_prefix('/')?
            .split(['/', '?', '#'])
            .next()
            .unwrap_or_default();
        Some(match first {
            "mission" => Chunk::Mission,
            "ledger" => Chunk::Ledger,
            "approvals" => Chunk::Approvals,
            "events" => Chunk::Events,
            "conversations" => Chunk::Conversations,
            "agents" => Chunk::Agents,
            "protocol" => Chunk::Protocol,
            // The join link opens the Sign-in view.
            "sign-in" | "join" => Chunk::SignIn,
            "settings" => Chunk::Settings,
            _ => return None,
        })
    }
}

/// Fetches `chunk` (its `split_` file and the shared chunks it needs) without building its
/// view, so that the view opens without waiting when the person follows the link. A failure
/// is not kept: opening the view fetches again and shows its own error.
pub async fn preload(chunk: Chunk) -> Result<(), SplitLoaderError> {
    match chunk {
        Chunk::Mission => preload_mission().await,
        Chunk::Ledger => preload_ledger().await,
        Chunk::Approvals => preload_approvals().await,
        Chunk::Events => preload_events().await,
        Chunk::Conversations => preload_conversations().await,
        Chunk::Agents => preload_agents().await,
        Chunk::Protocol => preload_protocol().await,
        Chunk::SignIn => preload_sign_in().await,
        Chunk::Settings => preload_settings().await,
    }
}

/// Preloads a view's chunk when the person shows the intent to open it: the pointer enters,
/// or the keyboard focus reaches, an in-app link to it (anywhere in the console: the header's
/// navigation, a board card, an approval's "in the graph"). Each chunk is asked for once per
/// page; the loader runs one fetch however many ask.
pub fn preload_on_intent() {
    let asked = StoredValue::new(std::collections::BTreeSet::<Chunk>::new());
    let on = move |ev: leptos::ev::Event| {
        let Some(chunk) = intent_target(&ev).and_then(|h| Chunk::of_path(&h)) else {
            return;
        };
        // `insert` says whether it was new: each chunk is asked for once.
        if !asked.try_update_value(|a| a.insert(chunk)).unwrap_or(false) {
            return;
        }
        leptos::task::spawn_local(async move {
            // Forgotten on failure, so the next intent tries again.
            if preload(chunk).await.is_err() {
                asked.update_value(|a| {
                    a.remove(&chunk);
                });
            }
        });
    };
    let over = window_event_listener(leptos::ev::pointerover, move |ev| on(ev.into()));
    let focus = window_event_listener(leptos::ev::focusin, move |ev| on(ev.into()));
    on_cleanup(move || {
        over.remove();
        focus.remove();
    });
}

/// The `href` of the in-app link an event happened in (a path starting with one `/`).
fn intent_target(ev: &leptos::ev::Event) -> Option<String> {
    use leptos::wasm_bindgen::JsCast;
    let el: leptos::web_sys::Element = ev.target()?.dyn_into().ok()?;
    el.closest("a[href]")
        .ok()??
        .get_attribute("href")
        .filter(|h| h.starts_with('/') && !h.starts_with("//"))
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
#[wasm_split(mission, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_mission))]
fn mission() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::mission::Mission /> }.into_any()
    }))
}
#[wasm_split(ledger, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_ledger))]
fn ledger() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| view! { <routes::ledger::Ledger /> }.into_any()))
}
#[wasm_split(approvals, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_approvals))]
fn approvals() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::approvals::Approvals /> }.into_any()
    }))
}
#[wasm_split(events, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_events))]
fn events() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| view! { <routes::events::Events /> }.into_any()))
}
#[wasm_split(conversations, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_conversations))]
fn conversations() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::conversations::Conversations /> }.into_any()
    }))
}
#[wasm_split(agents, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_agents))]
fn agents() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| view! { <routes::agents::Agents /> }.into_any()))
}
#[wasm_split(protocol, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_protocol))]
fn protocol() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::protocol::Protocol /> }.into_any()
    }))
}
#[wasm_split(sign_in, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_sign_in))]
fn sign_in() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| view! { <routes::sign_in::SignIn /> }.into_any()))
}
#[wasm_split(settings, wasm_split_path = ::leptos::wasm_split, fallible, preload(preload_settings))]
fn settings() -> Result<AnyView, SplitLoaderError> {
    Ok(untrack(|| {
        view! { <routes::settings::Settings /> }.into_any()
    }))
}

/// The static demo's read-only session before anyone signs in (`components::visitor`,
/// docs/static-demo.md "Visitor view"), in a chunk of its own (`split_visitor`, loader
/// `__wasm_split_load_visitor`): a server's first view does not carry it.
#[wasm_split(visitor, wasm_split_path = ::leptos::wasm_split, fallible)]
fn visitor_session(console: crate::state::Console) -> Result<(), SplitLoaderError> {
    crate::components::visitor::start(console);
    Ok(())
}

/// Loads the visitor's chunk and opens its read-only session (in the demo, no key stored:
/// `routes::sign_in::load_stored_key` calls it). A chunk that cannot be fetched leaves the
/// console on "Not signed in", the demo key still offered.
pub fn visit(console: crate::state::Console) {
    #[cfg(target_arch = "wasm32")]
    leptos::task::spawn_local(async move {
        if let Err(e) = visitor_session(console).await {
            web_sys::console::warn_1(&format!("the demo's visitor session: {e:?}").into());
        }
    });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (console, visitor_session);
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
