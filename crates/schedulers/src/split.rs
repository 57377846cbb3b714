//! Splitting a schedule's last, partial pass over all SMs (`--split-tail`).
//!
//! With U units on P SMs, U mod P units run in a last pass while the other SMs idle: at the paper's full-mask
//! shapes, 4096 single-column units (head dim 64) on 132 SMs leave 4 columns for the last pass, and the kernel
//! takes 32 columns' time where the average SM has 31.03 columns of work (3.1% above the work; at head dim 128,
//! 2048 units, 15.52 against 16). No schedule of whole columns can do better (`dashc bounds`, column packing).
//!
//! This transform keeps every unit of the full passes as it is and cuts the last pass's visits, concatenated in
//! launch order, into P shares of equal compute. A share becomes one or more units (a piece of each original
//! unit it touches); pieces of one KV column on several SMs each write their dK/dV partial, and the partials are
//! summed in launch order after the main loop (the sm90 main loop's dK/dV fix-up; docs/hopper.md). Each piece
//! pays a unit's start and finish again, which the cost model charges.
//!
//! The dQ ranks of the full passes keep their order; the pieces' contributions rank after them, in the order
//! in which they arrive in an idealized run of the last pass (every SM starting it at once, no waits), so that
//! no piece waits for a contribution that arrives later (model.md, Lemma 1).

use dag_model::{Order, Problem, Unit, Visit, Weights};

use crate::{CostModel, LaunchPolicy, Machine, Schedule, ScheduleError};

/// The suffix of a split schedule's name.
pub const SPLIT_SUFFIX: &str = "+split";

/// `schedule` with its last, partial pass split over all SMs, validated under `costs`; `None` when there is
/// nothing to split (the units fill their last pass) or the problem has grouped-query heads (whose dK/dV adds
/// are chained per query head, so a column must stay whole).
pub fn split_tail(schedule: &Schedule, costs: &CostModel) -> Result<Option<Schedule>, ScheduleError> {
    let problem = *schedule.problem();
    let machine = schedule.machine();
    let sms = machine.sms as usize;
    let units = schedule.units();
    let tail_start = units.len() / sms * sms;
    if problem.group() > 1 || tail_start == units.len() || sms < 2 {
        return Ok(None);
    }
    let tail = &units[tail_start..];

    // Shares of equal compute: a visit goes to the share its midpoint falls in.
    let cost = |v: &Visit| costs.compute(v.fraction());
    let total: f64 = tail.iter().flat_map(|u| &u.visits).map(cost).sum();
    let share_len = total / sms as f64;
    // Pieces: (share, original tail unit, visit range).
    let mut pieces: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut done = 0.0;
    for (ui, unit) in tail.iter().enumerate() {
        for (vi, v) in unit.visits.iter().enumerate() {
            let c = cost(v);
            let share = (((done + c / 2.0) / share_len) as usize).min(sms - 1);
            done += c;
            match pieces.last_mut() {
                Some(last) if last.0 == share && last.1 == ui => last.3 = vi + 1,
                _ => pieces.push((share, ui, vi, vi + 1)),
            }
        }
    }
    if pieces.len() == tail.len() {
        return Ok(None); // every tail unit is one share: nothing moves
    }

    // Launch positions: the first piece of every share in one pass, so that under the persistent launch each
    // share is one CTA's (CTA p runs positions p, p + P, ...); shares with more pieces first, so that their
    // further pieces land on the same CTAs in the next pass. (With equally long units a share spans at most two.)
    let shares = pieces.last().map_or(0, |p| p.0 + 1);
    let mut by_share: Vec<Vec<usize>> = vec![Vec::new(); shares];
    for (i, p) in pieces.iter().enumerate() {
        by_share[p.0].push(i);
    }
    by_share.retain(|s| !s.is_empty());
    by_share.sort_by_key(|s| std::cmp::Reverse(s.len())); // stable: ties keep the share order
    let passes = by_share.iter().map(Vec::len).max().unwrap_or(0);
    let mut placed: Vec<usize> = Vec::with_capacity(pieces.len());
    for pass in 0..passes {
        placed.extend(by_share.iter().filter_map(|s| s.get(pass).copied()));
    }

    let mut order = Order { units: units[..tail_start].to_vec() };
    for &i in &placed {
        let (_, ui, a, b) = pieces[i];
        let original = &tail[ui];
        let visits = original.visits[a..b].to_vec();
        // Each KV run of the piece keeps the dK/dV rank its column had (0 without GQA).
        let runs: Vec<u32> = original.kv_runs().collect();
        let dkv_ranks = Unit { bh: original.bh, visits: visits.clone(), dkv_ranks: Vec::new() }
            .kv_runs()
            .map(|kv| original.dkv_ranks[runs.iter().position(|&r| r == kv).expect("the piece's kv is the unit's")])
            .collect();
        order.units.push(Unit { bh: original.bh, visits, dkv_ranks });
    }
    rerank_tail(&mut order, tail_start, machine, costs, &problem);

    let name = format!("{}{SPLIT_SUFFIX}", schedule.name());
    let split =
        Schedule::validate(name, problem, schedule.mask().clone(), schedule.shared_tile_mask(), machine, costs, order)?;
    Ok(Some(split))
}

