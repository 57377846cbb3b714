//! Starting plans built by list scheduling.
//!
//! With arrival-order ranks a unit waits only when another unit of its head is adding into the same dQ tile
//! at that moment, so units behave almost like independent jobs on P machines, and the classic rule applies:
//! launch by critical-path priority, which for a chain is its own length (longest first), so that the short
//! units fill the tail. Ties are broken so that consecutive launches belong to different heads (and under GQA
//! to different KV groups): units running side by side then rarely meet on a tile. Visit orders come in a few
//! families (descending, ascending, cyclic shifts that start each column of a head at a different tile);
//! the search evaluates every seed and starts from the best.

use std::sync::Arc;

use super::plan::{Plan, PlanUnit, Run, Tables, Walk};

/// (batch, head) pairs in the order that spreads them: heads of one KV group far apart.
fn spread_key(tables: &Tables, bh: u32) -> (u32, u32, u32) {
    let (b, h) = (bh / tables.heads, bh % tables.heads);
    (h % tables.group, b, h / tables.group)
}

/// How each run of a seed walks its column; `ordinal` is the column's index among the head's non-empty
/// columns.
#[derive(Clone, Copy)]
enum Family {
    Down,
    Up,
    Shift,
    ShiftDown,
}

impl Family {
    fn walk(self, len: u32, ordinal: u32) -> Walk {
        let o = ordinal % len;
        match self {
            Family::Down => Walk::Down(len - 1),
            Family::Up => Walk::Up(0),
            Family::Shift => Walk::Up(o),
            Family::ShiftDown => Walk::Down(len - 1 - o),
        }
    }
}

/// Units sorted longest first, ties by first KV tile, then spread over heads.
fn lpt(tables: &Tables, units: Vec<PlanUnit>) -> Plan {
    let mut keyed: Vec<(f64, PlanUnit)> = units.into_iter().map(|u| (u.work(tables), u)).collect();
    keyed.sort_by(|(wa, a), (wb, b)| {
        wb.total_cmp(wa)
            .then(a.runs[0].kv.cmp(&b.runs[0].kv))
            .then(spread_key(tables, a.bh).cmp(&spread_key(tables, b.bh)))
    });
    Plan { units: keyed.into_iter().map(|(_, u)| Arc::new(u)).collect() }
}

/// The list-scheduling seeds, named.
pub(crate) fn list_seeds(tables: &Tables) -> Vec<(String, Plan)> {
    let columns: Vec<u32> = tables.columns().collect();
    let mut out = Vec::new();
    let families =
        [("down", Family::Down), ("up", Family::Up), ("shift", Family::Shift), ("shift-down", Family::ShiftDown)];
    for (name, family) in families {
        let units = (0..tables.bh_count)
            .flat_map(|bh| {
                columns.iter().enumerate().map(move |(i, &kv)| PlanUnit {
                    bh,
                    runs: vec![Run { kv, walk: family.walk(tables.col_len(kv), i as u32) }],
                })
            })
            .collect();
        out.push((format!("lpt/{name}"), lpt(tables, units)));
    }
    // Complementary pairs (longest column with shortest), as symmetric shift does for causal masks: equal
    // unit lengths pack P SMs evenly when the pair count fits the machine.
    let mut by_work: Vec<(usize, u32)> = columns.iter().copied().enumerate().collect();
    by_work.sort_by(|a, b| tables.column_work(b.1).total_cmp(&tables.column_work(a.1)).then(a.1.cmp(&b.1)));
    for (name, long, short) in
        [("pairs/shift", Family::Shift, Family::Down), ("pairs/down", Family::Down, Family::Down)]
    {
        let mut units = Vec::new();
        for bh in 0..tables.bh_count {
            let (mut i, mut j) = (0, by_work.len());
            while i < j {
                j -= 1;
                let (oi, kv) = by_work[i];
                let mut runs = vec![Run { kv, walk: long.walk(tables.col_len(kv), oi as u32) }];
                if i < j {
                    let (oj, kv2) = by_work[j];
                    runs.push(Run { kv: kv2, walk: short.walk(tables.col_len(kv2), oj as u32) });
                }
                units.push(PlanUnit { bh, runs });
                i += 1;
            }
        }
        out.push((name.to_string(), lpt(tables, units)));
    }
    out
}

