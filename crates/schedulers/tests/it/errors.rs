//! Every way a schedule can be wrong ends in a specific error, never a panic or a hang.

use std::sync::Arc;

use dag_model::{Mask, ModelError, Order, OrderDefect, TileMask, Unit, Visit};
use schedulers::{CostModel, LaunchPolicy, Machine, Schedule, ScheduleError, ScheduleKind};

use crate::common::{build, ideal, problem};

fn visit(kv: u32, q: u32, rank: u32) -> Visit {
    Visit::new(kv, q, rank, 1.0)
}

/// Two KV tiles, two Q tiles, full mask, one head: units hand-made.
fn two_by_two(units: Vec<Unit>, sms: u32) -> Result<Schedule, ScheduleError> {
    let p = problem(1, 1, 1, 128, 128, 64, 64);
    let tm = Arc::new(TileMask::new(&p, &Mask::Full).unwrap());
    let machine = Machine { sms, launch: LaunchPolicy::InOrder };
    Schedule::validate("hand-made", p, Mask::Full, tm, machine, &CostModel::default(), Order { units })
}

#[test]
fn shift_needs_full_and_symmetric_shift_needs_causal_with_even_tiles() {
    let (p, machine) = ideal(8, 2);
    let err = build(ScheduleKind::Shift, p, Mask::Causal, machine, &CostModel::default()).unwrap_err();
    assert!(err.to_string().starts_with("shift needs a full mask (got mask causal)"), "{err}");
    let err = build(ScheduleKind::SymmetricShift, p, Mask::Full, machine, &CostModel::default()).unwrap_err();
    assert!(err.to_string().contains("needs a causal mask"), "{err}");
    let (p, machine) = ideal(7, 2);
    let err = build(ScheduleKind::SymmetricShift, p, Mask::Causal, machine, &CostModel::default()).unwrap_err();
    assert!(err.to_string().contains("needs an even number of kv tiles (got 7"), "{err}");
}

#[test]
fn a_schedule_that_deadlocks_on_too_few_sms_names_the_waiting_unit() {
    // Unit 0 adds second on Q0, but the first add belongs to unit 1, which one SM never launches.
    let units = vec![
        Unit { bh: 0, visits: vec![visit(0, 0, 1), visit(0, 1, 0)], dkv_ranks: vec![0] },
        Unit { bh: 0, visits: vec![visit(1, 0, 0), visit(1, 1, 1)], dkv_ranks: vec![0] },
    ];
    let err = two_by_two(units.clone(), 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "deadlock on 1 SMs (in-order launch): unit 0 (bh 0) waits for rank 1 of dq tile 0, whose rank 0 belongs \
         to unit 1, which is not launched because every SM is occupied by a waiting unit"
    );
    assert!(two_by_two(units, 2).is_ok());
}

#[test]
fn a_cyclic_order_is_rejected_before_simulation() {
    let units = vec![
        Unit { bh: 0, visits: vec![visit(0, 0, 1), visit(0, 1, 0)], dkv_ranks: vec![0] },
        Unit { bh: 0, visits: vec![visit(1, 1, 1), visit(1, 0, 0)], dkv_ranks: vec![0] },
    ];
    let err = two_by_two(units, 2).unwrap_err();
    assert!(matches!(err, ScheduleError::Model(ModelError::Cycle { unit: 0, q: 0, rank: 1, .. })), "{err}");
}

