//! The header: brand, navigation, connection state, language switcher, theme toggle and the
//! shortcuts button. Status is never shown by colour alone: each state has its own symbol and
//! words.

use crate::i18n::*;
use crate::locale::{set_language, tag_of};
use crate::socket::machine::Status;
use crate::state::toggle_theme;
use crate::state::{KeyState, Theme, use_console};
use leptos::prelude::*;
use leptos_router::components::A;

#[component]
pub fn Header() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let on_lang = move |ev| set_language(i18n, &event_target_value(&ev));
    let dark_now = move || match console.theme.get() {
        Theme::Dark => true,
        Theme::Light => false,
        Theme::System => crate::web::prefers_dark(),
    };
    view! {
        <header class="site">
            <a class="brand" href="/">{t!(i18n, app.title)}</a>
            <nav aria-label=move || t_string!(i18n, nav.label)>
                <ul>
                    <li><A href="/">{t!(i18n, nav.board)}</A></li>
                    <li><A href="/mission">{t!(i18n, nav.mission)}</A></li>
                    <li><A href="/ledger">{t!(i18n, nav.ledger)}</A></li>
                    <li><A href="/approvals">{t!(i18n, nav.approvals)}</A></li>
                    <li><A href="/events">{t!(i18n, nav.events)}</A></li>
                    <li><A href="/conversations">{t!(i18n, nav.conversations)}</A></li>
                    <li><A href="/agents">{t!(i18n, nav.agents)}</A></li>
                    <li><A href="/protocol">{t!(i18n, nav.protocol)}</A></li>
                    <li><A href="/sign-in">{t!(i18n, nav.sign_in)}</A></li>
                    <li><A href="/settings">{t!(i18n, nav.settings)}</A></li>
                </ul>
            </nav>
            <div class="tools">
                <ConnStatus />
                <span class="who">
                    {move || match console.key.get() {
                        KeyState::Unlocked { principal_id, .. } => {
                            t!(i18n, header.signed_in_as, who = move || principal_id.clone()).into_any()
                        }
                        // The static demo read before anyone signs in (read-only session).
                        KeyState::Visiting { .. } => t!(i18n, header.visiting).into_any(),
                        _ => t!(i18n, header.not_signed_in).into_any(),
                    }}
                </span>
                <label class="lang">
                    <span>{t!(i18n, header.language)}</span>
                    <select id="lang-select" on:change=on_lang prop:value=move || tag_of(i18n.get_locale())>
                        <option value="en" lang="en" selected=move || i18n.get_locale() == Locale::en>{t!(i18n, lang.en)}</option>
                        <option value="fr" lang="fr" selected=move || i18n.get_locale() == Locale::fr>{t!(i18n, lang.fr)}</option>
                        <option value="zh-Hant" lang="zh-Hant" selected=move || i18n.get_locale() == Locale::zh_Hant>{t!(i18n, lang.zh_hant)}</option>
                    </select>
                </label>
                <button
                    type="button"
                    id="theme-toggle"
                    class="theme"
                    title=move || t_string!(i18n, header.theme_hint)
                    on:click=move |_| toggle_theme(console)
                >
                    <span aria-hidden="true">{move || if dark_now() { "☀" } else { "☾" }}</span>
                    " "
                    {move || if dark_now() {
                        t_string!(i18n, header.theme_to_light).to_string()
                    } else {
                        t_string!(i18n, header.theme_to_dark).to_string()
                    }}
                </button>
                <button
                    type="button"
                    id="shortcuts-button"
                    title=move || t_string!(i18n, header.shortcuts_hint)
                    aria-haspopup="dialog"
                    on:click=move |_| console.shortcuts_open.update(|o| *o = !*o)
                >
                    <span aria-hidden="true">"? "</span>
                    {t!(i18n, header.shortcuts)}
                </button>
            </div>
        </header>
    }
}

/// The connection state: symbol, words and a tooltip that explains it.
#[component]
fn ConnStatus() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let state = move || match console.status.get() {
        Status::Idle => "idle",
        Status::Connecting => "connecting",
        Status::Resuming => "resuming",
        Status::Behind(_) => "behind",
        Status::Connected => "connected",
        Status::Offline { .. } => "offline",
    };
    let symbol = move || match console.status.get() {
        Status::Idle => "○",
        Status::Connecting => "◌",
        Status::Resuming => "↻",
        Status::Behind(_) => "⚠",
        Status::Connected => "●",
        Status::Offline { .. } => "✕",
    };
    let text = move || match console.status.get() {
        Status::Idle => t!(i18n, conn.idle).into_any(),
        Status::Connecting => t!(i18n, conn.connecting).into_any(),
        Status::Resuming => t!(i18n, conn.resuming).into_any(),
        Status::Behind(n) => t!(i18n, conn.behind, n = move || n).into_any(),
        Status::Connected => t!(i18n, conn.connected).into_any(),
        Status::Offline { retry_at_ms } => {
            let secs = retry_at_ms
                .saturating_sub(crate::web::now_ms())
                .div_ceil(1000);
            view! {
                {t!(i18n, conn.offline)}" · "{t!(i18n, conn.retry_in, seconds = move || secs)}
            }
            .into_any()
        }
    };
    let hint = move || match console.status.get() {
        Status::Idle => t_string!(i18n, conn.hint_idle).to_string(),
        Status::Connecting => t_string!(i18n, conn.hint_connecting).to_string(),
        Status::Resuming => t_string!(i18n, conn.hint_resuming).to_string(),
        Status::Behind(_) => t_string!(i18n, conn.hint_behind).to_string(),
        Status::Connected => t_string!(i18n, conn.hint_connected).to_string(),
        Status::Offline { .. } => t_string!(i18n, conn.hint_offline).to_string(),
    };
    view! {
        <p class="conn" id="conn-status" data-state=state title=hint role="status" aria-live="polite">
            <span class="sr-only">{t!(i18n, conn.label)}</span>
            <span class="icon" aria-hidden="true">{symbol}</span>
            " "
            <span class="text">{text}</span>
        </p>
    }
}
