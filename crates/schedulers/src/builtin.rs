//! The built-in schedules of `docs/model.md` §4.

use std::str::FromStr;
use std::sync::Arc;

use dag_model::{Mask, Order, Problem, TileMask, Unit, Visit};
use serde::Serialize;

use crate::{CostModel, Machine, Schedule, ScheduleError};

/// A built-in schedule.
/// What the symmetric shifts need of the KV tiles (`ScheduleError::NotApplicable::needs`), and the hint given with
/// it, in terms of the flags that set the tiles (a caller whose flags differ, as `dashc --ideal`, rewrites it).
pub const EVEN_KV_TILES: &str = "an even number of kv tiles";
pub const EVEN_KV_TILES_HINT: &str = "change --seqlen-k or --block-n, or use descending";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScheduleKind {
    /// FlashAttention-3's original deterministic mode: head-major, KV ascending, Q ascending, ranks by KV.
    Naive,
    /// DASH's descending Q-tile iteration: like naive, but each unit visits its Q tiles from the last down.
    Descending,
    /// Shortest first (FlashAttention-3/4's causal deterministic mode): KV units launched in descending KV
    /// order (under a causal mask, shortest column first), Q ascending, ranks by decreasing KV. Launch and rank
    /// follow the same order on every mask, so no unit ever waits for one launched after it.
    Spt,
    /// DASH's shift schedule for full masks: unit j starts at Q tile j and wraps around.
    Shift,
    /// DASH's symmetric shift for causal masks: KV j paired with KV N-1-j, shifted over the dense rectangle.
    SymmetricShift,
    /// Shift with the units' first Q tiles spread evenly over the Q tiles (unit l of A starts at floor(l·M/A)),
    /// not one apart: when a wave group has fewer units than Q tiles (always with block_m < block_n, and in the
    /// groups of a head split across waves), contributions to one dQ tile then arrive floor(M/A) or more visits
    /// apart, which leaves room for the hand-off and for units that start late.
    SpreadShift,
    /// Symmetric shift with the rectangle's starting rows spread the same way.
    SpreadSymmetricShift,
}

