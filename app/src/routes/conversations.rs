//! Conversations (`/conversations`): Messages of a Group. A Message never authorizes
//! anything; the view says so.

use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use leptos::prelude::*;

#[component]
pub fn Conversations() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, conversations.title)}</h1>
            <p class="intro">{t!(i18n, conversations.intro)}</p>
            <p class="note"><span class="icon" aria-hidden="true">"ℹ"</span>" "{t!(i18n, conversations.not_authority)}</p>
            <StreamStates>
                <Empty>{t!(i18n, conversations.empty)}</Empty>
            </StreamStates>
        </section>
    }
}
