//! Local-search moves on a plan: launch order (swap, insert, reverse a segment), unit composition (merge two
//! units of one head, split one), and visit orders (a new walk for one run).
//!
//! Moves are aimed where the makespan is decided: the units of the SM that ends last, the units that end
//! latest, and the units that waited most; partners are drawn near them in launch order, so that a candidate
//! differs from its parent late in the order and resumes from a late snapshot.

use std::sync::Arc;

use super::plan::{Plan, PlanUnit, Tables, Walk};
use super::rng::Rng;
use super::sim::Trace;

/// A unit never holds more KV tiles than this: longer units only coarsen the packing.
const MAX_RUNS: usize = 4;

/// Where to aim, derived from the parent's simulation.
pub(crate) struct Guide {
    /// Launch positions of the units of the SM that ends last, in launch order.
    critical: Vec<usize>,
    /// Launch positions of the latest-ending units.
    late: Vec<usize>,
    /// Launch positions of the units that waited longest (only those that waited).
    waiters: Vec<usize>,
    /// Launch positions of units holding more than one KV tile.
    multi: Vec<usize>,
}

impl Guide {
    pub fn new(plan: &Plan, trace: &Trace) -> Guide {
        let units = plan.units.len();
        let last =
            (0..units).max_by(|&a, &b| trace.unit_end[a].total_cmp(&trace.unit_end[b]).then(b.cmp(&a))).unwrap_or(0);
        let critical_sm = trace.unit_sm.get(last).copied().unwrap_or(0);
        let critical = (0..units).filter(|&u| trace.unit_sm[u] == critical_sm).collect();
        let top = |key: &dyn Fn(usize) -> f64, count: usize, keep: &dyn Fn(usize) -> bool| {
            let mut all: Vec<usize> = (0..units).filter(|&u| keep(u)).collect();
            all.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
            all.truncate(count);
            all
        };
        let late = top(&|u| trace.unit_end[u], 32, &|_| true);
        let waiters = top(&|u| trace.unit_wait[u], 64, &|u| trace.unit_wait[u] > 0.0);
        let multi = (0..units).filter(|&u| plan.units[u].runs.len() > 1).collect();
        Guide { critical, late, waiters, multi }
    }
}

/// A candidate and the first launch position where it differs from its parent.
pub(crate) type Candidate = (Plan, usize);

/// Proposes one neighbour of `plan`.
pub(crate) fn propose(plan: &Plan, guide: &Guide, tables: &Tables, rng: &mut Rng) -> Candidate {
    let mut next = plan.clone();
    let first = match rng.below(100) {
        0..25 => swap(&mut next, guide, tables, rng),
        25..45 => insert(&mut next, guide, tables, rng),
        45..75 => rewalk(&mut next, guide, tables, rng),
        75..85 => merge(&mut next, guide, tables, rng),
        85..95 => split(&mut next, guide, tables, rng),
        _ => reverse(&mut next, guide, tables, rng),
    };
    match first {
        Some(f) => (next, f),
        // The chosen move had nothing to act on (no unit to split, no partner to merge): swap instead.
        None => {
            let mut next = plan.clone();
            let f = swap(&mut next, guide, tables, rng).unwrap_or(0);
            (next, f)
        }
    }
}

/// A launch position where the makespan is decided.
fn target(plan: &Plan, guide: &Guide, tables: &Tables, rng: &mut Rng) -> usize {
    let units = plan.units.len();
    let pick = |list: &[usize], rng: &mut Rng| (!list.is_empty()).then(|| list[rng.below(list.len())]);
    let aimed = match rng.below(10) {
        0..2 => {
            // The last few units of the critical SM decide its end.
            let tail = guide.critical.len().saturating_sub(4);
            pick(&guide.critical[tail..], rng)
        }
        2..4 => pick(&guide.critical, rng),
        4..7 => pick(&guide.late, rng),
        _ => None,
    };
    aimed.unwrap_or_else(|| {
        let window = units.min(4 * tables.sms).max(1);
        rng.range(units - window, units)
    })
}

/// A launch position near `i` (other than `i` when there is one).
fn partner(units: usize, i: usize, tables: &Tables, rng: &mut Rng) -> usize {
    if units < 2 {
        return i;
    }
    let w = match rng.below(10) {
        0..7 => tables.sms,
        7..9 => 4 * tables.sms,
        _ => units,
    };
    let lo = i.saturating_sub(w);
    let hi = (i + w + 1).min(units);
    loop {
        let j = rng.range(lo, hi);
        if j != i {
            return j;
        }
    }
}

