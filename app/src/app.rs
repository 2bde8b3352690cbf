//! The shell: header (brand, navigation, connection state, language switcher, theme toggle,
//! shortcuts), the routes, alarms, the keyboard shortcuts and their `?` cheat sheet.

use crate::components::cheat_sheet::CheatSheet;
use crate::components::header::Header;
use crate::i18n::*;
use crate::locale::{self, locale_of, set_language, tag_of};
use crate::routes;
use crate::routes::lazy::{Chunk, lazy_view};
use crate::state::{Console, RegistryState, Theme, apply_theme, toggle_theme, use_console};
use crate::web;
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use leptos_router::components::{Route, Router, Routes};
use leptos_router::hooks::use_navigate;
use leptos_router::path;

#[component]
pub fn App() -> impl IntoView {
    // Before the router reads the address: the join link's token leaves the address bar now.
    #[cfg(target_arch = "wasm32")]
    crate::join::take_from_address();
    view! {
        <I18nContextProvider>
            <Router>
                <Shell />
            </Router>
        </I18nContextProvider>
    }
}

#[component]
fn Shell() -> impl IntoView {
    let i18n = use_i18n();
    let console = Console::new();
    provide_context(console);

    // First visit: the browser's languages; afterwards: the stored choice.
    let stored = web::local_get(locale::STORAGE_KEY);
    let tag = locale::pick(stored.as_deref(), &web::languages());
    // After the provider's own first pass (which only knows exact `navigator.languages`
    // matches): effects run in creation order, and this one reads nothing reactive.
    Effect::new(move |_| i18n.set_locale(locale_of(tag)));
    Effect::new(move |_| {
        let l = i18n.get_locale();
        web::set_root_attr("lang", tag_of(l));
    });
    // The title (with the count of what awaits the human) and the notifications.
    crate::components::notices::watch(console, i18n);

    let theme = web::local_get(Theme::STORAGE_KEY)
        .map(|s| Theme::parse(&s))
        .unwrap_or(Theme::System);
    console.theme.set(theme);
    Effect::new(move |_| apply_theme(console.theme.get()));

    boot(console);
    shortcuts(console, i18n);
    // A view's chunk is fetched as soon as the pointer or the focus reaches a link to it.
    #[cfg(target_arch = "wasm32")]
    crate::routes::lazy::preload_on_intent();

    view! {
        <a class="skip" href="#main">{t!(i18n, app.skip)}</a>
        <Header />
        <Alarms />
        <crate::components::live::TravelBanner />
        <crate::components::live::FoldProgress />
        <main id="main" tabindex="-1">
            // The board is where a visit lands: it is in the main module. Every other view is
            // its own wasm chunk, loaded when first opened (`routes::lazy`).
            <Routes fallback=routes::not_found::NotFound>
                <Route path=path!("/") view=routes::board::Board />
                <Route path=path!("/board") view=routes::board::Board />
                <Route path=path!("/mission") view=|| lazy_view(Chunk::Mission) />
                <Route path=path!("/mission/:group") view=|| lazy_view(Chunk::Mission) />
                <Route path=path!("/ledger") view=|| lazy_view(Chunk::Ledger) />
                <Route path=path!("/approvals") view=|| lazy_view(Chunk::Approvals) />
                <Route path=path!("/events") view=|| lazy_view(Chunk::Events) />
                <Route path=path!("/conversations") view=|| lazy_view(Chunk::Conversations) />
                <Route path=path!("/agents") view=|| lazy_view(Chunk::Agents) />
                <Route path=path!("/protocol") view=|| lazy_view(Chunk::Protocol) />
                <Route path=path!("/sign-in") view=|| lazy_view(Chunk::SignIn) />
                // The join link is taken (and the address replaced) before the router starts;
                // reached in-app, the Sign-in view takes it.
                <Route path=path!("/join") view=|| lazy_view(Chunk::SignIn) />
                <Route path=path!("/settings") view=|| lazy_view(Chunk::Settings) />
            </Routes>
        </main>
        <footer class="site">{t!(i18n, app.footer)}</footer>
        <CheatSheet />
    }
}

