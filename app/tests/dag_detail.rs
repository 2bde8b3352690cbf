//! The Mission view's level of detail (`routes::mission::Detail`): the graph is drawn without
//! its text — one element per node — when the on-screen scale makes node text unreadable (the
//! 2,000-WorkItem Mission at its fitted zoom), with its full text otherwise (the demo's Mission
//! at its fitted zoom, on a desktop and a phone) and once zoomed in far enough; the far level
//! keeps every node's name, state cue and critical marking, escaped.

use app::bench;
use app::routes::mission::{
    Detail, MAX_ZOOM, MIN_TEXT_PX, TEXT_UNITS, detail_at, far_cue, graph_markup, max_zoom,
    screen_scale,
};
use wasm_core::views::dag::{DagView, NodeKind};
use wasm_core::views::layout::{CollapseOptions, LiveLayout, Sugiyama};

mod common;
use common::{NOW, folded, words};

/// The `<svg>`'s size in the Mission view (CSS px) at the end2end walk's two viewports:
/// 1280×800 (28rem tall) and 390×844 (20rem tall).
const DESKTOP: (f64, f64) = (1118.0, 448.0);
const PHONE: (f64, f64) = (350.0, 320.0);

/// The demo's Checkout Mission laid out: three nodes wide, five layers deep (160×48 boxes,
/// gaps 24 and 56).
const DEMO_LAYOUT: (i64, i64) = (3 * 160 + 2 * 24, 5 * 48 + 4 * 56);

/// The benchmark's Mission of `n` WorkItems, laid out as the Mission view lays it out.
fn mission(n: usize) -> LiveLayout<Sugiyama> {
    let events = bench::generate(n + 20, n).expect("the history");
    bench::layout(&folded(&events).log, NOW).expect("laid out")
}

#[test]
fn text_under_six_px_is_drawn_far_and_at_six_or_more_in_full() {
    // The threshold itself, both sides of it.
    let at = MIN_TEXT_PX / TEXT_UNITS;
    assert_eq!(detail_at(at), Detail::Full);
    assert_eq!(detail_at(at * 1.01), Detail::Full);
    assert_eq!(detail_at(at * 0.99), Detail::Far);
    assert_eq!(detail_at(1.0), Detail::Full);
    assert_eq!(detail_at(0.0), Detail::Far);
    // "meet": the tighter side of the frame decides; the viewBox has a 20 margin all round.
    let s = screen_scale((2000.0, 100.0), (960, 60), 1.0);
    assert!((s - 1.0).abs() < 1e-9, "height decides: {s}");
    let s = screen_scale((500.0, 1000.0), (960, 60), 1.0);
    assert!((s - 0.5).abs() < 1e-9, "width decides: {s}");
    assert!((screen_scale((2000.0, 100.0), (960, 60), 2.5) - 2.5).abs() < 1e-9);
    // The demo on a desktop: 568×504 in 1118×448, the height decides.
    let demo = screen_scale(DESKTOP, DEMO_LAYOUT, 1.0);
    assert!((demo - 448.0 / 504.0).abs() < 1e-9, "{demo}");
    // Not laid out yet, or not measured: nothing readable.
    assert_eq!(screen_scale((0.0, 448.0), DEMO_LAYOUT, 1.0), 0.0);
}

#[test]
fn the_demo_mission_keeps_its_text_and_two_thousand_work_items_are_drawn_far() {
    for frame in [DESKTOP, PHONE] {
        let s = screen_scale(frame, DEMO_LAYOUT, 1.0);
        assert_eq!(detail_at(s), Detail::Full, "demo at {frame:?}: {s}");
        assert_eq!(max_zoom(s), MAX_ZOOM, "a small graph zooms as before");
    }
    let big = mission(2_000);
    assert_eq!(big.dag().nodes.len(), 2_000);
    let dims = (big.width, big.height);
    let fitted = screen_scale(DESKTOP, dims, 1.0);
    assert_eq!(detail_at(fitted), Detail::Far, "{dims:?}: {fitted}");
    // Zoomed in as far as the buttons go (the old limit was 4: still far): full text.
    assert_eq!(detail_at(fitted * MAX_ZOOM), Detail::Far);
    let most = max_zoom(fitted);
    assert!(most > MAX_ZOOM, "{most}");
    assert_eq!(detail_at(fitted * most), Detail::Full);
    // One zoom step (×1.25) short of the threshold is still far.
    let threshold = MIN_TEXT_PX / TEXT_UNITS / fitted;
    assert_eq!(detail_at(fitted * threshold / 1.25), Detail::Far);
}

