//! `codegen`, `run` and `bench` without a GPU: codegen writes a complete program; run and bench say clearly
//! that the toolchain or the GPU is missing (exit code 3) before doing any work.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{dashc, dashc_with_cutlass, fails_with, stderr, stdout};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dashc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn codegen_writes_sources_schedule_data_and_the_nvcc_command() {
    let dir = scratch("codegen");
    let out = dashc(&[
        "codegen",
        "--seqlen",
        "1000",
        "--batch",
        "2",
        "--heads",
        "3",
        "--mask",
        "causal",
        "--schedule",
        "descending",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_dir(&dir).unwrap().count();
    assert!(stdout(&out).starts_with(&format!("wrote {written} files for descending")), "{}", stdout(&out));
    for file in
        ["harness.cu", "bwd_mainloop_sm80.cuh", "schedule.cuh", "bwd_params.h", "schedule.txt", "nvcc-command.txt"]
    {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let data = std::fs::read_to_string(dir.join("schedule.txt")).unwrap();
    assert!(data.starts_with(
        "dashc-schedule 2\nname descending\nproblem 2 3 3 1000 1000 128 64 128 causal\nlaunch in-order\n"
    ));
    let nvcc = std::fs::read_to_string(dir.join("nvcc-command.txt")).unwrap();
    assert!(nvcc.contains("-gencode=arch=compute_80,code=sm_80") && nvcc.contains("code=sm_90a"), "{nvcc}");
    let params = std::fs::read_to_string(dir.join("bwd_params.h")).unwrap();
    assert!(params.contains("kDeterministic = true"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn codegen_refuses_what_the_kernel_does_not_implement() {
    let dir = scratch("codegen-bad");
    let d = dir.to_str().unwrap();
    fails_with(&["codegen", "--schedule", "all", "-o", d], 2, "codegen renders one schedule");
    fails_with(&["codegen", "--head-dim", "96", "--schedule", "naive", "-o", d], 2, "head dim 96 is not supported");
    fails_with(
        &["codegen", "--mask", "sliding-window", "--window-left", "64", "--schedule", "naive", "-o", d],
        2,
        "mask sliding-window is not supported by the generated kernel",
    );
    fails_with(&["codegen", "--mask", "causal", "--schedule", "shift", "-o", d], 2, "shift needs a full mask");
    fails_with(
        &["codegen", "--mask", "causal", "--schedule", "descending", "--launch", "persistent", "-o", d],
        2,
        "the persistent launch runs on the sm90 main loop only",
    );
}

/// A folder that passes for the CUTLASS headers (dashc checks for cute/tensor.hpp and cutlass/).
fn fake_cutlass(name: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(dir.join("cute")).unwrap();
    std::fs::create_dir_all(dir.join("cutlass")).unwrap();
    std::fs::write(dir.join("cute").join("tensor.hpp"), "").unwrap();
    dir
}

#[test]
fn codegen_sm90_needs_the_cutlass_headers_and_names_them_in_the_build() {
    let dir = scratch("codegen-sm90");
    let d = dir.to_str().unwrap();
    let args = ["codegen", "--mask", "causal", "--schedule", "descending", "--launch", "persistent", "--arch", "sm90"];
    let missing = scratch("no-cutlass");
    let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(args)
        .args(["-o", d])
        .env("CUTLASS_INCLUDE", &missing)
        .output()
        .expect("dashc runs");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("the sm90 main loop needs the CUTLASS/CuTe headers"), "{}", stderr(&out));
    // A shape the kernels do not implement is bad input whether or not the headers are there.
    let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(args)
        .args(["--head-dim", "256", "-o", d])
        .env("CUTLASS_INCLUDE", &missing)
        .output()
        .expect("dashc runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("head dim 256 is not supported"), "{}", stderr(&out));

    let cutlass = fake_cutlass("cutlass-headers");
    let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(args)
        .args(["-o", d])
        .env("CUTLASS_INCLUDE", &cutlass)
        .output()
        .expect("dashc runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let nvcc = std::fs::read_to_string(dir.join("nvcc-command.txt")).unwrap();
    assert!(nvcc.contains(&format!("-I{}", cutlass.display())), "{nvcc}");
    assert!(nvcc.contains("-gencode=arch=compute_90a,code=sm_90a") && !nvcc.contains("sm_80"), "{nvcc}");
    let params = std::fs::read_to_string(dir.join("bwd_params.h")).unwrap();
    assert!(params.contains("#define DASHC_MAINLOOP_SM90 1"), "{params}");
    let data = std::fs::read_to_string(dir.join("schedule.txt")).unwrap();
    assert!(data.contains("\nlaunch persistent 132\n"), "{data}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&cutlass).unwrap();
}

#[test]
fn codegen_renders_80_row_tiles_for_the_sm90_loop_at_head_dim_128_on_full_masks_only() {
    let dir = scratch("codegen-m80");
    let d = dir.to_str().unwrap();
    let cutlass = fake_cutlass("cutlass-headers-m80");
    let args = ["codegen", "--head-dim", "128", "--block-m", "80", "--seqlen", "1000", "--schedule", "naive"];
    let with = |extra: [&str; 4]| dashc_with_cutlass(&[&args[..], &extra, &["-o", d]].concat(), &cutlass);
    let out = with(["--mask", "full", "--arch", "sm90"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let params = std::fs::read_to_string(dir.join("bwd_params.h")).unwrap();
    assert!(params.contains("constexpr int kBlockM = 80;"), "{params}");
    // 1000 rows in 80-row tiles: 13 q tiles (the last one partial) for each of 16 heads x 8 KV tiles.
    let data = std::fs::read_to_string(dir.join("schedule.txt")).unwrap();
    assert!(data.contains(" 128 80 128 full\n"), "{data}");
    assert!(data.contains("\ncounts 128 1664\n"), "{data}");
    for (extra, why) in [
        (["--mask", "full", "--arch", "sm80"], "the portable loop"),
        (["--mask", "causal", "--arch", "sm90"], "a causal mask"),
    ] {
        let out = with(extra);
        assert_eq!(out.status.code(), Some(2), "{why}: {}", stderr(&out));
        assert!(stderr(&out).contains("tile 80 x 128 is not supported"), "{why}: {}", stderr(&out));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&cutlass).unwrap();
}

#[test]
fn codegen_renders_the_split_tail_for_the_sm90_loop_only() {
    let dir = scratch("codegen-split");
    let d = dir.to_str().unwrap();
    // 2 x 3 heads x 8 kv tiles = 48 units on 132 SMs: one partial pass, every unit split.
    let shape = ["--seqlen", "1000", "--batch", "2", "--heads", "3", "--mask", "causal", "--schedule", "descending"];
    let mut sm80 = vec!["codegen"];
    sm80.extend(shape);
    sm80.extend(["--split-tail", "--arch", "sm80", "-o", d]);
    fails_with(&sm80, 2, "their dK/dV partials are summed by the sm90 main loop's fix-up kernel only");

    let cutlass = fake_cutlass("cutlass-split");
    let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .arg("codegen")
        .args(shape)
        .args(["--split-tail", "--arch", "sm90", "-o", d])
        .env("CUTLASS_INCLUDE", &cutlass)
        .output()
        .expect("dashc runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("for descending+split"), "{}", stdout(&out));
    let data = std::fs::read_to_string(dir.join("schedule.txt")).unwrap();
    assert!(data.contains("\nname descending+split\n"), "{data}");
    // More units than the 48 columns, each column's visits all there once.
    let units = data.lines().filter(|l| l.starts_with("u ")).count();
    assert!(units > 48, "{units} units");
    let mut runs = std::collections::HashMap::new();
    let mut bh = 0;
    let mut last_kv = None;
    for line in data.lines() {
        let f: Vec<u32> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        if line.starts_with("u ") {
            (bh, last_kv) = (f[0], None);
        } else if f.len() == 3 && !line.starts_with("counts") && last_kv != Some(f[0]) {
            *runs.entry((bh, f[0])).or_insert(0) += 1;
            last_kv = Some(f[0]);
        }
    }
    assert!(runs.values().any(|&r| r > 1), "no column is split");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&cutlass).unwrap();
}

/// The line of a bench table that holds `schedule`.
#[cfg(unix)]
fn row_of(table: &str, schedule: &str) -> String {
    table.lines().find(|l| l.contains(&format!(" {schedule}"))).unwrap_or_else(|| panic!("{table}")).to_string()
}

/// `dashc bench` of hd64 512 (512 tokens, one head of 64; `args` name the masks) on the stand-in GPU `machine`,
/// with `args` and `env` added; asserts success and returns the output and the bench JSON.
#[cfg(unix)]
fn fake_bench(
    machine: &std::path::Path,
    cutlass: &std::path::Path,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> (std::process::Output, serde_json::Value) {
    fake_bench_exiting(machine, cutlass, args, env, 0)
}

/// `fake_bench` expecting the exit code `code`.
#[cfg(unix)]
fn fake_bench_exiting(
    machine: &std::path::Path,
    cutlass: &std::path::Path,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
    code: i32,
) -> (std::process::Output, serde_json::Value) {
    let out_dir = machine.join("results");
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(["bench", "--seqlens", "512", "--head-dims", "64", "--tokens", "512"])
        .args(["--hidden", "64", "--no-check", "--out", out_dir.to_str().unwrap()])
        .args(if args.contains(&"--reps") { &[][..] } else { &["--reps", "1"][..] })
        .args(["--work-dir", machine.join("work").to_str().unwrap()])
        .args(args)
        .current_dir(machine)
        .env_clear()
        .env("PATH", machine)
        .env("FAKE_VALUES", "32768") // 512 tokens x one head of 64
        .env("CUTLASS_INCLUDE", cutlass)
        .envs(env.iter().copied())
        .output()
        .expect("dashc runs");
    assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    let file = std::fs::read_dir(&out_dir).unwrap().next().expect("a bench JSON").unwrap().path();
    let doc = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    (out, doc)
}

#[test]
#[cfg(unix)]
fn bench_records_its_launch_and_defaults_to_persistent_on_the_sm90_loop() {
    let hopper = fake_gpu_machine("fake-hopper-bench");
    let cutlass = fake_cutlass("fake-hopper-bench-cutlass");
    let bench = |extra: &[&str]| {
        let (out, doc) =
            fake_bench(&hopper, &cutlass, &[&["--masks", "full", "--schedules", "naive"][..], extra].concat(), &[]);
        let launch = doc["launch"].as_str().expect("the launch is recorded").to_string();
        // A harness that reads no clock: null in the JSON, "-" in the table.
        assert!(doc["configs"][0]["results"][0]["deterministic"]["clocks"].is_null());
        assert!(String::from_utf8_lossy(&out.stdout).contains("det SM MHz (limited)"), "{}", stdout(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{launch} launch")), "{}", stdout(&out));
        launch
    };
    assert_eq!(bench(&[]), "persistent");
    assert_eq!(bench(&["--launch", "in-order"]), "in-order");
    assert_eq!(bench(&["--arch", "sm80"]), "in-order");
    for dir in [hopper, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The first configuration's results of a bench JSON: (round, schedule, det TFLOPS, atomic TFLOPS) each.
fn bench_runs(doc: &serde_json::Value) -> Vec<(u64, String, f64, f64)> {
    doc["configs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["round"].as_u64().unwrap(),
                r["schedule"].as_str().unwrap().to_string(),
                r["deterministic"]["tflops"]["total"].as_f64().unwrap(),
                r["nondeterministic"]["tflops"]["total"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
#[cfg(unix)]
fn bench_rounds_alternate_the_order_and_report_the_mean() {
    let hopper = fake_gpu_machine("fake-hopper-rounds");
    let cutlass = fake_cutlass("fake-hopper-rounds-cutlass");
    let counter = hopper.join("counter");
    let (out, doc) = fake_bench(
        &hopper,
        &cutlass,
        &["--masks", "full", "--schedules", "naive,spt", "--rounds", "2"],
        &[("FAKE_COUNTER", counter.as_os_str()), ("FAKE_CLOCKS", "1".as_ref()), ("FAKE_WATTS", "612.4".as_ref())],
    );
    assert_eq!(doc["rounds"], 2);
    // Round 1 runs naive (det, atomic) then spt (det, atomic); round 2 runs spt (atomic, det) then naive (atomic,
    // det). The n-th run reports 100 + n.
    let runs = bench_runs(&doc);
    let expected =
        [(1, "naive", 101.0, 102.0), (1, "spt", 103.0, 104.0), (2, "naive", 108.0, 107.0), (2, "spt", 106.0, 105.0)];
    assert_eq!(runs.len(), expected.len());
    for (got, want) in runs.iter().zip(expected) {
        assert_eq!((got.0, got.1.as_str(), got.2, got.3), want);
    }
    // The table: the mean over rounds, the same for both schedules and both builds since the order alternated, and
    // the range.
    let table = stdout(&out);
    assert!(table.contains("det range"), "{table}");
    for (schedule, range) in [("naive", "101.0 .. 108.0"), ("spt", "103.0 .. 106.0")] {
        let row = row_of(&table, schedule);
        assert!(row.contains("104.5") && row.contains(range) && row.contains("0.0%"), "{row}");
        // The deterministic build's clock: the mean of the rounds' medians, limited samples of all samples, and the
        // board power.
        assert!(row.contains("1755 (2/2) 612 W"), "{row}");
    }
    assert!(table.contains("mean of 2 rounds"), "{table}");
    for dir in [hopper, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
#[cfg(unix)]
fn bench_with_a_long_series_shows_the_rested_and_sustained_figures() {
    let hopper = fake_gpu_machine("fake-hopper-series");
    let cutlass = fake_cutlass("fake-hopper-series-cutlass");
    let log = hopper.join("args.log");
    let (out, doc) = fake_bench(
        &hopper,
        &cutlass,
        &["--masks", "full", "--schedules", "naive", "--reps", "40", "--idle-ms", "1500"],
        &[("FAKE_SERIES", "1".as_ref()), ("FAKE_ARGS_LOG", log.as_os_str())],
    );
    // Every harness rested before its timed runs.
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(
        !args.is_empty() && args.lines().all(|l| l.contains("--reps 40") && l.contains("--idle-ms 1500")),
        "{args}"
    );
    // 100 TFLOPS at the median of 1.0 ms: the first five runs (0.9 ms) give 111.1, the last third 100.0.
    let table = stdout(&out);
    assert!(table.contains("det rested") && table.contains("det sustained"), "{table}");
    let row = row_of(&table, "naive");
    assert!(row.contains("111.1") && row.contains("100.0"), "{row}");
    // The JSON keeps the series.
    let series = &doc["configs"][0]["results"][0]["deterministic"]["total_reps"];
    assert_eq!(series.as_array().map(Vec::len), Some(40), "{series}");
    for dir in [hopper, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
#[cfg(unix)]
fn bench_without_a_series_shows_no_rested_column() {
    let hopper = fake_gpu_machine("fake-hopper-no-series");
    let cutlass = fake_cutlass("fake-hopper-no-series-cutlass");
    let log = hopper.join("args.log");
    let (out, _) = fake_bench(
        &hopper,
        &cutlass,
        &["--masks", "full", "--schedules", "naive"],
        &[("FAKE_ARGS_LOG", log.as_os_str())],
    );
    let table = stdout(&out);
    assert!(!table.contains("det rested"), "{table}");
    assert!(!std::fs::read_to_string(&log).unwrap().contains("--idle-ms"));
    for dir in [hopper, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
#[cfg(unix)]
fn bench_and_validate_go_on_from_a_first_round() {
    // bench: round 2 alone runs the reversed order, the atomic build first: spt (atomic 101, det 102), then naive
    // (atomic 103, det 104); the JSON numbers the round 2.
    let hopper = fake_gpu_machine("fake-hopper-first-round");
    let cutlass = fake_cutlass("fake-hopper-first-round-cutlass");
    let counter = hopper.join("counter");
    let (_, doc) = fake_bench(
        &hopper,
        &cutlass,
        &["--masks", "full", "--schedules", "naive,spt", "--first-round", "2"],
        &[("FAKE_COUNTER", counter.as_os_str())],
    );
    let mut runs = bench_runs(&doc);
    runs.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(runs, [(2, "naive".to_string(), 104.0, 103.0), (2, "spt".to_string(), 102.0, 101.0)]);
    for dir in [hopper, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // validate: the same reversal; the n-th run's main kernel takes n ms, so spt 1 ms and naive 2 ms.
    let machine = fake_gpu_machine_named("fake-validate-first-round", "9.0", "NVIDIA H200");
    let doc = machine.join("validation.md");
    let out = fake_validate(&machine, &doc, &["--first-round", "2"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("round 2 of 2, full mask"), "{}", stderr(&out));
    let text = std::fs::read_to_string(&doc).unwrap();
    for (schedule, us) in [("naive", "2000.0"), ("spt", "1000.0")] {
        let row = format!("| full hd64 s512 (1x2) | {schedule} | held out | {us} |");
        assert!(text.contains(&row), "{row} not in\n{text}");
    }
    std::fs::remove_dir_all(&machine).unwrap();
}

/// Raw files of separate calls merge into one report: each row the median over all the files' rounds, in round
/// order; files that disagree, overlap or repeat are refused.
#[test]
fn validate_merges_the_rounds_of_several_raw_files() {
    let dir = scratch("validate-merge");
    std::fs::create_dir_all(&dir).unwrap();
    type Rows<'a> = &'a [(&'a str, &'a str, f64, &'a [f64])];
    let raw = |device: &str, first_round: u32, rounds: u32, heads: u32, rows: Rows| {
        let rows =
            rows.iter().map(|(schedule, status, ms, per_round)| raw_row(schedule, status, heads, *ms, per_round));
        validation_raw(device, first_round, rounds, rows.collect())
    };
    let write = |name: &str, v: serde_json::Value| {
        let p = dir.join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p.to_str().unwrap().to_string()
    };
    let doc = dir.join("merged.md");
    // Rounds 1-2 in the first file (naive 1 and 5 ms, spt 2 and 2), round 3 in the second (naive 6, spt 1). Per
    // round: naive median(1, 5, 6) = 5, spt median(2, 2, 1) = 2; a median of the files' medians would give 4.5
    // and 1.5. The second file is given first: the order on the command line does not matter.
    let a = write(
        "a.json",
        raw("NVIDIA H200", 1, 2, 2, &[("naive", "ok", 3.0, &[1.0, 5.0]), ("spt", "ok", 2.0, &[2.0, 2.0])]),
    );
    let b = write("b.json", raw("NVIDIA H200", 3, 1, 2, &[("naive", "ok", 6.0, &[]), ("spt", "ok", 1.0, &[])]));
    let out = validate_from_raw(&[&b, &a], &doc, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("the median over 3 rounds from 2 files merged"), "{text}");
    for (schedule, us) in [("naive", "5000.0"), ("spt", "2000.0")] {
        let row = format!("| full hd64 s512 (1x2) | {schedule} | held out | {us} |");
        assert!(text.contains(&row), "{row} not in\n{text}");
    }
    // Another device, other rows, another shape, overlapping rounds, or one file twice: refused, exit 2.
    let c =
        write("c.json", raw("NVIDIA H100 80GB HBM3", 3, 1, 2, &[("naive", "ok", 6.0, &[]), ("spt", "ok", 1.0, &[])]));
    let d = write("d.json", raw("NVIDIA H200", 3, 1, 2, &[("naive", "ok", 6.0, &[])]));
    let e = write("e.json", raw("NVIDIA H200", 3, 1, 4, &[("naive", "ok", 6.0, &[]), ("spt", "ok", 1.0, &[])]));
    let f = write("f.json", raw("NVIDIA H200", 2, 1, 2, &[("naive", "ok", 6.0, &[]), ("spt", "ok", 1.0, &[])]));
    let mut other_sms = raw("NVIDIA H200", 3, 1, 2, &[("naive", "ok", 6.0, &[]), ("spt", "ok", 1.0, &[])]);
    other_sms["sms"] = 108.into();
    let h = write("h.json", other_sms);
    for (files, needle) in [
        ([&a, &c], "has device 'NVIDIA H100 80GB HBM3'"),
        ([&a, &h], "was predicted for 108 SMs"),
        ([&a, &d], "measured different rows"),
        ([&a, &e], "measured different rows"),
        ([&a, &f], "two files hold round 2"),
        ([&a, &a], "is given twice"),
    ] {
        let args = validate_from_raw_args(&[files[0].as_str(), files[1].as_str()], &doc, &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&args, 2, needle);
    }
    // A search that failed in a configuration leaves it out of that configuration's predictions, and the limit
    // given for it is then not refused there.
    let g = write(
        "g.json",
        raw(
            "NVIDIA H200",
            1,
            1,
            2,
            &[("naive", "ok", 6.0, &[]), ("spt", "ok", 1.0, &[]), ("search", "check_failed", 1.0, &[])],
        ),
    );
    let out = validate_from_raw(&[&g], &doc, &["--max-heads-in-flight", "any"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The predictions are for the file's SM count (132 where it has none, as for files written before it was
    // recorded); the flags that choose what to measure are refused, not silently ignored.
    assert!(std::fs::read_to_string(&doc).unwrap().contains("on 132 SMs"));
    let mut small = raw("NVIDIA H200", 1, 1, 2, &[("naive", "ok", 6.0, &[]), ("spt", "ok", 1.0, &[])]);
    small["sms"] = 66.into();
    let small = write("small.json", small);
    let out = validate_from_raw(&[&small], &doc, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("on 66 SMs") && !text.contains("on 132 SMs"), "{text}");
    let mut zero_sms = raw("NVIDIA H200", 1, 1, 2, &[("naive", "ok", 6.0, &[]), ("spt", "ok", 1.0, &[])]);
    zero_sms["sms"] = 0.into();
    let zero_sms = write("zero-sms.json", zero_sms);
    let args = validate_from_raw_args(&[&zero_sms], &doc, &[]);
    fails_with(&args.iter().map(String::as_str).collect::<Vec<_>>(), 2, "sms must be between 1 and 4096 (got 0)");
    for flag in [&["--sms", "100"][..], &["--seqlens", "512"], &["--split-tail"], &["--rounds", "2"], &["--reps", "5"]]
    {
        let args = validate_from_raw_args(&[&small], &doc, flag);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&args, 2, &format!("the argument '--from-raw <FILE>' cannot be used with '{}", flag[0]));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn validate_says_when_the_costs_came_from_another_card() {
    let dir = scratch("validate-cards");
    std::fs::create_dir_all(&dir).unwrap();
    // The fixture's costs with the calibrating card's UUID, as `dashc calibrate` now records it.
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/fixtures/costs-h200.json");
    let mut costs: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    costs["gpu_uuid"] = "GPU-aaa".into();
    let costs_path = dir.join("costs.json");
    std::fs::write(&costs_path, costs.to_string()).unwrap();
    let raw = |first_round: u32, card: Option<&str>| {
        let mut v = validation_raw(
            "NVIDIA H200",
            first_round,
            1,
            vec![raw_row("naive", "ok", 2, 2.0, &[]), raw_row("spt", "ok", 2, 1.0, &[])],
        );
        if let Some(card) = card {
            v["gpu_uuid"] = card.into();
        }
        let p = dir.join(format!("r{first_round}-{}.json", card.unwrap_or("none")));
        std::fs::write(&p, v.to_string()).unwrap();
        p.to_str().unwrap().to_string()
    };
    let doc = dir.join("v.md");
    let report = |files: &[&str]| {
        let mut args = validate_from_raw_args(files, &doc, &[]);
        args[2] = costs_path.to_str().unwrap().to_string();
        let out = Command::new(env!("CARGO_BIN_EXE_dashc")).args(&args).output().expect("dashc runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        std::fs::read_to_string(&doc).unwrap()
    };
    // Two rounds on two other cards: both named.
    let text = report(&[&raw(1, Some("GPU-bbb")), &raw(2, Some("GPU-ccc"))]);
    assert!(text.contains("calibrated on GPU-aaa, these measurements ran on GPU-bbb and GPU-ccc"), "{text}");
    // On the calibrating card, or with a file that does not know its card: no note.
    assert!(!report(&[&raw(1, Some("GPU-aaa"))]).contains("Another card"));
    assert!(!report(&[&raw(1, Some("GPU-bbb")), &raw(2, None)]).contains("Another card"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `dashc validate` on the stand-in GPU of `machine`: the fixture's costs, full mask, head dim 64, 512 tokens,
/// naive and spt, one repetition, the harness counting its runs; `extra` flags and `env` added.
#[cfg(unix)]
fn fake_validate(
    machine: &std::path::Path,
    doc: &std::path::Path,
    extra: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    let costs = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/fixtures/costs-h200.json");
    Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(["validate", "--arch", "sm80", "--costs", costs, "--doc", doc.to_str().unwrap()])
        .args(["--seqlens", "512", "--head-dims", "64", "--masks", "full", "--schedules", "naive,spt"])
        .args(["--tokens", "512", "--hidden", "128", "--reps", "1", "--no-check"])
        .args(["--work-dir", machine.join("work").to_str().unwrap()])
        .args(extra)
        .current_dir(machine)
        .env_clear()
        .env("PATH", machine)
        .env("FAKE_COUNTER", machine.join("counter"))
        .envs(env.iter().copied())
        .output()
        .expect("dashc runs")
}

/// A validation raw file as `validate --raw` writes it (H200 fixture costs' main loop), with `rows`.
fn validation_raw(device: &str, first_round: u32, rounds: u32, rows: Vec<serde_json::Value>) -> serde_json::Value {
    serde_json::json!({
        "format": "dashc-validation-raw", "schema_version": 1, "command": "dashc validate", "tool": "dashc",
        "date": "2026-11-25T00:00:00Z", "commit": "0000000", "device": device, "compute_cap": "9.0",
        "driver": "1.0", "arch": "sm90 (sm_90a)", "launch": "in-order", "rounds": rounds,
        "first_round": first_round, "rows": rows, "gantt": [],
    })
}

/// One row of a validation raw file: full mask, head dim 64, 512 tokens, batch 1.
fn raw_row(schedule: &str, status: &str, heads: u32, ms: f64, per_round: &[f64]) -> serde_json::Value {
    serde_json::json!({
        "mask": "full", "head_dim": 64, "heads": heads, "seqlen": 512, "batch": 1,
        "schedule": schedule, "status": status, "main_ms": ms, "total_ms": ms + 0.1,
        "main_ms_rounds": per_round,
    })
}

/// The arguments of `dashc validate --from-raw` of each of `files`, with the fixture's costs; `extra` flags
/// added. (The rows' shapes come from the files.)
fn validate_from_raw_args(files: &[&str], doc: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let costs = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/fixtures/costs-h200.json");
    let mut args = vec!["validate", "--costs", costs, "--doc", doc.to_str().unwrap()];
    for f in files {
        args.extend(["--from-raw", f]);
    }
    args.extend(extra);
    args.into_iter().map(String::from).collect()
}

fn validate_from_raw(files: &[&str], doc: &std::path::Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(validate_from_raw_args(files, doc, extra))
        .output()
        .expect("dashc runs")
}

#[test]
#[cfg(unix)]
fn validate_predicts_for_the_sm_count_given() {
    // (The raw file records it as `sms`; `validate --raw` also traces two Gantt runs, which the fake harness
    // cannot, so the field's reading is tested in validate_merges_the_rounds_of_several_raw_files.)
    let machine = fake_gpu_machine_named("fake-validate-sms", "9.0", "NVIDIA H200");
    let doc = machine.join("validation.md");
    let out = fake_validate(&machine, &doc, &["--sms", "66"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("on 66 SMs") && !text.contains("on 132 SMs"), "{text}");
    std::fs::remove_dir_all(&machine).unwrap();
}

#[test]
#[cfg(unix)]
fn validate_rounds_alternate_the_order_and_take_the_median() {
    let machine = fake_gpu_machine_named("fake-validate-rounds", "9.0", "NVIDIA H200");
    let doc = machine.join("validation.md");
    let out = fake_validate(&machine, &doc, &["--rounds", "3"], &[("FAKE_CLOCKS", "1".as_ref())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Rounds 1 and 3 run naive then spt, round 2 spt then naive; the n-th run's main kernel takes n ms:
    // naive 1, 4, 5 (median 4), spt 2, 3, 6 (median 3). Every run's clock: 1755 MHz, its one sample limited.
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("the median over 3 rounds run in alternating order"), "{text}");
    for (schedule, us) in [("naive", "4000.0"), ("spt", "3000.0")] {
        let row = format!("| full hd64 s512 (1x2) | {schedule} | held out | {us} |");
        let line = text.lines().find(|l| l.starts_with(&row)).unwrap_or_else(|| panic!("{row} not in\n{text}"));
        assert!(line.ends_with("| 1755 (100%) |"), "{line}");
    }
    assert!(text.contains("| SM MHz (limited) |"), "{text}");
    // The choice judged round by round: naive is the fastest in rounds 1 and 3, spt in round 2.
    let pick = text
        .lines()
        .find(|l| l.starts_with("| full hd64 s512 | held out |"))
        .and_then(|l| l.split('|').nth(4))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no choice row in\n{text}"));
    let per_round = match pick {
        "naive" => "1 of 1, 0 of 1, 1 of 1",
        "spt" => "0 of 1, 1 of 1, 0 of 1",
        other => panic!("pick {other}"),
    };
    assert!(text.contains(&format!("within 2% of that round's fastest in {per_round} (rounds in order)")), "{text}");
    // Raw files with and without clocks (those before the harness sampled them have none): the column shows
    // only where there are clocks.
    let raw = |clocks: bool| {
        let rows = [("naive", 4.0), ("spt", 3.0)]
            .iter()
            .map(|(schedule, ms)| {
                let mut row = raw_row(schedule, "ok", 2, *ms, &[]);
                if clocks {
                    row["sm_mhz"] = serde_json::json!(1605.0);
                    row["clock_limited_share"] = serde_json::json!(0.25);
                }
                row
            })
            .collect();
        validation_raw("NVIDIA H200", 1, 1, rows)
    };
    for clocks in [true, false] {
        let (raw_path, doc_path) =
            (machine.join(format!("raw-{clocks}.json")), machine.join(format!("doc-{clocks}.md")));
        std::fs::write(&raw_path, raw(clocks).to_string()).unwrap();
        let out = validate_from_raw(&[raw_path.to_str().unwrap()], &doc_path, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = std::fs::read_to_string(&doc_path).unwrap();
        let line = text.lines().find(|l| l.starts_with("| full hd64 s512 (1x2) | naive | held out | 4000.0 |"));
        let line = line.unwrap_or_else(|| panic!("no naive row in\n{text}"));
        assert_eq!(line.ends_with("| 1605 (25%) |"), clocks, "{line}");
        assert_eq!(text.contains("SM MHz"), clocks, "{text}");
        assert!(!text.contains("Judged on each round"), "one round: no round-by-round choice\n{text}");
    }
    std::fs::remove_dir_all(&machine).unwrap();
}

/// `--statistic fastest` compares the prediction with each run's fastest repetition, which the raw file keeps
/// beside the median; a raw file from before it was kept is refused for it, not read as medians.
#[test]
#[cfg(unix)]
fn validate_can_compare_with_the_fastest_repetition() {
    let machine = fake_gpu_machine_named("fake-validate-fastest", "9.0", "NVIDIA H200");
    let doc = machine.join("validation.md");
    // Measured: three rounds; the n-th run's main kernel takes n ms in the median and n - 0.5 ms at its fastest:
    // naive 1, 4, 5 (fastest 0.5, 3.5, 4.5: median 3.5), spt 2, 3, 6 (1.5, 2.5, 5.5: median 2.5).
    // Every run's clock (a median over its repetitions) is 1755 MHz, limited: not the fastest repetition's, so
    // left out of this report.
    let out =
        fake_validate(&machine, &doc, &["--rounds", "3", "--statistic", "fastest"], &[("FAKE_CLOCKS", "1".as_ref())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("Measured: the fastest repetition's main-kernel time"), "{text}");
    assert!(!text.contains("SM MHz"), "{text}");
    assert!(text.contains("Judged on each round's fastest repetitions alone"), "{text}");
    for (schedule, us) in [("naive", "3500.0"), ("spt", "2500.0")] {
        let row = format!("| full hd64 s512 (1x2) | {schedule} | held out | {us} |");
        assert!(text.contains(&row), "{row} not in\n{text}");
    }
    // From a raw file that keeps both: the statistic asked for.
    let row = |schedule: &str, median: f64, fastest: f64| {
        let mut r = raw_row(schedule, "ok", 2, median, &[]);
        r["main_min_ms"] = serde_json::json!(fastest);
        r
    };
    let raw_path = machine.join("raw.json");
    let rows = vec![row("naive", 4.0, 2.0), row("spt", 3.0, 2.5)];
    std::fs::write(&raw_path, validation_raw("NVIDIA H200", 1, 1, rows).to_string()).unwrap();
    for (statistic, naive_us, measured) in
        [("median", "4000.0", "the median main-kernel time"), ("fastest", "2000.0", "the fastest repetition's")]
    {
        let out = validate_from_raw(&[raw_path.to_str().unwrap()], &doc, &["--statistic", statistic]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = std::fs::read_to_string(&doc).unwrap();
        assert!(text.contains(&format!("Measured: {measured}")), "{text}");
        let line = format!("| full hd64 s512 (1x2) | naive | held out | {naive_us} |");
        assert!(text.contains(&line), "{line} not in\n{text}");
    }
    // Merged with a file from before the fastest repetition was kept: no value for the rows, so refused for
    // --statistic fastest (and fine for the median).
    let old = machine.join("old.json");
    let rows = vec![raw_row("naive", "ok", 2, 4.0, &[]), raw_row("spt", "ok", 2, 3.0, &[])];
    std::fs::write(&old, validation_raw("NVIDIA H200", 2, 1, rows).to_string()).unwrap();
    let files = [raw_path.to_str().unwrap(), old.to_str().unwrap()];
    let args = validate_from_raw_args(&files, &doc, &["--statistic", "fastest"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_with(&args, 2, "have no fastest repetition");
    let out = validate_from_raw(&files, &doc, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("Not compared: some measurements keep no fastest repetition"), "{text}");
    // Two files that both keep it: the median over their rounds' fastest repetitions (naive 2.0 and 3.0 ms).
    let newer = machine.join("newer.json");
    let rows = vec![row("naive", 5.0, 3.0), row("spt", 3.0, 2.5)];
    std::fs::write(&newer, validation_raw("NVIDIA H200", 2, 1, rows).to_string()).unwrap();
    let out =
        validate_from_raw(&[raw_path.to_str().unwrap(), newer.to_str().unwrap()], &doc, &["--statistic", "fastest"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("| full hd64 s512 (1x2) | naive | held out | 2500.0 |"), "{text}");
    // Both statistics side by side, with how far each moves between the two rounds: naive's median 4 and 5 ms
    // (22.2% of their mean), its fastest 2 and 3 (40%); spt's do not move. No row is 8192 tokens or longer.
    assert!(text.contains("## Which repetition stands for a run"), "{text}");
    assert!(text.contains("| median of the repetitions | 11.1% / 20.0% / 22.2% | - |"), "{text}");
    assert!(text.contains("| **fastest repetition** (this report's) | 20.0% / 36.0% / 40.0% | - |"), "{text}");
    // Each line agrees with the main tables of the report judged on its statistic: the held-out error and the
    // choice, over the rounds and per round.
    let cells = |text: &str, line_start: &str| -> Vec<String> {
        let line = text.lines().find(|l| l.starts_with(line_start)).unwrap_or_else(|| panic!("{line_start}\n{text}"));
        line.split('|').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
    };
    let main_tables = |text: &str| {
        let held_out = cells(text, "| held out |");
        let count = text.split("within 2% of it in **").nth(1).and_then(|t| t.split("**").next()).unwrap().to_string();
        let per_round = text.split("that round's fastest in ").nth(1).and_then(|t| t.split(" (rounds").next());
        let per_round: Vec<String> =
            per_round.unwrap().split(", ").map(|c| c.split(" of ").next().unwrap().to_string()).collect();
        (format!("{} / {} / {}", held_out[2], held_out[3], held_out[4]), count, per_round.join(", "))
    };
    let fastest_line = cells(&text, "| **fastest repetition** (this report's)");
    assert_eq!((fastest_line[3].clone(), fastest_line[4].clone(), fastest_line[5].clone()), main_tables(&text));
    let out =
        validate_from_raw(&[raw_path.to_str().unwrap(), newer.to_str().unwrap()], &doc, &["--statistic", "median"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let by_median = std::fs::read_to_string(&doc).unwrap();
    let median_line = cells(&text, "| median of the repetitions |");
    assert_eq!((median_line[3].clone(), median_line[4].clone(), median_line[5].clone()), main_tables(&by_median));
    assert!(by_median.contains("| **median of the repetitions** (this report's) |"), "{by_median}");
    std::fs::remove_dir_all(&machine).unwrap();
}

#[test]
#[cfg(unix)]
fn bench_rounds_show_a_failed_round_and_no_mean_for_it() {
    let hopper = fake_gpu_machine("fake-hopper-rounds-fail");
    let cutlass = fake_cutlass("fake-hopper-rounds-fail-cutlass");
    let counter = hopper.join("counter");
    // Run 6 is spt's deterministic build in round 2 (round 2 runs spt atomic, spt det, naive atomic, naive det).
    let _ = std::fs::remove_file(&counter);
    let (out, _) = fake_bench_exiting(
        &hopper,
        &cutlass,
        &["--masks", "full", "--schedules", "naive,spt", "--rounds", "2"],
        &[("FAKE_COUNTER", counter.as_os_str()), ("FAKE_FAIL_RUN", "6".as_ref())],
        1,
    );
    assert!(stderr(&out).contains("hd64 full 512 spt (round 2)"), "{}", stderr(&out));
    let table = stdout(&out);
    let spt = row_of(&table, "spt");
    // No mean and no range from the round that passed, and the failure named.
    assert!(spt.contains("spt  ") && spt.contains("check_failed"), "{spt}");
    assert!(!spt.contains("103.0"), "{spt}");
    assert!(row_of(&table, "naive").contains(" ok "), "{table}");
    // Run 2 is naive's atomic build in round 1: the deterministic build passed, the row says the atomic one failed.
    let _ = std::fs::remove_file(&counter);
    let (out, _) = fake_bench_exiting(
        &hopper,
        &cutlass,
        &["--masks", "full", "--schedules", "naive,spt", "--rounds", "2"],
        &[("FAKE_COUNTER", counter.as_os_str()), ("FAKE_FAIL_RUN", "2".as_ref())],
        1,
    );
    assert!(row_of(&stdout(&out), "naive").contains("atomic check_failed"), "{}", stdout(&out));
    // Both builds pass but their outputs disagree: the status says so beside the "vs atomic" cell.
    let (out, _) = fake_bench_exiting(
        &hopper,
        &cutlass,
        &["--masks", "full", "--schedules", "naive", "--rounds", "2"],
        &[("FAKE_DET_DQ", "1".as_ref())],
        1,
    );
    assert!(row_of(&stdout(&out), "naive").contains("vs atomic failed"), "{}", stdout(&out));
    for dir in [hopper, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
#[cfg(unix)]
fn bench_runs_a_searched_schedule_beside_the_built_ins() {
    // The next measurement of docs/hopper.md ("What is missing"): the search among bench's schedules, in-order.
    let hopper = fake_gpu_machine("fake-hopper-search");
    let cutlass = fake_cutlass("fake-hopper-search-cutlass");
    let (out, doc) = fake_bench(
        &hopper,
        &cutlass,
        &["--masks", "causal", "--schedules", "symmetric-shift,search", "--launch", "in-order"],
        &[],
    );
    let schedules: Vec<&str> =
        doc["configs"][0]["results"].as_array().unwrap().iter().map(|r| r["schedule"].as_str().unwrap()).collect();
    assert_eq!(schedules, ["symmetric-shift", "search"], "{}", stdout(&out));
    assert_eq!(doc["launch"], "in-order");
    for dir in [hopper, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn codegen_defaults_to_the_launch_of_its_main_loop() {
    let cutlass = fake_cutlass("codegen-launch-cutlass");
    let launch_line = |extra: &[&str]| {
        let dir = scratch(&format!("codegen-launch{}", extra.join("")));
        let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
            .args(["codegen", "--mask", "causal", "--schedule", "descending", "-o", dir.to_str().unwrap()])
            .args(extra)
            .env("CUTLASS_INCLUDE", &cutlass)
            .output()
            .expect("dashc runs");
        assert!(out.status.success(), "{}", stderr(&out));
        let data = std::fs::read_to_string(dir.join("schedule.txt")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        data.lines().find(|l| l.starts_with("launch ")).expect("schedule.txt names its launch").to_string()
    };
    assert_eq!(launch_line(&["--arch", "sm90"]), "launch persistent 132");
    assert_eq!(launch_line(&["--arch", "sm90", "--launch", "in-order"]), "launch in-order");
    assert_eq!(launch_line(&[]), "launch in-order");
    std::fs::remove_dir_all(&cutlass).unwrap();
}

/// Runs dashc with a PATH holding only `bin` (and no CUDA_HOME).
fn dashc_with_path(bin: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dashc")).args(args).env_clear().env("PATH", bin).output().expect("dashc runs")
}

#[test]
fn run_and_bench_without_nvcc_or_gpu_exit_3() {
    let empty = scratch("no-toolchain");
    std::fs::create_dir_all(&empty).unwrap();
    for args in [&["run", "--seqlen", "1024"][..], &["bench"][..]] {
        let out = dashc_with_path(&empty, args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("nvcc not found on PATH or under $CUDA_HOME/bin"), "{}", stderr(&out));
    }
    // A compiler but no driver: the GPU probe fails before anything is built.
    let fake = scratch("fake-nvcc");
    std::fs::create_dir_all(&fake).unwrap();
    let nvcc = fake.join("nvcc");
    std::fs::write(&nvcc, "#!/bin/sh\nexit 0\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = dashc_with_path(&fake, &["run", "--seqlen", "1024"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("no NVIDIA GPU available"), "{}", stderr(&out));
    assert_eq!(stderr(&out).trim_end().lines().count(), 1);
    // A driver that fails: nvidia-smi says why on stdout, and the message passes it on.
    let smi = fake.join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh
echo \"NVIDIA-SMI has failed because it couldn't communicate with the driver.\"\nexit 9\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = dashc_with_path(&fake, &["run", "--seqlen", "1024"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no NVIDIA GPU available: nvidia-smi failed (exit 9): NVIDIA-SMI has failed"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&empty).unwrap();
    std::fs::remove_dir_all(&fake).unwrap();
}

#[test]
fn bench_lists_must_not_be_empty() {
    fails_with(&["bench", "--seqlens", ""], 2, "--seqlens is empty");
    fails_with(&["bench", "--seqlens", "100"], 2, "--seqlens: 100 does not divide --tokens 16384");
}

/// A stand-in GPU machine for the host side of `run`: an `nvidia-smi` that names a GPU, an `nvcc` whose
/// "build" writes a shell-script harness, and `timeout`. The harness prints a passing result line and, given
/// `--dump DIR`, writes $FAKE_VALUES ones (raw bf16) as each of dQ, dK and dV; with FAKE_DET_DQ set, the
/// deterministic build's first dQ value is 3 instead. With FAKE_NO_DUMP set it writes nothing. With FAKE_COUNTER
/// naming a file, the n-th harness run reports 100 + n TFLOPS and a main kernel of n ms (the order of the runs
/// shows), and the run numbered FAKE_FAIL_RUN reports a failed check. With FAKE_CLOCKS set it reports an SM clock
/// (one limited sample at 1755 MHz), with FAKE_WATTS the board power too. With FAKE_SERIES set it lists 40 timed
/// whole backwards (five of 0.9 ms, then 1.0 ms); with FAKE_ARGS_LOG naming a file it appends its arguments there.
/// So the test
/// exercises what dashc does with real harnesses (dump folders, the comparison, the verdict), not the kernels.
fn fake_gpu_machine(name: &str) -> PathBuf {
    fake_gpu_machine_with_cap(name, "9.0")
}

fn fake_gpu_machine_with_cap(name: &str, compute_cap: &str) -> PathBuf {
    fake_gpu_machine_named(name, compute_cap, "Fake GPU")
}

fn fake_gpu_machine_named(name: &str, compute_cap: &str, gpu: &str) -> PathBuf {
    let bin = scratch(name);
    std::fs::create_dir_all(&bin).unwrap();
    let harness = r#"#!/bin/sh
dump=""
[ -n "$FAKE_ARGS_LOG" ] && echo "$@" >> "$FAKE_ARGS_LOG"
while [ $# -gt 0 ]; do
  if [ "$1" = "--dump" ]; then dump="$2"; shift; fi
  shift
done
case "$PWD" in *nondet*) det=false ;; *) det=true ;; esac
total=100.0; main=0.9; main_min=0.9
if [ -n "$FAKE_COUNTER" ]; then
  n=0; [ -f "$FAKE_COUNTER" ] && read n < "$FAKE_COUNTER"; n=$((n + 1)); echo $n > "$FAKE_COUNTER"
  total=$((100 + n)); main=$n; main_min=$((n - 1)).5
fi
status=ok
[ -n "$FAKE_FAIL_RUN" ] && [ "$n" = "$FAKE_FAIL_RUN" ] && status=check_failed
clocks=null
[ -n "$FAKE_CLOCKS" ] && clocks='{"sm_mhz_median":1755,"sm_mhz_min":1605,"samples":1,"limited":1,"power_w_median":'"${FAKE_WATTS:-null}"'}'
series=""
if [ -n "$FAKE_SERIES" ]; then
  series=',"total_reps":[0.9,0.9,0.9,0.9,0.9'
  i=0; while [ $i -lt 35 ]; do series="$series,1.0"; i=$((i + 1)); done
  series="$series]"
fi
ones() { i=0; while [ $i -lt "$1" ]; do printf '\200\077'; i=$((i + 1)); done; }
if [ -n "$dump" ] && [ -z "$FAKE_NO_DUMP" ]; then
  if [ "$det" = true ] && [ -n "$FAKE_DET_DQ" ]; then { printf '\100\100'; ones $((FAKE_VALUES - 1)); } > "$dump/dq.bf16"
  else ones "$FAKE_VALUES" > "$dump/dq.bf16"; fi
  ones "$FAKE_VALUES" > "$dump/dk.bf16"
  ones "$FAKE_VALUES" > "$dump/dv.bf16"
fi
echo '{"status":"'$status'","schedule":"naive","variant":"fake","device":"Fake GPU","sm_count":132,"deterministic":'$det',"units":8,"visits":64,"time_ms":{"total_median":1.0,"main_median":'$main',"total_min":1.0,"main_min":'$main_min'},"tflops":{"total":'$total',"main":110.0},"check":{"ran":false,"rel_l2_dq":null,"rel_l2_dk":null,"rel_l2_dv":null,"tolerance":0.02},"finite":true,"poison_ok":true,"repeatable":true,"repeat_runs":5,"main_kernel":{"registers":128,"local_bytes":0,"smem_bytes":1024},"clocks":'"$clocks"''"$series"',"spin_error":{"code":0,"unit":0,"bh":0,"q_tile":0,"wanted_rank":0,"seen":0}}'
"#;
    let tools = [
        ("nvidia-smi", format!("#!/bin/sh\necho '{gpu}, {compute_cap}, 1.0'\n")),
        ("nvcc", format!("#!/bin/sh\n/bin/cat > harness <<'HARNESS'\n{harness}HARNESS\n/bin/chmod +x harness\n")),
    ];
    for (tool, script) in tools {
        let path = bin.join(tool);
        std::fs::write(&path, script).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink("/usr/bin/timeout", bin.join("timeout")).unwrap();
    bin
}

#[test]
#[cfg(unix)]
fn run_compares_the_deterministic_outputs_with_the_atomic_ones() {
    let bin = fake_gpu_machine("fake-gpu");
    // seqlen 128 x 1 head x head dim 64: 8192 values per output; one Q tile (block_m 128 at head dim 64).
    let values = 128 * 64;
    let run = |work_dir: &str, cwd: &std::path::Path, fake: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dashc"));
        cmd.args(["run", "--seqlen", "128", "--heads", "1", "--head-dim", "64", "--schedule", "naive"])
            .args(["--nondeterministic", "--json", "--work-dir", work_dir, "--arch", "sm80"])
            .current_dir(cwd)
            .env_clear()
            .env("PATH", &bin)
            .env("FAKE_VALUES", values.to_string());
        for (k, v) in fake {
            cmd.env(k, v);
        }
        cmd.output().expect("dashc runs")
    };
    let agreement = |out: &std::process::Output| {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        doc["results"][0]["vs_nondeterministic"].clone()
    };
    let work = bin.join("work");
    let work_abs = work.to_str().unwrap();

    let out = run(work_abs, &bin, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let a = agreement(&out);
    assert_eq!(a["ok"], true, "{a}");
    assert_eq!(a["worst_tile_rel_l2_dq"], 0.0);
    assert_eq!(a["rel_l2_dk"], 0.0);

    // A relative work dir: the harness runs in its build folder, so the dump paths must not be relative.
    let out = run("rel-work", &bin, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(agreement(&out)["ok"], true);

    // One dQ value 3 instead of 1 in a block of 8192 ones: 2 / sqrt(8192) = 2.2e-2 apart, past the 1e-2 block
    // tolerance (a whole-tensor score of a larger problem would dilute it): the schedule fails, exit 1.
    let out = run(work_abs, &bin, &[("FAKE_DET_DQ", "1")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("check failed for naive"), "{}", stderr(&out));
    let a = agreement(&out);
    assert_eq!(a["ok"], false, "{a}");
    assert!((a["worst_tile_rel_l2_dq"].as_f64().unwrap() - 2.0 / 8192f64.sqrt()).abs() < 1e-9, "{a}");
    assert_eq!(a["rel_l2_dk"], 0.0);

    // Harnesses that pass but dump nothing: the comparison fails instead of being skipped.
    let out = run(work_abs, &bin, &[("FAKE_NO_DUMP", "1")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let a = agreement(&out);
    assert_eq!(a["ok"], false, "{a}");
    assert!(a["error"].as_str().unwrap().contains("no complete output dump"), "{a}");

    // The dumps are removed once compared, in both work dirs.
    let leftovers: Vec<_> = walk(&bin).into_iter().filter(|p| p.to_string_lossy().contains("outputs-")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir_all(&bin).unwrap();
}

#[test]
#[cfg(unix)]
fn run_with_a_long_series_shows_the_rested_and_sustained_figures() {
    let bin = fake_gpu_machine("fake-gpu-series");
    let log = bin.join("args.log");
    let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(["run", "--seqlen", "128", "--heads", "1", "--head-dim", "64", "--schedule", "naive", "--arch", "sm80"])
        .args(["--reps", "40", "--idle-ms", "200", "--work-dir", bin.join("work").to_str().unwrap()])
        .current_dir(&bin)
        .env_clear()
        .env("PATH", &bin)
        .env("FAKE_VALUES", "8192")
        .env("FAKE_SERIES", "1")
        .env("FAKE_ARGS_LOG", &log)
        .output()
        .expect("dashc runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&log).unwrap().contains("--idle-ms 200"));
    // 100 TFLOPS at the median of 1.0 ms: 111.1 over the first five runs (0.9 ms), 100.0 over the last third.
    let table = stdout(&out);
    assert!(table.contains("rested TFLOPS") && table.contains("sustained TFLOPS"), "{table}");
    let row = table.lines().find(|l| l.starts_with("naive")).unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("111.1") && row.contains("100.0"), "{row}");
    std::fs::remove_dir_all(&bin).unwrap();
}

#[test]
#[cfg(unix)]
fn run_picks_the_main_loop_by_gpu_and_refuses_sm90_off_hopper() {
    let run = |bin: &std::path::Path, extra: &[&str], cutlass: Option<&std::path::Path>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dashc"));
        cmd.args(["run", "--seqlen", "128", "--heads", "1", "--head-dim", "64", "--schedule", "naive", "--json"])
            .args(["--work-dir", bin.join("work").to_str().unwrap()])
            .args(extra)
            .current_dir(bin)
            .env_clear()
            .env("PATH", bin)
            .env("FAKE_VALUES", "8192");
        if let Some(dir) = cutlass {
            cmd.env("CUTLASS_INCLUDE", dir);
        }
        cmd.output().expect("dashc runs")
    };
    // Hopper: the sm90 main loop by default, which needs the headers (exit 3 without them).
    let hopper = fake_gpu_machine("fake-hopper");
    let out = run(&hopper, &[], None);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("CUTLASS/CuTe headers"), "{}", stderr(&out));
    let cutlass = fake_cutlass("fake-hopper-cutlass");
    let out = run(&hopper, &[], Some(&cutlass));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let built: Vec<String> = std::fs::read_dir(hopper.join("work"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(built, vec!["sm90_hd64_m128_n128_causal_det_sm_90a".to_string()]);
    // The sm90 loop's default launch is the persistent one (MainLoop::default_launch); --launch overrides it,
    // and the portable loop, which has no persistent launch, defaults to in-order.
    let launch = |out: &std::process::Output| {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("run --json prints JSON");
        doc["problem"]["machine"]["launch"].as_str().expect("the launch is recorded").to_string()
    };
    assert_eq!(launch(&out), "persistent");
    let out = run(&hopper, &["--launch", "in-order"], Some(&cutlass));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(launch(&out), "in-order");
    let out = run(&hopper, &["--arch", "sm80"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(launch(&out), "in-order");
    // Not Hopper: the portable loop by default, and --arch sm90 is unavailable there.
    let ampere = fake_gpu_machine_with_cap("fake-ampere", "8.0");
    let out = run(&ampere, &["--arch", "sm90"], Some(&cutlass));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("the sm90 main loop needs a Hopper GPU"), "{}", stderr(&out));
    let out = run(&ampere, &[], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(launch(&out), "in-order");
    for dir in [hopper, ampere, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[test]
#[cfg(unix)]
fn run_refuses_costs_calibrated_on_the_other_main_loop() {
    // The fixture was calibrated on the portable loop of an H200; on a Hopper the sm90 loop is the default.
    let bin = fake_gpu_machine_named("fake-h200", "9.0", "NVIDIA H200");
    let cutlass = fake_cutlass("fake-h200-cutlass");
    let fixture = crate::common::costs_fixture();
    let run_with = |costs: &str, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_dashc"))
            .args(["run", "--seqlen", "1024", "--heads", "16", "--schedule", "naive", "--costs", costs])
            .args(["--work-dir", bin.join("work").to_str().unwrap()])
            .args(extra)
            .current_dir(&bin)
            .env_clear()
            .env("PATH", &bin)
            .env("CUTLASS_INCLUDE", &cutlass)
            .env("FAKE_VALUES", "1")
            .output()
            .expect("dashc runs")
    };
    let run = |extra: &[&str]| run_with(&fixture, extra);
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("calibrated on the sm80 main loop, this run builds the sm90 one"),
        "{}",
        stderr(&out)
    );
    // With the loop it was calibrated on, the run goes ahead.
    let out = run(&["--arch", "sm80"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A file of the sm90 loop from before its deferred dQ is refused too; one with it is taken.
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
    for entry in doc["entries"].as_array_mut().unwrap() {
        entry["costs"]["dq_writers"] = 2.into();
    }
    let before = bin.join("costs-sm90-before.json");
    std::fs::write(&before, doc.to_string()).unwrap();
    let out = run_with(before.to_str().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("before its deferred dQ"), "{}", stderr(&out));
    for entry in doc["entries"].as_array_mut().unwrap() {
        entry["costs"]["dq_deferred"] = true.into();
    }
    let deferred = bin.join("costs-sm90.json");
    std::fs::write(&deferred, doc.to_string()).unwrap();
    let out = run_with(deferred.to_str().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // At head dim 64 the sm90 kernel loads the next K/V beside the dK/dV epilogue: a file without
    // "kv_load_overlap" there is refused, one with it taken; at head dim 128 the flag would be wrong.
    let out = run_with(deferred.to_str().unwrap(), &["--head-dim", "64"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"kv_load_overlap\": false, but this dashc's sm90 kernel loads"),
        "{}",
        stderr(&out)
    );
    for entry in doc["entries"].as_array_mut().unwrap() {
        entry["costs"]["kv_load_overlap"] = true.into();
    }
    let overlap = bin.join("costs-sm90-overlap.json");
    std::fs::write(&overlap, doc.to_string()).unwrap();
    let out = run_with(overlap.to_str().unwrap(), &["--head-dim", "64"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run_with(overlap.to_str().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("(head dim 128) says \"kv_load_overlap\": true"), "{}", stderr(&out));
    for dir in [bin, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
#[cfg(unix)]
fn bench_checks_the_costs_entry_of_every_head_dim() {
    // A costs file's entries differ by head dim: one that says the hd128 kernel loads K/V beside its epilogue is
    // wrong there, and bench refuses it even when its first configuration (head dim 64) is right.
    let bin = fake_gpu_machine_named("fake-h200-bench-costs", "9.0", "NVIDIA H200");
    let cutlass = fake_cutlass("fake-h200-bench-costs-cutlass");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate::common::costs_fixture()).unwrap()).unwrap();
    for entry in doc["entries"].as_array_mut().unwrap() {
        entry["costs"]["dq_writers"] = 2.into();
        entry["costs"]["dq_deferred"] = true.into();
        entry["costs"]["kv_load_overlap"] = true.into();
    }
    let costs = bin.join("costs-overlap-everywhere.json");
    std::fs::write(&costs, doc.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(["bench", "--seqlens", "512", "--head-dims", "64,128", "--tokens", "512", "--hidden", "128"])
        .args(["--no-check", "--reps", "1", "--costs", costs.to_str().unwrap()])
        .args(["--out", bin.join("results").to_str().unwrap(), "--work-dir", bin.join("work").to_str().unwrap()])
        .current_dir(&bin)
        .env_clear()
        .env("PATH", &bin)
        .env("CUTLASS_INCLUDE", &cutlass)
        .output()
        .expect("dashc runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("(head dim 128) says \"kv_load_overlap\": true"), "{}", stderr(&out));
    assert!(!bin.join("results").exists(), "refused before any measurement");
    for dir in [bin, cutlass] {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn the_binary_knows_the_commit_it_was_built_from() {
    // GPU results name their commit; the binary runs on a GPU machine whose copy of the repository may name another,
    // so the build's own commit is embedded (and shown by --version).
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git runs");
    assert!(head.status.success(), "the tests run in a git checkout");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let out = dashc(&["--version"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), format!("dashc {} (commit {head})", env!("CARGO_PKG_VERSION")));
}

#[test]
fn validate_reads_split_rows_and_names_one_it_cannot_rebuild() {
    let dir = scratch("validate-split");
    std::fs::create_dir_all(&dir).unwrap();
    let doc = dir.join("v.md");
    // 2 heads x 4 columns = 8 units on 132 SMs: every unit is split.
    let raw = dir.join("split.json");
    let rows = vec![raw_row("shift", "ok", 2, 0.05, &[0.05]), raw_row("shift+split", "ok", 2, 0.03, &[0.03])];
    std::fs::write(&raw, validation_raw("NVIDIA H200", 1, 1, rows).to_string()).unwrap();
    let out = validate_from_raw(&[raw.to_str().unwrap()], &doc, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(&doc).unwrap();
    assert!(report.contains("| shift+split |"), "{report}");
    // 33 heads x 4 columns = 132 units: one full pass, nothing to split, so no shift+split to predict.
    let full = dir.join("full.json");
    let rows = vec![raw_row("shift", "ok", 33, 0.05, &[0.05]), raw_row("shift+split", "ok", 33, 0.03, &[0.03])];
    std::fs::write(&full, validation_raw("NVIDIA H200", 1, 1, rows).to_string()).unwrap();
    let out = validate_from_raw(&[full.to_str().unwrap()], &doc, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("schedule shift+split (full hd64 s512) is not among the schedules"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"));
    std::fs::remove_dir_all(&dir).unwrap();
}
