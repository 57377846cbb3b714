//! Fitting the cost model to measured per-task timestamps (a GPU trace).
//!
//! The caller parses the trace; this module only pairs stamps with the schedule that produced them and fits
//! robust statistics. It lives beside the simulator because the two must agree on what each cost means:
//!
//! - `compute`: from the end of the previous task's reduce to the arrival at the rank wait; split into full
//!   tiles and partially masked ones. A unit's first task is left out: it also waits for K and V to land.
//! - `reduce`: from the reduce start (the rank was seen) to the reduce end.
//! - A task's predecessor on its dQ tile *releases* the rank at its reduce end; for the last task of its unit,
//!   at the unit's end; for a task after which the unit moves to another KV tile, at the next task's compute
//!   start (`kernel_epilogues`: the kernel publishes those adds after the dK/dV epilogue). A task after such a
//!   move is left out of `compute` like a unit's first one.
//! - `handoff`: from the predecessor's release to the waiter's reduce start, sampled only where the waiter had
//!   arrived before the release (otherwise its start says nothing about the latency).
//! - `poll`: the waiter's reduce start minus its arrival, sampled where the rank became visible (release plus
//!   hand-off) after the waiter's compute started (so its early read missed) but before it arrived.
//! - `unit_start`: the SM's gap between the previous unit's end and this unit's start (CTA dispatch), plus
//!   this unit's start to its first compute start (loading K and V), plus how much longer the first task's
//!   compute took than a later task's of the same kind. Under the persistent launch (the schedule's
//!   `LaunchPolicy`) one CTA walks an SM's units and its producer starts the next unit's loads early, so the
//!   unit start stamp says nothing about the load: for a CTA's later units the sample is what the simulator
//!   charges there, from the previous unit's compute-side end (its unit end without decoupled writers) to this
//!   unit's first compute start; a CTA's first unit is sampled as in the in-order launch, and there is no
//!   dispatch gap. Under `kv_load_overlap` that load began during the previous unit's epilogue, which no stamp
//!   marks: a CTA's later units are not sampled (`dashc calibrate` traces the in-order launch, where every unit
//!   is a CTA's first).
//! - `unit_finish`: from the last task's reduce end to the unit's end (writing dK and dV, the last release).
//!
//! With these definitions a trace produced by the simulator itself is fitted back to the costs it was
//! simulated with (see the tests).

use serde::{Deserialize, Serialize};
use thiserror::Error;

use dag_model::Visit;

use crate::{CostModel, LaunchPolicy, MemoryRoof, Schedule};

/// The stamps of one task (one visit), in one time unit, on one clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TaskStamps {
    pub compute_start: f64,
    /// Arrival at the rank wait: the compute phase is done.
    pub arrival: f64,
    pub reduce_start: f64,
    pub reduce_end: f64,
}

/// The stamps of one unit (one CTA), in launch order, with the SM it ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitStamps {
    pub sm: u32,
    pub start: f64,
    pub end: f64,
    /// Decoupled writers (the sm90 main loop): when the compute side finished the unit (its dK/dV written),
    /// apart from the end, which is the later of that and the last release. Absent from the portable loop.
    #[serde(default)]
    pub compute_end: Option<f64>,
    pub tasks: Vec<TaskStamps>,
}

/// Why a trace cannot be paired with a schedule.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CalibrationError {
    #[error("the trace has {trace} units, the schedule {schedule}")]
    UnitCount { trace: usize, schedule: usize },
    #[error("unit {unit}: the trace has {trace} tasks, the schedule {schedule}")]
    TaskCount { unit: usize, trace: usize, schedule: usize },
    #[error("unit {unit}, task {task}: stamps are not in order ({what})")]
    Disorder { unit: usize, task: usize, what: &'static str },
    #[error("the traces hold no {what} sample: trace a schedule where it occurs")]
    NoSamples { what: &'static str },
}

/// A task of rank > 0 and its predecessor on the same dQ tile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Waiter {
    pub compute_start: f64,
    pub arrival: f64,
    pub reduce_start: f64,
    /// When the predecessor released the rank (see the module comment).
    pub pred_release: f64,
    pub pred_sm: u32,
    pub sm: u32,
}

/// Raw samples of every cost, pooled over one or more traced runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Samples {
    /// The traced kernel's dQ writers (`CostModel::dq_writers`): 0 for the portable main loop, whose threads
    /// compute, wait and add in sequence; k > 0 for the sm90 one. It decides what the stamps mean (see
    /// `add_run`) and is carried into the fitted costs.
    pub dq_writers: u32,
    /// Whether the traced kernel defers each dQ partial to the next task (`CostModel::dq_deferred`); carried into
    /// the fitted costs.
    pub dq_deferred: bool,
    /// Whether the traced kernel loads the next K/V beside the dK/dV epilogue (`CostModel::kv_load_overlap`);
    /// carried into the fitted costs. The stamps then cannot time the load where it overlaps (a move inside a
    /// unit, a persistent CTA's later units): those samples are left out (see `add_run`).
    pub kv_load_overlap: bool,
    pub compute_full: Vec<f64>,
    pub compute_partial: Vec<f64>,
    /// The compute of each unit's first task, and whether that tile is partial.
    pub first_compute: Vec<(f64, bool)>,
    pub reduce: Vec<f64>,
    pub waiters: Vec<Waiter>,
    /// A unit's start to its first compute start.
    pub unit_load: Vec<f64>,
    /// The previous unit's end on the same SM to this unit's start.
    pub dispatch_gap: Vec<f64>,
    pub unit_finish: Vec<f64>,
    /// Decoupled writers only: a unit's last compute start to its compute side's end.
    pub last_compute_to_end: Vec<(f64, bool)>,
    /// Decoupled writers only: a task's compute start to the next one's where the unit moves to another KV tile.
    pub kv_switch: Vec<(f64, bool)>,
    /// Waits that happened (reduce start minus arrival, where positive), for the report.
    pub waits: Vec<f64>,
}

/// Summary of one sample set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub n: usize,
    pub median: f64,
    /// Mean after cutting `TRIM` of the sample at each end.
    pub trimmed_mean: f64,
    pub p10: f64,
    pub p90: f64,
}

/// Two populations of hand-off latencies, when the data shows them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HandoffSplit {
    pub near: Stat,
    pub far: Stat,
    /// Share of samples in the far population.
    pub far_fraction: f64,
}

/// The fitted costs and the statistics behind them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub costs: CostModel,
    pub compute_full: Stat,
    pub compute_partial: Option<Stat>,
    pub reduce: Stat,
    pub handoff: Stat,
    /// Present when the hand-off latencies fall into two clearly separated groups.
    pub handoff_split: Option<HandoffSplit>,
    /// Absent when no task's early read missed a rank that was visible by its arrival.
    #[serde(default)]
    pub poll: Option<Stat>,
    /// How much longer a unit's first compute took than a later one of the same kind.
    #[serde(default)]
    pub first_compute_excess: Option<Stat>,
    pub unit_load: Stat,
    pub dispatch_gap: Option<Stat>,
    pub unit_finish: Stat,
}

