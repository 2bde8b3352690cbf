//! The Protocol view's audit bundle check (issue 29, "Auditors"): a bundle file loaded here is
//! verified in this browser by `wasm_core::audit::verify`, the code `weave-console
//! verify-export` runs, with no server: the summary of who decided what, when, on which
//! evidence, or the Event that failed. The file is untrusted: its size is checked before it is
//! read (`MAX_BUNDLE_BYTES`) and every line is parsed strictly.
//!
//! The verifier runs in the bundle runner's module (crate `protocol-runner`, `verify_audit`),
//! in its worker, not in the console's module: there it made every deep link download it
//! through the views' shared chunks (docs/console.md "Sizes"), and here a large bundle is
//! verified off the page's thread, which shows the lines checked as the worker reports them.
//! The worker answers JSON (`protocol_runner::audit_json`), read back by [`parse_outcome`].

use crate::i18n::*;
use leptos::prelude::*;
use wasm_core::json::Value;

/// A verified bundle, as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Verified {
    pub events: u64,
    pub groups: u64,
    pub signatures: u64,
    /// (signer, key id) of the seal, when sealed.
    pub seal: Option<(String, String)>,
    pub decisions: Vec<DecisionRow>,
}

/// One decision of a verified bundle.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionRow {
    pub occurred_at: String,
    pub kind: String,
    pub decider: String,
    pub group_id: String,
    pub sequence: String,
    pub event_id: String,
    /// The Artifact hashes or operations approved.
    pub evidence: Vec<String>,
    /// Whether a human caused it (a human's decision should have its signed Command).
    pub human: bool,
    /// The human's signed Command, verified by the runner: its id, kind and signing hash.
    pub command: Option<CommandRow>,
}

/// A decision's signed Command, as the runner verified it.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandRow {
    pub action_id: String,
    pub kind: String,
    pub signing_hash: String,
}

/// Where a refused Event is: its line, Group, sequence and Event id.
#[derive(Clone, Debug, PartialEq)]
pub struct RefusedAt {
    pub line: u64,
    pub group_id: String,
    pub sequence: String,
    pub event_id: String,
}

/// What the verifier concluded.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Verified(Verified),
    /// The first failure: the Event it names (if an Event failed) and why.
    Refused {
        at: Option<RefusedAt>,
        reason: String,
    },
}

