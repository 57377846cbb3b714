//! Command-line types (clap). No logic here: `setup` turns these into library values.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use codegen::MainLoop;

#[derive(Debug, Parser)]
#[command(name = "dashc", version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("DASHC_BUILD_COMMIT"), ")"), about = "Deterministic attention backward: schedules analyzed and compiled")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Makespan, critical path and lower bounds of each schedule
    Bounds(BoundsArgs),
    /// Simulate schedules on P SMs: makespan, per-SM busy / waiting / idle time, optional timeline
    Simulate(SimulateArgs),
    /// Search for a schedule of low simulated makespan (any mask, GQA) and certify it against lower bounds
    // The shared shape flags read differently here: --schedule picks the built-ins to compare with, and a
    // schedule file is a start, not the schedule evaluated.
    #[command(
        mut_arg("schedule", |a| a.help(
            "Built-ins to compare with and start from: naive, descending, spt, shift, symmetric-shift, \
             spread-shift, spread-symmetric-shift, or all; comma-separated"
        )),
        mut_arg("schedule_file", |a| a.help(
            "Also start the search from the schedule in FILE (docs/schedule-file.md), e.g. to continue a search; \
             it must be for this shape, mask and machine"
        ))
    )]
    Search(SearchArgs),
    /// Draw a Gantt chart (one lane per SM) of simulated schedules or of timeline files, as PNG or SVG
    Gantt(GanttArgs),
    /// Evaluate many shapes x schedules (default: the paper's 24 configurations): table, JSON, CSV, plot
    Sweep(SweepArgs),
    /// Write a report (Markdown + charts) of the default sweep and Gantt comparisons; needs no GPU
    Report(ReportArgs),
    /// Render one schedule into a CUDA program: sources, schedule data and the exact nvcc command
    Codegen(CodegenArgs),
    /// Generate, compile, run, check and time schedules on the GPU, beside their predictions
    Run(RunArgs),
    /// The paper's 24 configurations x schedules on the GPU, deterministic and not, beside the anchors
    Bench(BenchArgs),
    /// Fit the cost model (µs) from GPU traces of a few configurations and schedules; writes costs.json
    Calibrate(CalibrateArgs),
    /// Predicted against measured time over the paper's configurations; writes docs/validation.md
    Validate(ValidateArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MaskArg {
    Full,
    Causal,
    SlidingWindow,
    Document,
    Blocks,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LaunchArg {
    InOrder,
    Persistent,
}

impl From<LaunchArg> for schedulers::LaunchPolicy {
    fn from(launch: LaunchArg) -> Self {
        match launch {
            LaunchArg::InOrder => schedulers::LaunchPolicy::InOrder,
            LaunchArg::Persistent => schedulers::LaunchPolicy::Persistent,
        }
    }
}

impl From<schedulers::LaunchPolicy> for LaunchArg {
    fn from(launch: schedulers::LaunchPolicy) -> Self {
        match launch {
            schedulers::LaunchPolicy::InOrder => LaunchArg::InOrder,
            schedulers::LaunchPolicy::Persistent => LaunchArg::Persistent,
        }
    }
}

/// The most SMs `--sms` accepts. GPUs have a few hundred at most (132 on an H100, 144 on a full GH100 die);
/// the cap leaves an order of magnitude to spare. The simulator keeps about 40 bytes per SM, so without a cap
/// `--sms 4294967295` would ask for 170 GB before any work.
pub const MAX_SMS: u32 = 4096;

fn sms_range() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=i64::from(MAX_SMS))
}

/// `--launch` as given, else in-order: the analyzer's default, and that of any command not yet bound to a main loop.
pub fn launch_or_in_order(launch: Option<LaunchArg>) -> schedulers::LaunchPolicy {
    launch.map_or(schedulers::LaunchPolicy::InOrder, schedulers::LaunchPolicy::from)
}

/// `--launch` as given, else the launch of `main_loop` (`MainLoop::default_launch`).
fn launch_for(launch: Option<LaunchArg>, main_loop: MainLoop) -> Option<LaunchArg> {
    Some(launch.unwrap_or_else(|| main_loop.default_launch().into()))
}