/// The 10th-90th percentile span of a standard normal.
const NORMAL_P10_P90_SPAN: f64 = 2.563;

/// How many simulated runs a prediction under fitted variability averages: at 8 the mean's own spread (the
/// draws are independent between runs) stays well under the 2% that a schedule choice is judged by.
pub const VARIABILITY_RUNS: u32 = 8;

/// Fewer partial-tile samples than this and the partial cost is not fitted separately.
const MIN_PARTIAL: usize = 8;

impl Samples {
    /// Adds the samples of one traced run of `schedule`.
    pub fn add_run(&mut self, schedule: &Schedule, units: &[UnitStamps]) -> Result<(), CalibrationError> {
        let decoupled = self.dq_writers > 0;
        let k = self.dq_writers as usize;
        let su = schedule.units();
        if su.len() != units.len() {
            return Err(CalibrationError::UnitCount { trace: units.len(), schedule: su.len() });
        }
        let m = schedule.problem().m_tiles() as usize;
        // For every dQ tile, who holds each rank: (unit, task).
        let mut holders: Vec<Vec<(u32, u32)>> = vec![Vec::new(); schedule.problem().bh_count() as usize * m];
        for (ui, (u, t)) in su.iter().zip(units).enumerate() {
            if u.visits.len() != t.tasks.len() {
                return Err(CalibrationError::TaskCount { unit: ui, trace: t.tasks.len(), schedule: u.visits.len() });
            }
            for (k, (v, s)) in u.visits.iter().zip(&t.tasks).enumerate() {
                let ordered =
                    s.compute_start <= s.arrival && s.arrival <= s.reduce_start && s.reduce_start <= s.reduce_end;
                if !ordered {
                    return Err(CalibrationError::Disorder {
                        unit: ui,
                        task: k,
                        what: "compute start, arrival, reduce start, reduce end",
                    });
                }
                let tile = u.bh as usize * m + v.q as usize;
                let list = &mut holders[tile];
                if list.len() <= v.rank as usize {
                    list.resize(v.rank as usize + 1, (u32::MAX, 0));
                }
                list[v.rank as usize] = (ui as u32, k as u32);
            }
        }
        let persistent = schedule.machine().launch == LaunchPolicy::Persistent;
        // Per SM, the unit seen last there (in the order below), and the latest release of any add of the units
        // seen there so far.
        let mut last_on_sm: Vec<(u32, usize, f64)> = Vec::new();
        // Persistent launch: the latest release of the adds of every unit the same CTA ran before each unit
        // (minus infinity for its first). The CTA counts its staged partials across units, so a unit's first
        // stagings take buffers whose last partial may be its previous unit's or, after a unit of fewer than k
        // tasks, an earlier one's.
        let mut earlier_release: Vec<f64> = vec![f64::NEG_INFINITY; units.len()];
        let latest = |t: &UnitStamps| t.tasks.iter().map(|s| s.reduce_end).fold(f64::NEG_INFINITY, f64::max);
        // Units in order of their start, so that "the previous unit on this SM" is well defined. Under the
        // persistent launch the producer stamps a unit's start while the previous unit still computes: the order
        // is that of the first computes.
        let start_of = |t: &UnitStamps| match (persistent, t.tasks.first()) {
            (true, Some(first)) => first.compute_start,
            _ => t.start,
        };
        let mut by_start: Vec<usize> = (0..units.len()).collect();
        by_start.sort_by(|&a, &b| start_of(&units[a]).total_cmp(&start_of(&units[b])).then(a.cmp(&b)));
        for &ui in &by_start {
            let t = &units[ui];
            if t.tasks.is_empty() {
                continue;
            }
            let before = last_on_sm.iter_mut().find(|(sm, _, _)| *sm == t.sm);
            let load_from = match (persistent, before) {
                (true, Some(slot)) => {
                    // The CTA's compute side goes on from its previous unit's end: no dispatch, and its producer
                    // loaded K and V during that unit. Without the compute side's own end (a trace of the sm90
                    // loop always has it) the load cannot be told from the previous unit's last adds.
                    // Under `kv_load_overlap` the load began before that end, at a moment no stamp marks.
                    let prev = &units[slot.1];
                    earlier_release[ui] = slot.2;
                    slot.1 = ui;
                    slot.2 = slot.2.max(latest(t));
                    if self.kv_load_overlap {
                        None
                    } else if decoupled {
                        prev.compute_end
                    } else {
                        Some(prev.end)
                    }
                }
                (false, Some(slot)) => {
                    let gap = t.start - units[slot.1].end;
                    if gap >= 0.0 {
                        self.dispatch_gap.push(gap);
                    }
                    slot.1 = ui;
                    Some(t.start)
                }
                (_, None) => {
                    last_on_sm.push((t.sm, ui, latest(t)));
                    Some(t.start)
                }
            };
            if let Some(from) = load_from {
                self.unit_load.push(t.tasks[0].compute_start - from);
            }
            let last = t.tasks.len() - 1;
            if !decoupled {
                self.unit_finish.push(t.end - t.tasks[last].reduce_end);
            } else if let Some(compute_end) = t.compute_end
                && !staging_may_have_waited(
                    &schedule.units()[ui].visits,
                    &t.tasks,
                    k,
                    self.dq_deferred,
                    last,
                    earlier_release[ui],
                )
            {
                // From the last compute start to the compute side's end is that task's compute plus the dK/dV
                // epilogue, where no staging in that span can have waited for its buffer.
                let v = schedule.units()[ui].visits[last];
                self.last_compute_to_end.push((compute_end - t.tasks[last].compute_start, v.fraction() < 1.0));
            }
        }
        for (ui, (u, t)) in su.iter().zip(units).enumerate() {
            if decoupled {
                // The compute side's cadence: task i's compute takes it from its own start to the next task's,
                // unless a staging in that span may have waited for its buffer, which is excluded. The unit's
                // last task has no next start: its compute end is left to `unit_finish`. Under the persistent
                // launch the CTA's buffers may still hold its previous unit's partials.
                let previous_release = earlier_release[ui];
                for i in 0..t.tasks.len().saturating_sub(1) {
                    let (v, next) = (u.visits[i], u.visits[i + 1]);
                    if staging_may_have_waited(&u.visits, &t.tasks, k, self.dq_deferred, i, previous_release) {
                        continue;
                    }
                    let c = t.tasks[i + 1].compute_start - t.tasks[i].compute_start;
                    if next.kv != v.kv {
                        // A move to another KV tile: the compute, then the dK/dV epilogue and the next K/V load.
                        self.kv_switch.push((c, v.fraction() < 1.0));
                        continue;
                    }
                    if i == 0 || u.visits[i - 1].kv != v.kv {
                        self.first_compute.push((c, v.fraction() < 1.0));
                    } else {
                        if v.fraction() < 1.0 { &mut self.compute_partial } else { &mut self.compute_full }.push(c);
                    }
                }
            }
            for (k, (v, s)) in u.visits.iter().zip(&t.tasks).enumerate() {
                if decoupled {
                    // Compute samples are taken above.
                } else if k == 0 || u.visits[k - 1].kv != v.kv {
                    self.first_compute.push((s.arrival - s.compute_start, v.fraction() < 1.0));
                } else {
                    let c = s.arrival - t.tasks[k - 1].reduce_end;
                    if v.fraction() < 1.0 { &mut self.compute_partial } else { &mut self.compute_full }.push(c);
                }
                self.reduce.push(s.reduce_end - s.reduce_start);
                if s.reduce_start > s.arrival {
                    self.waits.push(s.reduce_start - s.arrival);
                }
                if v.rank > 0 {
                    let (pu, pk) = holders[u.bh as usize * m + v.q as usize][v.rank as usize - 1];
                    let pred = &units[pu as usize];
                    let pk = pk as usize;
                    let pred_visits = &su[pu as usize].visits;
                    // The sm90 main loop's writer releases right after the add; the portable loop publishes some
                    // releases behind its dK/dV epilogue.
                    let pred_release = if decoupled {
                        pred.tasks[pk].reduce_end
                    } else if pk + 1 == pred.tasks.len() {
                        pred.end
                    } else if pred_visits[pk + 1].kv != pred_visits[pk].kv {
                        pred.tasks[pk + 1].compute_start
                    } else {
                        pred.tasks[pk].reduce_end
                    };
                    self.waiters.push(Waiter {
                        compute_start: s.compute_start,
                        arrival: s.arrival,
                        reduce_start: s.reduce_start,
                        pred_release,
                        pred_sm: pred.sm,
                        sm: t.sm,
                    });
                }
            }
        }
        Ok(())
    }

