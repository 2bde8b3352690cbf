//! The view models in the browser: a small Mission history driven through the authority, then
//! every view, the DAG layout with a live update, and time travel, natively and as a
//! `wasm32-unknown-unknown` test module (whose imports scripts/check-wasm-imports.sh checks:
//! the views import nothing from the host).

#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use simulation::harness::{Envelope, Harness};
use simulation::kit;
use wasm_core::authority::handlers::payload;
use wasm_core::authority::{Micros, Submitted};
use wasm_core::json::Value;
use wasm_core::model::common::ActorType;
use wasm_core::views::dag::{DagView, WhyNotRunning};
use wasm_core::views::layout::{CollapseOptions, LiveLayout, Refresh, Sugiyama};
use wasm_core::views::ledger::LedgerView;
use wasm_core::views::timeline::{TimeTravel, Timeline};
use wasm_core::views::{MissionState, Viewer, Views};

const G: &str = "urn:x:group:root";
const M: &str = "urn:x:mission:root";

fn s(v: &str) -> Value {
    Value::string(v.to_owned())
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn views_of_a_small_history() {
    let now = Micros::parse("2026-07-15T08:00:00Z").unwrap();
    let mut h = Harness::new(&[("owner", ActorType::Human), ("coord", ActorType::Agent)]);
    let mut log: Vec<Value> = Vec::new();
    let mut keep = |r: Result<Submitted, wasm_core::authority::Rejection>| match r.unwrap() {
        Submitted::Appended(es) => log.extend(es.into_iter().map(|e| e.value)),
        Submitted::Duplicate(_) => panic!("duplicate"),
    };
    // Agent Card and Session for the Coordinator (as the harness's bootstrap, logged here).
    let card = payload(vec![
        ("agentId", s(&h.id("coord"))),
        ("version", Value::from(1u64)),
        ("displayName", s("coord")),
        ("owner", s("urn:missionweaveprotocol:human:operations")),
        ("publicKey", s("test")),
        ("capabilities", Value::Array(vec![])),
        ("issuedAt", s(&now.format())),
        ("signature", s("test")),
    ]);
    keep(h.submit(
        "organization-registry",
        "ext.missionweaveprotocol.registry.agent_card_register",
        &Envelope::default(),
        payload(vec![("card", Value::Object(card))]),
        now,
    ));
    keep(h.submit(
        "group-gateway",
        "ext.missionweaveprotocol.identity.session_open",
        &Envelope::default(),
        payload(vec![("agentId", s(&h.id("coord")))]),
        now,
    ));
    let p = payload(vec![
        ("missionId", s(M)),
        ("groupId", s(G)),
        ("coordinatorId", s(&h.id("coord"))),
        ("title", s("Root")),
        ("objective", s("Ship it")),
        ("definitionOfDone", Value::Array(vec![s("done")])),
        (
            "budget",
            Value::Object(payload(vec![("modelTokens", Value::from(1_000u64))])),
        ),
        ("deadline", s("2026-07-17T08:00:00Z")),
        ("coordinatorLeaseSeconds", Value::from(31_536_000u64)),
    ]);
    let env = kit::in_group(G);
    keep(h.submit("owner", "mission.create", &env, p, now));
    for (id, deps) in [("urn:x:w:1", vec![]), ("urn:x:w:2", vec![s("urn:x:w:1")])] {
        let contract = payload(vec![
            ("goal", s("Build")),
            ("deliverables", Value::Array(vec![s("binary")])),
            ("acceptanceCriteria", Value::Array(vec![s("runs")])),
            ("deadline", s("2026-07-16T08:00:00Z")),
            (
                "budget",
                Value::Object(payload(vec![("modelTokens", Value::from(100u64))])),
            ),
        ]);
        let p = payload(vec![
            ("workItemId", s(id)),
            ("contract", Value::Object(contract)),
            ("dependencyIds", Value::Array(deps)),
        ]);
        let env = h.current_envelope("coord", Some(G));
        keep(h.submit("coord", "work.authorize", &env, p, now));
    }
    let state = &h.authority.state;
    let owner = Viewer::Principal(h.actor("owner"));
    let views = Views::build(state, &owner, now);
    let card = views.board.card(M).unwrap();
    assert_eq!(card.state, MissionState::Active);
    assert_eq!((card.progress.accepted, card.progress.total), (0, 2));
    assert!(views.approvals.items.is_empty());
    assert_eq!(views.agents.agents.len(), 1);

    let dag = DagView::build(state, M, now).unwrap();
    assert_eq!(
        dag.node("urn:x:w:2").unwrap().why_not_running,
        vec![
            WhyNotRunning::Dependencies(vec!["urn:x:w:1".into()]),
            // No Worker is a member yet: nobody `work.offer` would admit.
            WhyNotRunning::Capability {
                requirements: vec![]
            },
        ]
    );
    assert_eq!(
        dag.critical_path.work_item_ids,
        vec!["urn:x:w:1", "urn:x:w:2"]
    );
    let mut live = LiveLayout::new(Sugiyama::default(), CollapseOptions::default(), dag).unwrap();
    let y = |l: &LiveLayout<Sugiyama>, id: &str| l.node_of(id).unwrap().position.y;
    assert!(y(&live, "urn:x:w:1") < y(&live, "urn:x:w:2"));
    let mut n = live.attrs("urn:x:w:1").unwrap().clone();
    n.title = "Build it".into();
    assert_eq!(
        live.update_node(n).unwrap(),
        Refresh::Patched { changed: 1 }
    );

    let ledger = LedgerView::build(state, M, &log, &[]).unwrap();
    assert_eq!(ledger.accounts.len(), 3);
    assert_eq!(Timeline::build(&log).entries.len(), log.len());
    let mut tt = TimeTravel::new(log.clone());
    let end = tt.state_at(log.len()).unwrap().projection_hash();
    assert_eq!(end, state.projection_hash());
    let before_work = tt.position_after(Some(G), 1).unwrap();
    assert!(tt.state_at(before_work).unwrap().work_items.is_empty());
}
