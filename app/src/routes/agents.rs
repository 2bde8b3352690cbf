//! Agents (`/agents`): the Organization's Agent Cards (`GET /api/registry/agent-cards`, the
//! signed documents of `agent-card.schema.json`: `cardVersion`, the `owner` actor, capabilities
//! with their semantic versions), their Memberships in the Groups the human sees (from the replayed
//! State), and live presence as the human can observe it: the last Event each Agent caused in
//! those Groups (PING presence records go to the server only, §6.2).

use crate::components::live::Countdown;
use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;
use wasm_core::authority::Micros;
use wasm_core::json::Value;

#[derive(Clone, Debug, PartialEq)]
struct Card {
    agent_id: String,
    name: String,
    /// `cardVersion` (§ Agent Card: a positive integer, raised with each new card).
    version: u64,
    /// The owner actor's id (`owner` is an actor object: `{type, id}`).
    owner: String,
    /// Each capability's id and its semantic version, as the card states them.
    capabilities: Vec<(String, String)>,
}

/// The cards of `GET /api/registry/agent-cards` (a list, or an object holding one).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn cards_of(v: &Value) -> Vec<Card> {
    let list = match v {
        Value::Array(a) => a.clone(),
        Value::Object(o) => o
            .iter()
            .find_map(|(_, v)| match v {
                Value::Array(a) => Some(a.clone()),
                _ => None,
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    list.iter()
        .map(|c| c.pointer("/card").unwrap_or(c))
        .filter_map(|c| {
            let s = |p: &str| c.pointer(p).and_then(Value::as_str).map(str::to_owned);
            let n = |v: &Value, p: &str| match v.pointer(p) {
                Some(Value::Number(n)) => n.as_safe_u64(),
                _ => None,
            };
            let caps = match c.pointer("/capabilities") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|k| {
                        Some((
                            k.pointer("/id").and_then(Value::as_str)?.to_owned(),
                            k.pointer("/version")
                                .and_then(Value::as_str)
                                .unwrap_or("?")
                                .to_owned(),
                        ))
                    })
                    .collect(),
                _ => Vec::new(),
            };
            Some(Card {
                agent_id: s("/agentId")?,
                name: s("/displayName").unwrap_or_default(),
                version: n(c, "/cardVersion").unwrap_or(0),
                owner: s("/owner/id").unwrap_or_default(),
                capabilities: caps,
            })
        })
        .collect()
}

#[component]
pub fn Agents() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let cards = RwSignal::new(Vec::<Card>::new());
    #[cfg(target_arch = "wasm32")]
    leptos::task::spawn_local(async move {
        if let Ok(t) = crate::web::get_text("/api/registry/agent-cards").await
            && let Ok(v) = wasm_core::json::parse(t.as_bytes())
        {
            cards.set(cards_of(&v));
        }
    });
    let rows = move || {
        let viewer = console.viewer.get();
        let list = cards.get();
        console.snapshot.with(|s| {
            let st = &s.state;
            let visible: Vec<&String> = st
                .missions
                .values()
                .filter(|m| viewer.as_ref().is_some_and(|v| v.sees(st, m)))
                .map(|m| &m.group_id)
                .collect();
            list.into_iter()
                .map(|c| {
                    let members: Vec<(String, Vec<String>, u64, String)> =
                        visible
                            .iter()
                            .filter_map(|g| {
                                st.groups.get(*g)?.memberships.get(&c.agent_id).map(|m| {
                                    ((*g).clone(), m.roles.clone(), m.epoch, m.status.clone())
                                })
                            })
                            .collect();
                    let last = console.log.with_value(|l| {
                        l.folded_events()
                            .iter()
                            .rev()
                            .find(|e| {
                                e.pointer("/actor/id").and_then(Value::as_str)
                                    == Some(c.agent_id.as_str())
                            })
                            .and_then(|e| e.pointer("/occurredAt").and_then(Value::as_str))
                            .and_then(Micros::parse)
                    });
                    (c, members, last)
                })
                .collect::<Vec<_>>()
        })
    };
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, agents.title)}</h1>
            <p class="intro">{t!(i18n, agents.intro)}</p>
            <StreamStates>
                {move || {
                    let rows = rows();
                    if rows.is_empty() {
                        view! { <Empty>{t!(i18n, agents.empty)}</Empty> }.into_any()
                    } else {
                        view! { <ul class="agent-cards">{rows.into_iter().map(|(c, members, last)| view! {
                            <li class="agent-card" data-agent-id=c.agent_id.clone()>
                                <h2><span translate="no">{c.name.clone()}</span>" "<code>{c.agent_id.clone()}</code></h2>
                                <p>"Agent Card v"{c.version}" · "{t!(i18n, agents.owner)}" "<code>{c.owner.clone()}</code></p>
                                <p class="presence">{match last {
                                    Some(at) => view! { "● "{t!(i18n, agents.last_seen)}" "<Countdown at=at /> }.into_any(),
                                    None => view! { "○ "{t!(i18n, agents.not_seen)} }.into_any(),
                                }}</p>
                                <p>{t!(i18n, agents.capabilities)}": "<code>{c.capabilities.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")}</code></p>
                                {(!members.is_empty()).then(|| view! {
                                    <ul class="memberships">{members.into_iter().map(|(g, roles, epoch, status)| view! {
                                        <li><code>{g}</code>" · "<code>{roles.join(", ")}</code>" · e"{epoch}" · "<code>{status}</code></li>
                                    }).collect_view()}</ul>
                                })}
                            </li>
                        }).collect_view()}</ul> }.into_any()
                    }
                }}
            </StreamStates>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::{Card, cards_of};
    use wasm_core::json;

    #[test]
    fn a_signed_agent_card_reads_its_card_version_owner_and_capability_versions() {
        // The shape `GET /api/registry/agent-cards` serves (agent-card.schema.json), trimmed
        // to the members the view reads.
        let body = br#"{"organizationId":"urn:o","agentCards":[{"agentId":"urn:missionweaveprotocol:agent:analyst","cardVersion":3,"displayName":"analyst","owner":{"type":"human","id":"urn:missionweaveprotocol:human:ops"},"capabilities":[{"id":"requirements.analysis","version":"1.2.0"},{"id":"software.rust","version":"2.0.0"}]}]}"#;
        let v = json::parse(body).expect("json");
        assert_eq!(
            cards_of(&v),
            [Card {
                agent_id: "urn:missionweaveprotocol:agent:analyst".into(),
                name: "analyst".into(),
                version: 3,
                owner: "urn:missionweaveprotocol:human:ops".into(),
                capabilities: vec![
                    ("requirements.analysis".into(), "1.2.0".into()),
                    ("software.rust".into(), "2.0.0".into()),
                ],
            }]
        );
    }
}
