//! The task DAG of an order and its critical path (the makespan on unboundedly many SMs).
//!
//! Nodes are the start and end of every compute (C) and reduce (R) phase. Chain edges run through each unit's
//! tasks in visit order (C -> R -> next C); accumulation edges run from the end of rank k-1's R to the start of
//! rank k's R on the same dQ tile, weighted by the hand-off latency; with GQA, dK/dV reductions of the query
//! heads sharing a KV head are chained the same way at the end of each unit.
//!
//! Two evaluations exist on purpose. `TaskGraph` materialises the graph in petgraph and takes the longest path
//! by topological order and dynamic programming: simple and obviously right, but memory-hungry. `critical_path`
//! evaluates the same DAG implicitly, unit by unit, parking a unit on a dQ tile until the rank before it is
//! done: linear time, no graph. Tests check one against the other.

use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::{ModelError, Order, Problem};

/// Costs of the DAG's phases and edges. Implemented by the cost model of the `schedulers` crate.
pub trait Weights {
    /// Compute cost of a tile whose unmasked share is `fraction` (1.0 for a full interior tile).
    fn compute(&self, fraction: f32) -> f64;
    /// Cost of adding one dQ partial into the accumulator.
    fn reduce(&self) -> f64;
    /// Latency from one rank's release to the next rank's reduce start (0 in the idealized model).
    fn handoff(&self) -> f64;
    /// Work of a unit before its first task (loading K and V).
    fn unit_start(&self) -> f64;
    /// Work of a unit after its last task (writing dK and dV).
    fn unit_finish(&self) -> f64;
    /// Cost of adding one dK/dV partial into the shared accumulator of a KV head (GQA only).
    fn dkv_reduce(&self) -> f64;
}

/// The result of an implicit evaluation: the critical path and when each unit would end on unboundedly many SMs.
#[derive(Debug, Clone, PartialEq)]
pub struct CriticalPath {
    pub length: f64,
    pub unit_end: Vec<f64>,
}

/// Where a unit stands during the implicit evaluation.
#[derive(Clone, Copy)]
struct Cursor {
    time: f64,
    /// Next visit, then `visits.len() + k` for the k-th dK/dV reduction.
    step: usize,
    /// The compute of the current visit is done; the unit is at its reduce.
    arrived: bool,
}

/// The critical path of `order`, evaluated over the tile grid without building a graph.
///
/// Returns `ModelError::Cycle` when some unit can never get its rank: the order's DAG has a cycle.
pub fn critical_path<W: Weights>(problem: &Problem, order: &Order, w: &W) -> Result<CriticalPath, ModelError> {
    let m = problem.m_tiles() as usize;
    let n = problem.n_tiles() as usize;
    let gqa = problem.group() > 1;
    let dq_tiles = problem.bh_count() as usize * m;
    let dkv_tiles = (problem.batch() * problem.kv_heads()) as usize * n;
    let mut dq = Semaphores::new(dq_tiles);
    let mut dkv = Semaphores::new(if gqa { dkv_tiles } else { 0 });
    let mut cursors: Vec<Cursor> = vec![Cursor { time: w.unit_start(), step: 0, arrived: false }; order.units.len()];
    let mut done = vec![false; order.units.len()];
    let runs: Vec<Vec<u32>> =
        if gqa { order.units.iter().map(|u| u.kv_runs().collect()).collect() } else { Vec::new() };
    let mut ready: Vec<usize> = (0..order.units.len()).rev().collect();
    let handoff = w.handoff();

    while let Some(ui) = ready.pop() {
        let unit = &order.units[ui];
        let c = &mut cursors[ui];
        loop {
            if c.step < unit.visits.len() {
                let v = unit.visits[c.step];
                if !c.arrived {
                    c.time += w.compute(v.fraction());
                    c.arrived = true;
                }
                let tile = unit.bh as usize * m + v.q as usize;
                match dq.try_take(tile, v.rank as u32, c.time, handoff) {
                    Some(start) => {
                        c.time = start + w.reduce();
                        c.step += 1;
                        c.arrived = false;
                        if let Some(next) = dq.release(tile, c.time) {
                            ready.push(next as usize);
                        }
                    }
                    None => {
                        dq.park(tile, v.rank as u32, ui as u32);
                        break;
                    }
                }
            } else if gqa && c.step < unit.visits.len() + runs[ui].len() {
                let k = c.step - unit.visits.len();
                let tile = problem.kv_group_of(unit.bh) as usize * n + runs[ui][k] as usize;
                let rank = unit.dkv_ranks[k];
                match dkv.try_take(tile, rank, c.time, handoff) {
                    Some(start) => {
                        c.time = start + w.dkv_reduce();
                        c.step += 1;
                        if let Some(next) = dkv.release(tile, c.time) {
                            ready.push(next as usize);
                        }
                    }
                    None => {
                        dkv.park(tile, rank, ui as u32);
                        break;
                    }
                }
            } else {
                c.time += w.unit_finish();
                done[ui] = true;
                break;
            }
        }
    }

    if let Some(ui) = done.iter().position(|d| !d) {
        let unit = &order.units[ui];
        let step = cursors[ui].step.min(unit.visits.len().saturating_sub(1));
        let v = unit.visits[step];
        return Err(ModelError::Cycle { unit: ui, bh: unit.bh, q: v.q as u32, rank: v.rank as u32 });
    }
    let unit_end: Vec<f64> = cursors.iter().map(|c| c.time).collect();
    let length = unit_end.iter().copied().fold(0.0, f64::max);
    Ok(CriticalPath { length, unit_end })
}

