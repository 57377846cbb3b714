//! `dashc validate`: run the paper's configurations x applicable schedules on the GPU, predict each with
//! calibrated costs, and write docs/validation.md (table, error distribution, schedule choice, scatter chart,
//! measured-vs-predicted Gantt pairs). `--raw` keeps the measurements; `--from-raw` rewrites the report from
//! them without a GPU.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Parser;
use serde::{Deserialize, Serialize};

use schedulers::{CostModel, LaunchPolicy};

use crate::args::{ConfigsArgs, CostArgs, MaskArg, ShapeArgs, ShapeOnly, TimeStatistic, ValidateArgs};
use crate::commands::calibrate::{provenance, summary};
use crate::costs_file::{CostsFile, write_atomic, write_atomic_bytes};
use crate::exit::bad_input;
use crate::gpu::{HarnessResult, Target, find_nvcc, kernel_config, prebuild, probe_device, quantile};
use crate::measure::{measure_setup, round_order};
use crate::output::{SCHEMA_VERSION, table};
use crate::plot::gantt::{Gantt, Part};
use crate::plot::scatter::{Point, Scatter};
use crate::plot::{self, Format};
use crate::setup::{Outcome, Setup};
use crate::sweep::{Plan, mask_name};
use crate::timeline::TimelineFile;
use crate::trace::{measured_file, measured_schedule};
use crate::traced::run_traced;

const RAW_FORMAT: &str = "dashc-validation-raw";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    format: String,
    schema_version: u32,
    command: String,
    tool: String,
    date: String,
    commit: String,
    device: String,
    compute_cap: String,
    driver: String,
    /// The card's UUID where nvidia-smi gave it (older files: none). Merged files: the distinct cards, joined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gpu_uuid: Option<String>,
    arch: String,
    /// The launch policy the kernels ran with, which the predictions must use too. Files written before it was
    /// recorded leave it out: see `Raw::launch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    launch: Option<LaunchPolicy>,
    /// How many times every row was measured (`--rounds`); files written before it was recorded: 1.
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    rounds: u32,
    /// The number of the first of them (`--first-round`); files written before it was recorded: 1.
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    first_round: u32,
    /// `--max-heads-in-flight` as given, for a `search` among the schedules; absent for the default. A report
    /// from the file predicts under it unless the command line gives another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_heads_in_flight: Option<String>,
    /// The SM count the predictions were made for (`--sms`; the persistent launch's grid). A report from the file
    /// predicts for it: another count would compare the measurements with another machine's predictions.
    #[serde(default = "sms_before_recorded")]
    sms: u32,
    rows: Vec<RawRow>,
    gantt: Vec<GanttRaw>,
}

fn one_round() -> u32 {
    1
}

fn is_one_round(rounds: &u32) -> bool {
    *rounds == 1
}

/// Files written before the SM count was recorded were all measured with the default `--sms 132` (none of their
/// command lines names `--sms`), on H100s and H200s, which have 132.
fn sms_before_recorded() -> u32 {
    132
}

