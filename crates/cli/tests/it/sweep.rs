//! `sweep` and `report`: the paper's configurations by default, lists that override them, outputs that do not
//! depend on the thread count, and bad lists refused.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use crate::common::{dashc, fails_with, stderr, stdout};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dashc-sweep-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_default_sweep_covers_the_papers_24_configurations() {
    let dir = scratch("default");
    let (json, csv) = (dir.join("s.json"), dir.join("s.csv"));
    let out = dashc(&["sweep", "--json", json.to_str().unwrap(), "--csv", csv.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["time_unit"], "tile-compute");
    let rows = doc["rows"].as_array().unwrap();
    let mut configs: Vec<(String, u64, u64)> = rows
        .iter()
        .map(|r| {
            (r["mask"].as_str().unwrap().to_string(), r["head_dim"].as_u64().unwrap(), r["seqlen"].as_u64().unwrap())
        })
        .collect();
    configs.dedup();
    assert_eq!(configs.len(), 24);
    for r in rows {
        let (hd, heads) = (r["head_dim"].as_u64().unwrap(), r["heads"].as_u64().unwrap());
        assert_eq!(hd * heads, 2048);
        assert_eq!(r["seqlen"].as_u64().unwrap() * r["batch"].as_u64().unwrap(), 16384);
        let rel = r["relative_throughput"].as_f64().unwrap();
        assert!(rel > 0.0 && rel <= 1.0 + 1e-12, "{r}");
        assert!(r["tflops"].is_null(), "uncalibrated costs give no TFLOPS: {r}");
        // Every applicable schedule: shift only on full masks, symmetric shift only on causal ones.
        let s = r["schedule"].as_str().unwrap();
        let mask = r["mask"].as_str().unwrap();
        assert!(mask == "full" || !["shift", "spread-shift"].contains(&s), "{r}");
        assert!(mask == "causal" || !["symmetric-shift", "spread-symmetric-shift"].contains(&s), "{r}");
        if s == "naive" {
            assert_eq!(r["speedup_vs_naive"], 1.0);
        }
    }
    assert_eq!(rows.len(), 24 * 5);
    // Causal, head dim 128, seqlen 16384: backward FLOPs = 2.5 x 4·B·H·S²·d / 2.
    let r = rows.iter().find(|r| r["mask"] == "causal" && r["head_dim"] == 128 && r["seqlen"] == 16384).unwrap();
    assert_eq!(r["backward_flops"].as_f64().unwrap(), 2.5 * 4.0 * 16.0 * 16384f64.powi(2) * 128.0 / 2.0);
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv_text.lines().count(), rows.len() + 1);
    assert!(csv_text.starts_with("mask,head_dim,heads,seqlen,batch,schedule,makespan,"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn lists_override_the_defaults() {
    let out = dashc(&[
        "sweep",
        "--seqlens",
        "2048,1024",
        "--head-dims",
        "64",
        "--masks",
        "causal",
        "--schedules",
        "naive,symmetric-shift",
        "--sms",
        "16",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!("sweep_small_causal", stdout(&out));
}

#[test]
fn outputs_are_byte_identical_whatever_the_thread_count() {
    let dir = scratch("threads");
    let run = |threads: &str| {
        let sub = dir.join(threads);
        std::fs::create_dir_all(&sub).unwrap();
        let files = ["s.json", "s.csv", "s.png", "s.svg"].map(|f| sub.join(f));
        let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
            .args(["sweep", "--seqlens", "512,2048,8192", "--json", files[0].to_str().unwrap()])
            .args(["--csv", files[1].to_str().unwrap(), "--plot", files[2].to_str().unwrap()])
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let svg = Command::new(env!("CARGO_BIN_EXE_dashc"))
            .args(["sweep", "--seqlens", "512,2048,8192", "--plot", files[3].to_str().unwrap()])
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        assert!(svg.status.success(), "{}", stderr(&svg));
        let mut bytes = vec![out.stdout];
        bytes.extend(files.iter().map(|f| std::fs::read(f).unwrap()));
        bytes
    };
    let (one, two) = (run("1"), run("2"));
    for (k, (a, b)) in one.iter().zip(&two).enumerate() {
        assert!(a == b, "output {k} differs between 1 and 2 threads");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_sweep_lists_and_paths_are_one_line_and_exit_2() {
    fails_with(&["sweep", "--seqlens", ""], 2, "--seqlens is empty: give at least one value");
    fails_with(&["sweep", "--head-dims", " , "], 2, "--head-dims is empty");
    fails_with(&["sweep", "--masks", ","], 2, "--masks is empty");
    fails_with(&["sweep", "--schedules", ""], 2, "--schedules is empty");
    fails_with(&["sweep", "--seqlens", "1k"], 2, "--seqlens: '1k' is not a positive integer");
    fails_with(&["sweep", "--seqlens", "3000"], 2, "--seqlens: 3000 does not divide --tokens 16384");
    fails_with(&["sweep", "--head-dims", "96"], 2, "--head-dims: 96 does not divide --hidden 2048");
    fails_with(&["sweep", "--masks", "sliding-window"], 2, "'sliding-window' is not one of the paper's configurations");
    fails_with(&["sweep", "--schedules", "fastest"], 2, "unknown schedule 'fastest'");
    fails_with(
        &["sweep", "--masks", "causal", "--schedules", "shift"],
        2,
        "no schedule in --schedules applies to any configuration",
    );
    fails_with(&["sweep", "--seqlens", "512", "--plot", "p.gif"], 2, "cannot tell the image format of p.gif");
    fails_with(
        &["sweep", "--seqlens", "512", "--json", "/nonexistent/dir/s.json"],
        2,
        "cannot write /nonexistent/dir/s.json",
    );
    fails_with(
        &["sweep", "--seqlens", "512", "--csv", "/nonexistent/dir/s.csv"],
        2,
        "cannot write /nonexistent/dir/s.csv",
    );
    fails_with(
        &["sweep", "--seqlens", "512", "--plot", "/nonexistent/dir/s.png"],
        2,
        "cannot write /nonexistent/dir/s.png",
    );
}

#[test]
fn report_writes_markdown_and_charts_quickly() {
    let dir = scratch("report");
    let out_dir = dir.join("report");
    let start = Instant::now();
    let out = dashc(&["report", "--out", out_dir.to_str().unwrap()]);
    let seconds = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(seconds < 60.0, "report took {seconds:.1} s");
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for file in ["sweep.png", "gantt-full.png", "gantt-causal.png", "gantt-causal-132sms.png", "sweep.csv"] {
        assert!(md.contains(&format!("({file})")), "report.md does not link {file}");
        assert!(out_dir.join(file).is_file(), "{file} missing");
    }
    for png in ["sweep.png", "gantt-full.png", "gantt-causal.png", "gantt-causal-132sms.png"] {
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(out_dir.join(png)).unwrap()));
        let info = decoder.read_info().unwrap();
        assert!(info.info().width >= 800, "{png} is too small");
    }
    assert!(md.contains("| causal | 128 | 16384 | 1 × 16 |"), "{md}");

    // A report folder that cannot be created: a path below a regular file.
    let file = dir.join("file");
    std::fs::write(&file, "").unwrap();
    let below = file.join("report");
    fails_with(&["report", "--out", below.to_str().unwrap()], 2, "cannot create report folder");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_dash_sends_the_json_or_the_csv_to_stdout_in_place_of_the_table() {
    let dir = scratch("dash");
    let small = ["sweep", "--seqlens", "512", "--head-dims", "64", "--masks", "full", "--schedules", "naive,shift"];
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_dashc"))
            .args(small)
            .args(extra)
            .current_dir(&dir)
            .output()
            .expect("dashc runs");
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let json: Value = serde_json::from_str(&run(&["--json", "-"])).expect("stdout is the JSON alone");
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(2));
    let csv = run(&["--csv", "-"]);
    assert!(csv.starts_with("mask,head_dim,") && csv.lines().count() == 3, "{csv}");
    assert!(!dir.join("-").exists(), "a file named - was written");
    fails_with(&[&small[..], &["--json", "-", "--csv", "-"]].concat(), 2, "both ask for stdout");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn outputs_are_checked_before_any_work_and_nothing_is_left_half_written() {
    let dir = scratch("outputs-first");
    let json = dir.join("f.json");
    let missing = dir.join("no-such-folder").join("p.png");
    let (json_s, missing_s) = (json.to_str().unwrap(), missing.to_str().unwrap());
    fails_with(&["sweep", "--seqlens", "512", "--json", json_s, "--plot", missing_s], 2, "folder");
    assert!(!json.exists(), "the JSON of a refused sweep was written");
    // A folder where the timeline goes: the schedule file is not written either.
    let saved = dir.join("s.json");
    fails_with(
        &[
            "simulate",
            "--seqlen",
            "1024",
            "--schedule",
            "shift",
            "--save-schedule",
            saved.to_str().unwrap(),
            "--timeline",
            dir.to_str().unwrap(),
        ],
        2,
        "Is a directory",
    );
    assert!(!saved.exists(), "the schedule file of a refused simulate was written");
    fails_with(&["search", "--seqlen", "1024", "--budget-secs", "60", "--save-schedule", missing_s], 2, "folder");
    let report = dir.join("report");
    std::fs::create_dir_all(report.join("sweep.png")).unwrap();
    fails_with(&["report", "--out", report.to_str().unwrap()], 2, "sweep.png");
    assert!(!report.join("sweep.csv").exists() && !report.join("sweep.json").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_skipped_schedule_is_named_under_the_table() {
    let out = dashc(&["sweep", "--seqlens", "512", "--schedules", "shift,naive"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("shift: skipped in 2 of 4 configurations: shift needs a full mask (got mask causal)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn simulate_timeline_dash_prints_the_timeline_in_place_of_the_table() {
    let out = dashc(&["simulate", "--ideal", "--tiles", "4", "--heads", "2", "--timeline", "-"]);
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("stdout is the timeline JSON alone");
    assert_eq!(json["format"], "dashc-timeline");
    assert!(!std::path::Path::new("-").exists(), "a file named - was written");
    fails_with(
        &["simulate", "--ideal", "--tiles", "4", "--heads", "2", "--timeline", "-", "--json"],
        2,
        "both ask for stdout",
    );
}
