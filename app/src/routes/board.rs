//! The Mission board (`/`, `/board`): every Mission the human may see, by state (§7.1), from
//! `views::board::MissionBoard` over the replayed State: deadline, Coordinator, progress derived
//! from the DAG and Evidence (M-9), blockers, budget health, pending approvals; a text search
//! and state filter (`MissionBoard::filter`); the Mission tree. Status is text and symbol,
//! never colour alone.

use crate::components::ident::{Id, shared_prefix};
use crate::components::live::{ChildOf, Countdown, dimension_label, state_label};
use crate::components::proposals::ProposalsNotice;
use crate::components::states::{Empty, GroupsNotice, StreamStates};
use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;
use wasm_core::views::MissionState;
use wasm_core::views::approvals::ApprovalInbox;
use wasm_core::views::board::{BoardQuery, Health, MissionBoard, MissionCard, TreeNode};

#[component]
pub fn Board() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let text = RwSignal::new(String::new());
    let state_filter = RwSignal::new(String::new());
    let blockers_only = RwSignal::new(false);
    let board = move || {
        let viewer = console.viewer.get()?;
        let now = console.view_now();
        let seen = console.rejections.get();
        console.snapshot.with(|s| {
            let inbox = ApprovalInbox::build(&s.state, &viewer, &seen, now);
            Some(MissionBoard::build(&s.state, &viewer, &inbox, now))
        })
    };
    let query = move || BoardQuery {
        text: Some(text.get()).filter(|t| !t.trim().is_empty()),
        states: MissionState::parse(&state_filter.get())
            .into_iter()
            .collect(),
        with_blockers: blockers_only.get(),
        ..BoardQuery::default()
    };
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, board.title)}</h1>
            <p class="intro">{t!(i18n, board.intro)}</p>
            <StreamStates>
                // No Membership yet (or the Group list failed): said before the empty board.
                <GroupsNotice />
                // The demo's Missions waiting for a human to create them (own Organization).
                <ProposalsNotice />
                <form class="toolbar" role="search" on:submit=|ev| ev.prevent_default()>
                    <label for="board-search">{t!(i18n, board.search)}</label>
                    <input id="board-search" type="search" bind:value=text />
                    <label for="board-state">{t!(i18n, board.state_filter)}</label>
                    <select id="board-state" on:change=move |ev| state_filter.set(event_target_value(&ev))>
                        <option value="">{t!(i18n, board.all_states)}</option>
                        {MissionState::ALL.iter().copied().map(|s| view! {
                            <option value=s.as_str()>{move || state_label(i18n, s.as_str())}</option>
                        }).collect_view()}
                    </select>
                    <label class="check">
                        <input type="checkbox" id="board-blockers" bind:checked=blockers_only />
                        {t!(i18n, board.with_blockers)}
                    </label>
                </form>
                {move || match board() {
                    None => view! { <Empty>{t!(i18n, board.empty)}</Empty> }.into_any(),
                    Some(b) if b.cards().next().is_none() => view! { <Empty>{t!(i18n, board.empty)}</Empty> }.into_any(),
                    Some(b) => {
                        let q = query();
                        let shown: Vec<String> = b.filter(&q).into_iter().map(|c| c.mission_id.clone()).collect();
                        // The Coordinators' ids without the prefix they all share (the
                        // Organization's `urn:…:agent:`): a card's id fits its line; the whole id
                        // stays in the tooltip, for screen readers and for copying.
                        let elide = shared_prefix(b.cards().map(|c| c.coordinator_id.as_str()));
                        let columns = b.columns.iter().map(|(state, cards)| {
                            let st = state.as_str();
                            let cards: Vec<MissionCard> = cards.iter().filter(|c| shown.contains(&c.mission_id)).cloned().collect();
                            let n = cards.len();
                            view! {
                                <section class=if n == 0 { "column empty" } else { "column" } data-state=st aria-label=move || state_label(i18n, st)>
                                    <h2>{move || state_label(i18n, st)}" "<span class="count">"("{n}")"</span></h2>
                                    <ul class="cards">
                                        {cards.into_iter().map(|c| {
                                            // A child Mission's card names its parent (a link), when visible.
                                            let parent = c.parent_mission_id.as_deref().and_then(|p| b.card(p))
                                                .map(|p| (p.group_id.clone(), p.title.clone()));
                                            view! { <li><Card card=c parent elide /></li> }
                                        }).collect_view()}
                                    </ul>
                                </section>
                            }
                        }).collect_view();
                        let roots = b.roots.clone();
                        view! {
                            <div class="board-columns">{columns}</div>
                            <section class="mission-tree" aria-labelledby="tree-title">
                                <h2 id="tree-title">{t!(i18n, board.tree)}</h2>
                                <Tree nodes=roots board=b.clone() />
                            </section>
                        }.into_any()
                    }
                }}
            </StreamStates>
        </section>
    }
}

#[component]
fn Tree(nodes: Vec<TreeNode>, board: MissionBoard) -> AnyView {
    let i18n = use_i18n();
    view! {
        <ul class="tree">
            {nodes.into_iter().map(|n| {
                let card = board.card(&n.mission_id).cloned();
                let title = card.as_ref().map(|c| c.title.clone()).unwrap_or_else(|| n.mission_id.clone());
                let href = card.as_ref().map(|c| crate::format::mission_href(&c.group_id)).unwrap_or_default();
                let st = card.as_ref().map(|c| c.state.as_str()).unwrap_or("");
                let children = n.children.clone();
                let follow_ups = n.follow_ups.clone();
                let b2 = board.clone();
                let b3 = board.clone();
                view! {
                    <li>
                        <a href=href translate="no">{title}</a>" "<span class="mission-state">{move || state_label(i18n, st)}</span>
                        {(!children.is_empty()).then(|| view! { <Tree nodes=children.clone() board=b2.clone() /> })}
                        {(!follow_ups.is_empty()).then(|| view! {
                            <p class="hint">{t!(i18n, board.follow_ups)}</p>
                            <Tree nodes=follow_ups.clone() board=b3.clone() />
                        })}
                    </li>
                }
            }).collect_view()}
        </ul>
    }
    .into_any()
}

