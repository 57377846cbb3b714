//! End-to-end tests of the `dashc` binary: outputs (snapshots) and exit codes.

mod analyze;
mod bad_input;
mod calibration;
mod charts;
mod closed_stdout;
mod common;
mod gpu_commands;
mod memory;
mod search;
mod sweep;
