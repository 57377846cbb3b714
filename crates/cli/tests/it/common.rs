use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The calibrated costs of the test fixture (an H200 file: head dim 64 with 128x128 tiles, head dim 128 with
/// 64x128), for predictions in µs.
pub fn costs_fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/costs-h200.json").display().to_string()
}

/// Runs the built `dashc` with `args`.
pub fn dashc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dashc")).args(args).output().expect("dashc runs")
}

/// Runs the built `dashc` with `args`, taking the CUTLASS headers from `cutlass` (`CUTLASS_INCLUDE`).
pub fn dashc_with_cutlass(args: &[&str], cutlass: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dashc")).args(args).env("CUTLASS_INCLUDE", cutlass).output().expect("dashc runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("utf-8 stderr")
}

/// Asserts a failure with `code` and a single-line message on stderr that contains `needle`.
pub fn fails_with(args: &[&str], code: i32, needle: &str) {
    let out = dashc(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "dashc {args:?}: stderr {err}");
    assert!(err.contains(needle), "dashc {args:?}: {err:?} lacks {needle:?}");
    assert!(!err.contains("panicked"), "dashc {args:?} panicked: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "dashc {args:?}: message is not one line: {err}");
}