impl ShapeArgs {
    /// These flags with `--launch` defaulted for the main loop that will run them.
    pub fn for_main_loop(&self, main_loop: MainLoop) -> ShapeArgs {
        ShapeArgs { launch: launch_for(self.launch, main_loop), ..self.clone() }
    }
}

impl ConfigsArgs {
    /// These flags with `--launch` defaulted for the main loop that will run them.
    pub fn for_main_loop(&self, main_loop: MainLoop) -> ConfigsArgs {
        ConfigsArgs { launch: launch_for(self.launch, main_loop), ..self.clone() }
    }
}

/// The flags whose values `--ideal` sets itself (batch 1, N x N square tiles per head, P = N SMs): given beside
/// it they would be silently overridden. (`--costs` is refused by the setup, with its own message.)
const IDEAL_SETS: [&str; 7] = ["batch", "kv_heads", "seqlen", "seqlen_k", "block_m", "block_n", "sms"];

/// What `--ideal` refuses beside it: the flags it sets, and the cost flags beyond the closed forms' constant c
/// and r (`--compute`, `--reduce`): the idealized model has free hand-offs and none of the kernel's phases, and a
/// value given for one would change what is printed as idealized.
fn ideal_conflicts() -> impl IntoIterator<Item = &'static str> {
    IDEAL_SETS.into_iter().chain(KERNEL_COST_FLAGS)
}

/// The cost flags beyond a tile's compute and a dQ add: the hand-off, the kernel's phases and the model's switches.
const KERNEL_COST_FLAGS: [&str; 11] = [
    "compute_partial",
    "scale_by_fraction",
    "handoff",
    "poll",
    "kernel_epilogues",
    "dq_writers",
    "dq_deferred",
    "kv_load_overlap",
    "unit_start",
    "unit_finish",
    "dkv_reduce",
];

/// Every cost flag: what a costs file replaces.
fn cost_flags() -> impl IntoIterator<Item = &'static str> {
    ["compute", "reduce"].into_iter().chain(KERNEL_COST_FLAGS)
}

