//! Turns command-line arguments into library values: the problem, its mask, the machine, the costs and the
//! schedules to evaluate. Every user mistake becomes a `BadInput` with a one-line fix.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use dag_model::{Mask, Problem, ProblemSpec, TileMask, default_blocks};
use indicatif::ProgressBar;
use rayon::prelude::*;
use schedulers::{CostModel, Evaluation, Machine, SPLIT_SUFFIX, ScheduleKind, evaluate, split_tail_or_why};
use serde::Deserialize;

use crate::args::{MaskArg, ShapeArgs};
use crate::exit::bad_input;
pub use crate::searching::{LoadedSchedule, SearchRequest};
use crate::{memory, progress};

/// A fully resolved analysis request.
#[derive(Debug, Clone)]
pub struct Setup {
    pub problem: Problem,
    pub mask: Mask,
    pub tile_mask: Arc<TileMask>,
    pub machine: Machine,
    pub costs: CostModel,
    /// The schedules asked for, in the order they are reported.
    pub schedules: Vec<ScheduleKind>,
    /// `--schedule all`: schedules that do not apply are reported as skipped rather than failing.
    pub all: bool,
    pub ideal: bool,
    /// `--schedule search`: a search to run, reported after the built-ins (see `searching`).
    pub search: Option<SearchRequest>,
    /// `--schedule-file`: a schedule loaded from a file and validated, reported after the built-ins.
    pub schedule_file: Option<LoadedSchedule>,
    /// `--costs FILE`: the costs are calibrated (µs) on this GPU; `None` for the uncalibrated defaults.
    pub calibrated: Option<Calibrated>,
    /// `--split-tail`: each built-in is followed by its split-tail version (where that changes anything).
    pub split_tail: bool,
    /// Show progress on stderr (where it is a terminal) while building the tile mask and in `evaluate_each`.
    /// `from_args` turns it on; the configurations of a sweep (`resolve`) leave it off, since the sweep shows its
    /// own.
    pub progress: bool,
}

/// Where calibrated costs came from.
#[derive(Debug, Clone)]
pub struct Calibrated {
    pub gpu: String,
    pub path: std::path::PathBuf,
    /// The fit behind the costs (this kernel build's entry), for reading a trace against it.
    pub fit: schedulers::calibrate::Fit,
    /// The launch the calibration traced: a trace of the other one reads its unit starts differently.
    pub traced_launch: schedulers::LaunchPolicy,
}

/// The result for one requested schedule: what the caller kept of its evaluation, or why it was skipped.
#[derive(Debug)]
pub enum Outcome<T> {
    Done(T),
    Skipped { schedule: &'static str, reason: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlocksFile {
    blocks: Vec<(u32, u32)>,
}

/// What a command keeps of each evaluation beyond its summary: it adds to the memory an analysis takes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Keeps {
    /// Every schedule's timeline (`simulate --timeline`, `gantt`).
    pub timelines: bool,
    /// The schedule file's text of its one schedule (`--save-schedule`).
    pub schedule_text: bool,
}

/// `schedulers::EVEN_KV_TILES_HINT` under `--ideal`, which sets the KV tiles with --tiles.
const IDEAL_EVEN_TILES_HINT: &str = "use an even --tiles, or descending";

impl Setup {
    /// Resolves the flags, and refuses a problem whose analysis would not fit in memory (`check_memory`).
    pub fn from_args(a: &ShapeArgs) -> Result<Setup> {
        let setup = Setup::build(a, true)?;
        setup.check_memory(Keeps::default())?;
        Ok(setup)
    }

    /// Resolves the flags, showing no progress. Of the memory it checks only the tile mask's, which this builds;
    /// a caller that evaluates schedules checks theirs (`check_memory`, or a sweep's for all its configurations
    /// at once).
    pub fn resolve(a: &ShapeArgs) -> Result<Setup> {
        Setup::build(a, false)
    }

