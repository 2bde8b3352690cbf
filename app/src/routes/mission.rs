//! A Mission (`/mission`, `/mission/:group`): its WorkItem DAG. Opening a Mission's Group
//! follows it on the socket from its last contiguous position.

use crate::components::session;
use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

#[component]
pub fn Mission() -> impl IntoView {
    let i18n = use_i18n();
    let params = use_params_map();
    let group = move || params.with(|p| p.get("group"));
    Effect::new(move |_| {
        if let Some(g) = group() {
            session::watch(g);
        }
    });
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, mission.title)}</h1>
            <p class="intro">{t!(i18n, mission.intro)}</p>
            {move || group().map(|g| view! { <p class="group-id">{t!(i18n, mission.group, id = move || g.clone())}</p> })}
            <StreamStates>
                <Empty>{t!(i18n, mission.empty)}</Empty>
            </StreamStates>
        </section>
    }
}
