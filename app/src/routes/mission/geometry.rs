//! The DAG view's geometry: node sizes and title wrapping, the layout engine for a graph's
//! size, the `viewBox`, the zoom bounds and the level of detail at a scale.

use crate::format::svg;
use wasm_core::views::dag::DagView;
use wasm_core::views::layout::{LiveLayout, Sugiyama};

/// How many columns ([`svg::columns`]) of a title fit on a node's first line: the box is
/// 160 wide with 6 on each side, and a bold 11px Latin letter with the ellipsis is about 7.5
/// wide on average (the end2end walk measured 22 columns at 156, 20 at 151).
pub const TITLE_COLUMNS: usize = 19;

/// How many columns of a title fit on a line of a box `node_width` wide: [`TITLE_COLUMNS`]
/// in the 148 units inside a 160-wide box, in proportion for a wider one.
pub fn title_columns(node_width: i64) -> usize {
    let inside = usize::try_from(node_width - 12).unwrap_or(0);
    inside * TITLE_COLUMNS / 148
}

/// A Mission of at most this many WorkItems is drawn with boxes fitted to the frame's width
/// and titles on two lines ([`engine_for`]); a larger one exactly as the benchmarks measure it
/// (160×48 boxes, one title line): its titles are read by zooming in or in the table.
pub const FIT_NODES: usize = 200;

/// The widest box of a narrow graph: a title of about 70 columns on its two lines.
pub const MAX_NODE_WIDTH: i64 = 288;

/// The height of a box with two title lines (the state and owner lines below them).
pub const WRAP_NODE_HEIGHT: i64 = 62;

/// The height of a box with three title lines: a small graph one of whose titles does not fit
/// two lines of its boxes ([`refit`]; a child Mission's node makes the demo's graph four
/// slots wide).
pub const WRAP3_NODE_HEIGHT: i64 = 76;

/// Whether a title of `dag` is cut on two lines of a box `node_width` wide (the critical
/// path's mark taking two columns of its first line).
pub fn needs_third_line(dag: &DagView, node_width: i64) -> bool {
    let cols = title_columns(node_width);
    dag.nodes.iter().any(|n| {
        let first = cols.saturating_sub(if n.on_critical_path { 2 } else { 0 });
        svg::cut_on_two(&n.title, first, cols)
    })
}

/// The layout for a DAG of `nodes` WorkItems in a frame `frame_width` CSS px wide: for a
/// small Mission, boxes as wide as the frame allows (one layout unit about one CSS px, each
/// of the graph's slots sharing the width less the margins, between 160 and
/// [`MAX_NODE_WIDTH`]) and [`WRAP_NODE_HEIGHT`] tall; for a large one the default 160×48.
pub fn engine_for(nodes: usize, frame_width: f64) -> Sugiyama {
    if nodes > FIT_NODES {
        return Sugiyama::default();
    }
    Sugiyama {
        fit_width: (svg::coord(frame_width) - 2 * VIEW_MARGIN).max(0),
        max_node_width: MAX_NODE_WIDTH,
        node_height: WRAP_NODE_HEIGHT,
        ..Sugiyama::default()
    }
}

/// Lays `l` out again when the frame's width (`frame_width`) or the DAG's size asks for other
/// boxes than it has ([`engine_for`]); says whether it did. A graph whose boxes stay the same
/// (every large one) is left alone.
pub fn refit(l: &mut LiveLayout<Sugiyama>, frame_width: f64) -> bool {
    let nodes = l.dag().nodes.len();
    let mut want = engine_for(nodes, frame_width);
    let have = l.layout();
    let slot = (l.node_size.0 + have.h_gap).max(1);
    let slots = (l.width + have.h_gap) / slot;
    if nodes <= FIT_NODES && needs_third_line(l.dag(), want.fitted_node_width(slots)) {
        want.node_height = WRAP3_NODE_HEIGHT;
    }
    if want.fitted_node_width(slots) == l.node_size.0 && want.node_height == l.node_size.1 {
        return false;
    }
    l.set_layout(want).is_ok()
}

/// How much of each node is drawn (issue 13: one live update under 16 ms with 2,000 WorkItems).
/// The browser repaints the whole `<svg>` for one changed node, so its cost grows with what is
/// drawn: zoomed out so far that no node's text is readable, each node is one element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Each node a `<g>`: its `<title>`, box and three text lines.
    Full,
    /// Each node a single `<rect>` (a child Mission's inside its `<a>`), named by `aria-label`,
    /// its state shown by its outline's dash style and the critical path by a thick outline.
    Far,
}

/// The font size of a node's text, in layout units (`.dag text` in style/console.css).
pub const TEXT_UNITS: f64 = 11.0;

/// Below this height on screen (CSS px) node text is unreadable and the graph is drawn
/// [`Detail::Far`].
pub const MIN_TEXT_PX: f64 = 6.0;

/// The margin around the layout in the `viewBox` (`-20 -20 w+40 h+40`).
pub const VIEW_MARGIN: i64 = 20;

/// The zoom buttons and keys go at least this far in ([`max_zoom`]).
pub const MAX_ZOOM: f64 = 4.0;

