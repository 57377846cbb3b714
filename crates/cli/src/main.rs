//! `dashc`: the command line of the deterministic-attention scheduler.
//!
//! This crate is thin on purpose: clap types live in `args`, each subcommand in its own file under
//! `commands/`, and all theory lives in the library crates. Only this crate reads files, the environment or
//! the clock, spawns processes, or prints.

mod args;
mod commands;
mod exit;
mod output;
mod setup;
mod timeline;

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    let result = match cli.command {
        args::Command::Bounds(a) => commands::bounds::run(a),
        args::Command::Simulate(a) => commands::simulate::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let code = exit::code_of(&err);
            eprintln!("error: {}", exit::one_line(&err));
            ExitCode::from(code)
        }
    }
}

/// Help and version go out as clap prints them; usage errors are folded into one line (what is wrong, and the
/// accepted values where clap lists them) with exit code 2, like every other input error.
fn usage_error(err: clap::Error) -> ExitCode {
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit();
    }
    let text = err.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:"))
        .collect();
    eprintln!("{}", parts.join("; "));
    ExitCode::from(2)
}
