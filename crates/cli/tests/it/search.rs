//! `dashc search`, `--schedule search`, `--schedule-file` and `--save-schedule`: results, round trips,
//! reproducibility, and every bad input as one line with exit code 2.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{dashc, fails_with, stdout};

/// A fresh folder for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("search-tests").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A small GQA problem with a sliding window: every part of the search is exercised in well under a second.
const SHAPE: [&str; 14] = [
    "--batch",
    "2",
    "--heads",
    "4",
    "--kv-heads",
    "2",
    "--seqlen",
    "1024",
    "--mask",
    "sliding-window",
    "--window-left",
    "256",
    "--sms",
    "12",
];

fn args<'a>(head: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    let mut v = head.to_vec();
    v.extend_from_slice(&SHAPE);
    v.extend_from_slice(tail);
    v
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&stdout(out)).expect("JSON on stdout")
}

#[test]
fn search_reports_a_certified_schedule_beside_the_built_ins() {
    let out = json(&dashc(&args(&["search"], &["--iterations", "64", "--json"])));
    assert_eq!(out["schema_version"], 1);
    assert_eq!(out["command"], "search");
    let r = &out["result"];
    let makespan = r["makespan"].as_f64().unwrap();
    assert!(makespan >= r["certified_bound"].as_f64().unwrap());
    assert!(r["certified_bound"].as_f64().unwrap() >= r["best_bound"].as_f64().unwrap());
    assert_eq!(out["search"]["iterations"], 64);
    let best = out["best_builtin"]["makespan"].as_f64().unwrap();
    assert!(makespan <= best, "search {makespan} lost to the best built-in {best}");
    for b in out["builtins"].as_array().unwrap() {
        if let Some(m) = b["makespan"].as_f64() {
            assert!(makespan <= m);
        }
    }
    // The table names the search, its bound and the best built-in.
    let text = stdout(&dashc(&args(&["search"], &["--iterations", "16"])));
    assert!(text.contains("certificate: makespan"), "{text}");
    assert!(text.contains("best built-in:"), "{text}");
}

#[test]
fn fixed_iterations_give_the_same_schedule_on_one_or_two_threads() {
    let dir = scratch("threads");
    let run = |threads: &str, file: &str| {
        let path = dir.join(file);
        let mut a = args(&["search"], &["--iterations", "120", "--seed", "5", "--json", "--save-schedule"]);
        let p = path.to_str().unwrap().to_string();
        a.push(&p);
        let out =
            Command::new(env!("CARGO_BIN_EXE_dashc")).args(&a).env("RAYON_NUM_THREADS", threads).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        doc.as_object_mut().unwrap().remove("saved_to");
        (doc, std::fs::read_to_string(path).unwrap())
    };
    let (doc1, file1) = run("1", "one.json");
    let (doc2, file2) = run("2", "two.json");
    assert_eq!(doc1, doc2);
    assert_eq!(file1, file2);
}

#[test]
fn a_saved_schedule_loads_back_identically() {
    let dir = scratch("round-trip");
    let saved = dir.join("searched.json");
    let saved_s = saved.to_str().unwrap();
    let out = json(&dashc(&args(&["search"], &["--iterations", "40", "--json", "--save-schedule", saved_s])));
    let makespan = out["result"]["makespan"].as_f64().unwrap();

    let loaded = json(&dashc(&args(&["bounds"], &["--schedule-file", saved_s, "--json"])));
    let results = loaded["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["schedule"], "search");
    assert_eq!(results[0]["makespan"].as_f64().unwrap(), makespan);

    // Saving a loaded schedule writes the same file again.
    let again = dir.join("again.json");
    let again_s = again.to_str().unwrap();
    assert!(dashc(&args(&["simulate"], &["--schedule-file", saved_s, "--save-schedule", again_s])).status.success());
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), std::fs::read_to_string(&again).unwrap());

    // A built-in saved from `bounds` loads back with its own makespan.
    let naive = dir.join("naive.json");
    let naive_s = naive.to_str().unwrap();
    let b = json(&dashc(&args(&["bounds"], &["--schedule", "naive", "--json", "--save-schedule", naive_s])));
    let l = json(&dashc(&args(&["bounds"], &["--schedule-file", naive_s, "--json"])));
    assert_eq!(b["results"][0]["makespan"], l["results"][0]["makespan"]);
    assert_eq!(l["results"][0]["schedule"], "naive");
}

