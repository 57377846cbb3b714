//! `dashc gantt`: a Gantt chart of simulated schedules, or of a timeline file (predicted or measured).
//!
//! Both paths go through the timeline format: a simulation is first turned into the `TimelineFile` that
//! `simulate --timeline` would write, so a drawn prediction and a drawn file can never disagree.

use std::path::Path;

use anyhow::Result;

use crate::args::{GanttArgs, ShapeArgs};
use crate::exit::bad_input;
use crate::plot::gantt::Gantt;
use crate::plot::{self, Format};
use crate::setup::{Outcome, Setup};
use crate::timeline::{SegmentJson, TimelineFile, TimelineSchedule};

/// Above this many tasks per schedule the timeline no longer fits comfortably in memory (every segment is
/// kept until drawn); the chart would not show more at that scale anyway.
const TASK_LIMIT: u64 = 2_000_000;

pub fn run(args: GanttArgs) -> Result<()> {
    Format::of(&args.out)?;
    plot::check_side("--width", args.width)?;
    if let Some(h) = args.height {
        plot::check_side("--height", h)?;
    }
    let names = args.compare.as_deref().map(compare_list).transpose()?;
    let file = match &args.timeline {
        Some(path) => TimelineFile::load(path)?,
        None => simulate(&args.shape, names.as_deref())?,
    };
    draw(&file, names.as_deref(), &args.out, args.width, args.height)?;
    eprintln!("gantt chart written to {}", args.out.display());
    Ok(())
}

fn compare_list(text: &str) -> Result<Vec<String>> {
    let names: Vec<String> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
    if names.is_empty() {
        return Err(bad_input("--compare is empty: give schedule names, e.g. --compare naive,shift"));
    }
    Ok(names)
}

/// Simulates the schedules of `shape` (or those of `compare`) and returns their timelines.
pub fn simulate(shape: &ShapeArgs, compare: Option<&[String]>) -> Result<TimelineFile> {
    let mut shape = shape.clone();
    if let Some(names) = compare {
        if shape.schedule != "all" {
            return Err(bad_input("--compare and --schedule both choose schedules: give one of them"));
        }
        shape.schedule = names.join(",");
    }
    let setup = Setup::from_args(&shape)?;
    let tasks = setup.tile_mask.active_tiles() * setup.problem.bh_count() as u64;
    if tasks > TASK_LIMIT {
        return Err(bad_input(format!(
            "this problem has {tasks} tasks per schedule, more than a Gantt chart can hold (limit {TASK_LIMIT}); \
             use fewer heads, a shorter sequence or larger tiles"
        )));
    }
    let outcomes = setup.evaluate_each(true, |e| TimelineSchedule {
        schedule: e.schedule.name().to_string(),
        makespan: e.makespan(),
        best_bound: Some(e.bounds.best()),
        segments: e.simulation.timeline.iter().map(SegmentJson::from).collect(),
    })?;
    let schedules: Vec<TimelineSchedule> = outcomes
        .into_iter()
        .filter_map(|o| match o {
            Outcome::Done(t) => Some(t),
            Outcome::Skipped { .. } => None,
        })
        .collect();
    Ok(TimelineFile::predicted(&setup, schedules))
}

/// Draws the schedules of `file` named in `compare` (all of them by default), in that order, to `out`.
pub fn draw(
    file: &TimelineFile,
    compare: Option<&[String]>,
    out: &Path,
    width: u32,
    height: Option<u32>,
) -> Result<()> {
    let chosen: Vec<&TimelineSchedule> = match compare {
        None => file.schedules.iter().collect(),
        Some(names) => names
            .iter()
            .map(|n| {
                file.schedules.iter().find(|s| &s.schedule == n).ok_or_else(|| {
                    let have: Vec<&str> = file.schedules.iter().map(|s| s.schedule.as_str()).collect();
                    bad_input(format!("--compare: no schedule '{n}' in the timeline (it has {})", have.join(", ")))
                })
            })
            .collect::<Result<_>>()?,
    };
    if chosen.is_empty() {
        return Err(bad_input("no schedule to draw"));
    }
    let chart = Gantt::new(file, chosen, width, height)?;
    plot::save(&chart, out)
}
