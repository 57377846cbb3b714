use std::sync::Arc;

use dag_model::{Mask, Order, Problem, TileMask, Unit, critical_path};

use crate::{CostModel, Machine, ScheduleError, Simulation, simulate};

/// A validated schedule: its order covers every active tile once, its ranks are permutations, its DAG is
/// acyclic, and it runs to completion on its machine under the cost model it was validated with.
///
/// The only way to obtain one is `Schedule::validate` (the built-in constructors go through it too), so code
/// that holds a `Schedule` may generate a kernel from it without re-checking.
#[derive(Debug, Clone)]
pub struct Schedule {
    name: String,
    problem: Problem,
    mask: Mask,
    tile_mask: Arc<TileMask>,
    machine: Machine,
    order: Order,
    /// What validation computed, kept so that evaluating under the same costs does not repeat it.
    validation: Arc<Validation>,
}

#[derive(Debug)]
pub(crate) struct Validation {
    pub costs: CostModel,
    pub critical_path: f64,
    pub simulation: Simulation,
}

impl Schedule {
    /// Checks `order` against the problem, its DAG and the machine, and wraps it.
    pub fn validate(
        name: impl Into<String>,
        problem: Problem,
        mask: Mask,
        tile_mask: Arc<TileMask>,
        machine: Machine,
        costs: &CostModel,
        order: Order,
    ) -> Result<Schedule, ScheduleError> {
        if machine.sms == 0 {
            return Err(ScheduleError::NoSms);
        }
        costs.check()?;
        order.check(&problem, &tile_mask)?;
        // The DAG's critical path also checks that the order has no cycle (under any cost model).
        let mut cp = critical_path(&problem, &order, costs)?.length;
        if costs.decoupled() {
            cp = crate::bounds::decoupled_critical_path(&problem, &order, costs);
        }
        let placeholder = Arc::new(Validation { costs: *costs, critical_path: cp, simulation: Simulation::default() });
        let mut schedule =
            Schedule { name: name.into(), problem, mask, tile_mask, machine, order, validation: placeholder };
        // A schedule must run on either main loop. Decoupled writers let a unit's compute go past a task that
        // waits, so two resident units can each wait for a later task of the other without a deadlock; the
        // portable loop, whose threads compute, wait and add in sequence, would hang. Every such case is a cycle
        // of the DAG, which the critical path above refuses under any cost model; a deadlock that involves a unit
        // not yet launched (every SM held by a waiting unit) is one under both models in the in-order launch, since
        // a unit holds its SM until its last add. In the persistent launch a CTA's compute side goes on to its next
        // unit while its writers still wait, so k writers get past up to k waits of which a later unit of the same
        // CTA holds the rank: a schedule that works only that way would hang with fewer writers, so the sequential
        // model must run it too.
        if costs.decoupled() && machine.launch == crate::LaunchPolicy::Persistent {
            simulate(
                &schedule,
                &CostModel { dq_writers: 0, dq_deferred: false, kv_load_overlap: false, ..*costs },
                false,
            )?;
        }
        let simulation = simulate(&schedule, costs, false)?;
        schedule.validation = Arc::new(Validation { costs: *costs, critical_path: cp, simulation });
        Ok(schedule)
    }

    /// The critical path and simulation computed at validation, if `costs` are the ones it used.
    pub(crate) fn validated_under(&self, costs: &CostModel) -> Option<&Validation> {
        (self.validation.costs == *costs).then_some(&*self.validation)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn problem(&self) -> &Problem {
        &self.problem
    }
    pub fn mask(&self) -> &Mask {
        &self.mask
    }
    pub fn tile_mask(&self) -> &TileMask {
        &self.tile_mask
    }
    pub(crate) fn shared_tile_mask(&self) -> Arc<TileMask> {
        self.tile_mask.clone()
    }
    pub fn machine(&self) -> Machine {
        self.machine
    }
    pub fn order(&self) -> &Order {
        &self.order
    }
    /// Units in launch order.
    pub fn units(&self) -> &[Unit] {
        &self.order.units
    }
    /// Number of tasks (visited tiles) over all units.
    pub fn tasks(&self) -> u64 {
        self.order.tasks()
    }

    /// The accumulation order of dQ tile (bh, q): its contributing KV tiles, rank 0 first.
    pub fn rank_list(&self, bh: u32, q: u32) -> Vec<u32> {
        let mut list: Vec<(u32, u32)> = self
            .units()
            .iter()
            .filter(|u| u.bh == bh)
            .flat_map(|u| u.visits.iter().filter(|v| v.q as u32 == q).map(|v| (v.rank as u32, v.kv as u32)))
            .collect();
        list.sort_unstable();
        list.into_iter().map(|(_, kv)| kv).collect()
    }
}
