//! Discrete-event simulation of a schedule on P SMs.
//!
//! Each SM runs one unit at a time. An SM is advanced as far as it can go on its own (compute, then the reduce
//! if its rank is next) and parked on a dQ tile when it must wait; the unit that releases the rank before it
//! wakes it. Times only move forward through a heap keyed by (time, SM id), so units are dispatched in launch
//! order to SMs in the order they free up, ties going to the lower SM id: the result is a pure function of the
//! schedule and the costs.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use dag_model::{Order, Visit, Weights};
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

    /// The most (batch, head) pairs that have a unit resident at one instant (a unit is resident from its
    /// dispatch to its end, `[start, end)`). The model has no memory system; this is the measure of what it
    /// leaves out: every head in flight keeps its Q, dO, LSE, D and dQ accumulator hot in L2, and a schedule
    /// that spreads the machine over many heads at once can run far slower than simulated (docs/hopper.md).
    /// `order` is the schedule these times belong to.
    pub fn peak_heads_in_flight(&self, order: &Order) -> u32 {
        let mut events: Vec<(f64, bool, u32)> = Vec::with_capacity(2 * self.unit_start.len());
        for (u, unit) in order.units.iter().enumerate().take(self.unit_start.len()) {
            // A unit of no duration (all its costs zero) is resident for no time at all.
            if self.unit_end[u] > self.unit_start[u] {
                events.push((self.unit_start[u], true, unit.bh));
                events.push((self.unit_end[u], false, unit.bh));
            }
        }
        // Ends before starts at the same instant: a unit that ends when another starts does not overlap it.
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut resident: HashMap<u32, u32> = HashMap::new();
        let (mut heads, mut peak) = (0u32, 0u32);
        for (_, starts, bh) in events {
            let count = resident.entry(bh).or_insert(0);
            if starts {
                *count += 1;
                if *count == 1 {
                    heads += 1;
                    peak = peak.max(heads);
                }
            } else {
                *count -= 1;
                if *count == 0 {
                    heads -= 1;
                }
            }
        }
        peak
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

/// Which unit an SM that has freed up runs next: the next one in launch order (in-order launch), or the next of
/// its static list p, p + P, p + 2P, ... (persistent launch). May be past the last unit: then the SM stays idle.
struct Dispatch {
    launch: LaunchPolicy,
    sms: usize,
    next_in_order: usize,
}

impl Dispatch {
    fn next(&mut self, next_static: &mut usize) -> usize {
        match self.launch {
            LaunchPolicy::InOrder => {
                self.next_in_order += 1;
                self.next_in_order - 1
            }
            LaunchPolicy::Persistent => {
                *next_static += self.sms;
                *next_static - self.sms
            }
        }
    }
}

/// What both simulators book as they go: each SM's statistics, each unit's start, end and SM, the timeline
/// (when asked for), the dispatcher, and how many units have ended.
struct Books {
    stats: Vec<SmStats>,
    unit_start: Vec<f64>,
    unit_end: Vec<f64>,
    unit_sm: Vec<u32>,
    record_timeline: bool,
    timeline: Vec<Segment>,
    dispatch: Dispatch,
    done_units: usize,
}

impl Books {
    fn new(schedule: &Schedule, record_timeline: bool) -> Books {
        let machine = schedule.machine();
        let (p, units) = (machine.sms as usize, schedule.units().len());
        Books {
            stats: vec![SmStats::default(); p],
            unit_start: vec![f64::NAN; units],
            unit_end: vec![f64::NAN; units],
            unit_sm: vec![u32::MAX; units],
            record_timeline,
            timeline: Vec::new(),
            dispatch: Dispatch { launch: machine.launch, sms: p, next_in_order: 0 },
            done_units: 0,
        }
    }

    fn record(&mut self, seg: Segment) {
        if self.record_timeline {
            self.timeline.push(seg);
        }
    }

    fn unit_started(&mut self, unit: usize, sm: u32, time: f64) {
        self.unit_start[unit] = time;
        self.unit_sm[unit] = sm;
    }

    fn unit_ended(&mut self, unit: usize, time: f64) {
        self.unit_end[unit] = time;
        self.done_units += 1;
    }

    /// The simulation's result from what was booked: the makespan is the last unit's end, and each SM's idle
    /// time is what its busy and waiting time leave of it.
    fn finish(self) -> Simulation {
        let Books { mut stats, unit_start, unit_end, unit_sm, mut timeline, .. } = self;
        let makespan = unit_end.iter().copied().fold(0.0, f64::max);
        for st in &mut stats {
            st.idle = (makespan - st.busy - st.wait).max(0.0);
        }
        timeline.sort_by(|a, b| a.sm.cmp(&b.sm).then(a.start.total_cmp(&b.start)));
        Simulation { makespan, sms: stats, unit_start, unit_end, unit_sm, timeline }
    }
}

/// How the holder of the rank a stuck unit waits for stands, for the deadlock message.
fn holder_state(resident: bool, launched: bool) -> &'static str {
    if resident {
        "is resident but itself waiting"
    } else if launched {
        "has run"
    } else {
        "is not launched because every SM is occupied by a waiting unit"
    }
}