impl Raw {
    /// The recorded launch policy; for older files, the one their recorded command line asked for (in-order
    /// unless it says `--launch persistent`).
    fn launch(&self) -> LaunchPolicy {
        match self.launch {
            Some(launch) => launch,
            None if self.command.contains("--launch persistent") || self.command.contains("--launch=persistent") => {
                LaunchPolicy::Persistent
            }
            None => LaunchPolicy::InOrder,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    mask: String,
    head_dim: u32,
    heads: u32,
    seqlen: u32,
    batch: u32,
    schedule: String,
    status: String,
    /// Median of the main kernel alone and of the whole backward, ms (timing build, no trace); with several
    /// rounds, the median of the rounds' medians, none if any round failed.
    main_ms: Option<f64>,
    total_ms: Option<f64>,
    /// With several rounds: each round's main-kernel median, in round order (null for a round without one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    main_ms_rounds: Vec<Option<f64>>,
    /// The fastest repetition of the main kernel alone, ms, and per round, as `main_ms` and `main_ms_rounds`
    /// (`--statistic fastest`); absent in files written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    main_min_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    main_min_ms_rounds: Vec<Option<f64>>,
    /// The SM clock while the timed whole backwards ran (NVML; the median over the rounds of each round's
    /// median), MHz, and the share of samples a power or thermal limit held down; absent where the harness had
    /// no NVML, and in files written before the harness sampled it. The model's costs are fitted at the
    /// calibration runs' clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sm_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    clock_limited_share: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GanttRaw {
    mask: String,
    head_dim: u32,
    heads: u32,
    seqlen: u32,
    batch: u32,
    schedule: String,
    /// The measured timeline, beside the raw file.
    file: String,
    traced_main_ms: Option<f64>,
}

/// One configuration of the paper's family.
struct Shape {
    mask: MaskArg,
    head_dim: u32,
    heads: u32,
    seqlen: u32,
    batch: u32,
}

/// The machine the kernels ran on: its SM count and the launch policy.
#[derive(Debug, Clone, Copy)]
struct MachineArgs {
    sms: u32,
    launch: LaunchPolicy,
}

/// The shape flags of one configuration; `heads_limit` is `--max-heads-in-flight`, for `search` among the
/// schedules (refused without it, as everywhere).
fn shape_for(
    costs: &CostArgs,
    c: Shape,
    schedules: &str,
    machine: MachineArgs,
    heads_limit: &Option<String>,
) -> Result<ShapeArgs> {
    let Shape { mask, head_dim, heads, seqlen, batch } = c;
    let mut shape = ShapeOnly::try_parse_from(["dashc"]).context("default shape flags")?.shape;
    shape.costs = costs.clone();
    shape.search.max_heads_in_flight = heads_limit.clone();
    shape.mask = mask;
    shape.head_dim = head_dim;
    shape.heads = heads;
    shape.seqlen = seqlen;
    shape.batch = batch;
    // A split-tail row (name +split) is its built-in evaluated with --split-tail.
    let mut names: Vec<&str> = Vec::new();
    for name in schedules.split(',') {
        let base = name.strip_suffix(schedulers::SPLIT_SUFFIX).unwrap_or(name);
        shape.split_tail |= base != name;
        if !names.contains(&base) {
            names.push(base);
        }
    }
    shape.schedule = names.join(",");
    shape.sms = machine.sms;
    shape.launch = Some(machine.launch.into());
    Ok(shape)
}

fn mask_arg(name: &str) -> Result<MaskArg> {
    match name {
        "full" => Ok(MaskArg::Full),
        "causal" => Ok(MaskArg::Causal),
        other => Err(bad_input(format!("validation raw file: unknown mask '{other}'"))),
    }
}

pub fn run(args: ValidateArgs) -> Result<()> {
    args.rounds.numbers()?;
    // The configurations' flags are `sweep`'s and `bench`'s, but a search's move budget and seed are not kept in
    // the raw file nor applied to the predictions: a searched row would be measured and predicted differently.
    if args.configs.iterations.is_some() || args.configs.search_seed.is_some() {
        return Err(bad_input(
            "validate takes no --iterations or --search-seed: its search row (with `search` among --schedules) is \
             measured and predicted with the default search, 400 iterations from seed 0",
        ));
    }
    let costs_path = args
        .configs
        .costs
        .costs
        .clone()
        .ok_or_else(|| bad_input("validate needs --costs FILE (from dashc calibrate)"))?;
    let costs = CostsFile::load(&costs_path)?;
    if args.doc.extension().is_none_or(|e| e != "md") {
        return Err(bad_input(format!("--doc {}: give a Markdown file name ending in .md", args.doc.display())));
    }
    let doc_dir = args.doc.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    if !doc_dir.is_dir() {
        return Err(bad_input(format!(
            "cannot write {}: folder {} does not exist",
            args.doc.display(),
            doc_dir.display()
        )));
    }
    let (raw, raw_dir) = if args.from_raw.is_empty() {
        let raw = measure(&args, &costs, &costs_path)?;
        let dir = args.raw.as_ref().and_then(|p| p.parent()).unwrap_or(Path::new(".")).to_path_buf();
        (raw, dir)
    } else {
        let loaded: Vec<(Raw, PathBuf, PathBuf)> = args
            .from_raw
            .iter()
            .map(|p| Ok((load_raw(p)?, p.parent().unwrap_or(Path::new(".")).to_path_buf(), p.clone())))
            .collect::<Result<_>>()?;
        merge_raws(loaded)?
    };
    if raw.device != costs.gpu {
        return Err(bad_input(format!(
            "the measurements are from '{}', the costs file {} from '{}'",
            raw.device,
            costs_path.display(),
            costs.gpu
        )));
    }
    let both = both_statistics(&raw);
    let raw = with_statistic(raw, args.statistic)?;
    report(&args, &costs, &costs_path, &raw, both.as_ref(), &raw_dir, &doc_dir)
}

/// A measured row's (mask, head dim, seqlen, schedule).
type RowKey = (String, u32, u32, String);

/// Both statistics of one measured row, µs: the median and the fastest repetition, over the rounds and per round.
struct BothStatistics {
    median: f64,
    median_rounds: Vec<Option<f64>>,
    fastest: f64,
    fastest_rounds: Vec<Option<f64>>,
}

/// Every successful row's two statistics, or none where a row lacks its fastest repetition (a raw file from
/// before dashc kept it): the report then compares nothing.
fn both_statistics(raw: &Raw) -> Option<BTreeMap<RowKey, BothStatistics>> {
    let us = |x: &[Option<f64>]| x.iter().map(|m| m.map(|ms| ms * 1000.0)).collect();
    raw.rows
        .iter()
        .filter(|r| r.status == "ok" && r.main_ms.is_some())
        .map(|r| {
            let key = (r.mask.clone(), r.head_dim, r.seqlen, r.schedule.clone());
            Some((
                key,
                BothStatistics {
                    median: r.main_ms? * 1000.0,
                    median_rounds: us(&r.main_ms_rounds),
                    fastest: r.main_min_ms? * 1000.0,
                    fastest_rounds: us(&r.main_min_ms_rounds),
                },
            ))
        })
        .collect()
}

/// How far one row's value moves between rounds: (max − min) / mean over its rounds, where it has two or more.
fn round_spread(rounds: &[Option<f64>]) -> Option<f64> {
    let v: Vec<f64> = rounds.iter().flatten().copied().collect();
    if v.len() < 2 {
        return None;
    }
    let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    Some((hi - lo) / (v.iter().sum::<f64>() / v.len() as f64))
}

/// A share as a percentage to one decimal; "-" for none.
fn pct(x: f64) -> String {
    if x.is_nan() { "-".to_string() } else { format!("{:.1}%", 100.0 * x) }
}

/// "median / p90 / max" of `v` as percentages (the max of none is 0, as in the error table).
fn median_p90_max(v: Vec<f64>) -> String {
    let max = v.iter().copied().fold(0.0, f64::max);
    format!("{} / {} / {}", pct(quantile(v.clone(), 0.5)), pct(quantile(v, 0.9)), pct(max))
}

/// How often a model's pick (a configuration's lowest `predicted`) is within 2% of the fastest of its rows by
/// `value`; and, where every row has the same rounds (more than one), the same judged on each round's values alone
/// (`per_round`: within, configurations with a value for every row in that round).
struct ChoiceCounts {
    within: usize,
    configs: usize,
    per_round: Vec<(usize, usize)>,
}

fn choice_counts(
    rows: &[Row],
    predicted: &dyn Fn(&Row) -> f64,
    value: &dyn Fn(&Row) -> f64,
    rounds: &dyn Fn(&Row) -> Vec<Option<f64>>,
) -> ChoiceCounts {
    let n_rounds = rows.first().map_or(0, |r| rounds(r).len());
    let by_round = n_rounds > 1 && rows.iter().all(|r| rounds(r).len() == n_rounds);
    let mut counts =
        ChoiceCounts { within: 0, configs: 0, per_round: vec![(0, 0); if by_round { n_rounds } else { 0 }] };
    let mut keys: Vec<&(String, u32, u32)> = rows.iter().map(|r| &r.key).collect();
    keys.dedup();
    for key in keys {
        let rs: Vec<&Row> = rows.iter().filter(|r| &r.key == key).collect();
        let pick = rs.iter().min_by(|a, b| predicted(a).total_cmp(&predicted(b))).expect("non-empty");
        let fastest = rs.iter().map(|r| value(r)).fold(f64::INFINITY, f64::min);
        counts.configs += 1;
        counts.within += (value(pick) / fastest - 1.0 <= 0.02) as usize;
        let pick_rounds = rounds(pick);
        for (k, (within_k, configs_k)) in counts.per_round.iter_mut().enumerate() {
            let times: Option<Vec<f64>> = rs.iter().map(|r| rounds(r)[k]).collect();
            if let (Some(times), Some(pick_time)) = (times, pick_rounds[k]) {
                let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
                *configs_k += 1;
                *within_k += (pick_time / fastest - 1.0 <= 0.02) as usize;
            }
        }
    }
    counts
}

/// The section that sets the two statistics side by side: how far one row's value moves between rounds, and the
/// held-out errors and choices (over the rounds and per round) each gives.
fn write_statistics_section(
    doc: &mut String,
    rows: &[Row],
    both: &BTreeMap<RowKey, BothStatistics>,
    judged: TimeStatistic,
) {
    let stats_of = |r: &Row| both.get(&(r.key.0.clone(), r.key.1, r.key.2, r.schedule.clone()));
    if rows.iter().any(|r| stats_of(r).is_none()) {
        return;
    }
    let spread_summary = |v: Vec<f64>| if v.is_empty() { "-".to_string() } else { median_p90_max(v) };
    let mut table = Vec::new();
    let mut any_spread = false;
    for statistic in [TimeStatistic::Median, TimeStatistic::Fastest] {
        let pick = |b: &BothStatistics| match statistic {
            TimeStatistic::Median => (b.median, b.median_rounds.clone()),
            TimeStatistic::Fastest => (b.fastest, b.fastest_rounds.clone()),
        };
        let value = |r: &Row| pick(stats_of(r).expect("checked above")).0;
        let rounds = |r: &Row| pick(stats_of(r).expect("checked above")).1;
        let spreads = |long: bool| -> Vec<f64> {
            rows.iter().filter(|r| !long || r.key.2 >= 8192).filter_map(|r| round_spread(&rounds(r))).collect()
        };
        let (all, long) = (spreads(false), spreads(true));
        any_spread |= !all.is_empty();
        let errors: Vec<f64> =
            rows.iter().filter(|r| !r.calibration).map(|r| (r.predicted_us - value(r)).abs() / value(r)).collect();
        let counts = choice_counts(rows, &|r| r.predicted_us, &value, &rounds);
        let name = match statistic {
            TimeStatistic::Median => "median of the repetitions",
            TimeStatistic::Fastest => "fastest repetition",
        };
        table.push(vec![
            if statistic == judged { format!("**{name}** (this report's)") } else { name.to_string() },
            spread_summary(all),
            spread_summary(long),
            median_p90_max(errors),
            format!("{} of {}", counts.within, counts.configs),
            if counts.per_round.is_empty() {
                "-".to_string()
            } else {
                counts.per_round.iter().map(|(w, _)| w.to_string()).collect::<Vec<_>>().join(", ")
            },
        ]);
    }
    let _ = writeln!(
        doc,
        "## Which repetition stands for a run\n\nEach run times the main kernel over its repetitions; the raw file \
         keeps their median and the fastest. On the long rows the median can mix the GPU's rested state with the \
         slower one its power management steps down to under sustained load (docs/gpu.md, \"At rest and \
         sustained\"); the fastest repetition is the run's least slowed one. Spread between rounds: (max − min) / \
         mean of one row's value over its rounds, summarized over the rows (median / p90 / max). Where a row moves \
         between rounds by more than two schedules differ, which of them measures fastest depends on the round: \
         the last column counts the choices within 2% judged on each round alone.{}\n\n{}",
        if any_spread { "" } else { " One round per row here: no spread between rounds." },
        md_table(
            &[
                "statistic",
                "spread between rounds, all rows",
                "seqlen ≥ 8192",
                "held-out error (median / p90 / max)",
                "choice within 2%",
                "per round"
            ],
            &table
        )
    );
}

/// The measurements as the report reads them (`main_ms`, `main_ms_rounds`): the medians as measured, or with
/// `--statistic fastest` the fastest repetitions in their place, without the rows' SM clocks (NVML's median over
/// every repetition, not the fastest one's: scaled by it, a rested time would be "corrected" for a clock it did
/// not run at). A successful row without them (a file from before they were kept) is an error, not a silent
/// fallback to the median.
fn with_statistic(mut raw: Raw, statistic: TimeStatistic) -> Result<Raw> {
    if statistic == TimeStatistic::Median {
        return Ok(raw);
    }
    for r in &mut raw.rows {
        (r.sm_mhz, r.clock_limited_share) = (None, None);
        if r.status != "ok" {
            continue;
        }
        if r.main_min_ms.is_none() {
            return Err(bad_input(format!(
                "--statistic fastest: the measurements of {} hd{} s{} {} have no fastest repetition (a raw file \
                 from before dashc kept it); use --statistic median",
                r.mask, r.head_dim, r.seqlen, r.schedule
            )));
        }
        r.main_ms = r.main_min_ms;
        r.main_ms_rounds = std::mem::take(&mut r.main_min_ms_rounds);
    }
    Ok(raw)
}

/// A raw row's values per round: the per-round list, or for a one-round file its one value.
fn rounds_of(one: Option<f64>, each: &[Option<f64>]) -> Vec<Option<f64>> {
    if each.is_empty() { vec![one] } else { each.to_vec() }
}

fn load_raw(path: &Path) -> Result<Raw> {
    let text = std::fs::read_to_string(path).map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())))?;
    let raw: Raw = serde_json::from_str(&text)
        .map_err(|e| bad_input(format!("invalid validation raw file {}: {e}", path.display())))?;
    if raw.format != RAW_FORMAT || raw.schema_version != SCHEMA_VERSION {
        return Err(bad_input(format!("{} is not a {RAW_FORMAT} file of schema {SCHEMA_VERSION}", path.display())));
    }
    if !(1..=crate::args::MAX_SMS).contains(&raw.sms) {
        return Err(bad_input(format!(
            "{}: sms must be between 1 and {} (got {})",
            path.display(),
            crate::args::MAX_SMS,
            raw.sms
        )));
    }
    Ok(raw)
}

