//! Splitting a schedule's last, partial pass over all SMs (`--split-tail`).
//!
//! With U units on P SMs, U mod P units run in a last pass while the other SMs idle: at the paper's full-mask
//! shapes, 4096 single-column units (head dim 64) on 132 SMs leave 4 columns for the last pass, and the kernel
//! takes 32 columns' time where the average SM has 31.03 columns of work (3.1% above the work; at head dim 128,
//! 2048 units, 15.52 against 16). No schedule of whole columns can do better (`dashc bounds`, column packing).
//!
//! This transform keeps every unit of the full passes as it is and cuts the last pass's visits, concatenated in
//! launch order, into P shares of equal visit counts. A share becomes one or more units (a piece of each original
//! unit it touches); pieces of one KV column on several SMs each write their dK/dV partial, and the partials are
//! summed in launch order after the main loop (the sm90 main loop's dK/dV fix-up; docs/hopper.md). Each piece
//! pays a unit's start and finish again, which the cost model charges.
//!
//! Which units form the last pass: where a chain of dQ adds in the plain tail would outlast it
//! (`tail_chain_outlasts_tail`), the last full pass and the tail together (P + T units) are reordered so that the
//! tail's T units come from every (batch, head) of that window in proportion to its units there (each head's last
//! ones). Taken as the launch order's last T units, the tail of a causal schedule is mostly one head, whose
//! dQ tiles then receive up to one contribution per column of that head within the tail's short time: each add
//! and its hand-off take about a visit's time, so the chain of adds to the head's last dQ tiles outlasts the
//! split tail (the simulator: 1.4% of the time waiting at head dim 64, causal, 16384 tokens).
//!
//! The dQ ranks of the passes before that window keep their order; the window's contributions rank after them,
//! in the order in which they arrive in an idealized run of the last full pass and the split tail (every SM
//! starting the window at once, one time unit per visit, no overheads or waits), so that no visit waits for a
//! contribution that arrives later (model.md, Lemma 1).

use dag_model::{Order, Problem, Unit, Visit};

use crate::{CostModel, LaunchPolicy, Machine, Schedule, ScheduleError};

/// The suffix of a split schedule's name.
pub const SPLIT_SUFFIX: &str = "+split";

/// Why `split_tail` leaves a schedule whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSplit {
    #[error(
        "nothing to split: grouped-query heads keep every KV column whole (their dK/dV adds are chained per query head)"
    )]
    GroupedQueryHeads,
    #[error("nothing to split: its {units} units fill their last pass on {sms} SMs")]
    LastPassFull { units: usize, sms: usize },
    #[error("nothing to split: its last pass cannot be cut into one share per SM")]
    NoShares,
}

/// `schedule` with its last, partial pass split over all SMs, validated under `costs` (the cut and the ranks do
/// not depend on them); `None` when there is nothing to split (`split_tail_or_why` says why).
pub fn split_tail(schedule: &Schedule, costs: &CostModel) -> Result<Option<Schedule>, ScheduleError> {
    Ok(split_tail_or_why(schedule, costs)?.ok())
}