    /// Hand-off latencies: (latency, predecessor's SM, waiter's SM) of every waiter that arrived before the
    /// release.
    pub fn handoffs(&self) -> Vec<(f64, u32, u32)> {
        self.waiters
            .iter()
            .filter(|w| w.arrival <= w.pred_release)
            .map(|w| (w.reduce_start - w.pred_release, w.pred_sm, w.sm))
            .collect()
    }

    /// The statistics of every phase that has samples, none required: what [`Samples::fit`] builds the costs
    /// from, and what a single trace can be read with against a fit (`dashc run --trace`), where a schedule
    /// without rank waits, say, has no hand-off to show.
    pub fn phases(&self) -> Phases {
        let some = |v: &[f64]| (!v.is_empty()).then(|| stat(v));
        let compute_full = some(&self.compute_full);
        let compute_partial = (self.compute_partial.len() >= MIN_PARTIAL).then(|| stat(&self.compute_partial));
        let latencies: Vec<f64> = self.handoffs().iter().map(|h| h.0).collect();
        let handoff = some(&latencies);
        // The writer warps poll the semaphore without pause: there is no early read to miss.
        let poll = handoff.filter(|_| self.dq_writers == 0).and_then(|handoff| {
            let h = handoff.trimmed_mean;
            let polls: Vec<f64> = self
                .waiters
                .iter()
                .filter(|w| w.pred_release + h > w.compute_start && w.pred_release + h <= w.arrival)
                .map(|w| w.reduce_start - w.arrival)
                .collect();
            some(&polls)
        });
        let unit_load = some(&self.unit_load);
        let dispatch_gap = some(&self.dispatch_gap);
        let (mut first_compute_excess, mut unit_finish) = (None, None);
        if let Some(full) = compute_full {
            let compute_of = |partial: bool| match (partial, compute_partial) {
                (true, Some(p)) => p.trimmed_mean,
                _ => full.trimmed_mean,
            };
            let excess: Vec<f64> = self.first_compute.iter().map(|&(c, partial)| c - compute_of(partial)).collect();
            first_compute_excess = some(&excess);
            let unit_start = unit_load.map(|load| unit_start(load, dispatch_gap, first_compute_excess));
            if self.dq_writers > 0 {
                // The dK/dV epilogue shows at the compute side's end of a unit (a stamp of its own), or else at a
                // move to another KV tile (epilogue plus the next load, which costs `unit_start`). Without either
                // it cannot be told apart from the last add, and the model takes 0.
                let after_last: Vec<f64> =
                    self.last_compute_to_end.iter().map(|&(c, partial)| (c - compute_of(partial)).max(0.0)).collect();
                // Under `kv_load_overlap` a move shows only the larger of the epilogue and the load.
                let at_switch: Vec<f64> = match unit_start.filter(|_| !self.kv_load_overlap) {
                    Some(start) => self
                        .kv_switch
                        .iter()
                        .map(|&(c, partial)| (c - compute_of(partial) - start.max(0.0)).max(0.0))
                        .collect(),
                    None => Vec::new(),
                };
                unit_finish = Some(if !after_last.is_empty() {
                    stat(&after_last)
                } else if !at_switch.is_empty() {
                    stat(&at_switch)
                } else {
                    Stat { n: 0, median: 0.0, trimmed_mean: 0.0, p10: 0.0, p90: 0.0 }
                });
            }
        }
        if self.dq_writers == 0 {
            unit_finish = some(&self.unit_finish);
        }
        Phases {
            compute_full,
            compute_partial,
            reduce: some(&self.reduce),
            handoff,
            handoff_split: split(&latencies),
            poll,
            first_compute_excess,
            unit_load,
            dispatch_gap,
            unit_finish,
        }
    }

