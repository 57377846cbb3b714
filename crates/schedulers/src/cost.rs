use dag_model::Weights;
use serde::{Deserialize, Serialize};

/// The largest cost a model accepts, in its unit (microseconds calibrated, tile computes idealized): far above
/// any real one, and small enough that a makespan summed over tens of millions of tasks stays finite and exact to
/// well below one unit.
pub const MAX_COST: f64 = 1e9;

/// The most dQ writers per SM a model accepts: the sm90 main loop has two, and the simulator's work grows with
/// the count.
pub const MAX_DQ_WRITERS: u32 = 64;

/// Costs of the phases of a task and of the edges between them, in one consistent time unit.
///
/// Uncalibrated, the unit is "the compute of one full tile" (compute = 1) and the numbers are the paper's
/// idealized ones. A calibrated cost file (later) fills the same fields in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Compute phase of a fully unmasked tile (recompute S and P, four of the five products).
    pub compute: f64,
    /// Compute phase of a partially masked tile (diagonal, partial last tile); `None` means `compute`.
    pub compute_partial: Option<f64>,
    /// Scale each tile's compute cost by its unmasked fraction.
    pub scale_by_fraction: bool,
    /// Adding one dQ partial into the FP32 accumulator.
    pub reduce: f64,
    /// Latency of one semaphore hand-off: from a rank's release to the next rank's reduce start.
    pub handoff: f64,
    /// A read of the semaphore that finds the rank already released: paid by a task whose rank was not yet
    /// visible when its compute started (the kernel reads the semaphore early, at the top of the visit, and
    /// again after its products only when that early read missed). 0 in the idealized model.
    #[serde(default)]
    pub poll: f64,
    /// Model the generated kernel's K/V epilogues (MHA only). Where a unit's visits move to another KV tile,
    /// it writes dK/dV and loads the next K/V (`unit_finish` + `unit_start`) before the next compute; the
    /// dQ release of the visit before such a move, and of the unit's last visit, waits for that epilogue
    /// (the kernel publishes it behind the same fence). Off in the idealized model.
    #[serde(default)]
    pub kernel_epilogues: bool,
    /// The dQ path of the sm90 main loop: 0 (the portable loop, and the idealized model) means the threads that
    /// compute a task also wait for its rank and add it, in sequence. k > 0 means k writers per SM, one per
    /// staging buffer: task t's partial goes to writer t mod k, which waits for the rank, adds (`reduce`) and
    /// releases, while the compute goes on with the next tasks; the compute stages task t only once its writer
    /// has released task t - k. The simulator, the bounds and the fit follow (`simulate`, `Bounds`,
    /// `calibrate`).
    #[serde(default)]
    pub dq_writers: u32,
    /// With `dq_writers` > 0: a task's partial is staged with the next task of its KV tile (after that task's
    /// compute), and the KV tile's last one right after its own compute, before the K/V epilogue: the sm90 main
    /// loop's deferred dQ (docs/hopper.md). Off: each partial is staged after its own compute.
    #[serde(default)]
    pub dq_deferred: bool,
    /// With `dq_writers` > 0: the next K/V load runs beside the dK/dV epilogue instead of
    /// after it. The sm90 main loop does so where dK/dV leave through a free dS buffer (head dim 64 at 128-row
    /// tiles, `kDkvThroughDs`): K/V go back to the producer as soon as the products are done with them. A move
    /// to another KV tile of the same CTA (inside a unit, or to the CTA's next unit under the persistent launch)
    /// then costs the compute side max(`unit_finish`, `unit_start`), not their sum; a CTA's first load still
    /// follows its dispatch. Off elsewhere.
    #[serde(default)]
    pub kv_load_overlap: bool,
    /// Per-unit work before the first task (loading K and V).
    pub unit_start: f64,
    /// Per-unit work after the last task (writing dK and dV).
    pub unit_finish: f64,
    /// Adding one dK/dV partial into the accumulator of a KV head (GQA only).
    pub dkv_reduce: f64,
    /// Decoupled dQ writers only: how much each phase varies from one occurrence to the next, as calibrated.
    /// The simulator then draws every phase's duration around its cost and predicts the mean makespan of a few
    /// such runs: a chain of adds with little slack waits more, and the last SM ends later, than constant costs
    /// say. `None`: every phase takes its cost (the idealized model, the portable loop, older costs files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variability: Option<Variability>,
    /// Calibrated costs only: the time the kernel's DRAM traffic needs, blended with the simulated makespan into
    /// the prediction ([`MemoryRoof`]). `None`: the prediction is the simulated makespan (the idealized model,
    /// older costs files, a calibration without memory probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_roof: Option<MemoryRoof>,
}

