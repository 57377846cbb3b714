//! `dashc bench`: the paper's 24 configurations x applicable schedules on the GPU, deterministic and not, with
//! the raw results written as JSON under bench/results/ and a table beside the anchor figures.

use std::io::IsTerminal;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::agreement::Agreement;
use crate::anchors::{ANCHORS_NOTE, anchor};
use crate::args::BenchArgs;
use crate::exit::{CheckFailed, bad_input};
use crate::gpu::{Clocks, Device, HarnessResult, Target, find_nvcc, kernel_config, prebuild, probe_device};
use crate::measure::{Measured, measure_setup, round_order};
use crate::output::{SCHEMA_VERSION, table, write_file};
use crate::setup::{Outcome, Setup};
use crate::sweep::{Config, Plan, mask_name};

/// One schedule measured in one round.
#[derive(Serialize)]
struct RoundMeasured {
    /// `--first-round` to `--first-round` + `--rounds` − 1.
    round: u32,
    #[serde(flatten)]
    measured: Measured,
}

#[derive(Serialize)]
struct ConfigResult {
    head_dim: u32,
    mask: &'static str,
    seqlen: u32,
    batch: u32,
    heads: u32,
    /// Every round's measurement of every applicable schedule: round 1's schedules first.
    results: Vec<RoundMeasured>,
    skipped: Vec<(String, String)>,
}

#[derive(Serialize)]
struct BenchJson<'a> {
    schema_version: u32,
    command: String,
    date: String,
    commit: String,
    device: &'a Device,
    arch: String,
    /// The launch every configuration ran with ("in-order" or "persistent").
    launch: &'static str,
    /// How many times every configuration and schedule was measured (`--rounds`), and the first round's number
    /// (`--first-round`; its parity set the order).
    rounds: u32,
    first_round: u32,
    configs: Vec<ConfigResult>,
}

