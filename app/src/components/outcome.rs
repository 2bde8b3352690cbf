//! A sent Command's outcome as the human sees it: waiting, accepted with its Events verified in
//! this browser (and the stored decision that carries their signature), refused with the wire
//! code explained, untrusted, or failed on the network. The Approvals view and the demo's
//! proposed Missions show it alike.

use crate::components::wire;
use crate::i18n::*;
use crate::state::SentState;
use leptos::prelude::*;
use leptos_i18n::I18nContext;

/// A sent Command's outcome (also the demo proposals' `mission.create`).
pub fn outcome_view(i18n: I18nContext<Locale>, s: SentState) -> AnyView {
    match s {
        SentState::Waiting => view! { <p class="outcome waiting" role="status">{t!(i18n, approvals.waiting)}</p> }.into_any(),
        SentState::Accepted(r) => view! {
            <div class="outcome accepted" role="status">
                <p><span class="icon" aria-hidden="true">"✓"</span>" "{t!(i18n, approvals.accepted)}</p>
                <ul>
                    {r.events.into_iter().map(|e| { let eid = e.event_id.clone(); view! {
                        <li class="receipt-event" data-event-id=eid>
                            <code>{e.kind}</code>" · "<code>{e.event_id}</code>" · "{t!(i18n, approvals.event_verified)}" "
                            <code class="hash">{e.signing_hash}</code>
                        </li>
                    }}).collect_view()}
                </ul>
                {r.stored.map(|d| {
                    let member = d.member.to_owned();
                    let id = d.id.clone();
                    view! {
                        <p class="stored">
                            {t!(i18n, approvals.stored, member = move || member.clone(), id = move || id.clone())}" "
                            <code class="hash stored-hash">{d.command_signing_hash}</code>
                        </p>
                    }
                })}
            </div>
        }
        .into_any(),
        SentState::Refused(e) => {
            let code = e.code;
            view! {
                <div class="outcome refused" role="alert">
                    <p>
                        <span class="icon" aria-hidden="true">"✕"</span>" "{t!(i18n, approvals.refused)}" "
                        <code class="wire-code">{code.as_str()}</code>" — "
                        {move || wire::explain(i18n.get_locale(), code)}
                    </p>
                    <p><code class="wire-message">{e.message.0.clone()}</code></p>
                </div>
            }
            .into_any()
        }
        SentState::Untrusted(e) => {
            let d = format!("{e:?}");
            view! { <p class="outcome untrusted" role="alert">{t!(i18n, approvals.untrusted, detail = move || d.clone())}</p> }.into_any()
        }
        SentState::Failed(d) => view! { <p class="outcome failed" role="alert">{t!(i18n, approvals.failed, detail = move || d.clone())}</p> }.into_any(),
    }
}

/// The outcome's state as a `data-state` value (the tests read it).
pub fn state_attr(s: &SentState) -> &'static str {
    match s {
        SentState::Waiting => "waiting",
        SentState::Accepted(_) => "accepted",
        SentState::Refused(_) => "refused",
        SentState::Untrusted(_) => "untrusted",
        SentState::Failed(_) => "failed",
    }
}