/// The problem, its mask and the machine.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Batch size
    #[arg(allow_negative_numbers = true, long, default_value_t = 1, value_name = "N", value_parser = at_least_one())]
    pub batch: u32,
    /// Query heads (with --ideal: the number of heads m)
    #[arg(allow_negative_numbers = true, long, default_value_t = 16, value_name = "N", value_parser = at_least_one())]
    pub heads: u32,
    /// KV heads (GQA when fewer than --heads); default: --heads
    #[arg(allow_negative_numbers = true, long, value_name = "N", value_parser = at_least_one())]
    pub kv_heads: Option<u32>,
    /// Query sequence length
    #[arg(allow_negative_numbers = true, long, default_value_t = 16384, value_name = "TOKENS", value_parser = at_least_one())]
    pub seqlen: u32,
    /// Key/value sequence length; default: --seqlen
    #[arg(allow_negative_numbers = true, long, value_name = "TOKENS", value_parser = at_least_one())]
    pub seqlen_k: Option<u32>,
    /// Head dimension
    #[arg(allow_negative_numbers = true, long, default_value_t = 128, value_name = "D", value_parser = at_least_one())]
    pub head_dim: u32,
    /// Attention mask
    #[arg(long, value_enum, default_value_t = MaskArg::Causal)]
    pub mask: MaskArg,
    /// Sliding window: keys visible before the diagonal (default unbounded)
    #[arg(allow_negative_numbers = true, long, value_name = "TOKENS")]
    pub window_left: Option<u32>,
    /// Sliding window: keys visible after the diagonal (default 0, i.e. causal)
    #[arg(allow_negative_numbers = true, long, value_name = "TOKENS")]
    pub window_right: Option<u32>,
    /// Document mask: comma-separated document lengths packed into the sequence (must sum to --seqlen)
    #[arg(allow_negative_numbers = true, long, value_name = "LENS", value_delimiter = ',', value_parser = at_least_one())]
    pub doc_lens: Vec<u32>,
    /// Document mask: attend to the whole document instead of causally within it
    #[arg(long)]
    pub doc_bidirectional: bool,
    /// Document mask: draw document lengths between 512 and 8192 tokens from SEED to fill --seqlen
    #[arg(allow_negative_numbers = true, long, value_name = "SEED", conflicts_with = "doc_lens")]
    pub doc_random: Option<u64>,
    /// Block mask: JSON file with the active (q-tile, kv-tile) pairs, {"blocks": [[q, kv], ...]}
    #[arg(long, value_name = "FILE")]
    pub blocks: Option<PathBuf>,
    /// Q tile size; default by head dim (<=64: 128, <=128: 64, else 64)
    #[arg(allow_negative_numbers = true, long, value_name = "ROWS", value_parser = at_least_one())]
    pub block_m: Option<u32>,
    /// KV tile size; default by head dim (<=64: 128, <=128: 128, else 64)
    #[arg(allow_negative_numbers = true, long, value_name = "COLS", value_parser = at_least_one())]
    pub block_n: Option<u32>,
    /// Number of SMs, 1 to 4096 (132 on H100/H200/H800)
    #[arg(allow_negative_numbers = true, long, default_value_t = 132, value_name = "P", value_parser = sms_range())]
    pub sms: u32,
    /// Launch policy: in-order (non-persistent grid) or persistent (static assignment) [default: in-order; with
    /// the sm90 main loop (codegen, run): persistent]
    #[arg(long, value_enum)]
    pub launch: Option<LaunchArg>,
    /// Schedule: naive, descending, spt, shift, symmetric-shift, spread-shift, spread-symmetric-shift, search, or all
    /// (the built-ins); comma-separated
    #[arg(long, default_value = "all", value_name = "NAME")]
    pub schedule: String,
    /// Evaluate the schedule in FILE (docs/schedule-file.md) instead; it must be for this shape, mask and machine
    #[arg(long, value_name = "FILE", conflicts_with_all = ["schedule", "split_tail"])]
    pub schedule_file: Option<PathBuf>,
    /// Also evaluate each built-in schedule with its last, partial pass split over all SMs (name +split;
    /// docs/model.md "Split tail"): its columns' dK/dV partials are summed after the main loop (sm90 only;
    /// codegen renders the split version)
    #[arg(long)]
    pub split_tail: bool,
    #[command(flatten)]
    pub search: SearchBudgetArgs,

    /// The paper's idealized setting: P = N SMs, square tiles, --heads heads, constant costs (--compute,
    /// --reduce), free hand-offs (the shape and machine flags it sets, and the other cost flags, are refused
    /// beside it)
    #[arg(long, requires = "tiles", conflicts_with_all = ideal_conflicts())]
    pub ideal: bool,
    /// With --ideal: tiles per head N, 1 to 4096 (also the number of SMs)
    #[arg(allow_negative_numbers = true, long, value_name = "N", requires = "ideal", value_parser = sms_range())]
    pub tiles: Option<u32>,

    #[command(flatten)]
    pub costs: CostArgs,
}

/// The parser of a size that must be at least 1, so that a refused value (0 or negative) is answered with the range
/// that is accepted: u32's own would say `-5 is not in 0..=4294967295`, as if 0 would do.
fn at_least_one() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..)
}

/// The parser of an image side in pixels (`plot::MIN_SIDE..=plot::MAX_SIDE`).
fn side_range() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(i64::from(crate::plot::MIN_SIDE)..=i64::from(crate::plot::MAX_SIDE))
}