    fn build(a: &ShapeArgs, progress: bool) -> Result<Setup> {
        let (mut schedules, mut all, wants_search) = parse_schedules(&a.schedule)?;
        if a.schedule_file.is_some() {
            // The file is the schedule to evaluate (clap refuses --schedule beside it).
            (schedules, all) = (Vec::new(), false);
        }
        let search = SearchRequest::from_args(a, wants_search)?;
        let mask = build_mask(a)?;
        let (spec, sms) = if a.ideal {
            // clap bounds --tiles to 1..=MAX_SMS: it is the number of SMs too.
            let n = a.tiles.ok_or_else(|| bad_input("--ideal needs --tiles N"))?;
            if !matches!(a.mask, MaskArg::Full | MaskArg::Causal) {
                return Err(bad_input("--ideal is defined for --mask full or causal only"));
            }
            // Square tiles of any size; 128 keeps the numbers familiar.
            let tokens = n.checked_mul(128).ok_or_else(|| bad_input("--tiles is too large"))?;
            let spec = ProblemSpec {
                batch: 1,
                heads: a.heads,
                kv_heads: a.heads,
                seqlen_q: tokens,
                seqlen_k: tokens,
                head_dim: a.head_dim,
                block_m: 128,
                block_n: 128,
            };
            (spec, n)
        } else {
            let (bm, bn) = default_blocks(a.head_dim);
            let spec = ProblemSpec {
                batch: a.batch,
                heads: a.heads,
                kv_heads: a.kv_heads.unwrap_or(a.heads),
                seqlen_q: a.seqlen,
                seqlen_k: a.seqlen_k.unwrap_or(a.seqlen),
                head_dim: a.head_dim,
                block_m: a.block_m.unwrap_or(bm),
                block_n: a.block_n.unwrap_or(bn),
            };
            (spec, a.sms)
        };
        // The SM count is in range already: clap holds --sms to 1..=MAX_SMS, `validate --from-raw` checks the count
        // a raw file records where it reads it, and with --ideal it is the tiles per head (at least 1, and bounded
        // by `Problem::new`).
        let problem = Problem::new(spec)?;
        let c = &a.costs;
        let mut costs = CostModel {
            compute: c.compute,
            compute_partial: c.compute_partial,
            scale_by_fraction: c.scale_by_fraction,
            reduce: c.reduce,
            handoff: c.handoff,
            poll: c.poll,
            kernel_epilogues: c.kernel_epilogues,
            dq_writers: c.dq_writers,
            dq_deferred: c.dq_deferred,
            kv_load_overlap: c.kv_load_overlap,
            unit_start: c.unit_start,
            unit_finish: c.unit_finish,
            dkv_reduce: c.dkv_reduce.unwrap_or(c.reduce),
            variability: None,
            memory_roof: None,
        };
        let mut calibrated = None;
        if let Some(path) = &c.costs {
            if a.ideal {
                return Err(bad_input("--ideal uses the idealized costs: leave out --costs"));
            }
            // The file's costs replace the defaults; it must hold an entry for this kernel build.
            let file = crate::costs_file::CostsFile::load(path)?;
            let entry = file.entry(path, problem.head_dim(), problem.block_m(), problem.block_n())?;
            costs = entry.costs;
            calibrated = Some(Calibrated {
                gpu: file.gpu.clone(),
                path: path.clone(),
                fit: entry.fit.clone(),
                traced_launch: file.traced_launch(),
            });
        }
        // A tile's compute is the time every prediction is counted in: at 0 every makespan is 0, and the gaps
        // and the search's heads-in-flight limit (taken from the built-ins' timelines) mean nothing. The library
        // accepts 0 (`CostModel::check`); the command line does not.
        if !(costs.compute > 0.0 && costs.compute <= schedulers::MAX_COST) {
            let got =
                if costs.compute.abs() >= 1e6 { format!("{:e}", costs.compute) } else { costs.compute.to_string() };
            return Err(bad_input(format!(
                "cost compute must be a finite number above 0 and at most {:e}: it is one full tile's time, which \
                 every prediction counts in (got {got})",
                schedulers::MAX_COST
            )));
        }
        costs.check()?;
        let launch = crate::args::launch_or_in_order(a.launch);
        // Building the tile mask takes tens of bytes per tile of one head; a long enough sequence alone exhausts
        // memory, so see that it fits before building it.
        memory::check(
            memory::tile_mask_build_bytes(mask.active_tiles_at_most(&problem)),
            "this problem",
            "its tile mask",
            if a.ideal {
                "use a smaller --tiles"
            } else {
                "use a shorter --seqlen or larger tiles (--block-m, --block-n)"
            },
        )?;
        // A mask of hundreds of millions of tiles takes a while (270 million: 15 s).
        let bar = if progress { progress::spinner() } else { ProgressBar::hidden() };
        bar.set_message("building the tile mask");
        let tile_mask = TileMask::new(&problem, &mask);
        bar.finish_and_clear();
        let tile_mask = Arc::new(tile_mask?);
        let machine = Machine { sms, launch };
        let mut setup = Setup {
            problem,
            mask,
            tile_mask,
            machine,
            costs,
            schedules,
            all,
            ideal: a.ideal,
            search,
            schedule_file: None,
            calibrated,
            split_tail: a.split_tail,
            progress,
        };
        setup.schedule_file = a.schedule_file.as_deref().map(|path| LoadedSchedule::read(path, &setup)).transpose()?;
        Ok(setup)
    }

