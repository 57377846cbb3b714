use dag_model::{Order, Problem, Weights};
use serde::Serialize;

use crate::{CostModel, Schedule};

/// The longest path under decoupled dQ writers (`CostModel::dq_writers` > 0), where a unit's tasks follow each
/// other on the compute side and each task's add follows its own compute and the previous rank's release (plus
/// the hand-off): the DAG's critical path does not apply there, since it makes a unit's next compute wait for
/// the previous task's add. Under `dq_deferred` a task's add follows the next compute of its KV tile instead. The
/// staging buffers' limit is left out, so this is a lower bound on the simulated makespan.
pub fn decoupled_critical_path(problem: &Problem, order: &Order, costs: &CostModel) -> f64 {
    let m = problem.m_tiles() as usize;
    // Per dQ tile, the compute end of each rank's task.
    let mut arrivals: Vec<Vec<f64>> = vec![Vec::new(); problem.bh_count() as usize * m];
    let mut longest: f64 = 0.0;
    for unit in &order.units {
        let mut t = costs.unit_start();
        let mut arrive = |v: &dag_model::Visit, t: f64| {
            let list = &mut arrivals[unit.bh as usize * m + v.q as usize];
            if list.len() <= v.rank as usize {
                list.resize(v.rank as usize + 1, 0.0);
            }
            list[v.rank as usize] = t;
        };
        for (i, v) in unit.visits.iter().enumerate() {
            if costs.kernel_epilogues && i > 0 && unit.visits[i - 1].kv != v.kv {
                t += costs.kv_move();
            }
            t += costs.compute(v.fraction());
            // Deferred dQ: the previous task of this KV tile reaches its writer now; a tile's last one at once.
            let last_of_kv = unit.visits.get(i + 1).is_none_or(|next| next.kv != v.kv);
            if costs.dq_deferred && i > 0 && unit.visits[i - 1].kv == v.kv {
                arrive(&unit.visits[i - 1], t);
            }
            if !costs.dq_deferred || last_of_kv {
                arrive(v, t);
            }
        }
        longest = longest.max(t + costs.unit_finish());
    }
    for list in &arrivals {
        let mut released = f64::NEG_INFINITY;
        for (rank, &arrival) in list.iter().enumerate() {
            let start = if rank == 0 { arrival } else { arrival.max(released + costs.handoff()) };
            released = start + costs.reduce();
        }
        if !list.is_empty() {
            longest = longest.max(released);
        }
    }
    longest
}

/// Lower bounds on the makespan of a schedule on its machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounds {
    /// Total work over the number of SMs.
    pub work: f64,
    /// The longest single unit (a unit runs on one SM from start to end).
    pub longest_unit: f64,
    /// The longest path of the DAG (infinitely many SMs).
    pub critical_path: f64,
}

impl Bounds {
    /// The bounds of `schedule`; the critical path is computed by the caller (it may fail on a cycle, which a
    /// validated schedule cannot have).
    pub fn of(schedule: &Schedule, costs: &CostModel, critical_path: f64) -> Bounds {
        let gqa = schedule.problem().group() > 1;
        let mut total = 0.0;
        let mut longest: f64 = 0.0;
        // With decoupled writers the adds run beside the compute and take none of the SM's compute time.
        let reduce = if costs.decoupled() { 0.0 } else { costs.reduce() };
        // Under `kv_load_overlap` a persistent CTA loads a unit beside its previous one's epilogue.
        let overhead = costs.unit_overhead(schedule.machine().launch == crate::LaunchPolicy::Persistent);
        for unit in schedule.units() {
            let mut work = overhead;
            for v in &unit.visits {
                work += costs.compute(v.fraction()) + reduce;
            }
            if gqa {
                work += unit.dkv_ranks.len() as f64 * costs.dkv_reduce();
            }
            total += work;
            longest = longest.max(work);
        }
        Bounds { work: total / schedule.machine().sms as f64, longest_unit: longest, critical_path }
    }

    /// The largest of the bounds.
    pub fn best(&self) -> f64 {
        self.work.max(self.longest_unit).max(self.critical_path)
    }
}
