//! `dashc calibrate`: trace a few configurations x schedules on the GPU and fit the cost model (µs) with
//! robust statistics (`schedulers::calibrate`); one entry per (head dim, tile sizes), det variant.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;

use crate::args::{CalibrateArgs, ConfigsArgs, LaunchArg, ShapeOnly};
use crate::costs_file::{CalibrationRun, CostsEntry, CostsFile, ProbeRun};
use crate::exit::bad_input;
use crate::gpu::prebuild;
use crate::gpu::{Target, find_nvcc, probe_device};
use crate::output::table;
use crate::sweep::{Plan, mask_name};
use crate::traced::{run_traced, trace_config};
use codegen::MainLoop;
use schedulers::calibrate::{MemoryProbe, Samples};
use schedulers::calibrate::{Phases, Stat};

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

/// Where the traces come from: the GPU (built and run now), or the files an earlier `--keep-traces DIR` kept.
enum Source {
    Gpu { nvcc: PathBuf, device: crate::gpu::Device, target: Target },
    Kept { dir: PathBuf, gpu_name: String },
}

/// The file name a traced (configuration, schedule) is kept under in `--keep-traces DIR`.
fn trace_file_name(c: &crate::sweep::Config, schedule: &schedulers::Schedule) -> String {
    // In-order traces keep the names they had before the launch could be chosen.
    let launch = match schedule.machine().launch {
        schedulers::LaunchPolicy::InOrder => String::new(),
        other => format!("-{}", other.name()),
    };
    format!("trace-hd{}-{}-s{}-{}{launch}.txt", c.head_dim, mask_name(c.mask), c.seqlen, schedule.name())
}

/// The GPU's name in a trace folder, written by `--keep-traces` (a fitted costs file names its GPU).
const DEVICE_FILE: &str = "device.txt";

/// The calibration's configurations and shared flags.
fn plan(args: &CalibrateArgs) -> Result<Plan> {
    let base = ShapeOnly::try_parse_from(["dashc"]).context("default shape flags")?.shape;
    let configs_args = ConfigsArgs {
        seqlens: args.seqlens.clone(),
        head_dims: args.head_dims.clone(),
        masks: args.masks.clone(),
        schedules: args.schedules.clone(),
        tokens: args.tokens,
        hidden: args.hidden,
        sms: args.sms,
        launch: Some(args.launch),
        max_heads_in_flight: None,
        iterations: None,
        search_seed: None,
        split_tail: false,
        costs: base.costs,
    };
    Plan::from_args(&configs_args)
}

/// Every (configuration, schedule) to trace, with its schedule built now so that bad names fail before the GPU.
fn jobs(plan: &Plan) -> Result<Vec<(crate::sweep::Config, schedulers::Schedule)>> {
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
    Ok(jobs)
}

/// The memory probes' sequence lengths (`--memory-probes`): none for "none".
fn probe_seqlens(args: &CalibrateArgs) -> Result<Vec<u32>> {
    if args.memory_probes.trim() == "none" {
        return Ok(Vec::new());
    }
    let mut seqlens = Vec::new();
    for item in args.memory_probes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let seqlen: u32 = item.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
            bad_input(format!("--memory-probes: '{item}' is not a positive sequence length (or give \"none\")"))
        })?;
        if seqlen > args.tokens {
            return Err(bad_input(format!(
                "--memory-probes: {seqlen} is longer than --tokens {} (batch = tokens / seqlen would be 0)",
                args.tokens
            )));
        }
        if !seqlens.contains(&seqlen) {
            seqlens.push(seqlen);
        }
    }
    if seqlens.is_empty() {
        return Err(bad_input("--memory-probes is empty: give sequence lengths, or \"none\""));
    }
    seqlens.sort_unstable();
    Ok(seqlens)
}

