//! Drawing the WorkItem DAG: a layered (Sugiyama) layout behind the small [`Layout`] trait, fan-out
//! collapsing and a size guard for large graphs, and [`LiveLayout`], which applies live updates
//! without re-laying out the graph when its structure has not changed.
//!
//! **Sugiyama** ([`Sugiyama`]), in four steps, all deterministic (integers, ties broken by index):
//! 1. cycle removal: edges that close a cycle in a depth-first search are drawn reversed (the
//!    authority refuses dependency cycles, §10.4, so this only guards foreign input);
//! 2. layering: longest path from the sources, so every edge points down; an edge spanning several
//!    layers gets a dummy node per crossed layer (its bend points);
//! 3. crossing reduction: alternating down and up sweeps order each layer by the barycentre of
//!    its neighbours in the layer before; the ordering with the fewest crossings (counted exactly)
//!    is kept;
//! 4. coordinate assignment: a few passes move each node towards the mean of its neighbours'
//!    slots, placed left to right and right to left with one slot of separation and averaged
//!    (which keeps the separation), so no two nodes overlap.
//!
//! **Collapsing** ([`collapse`]): nodes with the same predecessors and the same successors are
//! siblings; more than `max_siblings` siblings in the same state become one group node with a
//! count. **Size guard**: a collapsed graph with more than `max_nodes` nodes is refused
//! ([`LayoutError::TooLarge`]); the UI lists it instead.
//!
//! **Update rule** ([`LiveLayout::refresh`], [`LiveLayout::update_node`]): the structure is the
//! collapsed graph (its node ids, each node's members, its edges; not the states). When a new DAG has the same
//! structure, only node attributes change and every coordinate stays; when the structure
//! changed (a node or edge added or removed, or a state change that joins or leaves a group)
//! the graph is laid out again.

use super::dag::{CriticalPath, DagNode, DagView, NodeState};
use crate::authority::clock::Micros;
use std::collections::BTreeMap;

/// A graph to lay out: nodes `0..node_count`, edges `(from, to)` drawn from above to below.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub node_count: usize,
    pub edges: Vec<(usize, usize)>,
}

/// A point in layout units (pixels, say).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Point {
    pub x: i64,
    pub y: i64,
}

/// Where everything goes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Positions {
    /// The top-left corner of each node.
    pub nodes: Vec<Point>,
    /// Each node's layer (0 at the top).
    pub layers: Vec<usize>,
    /// Each edge's polyline, from the bottom of `from` to the top of `to`, in `Graph::edges` order.
    pub edges: Vec<Vec<Point>>,
    /// Every node is `node_size.0` wide and `node_size.1` high.
    pub node_size: (i64, i64),
    pub width: i64,
    pub height: i64,
}

/// A layout algorithm: another can replace [`Sugiyama`] behind this trait.
pub trait Layout {
    fn layout(&self, graph: &Graph) -> Positions;
}

/// The layered layout (module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Sugiyama {
    pub node_width: i64,
    pub node_height: i64,
    pub h_gap: i64,
    pub v_gap: i64,
    /// Down-and-up crossing-reduction sweeps.
    pub sweeps: usize,
    /// Coordinate-assignment passes.
    pub coordinate_passes: usize,
    /// The width (layout units) a narrow graph's boxes may fill, 0 for none: a graph only a
    /// few nodes wide gets boxes wider than `node_width` (up to `max_node_width`) so that its
    /// titles can be read ([`Sugiyama::fitted_node_width`]); a wide graph keeps `node_width`.
    pub fit_width: i64,
    /// The widest box [`Sugiyama::fitted_node_width`] gives.
    pub max_node_width: i64,
}

impl Sugiyama {
    /// The box width for a graph `slots` nodes wide: the share of `fit_width` of each slot
    /// less the gap, within `node_width..=max_node_width` (`node_width` when not fitting).
    pub fn fitted_node_width(&self, slots: i64) -> i64 {
        if self.fit_width <= 0 || slots <= 0 {
            return self.node_width;
        }
        let share = self.fit_width / slots - self.h_gap;
        share.min(self.max_node_width).max(self.node_width)
    }
}

