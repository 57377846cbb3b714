//! `bounds` and `simulate` on the paper's idealized corner and a small real shape.

use serde_json::Value;

use crate::common::{dashc, stdout};

#[test]
fn bounds_reproduces_the_idealized_check_values() {
    let causal = dashc(&["bounds", "--ideal", "--tiles", "8", "--heads", "4", "--mask", "causal"]);
    assert!(causal.status.success());
    insta::assert_snapshot!("bounds_ideal_causal", stdout(&causal));
    let full = dashc(&["bounds", "--ideal", "--tiles", "8", "--heads", "4", "--mask", "full"]);
    insta::assert_snapshot!("bounds_ideal_full", stdout(&full));
}

#[test]
fn bounds_json_lists_every_schedule_and_skips_with_a_reason() {
    let out = dashc(&["bounds", "--seqlen", "2048", "--batch", "2", "--heads", "4", "--mask", "full", "--json"]);
    assert!(out.status.success());
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["problem"]["seqlen_q"], 2048);
    let results = doc["results"].as_array().unwrap();
    let names: Vec<&str> = results.iter().map(|r| r["schedule"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["naive", "descending", "spt", "shift", "symmetric-shift", "spread-shift", "spread-symmetric-shift"]
    );
    for r in results[..4].iter().chain(&results[5..6]) {
        assert_eq!(r["status"], "ok");
        assert_eq!(r["mask"], "full");
        for key in ["makespan", "critical_path", "work_bound", "tasks"] {
            assert!(r[key].is_number(), "{key} missing in {r}");
        }
        assert!(r["makespan"].as_f64().unwrap() >= r["work_bound"].as_f64().unwrap());
    }
    for r in [&results[4], &results[6]] {
        assert_eq!(r["status"], "skipped");
        assert!(r["reason"].as_str().unwrap().contains("needs a causal mask"));
    }
    insta::assert_snapshot!("bounds_json_full", stdout(&out));
}

#[test]
fn simulate_reports_per_sm_time_and_writes_a_timeline() {
    let dir = std::env::temp_dir().join(format!("dashc-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("timeline.json");
    let out = dashc(&[
        "simulate",
        "--seqlen",
        "1024",
        "--heads",
        "3",
        "--mask",
        "causal",
        "--sms",
        "8",
        "--schedule",
        "descending",
        "--json",
        "--timeline",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let r = &doc["results"][0];
    let per_sm = r["per_sm"].as_array().unwrap();
    assert_eq!(per_sm.len(), 8);
    let makespan = r["makespan"].as_f64().unwrap();
    for sm in per_sm {
        let total = sm["busy"].as_f64().unwrap() + sm["wait"].as_f64().unwrap() + sm["idle"].as_f64().unwrap();
        assert!((total - makespan).abs() < 1e-9);
    }
    let timeline: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(timeline["format"], "dashc-timeline");
    assert_eq!(timeline["source"], "predicted");
    let segs = timeline["schedules"][0]["segments"].as_array().unwrap();
    let computes = segs.iter().filter(|s| s["kind"] == "compute").count() as u64;
    assert_eq!(computes, r["tasks"].as_u64().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_is_identical_whatever_the_thread_count() {
    let args = ["bounds", "--seqlen", "4096", "--heads", "8", "--mask", "causal", "--json"];
    let run = |threads: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dashc"))
            .args(args)
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        out.stdout
    };
    assert_eq!(run("1"), run("2"));
}

#[test]
fn split_tail_adds_each_built_in_with_its_last_pass_spread() {
    // 32 heads x 128 kv tiles = 4096 units on 132 SMs: 4 units in the last pass.
    let args = ["simulate", "--seqlen", "16384", "--heads", "32", "--head-dim", "64", "--mask", "full"];
    let out = dashc(
        &[&args[..], &["--launch", "persistent", "--schedule", "shift,naive", "--split-tail", "--json"]].concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let results = doc["results"].as_array().unwrap();
    let names: Vec<&str> = results.iter().map(|r| r["schedule"].as_str().unwrap()).collect();
    assert_eq!(names, ["shift", "shift+split", "naive", "naive+split"]);
    let makespan = |i: usize| results[i]["makespan"].as_f64().unwrap();
    // shift: 32 columns on the busiest SM against 4964.8 tile units of work per SM (3.1%); split, close to it.
    assert!(makespan(1) < makespan(0) * 0.98, "{} against {}", makespan(1), makespan(0));
    assert_eq!(results[1]["tasks"], results[0]["tasks"]);
}

/// A table's header names the model's switches that were on: two tables of different models never read the
/// same above different makespans.
#[test]
fn the_header_names_the_model_switches() {
    let base = ["simulate", "--seqlen", "1024", "--launch", "persistent", "--unit-start", "1", "--schedule", "naive"];
    let plain = stdout(&dashc(&base));
    let mut with = base.to_vec();
    with.extend(["--dq-writers", "2", "--kernel-epilogues", "--kv-load-overlap", "--poll", "0.1"]);
    let switched = stdout(&dashc(&with));
    let costs_line = |t: &str| t.lines().find(|l| l.starts_with("machine:")).unwrap().to_string();
    assert!(!costs_line(&plain).contains("dQ writers") && !costs_line(&plain).contains("poll"), "{plain}");
    assert!(
        costs_line(&switched).contains(", poll 0.1, with kernel epilogues, 2 dQ writers, K/V load overlap"),
        "{switched}"
    );
}
