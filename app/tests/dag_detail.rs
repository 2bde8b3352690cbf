//! The Mission view's level of detail (`routes::mission::Detail`): the graph is drawn without
//! its text — one element per node — when the on-screen scale makes node text unreadable (the
//! 2,000-WorkItem Mission at its fitted zoom), with its full text otherwise (the demo's Mission
//! at its fitted zoom, on a desktop and a phone) and once zoomed in far enough; the far level
//! keeps every node's name, state cue and critical marking, escaped.

use app::bench;
use app::routes::mission::{
    Detail, FIT_NODES, MAX_FIT_SCALE, MAX_NODE_WIDTH, MAX_ZOOM, MIN_TEXT_PX, READABLE_PX,
    TEXT_UNITS, TITLE_COLUMNS, WRAP_NODE_HEIGHT, WRAP3_NODE_HEIGHT, detail_at, engine_for, far_cue,
    graph_markup, max_zoom, needs_third_line, refit, screen_scale, start_zoom, title_columns,
    view_box, view_width,
};
use wasm_core::authority::Micros;
use wasm_core::views::WorkState;
use wasm_core::views::dag::{
    CriticalPath, DagEdge, DagNode, DagView, EdgeKind, NodeKind, NodeState,
};
use wasm_core::views::layout::{CollapseOptions, LiveLayout, Sugiyama};

mod common;
use common::{NOW, folded, words};

/// The `<svg>`'s size in the Mission view (CSS px) at the end2end walk's two viewports:
/// 1280×800 (28rem tall) and 390×844 (20rem tall).
const DESKTOP: (f64, f64) = (1118.0, 448.0);
const PHONE: (f64, f64) = (350.0, 320.0);
/// The desktop `<svg>` as tall as a tall graph makes it (three quarters of 800 px).
const DESKTOP_TALL: (f64, f64) = (1118.0, 600.0);

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

/// The demo's Checkout Mission's shape and titles (server demo, issue 13's "WorkItem DAG"):
/// three WorkItems feed the implementation, which is tested, reviewed and deployed; the
/// security review (a child Mission's in the demo) also gates the deployment.
fn checkout() -> DagView {
    let items = [
        ("api-schema", "Document the payment provider's API schema"),
        (
            "hotfix-review",
            "Urgent review of the session-fixation hot-fix",
        ),
        ("implementation", "Implement the checkout service"),
        ("integration", "Deploy the checkout service to staging"),
        ("requirements", "Requirements analysis for checkout"),
        ("review", "Code review of the checkout service"),
        (
            "security",
            "Security review of the checkout service (child Mission)",
        ),
        ("testing", "Test the checkout service"),
    ];
    let id = |s: &str| format!("urn:missionweaveprotocol:demo:x:checkout:work:{s}");
    let edges = [
        ("api-schema", "implementation"),
        ("hotfix-review", "implementation"),
        ("requirements", "implementation"),
        ("requirements", "security"),
        ("implementation", "testing"),
        ("testing", "review"),
        ("review", "integration"),
        ("security", "integration"),
    ];
    let mut edges: Vec<DagEdge> = edges
        .iter()
        .map(|(a, b)| DagEdge {
            from: id(a),
            to: id(b),
            kind: EdgeKind::Dependency,
        })
        .collect();
    edges.sort();
    DagView {
        mission_id: "urn:missionweaveprotocol:demo:x:checkout".into(),
        now: NOW,
        nodes: items
            .iter()
            .map(|(k, title)| DagNode {
                id: id(k),
                kind: NodeKind::WorkItem,
                title: (*title).into(),
                state: NodeState::Work(WorkState::Verified),
                owner: Some("urn:missionweaveprotocol:agent:developer".into()),
                ownership_epoch: 1,
                ownership_lease_expires_at: None,
                execution_lease_expires_at: None,
                offer_expires_at: None,
                deadline: Micros(0),
                why_not_running: vec![],
                running: false,
                on_critical_path: *k == "integration",
            })
            .collect(),
        edges,
        critical_path: CriticalPath {
            work_item_ids: vec![id("integration")],
            weight_seconds: 0,
        },
    }
}

