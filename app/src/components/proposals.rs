//! The demo's proposed Missions (`GET /api/demo/proposals`, a signed read): in an Organization
//! of one's own the server's simulated Agents wait for a human to create their two root
//! Missions (`mission.create` is human-only, §7.1). Each is shown with what it asks for, and
//! creating it goes through the signing summary like every decision; the answer comes back over
//! `POST /api/commands` (the human follows no Group of the Mission before it exists) and the new
//! Group is followed at once. Nothing is shown where the server proposes nothing (404, or a
//! development Organization, whose demo human creates them itself). The board says that
//! Missions wait ([`ProposalsNotice`]); they are created under Approvals ([`DemoProposals`]),
//! so the signing code stays in that view's chunk, out of the first view.

use crate::commands::{self, Author, Draft, Fresh, MissionProposal};
use crate::components::signing_summary::SigningSummaryDialog;
use crate::i18n::*;
use crate::state::{KeyState, use_console};
use leptos::prelude::*;

/// How often the list is read again while some proposal waits.
#[cfg(target_arch = "wasm32")]
const POLL_MS: i32 = 10_000;

/// The demo's proposals, read now and every `POLL_MS` while some wait and a key is unlocked;
/// and why they could not be read.
fn use_proposals() -> (RwSignal<Vec<MissionProposal>>, RwSignal<Option<String>>) {
    let console = use_console();
    let proposals = RwSignal::new(Vec::<MissionProposal>::new());
    let failed = RwSignal::new(None::<String>);
    let alive = StoredValue::new(true);
    on_cleanup(move || alive.set_value(false));
    Effect::new(move |_| {
        let KeyState::Unlocked { principal_id, .. } = console.key.get() else {
            proposals.set(Vec::new());
            return;
        };
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(async move {
            loop {
                let Some((signer, key_id)) = console.credentials() else {
                    break;
                };
                match crate::web::signed_get("/api/demo/proposals", &signer, &key_id).await {
                    Ok((status, body)) => match commands::proposals_of(status, &body) {
                        Ok(list) => {
                            failed.set(None);
                            proposals.set(list);
                        }
                        Err(e) => failed.set(Some(e)),
                    },
                    Err(e) => failed.set(Some(e)),
                }
                let same = matches!(
                    console.key.get_untracked(),
                    KeyState::Unlocked { principal_id: p, .. } if p == principal_id
                );
                if !alive.try_get_value().unwrap_or(false)
                    || !same
                    || proposals.with_untracked(Vec::is_empty)
                {
                    break;
                }
                crate::web::sleep_ms(POLL_MS).await;
            }
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (principal_id, alive, failed);
    });
    (proposals, failed)
}

/// On the board: that the demo waits for Missions only a human can create, and where.
#[component]
pub fn ProposalsNotice() -> impl IntoView {
    let i18n = use_i18n();
    let (proposals, _) = use_proposals();
    move || {
        let n = proposals.with(Vec::len);
        if n == 0 {
            return ().into_any();
        }
        view! {
            <div class="state" id="demo-proposals-notice" role="status">
                <span class="icon" aria-hidden="true">"◷"</span>
                <p>
                    {t!(i18n, proposals.notice, n = move || n.to_string())}" "
                    <a href="/approvals">{t!(i18n, proposals.go)}</a>
                </p>
            </div>
        }
        .into_any()
    }
}

/// Under Approvals: each proposed Mission with what it asks for, created through the signing
/// summary.
#[component]
pub fn DemoProposals() -> impl IntoView {
    let i18n = use_i18n();
    let (proposals, failed) = use_proposals();
    move || {
        let list = proposals.get();
        let error = failed.get();
        if list.is_empty() && error.is_none() {
            return ().into_any();
        }
        view! {
            <section class="proposals" id="demo-proposals" aria-labelledby="proposals-title">
                <h2 id="proposals-title">{t!(i18n, proposals.title)}</h2>
                <p class="intro">{t!(i18n, proposals.intro)}</p>
                {error.map(|d| view! {
                    <p class="state error" role="alert">{t!(i18n, proposals.failed, detail = move || d.clone())}</p>
                })}
                <ul class="proposal-list">
                    {list.into_iter().map(|p| view! { <li><ProposalCard proposal=p proposals /></li> }).collect_view()}
                </ul>
            </section>
        }
        .into_any()
    }
}

#[component]
fn ProposalCard(
    proposal: MissionProposal,
    proposals: RwSignal<Vec<MissionProposal>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let pending = RwSignal::new(None::<(Draft, Author)>);
    let p = StoredValue::new(proposal);
    let item = StoredValue::new(p.with_value(|p| format!("create {}", p.mission_id)));
    let create = move |_| {
        let KeyState::Unlocked {
            principal_id,
            key_id,
        } = console.key.get_untracked()
        else {
            return;
        };
        let author = Author {
            principal_id,
            key_id,
        };
        let Ok(random) = crate::web::random_bytes::<16>() else {
            return;
        };
        let fresh = Fresh::new(random, crate::web::now());
        let draft = p.with_value(|p| commands::create_mission(p, &author, &fresh));
        pending.set(Some((draft, author)));
    };
    let sign = move |_: ()| {
        let Some((draft, author)) = pending.get_untracked() else {
            return;
        };
        pending.set(None);
        let Some(signer) = console.signer.get_value() else {
            return;
        };
        let Ok(cmd) = commands::sign(draft, &author, &signer) else {
            return;
        };
        let group = p.with_value(|p| p.group_id.clone());
        let mission = p.with_value(|p| p.mission_id.clone());
        console.record_sent(
            item.get_value(),
            cmd.clone(),
            author,
            crate::state::Via::HttpCreate,
        );
        leptos::task::spawn_local(async move {
            // Over HTTP: the answer carries the Events of a Group this human does not follow
            // yet; then the new Group is followed.
            crate::components::session::post_command(console, cmd).await;
            let accepted = console.outbox.with_untracked(|o| {
                o.iter().any(|s| {
                    s.command.mission_id == mission
                        && matches!(s.state, crate::state::SentState::Accepted(_))
                })
            });
            if accepted {
                // Followed now, and listed as this human's (the Group list is read again
                // only every 15 s).
                console.groups.update(|g| {
                    if let crate::state::GroupsState::Listed(list) = g
                        && !list.contains(&group)
                    {
                        list.push(group.clone());
                    }
                });
                crate::components::session::watch(group);
                proposals.update(|l| l.retain(|x| x.mission_id != mission));
            }
        });
    };
    let outcome = move || {
        console.outbox.with(|o| {
            o.iter()
                .rev()
                .find(|s| item.with_value(|i| s.item == *i))
                .map(|s| s.state.clone())
        })
    };
    let (title, objective, coordinator, deadline, mission_id) = p.with_value(|p| {
        (
            p.title.clone(),
            p.objective.clone(),
            p.coordinator_id.clone(),
            p.deadline.clone(),
            p.mission_id.clone(),
        )
    });
    view! {
        <article class="proposal" data-mission=mission_id>
            <h3 translate="no">{title}</h3>
            <p>{objective}</p>
            <dl>
                <dt>{t!(i18n, proposals.coordinator)}</dt>
                <dd><code>{coordinator}</code></dd>
                <dt>{t!(i18n, proposals.deadline)}</dt>
                <dd><time datetime=deadline.clone()>{deadline.clone()}</time></dd>
            </dl>
            // Offered again after a refusal or a network failure, not while one waits or after
            // it was accepted.
            <Show when=move || {
                !matches!(outcome(), Some(crate::state::SentState::Waiting | crate::state::SentState::Accepted(_)))
                    && !console.travelling()
            }>
                <button type="button" class="create-mission" on:click=create>
                    {t!(i18n, proposals.create)}
                </button>
            </Show>
            {move || outcome().map(|s| crate::components::outcome::outcome_view(i18n, s))}
            {move || pending.get().and_then(|(d, _)| d.summary().ok()).map(|summary| view! {
                <SigningSummaryDialog summary on_sign=sign on_cancel=move |_: ()| pending.set(None) />
            })}
        </article>
    }
}
