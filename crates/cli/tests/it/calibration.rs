//! Calibrated costs, validation reports and traces: what works without a GPU, and every bad-input case.

use std::path::PathBuf;

use crate::common::{costs_fixture as fixture, dashc, fails_with, stderr, stdout};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dashc-it-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `dashc validate --costs COSTS --from-raw RAW --doc DOC`, which must succeed; the report's text.
fn validate_report(costs: &str, raw: &std::path::Path, doc: &std::path::Path) -> String {
    let out =
        dashc(&["validate", "--costs", costs, "--from-raw", raw.to_str().unwrap(), "--doc", doc.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(doc).unwrap()
}

/// A validation raw file of an H200 run holding `rows` and no Gantt traces.
fn h200_raw(rows: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "format": "dashc-validation-raw", "schema_version": 1, "command": "test", "tool": "dashc", "date": "d",
        "commit": "c", "device": "NVIDIA H200", "compute_cap": "9.0", "driver": "x", "arch": "sm_90a",
        "rows": rows, "gantt": []
    })
}

#[test]
fn calibrated_costs_predict_microseconds_and_tflops() {
    let costs = fixture();
    let out = dashc(&["simulate", "--seqlen", "4096", "--batch", "4", "--mask", "causal", "--costs", &costs]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("µs, calibrated on NVIDIA H200"), "{}", stdout(&out));
    // The header's costs are rounded as the table is (the file holds 3.220253138139382).
    assert!(stdout(&out).contains("costs: compute 3.2203, partial tiles 3.246, reduce 1.9981"), "{}", stdout(&out));
    let out = dashc(&["sweep", "--costs", &costs, "--seqlens", "16384", "--masks", "full"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("TFLOPS") && text.contains("µs, calibrated"), "{text}");
}

#[test]
fn costs_files_for_other_builds_or_malformed_are_refused() {
    let costs = fixture();
    fails_with(
        &["bounds", "--head-dim", "64", "--block-m", "64", "--costs", &costs],
        2,
        "no entry for head dim 64, tiles 64x128",
    );
    fails_with(&["simulate", "--costs", &costs, "--compute", "2"], 2, "cannot be used with");
    fails_with(&["simulate", "--costs", "/nonexistent/costs.json"], 2, "cannot read costs file");
    let dir = temp_dir("badcosts");
    let bad = dir.join("costs.json");
    std::fs::write(&bad, "{\"format\": \"dashc-timeline\"}").unwrap();
    fails_with(&["bounds", "--costs", bad.to_str().unwrap()], 2, "invalid costs file");
}

#[test]
fn calibrating_from_kept_traces_refuses_what_it_cannot_fit() {
    let dir = temp_dir("kept");
    let d = dir.to_str().unwrap();
    fails_with(&["calibrate", "--from-traces", d], 2, "--from-traces needs --arch");
    fails_with(&["calibrate", "--from-traces", "/nonexistent/traces", "--arch", "sm90"], 2, "is not a folder");
    fails_with(&["calibrate", "--from-traces", d, "--keep-traces", d], 2, "cannot be used with");
    let out = dir.join("costs.json");
    let one = [
        "--seqlens",
        "1024",
        "--head-dims",
        "64",
        "--masks",
        "full",
        "--schedules",
        "naive",
        "--memory-probes",
        "none",
    ];
    let args = |extra: &[&str]| -> Vec<String> {
        ["calibrate", "--from-traces", d, "--arch", "sm90", "-o", out.to_str().unwrap()]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    };
    let run = |extra: &[&str]| dashc(&args(extra).iter().map(String::as_str).collect::<Vec<_>>());
    let missing = run(&one);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("1 of the 1 traces") && stderr(&missing).contains("trace-hd64-full-s1024-naive.txt")
    );
    std::fs::write(dir.join("trace-hd64-full-s1024-naive.txt"), "dashc-trace 1\nname shift\n").unwrap();
    let broken = run(&one);
    assert_eq!(broken.status.code(), Some(2));
    assert!(stderr(&broken).contains("invalid trace"), "{}", stderr(&broken));
    assert!(!out.exists(), "no costs file from traces that were refused");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn validate_and_trace_requests_fail_cleanly_without_gpu_work() {
    fails_with(&["validate"], 2, "validate needs --costs FILE");
    let costs = fixture();
    fails_with(&["validate", "--costs", &costs, "--doc", "report.txt"], 2, "ending in .md");
    // The search's budget flags that sweep and bench take: validate would predict its search row without them.
    for flag in ["--iterations", "--search-seed"] {
        fails_with(&["validate", "--costs", &costs, flag, "3"], 2, "validate takes no --iterations or --search-seed");
    }
    fails_with(
        &[
            "validate",
            "--costs",
            &costs,
            "--head-dims",
            "96",
            "--hidden",
            "1536",
            "--doc",
            "/tmp/dashc-never-written.md",
        ],
        2,
        "has no entry for head dim 96",
    );
    fails_with(
        &["run", "--seqlen", "1024", "--schedule", "all", "--trace", "t.json"],
        2,
        "exactly one built-in schedule",
    );
    fails_with(
        &["run", "--seqlen", "1024", "--schedule", "naive", "--trace", "/nonexistent/t.json"],
        2,
        "does not exist",
    );
}

#[test]
fn validate_says_how_far_the_model_put_the_measured_fastest_from_its_pick() {
    let dir = temp_dir("validate-margin");
    let row = |schedule: &str, ms: f64| {
        serde_json::json!({"mask": "full", "head_dim": 128, "heads": 16, "seqlen": 4096, "batch": 4,
            "schedule": schedule, "status": "ok", "main_ms": ms, "total_ms": ms + 0.2})
    };
    // Measured, naive is 10% faster than shift, which the model picks.
    let raw = h200_raw(serde_json::json!([row("naive", 5.0), row("shift", 5.5)]));
    let raw_path = dir.join("raw.json");
    std::fs::write(&raw_path, raw.to_string()).unwrap();
    let doc = dir.join("validation.md");
    let costs = fixture();
    let text = validate_report(&costs, &raw_path, &doc);
    // The predictions, from the report's last table.
    let predicted = |schedule: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("| full hd128 s4096 (4x16) | {schedule} |")))
            .expect("a row of the last table");
        line.split('|').nth(5).unwrap().trim().parse().unwrap()
    };
    let (naive, shift) = (predicted("naive"), predicted("shift"));
    assert!(shift < naive, "the model picks shift: {shift} against {naive}");
    let margin = format!("{:+.1}%", 100.0 * (naive / shift - 1.0));
    let expected = format!("| full hd128 s4096 | held out | naive | shift | +10.0% | {margin} |");
    assert!(text.contains(&expected), "{expected}\n{text}");
    let close = if naive / shift - 1.0 < 0.01 { 1 } else { 0 };
    let sentence = format!("Choices that miss by more than 2%: 1 of 1; in {close} of them the model predicts");
    assert!(text.contains(&sentence), "{sentence}\n{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn validate_rewrites_its_report_from_raw_measurements_and_refuses_another_gpu() {
    let dir = temp_dir("validate");
    let raw = h200_raw(serde_json::json!([
        {"mask": "full", "head_dim": 128, "heads": 16, "seqlen": 4096, "batch": 4, "schedule": "naive",
         "status": "ok", "main_ms": 6.3, "total_ms": 6.5},
        {"mask": "full", "head_dim": 128, "heads": 16, "seqlen": 4096, "batch": 4, "schedule": "shift",
         "status": "ok", "main_ms": 5.5, "total_ms": 5.7}
    ]));
    let raw_path = dir.join("raw.json");
    std::fs::write(&raw_path, raw.to_string()).unwrap();
    let doc = dir.join("validation.md");
    let costs = fixture();
    let args =
        ["validate", "--costs", &costs, "--from-raw", raw_path.to_str().unwrap(), "--doc", doc.to_str().unwrap()];
    let out = dashc(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&doc).unwrap();
    assert!(text.contains("| full hd128 s4096 (4x16) | shift | held out | 5500.0 |"), "{text}");
    assert!(dir.join("validation-scatter.png").is_file());
    // The ablation: a header and four models; with no calibration row the idealized one cannot be scaled and says so.
    let ablation = text.split("## Where the idealized model is wrong").nth(1).expect("ablation section");
    assert!(ablation.contains("| idealized: compute 1, reduce 0.25, free hand-offs (one scale factor fitted) | - |"));
    assert!(ablation.contains("| + poll after a missed early read, K/V epilogues (the calibrated model) | "));
    assert_eq!(ablation.split("## ").next().unwrap().matches("\n| ").count(), 5, "{ablation}");
    let other = raw.to_string().replace("NVIDIA H200", "NVIDIA H100 80GB HBM3");
    std::fs::write(&raw_path, other).unwrap();
    fails_with(&args, 2, "the measurements are from 'NVIDIA H100 80GB HBM3'");
    std::fs::write(&raw_path, "{\"format\": 1").unwrap();
    fails_with(&args, 2, "invalid validation raw file");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn validate_blends_the_memory_roof_into_its_predictions() {
    // The fixture's costs with a memory roof slow enough to matter at 512 tokens: the predicted column grows by the
    // blend, and the report says how it was made.
    let dir = temp_dir("validate-roof");
    let raw = h200_raw(serde_json::json!([
        {"mask": "full", "head_dim": 128, "heads": 16, "seqlen": 512, "batch": 32, "schedule": "shift",
         "status": "ok", "main_ms": 0.4, "total_ms": 0.5}
    ]));
    let raw_path = dir.join("raw.json");
    std::fs::write(&raw_path, raw.to_string()).unwrap();
    let predicted = |costs: &str| -> (f64, String) {
        let doc = dir.join("validation.md");
        let text = validate_report(costs, &raw_path, &doc);
        let row =
            text.lines().find(|l| l.starts_with("| full hd128 s512 (32x16) | shift |")).expect("the row").to_string();
        (row.split('|').nth(5).unwrap().trim().parse().unwrap(), text)
    };
    let plain = fixture();
    let (without, text) = predicted(&plain);
    assert!(!text.contains("Memory roof"), "{text}");
    // A roof whose memory time equals the plain prediction: the blend is 2^(1/3) of it.
    let bytes = 32.0 * 16.0 * 512.0 * (1032.0 + 1024.0);
    let mut file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plain).unwrap()).unwrap();
    for e in file["entries"].as_array_mut().unwrap() {
        e["costs"]["memory_roof"] = serde_json::json!({"bandwidth": bytes / without, "exponent": 3.0});
    }
    let roofed = dir.join("roofed.json");
    std::fs::write(&roofed, file.to_string()).unwrap();
    let (with, text) = predicted(roofed.to_str().unwrap());
    assert!((with / (without * 2f64.cbrt()) - 1.0).abs() < 2e-3, "{without} -> {with}");
    assert!(text.contains("Memory roof") && text.contains("(T^3 + M^3)^(1/3)"), "{text}");
    assert!(text.contains("no probes recorded") && !text.contains("**Memory probes**"), "{text}");
    assert!(text.contains("| full hd128 s512 (32x16) | shift | held out |"), "{text}");
    // The ablation's last step is the roof, and the step before it is the model without one.
    assert!(
        text.contains("| + the memory roof: blended with the time the DRAM traffic takes (the calibrated model) |"),
        "{text}"
    );
    // A row of a memory probe's shape is no held-out test of the roof fitted on it: it counts as calibration.
    for e in file["entries"].as_array_mut().unwrap() {
        e["memory_probes"] = serde_json::json!([{"mask": "full", "batch": 32, "heads": 16, "seqlen": 512,
            "schedule": "shift", "launch": "persistent", "dram_bytes": bytes, "simulated_us": without,
            "trace_makespan_us": without * 1.3}]);
    }
    std::fs::write(&roofed, file.to_string()).unwrap();
    let (_, text) = predicted(roofed.to_str().unwrap());
    assert!(text.contains("| full hd128 s512 (32x16) | shift | calibration |"), "{text}");
    assert!(text.contains("**Memory probes**") && text.contains("fitted on 1 probe (full s512)"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn validate_predicts_with_the_launch_its_measurements_ran_with() {
    let dir = temp_dir("validate-launch");
    let raw_with = |launch: Option<&str>, command: &str| {
        let mut raw = h200_raw(serde_json::json!([
            {"mask": "causal", "head_dim": 128, "heads": 16, "seqlen": 4096, "batch": 4, "schedule": "descending",
             "status": "ok", "main_ms": 3.0, "total_ms": 3.2}
        ]));
        raw["command"] = serde_json::json!(command);
        if let Some(l) = launch {
            raw["launch"] = serde_json::json!(l);
        }
        raw.to_string()
    };
    let costs = fixture();
    let report = |raw: String, extra: &[&str]| {
        let raw_path = dir.join("raw.json");
        std::fs::write(&raw_path, raw).unwrap();
        let doc = dir.join("validation.md");
        let mut args = vec!["validate", "--costs", &costs, "--from-raw", raw_path.to_str().unwrap()];
        args.extend_from_slice(&["--doc", doc.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let out = dashc(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&doc).unwrap();
        let row =
            text.lines().find(|l| l.starts_with("| causal hd128 s4096 (4x16) | descending |")).unwrap().to_string();
        (text, row)
    };
    let (in_order, in_order_row) = report(raw_with(None, "dashc validate"), &[]);
    assert!(in_order.contains("with the in-order launch (the measurements' own)"), "{in_order}");
    assert!(!in_order.contains("Not measured here"), "{in_order}");
    let (persistent, persistent_row) = report(raw_with(Some("persistent"), "dashc validate"), &[]);
    assert!(persistent.contains("with the persistent launch (the measurements' own)"), "{persistent}");
    assert!(persistent.contains("Not measured here: the calibration traces ran with the in-order launch"));
    // Descending on a causal mask: units of unequal length, which the static persistent assignment places
    // differently from the in-order dispatcher, so the predictions differ.
    assert_ne!(in_order_row, persistent_row);
    // A file from before the launch was recorded: its command line says which.
    let (_, old_row) = report(raw_with(None, "dashc validate --arch sm90 --launch persistent --reps 10"), &[]);
    assert_eq!(old_row, persistent_row);
    // A traced Gantt run of another launch than the measurements' (files from before the launch was recorded) is
    // not paired with the prediction; one of the same launch is.
    let trace = dir.join("trace.json");
    let out = dashc(&[
        "simulate",
        "--seqlen",
        "512",
        "--batch",
        "32",
        "--heads",
        "16",
        "--head-dim",
        "128",
        "--mask",
        "full",
        "--schedule",
        "shift",
        "--costs",
        &costs,
        "--launch",
        "in-order",
        "--timeline",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let with_gantt = |launch: &str| {
        let mut raw: serde_json::Value = serde_json::from_str(&raw_with(Some(launch), "dashc validate")).unwrap();
        raw["gantt"] = serde_json::json!([{"mask": "full", "head_dim": 128, "heads": 16, "seqlen": 512, "batch": 32,
            "schedule": "shift", "file": "trace.json", "traced_main_ms": 0.5}]);
        raw.to_string()
    };
    let (text, _) = report(with_gantt("persistent"), &[]);
    assert!(
        text.contains("Not drawn: the trace ran with the in-order launch, the measurements with the persistent one.")
    );
    assert!(!text.contains("![gantt]") && !text.contains("trace overhead: main kernel"), "{text}");
    let (text, _) = report(with_gantt("in-order"), &[]);
    assert!(text.contains("![gantt]") && !text.contains("Not drawn"), "{text}");
    // Asking for another launch than the measurements' is refused, either way.
    let raw_path = dir.join("raw.json");
    let doc = dir.join("validation.md");
    for (measured, asked, message) in [
        ("in-order", "persistent", "the measurements were taken with the in-order launch"),
        (
            "persistent",
            "in-order",
            "the measurements were taken with the persistent launch; leave out --launch or give --launch persistent",
        ),
    ] {
        std::fs::write(&raw_path, raw_with(Some(measured), "dashc validate")).unwrap();
        let args = ["--from-raw", raw_path.to_str().unwrap(), "--doc", doc.to_str().unwrap(), "--launch", asked];
        fails_with(&[&["validate", "--costs", &costs][..], &args[..]].concat(), 2, message);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn simulate_says_its_phases_are_constant_where_the_costs_vary() {
    // The sm90 model's costs with a calibrated spread: `simulate` keeps every phase at its cost and says that the
    // GPU commands predict otherwise; without a spread it says nothing.
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate::common::costs_fixture()).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("dashc-variability-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shape = ["simulate", "--seqlen", "1024", "--batch", "2", "--heads", "4", "--schedule", "naive", "--costs"];
    for (name, spread) in [("constant.json", false), ("varied.json", true)] {
        for entry in file["entries"].as_array_mut().unwrap() {
            let costs = &mut entry["costs"];
            costs["dq_writers"] = 2.into();
            costs["dq_deferred"] = true.into();
            if spread {
                costs["variability"] = serde_json::json!({"compute": 0.1, "reduce": 0.2, "handoff": 0.2,
                    "unit_start": 0.3, "unit_finish": 0.3, "runs": 8});
            }
        }
        let path = dir.join(name);
        std::fs::write(&path, file.to_string()).unwrap();
        let out = crate::common::dashc(&[&shape[..], &[path.to_str().unwrap()]].concat());
        assert!(out.status.success(), "{}", crate::common::stderr(&out));
        let said = crate::common::stdout(&out).contains("note: these simulations keep every phase at its cost");
        assert_eq!(said, spread, "{}", crate::common::stdout(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
