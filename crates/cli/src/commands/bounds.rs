//! `dashc bounds`: per schedule, the makespan, the critical path, the lower bounds and the gap to the best.

use anyhow::Result;

use crate::args::BoundsArgs;
use crate::output::{Kept, header, num, print_results_json, table};
use crate::searching::{ScheduleText, check_save, save_and_strip};
use crate::setup::{Keeps, Outcome, Setup};

pub fn run(args: BoundsArgs) -> Result<()> {
    let setup = Setup::from_args(&args.shape)?;
    let save = args.save_schedule.as_deref();
    check_save(&setup, save)?;
    if save.is_some() {
        // The schedule file's text adds to the schedules that `from_args` checked.
        setup.check_memory(Keeps { schedule_text: true, ..Keeps::default() })?;
    }
    let outcomes =
        setup.evaluate_each(false, |e| (Kept::of(&e, ()), save.map(|_| ScheduleText::of(&e, &setup.costs))))?;
    let outcomes = save_and_strip(outcomes, save)?;
    if args.json {
        return print_results_json("bounds", &setup, &outcomes);
    }
    out!("{}", header(&setup));
    outln!();
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for o in &outcomes {
        match o {
            Outcome::Done(k) => {
                let s = &k.summary;
                rows.push(vec![
                    k.name.clone(),
                    num(s.makespan),
                    num(s.critical_path),
                    num(s.work_bound),
                    num(s.longest_unit_bound),
                    num(s.best_bound),
                    format!("{:.2}%", s.gap_percent),
                ]);
            }
            Outcome::Skipped { schedule, reason } => skipped.push(format!("{schedule}: skipped, {reason}")),
        }
    }
    let headers = ["schedule", "makespan", "critical path", "work / P", "longest unit", "best bound", "above bound"];
    out!("{}", table(&headers, &rows));
    for s in skipped {
        outln!("{s}");
    }
    Ok(())
}
