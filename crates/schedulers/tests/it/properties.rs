//! Properties of the theory over random problems: every built-in schedule validates, makespan never beats a
//! lower bound (with the dQ adds after each task, or beside the compute as in the sm90 main loop), shift
//! schedules never wait in the idealized setting, and the three evaluations agree.

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
            dq_writers: 0,
            dq_deferred: false,
            kv_load_overlap: false,
            unit_start: s,
            unit_finish: f,
            dkv_reduce: r,
            variability: None,
            memory_roof: None,
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

/// A case for the sm90 main loop's model: multi-head attention (it has no dK/dV reductions), 1 to 3 decoupled dQ
/// writers per SM, each partial staged after its own task or deferred to the next one, the next K/V loaded after
/// the dK/dV epilogue or beside it.
fn decoupled_case() -> impl Strategy<Value = (dag_model::Problem, Mask, Machine, CostModel)> {
    (case(), 1u32..4, any::<bool>(), any::<bool>()).prop_map(
        |((p, mask, machine, costs), writers, deferred, overlap)| {
            let p = problem(p.batch(), p.heads(), p.heads(), p.seqlen_q(), p.seqlen_k(), p.block_m(), p.block_n());
            let costs = CostModel { dq_writers: writers, dq_deferred: deferred, kv_load_overlap: overlap, ..costs };
            (p, mask, machine, costs)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn decoupled_makespan_respects_every_lower_bound((problem, mask, machine, costs) in decoupled_case()) {
        for kind in ScheduleKind::ALL {
            if kind.check_applicable(&problem, &mask).is_err() {
                continue;
            }
            let s = build(kind, problem, mask.clone(), machine, &costs).expect("built-in schedules validate");
            let sim = simulate(&s, &costs, true).unwrap();
            let cp = schedulers::decoupled_critical_path(&problem, s.order(), &costs);
            let b = Bounds::of(&s, &costs, cp);
            let eps = 1e-9 * b.best().max(1.0);
            prop_assert!(sim.makespan + eps >= b.work, "{kind:?}: {} < work {}", sim.makespan, b.work);
            prop_assert!(sim.makespan + eps >= b.longest_unit);
            prop_assert!(sim.makespan + eps >= b.critical_path, "{kind:?}: {} < cp {}", sim.makespan, b.critical_path);
            for st in &sim.sms {
                prop_assert!(st.busy + st.wait <= sim.makespan + eps, "{kind:?}: {st:?} over {}", sim.makespan);
            }
            // The compute side of an SM does one thing at a time (the writers' reduces run beside it).
            let mut side: Vec<_> = sim.timeline.iter().filter(|g| g.kind != schedulers::SegmentKind::Reduce).collect();
            side.sort_by(|a, b| a.sm.cmp(&b.sm).then(a.start.total_cmp(&b.start)));
            for w in side.windows(2) {
                if w[0].sm == w[1].sm {
                    prop_assert!(w[0].end <= w[1].start + eps, "{kind:?}: {:?} overlaps {:?}", w[0], w[1]);
                }
            }
            let reduces = sim.timeline.iter().filter(|g| g.kind == schedulers::SegmentKind::Reduce).count();
            prop_assert_eq!(reduces as u64, s.tasks());
        }
    }

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

#[test]
fn decoupled_writers_overlap_the_adds_with_the_next_tasks() {
    // One unit of three tasks, each on its own dQ tile (rank 0): compute 1, add 3, on one SM.
    let p = problem(1, 1, 1, 192, 64, 64, 64);
    let machine = Machine { sms: 1, launch: LaunchPolicy::InOrder };
    let sequential = CostModel::ideal(1.0, 3.0);
    let s = build(ScheduleKind::Naive, p, Mask::Full, machine, &sequential).unwrap();
    assert_eq!(simulate(&s, &sequential, false).unwrap().makespan, 12.0);
    // Two writers: task 0 is added over [1, 4], task 1 over [2, 5]; task 2 is computed over [2, 3] and staged at
    // 4, when the first writer is free again (1 of waiting), and added over [4, 7].
    let two = CostModel { dq_writers: 2, ..sequential };
    let sim = simulate(&s, &two, true).unwrap();
    assert_eq!(sim.makespan, 7.0);
    assert_eq!(sim.total_wait(), 1.0);
    assert_eq!(sim.total_busy(), 3.0);
    let reduces: Vec<(f64, f64)> =
        sim.timeline.iter().filter(|g| g.kind == schedulers::SegmentKind::Reduce).map(|g| (g.start, g.end)).collect();
    assert_eq!(reduces, vec![(1.0, 4.0), (2.0, 5.0), (4.0, 7.0)]);
    // One writer: the compute stages a task only once the previous one is added.
    let one = CostModel { dq_writers: 1, ..sequential };
    assert_eq!(simulate(&s, &one, false).unwrap().makespan, 1.0 + 3.0 + 3.0 + 3.0);
    // Deferred (the sm90 loop's dQ): task 0 is staged after task 1's compute, at 2, and added over [2, 5]; task 1
    // after task 2's, over [3, 6]; task 2, the KV tile's last, right after its own compute, once the first writer
    // is free again at 5 (2 of waiting), and added over [5, 8].
    let deferred = CostModel { dq_deferred: true, ..two };
    let sim = simulate(&s, &deferred, true).unwrap();
    assert_eq!(sim.makespan, 8.0);
    assert_eq!(sim.total_wait(), 2.0);
    let reduces: Vec<(f64, f64)> =
        sim.timeline.iter().filter(|g| g.kind == schedulers::SegmentKind::Reduce).map(|g| (g.start, g.end)).collect();
    assert_eq!(reduces, vec![(2.0, 5.0), (3.0, 6.0), (5.0, 8.0)]);
    // The bound under deferral (staging buffers left out): tasks 1 and 2 reach their writers at 3, done at 6.
    assert_eq!(schedulers::decoupled_critical_path(&p, s.order(), &deferred), 6.0);
}

#[test]
fn persistent_ctas_start_their_next_unit_while_their_writers_finish_the_adds() {
    // Two units (KV tiles 0 and 1) of two tasks each (Q tiles 0 and 1), one SM, two writers: compute 1, add 3.
    let p = problem(1, 1, 1, 128, 128, 64, 64);
    let costs = CostModel { dq_writers: 2, ..CostModel::ideal(1.0, 3.0) };
    let in_order = Machine { sms: 1, launch: LaunchPolicy::InOrder };
    let s = build(ScheduleKind::Naive, p, Mask::Full, in_order, &costs).unwrap();
    // In-order: unit 0 adds over [1, 4] and [2, 5] and ends at 5, when its CTA exits; unit 1 computes over [5, 6]
    // and [6, 7] and adds over [6, 9] and [7, 10].
    let sim = simulate(&s, &costs, false).unwrap();
    assert_eq!((sim.unit_end[0], sim.unit_start[1], sim.makespan), (5.0, 5.0, 10.0));
    // Persistent: the CTA's compute side goes on to unit 1 at 2, while the writers still add unit 0's tasks. Its
    // first task (the CTA's third, buffer 0) is staged at 4, when writer 0 is free, and added over [4, 7]; the
    // second is computed over [4, 5] and added over [5, 8].
    let persistent = Machine { sms: 1, launch: LaunchPolicy::Persistent };
    let s = build(ScheduleKind::Naive, p, Mask::Full, persistent, &costs).unwrap();
    let sim = simulate(&s, &costs, true).unwrap();
    assert_eq!((sim.unit_end[0], sim.unit_start[1], sim.makespan), (5.0, 2.0, 8.0));
    assert_eq!(sim.total_wait(), 1.0);
    let reduces: Vec<(u32, f64, f64)> = sim
        .timeline
        .iter()
        .filter(|g| g.kind == schedulers::SegmentKind::Reduce)
        .map(|g| (g.unit, g.start, g.end))
        .collect();
    assert_eq!(reduces, vec![(0, 1.0, 4.0), (0, 2.0, 5.0), (1, 4.0, 7.0), (1, 5.0, 8.0)]);
}

#[test]
fn the_next_kv_load_runs_beside_the_dkv_epilogue_under_kv_load_overlap() {
    // One Q tile, two KV tiles, one SM: load 2, compute 1, epilogue 1.5, adds 0.1 (off the critical path).
    let p = problem(1, 1, 1, 64, 128, 64, 64);
    let serial = CostModel {
        dq_writers: 2,
        kernel_epilogues: true,
        unit_start: 2.0,
        unit_finish: 1.5,
        ..CostModel::ideal(1.0, 0.1)
    };
    let overlap = CostModel { kv_load_overlap: true, ..serial };
    let makespan = |launch, costs: &CostModel| {
        let s = build(ScheduleKind::Naive, p, Mask::Full, Machine { sms: 1, launch }, costs).unwrap();
        simulate(&s, costs, true).unwrap()
    };
    // Persistent, one unit per KV tile: serially 2 + 1 + 1.5 + 2 + 1 + 1.5 = 9; with the overlap the second load
    // starts at 3, beside the epilogue, and ends at 5: 2 + 1 + max(1.5, 2) + 1 + 1.5 = 7.5.
    assert_eq!(makespan(LaunchPolicy::Persistent, &serial).makespan, 9.0);
    let sim = makespan(LaunchPolicy::Persistent, &overlap);
    assert_eq!((sim.unit_start[1], sim.makespan), (3.0, 7.5));
    // The compute side's timeline shows the load's part after the epilogue, [4.5, 5], so that nothing overlaps.
    let starts: Vec<(f64, f64)> =
        sim.timeline.iter().filter(|g| g.kind == schedulers::SegmentKind::Start).map(|g| (g.start, g.end)).collect();
    assert_eq!(starts, vec![(0.0, 2.0), (4.5, 5.0)]);
    // In-order, each unit is a CTA of its own, loaded after its dispatch: no overlap.
    assert_eq!(makespan(LaunchPolicy::InOrder, &overlap).makespan, 9.0);
    // The lower bounds follow: the persistent work bound counts max(1.5, 2) per unit (2 units: 2 + 2 + 2 = 6 <=
    // 7.5), the in-order one 3.5 per unit.
    for (launch, work) in [(LaunchPolicy::Persistent, 6.0), (LaunchPolicy::InOrder, 9.0)] {
        let s = build(ScheduleKind::Naive, p, Mask::Full, Machine { sms: 1, launch }, &overlap).unwrap();
        let cp = schedulers::decoupled_critical_path(&p, s.order(), &overlap);
        assert_eq!(Bounds::of(&s, &overlap, cp).work, work, "{launch:?}");
    }
    // A move inside a unit overlaps as well, in either launch: one unit over both KV tiles.
    use dag_model::{Order, Unit, Visit};
    let tm = Arc::new(TileMask::new(&p, &Mask::Full).unwrap());
    for launch in [LaunchPolicy::InOrder, LaunchPolicy::Persistent] {
        let one_unit = Order {
            units: vec![Unit {
                bh: 0,
                visits: vec![Visit::new(0, 0, 0, 1.0), Visit::new(1, 0, 1, 1.0)],
                dkv_ranks: vec![0, 0],
            }],
        };
        let machine = Machine { sms: 1, launch };
        for (costs, want) in [(&serial, 9.0), (&overlap, 7.5)] {
            let s =
                schedulers::Schedule::validate("one unit", p, Mask::Full, tm.clone(), machine, costs, one_unit.clone())
                    .unwrap();
            assert_eq!(simulate(&s, costs, false).unwrap().makespan, want, "{launch:?} {costs:?}");
        }
    }
    // The overlap belongs to the dQ writers' loop.
    let portable = CostModel { dq_writers: 0, ..overlap };
    assert!(matches!(portable.check(), Err(schedulers::ScheduleError::KvLoadOverlapWithoutWriters)));
}

#[test]
fn a_persistent_schedule_must_not_need_its_writers_to_run_ahead_of_a_waiting_unit() {
    // One SM, one Q tile, two units: unit 0's add needs rank 1, which unit 1 (launched after it on the same CTA)
    // adds first. With two decoupled writers the CTA's compute side gets past unit 0 and unit 1 adds, so it would
    // complete; with one writer, or in the portable loop's sequence, unit 0 waits forever. Refused.
    use dag_model::{Order, Unit, Visit};
    let p = problem(1, 1, 1, 64, 128, 64, 64);
    let tm = Arc::new(TileMask::new(&p, &Mask::Full).unwrap());
    let order = Order {
        units: vec![
            Unit { bh: 0, visits: vec![Visit::new(0, 0, 1, 1.0)], dkv_ranks: vec![0] },
            Unit { bh: 0, visits: vec![Visit::new(1, 0, 0, 1.0)], dkv_ranks: vec![0] },
        ],
    };
    let machine = Machine { sms: 1, launch: LaunchPolicy::Persistent };
    for writers in [0, 1, 2, 3] {
        let costs = CostModel { dq_writers: writers, ..CostModel::default() };
        let err = schedulers::Schedule::validate("ahead", p, Mask::Full, tm.clone(), machine, &costs, order.clone())
            .expect_err("needs the writers to run ahead");
        assert!(err.to_string().contains("deadlock"), "{writers} writers: {err}");
        // The unit that holds the rank waits for the SM that the waiting unit occupies.
        assert!(err.to_string().contains("unit 1") && err.to_string().contains("is not launched"), "{err}");
    }
}

#[test]
fn a_schedule_must_run_on_both_main_loops() {
    // Two units on one KV head and two SMs. Unit 0 visits Q tiles 0 then 1; unit 1 visits 1 then 0. Ranks:
    // tile 0 is added by unit 1 first, tile 1 by unit 0 first. In sequence each unit's first task waits for the
    // other's second: a cycle of the DAG. With two decoupled writers each unit would stage both tasks and both
    // would complete, but the schedule would hang the portable loop: validation refuses it under the decoupled
    // model too (by the DAG's cycle check, which does not depend on the costs).
    use dag_model::{Order, Unit, Visit};
    let p = problem(1, 1, 1, 128, 128, 64, 64);
    let tm = Arc::new(TileMask::new(&p, &Mask::Full).unwrap());
    let visit = |kv: u32, q: u32, rank: u32| Visit::new(kv, q, rank, 1.0);
    let order = Order {
        units: vec![
            Unit { bh: 0, visits: vec![visit(0, 0, 1), visit(0, 1, 0)], dkv_ranks: vec![0] },
            Unit { bh: 0, visits: vec![visit(1, 1, 1), visit(1, 0, 0)], dkv_ranks: vec![0] },
        ],
    };
    let machine = Machine { sms: 2, launch: LaunchPolicy::InOrder };
    let decoupled = CostModel { dq_writers: 2, ..CostModel::default() };
    let err = schedulers::Schedule::validate("crossed", p, Mask::Full, tm, machine, &decoupled, order)
        .expect_err("deadlocks on the portable loop");
    assert!(err.to_string().contains("dependency cycle"), "{err}");
}

#[test]
fn varied_phases_are_drawn_the_same_every_time_and_cost_a_tight_chain_waits() {
    // Full mask, shift on as many SMs as KV tiles: every dQ tile's contributions arrive one visit apart, and an add
    // plus its hand-off (0.7 + 0.29) nearly fills that visit (1). With constant phases no add waits; when only the
    // adds and hand-offs vary, some come late and the ranks after them wait.
    let p = problem(1, 4, 4, 1024, 64, 64, 64);
    let machine = Machine { sms: 16, launch: LaunchPolicy::Persistent };
    let constant = CostModel {
        handoff: 0.29,
        dq_writers: 2,
        dq_deferred: true,
        kernel_epilogues: true,
        unit_start: 1.0,
        unit_finish: 1.0,
        ..CostModel::ideal(1.0, 0.7)
    };
    let s = build(ScheduleKind::Shift, p, Mask::Full, machine, &constant).unwrap();
    let base = simulate(&s, &constant, false).unwrap();
    assert_eq!(base.total_wait(), 0.0, "constant phases: no add is late");
    assert_eq!(schedulers::predicted_makespan(&s, &constant).unwrap(), base.makespan);
    let spread = |compute: f64, add: f64, unit: f64, runs: u32| schedulers::Variability {
        compute,
        reduce: add,
        handoff: add,
        unit_start: unit,
        unit_finish: unit,
        runs,
    };
    let with = |v: schedulers::Variability| CostModel { variability: Some(v), ..constant };
    let adds_only = schedulers::predicted_makespan(&s, &with(spread(0.0, 0.2, 0.0, 8))).unwrap();
    assert!(adds_only > base.makespan, "{adds_only} with varied adds against {} constant", base.makespan);
    // The same inputs give the same prediction; the simulation itself (timelines, bounds) keeps constant phases.
    let varied = with(spread(0.1, 0.2, 0.2, 8));
    let a = schedulers::predicted_makespan(&s, &varied).unwrap();
    assert_eq!(a, schedulers::predicted_makespan(&s, &varied).unwrap());
    assert!(a > base.makespan);
    assert_eq!(simulate(&s, &varied, true).unwrap().makespan, base.makespan);
    // The prediction is the mean of the runs: one run alone is another number.
    assert_ne!(schedulers::predicted_makespan(&s, &with(spread(0.1, 0.2, 0.2, 1))).unwrap(), a);
    // No spread, no change.
    assert_eq!(schedulers::predicted_makespan(&s, &with(spread(0.0, 0.0, 0.0, 3))).unwrap(), base.makespan);
    // Refused: no run to average, or a negative spread.
    for bad in [spread(0.1, 0.2, 0.2, 0), spread(0.1, -0.2, 0.2, 8)] {
        assert!(schedulers::predicted_makespan(&s, &with(bad)).is_err());
        assert!(simulate(&s, &with(bad), false).is_err());
    }
}

#[test]
fn every_kv_run_draws_its_own_epilogue() {
    // One unit of two KV runs of one visit each. Each run's dK/dV epilogue is drawn under its own key (the run's
    // last visit), so running the two runs in the other order meets the same draws in the other order: the same
    // makespan. Were the two epilogues of a unit keyed alike (the switch's by the next run's visit, the last by
    // the unit's last visit), one draw would count twice, a different one in each order.
    // The equality holds while the dQ adds stay off the critical path (two writers, a short hand-off): with slow
    // hand-offs the order of the epilogues would also move when the second unit's adds may start. The direct check,
    // on one run's timeline, is simulate.rs's `a_units_two_epilogues_are_two_draws`.
    use dag_model::{Order, Unit, Visit};
    let p = problem(1, 1, 1, 128, 128, 64, 64);
    let tm = Arc::new(TileMask::new(&p, &Mask::Full).unwrap());
    let machine = Machine { sms: 1, launch: LaunchPolicy::Persistent };
    let finish_varies = CostModel {
        handoff: 0.3,
        dq_writers: 2,
        dq_deferred: true,
        kernel_epilogues: true,
        unit_start: 1.0,
        unit_finish: 3.0,
        variability: Some(schedulers::Variability {
            compute: 0.0,
            reduce: 0.0,
            handoff: 0.0,
            unit_start: 0.0,
            unit_finish: 0.8,
            runs: 1,
        }),
        ..CostModel::ideal(1.0, 0.7)
    };
    let constant = CostModel { variability: None, ..finish_varies };
    let visit = |kv: u32, q: u32, rank: u32| Visit::new(kv, q, rank, 1.0);
    // Full mask 2 x 2: the unit under test adds first on both Q tiles; the other two tiles form a second unit.
    let with_rest = |first: Vec<Visit>| {
        let units = vec![
            Unit { bh: 0, visits: first, dkv_ranks: vec![0, 0] },
            Unit { bh: 0, visits: vec![visit(0, 1, 1), visit(1, 0, 1)], dkv_ranks: vec![0, 0] },
        ];
        schedulers::Schedule::validate("two runs", p, Mask::Full, tm.clone(), machine, &finish_varies, Order { units })
    };
    let a = with_rest(vec![visit(0, 0, 0), visit(1, 1, 0)]).unwrap();
    let b = with_rest(vec![visit(1, 1, 0), visit(0, 0, 0)]).unwrap();
    let (pa, pb) = (
        schedulers::predicted_makespan(&a, &finish_varies).unwrap(),
        schedulers::predicted_makespan(&b, &finish_varies).unwrap(),
    );
    let base = schedulers::predicted_makespan(&a, &constant).unwrap();
    assert_eq!(base, schedulers::predicted_makespan(&b, &constant).unwrap());
    assert_ne!(pa, base, "the epilogues are drawn");
    assert!((pa - pb).abs() < 1e-9, "{pa} against {pb}: the same draws in the other order");
}