/// Every memory probe: for each head dim and mask of the calibration and each probe length, the built-in
/// schedule of that mask (symmetric-shift at causal masks, shift at full ones). Checked here, before the GPU is
/// looked for; built by [`probe_jobs`] once the launch is known.
fn probe_configs(plan: &Plan, seqlens: &[u32]) -> Result<Vec<(crate::sweep::Config, schedulers::ScheduleKind)>> {
    let mut kinds: Vec<(crate::args::MaskArg, u32)> = Vec::new();
    for c in &plan.configs {
        if !kinds.contains(&(c.mask, c.head_dim)) {
            kinds.push((c.mask, c.head_dim));
        }
    }
    let mut probes = Vec::new();
    for (mask, head_dim) in kinds {
        for &seqlen in seqlens {
            let c = crate::sweep::Config {
                mask,
                head_dim,
                heads: plan.hidden / head_dim,
                seqlen,
                batch: plan.tokens / seqlen,
            };
            let setup = plan.setup(&c)?;
            let kind = match mask {
                crate::args::MaskArg::Causal => schedulers::ScheduleKind::SymmetricShift,
                _ => schedulers::ScheduleKind::Shift,
            };
            if kind.check_applicable(&setup.problem, &setup.mask).is_err() {
                let block_n = setup.problem.block_n();
                return Err(bad_input(format!(
                    "--memory-probes: seqlen {seqlen} gives {} KV tiles of {block_n} at head dim {head_dim}, and the \
                     causal probe (symmetric-shift) needs an even count: use a multiple of {}",
                    setup.problem.n_tiles(),
                    2 * block_n
                )));
            }
            probes.push((c, kind));
        }
    }
    Ok(probes)
}

/// The memory probes' schedules, with the launch `run` and `bench` use for `main_loop`: the roof fitted on them
/// joins those predictions.
fn probe_jobs(
    plan: &Plan,
    probes: &[(crate::sweep::Config, schedulers::ScheduleKind)],
    main_loop: MainLoop,
) -> Result<Vec<(crate::sweep::Config, schedulers::Schedule)>> {
    let mut jobs = Vec::new();
    for &(c, kind) in probes {
        let setup = plan.setup(&c)?;
        let machine = schedulers::Machine { launch: main_loop.default_launch(), ..setup.machine };
        jobs.push((c, kind.build(setup.problem, setup.mask.clone(), setup.tile_mask.clone(), machine, &setup.costs)?));
    }
    Ok(jobs)
}

/// Only the sm90 main loop has a persistent launch (the portable one launches a CTA per unit).
fn check_launch(args: &CalibrateArgs, main_loop: MainLoop) -> Result<()> {
    if args.launch == LaunchArg::Persistent && main_loop.dq_writers() == 0 {
        return Err(bad_input(
            "--launch persistent: only the sm90 main loop has a persistent launch, and this calibration would trace \
             the portable one (--arch sm80, or a GPU without sm_90a)",
        ));
    }
    Ok(())
}