impl Default for Sugiyama {
    fn default() -> Self {
        Sugiyama {
            node_width: 160,
            node_height: 48,
            h_gap: 24,
            v_gap: 56,
            sweeps: 8,
            coordinate_passes: 4,
            fit_width: 0,
            max_node_width: 160,
        }
    }
}

/// Number of edge crossings between consecutive layers (bilayer counting with a Fenwick tree).
fn crossings(layers: &[Vec<usize>], down: &[Vec<usize>], pos: &[usize]) -> u64 {
    let mut total = 0u64;
    for w in layers.windows(2) {
        let (upper, lower) = (&w[0], &w[1]);
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for &u in upper {
            for &v in &down[u] {
                pairs.push((pos[u], pos[v]));
            }
        }
        pairs.sort_unstable();
        let n = lower.len() + 1;
        let mut tree = vec![0u64; n + 1];
        for (seen, &(_, p)) in pairs.iter().enumerate() {
            let seen = seen as u64;
            // How many earlier edges end strictly to the right of p.
            let mut i = p + 1;
            let mut le = 0u64;
            while i > 0 {
                le += tree[i];
                i &= i - 1;
            }
            total += seen - le;
            let mut i = p + 1;
            while i <= n {
                tree[i] += 1;
                i += i & i.wrapping_neg();
            }
        }
    }
    total
}