/// Where the memory system, not the schedule, sets the pace: short rows, where a unit has few visits and every
/// byte of Q, dO, K, V, dK, dV and the dQ accumulator crosses DRAM in a few hundred microseconds.
///
/// The simulator prices each phase at what it costs at the calibration shapes (sequence lengths 2048 and 8192),
/// where DRAM is far from busy. At sequence length 512 the same bytes must move in 30–45% of the time they take at
/// 2048, and the memory-side phases stretch (on an H100
/// the dQ add 52–82% longer, bench/NOTES.md run 283). The model does not follow that phase by phase; it takes
/// the prediction as a smooth maximum of the simulated makespan `T` and the memory time `M` = [`dram_bytes`] /
/// `bandwidth`: `(T^e + M^e)^(1/e)`, `e` = `exponent`. Far from the roof (`M` ≪ `T`) the prediction is `T`; at
/// it, the two overlap imperfectly; past it, `M` rules.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryRoof {
    /// Effective DRAM bandwidth for this kernel's traffic, in bytes per unit of the costs' time (bytes/µs
    /// calibrated): fitted on memory probes, shapes outside the validation set (`calibrate::fit_memory_roof`).
    pub bandwidth: f64,
    /// The blend's exponent: the larger, the sharper the corner between the two regimes.
    pub exponent: f64,
}

/// The blend's exponent a calibration uses ([`MemoryRoof::exponent`]). Chosen, not fitted: on the short rows of
/// one H100's validation (runs 276–279), with the roof's effective bandwidth at 88% of the card's peak, it put the
/// plain symmetric shift's causal rows at sequence lengths 512 and 1024 within 1% of the measurement (the other
/// schedules within 7.1%), where 2 needs more than the peak bandwidth; runs 287–293 tested it on fresh data (bench/NOTES.md).
pub const MEMORY_ROOF_EXPONENT: f64 = 3.0;

/// The bytes the backward main loop moves to or from DRAM at least once: Q, dO, K and V read (BF16), LSE and D
/// read (FP32), the FP32 dQ accumulator written, dK and dV written (BF16). Under GQA the count assumes FP32 dK/dV
/// accumulators, as the simulator's `dkv_reduce` does; no generated kernel runs GQA yet, so no measurement backs
/// that case. Re-reads served by L2 are not counted: the same for every schedule, this is a floor on the traffic,
/// not its total.
pub fn dram_bytes(problem: &dag_model::Problem) -> f64 {
    let (b, d) = (problem.batch() as f64, problem.head_dim() as f64);
    let q_rows = b * problem.heads() as f64 * problem.seqlen_q() as f64;
    let kv_rows = b * problem.kv_heads() as f64 * problem.seqlen_k() as f64;
    let dkv_bytes = if problem.group() > 1 { 4.0 } else { 2.0 };
    // Q, dO: 2 x BF16; LSE, D: 2 x FP32 per row; dQ accumulator: FP32.
    let per_q_row = 2.0 * 2.0 * d + 2.0 * 4.0 + 4.0 * d;
    // K, V read as BF16; dK, dV written.
    let per_kv_row = 2.0 * 2.0 * d + 2.0 * dkv_bytes * d;
    q_rows * per_q_row + kv_rows * per_kv_row
}

