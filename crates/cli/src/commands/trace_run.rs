//! `dashc run --trace FILE`: the trace build of one schedule, its measured timeline, and the trace overhead.

use std::path::Path;

use crate::gpu::{Clocks, Target};
use anyhow::Result;

use crate::args::GpuArgs;
use crate::commands::calibrate::named_phases;
use crate::costs_file::write_atomic;
use crate::exit::bad_input;
use crate::measure::Measured;
use crate::output::table;
use crate::setup::Setup;
use crate::trace::{measured_file, measured_schedule};
use crate::traced::run_traced;
use schedulers::calibrate::{Phases, Samples};
use schedulers::{Schedule, split_tail};

/// Refuses, before any GPU work, a trace request that cannot be honoured.
pub fn check_request(setup: &Setup, path: &Path) -> Result<()> {
    if setup.schedules.len() != 1 || setup.search.is_some() || setup.schedule_file.is_some() {
        return Err(bad_input("--trace needs exactly one built-in schedule: give --schedule NAME"));
    }
    let kind = setup.schedules[0];
    kind.check_applicable(&setup.problem, &setup.mask).map_err(|e| bad_input(e.to_string()))?;
    crate::output::check_writable(path)
}

/// Runs the trace build of the setup's schedule (with `--split-tail`, of its split version where the split
/// changes it: the last schedule `run` measured), writes the measured timeline to `path` and prints the trace
/// overhead against the timing build's run of the same schedule, found by name in `measured`.
pub fn trace(
    setup: &Setup,
    gpu: &GpuArgs,
    target: &Target,
    nvcc: &Path,
    path: &Path,
    measured: &[&Measured],
) -> Result<()> {
    let schedule = traced_schedule(setup)?;
    let plain = measured.iter().find(|m| m.schedule == schedule.name()).copied();
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
    outln!(
        "\ntrace: {} ({} units, {} tasks), traced makespan {:.1} µs, written to {}",
        schedule.name(),
        run.trace.header.units,
        run.trace.header.visits,
        run.trace.makespan(),
        path.display()
    );
    if let (Some(t), Some(p)) = (traced_ms, plain_ms) {
        outln!("trace overhead: main kernel {:.4} ms traced vs {:.4} ms plain ({:+.2}%)", t, p, 100.0 * (t / p - 1.0));
    }
    if let Some(line) = clock_line(run.result.clocks.as_ref(), plain.and_then(|m| m.deterministic.clocks.as_ref())) {
        outln!("{line}");
    }
    if setup.calibrated.is_some()
        && let Some(m) = plain
    {
        outln!("prediction (calibrated): {:.1} µs", m.predicted_makespan);
    }
    // The phases of this one run, beside the calibration's where there is one: where the prediction goes wrong.
    let mut samples = Samples {
        dq_writers: target.main_loop.dq_writers(),
        dq_deferred: target.main_loop.dq_deferred(setup.problem.block_m()),
        kv_load_overlap: target.main_loop.kv_load_overlap(setup.problem.block_m(), setup.problem.head_dim()),
        ..Samples::default()
    };
    match samples.add_run(&schedule, &run.trace.units) {
        Ok(()) => {
            let calibration = setup.calibrated.as_ref().map(|c| c.fit.phases());
            out!("\n{}", phase_table(&samples.phases(), calibration.as_ref()));
            let launch = schedule.machine().launch;
            if let Some(c) = setup.calibrated.as_ref().filter(|c| c.traced_launch != launch) {
                outln!(
                    "(this trace ran the {} launch, the calibration the {}: their unit loads are measured from \
                     different points, docs/calibration.md)",
                    launch.name(),
                    c.traced_launch.name()
                );
            }
        }
        Err(e) => outln!("phases of this trace: not fitted ({e})"),
    }
    Ok(())
}

/// The schedule `run --trace` traces: the setup's one built-in, or with `--split-tail` its split version where
/// the split changes it (the schedule the user asked to see split; tracing the unsplit one instead went unnoticed
/// in run 161, whose `--split-tail` traces were all of unsplit schedules).
fn traced_schedule(setup: &Setup) -> Result<Schedule> {
    let kind = setup.schedules[0];
    let built = kind.build(setup.problem, setup.mask.clone(), setup.tile_mask.clone(), setup.machine, &setup.costs)?;
    Ok(match setup.split_tail {
        true => split_tail(&built, &setup.costs)?.unwrap_or(built),
        false => built,
    })
}