#[component]
fn Card(card: MissionCard, parent: Option<(String, String)>, elide: usize) -> impl IntoView {
    let i18n = use_i18n();
    let st = card.state.as_str();
    let p = card.progress;
    let (acc, tot, rev, failed) = (p.accepted, p.total, p.awaiting_review, p.failed);
    let per_mille = p.per_mille();
    let href = crate::format::mission_href(&card.group_id);
    let ledger = format!(
        "/ledger?mission={}",
        crate::format::query_value(&card.mission_id)
    );
    let coordinator = card.coordinator_id.clone();
    let pending = card.pending_approvals;
    let overdue = card.overdue;
    let deadline = card.deadline;
    let blockers = card.blockers.clone();
    let budget = card.budget.clone();
    view! {
        <article class="mission-card" data-mission-id=card.mission_id.clone() data-state=st>
            <h3><a href=href translate="no">{card.title.clone()}</a></h3>
            {parent.map(|(g, title)| view! {
                <ChildOf group=g title />
            })}
            <p class="mission-state"><strong>{move || state_label(i18n, st)}</strong>" · "{t!(i18n, board.revision, n = move || rev_of(card.revision))}</p>
            <dl class="facts">
                <dt>{t!(i18n, board.deadline)}</dt>
                <dd>
                    <Countdown at=deadline />
                    {overdue.then(|| view! { " "<span class="badge warn">"⚠ "{t!(i18n, board.overdue)}</span> })}
                </dd>
                <dt>"Coordinator"</dt>
                <dd><Id id=coordinator elide /></dd>
                <dt>{t!(i18n, board.progress)}</dt>
                // No WorkItem yet (a Mission just created, or seen earlier in time travel): said in
                // words, not as "0 of 0" beside an empty bar.
                <dd class="progress" data-total=tot.to_string()>
                    {if tot == 0 {
                        view! { <span class="hint">{t!(i18n, board.no_work_items)}</span> }.into_any()
                    } else {
                        view! {
                            <progress max="1000" value=per_mille.to_string() aria-label=move || t_string!(i18n, board.progress)></progress>" "
                            {t!(i18n, board.progress_text, accepted = move || acc, total = move || tot)}
                        }
                        .into_any()
                    }}
                    {(rev > 0).then(|| view! { " · "{t!(i18n, board.awaiting_review, n = move || rev)} })}
                    {(failed > 0).then(|| view! { " · "{t!(i18n, board.failed_items, n = move || failed)} })}
                </dd>
                <dt>{t!(i18n, board.approvals)}</dt>
                // Pending approvals lead to the Approvals view (this Mission's), where they are decided.
                <dd>{if pending > 0 { view! { <a class="pending" href=format!("/approvals?mission={}", crate::format::query_value(&card.mission_id))>{format!("⚑ {pending}")}</a> }.into_any() } else { view! { "—" }.into_any() }}</dd>
            </dl>
            {(!blockers.is_empty()).then(|| view! {
                <details class="blockers" open>
                    <summary>"■ "{t!(i18n, board.blockers)}" ("{blockers.len()}")"</summary>
                    <ul>{blockers.iter().map(|b| {
                        let s = b.state.as_str();
                        view! { <li><Id id=b.work_item_id.clone() />" — "{move || state_label(i18n, s)}{b.reason.clone().map(|r| view! { ": "<span translate="no">{r}</span> })}</li> }
                    }).collect_view()}</ul>
                </details>
            })}
            <details class="budget">
                <summary>{t!(i18n, board.budget)}" "{budget_summary(&budget)}</summary>
                <ul>{budget.iter().map(|d| {
                    let dim = d.dimension;
                    let (used, limit, h) = (d.used, d.limit, d.health);
                    view! { <li>{move || dimension_label(i18n, dim)}": "{used}" / "{limit.map(|l| l.to_string()).unwrap_or_else(|| "—".into())}" "{move || health_label(i18n, h)}</li> }
                }).collect_view()}</ul>
                <a href=ledger>{t!(i18n, nav.ledger)}</a>
            </details>
        </article>
    }
}

fn rev_of(r: u64) -> u64 {
    r
}

fn budget_summary(b: &[wasm_core::views::board::DimensionHealth]) -> &'static str {
    if b.iter().any(|d| d.health == Health::Exhausted) {
        "✖"
    } else if b.iter().any(|d| d.health == Health::Warning) {
        "⚠"
    } else {
        "✓"
    }
}

fn health_label(i18n: leptos_i18n::I18nContext<Locale>, h: Health) -> String {
    match h {
        Health::NotGranted => format!("— {}", t_string!(i18n, board.not_granted)),
        Health::Ok => format!("✓ {}", t_string!(i18n, board.health_ok)),
        Health::Warning => format!("⚠ {}", t_string!(i18n, board.health_warning)),
        Health::Exhausted => format!("✖ {}", t_string!(i18n, board.health_exhausted)),
    }
}
