//! `dashc calibrate`: trace a few configurations x schedules on the GPU and fit the cost model (µs) with
//! robust statistics (`schedulers::calibrate`); one entry per (head dim, tile sizes), det variant.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;

use crate::args::{CalibrateArgs, ConfigsArgs, LaunchArg, ShapeOnly};
use crate::costs_file::{CalibrationRun, CostsEntry, CostsFile};
use crate::exit::bad_input;
use crate::gpu::prebuild;
use crate::gpu::{Target, find_nvcc, probe_device};
use crate::output::table;
use crate::sweep::{Plan, mask_name};
use crate::traced::{run_traced, trace_config};
use schedulers::calibrate::Samples;

/// Tool version, date and commit, for the files a GPU run writes.
pub fn provenance() -> (String, String, String) {
    let sh = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let date = sh("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]).unwrap_or_else(|| "unknown".into());
    // DASHC_COMMIT when given, else the commit the binary was built from (build.rs): the binary usually runs on
    // another machine than it was built on, whose copy of the repository may name an older commit.
    let commit = std::env::var("DASHC_COMMIT")
        .ok()
        .or_else(|| Some(BUILD_COMMIT.to_string()).filter(|c| c != "unknown"))
        .or_else(|| sh("git", &["rev-parse", "--short", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    (format!("dashc {}", env!("CARGO_PKG_VERSION")), date, commit)
}

/// The commit this binary was built from ("unknown" when built outside a git checkout).
pub const BUILD_COMMIT: &str = env!("DASHC_BUILD_COMMIT");

pub fn run(args: CalibrateArgs) -> Result<()> {
    let base = ShapeOnly::try_parse_from(["dashc"]).context("default shape flags")?.shape;
    let configs_args = ConfigsArgs {
        seqlens: args.seqlens.clone(),
        head_dims: args.head_dims.clone(),
        masks: args.masks.clone(),
        schedules: args.schedules.clone(),
        tokens: args.tokens,
        hidden: args.hidden,
        sms: args.sms,
        launch: Some(LaunchArg::InOrder),
        costs: base.costs,
    };
    let plan = Plan::from_args(&configs_args)?;
    crate::output::check_writable(&args.out)?;
    if let Some(dir) = &args.keep_traces {
        std::fs::create_dir_all(dir).map_err(|e| bad_input(format!("cannot create {}: {e}", dir.display())))?;
    }
    let nvcc = find_nvcc()?;
    let device = probe_device()?;
    let target = Target::for_device(args.gpu.arch, &device)?;

    // Every (configuration, schedule) to trace, with its schedule built now so bad names fail before the GPU.
    let mut jobs = Vec::new();
    for c in &plan.configs {
        let setup = plan.setup(c)?;
        for &kind in &setup.schedules {
            if kind.check_applicable(&setup.problem, &setup.mask).is_err() {
                continue;
            }
            let schedule =
                kind.build(setup.problem, setup.mask.clone(), setup.tile_mask.clone(), setup.machine, &setup.costs)?;
            jobs.push((*c, schedule));
        }
    }
    if jobs.is_empty() {
        return Err(bad_input("no schedule applies to the configurations given"));
    }
    let mut configs = Vec::new();
    for (_, s) in &jobs {
        let k = trace_config(s, &target)?;
        if !configs.contains(&k) {
            configs.push(k);
        }
    }
    eprintln!("calibrate: building {} trace variants", configs.len());
    prebuild(&nvcc, &args.gpu.work_dir, &configs, &target.env)?;

    let mut groups: BTreeMap<(u32, u32, u32), (Samples, Vec<CalibrationRun>)> = BTreeMap::new();
    for (c, schedule) in &jobs {
        let p = schedule.problem();
        let label =
            format!("{} mask, head dim {}, seqlen {}, {}", mask_name(c.mask), c.head_dim, c.seqlen, schedule.name());
        eprintln!("calibrate: {label}");
        let raw: PathBuf = match &args.keep_traces {
            Some(dir) => {
                dir.join(format!("trace-hd{}-{}-s{}-{}.txt", c.head_dim, mask_name(c.mask), c.seqlen, schedule.name()))
            }
            None => args.gpu.work_dir.join("calibrate-trace.txt"),
        };
        let run = run_traced(schedule, &args.gpu, &target, &nvcc, &raw, args.keep_traces.is_some())
            .with_context(|| label.clone())?;
        let group = groups.entry((p.head_dim(), p.block_m(), p.block_n())).or_insert_with(|| {
            (
                Samples {
                    dq_writers: target.main_loop.dq_writers(),
                    dq_deferred: target.main_loop.dq_deferred(),
                    ..Samples::default()
                },
                Vec::new(),
            )
        });
        group.0.add_run(schedule, &run.trace.units).map_err(|e| bad_input(format!("{label}: {e}")))?;
        group.1.push(CalibrationRun {
            mask: mask_name(c.mask).to_string(),
            batch: c.batch,
            heads: c.heads,
            seqlen: c.seqlen,
            schedule: schedule.name().to_string(),
            traced_main_ms: run.result.time_ms.main_median,
            trace_makespan_us: run.trace.makespan(),
        });
    }
    let mut entries = Vec::new();
    for ((head_dim, block_m, block_n), (samples, runs)) in groups {
        let fit = samples.fit().map_err(|e| bad_input(format!("head dim {head_dim}: {e}")))?;
        entries.push(CostsEntry {
            head_dim,
            block_m,
            block_n,
            variant: "det".into(),
            costs: fit.costs,
            fit,
            calibrated_on: runs,
        });
    }
    let (tool, date, commit) = provenance();
    let file = CostsFile::new(&device.name, format!("{tool}, {date}, commit {commit}"), entries);
    file.save(&args.out)?;
    println!("{}", summary(&file));
    eprintln!("costs written to {}", args.out.display());
    Ok(())
}

/// The fitted costs as a table (µs): trimmed mean, with median and 10th-90th percentiles.
pub fn summary(file: &CostsFile) -> String {
    let mut rows = Vec::new();
    for e in &file.entries {
        let f = &e.fit;
        let mut add = |what: &str, s: Option<&schedulers::calibrate::Stat>| {
            if let Some(s) = s {
                rows.push(vec![
                    format!("hd{} {}x{}", e.head_dim, e.block_m, e.block_n),
                    what.to_string(),
                    format!("{:.3}", s.trimmed_mean),
                    format!("{:.3}", s.median),
                    format!("{:.3} .. {:.3}", s.p10, s.p90),
                    s.n.to_string(),
                ]);
            }
        };
        add("compute (full tile)", Some(&f.compute_full));
        add("compute (partial tile)", f.compute_partial.as_ref());
        add("reduce", Some(&f.reduce));
        add("hand-off", Some(&f.handoff));
        if let Some(sp) = &f.handoff_split {
            add("hand-off, near", Some(&sp.near));
            add("hand-off, far", Some(&sp.far));
        }
        add("poll (early read missed)", f.poll.as_ref());
        add("unit load (K, V)", Some(&f.unit_load));
        add("first compute, extra", f.first_compute_excess.as_ref());
        add("CTA dispatch gap", f.dispatch_gap.as_ref());
        add("unit finish", Some(&f.unit_finish));
    }
    format!(
        "costs calibrated on {} (µs; the model uses the {}%-trimmed mean)\n{}",
        file.gpu,
        schedulers::calibrate::TRIM * 100.0,
        table(&["kernel", "phase", "trimmed mean", "median", "p10 .. p90", "samples"], &rows)
    )
}