/// Start-up work that needs the browser: read the stored key, fetch the Registry.
fn boot(console: Console) {
    #[cfg(target_arch = "wasm32")]
    {
        // The views' clock: lease countdowns and overdue deadlines move without Events.
        let tick = leptos::prelude::set_interval_with_handle(
            move || console.clock.set(web::now()),
            std::time::Duration::from_secs(1),
        );
        if let Ok(h) = tick {
            on_cleanup(move || h.clear());
        }
        crate::routes::sign_in::load_stored_key(console);
        leptos::task::spawn_local(async move {
            match crate::components::registry::fetch().await {
                Ok(r) => {
                    console.registry.set(RegistryState::Ready {
                        bindings: r.bindings().count(),
                        organization_id: r.organization_id().to_owned(),
                    });
                    console.verifier.set_value(Some(r.clone()));
                    crate::components::session::set_registry(r);
                }
                Err(e) => console.registry.set(RegistryState::Unavailable(e)),
            }
        });
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        console.key.set(crate::state::KeyState::None);
        console
            .registry
            .set(RegistryState::Unavailable(String::new()));
    }
}

/// True when a key press belongs to a form field, not to the shortcuts.
fn typing(ev: &leptos::ev::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| {
            matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT")
                || el.has_attribute("contenteditable")
        })
}

/// The keyboard shortcuts: `?` cheat sheet, `t` theme, `l` language, `g` + letter to go to a
/// view, `Escape` to close a dialog.
fn shortcuts(console: Console, i18n: I18nContext<Locale>) {
    let navigate = use_navigate();
    let pending_g = RwSignal::new(false);
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
            return;
        }
        let key = ev.key();
        if key == "Escape" {
            console.shortcuts_open.set(false);
            return;
        }
        if typing(&ev) {
            return;
        }
        if pending_g.get_untracked() {
            pending_g.set(false);
            let to = match key.as_str() {
                "b" => Some("/"),
                "m" => Some("/mission"),
                "l" => Some("/ledger"),
                "a" => Some("/approvals"),
                "e" => Some("/events"),
                "c" => Some("/conversations"),
                "n" => Some("/agents"),
                "p" => Some("/protocol"),
                "i" => Some("/sign-in"),
                "s" => Some("/settings"),
                _ => None,
            };
            if let Some(to) = to {
                ev.prevent_default();
                navigate(to, Default::default());
            }
            return;
        }
        match key.as_str() {
            "?" => {
                ev.prevent_default();
                console.shortcuts_open.update(|o| *o = !*o);
            }
            "t" => toggle_theme(console),
            "l" => {
                let next = locale::next(tag_of(i18n.get_locale_untracked()));
                set_language(i18n, next);
            }
            "g" => pending_g.set(true),
            _ => {}
        }
    });
    on_cleanup(move || handle.remove());
}

/// The alarm banner: an Event that failed verification (or a server error) is shown until
/// dismissed.
#[component]
fn Alarms() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let standing = move || {
        console.key_standing.get().map(|s| {
            let text = match s {
                crate::state::KeyStanding::Ended {
                    key_id,
                    at,
                    revoked: true,
                } => t!(
                    i18n,
                    alarm.key_revoked,
                    key = move || key_id.clone(),
                    at = move || at.clone()
                )
                .into_any(),
                crate::state::KeyStanding::Ended {
                    key_id,
                    at,
                    revoked: false,
                } => t!(
                    i18n,
                    alarm.key_ended,
                    key = move || key_id.clone(),
                    at = move || at.clone()
                )
                .into_any(),
                crate::state::KeyStanding::Unknown { key_id } => {
                    t!(i18n, alarm.key_unknown, key = move || key_id.clone()).into_any()
                }
            };
            view! {
                <div class="alarm" id="key-standing">
                    <span class="icon" aria-hidden="true">"⚠"</span>
                    <span>{text}" "{t!(i18n, alarm.key_way_back)}</span>
                    <a href="/sign-in">{t!(i18n, alarm.key_to_sign_in)}</a>
                </div>
            }
        })
    };
    view! {
        <div class="alarms" role="alert" aria-live="assertive">
            {standing}
            <For
                each=move || console.alarms.get()
                key=|a| a.id
                children=move |a| {
                    let id = a.id;
                    let code = a.code.clone();
                    let detail = a.detail.clone();
                    view! {
                        <div class="alarm">
                            <span class="icon" aria-hidden="true">"⚠"</span>
                            <span>{t!(i18n, alarm.rejected, code = move || code.clone(), detail = move || detail.clone())}</span>
                            <button type="button" on:click=move |_| console.alarms.update(|v| v.retain(|x| x.id != id))>
                                {t!(i18n, alarm.dismiss)}
                            </button>
                        </div>
                    }
                }
            />
        </div>
    }
}
