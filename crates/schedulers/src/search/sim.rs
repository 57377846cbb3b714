//! Simulation of a plan with arrival-order ranks.
//!
//! The official simulator (`crate::simulate`) replays fixed ranks. Here ranks are not known in advance: every
//! dQ (and dK/dV) tile is a first-come-first-served lock, and a contribution's rank is its place in the
//! arrival order. Events are therefore processed strictly in (time, SM) order, one per task, so that
//! "first" is well defined. A contribution arriving at `t` on a tile whose previous add ends at `free` starts
//! at `max(t, free + handoff)` (at `t` for the first add), which is exactly what the official simulator
//! computes for the same ranks: fixing the ranks this simulation assigns and replaying them gives the same
//! times, and no unit ever waits for one launched after it, so the order cannot deadlock.
//!
//! Local search re-simulates a candidate that differs from its parent only from some launch position on.
//! With in-order launch the run is identical until that unit is dispatched, so the parent's run keeps
//! snapshots of its state just before every `stride`-th dispatch and a candidate resumes from the last one
//! before its first change.

use std::cmp::Ordering;

use dag_model::Order;

use super::plan::{Plan, Tables, Walk};
use super::tourney::Tourney;

const NONE: u32 = u32::MAX;
const UP: u8 = 0;
const DOWN: u8 = 1;
const LIST: u8 = 2;
/// The unit has done its dQ adds and is at its dK/dV adds (GQA); `step` counts them.
const DKV: u8 = 3;

/// Where the unit resident on an SM stands.
#[derive(Clone, Copy)]
struct Cursor {
    /// Launch position of the resident unit, or `NONE` when the SM waits for the dispatcher.
    unit: u32,
    bh: u32,
    run: u32,
    /// Step within the run (or index of the dK/dV add in the `DKV` phase).
    step: u32,
    len: u32,
    base: u32,
    start: u32,
    kind: u8,
    /// Index of the current visit within the unit (for recording ranks).
    visit: u32,
    /// Persistent launch: launch position of this SM's next unit.
    next_static: u32,
    wait: f64,
    /// The (batch, head) this SM holds resident, from a unit's dispatch until its end `held_until`, or
    /// `NONE`.
    held: u32,
    held_until: f64,
}

/// Everything a run needs to go on from some instant.
#[derive(Clone)]
pub(crate) struct State {
    dq_free: Vec<f64>,
    dq_count: Vec<u32>,
    dkv_free: Vec<f64>,
    dkv_count: Vec<u32>,
    cursors: Vec<Cursor>,
    events: Tourney,
    next: usize,
    sm_end: Vec<f64>,
    makespan: f64,
    /// Units resident per (batch, head), the pairs with at least one, and the most of those so far.
    resident: Vec<u32>,
    heads: u32,
    peak_heads: u32,
}

/// The score of a simulated plan: the makespan, then the sum of squared SM end times (lower is better;
/// it rewards moves that shorten one of several SMs ending at the makespan, so plateaus can be crossed).
/// `heads` is not scored: it is the most (batch, head) pairs resident at once, which the search keeps under
/// `Tables::heads_limit`, counted as `Simulation::peak_heads_in_flight` counts (a unit is resident from its
/// dispatch to its end). Where costs are zero it can count more, never fewer: a unit of no duration, or one
/// whose last add ends at the instant it arrives, is still resident to an SM that dispatches at that instant
/// before it (events go in (time, SM) order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Score {
    pub makespan: f64,
    pub spread: f64,
    pub heads: u32,
}

impl Score {
    pub fn better_than(&self, other: &Score) -> bool {
        self.makespan.total_cmp(&other.makespan).then(self.spread.total_cmp(&other.spread)) == Ordering::Less
    }
}

/// Per-unit outcome of a run, which guides the moves.
#[derive(Clone, Default)]
pub(crate) struct Trace {
    pub unit_end: Vec<f64>,
    pub unit_sm: Vec<u32>,
    pub unit_wait: Vec<f64>,
    /// (launch position about to be dispatched, state) in increasing position.
    pub snapshots: Vec<(usize, State)>,
    pub stride: usize,
}