    /// What the memory of this problem's schedules grows with.
    pub fn size(&self) -> memory::Size {
        let (p, bh) = (&self.problem, self.problem.bh_count() as u64);
        memory::Size {
            tasks: self.tile_mask.active_tiles() * bh,
            columns: p.n_tiles() as u64 * bh,
            rows: p.m_tiles() as u64 * bh,
            mask_tiles: self.tile_mask.active_tiles(),
        }
    }

    /// What the model predicts the GPU takes for an evaluated schedule (`schedulers::predicted_makespan`): its
    /// makespan, or under calibrated phase variability the mean of the varied runs, blended with the memory roof
    /// where the costs have one. The simulation was checked already, so the varied runs cannot fail; were one to,
    /// the constant-phase makespan stands.
    pub fn predicted(&self, e: &schedulers::Evaluation) -> f64 {
        self.costs.with_memory_roof(self.simulated_prediction(e), e.schedule.problem())
    }

    /// The simulator's part of [`Setup::predicted`], before the memory roof (`schedulers::simulated_prediction`).
    pub fn simulated_prediction(&self, e: &schedulers::Evaluation) -> f64 {
        if self.costs.variability.is_some() && self.costs.decoupled() {
            schedulers::simulated_prediction(&e.schedule, &self.costs).unwrap_or(e.makespan())
        } else {
            e.makespan()
        }
    }

    /// A refusal's text (the search's list of built-ins keeps them as text) in the terms of `--ideal`'s flags.
    pub fn in_ideal_terms(&self, reason: &str) -> String {
        if self.ideal {
            // The schedulers crate words the KV tile count from seqlen_k and block_n, which --ideal derives
            // from --tiles.
            let p = &self.problem;
            let derived = format!("{} = ceil({} / {})", p.n_tiles(), p.seqlen_k(), p.block_n());
            reason
                .replace(schedulers::EVEN_KV_TILES_HINT, IDEAL_EVEN_TILES_HINT)
                .replace(&derived, &format!("--tiles {}", p.n_tiles()))
        } else {
            reason.to_string()
        }
    }

    /// Whether `kind` applies to the problem, its refusal's hint in the terms of the flags that set the problem
    /// (`--ideal` sets the KV tiles with --tiles, not --seqlen-k or --block-n).
    fn check_applicable(&self, kind: schedulers::ScheduleKind) -> std::result::Result<(), schedulers::ScheduleError> {
        kind.check_applicable(&self.problem, &self.mask).map_err(|e| match e {
            schedulers::ScheduleError::NotApplicable { schedule, needs, .. }
                if self.ideal && needs == schedulers::EVEN_KV_TILES =>
            {
                schedulers::ScheduleError::NotApplicable {
                    schedule,
                    needs,
                    got: format!("--tiles {}", self.problem.n_tiles()),
                    hint: IDEAL_EVEN_TILES_HINT,
                }
            }
            other => other,
        })
    }

