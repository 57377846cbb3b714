//! `split_tail`: the last, partial pass of a schedule spread over all SMs.

use std::sync::Arc;

use dag_model::{Mask, Problem, TileMask};

use crate::common::problem;
use schedulers::{CostModel, LaunchPolicy, Machine, Schedule, ScheduleKind, evaluate, split_tail};

/// 128 x 128 tiles: `heads` heads of `seqlen` tokens.
fn shape(heads: u32, seqlen: u32) -> Problem {
    problem(1, heads, heads, seqlen, seqlen, 128, 128)
}

/// Costs shaped like the sm90 loop's: decoupled deferred writers, unit overheads, a hand-off.
fn costs() -> CostModel {
    CostModel {
        reduce: 0.6,
        handoff: 0.3,
        dq_writers: 2,
        dq_deferred: true,
        kernel_epilogues: true,
        unit_start: 0.7,
        unit_finish: 0.6,
        ..CostModel::default()
    }
}

fn built(kind: ScheduleKind, p: Problem, mask: Mask, sms: u32, launch: LaunchPolicy) -> Schedule {
    let tm = Arc::new(TileMask::new(&p, &mask).unwrap());
    kind.build(p, mask, tm, Machine { sms, launch }, &costs()).unwrap()
}

#[test]
fn the_last_pass_is_spread_over_every_sm_and_the_makespan_drops() {
    // 3 heads x 8 columns = 24 units on 10 SMs: two full passes and 4 units in the last one.
    for launch in [LaunchPolicy::Persistent, LaunchPolicy::InOrder] {
        let original = built(ScheduleKind::SpreadShift, shape(3, 1024), Mask::Full, 10, launch);
        let split = split_tail(&original, &costs()).unwrap().expect("a partial last pass");
        assert_eq!(split.name(), "spread-shift+split");
        // The passes before the last full one are untouched; the last full pass holds whole original units (the
        // tail draws from both heads of that window: spread_tail_over_heads); the 4 columns of the last pass become
        // shares of every SM.
        assert_eq!(split.units()[..10], original.units()[..10]);
        let tiles = |u: &schedulers::Unit| (u.bh, u.visits.iter().map(|v| (v.kv, v.q)).collect::<Vec<_>>());
        for unit in &split.units()[10..20] {
            assert!(original.units()[10..].iter().any(|o| tiles(o) == tiles(unit)), "{:?}", tiles(unit));
        }
        assert!(split.units().len() >= 30, "{} units", split.units().len());
        assert_eq!(split.order().split_columns(split.problem()), 4);
        assert_eq!(split.tasks(), original.tasks());
        let (before, after) = (
            evaluate(original, &costs(), false).unwrap().makespan(),
            evaluate(split, &costs(), false).unwrap().makespan(),
        );
        // Four columns of 8 visits on 4 SMs against 32 visits on 10: 4.8 visits' compute less, less the
        // pieces' second unit start and finish (1.3) and the adds of pieces that meet on a dQ tile. In-order,
        // the SMs reach the last pass at different times, and the equal shares fit less well.
        let gain = if launch == LaunchPolicy::Persistent { 2.0 } else { 1.5 };
        assert!(after < before - gain, "{launch:?}: {after} against {before}");
    }
}

#[test]
fn each_sm_gets_one_share_under_the_persistent_launch() {
    // 2 heads x 16 columns = 32 units on 12 SMs: 8 units of 16 visits left, 128 visits, 10.67 per SM.
    let original = built(ScheduleKind::Shift, shape(2, 2048), Mask::Full, 12, LaunchPolicy::Persistent);
    let split = split_tail(&original, &costs()).unwrap().unwrap();
    let tail = &split.units()[24..];
    let mut per_sm = [0usize; 12];
    for (i, u) in tail.iter().enumerate() {
        per_sm[i % 12] += u.visits.len();
    }
    assert!(per_sm.iter().all(|&v| (10..=12).contains(&v)), "{per_sm:?}");
}

#[test]
fn the_tail_ranks_follow_arrival_so_nothing_waits_on_a_later_visit() {
    // Causal, symmetric shift: units of two columns, pieces spanning run boundaries.
    let original =
        built(ScheduleKind::SpreadSymmetricShift, shape(5, 2048), Mask::Causal, 12, LaunchPolicy::Persistent);
    let original_units = original.units().len();
    let split = split_tail(&original, &costs()).unwrap().unwrap();
    // Validation ran the DAG (no cycle) and the simulation (no deadlock), with zero and two writers.
    let before = evaluate(original, &costs(), false).unwrap().makespan();
    let after = evaluate(split.clone(), &costs(), false).unwrap().makespan();
    assert!(after < before, "{after} against {before}");
    // Every dQ tile's ranks from the full passes come before those of the split tail.
    let tail_start = original_units / 12 * 12;
    for (ui, unit) in split.units().iter().enumerate().skip(tail_start) {
        for v in &unit.visits {
            for earlier in &split.units()[..tail_start] {
                for w in earlier.visits.iter().filter(|w| earlier.bh == unit.bh && w.q == v.q) {
                    assert!(w.rank < v.rank, "unit {ui} q {}: rank {} before full-pass rank {}", v.q, v.rank, w.rank);
                }
            }
        }
    }
}

