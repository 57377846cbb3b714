//! End-to-end tests of the `dashc` binary: outputs (snapshots) and exit codes.

mod analyze;
mod bad_input;
mod common;
