//! Any address without a view.

use crate::i18n::*;
use leptos::prelude::*;

#[component]
pub fn NotFound() -> impl IntoView {
    let i18n = use_i18n();
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, states.not_found_title)}</h1>
            <p>{t!(i18n, states.not_found_body)}</p>
            <a href="/">{t!(i18n, states.back_to_board)}</a>
        </section>
    }
}
