//! An order: which unit (CTA) visits which tiles in which sequence, and which rank each contribution takes in
//! the accumulation order of its dQ tile (and, with GQA, of its dK/dV tile). This is the raw material of a
//! schedule; `Order::check` verifies its structure against the problem's tile mask.

use serde::{Deserialize, Serialize};

use crate::{Problem, TileMask};

/// One task of a unit: the partial dQ of Q tile `q` from KV tile `kv`, added to dQ tile `q` at position `rank`
/// of that tile's accumulation order, with the unmasked share of the tile (a cost input).
///
/// Eight bytes, because a large problem has tens of millions of them: tile indices and ranks fit in 16 bits
/// (`Problem::new` caps the grid at 65535 tiles per direction) and the fraction is kept in units of 1/32768,
/// exact for the halves and quarters that diagonal tiles produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Visit {
    pub kv: u16,
    pub q: u16,
    pub rank: u16,
    fraction: u16,
}

const FRACTION_ONE: f32 = 32768.0;

impl Visit {
    pub fn new(kv: u32, q: u32, rank: u32, fraction: f32) -> Visit {
        debug_assert!(kv <= u16::MAX as u32 && q <= u16::MAX as u32 && rank <= u16::MAX as u32);
        Visit { kv: kv as u16, q: q as u16, rank: rank as u16, fraction: quantize(fraction) }
    }
    /// Unmasked share of the tile, as stored.
    pub fn fraction(&self) -> f32 {
        self.fraction as f32 / FRACTION_ONE
    }
}

/// A tile's unmasked fraction in the 16-bit form a `Visit` stores.
pub fn quantize(fraction: f32) -> u16 {
    (fraction.clamp(0.0, 1.0) * FRACTION_ONE).round() as u16
}

/// The work of one CTA: one (batch, head) `bh`, its visits in order, and per run of visits to one KV tile the
/// rank of its dK/dV contribution among the query heads that share the KV head (all 0 without GQA).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    pub bh: u32,
    pub visits: Vec<Visit>,
    pub dkv_ranks: Vec<u32>,
}

impl Unit {
    /// The KV tiles of this unit in the order it holds them; each one's visits form one contiguous run.
    pub fn kv_runs(&self) -> impl Iterator<Item = u32> + '_ {
        self.visits
            .iter()
            .enumerate()
            .filter(|(i, v)| *i == 0 || self.visits[i - 1].kv != v.kv)
            .map(|(_, v)| v.kv as u32)
    }
}

/// Units in launch order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Order {
    pub units: Vec<Unit>,
}

/// A structural defect of an order, found by `Order::check`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OrderDefect {
    #[error("unit {unit} names bh {bh}, but the problem has {bh_count} (batch, head) pairs")]
    BadHead { unit: usize, bh: u32, bh_count: u32 },
    #[error("unit {unit} has no visits")]
    EmptyUnit { unit: usize },
    #[error("unit {unit} visits tile (q {q}, kv {kv}), which the mask leaves inactive or the grid lacks")]
    InactiveTile { unit: usize, q: u32, kv: u32 },
    #[error("tile (bh {bh}, q {q}, kv {kv}) is visited twice (units {first} and {second})")]
    VisitedTwice { bh: u32, q: u32, kv: u32, first: usize, second: usize },
    #[error("tile (bh {bh}, q {q}, kv {kv}) is never visited")]
    NotVisited { bh: u32, q: u32, kv: u32 },
    #[error(
        "kv tile (bh {bh}, kv {kv}) is split between units {first} and {second}; with grouped-query attention one unit must own a whole kv tile"
    )]
    SplitColumn { bh: u32, kv: u32, first: usize, second: usize },
    #[error("unit {unit} leaves kv tile {kv} and comes back to it; a unit must finish one kv tile before the next")]
    SplitKvRun { unit: usize, kv: u32 },
    #[error(
        "dq tile (bh {bh}, q {q}) has ranks that are not a permutation of 0..{contributors} (rank {rank} of unit {unit})"
    )]
    BadRank { bh: u32, q: u32, rank: u32, contributors: u32, unit: usize },
    #[error("unit {unit} has {got} dk/dv ranks for {want} kv runs")]
    DkvRankCount { unit: usize, got: usize, want: usize },
    #[error(
        "dk/dv tile (kv group {group}, kv {kv}) has ranks that are not a permutation of 0..{contributors} (rank {rank} of unit {unit})"
    )]
    BadDkvRank { group: u32, kv: u32, rank: u32, contributors: u32, unit: usize },
    #[error("unit {unit} carries fraction {got} for tile (q {q}, kv {kv}), but the mask says {want}")]
    WrongFraction { unit: usize, q: u32, kv: u32, got: f32, want: f32 },
}