/// Node text this tall on screen (CSS px) is read without effort: a graph drawn in full whose
/// fitted text is smaller (a phone) starts zoomed in to it ([`start_zoom`]).
pub const READABLE_PX: f64 = 10.0;

/// The zoom a graph fitted at `fitted` CSS px per unit starts at (and "Reset view" returns
/// to): 1, or for a graph drawn in full whose text would be under [`READABLE_PX`], the zoom
/// that makes it that tall (the person pans, or zooms out to see the whole). A graph drawn
/// far at its fitted scale (thousands of WorkItems) starts as the overview.
pub fn start_zoom(fitted: f64) -> f64 {
    let px = TEXT_UNITS * fitted;
    if detail_at(fitted) == Detail::Full && px < READABLE_PX {
        READABLE_PX / px
    } else {
        1.0
    }
}

/// At most this many CSS px per layout unit when a graph is fitted to its frame: a graph much
/// narrower than the frame (a child Mission of two WorkItems) is drawn at this scale in the
/// middle of a wider `viewBox` ([`view_width`]) instead of being blown up to the frame's width
/// (its boxes three times their size, 33 px text).
pub const MAX_FIT_SCALE: f64 = 1.25;

/// The width of the `viewBox` (layout units, margins included) for a layout `layout_width`
/// wide in a frame `frame_width` CSS px wide: the layout and its margins, or wider so that the
/// fitted scale stays at most [`MAX_FIT_SCALE`] (the layout then centred in it).
pub fn view_width(layout_width: i64, frame_width: f64) -> i64 {
    let own = layout_width + 2 * VIEW_MARGIN;
    let cap = (frame_width / MAX_FIT_SCALE).ceil();
    if cap.is_finite() && cap > own as f64 {
        // At most the frame's width in px (a finite, small number).
        cap as i64
    } else {
        own
    }
}

/// The `viewBox` attribute for a layout of `layout` (width, height) in a frame `frame_width`
/// CSS px wide ([`view_width`]): the layout centred, [`VIEW_MARGIN`] above and below.
pub fn view_box(layout: (i64, i64), frame_width: f64) -> String {
    let w = view_width(layout.0, frame_width);
    let x = -VIEW_MARGIN - (w - layout.0 - 2 * VIEW_MARGIN) / 2;
    format!("{x} {} {w} {}", -VIEW_MARGIN, layout.1 + 2 * VIEW_MARGIN)
}

/// CSS px per layout unit: the `viewBox` ([`view_box`]) of a `layout` (width, height) fitted into a `frame`
/// of (width, height) CSS px (`preserveAspectRatio` "meet": the tighter side wins), times `zoom`.
/// 0 when either is empty.
pub fn screen_scale(frame: (f64, f64), layout: (i64, i64), zoom: f64) -> f64 {
    let w = view_width(layout.0, frame.0) as f64;
    let h = (layout.1 + 2 * VIEW_MARGIN) as f64;
    if w <= 0.0 || h <= 0.0 || frame.0 <= 0.0 || frame.1 <= 0.0 {
        return 0.0;
    }
    (frame.0 / w).min(frame.1 / h) * zoom
}

/// The level of detail at `scale` CSS px per layout unit ([`screen_scale`]): full text when a
/// node's text is at least [`MIN_TEXT_PX`] tall on screen.
pub fn detail_at(scale: f64) -> Detail {
    if TEXT_UNITS * scale >= MIN_TEXT_PX {
        Detail::Full
    } else {
        Detail::Far
    }
}

/// How far the zoom goes in for a graph fitted at `fitted` CSS px per unit: [`MAX_ZOOM`], or
/// further for a large graph, until its text is twice [`MIN_TEXT_PX`] (so every graph can be
/// zoomed in to its full text).
pub fn max_zoom(fitted: f64) -> f64 {
    if fitted > 0.0 {
        (2.0 * MIN_TEXT_PX / TEXT_UNITS / fitted).max(MAX_ZOOM)
    } else {
        MAX_ZOOM
    }
}

/// The size on screen (CSS px) of the graph's `<svg>`, once laid out.
pub fn frame_of(svg: &web_sys::Element) -> Option<(f64, f64)> {
    let (w, h) = (svg.client_width(), svg.client_height());
    (w > 0 && h > 0).then(|| (f64::from(w), f64::from(h)))
}

/// The `<svg>`'s size before it is laid out: the window's width (it is at most that wide) and
/// its smallest CSS height (`svg.dag`: at least 28rem, 20rem up to 600 px wide; taller when
/// the graph's shape asks for it) — replaced by the real size, measured ([`frame_of`]) once the
/// `<svg>` is in the document and again whenever the graph is drawn anew.
pub fn guess_frame() -> (f64, f64) {
    let w = crate::web::window()
        .and_then(|w| w.inner_width().ok())
        .and_then(|v| v.as_f64())
        .unwrap_or(1280.0);
    // `main` is at most 72rem wide with 1rem of padding a side (0.75rem up to 40rem), and the
    // frame has a 1px border.
    let pad = if w <= 640.0 { 24.0 } else { 32.0 };
    (
        w.min(1152.0) - pad - 2.0,
        if w <= 600.0 { 320.0 } else { 448.0 },
    )
}
