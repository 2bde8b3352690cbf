//! Approvals (`/approvals`): what waits for a human decision (§12).

use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use leptos::prelude::*;

#[component]
pub fn Approvals() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, approvals.title)}</h1>
            <p class="intro">{t!(i18n, approvals.intro)}</p>
            <StreamStates>
                <Empty>{t!(i18n, approvals.empty)}</Empty>
            </StreamStates>
        </section>
    }
}
