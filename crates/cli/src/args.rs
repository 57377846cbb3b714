//! Command-line types (clap). No logic here: `setup` turns these into library values.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "dashc", version, about = "Deterministic attention backward: schedules analyzed and compiled")]
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

/// The problem, its mask and the machine.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Batch size
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub batch: u32,
    /// Query heads (with --ideal: the number of heads m)
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub heads: u32,
    /// KV heads (GQA when fewer than --heads); default: --heads
    #[arg(long, value_name = "N")]
    pub kv_heads: Option<u32>,
    /// Query sequence length
    #[arg(long, default_value_t = 16384, value_name = "TOKENS")]
    pub seqlen: u32,
    /// Key/value sequence length; default: --seqlen
    #[arg(long, value_name = "TOKENS")]
    pub seqlen_k: Option<u32>,
    /// Head dimension
    #[arg(long, default_value_t = 128, value_name = "D")]
    pub head_dim: u32,
    /// Attention mask
    #[arg(long, value_enum, default_value_t = MaskArg::Causal)]
    pub mask: MaskArg,
    /// Sliding window: keys visible before the diagonal (default unbounded)
    #[arg(long, value_name = "TOKENS")]
    pub window_left: Option<u32>,
    /// Sliding window: keys visible after the diagonal (default 0, i.e. causal)
    #[arg(long, value_name = "TOKENS")]
    pub window_right: Option<u32>,
    /// Document mask: comma-separated document lengths packed into the sequence (must sum to --seqlen)
    #[arg(long, value_name = "LENS", value_delimiter = ',')]
    pub doc_lens: Vec<u32>,
    /// Document mask: attend to the whole document instead of causally within it
    #[arg(long)]
    pub doc_bidirectional: bool,
    /// Block mask: JSON file with the active (q-tile, kv-tile) pairs, {"blocks": [[q, kv], ...]}
    #[arg(long, value_name = "FILE")]
    pub blocks: Option<PathBuf>,
    /// Q tile size; default by head dim (<=64: 128, <=128: 64, else 64)
    #[arg(long, value_name = "ROWS")]
    pub block_m: Option<u32>,
    /// KV tile size; default by head dim (<=64: 128, <=128: 128, else 64)
    #[arg(long, value_name = "COLS")]
    pub block_n: Option<u32>,
    /// Number of SMs (132 on H100/H200/H800)
    #[arg(long, default_value_t = 132, value_name = "P")]
    pub sms: u32,
    /// Launch policy: in-order (non-persistent grid) or persistent (static assignment)
    #[arg(long, value_enum, default_value_t = LaunchArg::InOrder)]
    pub launch: LaunchArg,
    /// Schedule: naive, descending, spt, shift, symmetric-shift, or all
    #[arg(long, default_value = "all", value_name = "NAME")]
    pub schedule: String,

    /// The paper's idealized setting: P = N SMs, square tiles, --heads heads, constant costs, free hand-offs
    #[arg(long, requires = "tiles")]
    pub ideal: bool,
    /// With --ideal: tiles per head N (also the number of SMs)
    #[arg(long, value_name = "N")]
    pub tiles: Option<u32>,

    #[command(flatten)]
    pub costs: CostArgs,
}

/// The cost model (uncalibrated: one full tile's compute is the time unit).
#[derive(Debug, Clone, Args)]
pub struct CostArgs {
    /// Compute cost of a full tile
    #[arg(long, default_value_t = 1.0, value_name = "C")]
    pub compute: f64,
    /// Compute cost of a partially masked tile (default: --compute)
    #[arg(long, value_name = "C")]
    pub compute_partial: Option<f64>,
    /// Scale each tile's compute cost by its unmasked fraction
    #[arg(long)]
    pub scale_by_fraction: bool,
    /// Cost of one dQ reduction (add a partial into the accumulator)
    #[arg(long, default_value_t = 0.25, value_name = "R")]
    pub reduce: f64,
    /// Latency of a semaphore hand-off between consecutive ranks
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub handoff: f64,
    /// Per-unit start overhead (load K, V)
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub unit_start: f64,
    /// Per-unit finish overhead (store dK, dV)
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub unit_finish: f64,
    /// Cost of one dK/dV reduction under GQA (default: --reduce)
    #[arg(long, value_name = "R")]
    pub dkv_reduce: Option<f64>,
}

#[derive(Debug, Args)]
pub struct BoundsArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
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
    /// Write the simulated timeline(s) as JSON to FILE (see docs/timeline-format.md)
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
}
