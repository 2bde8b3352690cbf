//! Agents (`/agents`): Agent Cards and Session Epochs.

use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use leptos::prelude::*;

#[component]
pub fn Agents() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, agents.title)}</h1>
            <p class="intro">{t!(i18n, agents.intro)}</p>
            <StreamStates>
                <Empty>{t!(i18n, agents.empty)}</Empty>
            </StreamStates>
        </section>
    }
}
