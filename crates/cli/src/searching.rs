//! Schedule search and schedule files on the command line: `--schedule search`, `--schedule-file` and
//! `--save-schedule`, for every command that evaluates schedules through `Setup::evaluate_each` (so `gantt`,
//! `sweep` and later ones get them without code of their own), and the pieces `dashc search` uses.
//!
//! The library never reads the clock; a time budget is a `stop` callback built here.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::ProgressBar;
use schedulers::{
    CostModel, Evaluation, FileHeader, HeadsLimit, Progress, Provenance, Schedule, ScheduleFile, ScheduleKind,
    SearchConfig, SearchError, SearchResult, evaluate, search,
};

use crate::args::ShapeArgs;
use crate::exit::bad_input;
use crate::output::write_file;
use crate::setup::{Outcome, Setup};

/// The schedule name that asks for a search.
pub const SEARCH: &str = "search";
/// Budget of `--schedule search` when no budget flag is given: small, and the same result everywhere.
pub const DEFAULT_ITERATIONS: u64 = 400;
/// Budget of `dashc search` when no budget flag is given.
pub const DEFAULT_SEARCH_SECS: f64 = 10.0;
/// The longest budget accepted (a week): a time limit beyond it is a typo, and one beyond `Duration`'s range
/// cannot be represented.
const MAX_BUDGET_SECS: f64 = 7.0 * 24.0 * 3600.0;

/// When a search ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    Secs(f64),
    Iterations(u64),
}

/// A resolved `--schedule search` (or `dashc search`) request.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub budget: Budget,
    pub seed: u64,
    pub heads_in_flight: HeadsLimit,
}

impl SearchRequest {
    /// The request of `a` if `wanted` (`--schedule` named search); budget flags without a search are refused.
    pub fn from_args(a: &ShapeArgs, wanted: bool) -> Result<Option<SearchRequest>> {
        let b = &a.search;
        if !wanted {
            if b.budget_secs.is_some()
                || b.iterations.is_some()
                || b.search_seed.is_some()
                || b.max_heads_in_flight.is_some()
            {
                return Err(bad_input(
                    "--budget-secs, --iterations, --search-seed and --max-heads-in-flight apply to --schedule \
                     search (--schedules with search in the list for sweep and bench; or dashc search)",
                ));
            }
            return Ok(None);
        }
        let budget = match (b.budget_secs, b.iterations) {
            (Some(s), _) if !(s.is_finite() && s > 0.0 && s <= MAX_BUDGET_SECS) => {
                let shown = if s.is_finite() && s.abs() >= 1e9 { format!("{s:e}") } else { s.to_string() };
                return Err(bad_input(format!(
                    "--budget-secs must be a positive number of seconds, at most {MAX_BUDGET_SECS} (a week; got {shown})"
                )));
            }
            (Some(s), _) => Budget::Secs(s),
            (None, Some(0)) => return Err(bad_input("--iterations must be at least 1 (got 0)")),
            (None, Some(n)) => Budget::Iterations(n),
            (None, None) => Budget::Iterations(DEFAULT_ITERATIONS),
        };
        let heads_in_flight = match b.max_heads_in_flight.as_deref().map(str::trim) {
            None | Some("builtins") => HeadsLimit::Builtins,
            Some("any") => HeadsLimit::Any,
            Some(n) => match n.parse::<u32>() {
                Ok(n) if n >= 1 => HeadsLimit::AtMost(n),
                _ => {
                    return Err(bad_input(format!(
                        "--max-heads-in-flight takes a number of at least 1, `builtins` or `any` (got `{n}`)"
                    )));
                }
            },
        };
        Ok(Some(SearchRequest { budget, seed: b.search_seed.unwrap_or(0), heads_in_flight }))
    }
}

