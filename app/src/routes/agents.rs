//! Agents (`/agents`): the Organization's Agent Cards (`GET /api/registry/agent-cards`, the
//! signed documents of `agent-card.schema.json`: `cardVersion`, the `owner` actor, capabilities
//! with their semantic versions), their Memberships in the Groups the human sees (from the replayed
//! State), and live presence as the human can observe it: the last Event each Agent caused in
//! those Groups (PING presence records go to the server only, §6.2).

use crate::components::ident::Id;
use crate::components::live::Countdown;
use crate::components::states::{Empty, StreamStates};
use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;
use wasm_core::authority::Micros;
use wasm_core::json::Value;
use wasm_core::views::agents::{
    MembershipView, last_seen, memberships_in, standing, visible_groups,
};

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
            let groups = viewer
                .as_ref()
                .map(|v| visible_groups(st, v))
                .unwrap_or_default();
            let ids: Vec<&str> = list.iter().map(|c| c.agent_id.as_str()).collect();
            let seen = console
                .log
                .with_value(|l| last_seen(l.folded_events(), &ids));
            let rows = list
                .into_iter()
                .map(|c| Row {
                    members: memberships_in(st, &groups, &c.agent_id),
                    last: seen.get(&c.agent_id).copied(),
                    card: c,
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
/// and the instant of the last Event it caused there.
struct Row {
    card: Card,
    members: Vec<MembershipView>,
    last: Option<Micros>,
}

/// The view's order (`views::agents::standing`): the Agents working in the human's Groups
/// first, the most recently active first.
fn in_view_order(mut rows: Vec<Row>) -> Vec<Row> {
    fn key(r: &Row) -> (bool, std::cmp::Reverse<Option<i64>>, &str, &str) {
        standing(
            !r.members.is_empty(),
            r.last,
            &r.card.name,
            &r.card.agent_id,
        )
    }
    wasm_core::order::sort_by(&mut rows, |a, b| key(a).cmp(&key(b)));
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
            <h2><span translate="no">{c.name.clone()}</span>" "<Id id=c.agent_id.clone() /></h2>
            <p>"Agent Card v"{c.version}" · "{t!(i18n, agents.owner)}" "<Id id=c.owner.clone() /></p>
            <p class="presence">{match last {
                Some(at) => view! { "● "{t!(i18n, agents.last_seen)}" "<Countdown at=at /> }.into_any(),
                None => view! { "○ "{t!(i18n, agents.not_seen)} }.into_any(),
            }}</p>
            <p>{t!(i18n, agents.capabilities)}": "<code>{c.capabilities.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")}</code></p>
            {(!members.is_empty()).then(|| view! {
                <ul class="memberships">{members.into_iter().map(|m| {
                    let roles = (!m.roles.is_empty()).then(|| m.roles.join(", "));
                    let MembershipView { group_id, mission_title, epoch, status, .. } = m;
                    // Named by its Mission's title, a link to its graph; the Group id whole
                    // below it (or alone while the Mission is not known yet).
                    let name = (!mission_title.is_empty()).then(|| view! {
                        <a href=crate::format::mission_href(&group_id) translate="no">{mission_title}</a>" "
                    });
                    view! {
                        <li>{name}<Id id=group_id.clone() />" · "{match roles {
                            Some(r) => view! { <code class="roles">{r}</code> }.into_any(),
                            None => view! { <span class="roles none">{t!(i18n, agents.no_role)}</span> }.into_any(),
                        }}" · e"{epoch}" · "<code>{status.as_str()}</code></li>
                    }
                }).collect_view()}</ul>
            })}
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::{Card, Row, cards_of, in_view_order};
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

    #[test]
    fn agents_in_the_humans_groups_come_first_most_recent_first_then_the_rest_by_name() {
        let at = |t: &str| Micros::parse(t);
        let member = || {
            vec![wasm_core::views::agents::MembershipView {
                group_id: "urn:g".to_owned(),
                mission_id: "urn:m".to_owned(),
                mission_title: "M".to_owned(),
                roles: vec!["worker".to_owned()],
                status: wasm_core::model::membership::MembershipState::Active,
                epoch: 1,
            }]
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
