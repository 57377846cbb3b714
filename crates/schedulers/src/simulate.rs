//! Discrete-event simulation of a schedule on P SMs.
//!
//! Each SM runs one unit at a time. An SM is advanced as far as it can go on its own (compute, then the reduce
//! if its rank is next) and parked on a dQ tile when it must wait; the unit that releases the rank before it
//! wakes it. Times only move forward through a heap keyed by (time, SM id), so units are dispatched in launch
//! order to SMs in the order they free up, ties going to the lower SM id: the result is a pure function of the
//! schedule and the costs.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use dag_model::Weights;
use serde::{Deserialize, Serialize};

use crate::{CostModel, LaunchPolicy, Schedule, ScheduleError};

/// What an SM is doing during a segment of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SegmentKind {
    /// Loading K/V before the first task.
    Start,
    Compute,
    /// Waiting for this contribution's rank on its dQ tile (including the hand-off latency).
    Wait,
    Reduce,
    /// Waiting for this unit's rank on a dK/dV tile (GQA).
    DkvWait,
    DkvReduce,
    /// Writing dK/dV after the last task.
    Finish,
}

/// One interval of one SM's time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Segment {
    pub sm: u32,
    pub unit: u32,
    pub bh: u32,
    pub kv: u32,
    pub q: u32,
    pub kind: SegmentKind,
    pub start: f64,
    pub end: f64,
}

/// Where an SM's time went.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct SmStats {
    /// Computing, reducing, loading and storing.
    pub busy: f64,
    /// Waiting for a rank (dQ or dK/dV).
    pub wait: f64,
    /// No unit resident, or the unit ended before the makespan.
    pub idle: f64,
    pub units: u32,
}

/// The outcome of a simulation.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Simulation {
    pub makespan: f64,
    pub sms: Vec<SmStats>,
    /// Start and end time of each unit, in launch order.
    pub unit_start: Vec<f64>,
    pub unit_end: Vec<f64>,
    /// The SM each unit ran on.
    pub unit_sm: Vec<u32>,
    /// Every segment of every SM, sorted by (SM, start); empty unless asked for.
    pub timeline: Vec<Segment>,
}

impl Simulation {
    pub fn total_busy(&self) -> f64 {
        self.sms.iter().map(|s| s.busy).sum()
    }
    pub fn total_wait(&self) -> f64 {
        self.sms.iter().map(|s| s.wait).sum()
    }
    pub fn total_idle(&self) -> f64 {
        self.sms.iter().map(|s| s.idle).sum()
    }
}

#[derive(Clone, Copy, PartialEq)]
struct Event {
    time: f64,
    sm: u32,
}
impl Eq for Event {}
impl Ord for Event {
    // Reversed: BinaryHeap is a max-heap and we want the earliest time, then the lowest SM, first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.time.total_cmp(&self.time).then(other.sm.cmp(&self.sm))
    }
}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Clone, Copy)]
struct SmState {
    /// Resident unit, or `u32::MAX`.
    unit: u32,
    time: f64,
    /// Next visit; then `visits.len() + k` for the k-th dK/dV reduction; then finished.
    step: usize,
    /// Compute of the current step done; the unit is at its reduce since `time`.
    arrived: bool,
    /// When the current step's compute started (the kernel's early semaphore read).
    compute_start: f64,
    /// The unit has run its finish phase and the SM waits for the dispatcher.
    finished: bool,
    /// Persistent policy: the next unit of this SM's static list.
    next_static: usize,
}

struct Tiles {
    count: Vec<u32>,
    released_at: Vec<f64>,
    /// (rank, sm) of SMs parked on the tile.
    parked: Vec<Vec<(u32, u32)>>,
}

impl Tiles {
    fn new(n: usize) -> Tiles {
        Tiles { count: vec![0; n], released_at: vec![0.0; n], parked: vec![Vec::new(); n] }
    }
}