impl ScheduleKind {
    pub const ALL: [ScheduleKind; 7] = [
        ScheduleKind::Naive,
        ScheduleKind::Descending,
        ScheduleKind::Spt,
        ScheduleKind::Shift,
        ScheduleKind::SymmetricShift,
        ScheduleKind::SpreadShift,
        ScheduleKind::SpreadSymmetricShift,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ScheduleKind::Naive => "naive",
            ScheduleKind::Descending => "descending",
            ScheduleKind::Spt => "spt",
            ScheduleKind::Shift => "shift",
            ScheduleKind::SymmetricShift => "symmetric-shift",
            ScheduleKind::SpreadShift => "spread-shift",
            ScheduleKind::SpreadSymmetricShift => "spread-symmetric-shift",
        }
    }

    /// The name of this schedule's split-tail version (`name()` + `split::SPLIT_SUFFIX`).
    pub fn split_name(self) -> &'static str {
        match self {
            ScheduleKind::Naive => "naive+split",
            ScheduleKind::Descending => "descending+split",
            ScheduleKind::Spt => "spt+split",
            ScheduleKind::Shift => "shift+split",
            ScheduleKind::SymmetricShift => "symmetric-shift+split",
            ScheduleKind::SpreadShift => "spread-shift+split",
            ScheduleKind::SpreadSymmetricShift => "spread-symmetric-shift+split",
        }
    }

    /// Whether the schedule is defined for this problem and mask; the error says why not and what to do.
    pub fn check_applicable(self, problem: &Problem, mask: &Mask) -> Result<(), ScheduleError> {
        match self {
            ScheduleKind::Shift | ScheduleKind::SpreadShift if *mask != Mask::Full => {
                Err(ScheduleError::NotApplicable {
                    schedule: self.name(),
                    needs: "a full mask",
                    got: format!("mask {}", mask.name()),
                    hint: "use symmetric-shift or spread-symmetric-shift for causal masks, or naive, descending, spt or search for other masks",
                })
            }
            ScheduleKind::SymmetricShift | ScheduleKind::SpreadSymmetricShift if *mask != Mask::Causal => {
                Err(ScheduleError::NotApplicable {
                    schedule: self.name(),
                    needs: "a causal mask",
                    got: format!("mask {}", mask.name()),
                    hint: "use shift or spread-shift for full masks, or naive, descending, spt or search for other masks",
                })
            }
            ScheduleKind::SymmetricShift | ScheduleKind::SpreadSymmetricShift
                if !problem.n_tiles().is_multiple_of(2) =>
            {
                Err(ScheduleError::NotApplicable {
                    schedule: self.name(),
                    needs: EVEN_KV_TILES,
                    got: format!("{} = ceil({} / {})", problem.n_tiles(), problem.seqlen_k(), problem.block_n()),
                    hint: EVEN_KV_TILES_HINT,
                })
            }
            _ => Ok(()),
        }
    }

    /// Builds and validates this schedule for `problem` under `mask` on `machine`.
    pub fn build(
        self,
        problem: Problem,
        mask: Mask,
        tile_mask: Arc<TileMask>,
        machine: Machine,
        costs: &CostModel,
    ) -> Result<Schedule, ScheduleError> {
        self.check_applicable(&problem, &mask)?;
        if machine.sms == 0 {
            return Err(ScheduleError::NoSms);
        }
        let order = match self {
            ScheduleKind::Naive => column_order(&problem, &tile_mask, false, false),
            ScheduleKind::Descending => column_order(&problem, &tile_mask, false, true),
            ScheduleKind::Spt => column_order(&problem, &tile_mask, true, false),
            ScheduleKind::Shift => shift(&problem, &tile_mask, machine, Starts::OneApart),
            ScheduleKind::SymmetricShift => symmetric_shift(&problem, &tile_mask, machine, Starts::OneApart),
            ScheduleKind::SpreadShift => shift(&problem, &tile_mask, machine, Starts::Spread),
            ScheduleKind::SpreadSymmetricShift => symmetric_shift(&problem, &tile_mask, machine, Starts::Spread),
        };
        Schedule::validate(self.name(), problem, mask, tile_mask, machine, costs, order)
    }
}

impl FromStr for ScheduleKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ScheduleKind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = ScheduleKind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown schedule '{s}'; expected one of {} or all", names.join(", "))
        })
    }
}

/// dK/dV ranks of a unit's KV runs: query heads of one KV group add in ascending head order, which is their
/// launch (and so arrival) order under head-major launch.
fn dkv_ranks(problem: &Problem, bh: u32, runs: usize) -> Vec<u32> {
    vec![(bh % problem.heads()) % problem.group(); runs]
}

/// The non-empty KV columns of one (batch, head).
fn columns(mask: &TileMask) -> impl DoubleEndedIterator<Item = u32> + '_ {
    (0..mask.n()).filter(|&kv| !mask.column(kv).is_empty())
}

/// Naive, descending and spt: one unit per KV column, head-major.
///
/// `reverse_kv`: launch and rank columns by descending KV (spt); otherwise by ascending KV. Ranks follow the
/// launch order: ranking by column length while launching by KV (or the reverse) lets a unit wait for one
/// launched after it, which deadlocks a persistent grid. `descending_q`: visit Q tiles from the last down.
fn column_order(problem: &Problem, mask: &TileMask, reverse_kv: bool, descending_q: bool) -> Order {
    let m = problem.m_tiles() as usize;
    // Rank of column kv on each of its Q tiles, the same for every head: a running count per Q tile over the
    // columns in rank order.
    let mut rank_of: Vec<Vec<u32>> = vec![Vec::new(); mask.n() as usize];
    let mut seen = vec![0u32; m];
    let launch: Vec<u32> = if reverse_kv { columns(mask).rev().collect() } else { columns(mask).collect() };
    for &kv in &launch {
        rank_of[kv as usize] = mask
            .column(kv)
            .iter()
            .map(|&q| {
                seen[q as usize] += 1;
                seen[q as usize] - 1
            })
            .collect();
    }
    let mut units = Vec::with_capacity(problem.bh_count() as usize * launch.len());
    for bh in 0..problem.bh_count() {
        for &kv in &launch {
            let col = mask.column(kv);
            let fr = mask.column_fractions(kv);
            let ranks = &rank_of[kv as usize];
            let visit = |at: usize| Visit::new(kv, col[at], ranks[at], fr[at]);
            let visits: Vec<Visit> = if descending_q {
                (0..col.len()).rev().map(visit).collect()
            } else {
                (0..col.len()).map(visit).collect()
            };
            units.push(Unit { bh, visits, dkv_ranks: dkv_ranks(problem, bh, 1) });
        }
    }
    Order { units }
}