/// Runs the search of `req` for `setup`, comparing with (and, with `builtin_seeds`, starting from) `builtins`
/// and starting from the schedule of `--schedule-file` if one was given. `on_round` sees every round's
/// progress and the time since the start.
pub fn run(
    setup: &Setup,
    req: &SearchRequest,
    builtins: Vec<ScheduleKind>,
    builtin_seeds: bool,
    on_round: &(dyn Fn(&Progress, Duration) + Sync),
) -> Result<SearchResult> {
    let started = Instant::now();
    let config = SearchConfig {
        seed: req.seed,
        iterations: match req.budget {
            Budget::Iterations(n) => Some(n),
            Budget::Secs(_) => None,
        },
        builtins,
        builtin_seeds,
        seeds: setup.schedule_file.iter().map(|f| (*f.schedule).clone()).collect(),
        heads_in_flight: req.heads_in_flight,
    };
    let limit = match req.budget {
        Budget::Secs(s) => Some(Duration::from_secs_f64(s)),
        Budget::Iterations(_) => None,
    };
    let stop = |p: &Progress| {
        let elapsed = started.elapsed();
        on_round(p, elapsed);
        limit.is_some_and(|l| elapsed >= l)
    };
    search(setup.problem, setup.mask.clone(), setup.tile_mask.clone(), setup.machine, &setup.costs, &config, &stop)
        .map_err(|e| match e {
            // The limit came from the command line: bad input, exit code 2.
            SearchError::NoSeedWithinHeads { .. } | SearchError::SearchedOverHeads { .. } => {
                bad_input(format!("--max-heads-in-flight: {e}"))
            }
            e => anyhow::Error::new(e).context("schedule search"),
        })
}

/// The schedules of `setup` beyond the built-ins: the loaded file's, then the search's (against every
/// built-in, starting from them too). Each one done steps `bar`, and the search's rounds show in its message.
pub fn evaluate_extra<T>(
    setup: &Setup,
    record_timeline: bool,
    keep: &(impl Fn(Evaluation) -> T + Sync),
    bar: &ProgressBar,
) -> Result<Vec<Outcome<T>>> {
    let mut out = Vec::new();
    if let Some(file) = &setup.schedule_file {
        out.push(Outcome::Done(keep(evaluate((*file.schedule).clone(), &setup.costs, record_timeline)?)));
        bar.inc(1);
    }
    if let Some(req) = &setup.search {
        bar.set_message(STARTING);
        let result = run(setup, req, ScheduleKind::ALL.to_vec(), true, &|p, _| bar.set_message(round(p, req.budget)))?;
        out.push(Outcome::Done(keep(evaluate(result.schedule, &setup.costs, record_timeline)?)));
        bar.inc(1);
    }
    Ok(out)
}

/// What a search shows before its first round: building the built-ins and the list seeds it starts from takes
/// as long as evaluating the built-ins does.
pub const STARTING: &str = "search: building the starting schedules";

/// Where a search stands, for a progress message.
pub fn round(p: &Progress, budget: Budget) -> String {
    let of = match budget {
        Budget::Iterations(n) => format!(" of {n}"),
        Budget::Secs(_) => String::new(),
    };
    format!("search: iteration {}{of}, makespan {}", p.iterations, crate::output::num(p.makespan))
}

/// A schedule read from `--schedule-file` and validated against the command's problem, mask and machine.
#[derive(Debug, Clone)]
pub struct LoadedSchedule {
    pub schedule: Arc<Schedule>,
}

impl LoadedSchedule {
    pub fn read(path: &Path, setup: &Setup) -> Result<LoadedSchedule> {
        let file = read_schedule_file(path)?;
        let schedule = file
            .load(&setup.problem, &setup.mask, setup.tile_mask.clone(), setup.machine, &setup.costs)
            .map_err(|e| bad_input(format!("schedule file {} {e}", path.display())))?;
        Ok(LoadedSchedule { schedule: Arc::new(schedule) })
    }
}