impl MemoryRoof {
    /// The time `bytes` take at the roof's bandwidth.
    pub fn memory_time(&self, bytes: f64) -> f64 {
        bytes / self.bandwidth
    }

    /// The prediction for a simulated makespan `simulated` of a problem that moves `bytes`.
    pub fn blend(&self, simulated: f64, bytes: f64) -> f64 {
        let memory = self.memory_time(bytes);
        let (hi, lo) = if simulated >= memory { (simulated, memory) } else { (memory, simulated) };
        if hi <= 0.0 {
            return 0.0;
        }
        // Scaled by the larger term, so that no power overflows.
        hi * (1.0 + (lo / hi).powf(self.exponent)).powf(1.0 / self.exponent)
    }
}

/// The standard deviation of each phase's duration (in the costs' unit) and how many simulated runs the
/// prediction averages. A phase of cost c and deviation s lasts c + s·z, z a draw of mean 0 and variance 1 cut at
/// ±2.5 (never below 0), keyed by the run, the unit, the visit and the phase: the same inputs give the same
/// prediction, whatever the order in which the simulator meets them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variability {
    pub compute: f64,
    pub reduce: f64,
    pub handoff: f64,
    pub unit_start: f64,
    pub unit_finish: f64,
    pub runs: u32,
}

/// The most simulated runs a prediction under [`Variability`] may average.
pub const MAX_VARIABILITY_RUNS: u32 = 64;

impl CostModel {
    /// The paper's idealized costs: constant compute `c`, reduce `r`, free edges and no overheads.
    pub fn ideal(c: f64, r: f64) -> Self {
        CostModel {
            compute: c,
            compute_partial: None,
            scale_by_fraction: false,
            reduce: r,
            handoff: 0.0,
            poll: 0.0,
            kernel_epilogues: false,
            dq_writers: 0,
            dq_deferred: false,
            kv_load_overlap: false,
            unit_start: 0.0,
            unit_finish: 0.0,
            dkv_reduce: r,
            variability: None,
            memory_roof: None,
        }
    }

    /// A prediction of `problem` from the simulator's (`simulated`): blended with the memory roof where the costs
    /// have one ([`MemoryRoof::blend`]), else `simulated` itself.
    pub fn with_memory_roof(&self, simulated: f64, problem: &dag_model::Problem) -> f64 {
        match self.memory_roof {
            Some(roof) => roof.blend(simulated, dram_bytes(problem)),
            None => simulated,
        }
    }

    /// Whether the dQ adds run beside the compute (`dq_writers` > 0), not after each task's compute.
    pub fn decoupled(&self) -> bool {
        self.dq_writers > 0
    }

    /// What a move to another KV tile of the same CTA costs the compute side: the dK/dV epilogue and the next
    /// K/V load, one after the other, or side by side under `kv_load_overlap`.
    pub fn kv_move(&self) -> f64 {
        if self.kv_load_overlap { self.unit_finish.max(self.unit_start) } else { self.unit_finish + self.unit_start }
    }

    /// The least a unit's own load and dK/dV epilogue add to its SM's busy time: `unit_start` + `unit_finish`,
    /// or under `kv_load_overlap` with the persistent launch, where a CTA's next load runs beside its previous
    /// unit's epilogue, the larger of the two.
    pub fn unit_overhead(&self, persistent: bool) -> f64 {
        if persistent { self.kv_move() } else { self.unit_start + self.unit_finish }
    }

