//! The shell: header (brand, navigation, connection state, language switcher, theme toggle,
//! shortcuts), the routes, alarms, the keyboard shortcuts and their `?` cheat sheet.

use crate::alarms::Cause;
use crate::components::cheat_sheet::CheatSheet;
use crate::components::header::Header;
use crate::components::wire;
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
        crate::routes::sign_in::load_stored_key(console, crate::routes::lazy::visit);
        leptos::task::spawn_local(async move {
            match crate::components::registry::fetch().await {
                Ok(r) => {
                    // Kept before the signal says so: what waits on the signal (the visitor's
                    // session, `components::visitor`) then finds it in `session::registry`.
                    let ready = RegistryState::Ready {
                        bindings: r.bindings().count(),
                        organization_id: r.organization_id().to_owned(),
                    };
                    console.verifier.set_value(Some(r.clone()));
                    crate::components::session::set_registry(r);
                    console.registry.set(ready);
                }
                Err(e) => {
                    console.raise(
                        crate::alarms::Cause::RegistryUnavailable,
                        crate::alarms::Occurrence::said(e.clone()),
                    );
                    console.registry.set(RegistryState::Unavailable(e));
                }
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

/// The alarm banner (issue 29): one alarm per cause with its count (`crate::alarms`), each a
/// single line that opens onto what failed (Group, sequence, Event ID linked to its row in the
/// Events view, signer) for its first occurrences; at most a few lines tall (the rest scrolls
/// inside the banner), so the view stays above the fold. Shown until dismissed.
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
    let causes = move || {
        console
            .alarms
            .with(|a| a.causes().iter().map(|c| c.id).collect::<Vec<_>>())
    };
    let overflow = move || console.alarms.with(|a| a.overflow);
    view! {
        <div class="alarms" role="alert" aria-live="assertive">
            {standing}
            <For each=causes key=|id| *id children=move |id| view! { <CauseAlarmView id /> } />
            {move || (overflow() > 0).then(|| {
                let n = overflow();
                view! { <p class="alarm alarm-overflow">{t!(i18n, alarm.overflow, n = move || n)}</p> }
            })}
        </div>
    }
}

/// One cause's alarm: its headline with the count in a `<summary>`, its occurrences inside.
#[component]
fn CauseAlarmView(id: u64) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let alarm = move || {
        console
            .alarms
            .with(|a| a.causes().iter().find(|c| c.id == id).cloned())
    };
    let headline = move || {
        let Some(a) = alarm() else {
            return ().into_any();
        };
        let n = a.count;
        let code = a.cause.code().unwrap_or_default().to_owned();
        // The verifier's words without the code the headline already gives.
        let reason = a
            .details
            .first()
            .map(|d| {
                d.reason
                    .strip_prefix(code.as_str())
                    .filter(|_| !code.is_empty())
                    .unwrap_or(&d.reason)
                    .trim_start()
                    .to_owned()
            })
            .unwrap_or_default();
        let (c, r) = (move || code.clone(), move || reason.clone());
        let one = locale::singular(
            tag_of(i18n.get_locale()),
            usize::try_from(n).unwrap_or(usize::MAX),
        );
        match (&a.cause, one) {
            (Cause::EventRejected { .. }, true) => t!(
                i18n,
                alarm.event_rejected_single,
                n = move || n,
                code = c,
                reason = r
            )
            .into_any(),
            (Cause::EventRejected { .. }, false) => t!(
                i18n,
                alarm.event_rejected,
                n = move || n,
                code = c,
                reason = r
            )
            .into_any(),
            (Cause::ReplayRefused, true) => t!(
                i18n,
                alarm.replay_refused_single,
                n = move || n,
                code = c,
                reason = r
            )
            .into_any(),
            (Cause::ReplayRefused, false) => t!(
                i18n,
                alarm.replay_refused,
                n = move || n,
                code = c,
                reason = r
            )
            .into_any(),
            (Cause::ReceiptUnverified, true) => t!(
                i18n,
                alarm.receipt_unverified_single,
                n = move || n,
                reason = r
            )
            .into_any(),
            (Cause::ReceiptUnverified, false) => {
                t!(i18n, alarm.receipt_unverified, n = move || n, reason = r).into_any()
            }
            (Cause::HandshakeRefused { .. }, _) => {
                t!(i18n, alarm.handshake_refused, code = c, reason = r).into_any()
            }
            (Cause::ConnectionEnded { .. }, _) => {
                t!(i18n, alarm.connection_ended, code = c, reason = r).into_any()
            }
            (Cause::BadFrame { .. }, _) => {
                t!(i18n, alarm.bad_frame, code = c, reason = r).into_any()
            }
            (Cause::RegistryUnavailable, _) => {
                t!(i18n, alarm.registry_unavailable, reason = r).into_any()
            }
            (Cause::Other { .. }, _) => t!(i18n, alarm.other, code = c, reason = r).into_any(),
        }
    };
    // Causes told with their count in words (Events) need no "× n"; the others repeat.
    let times = move || {
        alarm().and_then(|a| {
            (!a.cause.about_events() && a.count > 1).then(|| {
                let n = a.count;
                view! { <span class="alarm-times">{t!(i18n, alarm.times, n = move || n)}</span> }
            })
        })
    };
    let explain = move || {
        alarm()
            .and_then(|a| {
                a.cause
                    .code()
                    .and_then(|c| wire::explain_text(i18n.get_locale(), c))
            })
            .unwrap_or_default()
    };
    let details = move || {
        let Some(a) = alarm() else {
            return ().into_any();
        };
        let unnamed = a.unnamed();
        let events = a.cause.about_events();
        view! {
            <ul class="alarm-details">
                {a.details.into_iter().map(|d| view! { <Occurrence d events /> }).collect_view()}
                {(unnamed > 0).then(|| view! { <li class="more">{t!(i18n, alarm.more, n = move || unnamed)}</li> })}
            </ul>
        }
        .into_any()
    };
    view! {
        <div class="alarm" data-cause-code=move || alarm().and_then(|a| a.cause.code().map(str::to_owned)).unwrap_or_default()
            data-count=move || alarm().map(|a| a.count.to_string()).unwrap_or_default()>
            <details>
                <summary title=explain>
                    <span class="icon" aria-hidden="true">"⚠"</span>" "
                    <span class="alarm-text">{headline}</span>" "{times}
                </summary>
                {details}
            </details>
            <button type="button" class="dismiss" on:click=move |_| console.alarms.update(|a| a.dismiss(id))>
                {t!(i18n, alarm.dismiss)}
            </button>
        </div>
    }
}

/// One occurrence of an alarm: what failed, each part named, the Event linked to its row.
#[component]
fn Occurrence(d: crate::alarms::Occurrence, events: bool) -> impl IntoView {
    let i18n = use_i18n();
    let group = d.group_id.map(|g| view! {
        <span class="part">{t!(i18n, events.group)}" "<code class="id" translate="no">{g}</code></span>
    });
    let sequence = d.sequence.map(|s| view! {
        <span class="part">{t!(i18n, alarm.sequence)}" "<code translate="no">{s.to_string()}</code></span>
    });
    let event = d.event_id.filter(|e| events && !e.is_empty()).map(|e| {
        let href = crate::alarms::event_link(&e);
        view! {
            <span class="part">{t!(i18n, alarm.event_id)}" "
                <a class="event-link" href=href title=move || t_string!(i18n, alarm.show_row)>
                    <code class="id" translate="no">{e}</code>
                </a>
            </span>
        }
    });
    let signer = d.signer.map(|k| view! {
        <span class="part">{t!(i18n, alarm.signer)}" "<code class="id" translate="no">{k}</code></span>
    });
    view! {
        <li>{group}" "{sequence}" "{event}" "{signer}" "<span class="reason">{d.reason}</span></li>
    }
}