    /// The requested built-ins that apply to the problem (the others are skipped, or refused, before any work).
    pub fn applicable_builtins(&self) -> u64 {
        self.schedules.iter().filter(|kind| kind.check_applicable(&self.problem, &self.mask).is_ok()).count() as u64
    }

    /// What evaluating the requested schedules (`evaluate_each`) holds at its peak on `threads` threads, with
    /// what the command `keeps` of each.
    fn memory_load(&self, threads: u64, keeps: Keeps) -> memory::Load {
        let builtins = self.applicable_builtins();
        let with_split = 1 + self.split_tail as u64;
        let extras = self.search.is_some() as u64 + self.schedule_file.is_some() as u64;
        memory::Load {
            size: self.size(),
            problems_at_once: 1,
            schedules_at_once: builtins.min(threads) * with_split,
            searches_at_once: self.search.is_some() as u64,
            schedules_held: self.schedule_file.is_some() as u64,
            timelines_kept: if keeps.timelines { builtins * with_split + extras } else { 0 },
            texts_kept: keeps.schedule_text as u64,
        }
    }

    /// Refuses (bad input) an analysis that would not fit in the memory available, with what the command
    /// `keeps` of each evaluation.
    pub fn check_memory(&self, keeps: Keeps) -> Result<()> {
        memory::check_load(
            |threads| self.memory_load(threads, keeps),
            "this problem",
            if self.ideal {
                "use a smaller --tiles or fewer --heads"
            } else {
                "use a shorter --seqlen or fewer heads/batch"
            },
        )
    }

    /// The unit of every time this setup predicts: microseconds once calibrated, else one full tile's compute.
    pub fn time_unit(&self) -> &'static str {
        if self.calibrated.is_some() { "us" } else { "tile-compute" }
    }

    /// Builds and evaluates every requested schedule, in parallel, keeping only what `keep` extracts from each
    /// evaluation, so that a large problem's schedules (hundreds of megabytes each) are dropped as soon as they
    /// are evaluated. Results come back in request order: the output does not depend on the thread count. With
    /// `progress`, the schedules done and the search's rounds show on stderr where it is a terminal.
    pub fn evaluate_each<T: Send>(
        &self,
        record_timeline: bool,
        keep: impl Fn(Evaluation) -> T + Sync,
    ) -> Result<Vec<Outcome<T>>> {
        let bar = if self.progress {
            let steps = self.schedules.len() + self.schedule_file.is_some() as usize + self.search.is_some() as usize;
            progress::counter(steps as u64, "schedules")
        } else {
            ProgressBar::hidden()
        };
        let outcomes = self.evaluate_all(record_timeline, &keep, &bar);
        bar.finish_and_clear();
        outcomes
    }

    fn evaluate_all<T: Send>(
        &self,
        record_timeline: bool,
        keep: &(impl Fn(Evaluation) -> T + Sync),
        bar: &ProgressBar,
    ) -> Result<Vec<Outcome<T>>> {
        let mut outcomes: Vec<Outcome<T>> = self
            .schedules
            .par_iter()
            .map(|&kind| {
                if let Err(reason) = self.check_applicable(kind) {
                    if self.all {
                        return Ok(vec![Outcome::Skipped { schedule: kind.name(), reason: reason.to_string() }]);
                    }
                    return Err(reason.into());
                }
                let schedule = kind
                    .build(self.problem, self.mask.clone(), self.tile_mask.clone(), self.machine, &self.costs)
                    .with_context(|| format!("schedule {}", kind.name()))?;
                let split = if self.split_tail {
                    Some(
                        split_tail_or_why(&schedule, &self.costs)
                            .with_context(|| format!("schedule {}{SPLIT_SUFFIX}", kind.name()))?,
                    )
                } else {
                    None
                };
                let mut done = vec![Outcome::Done(keep(evaluate(schedule, &self.costs, record_timeline)?))];
                match split {
                    Some(Ok(split)) => done.push(Outcome::Done(keep(evaluate(split, &self.costs, record_timeline)?))),
                    // Where there is nothing to split, say why in the split version's place.
                    Some(Err(why)) => {
                        done.push(Outcome::Skipped { schedule: kind.split_name(), reason: why.to_string() })
                    }
                    None => {}
                }
                Ok(done)
            })
            .inspect(|_| bar.inc(1))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        // A loaded file, then the search: after the built-ins, whatever order --schedule named them in.
        outcomes.extend(crate::searching::evaluate_extra(self, record_timeline, keep, bar)?);
        Ok(outcomes)
    }
}