/// Orders `layer` by the barycentre of each node's neighbours (`adj`); a node without
/// neighbours keeps its place. Ties keep the current order.
fn reorder(layer: &mut [usize], adj: &[Vec<usize>], pos: &mut [usize]) {
    let mut keyed: Vec<(f64, usize, usize)> = layer
        .iter()
        .map(|&v| {
            let nb = &adj[v];
            let bary = if nb.is_empty() {
                pos[v] as f64
            } else {
                nb.iter().map(|&u| pos[u] as f64).sum::<f64>() / nb.len() as f64
            };
            (bary, pos[v], v)
        })
        .collect();
    crate::order::sort_by(&mut keyed, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (i, (_, _, v)) in keyed.into_iter().enumerate() {
        layer[i] = v;
        pos[v] = i;
    }
}

/// One coordinate pass over `layer`: each node moves towards the mean slot of its neighbours,
/// keeping order and one slot of separation.
fn place(layer: &[usize], adj: &[Vec<usize>], x: &mut [i64]) {
    let k = layer.len();
    if k == 0 {
        return;
    }
    let desired: Vec<i64> = layer
        .iter()
        .map(|&v| {
            let nb = &adj[v];
            if nb.is_empty() {
                x[v]
            } else {
                let sum: i64 = nb.iter().map(|&u| x[u]).sum();
                (2 * sum + nb.len() as i64).div_euclid(2 * nb.len() as i64)
            }
        })
        .collect();
    let mut a = desired.clone();
    for i in 1..k {
        a[i] = a[i].max(a[i - 1] + 1);
    }
    let mut b = desired;
    for i in (0..k - 1).rev() {
        b[i] = b[i].min(b[i + 1] - 1);
    }
    for (i, &v) in layer.iter().enumerate() {
        x[v] = (a[i] + b[i]).div_euclid(2);
    }
}

impl Layout for Sugiyama {
    fn layout(&self, graph: &Graph) -> Positions {
        let n = graph.node_count;
        let edges: Vec<(usize, usize)> = graph
            .edges
            .iter()
            .copied()
            .filter(|&(u, v)| u < n && v < n && u != v)
            .collect();
        // 1. Cycle removal: a depth-first search in index order; back edges are reversed.
        let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
        for (i, &(u, v)) in edges.iter().enumerate() {
            out[u].push((v, i));
        }
        let mut reversed = vec![false; edges.len()];
        let mut color = vec![0u8; n];
        for root in 0..n {
            if color[root] != 0 {
                continue;
            }
            let mut stack = vec![(root, 0usize)];
            color[root] = 1;
            while let Some(top) = stack.last_mut() {
                let (u, next) = *top;
                if let Some(&(v, e)) = out[u].get(next) {
                    top.1 += 1;
                    match color[v] {
                        0 => {
                            color[v] = 1;
                            stack.push((v, 0));
                        }
                        1 => reversed[e] = true,
                        _ => {}
                    }
                } else {
                    color[u] = 2;
                    stack.pop();
                }
            }
        }
        let oriented: Vec<(usize, usize)> = edges
            .iter()
            .zip(&reversed)
            .map(|(&(u, v), &r)| if r { (v, u) } else { (u, v) })
            .collect();
        // 2. Longest-path layering (Kahn's order).
        let mut indeg = vec![0usize; n];
        let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(u, v) in &oriented {
            succ[u].push(v);
            indeg[v] += 1;
        }
        let mut layer_of = vec![0usize; n];
        let mut queue: std::collections::VecDeque<usize> =
            (0..n).filter(|&v| indeg[v] == 0).collect();
        while let Some(u) = queue.pop_front() {
            for &v in &succ[u] {
                layer_of[v] = layer_of[v].max(layer_of[u] + 1);
                indeg[v] -= 1;
                if indeg[v] == 0 {
                    queue.push_back(v);
                }
            }
        }
        // Dummy nodes for long edges.
        let mut layer_all = layer_of.clone();
        let mut up: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut down: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut chains: Vec<Vec<usize>> = Vec::with_capacity(oriented.len());
        for &(u, v) in &oriented {
            let mut chain = vec![u];
            let mut prev = u;
            for l in layer_of[u] + 1..layer_of[v] {
                let d = layer_all.len();
                layer_all.push(l);
                up.push(vec![prev]);
                down.push(Vec::new());
                down[prev].push(d);
                chain.push(d);
                prev = d;
            }
            down[prev].push(v);
            up[v].push(prev);
            chain.push(v);
            chains.push(chain);
        }
        let total = layer_all.len();
        let depth = layer_all.iter().max().map_or(0, |m| m + 1);
        let mut layers: Vec<Vec<usize>> = vec![Vec::new(); depth];
        for (v, &l) in layer_all.iter().enumerate() {
            layers[l].push(v);
        }
        let mut pos = vec![0usize; total];
        for layer in &layers {
            for (i, &v) in layer.iter().enumerate() {
                pos[v] = i;
            }
        }
        // 3. Crossing reduction.
        let mut best = layers.clone();
        let mut best_c = crossings(&layers, &down, &pos);
        for _ in 0..self.sweeps {
            if best_c == 0 {
                break;
            }
            for layer in layers.iter_mut().skip(1) {
                reorder(layer, &up, &mut pos);
            }
            for layer in layers.iter_mut().rev().skip(1) {
                reorder(layer, &down, &mut pos);
            }
            let c = crossings(&layers, &down, &pos);
            if c < best_c {
                best_c = c;
                best = layers.clone();
            }
        }
        let layers = best;
        // 4. Coordinates, in slots.
        let mut x = vec![0i64; total];
        for layer in &layers {
            for (i, &v) in layer.iter().enumerate() {
                x[v] = i as i64;
            }
        }
        for _ in 0..self.coordinate_passes {
            for layer in layers.iter().skip(1) {
                place(layer, &up, &mut x);
            }
            for layer in layers.iter().rev().skip(1) {
                place(layer, &down, &mut x);
            }
        }
        let min = x.iter().copied().min().unwrap_or(0);
        let slots = x.iter().copied().max().map_or(0, |m| m - min + 1);
        let (w, h) = (self.fitted_node_width(slots), self.node_height);
        let slot = w + self.h_gap;
        let row = self.node_height + self.v_gap;
        let at = |v: usize| Point {
            x: (x[v] - min) * slot,
            y: layer_all[v] as i64 * row,
        };
        let nodes: Vec<Point> = (0..n).map(at).collect();
        let edge_paths = chains
            .iter()
            .zip(&reversed)
            .map(|(chain, &r)| {
                let last = chain.len() - 1;
                let mut pts: Vec<Point> = chain
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let p = at(v);
                        let dy = if i == 0 {
                            h
                        } else if i == last {
                            0
                        } else {
                            h / 2
                        };
                        Point {
                            x: p.x + w / 2,
                            y: p.y + dy,
                        }
                    })
                    .collect();
                if r {
                    pts.reverse();
                }
                pts
            })
            .collect();
        let width = (0..total)
            .map(|v| (x[v] - min) * slot + w)
            .max()
            .unwrap_or(0);
        Positions {
            nodes,
            layers: layer_of,
            edges: edge_paths,
            node_size: (w, h),
            width,
            height: depth as i64 * row - self.v_gap.min(depth as i64 * row),
        }
    }
}

