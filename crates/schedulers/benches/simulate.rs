//! Simulator throughput: simulated tasks per second on one core, for the reference problem (causal,
//! 131072 tokens, 32 heads, head dim 128, 132 SMs), and for a smaller one that criterion can repeat often.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dag_model::{Mask, Problem, ProblemSpec, TileMask, critical_path};
use schedulers::{CostModel, LaunchPolicy, Machine, ScheduleKind, simulate};

fn problem(seqlen: u32, heads: u32) -> Problem {
    Problem::new(ProblemSpec {
        batch: 1,
        heads,
        kv_heads: heads,
        seqlen_q: seqlen,
        seqlen_k: seqlen,
        head_dim: 128,
        block_m: 64,
        block_n: 128,
    })
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let costs = CostModel { handoff: 0.05, ..CostModel::default() };
    let machine = Machine { sms: 132, launch: LaunchPolicy::InOrder };
    for (label, seqlen, heads, samples) in [("causal-16k-16h", 16384, 16, 20), ("causal-128k-32h", 131072, 32, 10)] {
        let p = problem(seqlen, heads);
        let tm = Arc::new(TileMask::new(&p, &Mask::Causal).unwrap());
        let mut group = c.benchmark_group(label);
        group.sample_size(samples);
        for kind in [ScheduleKind::Naive, ScheduleKind::Descending, ScheduleKind::SymmetricShift] {
            let s = kind.build(p, Mask::Causal, tm.clone(), machine, &costs).unwrap();
            group.throughput(Throughput::Elements(s.tasks()));
            group.bench_function(format!("simulate/{}", kind.name()), |b| {
                b.iter(|| simulate(&s, &costs, false).unwrap())
            });
            group.bench_function(format!("critical-path/{}", kind.name()), |b| {
                b.iter(|| critical_path(s.problem(), s.order(), &costs).unwrap())
            });
            if label == "causal-16k-16h" {
                group.bench_function(format!("build+validate/{}", kind.name()), |b| {
                    b.iter(|| kind.build(p, Mask::Causal, tm.clone(), machine, &costs).unwrap())
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
