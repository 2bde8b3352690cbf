//! The WorkItem DAG layout: layering (every edge points down), no overlapping nodes,
//! deterministic output, crossing reduction, collapsed fan-outs, the size guard, live updates
//! that leave every other coordinate unchanged, and an ignored benchmark for 2 000 WorkItems
//! (`cargo test --release -p wasm-core --test views_layout -- --ignored --nocapture`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use wasm_core::authority::Micros;
use wasm_core::views::WorkState;
use wasm_core::views::dag::{DagEdge, DagNode, DagView, EdgeKind, NodeKind, NodeState};
use wasm_core::views::layout::{
    CollapseOptions, Graph, Layout, LayoutError, LiveLayout, Positions, Refresh, Sugiyama, collapse,
};

fn node(id: &str, state: WorkState) -> DagNode {
    DagNode {
        id: id.to_owned(),
        kind: NodeKind::WorkItem,
        title: format!("goal of {id}"),
        state: NodeState::Work(state),
        owner: None,
        ownership_epoch: 0,
        ownership_lease_expires_at: None,
        execution_lease_expires_at: None,
        offer_expires_at: None,
        deadline: Micros(0),
        why_not_running: vec![],
        running: false,
        on_critical_path: false,
    }
}

/// A DAG view over `n` WorkItems `w0…` with `edges` (dependency → dependent).
fn dag(states: &[WorkState], edges: &[(usize, usize)]) -> DagView {
    let id = |i: usize| format!("urn:x:w:{i:05}");
    let mut edges: Vec<DagEdge> = edges
        .iter()
        .map(|&(a, b)| DagEdge {
            from: id(a),
            to: id(b),
            kind: EdgeKind::Dependency,
        })
        .collect();
    edges.sort();
    edges.dedup();
    DagView {
        mission_id: "urn:x:mission".into(),
        now: Micros(0),
        nodes: states
            .iter()
            .enumerate()
            .map(|(i, s)| node(&id(i), *s))
            .collect(),
        edges,
        critical_path: Default::default(),
    }
}

