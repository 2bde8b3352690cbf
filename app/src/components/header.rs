//! The header: brand, navigation, connection state, language switcher, theme toggle and the
//! shortcuts button. Status is never shown by colour alone: each state has its own symbol and
//! words.

use crate::custody::demo::VisitorError;
use crate::i18n::*;
use crate::locale::{set_language, tag_of};
use crate::socket::machine::Status;
use crate::state::toggle_theme;
use crate::state::{KeyState, Theme, use_console};
use leptos::prelude::*;
use leptos_i18n::td_string;
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
                        // The static demo's visitor key was refused: no read-only view, and why.
                        KeyState::None if let Some(e) = console.visitor_refused.get() => view! {
                            <span id="visitor-refused">{move || visitor_refused(i18n.get_locale(), e)}</span>
                        }.into_any(),
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

/// What the header says, in `locale`, when the static demo's visitor key document was refused
/// (`custody::demo::read_visitor`, docs/static-demo.md "Visitor view"): the demo's read-only
/// view could not be opened, why (one reason per refusal), and that signing in still works
/// (the demo key is read against the Registry on its own, `custody::demo::read`).
pub fn visitor_refused(locale: Locale, e: VisitorError) -> String {
    let reason = match e {
        VisitorError::Unrecognized => td_string!(locale, header.visitor_unrecognized),
        VisitorError::NotAHuman => td_string!(locale, header.visitor_not_a_human),
        VisitorError::Bound => td_string!(locale, header.visitor_bound),
    };
    td_string!(locale, header.visitor_refused, reason = reason).to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    const REFUSALS: [VisitorError; 3] = [
        VisitorError::Unrecognized,
        VisitorError::NotAHuman,
        VisitorError::Bound,
    ];

    /// Which refusal of the visitor key document gives which words: a key the Registry binds
    /// (one that could sign), a key naming no human of it, and a document not marked read-only
    /// each say so, word for word in English.
    #[test]
    fn each_refusal_of_the_visitor_key_says_its_own_reason() {
        let open = "Not signed in: the demo’s read-only view could not be opened";
        let still = "Signing in still works.";
        assert_eq!(
            visitor_refused(Locale::en, VisitorError::Bound),
            format!("{open} (its visitor key is bound in the Registry, so it could sign). {still}")
        );
        assert_eq!(
            visitor_refused(Locale::en, VisitorError::NotAHuman),
            format!("{open} (its visitor key names no human of the Registry). {still}")
        );
        assert_eq!(
            visitor_refused(Locale::en, VisitorError::Unrecognized),
            format!("{open} (the page gave no read-only visitor key). {still}")
        );
    }

    /// In French and Chinese too: one message per refusal, its reason filled in, each saying
    /// that signing in still works, and none mistaken for the plain "not signed in".
    #[test]
    fn the_refusal_messages_are_distinct_and_complete_in_every_locale() {
        for (locale, still, bound) in [
            (
                Locale::en,
                "Signing in still works.",
                "bound in the Registry",
            ),
            (
                Locale::fr,
                "Vous pouvez toujours vous connecter.",
                "liée dans le Registry",
            ),
            (Locale::zh_Hant, "仍可登入。", "已在 Registry 中繫結"),
        ] {
            let said: Vec<String> = REFUSALS
                .iter()
                .map(|e| visitor_refused(locale, *e))
                .collect();
            let distinct: std::collections::BTreeSet<&String> = said.iter().collect();
            assert_eq!(distinct.len(), REFUSALS.len(), "{locale:?}: {said:?}");
            for m in &said {
                assert!(m.ends_with(still), "{locale:?}: {m}");
                assert!(
                    !m.contains("{{") && !m.contains("()") && !m.contains("（）"),
                    "{m}"
                );
                assert_ne!(m, td_string!(locale, header.not_signed_in), "{m}");
            }
            assert!(said[2].contains(bound), "{locale:?}: {}", said[2]);
            assert!(
                !said[0].contains(bound) && !said[1].contains(bound),
                "{said:?}"
            );
        }
    }
}