/// The cost model (uncalibrated: one full tile's compute is the time unit).
#[derive(Debug, Clone, Args)]
pub struct CostArgs {
    /// Compute cost of a full tile
    #[arg(allow_negative_numbers = true, long, default_value_t = 1.0, value_name = "C")]
    pub compute: f64,
    /// Compute cost of a partially masked tile (default: --compute)
    #[arg(allow_negative_numbers = true, long, value_name = "C")]
    pub compute_partial: Option<f64>,
    /// Scale each tile's compute cost by its unmasked fraction
    #[arg(long)]
    pub scale_by_fraction: bool,
    /// Cost of one dQ reduction (add a partial into the accumulator)
    #[arg(allow_negative_numbers = true, long, default_value_t = 0.25, value_name = "R")]
    pub reduce: f64,
    /// Latency of a semaphore hand-off between consecutive ranks
    #[arg(allow_negative_numbers = true, long, default_value_t = 0.0, value_name = "T")]
    pub handoff: f64,
    /// Extra semaphore read paid by a task whose rank was released after its compute started (the kernel's
    /// early read missed)
    #[arg(allow_negative_numbers = true, long, default_value_t = 0.0, value_name = "T")]
    pub poll: f64,
    /// Model the generated kernel's K/V epilogues: a move to another KV tile costs --unit-finish + --unit-start,
    /// and the dQ release before it (or of a unit's last visit) waits for it (docs/calibration.md)
    #[arg(long)]
    pub kernel_epilogues: bool,
    /// Model the sm90 main loop's dQ writers: N writers per SM add the partials (with their rank waits) beside
    /// the compute, one staging buffer each; 0 = the portable loop's add after each compute (docs/calibration.md)
    #[arg(allow_negative_numbers = true, long, default_value_t = 0, value_name = "N")]
    pub dq_writers: u32,
    /// With --dq-writers N >= 1: stage each dQ partial with the next task of its KV tile, the KV tile's last one
    /// before its epilogue (the sm90 main loop's deferred dQ)
    #[arg(long)]
    pub dq_deferred: bool,
    /// With --dq-writers N >= 1: the next K/V load runs beside the dK/dV epilogue, so a
    /// move to another KV tile of the CTA costs max(--unit-finish, --unit-start) (the sm90 loop at head dim 64)
    #[arg(long)]
    pub kv_load_overlap: bool,
    /// Per-unit start overhead (load K, V)
    #[arg(allow_negative_numbers = true, long, default_value_t = 0.0, value_name = "T")]
    pub unit_start: f64,
    /// Per-unit finish overhead (store dK, dV)
    #[arg(allow_negative_numbers = true, long, default_value_t = 0.0, value_name = "T")]
    pub unit_finish: f64,
    /// Cost of one dK/dV reduction under GQA (default: --reduce)
    #[arg(allow_negative_numbers = true, long, value_name = "R")]
    pub dkv_reduce: Option<f64>,
    /// Calibrated costs (µs) from `dashc calibrate` (docs/calibration.md); replace the flags above
    #[arg(long, value_name = "FILE", conflicts_with_all = cost_flags())]
    pub costs: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BoundsArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
    /// Write the schedule to FILE as JSON (docs/schedule-file.md); needs a single schedule (with --split-tail, its
    /// split version is written where it has one, as codegen renders it)
    #[arg(long, value_name = "FILE")]
    pub save_schedule: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
    /// Print a line per SM, not only the summary
    #[arg(long)]
    pub per_sm: bool,
    /// Write the simulated timeline(s) as JSON to FILE (see docs/timeline-format.md); `-` prints it to stdout in
    /// place of the table
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Write the schedule to FILE as JSON (docs/schedule-file.md); needs a single schedule (with --split-tail, its
    /// split version is written where it has one, as codegen renders it)
    #[arg(long, value_name = "FILE")]
    pub save_schedule: Option<PathBuf>,
}

/// `ShapeArgs` alone, to get its defaults for shapes that commands build themselves (sweep).
#[derive(Debug, Parser)]
pub struct ShapeOnly {
    #[command(flatten)]
    pub shape: ShapeArgs,
}

#[derive(Debug, Args)]
pub struct GanttArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Output image: FILE.png or FILE.svg
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Stack these schedules (comma-separated) on one shared time axis; with --timeline, pick them from each file
    #[arg(long, value_name = "A,B,...")]
    pub compare: Option<String>,
    /// Draw this timeline file (docs/timeline-format.md) instead of simulating; shape flags do not apply. Give it
    /// again to stack timelines of one problem and time unit (a prediction and a measurement) on one time axis
    #[arg(long, value_name = "FILE", conflicts_with_all = gantt_shape_conflicts())]
    pub timeline: Vec<PathBuf>,
    /// Image width in pixels, 320 to 16000
    #[arg(allow_negative_numbers = true, long, default_value_t = 1600, value_name = "PX", value_parser = side_range())]
    pub width: u32,
    /// Image height in pixels, 320 to 16000; default: from the number of SMs and schedules
    #[arg(allow_negative_numbers = true, long, value_name = "PX", value_parser = side_range())]
    pub height: Option<u32>,
}

