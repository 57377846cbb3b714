//! The schedule file (docs/schedule-file.md): a schedule as JSON, so that a searched schedule can be kept,
//! compared and compiled like a built-in one.
//!
//! This module only defines the serde types and the checks; reading and writing files is the command line's
//! business. Loading goes through `Schedule::validate`, so a file can never produce an unchecked schedule.

use std::sync::Arc;

use dag_model::{Mask, Order, Problem, ProblemSpec, TileMask, Unit, Visit};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::{CostModel, Machine, Schedule, ScheduleError};

/// The `format` field of every schedule file.
pub const FILE_FORMAT: &str = "dashc-schedule";
/// The `schema_version` this build reads and writes.
pub const FILE_SCHEMA_VERSION: u32 = 1;

/// The two fields read first, so that a file of another kind or version gets a clear message rather than a
/// complaint about its other fields.
#[derive(Debug, Clone, Deserialize)]
pub struct FileHeader {
    pub format: Option<String>,
    pub schema_version: Option<u32>,
}

/// How a schedule was made; informational, not checked on loading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The tool and version that wrote the file.
    pub tool: String,
    /// The cost model the schedule was evaluated (or searched) under, and its makespan there.
    pub costs: CostModel,
    pub makespan: f64,
}

/// One unit: its (batch, head), its visits as `[kv, q, rank]` in visit order, and its dK/dV ranks (one per
/// run of visits to one KV tile; all 0 without GQA).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitRecord {
    pub bh: u32,
    pub visits: Vec<[u32; 3]>,
    pub dkv_ranks: Vec<u32>,
}

/// A schedule file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFile {
    pub format: String,
    pub schema_version: u32,
    pub name: String,
    pub problem: ProblemSpec,
    pub mask: Mask,
    pub machine: Machine,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Units in launch order.
    pub units: Vec<UnitRecord>,
}

/// Why a schedule file cannot be used. Messages read as a predicate of "schedule file PATH ...".
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ScheduleFileError {
    #[error("is not a dashc schedule file ({}, expected \"{FILE_FORMAT}\")", match found {
        Some(format) => format!("its format is \"{format}\""),
        None => "it has no format field".to_string(),
    })]
    Format { found: Option<String> },
    #[error("has schema_version {found}, but this dashc reads version {FILE_SCHEMA_VERSION}")]
    Version { found: u32 },
    #[error("is for {field} {file}, but the command asks for {asked}")]
    Mismatch { field: &'static str, file: String, asked: String },
    #[error("has unit {unit} visit {visit} at tile (kv {kv}, q {q}), outside the {n} x {m} kv x q tile grid")]
    OutsideGrid { unit: usize, visit: usize, kv: u32, q: u32, n: u32, m: u32 },
    #[error("has unit {unit} visit {visit} with rank {rank}, larger than 65535")]
    RankTooLarge { unit: usize, visit: usize, rank: u32 },
    #[error("does not hold a valid schedule: {0}")]
    Invalid(#[from] ScheduleError),
}

impl FileHeader {
    /// Checks the format and version fields.
    pub fn check(&self) -> Result<(), ScheduleFileError> {
        if self.format.as_deref() != Some(FILE_FORMAT) {
            return Err(ScheduleFileError::Format { found: self.format.clone() });
        }
        match self.schema_version {
            Some(FILE_SCHEMA_VERSION) => Ok(()),
            found => Err(ScheduleFileError::Version { found: found.unwrap_or(0) }),
        }
    }
}

impl ScheduleFile {
    /// The file of a validated schedule.
    pub fn of(schedule: &Schedule, provenance: Option<Provenance>) -> ScheduleFile {
        let units = schedule
            .units()
            .iter()
            .map(|u| UnitRecord {
                bh: u.bh,
                visits: u.visits.iter().map(|v| [v.kv as u32, v.q as u32, v.rank as u32]).collect(),
                dkv_ranks: u.dkv_ranks.clone(),
            })
            .collect();
        ScheduleFile {
            format: FILE_FORMAT.to_string(),
            schema_version: FILE_SCHEMA_VERSION,
            name: schedule.name().to_string(),
            problem: schedule.problem().spec(),
            mask: schedule.mask().clone(),
            machine: schedule.machine(),
            provenance,
            units,
        }
    }

    /// The schedule of this file, for a command that asks for `problem` under `mask` on `machine`: the file
    /// must be for exactly those, and its order must validate (under `costs`).
    pub fn load(
        &self,
        problem: &Problem,
        mask: &Mask,
        tile_mask: Arc<TileMask>,
        machine: Machine,
        costs: &CostModel,
    ) -> Result<Schedule, ScheduleFileError> {
        FileHeader { format: Some(self.format.clone()), schema_version: Some(self.schema_version) }.check()?;
        self.check_matches(problem, mask, machine)?;
        let (m, n) = (problem.m_tiles(), problem.n_tiles());
        let mut units = Vec::with_capacity(self.units.len());
        for (ui, u) in self.units.iter().enumerate() {
            let mut visits = Vec::with_capacity(u.visits.len());
            for (vi, &[kv, q, rank]) in u.visits.iter().enumerate() {
                if kv >= n || q >= m {
                    return Err(ScheduleFileError::OutsideGrid { unit: ui, visit: vi, kv, q, n, m });
                }
                if rank > u16::MAX as u32 {
                    return Err(ScheduleFileError::RankTooLarge { unit: ui, visit: vi, rank });
                }
                // The fraction is the mask's; an inactive tile gets 0 and `Order::check` names it.
                visits.push(Visit::new(kv, q, rank, tile_mask.fraction(q, kv)));
            }
            units.push(Unit { bh: u.bh, visits, dkv_ranks: u.dkv_ranks.clone() });
        }
        let order = Order { units };
        Ok(Schedule::validate(self.name.clone(), *problem, mask.clone(), tile_mask, machine, costs, order)?)
    }

    fn check_matches(&self, problem: &Problem, mask: &Mask, machine: Machine) -> Result<(), ScheduleFileError> {
        match first_difference((&self.problem, &self.mask, self.machine), (&problem.spec(), mask, machine)) {
            Some(Difference { field, left, right }) => {
                Err(ScheduleFileError::Mismatch { field, file: left, asked: right })
            }
            None => Ok(()),
        }
    }
}

/// A field in which two (problem, mask, machine) descriptions differ: its name as the JSON files spell it, and
/// its value on each side, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub field: &'static str,
    pub left: String,
    pub right: String,
}

