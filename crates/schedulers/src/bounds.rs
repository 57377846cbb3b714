use dag_model::Weights;
use serde::Serialize;

use crate::{CostModel, Schedule};

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
        for unit in schedule.units() {
            let mut work = costs.unit_start() + costs.unit_finish();
            for v in &unit.visits {
                work += costs.compute(v.fraction()) + costs.reduce();
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
