//! The Mission view's DAG drawing (`routes::mission`): a live update that changes attributes is
//! patched node by node and says exactly which nodes changed (only their elements are rewritten);
//! a structural change redraws; the markup written into the SVG and the WorkItem table escapes
//! every piece of protocol text (titles and ids are untrusted).

use app::bench;
use app::routes::mission::{
    DagUpdate, Detail, Prefixes, apply_dag, graph_markup, node_dom_id, row_dom_id, rows_markup,
    rows_markup_first, table_prefixes,
};
use wasm_core::json::Value;
use wasm_core::views::dag::{DagEdge, DagView, EdgeKind, NodeKind};
use wasm_core::views::layout::{CollapseOptions, LiveLayout, Sugiyama};

mod common;
use common::{NOW, folded, words};

/// The benchmark's history of `n` WorkItems, folded but for its last Event (a cancellation).
fn history(n: usize) -> (bench::Replay, Value) {
    let events = bench::generate(n + 20, n).expect("the history");
    let (last, rest) = events.split_last().expect("Events");
    (folded(rest), last.clone())
}

/// Laid out without collapsing sibling fan-outs: every WorkItem is a node of its own.
fn layout(dag: DagView) -> LiveLayout<Sugiyama> {
    let options = CollapseOptions {
        max_siblings: usize::MAX,
        ..CollapseOptions::default()
    };
    LiveLayout::new(Sugiyama::default(), options, dag).expect("laid out")
}

#[test]
fn a_cancellation_patches_only_the_changed_nodes_without_a_new_layout() {
    let (mut r, last) = history(120);
    let mut live = bench::layout(&r.log, NOW).expect("laid out");
    assert_eq!(live.layouts, 1);
    let before = live.dag().clone();
    let state_before = r.log.state().clone();
    let (u, published) =
        bench::live_update(&mut r.log, &state_before, &mut live, last, NOW).expect("updated");
    assert_eq!(live.layouts, 1, "no new layout");
    // The published snapshot is the state after the Event; the one drawn from still shows the
    // WorkItem before it, and every other WorkItem is shared, not copied (the same allocation).
    let cancelled = bench::work_item_id(119);
    let status = |s: &wasm_core::authority::State| s.work_items.get(&cancelled).map(|w| w.status);
    assert_ne!(status(&state_before), status(&published));
    assert_eq!(status(&published), status(r.log.state()));
    let shared = state_before
        .work_items
        .iter()
        .filter(|(id, w)| {
            published
                .work_items
                .get(id.as_str())
                .is_some_and(|p| std::ptr::eq(*w, p))
        })
        .count();
    assert_eq!(shared, state_before.work_items.len() - 1);
    assert!(published.messages.same(&state_before.messages));
    assert!(!u.redraw);
    let i = live.index_of(&cancelled).expect("the cancelled WorkItem");
    assert!(u.changed.contains(&i), "{u:?}");
    assert_eq!(live.dag().nodes[i].state.as_str(), "cancelled");
    // The DAG rebuilt from the one drawn is the full build.
    assert_eq!(
        Some(live.dag()),
        DagView::build(r.log.state(), bench::MISSION, NOW).as_ref()
    );
    // Exactly the nodes whose attributes differ are reported, in order.
    let differ: Vec<usize> = (0..before.nodes.len())
        .filter(|&k| before.nodes[k] != live.dag().nodes[k])
        .collect();
    assert_eq!(u.changed, differ);
    assert!(
        u.changed.len() < before.nodes.len() / 4,
        "{}",
        u.changed.len()
    );
    // The changed node's element is found by its index-based id.
    let v = live.visual_of(&cancelled).expect("drawn");
    assert_eq!(live.nodes[v].members, vec![cancelled.clone()]);
    let svg = words(|w| graph_markup(&live, w, None, Detail::Full));
    assert!(svg.contains(&format!("id=\"{}\"", node_dom_id(v))));
    assert!(svg.contains("data-state=\"cancelled\""));
}