/// The simulation flags that a timeline file replaces, beside `KERNEL_COST_FLAGS`.
const GANTT_SHAPE_FLAGS: [&str; 29] = [
    "batch",
    "heads",
    "kv_heads",
    "seqlen",
    "seqlen_k",
    "head_dim",
    "mask",
    "window_left",
    "window_right",
    "doc_lens",
    "doc_bidirectional",
    "doc_random",
    "blocks",
    "block_m",
    "block_n",
    "sms",
    "launch",
    "schedule",
    "schedule_file",
    "budget_secs",
    "iterations",
    "search_seed",
    "max_heads_in_flight",
    "ideal",
    "tiles",
    "compute",
    "reduce",
    "costs",
    "split_tail",
];

/// What `--timeline` refuses beside it: every simulation flag, the cost flags among them.
fn gantt_shape_conflicts() -> impl IntoIterator<Item = &'static str> {
    GANTT_SHAPE_FLAGS.into_iter().chain(KERNEL_COST_FLAGS)
}

/// A family of configurations (the DASH paper's 24 by default) and the flags they share; used by `sweep`
/// and `bench`.
#[derive(Debug, Clone, Args)]
pub struct ConfigsArgs {
    /// Sequence lengths (comma-separated); batch = --tokens / seqlen
    #[arg(long, default_value = "512,1024,2048,4096,8192,16384", value_name = "LIST")]
    pub seqlens: String,
    /// Head dimensions (comma-separated); heads = --hidden / head dim
    #[arg(long, default_value = "64,128", value_name = "LIST")]
    pub head_dims: String,
    /// Masks (comma-separated): full, causal
    #[arg(long, default_value = "full,causal", value_name = "LIST")]
    pub masks: String,
    /// Schedules (comma-separated), or all; each configuration runs those that apply to it
    #[arg(long, default_value = "all", value_name = "LIST")]
    pub schedules: String,
    /// Tokens per configuration: batch x seqlen
    #[arg(allow_negative_numbers = true, long, default_value_t = 16384, value_name = "N", value_parser = at_least_one())]
    pub tokens: u32,
    /// Hidden size: heads x head dim
    #[arg(allow_negative_numbers = true, long, default_value_t = 2048, value_name = "N", value_parser = at_least_one())]
    pub hidden: u32,
    /// Number of SMs, 1 to 4096 (132 on H100/H200/H800)
    #[arg(allow_negative_numbers = true, long, default_value_t = 132, value_name = "P", value_parser = sms_range())]
    pub sms: u32,
    /// Launch policy: in-order (non-persistent grid) or persistent (static assignment) [default: in-order; `bench`
    /// with the sm90 main loop: persistent; `validate --from-raw`: the measurements' own]
    #[arg(long, value_enum)]
    pub launch: Option<LaunchArg>,
    /// With `search` among the schedules: the most (batch, head) pairs in flight the search may use, a number,
    /// `builtins` or `any` (docs/search.md) [default: builtins]
    #[arg(long, value_name = "N|builtins|any")]
    pub max_heads_in_flight: Option<String>,
    /// With `search` among the schedules: candidate moves of each configuration's search (a time budget is
    /// not offered here: every configuration's result would depend on the machine) [default: 400]
    #[arg(allow_negative_numbers = true, long, value_name = "N")]
    pub iterations: Option<u64>,
    /// With `search` among the schedules: seed of the move streams [default: 0]
    #[arg(allow_negative_numbers = true, long, value_name = "N")]
    pub search_seed: Option<u64>,
    /// Also run each built-in schedule with its last, partial pass split over all SMs (name +split;
    /// docs/model.md "Split tail")
    #[arg(long)]
    pub split_tail: bool,
    #[command(flatten)]
    pub costs: CostArgs,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub configs: ConfigsArgs,
    /// Also write the rows as JSON to FILE (`-`: to stdout, in place of the table)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the rows as CSV to FILE (`-`: to stdout, in place of the table)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Plot relative throughput against seqlen, one panel per (head dim, mask): FILE.png or FILE.svg
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Folder for report.md and the files it embeds (created if missing)
    #[arg(long, default_value = "report", value_name = "DIR")]
    pub out: PathBuf,
}