/// The first field in which `left` and `right` differ, checked in a fixed order (the shape fields, `sms`,
/// `launch`, `mask`), so that a message about two files always names the same field; `None` when they describe
/// one problem on one machine. Files of schedules and timelines are matched with it.
pub fn first_difference(
    left: (&ProblemSpec, &Mask, Machine),
    right: (&ProblemSpec, &Mask, Machine),
) -> Option<Difference> {
    let ((f, fm, fmach), (a, am, amach)) = (left, right);
    let fields = [
        ("batch", f.batch, a.batch),
        ("heads", f.heads, a.heads),
        ("kv_heads", f.kv_heads, a.kv_heads),
        ("seqlen_q", f.seqlen_q, a.seqlen_q),
        ("seqlen_k", f.seqlen_k, a.seqlen_k),
        ("head_dim", f.head_dim, a.head_dim),
        ("block_m", f.block_m, a.block_m),
        ("block_n", f.block_n, a.block_n),
        ("sms", fmach.sms, amach.sms),
    ];
    for (field, l, r) in fields {
        if l != r {
            return Some(Difference { field, left: l.to_string(), right: r.to_string() });
        }
    }
    if fmach.launch != amach.launch {
        return Some(Difference {
            field: "launch",
            left: fmach.launch.name().to_string(),
            right: amach.launch.name().to_string(),
        });
    }
    if fm != am {
        return Some(Difference { field: "mask", left: describe(fm), right: describe(am) });
    }
    None
}

/// A mask in a few words (document lists can be long).
fn describe(mask: &Mask) -> String {
    match mask {
        Mask::SlidingWindow { left, right } => {
            let side = |x: &Option<u32>| x.map_or("inf".to_string(), |v| v.to_string());
            format!("sliding-window (left {}, right {})", side(left), side(right))
        }
        Mask::Document { lens, causal } => {
            let kind = if *causal { "causal" } else { "bidirectional" };
            let shown: Vec<String> = lens.iter().take(6).map(u32::to_string).collect();
            let more = if lens.len() > 6 { ",..." } else { "" };
            format!("document ({kind}, {} docs: {}{more})", lens.len(), shown.join(","))
        }
        Mask::Blocks { pairs } => format!("blocks ({} listed)", pairs.len()),
        m => m.name().to_string(),
    }
}
