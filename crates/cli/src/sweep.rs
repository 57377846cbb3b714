//! The sweep: many shapes x schedules, evaluated in parallel, reported in a fixed order.
//!
//! A configuration is (mask, head dim, seqlen) with heads = hidden / head dim and batch = tokens / seqlen, the
//! paper's way of keeping the work per configuration comparable. Each configuration is resolved through the
//! same `Setup` as `bounds` and `simulate`, so every flag means the same thing everywhere. Rows come back in
//! configuration order whatever the thread count, and no float is summed across threads, so the outputs are
//! byte-identical for any `RAYON_NUM_THREADS`.

use std::fmt::Write as _;
use std::io::IsTerminal;

use anyhow::{Context, Result};
use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use schedulers::{CostModel, Machine};
use serde::Serialize;

use crate::args::{ConfigsArgs, MaskArg, ShapeArgs, ShapeOnly};
use crate::exit::bad_input;
use crate::memory::{Load, Size};
use crate::output::{SCHEMA_VERSION, num};
use crate::setup::{Outcome, Setup};

/// The time unit of uncalibrated costs; TFLOPS need costs in microseconds.
pub const UNCALIBRATED: &str = "tile-compute";

/// One shape of the sweep.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub mask: MaskArg,
    pub head_dim: u32,
    pub heads: u32,
    pub seqlen: u32,
    pub batch: u32,
}

/// The configurations to evaluate and the flags they share.
pub struct Plan {
    pub configs: Vec<Config>,
    pub tokens: u32,
    pub hidden: u32,
    base: ShapeArgs,
}

fn list<'a>(flag: &str, text: &'a str) -> Result<Vec<&'a str>> {
    let items: Vec<&str> = text.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if items.is_empty() {
        return Err(bad_input(format!("{flag} is empty: give at least one value (comma-separated)")));
    }
    Ok(items)
}