/// A child Mission of two WorkItems (a chain: one layer each) fitted to the desktop frame is
/// not blown up to its width: at most [`MAX_FIT_SCALE`] CSS px per unit, the layout centred in
/// a wider `viewBox`; the demo's Mission, which fills the frame, keeps its own `viewBox`.
#[test]
fn a_small_graph_is_not_enlarged_past_the_fit_cap_and_sits_in_the_middle() {
    let mut two = checkout();
    two.nodes
        .retain(|n| n.id.ends_with(":testing") || n.id.ends_with(":review"));
    two.edges
        .retain(|e| e.from.ends_with(":testing") && e.to.ends_with(":review"));
    assert_eq!((two.nodes.len(), two.edges.len()), (2, 1));
    let options = CollapseOptions::default();
    let l = LiveLayout::new(engine_for(2, DESKTOP.0), options, two).expect("laid out");
    let dims = (l.width, l.height);
    for frame in [DESKTOP, DESKTOP_TALL, (1800.0, 900.0)] {
        // Without the cap: the layout and its margins stretched to the frame.
        let stretched = (frame.0 / (dims.0 + 40) as f64).min(frame.1 / (dims.1 + 40) as f64);
        assert!(stretched > 1.5, "{frame:?}: {stretched}");
        let s = screen_scale(frame, dims, 1.0);
        assert!(s <= MAX_FIT_SCALE + 1e-9, "{frame:?}: {s}");
        assert!(s >= 1.0, "{frame:?}: still readable: {s}");
        // The viewBox: as wide as the frame at the cap, the layout in its middle.
        let vb: Vec<i64> = view_box(dims, frame.0)
            .split(' ')
            .map(|v| v.parse().expect("a number"))
            .collect();
        assert_eq!(vb[2], view_width(dims.0, frame.0));
        assert_eq!(vb[2], (frame.0 / MAX_FIT_SCALE).ceil() as i64);
        assert!(
            (vb[0] + vb[2] / 2 - dims.0 / 2).abs() <= 1,
            "{vb:?} for {dims:?}"
        );
        assert_eq!((vb[1], vb[3]), (-20, dims.1 + 40));
    }
    // The demo's Mission fitted to the frame's width: its own viewBox, as before.
    let demo = LiveLayout::new(engine_for(8, DESKTOP.0), options, checkout()).expect("laid out");
    assert_eq!(view_width(demo.width, DESKTOP.0), demo.width + 40);
    assert_eq!(
        view_box((demo.width, demo.height), DESKTOP.0),
        format!("-20 -20 {} {}", demo.width + 40, demo.height + 40)
    );
    // Not measured yet, or a frame of nothing: the layout's own width.
    assert_eq!(view_width(dims.0, 0.0), dims.0 + 40);
    assert_eq!(view_width(dims.0, f64::NAN), dims.0 + 40);
}