impl Trace {
    /// The snapshot to resume from for a candidate whose units before `first_changed` equal this run's.
    pub fn resume_point(&self, first_changed: usize) -> Option<&State> {
        let at = self.snapshots.partition_point(|(k, _)| *k <= first_changed);
        at.checked_sub(1).map(|i| &self.snapshots[i].1)
    }
}

/// What a run records besides its score.
enum Record<'a> {
    Nothing,
    Trace(&'a mut Trace),
    Ranks(&'a mut Order),
}

impl State {
    pub fn new(tables: &Tables) -> State {
        let dq = tables.bh_count as usize * tables.m;
        let dkv = if tables.gqa() { (tables.bh_count / tables.group) as usize * tables.n } else { 0 };
        let p = tables.sms;
        let cursors = (0..p)
            .map(|sm| Cursor {
                unit: NONE,
                bh: 0,
                run: 0,
                step: 0,
                len: 0,
                base: 0,
                start: 0,
                kind: UP,
                visit: 0,
                next_static: sm as u32,
                wait: 0.0,
                held: NONE,
                held_until: f64::INFINITY,
            })
            .collect();
        State {
            dq_free: vec![0.0; dq],
            dq_count: vec![0; dq],
            dkv_free: vec![0.0; dkv],
            dkv_count: vec![0; dkv],
            cursors,
            events: Tourney::new(p),
            next: 0,
            sm_end: vec![0.0; p],
            makespan: 0.0,
            resident: vec![0; tables.bh_count as usize],
            heads: 0,
            peak_heads: 0,
        }
    }

    fn load_run(c: &mut Cursor, plan: &Plan, tables: &Tables) {
        let run = &plan.units[c.unit as usize].runs[c.run as usize];
        c.base = tables.col_start[run.kv as usize];
        c.len = tables.col_len(run.kv);
        c.step = 0;
        (c.kind, c.start) = match run.walk {
            Walk::Up(s) => (UP, s),
            Walk::Down(s) => (DOWN, s),
            Walk::List(_) => (LIST, 0),
        };
    }

    #[inline]
    fn position(c: &Cursor, plan: &Plan) -> u32 {
        match c.kind {
            UP => {
                let p = c.start + c.step;
                if p >= c.len { p - c.len } else { p }
            }
            DOWN => {
                if c.step <= c.start {
                    c.start - c.step
                } else {
                    c.start + c.len - c.step
                }
            }
            _ => match &plan.units[c.unit as usize].runs[c.run as usize].walk {
                Walk::List(l) => l[c.step as usize],
                _ => unreachable!("the cursor kind follows the walk"),
            },
        }
    }

    /// Runs to the end, or returns `None` as soon as the makespan is known to exceed `cutoff`.
    fn run(&mut self, plan: &Plan, tables: &Tables, cutoff: f64, mut record: Record<'_>) -> Option<Score> {
        let costs = &tables.costs;
        let (reduce, handoff, dkv_reduce) = (costs.reduce, costs.handoff, costs.dkv_reduce);
        let (unit_start, unit_finish) = (costs.unit_start, costs.unit_finish);
        let gqa = tables.gqa();
        let m = tables.m;
        let units = plan.units.len();
        while let Some((time, sm)) = self.events.peek() {
            if time > cutoff {
                return None;
            }
            let mut c = self.cursors[sm as usize];
            let next = if c.unit == NONE {
                let k = if tables.persistent { c.next_static as usize } else { self.next };
                // The snapshot is of the state before this event changes anything (the cursor is written back
                // only at the end of the event).
                if let Record::Trace(t) = &mut record
                    && !tables.persistent
                    && k > 0
                    && k < units
                    && k % t.stride == 0
                    && t.snapshots.last().is_none_or(|(last, _)| *last < k)
                {
                    t.snapshots.push((k, self.clone()));
                }
                self.release(&mut c);
                if k >= units {
                    None
                } else {
                    if tables.persistent {
                        c.next_static += tables.sms as u32;
                    } else {
                        self.next += 1;
                    }
                    c.unit = k as u32;
                    c.bh = plan.units[k].bh;
                    if self.resident[c.bh as usize] == 0 {
                        // A new head in flight: first let go of every unit that has ended by now, so that a
                        // unit ending at the instant this one starts is not counted with it (as
                        // `Simulation::peak_heads_in_flight` counts).
                        for other in 0..self.cursors.len() {
                            let o = self.cursors[other];
                            if other != sm as usize && o.unit == NONE && o.held != NONE && o.held_until <= time {
                                let mut o = o;
                                self.release(&mut o);
                                self.cursors[other] = o;
                            }
                        }
                    }
                    c.held = c.bh;
                    c.held_until = f64::INFINITY;
                    let held = &mut self.resident[c.bh as usize];
                    *held += 1;
                    if *held == 1 {
                        self.heads += 1;
                        self.peak_heads = self.peak_heads.max(self.heads);
                        if self.peak_heads > tables.heads_limit {
                            return None;
                        }
                    }
                    c.run = 0;
                    c.visit = 0;
                    c.wait = 0.0;
                    Self::load_run(&mut c, plan, tables);
                    if let Record::Trace(t) = &mut record {
                        t.unit_sm[k] = sm;
                    }
                    let g = (c.base + Self::position(&c, plan)) as usize;
                    Some(time + unit_start + tables.cost_of[g])
                }
            } else if c.kind != DKV {
                // Arrival at the dQ add of the current visit.
                let g = (c.base + Self::position(&c, plan)) as usize;
                let tile = c.bh as usize * m + tables.q_of[g] as usize;
                let count = self.dq_count[tile];
                let start = if count == 0 { time } else { time.max(self.dq_free[tile] + handoff) };
                if let Record::Ranks(order) = &mut record {
                    order.units[c.unit as usize].visits[c.visit as usize].rank = count as u16;
                }
                self.dq_count[tile] = count + 1;
                let end = start + reduce;
                self.dq_free[tile] = end;
                c.wait += start - time;
                c.step += 1;
                c.visit += 1;
                if c.step < c.len {
                    let g = (c.base + Self::position(&c, plan)) as usize;
                    Some(end + tables.cost_of[g])
                } else if (c.run as usize) + 1 < plan.units[c.unit as usize].runs.len() {
                    c.run += 1;
                    Self::load_run(&mut c, plan, tables);
                    let g = (c.base + Self::position(&c, plan)) as usize;
                    Some(end + tables.cost_of[g])
                } else if gqa {
                    c.kind = DKV;
                    c.step = 0;
                    Some(end)
                } else {
                    Some(self.finish(&mut c, sm, end + unit_finish, &mut record))
                }
            } else {
                // Arrival at the dK/dV add of run `step` (GQA).
                let unit = &plan.units[c.unit as usize];
                let kv = unit.runs[c.step as usize].kv;
                let tile = tables.kv_group_of(c.bh) as usize * tables.n + kv as usize;
                let count = self.dkv_count[tile];
                let start = if count == 0 { time } else { time.max(self.dkv_free[tile] + handoff) };
                if let Record::Ranks(order) = &mut record {
                    order.units[c.unit as usize].dkv_ranks[c.step as usize] = count;
                }
                self.dkv_count[tile] = count + 1;
                let end = start + dkv_reduce;
                self.dkv_free[tile] = end;
                c.wait += start - time;
                c.step += 1;
                if (c.step as usize) < unit.runs.len() {
                    Some(end)
                } else {
                    Some(self.finish(&mut c, sm, end + unit_finish, &mut record))
                }
            };
            self.cursors[sm as usize] = c;
            self.events.replace_top(next);
        }
        // A run resumed from a snapshot already over the limit never reaches the check at a dispatch.
        if self.peak_heads > tables.heads_limit {
            return None;
        }
        let spread = self.sm_end.iter().map(|e| e * e).sum();
        Some(Score { makespan: self.makespan, spread, heads: self.peak_heads })
    }

    /// Lets go of the (batch, head) the SM held, if any.
    fn release(&mut self, c: &mut Cursor) {
        if c.held != NONE {
            let held = &mut self.resident[c.held as usize];
            *held -= 1;
            if *held == 0 {
                self.heads -= 1;
            }
            c.held = NONE;
        }
    }

    /// Ends the resident unit at `end`; the SM asks the dispatcher for the next unit at that time.
    fn finish(&mut self, c: &mut Cursor, sm: u32, end: f64, record: &mut Record<'_>) -> f64 {
        if let Record::Trace(t) = record {
            t.unit_end[c.unit as usize] = end;
            t.unit_wait[c.unit as usize] = c.wait;
        }
        self.sm_end[sm as usize] = end;
        self.makespan = self.makespan.max(end);
        c.unit = NONE;
        c.held_until = end;
        end
    }
}

/// Simulates `plan` from the start, keeping snapshots every `stride` dispatches and per-unit outcomes.
pub(crate) fn trace(plan: &Plan, tables: &Tables, stride: usize) -> (Score, Trace) {
    let units = plan.units.len();
    let mut t = Trace {
        unit_end: vec![0.0; units],
        unit_sm: vec![0; units],
        unit_wait: vec![0.0; units],
        snapshots: Vec::new(),
        stride: stride.max(1),
    };
    let score = State::new(tables).run(plan, tables, f64::INFINITY, Record::Trace(&mut t)).expect("no cutoff");
    (score, t)
}

/// Re-traces `plan`, which equals `parent`'s plan before `first_changed`: resumes from the parent's snapshot
/// and keeps the parent's snapshots and per-unit outcomes up to it.
pub(crate) fn retrace(plan: &Plan, tables: &Tables, parent: &Trace, first_changed: usize) -> (Score, Trace) {
    let Some(state) = parent.resume_point(first_changed) else {
        return trace(plan, tables, parent.stride);
    };
    let kept = parent.snapshots.partition_point(|(k, _)| *k <= first_changed);
    let from = parent.snapshots[kept - 1].0;
    let units = plan.units.len();
    let resize = |v: &Vec<f64>| {
        let mut out = v[..from].to_vec();
        out.resize(units, 0.0);
        out
    };
    let mut unit_sm = parent.unit_sm[..from].to_vec();
    unit_sm.resize(units, 0);
    let mut t = Trace {
        unit_end: resize(&parent.unit_end),
        unit_sm,
        unit_wait: resize(&parent.unit_wait),
        // The snapshot at `from` is taken again when the run reaches that dispatch.
        snapshots: parent.snapshots[..kept - 1].to_vec(),
        stride: parent.stride,
    };
    let mut state = state.clone();
    let score = state.run(plan, tables, f64::INFINITY, Record::Trace(&mut t)).expect("no cutoff");
    (score, t)
}

/// The score of a candidate equal to `parent`'s plan before `first_changed`, or `None` if its makespan
/// exceeds `cutoff`.
pub(crate) fn score_from(
    plan: &Plan,
    tables: &Tables,
    parent: Option<&Trace>,
    first_changed: usize,
    cutoff: f64,
) -> Option<Score> {
    let mut state = match parent.and_then(|t| t.resume_point(first_changed)) {
        Some(s) => s.clone(),
        None => State::new(tables),
    };
    state.run(plan, tables, cutoff, Record::Nothing)
}

/// The order of `plan` with every rank set to its arrival order, and the makespan of that run.
pub(crate) fn assign_ranks(plan: &Plan, tables: &Tables) -> (Order, f64) {
    let mut order = plan.to_order_unranked(tables);
    let score = State::new(tables).run(plan, tables, f64::INFINITY, Record::Ranks(&mut order)).expect("no cutoff");
    (order, score.makespan)
}