fn numbers(flag: &str, text: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for item in list(flag, text)? {
        let n: u32 = item.parse().map_err(|_| bad_input(format!("{flag}: '{item}' is not a positive integer")))?;
        if n == 0 {
            return Err(bad_input(format!("{flag}: values must be at least 1")));
        }
        out.push(n);
    }
    // Ascending and without repeats: the table reads in order and the plot's lines run left to right.
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

impl Plan {
    pub fn from_args(a: &ConfigsArgs) -> Result<Plan> {
        let seqlens = numbers("--seqlens", &a.seqlens)?;
        let head_dims = numbers("--head-dims", &a.head_dims)?;
        let mut masks = Vec::new();
        for m in list("--masks", &a.masks)? {
            let mask = match m {
                "full" => MaskArg::Full,
                "causal" => MaskArg::Causal,
                other => {
                    return Err(bad_input(format!(
                        "--masks: '{other}' is not one of the paper's configurations; use full and/or causal"
                    )));
                }
            };
            if !masks.contains(&mask) {
                masks.push(mask);
            }
        }
        let schedules = list("--schedules", &a.schedules)?.join(",");
        for (flag, v) in [("--tokens", a.tokens), ("--hidden", a.hidden)] {
            if v == 0 {
                return Err(bad_input(format!("{flag} must be at least 1")));
            }
        }
        for &d in &head_dims {
            if !a.hidden.is_multiple_of(d) {
                return Err(bad_input(format!(
                    "--head-dims: {d} does not divide --hidden {} (heads = hidden / head dim)",
                    a.hidden
                )));
            }
        }
        for &s in &seqlens {
            if !a.tokens.is_multiple_of(s) {
                return Err(bad_input(format!(
                    "--seqlens: {s} does not divide --tokens {} (batch = tokens / seqlen)",
                    a.tokens
                )));
            }
        }
        let mut configs = Vec::new();
        for &mask in &masks {
            for &head_dim in &head_dims {
                for &seqlen in &seqlens {
                    configs.push(Config {
                        mask,
                        head_dim,
                        heads: a.hidden / head_dim,
                        seqlen,
                        batch: a.tokens / seqlen,
                    });
                }
            }
        }
        let mut base = ShapeOnly::try_parse_from(["dashc"]).context("default shape flags")?.shape;
        base.sms = a.sms;
        base.launch = a.launch;
        base.costs = a.costs.clone();
        base.schedule = schedules;
        base.search.max_heads_in_flight = a.max_heads_in_flight.clone();
        base.search.iterations = a.iterations;
        base.search.search_seed = a.search_seed;
        base.split_tail = a.split_tail;
        let plan = Plan { configs, tokens: a.tokens, hidden: a.hidden, base };
        plan.check()?;
        Ok(plan)
    }

    /// Resolves every configuration before any work starts, so that bad names and costs fail at once, and
    /// refuses a family whose schedules would not fit in memory as the sweep evaluates them side by side: each
    /// thread holds one schedule (with its split version) or one search of some configuration, and its tile mask.
    fn check(&self) -> Result<()> {
        // The largest configuration's size in each of its terms (an upper bound of every configuration's).
        let (mut size, mut builtins, mut search) = (Size::default(), 0, false);
        for c in &self.configs {
            let setup = self.setup(c)?;
            size = size.max(setup.size());
            builtins += setup.applicable_builtins();
            search |= setup.search.is_some();
        }
        let configs = self.configs.len() as u64;
        let with_split = 1 + self.base.split_tail as u64;
        crate::memory::check_load(
            |threads| Load {
                size,
                problems_at_once: threads.min(configs),
                schedules_at_once: threads.min(builtins) * with_split,
                searches_at_once: if search { threads.min(configs) } else { 0 },
                ..Default::default()
            },
            "this sweep",
            "use a smaller --tokens or --hidden, or shorter --seqlens",
        )
    }

    /// The launch policy every configuration of the plan runs with.
    pub fn base_launch(&self) -> schedulers::LaunchPolicy {
        crate::args::launch_or_in_order(self.base.launch)
    }

    /// The setup of one configuration: the shared flags with this configuration's shape. Its memory was checked
    /// with the whole family's (`Plan::from_args`).
    pub fn setup(&self, c: &Config) -> Result<Setup> {
        let mut shape = self.base.clone();
        shape.batch = c.batch;
        shape.heads = c.heads;
        shape.seqlen = c.seqlen;
        shape.head_dim = c.head_dim;
        shape.mask = c.mask;
        let mut setup = Setup::resolve(&shape)?;
        // Each configuration runs the listed schedules that apply to it, like `--schedule all` does.
        setup.all = true;
        Ok(setup)
    }
}

/// One (configuration, schedule) result.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub mask: &'static str,
    pub head_dim: u32,
    pub heads: u32,
    pub seqlen: u32,
    pub batch: u32,
    pub schedule: String,
    pub makespan: f64,
    /// This schedule's own best lower bound (its critical path included).
    pub best_bound: f64,
    pub critical_path: f64,
    pub work_bound: f64,
    /// The configuration's bound: the lowest best bound of its schedules, so no schedule's makespan is below it.
    pub bound: f64,
    /// bound / makespan: 1 is optimal.
    pub relative_throughput: f64,
    /// The naive schedule's makespan over this one's, when naive was evaluated.
    pub speedup_vs_naive: Option<f64>,
    pub tasks: u64,
    /// 2.5 x the forward FLOPs 4·B·H·S²·d, halved for causal.
    pub backward_flops: f64,
    /// Backward TFLOPS; only with costs in microseconds (calibrated), otherwise absent.
    pub tflops: Option<f64>,
    /// The most (batch, head) pairs with a unit resident at once (docs/search.md, "Heads in flight").
    pub heads_in_flight: u32,
}