/// One raw file, or several merged: their rounds of every row taken together (each row becomes the median over
/// all of them), with the Gantt timelines of the first file that has any (and that file's folder, where they
/// lie). The files must agree on the device, main loop and launch, and hold the same rows.
fn merge_raws(mut loaded: Vec<(Raw, PathBuf, PathBuf)>) -> Result<(Raw, PathBuf)> {
    if loaded.len() == 1 {
        let (raw, dir, _) = loaded.remove(0);
        return Ok((raw, dir));
    }
    let key = |r: &RawRow| (r.mask.clone(), r.head_dim, r.seqlen, r.heads, r.batch, r.schedule.clone());
    let paths: Vec<PathBuf> = loaded.iter().map(|(_, _, p)| p.clone()).collect();
    for (i, p) in paths.iter().enumerate() {
        if paths[..i].contains(p) {
            return Err(bad_input(format!("{} is given twice: its rounds would count double", p.display())));
        }
    }
    // In round order, so that each row's rounds are too; two files may not hold the same round.
    loaded.sort_by_key(|(r, _, _)| r.first_round);
    for pair in loaded.windows(2) {
        let (a, b) = (&pair[0].0, &pair[1].0);
        if u64::from(a.first_round) + u64::from(a.rounds) > u64::from(b.first_round) {
            return Err(bad_input(format!(
                "two files hold round {} (`--first-round` numbers a call's rounds): not merged",
                b.first_round
            )));
        }
    }
    let (first, _, first_path) = &loaded[0];
    for (raw, _, path) in loaded.iter().skip(1) {
        let differs = [
            ("device", &first.device, &raw.device),
            ("main loop", &first.arch, &raw.arch),
            ("compute capability", &first.compute_cap, &raw.compute_cap),
        ]
        .into_iter()
        .find(|(_, a, b)| a != b);
        if let Some((what, a, b)) = differs {
            return Err(bad_input(format!(
                "{} has {what} '{b}', {} has '{a}': not merged",
                path.display(),
                first_path.display()
            )));
        }
        if raw.max_heads_in_flight != first.max_heads_in_flight {
            return Err(bad_input(format!(
                "{} was measured with --max-heads-in-flight {}, {} with {}: not merged",
                path.display(),
                raw.max_heads_in_flight.as_deref().unwrap_or("(default)"),
                first_path.display(),
                first.max_heads_in_flight.as_deref().unwrap_or("(default)")
            )));
        }
        if raw.sms != first.sms {
            return Err(bad_input(format!(
                "{} was predicted for {} SMs, {} for {}: not merged",
                path.display(),
                raw.sms,
                first_path.display(),
                first.sms
            )));
        }
        if raw.launch() != first.launch() {
            return Err(bad_input(format!(
                "{} was measured with the {} launch, {} with the {} one: not merged",
                path.display(),
                raw.launch().name(),
                first_path.display(),
                first.launch().name()
            )));
        }
        let mut a: Vec<_> = first.rows.iter().map(key).collect();
        let mut b: Vec<_> = raw.rows.iter().map(key).collect();
        a.sort();
        b.sort();
        if a != b {
            return Err(bad_input(format!(
                "{} and {} measured different rows (configurations or schedules): not merged",
                first_path.display(),
                path.display()
            )));
        }
    }
    let rounds: u32 = loaded.iter().map(|(r, _, _)| r.rounds).sum();
    let mut rows = Vec::new();
    for row in &loaded[0].0.rows {
        let same: Vec<&RawRow> =
            loaded.iter().map(|(r, _, _)| r.rows.iter().find(|x| key(x) == key(row)).expect("same rows")).collect();
        // Each file's rounds: its per-round medians, or for a one-round file its one median; the same for the
        // fastest repetitions, which files from before they were kept lack (null rounds).
        let per_round: Vec<Option<f64>> = same.iter().flat_map(|r| rounds_of(r.main_ms, &r.main_ms_rounds)).collect();
        let per_round_min: Vec<Option<f64>> =
            same.iter().flat_map(|r| rounds_of(r.main_min_ms, &r.main_min_ms_rounds)).collect();
        let failed = same.iter().find(|r| r.status != "ok");
        // The median where every file (or round) has a value. A clock is taken so too, as for the rounds of one
        // call; a time also needs every round to have passed.
        let some = |v: Vec<Option<f64>>| -> Option<f64> {
            let v: Option<Vec<f64>> = v.into_iter().collect();
            v.filter(|v| !v.is_empty()).map(|v| quantile(v, 0.5))
        };
        let all = |v: Vec<Option<f64>>| some(v).filter(|_| failed.is_none());
        rows.push(RawRow {
            status: failed.map_or_else(|| row.status.clone(), |r| r.status.clone()),
            main_ms: all(per_round.clone()),
            // Only medians are kept of the whole backward: the median of the files' medians.
            total_ms: all(same.iter().map(|r| r.total_ms).collect()),
            main_ms_rounds: if rounds > 1 { per_round } else { Vec::new() },
            main_min_ms: all(per_round_min.clone()),
            main_min_ms_rounds: if rounds > 1 && per_round_min.iter().any(Option::is_some) {
                per_round_min
            } else {
                Vec::new()
            },
            sm_mhz: some(same.iter().map(|r| r.sm_mhz).collect()),
            clock_limited_share: some(same.iter().map(|r| r.clock_limited_share).collect()),
            ..row.clone()
        });
    }
    let gantt_at = loaded.iter().position(|(r, _, _)| !r.gantt.is_empty()).unwrap_or(0);
    let joined = |f: fn(&Raw) -> &String| distinct_joined(loaded.iter().map(|(r, _, _)| f(r).as_str()));
    let (gantt, dir) = (loaded[gantt_at].0.gantt.clone(), loaded[gantt_at].1.clone());
    let merged = Raw {
        command: joined(|r| &r.command),
        tool: joined(|r| &r.tool),
        date: joined(|r| &r.date),
        commit: joined(|r| &r.commit),
        driver: joined(|r| &r.driver),
        // Known only where every file knows its card.
        gpu_uuid: loaded
            .iter()
            .map(|(r, _, _)| r.gpu_uuid.as_deref())
            .collect::<Option<Vec<&str>>>()
            .map(distinct_joined),
        rounds,
        first_round: loaded[0].0.first_round,
        rows,
        gantt,
        ..loaded[0].0.clone()
    };
    Ok((merged, dir))
}

/// The distinct values in their first order, joined by " and " (a merged file's provenance fields).
fn distinct_joined<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for v in values {
        if !distinct.contains(&v) {
            distinct.push(v);
        }
    }
    distinct.join(" and ")
}

/// How the report's predictions use the costs' memory roofs, if any: the bandwidths, and the probes they were
/// fitted on (shapes outside the calibration and validation sets).
fn roof_description(costs: &CostsFile) -> String {
    let roofed: Vec<(&crate::costs_file::CostsEntry, schedulers::MemoryRoof)> =
        costs.entries.iter().filter_map(|e| e.costs.memory_roof.map(|r| (e, r))).collect();
    let Some(&(_, first)) = roofed.first() else {
        return String::new();
    };
    let one_exponent = roofed.iter().all(|(_, r)| r.exponent == first.exponent);
    let formula = if one_exponent {
        format!("(T^{e} + M^{e})^(1/{e})", e = first.exponent)
    } else {
        "(T^e + M^e)^(1/e)".to_string()
    };
    let roofs: Vec<String> = roofed
        .iter()
        .map(|(e, r)| {
            let probes: Vec<String> = e.memory_probes.iter().map(|p| format!("{} s{}", p.mask, p.seqlen)).collect();
            format!(
                "head dim {}: {:.2} TB/s{}, {}",
                e.head_dim,
                r.bandwidth / 1e6,
                if one_exponent { String::new() } else { format!(" (e = {})", r.exponent) },
                if probes.is_empty() {
                    "no probes recorded".to_string()
                } else {
                    let n = probes.len();
                    format!("fitted on {n} probe{} ({})", if n == 1 { "" } else { "s" }, probes.join(", "))
                }
            )
        })
        .collect();
    let without: Vec<String> =
        costs.entries.iter().filter(|e| e.costs.memory_roof.is_none()).map(|e| e.head_dim.to_string()).collect();
    format!(
        ", blended with the time the problem's DRAM traffic takes at the calibrated memory roof, {formula} \
         (docs/calibration.md, \"Memory roof\"; {}{})",
        roofs.join("; "),
        if without.is_empty() { String::new() } else { format!("; no roof at head dim {}", without.join(", ")) }
    )
}

/// A note when the costs were calibrated on another card than the one (or ones, joined by " and ") measured here:
/// the names matched, or the report would not have been written, so it is another card of the same kind. None
/// where either side does not know its card, or both are the same card.
fn card_note(calibrated_on: Option<&str>, measured_on: Option<&str>) -> Option<String> {
    let (c, m) = (calibrated_on?, measured_on?);
    (m != c).then(|| {
        format!(
            "**Another card.** The costs were calibrated on {c}, these measurements ran on {m}: the same kind of GPU, \
             another card. The predictions carry the first card's costs over, and the trace overhead below (in-order \
             measurements only) compares one card's trace builds with another's timing builds."
        )
    })
}

