use serde::Serialize;

use dag_model::critical_path;

use crate::{Bounds, CostModel, Schedule, ScheduleError, Simulation, simulate};

/// Everything the analyzer knows about one schedule on its machine: critical path, lower bounds, simulation.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub schedule: Schedule,
    pub critical_path: f64,
    pub bounds: Bounds,
    pub simulation: Simulation,
}

impl Evaluation {
    pub fn makespan(&self) -> f64 {
        self.simulation.makespan
    }
    /// How far the makespan is above the best lower bound, in percent.
    pub fn gap_percent(&self) -> f64 {
        let best = self.bounds.best();
        if best > 0.0 { (self.makespan() / best - 1.0) * 100.0 } else { 0.0 }
    }
}

/// Summary numbers of an evaluation, for tables and JSON.
#[derive(Debug, Clone, Serialize)]
pub struct EvaluationSummary {
    pub makespan: f64,
    pub critical_path: f64,
    pub work_bound: f64,
    pub longest_unit_bound: f64,
    pub best_bound: f64,
    pub gap_percent: f64,
    pub tasks: u64,
    pub units: usize,
    /// The most (batch, head) pairs with a unit resident at once ([`crate::Simulation::peak_heads_in_flight`]).
    pub heads_in_flight: u32,
}

impl Evaluation {
    pub fn summary(&self) -> EvaluationSummary {
        EvaluationSummary {
            makespan: self.makespan(),
            critical_path: self.critical_path,
            work_bound: self.bounds.work,
            longest_unit_bound: self.bounds.longest_unit,
            best_bound: self.bounds.best(),
            gap_percent: self.gap_percent(),
            tasks: self.schedule.tasks(),
            units: self.schedule.units().len(),
            heads_in_flight: self.simulation.peak_heads_in_flight(self.schedule.order()),
        }
    }
}

/// Evaluates a validated schedule under `costs`.
///
/// Validation already computed the critical path and a simulation without timeline; under the same costs they
/// are reused rather than recomputed.
pub fn evaluate(schedule: Schedule, costs: &CostModel, record_timeline: bool) -> Result<Evaluation, ScheduleError> {
    let (cp, simulation) = match schedule.validated_under(costs) {
        Some(v) if !record_timeline => (v.critical_path, v.simulation.clone()),
        _ => {
            let cp = critical_path_under(&schedule, costs)?;
            (cp, simulate(&schedule, costs, record_timeline)?)
        }
    };
    let bounds = Bounds::of(&schedule, costs, cp);
    Ok(Evaluation { schedule, critical_path: cp, bounds, simulation })
}

/// The critical path the bounds use: the DAG's, or with decoupled dQ writers their own (see
/// [`crate::bounds::decoupled_critical_path`]).
pub(crate) fn critical_path_under(schedule: &Schedule, costs: &CostModel) -> Result<f64, ScheduleError> {
    if costs.decoupled() {
        Ok(crate::bounds::decoupled_critical_path(schedule.problem(), schedule.order(), costs))
    } else {
        Ok(critical_path(schedule.problem(), schedule.order(), costs)?.length)
    }
}