#[test]
fn nothing_is_split_when_the_last_pass_is_full() {
    // 3 heads x 8 columns = 24 units on 12 SMs: two full passes.
    let original = built(ScheduleKind::SpreadShift, shape(3, 1024), Mask::Full, 12, LaunchPolicy::Persistent);
    assert!(split_tail(&original, &costs()).unwrap().is_none());
}

#[test]
fn grouped_query_heads_are_not_split() {
    let p = problem(1, 4, 2, 1024, 1024, 128, 128);
    let tm = Arc::new(TileMask::new(&p, &Mask::Full).unwrap());
    let machine = Machine { sms: 10, launch: LaunchPolicy::Persistent };
    let original = ScheduleKind::Naive.build(p, Mask::Full, tm, machine, &CostModel::default()).unwrap();
    assert!(split_tail(&original, &CostModel::default()).unwrap().is_none());
}

/// Per CTA of the persistent launch (CTA p runs positions p, p + P, ...), the visits of the units from `from` on.
fn tail_visits_per_cta(s: &Schedule, from: usize) -> Vec<usize> {
    let sms = s.machine().sms as usize;
    let mut per = vec![0; sms];
    for (i, u) in s.units().iter().enumerate().skip(from) {
        per[i % sms] += u.visits.len();
    }
    per
}

#[test]
fn shares_of_short_units_stay_on_their_cta() {
    // Causal descending at 64 x 128 tiles: one unit per column, column kv of 32 - 2 kv visits, launched head-major
    // and KV ascending, so the last pass holds the last head's shortest columns. 3 heads x 16 columns = 48 units on
    // 10 SMs: 8 tail units of 16, 14, ..., 2 visits, 72 in all, 7.2 per share; the last share spans three columns
    // of one head, which become one unit of three KV runs, so that it stays on its CTA.
    let p = problem(1, 3, 3, 2048, 2048, 64, 128);
    let original = built(ScheduleKind::Descending, p, Mask::Causal, 10, LaunchPolicy::Persistent);
    let tail_start = original.units().len() / 10 * 10;
    let tail: Vec<usize> = original.units()[tail_start..].iter().map(|u| u.visits.len()).collect();
    assert_eq!(tail, [16, 14, 12, 10, 8, 6, 4, 2]);
    let split = split_tail(&original, &costs()).unwrap().expect("split");
    let per = tail_visits_per_cta(&split, tail_start);
    assert!(per.iter().all(|&v| (7..=8).contains(&v)), "{per:?}");
    assert!(split.units()[tail_start..].iter().any(|u| u.kv_runs().count() == 3));
}

#[test]
fn fewer_units_than_sms_are_all_split() {
    // 1 head x 8 columns of 8 visits on 12 SMs: no full pass; 64 visits in 12 shares.
    let original = built(ScheduleKind::SpreadShift, shape(1, 1024), Mask::Full, 12, LaunchPolicy::Persistent);
    let split = split_tail(&original, &costs()).unwrap().unwrap();
    assert_eq!(
        split.units().len(),
        12 + 8 - 1 - 3,
        "{:?}",
        split.units().iter().map(|u| u.visits.len()).collect::<Vec<_>>()
    );
    let per = tail_visits_per_cta(&split, 0);
    assert!(per.iter().all(|&v| (5..=6).contains(&v)), "{per:?}");
}

#[test]
fn a_tail_of_one_unit_is_spread_too() {
    // 1 head x 8 columns on 7 SMs: one full pass and one unit of 8 visits left, now 8 pieces... at most 7 shares.
    let original = built(ScheduleKind::Shift, shape(1, 1024), Mask::Full, 7, LaunchPolicy::Persistent);
    let split = split_tail(&original, &costs()).unwrap().unwrap();
    assert_eq!(split.units().len(), 7 + 7);
    assert_eq!(split.order().split_columns(split.problem()), 1);
    let (before, after) =
        (evaluate(original, &costs(), false).unwrap().makespan(), evaluate(split, &costs(), false).unwrap().makespan());
    assert!(after < before, "{after} against {before}");
}

#[test]
fn the_split_does_not_depend_on_the_costs() {
    let original =
        built(ScheduleKind::SpreadSymmetricShift, shape(5, 2048), Mask::Causal, 12, LaunchPolicy::Persistent);
    let a = split_tail(&original, &costs()).unwrap().unwrap();
    let other = CostModel { unit_start: 5.0, unit_finish: 3.0, compute_partial: Some(0.4), ..costs() };
    let b = split_tail(&original, &other).unwrap().unwrap();
    assert_eq!(a.order(), b.order());
}