/// The GPU part: every configuration x schedule in its timing build, then the two traced Gantt cases.
/// The launch `validate` measures with: `--launch`, else in-order, the launch `dashc calibrate` traces (so that the
/// calibration rows are like for like). The persistent launch, the sm90 default of `run` and `bench`, is validated
/// on request (docs/validation-sm90-persistent.md).
fn measured_launch(configs: &ConfigsArgs) -> LaunchPolicy {
    crate::args::launch_or_in_order(configs.launch)
}

fn measure(args: &ValidateArgs, costs: &CostsFile, costs_path: &Path) -> Result<Raw> {
    let plan = Plan::from_args(&args.configs)?;
    let setups: Vec<_> = plan.configs.iter().map(|c| Ok((*c, plan.setup(c)?))).collect::<Result<_>>()?;
    if let Some(raw) = &args.raw {
        let dir = raw.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(bad_input(format!("cannot write {}: folder {} does not exist", raw.display(), dir.display())));
        }
    }
    let nvcc = find_nvcc()?;
    let device = probe_device()?;
    costs.check_gpu(costs_path, &device.name)?;
    let target = Target::for_device(args.gpu.arch, &device)?;
    for entry in &costs.entries {
        crate::gpu::check_costs_main_loop(&entry.costs, costs_path, &target, entry.block_m, entry.head_dim)?;
    }
    let mut kernels = Vec::new();
    for (_, s) in &setups {
        let k = kernel_config(&s.problem, &s.mask, true, &target)?;
        if !kernels.contains(&k) {
            kernels.push(k);
        }
    }
    eprintln!("validate: building {} kernel variants", kernels.len());
    prebuild(&nvcc, &args.gpu.work_dir, &kernels, &target.env)?;
    // Per configuration, each schedule's deterministic timing results, one per round (round 1's schedule order).
    let rounds = args.rounds.count;
    let round_numbers = args.rounds.numbers()?;
    let mut measured: Vec<Vec<(String, Vec<HarnessResult>)>> = vec![Vec::new(); setups.len()];
    for round in round_numbers.clone() {
        let (order, reverse) = round_order(setups.len(), round);
        for i in order {
            let (c, setup) = &setups[i];
            let mut label = format!("{} mask, head dim {}, seqlen {}", mask_name(c.mask), c.head_dim, c.seqlen);
            if args.rounds.numbered() {
                label = format!("round {round} of {}, {label}", round_numbers.end());
            }
            eprintln!("validate: {label}");
            for o in measure_setup(setup, &args.gpu, &target, &nvcc, false, reverse).with_context(|| label.clone())? {
                if let Outcome::Done(m) = o {
                    match measured[i].iter_mut().find(|(name, _)| *name == m.schedule) {
                        Some((_, results)) => results.push(m.deterministic),
                        None => measured[i].push((m.schedule, vec![m.deterministic])),
                    }
                }
            }
        }
    }
    let mut rows = Vec::new();
    for ((c, _), schedules) in setups.iter().zip(measured) {
        for (schedule, results) in schedules {
            let failed = results.iter().find(|r| r.status != "ok");
            let median_of = |value: fn(&HarnessResult) -> Option<f64>| -> Option<f64> {
                let values: Option<Vec<f64>> = results.iter().map(value).collect();
                values.filter(|_| failed.is_none()).map(|v| quantile(v, 0.5))
            };
            let clocks = clocks_of(&results);
            rows.push(RawRow {
                mask: mask_name(c.mask).to_string(),
                head_dim: c.head_dim,
                heads: c.heads,
                seqlen: c.seqlen,
                batch: c.batch,
                schedule,
                status: failed.unwrap_or(&results[0]).status.clone(),
                main_ms: median_of(|r| r.time_ms.main_median),
                total_ms: median_of(|r| r.time_ms.total_median),
                main_ms_rounds: if rounds > 1 {
                    results.iter().map(|r| r.time_ms.main_median).collect()
                } else {
                    Vec::new()
                },
                main_min_ms: median_of(|r| r.time_ms.main_min),
                main_min_ms_rounds: if rounds > 1 {
                    results.iter().map(|r| r.time_ms.main_min).collect()
                } else {
                    Vec::new()
                },
                sm_mhz: clocks.map(|(mhz, _)| mhz),
                clock_limited_share: clocks.map(|(_, share)| share),
            });
        }
    }
    let mut gantt = Vec::new();
    if let Some(raw_path) = &args.raw {
        let stem = raw_path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        let dir = raw_path.parent().unwrap_or(Path::new("."));
        for (mask, schedule) in [(MaskArg::Full, "shift"), (MaskArg::Causal, "descending")] {
            let (hd, seqlen) = (128, args.gantt_seqlen);
            let (heads, batch) = (args.configs.hidden / hd, (args.configs.tokens / seqlen).max(1));
            let shape = shape_for(
                &args.configs.costs,
                Shape { mask, head_dim: hd, heads, seqlen, batch },
                schedule,
                MachineArgs { sms: args.configs.sms, launch: measured_launch(&args.configs) },
                &None,
            )?;
            let setup = Setup::from_args(&shape)?;
            let sched = setup.schedules[0].build(
                setup.problem,
                setup.mask.clone(),
                setup.tile_mask.clone(),
                setup.machine,
                &setup.costs,
            )?;
            eprintln!("validate: trace of {schedule}, {} mask, seqlen {seqlen}", mask_name(mask));
            let run =
                run_traced(&sched, &args.gpu, &target, &nvcc, &args.gpu.work_dir.join("validate-trace.txt"), false)?;
            let file = format!("{stem}-gantt-{}.json", mask_name(mask));
            let decoupled = target.main_loop.dq_writers() > 0;
            let timeline = measured_file(&setup, vec![measured_schedule(&sched, &run.trace.units, decoupled)]);
            write_atomic(&dir.join(&file), &serde_json::to_string(&timeline)?)?;
            gantt.push(GanttRaw {
                mask: mask_name(mask).into(),
                head_dim: hd,
                heads,
                seqlen,
                batch,
                schedule: schedule.into(),
                file,
                traced_main_ms: run.result.time_ms.main_median,
            });
        }
    }
    let (tool, date, commit) = provenance();
    let raw = Raw {
        format: RAW_FORMAT.into(),
        schema_version: SCHEMA_VERSION,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        tool,
        date,
        commit,
        device: device.name.clone(),
        compute_cap: device.compute_cap.clone(),
        driver: device.driver.clone(),
        gpu_uuid: device.uuid.clone(),
        arch: target.describe(),
        launch: Some(measured_launch(&args.configs)),
        rounds,
        first_round: args.rounds.first_round,
        max_heads_in_flight: args.configs.max_heads_in_flight.clone(),
        sms: args.configs.sms,
        rows,
        gantt,
    };
    if let Some(path) = &args.raw {
        write_atomic(path, &(serde_json::to_string_pretty(&raw)? + "\n"))?;
    }
    Ok(raw)
}

/// The median over `results` of their SM clock medians, and the share of all their samples held down by a
/// limit; `None` unless every result has samples.
fn clocks_of(results: &[HarnessResult]) -> Option<(f64, f64)> {
    let clocks: Option<Vec<_>> = results.iter().map(|r| r.clocks.as_ref().filter(|c| c.samples > 0)).collect();
    let clocks = clocks.filter(|c| !c.is_empty())?;
    let samples: u32 = clocks.iter().map(|c| c.samples).sum();
    let limited: u32 = clocks.iter().map(|c| c.limited).sum();
    Some((quantile(clocks.iter().map(|c| c.sm_mhz_median).collect(), 0.5), f64::from(limited) / f64::from(samples)))
}

/// One (configuration, schedule) of the report.
struct Row {
    key: (String, u32, u32),
    heads: u32,
    batch: u32,
    schedule: String,
    calibration: bool,
    measured_us: f64,
    /// With several rounds, each round's main-kernel median, µs (none for a round without one).
    measured_rounds: Vec<Option<f64>>,
    predicted_us: f64,
    /// The SM clock while it was measured, MHz, and the share of clock samples held down by a limit.
    clocks: Option<(f64, f64)>,
    /// The uncalibrated (idealized) model's makespan, in tile-compute units.
    ideal: f64,
    /// The calibrated model with every phase at its cost (no variability) and no memory roof, µs.
    constant: f64,
    /// The calibrated model without its memory roof (the simulator's prediction alone), µs.
    without_roof: f64,
    /// The calibrated costs without the kernel terms (`poll` 0, `kernel_epilogues` off), µs.
    without_kernel_terms: f64,
    /// The calibrated phase costs with free hand-offs and no kernel terms: the paper's model, measured constants.
    free_handoffs: f64,
}

impl Row {
    fn error(&self) -> f64 {
        (self.predicted_us - self.measured_us).abs() / self.measured_us
    }
}