/// What the model predicts the GPU takes for `schedule`: the makespan of [`simulate`], or under
/// `CostModel::variability` (decoupled writers) the mean makespan of `runs` simulations whose phase durations are
/// drawn around their costs; under `CostModel::memory_roof`, blended with the time the problem's DRAM traffic
/// needs ([`crate::MemoryRoof`]). The analyzer's simulations, timelines and lower bounds are of constant phases
/// and know no roof; this is the number compared with a GPU's time (`run`, `bench`, `validate`).
pub fn predicted_makespan(schedule: &Schedule, costs: &CostModel) -> Result<f64, ScheduleError> {
    Ok(costs.with_memory_roof(simulated_prediction(schedule, costs)?, schedule.problem()))
}

/// The part of [`predicted_makespan`] the simulator gives, before the memory roof: the makespan, or the mean
/// of the varied runs.
pub fn simulated_prediction(schedule: &Schedule, costs: &CostModel) -> Result<f64, ScheduleError> {
    costs.check()?;
    match costs.variability.filter(|_| costs.decoupled()) {
        None => Ok(simulate(schedule, costs, false)?.makespan),
        Some(v) => {
            let mut total = 0.0;
            for run in 1..=v.runs {
                total += simulate_decoupled(schedule, costs, false, Some(Draws { v, run }))?.makespan;
            }
            Ok(total / v.runs as f64)
        }
    }
}

/// Simulates `schedule` on its machine under `costs`, every phase at its cost (`CostModel::variability` is for
/// [`predicted_makespan`]). With `record_timeline`, every segment is kept (memory grows with the task count:
/// callers should limit it to problems of modest size).
pub fn simulate(schedule: &Schedule, costs: &CostModel, record_timeline: bool) -> Result<Simulation, ScheduleError> {
    costs.check()?;
    if costs.decoupled() {
        return simulate_decoupled(schedule, costs, record_timeline, None);
    }
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
    let mut books = Books::new(schedule, record_timeline);
    let mut heap = BinaryHeap::with_capacity(p);
    for (sm, state) in sms.iter_mut().enumerate() {
        state.next_static = sm;
        state.finished = true;
        heap.push(Event { time: 0.0, sm: sm as u32 });
    }

    while let Some(Event { time, sm }) = heap.pop() {
        let mut s = sms[sm as usize];
        let mut st = books.stats[sm as usize];
        if s.finished {
            // Dispatch the next unit to this SM, if any.
            let next = books.dispatch.next(&mut s.next_static);
            if next >= units.len() {
                s.unit = u32::MAX;
                sms[sm as usize] = s;
                continue;
            }
            s = SmState { unit: next as u32, time, step: 0, arrived: false, finished: false, ..s };
            books.unit_started(next, sm, time);
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
            books.record(seg);
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
                    books.record(seg(SegmentKind::Compute, v.kv as u32, v.q as u32, s.time, end));
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
                books.record(seg(SegmentKind::Finish, last.kv as u32, last.q as u32, s.time, end));
                st.busy += end - s.time;
                s.time = end;
                s.finished = true;
                books.unit_ended(ui, end);
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
                books.record(seg(wait_kind, kv, q, s.time, start));
                st.wait += start - s.time;
            }
            let end = start + reduce_cost;
            books.record(seg(reduce_kind, kv, q, start, end));
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
                    books.record(seg(SegmentKind::Finish, old_kv.kv as u32, old_kv.q as u32, end, written));
                    let loaded = written + costs.unit_start();
                    books.record(seg(SegmentKind::Start, next.kv as u32, next.q as u32, written, loaded));
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
        books.stats[sm as usize] = st;
    }

    if books.done_units < units.len() {
        return Err(deadlock(schedule, &sms, &dq, &dkv, &runs, books.dispatch.next_in_order));
    }
    Ok(books.finish())
}