#[test]
fn the_tail_draws_from_every_head_of_the_last_two_passes_so_no_dq_chain_outlasts_it() {
    // Causal spread-symmetric-shift at 128 x 128 tiles, 5 heads of 16 columns: 8 units of two columns (17 visits)
    // per head, 40 units on 12 SMs. The last full pass and the tail (units 24..40) are heads 3 and 4. Taken as the
    // last 4 units, the tail would be head 4's alone: 8 contributions to each of its last dQ tiles, whose adds
    // (0.9 each with the hand-off) outlast the 5.7 visits of a share. Spread, each head gives 2 units.
    let original =
        built(ScheduleKind::SpreadSymmetricShift, shape(5, 2048), Mask::Causal, 12, LaunchPolicy::Persistent);
    assert!(original.units().iter().all(|u| u.visits.len() == 17));
    let split = split_tail(&original, &costs()).unwrap().unwrap();
    let mut tail_visits_per_head = [0usize; 5];
    for unit in &split.units()[36..] {
        tail_visits_per_head[unit.bh as usize] += unit.visits.len();
    }
    assert_eq!(tail_visits_per_head, [0, 0, 0, 34, 34]);
    // Each head's last units in launch order go to the tail; the others stay whole in the last full pass.
    let last_pass: Vec<u32> = split.units()[24..36].iter().map(|u| u.bh).collect();
    assert_eq!(last_pass.iter().filter(|&&bh| bh == 3).count(), 6);
    let evaluation = evaluate(split, &costs(), false).unwrap();
    let sim = &evaluation.simulation;
    let wait_share = sim.total_wait() / (sim.makespan * 12.0);
    assert!(wait_share < 0.005, "{:.2}% of the time waiting", 100.0 * wait_share);
}

#[test]
fn units_of_unequal_length_keep_the_tail_as_launched() {
    // Causal descending: the window's columns differ in length; moving one into the last full pass would change
    // what its SM runs before the tail.
    let p = problem(1, 3, 3, 2048, 2048, 64, 128);
    let original = built(ScheduleKind::Descending, p, Mask::Causal, 10, LaunchPolicy::Persistent);
    let split = split_tail(&original, &costs()).unwrap().unwrap();
    assert_eq!(split.units()[..40], original.units()[..40]);
}

#[test]
fn each_builtin_names_its_split_version_as_the_split_does() {
    for kind in ScheduleKind::ALL {
        let mask = if kind.check_applicable(&shape(3, 1024), &Mask::Full).is_ok() { Mask::Full } else { Mask::Causal };
        let original = built(kind, shape(3, 1024), mask, 10, LaunchPolicy::InOrder);
        let split = split_tail(&original, &costs()).unwrap().expect("a partial last pass");
        assert_eq!(split.name(), kind.split_name());
        assert_eq!(kind.split_name(), format!("{}{}", kind.name(), schedulers::SPLIT_SUFFIX));
    }
}

#[test]
fn the_tail_is_spread_over_heads_only_where_a_chain_of_adds_would_outlast_it() {
    // Causal, 64 x 128 tiles, 512 tokens: symmetric-shift pairs columns into units of 10 visits, 2 per head. On 10
    // SMs, 8 heads make 16 units: a full pass and a tail of 6 (3 heads). The longest chain of adds into one dQ tile
    // in that tail is 4 (the last q tile gets one from each column), 6 visits at 1.5 each: no longer than the
    // tail's 6 visits per SM, so the tail
    // stays the launch order's last units, the full pass is untouched, and no head joins the tail.
    let p = problem(1, 8, 8, 512, 512, 64, 128);
    let original = built(ScheduleKind::SymmetricShift, p, Mask::Causal, 10, LaunchPolicy::Persistent);
    let split = split_tail(&original, &costs()).unwrap().expect("a partial last pass");
    assert_eq!(split.units()[..10], original.units()[..10]);
    let heads = |units: &[schedulers::Unit]| units.iter().map(|u| u.bh).collect::<std::collections::BTreeSet<_>>();
    assert_eq!(heads(&split.units()[10..]), heads(&original.units()[10..]));
    // With 128 x 128 tiles the same heads' units have 5 visits: 3 per SM in the tail, the chain still 6, so the
    // tail is drawn from the window's heads: more heads than the launch order's last units.
    let p = problem(1, 8, 8, 512, 512, 128, 128);
    let original = built(ScheduleKind::SymmetricShift, p, Mask::Causal, 10, LaunchPolicy::Persistent);
    let split = split_tail(&original, &costs()).unwrap().expect("a partial last pass");
    assert!(heads(&split.units()[10..]).len() > heads(&original.units()[10..]).len());
}
