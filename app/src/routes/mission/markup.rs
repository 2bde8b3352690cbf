//! The DAG view's markup: the graph and the WorkItem table as escaped markup strings, and the
//! patches that rewrite only the nodes and rows a live Event changed.

use super::geometry::*;
use crate::components::ident::{after_colons, shared_prefix};
use crate::components::live::{state_label, when, why_markup};
use crate::format::markup::escape_into;
use crate::format::svg;
use crate::i18n::*;
use leptos_i18n::I18nContext;
use std::fmt::Write as _;
use wasm_core::authority::Micros;
use wasm_core::views::dag::{DagNode, DagView, NodeKind, WhyNotRunning};
use wasm_core::views::layout::{LiveLayout, Sugiyama};

/// The words the markup needs, in the reader's language ([`with_words`] for the console; the
/// tests pass their own). `why` returns escaped HTML.
pub struct Words<'a> {
    pub state: &'a dyn Fn(&str) -> String,
    pub why: &'a dyn Fn(&WhyNotRunning) -> String,
    pub when: &'a dyn Fn(Micros) -> String,
    pub running: &'a str,
    /// The WorkItem table's column names, in order: each cell repeats its own
    /// (`data-label`), which a phone shows above the value when a row is stacked as a card.
    pub columns: [&'a str; 6],
}

/// Runs `f` with the console's [`Words`] for `now`.
pub fn with_words<R>(i18n: I18nContext<Locale>, now: Micros, f: impl FnOnce(&Words) -> R) -> R {
    let state = |s: &str| state_label(i18n, s);
    let why = |w: &WhyNotRunning| why_markup(i18n, w, now);
    let when_ = |at: Micros| when(i18n, at, now);
    f(&Words {
        state: &state,
        why: &why,
        when: &when_,
        running: t_string!(i18n, mission.running),
        columns: [
            "WorkItem",
            t_string!(i18n, mission.state),
            t_string!(i18n, mission.owner),
            "Ownership Epoch",
            "Execution Lease",
            t_string!(i18n, mission.why_not_running),
        ],
    })
}

/// The DOM id of visual node `vi`'s element.
pub fn node_dom_id(vi: usize) -> String {
    format!("dag-v{vi}")
}

/// The DOM id of DAG node `i`'s table row.
pub fn row_dom_id(i: usize) -> String {
    format!("dag-row-{i}")
}

/// One drawn node: its element's changing attributes and its children's markup.
pub(super) struct NodeMarkup {
    class: String,
    critical: bool,
    state: &'static str,
    /// At [`Detail::Far`]: the element's `aria-label` (the text, not yet escaped).
    label: Option<String>,
    /// `<title>`, box and the three text lines ([`Detail::Full`]); the `<title>` alone, or for
    /// a child Mission's `<a>` also its box ([`Detail::Far`]).
    inner: String,
}

/// The markup of visual node `vi` of `l` at `detail`; `boxed` (far level only): the node is an
/// `<a>` whose box is a child element.
pub(super) fn node_markup(
    l: &LiveLayout<Sugiyama>,
    vi: usize,
    words: &Words,
    detail: Detail,
    boxed: bool,
) -> Option<NodeMarkup> {
    let n = l.nodes.get(vi)?;
    let (w, h) = l.node_size;
    let (x, y) = (n.position.x, n.position.y);
    let attrs = if n.count == 1 { l.attrs(&n.id) } else { None };
    let critical = n
        .members
        .iter()
        .any(|m| l.attrs(m).is_some_and(|a| a.on_critical_path));
    let state = attrs.map_or(n.state, |a| a.state).as_str();
    let title = attrs.map_or(n.id.as_str(), |a| a.title.as_str());
    let owner = attrs
        .and_then(|a| a.owner.as_deref())
        .map_or("—", |o| o.rsplit(':').next().unwrap_or_default());
    let epoch = attrs.map_or(0, |a| a.ownership_epoch);
    let label = (words.state)(state);
    if detail == Detail::Far {
        return Some(far_markup(
            n,
            (x, y, w, h),
            title,
            &label,
            state,
            critical,
            boxed,
        ));
    }
    // The "◆ " mark of the critical path takes two of the first line's columns. A box tall
    // enough has two title lines; the state and owner lines follow the title's.
    let cols = title_columns(w);
    let first = cols.saturating_sub(if critical { 2 } else { 0 });
    let (line1, line2, line3) = if h >= WRAP3_NODE_HEIGHT {
        let (a, b, c) = svg::wrap3(title, first, cols);
        (std::borrow::Cow::Borrowed(a), b, c)
    } else if h >= WRAP_NODE_HEIGHT {
        let (a, b) = svg::wrap2(title, first, cols);
        (std::borrow::Cow::Borrowed(a), b, None)
    } else {
        (svg::fit(title, first), None, None)
    };
    let mut inner = String::with_capacity(360 + 2 * title.len());
    inner.push_str("<title>");
    escape_into(&mut inner, title);
    inner.push_str(" — ");
    escape_into(&mut inner, &label);
    let _ = write!(
        inner,
        "</title><rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" rx=\"6\" class=\"box\"></rect><text x=\"{}\" y=\"{}\" class=\"title\">",
        x + 6,
        y + 14
    );
    if critical {
        inner.push_str("◆ ");
    }
    escape_into(&mut inner, &line1);
    let mut line_y = y + 28;
    for line in [line2, line3].into_iter().flatten() {
        let _ = write!(
            inner,
            "</text><text x=\"{}\" y=\"{line_y}\" class=\"title\">",
            x + 6
        );
        escape_into(&mut inner, &line);
        line_y += 14;
    }
    let _ = write!(
        inner,
        "</text><text x=\"{}\" y=\"{line_y}\" class=\"st\">",
        x + 6
    );
    escape_into(&mut inner, &label);
    if n.count > 1 {
        let _ = write!(inner, " ×{}", n.count);
    }
    let _ = write!(
        inner,
        "</text><text x=\"{}\" y=\"{}\" class=\"owner\">",
        x + 6,
        line_y + 14
    );
    escape_into(&mut inner, owner);
    let _ = write!(inner, " · e{epoch}</text>");
    Some(NodeMarkup {
        class: format!(
            "node state-{state}{}",
            if critical { " critical" } else { "" }
        ),
        critical,
        state,
        label: None,
        inner,
    })
}

