//! Pieces shared by the views on live, verified data: the fold progress bar, the time-travel
//! banner, state and reason labels (never colour alone: every state has its text and a
//! symbol), and lease countdowns.

use crate::format;
use crate::i18n::*;
use crate::locale::tag_of;
use crate::state::use_console;
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use wasm_core::authority::Micros;
use wasm_core::views::dag::{LeaseProblem, WhyNotRunning};

/// The first replay's progress: verified Events folded of those received.
#[component]
pub fn FoldProgress() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    move || {
        let p = console.progress.get();
        (!p.done()).then(|| {
            let (folded, known) = (p.folded, p.known);
            view! {
                <div class="fold-progress" role="status" id="fold-progress">
                    <label for="fold-bar">{t!(i18n, live.folding, folded = move || folded, known = move || known)}</label>
                    <progress id="fold-bar" max="1000" value=p.per_mille().to_string()></progress>
                </div>
            }
        })
    }
}

/// "Viewing as of sequence N" with the way back to live, on every view while time travelling.
/// "Child Mission of <parent>" (§14), the parent's title a link to its graph: on a child
/// Mission's board card and in its Mission view heading.
#[component]
pub fn ChildOf(group: String, title: String) -> impl IntoView {
    let i18n = use_i18n();
    let href = crate::format::mission_href(&group);
    view! { <p class="child-of">{t!(i18n, mission.child_of)}" "<a href=href translate="no">{title}</a></p> }
}

#[component]
pub fn TravelBanner() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    move || {
        console.snapshot.with(|s| s.as_of.clone().map(|a| {
            let seq = a.sequence;
            // The Group by its Mission's title, what a person recognises; its id otherwise.
            let group = a.group_id.clone().unwrap_or_default();
            let group = s
                .state
                .mission_of_group(&group)
                .map_or(group, |m| m.title.clone());
            let exact = a.at.format();
            view! {
                <div class="travel-banner" role="status" id="travel-banner">
                    <span class="icon" aria-hidden="true">"⇤"</span>" "
                    <span>{t!(i18n, live.as_of, sequence = move || seq, group = move || group.clone())}</span>" "
                    <Timestamp exact=exact />" "
                    <button type="button" id="back-to-live" on:click=move |_| console.back_to_live()>
                        {t!(i18n, live.back_to_live)}
                    </button>
                </div>
            }
        }))
    }
}

/// A Mission or WorkItem state in the reader's language, with a symbol (not colour alone).
pub fn state_label(i18n: I18nContext<Locale>, s: &str) -> String {
    let (sym, text) = match s {
        "active" => ("▶", t_string!(i18n, st.active)),
        "awaiting_approval" => ("◷", t_string!(i18n, st.awaiting_approval)),
        "approved" => ("✔", t_string!(i18n, st.approved)),
        "failed" => ("✖", t_string!(i18n, st.failed)),
        "cancelled" => ("⊘", t_string!(i18n, st.cancelled)),
        "open" => ("○", t_string!(i18n, st.open)),
        "offered" => ("◔", t_string!(i18n, st.offered)),
        "queued" => ("◑", t_string!(i18n, st.queued)),
        "blocked" => ("■", t_string!(i18n, st.blocked)),
        "submitted" => ("◕", t_string!(i18n, st.submitted)),
        "verified" => ("✔", t_string!(i18n, st.verified)),
        other => ("?", other),
    };
    format!("{sym} {text}")
}

/// A budget dimension's name.
pub fn dimension_label(i18n: I18nContext<Locale>, d: &str) -> String {
    match d {
        "financialMicrounits" => t_string!(i18n, ledger.financial),
        "modelTokens" => t_string!(i18n, ledger.tokens),
        "toolCalls" => t_string!(i18n, ledger.tool_calls),
        "computeSeconds" => t_string!(i18n, ledger.compute),
        "wallClockSeconds" => t_string!(i18n, ledger.wall_clock),
        "externalActions" => t_string!(i18n, ledger.side_effects),
        other => other,
    }
    .to_owned()
}

/// `at` relative to `now` in the reader's language ("in 4 min", "3 s ago").
pub fn when(i18n: I18nContext<Locale>, at: Micros, now: Micros) -> String {
    format::relative(
        tag_of(i18n.get_locale()),
        (at.0 - now.0) / Micros::PER_SECOND,
    )
}

/// Whether a count of `n` takes the singular in the reader's language.
fn one_of(i18n: I18nContext<Locale>, n: usize) -> bool {
    crate::locale::singular(crate::locale::tag_of(i18n.get_locale()), n)
}