/// Ranks of every dQ tile the units from `tail_start` on contribute to: the earlier units' contributions keep
/// their relative order and come first; the tail's follow in idealized arrival order (ties: launch position,
/// then visit).
fn rerank_tail(order: &mut Order, tail_start: usize, machine: Machine, costs: &CostModel, problem: &Problem) {
    let (sms, launch) = (machine.sms as usize, machine.launch);
    let m = problem.m_tiles() as usize;
    let tiles = problem.bh_count() as usize * m;
    // Idealized arrival of every tail visit: the SMs start the tail together at 0.
    let mut sm_free = vec![0.0f64; sms];
    let mut arrivals: Vec<(usize, usize, f64)> = Vec::new(); // (unit, visit, time)
    let reduce = if costs.decoupled() { 0.0 } else { costs.reduce };
    for (ui, unit) in order.units.iter().enumerate().skip(tail_start) {
        let sm = match launch {
            LaunchPolicy::Persistent => ui % sms,
            LaunchPolicy::InOrder => {
                (0..sms).min_by(|&a, &b| sm_free[a].total_cmp(&sm_free[b]).then(a.cmp(&b))).expect("sms >= 2")
            }
        };
        let mut t = sm_free[sm] + costs.unit_start;
        for (vi, v) in unit.visits.iter().enumerate() {
            t += costs.compute(v.fraction());
            arrivals.push((ui, vi, t));
            t += reduce;
        }
        sm_free[sm] = t + costs.unit_finish;
    }

    // The dQ tiles the tail touches (an index into `lists` per tile of the problem), and their contributions:
    // earlier ones with their original rank, then the tail's in arrival order. Vectors, not maps: the full passes
    // hold up to tens of millions of visits.
    let tile_of = |bh: u32, q: u16| bh as usize * m + q as usize;
    let mut list_of = vec![u32::MAX; tiles];
    type Lists = Vec<(Vec<(u16, usize, usize)>, Vec<(usize, usize)>)>;
    let mut lists: Lists = Vec::new();
    for &(ui, vi, _) in &arrivals {
        let u = &order.units[ui];
        let slot = &mut list_of[tile_of(u.bh, u.visits[vi].q)];
        if *slot == u32::MAX {
            *slot = lists.len() as u32;
            lists.push((Vec::new(), Vec::new()));
        }
    }
    for (ui, unit) in order.units.iter().enumerate().take(tail_start) {
        for (vi, v) in unit.visits.iter().enumerate() {
            let slot = list_of[tile_of(unit.bh, v.q)];
            if slot != u32::MAX {
                lists[slot as usize].0.push((v.rank, ui, vi));
            }
        }
    }
    let mut sorted = arrivals;
    sorted.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
    for (ui, vi, _) in sorted {
        let u = &order.units[ui];
        lists[list_of[tile_of(u.bh, u.visits[vi].q)] as usize].1.push((ui, vi));
    }
    for (mut earlier, tail) in lists {
        earlier.sort_unstable();
        let ordered = earlier.into_iter().map(|(_, ui, vi)| (ui, vi)).chain(tail);
        for (rank, (ui, vi)) in ordered.enumerate() {
            let v = &mut order.units[ui].visits[vi];
            *v = Visit::new(v.kv as u32, v.q as u32, rank as u32, v.fraction());
        }
    }
}
