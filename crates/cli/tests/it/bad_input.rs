//! Every user mistake: one line on stderr, exit code 2, no panic.

use crate::common::{dashc, fails_with, stderr, stdout};

#[test]
fn sizes_must_be_positive() {
    fails_with(&["bounds", "--batch", "0"], 2, "invalid value '0' for '--batch <N>': 0 is not in 1..=4294967295");
    fails_with(&["bounds", "--seqlen-k", "0"], 2, "invalid value '0' for '--seqlen-k <TOKENS>': 0 is not in 1..");
    // A negative size is told the range that is accepted, not u32's (which would offer 0).
    fails_with(&["bounds", "--seqlen", "-5"], 2, "invalid value '-5' for '--seqlen <TOKENS>': -5 is not in 1..");
    fails_with(&["sweep", "--hidden", "-5"], 2, "invalid value '-5' for '--hidden <N>': -5 is not in 1..");
    fails_with(&["sweep", "--tokens", "0"], 2, "invalid value '0' for '--tokens <N>': 0 is not in 1..");
    fails_with(&["bounds", "--sms", "0"], 2, "invalid value '0' for '--sms <P>': 0 is not in 1..=4096");
    // No GPU has thousands of SMs; beyond the cap the simulator's per-SM state alone would exhaust memory.
    for command in ["bounds", "simulate", "search", "sweep"] {
        fails_with(&[command, "--sms", "4294967295"], 2, "4294967295 is not in 1..=4096");
    }
    fails_with(&["bounds", "--heads=-3"], 2, "invalid value '-3' for '--heads <N>'");
}

#[test]
fn heads_must_divide_into_kv_groups() {
    fails_with(&["bounds", "--heads", "16", "--kv-heads", "3"], 2, "heads (16) must be a multiple of kv-heads (3)");
}

#[test]
fn unknown_mask_and_schedule_are_named() {
    fails_with(&["bounds", "--mask", "diagonal"], 2, "invalid value 'diagonal' for '--mask <MASK>'");
    fails_with(&["bounds", "--schedule", "fastest"], 2, "unknown schedule 'fastest'; expected one of naive");
}

#[test]
fn schedules_outside_their_domain_are_refused() {
    fails_with(&["bounds", "--mask", "causal", "--schedule", "shift"], 2, "shift needs a full mask (got mask causal)");
    fails_with(
        &["bounds", "--mask", "causal", "--seqlen", "3200", "--schedule", "symmetric-shift"],
        2,
        "symmetric-shift needs an even number of kv tiles (got 25 = ceil(3200 / 128))",
    );
}

#[test]
fn mask_flags_are_checked() {
    fails_with(&["bounds", "--mask", "document"], 2, "--mask document needs --doc-lens");
    fails_with(
        &["bounds", "--mask", "document", "--seqlen", "1000", "--doc-lens", "400,500"],
        2,
        "document lengths sum to 900",
    );
    fails_with(
        &["bounds", "--mask", "document", "--seqlen", "4096", "--doc-lens", "4096,0"],
        2,
        "invalid value '0' for '--doc-lens <LENS>': 0 is not in 1..=4294967295",
    );
    // Negative values are values out of range, not unknown flags.
    for (flags, message) in [
        (&["bounds", "--mask", "document", "--doc-lens", "-3"][..], "invalid value '-3' for '--doc-lens <LENS>'"),
        (&["bounds", "--block-m", "-1"][..], "-1 is not in 1..=4294967295"),
        (&["bounds", "--block-n", "0"][..], "0 is not in 1..=4294967295"),
        (&["bench", "--idle-ms", "-1"][..], "-1 is not in 0..=60000"),
        (&["gantt", "-o", "g.png", "--height", "-1"][..], "-1 is not in 320..=16000"),
    ] {
        fails_with(flags, 2, message);
    }
    fails_with(&["bounds", "--mask", "full", "--window-left", "5"], 2, "only applies to --mask sliding-window");
    fails_with(&["bounds", "--mask", "sliding-window"], 2, "needs --window-left and/or --window-right");
}

