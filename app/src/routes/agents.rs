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
use std::collections::BTreeMap;
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
            let ids: Vec<&str> = list.iter().map(|c| c.agent_id.as_str()).collect();
            let seen = console
                .log
                .with_value(|l| last_seen(l.folded_events(), &ids));
            let rows =
                list.into_iter()
                    .map(|c| {
                        let members: Vec<(String, Vec<String>, u64, String)> = visible
                            .iter()
                            .filter_map(|g| {
                                st.groups.get(*g)?.memberships.get(&c.agent_id).map(|m| {
                                    ((*g).clone(), m.roles.clone(), m.epoch, m.status.clone())
                                })
                            })
                            .collect();
                        let last = seen.get(&c.agent_id).copied();
                        Row {
                            card: c,
                            members,
                            last,
                        }
                    })
                    .collect::<Vec<_>>();
            in_view_order(rows)
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
                        let (mine, others): (Vec<Row>, Vec<Row>) =
                            rows.into_iter().partition(|r| !r.members.is_empty());
                        let n_others = others.len();
                        view! {
                            <ul class="agent-cards">{mine.into_iter().map(|r| view! { <AgentCard row=r /> }).collect_view()}</ul>
                            {(n_others > 0).then(|| view! {
                                <details class="other-agents">
                                    <summary>{t!(i18n, agents.others, count = move || n_others)}</summary>
                                    <ul class="agent-cards">{others.into_iter().map(|r| view! { <AgentCard row=r /> }).collect_view()}</ul>
                                </details>
                            })}
                        }.into_any()
                    }
                }}
            </StreamStates>
        </section>
    }
}

/// One Agent as the view shows it: its card, its Memberships in the Groups the human sees
/// (Group, roles, Membership Epoch, status) and the instant of the last Event it caused there.
struct Row {
    card: Card,
    members: Vec<(String, Vec<String>, u64, String)>,
    last: Option<Micros>,
}

/// The instant of the last Event each of `agents` caused in `events` (log order), in one pass
/// from the newest Event back that stops once every Agent is found: a scan of the whole log per
/// Agent ran on every live Event (Agents × Events lookups).
fn last_seen(events: &[Value], agents: &[&str]) -> BTreeMap<String, Micros> {
    let mut found: BTreeMap<String, Micros> = BTreeMap::new();
    for e in events.iter().rev() {
        if found.len() == agents.len() {
            break;
        }
        let Some(actor) = e.pointer("/actor/id").and_then(Value::as_str) else {
            continue;
        };
        if agents.contains(&actor)
            && !found.contains_key(actor)
            && let Some(at) = e
                .pointer("/occurredAt")
                .and_then(Value::as_str)
                .and_then(Micros::parse)
        {
            found.insert(actor.to_owned(), at);
        }
    }
    found
}

/// The Agents working in the human's Groups first, the most recently active first (never seen
/// last), then the rest of the Organization; ties by name, then id.
fn in_view_order(mut rows: Vec<Row>) -> Vec<Row> {
    wasm_core::order::sort_by(&mut rows, |a, b| {
        a.members
            .is_empty()
            .cmp(&b.members.is_empty())
            .then_with(|| b.last.map(|m| m.0).cmp(&a.last.map(|m| m.0)))
            .then_with(|| a.card.name.cmp(&b.card.name))
            .then_with(|| a.card.agent_id.cmp(&b.card.agent_id))
    });
    rows
}