/// Limits for large graphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollapseOptions {
    /// More siblings than this in one state collapse into a group node (K).
    pub max_siblings: usize,
    /// The size guard: the most nodes a collapsed graph may have.
    pub max_nodes: usize,
}

impl Default for CollapseOptions {
    fn default() -> Self {
        CollapseOptions {
            max_siblings: 8,
            max_nodes: 5_000,
        }
    }
}

/// Why a graph was not laid out. Local to the console: it never crosses the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The collapsed graph still has more nodes than the size guard allows.
    TooLarge { nodes: usize, limit: usize },
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::TooLarge { nodes, limit } => write!(
                f,
                "the graph has {nodes} nodes after collapsing, more than the {limit} drawn"
            ),
        }
    }
}

impl std::error::Error for LayoutError {}

/// The collapsed graph: visual nodes (each one DAG node, or a group of siblings) and edges.
#[derive(Clone, Debug, PartialEq)]
pub struct Collapsed {
    /// (visual id, member DAG node ids, state), in order of their first member in the DAG.
    pub nodes: Vec<(String, Vec<String>, NodeState)>,
    pub edges: Vec<(usize, usize)>,
    /// For each DAG node (in `DagView::nodes` order): its visual node.
    pub visual_of: Vec<usize>,
    /// For each DAG node: how many siblings (itself included) share its predecessors and
    /// successors, whatever their states. At most `max_siblings` means no state change can
    /// collapse or expand it.
    pub class_size: Vec<usize>,
}

/// Collapses sibling fan-outs of `dag` (module documentation).
pub fn collapse(dag: &DagView, max_siblings: usize) -> Collapsed {
    let index: BTreeMap<&str, usize> = dag
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let n = dag.nodes.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut edges = Vec::with_capacity(dag.edges.len());
    for e in &dag.edges {
        if let (Some(&u), Some(&v)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) {
            preds[v].push(u);
            succs[u].push(v);
            edges.push((u, v));
        }
    }
    for l in preds.iter_mut().chain(succs.iter_mut()) {
        l.sort_unstable();
        l.dedup();
    }
    // Siblings: same predecessors, same successors, same state.
    type Class<'a> = (&'a [usize], &'a [usize], NodeState);
    let mut classes: BTreeMap<Class, Vec<usize>> = BTreeMap::new();
    for (i, node) in dag.nodes.iter().enumerate() {
        classes
            .entry((&preds[i], &succs[i], node.state))
            .or_default()
            .push(i);
    }
    let mut class_size = vec![0usize; n];
    {
        let mut sizes: BTreeMap<(&[usize], &[usize]), usize> = BTreeMap::new();
        for i in 0..n {
            *sizes.entry((&preds[i], &succs[i])).or_default() += 1;
        }
        for (i, c) in class_size.iter_mut().enumerate() {
            *c = sizes
                .get(&(&preds[i][..], &succs[i][..]))
                .copied()
                .unwrap_or(1);
        }
    }
    let mut visual_of = vec![usize::MAX; n];
    let mut firsts: Vec<(usize, Vec<usize>)> = Vec::new();
    for members in classes.into_values() {
        if members.len() > max_siblings {
            firsts.push((members[0], members));
        } else {
            for m in members {
                firsts.push((m, vec![m]));
            }
        }
    }
    crate::order::sort_by_key(&mut firsts, |f| f.0);
    let mut nodes = Vec::with_capacity(firsts.len());
    for (vi, (_, members)) in firsts.into_iter().enumerate() {
        for &m in &members {
            visual_of[m] = vi;
        }
        let first = &dag.nodes[members[0]];
        let id = if members.len() == 1 {
            first.id.clone()
        } else {
            format!("group:{}:{}", first.state.as_str(), first.id)
        };
        nodes.push((
            id,
            members.iter().map(|&m| dag.nodes[m].id.clone()).collect(),
            first.state,
        ));
    }
    let mut vedges: Vec<(usize, usize)> = edges
        .into_iter()
        .map(|(u, v)| (visual_of[u], visual_of[v]))
        .collect();
    vedges.sort_unstable();
    vedges.dedup();
    Collapsed {
        nodes,
        edges: vedges,
        visual_of,
        class_size,
    }
}