/// The title lines drawn in each node of `markup`, joined, without the critical mark.
fn drawn_titles(markup: &str) -> Vec<String> {
    markup
        .split("<g id=\"dag-v")
        .skip(1)
        .map(|g| {
            g.split("class=\"title\">")
                .skip(1)
                .map(|t| t.split("</text>").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(" ")
                .trim_start_matches("◆ ")
                .replace("&#39;", "'")
        })
        .collect()
}

#[test]
fn box_width_follows_the_frame_within_its_bounds_and_a_large_mission_keeps_160_by_48() {
    // The columns of a title line: 19 in a 160-wide box as before, more in a wider one.
    assert_eq!(title_columns(160), TITLE_COLUMNS);
    assert_eq!(title_columns(MAX_NODE_WIDTH), 35);
    assert_eq!(title_columns(12), 0);
    assert_eq!(title_columns(0), 0);
    // A small Mission: boxes fitted to the frame, two title lines tall.
    let e = engine_for(8, DESKTOP.0);
    assert_eq!(e.node_height, WRAP_NODE_HEIGHT);
    assert_eq!(
        e.fitted_node_width(3),
        MAX_NODE_WIDTH,
        "three wide in 1118 px: the bound"
    );
    assert_eq!(
        e.fitted_node_width(5),
        1078 / 5 - 24,
        "five wide: the frame's share"
    );
    assert_eq!(e.fitted_node_width(7), 160, "seven wide: never under 160");
    assert_eq!(
        engine_for(8, PHONE.0).fitted_node_width(3),
        160,
        "a phone: 160"
    );
    // Past FIT_NODES: the layout the benchmarks measure, whatever the frame.
    assert_eq!(
        engine_for(FIT_NODES, DESKTOP.0).node_height,
        WRAP_NODE_HEIGHT
    );
    assert_eq!(engine_for(FIT_NODES + 1, DESKTOP.0), Sugiyama::default());
    assert_eq!(engine_for(2_000, 1e6), Sugiyama::default());

    // The demo at 1280 px: 288-wide boxes, so every title is drawn whole (two lines at most).
    let options = CollapseOptions {
        max_nodes: 2_000,
        ..CollapseOptions::default()
    };
    let mut demo =
        LiveLayout::new(engine_for(8, DESKTOP.0), options, checkout()).expect("laid out");
    assert_eq!(demo.node_size, (MAX_NODE_WIDTH, WRAP_NODE_HEIGHT));
    assert_eq!(demo.width, 3 * MAX_NODE_WIDTH + 2 * 24);
    let full = words(|w| graph_markup(&demo, w, None, Detail::Full));
    let shown = drawn_titles(&full);
    let titles: Vec<String> = demo
        .nodes
        .iter()
        .map(|n| demo.attrs(&n.id).expect("a WorkItem").title.clone())
        .collect();
    assert_eq!(shown, titles, "{full}");
    assert!(!full.contains('…'));
    assert!(
        full.contains("class=\"title\">service (child Mission)</text>"),
        "{full}"
    );
    // Text still readable at the fitted scale (at least 11 px, as the old 13).
    let s = screen_scale(DESKTOP_TALL, (demo.width, demo.height), 1.0);
    assert!(TEXT_UNITS * s >= 11.0, "{s}");
    // Resized to a phone: laid out again with 160-wide boxes, three title lines tall since
    // two cut some titles (the longest still ends with "…"); resized back: 288 again, two
    // lines; the same frame: left alone.
    assert!(needs_third_line(demo.dag(), 160));
    assert!(!needs_third_line(demo.dag(), MAX_NODE_WIDTH));
    assert!(refit(&mut demo, PHONE.0));
    assert_eq!(demo.node_size, (160, WRAP3_NODE_HEIGHT));
    assert_eq!(demo.layouts, 2);
    assert!(!refit(&mut demo, PHONE.0));
    assert!(!refit(&mut demo, PHONE.0 + 20.0), "still 160 wide");
    let phone = words(|w| graph_markup(&demo, w, None, Detail::Full));
    for (t, full_title) in drawn_titles(&phone).iter().zip(&titles) {
        let kept = t.trim_end_matches('…');
        assert!(
            full_title.starts_with(kept.split(' ').next().unwrap_or_default()),
            "{t} / {full_title}"
        );
        assert!(t == full_title || t.ends_with('…'), "{t} / {full_title}");
    }
    assert!(
        phone.contains("class=\"title\">API schema</text>"),
        "a third line keeps a title whole: {phone}"
    );
    assert!(refit(&mut demo, DESKTOP.0));
    assert_eq!(demo.node_size, (MAX_NODE_WIDTH, WRAP_NODE_HEIGHT));
    assert_eq!(demo.layouts, 3);
    // Without fitting (the boxes before this change): titles cut at 19 columns.
    let old = LiveLayout::new(Sugiyama::default(), options, checkout()).expect("laid out");
    let cut = drawn_titles(&words(|w| graph_markup(&old, w, None, Detail::Full)));
    assert!(cut.iter().any(|t| t.ends_with('…')), "{cut:?}");

    // 2,000 WorkItems: the default boxes, one title line, and a resize changes nothing.
    let mut big = mission(2_000);
    assert_eq!(big.node_size, (160, 48));
    let before = (big.width, big.height, big.layouts);
    assert!(!refit(&mut big, DESKTOP.0));
    assert!(!refit(&mut big, PHONE.0));
    assert_eq!((big.width, big.height, big.layouts), before);
}

#[test]
fn a_small_graph_starts_at_readable_text_and_a_far_one_at_the_overview() {
    // Fitted text of 10 px or more: no zoom.
    assert_eq!(start_zoom(READABLE_PX / TEXT_UNITS), 1.0);
    assert_eq!(start_zoom(1.2), 1.0);
    // Under 10 px but drawn in full (a phone): zoomed in to exactly 10 px.
    for fitted in [
        0.9 * READABLE_PX / TEXT_UNITS,
        0.64,
        MIN_TEXT_PX / TEXT_UNITS,
    ] {
        let z = start_zoom(fitted);
        assert!(z > 1.0, "{fitted}");
        assert!(
            (TEXT_UNITS * fitted * z - READABLE_PX).abs() < 1e-9,
            "{fitted}: {z}"
        );
        assert_eq!(detail_at(fitted * z), Detail::Full);
    }
    // Drawn far at its fitted scale (2,000 WorkItems): the overview, as before.
    assert_eq!(start_zoom(0.99 * MIN_TEXT_PX / TEXT_UNITS), 1.0);
    assert_eq!(start_zoom(0.0), 1.0);
    let big = mission(2_000);
    assert_eq!(
        start_zoom(screen_scale(DESKTOP, (big.width, big.height), 1.0)),
        1.0
    );
    // The demo on a phone (160-wide boxes, 62 tall): under 10 px fitted, 10 px at the start.
    let options = CollapseOptions::default();
    let demo = LiveLayout::new(engine_for(8, PHONE.0), options, checkout()).expect("laid out");
    let fitted = screen_scale(PHONE, (demo.width, demo.height), 1.0);
    assert!(TEXT_UNITS * fitted < READABLE_PX, "{fitted}");
    assert!(TEXT_UNITS * fitted * start_zoom(fitted) >= READABLE_PX - 1e-9);
}
