//! `dashc gantt`: a Gantt chart of simulated schedules, or of timeline files (predicted or measured).
//!
//! Both paths go through the timeline format: a simulation is first turned into the `TimelineFile` that
//! `simulate --timeline` would write, so a drawn prediction and a drawn file can never disagree. Several
//! timeline files of one problem (a prediction and a GPU trace) are stacked on one time axis.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::args::{GanttArgs, ShapeArgs};
use crate::exit::bad_input;
use crate::plot::gantt::{Gantt, Part};
use crate::plot::{self, Format};
use crate::setup::{Keeps, Outcome, Setup};
use crate::timeline::{SegmentJson, TimelineFile, TimelineSchedule, check_comparable};
use schedulers::SPLIT_SUFFIX;

/// Above this many tasks per schedule the timeline no longer fits comfortably in memory (every segment is
/// kept until drawn); the chart would not show more at that scale anyway.
const TASK_LIMIT: u64 = 2_000_000;

pub fn run(args: GanttArgs) -> Result<()> {
    Format::of(&args.out)?;
    crate::output::check_outputs([Some(args.out.as_path())])?;
    let names = args.compare.as_deref().map(compare_list).transpose()?;
    if args.timeline.is_empty() {
        let file = simulate(&args.shape, names.as_deref())?;
        let names = names.map(|n| with_splits(n, args.shape.split_tail, &file));
        draw(&file, names.as_deref(), &args.out, args.width, args.height)?;
    } else {
        let files = args.timeline.iter().map(|p| TimelineFile::load(p)).collect::<Result<Vec<_>>>()?;
        let labels = labels(&args.timeline);
        let named: Vec<(&str, &TimelineFile)> = labels.iter().map(String::as_str).zip(&files).collect();
        check_comparable(&named)?;
        draw_files(&named, names.as_deref(), &args.out, args.width, args.height)?;
    }
    eprintln!("gantt chart written to {}", args.out.display());
    Ok(())
}

fn compare_list(text: &str) -> Result<Vec<String>> {
    let names: Vec<String> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
    if names.is_empty() {
        return Err(bad_input("--compare is empty: give schedule names, e.g. --compare naive,shift"));
    }
    if names.iter().any(|n| n == "all") {
        return Err(bad_input(
            "--compare names schedules, and 'all' is none: leave --compare out to draw every schedule, or list them, \
             e.g. --compare naive,shift",
        ));
    }
    Ok(names)
}

/// The schedules to draw of `names`: with `--split-tail`, each one's split version follows it where the
/// simulation made one (a schedule with no partial last pass has none).
fn with_splits(names: Vec<String>, split_tail: bool, file: &TimelineFile) -> Vec<String> {
    if !split_tail {
        return names;
    }
    let simulated = |n: &str| file.schedules.iter().any(|s| s.schedule == n);
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let split = format!("{name}{SPLIT_SUFFIX}");
        let also = !name.ends_with(SPLIT_SUFFIX) && simulated(&split);
        for n in std::iter::once(name).chain(also.then_some(split)) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// Simulates the schedules of `shape` (or those of `compare`; a name ending in +split asks for that built-in's
/// split tail) and returns their timelines.
pub fn simulate(shape: &ShapeArgs, compare: Option<&[String]>) -> Result<TimelineFile> {
    let mut shape = shape.clone();
    if let Some(names) = compare {
        if shape.schedule != "all" {
            return Err(bad_input("--compare and --schedule both choose schedules: give one of them"));
        }
        let mut bases: Vec<&str> = Vec::new();
        for name in names {
            let base = name.strip_suffix(SPLIT_SUFFIX).unwrap_or(name);
            if base != name && shape.schedule_file.is_some() {
                return Err(bad_input(format!(
                    "--compare {name}: a split tail is made of a built-in, and --schedule-file draws the file's \
                     schedule as it is"
                )));
            }
            shape.split_tail |= base != name;
            if !bases.contains(&base) {
                bases.push(base);
            }
        }
        shape.schedule = bases.join(",");
    }
    let setup = Setup::from_args(&shape)?;
    let tasks = setup.tile_mask.active_tiles() * setup.problem.bh_count() as u64;
    if tasks > TASK_LIMIT {
        return Err(bad_input(format!(
            "this problem has {tasks} tasks per schedule, more than a Gantt chart can hold (limit {TASK_LIMIT}); \
             use fewer heads, a shorter sequence or larger tiles"
        )));
    }
    // The timelines add to the schedules that `from_args` checked.
    setup.check_memory(Keeps { timelines: true, ..Keeps::default() })?;
    let outcomes = setup.evaluate_each(true, |e| TimelineSchedule {
        schedule: e.schedule.name().to_string(),
        makespan: e.makespan(),
        best_bound: Some(e.bounds.best()),
        segments: e.simulation.timeline.iter().map(SegmentJson::from).collect(),
    })?;
    let mut schedules: Vec<TimelineSchedule> = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Done(t) => schedules.push(t),
            // A schedule --compare names explicitly must be drawn: say why it cannot be.
            Outcome::Skipped { schedule, reason }
                if compare.is_some_and(|names| names.iter().any(|n| n == schedule)) =>
            {
                return Err(bad_input(format!("--compare {schedule}: {reason}")));
            }
            // The chart leaves it out; say so, as `simulate` does in its table.
            Outcome::Skipped { schedule, reason } => eprintln!("{schedule}: skipped, {reason}"),
        }
    }
    Ok(TimelineFile::predicted(&setup, schedules))
}

/// How the panels and messages name each timeline file: its file name, or its whole path where two files
/// share a name.
fn labels(paths: &[PathBuf]) -> Vec<String> {
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned()))
        .collect();
    let clash = names.iter().enumerate().any(|(i, n)| names[..i].contains(n));
    if clash { paths.iter().map(|p| p.display().to_string()).collect() } else { names }
}

/// Draws the schedules of `file` named in `compare` (all of them by default), in that order, to `out`.
pub fn draw(
    file: &TimelineFile,
    compare: Option<&[String]>,
    out: &Path,
    width: u32,
    height: Option<u32>,
) -> Result<()> {
    draw_files(&[("the timeline", file)], compare, out, width, height)
}

/// Draws, file after file, the schedules of each named file that `compare` names (all of them by default), in
/// that order, on one time axis, to `out`. The files must be of one problem and time unit
/// (`check_comparable`).
pub fn draw_files(
    files: &[(&str, &TimelineFile)],
    compare: Option<&[String]>,
    out: &Path,
    width: u32,
    height: Option<u32>,
) -> Result<()> {
    let mut parts = Vec::with_capacity(files.len());
    for &(name, file) in files {
        let schedules: Vec<&TimelineSchedule> = match compare {
            None => file.schedules.iter().collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    file.schedules.iter().find(|s| &s.schedule == n).ok_or_else(|| {
                        let have: Vec<&str> = file.schedules.iter().map(|s| s.schedule.as_str()).collect();
                        bad_input(format!("--compare: no schedule '{n}' in {name} (it has {})", have.join(", ")))
                    })
                })
                .collect::<Result<_>>()?,
        };
        parts.push(Part { file, schedules, name: name.to_string() });
    }
    if parts.iter().all(|p| p.schedules.is_empty()) {
        return Err(bad_input("no schedule to draw"));
    }
    let chart = Gantt::stacked(parts, width, height)?;
    plot::save(&chart, out)
}
