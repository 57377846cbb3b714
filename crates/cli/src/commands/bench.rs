//! `dashc bench`: the paper's 24 configurations x applicable schedules on the GPU, deterministic and not, with
//! the raw results written as JSON under bench/results/ and a table beside the anchor figures.

use std::io::IsTerminal;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::agreement::Agreement;
use crate::anchors::anchor;
use crate::args::BenchArgs;
use crate::exit::{CheckFailed, bad_input};
use crate::gpu::{Device, Target, find_nvcc, kernel_config, prebuild, probe_device};
use crate::measure::{Measured, measure_setup};
use crate::output::{SCHEMA_VERSION, table, write_file};
use crate::setup::{Outcome, Setup};
use crate::sweep::{Config, Plan, mask_name};

#[derive(Serialize)]
struct ConfigResult {
    head_dim: u32,
    mask: &'static str,
    seqlen: u32,
    batch: u32,
    heads: u32,
    results: Vec<Measured>,
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
    configs: Vec<ConfigResult>,
}

pub fn run(args: BenchArgs) -> Result<()> {
    // Bad flags answer before the GPU probe; the launch default depends on the main loop, known after it.
    Plan::from_args(&args.configs)?;
    let nvcc = find_nvcc()?;
    let device = probe_device()?;
    let target = Target::for_device(args.gpu.arch, &device)?;
    let plan = Plan::from_args(&args.configs.for_main_loop(target.main_loop))?;
    let configs: Vec<(Config, Setup)> = plan.configs.iter().map(|c| Ok((*c, plan.setup(c)?))).collect::<Result<_>>()?;
    if let Some((_, setup)) = configs.first()
        && let Some(c) = &setup.calibrated
    {
        crate::gpu::check_costs_main_loop(&setup.costs, &c.path, &target)?;
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

    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(configs.len() as u64);
        bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} [{elapsed}]").expect("valid template"));
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut results = Vec::new();
    for (c, setup) in &configs {
        let label = format!("head dim {}, {} mask, seqlen {}", c.head_dim, mask_name(c.mask), c.seqlen);
        bar.set_message(label.clone());
        if bar.is_hidden() {
            eprintln!("bench: {label}");
        }
        let outcomes = measure_setup(setup, &args.gpu, &target, &nvcc, true).with_context(|| label.clone())?;
        let mut done = Vec::new();
        let mut skipped = Vec::new();
        for o in outcomes {
            match o {
                Outcome::Done(m) => done.push(m),
                Outcome::Skipped { schedule, reason } => skipped.push((schedule.to_string(), reason)),
            }
        }
        results.push(ConfigResult {
            head_dim: c.head_dim,
            mask: mask_name(c.mask),
            seqlen: c.seqlen,
            batch: c.batch,
            heads: c.heads,
            results: done,
            skipped,
        });
        bar.inc(1);
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
        configs: results,
    };
    let slug: String = device.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let stamp: String = date.chars().filter(|c| c.is_ascii_digit()).collect();
    let path = args.out.join(format!("bench-{stamp}-{slug}.json"));
    write_file(&path, &serde_json::to_string_pretty(&doc)?)?;

    println!("{} main loop, {} launch", target.describe(), doc.launch);
    print!("{}", bench_table(&doc.configs));
    println!("\nraw results: {}", path.display());
    let failed: Vec<String> = doc
        .configs
        .iter()
        .flat_map(|c| {
            c.results
                .iter()
                .filter(|m| !m.ok())
                .map(move |m| format!("hd{} {} {} {}", c.head_dim, c.mask, c.seqlen, m.schedule))
        })
        .collect();
    if !failed.is_empty() {
        return Err(anyhow::Error::new(CheckFailed(format!("check failed for {}", failed.join("; ")))));
    }
    Ok(())
}

/// Per configuration and schedule: deterministic and atomic TFLOPS, the cost of determinism, and the anchors.
fn bench_table(configs: &[ConfigResult]) -> String {
    let mut rows = Vec::new();
    let fmt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    for c in configs {
        let a = anchor(c.head_dim, c.mask == "causal", c.seqlen, c.batch);
        let best_det = c.results.iter().filter_map(|m| m.deterministic.tflops.total).fold(0.0, f64::max);
        for m in &c.results {
            let det = m.deterministic.tflops.total;
            let atomic = m.nondeterministic.as_ref().and_then(|r| r.tflops.total);
            let cost = match (det, atomic) {
                (Some(d), Some(n)) if n > 0.0 => format!("{:.1}%", (1.0 - d / n) * 100.0),
                _ => "-".into(),
            };
            let best = det == Some(best_det);
            rows.push(vec![
                format!("{} {} {}", c.head_dim, c.mask, c.seqlen),
                format!("{}{}", m.schedule, if best { " *" } else { "" }),
                fmt(det),
                fmt(atomic),
                cost,
                m.vs_nondeterministic.as_ref().map_or("-".into(), Agreement::table_cell),
                if m.deterministic.repeatable { "yes".into() } else { "NO".into() },
                m.deterministic.status.clone(),
                a.map_or("-".into(), |a| format!("{:.0}", a.fa4_deterministic)),
                a.map_or("-".into(), |a| format!("{:.0}", a.fa4)),
                a.map_or("-".into(), |a| format!("{:.0}", a.fa2)),
                match (det, a) {
                    (Some(d), Some(a)) => format!("{:+.0}%", (d / a.fa4_deterministic - 1.0) * 100.0),
                    _ => "-".into(),
                },
            ]);
        }
    }
    let headers = [
        "hd mask seqlen",
        "schedule (* best)",
        "det TFLOPS",
        "atomic TFLOPS",
        "det cost",
        "vs atomic",
        "bitwise rep",
        "status",
        "FA4 det",
        "FA4",
        "FA2",
        "vs FA4 det",
    ];
    table(&headers, &rows)
}