/// Splits the units of one head, given by their launch positions `first..first + count`, into groups that
/// start in the same wave: returns (offset inside the head, size) of each group.
fn wave_groups(machine: Machine, first: usize, count: usize) -> Vec<(usize, usize)> {
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for k in 0..count {
        match groups.last_mut() {
            Some((start, size)) if machine.wave_of(first + *start) == machine.wave_of(first + k) => *size += 1,
            _ => groups.push((k, 1)),
        }
    }
    groups
}

/// Where the units of a wave group start in the rows they cycle over.
#[derive(Clone, Copy)]
enum Starts {
    /// The paper's shift: unit l starts at row l (rows are one visit apart on neighbouring units).
    OneApart,
    /// Unit l of A starts at row floor(l·R/A) of the R rows: equal to `OneApart` when R = A; when R > A,
    /// neighbouring units reach a row R/A visits apart instead of one.
    Spread,
}

/// A wave group's cycle over `rows` rows for `a` units: where unit l is at each step, and its rank on each row,
/// counted from 0 inside the group.
///
/// `Starts::OneApart` is the paper's closed form: unit l visits row (l + t) mod rows at step t, with rank
/// (min(row, a-1) - l) mod a on it (docs/model.md). `Starts::Spread` starts unit l at row floor(l·rows/a) and ranks
/// by arrival order (the step (row - start) mod rows at which a unit reaches the row; ties, possible only when
/// a > rows, to the lower l). With a <= rows no contribution waits in the idealized model; tied units reach a row
/// together, and one waits.
struct Cycle {
    rows: u32,
    a: u32,
    /// Spread starts only: each unit's starting row and `rank[l * rows + row]`.
    spread: Option<(Vec<u32>, Vec<u32>)>,
}

impl Cycle {
    fn new(rows: u32, a: u32, starts: Starts) -> Cycle {
        let spread = matches!(starts, Starts::Spread).then(|| {
            let starts: Vec<u32> = (0..a).map(|l| (u64::from(l) * u64::from(rows) / u64::from(a)) as u32).collect();
            let mut rank = vec![0u32; (a * rows) as usize];
            let mut by_arrival: Vec<(u32, u32)> = Vec::with_capacity(a as usize);
            for row in 0..rows {
                by_arrival.clear();
                by_arrival.extend((0..a).map(|l| ((row + rows - starts[l as usize]) % rows, l)));
                by_arrival.sort_unstable();
                for (r, &(_, l)) in by_arrival.iter().enumerate() {
                    rank[(l * rows + row) as usize] = r as u32;
                }
            }
            (starts, rank)
        });
        Cycle { rows, a, spread }
    }

    /// The row unit `l` visits at step `t` of the cycle.
    fn row(&self, l: u32, t: u32) -> u32 {
        let start = self.spread.as_ref().map_or(l, |(starts, _)| starts[l as usize]);
        (start + t) % self.rows
    }

    /// Unit `l`'s rank on `row`, inside the group.
    fn rank(&self, l: u32, row: u32) -> u32 {
        match &self.spread {
            None => (row.min(self.a - 1) + self.a - l) % self.a,
            Some((_, rank)) => rank[(l * self.rows + row) as usize],
        }
    }
}