    /// Checks that every cost is finite, not negative and at most [`MAX_COST`], and that there are at most
    /// [`MAX_DQ_WRITERS`] dQ writers.
    pub fn check(&self) -> Result<(), crate::ScheduleError> {
        if self.dq_writers > MAX_DQ_WRITERS {
            return Err(crate::ScheduleError::TooManyDqWriters { got: self.dq_writers, max: MAX_DQ_WRITERS });
        }
        if self.dq_deferred && self.dq_writers == 0 {
            return Err(crate::ScheduleError::DeferredWithoutWriters);
        }
        if self.kv_load_overlap && self.dq_writers == 0 {
            return Err(crate::ScheduleError::KvLoadOverlapWithoutWriters);
        }
        if let Some(v) = self.variability
            && !(1..=MAX_VARIABILITY_RUNS).contains(&v.runs)
        {
            return Err(crate::ScheduleError::BadCost { name: "variability-runs", value: v.runs as f64 });
        }
        if let Some(roof) = self.memory_roof {
            if !(roof.bandwidth.is_finite() && roof.bandwidth > 0.0) {
                return Err(crate::ScheduleError::BadMemoryRoof {
                    name: "bandwidth",
                    range: "a finite number above 0",
                    value: roof.bandwidth,
                });
            }
            if !(roof.exponent.is_finite() && (1.0..=64.0).contains(&roof.exponent)) {
                return Err(crate::ScheduleError::BadMemoryRoof {
                    name: "exponent",
                    range: "from 1 to 64",
                    value: roof.exponent,
                });
            }
        }
        let fields = [
            ("compute", Some(self.compute)),
            ("compute-partial", self.compute_partial),
            ("reduce", Some(self.reduce)),
            ("handoff", Some(self.handoff)),
            ("poll", Some(self.poll)),
            ("unit-start", Some(self.unit_start)),
            ("unit-finish", Some(self.unit_finish)),
            ("dkv-reduce", Some(self.dkv_reduce)),
            ("variability-compute", self.variability.map(|v| v.compute)),
            ("variability-reduce", self.variability.map(|v| v.reduce)),
            ("variability-handoff", self.variability.map(|v| v.handoff)),
            ("variability-unit-start", self.variability.map(|v| v.unit_start)),
            ("variability-unit-finish", self.variability.map(|v| v.unit_finish)),
        ];
        for (name, value) in fields {
            if let Some(v) = value
                && (!v.is_finite() || !(0.0..=MAX_COST).contains(&v))
            {
                return Err(crate::ScheduleError::BadCost { name, value: v });
            }
        }
        Ok(())
    }
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel::ideal(1.0, 0.25)
    }
}

impl Weights for CostModel {
    #[inline]
    fn compute(&self, fraction: f32) -> f64 {
        let base = match self.compute_partial {
            Some(partial) if fraction < 1.0 => partial,
            _ => self.compute,
        };
        if self.scale_by_fraction { base * fraction as f64 } else { base }
    }
    #[inline]
    fn reduce(&self) -> f64 {
        self.reduce
    }
    #[inline]
    fn handoff(&self) -> f64 {
        self.handoff
    }
    #[inline]
    fn unit_start(&self) -> f64 {
        self.unit_start
    }
    #[inline]
    fn unit_finish(&self) -> f64 {
        self.unit_finish
    }
    #[inline]
    fn dkv_reduce(&self) -> f64 {
        self.dkv_reduce
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_takes_costs_from_zero_to_the_maximum() {
        let mut c = CostModel { unit_start: MAX_COST, dq_writers: MAX_DQ_WRITERS, ..CostModel::default() };
        assert_eq!(c.check(), Ok(()));
        for bad in [-1.0, MAX_COST * 1.5, f64::INFINITY, f64::NAN] {
            c.unit_start = bad;
            assert!(matches!(c.check(), Err(crate::ScheduleError::BadCost { name: "unit-start", .. })), "{bad}");
        }
        c.unit_start = 0.0;
        c.dq_writers = MAX_DQ_WRITERS + 1;
        assert_eq!(
            c.check(),
            Err(crate::ScheduleError::TooManyDqWriters { got: MAX_DQ_WRITERS + 1, max: MAX_DQ_WRITERS })
        );
    }
}
