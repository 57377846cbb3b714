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
