//! Trace builds on the GPU, shared by `run --trace`, `calibrate` and `validate`: build the deterministic
//! kernel with TRACE on (in its own folder, so it never displaces the timing build), run one schedule, and
//! read the stamps back.

use std::path::Path;

use anyhow::Result;
use codegen::{KernelConfig, Templates, generate};
use schedulers::Schedule;

use crate::args::GpuArgs;
use crate::exit::{CheckFailed, bad_input};
use crate::gpu::{HarnessOptions, HarnessResult, Target, build, kernel_config, run_harness, write_generated};
use crate::trace::{self, Trace};

/// The trace build of a schedule's problem and mask.
pub fn trace_config(schedule: &Schedule, target: &Target) -> Result<KernelConfig> {
    let mut config = kernel_config(schedule.problem(), schedule.mask(), true, target)?;
    config.trace = true;
    Ok(config)
}

/// One traced run: the harness's result (its times are those of the trace build) and the parsed trace.
pub struct TracedRun {
    pub result: HarnessResult,
    pub trace: Trace,
}

/// Runs `schedule` in its trace build and reads the trace back. The raw trace is written to `raw_path` and
/// removed once parsed unless `keep` is set.
pub fn run_traced(
    schedule: &Schedule,
    gpu: &GpuArgs,
    target: &Target,
    nvcc: &Path,
    raw_path: &Path,
    keep: bool,
) -> Result<TracedRun> {
    let config = trace_config(schedule, target)?;
    let generated =
        generate(schedule, &config, &Templates::embedded(), &target.env).map_err(|e| bad_input(e.to_string()))?;
    let dir = crate::gpu::build_dir(&gpu.work_dir, &config);
    write_generated(&dir, &generated)?;
    build(nvcc, &dir, &generated)?;
    let data = generated.files.iter().find(|f| f.path == generated.schedule_file).expect("schedule file");
    let p = schedule.problem();
    let file =
        format!("schedule-{}-b{}h{}q{}k{}.txt", schedule.name(), p.batch(), p.heads(), p.seqlen_q(), p.seqlen_k());
    std::fs::write(dir.join(&file), &data.contents)?;
    let raw_path = std::path::absolute(raw_path)?;
    let _ = std::fs::remove_file(&raw_path);
    let opts = HarnessOptions {
        reps: gpu.reps,
        check: if gpu.check { Some(true) } else { Some(false) },
        seed: gpu.seed,
        timeout_secs: 300,
        trace: Some(raw_path.clone()),
        dump: None,
        idle_ms: gpu.idle_ms,
    };
    let result = run_harness(&dir, &generated, &file, &opts)?;
    if result.status != "ok" {
        return Err(anyhow::Error::new(CheckFailed(format!(
            "the trace build of {} failed its checks (status {})",
            schedule.name(),
            result.status
        ))));
    }
    let trace = trace::load(&raw_path)?;
    if !keep {
        let _ = std::fs::remove_file(&raw_path);
    }
    trace.check_matches(schedule, &raw_path.display().to_string())?;
    Ok(TracedRun { result, trace })
}
