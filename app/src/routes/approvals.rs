//! Approvals (`/approvals`): what waits for a human decision (§12, §7.3, §20), one inbox across
//! the Missions the human sees (`views::approvals::ApprovalInbox`, the authority's own rules).
//! Each item says who may decide and why before any click; a decision is built and signed by
//! `crate::commands` after the signing summary is shown, sent over the socket (HTTP when it is
//! down), and its outcome, matched by Action ID, is shown: the receipt verified again with the
//! stored Approval's signing hash, or the wire code with its explanation (the typed comment
//! stays). Self-approval is never offered. Decisions are taken on the live state only.

use crate::commands::{
    self, Author, BuildError, DEFAULT_OVERRIDE_SECONDS, Decision, Draft, Fresh, item_key,
};
use crate::components::artifact::{ArtifactHash, Check, VerifyAll};
use crate::components::live::Countdown;
use crate::components::outcome::{outcome_view, state_attr};
use crate::components::proposals::DemoProposals;
use crate::components::session;
use crate::components::signing_summary::SigningSummaryDialog;
use crate::components::states::{Empty, GroupsNotice, NarrowedNote, StreamStates};
use crate::components::wire;
use crate::format;
use crate::i18n::*;
use crate::locale::tag_of;
use crate::state::{Console, KeyState, Sent, SentState, Via, use_console};
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use std::collections::BTreeSet;
use wasm_core::views::approvals::{
    ApprovalInbox, ApprovalItem, ApprovalKind, ApproverRule, ViewerDecision,
};

#[component]
pub fn Approvals() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    // Override requests the human declined (0.1 has no Command for it: kept in this page).
    let declined = RwSignal::new(BTreeSet::<String>::new());
    // `?mission=<id>` (a board card's pending approvals) lists that Mission's only, until the
    // person asks for every one.
    let only =
        RwSignal::new(leptos_router::hooks::use_query_map().with_untracked(|q| q.get("mission")));
    let inbox = Memo::new(move |_| {
        let Some(viewer) = console.viewer.get() else {
            return Vec::new();
        };
        let seen = console.rejections.get();
        let now = console.view_now();
        let gone = declined.get();
        console.snapshot.with(|s| {
            ApprovalInbox::build(&s.state, &viewer, &seen, now)
                .items
                .into_iter()
                .filter(|i| !gone.contains(&item_key(i)))
                .filter(|i| {
                    only.with(|m| m.as_ref().is_none_or(|m| format::names(m, &i.mission_id)))
                })
                .collect::<Vec<_>>()
        })
    });
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, approvals.title)}</h1>
            <p class="intro">{t!(i18n, approvals.intro)}</p>
            // Asked from here only, on a click, with the reason (never at load).
            <crate::components::notices::NotifyPermission />
            <StreamStates>
                <GroupsNotice />
                // The demo's Missions that wait for a human to create them (own Organization).
                <DemoProposals />
                <Show when=move || console.travelling()>
                    <p class="state note" role="note">{t!(i18n, approvals.travelling)}</p>
                </Show>
                <NarrowedNote
                    narrowed=only
                    class="mission-only"
                    button_class="all-approvals"
                    back=move || t!(i18n, approvals.show_all)
                >
                    {t!(i18n, approvals.mission_only)}
                </NarrowedNote>
                <Show
                    when=move || !inbox.with(Vec::is_empty)
                    fallback=move || view! { <Empty>{t!(i18n, approvals.empty)}</Empty> }
                >
                    <ul class="inbox" id="inbox">
                        <For
                            each=move || inbox.get()
                            key=|i| item_key(i)
                            children=move |item| view! { <ItemCard item declined /> }
                        />
                    </ul>
                </Show>
                <SentList />
            </StreamStates>
        </section>
    }
}

fn kind_attr(k: &ApprovalKind) -> &'static str {
    match k {
        ApprovalKind::MissionFinal { .. } => "final",
        ApprovalKind::ExecutionGate { .. } => "gate",
        ApprovalKind::CooperationOverride { .. } => "override",
        ApprovalKind::BudgetEscalation { .. } => "budget",
    }
}