/// The phases whose durations vary under `CostModel::variability`.
#[derive(Clone, Copy)]
enum Phase {
    Compute = 0,
    Reduce = 1,
    Handoff = 2,
    UnitStart = 3,
    UnitFinish = 4,
}

/// One simulated run under `CostModel::variability`: each phase's draw is a hash of (run, tile, phase), so it
/// does not depend on the order in which the simulator meets the phases, nor on the schedule.
#[derive(Clone, Copy)]
struct Draws {
    v: crate::Variability,
    run: u32,
}

impl Draws {
    fn duration(&self, cost: f64, phase: Phase, bh: u64, kv: u64, q: u64) -> f64 {
        let sd = match phase {
            Phase::Compute => self.v.compute,
            Phase::Reduce => self.v.reduce,
            Phase::Handoff => self.v.handoff,
            Phase::UnitStart => self.v.unit_start,
            Phase::UnitFinish => self.v.unit_finish,
        };
        if sd == 0.0 {
            return cost;
        }
        // Chained, so that no two (run, tile, phase) share a key whatever the sizes.
        let key = [bh, kv, q, phase as u64].iter().fold(splitmix64(self.run as u64), |h, &x| splitmix64(h ^ x));
        // Irwin-Hall of four uniforms, scaled to variance 1: close to normal, and cut at ±2.5.
        let mut h = key;
        let mut sum = 0.0;
        for _ in 0..4 {
            h = splitmix64(h);
            sum += (h >> 11) as f64 / (1u64 << 53) as f64;
        }
        let z = ((sum - 2.0) * 3.0f64.sqrt()).clamp(-2.5, 2.5);
        (cost + sd * z).max(0.0)
    }
}

/// SplitMix64's finalizer: a well-mixed 64-bit hash of `x`.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An SM under `CostModel::dq_writers` = k: the compute side and k writers, one per staging buffer.
#[derive(Clone)]
struct DecoupledSm {
    unit: u32,
    finished: bool,
    /// When the SM's last unit ended: a writer's wake-up can arrive for an SM whose unit has finished since (it
    /// is stale), and only the event at or after this time dispatches the next unit.
    free_at: f64,
    next_static: usize,
    /// When the compute side is free for the next task (it has staged the previous one).
    compute_free: f64,
    /// The next task of `unit` the compute side will run.
    next_task: usize,
    /// Partials the CTA has staged so far: its c-th goes to buffer c mod k (the kernel counts over all the units
    /// of a CTA, which is one unit in the in-order launch).
    count: usize,
    /// `CostModel::dq_deferred`: the task computed last, whose partial is not staged yet (unit, task).
    pending: Option<(usize, usize)>,
    /// Per writer: the task it holds (unit, task; staged, not yet released) and when it was staged.
    held: Vec<Option<(usize, usize, f64)>>,
    /// Per writer: when it released its previous task (its buffer is free from then).
    writer_free: Vec<f64>,
    /// Per writer: parked on its task's dQ tile.
    parked: Vec<bool>,
    /// The units of this SM that have not ended: (unit, adds still out, the compute side's end (NaN until it has
    /// written dK/dV), last release so far). One entry in the in-order launch; in the persistent one the compute
    /// side may have moved on to the next unit while the writers still hold a previous unit's adds.
    open: Vec<(usize, usize, f64, f64)>,
}

impl DecoupledSm {
    fn open_unit(&mut self, unit: usize) -> &mut (usize, usize, f64, f64) {
        let at = self.open.iter().position(|o| o.0 == unit).expect("an open unit");
        &mut self.open[at]
    }
}