pub fn run(args: CalibrateArgs) -> Result<()> {
    let plan = plan(&args)?;
    let jobs = jobs(&plan)?;
    let probe_configs = probe_configs(&plan, &probe_seqlens(&args)?)?;
    crate::output::check_writable(&args.out)?;
    if let Some(dir) = &args.keep_traces {
        std::fs::create_dir_all(dir).map_err(|e| bad_input(format!("cannot create {}: {e}", dir.display())))?;
    }
    let (source, main_loop, probes) = match &args.from_traces {
        Some(dir) => {
            let arch = args.gpu.arch.ok_or_else(|| {
                bad_input("--from-traces needs --arch: the main loop whose trace build wrote the traces (sm80 or sm90)")
            })?;
            check_launch(&args, arch.main_loop())?;
            if !dir.is_dir() {
                return Err(bad_input(format!("--from-traces: {} is not a folder", dir.display())));
            }
            let probes = probe_jobs(&plan, &probe_configs, arch.main_loop())?;
            let wanted = jobs.len() + probes.len();
            let missing: Vec<String> = jobs
                .iter()
                .chain(&probes)
                .map(|(c, s)| trace_file_name(c, s))
                .filter(|f| !dir.join(f).is_file())
                .collect();
            if let Some(first) = missing.first() {
                // The folders kept in bench/results/ hold their traces gzipped: say so rather than "missing".
                let gzipped = missing.iter().filter(|f| dir.join(format!("{f}.gz")).is_file()).count();
                let probes_only = missing.iter().all(|f| probes.iter().any(|(c, s)| trace_file_name(c, s) == *f));
                let hint = if gzipped == missing.len() {
                    format!("; they are there gzipped ({first}.gz): gunzip them first")
                } else if probes_only {
                    "; they are memory probes: give the --memory-probes of the --keep-traces run, or \"none\" (kept \
                     before probes existed)"
                        .to_string()
                } else {
                    "; give the configuration flags of the --keep-traces run".to_string()
                };
                return Err(bad_input(format!(
                    "--from-traces: {} of the {} traces these flags call for are not in {} (first: {first}){hint}",
                    missing.len(),
                    wanted,
                    dir.display()
                )));
            }
            let gpu_name = std::fs::read_to_string(dir.join(DEVICE_FILE))
                .ok()
                .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
                .filter(|l| !l.is_empty())
                .unwrap_or_else(|| format!("unknown GPU (traces in {})", dir.display()));
            (Source::Kept { dir: dir.clone(), gpu_name }, arch.main_loop(), probes)
        }
        None => {
            // A shape no kernel supports (a head dim) is bad input whatever the machine has.
            for (_, schedule) in &jobs {
                crate::gpu::check_kernel_support(schedule.problem(), schedule.mask(), true)?;
            }
            let nvcc = find_nvcc()?;
            let device = probe_device()?;
            let target = Target::for_device(args.gpu.arch, &device)?;
            check_launch(&args, target.main_loop)?;
            let probes = probe_jobs(&plan, &probe_configs, target.main_loop)?;
            for (_, schedule) in &probes {
                crate::gpu::check_kernel_support(schedule.problem(), schedule.mask(), true)?;
            }
            let mut configs = Vec::new();
            for (_, s) in jobs.iter().chain(&probes) {
                let k = trace_config(s, &target)?;
                if !configs.contains(&k) {
                    configs.push(k);
                }
            }
            eprintln!("calibrate: building {} trace variants", configs.len());
            prebuild(&nvcc, &args.gpu.work_dir, &configs, &target.env)?;
            if let Some(dir) = &args.keep_traces {
                let path = dir.join(DEVICE_FILE);
                std::fs::write(&path, format!("{}\n", device.name))
                    .map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))?;
            }
            let main_loop = target.main_loop;
            (Source::Gpu { nvcc, device, target }, main_loop, probes)
        }
    };

    let mut groups: BTreeMap<(u32, u32, u32), (Samples, Vec<CalibrationRun>)> = BTreeMap::new();
    // Each probe's configuration, schedule, trace makespan (µs) and trace build's main-kernel time (ms, GPU runs).
    let mut probe_traces: Vec<(&crate::sweep::Config, &schedulers::Schedule, f64, Option<f64>)> = Vec::new();
    for (index, (c, schedule)) in jobs.iter().chain(&probes).enumerate() {
        let p = schedule.problem();
        let is_probe = index >= jobs.len();
        let label = format!(
            "{}{} mask, head dim {}, seqlen {}, {}",
            if is_probe { "memory probe: " } else { "" },
            mask_name(c.mask),
            c.head_dim,
            c.seqlen,
            schedule.name()
        );
        eprintln!("calibrate: {label}");
        let (trace, traced_main_ms) = match &source {
            Source::Gpu { nvcc, target, .. } => {
                let raw: PathBuf = match &args.keep_traces {
                    Some(dir) => dir.join(trace_file_name(c, schedule)),
                    None => args.gpu.work_dir.join("calibrate-trace.txt"),
                };
                let run = run_traced(schedule, &args.gpu, target, nvcc, &raw, args.keep_traces.is_some())
                    .with_context(|| label.clone())?;
                (run.trace, run.result.time_ms.main_median)
            }
            Source::Kept { dir, .. } => {
                let path = dir.join(trace_file_name(c, schedule));
                let trace = crate::trace::load(&path)?;
                trace.check_matches(schedule, &path.display().to_string())?;
                // Only the sm90 loop's trace build stamps the consumers' own end of a unit: a trace that has it
                // (or lacks it) tells which main loop wrote it, and the fit must read it with that loop's model.
                let sm90_trace = trace.units.iter().all(|u| u.compute_end.is_some());
                if sm90_trace != (main_loop.dq_writers() > 0) {
                    let (wrote, arch) = if sm90_trace { ("sm90", "sm90") } else { ("portable", "sm80") };
                    return Err(bad_input(format!(
                        "{} was written by the {wrote} main loop's trace build: give --arch {arch}",
                        path.display()
                    )));
                }
                // The harness's time of the trace build is not in the trace: the report's overhead table skips it.
                (trace, None)
            }
        };
        if is_probe {
            // Kept apart from the phase costs: its memory-side phases stretch, which is what it is there to show.
            probe_traces.push((c, schedule, trace.makespan(), traced_main_ms));
            continue;
        }
        let group = groups.entry((p.head_dim(), p.block_m(), p.block_n())).or_insert_with(|| {
            (
                Samples {
                    dq_writers: main_loop.dq_writers(),
                    dq_deferred: main_loop.dq_deferred(p.block_m()),
                    kv_load_overlap: main_loop.kv_load_overlap(p.block_m(), p.head_dim()),
                    ..Samples::default()
                },
                Vec::new(),
            )
        });
        group.0.add_run(schedule, &trace.units).map_err(|e| bad_input(format!("{label}: {e}")))?;
        group.1.push(CalibrationRun {
            mask: mask_name(c.mask).to_string(),
            batch: c.batch,
            heads: c.heads,
            seqlen: c.seqlen,
            schedule: schedule.name().to_string(),
            traced_main_ms,
            trace_makespan_us: trace.makespan(),
        });
    }
    let mut entries = Vec::new();
    for ((head_dim, block_m, block_n), (samples, runs)) in groups {
        let mut fit = samples.fit().map_err(|e| bad_input(format!("head dim {head_dim}: {e}")))?;
        let mut memory_probes = Vec::new();
        for &(c, schedule, measured, traced_main_ms) in &probe_traces {
            let p = schedule.problem();
            if (p.head_dim(), p.block_m(), p.block_n()) != (head_dim, block_m, block_n) {
                continue;
            }
            memory_probes.push(ProbeRun {
                mask: mask_name(c.mask).to_string(),
                batch: c.batch,
                heads: c.heads,
                seqlen: c.seqlen,
                schedule: schedule.name().to_string(),
                launch: schedule.machine().launch,
                dram_bytes: schedulers::dram_bytes(p),
                simulated_us: schedulers::simulated_prediction(schedule, &fit.costs)?,
                trace_makespan_us: measured,
                traced_main_ms,
            });
        }
        fit.costs.memory_roof = fit_roof(&memory_probes);
        entries.push(CostsEntry {
            head_dim,
            block_m,
            block_n,
            variant: "det".into(),
            costs: fit.costs,
            fit,
            calibrated_on: runs,
            memory_probes,
        });
    }
    let (tool, date, commit) = provenance();
    let (gpu_name, gpu_uuid, from) = match &source {
        Source::Gpu { device, .. } => (device.name.clone(), device.uuid.clone(), String::new()),
        Source::Kept { dir, gpu_name } => (gpu_name.clone(), None, format!(", from the traces in {}", dir.display())),
    };
    let mut file = CostsFile::new(&gpu_name, format!("{tool}, {date}, commit {commit}{from}"), entries);
    file.gpu_uuid = gpu_uuid;
    file.traced_launch =
        Some(schedulers::LaunchPolicy::from(args.launch)).filter(|launch| *launch != schedulers::LaunchPolicy::InOrder);
    file.save(&args.out)?;
    outln!("{}", summary(&file));
    eprintln!("costs written to {}", args.out.display());
    Ok(())
}

