//! The Mission board (`/`, `/board`): every Mission by state.

use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use leptos::prelude::*;

#[component]
pub fn Board() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, board.title)}</h1>
            <p class="intro">{t!(i18n, board.intro)}</p>
            <StreamStates>
                <Empty>{t!(i18n, board.empty)}</Empty>
            </StreamStates>
        </section>
    }
}
