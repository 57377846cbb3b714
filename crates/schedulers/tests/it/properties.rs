//! Properties of the theory over random problems: every built-in schedule validates, makespan never beats a
//! lower bound, shift schedules never wait in the idealized setting, and the three evaluations agree.

use std::sync::Arc;

use dag_model::{Mask, TaskGraph, TileMask, critical_path};
use proptest::prelude::*;
use schedulers::{Bounds, CostModel, LaunchPolicy, Machine, ScheduleKind, simulate};

use crate::common::{build, ideal, problem};

fn mask_strategy() -> impl Strategy<Value = Mask> {
    prop_oneof![
        Just(Mask::Full),
        Just(Mask::Causal),
        (0u32..300, 0u32..100).prop_map(|(l, r)| Mask::SlidingWindow { left: Some(l), right: Some(r) }),
        any::<bool>().prop_map(|causal| Mask::Document { lens: vec![], causal }),
    ]
}

fn costs_strategy() -> impl Strategy<Value = CostModel> {
    (0.5f64..2.0, 0.0f64..0.8, 0.0f64..0.3, 0.0f64..0.5, 0.0f64..0.5, any::<bool>(), 0.0f64..0.2, any::<bool>())
        .prop_map(|(c, r, h, s, f, scale, poll, late)| CostModel {
            compute: c,
            compute_partial: Some(c * 0.8),
            scale_by_fraction: scale,
            reduce: r,
            handoff: h,
            poll,
            kernel_epilogues: late,
            unit_start: s,
            unit_finish: f,
            dkv_reduce: r,
        })
}