pub fn run(args: BenchArgs) -> Result<()> {
    // Bad flags answer before the GPU probe; the launch default depends on the main loop, known after it.
    // A shape no kernel supports (a head dim) is bad input whatever the machine has.
    let early = Plan::from_args(&args.configs)?;
    for c in &early.configs {
        let setup = early.setup(c)?;
        for deterministic in [true, false] {
            crate::gpu::check_kernel_support(&setup.problem, &setup.mask, deterministic)?;
        }
    }
    let round_numbers = args.rounds.numbers()?;
    let nvcc = find_nvcc()?;
    let device = probe_device()?;
    let target = Target::for_device(args.gpu.arch, &device)?;
    let plan = Plan::from_args(&args.configs.for_main_loop(target.main_loop))?;
    let configs: Vec<(Config, Setup)> = plan.configs.iter().map(|c| Ok((*c, plan.setup(c)?))).collect::<Result<_>>()?;
    // Every configuration: a costs file's entries differ by head dim and tiles (`kv_load_overlap`, `dq_deferred`).
    for (_, setup) in &configs {
        crate::gpu::check_setup_costs(setup, &target)?;
    }
    std::fs::create_dir_all(&args.out).map_err(|e| bad_input(format!("cannot create {}: {e}", args.out.display())))?;
    // Build every kernel variant up front, in parallel.
    let mut kernel_configs = Vec::new();
    for (_, setup) in &configs {
        for det in [true, false] {
            let c = kernel_config(&setup.problem, &setup.mask, det, &target)?;
            if !kernel_configs.contains(&c) {
                kernel_configs.push(c);
            }
        }
    }
    eprintln!("bench: building {} kernel variants", kernel_configs.len());
    prebuild(&nvcc, &args.gpu.work_dir, &kernel_configs, &target.env)?;

    let rounds = args.rounds.count;
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(configs.len() as u64 * u64::from(rounds));
        bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} [{elapsed}]").expect("valid template"));
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut results: Vec<ConfigResult> = configs
        .iter()
        .map(|(c, _)| ConfigResult {
            head_dim: c.head_dim,
            mask: mask_name(c.mask),
            seqlen: c.seqlen,
            batch: c.batch,
            heads: c.heads,
            results: Vec::new(),
            skipped: Vec::new(),
        })
        .collect();
    for round in round_numbers.clone() {
        let (order, reverse) = round_order(configs.len(), round);
        for i in order {
            let (c, setup) = &configs[i];
            let mut label = format!("head dim {}, {} mask, seqlen {}", c.head_dim, mask_name(c.mask), c.seqlen);
            if args.rounds.numbered() {
                label = format!("round {round} of {}, {label}", round_numbers.end());
            }
            bar.set_message(label.clone());
            if bar.is_hidden() {
                eprintln!("bench: {label}");
            }
            let outcomes =
                measure_setup(setup, &args.gpu, &target, &nvcc, true, reverse).with_context(|| label.clone())?;
            for o in outcomes {
                match o {
                    Outcome::Done(measured) => results[i].results.push(RoundMeasured { round, measured }),
                    // Applicability does not change between rounds.
                    Outcome::Skipped { schedule, reason } if round == args.rounds.first_round => {
                        results[i].skipped.push((schedule.to_string(), reason))
                    }
                    Outcome::Skipped { .. } => {}
                }
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();

    let (_, date, commit) = crate::commands::calibrate::provenance();
    let doc = BenchJson {
        schema_version: SCHEMA_VERSION,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        date: date.clone(),
        commit,
        device: &device,
        arch: target.describe(),
        launch: plan.base_launch().name(),
        rounds,
        first_round: args.rounds.first_round,
        configs: results,
    };
    let slug: String = device.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let stamp: String = date.chars().filter(|c| c.is_ascii_digit()).collect();
    let path = args.out.join(format!("bench-{stamp}-{slug}.json"));
    write_file(&path, &serde_json::to_string_pretty(&doc)?)?;

    let mean = if rounds > 1 { format!(", TFLOPS the mean of {rounds} rounds") } else { String::new() };
    outln!("{} main loop, {} launch{mean}", target.describe(), doc.launch);
    out!("{}", bench_table(&doc.configs, rounds));
    if doc.configs.iter().any(|c| anchor(c.head_dim, c.mask == "causal", c.seqlen, c.batch).is_some()) {
        outln!("{ANCHORS_NOTE}");
    }
    outln!("\nraw results: {}", path.display());
    let numbered = args.rounds.numbered();
    let failed: Vec<String> = doc
        .configs
        .iter()
        .flat_map(|c| {
            c.results.iter().filter(|r| !r.measured.ok()).map(move |r| {
                let round = if numbered { format!(" (round {})", r.round) } else { String::new() };
                format!("hd{} {} {} {}{round}", c.head_dim, c.mask, c.seqlen, r.measured.schedule)
            })
        })
        .collect();
    if !failed.is_empty() {
        return Err(anyhow::Error::new(CheckFailed(format!("check failed for {}", failed.join("; ")))));
    }
    Ok(())
}

/// One schedule's measurements over the rounds, in round order.
struct ScheduleRounds<'a> {
    schedule: &'a str,
    rounds: Vec<&'a Measured>,
}

/// The results of one configuration grouped by schedule, in the order of their first measurement.
fn by_schedule(results: &[RoundMeasured]) -> Vec<ScheduleRounds<'_>> {
    let mut groups: Vec<ScheduleRounds> = Vec::new();
    for r in results {
        match groups.iter_mut().find(|g| g.schedule == r.measured.schedule) {
            Some(g) => g.rounds.push(&r.measured),
            None => groups.push(ScheduleRounds { schedule: &r.measured.schedule, rounds: vec![&r.measured] }),
        }
    }
    groups
}

/// A result's whole-backward TFLOPS, or None when it failed: the timing of a kernel whose outputs are wrong is no
/// measurement of the schedule (the JSON keeps it).
fn passed_tflops(r: &HarnessResult) -> Option<f64> {
    if r.status == "ok" { r.tflops.total } else { None }
}

/// The mean of the values, or None when any round has none (it failed): a mean over the rounds that happened to
/// pass would read as a measurement of the schedule.
fn mean_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let values: Option<Vec<f64>> = values.collect();
    values.filter(|v| !v.is_empty()).map(|v| v.iter().sum::<f64>() / v.len() as f64)
}

/// The first failure of any round: the deterministic build's, then the atomic one's, then their comparison.
fn status_cell(rounds: &[&Measured]) -> String {
    if let Some(s) = rounds.iter().map(|m| &m.deterministic.status).find(|s| *s != "ok") {
        return s.clone();
    }
    if let Some(s) = rounds.iter().filter_map(|m| m.nondeterministic.as_ref()).map(|r| &r.status).find(|s| *s != "ok") {
        return format!("atomic {s}");
    }
    if rounds.iter().any(|m| m.vs_nondeterministic.as_ref().is_some_and(|a| !a.ok)) {
        return "vs atomic failed".into();
    }
    "ok".into()
}