/// Which of a run's timed repetitions a measured main-kernel time stands for (`validate --statistic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimeStatistic {
    /// The median of the repetitions
    Median,
    /// The fastest repetition: on the long rows the one before the GPU's power management steps down under
    /// sustained load (bench/NOTES.md runs 138-142), the state of a run that starts from rest
    Fastest,
}

/// The main loop to generate: `--arch sm80` (portable, `mma.sync`) or `--arch sm90` (Hopper: TMA, `wgmma`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArchArg {
    /// The portable main loop (mma.sync), built for sm_80 (and sm_90a by codegen, or on a Hopper GPU)
    Sm80,
    /// The Hopper main loop (TMA, wgmma, warp specialization), built for sm_90a; needs the CUTLASS headers
    #[value(alias = "sm90a")]
    Sm90,
}

impl ArchArg {
    pub fn main_loop(self) -> MainLoop {
        match self {
            ArchArg::Sm80 => MainLoop::Sm80,
            ArchArg::Sm90 => MainLoop::Sm90,
        }
    }
}

#[derive(Debug, Args)]
pub struct CodegenArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Output directory for the sources, schedule.txt and nvcc-command.txt
    #[arg(short, long, value_name = "DIR")]
    pub out: PathBuf,
    /// Build the non-deterministic variant (atomic dQ adds, no semaphores)
    #[arg(long)]
    pub nondeterministic: bool,
    /// Main loop: sm80 (portable; built for sm_80 and sm_90a) or sm90 (Hopper; sm_90a, CUTLASS headers)
    #[arg(long, value_enum, default_value_t = ArchArg::Sm80)]
    pub arch: ArchArg,
}

/// Options of the GPU runs shared by `run` and `bench`.
#[derive(Debug, Clone, Args)]
pub struct GpuArgs {
    /// Timed repetitions per kernel (the median is reported)
    #[arg(allow_negative_numbers = true, long, default_value_t = 20, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
    /// Always check against the FP32 reference (default: only when seqlen <= 4096)
    #[arg(long, conflicts_with = "no_check")]
    pub check: bool,
    /// Never run the FP32 reference check
    #[arg(long)]
    pub no_check: bool,
    /// Seed of the random inputs
    #[arg(allow_negative_numbers = true, long, default_value_t = 1, value_name = "N")]
    pub seed: u64,
    /// Where generated programs are built (one folder per kernel configuration, reused when unchanged)
    #[arg(long, default_value = "target/dashc-run", value_name = "DIR")]
    pub work_dir: PathBuf,
    /// Main loop: sm80 (portable) or sm90 (Hopper: TMA, wgmma); default sm90 on a Hopper GPU, else sm80
    #[arg(long, value_enum)]
    pub arch: Option<ArchArg>,
    /// Leave the GPU idle this long before each harness's timed runs. Near its power limit a GPU runs the first
    /// tens of ms of load about 10% faster than sustained load; with --reps 30 or more `bench` shows both (150 let
    /// a long row reach the limit; docs/gpu.md, "At rest and sustained")
    #[arg(allow_negative_numbers = true, long, default_value_t = 0, value_name = "MS", value_parser = clap::value_parser!(u32).range(0..=60000))]
    pub idle_ms: u32,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Also run the non-deterministic variant of each schedule (atomic dQ adds): the cost of determinism
    #[arg(long)]
    pub nondeterministic: bool,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
    /// Also run the trace build of the (single) schedule, of its split version with --split-tail, and write its
    /// measured timeline to FILE (docs/timeline-format.md); prints the trace overhead
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    #[command(flatten)]
    pub configs: ConfigsArgs,
    /// Folder for the JSON results
    #[arg(long, default_value = "bench/results", value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub rounds: RoundsArgs,
}

