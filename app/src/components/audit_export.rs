//! The Events view's audit export (issue 29, "Auditors"): the Events this console verified and
//! folded, the Registry it verified them against and the Organization's Agent Cards, written
//! by `wasm_core::audit::assemble` as the bundle `weave-console export` writes, and offered as a
//! download. Not sealed, and without First-Admission Records or signed Commands: the console
//! holds neither the authority's key nor the records, and receives Events, not the humans'
//! Commands; the verifier reports each human decision as "Command not in the bundle"
//! (docs/audit.md says what an unsealed bundle proves).

use crate::i18n::*;
use crate::state::use_console;
use leptos::prelude::*;

#[cfg(target_arch = "wasm32")]
async fn export(console: crate::state::Console) -> Result<usize, String> {
    use std::collections::BTreeSet;
    use wasm_core::audit::{self, Assembly};
    use wasm_core::json::{self, Value};
    let fixture = crate::components::registry::last_fixture()
        .ok_or("no Registry has been fetched and verified yet")?;
    let registry = json::parse(&fixture).map_err(|e| e.to_string())?;
    let organization_id = registry
        .pointer("/organizationId")
        .and_then(Value::as_str)
        .ok_or("the Registry names no Organization")?
        .to_owned();
    let cards = crate::web::get_text("/api/registry/agent-cards").await?;
    let agent_cards = match json::parse(cards.as_bytes())
        .map_err(|e| e.to_string())?
        .pointer("/agentCards")
    {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    // The verified Events in the order they were folded (per Group in sequence order): the
    // order the verifier replays them in.
    let events: Vec<Value> = console.log.with_value(|l| l.folded_events().to_vec());
    let mut groups: Vec<(String, u64)> = Vec::new();
    let mut bytes = Vec::with_capacity(events.len());
    let mut hashes = BTreeSet::new();
    for e in &events {
        let Some(g) = e.pointer("/groupId").and_then(Value::as_str) else {
            continue;
        };
        let seq = match e.pointer("/sequence") {
            Some(Value::Number(n)) => n.as_safe_u64().unwrap_or(0),
            _ => 0,
        };
        match groups.iter_mut().find(|(id, _)| id == g) {
            Some(slot) => slot.1 = slot.1.max(seq),
            None => groups.push((g.to_owned(), seq)),
        }
        audit::artifact_hashes(e, &mut hashes);
        bytes.push(json::canonicalize(e).map_err(|e| e.to_string())?);
    }
    let now = wasm_core::authority::Micros((js_sys::Date::now() * 1000.0) as i64);
    let n = bytes.len();
    let bundle = audit::assemble(
        &Assembly {
            organization_id,
            exported_at: now.format_whole_seconds(),
            groups,
            registry,
            agent_cards,
            events: bytes,
            admissions: Vec::new(),
            commands: Vec::new(),
            artifacts: hashes.into_iter().map(|h| (h, None)).collect(),
        },
        None,
    )
    .map_err(|e| e.to_string())?;
    let text = String::from_utf8(bundle).map_err(|e| e.to_string())?;
    let name = format!(
        "missionweave-audit-{}.jsonl",
        now.format_whole_seconds().replace(':', "")
    );
    crate::web::download(&name, &text)?;
    Ok(n)
}

/// The export button and its outcome.
#[component]
pub fn AuditExport() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let outcome = RwSignal::new(None::<Result<usize, String>>);
    let click = move |_| {
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(async move {
            outcome.set(Some(export(console).await));
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = console;
    };
    view! {
        <div class="audit-export">
            <button type="button" id="audit-export" on:click=click
                title=move || t_string!(i18n, events.audit_export_hint)>
                {t!(i18n, events.audit_export)}
            </button>
            {move || outcome.get().map(|r| match r {
                Ok(n) => view! {
                    <span class="hint" data-state="exported" role="status">
                        {t!(i18n, events.audit_exported, n = move || n)}
                    </span>
                }.into_any(),
                Err(e) => view! {
                    <span class="state error" data-state="export-error" role="alert">
                        {t!(i18n, events.audit_export_failed, detail = move || e.clone())}
                    </span>
                }.into_any(),
            })}
        </div>
    }
}
