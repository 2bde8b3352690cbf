//! The Protocol view's audit bundle check (issue 29, "Auditors"): a bundle file loaded here is
//! verified in this page by `wasm_core::audit::verify`, the code `weave-console verify-export`
//! runs, with no server: the summary of who decided what, when, on which evidence, or the
//! Event that failed. The file is untrusted: its size is checked before it is read
//! (`MAX_BUNDLE_BYTES`) and every line is parsed strictly. The verifier is the core's Event
//! verification and reducer, which the console already holds, so it adds little to the
//! Protocol view's chunk and needs no separate module (docs/console.md).

use crate::i18n::*;
use leptos::prelude::*;
use wasm_core::audit::{AuditError, Summary};

#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
enum Check {
    Idle,
    Busy,
    TooLarge,
    ReadFailed(String),
    Verified(Box<Summary>),
    Refused(Box<AuditError>),
}

#[cfg(target_arch = "wasm32")]
async fn read(input: web_sys::HtmlInputElement) -> Result<Vec<u8>, Check> {
    let file = input
        .files()
        .and_then(|f| f.get(0))
        .ok_or_else(|| Check::ReadFailed("no file".into()))?;
    if file.size() > wasm_core::audit::MAX_BUNDLE_BYTES as f64 {
        return Err(Check::TooLarge);
    }
    let buf = wasm_bindgen_futures::JsFuture::from(file.array_buffer())
        .await
        .map_err(|e| Check::ReadFailed(crate::web::js_error(&e)))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}

#[component]
pub fn AuditVerify() -> impl IntoView {
    let i18n = use_i18n();
    let check = RwSignal::new(Check::Idle);
    let file_ref = NodeRef::<leptos::html::Input>::new();
    let changed = move |_| {
        #[cfg(target_arch = "wasm32")]
        if let Some(input) = file_ref.get_untracked() {
            check.set(Check::Busy);
            leptos::task::spawn_local(async move {
                // Paint "Verifying…" before the synchronous verification starts.
                crate::web::yield_now().await;
                check.set(match read(input).await {
                    Ok(bytes) => match wasm_core::audit::verify(&bytes) {
                        Ok(s) => Check::Verified(Box::new(s)),
                        Err(e) => Check::Refused(Box::new(e)),
                    },
                    Err(c) => c,
                });
            });
        }
    };
    view! {
        <section class="audit-verify" aria-labelledby="audit-title">
            <h2 id="audit-title">{t!(i18n, protocol.audit_title)}</h2>
            <p class="intro">{t!(i18n, protocol.audit_intro)}</p>
            <label for="audit-file">{t!(i18n, protocol.audit_file)}</label>
            <input id="audit-file" type="file" accept=".jsonl,application/json,text/plain"
                node_ref=file_ref on:change=changed />
            {move || match check.get() {
                Check::Idle => ().into_any(),
                Check::Busy => view! { <p class="state loading">{t!(i18n, protocol.audit_busy)}</p> }.into_any(),
                Check::TooLarge => {
                    let max = wasm_core::audit::MAX_BUNDLE_BYTES;
                    view! { <p class="state error" data-state="audit-refused" role="alert">{t!(i18n, protocol.audit_too_large, max = move || max)}</p> }.into_any()
                }
                Check::ReadFailed(e) => view! { <p class="state error" role="alert">{t!(i18n, protocol.audit_read_failed, detail = move || e.clone())}</p> }.into_any(),
                Check::Verified(s) => view! { <Verified summary=*s /> }.into_any(),
                Check::Refused(e) => view! { <Refused error=*e /> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn Verified(summary: Summary) -> impl IntoView {
    let i18n = use_i18n();
    let (events, groups, signatures) = (summary.events, summary.groups.len(), summary.signatures);
    let seal = summary.seal.clone();
    let sealed = seal.is_some();
    view! {
        <p class="state ok" data-state="audit-verified" role="status">
            {t!(i18n, protocol.audit_verified, events = move || events, groups = move || groups, signatures = move || signatures)}
        </p>
        {match seal {
            Some(s) => {
                let (signer, key) = (s.signer.clone(), s.key.key_id.clone());
                view! { <p class="hint">{t!(i18n, protocol.audit_sealed, signer = move || signer.clone(), key = move || key.clone())}</p> }.into_any()
            }
            None => view! { <p class="hint" data-state="audit-unsealed">{t!(i18n, protocol.audit_unsealed)}</p> }.into_any(),
        }}
        <table class="audit-decisions">
            <caption>{t!(i18n, protocol.audit_decisions)}</caption>
            <thead><tr>
                <th scope="col">{t!(i18n, protocol.audit_time)}</th>
                <th scope="col">{t!(i18n, protocol.audit_kind)}</th>
                <th scope="col">{t!(i18n, protocol.audit_decider)}</th>
                <th scope="col">{t!(i18n, protocol.audit_event)}</th>
                <th scope="col">{t!(i18n, protocol.audit_evidence)}</th>
                <th scope="col">{t!(i18n, protocol.audit_command)}</th>
            </tr></thead>
            <tbody>
                {summary.decisions.into_iter().map(|d| {
                    let evidence = d.approval.as_ref().map(|a| {
                        a.artifact_hashes.iter().chain(a.operations.iter()).cloned().collect::<Vec<_>>().join(" ")
                    }).unwrap_or_default();
                    // The human's own signed Command, verified by its key (or why it is not
                    // there: a sealed bundle's store did not keep it, an unsealed one left it out).
                    let command = match (d.command, d.human) {
                        (Some(c), _) => {
                            let (id, kind, hash) = (c.action_id, c.kind, c.signing_hash);
                            view! { <span title=hash>{t!(i18n, protocol.audit_command_verified, id = move || id.clone(), kind = move || kind.clone())}</span> }.into_any()
                        }
                        (None, true) if sealed => view! { <span data-state="command-missing">{t!(i18n, protocol.audit_command_not_recorded)}</span> }.into_any(),
                        (None, true) => view! { <span data-state="command-missing">{t!(i18n, protocol.audit_command_absent)}</span> }.into_any(),
                        (None, false) => ().into_any(),
                    };
                    view! { <tr>
                        <td>{d.occurred_at}</td>
                        <td>{d.kind}</td>
                        <td>{d.decider}</td>
                        <td title=d.at.event_id.clone()>{format!("{} #{}", d.at.group_id, d.at.sequence)}</td>
                        <td>{evidence}</td>
                        <td>{command}</td>
                    </tr> }
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn Refused(error: AuditError) -> impl IntoView {
    let i18n = use_i18n();
    let at = match &error {
        AuditError::Event { at, .. } => Some((**at).clone()),
        _ => None,
    };
    let reason = match &error {
        AuditError::Event { failure, .. } => failure.to_string(),
        other => other.to_string(),
    };
    view! {
        <div class="state error" data-state="audit-refused" role="alert">
            <p>{t!(i18n, protocol.audit_refused)}</p>
            <dl>
                {at.map(|at| view! {
                    <dt>{t!(i18n, protocol.audit_line)}</dt><dd>{at.line}</dd>
                    <dt>{t!(i18n, protocol.audit_group)}</dt><dd>{at.group_id}</dd>
                    <dt>{t!(i18n, protocol.audit_sequence)}</dt><dd>{at.sequence}</dd>
                    <dt>{t!(i18n, protocol.audit_event)}</dt><dd data-event-id="">{at.event_id}</dd>
                })}
                <dt>{t!(i18n, protocol.audit_reason)}</dt><dd>{reason}</dd>
            </dl>
        </div>
    }
}
