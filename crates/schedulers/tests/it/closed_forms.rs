//! model.md §5: the idealized makespans, pinned at the check values and swept over N and m.

use dag_model::Mask;
use schedulers::{CostModel, ScheduleKind, simulate};

use crate::common::{build, ideal};

fn makespan(kind: ScheduleKind, mask: Mask, n: u32, heads: u32, c: f64, r: f64) -> f64 {
    let (problem, machine) = ideal(n, heads);
    let costs = CostModel::ideal(c, r);
    let schedule = build(kind, problem, mask, machine, &costs).unwrap();
    simulate(&schedule, &costs, false).unwrap().makespan
}

#[test]
fn check_values_of_the_paper() {
    use ScheduleKind::*;
    assert_eq!(makespan(Naive, Mask::Full, 8, 4, 1.0, 0.25), 41.75);
    assert_eq!(makespan(Shift, Mask::Full, 8, 4, 1.0, 0.25), 40.0);
    assert_eq!(makespan(Naive, Mask::Causal, 8, 4, 1.0, 0.25), 41.75);
    assert_eq!(makespan(Descending, Mask::Causal, 8, 4, 1.0, 0.25), 24.25);
    assert_eq!(makespan(SymmetricShift, Mask::Causal, 8, 4, 1.0, 0.25), 22.5);
}

#[test]
fn closed_forms_hold_across_sizes() {
    use ScheduleKind::*;
    for n in [2u32, 4, 6, 8, 16] {
        for heads in [1u32, 2, 4, 6] {
            for (c, r) in [(1.0, 0.25), (1.0, 0.5), (2.0, 0.125)] {
                let (nf, mf) = (n as f64, heads as f64);
                let slot = c + r;
                let full_naive = mf * nf * slot + (nf - 1.0) * r;
                assert_eq!(makespan(Naive, Mask::Full, n, heads, c, r), full_naive, "naive full n={n} m={heads}");
                assert_eq!(makespan(Shift, Mask::Full, n, heads, c, r), mf * nf * slot, "shift n={n} m={heads}");
                assert_eq!(makespan(Naive, Mask::Causal, n, heads, c, r), full_naive, "naive causal n={n} m={heads}");
                if heads % 2 == 0 {
                    let want = mf * (nf + 1.0) * slot / 2.0 + (nf - 1.0) * r;
                    assert_eq!(makespan(Descending, Mask::Causal, n, heads, c, r), want, "descending n={n} m={heads}");
                    // Two heads' N/2 paired units fill the N SMs exactly, so m must be even here too.
                    let want = mf * (nf + 1.0) * slot / 2.0;
                    assert_eq!(
                        makespan(SymmetricShift, Mask::Causal, n, heads, c, r),
                        want,
                        "symshift n={n} m={heads}"
                    );
                }
            }
        }
    }
}

#[test]
fn shift_and_symmetric_shift_match_the_worked_examples() {
    // model.md §4, N = M = 4: accumulation orders of the shift schedule.
    let (problem, machine) = ideal(4, 1);
    let costs = CostModel::default();
    let s = build(ScheduleKind::Shift, problem, Mask::Full, machine, &costs).unwrap();
    assert_eq!(s.rank_list(0, 0), vec![0, 3, 2, 1]);
    assert_eq!(s.rank_list(0, 1), vec![1, 0, 3, 2]);
    assert_eq!(s.rank_list(0, 3), vec![3, 2, 1, 0]);
    let visits: Vec<u16> = s.units()[1].visits.iter().map(|v| v.q).collect();
    assert_eq!(visits, vec![1, 2, 3, 0]);

    // N = 8, one head on 4 SMs: the symmetric-shift table and its accumulation orders.
    let (problem, _) = ideal(8, 1);
    let machine = schedulers::Machine { sms: 4, ..machine };
    let s = build(ScheduleKind::SymmetricShift, problem, Mask::Causal, machine, &costs).unwrap();
    let sm3: Vec<(u16, u16)> = s.units()[3].visits.iter().map(|v| (v.kv, v.q)).collect();
    assert_eq!(sm3, vec![(3, 6), (3, 7), (3, 3), (3, 4), (3, 5), (4, 7), (4, 6), (4, 5), (4, 4)]);
    let sm0: Vec<u16> = s.units()[0].visits.iter().map(|v| v.q).collect();
    assert_eq!(sm0, vec![3, 4, 5, 6, 7, 0, 1, 2, 7]);
    let orders = [
        vec![0],
        vec![1, 0],
        vec![2, 1, 0],
        vec![0, 3, 2, 1],
        vec![1, 0, 3, 2, 4],
        vec![2, 1, 0, 3, 4, 5],
        vec![3, 2, 1, 0, 4, 5, 6],
        vec![3, 2, 1, 0, 4, 5, 6, 7],
    ];
    for (q, want) in orders.iter().enumerate() {
        assert_eq!(&s.rank_list(0, q as u32), want, "accumulation order of Q{q}");
    }
}

