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

fn main() -> ExitCode {
    let cli = args::Cli::parse();
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