/// The same visual nodes (ids and members) and edges; states aside.
fn same_structure(a: &Collapsed, b: &Collapsed) -> bool {
    a.edges == b.edges
        && a.nodes.len() == b.nodes.len()
        && a.nodes
            .iter()
            .zip(&b.nodes)
            .all(|(x, y)| x.0 == y.0 && x.1 == y.1)
}

/// A drawn node: one DAG node, or a group of `count` siblings.
#[derive(Clone, Debug, PartialEq)]
pub struct VisualNode {
    pub id: String,
    pub members: Vec<String>,
    pub state: NodeState,
    pub count: usize,
    pub position: Point,
    pub layer: usize,
}

/// A drawn edge between visual nodes (indices into [`LiveLayout::nodes`]).
#[derive(Clone, Debug, PartialEq)]
pub struct VisualEdge {
    pub from: usize,
    pub to: usize,
    pub points: Vec<Point>,
}

/// What a live update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// Same structure: `changed` nodes got new attributes; no coordinate moved.
    Patched { changed: usize },
    /// The structure changed: the graph was laid out again.
    Relaid,
}

/// A laid-out DAG that takes live updates (module documentation: the update rule).
#[derive(Clone, Debug)]
pub struct LiveLayout<L: Layout> {
    layout: L,
    options: CollapseOptions,
    dag: DagView,
    attrs: BTreeMap<String, usize>,
    structure: Collapsed,
    pub nodes: Vec<VisualNode>,
    pub edges: Vec<VisualEdge>,
    pub width: i64,
    pub height: i64,
    /// Every box's (width, height) in the last layout.
    pub node_size: (i64, i64),
    /// How many times the graph was laid out (1 after [`LiveLayout::new`]).
    pub layouts: usize,
}

impl<L: Layout> LiveLayout<L> {
    /// Collapses and lays out `dag`; refused past the size guard.
    pub fn new(layout: L, options: CollapseOptions, dag: DagView) -> Result<Self, LayoutError> {
        let structure = collapse(&dag, options.max_siblings);
        let mut live = LiveLayout {
            layout,
            options,
            attrs: BTreeMap::new(),
            dag,
            structure: Collapsed {
                nodes: Vec::new(),
                edges: Vec::new(),
                visual_of: Vec::new(),
                class_size: Vec::new(),
            },
            nodes: Vec::new(),
            edges: Vec::new(),
            width: 0,
            height: 0,
            node_size: (0, 0),
            layouts: 0,
        };
        live.relayout(structure)?;
        Ok(live)
    }

    fn relayout(&mut self, structure: Collapsed) -> Result<(), LayoutError> {
        if structure.nodes.len() > self.options.max_nodes {
            return Err(LayoutError::TooLarge {
                nodes: structure.nodes.len(),
                limit: self.options.max_nodes,
            });
        }
        let graph = Graph {
            node_count: structure.nodes.len(),
            edges: structure.edges.clone(),
        };
        let p = self.layout.layout(&graph);
        self.nodes = structure
            .nodes
            .iter()
            .enumerate()
            .map(|(i, (id, members, state))| VisualNode {
                id: id.clone(),
                count: members.len(),
                members: members.clone(),
                state: *state,
                position: p.nodes.get(i).copied().unwrap_or_default(),
                layer: p.layers.get(i).copied().unwrap_or_default(),
            })
            .collect();
        self.edges = structure
            .edges
            .iter()
            .zip(p.edges)
            .map(|(&(from, to), points)| VisualEdge { from, to, points })
            .collect();
        self.width = p.width;
        self.height = p.height;
        self.node_size = p.node_size;
        self.structure = structure;
        self.index_attrs();
        self.layouts += 1;
        Ok(())
    }

    fn index_attrs(&mut self) {
        self.attrs = self
            .dag
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
    }

