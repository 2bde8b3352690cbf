//! What awaits the signed-in human's decision, told even in a background tab (issue 29): the
//! document title carries the count (`(2) MissionWeave console`), and, once the person has
//! allowed it from the button of [`NotifyPermission`] (never asked at load), the browser's
//! Notification API announces each new execution gate (§12) or final Mission approval (§7.3)
//! with its Mission, the WorkItem's goal and the ownership lease's countdown.
//!
//! "New" is against a set of announced item keys (`commands::item_key`: a gate is its WorkItem
//! and Ownership Epoch, a final approval its Mission and revision) kept in `localStorage` per
//! Principal, bounded: an item is never announced twice, across reconnects, replays and
//! reloads. What was pending before the page opened is remembered without a notification when
//! the console first becomes live (the person sees it in the title and the Approvals view).

use crate::commands::item_key;
use crate::i18n::*;
use crate::socket::machine::Status;
use crate::state::Console;
use crate::web;
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use std::collections::VecDeque;
use wasm_core::authority::clock::Micros;
use wasm_core::views::approvals::{ApprovalInbox, ApprovalItem, ApprovalKind, ViewerDecision};

/// Announced keys kept per Principal at most (the oldest are forgotten).
const REMEMBERED: usize = 512;

/// One item that awaits the viewer's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Awaiting {
    pub key: String,
    pub announce: bool,
    pub mission: String,
    pub goal: Option<String>,
    pub lease: Option<Micros>,
    /// When it became pending (the inbox's `since`).
    pub since: Micros,
}

/// The items awaiting the viewer's own decision (the inbox's `MayApprove` ones) in the live
/// state; `announce` for execution gates and final approvals.
pub fn awaiting(console: Console) -> Memo<Vec<Awaiting>> {
    Memo::new(move |_| {
        let Some(viewer) = console.viewer.get() else {
            return Vec::new();
        };
        let seen = console.rejections.get();
        let now = console.clock.get_untracked();
        console.snapshot.with(|s| {
            if s.as_of.is_some() {
                // Time travel shows a past state: nothing in it awaits anyone now.
                return Vec::new();
            }
            ApprovalInbox::build(&s.state, &viewer, &seen, now)
                .items
                .iter()
                .filter(|i| i.viewer == ViewerDecision::MayApprove)
                .map(|i| describe(&s.state, i))
                .collect()
        })
    })
}

fn describe(state: &wasm_core::authority::state::State, i: &ApprovalItem) -> Awaiting {
    let mission = state
        .missions
        .get(&i.mission_id)
        .map_or_else(|| i.mission_id.clone(), |m| m.title.clone());
    let (announce, goal, lease) = match &i.kind {
        ApprovalKind::ExecutionGate {
            goal,
            ownership_lease_expires_at,
            ..
        } => (true, Some(goal.clone()), *ownership_lease_expires_at),
        ApprovalKind::MissionFinal { .. } => (true, None, None),
        _ => (false, None, None),
    };
    Awaiting {
        key: item_key(i),
        announce,
        mission,
        goal,
        lease,
        since: i.since,
    }
}

/// `(n) title` when `n` items wait, else the title.
pub fn titled(n: usize, title: &str) -> String {
    if n == 0 {
        title.to_owned()
    } else {
        format!("({n}) {title}")
    }
}

/// The announced keys of `principal`, oldest first.
fn load(principal: &str) -> VecDeque<String> {
    web::local_get(&storage_key(principal))
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn save(principal: &str, keys: &VecDeque<String>) {
    let text: Vec<&str> = keys.iter().map(String::as_str).collect();
    web::local_set(&storage_key(principal), &text.join("\n"));
}

fn storage_key(principal: &str) -> String {
    format!("mwp.announced.{principal}")
}

/// The keys of `items` to announce now: those not in `known`, which are added to it (bounded).
/// With `silent_before` (the first live state: the page's opening) the items pending since
/// before it are only remembered.
pub fn fresh<'a>(
    known: &mut VecDeque<String>,
    items: &'a [Awaiting],
    silent_before: Option<Micros>,
) -> Vec<&'a Awaiting> {
    let mut out = Vec::new();
    for a in items.iter().filter(|a| a.announce) {
        if known.contains(&a.key) {
            continue;
        }
        known.push_back(a.key.clone());
        if known.len() > REMEMBERED {
            known.pop_front();
        }
        if silent_before.is_none_or(|t| a.since >= t) {
            out.push(a);
        }
    }
    out
}

/// The title's count and the notifications, for the whole page (the shell calls it once).
pub fn watch(console: Console, i18n: I18nContext<Locale>) {
    let items = awaiting(console);
    Effect::new(move |_| {
        let l = i18n.get_locale();
        let n = items.with(Vec::len);
        if let Some(d) = web::window().and_then(|w| w.document()) {
            d.set_title(&titled(n, td_string!(l, app.title)));
        }
    });
    // Per Principal: whether the first live state was seen, and the keys announced. What was
    // pending before the page opened is not announced then (the title and the view show it).
    let opened = console.clock.get_untracked();
    let seen_live = StoredValue::new(None::<String>);
    Effect::new(move |_| {
        let live = matches!(console.status.get(), Status::Connected)
            && console.progress.with(|p| p.done());
        let Some(principal) = console
            .viewer
            .with(|v| v.as_ref().and_then(|v| v.actor().map(|a| a.id.0.clone())))
        else {
            return;
        };
        if !live {
            return;
        }
        let silent = seen_live
            .with_value(|p| p.as_deref() != Some(principal.as_str()))
            .then_some(opened);
        seen_live.set_value(Some(principal.clone()));
        let mut known = load(&principal);
        let now = console.clock.get_untracked();
        items.with(|items| {
            for a in fresh(&mut known, items, silent) {
                show(i18n, a, now);
            }
        });
        save(&principal, &known);
    });
}