#[test]
fn the_same_dag_changes_nothing_and_a_new_dependency_redraws() {
    let (r, _) = history(60);
    let dag = DagView::build(r.log.state(), bench::MISSION, NOW).expect("the DAG");
    let mut live = layout(dag.clone());
    let u = apply_dag(&mut live, dag.clone()).expect("applied");
    assert_eq!(
        u,
        DagUpdate {
            layouts: 1,
            redraw: false,
            changed: Vec::new()
        }
    );
    let mut owned = dag.clone();
    owned.nodes[3].owner = Some("urn:missionweaveprotocol:agent:w".into());
    owned.nodes[3].ownership_epoch = 2;
    let u = apply_dag(&mut live, owned).expect("applied");
    assert_eq!(
        (u.redraw, u.changed.clone(), u.layouts),
        (false, vec![3], 1)
    );
    let mut wider = dag;
    // Two WorkItems of the same wave: never a dependency in the generated history.
    wider.edges.push(DagEdge {
        from: bench::work_item_id(40),
        to: bench::work_item_id(59),
        kind: EdgeKind::Dependency,
    });
    wider.edges.sort();
    let u = apply_dag(&mut live, wider).expect("applied");
    assert!(u.redraw && u.changed.is_empty() && u.layouts == 2, "{u:?}");
}