/// The class of a far-level node: its state's outline dash style ([`far_cue`]) as well as its
/// state's fill, and the critical path's thick outline.
pub(super) fn far_class(state: &str, critical: bool) -> String {
    format!(
        "node far state-{state} cue-{}{}",
        far_cue(state),
        if critical { " critical" } else { "" }
    )
}

/// The non-colour cue of a state at the far level (style/console.css draws each as an outline
/// dash style): done, running, waiting, stopped (failed or blocked), cancelled.
pub fn far_cue(state: &str) -> &'static str {
    match state {
        "verified" | "approved" => "done",
        "active" | "submitted" => "running",
        "failed" | "blocked" => "stopped",
        "cancelled" => "cancelled",
        _ => "waiting",
    }
}

/// A node at [`Detail::Far`]: its label ("title — state", ×count for a collapsed group) as the
/// accessible name and tooltip, and at most one painted element.
pub(super) fn far_markup(
    n: &wasm_core::views::layout::VisualNode,
    (x, y, w, h): (i64, i64, i64, i64),
    title: &str,
    state_label: &str,
    state: &'static str,
    critical: bool,
    boxed: bool,
) -> NodeMarkup {
    let mut label = format!("{title} — {state_label}");
    if n.count > 1 {
        let _ = write!(label, " ×{}", n.count);
    }
    let mut inner = String::with_capacity(label.len() + 120);
    inner.push_str("<title>");
    escape_into(&mut inner, &label);
    inner.push_str("</title>");
    if boxed {
        let _ = write!(
            inner,
            "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" rx=\"6\"></rect>"
        );
    }
    NodeMarkup {
        class: far_class(state, critical),
        critical,
        state,
        label: Some(label),
        inner,
    }
}

/// The whole graph of `l` as SVG markup at `detail`: every edge, then every node — selectable
/// by click, Enter or Space (`role="button"`, `aria-pressed` for `selected`): a `<g>` of box and
/// text, or at the far level one `<rect>` —, or an `<a>` into the child Mission.
pub fn graph_markup(
    l: &LiveLayout<Sugiyama>,
    words: &Words,
    selected: Option<&str>,
    detail: Detail,
) -> String {
    let per_node = if detail == Detail::Far { 320 } else { 640 };
    let mut out = String::with_capacity(l.edges.len() * 48 + l.nodes.len() * per_node);
    for e in &l.edges {
        out.push_str("<path class=\"edge\" d=\"");
        for (i, p) in e.points.iter().enumerate() {
            let _ = write!(out, "{}{} {} ", if i == 0 { "M" } else { "L" }, p.x, p.y);
        }
        out.push_str("\"></path>");
    }
    let (node_w, node_h) = l.node_size;
    for (vi, n) in l.nodes.iter().enumerate() {
        let child = if n.count == 1 {
            l.attrs(&n.id).and_then(|a| match &a.kind {
                NodeKind::ChildMission { group_id } => Some(group_id.as_str()),
                NodeKind::WorkItem => None,
            })
        } else {
            None
        };
        let Some(m) = node_markup(l, vi, words, detail, child.is_some()) else {
            continue;
        };
        let tag = match (child.is_some(), detail) {
            (true, _) => "a",
            (false, Detail::Full) => "g",
            (false, Detail::Far) => "rect",
        };
        let _ = write!(out, "<{tag} id=\"{}\"", node_dom_id(vi));
        if let Some(g) = child {
            out.push_str(" href=\"");
            escape_into(&mut out, &crate::format::mission_href(g));
            out.push('"');
        } else {
            if tag == "rect" {
                let _ = write!(
                    out,
                    " x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\"",
                    n.position.x, n.position.y, node_w, node_h
                );
            }
            let pressed = selected == Some(n.id.as_str());
            let _ = write!(
                out,
                " tabindex=\"0\" role=\"button\" aria-pressed=\"{pressed}\""
            );
        }
        let _ = write!(out, " class=\"{}\" data-node-id=\"", m.class);
        escape_into(&mut out, &n.id);
        let _ = write!(
            out,
            "\" data-critical=\"{}\" data-state=\"{}\"",
            m.critical, m.state
        );
        if let Some(label) = &m.label {
            out.push_str(" aria-label=\"");
            escape_into(&mut out, label);
            out.push('"');
        }
        let _ = write!(out, " translate=\"no\">{}</{tag}>", m.inner);
    }
    out
}