/// `split_tail`, or why there is nothing to split: the units fill their last pass, the persistent launch would
/// need more than two units of one share on a CTA, or the problem has grouped-query heads (whose dK/dV adds are
/// chained per query head, so a column must stay whole).
pub fn split_tail_or_why(schedule: &Schedule, costs: &CostModel) -> Result<Result<Schedule, NoSplit>, ScheduleError> {
    let problem = *schedule.problem();
    let machine = schedule.machine();
    let sms = machine.sms as usize;
    let units = schedule.units();
    let tail_start = units.len() / sms * sms;
    if problem.group() > 1 {
        return Ok(Err(NoSplit::GroupedQueryHeads));
    }
    if tail_start == units.len() {
        return Ok(Err(NoSplit::LastPassFull { units: units.len(), sms }));
    }
    if sms < 2 {
        return Ok(Err(NoSplit::NoShares));
    }
    let (window_start, window) = spread_tail_over_heads(units, sms);
    let (last_full_pass, tail) = window.split_at(tail_start - window_start);

    // Shares of equal visit counts: visit t of the T in the concatenated tail goes to the share its midpoint falls
    // in, floor((t + 1/2) * P / T). The cut and the ranks below count visits and nothing else, so that a split is
    // a function of its schedule alone: `bench` (uncalibrated costs) and `validate` (calibrated ones) build the
    // same pieces and ranks.
    let total: usize = tail.iter().map(|u| u.visits.len()).sum();
    // Pieces: (share, original tail unit, visit range).
    let mut pieces: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut done = 0usize;
    for (ui, unit) in tail.iter().enumerate() {
        for vi in 0..unit.visits.len() {
            let share = (2 * done + 1) * sms / (2 * total);
            done += 1;
            match pieces.last_mut() {
                Some(last) if last.0 == share && last.1 == ui => last.3 = vi + 1,
                _ => pieces.push((share, ui, vi, vi + 1)),
            }
        }
    }
    if pieces.len() == tail.len() {
        return Ok(Err(NoSplit::NoShares)); // every tail unit is one share: nothing moves
    }

    // Launch positions: the first unit of every share in one pass, so that under the persistent launch each share
    // is one CTA's (CTA p runs positions p, p + P, ...); shares with two units first, so that their second units
    // land on the same CTAs in the next pass. A share of more than two pieces (short units, as a causal column
    // order's last ones) first joins its consecutive pieces of one (batch, head) into one unit of several KV
    // runs; under the persistent launch a share still of more than two units could not stay on one CTA, and the
    // tail is left whole.
    let shares = pieces.last().map_or(0, |p| p.0 + 1);
    let mut by_share: Vec<Vec<Vec<usize>>> = vec![Vec::new(); shares]; // share -> its units -> their pieces
    for (i, p) in pieces.iter().enumerate() {
        by_share[p.0].push(vec![i]);
    }
    for units_of_share in &mut by_share {
        if units_of_share.len() > 2 {
            let mut joined: Vec<Vec<usize>> = Vec::new();
            for piece in units_of_share.drain(..).flatten() {
                match joined.last_mut() {
                    Some(unit) if tail[pieces[unit[0]].1].bh == tail[pieces[piece].1].bh => unit.push(piece),
                    _ => joined.push(vec![piece]),
                }
            }
            *units_of_share = joined;
        }
    }
    by_share.retain(|s| !s.is_empty());
    if machine.launch == LaunchPolicy::Persistent && by_share.iter().any(|s| s.len() > 2) {
        return Ok(Err(NoSplit::NoShares));
    }
    by_share.sort_by_key(|s| std::cmp::Reverse(s.len())); // stable: ties keep the share order
    let passes = by_share.iter().map(Vec::len).max().unwrap_or(0);
    let mut placed: Vec<&[usize]> = Vec::with_capacity(pieces.len());
    for pass in 0..passes {
        placed.extend(by_share.iter().filter_map(|s| s.get(pass).map(Vec::as_slice)));
    }

    let mut order = Order { units: units[..window_start].to_vec() };
    order.units.extend_from_slice(last_full_pass);
    for unit_pieces in placed {
        let bh = tail[pieces[unit_pieces[0]].1].bh;
        let visits = unit_pieces.iter().flat_map(|&i| &tail[pieces[i].1].visits[pieces[i].2..pieces[i].3]).copied();
        let mut unit = Unit { bh, visits: visits.collect(), dkv_ranks: Vec::new() };
        // Without GQA (never split) every KV run's dK/dV rank is 0.
        unit.dkv_ranks = vec![0; unit.kv_runs().count()];
        order.units.push(unit);
    }
    rerank_tail(&mut order, window_start, machine, &problem);

    let name = format!("{}{SPLIT_SUFFIX}", schedule.name());
    let split =
        Schedule::validate(name, problem, schedule.mask().clone(), schedule.shared_tile_mask(), machine, costs, order)?;
    Ok(Ok(split))
}