/// Packing seeds: columns are indivisible jobs on P machines, so balance their loads first (longest
/// processing time, then pairwise interchange from the most loaded machine), then turn the assignment into a
/// launch order. Each machine's columns of one head become one unit; units are launched in the order of their
/// intended start times (ties by machine), which in-order dispatch reproduces as long as the simulated times
/// follow the loads, since every SM takes the next unit the moment it frees up.
pub(crate) fn packed_seeds(tables: &Tables) -> Vec<(String, Plan)> {
    let p = tables.sms;
    let columns: Vec<u32> = tables.columns().collect();
    let ordinal = |kv: u32| columns.binary_search(&kv).expect("a column of the list") as u32;
    // Jobs (bh, kv, work), longest first, spread over heads.
    let mut jobs: Vec<(u32, u32, f64)> =
        (0..tables.bh_count).flat_map(|bh| columns.iter().map(move |&kv| (bh, kv, tables.column_work(kv)))).collect();
    jobs.sort_by(|a, b| {
        b.2.total_cmp(&a.2).then(a.1.cmp(&b.1)).then(spread_key(tables, a.0).cmp(&spread_key(tables, b.0)))
    });
    if jobs.len() <= p {
        return Vec::new();
    }
    let machines = balance(&jobs, p);
    let mut out = Vec::new();
    for (name, family) in [("packed/shift", Family::Shift), ("packed/down", Family::Down)] {
        // (intended start, machine, unit)
        let mut timed: Vec<(f64, usize, PlanUnit)> = Vec::new();
        for (k, list) in machines.iter().enumerate() {
            let mut units: Vec<(f64, PlanUnit)> = list
                .iter()
                .map(|&j| {
                    let (bh, kv, _) = jobs[j];
                    let unit =
                        PlanUnit { bh, runs: vec![Run { kv, walk: family.walk(tables.col_len(kv), ordinal(kv)) }] };
                    (unit.work(tables), unit)
                })
                .collect();
            units.sort_by(|a, b| b.0.total_cmp(&a.0));
            let mut t = 0.0;
            for (w, u) in units {
                timed.push((t, k, u));
                t += w + tables.costs.unit_overhead(tables.persistent);
            }
        }
        timed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        out.push((name.to_string(), Plan { units: timed.into_iter().map(|(_, _, u)| Arc::new(u)).collect() }));
    }
    out
}

/// Assigns `jobs` (sorted longest first) to `p` machines: greedy to the least loaded, then moves and swaps
/// out of the most loaded machine while they lower it. Returns each machine's job indices.
fn balance(jobs: &[(u32, u32, f64)], p: usize) -> Vec<Vec<usize>> {
    let mut load = vec![0.0f64; p];
    let mut on: Vec<Vec<usize>> = vec![Vec::new(); p];
    for (j, job) in jobs.iter().enumerate() {
        let k = (0..p).min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b))).expect("p > 0");
        load[k] += job.2;
        on[k].push(j);
    }
    // Each accepted change lowers the top machine strictly, so the loop ends; the cap bounds its time.
    for _ in 0..(jobs.len() * 4) {
        let top = (0..p).max_by(|&a, &b| load[a].total_cmp(&load[b]).then(b.cmp(&a))).expect("p > 0");
        let high = load[top];
        // The change that leaves the lower of the two machines' new maximum: (new max, from, to, job, other).
        let mut best: Option<(f64, usize, usize, Option<usize>)> = None;
        for (a, &j) in on[top].iter().enumerate() {
            let pj = jobs[j].2;
            for k in (0..p).filter(|&k| k != top) {
                let mut consider = |d: f64, other: Option<usize>| {
                    if d > 0.0 && load[k] + d < high {
                        let new_max = (high - d).max(load[k] + d);
                        if best.is_none_or(|b| new_max < b.0) {
                            best = Some((new_max, a, k, other));
                        }
                    }
                };
                consider(pj, None);
                for (b, &i) in on[k].iter().enumerate() {
                    consider(pj - jobs[i].2, Some(b));
                }
            }
        }
        let Some((_, a, k, other)) = best else { break };
        let j = on[top][a];
        match other {
            None => {
                on[top].swap_remove(a);
                on[k].push(j);
                load[top] -= jobs[j].2;
                load[k] += jobs[j].2;
            }
            Some(b) => {
                let i = on[k][b];
                on[top][a] = i;
                on[k][b] = j;
                let d = jobs[j].2 - jobs[i].2;
                load[top] -= d;
                load[k] += d;
            }
        }
    }
    on
}