/// Rewrites the drawn nodes of the `changed` DAG nodes (indices into `l.dag().nodes`) in place,
/// at the `detail` they are drawn at: their element keeps its identity (and focus), its
/// attributes and children are replaced; no other element is touched. Returns how many
/// elements were rewritten.
pub fn patch_graph(
    l: &LiveLayout<Sugiyama>,
    changed: &[usize],
    words: &Words,
    detail: Detail,
) -> usize {
    let Some(doc) = crate::web::window().and_then(|w| w.document()) else {
        return 0;
    };
    let mut visual: Vec<usize> = changed
        .iter()
        .filter_map(|&i| l.dag().nodes.get(i))
        .filter_map(|n| l.visual_of(&n.id))
        .collect();
    visual.sort_unstable();
    visual.dedup();
    let mut done = 0;
    for vi in visual {
        let Some(el) = doc.get_element_by_id(&node_dom_id(vi)) else {
            continue;
        };
        // A child Mission's `<a>` holds its box; a far-level WorkItem is the box itself.
        let boxed = el.tag_name().eq_ignore_ascii_case("a");
        if let Some(m) = node_markup(l, vi, words, detail, boxed) {
            let _ = el.set_attribute("class", &m.class);
            let _ = el.set_attribute("data-critical", if m.critical { "true" } else { "false" });
            let _ = el.set_attribute("data-state", m.state);
            if let Some(label) = &m.label {
                let _ = el.set_attribute("aria-label", label);
            }
            el.set_inner_html(&m.inner);
            done += 1;
        }
    }
    done
}

/// The prefixes the WorkItem table's id columns (WorkItem, owner) leave out of their rows
/// ([`shared_prefix`]): shown once, under the column's header, so each row shows what tells it
/// apart (`…:work:api-schema`, not the Organization's URN again on every row).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prefixes {
    pub work_item: String,
    pub owner: String,
}

/// The [`Prefixes`] of `dag`'s table: over every node, not just the rows listed, so that
/// listing more rows or patching one keeps them. The WorkItem prefix is over the WorkItems
/// only: a child Mission's node has a Mission id (shown whole), which would otherwise cut the
/// shared prefix back to the Organization's stem for every row.
pub fn table_prefixes(dag: &DagView) -> Prefixes {
    fn cut<'a>(ids: impl Iterator<Item = &'a str> + Clone) -> String {
        let n = shared_prefix(ids.clone());
        ids.into_iter()
            .next()
            .and_then(|id| id.get(..n))
            .unwrap_or_default()
            .to_owned()
    }
    Prefixes {
        work_item: cut(dag
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::WorkItem)
            .map(|n| n.id.as_str())),
        owner: cut(dag
            .nodes
            .iter()
            .filter_map(|n| n.owner.as_deref())
            .filter(|o| !o.is_empty())),
    }
}

/// `id` as the table shows it (the markup of `components::ident::Id`): breakable after its
/// colons; without `prefix` when it starts with it, drawn as "…" but kept in the text (visually
/// hidden, for copying and screen readers) and whole in the tooltip.
pub(super) fn id_markup(out: &mut String, id: &str, prefix: &str) {
    let rest = id
        .strip_prefix(prefix)
        .filter(|r| !prefix.is_empty() && !r.is_empty());
    match rest {
        Some(rest) => {
            out.push_str("<code class=\"id elided\" translate=\"no\" title=\"");
            escape_into(out, id);
            out.push_str("\"><span class=\"sr-only\">");
            escape_into(out, prefix);
            out.push_str("</span>");
            for part in after_colons(rest) {
                escape_into(out, part);
                out.push_str("<wbr>");
            }
        }
        None => {
            out.push_str("<code class=\"id\" translate=\"no\">");
            for part in after_colons(id) {
                escape_into(out, part);
                out.push_str("<wbr>");
            }
        }
    }
    out.push_str("</code>");
}