/// Simulates `schedule` on its machine under `costs`. With `record_timeline`, every segment is kept (memory
/// grows with the task count: callers should limit it to problems of modest size).
pub fn simulate(schedule: &Schedule, costs: &CostModel, record_timeline: bool) -> Result<Simulation, ScheduleError> {
    costs.check()?;
    let problem = schedule.problem();
    let machine = schedule.machine();
    let units = schedule.units();
    let p = machine.sms as usize;
    let m = problem.m_tiles() as usize;
    let n = problem.n_tiles() as usize;
    let gqa = problem.group() > 1;
    let mut dq = Tiles::new(problem.bh_count() as usize * m);
    let mut dkv = Tiles::new(if gqa { (problem.batch() * problem.kv_heads()) as usize * n } else { 0 });
    let runs: Vec<Vec<u32>> = if gqa { units.iter().map(|u| u.kv_runs().collect()).collect() } else { Vec::new() };
    let handoff = costs.handoff();
    // When a dQ contribution of rank > 0 may start its reduce (see `CostModel::poll`): at arrival if the rank
    // was visible when the compute started, else a poll after arrival and no earlier than the rank is visible.
    let dq_reduce_start = |arrival: f64, compute_start: f64, released_at: f64| {
        let visible = released_at + handoff;
        if visible <= compute_start { arrival } else { (arrival + costs.poll).max(visible) }
    };
    // `kernel_epilogues`: a move to another KV tile inside a unit costs an epilogue and a K/V load, and the
    // release of the visit before it (or of the unit's last visit) waits for the epilogue. With GQA the
    // epilogue follows the dK/dV reductions, so the option applies to MHA only.
    let epilogues = costs.kernel_epilogues && !gqa;

    let mut sms = vec![
        SmState {
            unit: u32::MAX,
            time: 0.0,
            step: 0,
            arrived: false,
            compute_start: 0.0,
            finished: false,
            next_static: 0
        };
        p
    ];
    let mut stats = vec![SmStats::default(); p];
    let mut unit_start = vec![f64::NAN; units.len()];
    let mut unit_end = vec![f64::NAN; units.len()];
    let mut unit_sm = vec![u32::MAX; units.len()];
    let mut timeline = Vec::new();
    let mut heap = BinaryHeap::with_capacity(p);
    let mut next_in_order = 0usize;
    let mut done_units = 0usize;

    for (sm, state) in sms.iter_mut().enumerate() {
        state.next_static = sm;
        state.finished = true;
        heap.push(Event { time: 0.0, sm: sm as u32 });
    }

    let mut record = |seg: Segment| {
        if record_timeline {
            timeline.push(seg);
        }
    };

    while let Some(Event { time, sm }) = heap.pop() {
        let mut s = sms[sm as usize];
        let mut st = stats[sm as usize];
        if s.finished {
            // Dispatch the next unit to this SM, if any.
            let next = match machine.launch {
                LaunchPolicy::InOrder => {
                    next_in_order += 1;
                    next_in_order - 1
                }
                LaunchPolicy::Persistent => {
                    s.next_static += p;
                    s.next_static - p
                }
            };
            if next >= units.len() {
                s.unit = u32::MAX;
                sms[sm as usize] = s;
                continue;
            }
            s = SmState { unit: next as u32, time, step: 0, arrived: false, finished: false, ..s };
            unit_start[next] = time;
            unit_sm[next] = sm;
            st.units += 1;
            let unit = &units[next];
            let first = unit.visits[0];
            let end = time + costs.unit_start();
            let seg = Segment {
                sm,
                unit: next as u32,
                bh: unit.bh,
                kv: first.kv as u32,
                q: first.q as u32,
                kind: SegmentKind::Start,
                start: time,
                end,
            };
            record(seg);
            st.busy += end - time;
            s.time = end;
        }
        // Otherwise the SM was woken from a rank wait: `time` is when its reduce may start, and `s.time` still
        // holds its arrival, so the reduce path below recomputes the same start and books the wait.

        let ui = s.unit as usize;
        let unit = &units[ui];
        let seg = |kind, kv, q, start, end| Segment { sm, unit: ui as u32, bh: unit.bh, kv, q, kind, start, end };
        loop {
            // The tile, rank and cost of the next reduce: a dQ add, a dK/dV add (GQA), or none (finish).
            let (tiles, tile, rank, kv, q, wait_kind, reduce_kind, reduce_cost) = if s.step < unit.visits.len() {
                let v = unit.visits[s.step];
                if !s.arrived {
                    s.compute_start = s.time;
                    let end = s.time + costs.compute(v.fraction());
                    record(seg(SegmentKind::Compute, v.kv as u32, v.q as u32, s.time, end));
                    st.busy += end - s.time;
                    s.time = end;
                    s.arrived = true;
                }
                let tile = unit.bh as usize * m + v.q as usize;
                (
                    &mut dq,
                    tile,
                    v.rank as u32,
                    v.kv as u32,
                    v.q as u32,
                    SegmentKind::Wait,
                    SegmentKind::Reduce,
                    costs.reduce(),
                )
            } else if gqa && s.step < unit.visits.len() + runs[ui].len() {
                let k = s.step - unit.visits.len();
                let kv = runs[ui][k];
                let tile = problem.kv_group_of(unit.bh) as usize * n + kv as usize;
                let cost = costs.dkv_reduce();
                (&mut dkv, tile, unit.dkv_ranks[k], kv, u32::MAX, SegmentKind::DkvWait, SegmentKind::DkvReduce, cost)
            } else {
                let end = s.time + costs.unit_finish();
                let last = unit.visits[unit.visits.len() - 1];
                record(seg(SegmentKind::Finish, last.kv as u32, last.q as u32, s.time, end));
                st.busy += end - s.time;
                s.time = end;
                s.finished = true;
                unit_end[ui] = end;
                done_units += 1;
                heap.push(Event { time: end, sm });
                break;
            };
            if tiles.count[tile] != rank {
                tiles.parked[tile].push((rank, sm));
                break;
            }
            let is_dq = wait_kind == SegmentKind::Wait;
            let start = if rank == 0 {
                s.time
            } else if is_dq {
                dq_reduce_start(s.time, s.compute_start, tiles.released_at[tile])
            } else {
                s.time.max(tiles.released_at[tile] + handoff)
            };
            if start > s.time {
                record(seg(wait_kind, kv, q, s.time, start));
                st.wait += start - s.time;
            }
            let end = start + reduce_cost;
            record(seg(reduce_kind, kv, q, start, end));
            st.busy += end - start;
            s.time = end;
            s.arrived = false;
            s.step += 1;
            let mut release = end;
            if is_dq && epilogues {
                if s.step == unit.visits.len() {
                    release = end + costs.unit_finish();
                } else if unit.visits[s.step].kv != unit.visits[s.step - 1].kv {
                    // Write dK/dV of the old KV tile, then load the new one: booked as a finish and a start.
                    let (old_kv, next) = (unit.visits[s.step - 1], unit.visits[s.step]);
                    let written = end + costs.unit_finish();
                    record(seg(SegmentKind::Finish, old_kv.kv as u32, old_kv.q as u32, end, written));
                    let loaded = written + costs.unit_start();
                    record(seg(SegmentKind::Start, next.kv as u32, next.q as u32, written, loaded));
                    st.busy += loaded - end;
                    s.time = loaded;
                    release = loaded;
                }
            }
            tiles.count[tile] += 1;
            tiles.released_at[tile] = release;
            let want = tiles.count[tile];
            if let Some(at) = tiles.parked[tile].iter().position(|&(r, _)| r == want) {
                let (_, waiter) = tiles.parked[tile].swap_remove(at);
                let w = &sms[waiter as usize];
                // A parked waiter arrived before this release, so its early read missed.
                let time = if is_dq {
                    dq_reduce_start(w.time, w.compute_start, release)
                } else {
                    w.time.max(release + handoff)
                };
                heap.push(Event { time, sm: waiter });
            }
        }
        sms[sm as usize] = s;
        stats[sm as usize] = st;
    }

    if done_units < units.len() {
        return Err(deadlock(schedule, &sms, &dq, &dkv, &runs, next_in_order));
    }
    let makespan = unit_end.iter().copied().fold(0.0, f64::max);
    for st in &mut stats {
        st.idle = (makespan - st.busy - st.wait).max(0.0);
    }
    timeline.sort_by(|a, b| a.sm.cmp(&b.sm).then(a.start.total_cmp(&b.start)));
    Ok(Simulation { makespan, sms: stats, unit_start, unit_end, unit_sm, timeline })
}

