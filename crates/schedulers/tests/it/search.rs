//! The schedule search: its results validate, never lose to the schedules it starts from, respect the
//! bounds that hold for every schedule, reach the idealized optima, do not depend on the thread count, and
//! survive the trip through a schedule file.

use std::sync::Arc;

use dag_model::{Mask, Problem, TileMask};
use proptest::prelude::*;
use schedulers::{
    CostModel, HeadsLimit, LaunchPolicy, Machine, ProblemBounds, ScheduleFile, ScheduleFileError, ScheduleKind,
    SearchConfig, SearchError, SearchResult, search, simulate,
};

use crate::common::{ideal, problem};

fn run(problem: Problem, mask: &Mask, machine: Machine, costs: &CostModel, config: &SearchConfig) -> SearchResult {
    let tm = Arc::new(TileMask::new(&problem, mask).unwrap());
    search(problem, mask.clone(), tm, machine, costs, config, &|_| false).expect("the search succeeds")
}

fn iterations(n: u64) -> SearchConfig {
    SearchConfig { iterations: Some(n), seed: 7, ..SearchConfig::default() }
}

/// Small problems of every kind: masks, GQA, non-square tiles, several waves, both launch policies.
fn case() -> impl Strategy<Value = (Problem, Mask, Machine, CostModel)> {
    (
        1u32..3,
        prop_oneof![Just((4u32, 4u32)), Just((4, 2)), Just((4, 1)), Just((3, 3))],
        2u32..9,
        prop_oneof![Just((64u32, 64u32)), Just((64, 128)), Just((128, 64))],
        0u32..5,
        1u32..24,
        any::<bool>(),
        (0.5f64..2.0, 0.05f64..0.8, 0.0f64..0.3, 0.0f64..0.4, any::<bool>()),
    )
        .prop_map(|(batch, (heads, kv_heads), tiles, (bm, bn), mask, sms, persistent, (c, r, h, o, scale))| {
            let sq = tiles * bm - (tiles % 3) * 5;
            let p = problem(batch, heads, kv_heads, sq, sq, bm, bn);
            let mask = match mask {
                0 => Mask::Full,
                1 => Mask::Causal,
                2 => Mask::SlidingWindow { left: Some(bm + 17), right: Some(bn / 2) },
                3 => Mask::Document { lens: vec![sq / 3, sq - sq / 3 - 1, 1], causal: true },
                _ => Mask::Document { lens: vec![sq / 2, sq - sq / 2], causal: false },
            };
            let launch = if persistent { LaunchPolicy::Persistent } else { LaunchPolicy::InOrder };
            let costs = CostModel {
                compute: c,
                compute_partial: Some(c * 0.7),
                scale_by_fraction: scale,
                reduce: r,
                handoff: h,
                poll: 0.0,
                kernel_epilogues: false,
                dq_writers: 0,
                dq_deferred: false,
                kv_load_overlap: false,
                unit_start: o,
                unit_finish: o / 2.0,
                dkv_reduce: r,
                variability: None,
                memory_roof: None,
            };
            (p, mask, Machine { sms, launch }, costs)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn searched_schedules_validate_and_never_lose_to_their_seeds((problem, mask, machine, costs) in case()) {
        let r = run(problem, &mask, machine, &costs, &iterations(24));
        let s = &r.schedule;
        // The schedule came out of `Schedule::validate`; check its order and makespan independently.
        s.order().check(&problem, s.tile_mask()).expect("a complete order");
        let sim = simulate(s, &costs, false).expect("no deadlock");
        prop_assert_eq!(sim.makespan, r.makespan);
        let eps = 1e-9 * r.makespan.max(1.0);
        for b in &r.builtins {
            if let Ok(m) = b.makespan {
                prop_assert!(r.makespan <= m + eps, "{:?} {} beats search {}", b.kind, m, r.makespan);
            }
        }
        for seed in &r.seeds {
            prop_assert!(r.makespan <= seed.makespan + eps, "seed {} {} beats search {}", seed.name, seed.makespan, r.makespan);
        }
        // The problem's bounds hold for every schedule: the searched one and every built-in.
        let pb = r.problem_bounds.best();
        prop_assert!(pb <= r.makespan + eps, "bound {:?} above search {}", r.problem_bounds, r.makespan);
        for b in &r.builtins {
            if let Ok(m) = b.makespan {
                prop_assert!(pb <= m + eps, "bound {:?} above {:?} {}", r.problem_bounds, b.kind, m);
            }
        }
    }

    #[test]
    fn problem_bounds_hold_under_decoupled_writers(
        (problem, mask, machine, costs) in case(),
        writers in 1u32..4,
        overlap in any::<bool>(),
    ) {
        // The sm90 main loop's model (multi-head attention only): the adds run beside the compute, and the next
        // K/V load after the dK/dV epilogue or beside it.
        let problem = crate::common::problem(
            problem.batch(), problem.heads(), problem.heads(), problem.seqlen_q(), problem.seqlen_k(),
            problem.block_m(), problem.block_n(),
        );
        let costs = CostModel { dq_writers: writers, kv_load_overlap: overlap, ..costs };
        let tm = std::sync::Arc::new(dag_model::TileMask::new(&problem, &mask).unwrap());
        let pb = ProblemBounds::of(&problem, &tm, machine, &costs).best();
        for kind in ScheduleKind::ALL {
            if kind.check_applicable(&problem, &mask).is_err() {
                continue;
            }
            let s = kind.build(problem, mask.clone(), tm.clone(), machine, &costs).unwrap();
            let m = simulate(&s, &costs, false).unwrap().makespan;
            prop_assert!(pb <= m + 1e-9 * m.max(1.0), "{kind:?}: bound {pb} above {m}");
        }
    }

    #[test]
    fn searched_schedules_keep_to_the_limit_on_heads_in_flight(
        (problem, mask, machine, costs) in case(),
        limit in 1u32..6,
        writers in 0u32..3,
    ) {
        // Decoupled writers (multi-head attention only): the search's own simulation does not model them, so
        // the limit must hold in the official simulation all the same.
        let (problem, costs) = if writers > 0 {
            let p = crate::common::problem(
                problem.batch(), problem.heads(), problem.heads(), problem.seqlen_q(), problem.seqlen_k(),
                problem.block_m(), problem.block_n(),
            );
            (p, CostModel { dq_writers: writers, ..costs })
        } else {
            (problem, costs)
        };
        let heads_of = |s: &schedulers::Schedule| simulate(s, &costs, false).unwrap().peak_heads_in_flight(s.order());
        let tm = Arc::new(TileMask::new(&problem, &mask).unwrap());
        // At most `limit`: the result keeps to it, or no start could.
        let config = SearchConfig { heads_in_flight: HeadsLimit::AtMost(limit), ..iterations(24) };
        match search(problem, mask.clone(), tm.clone(), machine, &costs, &config, &|_| false) {
            Ok(r) => {
                prop_assert!(heads_of(&r.schedule) <= limit, "{} heads over {limit}", heads_of(&r.schedule));
                prop_assert_eq!(r.heads_limit, Some(limit));
            }
            Err(SearchError::NoSeedWithinHeads { limit: l, fewest, .. }) => {
                prop_assert_eq!(l, limit);
                prop_assert!(fewest > limit);
            }
            // Only where the search's simulation and the official one differ: under decoupled writers.
            Err(SearchError::SearchedOverHeads { heads, limit: l }) => {
                prop_assert!(writers > 0 && heads > l && l == limit, "{heads} over {l} with {writers} writers");
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
        // The built-ins' width: never wider than the widest built-in, never slower than any of them.
        let config = SearchConfig { heads_in_flight: HeadsLimit::Builtins, ..iterations(24) };
        let r = search(problem, mask, tm, machine, &costs, &config, &|_| false).expect("a built-in keeps to it");
        let widest = r.builtins.iter().filter(|b| b.makespan.is_ok()).map(|b| b.heads_in_flight).max();
        prop_assert_eq!(r.heads_limit, widest);
        prop_assert!(heads_of(&r.schedule) <= widest.unwrap());
        for b in &r.builtins {
            if let Ok(m) = b.makespan {
                prop_assert!(r.makespan <= m + 1e-9 * m.max(1.0), "{:?} {} beats search {}", b.kind, m, r.makespan);
            }
        }
    }

    #[test]
    fn the_search_alone_never_loses_to_its_list_seeds((problem, mask, machine, costs) in case()) {
        let config = SearchConfig { builtin_seeds: false, ..iterations(16) };
        let r = run(problem, &mask, machine, &costs, &config);
        let best = r.seeds.iter().map(|s| s.makespan).fold(f64::INFINITY, f64::min);
        prop_assert!(r.makespan <= best + 1e-9 * best, "{} vs best seed {}", r.makespan, best);
        prop_assert!(!r.origin.contains("as built"));
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let p = problem(2, 4, 2, 1000, 1000, 64, 128);
    let costs = CostModel { handoff: 0.1, ..CostModel::default() };
    for mask in [Mask::Causal, Mask::SlidingWindow { left: Some(256), right: Some(64) }] {
        let machine = Machine { sms: 11, launch: LaunchPolicy::InOrder };
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| run(p, &mask, machine, &costs, &iterations(203)))
        };
        let (one, two) = (on(1), on(2));
        assert_eq!(one.schedule.order(), two.schedule.order(), "{mask:?}");
        assert_eq!((one.makespan, one.iterations, one.improvements), (two.makespan, two.iterations, two.improvements));
        assert_eq!(one.iterations, 203);
        // Another seed explores differently (the stream is the seed's), yet is as valid.
        let other = run(p, &mask, machine, &costs, &SearchConfig { seed: 8, ..iterations(203) });
        other.schedule.order().check(&p, other.schedule.tile_mask()).unwrap();
    }
}

#[test]
fn the_idealized_optima_are_reached() {
    let costs = CostModel::default();
    for n in [4u32, 8, 16] {
        for heads in [2u32, 4] {
            let (p, machine) = ideal(n, heads);
            let slot = 1.25;
            let full = heads as f64 * n as f64 * slot;
            let causal = heads as f64 * (n as f64 + 1.0) * slot / 2.0;
            for (mask, optimum) in [(Mask::Full, full), (Mask::Causal, causal)] {
                let r = run(p, &mask, machine, &costs, &iterations(64));
                assert_eq!(r.makespan, optimum, "n {n} m {heads} {mask:?}");
                assert_eq!(r.problem_bounds.best(), optimum, "the bound certifies the optimum");
                // Without the built-ins the search finds them again, to within one reduce.
                let alone = run(p, &mask, machine, &costs, &SearchConfig { builtin_seeds: false, ..iterations(800) });
                assert!(alone.makespan <= optimum + costs.reduce, "n {n} m {heads} {mask:?}: {}", alone.makespan);
            }
        }
    }
}

#[test]
fn searched_schedules_meet_the_issue_targets_on_documents_and_gqa() {
    let costs = CostModel::default();
    let machine = Machine { sms: 16, launch: LaunchPolicy::InOrder };
    let docs = Mask::Document { lens: vec![512, 2048, 1024, 3584, 1024], causal: true };
    for (p, mask) in
        [(problem(1, 8, 8, 8192, 8192, 64, 128), docs), (problem(4, 8, 1, 1024, 1024, 64, 128), Mask::Causal)]
    {
        let r = run(p, &mask, machine, &costs, &iterations(200));
        let columns = r
            .builtins
            .iter()
            .filter(|b| matches!(b.kind, ScheduleKind::Naive | ScheduleKind::Descending | ScheduleKind::Spt))
            .filter_map(|b| b.makespan.clone().ok())
            .fold(f64::INFINITY, f64::min);
        // The issue's target: 10% below the best column order, or within 3% of the bound where the column
        // orders leave less than that to gain.
        let bound = r.problem_bounds.best();
        assert!(r.makespan < columns, "{mask:?}: search {} vs column orders {columns}", r.makespan);
        assert!(r.makespan <= columns * 0.9 || r.makespan <= bound * 1.03, "{mask:?}: {} vs bound {bound}", r.makespan);
    }
}

#[test]
fn schedule_files_round_trip() {
    let p = problem(1, 4, 2, 700, 700, 64, 128);
    let mask = Mask::SlidingWindow { left: Some(200), right: Some(30) };
    let machine = Machine { sms: 5, launch: LaunchPolicy::InOrder };
    let costs = CostModel::default();
    let r = run(p, &mask, machine, &costs, &iterations(40));
    let file = ScheduleFile::of(&r.schedule, None);
    let text = serde_json::to_string(&file).unwrap();
    let back: ScheduleFile = serde_json::from_str(&text).unwrap();
    assert_eq!(back, file);
    let tm = Arc::new(TileMask::new(&p, &mask).unwrap());
    let loaded = back.load(&p, &mask, tm.clone(), machine, &costs).unwrap();
    assert_eq!(loaded.order(), r.schedule.order());
    assert_eq!(loaded.name(), "search");
    assert_eq!(simulate(&loaded, &costs, false).unwrap().makespan, r.makespan);

    // A file for another shape, mask or machine is refused with the field that differs.
    let other = problem(1, 4, 2, 768, 768, 64, 128);
    let tm_other = Arc::new(TileMask::new(&other, &mask).unwrap());
    let err = back.load(&other, &mask, tm_other, machine, &costs).unwrap_err();
    assert_eq!(err, ScheduleFileError::Mismatch { field: "seqlen_q", file: "700".into(), asked: "768".into() });
    let err = back.load(&p, &Mask::Causal, Arc::new(TileMask::new(&p, &Mask::Causal).unwrap()), machine, &costs);
    assert!(matches!(err, Err(ScheduleFileError::Mismatch { field: "mask", .. })));
    let err = back.load(&p, &mask, tm.clone(), Machine { sms: 6, ..machine }, &costs);
    assert!(matches!(err, Err(ScheduleFileError::Mismatch { field: "sms", .. })));

    // Out-of-grid tiles and broken ranks are named.
    let mut bad = back.clone();
    bad.units[0].visits[0][0] = 99;
    assert!(matches!(bad.load(&p, &mask, tm.clone(), machine, &costs), Err(ScheduleFileError::OutsideGrid { .. })));
    let mut bad = back.clone();
    bad.units[0].visits[0][2] = 1000;
    let err = bad.load(&p, &mask, tm.clone(), machine, &costs).unwrap_err();
    assert!(err.to_string().contains("not a permutation"), "{err}");
    let mut bad = back;
    bad.schema_version = 2;
    assert_eq!(bad.load(&p, &mask, tm, machine, &costs).unwrap_err(), ScheduleFileError::Version { found: 2 });
}

#[test]
fn seeds_must_be_for_the_same_problem() {
    let p = problem(1, 2, 2, 512, 512, 64, 128);
    let machine = Machine { sms: 4, launch: LaunchPolicy::InOrder };
    let costs = CostModel::default();
    let tm = Arc::new(TileMask::new(&p, &Mask::Full).unwrap());
    let naive = ScheduleKind::Naive.build(p, Mask::Full, tm, machine, &costs).unwrap();
    let config = SearchConfig { seeds: vec![naive], ..iterations(8) };
    let tm_causal = Arc::new(TileMask::new(&p, &Mask::Causal).unwrap());
    let err = search(p, Mask::Causal, tm_causal, machine, &costs, &config, &|_| false).unwrap_err();
    assert_eq!(err, SearchError::ForeignSeed { name: "naive".into() });
}

#[test]
fn the_certificate_bounds_hold_on_the_paper_shape() {
    // Full mask, 16 heads x 128 columns of 320 on 132 SMs: 16 rounds, which shift reaches.
    let p = problem(1, 16, 16, 16384, 16384, 64, 128);
    let tm = TileMask::new(&p, &Mask::Full).unwrap();
    let pb = ProblemBounds::of(&p, &tm, Machine { sms: 132, launch: LaunchPolicy::InOrder }, &CostModel::default());
    assert_eq!(pb.column_packing, 16.0 * 320.0);
    assert_eq!(pb.longest_column, 320.0);
    assert_eq!(pb.best(), 5120.0);
}

/// Heads in flight on a case small enough to count by hand: 4 heads of 2 equal KV columns each, naive order
/// (head by head, column by column), constant costs and free adds. Units of one wave start and end together.
#[test]
fn heads_in_flight_are_counted_as_a_unit_is_resident() {
    let p = problem(1, 4, 4, 128, 256, 64, 128);
    // Free adds: a head's two units never wait for each other on a dQ tile, so they end together.
    let costs = CostModel { reduce: 0.0, ..CostModel::default() };
    for (sms, expected) in [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (8, 4)] {
        let machine = Machine { sms, launch: LaunchPolicy::InOrder };
        let s = crate::common::build(ScheduleKind::Naive, p, Mask::Full, machine, &costs).unwrap();
        let sim = simulate(&s, &costs, false).unwrap();
        // With 2 SMs, head 0's two units end at the instant head 1's start: one head at a time, not two.
        assert_eq!(sim.peak_heads_in_flight(s.order()), expected, "{sms} SMs");
    }
}

/// Limits that no start keeps to, and a limit of zero, are refused with the fewest any start needs.
#[test]
fn an_impossible_limit_on_heads_in_flight_is_refused() {
    let p = problem(1, 4, 4, 1024, 1024, 64, 128);
    let machine = Machine { sms: 16, launch: LaunchPolicy::InOrder };
    let tm = Arc::new(TileMask::new(&p, &Mask::Causal).unwrap());
    let costs = CostModel::default();
    let at_most = |n| SearchConfig { heads_in_flight: HeadsLimit::AtMost(n), ..iterations(8) };
    let err = search(p, Mask::Causal, tm.clone(), machine, &costs, &at_most(0), &|_| false).unwrap_err();
    assert_eq!(err, SearchError::ZeroHeads);
    let err = search(p, Mask::Causal, tm.clone(), machine, &costs, &at_most(1), &|_| false).unwrap_err();
    let SearchError::NoSeedWithinHeads { limit: 1, fewest, .. } = err else { panic!("{err:?}") };
    assert!(fewest >= 2);
    let r = search(p, Mask::Causal, tm, machine, &costs, &at_most(fewest), &|_| false).unwrap();
    assert!(simulate(&r.schedule, &costs, false).unwrap().peak_heads_in_flight(r.schedule.order()) <= fewest);
}

/// Zero costs make units of no duration: they are resident for no time, and counting them must not underflow.
#[test]
fn units_of_no_duration_are_never_in_flight() {
    let p = problem(1, 4, 4, 128, 256, 64, 128);
    let costs = CostModel { compute: 0.0, compute_partial: Some(0.0), reduce: 0.0, ..CostModel::default() };
    let machine = Machine { sms: 3, launch: LaunchPolicy::InOrder };
    let s = crate::common::build(ScheduleKind::Naive, p, Mask::Full, machine, &costs).unwrap();
    let sim = simulate(&s, &costs, false).unwrap();
    assert_eq!(sim.makespan, 0.0);
    assert_eq!(sim.peak_heads_in_flight(s.order()), 0);
}