fn rule_text(i18n: I18nContext<Locale>, r: ApproverRule) -> AnyView {
    match r {
        ApproverRule::MissionOwner => t!(i18n, approvals.rule_mission_owner).into_any(),
        ApproverRule::HumanMissionOwner => t!(i18n, approvals.rule_human_owner).into_any(),
        ApproverRule::MissionOwnerOrService => t!(i18n, approvals.rule_owner_or_service).into_any(),
        ApproverRule::BudgetOwner => t!(i18n, approvals.rule_budget_owner).into_any(),
    }
}

fn build_error(i18n: I18nContext<Locale>, e: &BuildError) -> AnyView {
    match e {
        BuildError::EmptyText => t!(i18n, approvals.err_empty).into_any(),
        BuildError::TooLong => t!(i18n, approvals.err_too_long).into_any(),
        BuildError::NoOperations => t!(i18n, approvals.err_operations).into_any(),
        BuildError::NoMembership(_) => t!(i18n, approvals.err_membership).into_any(),
        BuildError::Locked => t!(i18n, approvals.err_locked).into_any(),
        BuildError::Gone | BuildError::NotApplicable | BuildError::NotOffered(_) => {
            t!(i18n, approvals.err_gone).into_any()
        }
        other => {
            let d = format!("{other:?}");
            t!(i18n, approvals.err_other, detail = move || d.clone()).into_any()
        }
    }
}

/// The unlocked key, as the author of a Command.
fn author(console: Console) -> Option<Author> {
    match console.key.get_untracked() {
        KeyState::Unlocked {
            principal_id,
            key_id,
        } => Some(Author {
            principal_id,
            key_id,
        }),
        _ => None,
    }
}

/// What the card asks the signing dialog for.
#[derive(Clone)]
struct Pending {
    draft: Draft,
    author: Author,
}