#[test]
fn spread_shifts_equal_the_paper_shifts_when_every_row_has_a_unit() {
    // One wave, as many units as rows in the cycle: floor(l·R/A) = l, so the schedules are the same visit for visit.
    for n in [2u32, 4, 8, 16] {
        let (problem, machine) = ideal(n, 3);
        let costs = CostModel::default();
        for (paper, spread, mask) in [
            (ScheduleKind::Shift, ScheduleKind::SpreadShift, Mask::Full),
            (ScheduleKind::SymmetricShift, ScheduleKind::SpreadSymmetricShift, Mask::Causal),
        ] {
            let a = build(paper, problem, mask.clone(), machine, &costs).unwrap();
            let b = build(spread, problem, mask, machine, &costs).unwrap();
            assert_eq!(a.units(), b.units(), "{spread:?} n={n}");
        }
    }
}

/// Steps between rank-consecutive contributions to each dQ tile of one head (all units started together).
fn arrival_gaps(s: &schedulers::Schedule, bh: u32, m: u32) -> Vec<u32> {
    let mut gaps = Vec::new();
    for q in 0..m {
        let mut by_rank: Vec<(u16, u32)> = s
            .units()
            .iter()
            .filter(|u| u.bh == bh)
            .flat_map(|u| u.visits.iter().enumerate().filter(|(_, v)| v.q as u32 == q).map(|(t, v)| (v.rank, t as u32)))
            .collect();
        by_rank.sort_unstable();
        gaps.extend(by_rank.windows(2).map(|w| w[1].1 - w[0].1));
    }
    gaps
}

#[test]
fn spread_shift_puts_two_visits_between_contributions_when_q_tiles_are_half_as_tall() {
    // Head dim 128's tiles: block_m 64, block_n 128, so M = 2N. One head of N = 16 KV tiles on 16 SMs.
    let problem = crate::common::problem(1, 1, 1, 2048, 2048, 64, 128);
    let machine = schedulers::Machine { sms: 16, launch: schedulers::LaunchPolicy::InOrder };
    let costs = CostModel::default();
    let (m, n) = (problem.m_tiles(), problem.n_tiles());
    assert_eq!((m, n), (32, 16));
    let paper = build(ScheduleKind::Shift, problem, Mask::Full, machine, &costs).unwrap();
    let spread = build(ScheduleKind::SpreadShift, problem, Mask::Full, machine, &costs).unwrap();
    // Ranks are the arrival order in both (no contribution waits for a later one) ...
    assert!(arrival_gaps(&paper, 0, m).iter().all(|&g| g >= 1));
    // ... but the paper's shift hands a tile on every visit, the spread one every other visit.
    assert_eq!(arrival_gaps(&paper, 0, m).iter().min(), Some(&1));
    assert!(arrival_gaps(&spread, 0, m).iter().all(|&g| g >= 2), "{:?}", arrival_gaps(&spread, 0, m));
    let starts: Vec<u16> = spread.units().iter().map(|u| u.visits[0].q).collect();
    assert_eq!(starts, (0..16).map(|l| 2 * l).collect::<Vec<u16>>());

    // With an add plus hand-off (1.75) longer than one visit (compute and add, 1.25) but shorter than two, the
    // paper's shift waits and the spread one does not.
    let slow_chain = CostModel { handoff: 1.5, ..CostModel::ideal(1.0, 0.25) };
    let wait = |kind| {
        let s = build(kind, problem, Mask::Full, machine, &slow_chain).unwrap();
        simulate(&s, &slow_chain, false).unwrap().total_wait()
    };
    assert!(wait(ScheduleKind::Shift) > 0.0);
    assert_eq!(wait(ScheduleKind::SpreadShift), 0.0);
}

#[test]
fn spread_symmetric_shift_waits_less_than_the_paper_one_when_q_tiles_are_half_as_tall() {
    // Causal, block_m 64, block_n 128: one head of N = 16 KV tiles, 8 paired units on 8 SMs; the rectangle has
    // M - 2·7 = 18 rows for 8 units, so the spread starts are two rows apart.
    let problem = crate::common::problem(1, 1, 1, 2048, 2048, 64, 128);
    let machine = schedulers::Machine { sms: 8, launch: schedulers::LaunchPolicy::InOrder };
    let slow_chain = CostModel { handoff: 1.5, ..CostModel::ideal(1.0, 0.25) };
    let wait = |kind| {
        let s = build(kind, problem, Mask::Causal, machine, &slow_chain).unwrap();
        simulate(&s, &slow_chain, false).unwrap().total_wait()
    };
    let (paper, spread) = (wait(ScheduleKind::SymmetricShift), wait(ScheduleKind::SpreadSymmetricShift));
    assert!(spread < paper, "spread {spread} vs paper {paper}");
    let s = build(ScheduleKind::SpreadSymmetricShift, problem, Mask::Causal, machine, &slow_chain).unwrap();
    let starts: Vec<u16> = s.units().iter().map(|u| u.visits[0].q).collect();
    assert_eq!(starts, vec![14, 16, 18, 20, 23, 25, 27, 29]);
}