    /// Fits the cost model. Every cost is a trimmed mean (`TRIM` cut at each end): the makespan is a sum of
    /// phases, so a median would under-count a skewed phase, while the cut drops the rare sample that a
    /// preemption or a clock glitch stretched. Medians and percentiles are reported beside it.
    pub fn fit(&self) -> Result<Fit, CalibrationError> {
        let p = self.phases();
        let need = |s: Option<Stat>, what: &'static str| s.ok_or(CalibrationError::NoSamples { what });
        let compute_full = need(p.compute_full, "full-tile compute")?;
        let reduce = need(p.reduce, "reduce")?;
        let handoff = need(p.handoff, "hand-off (a waiter that arrived before its predecessor's release)")?;
        let unit_load = need(p.unit_load, "unit start")?;
        let unit_finish = need(p.unit_finish, "unit finish")?;
        let unit_start = unit_start(unit_load, p.dispatch_gap, p.first_compute_excess);
        let costs = CostModel {
            compute: compute_full.trimmed_mean,
            compute_partial: p.compute_partial.map(|s| s.trimmed_mean),
            scale_by_fraction: false,
            reduce: reduce.trimmed_mean,
            handoff: handoff.trimmed_mean,
            poll: p.poll.map_or(0.0, |s| s.trimmed_mean.max(0.0)),
            kernel_epilogues: true,
            dq_writers: self.dq_writers,
            dq_deferred: self.dq_deferred,
            kv_load_overlap: self.kv_load_overlap,
            // A first task faster than later ones would make this negative; the model has no negative costs.
            unit_start: unit_start.max(0.0),
            unit_finish: unit_finish.trimmed_mean,
            dkv_reduce: reduce.trimmed_mean,
            // Fitted apart, on memory probes (`fit_memory_roof`), once these costs are known.
            memory_roof: None,
            // The sm90 loop's model draws its phases around their costs (`CostModel::variability`), each with the
            // standard deviation a normal of the same 10th-90th percentile span has.
            variability: (self.dq_writers > 0).then(|| {
                let sd = |s: Stat| (s.p90 - s.p10) / NORMAL_P10_P90_SPAN;
                crate::Variability {
                    compute: sd(compute_full),
                    reduce: sd(reduce),
                    handoff: sd(handoff),
                    unit_start: sd(unit_load),
                    unit_finish: sd(unit_finish),
                    runs: VARIABILITY_RUNS,
                }
            }),
        };
        Ok(Fit {
            costs,
            compute_full,
            compute_partial: p.compute_partial,
            reduce,
            handoff,
            handoff_split: p.handoff_split,
            poll: p.poll,
            first_compute_excess: p.first_compute_excess,
            unit_load,
            dispatch_gap: p.dispatch_gap,
            unit_finish,
        })
    }
}

impl Fit {
    /// The fit's statistics as [`Phases`], to set beside another trace's.
    pub fn phases(&self) -> Phases {
        Phases {
            compute_full: Some(self.compute_full),
            compute_partial: self.compute_partial,
            reduce: Some(self.reduce),
            handoff: Some(self.handoff),
            handoff_split: self.handoff_split,
            poll: self.poll,
            first_compute_excess: self.first_compute_excess,
            unit_load: Some(self.unit_load),
            dispatch_gap: self.dispatch_gap,
            unit_finish: Some(self.unit_finish),
        }
    }
}

/// The model's `unit_start` from its parts: the K/V load, the CTA dispatch gap and the first compute's excess.
fn unit_start(load: Stat, dispatch_gap: Option<Stat>, first_compute_excess: Option<Stat>) -> f64 {
    load.trimmed_mean
        + dispatch_gap.map_or(0.0, |s| s.trimmed_mean)
        + first_compute_excess.map_or(0.0, |s| s.trimmed_mean)
}

/// The statistics of each phase of one or more traces, where they have samples (see [`Samples::phases`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    pub compute_full: Option<Stat>,
    pub compute_partial: Option<Stat>,
    pub reduce: Option<Stat>,
    pub handoff: Option<Stat>,
    pub handoff_split: Option<HandoffSplit>,
    pub poll: Option<Stat>,
    pub first_compute_excess: Option<Stat>,
    pub unit_load: Option<Stat>,
    pub dispatch_gap: Option<Stat>,
    /// Under decoupled writers, present whenever `compute_full` is (0 with no sample to tell it by).
    pub unit_finish: Option<Stat>,
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s
}

fn quantile(s: &[f64], q: f64) -> f64 {
    // Linear interpolation between order statistics.
    let x = q * (s.len() - 1) as f64;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (x - lo as f64)
}

/// Share of a sample cut at each end before the mean is taken.
pub const TRIM: f64 = 0.02;

/// Median, trimmed mean (`TRIM`) and the 10th and 90th percentiles of a non-empty sample.
pub fn stat(v: &[f64]) -> Stat {
    let s = sorted(v);
    let cut = (s.len() as f64 * TRIM) as usize;
    let mid = &s[cut..s.len() - cut];
    Stat {
        n: s.len(),
        median: quantile(&s, 0.5),
        trimmed_mean: mid.iter().sum::<f64>() / mid.len() as f64,
        p10: quantile(&s, 0.1),
        p90: quantile(&s, 0.9),
    }
}

/// Splits latencies into two groups when they form two clearly separated populations: the best two-group
/// split (least within-group squared error) must explain at least 75% of the variance, each group must hold
/// at least 10% of the samples, and the far group's median must be at least 1.5 times the near one's.
pub fn split(v: &[f64]) -> Option<HandoffSplit> {
    if v.len() < 20 {
        return None;
    }
    let s = sorted(v);
    let n = s.len();
    let mut prefix = vec![0.0; n + 1];
    let mut prefix2 = vec![0.0; n + 1];
    for (i, x) in s.iter().enumerate() {
        prefix[i + 1] = prefix[i] + x;
        prefix2[i + 1] = prefix2[i] + x * x;
    }
    let sse = |a: usize, b: usize| {
        let (sum, sum2, k) = (prefix[b] - prefix[a], prefix2[b] - prefix2[a], (b - a) as f64);
        sum2 - sum * sum / k
    };
    let total = sse(0, n);
    if total <= 0.0 {
        return None;
    }
    let lo = n.div_ceil(10);
    let (k, within) = (lo..=n - lo).map(|k| (k, sse(0, k) + sse(k, n))).min_by(|a, b| a.1.total_cmp(&b.1))?;
    let (near, far) = (stat(&s[..k]), stat(&s[k..]));
    if within > 0.25 * total || far.median < 1.5 * near.median {
        return None;
    }
    Some(HandoffSplit { near, far, far_fraction: (n - k) as f64 / n as f64 })
}

/// Whether a staging of a dQ partial during compute `i` of a unit may have waited for its buffer (decoupled writers,
/// `k` buffers). Partials are staged in task order, so task j's buffer last held task j - k, and staging j waited only
/// if task j - k was released after compute i had started. Staged during compute i: task i (after it), or under the
/// deferred dQ task i - 1 (when of the same KV tile) and, where compute i ends its KV tile, task i too. Checking task
/// i - k under deferral, as without it, would drop nearly every steady-state visit (its partial is still being added
/// when compute i starts) and leave the fit the units' second visits alone. The check of a KV tile's own flush is
/// conservative (the flush follows compute i's end, which no stamp gives): it drops nearly every KV-switch sample,
/// which only the unit-finish fallback uses, never with sm90 traces (they stamp the consumers' end). A task j < k
/// stages into a buffer whose last partial was one of the CTA's earlier units' (persistent launch), released by
/// `previous_release` at the latest: the latest release of all of them (minus infinity for a CTA's first unit).
fn staging_may_have_waited(
    visits: &[Visit],
    tasks: &[TaskStamps],
    k: usize,
    deferred: bool,
    i: usize,
    previous_release: f64,
) -> bool {
    let waited = |j: usize| match j.checked_sub(k) {
        Some(holder) => tasks[holder].reduce_end > tasks[i].compute_start,
        None => previous_release > tasks[i].compute_start,
    };
    if !deferred {
        return waited(i);
    }
    let staged_during = i > 0 && visits[i - 1].kv == visits[i].kv;
    let ends_kv = i + 1 == visits.len() || visits[i + 1].kv != visits[i].kv;
    (staged_during && waited(i - 1)) || (ends_kv && waited(i))
}