/// The simulation under decoupled writers (`CostModel::dq_writers` > 0), the sm90 main loop's dQ path. Per SM the
/// compute side runs the unit's tasks back to back and stages the CTA's c-th task into buffer c mod k once the
/// buffer's writer has released task c - k (waiting for it counts as the SM's wait); writer b adds its tasks in
/// order, each once staged and once its rank is visible (release plus hand-off), and releases `reduce` later.
/// A move to another KV tile inside a unit costs the compute side `unit_finish` + `unit_start` (dK/dV written, the
/// next K/V loaded; with `kernel_epilogues`); a unit's compute side ends `unit_finish` after its last task, and the
/// unit ends when that is done and its writers have released everything. In the in-order launch a CTA is one unit:
/// the SM takes the next unit when the unit has ended (as in [`simulate`]). In the persistent launch the CTA's
/// compute side starts its next unit as soon as its own end is done (`unit_start` later), while the same writers
/// finish the previous unit's adds beside it, as the kernel's consumers and writer warps do. Under
/// `kv_load_overlap` the next K/V load of a move inside the CTA starts with the dK/dV epilogue, and the next
/// compute waits for the later of the two. Multi-head attention only: the sm90 main loop has no dK/dV reductions
/// (GQA).
fn simulate_decoupled(
    schedule: &Schedule,
    costs: &CostModel,
    record_timeline: bool,
    draws: Option<Draws>,
) -> Result<Simulation, ScheduleError> {
    // A phase's duration: its cost, or under variability a draw around it (never negative), keyed by the tile
    // visited (unit `unit`'s visit `task`), so that every schedule of a problem meets the same draws. A KV run's
    // K/V load is keyed by its first visit, its dK/dV epilogue by its last.
    let drawn = |cost: f64, phase: Phase, unit: usize, task: usize| match draws {
        None => cost,
        Some(d) => {
            let u = &schedule.units()[unit];
            let v = u.visits[task.min(u.visits.len() - 1)];
            d.duration(cost, phase, u.bh as u64, v.kv as u64, v.q as u64)
        }
    };
    let problem = schedule.problem();
    if problem.group() > 1 {
        return Err(ScheduleError::BadCost {
            name: "dq-writers (not modelled with grouped-query attention)",
            value: 1.0,
        });
    }
    let machine = schedule.machine();
    let persistent = machine.launch == LaunchPolicy::Persistent;
    let units = schedule.units();
    let p = machine.sms as usize;
    let k = costs.dq_writers as usize;
    let m = problem.m_tiles() as usize;
    let handoff = costs.handoff();
    let mut dq = Tiles::new(problem.bh_count() as usize * m);
    let idle_sm = DecoupledSm {
        unit: u32::MAX,
        finished: true,
        free_at: 0.0,
        next_static: 0,
        compute_free: 0.0,
        next_task: 0,
        count: 0,
        pending: None,
        held: vec![None; k],
        writer_free: vec![0.0; k],
        parked: vec![false; k],
        open: Vec::new(),
    };
    let mut sms = vec![idle_sm; p];
    let mut books = Books::new(schedule, record_timeline);
    let mut heap = BinaryHeap::with_capacity(p);
    for (sm, state) in sms.iter_mut().enumerate() {
        state.next_static = sm;
        heap.push(Event { time: 0.0, sm: sm as u32 });
    }

    // A segment of unit `ui` on SM `sm`, at visit `v`.
    let segment = |sm: u32, ui: usize, v: Visit, kind, start, end| Segment {
        sm,
        unit: ui as u32,
        bh: units[ui].bh,
        kv: v.kv as u32,
        q: v.q as u32,
        kind,
        start,
        end,
    };

    // Starts unit `next` on the SM: its K/V load from `time`, then the compute side is free, not before
    // `not_before` (under `kv_load_overlap`, the previous unit's dK/dV epilogue, which the load ran beside; the
    // segment shows only the load's part after it). A new CTA (in-order launch, or the first unit of a persistent
    // one) starts with idle writers.
    let start_unit =
        |s: &mut DecoupledSm, books: &mut Books, st: &mut SmStats, sm: u32, next: usize, time: f64, not_before: f64| {
            let unit = &units[next];
            let loaded = (time + drawn(costs.unit_start(), Phase::UnitStart, next, 0)).max(not_before);
            let shown = time.max(not_before);
            books.record(segment(sm, next, unit.visits[0], SegmentKind::Start, shown, loaded));
            st.busy += loaded - shown;
            st.units += 1;
            books.unit_started(next, sm, time);
            if s.finished {
                s.count = 0;
                s.pending = None;
                s.held = vec![None; k];
                s.writer_free = vec![loaded; k];
                s.parked = vec![false; k];
            }
            s.unit = next as u32;
            s.finished = false;
            s.compute_free = loaded;
            s.next_task = 0;
            s.open.push((next, unit.visits.len(), f64::NAN, loaded));
        };

    // Stages `task`'s partial (unit, task) into buffer c mod k once the compute side is free, waiting for the
    // buffer's writer to have released partial c - k; the wait is booked on the compute side under the staged
    // task (under deferral, not the visit being computed).
    let stage = |s: &mut DecoupledSm, books: &mut Books, st: &mut SmStats, sm: u32, task: (usize, usize)| {
        let b = s.count % k;
        let staged = s.compute_free.max(s.writer_free[b]);
        if staged > s.compute_free {
            let at = units[task.0].visits[task.1];
            books.record(segment(sm, task.0, at, SegmentKind::Wait, s.compute_free, staged));
            st.wait += staged - s.compute_free;
        }
        s.compute_free = staged;
        s.held[b] = Some((task.0, task.1, staged));
        s.count += 1;
    };

    // The compute side's end of its unit: dK/dV written `unit_finish` after its last task. Returns the unit and
    // the time.
    let write_dkv = |s: &DecoupledSm, books: &mut Books, st: &mut SmStats, sm: u32| {
        let ui = s.unit as usize;
        let last = units[ui].visits[units[ui].visits.len() - 1];
        let written = s.compute_free + drawn(costs.unit_finish(), Phase::UnitFinish, ui, units[ui].visits.len() - 1);
        books.record(segment(sm, ui, last, SegmentKind::Finish, s.compute_free, written));
        st.busy += written - s.compute_free;
        (ui, written)
    };

    while let Some(Event { time, sm }) = heap.pop() {
        let mut s = sms[sm as usize].clone();
        let mut st = books.stats[sm as usize];
        if s.finished {
            if time < s.free_at {
                continue; // a stale wake-up from before the unit's end
            }
            let next = books.dispatch.next(&mut s.next_static);
            if next >= units.len() {
                s.unit = u32::MAX;
                sms[sm as usize] = s;
                continue;
            }
            start_unit(&mut s, &mut books, &mut st, sm, next, time, time);
        }
        // Advance the writers and the compute side as far as they go; stop when neither can move.
        loop {
            let mut moved = false;
            for b in 0..k {
                let Some((ui, t, staged)) = s.held[b] else { continue };
                let unit = &units[ui];
                let v = unit.visits[t];
                let tile = unit.bh as usize * m + v.q as usize;
                if dq.count[tile] != v.rank as u32 {
                    if !s.parked[b] {
                        dq.parked[tile].push((v.rank as u32, sm));
                        s.parked[b] = true;
                    }
                    continue;
                }
                s.parked[b] = false;
                let ready = staged.max(s.writer_free[b]);
                let start = if v.rank == 0 {
                    ready
                } else {
                    ready.max(dq.released_at[tile] + drawn(handoff, Phase::Handoff, ui, t))
                };
                let release = start + drawn(costs.reduce(), Phase::Reduce, ui, t);
                books.record(segment(sm, ui, v, SegmentKind::Reduce, start, release));
                s.writer_free[b] = release;
                s.held[b] = None;
                let open = s.open_unit(ui);
                open.1 -= 1;
                open.3 = open.3.max(release);
                dq.count[tile] += 1;
                dq.released_at[tile] = release;
                let want = dq.count[tile];
                // Wake the SM whose writer holds the next rank of this tile; it recomputes its start (its hand-off
                // may be drawn shorter than the cost: wake it at the release).
                if let Some(at) = dq.parked[tile].iter().position(|&(r, _)| r == want) {
                    let (_, waiter) = dq.parked[tile].swap_remove(at);
                    let wake = if draws.is_some() { release } else { release + handoff };
                    heap.push(Event { time: wake, sm: waiter });
                }
                moved = true;
            }
            // Deferred dQ: a pending task that ends its KV tile is staged before anything else (the kernel's dQ
            // product at the tile's last visit, before the K/V epilogue).
            let flush = s.pending.filter(|&(pu, pt)| {
                let visits = &units[pu].visits;
                pt + 1 == visits.len() || visits[pt + 1].kv != visits[pt].kv
            });
            if let Some((pu, pt)) = flush {
                let b = s.count % k;
                if s.held[b].is_none() {
                    stage(&mut s, &mut books, &mut st, sm, (pu, pt));
                    s.pending = None;
                    moved = true;
                }
            }
            if flush.is_none() && s.unit != u32::MAX && s.next_task < units[s.unit as usize].visits.len() {
                let ui = s.unit as usize;
                let unit = &units[ui];
                let t = s.next_task;
                // The partial staged after this compute: this task's, or under deferral the pending one's (none
                // at the start of a KV tile).
                let stages = if costs.dq_deferred { s.pending } else { Some((ui, t)) };
                let b = s.count % k;
                if stages.is_none() || s.held[b].is_none() {
                    let v = unit.visits[t];
                    let mut start = s.compute_free;
                    if costs.kernel_epilogues && t > 0 && unit.visits[t - 1].kv != v.kv {
                        // Write dK/dV of the old KV tile, load the new K/V.
                        let prev = unit.visits[t - 1];
                        // Drawn under the old run's last visit: every KV run's epilogue has a key of its own.
                        let written = start + drawn(costs.unit_finish(), Phase::UnitFinish, ui, t - 1);
                        books.record(segment(sm, ui, prev, SegmentKind::Finish, start, written));
                        // Under `kv_load_overlap` the load began with the epilogue: only its rest shows.
                        let load_from = if costs.kv_load_overlap { start } else { written };
                        let loaded = (load_from + drawn(costs.unit_start(), Phase::UnitStart, ui, t)).max(written);
                        books.record(segment(sm, ui, v, SegmentKind::Start, written, loaded));
                        st.busy += loaded - start;
                        start = loaded;
                    }
                    let end = start + drawn(costs.compute(v.fraction()), Phase::Compute, ui, t);
                    books.record(segment(sm, ui, v, SegmentKind::Compute, start, end));
                    st.busy += end - start;
                    s.compute_free = end;
                    if let Some(task) = stages {
                        stage(&mut s, &mut books, &mut st, sm, task);
                    }
                    s.pending = costs.dq_deferred.then_some((ui, t));
                    s.next_task += 1;
                    moved = true;
                }
            }
            // Persistent launch: once the compute side has run the unit's tasks, it writes dK/dV and goes on to the
            // CTA's next unit; its writers keep adding.
            if persistent
                && s.unit != u32::MAX
                && s.next_task == units[s.unit as usize].visits.len()
                && s.pending.is_none()
            {
                let products_done = s.compute_free;
                let (ui, written) = write_dkv(&s, &mut books, &mut st, sm);
                s.open_unit(ui).2 = written;
                s.unit = u32::MAX;
                s.compute_free = written;
                let next = books.dispatch.next(&mut s.next_static);
                if next < units.len() {
                    let load_from = if costs.kv_load_overlap { products_done } else { written };
                    start_unit(&mut s, &mut books, &mut st, sm, next, load_from, written);
                }
                moved = true;
            }
            if !moved {
                break;
            }
        }
        if persistent {
            // Units whose compute side and adds are all done have ended; the SM, once its compute side has no
            // unit left either (its static list is done).
            let mut ended = Vec::new();
            s.open.retain(|&(ui, out, written, last)| {
                let done = out == 0 && !written.is_nan();
                if done {
                    ended.push((ui, written.max(last)));
                }
                !done
            });
            for (ui, end) in ended {
                books.unit_ended(ui, end);
                s.free_at = s.free_at.max(end);
            }
            if s.unit == u32::MAX && s.open.is_empty() {
                s.finished = true;
            }
        } else if s.unit != u32::MAX
            && s.next_task == units[s.unit as usize].visits.len()
            && s.pending.is_none()
            && s.held.iter().all(Option::is_none)
        {
            let (ui, written) = write_dkv(&s, &mut books, &mut st, sm);
            let end = written.max(s.open_unit(ui).3);
            s.open.clear();
            s.finished = true;
            s.free_at = end;
            books.unit_ended(ui, end);
            heap.push(Event { time: end, sm });
        }
        sms[sm as usize] = s;
        books.stats[sm as usize] = st;
    }

    if books.done_units < units.len() {
        return Err(decoupled_deadlock(schedule, &sms, &dq, k, books.dispatch.next_in_order));
    }
    Ok(books.finish())
}