#[component]
fn ItemCard(item: ApprovalItem, declined: RwSignal<BTreeSet<String>>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let key = item_key(&item);
    let comment = RwSignal::new(String::new());
    let error = RwSignal::new(None::<BuildError>);
    let pending = RwSignal::new(None::<Pending>);
    let operations = RwSignal::new(BTreeSet::<String>::new());
    let expires = RwSignal::new(commands::execution_seconds(
        &item,
        console.clock.get_untracked(),
    ));
    let item = StoredValue::new(item);
    let dom_id = format!(
        "item-{}",
        key.bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
    );
    let comment_id = format!("{dom_id}-comment");
    let mission_title = move || {
        item.with_value(|i| {
            console.snapshot.with(|s| {
                s.state
                    .missions
                    .get(&i.mission_id)
                    .map(|m| m.title.clone())
                    .unwrap_or_else(|| i.mission_id.clone())
            })
        })
    };
    let permissions = move || {
        item.with_value(|i| {
            console.snapshot.with(|s| {
                s.state
                    .missions
                    .get(&i.mission_id)
                    .map(|m| m.permissions.clone())
                    .unwrap_or_default()
            })
        })
    };
    let tag = move || tag_of(i18n.get_locale());
    let since = move || {
        let at = item.with_value(|i| i.since);
        let secs = (at.0 - console.view_now().0) / 1_000_000;
        format::relative(tag(), secs)
    };
    // Builds the Command and opens the signing summary (nothing is signed before "Sign").
    let decide = move |d: Decision| {
        error.set(None);
        if !d.is_signed() {
            declined.update(|s| {
                s.insert(item.with_value(item_key));
            });
            return;
        }
        let Some(author) = author(console) else {
            error.set(Some(BuildError::Locked));
            return;
        };
        let random = crate::web::random_bytes::<16>().unwrap_or_else(|_| {
            // Never reached in a browser; natively the clock keeps ids distinct.
            let n = console.clock.get_untracked().0.to_le_bytes();
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&n);
            b
        });
        let fresh = Fresh::new(random, crate::web::now());
        let built = console.snapshot.with_untracked(|s| {
            item.with_value(|i| commands::draft(&s.state, i, &author, &d, &fresh))
        });
        match built {
            Ok(draft) => pending.set(Some(Pending { draft, author })),
            Err(e) => error.set(Some(e)),
        }
    };
    let sign = move |_: ()| {
        let Some(p) = pending.get_untracked() else {
            return;
        };
        pending.set(None);
        let signer = console.signer.get_value();
        let Some(signer) = signer else {
            error.set(Some(BuildError::Locked));
            return;
        };
        match commands::sign(p.draft, &p.author, &signer) {
            Ok(cmd) => session::send_command(console, item.with_value(item_key), cmd, p.author),
            Err(e) => error.set(Some(e)),
        }
    };
    let key_for_outcome = key.clone();
    // The latest decision sent for this item, if it is still waiting or was refused.
    let outcome = move || {
        console.outbox.with(|o| {
            o.iter()
                .rev()
                .find(|s| s.item == key_for_outcome)
                .map(|s| s.state.clone())
        })
    };
    let kind = item.with_value(|i| kind_attr(&i.kind));
    let may = item.with_value(|i| i.viewer == ViewerDecision::MayApprove);
    let details = item.with_value(|i| details_view(i18n, i));
    let rule = item.with_value(|i| i.rule);
    let approvers: Vec<String> =
        item.with_value(|i| i.approvers.iter().map(|a| a.id.0.clone()).collect());
    let requested: Option<String> =
        item.with_value(|i| i.requested_by.as_ref().map(|a| a.id.0.clone()));
    let viewer = item.with_value(|i| i.viewer.clone());
    let decision_attr = match &viewer {
        ViewerDecision::MayApprove => "may",
        ViewerDecision::SelfApproval => "self",
        ViewerDecision::NotAdmitted { .. } => "not-admitted",
        ViewerDecision::NoViewer => "no-viewer",
    };
    let ops_prefix = dom_id.clone();
    let visiting = move || console.key.with(|k| matches!(k, KeyState::Visiting { .. }));
    let mission_id = item.with_value(|i| i.mission_id.clone());
    let title_id = format!("{dom_id}-title");
    view! {
        <li class="approval-item" id=dom_id.clone() data-kind=kind data-mission=mission_id>
            <h2 id=title_id>
                {match kind {
                    "final" => t!(i18n, approvals.kind_final).into_any(),
                    "gate" => t!(i18n, approvals.kind_gate).into_any(),
                    "override" => t!(i18n, approvals.kind_override).into_any(),
                    _ => t!(i18n, approvals.kind_budget).into_any(),
                }}
                " · "<span translate="no">{mission_title}</span>
            </h2>
            <p class="since">{t!(i18n, approvals.since, when = move || since())}</p>
            {details}
            <div class="who">
                <h3>{t!(i18n, approvals.who)}</h3>
                <p>{rule_text(i18n, rule)}</p>
                <p>
                    {t!(i18n, approvals.approvers)}" "
                    {approvers.into_iter().map(|a| view! { <code class="approver">{a}</code>" " }).collect_view()}
                </p>
                {requested.map(|r| view! { <p>{t!(i18n, approvals.requested_by)}" "<code>{r}</code></p> })}
                <p class="viewer-decision" data-decision=decision_attr>
                    {match viewer {
                        // A visitor reads as the demo's human but holds no key that signs.
                        ViewerDecision::MayApprove => (move || if visiting() {
                            t!(i18n, approvals.visitor_may_decide).into_any()
                        } else {
                            t!(i18n, approvals.may_decide).into_any()
                        }).into_any(),
                        ViewerDecision::SelfApproval => t!(i18n, approvals.self_approval).into_any(),
                        ViewerDecision::NotAdmitted { code, reason } => {
                            let c = code.as_str().to_owned();
                            let d = format!("{} ({reason})", wire::explain(i18n.get_locale_untracked(), code));
                            t!(i18n, approvals.not_admitted, code = move || c.clone(), detail = move || d.clone()).into_any()
                        }
                        ViewerDecision::NoViewer => t!(i18n, approvals.no_viewer).into_any(),
                    }}
                </p>
            </div>
            // The static demo read before signing in: the decision asks to sign in instead.
            <Show when=move || may && visiting() && !console.travelling()>
                <p class="sign-in-to-decide">
                    <a href="/sign-in">{t!(i18n, approvals.sign_in_to_decide)}</a>
                </p>
            </Show>
            <Show when=move || may && !visiting() && !console.travelling()>
                <form class="decide" on:submit=|ev| ev.prevent_default()>
                    {(kind == "gate").then(|| view! {
                        <fieldset class="operations">
                            <legend>{t!(i18n, approvals.operations)}</legend>
                            {let prefix = ops_prefix.clone(); move || permissions().into_iter().map(|op| {
                                let o1 = op.clone();
                                let o2 = op.clone();
                                let id = format!("{prefix}-op-{op}");
                                view! {
                                    <label for=id.clone()>
                                        <input type="checkbox" class="operation" id=id.clone() value=op.clone()
                                            prop:checked=move || operations.with(|s| s.contains(&o1))
                                            on:change=move |ev| {
                                                let on = event_target_checked(&ev);
                                                operations.update(|s| { if on { s.insert(o2.clone()); } else { s.remove(&o2); } });
                                            } />
                                        " "<code>{op}</code>
                                    </label>
                                }
                            }).collect_view()}
                        </fieldset>
                        <label for=format!("{comment_id}-expires")>{t!(i18n, approvals.expires_in)}</label>
                        <input type="number" min="1" id=format!("{comment_id}-expires") class="expires"
                            prop:value=move || expires.get().to_string()
                            on:input=move |ev| expires.set(event_target_value(&ev).parse().unwrap_or(1)) />
                    })}
                    <label for=comment_id.clone()>
                        {if kind == "override" || kind == "budget" { t!(i18n, approvals.reason).into_any() } else { t!(i18n, approvals.comment).into_any() }}
                    </label>
                    <textarea id=comment_id.clone() class="comment" maxlength="512"
                        prop:value=move || comment.get()
                        on:input=move |ev| comment.set(event_target_value(&ev))></textarea>
                    {(kind == "final").then(|| view! { <p class="hint">{t!(i18n, approvals.comment_hint)}</p> })}
                    <div class="actions">
                        {buttons(i18n, kind, item, comment, operations, expires, decide)}
                    </div>
                </form>
            </Show>
            {move || error.get().map(|e| view! { <p class="state error" role="alert">{build_error(i18n, &e)}</p> })}
            {move || outcome().map(|s| outcome_view(i18n, s))}
            {move || pending.get().map(|p| match p.draft.summary() {
                Ok(summary) => view! {
                    <SigningSummaryDialog summary on_sign=sign on_cancel=move |_: ()| pending.set(None) />
                }.into_any(),
                Err(e) => view! { <p class="state error" role="alert">{build_error(i18n, &e)}</p> }.into_any(),
            })}
        </li>
    }
}

