//! The search's working form of a schedule: units in launch order, each a list of KV runs with a walk over
//! the run's active Q tiles. Ranks are not part of a plan: they are the arrival order of a simulation
//! (model.md, Lemma), fixed only when the plan becomes an `Order`.
//!
//! Units are shared behind `Arc`, so that a candidate is a cheap copy of its parent with a few units
//! replaced: a move touches two or three units of thousands.

use std::sync::Arc;

use dag_model::{Order, Problem, TileMask, Unit, Visit};

use crate::CostModel;
use dag_model::Weights;

/// The order in which a run visits the active Q tiles of its KV column, as positions in the column's
/// ascending list of active tiles (`TileMask::column`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Walk {
    /// Positions start, start + 1, ... wrapping around: a cyclic shift (ascending from `start`).
    Up(u32),
    /// Positions start, start - 1, ... wrapping around (descending from `start`).
    Down(u32),
    /// Any other permutation, as taken from a given schedule.
    List(Arc<[u32]>),
}

/// The visits of one unit to one KV tile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub kv: u32,
    pub walk: Walk,
}

/// A unit of a plan: one (batch, head), its KV runs in the order the unit holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlanUnit {
    pub bh: u32,
    pub runs: Vec<Run>,
}

/// Units in launch order.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub units: Vec<Arc<PlanUnit>>,
}

/// Per-problem tables the simulator and the moves read: the active tiles of each KV column, flattened, with
/// each tile's compute cost, and the machine.
#[derive(Debug)]
pub(crate) struct Tables {
    pub m: usize,
    pub n: usize,
    pub heads: u32,
    pub kv_heads: u32,
    pub group: u32,
    pub bh_count: u32,
    /// Column kv's tiles are `col_start[kv]..col_start[kv + 1]` of `q_of`, `cost_of` and `frac_of`.
    pub col_start: Vec<u32>,
    pub q_of: Vec<u32>,
    pub cost_of: Vec<f64>,
    pub frac_of: Vec<f32>,
    pub costs: CostModel,
    pub sms: usize,
    pub persistent: bool,
    /// A run gives up (scores `None`) once more (batch, head) pairs than this have a unit resident at once;
    /// `u32::MAX` for no limit. Set by the search, not by `new`.
    pub heads_limit: u32,
}

impl Tables {
    pub fn new(problem: &Problem, mask: &TileMask, costs: &CostModel, sms: u32, persistent: bool) -> Tables {
        let n = mask.n() as usize;
        let mut col_start = Vec::with_capacity(n + 1);
        let mut q_of = Vec::new();
        let mut cost_of = Vec::new();
        let mut frac_of = Vec::new();
        col_start.push(0);
        for kv in 0..mask.n() {
            for (&q, &f) in mask.column(kv).iter().zip(mask.column_fractions(kv)) {
                q_of.push(q);
                // The cost of the fraction as a visit stores it, so that the simulation here and the
                // official one agree to the bit.
                let stored = Visit::new(kv, q, 0, f).fraction();
                cost_of.push(costs.compute(stored));
                frac_of.push(f);
            }
            col_start.push(q_of.len() as u32);
        }
        Tables {
            m: mask.m() as usize,
            n,
            heads: problem.heads(),
            kv_heads: problem.kv_heads(),
            group: problem.group(),
            bh_count: problem.bh_count(),
            col_start,
            q_of,
            cost_of,
            frac_of,
            costs: *costs,
            sms: sms as usize,
            persistent,
            heads_limit: u32::MAX,
        }
    }

    pub fn col_len(&self, kv: u32) -> u32 {
        self.col_start[kv as usize + 1] - self.col_start[kv as usize]
    }

    pub fn gqa(&self) -> bool {
        self.group > 1
    }

    /// The (batch, KV head) whose dK/dV tiles query pair `bh` adds into (as `Problem::kv_group_of`).
    pub fn kv_group_of(&self, bh: u32) -> u32 {
        let (b, h) = (bh / self.heads, bh % self.heads);
        b * self.kv_heads + h / self.group
    }