    /// The layout algorithm and its settings.
    pub fn layout(&self) -> &L {
        &self.layout
    }

    /// Lays the same graph out again with `layout` (other box sizes: the frame was resized).
    pub fn set_layout(&mut self, layout: L) -> Result<(), LayoutError> {
        self.layout = layout;
        let structure = self.structure.clone();
        self.relayout(structure)
    }

    /// Takes a new DAG of the same Mission: patches attributes when the collapsed structure is
    /// unchanged, lays out again otherwise.
    pub fn refresh(&mut self, dag: DagView) -> Result<Refresh, LayoutError> {
        let structure = collapse(&dag, self.options.max_siblings);
        let changed = if dag.nodes.len() == self.dag.nodes.len() {
            dag.nodes
                .iter()
                .zip(&self.dag.nodes)
                .filter(|(a, b)| a != b)
                .count()
        } else {
            dag.nodes.len()
        };
        self.dag = dag;
        if same_structure(&structure, &self.structure) {
            // Only attributes changed: a single node's state is an attribute.
            for (v, (_, _, state)) in self.nodes.iter_mut().zip(&structure.nodes) {
                v.state = *state;
            }
            self.structure = structure;
            self.index_attrs();
            return Ok(Refresh::Patched { changed });
        }
        self.relayout(structure)?;
        Ok(Refresh::Relaid)
    }

    /// Changes one node's attributes (matched by id). Re-lays out only if the change alters
    /// the collapsed structure (its state joins or leaves a sibling group). Collapsing depends
    /// only on edges and states, so a change that keeps the state, or a state change of a node
    /// with at most `max_siblings` siblings, is patched in place without looking at the rest
    /// of the graph.
    pub fn update_node(&mut self, node: DagNode) -> Result<Refresh, LayoutError> {
        let Some(&i) = self.attrs.get(&node.id) else {
            let mut dag = self.dag.clone();
            dag.nodes.push(node);
            return self.refresh(dag);
        };
        let old_state = self.dag.nodes[i].state;
        let small_class = self
            .structure
            .class_size
            .get(i)
            .is_some_and(|&c| c <= self.options.max_siblings);
        if node.state == old_state || small_class {
            let changed = usize::from(self.dag.nodes[i] != node);
            if let Some(v) = self.structure.visual_of.get(i).copied()
                && let (Some(vn), Some(sn)) =
                    (self.nodes.get_mut(v), self.structure.nodes.get_mut(v))
            {
                vn.state = node.state;
                sn.2 = node.state;
            }
            self.dag.nodes[i] = node;
            return Ok(Refresh::Patched { changed });
        }
        let mut dag = self.dag.clone();
        dag.nodes[i] = node;
        self.refresh(dag)
    }

    /// Records the DAG-wide facts of the DAG whose nodes were just patched in one by one
    /// ([`LiveLayout::update_node`] takes nodes only): its instant and critical path, so that
    /// [`LiveLayout::dag`] is that DAG and can be rebuilt from (`DagView::rebuild`).
    pub fn set_dag_facts(&mut self, now: Micros, critical_path: CriticalPath) {
        self.dag.now = now;
        self.dag.critical_path = critical_path;
    }

    /// The current attributes of DAG node `id`.
    pub fn attrs(&self, id: &str) -> Option<&DagNode> {
        self.attrs.get(id).and_then(|&i| self.dag.nodes.get(i))
    }

    /// The position of DAG node `id` in [`LiveLayout::dag`]'s nodes.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.attrs.get(id).copied()
    }

    /// The index in [`LiveLayout::nodes`] of the visual node that draws DAG node `id` (itself
    /// or its group), without scanning the nodes: a live update patches exactly that one.
    pub fn visual_of(&self, id: &str) -> Option<usize> {
        self.index_of(id)
            .and_then(|i| self.structure.visual_of.get(i).copied())
    }

    /// The visual node that draws DAG node `id` (itself or its group).
    pub fn node_of(&self, id: &str) -> Option<&VisualNode> {
        self.nodes
            .iter()
            .find(|v| v.members.iter().any(|m| m == id))
    }

    pub fn dag(&self) -> &DagView {
        &self.dag
    }
}
