//! Lower bounds that hold for every whole-column schedule of a problem (each KV column in one unit, as the
//! search's plans and the built-ins keep them), whatever its unit composition, visit orders and ranks. A
//! schedule with split columns (`split_tail`) can go below the longest-column and column-packing bounds. `Bounds` (the schedule's own work / P, longest unit and critical path) bounds one schedule; these
//! bound the optimum, so the gap to them certifies how far a searched schedule can still be from the best.

use dag_model::{Problem, TileMask, Weights};
use serde::Serialize;

use super::plan::Tables;
use crate::{CostModel, LaunchPolicy, Machine};

/// Lower bounds on the makespan of any whole-column schedule of a problem on a machine, under a cost model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ProblemBounds {
    /// All tasks' work plus the overheads of the fewest possible units (one per (batch, head), since a unit
    /// never spans two), over the SMs.
    pub work: f64,
    /// The longest KV column with one unit's overheads: a column is never split between units.
    pub longest_column: f64,
    /// Columns are indivisible jobs: among the k·P + 1 longest, some SM runs k + 1, so its time is at least
    /// the sum of the k + 1 shortest of them (the best k).
    pub column_packing: f64,
    /// The adds into one dQ tile (or, under GQA, one dK/dV tile) are serialized, with a hand-off between
    /// consecutive ones, after at least the first contributor's compute. (Under decoupled dQ writers the unit's
    /// dK/dV epilogue need not follow the last add, so only the unit start is added.)
    pub reduction_chain: f64,
}

impl ProblemBounds {
    pub fn of(problem: &Problem, mask: &TileMask, machine: Machine, costs: &CostModel) -> ProblemBounds {
        let tables = Tables::new(problem, mask, costs, machine.sms, machine.launch == LaunchPolicy::Persistent);
        Self::from_tables(&tables, mask)
    }

    pub(crate) fn from_tables(t: &Tables, mask: &TileMask) -> ProblemBounds {
        let c = &t.costs;
        // A unit's own load and epilogue: one after the other on its SM. Under `kv_load_overlap` a persistent
        // CTA loads its next unit beside the previous one's epilogue, so across the SMs' units each adds at
        // least the larger of the two (an SM's first load and last epilogue make up the rest).
        let overhead = c.unit_start() + c.unit_finish();
        let per_unit = c.unit_overhead(t.persistent);
        let p = t.sms as f64;
        let bh = t.bh_count as u64;
        // Distinct column works, longest first; each occurs once per (batch, head).
        let mut works: Vec<f64> = t.columns().map(|kv| t.column_work(kv)).collect();
        works.sort_by(|a, b| b.total_cmp(a));
        let total: f64 = works.iter().sum::<f64>() * bh as f64;
        let work = (total + bh as f64 * per_unit) / p;
        let longest_column = works.first().copied().unwrap_or(0.0) + overhead;
        let column_packing = packing(&works, bh, t.sms as u64) + overhead;

        let mut chain: f64 = 0.0;
        for q in 0..mask.m() {
            let row = mask.row(q);
            if row.is_empty() {
                continue;
            }
            let first = row
                .iter()
                .map(|&kv| {
                    let at = mask.column(kv).binary_search(&q).expect("row and column agree");
                    t.cost_of[t.col_start[kv as usize] as usize + at]
                })
                .fold(f64::INFINITY, f64::min);
            let k = row.len() as f64;
            chain = chain.max(first + k * c.reduce + (k - 1.0) * c.handoff);
        }
        if t.gqa() {
            let g = t.group as f64;
            for kv in t.columns() {
                let column = t.column_work(kv) - c.dkv_reduce;
                chain = chain.max(column + g * c.dkv_reduce + (g - 1.0) * c.handoff);
            }
        }
        let reduction_chain = chain + if c.decoupled() { c.unit_start() } else { overhead };
        ProblemBounds { work, longest_column, column_packing, reduction_chain }
    }

    /// The largest of the bounds.
    pub fn best(&self) -> f64 {
        self.work.max(self.longest_column).max(self.column_packing).max(self.reduction_chain)
    }
}

/// The packing bound over column works `works` (distinct values, descending), each repeated `copies` times,
/// on `sms` SMs: max over k >= 1 with k·P + 1 <= total of the sum of elements k·P + 1 - k ..= k·P + 1
/// (1-based) of the expanded descending list.
fn packing(works: &[f64], copies: u64, sms: u64) -> f64 {
    let total = works.len() as u64 * copies;
    // Element i (0-based) of the expanded list is works[i / copies]; a sum over a range walks the distinct
    // values it covers, so each k costs O(k / copies + 1).
    let sum = |from: u64, to: u64| -> f64 {
        let mut s = 0.0;
        let mut i = from;
        while i < to {
            let w = i / copies;
            let end = ((w + 1) * copies).min(to);
            s += works[w as usize] * (end - i) as f64;
            i = end;
        }
        s
    };
    let mut best: f64 = 0.0;
    let mut k = 1u64;
    // Beyond a few thousand k the bound is dominated by work / P; the cap keeps tiny machines cheap.
    while k * sms < total && k <= 4096 {
        let last = k * sms; // 0-based index of element k·P + 1
        best = best.max(sum(last - k, last + 1));
        k += 1;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::packing;

    #[test]
    fn equal_jobs_need_ceil_n_over_p_rounds() {
        // 2048 columns of 320 on 132 SMs: 16 rounds.
        assert_eq!(packing(&[320.0], 2048, 132), 16.0 * 320.0);
        // Exactly P jobs: no SM needs two.
        assert_eq!(packing(&[5.0], 8, 8), 0.0);
        assert_eq!(packing(&[5.0], 9, 8), 10.0);
    }

    #[test]
    fn mixed_jobs_take_the_shortest_of_the_longest() {
        // Jobs 8, 7, 6, 5 (one each) on 2 SMs: k = 1 gives 6 + 7 (elements 2 and 3).
        assert_eq!(packing(&[8.0, 7.0, 6.0, 5.0], 1, 2), 13.0);
    }
}