/// The deterministic build's SM clock over its timed runs: the mean of the rounds' medians, how many samples a
/// power or thermal limit held down, and the board power (the mean of the rounds' medians, where every round has
/// one); "-" where the harness could not read NVML.
fn clock_cell(rounds: &[&Measured]) -> String {
    let clocks: Option<Vec<&Clocks>> = rounds.iter().map(|m| m.deterministic.clocks.as_ref()).collect();
    match clocks {
        Some(c) if !c.is_empty() => {
            let mhz = c.iter().map(|c| c.sm_mhz_median).sum::<f64>() / c.len() as f64;
            let limited: u32 = c.iter().map(|c| c.limited).sum();
            let samples: u32 = c.iter().map(|c| c.samples).sum();
            let watts: Option<Vec<f64>> = c.iter().map(|c| c.power_w_median).collect();
            match watts {
                Some(w) => format!("{mhz:.0} ({limited}/{samples}) {:.0} W", w.iter().sum::<f64>() / w.len() as f64),
                None => format!("{mhz:.0} ({limited}/{samples})"),
            }
        }
        _ => "-".into(),
    }
}

/// Per configuration and schedule: deterministic and atomic TFLOPS (the mean over the rounds, with the range of
/// the deterministic one when there are several), the cost of determinism, and the anchors.
fn bench_table(configs: &[ConfigResult], rounds: u32) -> String {
    let mut rows = Vec::new();
    // The rested and sustained columns, where any deterministic result timed a long enough series.
    let series =
        configs.iter().flat_map(|c| &c.results).any(|r| r.measured.deterministic.rested_and_sustained().is_some());
    let fmt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    for c in configs {
        let a = anchor(c.head_dim, c.mask == "causal", c.seqlen, c.batch);
        let groups = by_schedule(&c.results);
        let det_of = |g: &ScheduleRounds| mean_of(g.rounds.iter().map(|m| passed_tflops(&m.deterministic)));
        let best_det = groups.iter().filter_map(det_of).fold(0.0, f64::max);
        for g in &groups {
            let det = det_of(g);
            let atomic = mean_of(g.rounds.iter().map(|m| m.nondeterministic.as_ref().and_then(passed_tflops)));
            let cost = match (det, atomic) {
                (Some(d), Some(n)) if n > 0.0 => format!("{:.1}%", (1.0 - d / n) * 100.0),
                _ => "-".into(),
            };
            let best = det == Some(best_det);
            // The worst round: a failed comparison first, then the largest distance (NaN, no comparison, as the
            // largest).
            let agreement = g.rounds.iter().filter_map(|m| m.vs_nondeterministic.as_ref()).max_by(|x, y| {
                let key = |a: &Agreement| (!a.ok, if a.worst().is_nan() { f64::INFINITY } else { a.worst() });
                let (kx, ky) = (key(x), key(y));
                kx.0.cmp(&ky.0).then(kx.1.total_cmp(&ky.1))
            });
            let mut row = vec![
                format!("{} {} {}", c.head_dim, c.mask, c.seqlen),
                format!("{}{}", g.schedule, if best { " *" } else { "" }),
                fmt(det),
            ];
            if rounds > 1 {
                // Only where every round passed, as the mean.
                let values: Option<Vec<f64>> = g.rounds.iter().map(|m| passed_tflops(&m.deterministic)).collect();
                row.push(match values {
                    Some(v) if !v.is_empty() => {
                        format!(
                            "{:.1} .. {:.1}",
                            v.iter().copied().fold(f64::INFINITY, f64::min),
                            v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                        )
                    }
                    _ => "-".into(),
                });
            }
            if series {
                // The mean over the rounds, where every round has a series.
                let pair = |pick: fn((f64, f64)) -> f64| {
                    mean_of(g.rounds.iter().map(|m| m.deterministic.rested_and_sustained().map(pick)))
                };
                row.extend([fmt(pair(|p| p.0)), fmt(pair(|p| p.1))]);
            }
            row.extend([
                fmt(atomic),
                cost,
                agreement.map_or("-".into(), Agreement::table_cell),
                if g.rounds.iter().all(|m| m.deterministic.repeatable) { "yes".into() } else { "NO".into() },
                status_cell(&g.rounds),
                clock_cell(&g.rounds),
                a.map_or("-".into(), |a| format!("{:.0}", a.fa4_deterministic)),
                a.map_or("-".into(), |a| format!("{:.0}", a.fa4)),
                a.map_or("-".into(), |a| format!("{:.0}", a.fa2)),
                match (det, a) {
                    (Some(d), Some(a)) => format!("{:+.0}%", (d / a.fa4_deterministic - 1.0) * 100.0),
                    _ => "-".into(),
                },
            ]);
            rows.push(row);
        }
    }
    let mut headers = vec!["hd mask seqlen", "schedule (* best)", "det TFLOPS"];
    if rounds > 1 {
        headers.push("det range");
    }
    if series {
        headers.extend(["det rested", "det sustained"]);
    }
    headers.extend([
        "atomic TFLOPS",
        "det cost",
        "vs atomic",
        "bitwise rep",
        "status",
        "det SM MHz (limited) power",
        "FA4 det",
        "FA4",
        "FA2",
        "vs FA4 det",
    ]);
    table(&headers, &rows)
}