impl Order {
    /// Number of (batch, head, KV tile) columns whose visits are split between more than one unit (their
    /// dK/dV partials are summed after the main loop; `--split-tail`).
    pub fn split_columns(&self, problem: &Problem) -> usize {
        let n = problem.n_tiles() as usize;
        let mut runs = vec![0u32; problem.bh_count() as usize * n];
        for unit in &self.units {
            for kv in unit.kv_runs() {
                runs[unit.bh as usize * n + kv as usize] += 1;
            }
        }
        runs.iter().filter(|&&r| r > 1).count()
    }

    /// Number of tasks (visits) over all units.
    pub fn tasks(&self) -> u64 {
        self.units.iter().map(|u| u.visits.len() as u64).sum()
    }

    /// Checks that the order covers every active tile of every (batch, head) exactly once, that each unit's
    /// KV tiles form contiguous runs (and, with GQA, each KV tile belongs to one unit), and that every dQ (and
    /// dK/dV) tile's ranks are a permutation of its contributors.
    pub fn check(&self, problem: &Problem, mask: &TileMask) -> Result<(), OrderDefect> {
        let (m, n) = (problem.m_tiles(), problem.n_tiles());
        let bh_count = problem.bh_count();
        // Flags indexed by (bh, position in the column-major active list) and by (bh, position in the
        // row-major active list + rank): one byte per task each, since a large problem has tens of millions.
        let active = mask.active_tiles() as usize;
        let mut col_start = vec![0usize; n as usize + 1];
        for kv in 0..n {
            col_start[kv as usize + 1] = col_start[kv as usize] + mask.column(kv).len();
        }
        let mut visited = BitSet::new(bh_count as usize * active);
        let mut rank_seen = BitSet::new(bh_count as usize * active);
        // Columns whose active Q tiles are one run (full, causal, windows) locate a tile without a search.
        let run_start: Vec<Option<u32>> = (0..n)
            .map(|kv| mask.column_is_contiguous(kv).then(|| mask.column(kv).first().copied()).flatten())
            .collect();
        let mut kv_owner = vec![u32::MAX; bh_count as usize * n as usize];
        for (ui, unit) in self.units.iter().enumerate() {
            if unit.bh >= bh_count {
                return Err(OrderDefect::BadHead { unit: ui, bh: unit.bh, bh_count });
            }
            if unit.visits.is_empty() {
                return Err(OrderDefect::EmptyUnit { unit: ui });
            }
            let mut finished_kv: Vec<u32> = Vec::new();
            for (vi, v) in unit.visits.iter().enumerate() {
                let (kv, q, rank) = (v.kv as u32, v.q as u32, v.rank as u32);
                if kv >= n || q >= m {
                    return Err(OrderDefect::InactiveTile { unit: ui, q, kv });
                }
                let col = mask.column(kv);
                let at = match run_start[kv as usize] {
                    Some(first) if q >= first && ((q - first) as usize) < col.len() => Some((q - first) as usize),
                    Some(_) => None,
                    None => col.binary_search(&q).ok(),
                };
                let Some(at) = at else {
                    return Err(OrderDefect::InactiveTile { unit: ui, q, kv });
                };
                let want = mask.column_fractions(kv)[at];
                if v.fraction != quantize(want) {
                    return Err(OrderDefect::WrongFraction { unit: ui, q, kv, got: v.fraction(), want });
                }
                if vi > 0 && unit.visits[vi - 1].kv != v.kv {
                    finished_kv.push(unit.visits[vi - 1].kv as u32);
                    if finished_kv.contains(&kv) {
                        return Err(OrderDefect::SplitKvRun { unit: ui, kv });
                    }
                }
                // Without GQA a KV tile may be split between units (its parts' dK/dV partials are summed after
                // the main loop, in launch order); with GQA its dK/dV adds are chained per query head, one run
                // each, so a column must stay whole.
                let owner = &mut kv_owner[(unit.bh * n + kv) as usize];
                if problem.group() > 1 && *owner != u32::MAX && *owner != ui as u32 {
                    return Err(OrderDefect::SplitColumn { bh: unit.bh, kv, first: *owner as usize, second: ui });
                }
                *owner = ui as u32;
                let slot = unit.bh as usize * active + col_start[kv as usize] + at;
                if visited.insert(slot) {
                    let first = self.first_visitor(unit.bh, q, kv);
                    return Err(OrderDefect::VisitedTwice { bh: unit.bh, q, kv, first, second: ui });
                }
                // Distinct ranks below the contributor count, with every contributor visited exactly once,
                // make a permutation.
                let contributors = mask.row(q).len() as u32;
                let rank_slot = unit.bh as usize * active + mask.row_offset(q) as usize + rank as usize;
                if rank >= contributors || rank_seen.insert(rank_slot) {
                    return Err(OrderDefect::BadRank { bh: unit.bh, q, rank, contributors, unit: ui });
                }
            }
        }
        if let Some(slot) = visited.first_unset() {
            let (bh, pos) = ((slot / active) as u32, slot % active);
            let kv = col_start.partition_point(|&start| start <= pos) - 1;
            let q = mask.column(kv as u32)[pos - col_start[kv]];
            return Err(OrderDefect::NotVisited { bh, q, kv: kv as u32 });
        }
        self.check_dkv_ranks(problem)
    }