#[test]
fn structural_defects_are_named() {
    let twice = vec![
        Unit { bh: 0, visits: vec![visit(0, 0, 0), visit(0, 1, 0)], dkv_ranks: vec![0] },
        Unit { bh: 0, visits: vec![visit(1, 0, 1), visit(1, 0, 1)], dkv_ranks: vec![0] },
    ];
    assert!(matches!(two_by_two(twice, 2), Err(ScheduleError::Defect(OrderDefect::VisitedTwice { q: 0, kv: 1, .. }))));
    let missing = vec![Unit { bh: 0, visits: vec![visit(0, 0, 0), visit(0, 1, 0)], dkv_ranks: vec![0] }];
    assert!(matches!(two_by_two(missing, 2), Err(ScheduleError::Defect(OrderDefect::NotVisited { kv: 1, .. }))));
    let bad_rank = vec![
        Unit { bh: 0, visits: vec![visit(0, 0, 0), visit(0, 1, 0)], dkv_ranks: vec![0] },
        Unit { bh: 0, visits: vec![visit(1, 0, 0), visit(1, 1, 1)], dkv_ranks: vec![0] },
    ];
    assert!(matches!(two_by_two(bad_rank, 2), Err(ScheduleError::Defect(OrderDefect::BadRank { q: 0, .. }))));
    let split = vec![
        Unit { bh: 0, visits: vec![visit(0, 0, 0)], dkv_ranks: vec![0] },
        Unit { bh: 0, visits: vec![visit(1, 0, 1), visit(1, 1, 1)], dkv_ranks: vec![0] },
        Unit { bh: 0, visits: vec![visit(0, 1, 0)], dkv_ranks: vec![0] },
    ];
    // Without GQA a column may be split (its dK/dV partials are summed after the main loop); with GQA it may
    // not, since its dK/dV adds are chained per query head.
    let accepted = two_by_two(split.clone(), 2).expect("a split column without GQA is valid");
    assert_eq!(accepted.order().split_columns(accepted.problem()), 1);
    let gqa = problem(1, 2, 1, 128, 128, 64, 64);
    let tm = Arc::new(TileMask::new(&gqa, &Mask::Full).unwrap());
    let mut units = split;
    units.extend([
        Unit { bh: 1, visits: vec![visit(0, 0, 1), visit(0, 1, 1)], dkv_ranks: vec![1] },
        Unit { bh: 1, visits: vec![visit(1, 0, 0), visit(1, 1, 0)], dkv_ranks: vec![1] },
    ]);
    let machine = Machine { sms: 4, launch: LaunchPolicy::InOrder };
    let err = Schedule::validate("hand-made", gqa, Mask::Full, tm, machine, &CostModel::default(), Order { units });
    assert!(matches!(err, Err(ScheduleError::Defect(OrderDefect::SplitColumn { kv: 0, .. }))), "{err:?}");
    let zero_sms = two_by_two(vec![], 0);
    assert!(matches!(zero_sms, Err(ScheduleError::NoSms)));
}

#[test]
fn bad_costs_are_rejected() {
    let (p, machine) = ideal(4, 1);
    let costs = CostModel { reduce: -1.0, ..CostModel::default() };
    let err = build(ScheduleKind::Naive, p, Mask::Full, machine, &costs).unwrap_err();
    assert_eq!(err.to_string(), "cost reduce must be a finite number from 0 to 1e9 (got -1)");
}

#[test]
fn dkv_ranks_must_be_a_permutation_of_the_query_heads() {
    // Two query heads share one KV head; each visits both KV tiles as one unit per column.
    let gqa = problem(1, 2, 1, 128, 128, 64, 64);
    let tm = Arc::new(TileMask::new(&gqa, &Mask::Full).unwrap());
    let machine = Machine { sms: 4, launch: LaunchPolicy::InOrder };
    let units = |ranks: [u32; 4]| {
        let mut v = Vec::new();
        for (i, (bh, kv)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
            // dQ ranks by KV tile; dK/dV ranks as given.
            v.push(Unit { bh, visits: vec![visit(kv, 0, kv), visit(kv, 1, kv)], dkv_ranks: vec![ranks[i]] });
        }
        Order { units: v }
    };
    let validate =
        |order| Schedule::validate("hand-made", gqa, Mask::Full, tm.clone(), machine, &CostModel::default(), order);
    assert!(validate(units([0, 0, 1, 1])).is_ok());
    let err = validate(units([0, 0, 0, 1]));
    assert!(matches!(err, Err(ScheduleError::Defect(OrderDefect::BadDkvRank { kv: 0, rank: 0, .. }))), "{err:?}");
    let err = validate(units([0, 0, 2, 1]));
    assert!(matches!(err, Err(ScheduleError::Defect(OrderDefect::BadDkvRank { kv: 0, rank: 2, .. }))), "{err:?}");
}