/// Everything a sweep produced.
pub struct SweepResult {
    pub rows: Vec<Row>,
    /// The schedules some configurations skipped (not applicable, or no split tail to make).
    pub skipped: Vec<Skipped>,
    /// Schedules in the order first seen, for legends and columns.
    pub schedules: Vec<String>,
    pub configs: Vec<Config>,
    pub tokens: u32,
    pub hidden: u32,
    pub machine: Machine,
    pub costs: CostModel,
    pub time_unit: &'static str,
    /// The search that made the `search` rows, if any: its rows depend on it.
    pub search: Option<SearchUsed>,
}

/// The move budget and seed of each configuration's search.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SearchUsed {
    pub iterations: u64,
    pub seed: u64,
}

impl std::fmt::Display for SearchUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "search: {} iterations from seed {}", self.iterations, self.seed)
    }
}

/// A schedule that some configurations of a sweep skipped for one reason.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub schedule: String,
    pub configurations: usize,
    pub reason: String,
}

/// The lines that say which schedules were skipped where, for under the table.
pub fn skipped_lines(result: &SweepResult) -> String {
    let total = result.configs.len();
    result
        .skipped
        .iter()
        .map(|s| format!("{}: skipped in {} of {total} configurations: {}\n", s.schedule, s.configurations, s.reason))
        .collect()
}

/// TFLOPS of `flops` done in `makespan`, when the time unit is a real one.
pub fn tflops(flops: f64, makespan: f64, time_unit: &str) -> Option<f64> {
    let seconds = match time_unit {
        "us" => makespan * 1e-6,
        _ => return None,
    };
    (seconds > 0.0).then(|| flops / seconds / 1e12)
}

fn backward_flops(c: &Config) -> f64 {
    let forward = 4.0 * c.batch as f64 * c.heads as f64 * (c.seqlen as f64).powi(2) * c.head_dim as f64;
    let forward = if c.mask == MaskArg::Causal { forward / 2.0 } else { forward };
    2.5 * forward
}

pub fn mask_name(m: MaskArg) -> &'static str {
    match m {
        MaskArg::Full => "full",
        MaskArg::Causal => "causal",
        MaskArg::SlidingWindow => "sliding-window",
        MaskArg::Document => "document",
        MaskArg::Blocks => "blocks",
    }
}