fn swap(plan: &mut Plan, guide: &Guide, tables: &Tables, rng: &mut Rng) -> Option<usize> {
    let units = plan.units.len();
    let i = target(plan, guide, tables, rng);
    let j = partner(units, i, tables, rng);
    if i == j || Arc::ptr_eq(&plan.units[i], &plan.units[j]) {
        return None;
    }
    plan.units.swap(i, j);
    Some(i.min(j))
}

fn insert(plan: &mut Plan, guide: &Guide, tables: &Tables, rng: &mut Rng) -> Option<usize> {
    let units = plan.units.len();
    let i = target(plan, guide, tables, rng);
    let j = partner(units, i, tables, rng);
    if i == j {
        return None;
    }
    let u = plan.units.remove(i);
    plan.units.insert(j, u);
    Some(i.min(j))
}

fn reverse(plan: &mut Plan, guide: &Guide, tables: &Tables, rng: &mut Rng) -> Option<usize> {
    let units = plan.units.len();
    let i = target(plan, guide, tables, rng);
    let j = partner(units, i, tables, rng);
    let (lo, hi) = (i.min(j), i.max(j));
    if hi - lo < 2 {
        return None;
    }
    plan.units[lo..=hi].reverse();
    Some(lo)
}

fn rewalk(plan: &mut Plan, guide: &Guide, tables: &Tables, rng: &mut Rng) -> Option<usize> {
    let i = if !guide.waiters.is_empty() && rng.chance(1, 2) {
        guide.waiters[rng.below(guide.waiters.len())]
    } else {
        target(plan, guide, tables, rng)
    };
    let mut unit = PlanUnit::clone(&plan.units[i]);
    let r = rng.below(unit.runs.len());
    let len = tables.col_len(unit.runs[r].kv);
    if len < 2 {
        return None;
    }
    let old = unit.runs[r].walk.clone();
    let first_pos = old.at(0, len);
    let nudge = |s: u32, rng: &mut Rng| {
        let d = 1 + rng.below(3.min(len as usize - 1)) as u32;
        if rng.chance(1, 2) { (s + d) % len } else { (s + len - d) % len }
    };
    let walk = match rng.below(10) {
        0..3 => Walk::Up(rng.below(len as usize) as u32),
        3..6 => Walk::Down(rng.below(len as usize) as u32),
        6..8 => match old {
            Walk::Up(s) => Walk::Up(nudge(s, rng)),
            Walk::Down(s) => Walk::Down(nudge(s, rng)),
            Walk::List(_) => Walk::Up(nudge(first_pos, rng)),
        },
        _ => match old {
            Walk::Down(_) => Walk::Up(first_pos),
            _ => Walk::Down(first_pos),
        },
    };
    if walk == old {
        return None;
    }
    unit.runs[r].walk = walk;
    plan.units[i] = Arc::new(unit);
    Some(i)
}

fn merge(plan: &mut Plan, guide: &Guide, tables: &Tables, rng: &mut Rng) -> Option<usize> {
    let units = plan.units.len();
    let i = target(plan, guide, tables, rng);
    let bh = plan.units[i].bh;
    let room = MAX_RUNS.checked_sub(plan.units[i].runs.len())?;
    // Units of the same head near i, both sides, nearest first.
    let w = 2 * tables.sms;
    let mut found = Vec::new();
    for d in 1..=w {
        for j in [i.checked_sub(d), (i + d < units).then_some(i + d)].into_iter().flatten() {
            if plan.units[j].bh == bh && plan.units[j].runs.len() <= room {
                found.push(j);
            }
        }
        if found.len() >= 4 {
            break;
        }
    }
    if found.is_empty() {
        return None;
    }
    let j = found[rng.below(found.len())];
    let (a, b) = if rng.chance(1, 2) { (i, j) } else { (j, i) };
    let mut runs = plan.units[a].runs.clone();
    runs.extend(plan.units[b].runs.iter().cloned());
    let (lo, hi) = (i.min(j), i.max(j));
    plan.units[lo] = Arc::new(PlanUnit { bh, runs });
    plan.units.remove(hi);
    Some(lo)
}

fn split(plan: &mut Plan, guide: &Guide, tables: &Tables, rng: &mut Rng) -> Option<usize> {
    if guide.multi.is_empty() {
        return None;
    }
    let i = guide.multi[rng.below(guide.multi.len())];
    let unit = &plan.units[i];
    let at = rng.range(1, unit.runs.len());
    let head = PlanUnit { bh: unit.bh, runs: unit.runs[..at].to_vec() };
    let tail = PlanUnit { bh: unit.bh, runs: unit.runs[at..].to_vec() };
    plan.units[i] = Arc::new(head);
    let units = plan.units.len();
    let to = rng.range(i + 1, (i + tables.sms + 1).min(units) + 1);
    plan.units.insert(to, Arc::new(tail));
    Some(i)
}
