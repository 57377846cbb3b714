//! Shared by `run` and `bench`: predict each schedule of a setup, generate and build its kernel, run it on the
//! GPU (deterministic, and optionally the non-deterministic variant) and pair measurement with prediction.

use std::fs;
use std::path::Path;

use anyhow::Result;
use codegen::{CodegenError, Generated, KernelConfig, Templates, generate};
use serde::Serialize;

use crate::agreement::{Agreement, DUMPED_OUTPUTS, DqShape, compare_dumps};
use crate::args::GpuArgs;
use crate::exit::bad_input;
use crate::gpu::{
    HarnessOptions, HarnessResult, Target, build, build_dir, kernel_config, prebuild, run_harness, write_generated,
};
use crate::setup::{Outcome, Setup};

/// One schedule, predicted and measured.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub schedule: String,
    /// Simulated makespan under the setup's cost model (uncalibrated: tile-compute units).
    pub predicted_makespan: f64,
    pub deterministic: HarnessResult,
    pub nondeterministic: Option<HarnessResult>,
    /// The deterministic outputs against the atomic ones, when both variants ran (the correctness check above
    /// seqlen 4096, where the FP32 reference does not run by default).
    pub vs_nondeterministic: Option<Agreement>,
}

impl Measured {
    pub fn ok(&self) -> bool {
        self.deterministic.status == "ok"
            && self.nondeterministic.as_ref().is_none_or(|r| r.status == "ok")
            && self.vs_nondeterministic.as_ref().is_none_or(|a| a.ok)
    }
}

/// Runs every applicable schedule of `setup` on the GPU. Kernels are built once per configuration under
/// `gpu.work_dir` and reused while their sources are unchanged. With `reverse_order` the schedules run last to
/// first, each one's atomic build before its deterministic one (`--rounds`); the outcomes come back in the usual
/// order either way.
pub fn measure_setup(
    setup: &Setup,
    gpu: &GpuArgs,
    target: &Target,
    nvcc: &Path,
    with_nondeterministic: bool,
    reverse_order: bool,
) -> Result<Vec<Outcome<Measured>>> {
    if setup.split_tail && target.main_loop != codegen::MainLoop::Sm90 {
        return Err(bad_input(
            "--split-tail needs the sm90 main loop (--arch sm90, a Hopper GPU): the portable loop has no fix-up for \
             the split columns' dK/dV partials",
        ));
    }
    let templates = Templates::embedded();
    let det_config = kernel_config(&setup.problem, &setup.mask, true, target)?;
    let nondet_config = kernel_config(&setup.problem, &setup.mask, false, target)?;
    let mut configs = vec![det_config.clone()];
    if with_nondeterministic {
        configs.push(nondet_config.clone());
    }
    prebuild(nvcc, &gpu.work_dir, &configs, &target.env)?;
    // Predict and generate on the CPU in parallel; keep only the prediction and the generated files.
    let mut prepared = setup.evaluate_each(false, |e| {
        let det = generate(&e.schedule, &det_config, &templates, &target.env);
        let nondet = with_nondeterministic.then(|| generate(&e.schedule, &nondet_config, &templates, &target.env));
        (e.schedule.name().to_string(), setup.predicted(&e), det, nondet)
    })?;
    let opts = HarnessOptions {
        reps: gpu.reps,
        check: if gpu.check {
            Some(true)
        } else if gpu.no_check {
            Some(false)
        } else {
            None
        },
        seed: gpu.seed,
        timeout_secs: 300,
        trace: None,
        dump: None,
        idle_ms: gpu.idle_ms,
    };
    if reverse_order {
        prepared.reverse();
    }
    let p = &setup.problem;
    let shape_tag = format!("b{}h{}q{}k{}", p.batch(), p.heads(), p.seqlen_q(), p.seqlen_k());
    let dq_shape = DqShape {
        batch: p.batch() as usize,
        seqlen_q: p.seqlen_q() as usize,
        heads: p.heads() as usize,
        head_dim: p.head_dim() as usize,
        block_m: p.block_m() as usize,
    };
    let mut out = Vec::new();
    for item in prepared {
        let (name, predicted, det, nondet) = match item {
            Outcome::Done(x) => x,
            Outcome::Skipped { schedule, reason } => {
                out.push(Outcome::Skipped { schedule, reason });
                continue;
            }
        };
        let run_variant = |config: &KernelConfig,
                           generated: Result<Generated, CodegenError>,
                           dump: Option<&Path>|
         -> Result<HarnessResult> {
            let generated = generated.map_err(|e| bad_input(e.to_string()))?;
            let dir = build_dir(&gpu.work_dir, config);
            write_generated(&dir, &generated)?;
            build(nvcc, &dir, &generated)?;
            // Each schedule gets its own data file; the build is shared.
            let data = generated.files.iter().find(|f| f.path == generated.schedule_file).expect("schedule file");
            let file = format!("schedule-{name}-{shape_tag}.txt");
            fs::write(dir.join(&file), &data.contents)?;
            let opts = HarnessOptions { dump: dump.map(Path::to_path_buf), ..opts.clone() };
            run_harness(&dir, &generated, &file, &opts)
        };
        // With both variants, each dumps its outputs so that they can be compared (crate::agreement). The
        // folders are made fresh (no stale dump can pass for a new one) and removed when `dumps` drops, on
        // every path out of this iteration, errors included (a dump of seqlen 16384 is hundreds of MB).
        let dumps = match nondet {
            Some(_) => {
                let fresh = |config: &KernelConfig| -> Result<std::path::PathBuf> {
                    let dir = std::path::absolute(
                        build_dir(&gpu.work_dir, config).join(format!("outputs-{name}-{shape_tag}")),
                    )?;
                    let _ = fs::remove_dir_all(&dir);
                    fs::create_dir_all(&dir)?;
                    Ok(dir)
                };
                Some(DumpDirs { det: fresh(&det_config)?, atomic: fresh(&nondet_config)? })
            }
            None => None,
        };
        // Reversed, the atomic build runs first too, so that over an even number of rounds neither build always
        // runs the later (a drift would otherwise bias the cost of determinism).
        let run_det = |det| run_variant(&det_config, det, dumps.as_ref().map(|d| d.det.as_path()));
        let run_atomic = |nondet: Option<_>| {
            nondet.map(|g| run_variant(&nondet_config, g, dumps.as_ref().map(|d| d.atomic.as_path()))).transpose()
        };
        let (deterministic, nondeterministic) = if reverse_order {
            let nondeterministic = run_atomic(nondet)?;
            (run_det(det)?, nondeterministic)
        } else {
            let deterministic = run_det(det)?;
            (deterministic, run_atomic(nondet)?)
        };
        let vs_nondeterministic = match (&dumps, &nondeterministic) {
            // A harness that failed (a semaphore wait gave up) may write no dump; its status already fails the
            // schedule. Two passing harnesses must both have dumped: anything else fails the comparison.
            (Some(d), Some(nd)) if deterministic.status == "ok" && nd.status == "ok" => {
                Some(if DUMPED_OUTPUTS.iter().all(|f| d.det.join(f).is_file() && d.atomic.join(f).is_file()) {
                    compare_dumps(&d.det, &d.atomic, dq_shape)
                        .unwrap_or_else(|e| Agreement::failed(crate::exit::one_line(&e)))
                } else {
                    Agreement::failed("a harness reported ok but wrote no complete output dump".into())
                })
            }
            _ => None,
        };
        drop(dumps);
        out.push(Outcome::Done(Measured {
            schedule: name,
            predicted_makespan: predicted,
            deterministic,
            nondeterministic,
            vs_nondeterministic,
        }));
    }
    if reverse_order {
        out.reverse();
    }
    Ok(out)
}