#[test]
fn the_markup_escapes_titles_and_ids_and_marks_the_critical_path() {
    let (r, _) = history(12);
    let mut dag = DagView::build(r.log.state(), bench::MISSION, NOW).expect("the DAG");
    let hostile = "<script>alert(\"x\")</script> & 'y'";
    dag.nodes[0].title = hostile.into();
    dag.nodes[0].owner = Some("urn:a:<b>".into());
    let live = layout(dag);
    let svg = words(|w| graph_markup(&live, w, Some(live.nodes[0].id.as_str()), Detail::Full));
    assert!(!svg.contains("<script>") && !svg.contains("<b>"), "{svg}");
    assert!(svg.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"));
    assert!(svg.contains("&lt;b&gt; · e0"));
    let nodes = svg.matches(" data-node-id=\"").count();
    assert_eq!(nodes, live.nodes.len());
    assert_eq!(svg.matches("aria-pressed=\"true\"").count(), 1);
    let critical = live.dag().critical_path.work_item_ids.len();
    assert!(critical >= 1);
    assert_eq!(svg.matches("data-critical=\"true\"").count(), critical);
    assert_eq!(svg.matches(">◆ ").count(), critical);
    // Every node says its state in text (never by colour alone).
    assert_eq!(svg.matches("class=\"st\">[").count(), live.nodes.len());

    let none = Prefixes::default();
    let rows = words(|w| rows_markup(live.dag(), None, w, &none));
    assert_eq!(rows.matches("<tr ").count(), live.dag().nodes.len());
    assert!(!rows.contains("<script>") && rows.contains("&lt;script&gt;"));
    assert!(rows.contains(&format!("id=\"{}\"", row_dom_id(0))));
    let one = words(|w| rows_markup(live.dag(), Some(live.dag().nodes[5].id.as_str()), w, &none));
    assert_eq!(one.matches("<tr ").count(), 1);
    assert!(one.contains(&format!("id=\"{}\"", row_dom_id(5))));
    // The Mission view lists a first page when none is selected; a selection is never cut.
    let first = words(|w| rows_markup_first(live.dag(), None, 3, w, &none));
    assert_eq!(first.matches("<tr ").count(), 3);
    assert!(first.contains(&format!("id=\"{}\"", row_dom_id(2))));
    assert!(!first.contains(&format!("id=\"{}\"", row_dom_id(3))));
    let last = live.dag().nodes.len() - 1;
    let picked = words(|w| {
        rows_markup_first(
            live.dag(),
            Some(live.dag().nodes[last].id.as_str()),
            3,
            w,
            &none,
        )
    });
    assert_eq!(picked.matches("<tr ").count(), 1);
    assert!(picked.contains(&format!("id=\"{}\"", row_dom_id(last))));
}

/// The table's id columns leave out the prefix all their rows share (shown once under the
/// header): each row draws "…" and its own rest, keeps the whole id in its text (a visually
/// hidden span) and tooltip; an id that does not start with the prefix (a patched row with a new
/// owner) is drawn whole; the prefixes are escaped like every id.
#[test]
fn the_table_leaves_out_the_prefix_its_ids_share_but_keeps_each_whole_id_in_its_text() {
    let (r, _) = history(12);
    let mut dag = DagView::build(r.log.state(), bench::MISSION, NOW).expect("the DAG");
    dag.nodes[0].owner = Some("urn:x:agent:a<1>".into());
    dag.nodes[1].owner = Some("urn:x:agent:b".into());
    for n in dag.nodes.iter_mut().skip(2) {
        n.owner = None;
    }
    let p = table_prefixes(&dag);
    let shared = dag.nodes[0]
        .id
        .rfind(':')
        .map(|k| &dag.nodes[0].id[..=k])
        .expect("a colon");
    assert_eq!(p.work_item, shared, "{p:?}");
    assert!(dag.nodes.iter().all(|n| n.id.starts_with(&p.work_item)));
    assert_eq!(p.owner, "urn:x:agent:");
    let rows = words(|w| rows_markup(&dag, None, w, &p));
    let n = dag.nodes.len();
    assert_eq!(rows.matches("<code class=\"id elided\"").count(), n + 2);
    let rest = &dag.nodes[3].id[p.work_item.len()..];
    assert!(
        rows.contains(&format!(
            "title=\"{}\"><span class=\"sr-only\">{}</span>{}",
            dag.nodes[3].id,
            p.work_item,
            rest.replace(':', ":<wbr>")
        )),
        "{rows}"
    );
    assert!(rows.contains(
        "title=\"urn:x:agent:a&lt;1&gt;\"><span class=\"sr-only\">urn:x:agent:</span>a&lt;1&gt;<wbr></code>"
    ));
    // No owner: a dash, not an empty id.
    assert_eq!(
        rows.matches("<td data-label=\"Owner\">—</td>").count(),
        n - 2
    );
    // A row patched with prefixes its id does not start with shows the whole id.
    let other = Prefixes {
        work_item: "urn:elsewhere:".into(),
        owner: "urn:x:agent:".into(),
    };
    let one = words(|w| rows_markup(&dag, Some(dag.nodes[3].id.as_str()), w, &other));
    assert!(
        one.contains(&format!(
            "<code class=\"id\" translate=\"no\">{}<wbr></code>",
            dag.nodes[3].id.replace(':', ":<wbr>")
        )),
        "{one}"
    );
    // A child Mission's node (a Mission id) leaves the WorkItems' prefix as it is and is shown
    // whole.
    let mut with_child = dag.clone();
    let mut child = dag.nodes[3].clone();
    child.id = "urn:x:mission:child-review".into();
    child.kind = NodeKind::ChildMission {
        group_id: "urn:x:group:child".into(),
    };
    with_child.nodes.push(child);
    let pc = table_prefixes(&with_child);
    assert_eq!(pc.work_item, shared, "{pc:?}");
    let rows = words(|w| rows_markup(&with_child, None, w, &pc));
    assert!(
        rows.contains("<code class=\"id\" translate=\"no\">urn:<wbr>x:<wbr>mission:<wbr>child-review<wbr></code>"),
        "{rows}"
    );
    // One WorkItem keeps its last segment; none: no prefix.
    let mut single = dag.clone();
    single.nodes.truncate(1);
    assert_eq!(table_prefixes(&single).work_item, shared);
    single.nodes.clear();
    assert_eq!(table_prefixes(&single), Prefixes::default());
    // Without prefixes nothing is elided.
    let plain = words(|w| rows_markup(&dag, None, w, &Prefixes::default()));
    assert!(!plain.contains("elided") && !plain.contains("sr-only"));
}