/// Reads the runner's answer (`protocol_runner::audit_json`).
pub fn parse_outcome(text: &str) -> Result<Outcome, String> {
    let v = wasm_core::json::parse(text.as_bytes()).map_err(|e| e.to_string())?;
    let text = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("the verifier's answer has no {p}"))
    };
    let number = |v: &Value, p: &str| match v.pointer(p) {
        Some(Value::Number(n)) => n
            .as_safe_u64()
            .ok_or_else(|| format!("the verifier's {p} is not a count")),
        _ => Err(format!("the verifier's answer has no {p}")),
    };
    if let Some(r) = v.pointer("/refused") {
        let at = match r.pointer("/at") {
            Some(Value::Null) => None,
            Some(at) => Some(RefusedAt {
                line: number(at, "/line")?,
                group_id: text(at, "/groupId")?,
                sequence: text(at, "/sequence")?,
                event_id: text(at, "/eventId")?,
            }),
            None => return Err("the verifier's refusal has no at".into()),
        };
        return Ok(Outcome::Refused {
            at,
            reason: text(r, "/reason")?,
        });
    }
    let Some(s) = v.pointer("/verified") else {
        return Err("the verifier's answer is neither verified nor refused".into());
    };
    let seal = match s.pointer("/seal") {
        Some(Value::Null) => None,
        Some(seal) => Some((text(seal, "/signer")?, text(seal, "/keyId")?)),
        None => return Err("the verifier's answer has no /seal".into()),
    };
    let Some(Value::Array(list)) = s.pointer("/decisions") else {
        return Err("the verifier's answer has no /decisions".into());
    };
    let decisions = list
        .iter()
        .map(|d| {
            let Some(Value::Array(evidence)) = d.pointer("/evidence") else {
                return Err("a decision without its evidence".to_owned());
            };
            let command = match d.pointer("/command") {
                Some(Value::Null) => None,
                Some(c) => Some(CommandRow {
                    action_id: text(c, "/actionId")?,
                    kind: text(c, "/kind")?,
                    signing_hash: text(c, "/signingHash")?,
                }),
                None => return Err("a decision without its command".to_owned()),
            };
            Ok(DecisionRow {
                occurred_at: text(d, "/occurredAt")?,
                kind: text(d, "/kind")?,
                decider: text(d, "/decider")?,
                group_id: text(d, "/groupId")?,
                sequence: text(d, "/sequence")?,
                event_id: text(d, "/eventId")?,
                evidence: evidence
                    .iter()
                    .map(|e| e.as_str().map(str::to_owned))
                    .collect::<Option<_>>()
                    .ok_or("an evidence that is not text")?,
                human: matches!(d.pointer("/human"), Some(Value::Bool(true))),
                command,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Outcome::Verified(Verified {
        events: number(s, "/events")?,
        groups: number(s, "/groups")?,
        signatures: number(s, "/signatures")?,
        seal,
        decisions,
    }))
}

/// Verifies a bundle natively through the same runner code and answer as the browser's worker
/// (the console's tests use it).
#[cfg(not(target_arch = "wasm32"))]
pub fn verify_bundle(bytes: &[u8]) -> Result<Outcome, String> {
    parse_outcome(&protocol_runner::verify_audit_with(bytes, &mut |_, _| {}))
}

#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
enum Check {
    Idle,
    /// Reading the file, loading the runner, verifying: the lines checked and the lines in
    /// all, once the runner has said.
    Busy(Option<(u64, u64)>),
    TooLarge,
    ReadFailed(String),
    /// The runner's module did not load, or it stopped without an answer.
    RunnerFailed(String),
    Done(Box<Outcome>),
}

/// The chosen file's bytes, still in the browser's memory (transferred to the runner as is).
#[cfg(target_arch = "wasm32")]
async fn read(input: &web_sys::HtmlInputElement) -> Result<js_sys::ArrayBuffer, Check> {
    use wasm_bindgen::JsCast;
    let file = input
        .files()
        .and_then(|f| f.get(0))
        .ok_or_else(|| Check::ReadFailed("no file".into()))?;
    if file.size() > wasm_core::audit::MAX_BUNDLE_BYTES as f64 {
        return Err(Check::TooLarge);
    }
    wasm_bindgen_futures::JsFuture::from(file.array_buffer())
        .await
        .map_err(|e| Check::ReadFailed(crate::web::js_error(&e)))?
        .dyn_into::<js_sys::ArrayBuffer>()
        .map_err(|_| Check::ReadFailed("not an ArrayBuffer".into()))
}

/// Reads the chosen file and has the runner verify it, telling `check` the progress.
#[cfg(target_arch = "wasm32")]
async fn verify(input: web_sys::HtmlInputElement, check: RwSignal<Check>) {
    use crate::runner::Runner;
    let bundle = match read(&input).await {
        Ok(b) => b,
        Err(c) => return check.set(c),
    };
    let runner = match Runner::load().await {
        Ok(r) => r,
        Err(e) => return check.set(Check::RunnerFailed(e)),
    };
    let answer = runner
        .verify_audit(&bundle, &|done, total| {
            check.set(Check::Busy(Some((done, total))));
        })
        .await;
    check.set(match answer.and_then(|text| parse_outcome(&text)) {
        Ok(o) => Check::Done(Box::new(o)),
        Err(e) => Check::RunnerFailed(e),
    });
}

#[component]
pub fn AuditVerify() -> impl IntoView {
    let i18n = use_i18n();
    let check = RwSignal::new(Check::Idle);
    let file_ref = NodeRef::<leptos::html::Input>::new();
    let changed = move |_| {
        // One verification at a time (the input is disabled while one runs).
        #[cfg(target_arch = "wasm32")]
        if !matches!(check.get_untracked(), Check::Busy(_))
            && let Some(input) = file_ref.get_untracked()
        {
            check.set(Check::Busy(None));
            leptos::task::spawn_local(verify(input, check));
        }
    };
    let busy = move || matches!(check.get(), Check::Busy(_));
    view! {
        <section class="audit-verify" aria-labelledby="audit-title">
            <h2 id="audit-title">{t!(i18n, protocol.audit_title)}</h2>
            <p class="intro">{t!(i18n, protocol.audit_intro)}</p>
            <label for="audit-file">{t!(i18n, protocol.audit_file)}</label>
            <input id="audit-file" type="file" accept=".jsonl,application/json,text/plain"
                node_ref=file_ref on:change=changed disabled=busy />
            {move || match check.get() {
                Check::Idle => ().into_any(),
                Check::Busy(None) => view! { <p class="state loading" data-state="audit-busy">{t!(i18n, protocol.audit_busy)}</p> }.into_any(),
                Check::Busy(Some((done, total))) => view! {
                    <p class="state loading" data-state="audit-busy">
                        {t!(i18n, protocol.audit_progress, done = move || done, total = move || total)}
                        " "<progress max=total.to_string() value=done.to_string() aria-hidden="true"></progress>
                    </p>
                }.into_any(),
                Check::TooLarge => {
                    let max = wasm_core::audit::MAX_BUNDLE_BYTES;
                    view! { <p class="state error" data-state="audit-refused" role="alert">{t!(i18n, protocol.audit_too_large, max = move || max)}</p> }.into_any()
                }
                Check::ReadFailed(e) => view! { <p class="state error" role="alert">{t!(i18n, protocol.audit_read_failed, detail = move || e.clone())}</p> }.into_any(),
                Check::RunnerFailed(e) => view! { <p class="state error" data-state="audit-runner-error" role="alert">{t!(i18n, protocol.runner_error, detail = move || e.clone())}</p> }.into_any(),
                Check::Done(o) => match *o {
                    Outcome::Verified(s) => view! { <VerifiedView summary=s /> }.into_any(),
                    Outcome::Refused { at, reason } => view! { <RefusedView at reason /> }.into_any(),
                },
            }}
        </section>
    }
}

#[component]
fn VerifiedView(summary: Verified) -> impl IntoView {
    let i18n = use_i18n();
    let (events, groups, signatures) = (summary.events, summary.groups, summary.signatures);
    let sealed = summary.seal.is_some();
    view! {
        <p class="state ok" data-state="audit-verified" role="status">
            {t!(i18n, protocol.audit_verified, events = move || events, groups = move || groups, signatures = move || signatures)}
        </p>
        {match summary.seal {
            Some((signer, key)) => {
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
                        <td title=d.event_id>{format!("{} #{}", d.group_id, d.sequence)}</td>
                        <td>{d.evidence.join(" ")}</td>
                        <td>{command}</td>
                    </tr> }
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn RefusedView(at: Option<RefusedAt>, reason: String) -> impl IntoView {
    let i18n = use_i18n();
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