#[allow(clippy::too_many_arguments)]
fn buttons(
    i18n: I18nContext<Locale>,
    kind: &'static str,
    item: StoredValue<ApprovalItem>,
    comment: RwSignal<String>,
    operations: RwSignal<BTreeSet<String>>,
    expires: RwSignal<u64>,
    decide: impl Fn(Decision) + Copy + Send + Sync + 'static,
) -> AnyView {
    let text = move || comment.get_untracked();
    let opt = move || Some(comment.get_untracked()).filter(|c| !c.trim().is_empty());
    match kind {
        "final" => view! {
            <button type="button" class="primary approve" on:click=move |_| decide(Decision::ApproveMission { comments: opt() })>
                {t!(i18n, approvals.approve)}
            </button>
            <button type="button" class="request-changes" on:click=move |_| decide(Decision::RequestChanges { feedback: text() })>
                {t!(i18n, approvals.request_changes)}
            </button>
            <button type="button" class="cancel-mission danger" on:click=move |_| decide(Decision::CancelMission { reason: text() })>
                {t!(i18n, approvals.cancel_mission)}
            </button>
        }
        .into_any(),
        "gate" => view! {
            <button type="button" class="primary grant-execution" on:click=move |_| decide(Decision::GrantExecution {
                operations: operations.get_untracked().into_iter().collect(),
                resources: Vec::new(),
                expires_in_seconds: expires.get_untracked(),
                comments: opt(),
            })>
                {t!(i18n, approvals.grant_execution)}
            </button>
            <button type="button" class="deny-gate danger" on:click=move |_| decide(Decision::CancelWork { reason: text() })>
                {t!(i18n, approvals.deny_gate)}
            </button>
        }
        .into_any(),
        "override" => view! {
            <button type="button" class="primary grant-override" on:click=move |_| decide(Decision::GrantOverride {
                reason: text(),
                expires_in_seconds: DEFAULT_OVERRIDE_SECONDS,
            })>
                {t!(i18n, approvals.grant_override)}
            </button>
            <button type="button" class="decline-override" on:click=move |_| decide(Decision::DeclineOverride)>
                {t!(i18n, approvals.decline_override)}
            </button>
        }
        .into_any(),
        _ => {
            let has_work = item.with_value(|i| {
                matches!(&i.kind, ApprovalKind::BudgetEscalation { work_item_id: Some(_), .. })
            });
            view! {
                {has_work.then(|| view! {
                    <button type="button" class="cancel-work danger" on:click=move |_| decide(Decision::CancelWork { reason: text() })>
                        {t!(i18n, approvals.cancel_work)}
                    </button>
                })}
                <button type="button" class="cancel-mission danger" on:click=move |_| decide(Decision::CancelMission { reason: text() })>
                    {t!(i18n, approvals.cancel_mission)}
                </button>
            }
            .into_any()
        }
    }
}