fn report(
    args: &ValidateArgs,
    costs: &CostsFile,
    costs_path: &Path,
    raw: &Raw,
    both: Option<&BTreeMap<RowKey, BothStatistics>>,
    raw_dir: &Path,
    doc_dir: &Path,
) -> Result<()> {
    // The predictions use the launch the measurements were taken with.
    let launch = raw.launch();
    if let Some(asked) = args.configs.launch
        && LaunchPolicy::from(asked) != launch
    {
        return Err(bad_input(format!(
            "the measurements were taken with the {} launch; leave out --launch or give --launch {}",
            launch.name(),
            launch.name()
        )));
    }
    let machine = MachineArgs { sms: raw.sms, launch };
    // Group measurements by configuration, in (mask, head dim, seqlen) order.
    let mut groups: BTreeMap<(String, u32, u32), Vec<&RawRow>> = BTreeMap::new();
    for r in raw.rows.iter().filter(|r| r.status == "ok" && r.main_ms.is_some()) {
        groups.entry((r.mask.clone(), r.head_dim, r.seqlen)).or_default().push(r);
    }
    if groups.is_empty() {
        return Err(bad_input("the measurements hold no successful run"));
    }
    let uncalibrated = ShapeOnly::try_parse_from(["dashc"]).context("default shape flags")?.shape.costs;
    let mut rows: Vec<Row> = Vec::new();
    for ((mask, hd, seqlen), ms) in &groups {
        let names: Vec<&str> = ms.iter().map(|r| r.schedule.as_str()).collect();
        let (heads, batch) = (ms[0].heads, ms[0].batch);
        // Each schedule's prediction before and after the memory roof (equal where the costs have none): the roof
        // is a function of the first, so one simulation pass gives both.
        type Predictions = BTreeMap<String, (f64, f64)>;
        let predict = |costs: &CostArgs, tweak: &dyn Fn(CostModel) -> CostModel| -> Result<Predictions> {
            let shape = shape_for(
                costs,
                Shape { mask: mask_arg(mask)?, head_dim: *hd, heads, seqlen: *seqlen, batch },
                &names.join(","),
                machine,
                // Only where a search is among the rows (it may have failed in this configuration); the
                // measurements' own limit unless the command line gives one.
                &args
                    .configs
                    .max_heads_in_flight
                    .clone()
                    .or(raw.max_heads_in_flight.clone())
                    .filter(|_| names.contains(&"search")),
            )?;
            let mut setup = Setup::from_args(&shape)?;
            setup.costs = tweak(setup.costs);
            let out = setup.evaluate_each(false, |e| {
                let simulated = setup.simulated_prediction(&e);
                (
                    e.schedule.name().to_string(),
                    (simulated, setup.costs.with_memory_roof(simulated, e.schedule.problem())),
                )
            })?;
            Ok(out.into_iter().filter_map(|o| if let Outcome::Done(x) = o { Some(x) } else { None }).collect())
        };
        let calibrated = predict(&args.configs.costs, &|c| c)?;
        let ideal = predict(&uncalibrated, &|c| c)?;
        // The simpler models take every phase at its cost (no variability); without variability that is the
        // calibrated prediction itself.
        let varied = costs.entries.iter().any(|e| e.costs.variability.is_some());
        let constant = if varied {
            predict(&args.configs.costs, &|c| CostModel { variability: None, memory_roof: None, ..c })?
        } else {
            calibrated.clone()
        };
        let without_kernel_terms = predict(&args.configs.costs, &|c| CostModel {
            poll: 0.0,
            kernel_epilogues: false,
            kv_load_overlap: false,
            variability: None,
            memory_roof: None,
            ..c
        })?;
        let free_handoffs = predict(&args.configs.costs, &|c| CostModel {
            handoff: 0.0,
            poll: 0.0,
            kernel_epilogues: false,
            kv_load_overlap: false,
            variability: None,
            memory_roof: None,
            ..c
        })?;
        let entry =
            costs.entry(costs_path, *hd, dag_model::default_blocks(*hd).0, dag_model::default_blocks(*hd).1).ok();
        // A shape the memory roof was fitted on is no held-out test of it either.
        let calibration = entry.is_some_and(|e| {
            e.calibrated_on.iter().any(|c| &c.mask == mask && c.seqlen == *seqlen)
                || e.memory_probes.iter().any(|p| &p.mask == mask && p.seqlen == *seqlen)
        });
        // A row the prediction does not produce (a +split whose split, under these flags, splits nothing) is an
        // error, not a panic.
        let lookup = |map: &Predictions, name: &str| {
            map.get(name).copied().ok_or_else(|| {
                bad_input(format!(
                    "validation raw file: schedule {name} ({mask} hd{hd} s{seqlen}) is not among the schedules these \
                     flags build (machine, launch or schedules differ from the measurement's)"
                ))
            })
        };
        for r in ms {
            rows.push(Row {
                key: (mask.clone(), *hd, *seqlen),
                heads,
                batch,
                schedule: r.schedule.clone(),
                calibration,
                measured_us: r.main_ms.unwrap_or(f64::NAN) * 1000.0,
                measured_rounds: r.main_ms_rounds.iter().map(|m| m.map(|ms| ms * 1000.0)).collect(),
                predicted_us: lookup(&calibrated, &r.schedule)?.1,
                clocks: r.sm_mhz.zip(r.clock_limited_share),
                // The simpler models have no roof: their first figure is their prediction.
                ideal: lookup(&ideal, &r.schedule)?.0,
                constant: lookup(&constant, &r.schedule)?.0,
                without_roof: lookup(&calibrated, &r.schedule)?.0,
                without_kernel_terms: lookup(&without_kernel_terms, &r.schedule)?.0,
                free_handoffs: lookup(&free_handoffs, &r.schedule)?.0,
            });
        }
    }

    let mut doc = String::new();
    let _ = writeln!(doc, "# Validation: predicted against measured time\n");
    let _ = writeln!(
        doc,
        "Written by `dashc validate` from the measurements in `{}` ({}, {} on {}, driver {}, built for {}; \
         commit {}, {}) and the costs in `{}` (calibrated on {}: {}).\n",
        if args.from_raw.is_empty() {
            args.raw.as_ref().map_or("(not saved)".to_string(), |p| p.display().to_string())
        } else {
            args.from_raw.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join("` and `")
        },
        raw.tool,
        raw.date,
        raw.device,
        raw.driver,
        raw.arch,
        raw.commit,
        raw.command,
        costs_path.display(),
        costs.gpu,
        costs.created_by
    );
    if let Some(note) = card_note(costs.gpu_uuid.as_deref(), raw.gpu_uuid.as_deref()) {
        let _ = writeln!(doc, "{note}\n");
    }
    let rounds = if args.from_raw.len() > 1 {
        format!(
            ", the median over {} rounds from {} files merged (`--from-raw` given {} times; `--first-round` sets a \
             call's order, and each file's command line says which it ran)",
            raw.rounds,
            args.from_raw.len(),
            args.from_raw.len()
        )
    } else if raw.rounds > 1 {
        format!(
            ", the median over {} rounds run in alternating order (`--rounds`; each row's rounds are in the raw file)",
            raw.rounds
        )
    } else {
        String::new()
    };
    let statistic = match args.statistic {
        TimeStatistic::Median => "the median main-kernel time",
        TimeStatistic::Fastest => {
            "the fastest repetition's main-kernel time (`--statistic fastest`: on the long rows, the state before \
             the GPU's power management steps down under sustained load; the SM clock, sampled over every \
             repetition, is left out)"
        }
    };
    let _ = writeln!(
        doc,
        "Measured: {statistic} of the deterministic timing build (CUDA events; no trace code){}, \
         which is what the simulator predicts (pre- and post-processing are not modelled). Predicted: the \
         simulated makespan of the same schedule on {} SMs with the {} launch (the measurements' own) under the \
         calibrated costs{}{}. Error = |predicted − measured| / measured.\n",
        rounds,
        machine.sms,
        launch.name(),
        match costs.entries.iter().find_map(|e| e.costs.variability) {
            Some(v) => format!(
                ", the mean of {} simulated runs whose phase durations are drawn around their costs with the \
                 calibration's spread (docs/calibration.md, \"Phase variability\")",
                v.runs
            ),
            None => String::new(),
        },
        roof_description(costs)
    );
    // Calibration and held-out sets.
    // Each (head dim, mask, seqlen) once, in the file's order.
    let shape_list = |shapes: &dyn Fn(&crate::costs_file::CostsEntry) -> Vec<(String, u32)>| {
        let mut list: Vec<String> = Vec::new();
        for e in &costs.entries {
            for (mask, seqlen) in shapes(e) {
                let s = format!("head dim {}, {mask} mask, seqlen {seqlen}", e.head_dim);
                if !list.contains(&s) {
                    list.push(s);
                }
            }
        }
        list
    };
    let calib_sets = shape_list(&|e| e.calibrated_on.iter().map(|c| (c.mask.clone(), c.seqlen)).collect());
    let probe_sets = shape_list(&|e| e.memory_probes.iter().map(|p| (p.mask.clone(), p.seqlen)).collect());
    let probes = if probe_sets.is_empty() {
        String::new()
    } else {
        format!(
            " **Memory probes** (traced by `dashc calibrate` for the memory roof alone, not pooled into the phase \
             costs; a row of the same shape would count as calibration): {}.",
            probe_sets.join("; ")
        )
    };
    let _ = writeln!(
        doc,
        "**Calibration set** (traced by `dashc calibrate`, with the {} launch, schedules {}): {}.{probes} **Held \
         out**: every other configuration below. The error targets are judged on the held-out rows only.{}\n",
        costs.traced_launch().name(),
        costs
            .entries
            .iter()
            .flat_map(|e| e.calibrated_on.iter().map(|c| c.schedule.clone()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", "),
        calib_sets.join("; "),
        if launch == costs.traced_launch() {
            String::new()
        } else {
            format!(
                " The measurements below ran with the {} launch: the rows marked calibration share only their \
                 shape and schedule with the calibration traces.",
                launch.name()
            )
        }
    );
    let _ = writeln!(doc, "## Fitted costs\n\n```\n{}```\n", summary(costs));

    // Error distribution.
    let stats = |sel: &dyn Fn(&Row) -> bool| {
        let e: Vec<f64> = rows.iter().filter(|r| sel(r)).map(Row::error).collect();
        (e.len(), quantile(e.clone(), 0.5), quantile(e.clone(), 0.9), e.iter().copied().fold(0.0, f64::max))
    };
    let mut erows = Vec::new();
    for (label, sel) in [
        ("held out", &(|r: &Row| !r.calibration) as &dyn Fn(&Row) -> bool),
        ("held out, full", &|r: &Row| !r.calibration && r.key.0 == "full"),
        ("held out, causal", &|r: &Row| !r.calibration && r.key.0 == "causal"),
        ("held out, head dim 64", &|r: &Row| !r.calibration && r.key.1 == 64),
        ("held out, head dim 128", &|r: &Row| !r.calibration && r.key.1 == 128),
        ("calibration set", &|r: &Row| r.calibration),
        ("all", &|_: &Row| true),
    ] {
        let (n, med, p90, max) = stats(sel);
        erows.push(vec![label.to_string(), n.to_string(), pct(med), pct(p90), pct(max)]);
    }
    let (_, med, _, max) = stats(&|r: &Row| !r.calibration);
    let _ = writeln!(doc, "## Error distribution\n\n{}", md_table(&["rows", "n", "median", "p90", "max"], &erows));
    let _ = writeln!(
        doc,
        "Targets (held out): median ≤ 5% — {} ({}); max ≤ 15% — {} ({}).\n",
        if med <= 0.05 { "met" } else { "missed" },
        pct(med),
        if max <= 0.15 { "met" } else { "missed" },
        pct(max)
    );

    // Schedule choice.
    let mut choice_rows = Vec::new();
    let mut ideal_within = 0;
    // Misses where the model predicts the measured fastest within 1% of its pick: a tie at its resolution.
    let (mut close_misses, mut misses) = (0, 0);
    // The choice as counted here and in the statistics section: one rule (`choice_counts`).
    let counts = choice_counts(&rows, &|r| r.predicted_us, &|r| r.measured_us, &|r| r.measured_rounds.clone());
    let (within, configs) = (counts.within, counts.configs);
    let mut keys: Vec<&(String, u32, u32)> = rows.iter().map(|r| &r.key).collect();
    keys.dedup();
    for key in keys {
        let rs: Vec<&Row> = rows.iter().filter(|r| &r.key == key).collect();
        let best = rs.iter().min_by(|a, b| a.measured_us.total_cmp(&b.measured_us)).expect("non-empty");
        let pick = rs.iter().min_by(|a, b| a.predicted_us.total_cmp(&b.predicted_us)).expect("non-empty");
        let ideal_pick = rs.iter().min_by(|a, b| a.ideal.total_cmp(&b.ideal)).expect("non-empty");
        let loss = pick.measured_us / best.measured_us - 1.0;
        let ideal_loss = ideal_pick.measured_us / best.measured_us - 1.0;
        // How much slower the model thinks the measured fastest is than its pick (0 when it picked it).
        let margin = best.predicted_us / pick.predicted_us - 1.0;
        if loss > 0.02 {
            misses += 1;
            close_misses += (margin < 0.01) as usize;
        }
        ideal_within += (ideal_loss <= 0.02) as usize;
        choice_rows.push(vec![
            format!("{} hd{} s{}", key.0, key.1, key.2),
            if rs[0].calibration { "calibration" } else { "held out" }.to_string(),
            best.schedule.clone(),
            pick.schedule.clone(),
            format!("{:+.1}%", 100.0 * loss),
            format!("{:+.1}%", 100.0 * margin),
            ideal_pick.schedule.clone(),
            format!("{:+.1}%", 100.0 * ideal_loss),
        ]);
    }
    let _ = writeln!(
        doc,
        "## Does the model pick the fastest schedule?\n\nThe calibrated model's choice is the measured fastest or \
         within 2% of it in **{within} of {configs}** configurations ({:.0}%; target ≥ 90%). The idealized, \
         uncalibrated model (compute 1, reduce 0.25, free hand-offs) manages {ideal_within} of {configs}.\n",
        100.0 * within as f64 / configs.max(1) as f64
    );
    let _ = writeln!(
        doc,
        "{}",
        md_table(
            &[
                "configuration",
                "set",
                "measured fastest",
                "calibrated choice",
                "its loss",
                "fastest as predicted",
                "idealized choice",
                "its loss"
            ],
            &choice_rows
        )
    );

    if !counts.per_round.is_empty() {
        let counts: Vec<String> = counts.per_round.iter().map(|(w, n)| format!("{w} of {n}")).collect();
        let _ = writeln!(
            doc,
            "Judged on each round's {} alone, the calibrated choice is within 2% of that round's fastest in {} \
             (rounds in order): between rounds a row's measurement moves, and with it which of two close schedules \
             is fastest.\n",
            match args.statistic {
                TimeStatistic::Median => "medians",
                TimeStatistic::Fastest => "fastest repetitions",
            },
            counts.join(", ")
        );
    }
    let _ = writeln!(
        doc,
        "Its loss: the measured time of the calibrated choice against the measured fastest. Fastest as predicted: the \
         model's prediction for the measured fastest against its prediction for its choice. {}\n",
        if misses == 0 {
            "No choice misses by more than 2%.".to_string()
        } else {
            format!(
                "Choices that miss by more than 2%: {misses} of {configs}; in {close_misses} of them the model \
                 predicts the measured fastest within 1% of its pick, a tie at its resolution."
            )
        }
    );

    match both {
        Some(both) => write_statistics_section(&mut doc, &rows, both, args.statistic),
        None if raw
            .rows
            .iter()
            .any(|r| r.main_min_ms.is_some() || r.main_min_ms_rounds.iter().any(Option::is_some)) =>
        {
            let _ = writeln!(
                doc,
                "## Which repetition stands for a run\n\nNot compared: some measurements keep no fastest \
                 repetition (raw files from before dashc kept it), so only the median is reported.\n"
            );
        }
        None => {}
    }
    write_model_ablation(&mut doc, &rows, costs.entries.iter().any(|e| e.costs.decoupled()));

    // Charts.
    let scatter = Scatter {
        title: format!("dashc: predicted vs measured main-kernel time, {}", raw.device),
        points: rows
            .iter()
            .map(|r| Point {
                measured: r.measured_us,
                predicted: r.predicted_us,
                calibration: r.calibration,
                causal: r.key.0 == "causal",
            })
            .collect(),
    };
    // Charts are named after the document (docs/validation.md: validation-scatter.png), so that two documents
    // in one folder (one per main loop) keep their own.
    let doc_stem =
        args.doc.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "validation".into());
    let scatter_name = format!("{doc_stem}-scatter.png");
    write_atomic_bytes(&doc_dir.join(&scatter_name), &plot::render(&scatter, Format::Png)?)?;
    let _ = writeln!(
        doc,
        "## Predicted against measured\n\n![predicted vs measured]({scatter_name})\n\nSolid lines: ±5%; dashed: ±15%. \
         Open circles are calibration configurations.\n"
    );

    // Gantt pairs.
    if !raw.gantt.is_empty() {
        let _ = writeln!(doc, "## Measured and predicted Gantt charts\n");
    }
    for g in &raw.gantt {
        let path = raw_dir.join(&g.file);
        let measured = TimelineFile::load(&path)?;
        let shape = shape_for(
            &args.configs.costs,
            Shape { mask: mask_arg(&g.mask)?, head_dim: g.head_dim, heads: g.heads, seqlen: g.seqlen, batch: g.batch },
            &g.schedule,
            machine,
            &None,
        )?;
        let predicted = crate::commands::gantt::simulate(&shape, None)?;
        let name = format!("{doc_stem}-gantt-{}.png", g.mask);
        if measured.problem != predicted.problem {
            return Err(bad_input("the measured timeline is of another problem than the prediction"));
        }
        if measured.machine.launch != launch {
            // Raw files from before `validate` traced with the measurements' launch hold in-order traces beside
            // persistent measurements: no like-for-like pair, and no trace overhead either.
            let _ = writeln!(
                doc,
                "### {} mask, head dim {}, seqlen {}, {}\n\nNot drawn: the trace ran with the {} launch, the \
                 measurements with the {} one.\n",
                g.mask,
                g.head_dim,
                g.seqlen,
                g.schedule,
                measured.machine.launch.name(),
                launch.name()
            );
            continue;
        }
        // Measured on top, predicted below, on one time axis (the unit is checked by `Gantt::stacked`).
        let parts = [(&measured, "trace"), (&predicted, "calibrated model")].map(|(file, name)| Part {
            file,
            schedules: file.schedules.iter().take(1).collect(),
            name: name.into(),
        });
        let chart = Gantt::stacked(parts.into(), 1600, None)?;
        write_atomic_bytes(&doc_dir.join(&name), &plot::render(&chart, Format::Png)?)?;
        let row = rows.iter().find(|r| r.key == (g.mask.clone(), g.head_dim, g.seqlen) && r.schedule == g.schedule);
        let plain = row.map(|r| r.measured_us);
        // The chart is one simulation with every phase at its cost; the table's prediction may add the mean over
        // drawn phase durations and the memory roof, which no timeline shows.
        let simulated = predicted.schedules[0].makespan;
        let table_prediction = row.map_or(String::new(), |r| {
            // What each step adds, as the ablation's lines separate them; shown where it moves the printed number.
            let added: Vec<String> = [
                (r.without_roof - r.constant, "the drawn phase durations"),
                (r.predicted_us - r.without_roof, "the memory roof"),
            ]
            .into_iter()
            .filter(|(d, _)| d.abs() >= 0.05)
            .map(|(d, what)| format!("{d:+.1} µs for {what}"))
            .collect();
            if added.is_empty() {
                String::new()
            } else {
                format!(" (the table's prediction, {:.1} µs: {})", r.predicted_us, added.join(", "))
            }
        });
        let _ = writeln!(
            doc,
            "### {} mask, head dim {}, seqlen {} (batch {} x {} heads), {}\n\n![gantt]({name})\n\nTop: measured \
             (trace build, one lane per SM id); bottom: simulated with the calibrated costs, every phase at its \
             cost. Trace makespan {:.1} µs, simulated {:.1} µs{table_prediction}{}.\n",
            g.mask,
            g.head_dim,
            g.seqlen,
            g.batch,
            g.heads,
            g.schedule,
            measured.schedules[0].makespan,
            simulated,
            match (g.traced_main_ms, plain) {
                (Some(t), Some(p)) => format!(
                    "; trace overhead: main kernel {:.1} µs traced vs {:.1} µs plain ({:+.2}%)",
                    t * 1000.0,
                    p,
                    100.0 * (t * 1000.0 / p - 1.0)
                ),
                _ => String::new(),
            }
        );
    }

    // Trace overhead over the calibration runs: a like-for-like pair only when these measurements are of the
    // launch the calibration traced.
    if launch == costs.traced_launch() {
        let mut over = Vec::new();
        for e in &costs.entries {
            for c in &e.calibrated_on {
                let plain =
                    rows.iter().find(|r| r.key == (c.mask.clone(), e.head_dim, c.seqlen) && r.schedule == c.schedule);
                if let (Some(t), Some(p)) = (c.traced_main_ms, plain) {
                    over.push(vec![
                        format!("{} hd{} s{}", c.mask, e.head_dim, c.seqlen),
                        c.schedule.clone(),
                        format!("{:.1}", t * 1000.0),
                        format!("{:.1}", p.measured_us),
                        format!("{:+.2}%", 100.0 * (t * 1000.0 / p.measured_us - 1.0)),
                    ]);
                }
            }
        }
        if !over.is_empty() {
            let _ = writeln!(
                doc,
                "## Trace overhead\n\nMain-kernel median of the trace build (calibration runs) against the timing \
                 build of the same schedule and shape:\n\n{}",
                md_table(&["configuration", "schedule", "traced µs", "plain µs", "overhead"], &over)
            );
        }
    } else {
        let _ = writeln!(
            doc,
            "## Trace overhead\n\nNot measured here: the calibration traces ran with the {} launch, these \
             measurements with the {} one.\n",
            costs.traced_launch().name(),
            launch.name()
        );
    }

    // The full table, with the SM clock where the measurements have it.
    let with_clocks = rows.iter().any(|r| r.clocks.is_some());
    let mut trows = Vec::new();
    for r in &rows {
        let mut row = vec![
            format!("{} hd{} s{} ({}x{})", r.key.0, r.key.1, r.key.2, r.batch, r.heads),
            r.schedule.clone(),
            if r.calibration { "calibration" } else { "held out" }.to_string(),
            format!("{:.1}", r.measured_us),
            format!("{:.1}", r.predicted_us),
            format!("{:+.1}%", 100.0 * (r.predicted_us / r.measured_us - 1.0)),
        ];
        if with_clocks {
            row.push(r.clocks.map_or("-".to_string(), |(mhz, share)| format!("{mhz:.0} ({:.0}%)", 100.0 * share)));
        }
        trows.push(row);
    }
    let mut headers =
        vec!["configuration (batch x heads)", "schedule", "set", "measured µs", "predicted µs", "pred − meas"];
    if with_clocks {
        headers.push("SM MHz (limited)");
    }
    let _ = writeln!(doc, "## Every configuration and schedule\n\n{}", md_table(&headers, &trows));
    if with_clocks {
        let _ = writeln!(
            doc,
            "SM MHz: the median SM clock while the whole backward ran (NVML), and in brackets the share of clock \
             samples that a power or thermal limit held down. The costs are fitted at the calibration runs' \
             clock.\n"
        );
        write_clock_section(&mut doc, &rows);
    }
    write_atomic(&args.doc, &doc)?;
    out!("{}", table(&["rows", "n", "median", "p90", "max"], &erows));
    outln!("model's choice within 2% of the measured best: {within} of {configs} configurations");
    eprintln!("report written to {}", args.doc.display());
    Ok(())
}