/// Parses a schedule file: JSON first, then its format and version, then the rest, so that each kind of
/// mistake gets its own message.
pub fn read_schedule_file(path: &Path) -> Result<ScheduleFile> {
    let shown = path.display();
    let text = fs::read_to_string(path).map_err(|e| bad_input(format!("cannot read schedule file {shown}: {e}")))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad_input(format!("schedule file {shown} is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(bad_input(format!("schedule file {shown} is not a dashc schedule file (not a JSON object)")));
    }
    let header: FileHeader = serde_json::from_value(value.clone()).map_err(|e| {
        bad_input(format!("schedule file {shown} is not a dashc schedule file (bad format or schema_version: {e})"))
    })?;
    header.check().map_err(|e| bad_input(format!("schedule file {shown} {e}")))?;
    serde_json::from_value(value)
        .map_err(|e| bad_input(format!("schedule file {shown} is malformed: {e}; see docs/schedule-file.md")))
}

/// The schedule file text of an evaluated schedule: pretty header, one unit per line (readable, diffable,
/// and not one line per number).
pub fn schedule_file_text(e: &Evaluation, costs: &CostModel) -> String {
    let provenance =
        Provenance { tool: format!("dashc {}", env!("CARGO_PKG_VERSION")), costs: *costs, makespan: e.makespan() };
    let file = ScheduleFile::of(&e.schedule, Some(provenance));
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"format\": {},", json(&file.format));
    let _ = writeln!(out, "  \"schema_version\": {},", file.schema_version);
    let _ = writeln!(out, "  \"name\": {},", json(&file.name));
    let _ = writeln!(out, "  \"problem\": {},", json(&file.problem));
    let _ = writeln!(out, "  \"mask\": {},", json(&file.mask));
    let _ = writeln!(out, "  \"machine\": {},", json(&file.machine));
    if let Some(p) = &file.provenance {
        let _ = writeln!(out, "  \"provenance\": {},", json(p));
    }
    out.push_str("  \"units\": [\n");
    for (i, u) in file.units.iter().enumerate() {
        let sep = if i + 1 < file.units.len() { "," } else { "" };
        let _ = writeln!(out, "    {}{sep}", json(u));
    }
    out.push_str("  ]\n}\n");
    out
}

/// Compact JSON of one value of a schedule file (plain numbers, strings and structs: it cannot fail).
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("schedule file values serialise")
}

/// Refuses `--save-schedule` unless exactly one schedule is requested.
pub fn check_save(setup: &Setup, save: Option<&Path>) -> Result<()> {
    if save.is_none() {
        return Ok(());
    }
    // `--schedule all` skips the built-ins that do not apply to the problem: they are not candidates either.
    let builtins = if setup.all { setup.applicable_builtins() as usize } else { setup.schedules.len() };
    let count = builtins + setup.search.is_some() as usize + setup.schedule_file.is_some() as usize;
    if count != 1 {
        let which = if setup.all { " (those of --schedule all that apply)" } else { "" };
        return Err(bad_input(format!(
            "--save-schedule writes one schedule, but {count} are selected{which}; pick one with --schedule (e.g. \
             --schedule search)"
        )));
    }
    check_save_path(save)
}

/// `--save-schedule`'s file can be written, before any work; `-` is refused rather than written as a file of that
/// name.
pub fn check_save_path(save: Option<&Path>) -> Result<()> {
    if save.is_some_and(|path| path.as_os_str() == "-") {
        return Err(bad_input("--save-schedule needs a file name, not -"));
    }
    crate::output::check_outputs([save])
}

/// A schedule file for `--save-schedule`, kept beside an outcome: the schedule's name, for the message, and the
/// file's text.
pub struct ScheduleText {
    name: String,
    text: String,
}

impl ScheduleText {
    pub fn of(e: &Evaluation, costs: &CostModel) -> ScheduleText {
        ScheduleText { name: e.schedule.name().to_string(), text: schedule_file_text(e, costs) }
    }
}

/// Writes the schedule file kept beside the outcomes and drops it. There is one, or with `--split-tail` two, the
/// built-in and its split version: then the split version is written, the one `codegen` renders, and the message
/// says so.
pub fn save_and_strip<T>(
    outcomes: Vec<Outcome<(T, Option<ScheduleText>)>>,
    save: Option<&Path>,
) -> Result<Vec<Outcome<T>>> {
    let mut out = Vec::with_capacity(outcomes.len());
    let mut files = Vec::new();
    for o in outcomes {
        out.push(match o {
            Outcome::Done((kept, file)) => {
                files.extend(file);
                Outcome::Done(kept)
            }
            Outcome::Skipped { schedule, reason } => Outcome::Skipped { schedule, reason },
        });
    }
    if let (Some(path), Some(ScheduleText { name, text })) = (save, files.last()) {
        write_file(path, text)?;
        let note = match &files[..] {
            [ScheduleText { name: unsplit, .. }, _] => {
                format!(" (the split tail of {unsplit}, as codegen renders it; without --split-tail: {unsplit})")
            }
            _ => String::new(),
        };
        eprintln!("schedule {name} written to {}{note}", path.display());
    }
    Ok(out)
}