/// Where the window (the last full pass and the tail) starts in `units`, and its units reordered: those that stay
/// in the full pass, in launch order, then the tail's, in launch order. The tail takes from every (batch, head) of
/// the window a share of its T units in proportion to that head's units in the window (largest remainders; ties
/// to the head that comes first), each head's last ones. Where there is no full pass, or where the window's units
/// differ in length (spt, descending, naive at causal masks), the window is the tail alone, in its order: there a
/// swap between the last full pass and the tail would change what each SM runs before the tail, which the equal
/// shares assume to be the same. Where no chain of dQ adds in the plain tail would outlast it
/// (`tail_chain_outlasts_tail`), the window is the tail alone too. Only the window is copied: the passes before it
/// may hold millions of visits.
fn spread_tail_over_heads(units: &[Unit], sms: usize) -> (usize, Vec<Unit>) {
    let tail_start = units.len() / sms * sms;
    let window_start = tail_start.saturating_sub(sms);
    let window = &units[window_start..];
    if window_start == tail_start
        || window.iter().any(|u| u.visits.len() != window[0].visits.len())
        || !tail_chain_outlasts_tail(&units[tail_start..], sms)
    {
        return (tail_start, units[tail_start..].to_vec());
    }
    let tail_len = units.len() - tail_start;
    // The window's heads in order of first appearance, with their units' positions in the window.
    let mut heads: Vec<(u32, Vec<usize>)> = Vec::new();
    for (i, unit) in window.iter().enumerate() {
        match heads.iter_mut().find(|(bh, _)| *bh == unit.bh) {
            Some((_, members)) => members.push(i),
            None => heads.push((unit.bh, vec![i])),
        }
    }
    // Quotas by largest remainder of tail_len * n_h / window.len().
    let mut quotas: Vec<usize> = heads.iter().map(|(_, m)| tail_len * m.len() / window.len()).collect();
    let mut by_remainder: Vec<usize> = (0..heads.len()).collect();
    by_remainder.sort_by_key(|&h| std::cmp::Reverse(tail_len * heads[h].1.len() % window.len()));
    let missing = tail_len - quotas.iter().sum::<usize>();
    for &h in by_remainder.iter().take(missing) {
        quotas[h] += 1;
    }
    let mut in_tail = vec![false; window.len()];
    for ((_, members), &quota) in heads.iter().zip(&quotas) {
        for &i in &members[members.len() - quota..] {
            in_tail[i] = true;
        }
    }
    let stays = window.iter().zip(&in_tail).filter(|(_, t)| !**t);
    let goes = window.iter().zip(&in_tail).filter(|(_, t)| **t);
    (window_start, stays.chain(goes).map(|(u, _)| u.clone()).collect())
}

/// Whether the adds into one dQ tile within `tail` (the launch order's last units, as they are) would outlast the
/// split tail, counting each add with its hand-off as 1.5 visits (calibrated: about 1.2 on the H100s and H200s of
/// runs 122 and 159) against the tail's visits per SM. Spreading the tail over the window's heads is what shortens
/// such a chain. Where no chain is that long, the spread only brings more heads into the tail (at causal head dim
/// 128, 512 to 2048 tokens: from 13–50 heads to 29–116), whose Q, dO and dQ then compete for L2: the split ran 1–5%
/// slower with the spread than without it there (bench/NOTES.md, runs 185–186). At full masks, head dim 128, 8192
/// tokens, where the chain (64 adds) about equals the tail (66 visits), the split without the spread ran slower
/// (runs 186–189): hence the margin. A count of visits, not of costs, so that a split stays a function of its
/// schedule alone.
fn tail_chain_outlasts_tail(tail: &[Unit], sms: usize) -> bool {
    let mut tiles: Vec<(u32, u16)> = tail.iter().flat_map(|u| u.visits.iter().map(move |v| (u.bh, v.q))).collect();
    tiles.sort_unstable();
    let longest = tiles.chunk_by(|a, b| a == b).map(<[_]>::len).max().unwrap_or(0);
    // longest * 1.5 > visits / sms, in integers.
    3 * longest * sms > 2 * tiles.len()
}

/// Ranks of every dQ tile the units from `start` on contribute to: the earlier units' contributions keep their
/// relative order and come first; those from `start` on follow in idealized arrival order (every SM starting
/// at `start` at once, one time unit per visit, no overheads; ties: launch position, then visit).
fn rerank_tail(order: &mut Order, start: usize, machine: Machine, problem: &Problem) {
    let (sms, launch) = (machine.sms as usize, machine.launch);
    let m = problem.m_tiles() as usize;
    let tiles = problem.bh_count() as usize * m;
    // Idealized arrival of every visit from `start` on, in visits: the SMs start there together at 0.
    let mut sm_free = vec![0usize; sms];
    let mut arrivals: Vec<(usize, usize, usize)> = Vec::new(); // (unit, visit, time)
    for (ui, unit) in order.units.iter().enumerate().skip(start) {
        let sm = match launch {
            LaunchPolicy::Persistent => ui % sms,
            LaunchPolicy::InOrder => (0..sms).min_by_key(|&sm| (sm_free[sm], sm)).expect("sms >= 2"),
        };
        let start = sm_free[sm];
        arrivals.extend((0..unit.visits.len()).map(|vi| (ui, vi, start + vi + 1)));
        sm_free[sm] = start + unit.visits.len();
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
    for (ui, unit) in order.units.iter().enumerate().take(start) {
        for (vi, v) in unit.visits.iter().enumerate() {
            let slot = list_of[tile_of(unit.bh, v.q)];
            if slot != u32::MAX {
                lists[slot as usize].0.push((v.rank, ui, vi));
            }
        }
    }
    let mut sorted = arrivals;
    sorted.sort_unstable_by_key(|&(ui, vi, t)| (t, ui, vi));
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