#[test]
fn the_far_level_draws_one_named_element_per_node_with_its_state_cue_and_critical_mark() {
    let events = bench::generate(32, 12).expect("the history");
    let mut r = bench::Replay::new(bench::registry());
    for e in &events {
        r.receive(&wasm_core::json::to_string(e));
    }
    r.fold(events.len());
    let mut dag = DagView::build(r.log.state(), bench::MISSION, NOW).expect("the DAG");
    let hostile = "<script>alert(\"x\")</script> & 'y'";
    dag.nodes[0].title = hostile.into();
    let options = CollapseOptions {
        max_siblings: usize::MAX,
        ..CollapseOptions::default()
    };
    let live = LiveLayout::new(Sugiyama::default(), options, dag).expect("laid out");
    let picked = live.nodes[1].id.clone();
    let far = words(|w| graph_markup(&live, w, Some(picked.as_str()), Detail::Far));
    let full = words(|w| graph_markup(&live, w, Some(picked.as_str()), Detail::Full));
    let n = live.nodes.len();
    assert!(
        live.dag()
            .nodes
            .iter()
            .all(|d| matches!(d.kind, NodeKind::WorkItem)),
        "no child Mission in this history"
    );

    // No text is drawn: every node is one <rect>, focusable, a button, named.
    assert!(!far.contains("<text"), "{far}");
    assert!(!far.contains("<g "), "{far}");
    assert_eq!(far.matches("<rect ").count(), n);
    assert_eq!(far.matches(" data-node-id=\"").count(), n);
    assert_eq!(far.matches(" role=\"button\"").count(), n);
    assert_eq!(far.matches(" tabindex=\"0\"").count(), n);
    assert_eq!(far.matches(" aria-label=\"").count(), n);
    assert_eq!(far.matches("aria-pressed=\"true\"").count(), 1);
    // The full level draws text in every node, and no aria-label (its <title> names it).
    assert_eq!(full.matches("class=\"st\">[").count(), n);
    assert!(!full.contains(" aria-label=\""));

    // Protocol text is escaped in the name and in the tooltip.
    assert!(!far.contains("<script>"), "{far}");
    let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39; — [";
    assert!(far.contains(&format!("aria-label=\"{escaped}")), "{far}");
    assert!(far.contains(&format!("<title>{escaped}")), "{far}");

    // The state is said by more than colour: the name, and the outline's cue class.
    for (vi, v) in live.nodes.iter().enumerate() {
        let state = live.attrs(&v.id).expect("one WorkItem").state.as_str();
        let open = format!("<rect id=\"dag-v{vi}\"");
        let at = far.find(&open).expect("the node's element");
        let end = far[at..].find("</rect>").expect("closed") + at;
        let el = &far[at..end];
        assert!(
            el.contains(&format!("cue-{}", far_cue(state))),
            "{state}: {el}"
        );
        assert!(el.contains(&format!("— [{state}]")), "{el}");
    }
    let cues: std::collections::BTreeSet<&str> =
        ["verified", "active", "queued", "failed", "cancelled"]
            .into_iter()
            .map(far_cue)
            .collect();
    assert_eq!(cues.len(), 5, "five distinguishable cues: {cues:?}");

    // The critical path: marked on as many nodes as it has WorkItems, at both levels.
    let critical = live.dag().critical_path.work_item_ids.len();
    assert!(critical >= 1);
    assert_eq!(far.matches("data-critical=\"true\"").count(), critical);
    assert_eq!(far.matches(" critical\" data-node-id").count(), critical);
    assert_eq!(full.matches("data-critical=\"true\"").count(), critical);
    // Smaller markup: no text lines, no <g>.
    assert!(far.len() < full.len(), "{} vs {}", far.len(), full.len());
}