#[test]
fn schedule_search_is_a_schedule_like_the_others() {
    let out = json(&dashc(&args(&["bounds"], &["--schedule", "spt,search", "--iterations", "24", "--json"])));
    let names: Vec<&str> = out["results"].as_array().unwrap().iter().map(|r| r["schedule"].as_str().unwrap()).collect();
    assert_eq!(names, ["spt", "search"]);
    let spt = out["results"][0]["makespan"].as_f64().unwrap();
    let search = out["results"][1]["makespan"].as_f64().unwrap();
    assert!(search <= spt);
    // The default budget is a fixed number of iterations, so the output is reproducible.
    let a = stdout(&dashc(&args(&["simulate"], &["--schedule", "search"])));
    let b = stdout(&dashc(&args(&["simulate"], &["--schedule", "search"])));
    assert_eq!(a, b);
}

#[test]
fn random_documents_come_from_the_seed() {
    let run = |seed: &str| {
        let out = json(&dashc(&[
            "bounds",
            "--mask",
            "document",
            "--doc-random",
            seed,
            "--seqlen",
            "16384",
            "--schedule",
            "spt",
            "--json",
        ]));
        let lens: Vec<u64> =
            out["problem"]["mask"]["lens"].as_array().unwrap().iter().map(|l| l.as_u64().unwrap()).collect();
        assert_eq!(lens.iter().sum::<u64>(), 16384);
        assert!(lens.iter().all(|&l| (512..=8192).contains(&l)), "{lens:?}");
        lens
    };
    assert_eq!(run("4"), run("4"));
    assert_ne!(run("4"), run("5"));
}

#[test]
fn a_zero_or_misplaced_budget_is_refused() {
    fails_with(&args(&["search"], &["--iterations", "0"]), 2, "--iterations must be at least 1 (got 0)");
    fails_with(&args(&["search"], &["--budget-secs", "0"]), 2, "--budget-secs must be a positive number of seconds");
    fails_with(&args(&["search"], &["--budget-secs=-2"]), 2, "--budget-secs must be a positive number of seconds");
    fails_with(
        &args(&["bounds"], &["--schedule", "search", "--iterations", "0"]),
        2,
        "--iterations must be at least 1",
    );
    fails_with(&args(&["bounds"], &["--iterations", "10"]), 2, "apply to --schedule search");
    // Both budgets at once, or a schedule file beside --schedule: clap refuses the combination.
    let both = dashc(&args(&["search"], &["--iterations", "5", "--budget-secs", "1"]));
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn save_schedule_needs_exactly_one_schedule() {
    let dir = scratch("save-one");
    let path = dir.join("x.json");
    let p = path.to_str().unwrap();
    fails_with(
        &args(&["bounds"], &["--save-schedule", p]),
        2,
        // Of the seven built-ins, naive, descending and spt apply to a sliding window.
        "--save-schedule writes one schedule, but 3 are selected (those of --schedule all that apply)",
    );
    fails_with(&args(&["simulate"], &["--schedule", "naive,spt", "--save-schedule", p]), 2, "but 2 are selected");
    assert!(!path.exists());
}

#[test]
fn save_schedule_with_split_tail_says_it_writes_the_split_version() {
    let dir = scratch("save-split");
    let path = dir.join("split.json");
    let p = path.to_str().unwrap();
    // 512 units of shift on 132 SMs: the last pass is partial, so --split-tail evaluates shift and shift+split.
    let out = dashc(&[
        "simulate",
        "--mask",
        "full",
        "--seqlen",
        "4096",
        "--schedule",
        "shift",
        "--split-tail",
        "--save-schedule",
        p,
    ]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("\nshift+split "), "{}", stdout(&out));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(&format!("schedule shift+split written to {p} (the split tail of shift")), "{err}");
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved["name"], "shift+split");
}