/// `--rounds` of `bench` and `validate`.
#[derive(Debug, Clone, Args)]
pub struct RoundsArgs {
    /// Measure every configuration and schedule N times: odd rounds run the configurations and their schedules in
    /// the usual order, even rounds in reverse, so that with an even N a steady drift of the GPU's clocks over the
    /// run favours no schedule (bench: the table shows the mean and the range, the JSON every round; validate: the
    /// median over the rounds)
    #[arg(allow_negative_numbers = true, long = "rounds", default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub count: u32,
    /// The number of the first round: its parity sets the order, so that a later call (with its results merged,
    /// `validate --from-raw A --from-raw B`) can go on where an earlier one stopped, e.g. `--rounds 1
    /// --first-round 2` runs round 2's reversed order
    #[arg(allow_negative_numbers = true, long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub first_round: u32,
}

impl RoundsArgs {
    /// The numbers of the rounds to run; bad input if the last one is past `u32::MAX`.
    pub fn numbers(&self) -> anyhow::Result<std::ops::RangeInclusive<u32>> {
        match self.first_round.checked_add(self.count - 1) {
            Some(last) => Ok(self.first_round..=last),
            None => Err(crate::exit::bad_input(format!(
                "--first-round {} with --rounds {} numbers rounds past {}",
                self.first_round,
                self.count,
                u32::MAX
            ))),
        }
    }

    /// Whether the rounds are worth naming in labels and messages: several of them, or one that is not round 1.
    pub fn numbered(&self) -> bool {
        self.count > 1 || self.first_round > 1
    }
}

/// The budget of a schedule search (`--schedule search`, `dashc search`); see docs/search.md.
#[derive(Debug, Clone, Args)]
pub struct SearchBudgetArgs {
    /// Search: stop after S seconds (default: 10 for dashc search; --schedule search uses 400 iterations). The
    /// starting schedules are built first and not cut short: on very large problems that alone takes longer
    #[arg(allow_negative_numbers = true, long, value_name = "S", conflicts_with = "iterations")]
    pub budget_secs: Option<f64>,
    /// Search: stop after N candidate moves (the same result on any machine and thread count)
    #[arg(allow_negative_numbers = true, long, value_name = "N")]
    pub iterations: Option<u64>,
    /// Search: seed of the move streams [default: 0]
    #[arg(allow_negative_numbers = true, long, value_name = "N")]
    pub search_seed: Option<u64>,
    /// Search: the most (batch, head) pairs with a unit resident at once: a number, `builtins` (the widest of
    /// the built-in schedules) or `any`. The model has no memory system, and schedules spread over many heads
    /// at once ran far slower than simulated (docs/search.md) [default: builtins]
    #[arg(long, value_name = "N|builtins|any")]
    pub max_heads_in_flight: Option<String>,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Seed of the search (the same as --search-seed) [default: 0]
    #[arg(allow_negative_numbers = true, long, value_name = "N", conflicts_with = "search_seed")]
    pub seed: Option<u64>,
    /// Write the searched schedule to FILE as JSON (docs/schedule-file.md)
    #[arg(long, value_name = "FILE")]
    pub save_schedule: Option<PathBuf>,
    /// Start only from list-scheduling seeds, not from the built-in schedules (they are still compared)
    #[arg(long)]
    pub no_builtin_seeds: bool,
    /// Print each improvement to stderr with the time it was found (one line per change of the printed makespan)
    #[arg(long)]
    pub progress: bool,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Sequence lengths to trace (comma-separated); batch = --tokens / seqlen
    #[arg(long, default_value = "2048,8192", value_name = "LIST")]
    pub seqlens: String,
    /// Head dimensions (comma-separated); heads = --hidden / head dim; one costs entry each
    #[arg(long, default_value = "64,128", value_name = "LIST")]
    pub head_dims: String,
    /// Masks (comma-separated): full, causal
    #[arg(long, default_value = "full,causal", value_name = "LIST")]
    pub masks: String,
    /// Schedules to trace (those that apply to each configuration): some with waits, some with free hand-offs
    #[arg(long, default_value = "naive,descending,shift,symmetric-shift", value_name = "LIST")]
    pub schedules: String,
    /// Tokens per configuration: batch x seqlen
    #[arg(allow_negative_numbers = true, long, default_value_t = 16384, value_name = "N", value_parser = at_least_one())]
    pub tokens: u32,
    /// Hidden size: heads x head dim
    #[arg(allow_negative_numbers = true, long, default_value_t = 2048, value_name = "N", value_parser = at_least_one())]
    pub hidden: u32,
    /// Number of SMs, 1 to 4096 (132 on H100/H200/H800)
    #[arg(allow_negative_numbers = true, long, default_value_t = 132, value_name = "P", value_parser = sms_range())]
    pub sms: u32,
    /// The launch to trace: in-order (a CTA per unit) or persistent (sm90 only: a CTA per SM walking its units,
    /// as `run` and `bench` launch it). In-order costs predicted the persistent runs better (docs/calibration.md)
    #[arg(long, value_enum, default_value = "in-order", value_name = "LAUNCH")]
    pub launch: LaunchArg,
    /// Memory probes: sequence lengths (comma-separated; batch = --tokens / seqlen, rounded down; multiples of
    /// twice the KV tile, for the causal probe's symmetric-shift) traced with the launch `run` and `bench` use, one
    /// built-in schedule per mask, where DRAM traffic may set the pace. The memory roof fitted on them joins the
    /// predictions `run`, `bench` and `validate` compare with the GPU (docs/calibration.md, "Memory roof"), and
    /// `validate` counts a row of a probe's shape as calibration: keep them outside the shapes you validate on.
    /// "none": no probes, no roof
    #[arg(long, default_value = "256,768", value_name = "LIST")]
    pub memory_probes: String,
    /// Output cost file
    #[arg(short, long, default_value = "costs.json", value_name = "FILE")]
    pub out: PathBuf,
    /// Keep the raw traces (docs/trace-format.md) in DIR, with the GPU's name in DIR/device.txt
    #[arg(long, value_name = "DIR")]
    pub keep_traces: Option<PathBuf>,
    /// Do not run the GPU: fit the traces that an earlier --keep-traces DIR kept (the same configuration flags;
    /// needs --arch, the main loop that wrote them)
    #[arg(long, value_name = "DIR", conflicts_with = "keep_traces")]
    pub from_traces: Option<PathBuf>,
}