/// Stamps that the simulator would produce for `schedule` under `costs`: the ground truth of the fitting tests
/// and a reference for reading real traces. Times start at 0; SM ids are the simulator's.
pub fn simulated_stamps(schedule: &Schedule, costs: &CostModel) -> Result<Vec<UnitStamps>, crate::ScheduleError> {
    let sim = crate::simulate(schedule, costs, true)?;
    let units = schedule.units();
    let mut out: Vec<UnitStamps> = units
        .iter()
        .enumerate()
        .map(|(i, u)| UnitStamps {
            sm: sim.unit_sm[i],
            start: sim.unit_start[i],
            end: sim.unit_end[i],
            compute_end: None,
            tasks: vec![
                TaskStamps { compute_start: 0.0, arrival: 0.0, reduce_start: 0.0, reduce_end: 0.0 };
                u.visits.len()
            ],
        })
        .collect();
    let mut next_task = vec![0usize; units.len()];
    let mut reduce_next = vec![0usize; units.len()];
    // With decoupled writers a unit's adds may finish out of task order: a reduce is matched by its tile.
    let task_of = |u: usize, kv: u32, q: u32| {
        units[u].visits.iter().position(|v| v.kv as u32 == kv && v.q as u32 == q).expect("a task of the unit")
    };
    for seg in &sim.timeline {
        let u = seg.unit as usize;
        match seg.kind {
            crate::SegmentKind::Compute => {
                let i = next_task[u];
                let t = &mut out[u].tasks[i];
                t.compute_start = seg.start;
                t.arrival = seg.end;
                // Until a reduce says otherwise, the task has not waited.
                t.reduce_start = seg.end;
                next_task[u] += 1;
                // Deferred dQ: the previous task of this KV tile is staged now, at this compute's end (or later,
                // after a wait), and its writer's arrival stamp says so.
                if costs.dq_deferred && i > 0 && units[u].visits[i - 1].kv == units[u].visits[i].kv {
                    let prev = &mut out[u].tasks[i - 1];
                    prev.arrival = prev.arrival.max(seg.end);
                    prev.reduce_start = prev.reduce_start.max(seg.end);
                }
            }
            // Decoupled writers: a wait of the compute side for its staging buffer; the writer gets the partial
            // (the kernel's arrival stamp) when it ends.
            crate::SegmentKind::Wait if costs.decoupled() => {
                let t = &mut out[u].tasks[task_of(u, seg.kv, seg.q)];
                t.arrival = seg.end;
                t.reduce_start = t.reduce_start.max(seg.end);
            }
            // Decoupled writers: the compute side's finish ends the unit's compute (later finishes move it on).
            crate::SegmentKind::Finish if costs.decoupled() => out[u].compute_end = Some(seg.end),
            crate::SegmentKind::Reduce => {
                let i = if costs.decoupled() { task_of(u, seg.kv, seg.q) } else { reduce_next[u] };
                let t = &mut out[u].tasks[i];
                t.reduce_start = seg.start;
                t.reduce_end = seg.end;
                reduce_next[u] += 1;
            }
            _ => {}
        }
    }
    Ok(out)
}

/// One memory probe: a shape outside the validation set where DRAM traffic may set the pace, traced like the
/// calibration shapes but not pooled into their phase costs (its memory-side phases stretch, which is what it
/// is there to show), and compared as a whole with the simulator under the fitted costs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryProbe {
    /// [`crate::dram_bytes`] of the probe's problem.
    pub bytes: f64,
    /// The simulator's prediction under the fitted costs, before any roof ([`crate::simulated_prediction`]).
    pub simulated: f64,
    /// The traced makespan.
    pub measured: f64,
}

/// How many candidate bandwidths [`fit_memory_roof`] tries: log-spaced, 0.4% apart over its range.
const ROOF_GRID: usize = 4000;

