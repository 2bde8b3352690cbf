//! The designed loading, error and empty states every view uses.

use crate::i18n::*;
use crate::state::{GroupsState, KeyState, RegistryState, use_console};
use leptos::prelude::*;

#[component]
pub fn Loading() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <p class="state loading" role="status">
            <span class="icon" aria-hidden="true">"◌"</span>" "{t!(i18n, states.loading)}
        </p>
    }
}

#[component]
pub fn ErrorState(detail: String) -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <div class="state error" role="alert">
            <p>
                <span class="icon" aria-hidden="true">"✕"</span>" "
                {t!(i18n, states.error, detail = move || detail.clone())}
            </p>
            <button type="button" on:click=|_| {
                if let Some(w) = web_sys::window() {
                    let _ = w.location().reload();
                }
            }>{t!(i18n, states.retry)}</button>
        </div>
    }
}

#[component]
pub fn Empty(children: Children) -> impl IntoView {
    view! {
        <div class="state empty">
            <span class="icon" aria-hidden="true">"∅"</span>
            <p>{children()}</p>
        </div>
    }
}

/// The states of a view that lives on the Event stream: loading while the Registry is fetched,
/// an error when it cannot be (nothing could be verified), "sign in first" without a key, else
/// the view's own content (`children`, its empty state until the views land).
#[component]
pub fn StreamStates(children: ChildrenFn) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    move || match (console.registry.get(), console.key.get()) {
        (RegistryState::Loading, _) | (_, KeyState::Loading) => view! { <Loading /> }.into_any(),
        (RegistryState::Unavailable(detail), _) => view! {
            <div class="state error" role="alert">
                <p>
                    <span class="icon" aria-hidden="true">"✕"</span>" "
                    {t!(i18n, states.registry_unavailable, detail = move || detail.clone())}
                </p>
            </div>
        }
        .into_any(),
        (_, KeyState::None) | (_, KeyState::Locked { .. }) => view! {
            <div class="state empty">
                <span class="icon" aria-hidden="true">"⚷"</span>
                <p>{t!(i18n, states.sign_in_first)}</p>
                <a href="/sign-in">{t!(i18n, nav.sign_in)}</a>
            </div>
        }
        .into_any(),
        _ => children().into_any(),
    }
}

/// What the signed-in human's Group list says when it is not a list of Groups: no Membership
/// yet (an empty list: who grants one, and in the demo how to sign in as the human it waits
/// for), or that it could not be read. Nothing while it loads or lists Groups.
#[component]
pub fn GroupsNotice() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    move || {
        let KeyState::Unlocked { principal_id, .. } = console.key.get() else {
            return ().into_any();
        };
        match console.groups.get() {
            GroupsState::Listed(list) if list.is_empty() => {
                let name = principal_id
                    .rsplit(':')
                    .next()
                    .unwrap_or(&principal_id)
                    .to_owned();
                // The demo's hint, on a development server, to anyone but the human it names.
                let demo = console.registry.with(RegistryState::is_dev)
                    && name != simulation::agents::plan::HUMAN;
                let who = name.clone();
                view! {
                    <div class="state empty" id="no-membership" role="status">
                        <span class="icon" aria-hidden="true">"∅"</span>
                        <p>
                            {t!(i18n, states.no_membership, who = move || who.clone())}
                            {demo.then(|| view! { " "{t!(i18n, states.no_membership_demo)} })}
                        </p>
                    </div>
                }
                .into_any()
            }
            GroupsState::Failed(detail) => view! {
                <p class="state error" id="groups-failed" role="status">
                    <span class="icon" aria-hidden="true">"✕"</span>" "
                    {t!(i18n, states.groups_failed, detail = move || detail.clone())}
                </p>
            }
            .into_any(),
            GroupsState::Loading | GroupsState::Listed(_) => ().into_any(),
        }
    }
}

/// A view narrowed to part of what it lists (one Mission's approvals, the selected WorkItem's
/// row): says so, with the way back, which clears `narrowed`. Shown while `narrowed` holds a
/// value; the note is a live status, so a screen reader hears the list change.
#[component]
pub fn NarrowedNote(
    narrowed: RwSignal<Option<String>>,
    /// The note's own class beside `note` (the tests find it by it).
    class: &'static str,
    /// The way back's class.
    button_class: &'static str,
    /// The way back's label.
    #[prop(into)]
    back: ViewFn,
    /// What the view shows only.
    children: ChildrenFn,
) -> impl IntoView {
    view! {
        <Show when=move || narrowed.with(Option::is_some)>
            <p class=format!("note {class}") role="status">
                {children()}" "
                <button type="button" class=button_class on:click=move |_| narrowed.set(None)>
                    {back.run()}
                </button>
            </p>
        </Show>
    }
}