/// What `validate --from-raw` refuses beside it: the flags that choose what to measure or how. The file's
/// measurements are what they are, and a flag that seemed to select or change them would be silently ignored.
const FROM_RAW_CONFLICTS: [&str; 18] = [
    "raw",
    "gantt_seqlen",
    "seqlens",
    "head_dims",
    "masks",
    "schedules",
    "tokens",
    "hidden",
    "sms",
    "split_tail",
    "count",
    "first_round",
    "reps",
    "check",
    "no_check",
    "seed",
    "arch",
    "idle_ms",
];

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// The configurations (default: the paper's 24); --costs FILE (from dashc calibrate) is required
    #[command(flatten)]
    pub configs: ConfigsArgs,
    /// Write the measurements to FILE (JSON), and the measured Gantt timelines beside it
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,
    /// Do not run the GPU: read the measurements of an earlier --raw FILE and write the report; given more than
    /// once, the files' rounds are merged (same device, main loop, launch and rows; each row is the median over
    /// all their rounds; the Gantt charts come from the first file that has them). The flags that choose what to
    /// measure, and how, are refused beside it: the report is of the file's rows, rounds, SM count and main loop
    #[arg(long, value_name = "FILE", conflicts_with_all = FROM_RAW_CONFLICTS)]
    pub from_raw: Vec<PathBuf>,
    /// The report; its charts are written beside it
    #[arg(long, default_value = "docs/validation.md", value_name = "FILE")]
    pub doc: PathBuf,
    /// Sequence length of the Gantt pairs (head dim 128; full: shift, causal: descending)
    #[arg(allow_negative_numbers = true, long, default_value_t = 512, value_name = "TOKENS")]
    pub gantt_seqlen: u32,
    #[command(flatten)]
    pub rounds: RoundsArgs,
    /// Which repetition of each run the report compares with the prediction: the median (mixes the GPU's rested
    /// and power-limited states on the long rows) or the fastest (the rested state; pair it with --idle-ms). The
    /// raw file keeps both
    #[arg(long, value_enum, default_value_t = TimeStatistic::Median)]
    pub statistic: TimeStatistic,
}