/// The order of one round of `--rounds` (1-based): the configuration indices, and whether each configuration's
/// schedules run reversed. Odd rounds run in the usual order, even rounds backwards, configurations and schedules
/// alike, so that over an even number of rounds a linear drift of the GPU weighs on every schedule alike.
pub fn round_order(configs: usize, round: u32) -> (Vec<usize>, bool) {
    if round.is_multiple_of(2) { ((0..configs).rev().collect(), true) } else { ((0..configs).collect(), false) }
}

/// Pairs of schedules whose predicted makespans differ by more than `threshold` (relative): how many of them
/// the measurement orders the same way. Returns (agreeing, pairs).
pub fn ordering_agreement(measured: &[&Measured], threshold: f64) -> (usize, usize) {
    let mut agree = 0;
    let mut pairs = 0;
    for (i, a) in measured.iter().enumerate() {
        for b in &measured[i + 1..] {
            let (pa, pb) = (a.predicted_makespan, b.predicted_makespan);
            if (pa - pb).abs() <= threshold * pa.min(pb) {
                continue;
            }
            let (Some(ma), Some(mb)) = (a.deterministic.time_ms.total_median, b.deterministic.time_ms.total_median)
            else {
                continue;
            };
            pairs += 1;
            if (pa < pb) == (ma < mb) {
                agree += 1;
            }
        }
    }
    (agree, pairs)
}

/// The two output-dump folders of one schedule; removed when dropped.
struct DumpDirs {
    det: std::path::PathBuf,
    atomic: std::path::PathBuf,
}

impl Drop for DumpDirs {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.det);
        let _ = fs::remove_dir_all(&self.atomic);
    }
}