#[test]
fn block_files_must_be_valid_json_inside_the_grid() {
    let dir = std::env::temp_dir().join(format!("dashc-blocks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad_json = dir.join("bad.json");
    std::fs::write(&bad_json, "{\"blocks\": [[0, 1],").unwrap();
    let outside = dir.join("outside.json");
    std::fs::write(&outside, "{\"blocks\": [[0, 0], [40, 1]]}").unwrap();
    let good = dir.join("good.json");
    std::fs::write(&good, "{\"blocks\": [[0, 0], [1, 0], [1, 1]]}").unwrap();
    let args = |p: &std::path::Path| {
        ["bounds", "--seqlen", "256", "--mask", "blocks", "--blocks", p.to_str().unwrap()].map(String::from)
    };
    let a = args(&bad_json);
    fails_with(&a.iter().map(String::as_str).collect::<Vec<_>>(), 2, "is not valid");
    let a = args(&outside);
    fails_with(
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        2,
        "block (40, 1) is outside the tile grid (4 q-tiles x 2 kv-tiles)",
    );
    fails_with(&["bounds", "--mask", "blocks", "--blocks", "/nonexistent/blocks.json"], 2, "cannot read blocks file");
    let a = args(&good);
    let out = crate::common::dashc(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn timeline_limits_and_unwritable_paths() {
    fails_with(
        &["simulate", "--seqlen", "131072", "--heads", "32", "--timeline", "/tmp/x.json"],
        2,
        "--timeline records every task",
    );
    fails_with(
        &["simulate", "--seqlen", "512", "--heads", "1", "--timeline", "/nonexistent/dir/t.json"],
        2,
        "cannot write /nonexistent/dir/t.json",
    );
}

#[test]
fn a_schedule_file_that_deadlocks_names_the_waiting_unit() {
    // Unit 0 adds second on Q tile 0, but the first add belongs to unit 1, which one SM never launches.
    let dir = std::env::temp_dir().join(format!("dashc-deadlock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("deadlock.json");
    std::fs::write(
        &file,
        r#"{"format":"dashc-schedule","schema_version":1,"name":"deadlock",
            "problem":{"batch":1,"heads":1,"kv_heads":1,"seqlen_q":256,"seqlen_k":256,"head_dim":64,"block_m":128,"block_n":128},
            "mask":{"kind":"full"},"machine":{"sms":1,"launch":"in-order"},
            "units":[{"bh":0,"visits":[[0,0,1],[0,1,0]],"dkv_ranks":[0]},
                     {"bh":0,"visits":[[1,0,0],[1,1,1]],"dkv_ranks":[0]}]}"#,
    )
    .unwrap();
    let shape = ["--seqlen", "256", "--heads", "1", "--head-dim", "64", "--block-m", "128", "--block-n", "128"];
    let mut args = vec!["bounds", "--mask", "full", "--sms", "1", "--schedule-file", file.to_str().unwrap()];
    args.extend(shape);
    fails_with(&args, 2, "deadlock on 1 SMs (in-order launch): unit 0 (bh 0) waits for rank 1 of dq tile 0");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn costs_and_budgets_beyond_their_range_are_refused() {
    // Huge values once overflowed the makespan (inf) or the search budget's Duration (a panic).
    fails_with(
        &["bounds", "--seqlen", "2048", "--compute", "1e308"],
        2,
        "cost compute must be a finite number above 0 and at most 1e9: it is one full tile's time, which every prediction counts in (got 1e308)",
    );
    fails_with(
        &["simulate", "--seqlen", "2048", "--reduce", "2e9"],
        2,
        "cost reduce must be a finite number from 0 to 1e9",
    );
    fails_with(&["search", "--seqlen", "2048", "--budget-secs", "1e300"], 2, "at most 604800 (a week; got 1e300)");
    // The simulator's work grows with the writer count: a million of them ran for minutes.
    fails_with(&["bounds", "--dq-writers", "1000000"], 2, "dq-writers must be at most 64 (got 1000000)");
}

#[test]
fn ideal_flags_go_together() {
    fails_with(&["bounds", "--tiles", "8"], 2, "the following required arguments were not provided: --ideal");
    fails_with(&["bounds", "--ideal", "--tiles", "0"], 2, "invalid value '0' for '--tiles <N>': 0 is not in 1..=4096");
    // What --ideal sets itself is not also taken from the command line (it would be silently overridden).
    for flag in ["--sms", "--seqlen", "--batch", "--block-m"] {
        fails_with(
            &["bounds", "--ideal", "--tiles", "8", flag, "4"],
            2,
            &format!("the argument '--ideal' cannot be used with '{flag} "),
        );
    }
    // Its costs are the closed forms' constant c and r and free hand-offs: the other cost flags would print a
    // different model under the idealized header.
    for flag in ["--handoff", "--poll", "--unit-start", "--unit-finish", "--dq-writers", "--compute-partial"] {
        fails_with(
            &["bounds", "--ideal", "--tiles", "8", flag, "1"],
            2,
            &format!("the argument '--ideal' cannot be used with '{flag} "),
        );
    }
    for flag in ["--kernel-epilogues", "--dq-deferred", "--kv-load-overlap", "--scale-by-fraction"] {
        fails_with(
            &["bounds", "--ideal", "--tiles", "8", flag],
            2,
            &format!("the argument '--ideal' cannot be used with '{flag}'"),
        );
    }
    // c and r stay free: the closed forms take them.
    for flag in ["--compute", "--reduce"] {
        let out = dashc(&["bounds", "--ideal", "--tiles", "8", flag, "0.5"]);
        assert!(out.status.success(), "{flag}: {}", stderr(&out));
    }
}

#[test]
fn flags_that_would_be_ignored_are_refused() {
    fails_with(
        &["search", "--seqlen", "4096", "--batch", "4", "--mask", "full", "--split-tail", "--iterations", "10"],
        2,
        "dashc search does not evaluate split tails",
    );
    fails_with(&["simulate", "--seqlen", "1024", "--dq-deferred"], 2, "it needs dq-writers of at least 1 (got 0)");
}

#[test]
fn gpu_command_inputs_are_checked_before_any_probe() {
    // These need no toolchain or GPU to be refused: exit 2 on any machine, not 3.
    fails_with(&["run", "--seqlen", "1024", "--reps", "0"], 2, "invalid value '0' for '--reps <N>'");
    fails_with(&["bench", "--reps", "0"], 2, "invalid value '0' for '--reps <N>'");
    fails_with(&["bench", "--rounds", "0"], 2, "invalid value '0' for '--rounds <N>'");
    fails_with(
        &["run", "--seqlen", "1024", "--head-dim", "96", "--schedule", "spt"],
        2,
        "head dim 96 is not supported",
    );
    // bench and calibrate run families of shapes: a head dim no kernel has is refused before nvcc is looked for.
    for command in ["bench", "calibrate"] {
        fails_with(&[command, "--head-dims", "96", "--hidden", "1536"], 2, "head dim 96 is not supported");
    }
    let dir = std::env::temp_dir().join(format!("dashc-trace-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    fails_with(&["run", "--seqlen", "1024", "--schedule", "spt", "--trace", dir.to_str().unwrap()], 2, "cannot write");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn negative_numbers_are_values_not_flags() {
    // "--seqlen -5" once read as an unknown flag '-5'; it is a value out of range.
    fails_with(&["bounds", "--seqlen", "-5"], 2, "invalid value '-5' for '--seqlen <TOKENS>'");
    fails_with(&["bounds", "--compute", "-1"], 2, "cost compute must be a finite number above 0 and at most 1e9");
}

#[test]
fn ideal_refusals_name_the_flags_ideal_takes() {
    // --ideal sets the KV tiles and the SMs with --tiles: hints name it, not the flags it refuses beside it.
    fails_with(
        &["bounds", "--ideal", "--tiles", "7", "--heads", "4", "--mask", "causal", "--schedule", "symmetric-shift"],
        2,
        "symmetric-shift needs an even number of kv tiles (got --tiles 7); use an even --tiles, or descending",
    );
    fails_with(&["bounds", "--ideal", "--tiles", "5000"], 2, "5000 is not in 1..=4096");
    fails_with(&["bounds", "--compute", "0"], 2, "cost compute must be a finite number above 0 and at most 1e9");
    fails_with(
        &["bounds", "--schedule", "naive", "--save-schedule", "-"],
        2,
        "--save-schedule needs a file name, not -",
    );
    // The search lists the built-ins it compared with; under --ideal their reasons name --tiles too.
    let search = dashc(&["search", "--ideal", "--tiles", "7", "--heads", "4", "--mask", "causal", "--iterations", "5"]);
    assert_eq!(search.status.code(), Some(0));
    assert!(
        stdout(&search).contains(
            "symmetric-shift: skipped, symmetric-shift needs an even number of kv tiles (got --tiles 7); use an even \
             --tiles, or descending"
        ),
        "{}",
        stdout(&search)
    );
}

#[test]
fn split_tail_is_refused_where_it_would_do_nothing_and_said_where_nothing_splits() {
    fails_with(
        &["bounds", "--schedule-file", "s.json", "--split-tail"],
        2,
        "the argument '--schedule-file <FILE>' cannot be used with '--split-tail'",
    );
    fails_with(
        &["gantt", "-o", "g.png", "--timeline", "t.json", "--split-tail"],
        2,
        "the argument '--timeline <FILE>' cannot be used with '--split-tail'",
    );
    // Grouped-query heads keep their columns whole; 1056 units fill 8 passes of 132 SMs.
    let gqa = dashc(&[
        "simulate",
        "--batch",
        "4",
        "--kv-heads",
        "4",
        "--seqlen",
        "4096",
        "--schedule",
        "shift",
        "--mask",
        "full",
        "--split-tail",
    ]);
    assert_eq!(gqa.status.code(), Some(0));
    assert!(stdout(&gqa).contains("shift+split: skipped, nothing to split: grouped-query heads"), "{}", stdout(&gqa));
    let full = dashc(&[
        "bounds",
        "--batch",
        "1",
        "--heads",
        "33",
        "--seqlen",
        "4096",
        "--schedule",
        "shift",
        "--mask",
        "full",
        "--split-tail",
    ]);
    assert_eq!(full.status.code(), Some(0));
    assert!(
        stdout(&full)
            .contains("shift+split: skipped, nothing to split: its 1056 units fill their last pass on 132 SMs")
    );
}
