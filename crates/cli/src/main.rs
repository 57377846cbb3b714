//! `dashc`: the command line of the deterministic-attention scheduler.
//!
//! This crate is thin on purpose: clap types live in `args`, each subcommand in its own file under
//! `commands/`, and all theory lives in the library crates. Only this crate reads files, the environment or
//! the clock, spawns processes, or prints.

// `print!`/`println!` for command output: they return the write's error to the command (`?`) instead of
// panicking. Defined before the modules so that every one of them sees them.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))?
    };
}
macro_rules! outln {
    () => {
        $crate::output::write_stdout(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

mod agreement;
mod anchors;
mod args;
mod commands;
mod costs_file;
mod docgen;
mod exit;
mod gpu;
mod measure;
mod memory;
mod output;
mod plot;
mod progress;
mod searching;
mod setup;
mod sweep;
mod timeline;
mod trace;
mod traced;

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    let result = match cli.command {
        args::Command::Bounds(a) => commands::bounds::run(a),
        args::Command::Simulate(a) => commands::simulate::run(a),
        args::Command::Search(a) => commands::search::run(a),
        args::Command::Gantt(a) => commands::gantt::run(a),
        args::Command::Sweep(a) => commands::sweep::run(a),
        args::Command::Report(a) => commands::report::run(a),
        args::Command::Codegen(a) => commands::codegen::run(a),
        args::Command::Run(a) => commands::run::run(a),
        args::Command::Bench(a) => commands::bench::run(a),
        args::Command::Calibrate(a) => commands::calibrate::run(a),
        args::Command::Validate(a) => commands::validate::run(a),
    };
    match result.and_then(|()| output::flush_stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let code = exit::code_of(&err);
            eprintln!("error: {}", exit::one_line(&err));
            ExitCode::from(code)
        }
    }
}

/// Rust ignores SIGPIPE, so a write to a closed pipe (`dashc sweep | head -1`) fails with EPIPE and `println!`
/// panics on it. dashc's output is all on stdout and stderr, and a reader that has seen enough should stop it
/// quietly, as it stops other Unix tools: with the default action the kernel ends the process at that write.
/// dashc writes to no other pipe or socket, so no write that should report an error is lost to the signal.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; setting a signal's action to its
    // default installs no handler of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
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
    // A line that ends in a colon introduces the next one ("... not provided:" then the arguments).
    let mut line = String::new();
    for part in parts {
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(part);
    }
    eprintln!("{line}");
    ExitCode::from(2)
}