/// One notification, if the person allowed them.
fn show(i18n: I18nContext<Locale>, a: &Awaiting, now: Micros) {
    let l = i18n.get_locale_untracked();
    let mission = a.mission.clone();
    let (title, body) = match (&a.goal, a.lease) {
        (Some(goal), Some(at)) => {
            let lease = crate::components::live::when(i18n, at, now);
            (
                td_string!(l, notify.gate_title, mission = mission).to_string(),
                td_string!(l, notify.gate_body, goal = goal.clone(), lease = lease).to_string(),
            )
        }
        // No lease known: the goal alone (data, no sentence to translate).
        (Some(goal), None) => (
            td_string!(l, notify.gate_title, mission = mission).to_string(),
            goal.clone(),
        ),
        (None, _) => (
            td_string!(l, notify.final_title, mission = mission).to_string(),
            td_string!(l, notify.final_body).to_string(),
        ),
    };
    notify(&title, &body, &a.key);
}

/// The permission the browser holds for notifications: `granted`, `denied`, `default`, or
/// `None` without the API.
pub fn permission() -> Option<String> {
    let w = web::window()?;
    let has =
        js_sys::Reflect::has(&w, &wasm_bindgen::JsValue::from_str("Notification")).unwrap_or(false);
    if !has {
        return None;
    }
    let n = js_sys::Reflect::get(&w, &wasm_bindgen::JsValue::from_str("Notification")).ok()?;
    js_sys::Reflect::get(&n, &wasm_bindgen::JsValue::from_str("permission"))
        .ok()?
        .as_string()
}

fn notify(title: &str, body: &str, tag: &str) {
    if permission().as_deref() != Some("granted") {
        return;
    }
    let opts = web_sys::NotificationOptions::new();
    opts.set_body(body);
    opts.set_tag(tag);
    let _ = web_sys::Notification::new_with_options(title, &opts);
}

/// The sentence saying why, and the button that asks the browser's permission (the only place
/// it is asked).
#[component]
pub fn NotifyPermission() -> impl IntoView {
    let i18n = use_i18n();
    let state = RwSignal::new(permission());
    let ask = move |_| {
        let Some(w) = web::window() else { return };
        let Ok(n) = js_sys::Reflect::get(&w, &wasm_bindgen::JsValue::from_str("Notification"))
        else {
            return;
        };
        let Ok(f) = js_sys::Reflect::get(&n, &wasm_bindgen::JsValue::from_str("requestPermission"))
            .and_then(wasm_bindgen::JsCast::dyn_into::<js_sys::Function>)
        else {
            return;
        };
        if let Ok(p) = f
            .call0(&n)
            .and_then(wasm_bindgen::JsCast::dyn_into::<js_sys::Promise>)
        {
            wasm_bindgen_futures::spawn_local(async move {
                let _ = wasm_bindgen_futures::JsFuture::from(p).await;
                state.set(permission());
            });
        }
    };
    view! {
        <div class="notify-permission" role="note">
            {move || match state.get().as_deref() {
                None => view! { <p>{t!(i18n, notify.unsupported)}</p> }.into_any(),
                Some("granted") => view! { <p>{t!(i18n, notify.granted)}</p> }.into_any(),
                Some("denied") => view! { <p>{t!(i18n, notify.denied)}</p> }.into_any(),
                Some(_) => view! {
                    <p id="notify-why">{t!(i18n, notify.why)}</p>
                    <button type="button" class="notify-enable" aria-describedby="notify-why"
                        on:click=ask>{t!(i18n, notify.enable)}</button>
                }
                .into_any(),
            }}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str, announce: bool) -> Awaiting {
        Awaiting {
            key: key.to_owned(),
            announce,
            mission: "M".into(),
            goal: None,
            lease: None,
            since: Micros(10),
        }
    }

    #[test]
    fn each_item_is_announced_once_and_the_first_state_silently() {
        let mut known = VecDeque::new();
        // The first live state: pending before the page opened (at 20), remembered silently;
        // opened since, announced.
        let mut late = item("final m0 1", true);
        late.since = Micros(30);
        let first = [item("gate w1 1", true), item("override a", false), late];
        let keys: Vec<&str> = fresh(&mut known, &first, Some(Micros(20)))
            .iter()
            .map(|a| a.key.as_str())
            .collect();
        assert_eq!(keys, ["final m0 1"]);
        let next = [
            item("gate w1 1", true),
            item("gate w2 1", true),
            item("final m 3", true),
        ];
        let keys: Vec<&str> = fresh(&mut known, &next, None)
            .iter()
            .map(|a| a.key.as_str())
            .collect();
        assert_eq!(keys, ["gate w2 1", "final m 3"]);
        // Replayed again (a reconnect): nothing new.
        assert!(fresh(&mut known, &next, None).is_empty());
        // A new Ownership Epoch is a new gate.
        let again = [item("gate w1 2", true)];
        assert_eq!(fresh(&mut known, &again, None).len(), 1);
        assert_eq!(titled(0, "T"), "T");
        assert_eq!(titled(2, "T"), "(2) T");
    }

    #[test]
    fn the_announced_keys_are_bounded() {
        let mut known = VecDeque::new();
        let many: Vec<Awaiting> = (0..REMEMBERED + 10)
            .map(|i| item(&format!("gate w{i} 1"), true))
            .collect();
        assert_eq!(fresh(&mut known, &many, None).len(), REMEMBERED + 10);
        assert_eq!(known.len(), REMEMBERED);
    }
}