/// Explains a stuck decoupled simulation: the earliest-launched unit with a parked writer, its rank and tile.
fn decoupled_deadlock(
    schedule: &Schedule,
    sms: &[DecoupledSm],
    dq: &Tiles,
    k: usize,
    next_in_order: usize,
) -> ScheduleError {
    let machine = schedule.machine();
    let units = schedule.units();
    let m = schedule.problem().m_tiles() as usize;
    let (ui, t) = sms
        .iter()
        .filter(|s| !s.finished)
        .filter_map(|s| (0..k).find_map(|b| s.held[b].map(|(u, t, _)| (u, t))))
        .min()
        .expect("a stuck simulation has a held task");
    let unit = &units[ui];
    let v = unit.visits[t];
    let next = dq.count[unit.bh as usize * m + v.q as usize];
    let holder = units
        .iter()
        .position(|u| u.bh == unit.bh && u.visits.iter().any(|w| w.q == v.q && w.rank as u32 == next))
        .unwrap_or(usize::MAX);
    // Persistent: an SM's static list has reached the holder once the SM's next unit is past it.
    let launched = match machine.launch {
        LaunchPolicy::InOrder => holder < next_in_order,
        LaunchPolicy::Persistent => holder != usize::MAX && sms[holder % sms.len()].next_static > holder,
    };
    // Resident: its compute side runs it, or its writers still hold its adds.
    let resident =
        sms.iter().any(|s| !s.finished && (s.unit as usize == holder || s.open.iter().any(|o| o.0 == holder)));
    ScheduleError::Deadlock {
        sms: machine.sms,
        launch: machine.launch.name(),
        unit: ui,
        bh: unit.bh,
        tile_kind: "dq",
        tile: v.q as u32,
        rank: v.rank as u32,
        next,
        holder,
        holder_state: holder_state(resident, launched),
    }
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
    let holder_state = holder_state(resident, launched);
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use dag_model::{Mask, Order, Problem, ProblemSpec, TileMask, Unit, Visit};

    use super::*;
    use crate::{CostModel, Machine, Schedule, Variability};

    /// A unit of two KV runs, the last of one visit: its two dK/dV epilogues (the Finish segments of one drawn
    /// run's timeline) are two draws, not one drawn twice. Read from the timeline, so that it does not depend on
    /// how the writers' adds fall.
    #[test]
    fn a_units_two_epilogues_are_two_draws() {
        let problem = Problem::new(ProblemSpec {
            batch: 1,
            heads: 1,
            kv_heads: 1,
            seqlen_q: 128,
            seqlen_k: 128,
            head_dim: 64,
            block_m: 64,
            block_n: 64,
        })
        .unwrap();
        let tm = Arc::new(TileMask::new(&problem, &Mask::Full).unwrap());
        let machine = Machine { sms: 1, launch: LaunchPolicy::Persistent };
        let costs = CostModel {
            dq_writers: 2,
            dq_deferred: true,
            kernel_epilogues: true,
            unit_start: 1.0,
            unit_finish: 3.0,
            variability: Some(Variability {
                compute: 0.0,
                reduce: 0.0,
                handoff: 0.0,
                unit_start: 0.0,
                unit_finish: 0.8,
                runs: 1,
            }),
            ..CostModel::ideal(1.0, 0.7)
        };
        let visit = |kv: u32, q: u32, rank: u32| Visit::new(kv, q, rank, 1.0);
        let units = vec![
            Unit { bh: 0, visits: vec![visit(0, 0, 0), visit(0, 1, 0), visit(1, 1, 1)], dkv_ranks: vec![0, 0] },
            Unit { bh: 0, visits: vec![visit(1, 0, 1)], dkv_ranks: vec![0] },
        ];
        let schedule =
            Schedule::validate("two runs", problem, Mask::Full, tm, machine, &costs, Order { units }).unwrap();
        let finishes: Vec<f64> =
            simulate_decoupled(&schedule, &costs, true, Some(Draws { v: costs.variability.unwrap(), run: 1 }))
                .unwrap()
                .timeline
                .iter()
                .filter(|seg| seg.unit == 0 && seg.kind == SegmentKind::Finish)
                .map(|seg| seg.end - seg.start)
                .collect();
        assert_eq!(finishes.len(), 2, "{finishes:?}");
        assert!(finishes.iter().all(|&d| d != 3.0), "both drawn: {finishes:?}");
        assert_ne!(finishes[0], finishes[1], "one draw for two epilogues: {finishes:?}");
    }
}
