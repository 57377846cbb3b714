//! Problems too large for memory: refused before any work with one line and exit code 2, never aborted or
//! killed. `DASHC_MEMORY_AVAILABLE` stands in for the machine's available memory, so that the outcome does not
//! depend on the machine that runs the tests.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{dashc, stderr};

const ONE_GB: &str = "1000000000";

/// Runs `dashc args` as if `available` bytes of memory were available; returns its output and how long it took.
fn dashc_with_memory(available: &str, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(args)
        .env("DASHC_MEMORY_AVAILABLE", available)
        .output()
        .expect("dashc runs");
    (out, started.elapsed())
}

fn refused(args: &[&str], needles: &[&str]) {
    let (out, took) = dashc_with_memory(ONE_GB, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "dashc {args:?}: stderr {err}");
    assert!(!err.contains("panicked"), "dashc {args:?} panicked: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "dashc {args:?}: message is not one line: {err}");
    for needle in needles {
        assert!(err.contains(needle), "dashc {args:?}: {err:?} lacks {needle:?}");
    }
    // Refused from the sizes alone: nothing is built first.
    assert!(took < Duration::from_secs(10), "dashc {args:?} took {took:?} to refuse");
}

#[test]
fn problems_too_large_for_memory_are_refused_at_once() {
    // A million batches of 32 heads of 4 x 4 tiles: half a billion tasks and 134 million units per schedule.
    let many_heads = ["--mask", "full", "--seqlen", "512", "--head-dim", "64", "--heads", "32", "--batch", "1048576"];
    let graphs =
        "needs about 40 GB for its task graphs, 1.0 GB are available: use a shorter --seqlen or fewer heads/batch";
    for command in ["bounds", "simulate"] {
        let args: Vec<&str> = [command].into_iter().chain(many_heads).chain(["--schedule", "naive"]).collect();
        refused(&args, &["error: this problem ", graphs]);
    }
    // A search holds every built-in as a start, and more per unit.
    let args: Vec<&str> = ["search"].into_iter().chain(many_heads).collect();
    refused(&args, &["error: this problem needs about ", "for its task graphs, 1.0 GB are available"]);
    // One head whose tile mask alone takes tens of gigabytes: refused before the mask is built.
    refused(
        &["bounds", "--seqlen", "4000000", "--mask", "full", "--heads", "1", "--schedule", "shift"],
        &["error: this problem needs about 62 GB for its tile mask, 1.0 GB are available: use a shorter --seqlen"],
    );
    // A sweep configuration of a billion tokens.
    refused(
        &[
            "sweep",
            "--tokens",
            "1073741824",
            "--seqlens",
            "512",
            "--head-dims",
            "64",
            "--masks",
            "full",
            "--schedules",
            "naive",
        ],
        &["error: this sweep needs about 81 GB for its task graphs, 1.0 GB are available: use a smaller --tokens"],
    );
}

#[test]
fn a_problem_that_fits_still_runs() {
    let (out, _) = dashc_with_memory(ONE_GB, &["bounds", "--seqlen", "4096", "--heads", "4"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn the_available_memory_override_is_a_number_of_bytes() {
    let (out, _) = dashc_with_memory("lots", &["bounds", "--seqlen", "1024"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("DASHC_MEMORY_AVAILABLE must be a number of bytes (got 'lots')"));
    // Without it the machine's own MemAvailable decides, and a small problem fits anywhere.
    assert!(dashc(&["bounds", "--seqlen", "1024"]).status.success());
}
