//! `dashc run`: generate, compile, run, check and time schedules on the GPU, beside the simulator's prediction.
//!
//! Until costs are calibrated the prediction is in tile-compute units, so the comparison is of ratios: each
//! schedule's measured time over naive's against its predicted makespan over naive's.

use anyhow::Result;
use serde::Serialize;

use crate::args::RunArgs;
use crate::exit::CheckFailed;
use crate::gpu::{Device, Target, find_nvcc, probe_device};
use crate::measure::{Measured, measure_setup, ordering_agreement};
use crate::output::{ProblemJson, SCHEMA_VERSION, header, num, table};
use crate::setup::{Outcome, Setup};

#[derive(Serialize)]
struct RunJson<'a> {
    schema_version: u32,
    command: &'static str,
    device: &'a Device,
    problem: ProblemJson<'a>,
    results: Vec<&'a Measured>,
    skipped: Vec<(&'a str, &'a str)>,
    /// Schedule pairs whose predictions differ by more than 5%, and how many the GPU orders alike.
    ordering_pairs: usize,
    ordering_agree: usize,
}

pub fn run(args: RunArgs) -> Result<()> {
    let setup = Setup::from_args(&args.shape)?;
    if let Some(path) = &args.trace {
        crate::commands::trace_run::check_request(&setup, path)?;
    }
    crate::gpu::check_kernel_support(&setup.problem, &setup.mask, !args.nondeterministic)?;
    // Probe the toolchain and the GPU before any work, so a machine without them answers at once.
    let nvcc = find_nvcc()?;
    let device = probe_device()?;
    if let Some(c) = &setup.calibrated
        && c.gpu != device.name
    {
        return Err(crate::exit::bad_input(format!(
            "costs file {} was calibrated on '{}', this GPU is '{}'; run dashc calibrate here",
            c.path.display(),
            c.gpu,
            device.name
        )));
    }
    let target = Target::for_device(args.gpu.arch, &device)?;
    // The setup above answered bad input before the GPU probe; the launch default depends on the main loop.
    let setup = if args.shape.launch.is_none() {
        Setup::from_args(&args.shape.for_main_loop(target.main_loop))?
    } else {
        setup
    };
    crate::gpu::check_setup_costs(&setup, &target)?;
    let outcomes = measure_setup(&setup, &args.gpu, &target, &nvcc, args.nondeterministic, false)?;
    let measured: Vec<&Measured> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Done(m) => Some(m),
            Outcome::Skipped { .. } => None,
        })
        .collect();
    let (agree, pairs) = ordering_agreement(&measured, 0.05);
    if let Some(path) = &args.trace {
        crate::commands::trace_run::trace(&setup, &args.gpu, &target, &nvcc, path, &measured)?;
    }
    if args.json {
        let skipped = outcomes
            .iter()
            .filter_map(|o| match o {
                Outcome::Skipped { schedule, reason } => Some((*schedule, reason.as_str())),
                Outcome::Done(_) => None,
            })
            .collect();
        let doc = RunJson {
            schema_version: SCHEMA_VERSION,
            command: "run",
            device: &device,
            problem: ProblemJson::of(&setup),
            results: measured.clone(),
            skipped,
            ordering_pairs: pairs,
            ordering_agree: agree,
        };
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        out!("{}", header(&setup));
        outln!(
            "device: {} (compute {}, driver {}), built for {}\n",
            device.name,
            device.compute_cap,
            device.driver,
            target.describe()
        );
        out!("{}", results_table(&measured));
        for o in &outcomes {
            if let Outcome::Skipped { schedule, reason } = o {
                outln!("{schedule}: skipped, {reason}");
            }
        }
        if pairs > 0 {
            outln!(
                "\nordering: the GPU agrees with the prediction on {agree} of {pairs} schedule pairs whose predictions differ by more than 5%"
            );
        }
    }
    let failed: Vec<&str> = measured.iter().filter(|m| !m.ok()).map(|m| m.schedule.as_str()).collect();
    if !failed.is_empty() {
        return Err(anyhow::Error::new(CheckFailed(format!("check failed for {}", failed.join(", ")))));
    }
    Ok(())
}

/// One row per schedule and variant: time, TFLOPS, worst relative error against the FP32 reference and (det
/// rows) against the atomic variant, repeatability, and the ratios of measured and predicted time to naive's.
pub fn results_table(measured: &[&Measured]) -> String {
    let naive = measured.iter().find(|m| m.schedule == "naive");
    let mut rows = Vec::new();
    // The rested and sustained columns, where any result timed a long enough series (`--reps`; docs/gpu.md).
    let series = measured
        .iter()
        .flat_map(|m| std::iter::once(&m.deterministic).chain(m.nondeterministic.as_ref()))
        .any(|r| r.rested_and_sustained().is_some());
    for m in measured {
        for r in std::iter::once(&m.deterministic).chain(m.nondeterministic.as_ref()) {
            let err =
                [r.check.rel_l2_dq, r.check.rel_l2_dk, r.check.rel_l2_dv].into_iter().flatten().fold(0.0, f64::max);
            let ratio = |x: Option<f64>, base: Option<f64>| match (x, base) {
                (Some(x), Some(b)) if b > 0.0 => format!("{:.3}", x / b),
                _ => "-".to_string(),
            };
            let naive_same_variant = naive.map(|n| {
                if r.deterministic { &n.deterministic } else { n.nondeterministic.as_ref().unwrap_or(&n.deterministic) }
            });
            let mut row = vec![
                m.schedule.clone(),
                if r.deterministic { "det" } else { "atomic" }.to_string(),
                r.time_ms.total_median.map_or("-".into(), |t| format!("{t:.3}")),
                r.tflops.total.map_or("-".into(), |t| format!("{t:.1}")),
            ];
            if series {
                let pair = r.rested_and_sustained();
                let cell = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
                row.extend([cell(pair.map(|p| p.0)), cell(pair.map(|p| p.1))]);
            }
            row.extend([
                if r.check.ran { format!("{err:.1e}") } else { "not run".into() },
                match (&m.vs_nondeterministic, r.deterministic) {
                    (Some(a), true) => a.table_cell(),
                    _ => "-".into(),
                },
                if !r.deterministic {
                    "n/a".into()
                } else if r.repeatable {
                    "yes".into()
                } else {
                    "NO".into()
                },
                r.status.clone(),
                num(m.predicted_makespan),
                ratio(Some(m.predicted_makespan), naive.map(|n| n.predicted_makespan)),
                ratio(r.time_ms.total_median, naive_same_variant.and_then(|n| n.time_ms.total_median)),
            ]);
            rows.push(row);
        }
    }
    let mut headers = vec!["schedule", "variant", "time ms", "TFLOPS"];
    if series {
        headers.extend(["rested TFLOPS", "sustained TFLOPS"]);
    }
    headers.extend(["max rel err", "vs atomic", "bitwise rep", "status", "predicted", "pred / naive", "meas / naive"]);
    table(&headers, &rows)
}
