//! `dashc simulate`: the bounds table plus where each SM's time went, and optionally the full timeline.

use anyhow::Result;
use schedulers::{Evaluation, SmStats};
use serde::Serialize;

use crate::args::SimulateArgs;
use crate::exit::bad_input;
use crate::output::{Kept, header, num, print_results_json, table, write_file};
use crate::searching::{ScheduleText, check_save, save_and_strip};
use crate::setup::{Keeps, Outcome, Setup};
use crate::timeline::{SegmentJson, TimelineFile, TimelineSchedule};

/// Above this many tasks a timeline would take gigabytes; the user is asked to shrink the problem.
const TIMELINE_TASK_LIMIT: u64 = 4_000_000;

#[derive(Serialize)]
struct SmJson {
    /// Share of SM time (makespan x SMs) spent busy, waiting and idle.
    busy_percent: f64,
    wait_percent: f64,
    idle_percent: f64,
    per_sm: Vec<SmStats>,
    #[serde(skip)]
    timeline: Option<TimelineSchedule>,
}

fn keep(e: Evaluation, want_timeline: bool) -> Kept<SmJson> {
    let s = &e.simulation;
    let total = e.makespan() * s.sms.len() as f64;
    let pct = |x: f64| if total > 0.0 { 100.0 * x / total } else { 0.0 };
    let timeline = want_timeline.then(|| TimelineSchedule {
        schedule: e.schedule.name().to_string(),
        makespan: e.makespan(),
        best_bound: Some(e.bounds.best()),
        segments: s.timeline.iter().map(SegmentJson::from).collect(),
    });
    let extra = SmJson {
        busy_percent: pct(s.total_busy()),
        wait_percent: pct(s.total_wait()),
        idle_percent: pct(s.total_idle()),
        per_sm: s.sms.clone(),
        timeline,
    };
    Kept::of(&e, extra)
}

pub fn run(args: SimulateArgs) -> Result<()> {
    let setup = Setup::from_args(&args.shape)?;
    let want_timeline = args.timeline.is_some();
    if want_timeline {
        let tasks = setup.tile_mask.active_tiles() * setup.problem.bh_count() as u64;
        if tasks > TIMELINE_TASK_LIMIT {
            return Err(bad_input(format!(
                "--timeline records every task, and this problem has {tasks} per schedule (limit {TIMELINE_TASK_LIMIT}); \
                 use fewer heads, a shorter sequence or larger tiles"
            )));
        }
    }
    let save = args.save_schedule.as_deref();
    check_save(&setup, save)?;
    // `--timeline -` prints the timeline to stdout in place of the table, as `sweep --json -` does.
    let timeline_to_stdout = args.timeline.as_deref() == Some(std::path::Path::new("-"));
    if timeline_to_stdout && args.json {
        return Err(bad_input("--timeline - and --json both ask for stdout: give --timeline a file name"));
    }
    crate::output::check_outputs([args.timeline.as_deref()])?;
    if want_timeline || save.is_some() {
        // The timelines and the schedule file's text add to the schedules that `from_args` checked.
        setup.check_memory(Keeps { timelines: want_timeline, schedule_text: save.is_some() })?;
    }
    let outcomes = setup.evaluate_each(want_timeline, |e| {
        let file = save.map(|_| ScheduleText::of(&e, &setup.costs));
        (keep(e, want_timeline), file)
    })?;
    let outcomes = save_and_strip(outcomes, save)?;
    if let Some(path) = &args.timeline {
        let schedules = outcomes.iter().filter_map(|o| match o {
            Outcome::Done(k) => k.extra.timeline.clone(),
            Outcome::Skipped { .. } => None,
        });
        let file = TimelineFile::predicted(&setup, schedules.collect());
        let text = serde_json::to_string(&file)?;
        if timeline_to_stdout {
            outln!("{text}");
            return Ok(());
        }
        write_file(path, &text)?;
    }
    if args.json {
        return print_results_json("simulate", &setup, &outcomes);
    }
    out!("{}", header(&setup));
    outln!();
    let mut rows = Vec::new();
    for o in &outcomes {
        if let Outcome::Done(k) = o {
            let s = &k.summary;
            let max_wait = k.extra.per_sm.iter().map(|s| s.wait).fold(0.0, f64::max);
            rows.push(vec![
                k.name.clone(),
                num(s.makespan),
                num(s.best_bound),
                format!("{:.2}%", s.gap_percent),
                format!("{:.1}%", k.extra.busy_percent),
                format!("{:.1}%", k.extra.wait_percent),
                format!("{:.1}%", k.extra.idle_percent),
                num(max_wait),
                s.heads_in_flight.to_string(),
            ]);
        }
    }
    let headers = [
        "schedule",
        "makespan",
        "best bound",
        "above bound",
        "busy",
        "waiting",
        "idle",
        "max SM wait",
        "heads in flight",
    ];
    out!("{}", table(&headers, &rows));
    for o in &outcomes {
        if let Outcome::Skipped { schedule, reason } = o {
            outln!("{schedule}: skipped, {reason}");
        }
    }
    if setup.costs.variability.is_some() && setup.costs.decoupled() {
        outln!(
            "note: these simulations keep every phase at its cost; run, bench and validate predict the GPU's time as \
             the mean of runs with the phases drawn around their costs (docs/calibration.md, \"Phase variability\")"
        );
    }
    if args.per_sm {
        for o in &outcomes {
            if let Outcome::Done(k) = o {
                outln!("\n{} per SM:", k.name);
                let rows: Vec<Vec<String>> = k
                    .extra
                    .per_sm
                    .iter()
                    .enumerate()
                    .map(|(i, s)| vec![format!("SM {i}"), s.units.to_string(), num(s.busy), num(s.wait), num(s.idle)])
                    .collect();
                out!("{}", table(&["sm", "units", "busy", "waiting", "idle"], &rows));
            }
        }
    }
    if let Some(path) = &args.timeline {
        eprintln!("timeline written to {}", path.display());
    }
    Ok(())
}