fn check_geometry(g: &Graph, p: &Positions) {
    let (w, h) = p.node_size;
    // Every edge points down.
    for &(u, v) in &g.edges {
        assert!(
            p.layers[u] < p.layers[v],
            "edge {u}->{v} does not point down"
        );
        assert!(p.nodes[u].y + h <= p.nodes[v].y);
    }
    // No two nodes overlap.
    for a in 0..g.node_count {
        for b in a + 1..g.node_count {
            let (pa, pb) = (p.nodes[a], p.nodes[b]);
            let apart =
                pa.x + w <= pb.x || pb.x + w <= pa.x || pa.y + h <= pb.y || pb.y + h <= pa.y;
            assert!(apart, "nodes {a} and {b} overlap: {pa:?} {pb:?}");
        }
    }
    // Polylines start below `from` and end on top of `to`.
    for (i, &(u, v)) in g.edges.iter().enumerate() {
        let pts = &p.edges[i];
        assert_eq!(pts[0].y, p.nodes[u].y + h);
        assert_eq!(pts.last().unwrap().y, p.nodes[v].y);
        assert_eq!(
            pts.len(),
            p.layers[v] - p.layers[u] + 1,
            "one bend per crossed layer"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random DAGs (edges from a lower to a higher index): layered, no overlap, deterministic.
    #[test]
    fn random_dags_are_layered_without_overlap_and_deterministically(
        n in 1usize..40,
        raw in proptest::collection::vec((0usize..40, 0usize..40), 0..80),
    ) {
        let edges: Vec<(usize, usize)> = raw
            .into_iter()
            .filter(|(a, b)| a < b && *b < n)
            .collect();
        let g = Graph { node_count: n, edges };
        let layout = Sugiyama::default();
        let p = layout.layout(&g);
        check_geometry(&g, &p);
        prop_assert_eq!(&p, &layout.layout(&g));
        // Fitted to a width: wider boxes, the same layers and slot order, still no overlap.
        let fitted = Sugiyama { fit_width: 1100, max_node_width: 280, ..Sugiyama::default() };
        let q = fitted.layout(&g);
        check_geometry(&g, &q);
        prop_assert!(q.node_size.0 >= p.node_size.0 && q.node_size.0 <= 280);
        prop_assert_eq!(&q.layers, &p.layers);
        let slot = |x: i64, w: i64| x / (w + 24);
        for (a, b) in p.nodes.iter().zip(&q.nodes) {
            prop_assert_eq!(slot(a.x, p.node_size.0), slot(b.x, q.node_size.0));
            prop_assert_eq!(a.y, b.y);
        }
    }
}

#[test]
fn a_narrow_graph_gets_wider_boxes_within_bounds_and_a_wide_one_keeps_them() {
    let fit = Sugiyama {
        fit_width: 1100,
        max_node_width: 280,
        ..Sugiyama::default()
    };
    // 1100 / 3 − 24 = 342: past the bound, so 280.
    assert_eq!(fit.fitted_node_width(3), 280);
    // 1100 / 5 − 24 = 196: inside the bounds.
    assert_eq!(fit.fitted_node_width(5), 196);
    // 1100 / 6 − 24 = 159: under the smallest box, so 160.
    assert_eq!(fit.fitted_node_width(6), 160);
    assert_eq!(fit.fitted_node_width(7), 160);
    assert_eq!(fit.fitted_node_width(0), 160);
    // Not fitting (the default): always 160.
    assert_eq!(Sugiyama::default().fitted_node_width(1), 160);
    // A chain of three under one node: three slots wide at most, so 280-wide boxes.
    let g = Graph {
        node_count: 4,
        edges: vec![(0, 3), (1, 3), (2, 3)],
    };
    let p = fit.layout(&g);
    assert_eq!(p.node_size, (280, 48));
    assert_eq!(p.width, 3 * 280 + 2 * 24);
    check_geometry(&g, &p);
    // Eight side by side: each slot's share is under 160, the default boxes.
    let wide = Graph {
        node_count: 8,
        edges: vec![],
    };
    let q = fit.layout(&wide);
    assert_eq!(q.node_size, (160, 48));
    assert_eq!(q, Sugiyama::default().layout(&wide));
    // Laid out again with other settings, a LiveLayout keeps its graph and counts the layout.
    let mut live = LiveLayout::new(
        Sugiyama::default(),
        CollapseOptions::default(),
        dag(&[WorkState::Queued; 4], &[(0, 3), (1, 3), (2, 3)]),
    )
    .unwrap();
    assert_eq!(live.node_size, (160, 48));
    let before: Vec<_> = live.nodes.iter().map(|n| (n.id.clone(), n.layer)).collect();
    live.set_layout(fit.clone()).unwrap();
    assert_eq!(live.node_size, (280, 48));
    assert_eq!(live.layout(), &fit);
    assert_eq!(live.layouts, 2);
    let after: Vec<_> = live.nodes.iter().map(|n| (n.id.clone(), n.layer)).collect();
    assert_eq!(before, after);
    assert_eq!(live.width, 3 * 280 + 2 * 24);
}

#[test]
fn a_cycle_from_foreign_input_is_drawn_without_panic() {
    let g = Graph {
        node_count: 3,
        edges: vec![(0, 1), (1, 2), (2, 0), (1, 1), (5, 0)],
    };
    let p = Sugiyama::default().layout(&g);
    assert_eq!(p.nodes.len(), 3);
    assert_eq!(
        p.edges.len(),
        3,
        "the self-loop and the dangling edge are dropped"
    );
    assert!(p.layers[0] < p.layers[1] && p.layers[1] < p.layers[2]);
}

#[test]
fn barycentre_sweeps_remove_an_avoidable_crossing() {
    // 0 → 3 and 1 → 2 cross in index order; the sweeps uncross them.
    let g = Graph {
        node_count: 4,
        edges: vec![(0, 3), (1, 2)],
    };
    let p = Sugiyama::default().layout(&g);
    let left_top = p.nodes[0].x < p.nodes[1].x;
    let left_bottom = p.nodes[3].x < p.nodes[2].x;
    assert_eq!(left_top, left_bottom, "{p:?}");
}

#[test]
fn fan_outs_collapse_into_a_group_node_with_a_count() {
    // w0 with 12 open dependents, 3 verified dependents and one dependent that has its own child.
    let mut states = vec![WorkState::Verified];
    let mut edges = Vec::new();
    for i in 1..=12 {
        states.push(WorkState::Open);
        edges.push((0, i));
    }
    for i in 13..=15 {
        states.push(WorkState::Verified);
        edges.push((0, i));
    }
    states.push(WorkState::Open); // 16: a dependent with its own dependent 17
    states.push(WorkState::Open);
    edges.push((0, 16));
    edges.push((16, 17));
    let d = dag(&states, &edges);
    let c = collapse(&d, 8);
    let group = c
        .nodes
        .iter()
        .find(|(id, _, _)| id.starts_with("group:"))
        .unwrap();
    assert_eq!(group.0, "group:open:urn:x:w:00001");
    assert_eq!(group.1.len(), 12);
    // w0, the group, three verified siblings (≤ K), w16 and w17.
    assert_eq!(c.nodes.len(), 1 + 1 + 3 + 2);
    let live = LiveLayout::new(Sugiyama::default(), CollapseOptions::default(), d).unwrap();
    let g = live.nodes.iter().find(|n| n.count == 12).unwrap();
    assert_eq!(g.state, NodeState::Work(WorkState::Open));
    assert_eq!(live.node_of("urn:x:w:00007").unwrap().id, g.id);
    assert_eq!(live.node_of("urn:x:w:00016").unwrap().count, 1);
    // Edges between visual nodes are deduplicated: w0 → group once.
    let gi = live.nodes.iter().position(|n| n.count == 12).unwrap();
    assert_eq!(live.edges.iter().filter(|e| e.to == gi).count(), 1);
}

#[test]
fn the_size_guard_refuses_a_graph_too_large_to_draw() {
    // A chain cannot collapse: 30 nodes against a guard of 20.
    let states = vec![WorkState::Open; 30];
    let edges: Vec<_> = (0..29).map(|i| (i, i + 1)).collect();
    let options = CollapseOptions {
        max_siblings: 8,
        max_nodes: 20,
    };
    let r = LiveLayout::new(Sugiyama::default(), options, dag(&states, &edges));
    assert_eq!(
        r.err(),
        Some(LayoutError::TooLarge {
            nodes: 30,
            limit: 20
        })
    );
    // 1 000 independent open WorkItems collapse into one node: drawn.
    let d = dag(&vec![WorkState::Open; 1_000], &[]);
    let live = LiveLayout::new(Sugiyama::default(), options, d).unwrap();
    assert_eq!(live.nodes.len(), 1);
    assert_eq!(live.nodes[0].count, 1_000);
}

#[test]
fn one_node_update_leaves_every_coordinate_unchanged() {
    let states = vec![WorkState::Open; 6];
    let edges = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (0, 5)];
    let d = dag(&states, &edges);
    let mut live =
        LiveLayout::new(Sugiyama::default(), CollapseOptions::default(), d.clone()).unwrap();
    let before: Vec<_> = live
        .nodes
        .iter()
        .map(|n| (n.id.clone(), n.position))
        .collect();
    let edges_before = live.edges.clone();
    // Node 3 starts running: new attributes, same structure.
    let mut n3 = d.nodes[3].clone();
    n3.state = NodeState::Work(WorkState::Active);
    n3.running = true;
    n3.owner = Some("urn:x:agent:w".into());
    assert_eq!(
        live.update_node(n3.clone()).unwrap(),
        Refresh::Patched { changed: 1 }
    );
    let after: Vec<_> = live
        .nodes
        .iter()
        .map(|n| (n.id.clone(), n.position))
        .collect();
    assert_eq!(before, after);
    assert_eq!(edges_before, live.edges);
    assert_eq!(live.layouts, 1);
    assert_eq!(live.attrs("urn:x:w:00003").unwrap(), &n3);
    // A new dependency changes the structure: laid out again.
    let mut d2 = live.dag().clone();
    d2.edges.push(DagEdge {
        from: "urn:x:w:00005".into(),
        to: "urn:x:w:00004".into(),
        kind: EdgeKind::Dependency,
    });
    d2.edges.sort();
    assert_eq!(live.refresh(d2).unwrap(), Refresh::Relaid);
    assert_eq!(live.layouts, 2);
}

#[test]
fn a_state_change_inside_a_group_relays_out() {
    let mut states = vec![WorkState::Verified];
    let mut edges = Vec::new();
    for i in 1..=10 {
        states.push(WorkState::Open);
        edges.push((0, i));
    }
    let d = dag(&states, &edges);
    let mut live =
        LiveLayout::new(Sugiyama::default(), CollapseOptions::default(), d.clone()).unwrap();
    assert_eq!(live.nodes.len(), 2);
    // A group member is offered: it leaves the group (10 → 9 + 1), a structural change.
    let mut n = d.nodes[4].clone();
    n.state = NodeState::Work(WorkState::Offered);
    assert_eq!(live.update_node(n).unwrap(), Refresh::Relaid);
    assert_eq!(live.nodes.len(), 3);
    // A change that keeps every class (the root's title): patched.
    let mut root = live.dag().nodes[0].clone();
    root.title = "renamed".into();
    assert_eq!(
        live.update_node(root).unwrap(),
        Refresh::Patched { changed: 1 }
    );
}

/// A DAG shaped like a real plan: `n` WorkItems in waves, each depending on up to three items of
/// the previous two waves, with a fan-out here and there, and mixed states.
fn plan(n: usize) -> DagView {
    let mut states = Vec::with_capacity(n);
    let mut edges = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let wave = 40;
    for i in 0..n {
        let st = WorkState::ALL[(next() % 6) as usize];
        states.push(st);
        if i >= wave {
            let w = i / wave;
            for _ in 0..(1 + next() % 3) {
                let from_wave = w - 1 - (next() % 2.min(w as u64)) as usize;
                let j = from_wave * wave + (next() % wave as u64) as usize;
                edges.push((j, i));
            }
        }
    }
    dag(&states, &edges)
}

#[test]
#[ignore = "benchmark: prints figures"]
fn bench_layout_of_2000_work_items() {
    let d = plan(2_000);
    let collapsed = collapse(&d, CollapseOptions::default().max_siblings);
    println!(
        "plan: {} WorkItems, {} edges; collapsed to {} nodes, {} edges",
        d.nodes.len(),
        d.edges.len(),
        collapsed.nodes.len(),
        collapsed.edges.len()
    );
    let t = std::time::Instant::now();
    let mut live =
        LiveLayout::new(Sugiyama::default(), CollapseOptions::default(), d.clone()).unwrap();
    println!("layout (collapse + Sugiyama): {:?}", t.elapsed());
    let g = Graph {
        node_count: collapsed.nodes.len(),
        edges: collapsed.edges.clone(),
    };
    let t = std::time::Instant::now();
    let p = Sugiyama::default().layout(&g);
    println!(
        "Sugiyama alone: {:?} ({} layers, {} x {} units)",
        t.elapsed(),
        p.layers.iter().max().map_or(0, |m| m + 1),
        p.width,
        p.height
    );
    // A live update of one node's attributes (no new layout).
    let mut n = d.nodes[1_234].clone();
    n.running = !n.running;
    let t = std::time::Instant::now();
    let r = live.update_node(n).unwrap();
    println!("one-node update: {:?} ({r:?})", t.elapsed());
    // A new DAG for the same graph with one node's state changed (a live Event, rebuilt view).
    let mut d2 = live.dag().clone();
    let i = d2
        .nodes
        .iter()
        .position(|n| n.state == NodeState::Work(WorkState::Queued))
        .unwrap();
    d2.nodes[i].state = NodeState::Work(WorkState::Active);
    let t = std::time::Instant::now();
    let r = live.refresh(d2).unwrap();
    println!(
        "refresh with a whole new DAG: {:?} ({r:?}, {} layouts so far)",
        t.elapsed(),
        live.layouts
    );
    // Without collapsing.
    let g = Graph {
        node_count: d.nodes.len(),
        edges: d
            .edges
            .iter()
            .map(|e| {
                let i = |s: &str| d.nodes.iter().position(|n| n.id == s).unwrap();
                (i(&e.from), i(&e.to))
            })
            .collect(),
    };
    let t = std::time::Instant::now();
    let p = Sugiyama::default().layout(&g);
    println!(
        "Sugiyama over all 2 000 nodes, uncollapsed: {:?} ({} layers)",
        t.elapsed(),
        p.layers.iter().max().map_or(0, |m| m + 1)
    );
}
