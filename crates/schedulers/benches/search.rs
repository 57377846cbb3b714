//! Search speed on the reference problem (causal, 16384 tokens, 16 heads, head dim 128, 64 x 128
//! tiles, 132 SMs): the seeding phase alone (one round), and seeding plus 31 rounds of local search. The
//! difference over 248 is the cost of one candidate move (a simulation resumed from a snapshot).
//!
//! The target, "within 1% of the final answer in under 10 s on 2 cores", is met by the seeds
//! alone; see docs/search.md for the measured convergence.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use dag_model::{Mask, Problem, ProblemSpec, TileMask};
use schedulers::{CostModel, LaunchPolicy, Machine, SearchConfig, search};

fn bench(c: &mut Criterion) {
    let problem = Problem::new(ProblemSpec {
        batch: 1,
        heads: 16,
        kv_heads: 16,
        seqlen_q: 16384,
        seqlen_k: 16384,
        head_dim: 128,
        block_m: 64,
        block_n: 128,
    })
    .unwrap();
    let tm = Arc::new(TileMask::new(&problem, &Mask::Causal).unwrap());
    let machine = Machine { sms: 132, launch: LaunchPolicy::InOrder };
    let costs = CostModel::default();
    let mut group = c.benchmark_group("search-causal-16k-16h");
    group.sample_size(10);
    for iterations in [8u64, 256] {
        let config = SearchConfig { iterations: Some(iterations), ..SearchConfig::default() };
        group.bench_function(format!("{iterations}-moves"), |b| {
            b.iter(|| search(problem, Mask::Causal, tm.clone(), machine, &costs, &config, &|_| false).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