#[test]
fn progress_prints_a_line_only_when_the_printed_makespan_changes() {
    let out = dashc(&args(&["search"], &["--iterations", "400", "--progress"]));
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let shown: Vec<&str> = err.lines().filter_map(|l| l.split("makespan ").nth(1)).collect();
    assert!(!shown.is_empty(), "{err}");
    assert!(shown.windows(2).all(|w| w[0] != w[1]), "a makespan printed twice in a row: {err}");
}

#[test]
fn unreadable_and_malformed_schedule_files_are_named() {
    let dir = scratch("malformed");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let load =
        |path: &str| args(&["bounds"], &["--schedule-file", path]).into_iter().map(String::from).collect::<Vec<_>>();
    let check = |path: &str, needle: &str| {
        let a = load(path);
        fails_with(&a.iter().map(String::as_str).collect::<Vec<_>>(), 2, needle);
    };
    check(dir.join("missing.json").to_str().unwrap(), "cannot read schedule file");
    check(&write("garbage.json", "{ not json"), "is not valid JSON");
    check(&write("array.json", "[1, 2, 3]"), "is not a dashc schedule file (not a JSON object)");
    check(&write("other.json", r#"{"format": "something-else", "schema_version": 1}"#), "is not a dashc schedule file");
    check(
        &write("future.json", r#"{"format": "dashc-schedule", "schema_version": 99}"#),
        "has schema_version 99, but this dashc reads version 1",
    );
    check(&write("partial.json", r#"{"format": "dashc-schedule", "schema_version": 1, "name": "x"}"#), "is malformed");
    // The clap conflict: --schedule-file replaces --schedule.
    let a = load(dir.join("missing.json").to_str().unwrap());
    let mut a: Vec<&str> = a.iter().map(String::as_str).collect();
    a.extend(["--schedule", "naive"]);
    assert_eq!(dashc(&a).status.code(), Some(2));
}

#[test]
fn a_file_for_another_problem_or_a_tampered_one_is_refused() {
    let dir = scratch("foreign");
    let saved = dir.join("s.json");
    let s = saved.to_str().unwrap();
    assert!(dashc(&args(&["search"], &["--iterations", "8", "--save-schedule", s])).status.success());
    // SHAPE with some flags' values replaced (clap refuses a flag given twice).
    fn with<'a>(file: &'a str, change: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["bounds"];
        a.extend_from_slice(&SHAPE);
        for pair in change.chunks(2) {
            match a.iter().position(|x| *x == pair[0]) {
                Some(at) => a[at + 1] = pair[1],
                None => a.extend_from_slice(pair),
            }
        }
        a.extend(["--schedule-file", file]);
        a
    }
    fails_with(&with(s, &["--seqlen", "2048"]), 2, "is for seqlen_q 1024, but the command asks for 2048");
    fails_with(&with(s, &["--sms", "13"]), 2, "is for sms 12, but the command asks for 13");
    fails_with(&with(s, &["--kv-heads", "4"]), 2, "is for kv_heads 2, but the command asks for 4");
    fails_with(&with(s, &["--launch", "persistent"]), 2, "is for launch in-order, but the command asks for persistent");
    fails_with(
        &with(s, &["--window-left", "300"]),
        2,
        "is for mask sliding-window (left 256, right 0), but the command asks for sliding-window (left 300, right 0)",
    );

    // Swap the ranks of two contributions: the order no longer validates.
    let text = std::fs::read_to_string(&saved).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let units = doc["units"].as_array_mut().unwrap();
    let v = units[0]["visits"][0].as_array().unwrap().clone();
    units[0]["visits"][0] = serde_json::json!([v[0], v[1], 999]);
    let bad = dir.join("bad-rank.json");
    std::fs::write(&bad, serde_json::to_string(&doc).unwrap()).unwrap();
    let mut a = args(&["bounds"], &["--schedule-file"]);
    a.push(bad.to_str().unwrap());
    fails_with(&a, 2, "does not hold a valid schedule: invalid schedule: dq tile");
}

/// The bench's hd64 causal 8192 configuration (batch 2 x 32 heads) under calibrated costs, in-order launch:
/// left free, the search beats the built-ins in the model by spreading the machine over all 64 (batch, head)
/// pairs at once, which on an H100 ran 24% slower than spt (bench/results/search-causal-2026-11-25-89c79de-h100).
/// By default it keeps to the built-ins' width.
#[test]
fn the_search_keeps_to_the_built_ins_heads_in_flight_unless_told_otherwise() {
    let costs = crate::common::costs_fixture();
    let run = |limit: &[&str]| {
        let mut a = vec![
            "search",
            "--launch",
            "in-order",
            "--batch",
            "2",
            "--heads",
            "32",
            "--seqlen",
            "8192",
            "--head-dim",
            "64",
            "--mask",
            "causal",
            "--costs",
            &costs,
            "--iterations",
            "400",
            "--json",
        ];
        a.extend_from_slice(limit);
        json(&dashc(&a))
    };
    let widest = |out: &serde_json::Value| {
        out["builtins"].as_array().unwrap().iter().filter_map(|b| b["heads_in_flight"].as_u64()).max().unwrap()
    };
    let default = run(&[]);
    let free = run(&["--max-heads-in-flight", "any"]);
    let limit = default["search"]["max_heads_in_flight"].as_u64().unwrap();
    assert_eq!(limit, widest(&default));
    assert!(limit < 16, "the built-ins walk the heads in order: {limit} in flight");
    assert!(default["result"]["heads_in_flight"].as_u64().unwrap() <= limit);
    assert!(free["search"]["max_heads_in_flight"].is_null());
    assert_eq!(free["result"]["heads_in_flight"], 64);
    let (d, f) = (default["result"]["makespan"].as_f64().unwrap(), free["result"]["makespan"].as_f64().unwrap());
    assert!(f < d, "the spread schedule is faster in the model ({f} against {d}), which is the trap");
    // A number in between is kept to as well.
    let eight = run(&["--max-heads-in-flight", "8"]);
    assert_eq!(eight["search"]["max_heads_in_flight"], 8);
    assert!(eight["result"]["heads_in_flight"].as_u64().unwrap() <= 8);
    // The table names the limit and shows every schedule's heads in flight.
    let text = stdout(&dashc(&args(&["search"], &["--iterations", "16"])));
    assert!(text.contains("heads in flight: the search kept to at most"), "{text}");
}

#[test]
fn a_bad_limit_on_heads_in_flight_is_refused() {
    fails_with(&args(&["search"], &["--max-heads-in-flight", "0"]), 2, "a number of at least 1, `builtins` or `any`");
    fails_with(&args(&["search"], &["--max-heads-in-flight", "few"]), 2, "(got `few`)");
    fails_with(&args(&["bounds"], &["--max-heads-in-flight", "4"]), 2, "apply to --schedule search");
    // Fewer than any start needs: the message says how many would do.
    fails_with(&args(&["search"], &["--max-heads-in-flight", "1", "--iterations", "8"]), 2, "allow at least");
    fails_with(
        &["sweep", "--seqlens", "1024", "--schedules", "spt", "--max-heads-in-flight", "4"],
        2,
        "apply to --schedule search",
    );
}

/// `sweep` (and `bench`, through the same plan) passes `--max-heads-in-flight` on to the search of every
/// configuration, and reports each schedule's heads in flight.
#[test]
fn sweep_passes_the_limit_on_heads_in_flight_to_the_search() {
    let dir = scratch("sweep-heads");
    let costs = crate::common::costs_fixture();
    let heads_of_search = |limit: &[&str]| {
        let file = dir.join(format!("sweep{}.json", limit.len()));
        let mut a = vec!["sweep", "--seqlens", "8192", "--head-dims", "64", "--masks", "causal"];
        a.extend_from_slice(&["--schedules", "spt,search", "--launch", "in-order", "--costs", &costs]);
        a.extend_from_slice(&["--json", file.to_str().unwrap()]);
        a.extend_from_slice(limit);
        let out = dashc(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let rows = doc["rows"].as_array().unwrap().clone();
        let of = |name: &str| rows.iter().find(|r| r["schedule"] == name).unwrap()["heads_in_flight"].as_u64().unwrap();
        (of("spt"), of("search"))
    };
    let (spt, default) = heads_of_search(&[]);
    assert!(default <= spt.max(6), "default search: {default} heads in flight, spt {spt}");
    assert_eq!(heads_of_search(&["--max-heads-in-flight", "any"]).1, 64);
}

#[test]
fn a_limit_no_start_keeps_to_says_what_a_search_would_need() {
    // Built-in naive keeps to 9 heads as built, but as a search start (arrival-order ranks) it runs 11 wide: at
    // the default limit (the built-ins' 9) the result is naive unsearched, and the output says what to allow.
    let shape = ["--batch", "2", "--seqlen", "4096", "--mask", "causal", "--schedule", "naive", "--iterations", "20"];
    let out = dashc(&[&["search"][..], &shape[..]].concat());
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("nothing was searched: no start kept to the limit on heads in flight (--max-heads-in-flight 9); a search needs --max-heads-in-flight 11 or more"),
        "{}",
        stdout(&out)
    );
    fails_with(
        &[&["search"][..], &shape[..], &["--max-heads-in-flight", "5"][..]].concat(),
        2,
        "allow at least 9, or 11 for a search to run from naive",
    );
}

#[test]
fn a_file_of_another_format_names_its_format() {
    let dir = scratch("other-format");
    let path = dir.join("costs-like.json");
    std::fs::write(&path, r#"{"format": "dashc-costs", "schema_version": 1}"#).unwrap();
    fails_with(
        &["simulate", "--schedule-file", path.to_str().unwrap()],
        2,
        r#"is not a dashc schedule file (its format is "dashc-costs", expected "dashc-schedule")"#,
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A time budget shorter than building the starting schedules ends the search before its first round, and the
/// output says where the time went instead of leaving a user to wonder why 1 µs took longer.
#[test]
fn a_budget_spent_on_the_starts_is_explained() {
    let out = dashc(&["search", "--seqlen", "4096", "--budget-secs", "0.000001"]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("search: 0 iterations"), "{text}");
    assert!(
        text.contains("building and scoring the starting schedules took") && text.contains("more than the 0.000001 s"),
        "{text}"
    );
}

/// `sweep` takes the search's move budget and seed with `search` among its schedules (docs/search.md), and
/// refuses them, as the other commands do, without it.
#[test]
fn sweep_takes_the_search_budget_with_search_among_its_schedules() {
    let shape = ["--seqlens", "512", "--head-dims", "64", "--masks", "causal"];
    let with = |extra: &[&'static str]| {
        let mut v = vec!["sweep"];
        v.extend_from_slice(&shape);
        v.extend_from_slice(extra);
        v
    };
    let out = dashc(&with(&["--schedules", "search,naive", "--iterations", "10", "--search-seed", "3"]));
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    assert!(stdout(&out).lines().any(|l| l.contains(" search ")), "{}", stdout(&out));
    // The seed reaches the search: two seeds give two searched schedules, one seed the same bytes twice.
    let seeded = |seed: &'static str| {
        dashc(&with(&["--schedules", "search", "--iterations", "400", "--search-seed", seed, "--csv", "-"]))
    };
    let (zero, one) = (seeded("0"), seeded("1"));
    assert!(zero.status.success() && one.status.success(), "{}", crate::common::stderr(&one));
    assert_ne!(zero.stdout, one.stdout, "seeds 0 and 1 gave the same sweep: is --search-seed passed on?");
    assert_eq!(zero.stdout, seeded("0").stdout);
    // The preamble names the search that made the row.
    assert!(stdout(&out).contains("search: 10 iterations from seed 3"), "{}", stdout(&out));
    fails_with(&with(&["--schedules", "naive", "--iterations", "10"]), 2, "apply to --schedule search");
    fails_with(&with(&["--schedules", "search", "--iterations", "0"]), 2, "--iterations must be at least 1");
}

/// In `dashc search`, `--schedule` lists the built-ins to compare with: `search` in it is a mistake (the search
/// always runs), refused with a hint instead of a run compared with nothing.
#[test]
fn search_refuses_search_among_its_builtins() {
    fails_with(&args(&["search"], &["--iterations", "5", "--schedule", "search"]), 2, "leave `search` out of the list");
    fails_with(
        &args(&["search"], &["--iterations", "5", "--schedule", "naive,search"]),
        2,
        "--schedule names the built-ins to compare with",
    );
}