/// A small real-machine problem: non-square tiles, unequal sequence lengths, GQA, several waves.
fn case() -> impl Strategy<Value = (dag_model::Problem, Mask, Machine, CostModel)> {
    (
        1u32..3,
        prop_oneof![Just((4u32, 4u32)), Just((4, 2)), Just((2, 1)), Just((3, 3))],
        1u32..9,
        0u32..3,
        prop_oneof![Just((64u32, 64u32)), Just((64, 128)), Just((128, 64))],
        mask_strategy(),
        1u32..40,
        any::<bool>(),
        costs_strategy(),
    )
        .prop_map(|(batch, (heads, kv_heads), q_tiles, extra_k, (bm, bn), mask, sms, persistent, costs)| {
            let sq = q_tiles * bm - (q_tiles % 3) * 7;
            let sk = if extra_k == 0 { sq } else { sq + extra_k * 50 };
            let p = problem(batch, heads, kv_heads, sq, sk, bm, bn);
            let mask = match mask {
                Mask::Document { causal, .. } if sq == sk => {
                    Mask::Document { lens: vec![sq / 3, sq - sq / 3 - 1, 1], causal }
                }
                Mask::Document { .. } => Mask::Causal,
                m => m,
            };
            let launch = if persistent { LaunchPolicy::Persistent } else { LaunchPolicy::InOrder };
            (p, mask, Machine { sms, launch }, costs)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn makespan_respects_every_lower_bound((problem, mask, machine, costs) in case()) {
        for kind in ScheduleKind::ALL {
            if kind.check_applicable(&problem, &mask).is_err() {
                continue;
            }
            let s = build(kind, problem, mask.clone(), machine, &costs).expect("built-in schedules validate");
            let sim = simulate(&s, &costs, false).unwrap();
            let cp = critical_path(&problem, s.order(), &costs).unwrap().length;
            let b = Bounds::of(&s, &costs, cp);
            let eps = 1e-9 * b.best().max(1.0);
            prop_assert!(sim.makespan + eps >= b.work, "{kind:?}: {} < work {}", sim.makespan, b.work);
            prop_assert!(sim.makespan + eps >= b.longest_unit);
            prop_assert!(sim.makespan + eps >= b.critical_path);
            // Time is conserved on every SM: busy + wait never exceeds the makespan, idle fills the rest.
            for st in &sim.sms {
                prop_assert!(st.busy + st.wait <= sim.makespan + eps, "{kind:?}: {st:?} over {}", sim.makespan);
                prop_assert!((st.busy + st.wait + st.idle - sim.makespan).abs() <= eps);
            }
        }
    }

    #[test]
    fn unbounded_machine_equals_the_critical_path((problem, mask, machine, costs) in case()) {
        // The DAG has no edge for the kernel's poll after a missed early read (it depends on timing) nor for
        // the late last release: with those, the critical path is a lower bound only (the test above).
        let costs = CostModel { poll: 0.0, kernel_epilogues: false, ..costs };
        for kind in ScheduleKind::ALL {
            if kind.check_applicable(&problem, &mask).is_err() {
                continue;
            }
            let s = build(kind, problem, mask.clone(), machine, &costs).unwrap();
            let implicit = critical_path(&problem, s.order(), &costs).unwrap().length;
            let explicit = TaskGraph::build(&problem, s.order(), &costs).critical_path().unwrap();
            prop_assert!((implicit - explicit).abs() <= 1e-9 * implicit.max(1.0), "{kind:?}: {implicit} vs {explicit}");
            // Enough SMs for every unit at once: the simulation is the DAG's longest path. (The schedule is
            // re-validated on the bigger machine; shift's waves collapse to one, so its order may change.)
            let wide = Machine { sms: s.units().len() as u32, launch: machine.launch };
            let s = build(kind, problem, mask.clone(), wide, &costs).unwrap();
            let cp = critical_path(&problem, s.order(), &costs).unwrap().length;
            let sim = simulate(&s, &costs, false).unwrap();
            prop_assert!((sim.makespan - cp).abs() <= 1e-9 * cp.max(1.0), "{kind:?}: {} vs {cp}", sim.makespan);
        }
    }

    #[test]
    fn shift_schedules_never_wait_in_the_idealized_setting(
        half in 1u32..9, heads in 1u32..7, c in 0.5f64..2.0, r in 0.0f64..1.0, sms_extra in 0u32..3,
    ) {
        let n = 2 * half;
        let (problem, mut machine) = ideal(n, heads);
        machine.sms += sms_extra * n;
        let costs = CostModel::ideal(c, r);
        for (kind, mask) in [(ScheduleKind::Shift, Mask::Full), (ScheduleKind::SymmetricShift, Mask::Causal)] {
            let s = build(kind, problem, mask, machine, &costs).unwrap();
            let sim = simulate(&s, &costs, false).unwrap();
            prop_assert_eq!(sim.total_wait(), 0.0, "{:?} waited", kind);
        }
    }
}

#[test]
fn timeline_accounts_for_every_task() {
    let p = problem(1, 2, 1, 500, 500, 64, 128);
    let mask = Mask::Causal;
    let costs = CostModel { handoff: 0.1, unit_start: 0.3, ..CostModel::default() };
    let machine = Machine { sms: 3, launch: LaunchPolicy::InOrder };
    let tm = Arc::new(TileMask::new(&p, &mask).unwrap());
    let s = ScheduleKind::Spt.build(p, mask, tm, machine, &costs).unwrap();
    let sim = simulate(&s, &costs, true).unwrap();
    let computes = sim.timeline.iter().filter(|g| g.kind == schedulers::SegmentKind::Compute).count();
    assert_eq!(computes as u64, s.tasks());
    let busy: f64 = sim
        .timeline
        .iter()
        .filter(|g| g.kind != schedulers::SegmentKind::Wait && g.kind != schedulers::SegmentKind::DkvWait)
        .map(|g| g.end - g.start)
        .sum();
    assert!((busy - sim.total_busy()).abs() < 1e-9);
    // Segments of one SM never overlap.
    for w in sim.timeline.windows(2) {
        if w[0].sm == w[1].sm {
            assert!(w[0].end <= w[1].start + 1e-12, "{:?} overlaps {:?}", w[0], w[1]);
        }
    }
}