    /// Time of one column on its own: every task's compute and reduce, and its dK/dV add under GQA. Under
    /// decoupled dQ writers the adds run beside the compute and take none of the SM's time.
    pub fn column_work(&self, kv: u32) -> f64 {
        let (a, b) = (self.col_start[kv as usize] as usize, self.col_start[kv as usize + 1] as usize);
        let reduce = if self.costs.decoupled() { 0.0 } else { self.costs.reduce };
        let mut w: f64 = self.cost_of[a..b].iter().map(|c| c + reduce).sum();
        if self.gqa() {
            w += self.costs.dkv_reduce;
        }
        w
    }

    /// The non-empty KV columns.
    pub fn columns(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.n as u32).filter(|&kv| self.col_len(kv) > 0)
    }
}

impl Walk {
    /// Position (in the column's active list) of step `t` of a walk over `len` tiles.
    #[inline]
    pub fn at(&self, t: u32, len: u32) -> u32 {
        match self {
            Walk::Up(s) => {
                let p = s + t;
                if p >= len { p - len } else { p }
            }
            Walk::Down(s) => {
                if t <= *s {
                    s - t
                } else {
                    s + len - t
                }
            }
            Walk::List(l) => l[t as usize],
        }
    }

    /// Recognises a rotation, so that the simulator need not read a list.
    fn from_positions(pos: &[u32]) -> Walk {
        let len = pos.len() as u32;
        let s = pos[0];
        if pos.iter().enumerate().all(|(t, &p)| p == Walk::Up(s).at(t as u32, len)) {
            Walk::Up(s)
        } else if pos.iter().enumerate().all(|(t, &p)| p == Walk::Down(s).at(t as u32, len)) {
            Walk::Down(s)
        } else {
            Walk::List(pos.into())
        }
    }
}

impl PlanUnit {
    pub fn tasks(&self, tables: &Tables) -> u32 {
        self.runs.iter().map(|r| tables.col_len(r.kv)).sum()
    }

    pub fn work(&self, tables: &Tables) -> f64 {
        self.runs.iter().map(|r| tables.column_work(r.kv)).sum()
    }
}

impl Plan {
    /// The plan of a given order: its launch order, unit composition and visit orders (its ranks are dropped).
    pub fn from_order(order: &Order, mask: &TileMask) -> Plan {
        let units = order
            .units
            .iter()
            .map(|u| {
                let mut runs = Vec::new();
                let mut at = 0;
                while at < u.visits.len() {
                    let kv = u.visits[at].kv;
                    let end = at + u.visits[at..].iter().take_while(|v| v.kv == kv).count();
                    let col = mask.column(kv as u32);
                    let pos: Vec<u32> = u.visits[at..end]
                        .iter()
                        .map(|v| {
                            col.binary_search(&(v.q as u32)).expect("a validated order visits active tiles") as u32
                        })
                        .collect();
                    runs.push(Run { kv: kv as u32, walk: Walk::from_positions(&pos) });
                    at = end;
                }
                Arc::new(PlanUnit { bh: u.bh, runs })
            })
            .collect();
        Plan { units }
    }

    /// The order of this plan with every rank 0; `sim::assign_ranks` fills them in.
    pub fn to_order_unranked(&self, tables: &Tables) -> Order {
        let units = self
            .units
            .iter()
            .map(|u| {
                let mut visits = Vec::with_capacity(u.tasks(tables) as usize);
                for run in &u.runs {
                    let base = tables.col_start[run.kv as usize];
                    let len = tables.col_len(run.kv);
                    for t in 0..len {
                        let g = (base + run.walk.at(t, len)) as usize;
                        visits.push(Visit::new(run.kv, tables.q_of[g], 0, tables.frac_of[g]));
                    }
                }
                Unit { bh: u.bh, visits, dkv_ranks: vec![0; u.runs.len()] }
            })
            .collect();
        Order { units }
    }
}