/// Fits [`MemoryRoof::bandwidth`] for a given exponent: the bandwidth whose blend matches the probes' measured
/// makespans best in the least-squares sense of log(predicted / measured), over a log-spaced grid from a memory
/// time of twice the slowest probe's measurement to a thousandth of the fastest's. `None` when the probes show no
/// roof: none is slower than its simulation, or no bandwidth on the grid fits them better than no roof at all
/// (the best sits at the grid's fast end).
pub fn fit_memory_roof(probes: &[MemoryProbe], exponent: f64) -> Option<MemoryRoof> {
    let usable: Vec<&MemoryProbe> = probes
        .iter()
        .filter(|p| p.bytes > 0.0 && p.simulated > 0.0 && p.measured > 0.0 && p.measured.is_finite())
        .collect();
    if !usable.iter().any(|p| p.measured > p.simulated) {
        return None;
    }
    let loss = |roof: Option<MemoryRoof>| -> f64 {
        usable
            .iter()
            .map(|p| {
                let predicted = roof.map_or(p.simulated, |r| r.blend(p.simulated, p.bytes));
                (predicted / p.measured).ln().powi(2)
            })
            .sum()
    };
    // Bandwidths from the one that makes the slowest-per-byte probe's memory time twice its measurement to the one
    // that makes the fastest's a thousandth of it.
    let slow = usable.iter().map(|p| p.bytes / (2.0 * p.measured)).fold(f64::INFINITY, f64::min);
    let fast = usable.iter().map(|p| p.bytes / (1e-3 * p.measured)).fold(0.0, f64::max);
    let (lo, hi) = (slow.ln(), fast.ln());
    let mut best: Option<(f64, f64)> = None;
    for i in 0..ROOF_GRID {
        let bandwidth = (lo + (hi - lo) * i as f64 / (ROOF_GRID - 1) as f64).exp();
        let l = loss(Some(MemoryRoof { bandwidth, exponent }));
        if best.is_none_or(|(_, b)| l < b) {
            best = Some((bandwidth, l));
        }
    }
    let (bandwidth, l) = best?;
    let at_fast_end = bandwidth >= fast * (1.0 - 1e-9);
    (l < loss(None) && !at_fast_end).then_some(MemoryRoof { bandwidth, exponent })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use dag_model::{Mask, Problem, ProblemSpec, TileMask};

    use super::*;
    use crate::{LaunchPolicy, Machine, ScheduleKind};

    fn schedule(kind: ScheduleKind, mask: Mask, costs: &CostModel) -> Schedule {
        schedule_launched(kind, mask, costs, LaunchPolicy::InOrder)
    }

    fn schedule_launched(kind: ScheduleKind, mask: Mask, costs: &CostModel, launch: LaunchPolicy) -> Schedule {
        let problem = Problem::new(ProblemSpec {
            batch: 2,
            heads: 3,
            kv_heads: 3,
            seqlen_q: 1024,
            seqlen_k: 1024,
            head_dim: 128,
            block_m: 64,
            block_n: 128,
        })
        .unwrap();
        let tiles = Arc::new(TileMask::new(&problem, &mask).unwrap());
        let machine = Machine { sms: 10, launch };
        kind.build(problem, mask, tiles, machine, costs).unwrap()
    }

    fn truth() -> CostModel {
        CostModel {
            compute: 5.0,
            compute_partial: Some(5.5),
            scale_by_fraction: false,
            reduce: 2.0,
            handoff: 0.4,
            poll: 0.3,
            kernel_epilogues: true,
            dq_writers: 0,
            dq_deferred: false,
            kv_load_overlap: false,
            unit_start: 1.5,
            unit_finish: 0.8,
            dkv_reduce: 2.0,
            variability: None,
            memory_roof: None,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// The costs of `truth()` under the sm90 model (`reduce` 3.0), as a fit of their simulated traces must give
    /// them back.
    fn assert_sm90_costs_given_back(got: &CostModel) {
        assert!(close(got.compute, 5.0), "{got:?}");
        assert!(close(got.compute_partial.unwrap(), 5.5), "{got:?}");
        assert!(close(got.reduce, 3.0), "{got:?}");
        assert!(close(got.handoff, 0.4), "{got:?}");
        assert!(close(got.unit_start, 1.5), "{got:?}");
        assert!(close(got.unit_finish, 0.8), "{got:?}");
    }

    /// The samples of simulated traces of the schedules every fitting test uses: waits (naive, descending on a
    /// causal mask), no waits, and units of two KV tiles (symmetric-shift: epilogues inside a unit).
    fn samples_of_simulated_runs(costs: &CostModel, dq_writers: u32) -> Samples {
        let mut samples = Samples {
            dq_writers,
            dq_deferred: costs.dq_deferred,
            kv_load_overlap: costs.kv_load_overlap,
            ..Samples::default()
        };
        for (kind, mask) in [
            (ScheduleKind::Naive, Mask::Causal),
            (ScheduleKind::Descending, Mask::Causal),
            (ScheduleKind::Naive, Mask::Full),
            (ScheduleKind::SymmetricShift, Mask::Causal),
        ] {
            let s = schedule(kind, mask, costs);
            if kind == ScheduleKind::SymmetricShift {
                assert!(s.units().iter().any(|u| u.kv_runs().count() == 2));
            }
            let stamps = simulated_stamps(&s, costs).unwrap();
            // The stamps keep the kernel's order: compute start, arrival at the rank wait, rank seen, released.
            for t in stamps.iter().flat_map(|u| &u.tasks) {
                assert!(t.compute_start <= t.arrival && t.arrival <= t.reduce_start && t.reduce_start <= t.reduce_end);
            }
            samples.add_run(&s, &stamps).unwrap();
        }
        samples
    }

    #[test]
    fn simulated_traces_give_back_their_costs() {
        let costs = truth();
        let fit = samples_of_simulated_runs(&costs, 0).fit().unwrap();
        let got = fit.costs;
        assert!(close(got.compute, 5.0), "{got:?}");
        assert!(close(got.compute_partial.unwrap(), 5.5), "{got:?}");
        assert!(close(got.reduce, 2.0), "{got:?}");
        assert!(close(got.handoff, 0.4), "{got:?}");
        assert!(close(got.poll, 0.3) && fit.poll.unwrap().n > 0, "{got:?}");
        assert!(got.kernel_epilogues);
        assert!(got.variability.is_none(), "the portable loop's model has constant phases");
        assert!(close(got.unit_start, 1.5), "{got:?}");
        assert!(close(got.unit_finish, 0.8), "{got:?}");
        assert!(fit.handoff.n > 0 && fit.handoff_split.is_none());
        // The fitted model predicts the traced run's makespan exactly.
        let s = schedule(ScheduleKind::Naive, Mask::Causal, &costs);
        let a = crate::simulate(&s, &costs, false).unwrap().makespan;
        let b = crate::simulate(&s, &got, false).unwrap().makespan;
        assert!(close(a, b));
    }

    #[test]
    fn simulated_traces_of_decoupled_writers_give_back_their_costs() {
        // The sm90 main loop's model: the adds run on two writers beside the compute. Where a writer waits for its
        // rank the compute side ends up waiting for the staging buffer, which the fit must see through.
        let costs = CostModel { dq_writers: 2, poll: 0.0, reduce: 3.0, ..truth() };
        let fit = samples_of_simulated_runs(&costs, 2).fit().unwrap();
        let got = fit.costs;
        assert_eq!(got.dq_writers, 2);
        assert!(close(got.compute, 5.0), "{got:?}");
        assert!(close(got.compute_partial.unwrap(), 5.5), "{got:?}");
        assert!(close(got.reduce, 3.0), "{got:?}");
        assert!(close(got.handoff, 0.4), "{got:?}");
        assert!(got.poll == 0.0 && fit.poll.is_none(), "{got:?}");
        assert!(close(got.unit_start, 1.5), "{got:?}");
        assert!(close(got.unit_finish, 0.8), "{got:?}");
        let s = schedule(ScheduleKind::Descending, Mask::Causal, &costs);
        let a = crate::simulate(&s, &costs, false).unwrap();
        assert!(a.total_wait() > 0.0, "the compute side never waited: the test would not exercise the exclusion");
        let b = crate::simulate(&s, &got, false).unwrap().makespan;
        assert!(close(a.makespan, b));
    }

    #[test]
    fn simulated_traces_of_deferred_dq_give_back_their_costs() {
        // The sm90 main loop as it is: each partial is staged during the next compute of its KV tile. The add
        // (3) outlasts the gap between its staging and the start of the compute after next, so the partial of
        // task i - k is still being added when compute i starts in every steady-state visit; only task i - 1 - k's
        // release decides whether compute i waited.
        let costs = CostModel { dq_writers: 2, dq_deferred: true, poll: 0.0, reduce: 3.0, ..truth() };
        let samples = samples_of_simulated_runs(&costs, 2);
        let fit = samples.fit().unwrap();
        let got = fit.costs;
        assert!(got.dq_deferred);
        // Each phase's spread is that of its samples (none here: the simulator's phases are constant).
        let v = got.variability.expect("the sm90 loop's model draws its phases");
        assert_eq!(v.runs, VARIABILITY_RUNS);
        let spread = |s: Stat| (s.p90 - s.p10) / NORMAL_P10_P90_SPAN;
        assert_eq!(
            [v.compute, v.reduce, v.handoff, v.unit_start, v.unit_finish],
            [
                spread(fit.compute_full),
                spread(fit.reduce),
                spread(fit.handoff),
                spread(fit.unit_load),
                spread(fit.unit_finish)
            ]
        );
        assert!([v.compute, v.reduce, v.handoff].iter().all(|x| x.abs() < 1e-9), "{v:?}");
        assert_sm90_costs_given_back(&got);
        // The fitted model predicts a traced run with waits exactly.
        let s = schedule(ScheduleKind::Naive, Mask::Causal, &costs);
        let a = crate::simulate(&s, &costs, false).unwrap();
        assert!(a.total_wait() > 0.0, "the compute side never waited: the test would not exercise the exclusion");
        assert!(close(a.makespan, crate::simulate(&s, &got, false).unwrap().makespan));
        // The steady state is sampled, not only each KV tile's second visit.
        let s = schedule(ScheduleKind::Naive, Mask::Full, &costs);
        let mut full = Samples { dq_writers: 2, dq_deferred: true, ..Samples::default() };
        full.add_run(&s, &simulated_stamps(&s, &costs).unwrap()).unwrap();
        let second_visits = s.units().iter().map(|u| u.kv_runs().count()).sum::<usize>();
        assert!(full.compute_full.len() > 4 * second_visits, "{} samples", full.compute_full.len());
    }

    #[test]
    fn simulated_persistent_traces_give_back_their_costs() {
        // The persistent launch of the sm90 loop: one CTA per SM walks its units; the compute side goes on to the
        // next unit at its dK/dV end while the writers still add the previous unit's partials, and the producer
        // stamps the next unit's start early (here 100 before the previous unit's compute-side end, more than a unit
        // lasts, so that the units cannot be ordered by their start stamps). The load is read from the compute
        // side's end, and stagings that may have waited for the previous unit's adds are left out.
        let costs = CostModel { dq_writers: 2, dq_deferred: true, poll: 0.0, reduce: 3.0, ..truth() };
        let mut samples = Samples { dq_writers: 2, dq_deferred: true, ..Samples::default() };
        let mut waited_across_units = false;
        for (kind, mask) in [
            (ScheduleKind::Naive, Mask::Causal),
            (ScheduleKind::Descending, Mask::Causal),
            (ScheduleKind::Shift, Mask::Full),
            (ScheduleKind::SymmetricShift, Mask::Causal),
        ] {
            let s = schedule_launched(kind, mask, &costs, LaunchPolicy::Persistent);
            assert!(s.units().len() > 10, "every SM runs more than one unit");
            let mut stamps = simulated_stamps(&s, &costs).unwrap();
            let sim = crate::simulate(&s, &costs, true).unwrap();
            // A staging wait in a unit's first two tasks is a wait for the previous unit's adds.
            waited_across_units |= sim.timeline.iter().any(|seg| {
                seg.kind == crate::SegmentKind::Wait && {
                    let u = &s.units()[seg.unit as usize];
                    u.visits.iter().position(|v| v.kv as u32 == seg.kv && v.q as u32 == seg.q).unwrap() < 2
                }
            });
            for u in stamps.iter_mut().filter(|u| u.start > 0.0) {
                u.start -= 100.0;
            }
            samples.add_run(&s, &stamps).unwrap();
        }
        assert!(waited_across_units, "no staging waited for a previous unit: the exclusion would go untested");
        let fit = samples.fit().unwrap();
        let got = fit.costs;
        assert!(fit.dispatch_gap.is_none(), "a persistent CTA is not dispatched again");
        assert_sm90_costs_given_back(&got);
        let s = schedule_launched(ScheduleKind::Naive, Mask::Causal, &costs, LaunchPolicy::Persistent);
        let a = crate::simulate(&s, &costs, false).unwrap().makespan;
        assert!(close(a, crate::simulate(&s, &got, false).unwrap().makespan));
    }

    #[test]
    fn simulated_traces_of_overlapped_kv_loads_give_back_their_costs() {
        // The sm90 loop at head dim 64: the next K/V load runs beside the dK/dV epilogue. In-order traces (what
        // `dashc calibrate` takes) time the load at each CTA's start and the epilogue at each unit's compute-side
        // end; the moves inside symmetric-shift's units show only the larger of the two (the load, 1.5, outlasts
        // the epilogue, 0.8) and take no part in the fit.
        let costs =
            CostModel { dq_writers: 2, dq_deferred: true, kv_load_overlap: true, poll: 0.0, reduce: 3.0, ..truth() };
        let fit = samples_of_simulated_runs(&costs, 2).fit().unwrap();
        assert!(fit.costs.kv_load_overlap);
        assert_sm90_costs_given_back(&fit.costs);
        let s = schedule(ScheduleKind::SymmetricShift, Mask::Causal, &costs);
        let a = crate::simulate(&s, &costs, false).unwrap().makespan;
        assert!(close(a, crate::simulate(&s, &fit.costs, false).unwrap().makespan));
        let serial = CostModel { kv_load_overlap: false, ..costs };
        assert!(crate::simulate(&s, &serial, false).unwrap().makespan > a, "the overlap shortens this schedule");
        // Persistent traces: a CTA's later units start their load before the previous unit's compute-side end,
        // which no stamp marks; only each CTA's first unit is sampled, and the costs still come back.
        let mut samples = Samples { dq_writers: 2, dq_deferred: true, kv_load_overlap: true, ..Samples::default() };
        for (kind, mask) in [(ScheduleKind::Naive, Mask::Causal), (ScheduleKind::Shift, Mask::Full)] {
            let s = schedule_launched(kind, mask, &costs, LaunchPolicy::Persistent);
            samples.add_run(&s, &simulated_stamps(&s, &costs).unwrap()).unwrap();
        }
        assert_eq!(samples.unit_load.len(), 2 * 10, "one load per CTA (10 SMs) and run");
        assert_sm90_costs_given_back(&samples.fit().unwrap().costs);
    }

    #[test]
    fn noise_is_trimmed() {
        let mut v = vec![1.0; 96];
        v.extend([1000.0; 2]);
        v.extend([0.0; 2]);
        let s = stat(&v);
        assert_eq!(s.median, 1.0);
        assert_eq!(s.trimmed_mean, 1.0);
    }

    #[test]
    fn two_populations_are_split_and_one_is_not() {
        let mut v: Vec<f64> = (0..300).map(|i| 0.2 + 0.001 * (i % 7) as f64).collect();
        v.extend((0..100).map(|i| 0.6 + 0.002 * (i % 5) as f64));
        let sp = split(&v).expect("two populations");
        assert!((sp.near.median - 0.203).abs() < 0.01 && (sp.far.median - 0.604).abs() < 0.01);
        assert!((sp.far_fraction - 0.25).abs() < 1e-9);
        let one: Vec<f64> = (0..400).map(|i| 0.2 + 0.0005 * i as f64).collect();
        assert!(split(&one).is_none());
    }

    #[test]
    fn mismatched_traces_are_refused() {
        let costs = truth();
        let s = schedule(ScheduleKind::Naive, Mask::Full, &costs);
        let mut stamps = simulated_stamps(&s, &costs).unwrap();
        stamps[3].tasks.pop();
        let err = Samples::default().add_run(&s, &stamps).unwrap_err();
        assert!(matches!(err, CalibrationError::TaskCount { unit: 3, .. }), "{err}");
        stamps.pop();
        assert!(matches!(Samples::default().add_run(&s, &stamps), Err(CalibrationError::UnitCount { .. })));
    }

    /// Probes whose measurements a known roof wrote: the fit gives its bandwidth back, within the grid's step.
    #[test]
    fn memory_roof_is_fitted_back_from_probes_it_wrote() {
        let truth = MemoryRoof { bandwidth: 2.9e6, exponent: 3.0 };
        let probes: Vec<MemoryProbe> = [(5.4e8, 150.0), (5.4e8, 250.0), (4.0e8, 120.0), (5.4e8, 380.0)]
            .into_iter()
            .map(|(bytes, simulated)| MemoryProbe { bytes, simulated, measured: truth.blend(simulated, bytes) })
            .collect();
        let got = fit_memory_roof(&probes, 3.0).expect("a roof");
        assert!((got.bandwidth / truth.bandwidth - 1.0).abs() < 0.005, "{got:?}");
        assert_eq!(got.exponent, 3.0);
    }

    /// Probes no slower than the simulation, or slower by too little for any roof to help, fit none.
    #[test]
    fn no_roof_where_the_probes_show_none() {
        let at = |simulated: f64, measured: f64| MemoryProbe { bytes: 5.4e8, simulated, measured };
        assert_eq!(fit_memory_roof(&[at(200.0, 200.0), at(300.0, 290.0)], 3.0), None);
        assert_eq!(fit_memory_roof(&[], 3.0), None);
        // One probe 1% slow, three 5% fast: any roof only adds to the three's error.
        let mixed = [at(200.0, 202.0), at(200.0, 190.0), at(300.0, 285.0), at(250.0, 238.0)];
        assert_eq!(fit_memory_roof(&mixed, 3.0), None);
    }

    /// The blend: the larger term far from the roof, their e-norm near it; `check` refuses a bad roof.
    #[test]
    fn memory_roof_blends_and_is_checked() {
        let roof = MemoryRoof { bandwidth: 1.0, exponent: 3.0 };
        // Memory at half the simulation adds an eighth under the cube root: 4% more, not the larger term alone.
        assert!(close(roof.blend(1000.0, 500.0), 1000.0 * 1.125f64.cbrt()));
        assert!(close(roof.blend(3.0, 4.0), (27.0f64 + 64.0).cbrt()));
        // Far from the roof it is the simulation; and it keeps the simulation's order, so no ranking changes.
        assert!((roof.blend(1e6, 1.0) - 1e6).abs() < 1e-6);
        let blended: Vec<f64> = [100.0, 200.0, 300.0, 400.0].iter().map(|&t| roof.blend(t, 250.0)).collect();
        assert!(blended.windows(2).all(|w| w[0] < w[1]), "{blended:?}");
        assert!(close(roof.blend(0.0, 5.0), 5.0));
        assert_eq!(roof.blend(0.0, 0.0), 0.0);
        for bad in [MemoryRoof { bandwidth: 0.0, exponent: 3.0 }, MemoryRoof { bandwidth: 1.0, exponent: 0.5 }] {
            let costs = CostModel { memory_roof: Some(bad), ..CostModel::default() };
            assert!(matches!(costs.check(), Err(crate::ScheduleError::BadMemoryRoof { .. })), "{bad:?}");
        }
    }

    /// The traffic floor of the paper's causal hd128 512 shape, by hand: per Q row 2 x 2 x 128 (Q, dO) + 2 x 4
    /// (LSE, D) + 4 x 128 (dQ accumulator) = 1032 bytes, per KV row 2 x 2 x 128 (K, V) + 2 x 2 x 128 (dK, dV) =
    /// 1024, over 32 x 16 x 512 rows each; with GQA the dK/dV accumulators are FP32.
    #[test]
    fn dram_bytes_counts_each_tensor_once() {
        let spec = |kv_heads| ProblemSpec {
            batch: 32,
            heads: 16,
            kv_heads,
            seqlen_q: 512,
            seqlen_k: 512,
            head_dim: 128,
            block_m: 64,
            block_n: 128,
        };
        let rows = 32.0 * 16.0 * 512.0;
        assert_eq!(crate::dram_bytes(&Problem::new(spec(16)).unwrap()), rows * 1032.0 + rows * 1024.0);
        let kv_rows = 32.0 * 4.0 * 512.0;
        assert_eq!(crate::dram_bytes(&Problem::new(spec(4)).unwrap()), rows * 1032.0 + kv_rows * (512.0 + 1024.0));
    }

    /// `predicted_makespan` is the simulator's prediction blended with the roof; without a roof, that prediction.
    #[test]
    fn prediction_blends_the_simulation_with_the_roof() {
        let plain = CostModel { dq_writers: 2, dq_deferred: true, ..truth() };
        let s = schedule_launched(ScheduleKind::SymmetricShift, Mask::Causal, &plain, LaunchPolicy::Persistent);
        let simulated = crate::simulated_prediction(&s, &plain).unwrap();
        assert_eq!(crate::predicted_makespan(&s, &plain).unwrap(), simulated);
        let bytes = crate::dram_bytes(s.problem());
        // A roof whose memory time equals the simulation: the prediction is 2^(1/3) of it.
        let roof = MemoryRoof { bandwidth: bytes / simulated, exponent: 3.0 };
        let roofed = CostModel { memory_roof: Some(roof), ..plain };
        assert!(close(crate::predicted_makespan(&s, &roofed).unwrap(), simulated * 2f64.cbrt()));
        // The simulation itself, its timeline and bounds know no roof.
        assert_eq!(
            crate::simulate(&s, &roofed, false).unwrap().makespan,
            crate::simulate(&s, &plain, false).unwrap().makespan
        );
    }
}