/// Rows measured below the calibration's SM clock. The model's costs are times at the clock the calibration
/// traces ran at; a row whose clock a power or thermal limit held lower runs slower than predicted for that reason.
/// The reference clock is the median over the calibration-set rows of these measurements (the traced shapes),
/// since the costs file keeps no clock. Scaling a prediction by reference / row clock assumes every cost scales
/// with the SM clock (memory-bound phases do not quite), so this is a diagnosis of the misses, not a correction
/// the error targets may use.
fn write_clock_section(doc: &mut String, rows: &[Row]) {
    let reference =
        quantile(rows.iter().filter(|r| r.calibration).filter_map(|r| r.clocks.map(|c| c.0)).collect(), 0.5);
    if reference.is_nan() {
        return;
    }
    // A clock at least 1% below the reference (NVML reports in steps of about 15 MHz).
    let slow: Vec<&Row> = rows.iter().filter(|r| r.clocks.is_some_and(|(mhz, _)| mhz < 0.99 * reference)).collect();
    if slow.is_empty() {
        return;
    }
    let scaled = |r: &Row| r.clocks.map_or(r.predicted_us, |(mhz, _)| r.predicted_us * reference / mhz);
    let signed = |pred: f64, meas: f64| format!("{:+.1}%", 100.0 * (pred / meas - 1.0));
    let trows: Vec<Vec<String>> = slow
        .iter()
        .map(|r| {
            let (mhz, share) = r.clocks.expect("filtered on clocks");
            vec![
                format!("{} hd{} s{}", r.key.0, r.key.1, r.key.2),
                r.schedule.clone(),
                format!("{mhz:.0} ({:.0}%)", 100.0 * share),
                format!("{:.1}", r.measured_us),
                format!("{:.1}", r.predicted_us),
                signed(r.predicted_us, r.measured_us),
                format!("{:.1}", scaled(r)),
                signed(scaled(r), r.measured_us),
            ]
        })
        .collect();
    let held_out = |f: &dyn Fn(&Row) -> f64| {
        let e: Vec<f64> =
            rows.iter().filter(|r| !r.calibration).map(|r| (f(r) - r.measured_us).abs() / r.measured_us).collect();
        (quantile(e.clone(), 0.5), quantile(e.clone(), 0.9), e.iter().copied().fold(0.0, f64::max))
    };
    let (m0, p0, x0) = held_out(&|r| r.predicted_us);
    let (m1, p1, x1) = held_out(&scaled);
    let _ = writeln!(
        doc,
        "## The SM clock

{} of {} rows ran at least 1% below the calibration's SM clock ({reference:.0} MHz, the \
         median over the calibration-set rows above). The costs are times at that clock; scaled by {reference:.0} \
         MHz / the row's clock (as if every phase slowed with the clock, which memory-bound ones do not quite), \
         the predictions of these rows would be:\n\n{}\n\
         Held-out error with every prediction so scaled: median {:.1}%, p90 {:.1}%, max {:.1}% (as predicted: \
         {:.1}%, {:.1}%, {:.1}%). A diagnosis of the misses, not a prediction: the model cannot know the clock \
         a power limit will allow, and the error targets are judged on the predictions as made.\n",
        slow.len(),
        rows.len(),
        md_table(
            &[
                "configuration",
                "schedule",
                "SM MHz (limited)",
                "measured µs",
                "predicted µs",
                "pred − meas",
                "clock-scaled µs",
                "scaled − meas"
            ],
            &trows
        ),
        100.0 * m1,
        100.0 * p1,
        100.0 * x1,
        100.0 * m0,
        100.0 * p0,
        100.0 * x0
    );
}