#[component]
fn AgentCard(row: Row) -> impl IntoView {
    let i18n = use_i18n();
    let Row {
        card: c,
        members,
        last,
    } = row;
    view! {
        <li class="agent-card" data-agent-id=c.agent_id.clone()>
            <h2><span translate="no">{c.name.clone()}</span>" "<code>{c.agent_id.clone()}</code></h2>
            <p>"Agent Card v"{c.version}" · "{t!(i18n, agents.owner)}" "<code>{c.owner.clone()}</code></p>
            <p class="presence">{match last {
                Some(at) => view! { "● "{t!(i18n, agents.last_seen)}" "<Countdown at=at /> }.into_any(),
                None => view! { "○ "{t!(i18n, agents.not_seen)} }.into_any(),
            }}</p>
            <p>{t!(i18n, agents.capabilities)}": "<code>{c.capabilities.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")}</code></p>
            {(!members.is_empty()).then(|| view! {
                <ul class="memberships">{members.into_iter().map(|(g, roles, epoch, status)| {
                    let roles = (!roles.is_empty()).then(|| roles.join(", "));
                    view! {
                        <li><code>{g}</code>" · "{match roles {
                            Some(r) => view! { <code class="roles">{r}</code> }.into_any(),
                            None => view! { <span class="roles none">{t!(i18n, agents.no_role)}</span> }.into_any(),
                        }}" · e"{epoch}" · "<code>{status}</code></li>
                    }
                }).collect_view()}</ul>
            })}
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::{Card, Row, cards_of, in_view_order, last_seen};
    use wasm_core::authority::Micros;
    use wasm_core::json;

    fn card(id: &str, name: &str) -> Card {
        Card {
            agent_id: id.into(),
            name: name.into(),
            version: 1,
            owner: "urn:h".into(),
            capabilities: Vec::new(),
        }
    }

    fn event(actor: &str, at: &str) -> json::Value {
        json::parse(
            format!(r#"{{"actor":{{"type":"agent","id":"{actor}"}},"occurredAt":"{at}"}}"#)
                .as_bytes(),
        )
        .expect("json")
    }

    #[test]
    fn each_agent_is_last_seen_at_its_newest_event_and_an_agent_without_one_is_not_seen() {
        let events = [
            event("urn:a", "2026-12-03T07:00:00Z"),
            event("urn:b", "2026-12-03T07:01:00Z"),
            event("urn:a", "2026-12-03T07:02:00Z"),
            event("urn:other", "2026-12-03T07:03:00Z"),
            json::parse(br#"{"occurredAt":"2026-12-03T07:04:00Z"}"#).expect("json"),
        ];
        let seen = last_seen(&events, &["urn:a", "urn:b", "urn:c"]);
        assert_eq!(
            seen.get("urn:a"),
            Micros::parse("2026-12-03T07:02:00Z").as_ref()
        );
        assert_eq!(
            seen.get("urn:b"),
            Micros::parse("2026-12-03T07:01:00Z").as_ref()
        );
        assert_eq!(seen.get("urn:c"), None);
        assert_eq!(seen.len(), 2);
        assert!(last_seen(&[], &["urn:a"]).is_empty());
    }

    #[test]
    fn agents_in_the_humans_groups_come_first_most_recent_first_then_the_rest_by_name() {
        let at = |t: &str| Micros::parse(t);
        let member = || {
            vec![(
                "urn:g".to_owned(),
                vec!["worker".to_owned()],
                1,
                "active".to_owned(),
            )]
        };
        let rows = vec![
            Row {
                card: card("urn:z", "zed"),
                members: Vec::new(),
                last: at("2026-12-03T08:00:00Z"),
            },
            Row {
                card: card("urn:q", "quiet"),
                members: member(),
                last: None,
            },
            Row {
                card: card("urn:o", "old"),
                members: member(),
                last: at("2026-12-03T06:00:00Z"),
            },
            Row {
                card: card("urn:n", "new"),
                members: member(),
                last: at("2026-12-03T07:00:00Z"),
            },
            Row {
                card: card("urn:b", "bee"),
                members: Vec::new(),
                last: None,
            },
        ];
        let names: Vec<String> = in_view_order(rows)
            .into_iter()
            .map(|r| r.card.name)
            .collect();
        assert_eq!(names, ["new", "old", "quiet", "zed", "bee"]);
    }

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
