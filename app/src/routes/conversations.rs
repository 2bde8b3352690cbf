//! Conversations (`/conversations`): the Messages of each visible Group's Conversations with
//! their amendment chains (corrections, retractions, redactions: new facts, never rewrites),
//! from `views::conversations`. A Message never authorizes anything (§4 invariant 2, §9): no
//! control here is derived from a Message's content; the text is shown as text only.

use crate::components::ident::Id;
use crate::components::live::Timestamp;
use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;
use wasm_core::views::conversations::{AmendmentKind, ConversationView, Effective};

#[component]
pub fn Conversations() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let convs = move || {
        let viewer = console.viewer.get()?;
        Some(
            console
                .snapshot
                .with(|s| ConversationView::all(&s.state, &viewer)),
        )
    };
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, conversations.title)}</h1>
            <p class="intro">{t!(i18n, conversations.intro)}</p>
            <p class="note"><span class="icon" aria-hidden="true">"ℹ"</span>" "{t!(i18n, conversations.not_authority)}</p>
            <StreamStates>
                {move || {
                    let list: Vec<ConversationView> = convs().unwrap_or_default().into_iter().filter(|c| !c.messages.is_empty()).collect();
                    if list.is_empty() {
                        view! { <Empty>{t!(i18n, conversations.empty)}</Empty> }.into_any()
                    } else {
                        list.into_iter().map(|c| view! { <Conversation conv=c /> }).collect_view().into_any()
                    }
                }}
            </StreamStates>
        </section>
    }
}

#[component]
fn Conversation(conv: ConversationView) -> impl IntoView {
    let i18n = use_i18n();
    let n = conv.messages.len();
    view! {
        <section class="conversation" data-conversation=conv.conversation_id.clone()>
            // Headed by its Mission's title (a link to its graph); the ids below, whole.
            <h2>
                {if conv.mission_title.is_empty() {
                    view! { <code>{conv.conversation_id.clone()}</code> }.into_any()
                } else {
                    view! { <a href=crate::format::mission_href(&conv.group_id) translate="no">{conv.mission_title.clone()}</a> }.into_any()
                }}
            </h2>
            <p class="hint">{move || if crate::locale::singular(crate::locale::tag_of(i18n.get_locale()), n) {
                t!(i18n, conversations.messages_single, n = move || n).into_any()
            } else {
                t!(i18n, conversations.messages, n = move || n).into_any()
            }}" · Conversation "<Id id=conv.conversation_id.clone() />" · Mission "<Id id=conv.mission_id.clone() /></p>
            <ol class="messages">
                {conv.messages.into_iter().map(|m| {
                    let (cls, text) = match &m.effective {
                        Effective::Original(t) => ("original", Some(t.clone())),
                        Effective::Corrected(t) => ("corrected", Some(t.clone())),
                        Effective::Retracted => ("retracted", m.original.clone()),
                        Effective::Redacted => ("redacted", None),
                    };
                    let status = match m.effective {
                        Effective::Original(_) => None,
                        Effective::Corrected(_) => Some(t_string!(i18n, conversations.corrected)),
                        Effective::Retracted => Some(t_string!(i18n, conversations.retracted)),
                        Effective::Redacted => Some(t_string!(i18n, conversations.redacted)),
                    };
                    let chain = m.chain.clone();
                    view! {
                        <li class=format!("message {cls}") data-message-id=m.id.clone()>
                            <p class="meta"><code>{m.author.id.0.clone()}</code>" · "<Timestamp exact=m.created_at.format() />
                                {status.map(|s| view! { " · "<strong>{s}</strong> })}</p>
                            {match text {
                                Some(t) if cls == "retracted" => view! { <p class="text" translate="no"><del>{t}</del></p> }.into_any(),
                                Some(t) => view! { <p class="text" translate="no">{t}</p> }.into_any(),
                                None => view! { <p class="text redacted">"█ "{t!(i18n, conversations.redacted_body)}</p> }.into_any(),
                            }}
                            {(!chain.is_empty()).then(|| view! {
                                <details><summary>{t!(i18n, conversations.chain)}</summary>
                                    <ol>{chain.into_iter().map(|a| {
                                        let k = match a.kind {
                                            AmendmentKind::Correction => t_string!(i18n, conversations.corrected),
                                            AmendmentKind::Retraction => t_string!(i18n, conversations.retracted),
                                            AmendmentKind::Redaction => t_string!(i18n, conversations.redacted),
                                        };
                                        view! { <li><strong>{k}</strong>" · "<code>{a.actor.id.0.clone()}</code>" · "<span translate="no">{a.reason.clone()}{a.replacement.clone().map(|r| format!(" → {r}"))}</span></li> }
                                    }).collect_view()}</ol>
                                </details>
                            })}
                        </li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
}