/// What the item binds, before any click: the exact revision and Artifact hashes with the
/// Evidence summary, the WorkItem and Ownership Epoch, the rejected Command.
fn details_view(i18n: I18nContext<Locale>, i: &ApprovalItem) -> AnyView {
    match i.kind.clone() {
        ApprovalKind::MissionFinal {
            revision,
            artifact_hashes,
            artifacts,
            evidence,
        } => {
            let hashes = if artifact_hashes.is_empty() {
                view! { <p>{t!(i18n, approvals.no_hashes)}</p> }.into_any()
            } else {
                // One state per hash, shared by its own button and "verify all".
                let checks: Vec<(String, RwSignal<Check>)> = artifacts
                    .iter()
                    .map(|f| (f.content_hash.clone(), RwSignal::new(Check::Idle)))
                    .collect();
                let all = (checks.len() > 1).then(|| view! { <VerifyAll checks=checks.clone() /> });
                view! {
                    <p>{t!(i18n, approvals.hashes)}</p>
                    {all}
                    <ul class="hashes">
                        {artifacts.into_iter().zip(checks).map(|(f, (_, state))| view! {
                            <ArtifactHash hash=f.content_hash.clone() facts=f state />
                        }).collect_view()}
                    </ul>
                }
                .into_any()
            };
            view! {
                <p class="revision" data-revision=revision.to_string()>{t!(i18n, approvals.revision, revision = move || revision)}</p>
                {hashes}
                <p class="evidence">{t!(i18n, approvals.evidence,
                    items = move || evidence.items,
                    ok = move || evidence.successful,
                    verified = move || evidence.verified_work_items,
                    total = move || evidence.work_items)}</p>
            }
            .into_any()
        }
        ApprovalKind::ExecutionGate {
            work_item_id,
            goal,
            allowed_tools,
            allowed_resources,
            ownership_epoch,
            execution_approval,
            side_effect_risk,
            ownership_lease_expires_at,
        } => view! {
            <dl class="facts">
                <dt>{t!(i18n, approvals.work_item)}</dt>
                <dd>
                    <span class="goal" translate="no">{goal}</span><br />
                    <code class="work-item">{work_item_id.clone()}</code>" "
                    // The WorkItem in its Mission's graph, selected.
                    <a class="in-graph" href=format!("{}?work_item={}", format::mission_href(&i.group_id), format::query_value(&work_item_id))>{t!(i18n, approvals.in_graph)}</a>
                </dd>
                <dt>{t!(i18n, approvals.allowed_tools)}</dt><dd>{code_list(allowed_tools)}</dd>
                <dt>{t!(i18n, approvals.allowed_resources)}</dt><dd>{code_list(allowed_resources)}</dd>
                <dt>{t!(i18n, approvals.ownership_epoch)}</dt><dd>{ownership_epoch.to_string()}</dd>
                <dt>{t!(i18n, approvals.policy)}</dt><dd><code>{execution_approval}</code></dd>
                <dt>{t!(i18n, approvals.risk)}</dt><dd><code>{side_effect_risk}</code></dd>
                {ownership_lease_expires_at.map(|at| view! {
                    <dt>{t!(i18n, approvals.ownership_lease)}</dt><dd><Countdown at=at /></dd>
                })}
            </dl>
        }
        .into_any(),
        ApprovalKind::CooperationOverride {
            policy,
            target_command_kind,
            target_action_id,
        } => view! {
            <dl class="facts">
                <dt>{t!(i18n, approvals.policy)}</dt><dd><code>{policy}</code></dd>
                <dt>{t!(i18n, approvals.target_kind)}</dt><dd><code>{target_command_kind}</code></dd>
                <dt>{t!(i18n, approvals.target_action)}</dt><dd><code>{target_action_id}</code></dd>
            </dl>
        }
        .into_any(),
        ApprovalKind::BudgetEscalation {
            command_kind,
            action_id,
            work_item_id,
            dimension,
            account,
        } => view! {
            <dl class="facts">
                <dt>{t!(i18n, approvals.target_kind)}</dt><dd><code>{command_kind}</code></dd>
                <dt>{t!(i18n, approvals.target_action)}</dt><dd><code>{action_id}</code></dd>
                {work_item_id.map(|w| view! { <dt>{t!(i18n, approvals.work_item)}</dt><dd><code>{w}</code></dd> })}
                {dimension.map(|d| view! { <dt>{t!(i18n, approvals.dimension)}</dt><dd><code>{d}</code></dd> })}
                {account.map(|a| view! { <dt>{t!(i18n, approvals.account)}</dt><dd><code>{a}</code></dd> })}
            </dl>
        }
        .into_any(),
    }
}