/// The memory roof of a kernel build from its probes (`schedulers::calibrate::fit_memory_roof`).
fn fit_roof(probes: &[ProbeRun]) -> Option<schedulers::MemoryRoof> {
    let probes: Vec<MemoryProbe> = probes
        .iter()
        .map(|p| MemoryProbe { bytes: p.dram_bytes, simulated: p.simulated_us, measured: p.trace_makespan_us })
        .collect();
    schedulers::calibrate::fit_memory_roof(&probes, schedulers::MEMORY_ROOF_EXPONENT)
}

/// Every phase of a fit or a trace, named as the tables name them, with its statistics where it has samples.
pub fn named_phases(p: &Phases) -> Vec<(&'static str, Option<Stat>)> {
    let mut named = vec![
        ("compute (full tile)", p.compute_full),
        ("compute (partial tile)", p.compute_partial),
        ("reduce", p.reduce),
        ("hand-off", p.handoff),
    ];
    if let Some(sp) = &p.handoff_split {
        named.push(("hand-off, near", Some(sp.near)));
        named.push(("hand-off, far", Some(sp.far)));
    }
    named.extend([
        ("poll (early read missed)", p.poll),
        ("unit load (K, V)", p.unit_load),
        ("first compute, extra", p.first_compute_excess),
        ("CTA dispatch gap", p.dispatch_gap),
        ("unit finish", p.unit_finish),
    ]);
    named
}

