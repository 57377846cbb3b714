//! `dashc codegen`: one validated schedule rendered into a self-checking CUDA program, written to a folder with
//! the exact nvcc command that builds it.

use anyhow::Result;
use codegen::{Templates, generate};

use crate::args::CodegenArgs;
use crate::exit::bad_input;
use crate::gpu::{Target, kernel_config, write_generated};
use crate::setup::{Outcome, Setup};

pub fn run(args: CodegenArgs) -> Result<()> {
    let setup = Setup::from_args(&args.shape.for_main_loop(args.arch.main_loop()))?;
    // One schedule: a built-in, the searched one or one loaded with --schedule-file, all through the same
    // evaluation path as the analyzer, so the kernel runs exactly what `bounds` reports.
    let requested = setup.schedules.len() + setup.search.is_some() as usize + setup.schedule_file.is_some() as usize;
    if requested != 1 {
        return Err(bad_input("codegen renders one schedule: pick it with --schedule NAME (or --schedule-file FILE)"));
    }
    let outcomes = setup.evaluate_each(false, |e| {
        let makespan = e.makespan();
        (e.schedule, makespan)
    })?;
    // With --split-tail the schedule is followed by its split version, which is the one rendered, or by the
    // reason there is none.
    let mut done = Vec::new();
    let mut no_split = None;
    for outcome in outcomes {
        match outcome {
            Outcome::Done(s) => done.push(s),
            Outcome::Skipped { schedule, reason } if schedule.ends_with(schedulers::SPLIT_SUFFIX) => {
                no_split = Some(reason)
            }
            Outcome::Skipped { reason, .. } => return Err(bad_input(reason)),
        }
    }
    let Some((schedule, makespan)) = done.pop() else {
        return Err(bad_input("no schedule was selected"));
    };
    // Said once the program is written: nothing goes to stdout before a refusal.
    let split_note = setup.split_tail.then(|| match (done.pop(), no_split) {
        (Some((unsplit, before)), _) => format!(
            "split tail: predicted makespan {} against {} for {}{}",
            crate::output::num(makespan),
            crate::output::num(before),
            unsplit.name(),
            if makespan > before { " (the model predicts the split slower)" } else { "" }
        ),
        (None, reason) => format!("split tail: {}", reason.unwrap_or_else(|| "nothing to split".to_string())),
    });
    let target = Target::for_codegen(args.arch);
    let config = kernel_config(&setup.problem, &setup.mask, !args.nondeterministic, &target)?;
    let target = target.with_headers()?;
    let generated =
        generate(&schedule, &config, &Templates::embedded(), &target.env).map_err(|e| bad_input(e.to_string()))?;
    write_generated(&args.out, &generated)?;
    if let Some(note) = split_note {
        outln!("{note}");
    }
    // The rendered files and nvcc-command.txt.
    let written = generated.files.len() + 1;
    outln!("wrote {written} files for {} ({}) to {}", schedule.name(), config, args.out.display());
    outln!("build: cd {} && {}", args.out.display(), generated.nvcc);
    outln!("run:   ./{} {}", generated.binary, generated.schedule_file);
    Ok(())
}
