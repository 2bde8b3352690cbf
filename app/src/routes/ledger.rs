//! The Budget Ledger (`/ledger`): limits, usage and headroom in the six dimensions (§12).

use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use leptos::prelude::*;

#[component]
pub fn Ledger() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, ledger.title)}</h1>
            <p class="intro">{t!(i18n, ledger.intro)}</p>
            <StreamStates>
                <Empty>{t!(i18n, ledger.empty)}</Empty>
            </StreamStates>
        </section>
    }
}