    fn first_visitor(&self, bh: u32, q: u32, kv: u32) -> usize {
        self.units
            .iter()
            .position(|u| u.bh == bh && u.visits.iter().any(|v| v.q as u32 == q && v.kv as u32 == kv))
            .unwrap_or(usize::MAX)
    }

    fn check_dkv_ranks(&self, problem: &Problem) -> Result<(), OrderDefect> {
        let n = problem.n_tiles() as usize;
        let groups = (problem.batch() * problem.kv_heads()) as usize;
        let group = problem.group();
        // Which (batch, head) + 1 holds each dK/dV rank: the parts of a split column share their head's rank.
        let mut holder = vec![0u32; groups * n * group as usize];
        for (ui, unit) in self.units.iter().enumerate() {
            let runs: Vec<u32> = unit.kv_runs().collect();
            if runs.len() != unit.dkv_ranks.len() {
                return Err(OrderDefect::DkvRankCount { unit: ui, got: unit.dkv_ranks.len(), want: runs.len() });
            }
            let g = problem.kv_group_of(unit.bh);
            for (&kv, &rank) in runs.iter().zip(&unit.dkv_ranks) {
                let slot = (g as usize * n + kv as usize) * group as usize + rank as usize;
                if rank >= group || ![0, unit.bh + 1].contains(&std::mem::replace(&mut holder[slot], unit.bh + 1)) {
                    return Err(OrderDefect::BadDkvRank { group: g, kv, rank, contributors: group, unit: ui });
                }
            }
        }
        Ok(())
    }
}

/// A fixed-size set of indices, one bit each: the checks above touch tens of millions of flags at random.
struct BitSet {
    words: Vec<u64>,
    len: usize,
}

impl BitSet {
    fn new(len: usize) -> BitSet {
        BitSet { words: vec![0; len.div_ceil(64)], len }
    }

    /// Sets bit `i`; returns whether it was already set.
    #[inline]
    fn insert(&mut self, i: usize) -> bool {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let was = self.words[w] & b != 0;
        self.words[w] |= b;
        was
    }

    fn first_unset(&self) -> Option<usize> {
        let (w, word) = self.words.iter().enumerate().find(|(_, w)| **w != u64::MAX)?;
        let i = w * 64 + word.trailing_ones() as usize;
        (i < self.len).then_some(i)
    }
}