/// Shift (full mask). Within a wave group of A active KV tiles after F finished ones, local index l = j - F
/// starts at Q tile l (`Starts::OneApart`: visits (l + t) mod M at step t, rank on Q tile q
/// F + ((min(q, A-1) - l) mod A)) or at floor(l·M/A) (`Starts::Spread`), and ranks are the arrival order.
fn shift(problem: &Problem, mask: &TileMask, machine: Machine, starts: Starts) -> Order {
    let (m, n) = (problem.m_tiles(), problem.n_tiles());
    let mut units = Vec::with_capacity((problem.bh_count() * n) as usize);
    for bh in 0..problem.bh_count() {
        for (f, a) in wave_groups(machine, (bh * n) as usize, n as usize) {
            let (f, a) = (f as u32, a as u32);
            let cycle = Cycle::new(m, a, starts);
            for l in 0..a {
                let kv = f + l;
                let fr = mask.column_fractions(kv);
                let visits = (0..m)
                    .map(|t| {
                        let q = cycle.row(l, t);
                        Visit::new(kv, q, f + cycle.rank(l, q), fr[q as usize])
                    })
                    .collect();
                units.push(Unit { bh, visits, dkv_ranks: dkv_ranks(problem, bh, 1) });
            }
        }
    }
    Order { units }
}

/// Symmetric shift (causal, N even). Unit u holds the long column u and the short column N-1-u. Per wave group
/// (units F..F+A of a head): the rectangle rows R0..M, R0 being the first row every long column of the group
/// covers, are shift-scheduled; then each unit walks its own triangle (rows below R0) upward and its short
/// column downward. Ranks: earlier groups first; in the rectangle as in shift, in the triangle by arrival
/// (higher KV first), then the group's short columns by decreasing local index.
fn symmetric_shift(problem: &Problem, mask: &TileMask, machine: Machine, starts: Starts) -> Order {
    let (m, n) = (problem.m_tiles(), problem.n_tiles());
    let half = n / 2;
    let lo = |kv: u32| mask.column(kv)[0];
    let frac = |kv: u32, q: u32| mask.column_fractions(kv)[(q - lo(kv)) as usize];
    let mut units = Vec::with_capacity((problem.bh_count() * half) as usize);
    // Contributions to each Q tile from earlier groups of the current head.
    let mut offset = vec![0u32; m as usize];
    for bh in 0..problem.bh_count() {
        offset.iter_mut().for_each(|o| *o = 0);
        for (f, a) in wave_groups(machine, (bh * half) as usize, half as usize) {
            let (f, a) = (f as u32, a as u32);
            let r0 = lo(f + a - 1);
            let rect = m - r0;
            // Per row: the long columns of the group covering it (those with lo(j) <= q, i.e. j in f..=jmax, all
            // of them in the rectangle) and the short columns covering it.
            let mut long_cover = vec![0u32; m as usize];
            let mut short_cover = vec![0u32; m as usize];
            for j in f..f + a {
                (lo(j)..m).for_each(|q| long_cover[q as usize] += 1);
                (lo(n - 1 - j)..m).for_each(|q| short_cover[q as usize] += 1);
            }
            let cycle = Cycle::new(rect, a, starts);
            for l in 0..a {
                let j = f + l;
                let short = n - 1 - j;
                let mut visits = Vec::with_capacity((m - lo(j) + m - lo(short)) as usize);
                for t in 0..rect {
                    let row = cycle.row(l, t);
                    let q = r0 + row;
                    visits.push(Visit::new(j, q, offset[q as usize] + cycle.rank(l, row), frac(j, q)));
                }
                for q in lo(j)..r0 {
                    // Triangle rows arrive from the highest covering KV (f + cover - 1) first.
                    let rank = offset[q as usize] + (f + long_cover[q as usize] - 1 - j);
                    visits.push(Visit::new(j, q, rank, frac(j, q)));
                }
                for q in (lo(short)..m).rev() {
                    let rank = offset[q as usize] + long_cover[q as usize] + (a - 1 - l);
                    visits.push(Visit::new(short, q, rank, frac(short, q)));
                }
                units.push(Unit { bh, visits, dkv_ranks: dkv_ranks(problem, bh, 2) });
            }
            for q in 0..m as usize {
                offset[q] += long_cover[q] + short_cover[q];
            }
        }
    }
    Order { units }
}
