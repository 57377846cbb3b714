//! Schedules of the deterministic attention backward and their evaluation.
//!
//! A schedule fixes (1) the launch order of work units, (2) each unit's visit order and (3) every dQ tile's
//! accumulation order. This crate builds the built-in schedules of `docs/model.md` (naive, descending, spt,
//! shift, symmetric-shift), validates any schedule (structure, acyclicity, deadlock freedom on P SMs), and
//! evaluates it: critical path, lower bounds, and a discrete-event simulation on a finite machine. `search`
//! looks for a schedule of low simulated makespan for any mask and for GQA (docs/search.md), and
//! `ScheduleFile` is the serde form of a schedule (docs/schedule-file.md).
//!
//! It does no I/O: no files, no environment, no printing. Inputs and outputs are plain values.

mod bounds;
mod builtin;
pub mod calibrate;
mod cost;
mod error;
mod evaluate;
mod file;
mod machine;
mod schedule;
mod search;
mod simulate;
mod split;

pub use bounds::{Bounds, decoupled_critical_path};
pub use builtin::{EVEN_KV_TILES, EVEN_KV_TILES_HINT, ScheduleKind};
pub use cost::{CostModel, MAX_COST, MAX_VARIABILITY_RUNS, MEMORY_ROOF_EXPONENT, MemoryRoof, Variability, dram_bytes};
pub use error::ScheduleError;
pub use evaluate::{Evaluation, EvaluationSummary, evaluate};
pub use file::{
    Difference, FILE_FORMAT, FILE_SCHEMA_VERSION, FileHeader, Provenance, ScheduleFile, ScheduleFileError, UnitRecord,
    first_difference,
};
pub use machine::{LaunchPolicy, Machine};
pub use schedule::Schedule;
pub use search::{
    BuiltinResult, CANDIDATES_PER_ROUND, HeadsLimit, ProblemBounds, Progress, SearchConfig, SearchError, SearchResult,
    SeedResult, search,
};
pub use simulate::{Segment, SegmentKind, Simulation, SmStats, predicted_makespan, simulate, simulated_prediction};
pub use split::{NoSplit, SPLIT_SUFFIX, split_tail, split_tail_or_why};

pub use dag_model::{Mask, Order, Problem, ProblemSpec, TileMask, Unit, Visit};