/// Evaluates every configuration of `plan` in parallel, with a progress bar when stderr is a terminal.
pub fn run(plan: &Plan) -> Result<SweepResult> {
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(Some(plan.configs.len() as u64), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("sweep {bar:40} {pos}/{len} configurations [{elapsed}]") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    // Calibrated costs (--costs) are in microseconds, which gives the TFLOPS column.
    let time_unit = if plan.base.costs.costs.is_some() { "us" } else { UNCALIBRATED };
    let per_config: Vec<ConfigOutcome> = plan
        .configs
        .par_iter()
        .map(|c| {
            let rows = evaluate(plan, c, time_unit).with_context(|| {
                format!("configuration {} mask, head dim {}, seqlen {}", mask_name(c.mask), c.head_dim, c.seqlen)
            });
            bar.inc(1);
            rows
        })
        .collect::<Result<_>>()?;
    bar.finish_and_clear();
    // Skipped schedules, in the order first seen: how many configurations skipped each for each reason.
    let mut skipped: Vec<Skipped> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for (config_rows, config_skips) in per_config {
        rows.extend(config_rows);
        for (schedule, reason) in config_skips {
            match skipped.iter_mut().find(|s| s.schedule == schedule && s.reason == reason) {
                Some(s) => s.configurations += 1,
                None => skipped.push(Skipped { schedule, configurations: 1, reason }),
            }
        }
    }
    if rows.is_empty() {
        return Err(bad_input("no schedule in --schedules applies to any configuration of the sweep"));
    }
    let mut schedules: Vec<String> = Vec::new();
    for r in &rows {
        if !schedules.contains(&r.schedule) {
            schedules.push(r.schedule.clone());
        }
    }
    let first = plan.setup(&plan.configs[0])?;
    Ok(SweepResult {
        rows,
        schedules,
        configs: plan.configs.clone(),
        tokens: plan.tokens,
        hidden: plan.hidden,
        machine: first.machine,
        costs: first.costs,
        time_unit,
        skipped,
        // Sweeps take no time budget (`ConfigsArgs` has no --budget-secs): a search here always counts moves.
        search: first.search.as_ref().and_then(|r| match r.budget {
            crate::searching::Budget::Iterations(iterations) => Some(SearchUsed { iterations, seed: r.seed }),
            crate::searching::Budget::Secs(_) => None,
        }),
    })
}

/// A configuration's rows, and the schedules it skipped with their reasons.
type ConfigOutcome = (Vec<Row>, Vec<(String, String)>);

fn evaluate(plan: &Plan, c: &Config, time_unit: &str) -> Result<ConfigOutcome> {
    let setup = plan.setup(c)?;
    let outcomes = setup.evaluate_each(false, |e| (e.schedule.name().to_string(), e.summary()))?;
    let mut done = Vec::new();
    let mut skipped = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Done(d) => done.push(d),
            Outcome::Skipped { schedule, reason } => skipped.push((schedule.to_string(), reason)),
        }
    }
    let bound = done.iter().map(|(_, s)| s.best_bound).fold(f64::INFINITY, f64::min);
    let naive = done.iter().find(|(name, _)| name == "naive").map(|(_, s)| s.makespan);
    let flops = backward_flops(c);
    let rows = done
        .into_iter()
        .map(|(schedule, s)| Row {
            mask: mask_name(c.mask),
            head_dim: c.head_dim,
            heads: c.heads,
            seqlen: c.seqlen,
            batch: c.batch,
            schedule,
            makespan: s.makespan,
            best_bound: s.best_bound,
            critical_path: s.critical_path,
            work_bound: s.work_bound,
            bound,
            relative_throughput: if s.makespan > 0.0 { bound / s.makespan } else { 1.0 },
            speedup_vs_naive: naive.filter(|_| s.makespan > 0.0).map(|n| n / s.makespan),
            tasks: s.tasks,
            backward_flops: flops,
            tflops: tflops(flops, s.makespan, time_unit),
            heads_in_flight: s.heads_in_flight,
        })
        .collect();
    Ok((rows, skipped))
}

/// The rows as a text table; the TFLOPS column appears once costs are calibrated.
pub fn table(r: &SweepResult) -> String {
    let with_tflops = r.rows.iter().any(|row| row.tflops.is_some());
    let mut headers = vec![
        "mask",
        "head dim",
        "heads",
        "seqlen",
        "batch",
        "schedule",
        "makespan",
        "bound",
        "bound/makespan",
        "vs naive",
    ];
    if with_tflops {
        headers.push("TFLOPS");
    }
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| {
            let mut cells = key_cells(row).to_vec();
            cells.extend([
                num(row.makespan),
                num(row.bound),
                format!("{:.3}", row.relative_throughput),
                row.speedup_vs_naive.map_or("-".into(), |x| format!("{x:.3}x")),
            ]);
            if with_tflops {
                cells.push(row.tflops.map_or("-".into(), |t| format!("{t:.1}")));
            }
            cells
        })
        .collect();
    // Names left-aligned, numbers right-aligned.
    let left = [true, false, false, false, false, true];
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            if left.get(i).copied().unwrap_or(false) {
                let _ = write!(text, "{cell:<w$}");
            } else {
                let _ = write!(text, "{cell:>w$}");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&headers);
    for row in &rows {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out
}

