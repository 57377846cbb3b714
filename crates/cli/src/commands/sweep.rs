//! `dashc sweep`: many shapes x schedules (the paper's 24 configurations by default): a table on stdout, and
//! optionally JSON, CSV and a plot.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::args::SweepArgs;
use crate::exit::bad_input;
use crate::output::write_file;
use crate::plot::sweep::SweepPlot;
use crate::plot::{self, Format};
use crate::sweep::{self, Plan};

pub fn run(args: SweepArgs) -> Result<()> {
    // Refuse a plot name we cannot write before the work, not after.
    if let Some(p) = &args.plot {
        Format::of(p)?;
    }
    // `-` sends the JSON or the CSV to stdout in place of the table, for a script to read (one of them only).
    let to_stdout = |p: &Option<PathBuf>| p.as_deref() == Some(Path::new("-"));
    if to_stdout(&args.json) && to_stdout(&args.csv) {
        return Err(bad_input("--json - and --csv - both ask for stdout: give one of them a file name"));
    }
    if to_stdout(&args.plot) {
        return Err(bad_input("--plot needs a file name ending in .png or .svg, not -"));
    }
    crate::output::check_outputs([args.json.as_deref(), args.csv.as_deref(), args.plot.as_deref()])?;
    let plan = Plan::from_args(&args.configs)?;
    let result = sweep::run(&plan)?;
    let mut stdout_taken = false;
    let mut emit = |p: &Path, text: String| -> Result<()> {
        if p == Path::new("-") {
            out!("{text}");
            if !text.ends_with('\n') {
                outln!();
            }
            stdout_taken = true;
            Ok(())
        } else {
            write_file(p, &text)
        }
    };
    if let Some(p) = &args.json {
        emit(p, sweep::json(&result)?)?;
    }
    if let Some(p) = &args.csv {
        emit(p, sweep::csv(&result))?;
    }
    if let Some(p) = &args.plot {
        plot::save(&SweepPlot::new(&result), p)?;
    }
    if !stdout_taken {
        out!("{}", sweep::preamble(&result));
        outln!();
        out!("{}", sweep::table(&result));
        out!("{}", sweep::skipped_lines(&result));
    }
    for (what, p) in [("json", &args.json), ("csv", &args.csv), ("plot", &args.plot)] {
        if let Some(p) = p.as_deref().filter(|p| *p != Path::new("-")) {
            eprintln!("{what} written to {}", p.display());
        }
    }
    Ok(())
}
