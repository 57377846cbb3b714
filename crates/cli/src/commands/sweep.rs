//! `dashc sweep`: many shapes x schedules (the paper's 24 configurations by default): a table on stdout, and
//! optionally JSON, CSV and a plot.

use anyhow::Result;

use crate::args::SweepArgs;
use crate::output::write_file;
use crate::plot::sweep::SweepPlot;
use crate::plot::{self, Format};
use crate::sweep::{self, Plan};

pub fn run(args: SweepArgs) -> Result<()> {
    // Refuse a plot name we cannot write before the work, not after.
    if let Some(p) = &args.plot {
        Format::of(p)?;
    }
    let plan = Plan::from_args(&args.configs)?;
    let result = sweep::run(&plan)?;
    if let Some(p) = &args.json {
        write_file(p, &sweep::json(&result)?)?;
    }
    if let Some(p) = &args.csv {
        write_file(p, &sweep::csv(&result))?;
    }
    if let Some(p) = &args.plot {
        plot::save(&SweepPlot::new(&result), p)?;
    }
    print!("{}", sweep::preamble(&result));
    println!();
    print!("{}", sweep::table(&result));
    for (what, p) in [("json", &args.json), ("csv", &args.csv), ("plot", &args.plot)] {
        if let Some(p) = p {
            eprintln!("{what} written to {}", p.display());
        }
    }
    Ok(())
}