/// Explains a stuck simulation: the earliest-launched parked unit, the rank it waits for, and who holds the
/// rank that must come first.
fn deadlock(
    schedule: &Schedule,
    sms: &[SmState],
    dq: &Tiles,
    dkv: &Tiles,
    runs: &[Vec<u32>],
    next_in_order: usize,
) -> ScheduleError {
    let machine = schedule.machine();
    let units = schedule.units();
    let problem = schedule.problem();
    let m = problem.m_tiles() as usize;
    let n = problem.n_tiles() as usize;
    let s = sms
        .iter()
        .filter(|s| !s.finished && s.unit != u32::MAX)
        .min_by_key(|s| s.unit)
        .expect("a stuck simulation has a parked unit");
    let ui = s.unit as usize;
    let unit = &units[ui];
    let dq_wait = s.step < unit.visits.len();
    let (tile_kind, tile, rank, next) = if dq_wait {
        let v = unit.visits[s.step];
        let tile = unit.bh as usize * m + v.q as usize;
        ("dq", v.q as u32, v.rank as u32, dq.count[tile])
    } else {
        let k = s.step - unit.visits.len();
        let kv = runs[ui][k];
        let tile = problem.kv_group_of(unit.bh) as usize * n + kv as usize;
        ("dk/dv", kv, unit.dkv_ranks[k], dkv.count[tile])
    };
    let holder = units
        .iter()
        .position(|u| {
            if dq_wait {
                u.bh == unit.bh && u.visits.iter().any(|v| v.q as u32 == tile && v.rank as u32 == next)
            } else {
                problem.kv_group_of(u.bh) == problem.kv_group_of(unit.bh)
                    && u.kv_runs().zip(&u.dkv_ranks).any(|(kv, &r)| kv == tile && r == next)
            }
        })
        .unwrap_or(usize::MAX);
    let launched = match machine.launch {
        LaunchPolicy::InOrder => holder < next_in_order,
        LaunchPolicy::Persistent => {
            let owner = &sms[holder % sms.len()];
            owner.unit == u32::MAX || owner.unit as usize >= holder
        }
    };
    let resident = sms.iter().any(|s| s.unit as usize == holder && !s.finished);
    let holder_state = if resident {
        "is resident but itself waiting"
    } else if launched {
        "has run"
    } else {
        "is not launched because every SM is occupied by a waiting unit"
    };
    ScheduleError::Deadlock {
        sms: machine.sms,
        launch: machine.launch.name(),
        unit: ui,
        bh: unit.bh,
        tile_kind,
        tile,
        rank,
        next,
        holder,
        holder_state,
    }
}
