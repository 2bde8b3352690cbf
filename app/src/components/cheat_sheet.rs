//! The `?` cheat sheet: every keyboard shortcut, in the chosen language.

use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;

#[component]
pub fn CheatSheet() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let close = move |_| console.shortcuts_open.set(false);
    view! {
        <Show when=move || console.shortcuts_open.get()>
            <div class="backdrop" on:click=close></div>
            <div class="dialog" id="cheat-sheet" role="dialog" aria-modal="true" aria-labelledby="cheat-title">
                <h2 id="cheat-title">{t!(i18n, shortcuts.title)}</h2>
                <table>
                    <thead>
                        <tr><th scope="col">{t!(i18n, shortcuts.key)}</th><th scope="col">{t!(i18n, shortcuts.action)}</th></tr>
                    </thead>
                    <tbody>
                        <tr><td><kbd>"?"</kbd></td><td>{t!(i18n, shortcuts.help)}</td></tr>
                        <tr><td><kbd>"t"</kbd></td><td>{t!(i18n, shortcuts.theme)}</td></tr>
                        <tr><td><kbd>"l"</kbd></td><td>{t!(i18n, shortcuts.language)}</td></tr>
                        <tr><td><kbd>{t!(i18n, shortcuts.esc_key)}</kbd></td><td>{t!(i18n, shortcuts.escape)}</td></tr>
                    </tbody>
                </table>
                <h3>{t!(i18n, shortcuts.go)}</h3>
                <ul class="go">
                    <li>{t!(i18n, shortcuts.go_board)}</li>
                    <li>{t!(i18n, shortcuts.go_mission)}</li>
                    <li>{t!(i18n, shortcuts.go_ledger)}</li>
                    <li>{t!(i18n, shortcuts.go_approvals)}</li>
                    <li>{t!(i18n, shortcuts.go_events)}</li>
                    <li>{t!(i18n, shortcuts.go_conversations)}</li>
                    <li>{t!(i18n, shortcuts.go_agents)}</li>
                    <li>{t!(i18n, shortcuts.go_protocol)}</li>
                    <li>{t!(i18n, shortcuts.go_sign_in)}</li>
                    <li>{t!(i18n, shortcuts.go_settings)}</li>
                </ul>
                <button type="button" id="cheat-close" on:click=close autofocus>{t!(i18n, shortcuts.close)}</button>
            </div>
        </Show>
    }
}