/// The SM clock while the trace build's timed repetitions ran (the stamped run follows them), beside the timing
/// build's: the costs are times at the calibration's clock, so a trace whose phases all grew by about the clock's
/// share hints at the clock, not the kernel. A side without samples (no NVML) shows as not recorded.
fn clock_line(traced: Option<&Clocks>, plain: Option<&Clocks>) -> Option<String> {
    let describe = |c: Option<&Clocks>| match c.filter(|c| c.samples > 0) {
        Some(c) => format!("{:.0} MHz ({} of {} samples limited)", c.sm_mhz_median, c.limited, c.samples),
        None => "not recorded".to_string(),
    };
    if traced.is_none_or(|c| c.samples == 0) && plain.is_none_or(|c| c.samples == 0) {
        return None;
    }
    Some(format!("SM clock: trace build {}, timing build {}", describe(traced), describe(plain)))
}

/// This trace's phases (µs; trimmed mean, median, samples) and, given one, the calibration's trimmed mean and
/// the difference. A phase without samples in the trace shows `-` (the fit's stand-in 0 for the unit finish of
/// decoupled writers is no measurement).
fn phase_table(trace: &Phases, calibration: Option<&Phases>) -> String {
    let calibrated = calibration.map(named_phases);
    let mut rows = Vec::new();
    for (what, s) in named_phases(trace) {
        let s = s.filter(|s| s.n > 0);
        let fitted = calibrated
            .as_ref()
            .and_then(|c| c.iter().find(|(w, _)| *w == what).and_then(|(_, s)| *s))
            .filter(|f| f.n > 0);
        if s.is_none() && fitted.is_none() {
            continue;
        }
        let mut row = vec![what.to_string()];
        match s {
            Some(s) => row.extend([format!("{:.3}", s.trimmed_mean), format!("{:.3}", s.median), s.n.to_string()]),
            None => row.extend(["-".to_string(), "-".to_string(), "0".to_string()]),
        }
        if calibrated.is_some() {
            row.push(fitted.map_or("-".to_string(), |f| format!("{:.3}", f.trimmed_mean)));
            row.push(match (s, fitted) {
                (Some(s), Some(f)) => format!("{:+.3}", s.trimmed_mean - f.trimmed_mean),
                _ => "-".to_string(),
            });
        }
        rows.push(row);
    }
    let mut headers = vec!["phase (µs)", "this trace", "median", "samples"];
    if calibrated.is_some() {
        headers.extend(["calibration", "trace − calibration"]);
    }
    format!(
        "phases of this trace{}:\n{}",
        if calibrated.is_some() { ", against the calibration" } else { "" },
        table(&headers, &rows)
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use dag_model::{Mask, Problem, ProblemSpec, TileMask};
    use schedulers::calibrate::{Stat, simulated_stamps};
    use schedulers::{CostModel, LaunchPolicy, Machine, ScheduleKind};

    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;

    /// The phases of a simulated trace of shift (hd128, 2 x 3 heads, seqlen 1024, 10 SMs) under `costs`.
    fn phases_under(costs: &CostModel) -> Phases {
        let problem = Problem::new(ProblemSpec {
            batch: 2,
            heads: 3,
            kv_heads: 3,
            seqlen_q: 1024,
            seqlen_k: 1024,
            head_dim: 128,
            block_m: 64,
            block_n: 128,
        })
        .unwrap();
        let tiles = Arc::new(TileMask::new(&problem, &Mask::Full).unwrap());
        let machine = Machine { sms: 10, launch: LaunchPolicy::InOrder };
        let schedule = ScheduleKind::Shift.build(problem, Mask::Full, tiles, machine, costs).unwrap();
        let mut samples =
            Samples { dq_writers: costs.dq_writers, dq_deferred: costs.dq_deferred, ..Samples::default() };
        samples.add_run(&schedule, &simulated_stamps(&schedule, costs).unwrap()).unwrap();
        samples.phases()
    }

    fn costs(compute: f64) -> CostModel {
        CostModel {
            compute,
            reduce: 1.5,
            handoff: 0.5,
            kernel_epilogues: true,
            dq_writers: 2,
            dq_deferred: true,
            unit_start: 2.0,
            unit_finish: 1.0,
            ..CostModel::default()
        }
    }

    #[test]
    fn a_trace_is_read_beside_the_calibration() {
        // The "trace" computes a full tile in 2.5, the "calibration" in 2.0: the table shows both and the
        // difference, and the phases they share alike.
        let table = phase_table(&phases_under(&costs(2.5)), Some(&phases_under(&costs(2.0))));
        // A row's cells, split on the table's spacing (names hold single spaces).
        let row = |what: &str| -> Vec<String> {
            let line =
                table.lines().find(|l| l.trim_start().starts_with(what)).unwrap_or_else(|| panic!("{what}: {table}"));
            line[line.find(what).unwrap() + what.len()..].split_whitespace().map(String::from).collect()
        };
        // Columns after the name: this trace, median, samples, calibration, difference.
        let compute = row("compute (full tile)");
        assert_eq!(compute[0], "2.500", "{table}");
        assert_eq!(compute[3..], ["2.000", "+0.500"], "{table}");
        let reduce = row("reduce");
        assert_eq!(reduce[3..], ["1.500", "+0.000"], "{table}");
        assert!(table.starts_with("phases of this trace, against the calibration:"), "{table}");
        // Without a calibration: this trace's columns alone.
        let alone = phase_table(&phases_under(&costs(2.5)), None);
        assert!(alone.starts_with("phases of this trace:\n") && !alone.contains("calibration"), "{alone}");
    }

    #[test]
    fn the_clock_line_names_both_runs_or_none() {
        let c = |mhz: f64, limited: u32| Clocks {
            sm_mhz_median: mhz,
            sm_mhz_min: mhz,
            samples: 10,
            limited,
            power_w_median: None,
        };
        assert_eq!(
            clock_line(Some(&c(1845.0, 5)), Some(&c(1980.0, 0))).as_deref(),
            Some(
                "SM clock: trace build 1845 MHz (5 of 10 samples limited), timing build 1980 MHz (0 of 10 samples limited)"
            )
        );
        assert_eq!(
            clock_line(Some(&c(1905.0, 2)), None).as_deref(),
            Some("SM clock: trace build 1905 MHz (2 of 10 samples limited), timing build not recorded")
        );
        assert_eq!(
            clock_line(None, Some(&c(1980.0, 0))).as_deref(),
            Some("SM clock: trace build not recorded, timing build 1980 MHz (0 of 10 samples limited)")
        );
        // No samples on either side (no NVML, or a harness from before the sampler): no line.
        let empty = Clocks { samples: 0, ..c(0.0, 0) };
        assert_eq!(clock_line(Some(&empty), None), None);
        assert_eq!(clock_line(None, None), None);
    }

    #[test]
    fn a_phase_without_samples_shows_no_value() {
        // As in long sm90 traces (run 104): no unit's end could be told from its last add, and `phases` gives
        // the unit finish as 0 from 0 samples (so does the simulated trace here, with its long units).
        let none = Stat { n: 0, median: 0.0, trimmed_mean: 0.0, p10: 0.0, p90: 0.0 };
        let measured = Stat { n: 5, median: 1.0, trimmed_mean: 1.0, p10: 1.0, p90: 1.0 };
        let with_finish =
            |compute: f64, finish: Stat| Phases { unit_finish: Some(finish), ..phases_under(&costs(compute)) };
        // The unit finish row's cells after the name: this trace, median, samples, calibration, difference.
        let cells = |table: &str| -> Vec<String> {
            let line = table.lines().find(|l| l.trim_start().starts_with("unit finish")).expect("a unit finish row");
            line[line.find("unit finish").unwrap() + "unit finish".len()..]
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        let table = phase_table(&with_finish(2.5, none), Some(&with_finish(2.0, measured)));
        assert_eq!(cells(&table), ["-", "-", "0", "1.000", "-"], "{table}");
        // Likewise the calibration's column for a stand-in without samples.
        let table = phase_table(&with_finish(2.5, measured), Some(&with_finish(2.0, none)));
        assert_eq!(cells(&table), ["1.000", "1.000", "5", "-", "-"], "{table}");
        // Neither side measured: no row.
        let table = phase_table(&with_finish(2.5, none), Some(&with_finish(2.0, none)));
        assert!(!table.contains("unit finish"), "{table}");
    }

    fn setup(args: &[&str]) -> Setup {
        let cli = Cli::try_parse_from([&["dashc", "run"][..], args].concat()).expect("arguments parse");
        let Command::Run(run) = cli.command else { panic!("not run") };
        Setup::from_args(&run.shape).expect("setup")
    }

    #[test]
    fn the_trace_is_of_the_split_schedule_when_the_split_is_asked_for_and_changes_it() {
        // hd128 causal 512, batch 32 x 16 heads: 1024 symmetric-shift units on 132 SMs, a partial last pass.
        let shape = ["--seqlen", "512", "--batch", "32", "--heads", "16", "--head-dim", "128", "--mask", "causal"];
        let args = [&shape[..], &["--schedule", "symmetric-shift", "--launch", "persistent"]].concat();
        let plain = traced_schedule(&setup(&args)).unwrap();
        assert_eq!(plain.name(), "symmetric-shift");
        let split = traced_schedule(&setup(&[&args[..], &["--split-tail"]].concat())).unwrap();
        assert_eq!(split.name(), "symmetric-shift+split");
        assert!(split.units().len() > plain.units().len(), "the split adds units");
        // Where whole passes leave no tail, there is nothing to split: the schedule itself is traced.
        let even = ["--seqlen", "512", "--batch", "33", "--heads", "4", "--schedule", "naive", "--split-tail"];
        assert_eq!(traced_schedule(&setup(&even)).unwrap().name(), "naive");
    }
}