/// The built-ins `--schedule` names, whether it said `all` (every built-in, inapplicable ones skipped), and
/// whether it asked for `search`.
pub(crate) fn parse_schedules(s: &str) -> Result<(Vec<ScheduleKind>, bool, bool)> {
    let (mut kinds, mut all, mut search) = (Vec::new(), false, false);
    for name in s.split(',').map(str::trim) {
        let named = match name {
            "all" => {
                all = true;
                ScheduleKind::ALL.to_vec()
            }
            crate::searching::SEARCH => {
                search = true;
                Vec::new()
            }
            _ => vec![name.parse::<ScheduleKind>().map_err(|e| bad_input(e.replace(" or all", ", search or all")))?],
        };
        for kind in named {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    Ok((kinds, all, search))
}

fn build_mask(a: &ShapeArgs) -> Result<Mask> {
    let stray = |flag: &str, mask: &str| bad_input(format!("{flag} only applies to --mask {mask}"));
    if a.mask != MaskArg::SlidingWindow && (a.window_left.is_some() || a.window_right.is_some()) {
        return Err(stray("--window-left/--window-right", "sliding-window"));
    }
    if a.mask != MaskArg::Document && (!a.doc_lens.is_empty() || a.doc_bidirectional || a.doc_random.is_some()) {
        return Err(stray("--doc-lens/--doc-random/--doc-bidirectional", "document"));
    }
    if a.mask != MaskArg::Blocks && a.blocks.is_some() {
        return Err(stray("--blocks", "blocks"));
    }
    Ok(match a.mask {
        MaskArg::Full => Mask::Full,
        MaskArg::Causal => Mask::Causal,
        MaskArg::SlidingWindow => {
            if a.window_left.is_none() && a.window_right.is_none() {
                return Err(bad_input("--mask sliding-window needs --window-left and/or --window-right"));
            }
            Mask::SlidingWindow { left: a.window_left, right: Some(a.window_right.unwrap_or(0)) }
        }
        MaskArg::Document => {
            let lens = match a.doc_random {
                Some(seed) => crate::docgen::random_documents(a.seqlen, seed),
                None if a.doc_lens.is_empty() => {
                    return Err(bad_input(
                        "--mask document needs --doc-lens (e.g. --doc-lens 4096,8192,4096) or --doc-random SEED",
                    ));
                }
                None => a.doc_lens.clone(),
            };
            Mask::Document { lens, causal: !a.doc_bidirectional }
        }
        MaskArg::Blocks => {
            let path = a.blocks.as_deref().ok_or_else(|| bad_input("--mask blocks needs --blocks FILE"))?;
            Mask::Blocks { pairs: read_blocks(path)? }
        }
    })
}

fn read_blocks(path: &Path) -> Result<Vec<(u32, u32)>> {
    let text =
        fs::read_to_string(path).map_err(|e| bad_input(format!("cannot read blocks file {}: {e}", path.display())))?;
    let file: BlocksFile = serde_json::from_str(&text).map_err(|e| {
        bad_input(format!("blocks file {} is not valid: {e}; expected {{\"blocks\": [[q, kv], ...]}}", path.display()))
    })?;
    Ok(file.blocks)
}
