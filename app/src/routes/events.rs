//! Events (`/events`): every Event received, in Group order, each with its verified mark and
//! signing hash; a rejected Event is listed as rejected with its wire code; open sequence gaps
//! are shown, never papered over (§16).

use crate::app::tag_of;
use crate::components::states::{Empty, StreamStates};
use crate::components::wire;
use crate::format;
use crate::i18n::*;
use crate::state::{EventRow, use_console};
use leptos::prelude::*;

#[component]
pub fn Events() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, events.title)}</h1>
            <p class="intro">{t!(i18n, events.intro)}</p>
            <ul class="gaps">
                <For
                    each=move || console.gaps.get()
                    key=|g| g.clone()
                    children=move |(group, from, to)| view! {
                        <li class="gap" title=move || t_string!(i18n, events.gap_hint)>
                            <span class="icon" aria-hidden="true">"⚠"</span>" "
                            {t!(i18n, events.gap, group = move || group.clone(), from = move || from, to = move || to)}
                        </li>
                    }
                />
            </ul>
            <StreamStates>
                {move || {
                    let rows = console.events.get();
                    if rows.is_empty() {
                        view! { <Empty>{t!(i18n, events.empty)}</Empty> }.into_any()
                    } else {
                        view! {
                            <table class="events">
                                <thead>
                                    <tr>
                                        <th scope="col">{t!(i18n, events.group)}</th>
                                        <th scope="col">{t!(i18n, events.sequence)}</th>
                                        <th scope="col">{t!(i18n, events.kind)}</th>
                                        <th scope="col">{t!(i18n, events.occurred_at)}</th>
                                        <th scope="col">{t!(i18n, events.signing_hash)}</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {rows.into_iter().map(|r| view! { <Row row=r /> }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }
                }}
            </StreamStates>
        </section>
    }
}

#[component]
fn Row(row: EventRow) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let exact = row.occurred_at.clone();
    let when = move || {
        let tag = tag_of(i18n.get_locale());
        if console.exact_times.get() {
            exact.clone()
        } else {
            format::timestamp(tag, &exact).unwrap_or_else(|| exact.clone())
        }
    };
    let exact_title = row.occurred_at.clone();
    let mark = match (&row.signing_hash, &row.rejected) {
        (Some(h), _) => {
            let h = h.clone();
            view! {
                <td class="mark verified" title=move || t_string!(i18n, events.verified_hint)>
                    <span class="icon" aria-hidden="true">"✓"</span>" "{t!(i18n, events.verified)}" "
                    <code class="hash">{h}</code>
                </td>
            }
            .into_any()
        }
        (None, Some((code, reason))) => {
            let code2 = code.clone();
            let reason = reason.clone();
            view! {
                <td class="mark rejected" title=move || t_string!(i18n, events.rejected_hint)>
                    <span class="icon" aria-hidden="true">"✗"</span>" "{t!(i18n, events.rejected)}" "
                    <code>{code.clone()}</code>" "
                    {move || wire::explain_text(i18n.get_locale(), &code2).unwrap_or_default()}
                    <span class="reason">{reason}</span>
                </td>
            }
            .into_any()
        }
        _ => view! { <td></td> }.into_any(),
    };
    view! {
        <tr data-event-id=row.event_id.clone()>
            <td><code>{row.group_id.clone().unwrap_or_default()}</code></td>
            <td>{row.sequence.map(|s| s.to_string()).unwrap_or_default()}</td>
            <td><code>{row.kind.clone()}</code></td>
            <td><time datetime=exact_title.clone() title=exact_title>{when}</time></td>
            {mark}
        </tr>
    }
}