/// Why a WorkItem is not running, one sentence per reason (each the authority's own predicate,
/// wasm-core `views::dag`), as escaped HTML in the reader's language: the Mission view writes
/// its WorkItem table as one markup string (`routes::mission`), and rendering the translation
/// to HTML escapes the interpolated ids and blockers like any Leptos text.
pub fn why_markup(i18n: I18nContext<Locale>, w: &WhyNotRunning, now: Micros) -> String {
    match w.clone() {
        WhyNotRunning::Finished(s) => {
            let s = state_label(i18n, s.as_str());
            t!(i18n, why.finished, state = move || s.clone()).to_html()
        }
        WhyNotRunning::MissionNotActive(s) => {
            let s = state_label(i18n, s.as_str());
            t!(i18n, why.mission_not_active, state = move || s.clone()).to_html()
        }
        WhyNotRunning::Dependencies(ids) => {
            let one = one_of(i18n, ids.len());
            let ids = ids.join(", ");
            if one {
                t!(i18n, why.dependencies_single, ids = move || ids.clone()).to_html()
            } else {
                t!(i18n, why.dependencies, ids = move || ids.clone()).to_html()
            }
        }
        WhyNotRunning::Budget { dimension, account } => {
            let d = dimension_label(i18n, dimension);
            t!(
                i18n,
                why.budget,
                dimension = move || d.clone(),
                account = move || account.clone()
            )
            .to_html()
        }
        WhyNotRunning::Approval { execution_approval } => {
            t!(i18n, why.approval, id = move || execution_approval.clone()).to_html()
        }
        WhyNotRunning::Lease(p) => match p {
            LeaseProblem::OwnershipExpired { at } => t!(
                i18n,
                why.ownership_expired,
                when = move || when(i18n, at, now)
            )
            .to_html(),
            LeaseProblem::NoOwner => t!(i18n, why.no_owner).to_html(),
            LeaseProblem::ExecutionExpired { at } => t!(
                i18n,
                why.execution_expired,
                when = move || when(i18n, at, now)
            )
            .to_html(),
            LeaseProblem::NoExecutionLease => t!(i18n, why.no_execution_lease).to_html(),
            LeaseProblem::OfferExpired { at } => {
                t!(i18n, why.offer_expired, when = move || when(i18n, at, now)).to_html()
            }
        },
        WhyNotRunning::Capability { requirements } => {
            let r: Vec<String> = requirements
                .iter()
                .map(|c| format!("{} ≥ {}", c.id, c.minimum_version))
                .collect();
            let one = one_of(i18n, r.len());
            let r = r.join(", ");
            if one {
                t!(
                    i18n,
                    why.capability_single,
                    requirements = move || r.clone()
                )
                .to_html()
            } else {
                t!(i18n, why.capability, requirements = move || r.clone()).to_html()
            }
        }
        WhyNotRunning::NotOffered => t!(i18n, why.not_offered).to_html(),
        WhyNotRunning::AwaitingAcceptance { candidates } => {
            let c = candidates.join(", ");
            t!(
                i18n,
                why.awaiting_acceptance,
                candidates = move || c.clone()
            )
            .to_html()
        }
        WhyNotRunning::ReadyToStart => t!(i18n, why.ready_to_start).to_html(),
        WhyNotRunning::Blocked { blocker } => {
            let b = blocker.unwrap_or_default();
            t!(i18n, why.blocked, blocker = move || b.clone()).to_html()
        }
        WhyNotRunning::ChildMission { mission_id } => {
            t!(i18n, why.child_mission, id = move || mission_id.clone()).to_html()
        }
        WhyNotRunning::AwaitingReview => t!(i18n, why.awaiting_review).to_html(),
    }
}

/// A protocol instant as a person reads it: the date and time in the reader's locale, or the
/// exact protocol text when Settings asks for exact timestamps (issue 14); the exact text is
/// always in the tooltip and `datetime`.
#[component]
pub fn Timestamp(#[prop(into)] exact: String) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let text = exact.clone();
    let shown = move || {
        if console.exact_times.get() {
            text.clone()
        } else {
            format::timestamp(tag_of(i18n.get_locale()), &text).unwrap_or_else(|| text.clone())
        }
    };
    view! { <time datetime=exact.clone() title=exact>{shown}</time> }
}

/// A lease or deadline countdown that ticks with the console's clock ("in 4 min"), the exact
/// instant in its tooltip and `datetime`.
#[component]
pub fn Countdown(at: Micros) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let exact = at.format();
    view! {
        <time datetime=exact.clone() title=exact>{move || when(i18n, at, console.view_now())}</time>
    }
}
