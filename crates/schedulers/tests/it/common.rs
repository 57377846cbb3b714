use std::sync::Arc;

use dag_model::{Mask, Problem, ProblemSpec, TileMask};
use schedulers::{CostModel, LaunchPolicy, Machine, Schedule, ScheduleError, ScheduleKind};

/// The paper's idealized setting: N square tiles per head, m heads, P = N SMs, in-order launch.
pub fn ideal(n: u32, heads: u32) -> (Problem, Machine) {
    let problem = Problem::new(ProblemSpec {
        batch: 1,
        heads,
        kv_heads: heads,
        seqlen_q: n * 64,
        seqlen_k: n * 64,
        head_dim: 64,
        block_m: 64,
        block_n: 64,
    })
    .unwrap();
    (problem, Machine { sms: n, launch: LaunchPolicy::InOrder })
}

pub fn build(
    kind: ScheduleKind,
    problem: Problem,
    mask: Mask,
    machine: Machine,
    costs: &CostModel,
) -> Result<Schedule, ScheduleError> {
    let tm = Arc::new(TileMask::new(&problem, &mask)?);
    kind.build(problem, mask, tm, machine, costs)
}

pub fn problem(batch: u32, heads: u32, kv_heads: u32, sq: u32, sk: u32, bm: u32, bn: u32) -> Problem {
    Problem::new(ProblemSpec {
        batch,
        heads,
        kv_heads,
        seqlen_q: sq,
        seqlen_k: sk,
        head_dim: 128,
        block_m: bm,
        block_n: bn,
    })
    .unwrap()
}