/// The first line of the outputs: what the numbers mean.
pub fn preamble(r: &SweepResult) -> String {
    let search = r.search.map_or(String::new(), |u| format!("{u}, in every configuration\n"));
    format!(
        "sweep: {} configuration{} ({} tokens each, hidden {}), {} SMs, {} launch; costs: compute {}, reduce {}, \
         hand-off {}{} ({})\n\
         {search}bound = the lowest best lower bound of the configuration's schedules; bound/makespan = 1 is optimal\n",
        r.configs.len(),
        if r.configs.len() == 1 { "" } else { "s" },
        r.tokens,
        r.hidden,
        r.machine.sms,
        r.machine.launch.name(),
        num(r.costs.compute),
        num(r.costs.reduce),
        num(r.costs.handoff),
        crate::output::model_switches(&r.costs),
        if r.time_unit == "us" {
            "µs, calibrated; costs of the first configuration shown, each head dim uses its own"
        } else {
            "time unit: one full tile's compute"
        }
    )
}

const CSV_COLUMNS: [&str; 17] = [
    "mask",
    "head_dim",
    "heads",
    "seqlen",
    "batch",
    "schedule",
    "makespan",
    "best_bound",
    "critical_path",
    "work_bound",
    "bound",
    "relative_throughput",
    "speedup_vs_naive",
    "tasks",
    "backward_flops",
    "tflops",
    "heads_in_flight",
];

/// The cells that say which configuration and schedule a row is: the first six columns of the table and of
/// the CSV alike.
fn key_cells(row: &Row) -> [String; 6] {
    [
        row.mask.to_string(),
        row.head_dim.to_string(),
        row.heads.to_string(),
        row.seqlen.to_string(),
        row.batch.to_string(),
        row.schedule.clone(),
    ]
}

/// The rows as CSV, one header line and the columns of the JSON rows; absent values are empty cells.
pub fn csv(r: &SweepResult) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
    for row in &r.rows {
        let mut cells = key_cells(row).to_vec();
        cells.extend([
            row.makespan.to_string(),
            row.best_bound.to_string(),
            row.critical_path.to_string(),
            row.work_bound.to_string(),
            row.bound.to_string(),
            row.relative_throughput.to_string(),
            opt(row.speedup_vs_naive),
            row.tasks.to_string(),
            row.backward_flops.to_string(),
            opt(row.tflops),
            row.heads_in_flight.to_string(),
        ]);
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[derive(Serialize)]
struct SweepJson<'a> {
    schema_version: u32,
    command: &'static str,
    time_unit: &'static str,
    tokens: u32,
    hidden: u32,
    machine: Machine,
    costs: CostModel,
    #[serde(skip_serializing_if = "Option::is_none")]
    search: Option<SearchUsed>,
    rows: &'a [Row],
}

pub fn json(r: &SweepResult) -> Result<String> {
    let doc = SweepJson {
        schema_version: SCHEMA_VERSION,
        command: "sweep",
        time_unit: r.time_unit,
        tokens: r.tokens,
        hidden: r.hidden,
        machine: r.machine,
        costs: r.costs,
        search: r.search,
        rows: &r.rows,
    };
    Ok(serde_json::to_string_pretty(&doc)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_flops_follow_the_paper() {
        let c = Config { mask: MaskArg::Full, head_dim: 128, heads: 16, seqlen: 16384, batch: 1 };
        assert_eq!(backward_flops(&c), 2.5 * 4.0 * 16.0 * 16384.0 * 16384.0 * 128.0);
        let causal = Config { mask: MaskArg::Causal, ..c };
        assert_eq!(backward_flops(&causal), backward_flops(&c) / 2.0);
    }

    #[test]
    fn tflops_need_real_time() {
        assert_eq!(tflops(1e12, 1e6, "us"), Some(1.0));
        assert_eq!(tflops(1e12, 10.0, UNCALIBRATED), None);
    }

    #[test]
    fn lists_are_sorted_deduplicated_and_never_empty() {
        assert_eq!(numbers("--seqlens", "2048, 512,2048").unwrap(), [512, 2048]);
        assert!(numbers("--seqlens", " , ").is_err());
        assert!(numbers("--seqlens", "12a").is_err());
    }
}