/// One model's prediction of a row, µs.
type Prediction<'a> = dyn Fn(&Row) -> f64 + 'a;

/// "Where the idealized model is wrong": the held-out error of simpler models on the same measurements, each
/// with the kernel effect it leaves out. The idealized model predicts in tile-compute units; one µs-per-unit
/// factor (the median of measured / predicted over the calibration rows) puts it on the measured scale, so
/// that what remains is its shape error, not its unit.
fn write_model_ablation(doc: &mut String, rows: &[Row], decoupled: bool) {
    let scale = quantile(rows.iter().filter(|r| r.calibration).map(|r| r.measured_us / r.ideal).collect(), 0.5);
    // Under decoupled dQ writers (the sm90 main loop) the measured-cost models keep the writers; those have no
    // early semaphore read to miss, so the last step adds the K/V epilogues alone.
    let (kernel_terms, epilogues) = if decoupled {
        ("+ hand-off latency, without the kernel's K/V epilogues (decoupled dQ writers throughout)", "+ K/V epilogues")
    } else {
        (
            "+ hand-off latency, without the kernel's poll and K/V epilogues",
            "+ poll after a missed early read, K/V epilogues",
        )
    };
    // Costs with variability, and costs with a memory roof, each add a line; the last line is the calibrated
    // model.
    let varied = rows.iter().any(|r| r.constant != r.without_roof);
    let roofed = rows.iter().any(|r| r.without_roof != r.predicted_us);
    let ideal = |r: &Row| r.ideal * scale;
    let mut models: Vec<(String, &Prediction)> = vec![
        ("idealized: compute 1, reduce 0.25, free hand-offs (one scale factor fitted)".into(), &ideal),
        ("measured phase costs, free hand-offs (the paper's model with calibrated constants)".into(), &|r| {
            r.free_handoffs
        }),
        (kernel_terms.into(), &|r| r.without_kernel_terms),
        (epilogues.into(), &|r| r.constant),
    ];
    if varied {
        models.push(("+ phase durations drawn around their costs, mean of the runs".into(), &|r| r.without_roof));
    }
    if roofed {
        models.push(("+ the memory roof: blended with the time the DRAM traffic takes".into(), &|r| r.predicted_us));
    }
    if let Some(last) = models.last_mut() {
        last.0.push_str(" (the calibrated model)");
    }
    let held: Vec<&Row> = rows.iter().filter(|r| !r.calibration).collect();
    let mut table_rows = Vec::new();
    for (name, model) in models {
        let signed: Vec<f64> = held.iter().map(|r| (model(r) - r.measured_us) / r.measured_us).collect();
        if signed.is_empty() || signed.iter().any(|e| !e.is_finite()) {
            // No held-out rows, or no calibration rows to scale the idealized model by.
            table_rows.push(vec![name.to_string(), "-".into(), "-".into(), "-".into(), "-".into(), "-".into()]);
            continue;
        }
        let errors: Vec<f64> = signed.iter().map(|e| e.abs()).collect();
        let choice = choice_counts(rows, model, &|r| r.measured_us, &|_| Vec::new());
        table_rows.push(vec![
            name.to_string(),
            pct(quantile(signed, 0.5)),
            pct(quantile(errors.clone(), 0.5)),
            pct(quantile(errors.clone(), 0.9)),
            pct(errors.iter().copied().fold(0.0, f64::max)),
            format!("{} of {}", choice.within, choice.configs),
        ]);
    }
    let _ = writeln!(
        doc,
        "## Where the idealized model is wrong

The same held-out measurements against simpler models; each line adds \
         one effect of the real kernel (docs/calibration.md says what each one is). The signed median shows the \
         direction: a model that leaves out a cost underpredicts.

{}",
        md_table(&["model", "signed median", "median abs. error", "p90", "max", "choice within 2%"], &table_rows)
    );
}

