//! `dashc run --trace FILE`: the trace build of one schedule, its measured timeline, and the trace overhead.

use std::path::Path;

use crate::gpu::Target;
use anyhow::Result;

use crate::args::GpuArgs;
use crate::costs_file::write_atomic;
use crate::exit::bad_input;
use crate::measure::Measured;
use crate::setup::Setup;
use crate::trace::{measured_file, measured_schedule};
use crate::traced::run_traced;

/// Refuses, before any GPU work, a trace request that cannot be honoured.
pub fn check_request(setup: &Setup, path: &Path) -> Result<()> {
    if setup.schedules.len() != 1 || setup.search.is_some() || setup.schedule_file.is_some() {
        return Err(bad_input("--trace needs exactly one built-in schedule: give --schedule NAME"));
    }
    let kind = setup.schedules[0];
    kind.check_applicable(&setup.problem, &setup.mask).map_err(|e| bad_input(e.to_string()))?;
    crate::output::check_writable(path)
}

/// Runs the trace build of the setup's schedule, writes the measured timeline to `path` and prints the trace
/// overhead against the timing build's run (`plain`).
pub fn trace(
    setup: &Setup,
    gpu: &GpuArgs,
    target: &Target,
    nvcc: &Path,
    path: &Path,
    plain: Option<&Measured>,
) -> Result<()> {
    let kind = setup.schedules[0];
    let schedule =
        kind.build(setup.problem, setup.mask.clone(), setup.tile_mask.clone(), setup.machine, &setup.costs)?;
    let raw = path.with_file_name(format!(
        ".{}.raw-trace",
        path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default()
    ));
    let run = run_traced(&schedule, gpu, target, nvcc, &raw, false)?;
    let decoupled = target.main_loop.dq_writers() > 0;
    let timeline = measured_file(setup, vec![measured_schedule(&schedule, &run.trace.units, decoupled)]);
    write_atomic(path, &serde_json::to_string(&timeline)?)?;
    let traced_ms = run.result.time_ms.main_median;
    let plain_ms = plain.and_then(|m| m.deterministic.time_ms.main_median);
    println!(
        "\ntrace: {} ({} units, {} tasks), traced makespan {:.1} µs, written to {}",
        schedule.name(),
        run.trace.header.units,
        run.trace.header.visits,
        run.trace.makespan(),
        path.display()
    );
    if let (Some(t), Some(p)) = (traced_ms, plain_ms) {
        println!(
            "trace overhead: main kernel {:.4} ms traced vs {:.4} ms plain ({:+.2}%)",
            t,
            p,
            100.0 * (t / p - 1.0)
        );
    }
    if setup.calibrated.is_some()
        && let Some(m) = plain
    {
        println!("prediction (calibrated): {:.1} µs", m.predicted_makespan);
    }
    Ok(())
}