/// DAG node `i`'s row of the WorkItem table.
pub(super) fn row_markup(
    out: &mut String,
    i: usize,
    n: &DagNode,
    words: &Words,
    prefixes: &Prefixes,
) {
    // Each cell names its column (`data-label`): a phone stacks the row as a card.
    let cell = |out: &mut String, k: usize| {
        out.push_str("<td data-label=\"");
        escape_into(out, words.columns.get(k).copied().unwrap_or_default());
        out.push_str("\">");
    };
    let _ = write!(out, "<tr id=\"{}\" data-work-item=\"", row_dom_id(i));
    escape_into(out, &n.id);
    out.push_str("\">");
    cell(out, 0);
    if n.on_critical_path {
        out.push_str("◆ ");
    }
    id_markup(out, &n.id, &prefixes.work_item);
    out.push_str("<br><span translate=\"no\">");
    escape_into(out, &n.title);
    out.push_str("</span></td>");
    cell(out, 1);
    escape_into(out, &(words.state)(n.state.as_str()));
    out.push_str("</td>");
    cell(out, 2);
    match n.owner.as_deref().filter(|o| !o.is_empty()) {
        Some(owner) => id_markup(out, owner, &prefixes.owner),
        None => out.push('—'),
    }
    out.push_str("</td>");
    cell(out, 3);
    let _ = write!(out, "{}</td>", n.ownership_epoch);
    cell(out, 4);
    if let Some(at) = n.execution_lease_expires_at {
        // A countdown: `tick_countdowns` rewrites its text as the clock moves.
        let exact = at.format();
        let _ = write!(
            out,
            "<time class=\"countdown\" datetime=\"{exact}\" title=\"{exact}\" data-at=\"{}\">",
            at.0
        );
        escape_into(out, &(words.when)(at));
        out.push_str("</time>");
    }
    out.push_str("</td>");
    cell(out, 5);
    if n.running {
        out.push_str("<span class=\"running\">▶ ");
        escape_into(out, words.running);
        out.push_str("</span>");
    } else {
        out.push_str("<ul class=\"why\">");
        for w in &n.why_not_running {
            out.push_str("<li>");
            out.push_str(&(words.why)(w));
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
    out.push_str("</td></tr>");
}

/// The WorkItem table's rows: the `selected` node's, or every node's when none is selected.
pub fn rows_markup(
    dag: &DagView,
    selected: Option<&str>,
    words: &Words,
    prefixes: &Prefixes,
) -> String {
    rows_markup_first(dag, selected, usize::MAX, words, prefixes)
}

/// How many rows the Mission view's table lists before "list all": the browser's style and
/// layout of a 2,000-row table under the graph cost more than the graph itself (first paint
/// and every live update, docs/benchmarks.md), and a person reads a large graph by selecting
/// its nodes, not by scrolling 2,000 rows.
pub const TABLE_PAGE: usize = 100;

/// As [`rows_markup`], at most the first `limit` rows when none is selected.
pub fn rows_markup_first(
    dag: &DagView,
    selected: Option<&str>,
    limit: usize,
    words: &Words,
    prefixes: &Prefixes,
) -> String {
    // A selection (node ids are unique) is one row and is never cut.
    let limit = if selected.is_some() { 1 } else { limit };
    let mut out = String::with_capacity(dag.nodes.len().min(limit) * 480);
    let chosen = dag
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| selected.is_none_or(|s| s == n.id))
        .take(limit);
    for (i, n) in chosen {
        row_markup(&mut out, i, n, words, prefixes);
    }
    out
}

/// Rewrites the rows of the `changed` DAG nodes that are in the table (`outerHTML`); the
/// others stay as they are. Returns how many rows were rewritten. `prefixes` are those the
/// table was drawn with (an id that does not start with one is shown whole).
pub fn patch_rows(dag: &DagView, changed: &[usize], words: &Words, prefixes: &Prefixes) -> usize {
    let Some(doc) = crate::web::window().and_then(|w| w.document()) else {
        return 0;
    };
    let mut done = 0;
    for &i in changed {
        if let (Some(el), Some(n)) = (doc.get_element_by_id(&row_dom_id(i)), dag.nodes.get(i)) {
            let mut row = String::with_capacity(480);
            row_markup(&mut row, i, n, words, prefixes);
            el.set_outer_html(&row);
            done += 1;
        }
    }
    done
}