/// The fitted costs as a table (µs): trimmed mean, with median and 10th-90th percentiles.
pub fn summary(file: &CostsFile) -> String {
    let mut rows = Vec::new();
    for e in &file.entries {
        for (what, s) in named_phases(&e.fit.phases()) {
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
        }
    }
    let mut text = format!(
        "costs calibrated on {} (µs; the model uses the {}%-trimmed mean)\n{}",
        file.gpu,
        schedulers::calibrate::TRIM * 100.0,
        table(&["kernel", "phase", "trimmed mean", "median", "p10 .. p90", "samples"], &rows)
    );
    text.push_str(&roof_summary(file));
    text
}

/// The memory probes and the roof fitted on them, per kernel build ("" where the calibration had none).
fn roof_summary(file: &CostsFile) -> String {
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    for e in file.entries.iter().filter(|e| !e.memory_probes.is_empty()) {
        let kernel = format!("hd{} {}x{}", e.head_dim, e.block_m, e.block_n);
        for p in &e.memory_probes {
            let predicted = e.costs.memory_roof.map(|r| r.blend(p.simulated_us, p.dram_bytes));
            // Without a roof, the simulation's own error.
            let error = (predicted.unwrap_or(p.simulated_us) / p.trace_makespan_us - 1.0) * 100.0;
            rows.push(vec![
                kernel.clone(),
                format!("{} s{} ({}x{}), {}, {}", p.mask, p.seqlen, p.batch, p.heads, p.schedule, p.launch.name()),
                format!("{:.0}", p.dram_bytes / 1e6),
                format!("{:.1}", p.simulated_us),
                predicted.map_or("-".into(), |t| format!("{t:.1}")),
                format!("{:.1}", p.trace_makespan_us),
                format!("{error:+.1}%"),
            ]);
        }
        verdicts.push(match e.costs.memory_roof {
            // bytes per µs = MB/s; / 1e6 gives TB/s.
            Some(r) => format!(
                "{kernel}: memory roof {:.2} TB/s effective (exponent {}), fitted on {} probes",
                r.bandwidth / 1e6,
                r.exponent,
                e.memory_probes.len()
            ),
            None => format!(
                "{kernel}: no memory roof: no roof fits the probes better than none (the error column is the \
                 simulation's)"
            ),
        });
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\nmemory probes (traced makespan against the simulation under these costs, µs; not in the phase costs)\n{}{}\n",
        table(&["kernel", "probe", "DRAM MB", "simulated", "with roof", "traced", "error"], &rows),
        verdicts.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use schedulers::CostModel;
    use schedulers::calibrate::simulated_stamps;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: CalibrateArgs,
    }

    fn args(dir: &std::path::Path, out: &std::path::Path) -> CalibrateArgs {
        let argv = [
            "dashc",
            "--seqlens",
            "1024",
            "--head-dims",
            "128",
            "--tokens",
            "2048",
            "--hidden",
            "384",
            "--sms",
            "10",
            "--arch",
            "sm90",
            "--from-traces",
            dir.to_str().unwrap(),
            "--memory-probes",
            "none",
            "-o",
            out.to_str().unwrap(),
        ];
        Cli::try_parse_from(argv).unwrap().args
    }

    /// Costs of the sm90 loop's model, from which the tests simulate the traces that the fit must give back.
    fn sm90_truth() -> CostModel {
        CostModel {
            compute: 5.0,
            compute_partial: Some(5.5),
            scale_by_fraction: false,
            reduce: 3.0,
            handoff: 0.4,
            poll: 0.0,
            kernel_epilogues: true,
            dq_writers: 2,
            dq_deferred: true,
            kv_load_overlap: false,
            unit_start: 1.5,
            unit_finish: 0.8,
            dkv_reduce: 3.0,
            variability: None,
            memory_roof: None,
        }
    }

    #[test]
    fn kept_traces_are_fitted_without_a_gpu() {
        // Traces as the sm90 loop's trace build would write them if the model were exact: the fit from the kept
        // files gives back the costs that made them, and names the GPU that device.txt names.
        let truth = sm90_truth();
        let dir = std::env::temp_dir().join(format!("dashc-kept-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("costs.json");
        let args = args(&dir, &out);
        let jobs = jobs(&plan(&args).unwrap()).unwrap();
        assert!(jobs.len() >= 6, "both masks, three schedules each");
        for (c, schedule) in &jobs {
            let stamps = simulated_stamps(schedule, &truth).unwrap();
            std::fs::write(dir.join(trace_file_name(c, schedule)), crate::trace::to_text(schedule, &stamps)).unwrap();
        }
        std::fs::write(dir.join(DEVICE_FILE), "NVIDIA H100 80GB HBM3\n").unwrap();
        run(args).unwrap();
        let file = CostsFile::load(&out).unwrap();
        assert_eq!(file.gpu, "NVIDIA H100 80GB HBM3");
        // In-order files carry no launch field: earlier versions, which refuse unknown fields, still read them.
        assert_eq!(file.traced_launch(), schedulers::LaunchPolicy::InOrder);
        assert!(!std::fs::read_to_string(&out).unwrap().contains("traced_launch"));
        let got = &file.entries[0].costs;
        assert!(got.dq_writers == 2 && got.dq_deferred, "{got:?}");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(got.compute, 5.0) && close(got.compute_partial.unwrap(), 5.5), "{got:?}");
        assert!(close(got.reduce, 3.0) && close(got.unit_finish, 0.8), "{got:?}");
        assert!(file.entries[0].calibrated_on.iter().all(|r| r.traced_main_ms.is_none()));

        // Traces of the sm90 loop read as the portable loop's are refused.
        let mut portable = super::tests::args(&dir, &out);
        portable.gpu.arch = Some(crate::args::ArchArg::Sm80);
        let err = run(portable).unwrap_err();
        assert!(err.to_string().contains("give --arch sm90"), "{err}");

        // A missing trace is a clean error naming the file, before any is read.
        let first = trace_file_name(&jobs[0].0, &jobs[0].1);
        std::fs::remove_file(dir.join(&first)).unwrap();
        let err = run(super::tests::args(&dir, &out)).unwrap_err();
        assert!(err.to_string().contains(&format!("1 of the {} traces", jobs.len())), "{err}");
        assert!(err.to_string().contains(&first), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn persistent_traces_are_kept_apart_and_fitted_as_persistent() {
        // Traces of the persistent launch, whose producer stamps a unit's start before the previous unit's compute
        // side is done: the fit reads the unit start from the compute side's end, and the costs file says which
        // launch it traced.
        let truth = sm90_truth();
        let dir = std::env::temp_dir().join(format!("dashc-kept-persistent-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("costs.json");
        let mut args = args(&dir, &out);
        args.launch = LaunchArg::Persistent;
        let jobs = jobs(&plan(&args).unwrap()).unwrap();
        for (c, schedule) in &jobs {
            assert_eq!(schedule.machine().launch, schedulers::LaunchPolicy::Persistent);
            let name = trace_file_name(c, schedule);
            assert!(name.ends_with("-persistent.txt"), "{name}");
            let mut stamps = simulated_stamps(schedule, &truth).unwrap();
            for u in stamps.iter_mut().filter(|u| u.start > 0.0) {
                u.start -= 100.0;
            }
            std::fs::write(dir.join(name), crate::trace::to_text(schedule, &stamps)).unwrap();
        }
        std::fs::write(dir.join(DEVICE_FILE), "NVIDIA H100 80GB HBM3\n").unwrap();
        run(args).unwrap();
        let file = CostsFile::load(&out).unwrap();
        assert_eq!(file.traced_launch(), schedulers::LaunchPolicy::Persistent);
        let got = &file.entries[0].costs;
        assert!((got.unit_start - 1.5).abs() < 1e-6 && (got.compute - 5.0).abs() < 1e-6, "{got:?}");
        assert!(file.entries[0].fit.dispatch_gap.is_none());

        // The in-order traces of the same flags are other files: none is there.
        let err = run(super::tests::args(&dir, &out)).unwrap_err();
        assert!(err.to_string().contains("are not in") && err.to_string().contains("configuration flags"), "{err}");
        // Gzipped, as bench/results/ keeps them: the error says so.
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "txt") {
                std::fs::rename(&path, format!("{}.gz", path.display())).unwrap();
            }
        }
        let mut persistent = super::tests::args(&dir, &out);
        persistent.launch = LaunchArg::Persistent;
        let err = run(persistent).unwrap_err();
        assert!(err.to_string().contains("gunzip them first"), "{err}");
        // The portable loop has no persistent launch.
        let mut portable = super::tests::args(&dir, &out);
        portable.launch = LaunchArg::Persistent;
        portable.gpu.arch = Some(crate::args::ArchArg::Sm80);
        let err = run(portable).unwrap_err();
        assert!(err.to_string().contains("only the sm90 main loop has a persistent launch"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn memory_probes_fit_a_roof_and_stay_out_of_the_phase_costs() {
        // Calibration traces as the model would write them, and probes whose every stamp is stretched so that
        // each makespan is what a known roof predicts: the phase costs are those of the calibration traces alone,
        // and the fit gives the roof back.
        let truth = sm90_truth();
        // Its memory time at the probes (about 0.8 MB here) is about that of their simulated makespans.
        let truth_roof = schedulers::MemoryRoof { bandwidth: 6e3, exponent: schedulers::MEMORY_ROOF_EXPONENT };
        let dir = std::env::temp_dir().join(format!("dashc-kept-probes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("costs.json");
        let mut args = args(&dir, &out);
        args.memory_probes = "768,256,256".into();
        let plan = plan(&args).unwrap();
        let seqlens = probe_seqlens(&args).unwrap();
        assert_eq!(seqlens, [256, 768], "sorted, without repeats");
        let probes = probe_jobs(&plan, &probe_configs(&plan, &seqlens).unwrap(), MainLoop::Sm90).unwrap();
        assert_eq!(probes.len(), 4, "two masks x two lengths at one head dim");
        for (c, schedule) in jobs(&plan).unwrap().iter().chain(&probes) {
            let is_probe = c.seqlen != 1024;
            let mut stamps = simulated_stamps(schedule, &truth).unwrap();
            if is_probe {
                assert_eq!(schedule.machine().launch, schedulers::LaunchPolicy::Persistent);
                assert_eq!(c.batch, 2048 / c.seqlen);
                let makespan = stamps.iter().map(|u| u.end).fold(0.0, f64::max);
                let factor = truth_roof.blend(makespan, schedulers::dram_bytes(schedule.problem())) / makespan;
                assert!(factor > 1.05, "the roof shows in every probe ({factor})");
                let stretch = |t: &mut f64| *t *= factor;
                for u in &mut stamps {
                    stretch(&mut u.start);
                    stretch(&mut u.end);
                    u.compute_end.as_mut().map(stretch);
                    for t in &mut u.tasks {
                        stretch(&mut t.compute_start);
                        stretch(&mut t.arrival);
                        stretch(&mut t.reduce_start);
                        stretch(&mut t.reduce_end);
                    }
                }
            }
            std::fs::write(dir.join(trace_file_name(c, schedule)), crate::trace::to_text(schedule, &stamps)).unwrap();
        }
        std::fs::write(dir.join(DEVICE_FILE), "NVIDIA H100 80GB HBM3\n").unwrap();
        run(args).unwrap();
        let file = CostsFile::load(&out).unwrap();
        let e = &file.entries[0];
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(e.costs.compute, 5.0) && close(e.costs.reduce, 3.0), "{:?}", e.costs);
        assert_eq!(e.memory_probes.len(), 4);
        let roof = e.costs.memory_roof.expect("the stretched probes show a roof");
        assert_eq!(roof.exponent, schedulers::MEMORY_ROOF_EXPONENT);
        assert!((roof.bandwidth / truth_roof.bandwidth - 1.0).abs() < 0.005, "{roof:?}");
        assert_eq!(e.fit.costs.memory_roof, e.costs.memory_roof);
        assert!(e.memory_probes.iter().all(|p| p.traced_main_ms.is_none()), "kept traces carry no kernel time");
        let text = summary(&file);
        assert!(text.contains("memory probes") && text.contains("TB/s effective"), "{text}");

        // Without the probes' traces, the error names the flag.
        let mut without = super::tests::args(&dir, &out);
        without.memory_probes = "512".into();
        let err = run(without).unwrap_err().to_string();
        assert!(err.contains("memory probes") && err.contains("--memory-probes"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn memory_probes_flag_is_checked() {
        let dir = std::env::temp_dir();
        let mut args = args(&dir, &dir.join("costs.json"));
        for (bad, says) in
            [("0", "not a positive"), ("x", "not a positive"), ("4096", "longer than --tokens"), (",", "empty")]
        {
            args.memory_probes = bad.into();
            let err = probe_seqlens(&args).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        args.memory_probes = " none ".into();
        assert!(probe_seqlens(&args).unwrap().is_empty());
        // An odd KV tile count is refused with the length to use, before any GPU is looked for (this test machine
        // has none: the error would otherwise be about nvcc or the traces).
        args.memory_probes = "384".into();
        let err = run(args).unwrap_err().to_string();
        assert!(err.contains("3 KV tiles of 128") && err.contains("use a multiple of 256"), "{err}");
    }
}