fn md_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}\n", headers.join(" | "), "---|".repeat(headers.len()));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A harness result as the harness prints it, with `clocks` as given (JSON).
    fn result(clocks: &str) -> HarnessResult {
        serde_json::from_str(&format!(
            r#"{{"status":"ok","schedule":"naive","variant":"v","device":"d","sm_count":132,"deterministic":true,
            "units":1,"visits":1,"time_ms":{{"total_median":1.0,"main_median":0.9,"total_min":1.0,"main_min":0.9}},
            "tflops":{{"total":1.0,"main":1.0}},"check":{{"ran":false,"rel_l2_dq":null,"rel_l2_dk":null,
            "rel_l2_dv":null,"tolerance":0.02}},"finite":true,"poison_ok":true,"repeatable":true,"repeat_runs":1,
            "main_kernel":{{"registers":1,"local_bytes":0,"smem_bytes":0}},"clocks":{clocks},
            "spin_error":{{"code":0,"unit":0,"bh":0,"q_tile":0,"wanted_rank":0,"seen":0}}}}"#
        ))
        .expect("a harness line")
    }

    #[test]
    fn a_note_names_another_card_only_when_both_cards_are_known_and_differ() {
        let note = card_note(Some("GPU-aaa"), Some("GPU-bbb")).expect("another card");
        assert!(note.contains("calibrated on GPU-aaa, these measurements ran on GPU-bbb"), "{note}");
        // Merged files from two cards, one of them the calibration's: still not only the calibration's card.
        assert!(card_note(Some("GPU-aaa"), Some("GPU-aaa and GPU-bbb")).is_some());
        assert_eq!(card_note(Some("GPU-aaa"), Some("GPU-aaa")), None);
        // Files from before the UUID was recorded, on either side: nothing to say.
        assert_eq!(card_note(None, Some("GPU-bbb")), None);
        assert_eq!(card_note(Some("GPU-aaa"), None), None);
    }

    fn clocks(mhz: f64, samples: u32, limited: u32) -> String {
        format!(r#"{{"sm_mhz_median":{mhz},"sm_mhz_min":{mhz},"samples":{samples},"limited":{limited}}}"#)
    }

    #[test]
    fn the_clock_of_a_row_needs_every_round_to_have_one() {
        let (a, b, c) =
            (result(&clocks(1980.0, 20, 0)), result(&clocks(1800.0, 20, 5)), result(&clocks(1700.0, 10, 10)));
        // The median of the rounds' medians; the share of all samples (15 of 50), not a mean of shares.
        assert_eq!(clocks_of(&[a.clone(), b.clone(), c]), Some((1800.0, 0.3)));
        // A round without a clock, or with no sample, leaves the row without one.
        assert_eq!(clocks_of(&[a.clone(), result("null")]), None);
        assert_eq!(clocks_of(&[a, result(&clocks(0.0, 0, 0))]), None);
        assert_eq!(clocks_of(&[]), None);
        assert_eq!(clocks_of(&[b]), Some((1800.0, 0.25)));
    }

    fn row(seqlen: u32, calibration: bool, measured_us: f64, predicted_us: f64, mhz: Option<f64>) -> Row {
        Row {
            key: ("full".into(), 64, seqlen),
            heads: 32,
            batch: 1,
            schedule: "shift".into(),
            calibration,
            measured_us,
            measured_rounds: Vec::new(),
            predicted_us,
            clocks: mhz.map(|m| (m, 0.5)),
            ideal: 1.0,
            constant: predicted_us,
            without_roof: predicted_us,
            without_kernel_terms: predicted_us,
            free_handoffs: predicted_us,
        }
    }

    #[test]
    fn rows_below_the_calibration_clock_are_shown_scaled() {
        // Reference: the calibration rows' median clock, 1980 MHz. The held-out row at 1800 MHz predicted 900 µs
        // for a measured 1000: scaled by 1980 / 1800 it is 990 µs, 1% short instead of 10%.
        let rows = [
            row(2048, true, 500.0, 500.0, Some(1980.0)),
            row(8192, true, 800.0, 800.0, Some(1970.0)),
            row(4096, true, 700.0, 700.0, Some(1990.0)),
            row(16384, false, 1000.0, 900.0, Some(1800.0)),
            row(512, false, 100.0, 104.0, Some(1975.0)),
        ];
        let mut doc = String::new();
        write_clock_section(&mut doc, &rows);
        assert!(doc.contains("1 of 5 rows ran at least 1% below the calibration's SM clock (1980 MHz"), "{doc}");
        assert!(
            doc.contains("| full hd64 s16384 | shift | 1800 (50%) | 1000.0 | 900.0 | -10.0% | 990.0 | -1.0% |"),
            "{doc}"
        );
        // The row at 1975 MHz is within 1% of the reference: not listed, but scaled in the error summary like every
        // row (104 µs x 1980 / 1975 = 104.26). Held out as predicted: 10% and 4%; scaled: 1% and 4.26%.
        assert!(doc.contains("median 2.6%, p90 3.9%, max 4.3% (as predicted: 7.0%, 9.4%, 10.0%)"), "{doc}");

        // Every row at the reference clock, or no clock on the calibration rows: nothing to say.
        let mut doc = String::new();
        write_clock_section(&mut doc, &rows[..3]);
        assert_eq!(doc, "");
        let unclocked = [row(2048, true, 500.0, 500.0, None), row(16384, false, 1000.0, 900.0, Some(1800.0))];
        write_clock_section(&mut doc, &unclocked);
        assert_eq!(doc, "");
    }
}