/// Accumulation state of a set of tiles: how many ranks have added, when the last one finished, and which unit
/// waits for which rank.
struct Semaphores {
    count: Vec<u32>,
    released_at: Vec<f64>,
    waiting: Vec<Vec<(u32, u32)>>,
}

impl Semaphores {
    fn new(tiles: usize) -> Self {
        Semaphores { count: vec![0; tiles], released_at: vec![0.0; tiles], waiting: vec![Vec::new(); tiles] }
    }

    /// If `rank` is next on `tile`, the time its reduce can start for a unit that arrived at `arrival`.
    fn try_take(&self, tile: usize, rank: u32, arrival: f64, handoff: f64) -> Option<f64> {
        (self.count[tile] == rank)
            .then(|| if rank == 0 { arrival } else { arrival.max(self.released_at[tile] + handoff) })
    }

    /// Marks the current rank of `tile` done at `time`; returns the unit waiting for the next rank, if any.
    fn release(&mut self, tile: usize, time: f64) -> Option<u32> {
        self.count[tile] += 1;
        self.released_at[tile] = time;
        let want = self.count[tile];
        let list = &mut self.waiting[tile];
        let at = list.iter().position(|&(rank, _)| rank == want)?;
        Some(list.swap_remove(at).1)
    }

    fn park(&mut self, tile: usize, rank: u32, unit: u32) {
        self.waiting[tile].push((rank, unit));
    }
}

/// The DAG of an order, materialised as a petgraph graph with weighted edges from a virtual source to a
/// virtual sink. Meant for problems of up to a few hundred thousand tasks.
pub struct TaskGraph {
    graph: DiGraph<(), f64>,
    source: NodeIndex,
    sink: NodeIndex,
}

impl TaskGraph {
    pub fn build<W: Weights>(problem: &Problem, order: &Order, w: &W) -> Self {
        let m = problem.m_tiles() as usize;
        let n = problem.n_tiles() as usize;
        let gqa = problem.group() > 1;
        let mut g: DiGraph<(), f64> = DiGraph::new();
        let source = g.add_node(());
        let sink = g.add_node(());
        // Reduce (start, end) nodes of each contribution, keyed by (tile, rank), to add accumulation edges
        // once every unit's chain exists.
        let mut dq_nodes: Vec<Vec<(u32, NodeIndex, NodeIndex)>> = vec![Vec::new(); problem.bh_count() as usize * m];
        let dkv_count = if gqa { (problem.batch() * problem.kv_heads()) as usize * n } else { 0 };
        let mut dkv_nodes: Vec<Vec<(u32, NodeIndex, NodeIndex)>> = vec![Vec::new(); dkv_count];
        for unit in &order.units {
            let start = g.add_node(());
            g.add_edge(source, start, 0.0);
            let mut prev = g.add_node(());
            g.add_edge(start, prev, w.unit_start());
            for v in &unit.visits {
                let cs = g.add_node(());
                let ce = g.add_node(());
                let rs = g.add_node(());
                let re = g.add_node(());
                g.add_edge(prev, cs, 0.0);
                g.add_edge(cs, ce, w.compute(v.fraction()));
                g.add_edge(ce, rs, 0.0);
                g.add_edge(rs, re, w.reduce());
                dq_nodes[unit.bh as usize * m + v.q as usize].push((v.rank as u32, rs, re));
                prev = re;
            }
            if gqa {
                for (kv, &rank) in unit.kv_runs().zip(&unit.dkv_ranks) {
                    let ds = g.add_node(());
                    let de = g.add_node(());
                    g.add_edge(prev, ds, 0.0);
                    g.add_edge(ds, de, w.dkv_reduce());
                    dkv_nodes[problem.kv_group_of(unit.bh) as usize * n + kv as usize].push((rank, ds, de));
                    prev = de;
                }
            }
            let end = g.add_node(());
            g.add_edge(prev, end, w.unit_finish());
            g.add_edge(end, sink, 0.0);
        }
        for tile in dq_nodes.iter_mut().chain(dkv_nodes.iter_mut()) {
            tile.sort_by_key(|&(rank, _, _)| rank);
            for pair in tile.windows(2) {
                g.add_edge(pair[0].2, pair[1].1, w.handoff());
            }
        }
        TaskGraph { graph: g, source, sink }
    }

    pub fn node_count(&self) -> usize {
        self.graph.node_count()
    }

    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
    }

    /// Whether the graph has a cycle (petgraph's toposort fails exactly then).
    pub fn has_cycle(&self) -> bool {
        toposort(&self.graph, None).is_err()
    }

    /// Longest source-to-sink path, or `None` if the graph has a cycle.
    pub fn critical_path(&self) -> Option<f64> {
        let order = toposort(&self.graph, None).ok()?;
        let mut dist = vec![f64::NEG_INFINITY; self.graph.node_count()];
        dist[self.source.index()] = 0.0;
        for node in order {
            let d = dist[node.index()];
            if d == f64::NEG_INFINITY {
                continue;
            }
            for e in self.graph.edges(node) {
                use petgraph::visit::EdgeRef;
                let t = e.target().index();
                dist[t] = dist[t].max(d + e.weight());
            }
        }
        Some(dist[self.sink.index()])
    }
}