/// Contract names (tools, resources) as code, comma-separated; "—" for none.
fn code_list(items: Vec<String>) -> AnyView {
    if items.is_empty() {
        return view! { "—" }.into_any();
    }
    let last = items.len() - 1;
    items
        .into_iter()
        .enumerate()
        .map(|(k, x)| view! { <code>{x}</code>{(k < last).then_some(", ")} })
        .collect_view()
        .into_any()
}

/// A decision's outcome: waiting, accepted (the receipt, verified), refused (the wire code and
/// its explanation), not delivered.
/// Every decision sent from this page, newest first, with its outcome.
#[component]
fn SentList() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    view! {
        <section class="sent" aria-labelledby="sent-title">
            <h2 id="sent-title">{t!(i18n, approvals.sent_title)}</h2>
            {move || {
                let sent: Vec<Sent> = console.outbox.get().into_iter().rev().collect();
                if sent.is_empty() {
                    return view! { <p class="state empty">{t!(i18n, approvals.sent_empty)}</p> }.into_any();
                }
                view! {
                    <ul id="sent">
                        {sent.into_iter().map(|s| {
                            let failed = matches!(s.state, SentState::Failed(_));
                            let state = state_attr(&s.state);
                            let cmd = s.command.clone();
                            let item = s.item.clone();
                            let author = s.author.clone();
                            view! {
                                <li data-action-id=s.command.action_id.clone() data-kind=s.command.kind.clone() data-state=state>
                                    <p>
                                        <code>{s.command.kind.clone()}</code>" · "<code>{s.command.action_id.clone()}</code>" · "
                                        {match s.via { Via::Socket => t!(i18n, approvals.via_socket).into_any(), Via::Http => t!(i18n, approvals.via_http).into_any(), Via::HttpCreate => t!(i18n, approvals.via_http_create).into_any() }}
                                    </p>
                                    <p>{t!(i18n, approvals.signing_hash)}" "<code class="hash">{s.command.signing_hash.clone()}</code></p>
                                    {outcome_view(i18n, s.state)}
                                    {failed.then(|| view! {
                                        <button type="button" class="send-again" on:click=move |_| {
                                            let c = cmd.clone();
                                            console.record_sent(item.clone(), c.clone(), author.clone(), Via::Http);
                                            leptos::task::spawn_local(session::post_command(console, c));
                                        }>{t!(i18n, approvals.send_again)}</button>
                                    })}
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }
                .into_any()
            }}
        </section>
    }
}
