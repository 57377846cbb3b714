//! Schedule search: a validated schedule of low simulated makespan for any mask, GQA included, with a
//! certificate of how good it is.
//!
//! The free choices are the launch order of units, their composition (which KV tiles of one head share a
//! unit), each unit's visit order, and every dQ (and dK/dV) tile's accumulation order. The last is not
//! searched: ranks are always the arrival order of a simulation (model.md, Lemma), which never makes a unit
//! wait for one launched after it. The search
//!
//! 1. builds list-scheduling seeds (critical-path priority, see `seeds`) and, if asked, takes the applicable
//!    built-in schedules and any given schedules as further starting points;
//! 2. starts from the best of them and improves it by local search (`moves`): each round proposes a fixed
//!    number of candidates from a stream keyed by (seed, round, candidate), simulates them in parallel
//!    (rayon) from a snapshot of the parent's run, takes the best (the first of equals) and accepts it by
//!    late acceptance, keeping the best plan seen. The result depends on the seed and the number of rounds
//!    only, never on the thread count;
//! 3. fixes the ranks from a final simulation and validates the order (`Schedule::validate`). A seed
//!    schedule kept with its own ranks that is still better than the searched one is returned instead,
//!    so the result is never worse than any schedule it started from.
//!
//! The budget is a number of candidate moves and/or a `stop` callback (which the command line uses for a
//! time budget: this crate never reads the clock).

mod certificate;
mod moves;
mod plan;
mod rng;
mod seeds;
mod sim;
mod tourney;

use std::sync::Arc;

use dag_model::{Mask, Problem, TileMask};
use rayon::prelude::*;
use thiserror::Error;

use crate::{CostModel, LaunchPolicy, Machine, Schedule, ScheduleError, ScheduleKind};
pub use certificate::ProblemBounds;
use plan::{Plan, Tables};
use rng::Rng;
use sim::Score;

/// Candidates per round. Fixed, not tied to the thread count, so that results are reproducible anywhere.
pub const CANDIDATES_PER_ROUND: u64 = 8;

/// Rounds of late acceptance: a candidate may be worse than the current plan if it beats the plan of this
/// many rounds ago.
const HISTORY: usize = 32;

/// Snapshots of a run kept for resuming candidates: about this many, fewer if they would take too much
/// memory.
const SNAPSHOTS: usize = 64;
const SNAPSHOT_BYTES: usize = 256 << 20;

/// What to search from and for how long.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// Seed of the move streams.
    pub seed: u64,
    /// Stop after this many candidate moves (rounded to whole rounds only at the last one); `None` leaves
    /// the end to the `stop` callback.
    pub iterations: Option<u64>,
    /// Built-in schedules to compare with (those that do not apply are reported as skipped).
    pub builtins: Vec<ScheduleKind>,
    /// Also start from those built-ins (and keep one as built if nothing found beats it).
    pub builtin_seeds: bool,
    /// Further schedules to start from (for example one loaded from a file), for the same problem.
    pub seeds: Vec<Schedule>,
    /// How many (batch, head) pairs may have a unit resident at once.
    pub heads_in_flight: HeadsLimit,
}

/// The limit on (batch, head) pairs in flight that the search keeps to.
///
/// The cost model has no memory system. Every head in flight keeps its Q, dO, LSE, D and FP32 dQ accumulator
/// busy in L2, and a plan that spreads the SMs over every head at once can simulate faster yet run far slower:
/// on an H100 (bench/results/search-causal-2026-11-25-89c79de-h100) searched schedules with 16–64 (batch,
/// head) pairs in flight ran 4–24% slower than the built-ins, with 4–9, which the model had placed 2.5–3.4%
/// behind them. The built-ins walk the heads
/// in launch order; `Builtins` keeps the search as narrow as the widest of them, and is the command line's
/// default. The library's default is `Any`: the search of the model as it stands (the paper's optima, the
/// bounds), which knows nothing of a GPU's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeadsLimit {
    /// The most that any applicable built-in schedule has in flight (`Simulation::peak_heads_in_flight`).
    Builtins,
    AtMost(u32),
    /// No limit.
    #[default]
    Any,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            seed: 0,
            iterations: None,
            builtins: ScheduleKind::ALL.to_vec(),
            builtin_seeds: true,
            seeds: Vec::new(),
            heads_in_flight: HeadsLimit::default(),
        }
    }
}

/// Where a running search stands; passed to the `stop` callback after every round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Candidate moves evaluated so far.
    pub iterations: u64,
    /// Makespan of the best plan so far (arrival-order ranks).
    pub makespan: f64,
    /// Rounds that improved the best plan (its makespan, or on a tie the spread of SM end times).
    pub improvements: u64,
}

/// A built-in schedule as built, for comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltinResult {
    pub kind: ScheduleKind,
    /// Its simulated makespan, or why it was not built.
    pub makespan: Result<f64, String>,
    /// The most (batch, head) pairs it has in flight (`Simulation::peak_heads_in_flight`); 0 if not built.
    pub heads_in_flight: u32,
}

/// A starting point of the search and the makespan of its plan with arrival-order ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedResult {
    pub name: String,
    pub makespan: f64,
    /// The most (batch, head) pairs it has in flight, as the search simulates it.
    pub heads_in_flight: u32,
    /// Whether it kept to the limit (a start over it is not searched from).
    pub within_limit: bool,
}

/// A searched schedule with its certificate and how it was found.
#[derive(Debug, Clone)]
pub struct SearchResult {
    /// The validated schedule, named "search".
    pub schedule: Schedule,
    /// Its simulated makespan (the official simulator, under the search's costs).
    pub makespan: f64,
    /// The starting point the result descends from; "NAME (as built)" when a seed schedule with its own
    /// ranks beat every searched plan.
    pub origin: String,
    pub iterations: u64,
    pub improvements: u64,
    pub builtins: Vec<BuiltinResult>,
    pub seeds: Vec<SeedResult>,
    /// Bounds on every schedule of the problem (the schedule's own `Bounds` come from `evaluate`).
    pub problem_bounds: ProblemBounds,
    /// The limit on (batch, head) pairs in flight the search kept to; `None` for `HeadsLimit::Any`.
    pub heads_limit: Option<u32>,
    /// Whether some start kept to the limit, so that a search ran (possibly of no iteration, if `stop` said so
    /// at once); if not, the result is the best built-in kept as built.
    pub searched: bool,
}

impl SearchResult {
    /// The built-in with the lowest makespan, if any was built.
    pub fn best_builtin(&self) -> Option<(ScheduleKind, f64)> {
        self.builtins
            .iter()
            .filter_map(|b| b.makespan.as_ref().ok().map(|&m| (b.kind, m)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
}

#[derive(Debug, Clone, PartialEq, Error)]
pub enum SearchError {
    #[error("the search budget must allow at least one iteration (got {iterations})")]
    ZeroBudget { iterations: u64 },
    #[error("a seed schedule named {name} is for another problem, mask or machine")]
    ForeignSeed { name: String },
    #[error(
        "the seed schedule {name} splits kv columns between units; the search works on whole columns (give it \
         the schedule before --split-tail)"
    )]
    SplitSeed { name: String },
    #[error(
        "no starting schedule keeps within {limit} heads in flight (the fewest: {fewest}, {name}); \
         allow at least {fewest}{}",
        if search_fewest > fewest {
            format!(", or {search_fewest} for a search to run from {search_name} (a built-in as built is a \
                     result, not a start)")
        } else {
            String::new()
        }
    )]
    NoSeedWithinHeads { limit: u32, fewest: u32, name: String, search_fewest: u32, search_name: String },
    #[error(
        "the searched schedule has {heads} heads in flight in the official simulation, over the limit of \
         {limit}, and no starting schedule kept with its own ranks is within it"
    )]
    SearchedOverHeads { heads: u32, limit: u32 },
    #[error("the limit on heads in flight must be at least 1")]
    ZeroHeads,
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
}

/// Searches for a schedule of `problem` under `mask` on `machine` minimising the simulated makespan under
/// `costs`. `stop` is asked after every round whether to end; `config.iterations` ends it too.
pub fn search(
    problem: Problem,
    mask: Mask,
    tile_mask: Arc<TileMask>,
    machine: Machine,
    costs: &CostModel,
    config: &SearchConfig,
    stop: &(dyn Fn(&Progress) -> bool + Sync),
) -> Result<SearchResult, SearchError> {
    if let Some(0) = config.iterations {
        return Err(SearchError::ZeroBudget { iterations: 0 });
    }
    if machine.sms == 0 {
        return Err(ScheduleError::NoSms.into());
    }
    costs.check()?;
    for s in &config.seeds {
        if *s.problem() != problem || *s.mask() != mask || s.machine() != machine {
            return Err(SearchError::ForeignSeed { name: s.name().to_string() });
        }
        // The search's plans walk whole columns (`plan::Walk` covers a column's active tiles).
        if s.order().split_columns(&problem) > 0 {
            return Err(SearchError::SplitSeed { name: s.name().to_string() });
        }
    }
    if config.heads_in_flight == HeadsLimit::AtMost(0) {
        return Err(SearchError::ZeroHeads);
    }
    let mut tables = Tables::new(&problem, &tile_mask, costs, machine.sms, machine.launch == LaunchPolicy::Persistent);
    let problem_bounds = ProblemBounds::from_tables(&tables, &tile_mask);

    let built: Vec<(ScheduleKind, Result<Schedule, ScheduleError>)> = config
        .builtins
        .par_iter()
        .map(|&kind| (kind, kind.build(problem, mask.clone(), tile_mask.clone(), machine, costs)))
        .collect();
    let builtins: Vec<BuiltinResult> = built
        .iter()
        .map(|(kind, r)| BuiltinResult {
            kind: *kind,
            makespan: r.as_ref().map(|s| official_makespan(s, costs)).map_err(|e| e.to_string()),
            heads_in_flight: r.as_ref().map_or(0, |s| official_heads(s, costs)),
        })
        .collect();
    let heads_limit = match config.heads_in_flight {
        HeadsLimit::Any => None,
        HeadsLimit::AtMost(n) => Some(n),
        HeadsLimit::Builtins => builtins.iter().filter(|b| b.makespan.is_ok()).map(|b| b.heads_in_flight).max(),
    };
    // Schedules kept with their own ranks as a fallback, if they keep to the limit.
    let within = |s: &Schedule| heads_limit.is_none_or(|limit| official_heads(s, costs) <= limit);
    let mut fixed: Vec<&Schedule> = config.seeds.iter().filter(|s| within(s)).collect();
    if config.builtin_seeds {
        fixed.extend(built.iter().filter_map(|(_, r)| r.as_ref().ok()).filter(|s| within(s)));
    }

    let mut starts: Vec<(String, Plan)> = seeds::list_seeds(&tables);
    starts.extend(seeds::packed_seeds(&tables));
    starts.extend(config.seeds.iter().map(|s| (s.name().to_string(), Plan::from_order(s.order(), &tile_mask))));
    if config.builtin_seeds {
        starts.extend(
            built
                .iter()
                .filter_map(|(_, r)| r.as_ref().ok())
                .map(|s| (s.name().to_string(), Plan::from_order(s.order(), &tile_mask))),
        );
    }
    // Every start is scored without the limit, then those over it are dropped (and reported). A built-in's
    // plan starts with arrival-order ranks, not its own, so it may run wider than the built-in itself.
    let scores: Vec<Score> = starts
        .par_iter()
        .map(|(_, p)| sim::score_from(p, &tables, None, 0, f64::INFINITY).expect("no cutoff"))
        .collect();
    let seed_results: Vec<SeedResult> = starts
        .iter()
        .zip(&scores)
        .map(|((name, _), s)| SeedResult {
            name: name.clone(),
            makespan: s.makespan,
            heads_in_flight: s.heads,
            within_limit: heads_limit.is_none_or(|limit| s.heads <= limit),
        })
        .collect();
    let first = (0..starts.len())
        .filter(|&i| seed_results[i].within_limit)
        .reduce(|a, b| if scores[b].better_than(&scores[a]) { b } else { a });
    tables.heads_limit = heads_limit.unwrap_or(u32::MAX);

    let (mut iterations, mut improvements) = (0, 0);
    let mut found: Option<(Schedule, f64, String)> = None;
    if let Some(first) = first {
        let origin = starts[first].0.clone();
        let base = starts.swap_remove(first).1;
        drop(starts);
        let plan;
        (plan, iterations, improvements) = improve(base, &tables, config, stop);
        let (order, _) = sim::assign_ranks(&plan, &tables);
        let schedule = Schedule::validate("search", problem, mask.clone(), tile_mask.clone(), machine, costs, order)?;
        // The search's own simulation counts heads in flight as the official one does, but it does not model
        // decoupled dQ writers, so under such costs its timeline (and its count) can differ: the limit is
        // checked again on the official simulation.
        let heads = official_heads(&schedule, costs);
        if heads_limit.is_none_or(|limit| heads <= limit) {
            let makespan = official_makespan(&schedule, costs);
            found = Some((schedule, makespan, origin));
        } else if fixed.is_empty() {
            return Err(SearchError::SearchedOverHeads { heads, limit: heads_limit.unwrap_or(u32::MAX) });
        }
    } else if fixed.is_empty() {
        // The fewest any start needs: a plan with arrival ranks as the search counts it, or a built-in kept as
        // built as the official simulation counts it (which can be fewer).
        let plans = (0..starts.len()).map(|i| (scores[i].heads, starts[i].0.clone()));
        let as_built = builtins
            .iter()
            .filter(|b| config.builtin_seeds && b.makespan.is_ok())
            .map(|b| (b.heads_in_flight, format!("{} as built", b.kind.name())));
        let (search_fewest, search_name) = plans.clone().min_by_key(|(h, _)| *h).expect("list seeds always exist");
        let (fewest, name) = plans.chain(as_built).min_by_key(|(h, _)| *h).expect("list seeds always exist");
        return Err(SearchError::NoSeedWithinHeads {
            limit: heads_limit.unwrap_or(u32::MAX),
            fewest,
            name,
            search_fewest,
            search_name,
        });
    }
    // A schedule kept with its own ranks replaces the searched one if it is better (or if no start kept to
    // the limit, so nothing was searched, or the searched one went over it).
    if let Some(best_fixed) =
        fixed.iter().min_by(|a, b| official_makespan(a, costs).total_cmp(&official_makespan(b, costs)))
        && found.as_ref().is_none_or(|(_, makespan, _)| official_makespan(best_fixed, costs) < *makespan)
    {
        let order = best_fixed.order().clone();
        let schedule = Schedule::validate("search", problem, mask, tile_mask, machine, costs, order)?;
        let makespan = official_makespan(&schedule, costs);
        let why = match (&found, first) {
            (Some(_), _) => "",
            (None, Some(_)) => "; the searched schedule went over the limit on heads in flight",
            (None, None) => "; no start kept to the limit on heads in flight",
        };
        found = Some((schedule, makespan, format!("{} (as built{why})", best_fixed.name())));
    }
    let (schedule, makespan, origin) = found.expect("a searched or a fixed schedule");
    Ok(SearchResult {
        schedule,
        makespan,
        origin,
        iterations,
        improvements,
        builtins,
        seeds: seed_results,
        problem_bounds,
        heads_limit,
        searched: first.is_some(),
    })
}

/// Improves `base` by local search with late acceptance until the budget of `config` or `stop` ends it;
/// returns the best plan seen, the candidate moves evaluated and the improvements found.
fn improve(
    mut base: Plan,
    tables: &Tables,
    config: &SearchConfig,
    stop: &(dyn Fn(&Progress) -> bool + Sync),
) -> (Plan, u64, u64) {
    let stride = snapshot_stride(tables, base.units.len());
    let (mut score, mut trace) = sim::trace(&base, tables, stride);
    let mut guide = moves::Guide::new(&base, &trace);
    let (mut best_plan, mut best_score) = (base.clone(), score);
    // Late acceptance: a candidate replaces the current plan if it is no worse than it, or better than the
    // current plan was `HISTORY` rounds ago. Sideways and slightly worse steps let the search leave plateaus
    // (a makespan that several SMs share, a wait that must move before it can vanish); the best plan seen is
    // kept apart. A candidate over the limit on heads in flight scores `None`, as one over the cutoff.
    let mut history = vec![score; HISTORY];
    let (mut iterations, mut improvements, mut round) = (0u64, 0u64, 0u64);
    loop {
        let left = config.iterations.map_or(CANDIDATES_PER_ROUND, |max| max.saturating_sub(iterations));
        let progress = Progress { iterations, makespan: best_score.makespan, improvements };
        if left == 0 || stop(&progress) {
            break;
        }
        let count = left.min(CANDIDATES_PER_ROUND);
        let candidates: Vec<moves::Candidate> =
            (0..count).map(|c| moves::propose(&base, &guide, tables, &mut Rng::new(config.seed, round, c))).collect();
        let late = history[(round % HISTORY as u64) as usize];
        let cutoff = score.makespan.max(late.makespan);
        let results: Vec<Option<Score>> = candidates
            .par_iter()
            .map(|(plan, first)| sim::score_from(plan, tables, Some(&trace), *first, cutoff))
            .collect();
        iterations += count;
        // The best candidate, the first of equals.
        let pick = (0..results.len())
            .filter(|&c| results[c].is_some())
            .reduce(|a, b| if results[b].unwrap().better_than(&results[a].unwrap()) { b } else { a });
        if let Some(c) = pick {
            let s = results[c].unwrap();
            if !score.better_than(&s) || s.better_than(&late) {
                let (plan, first) = candidates.into_iter().nth(c).expect("candidate index");
                (score, trace) = sim::retrace(&plan, tables, &trace, first);
                base = plan;
                guide = moves::Guide::new(&base, &trace);
                if score.better_than(&best_score) {
                    (best_plan, best_score) = (base.clone(), score);
                    improvements += 1;
                }
            }
        }
        history[(round % HISTORY as u64) as usize] = score;
        round += 1;
    }
    (best_plan, iterations, improvements)
}

/// The makespan validation computed (validation simulates under the costs it was given).
fn official_makespan(s: &Schedule, costs: &CostModel) -> f64 {
    match s.validated_under(costs) {
        Some(v) => v.simulation.makespan,
        None => crate::simulate(s, costs, false).map(|sim| sim.makespan).unwrap_or(f64::INFINITY),
    }
}

/// The most (batch, head) pairs in flight in the official simulation (`u32::MAX` if it cannot run).
fn official_heads(s: &Schedule, costs: &CostModel) -> u32 {
    let heads = |sim: &crate::Simulation| sim.peak_heads_in_flight(s.order());
    match s.validated_under(costs) {
        Some(v) => heads(&v.simulation),
        None => crate::simulate(s, costs, false).map_or(u32::MAX, |sim| heads(&sim)),
    }
}

/// Dispatches between snapshots: about `SNAPSHOTS` of them, within `SNAPSHOT_BYTES`.
fn snapshot_stride(tables: &Tables, units: usize) -> usize {
    let dkv = if tables.gqa() { (tables.bh_count / tables.group) as usize * tables.n } else { 0 };
    let state = (tables.bh_count as usize * tables.m + dkv) * 12 + tables.sms * 80;
    let count = SNAPSHOTS.min(SNAPSHOT_BYTES / state.max(1)).max(1);
    units.div_ceil(count).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dag_model::ProblemSpec;

    fn setup(
        heads: u32,
        kv_heads: u32,
        seqlen: u32,
        mask: Mask,
        sms: u32,
        launch: LaunchPolicy,
    ) -> (Problem, Mask, Arc<TileMask>, Machine) {
        let problem = Problem::new(ProblemSpec {
            batch: 2,
            heads,
            kv_heads,
            seqlen_q: seqlen,
            seqlen_k: seqlen,
            head_dim: 128,
            block_m: 64,
            block_n: 128,
        })
        .unwrap();
        let tm = Arc::new(TileMask::new(&problem, &mask).unwrap());
        (problem, mask, tm, Machine { sms, launch })
    }

    fn cases() -> Vec<(Problem, Mask, Arc<TileMask>, Machine, CostModel)> {
        let h = CostModel { handoff: 0.1, unit_start: 0.3, unit_finish: 0.2, ..CostModel::default() };
        let window = Mask::SlidingWindow { left: Some(300), right: Some(100) };
        let docs = Mask::Document { lens: vec![300, 700, 24], causal: true };
        let mut out = Vec::new();
        for (heads, kv, seqlen, mask, sms, launch, costs) in [
            (4, 4, 1024, Mask::Causal, 7, LaunchPolicy::InOrder, CostModel::default()),
            (4, 1, 1000, Mask::Full, 5, LaunchPolicy::InOrder, h),
            (4, 2, 1024, window, 9, LaunchPolicy::Persistent, h),
            (2, 2, 1024, docs, 6, LaunchPolicy::InOrder, CostModel { scale_by_fraction: true, ..h }),
        ] {
            let (p, m, tm, machine) = setup(heads, kv, seqlen, mask, sms, launch);
            out.push((p, m, tm, machine, costs));
        }
        out
    }

    fn tables(p: &Problem, tm: &TileMask, machine: Machine, costs: &CostModel) -> Tables {
        Tables::new(p, tm, costs, machine.sms, machine.launch == LaunchPolicy::Persistent)
    }

    /// Fixing the ranks a run assigns and replaying them in the official simulator gives the same makespan.
    #[test]
    fn arrival_ranks_replay_exactly_in_the_official_simulator() {
        for (p, mask, tm, machine, costs) in cases() {
            let t = tables(&p, &tm, machine, &costs);
            for (name, plan) in seeds::list_seeds(&t).into_iter().chain(seeds::packed_seeds(&t)) {
                let (order, makespan) = sim::assign_ranks(&plan, &t);
                let s = Schedule::validate(name.clone(), p, mask.clone(), tm.clone(), machine, &costs, order)
                    .unwrap_or_else(|e| panic!("{name} on {mask:?}: {e}"));
                assert_eq!(official_makespan(&s, &costs), makespan, "{name} on {mask:?}");
                // The heads in flight too, with the ties of equal costs (a unit ending as another starts is
                // not counted with it; zero costs can make the search count more, see `sim::Score`).
                let heads = sim::score_from(&plan, &t, None, 0, f64::INFINITY).unwrap().heads;
                assert_eq!(official_heads(&s, &costs), heads, "{name} on {mask:?}");
            }
        }
    }

    /// A candidate resumed from its parent's snapshot scores exactly as a run from the start.
    #[test]
    fn resuming_from_a_snapshot_equals_a_full_run() {
        for (p, _, tm, machine, costs) in cases() {
            let t = tables(&p, &tm, machine, &costs);
            let base = seeds::list_seeds(&t).swap_remove(0).1;
            let (score, trace) = sim::trace(&base, &t, 2);
            let guide = moves::Guide::new(&base, &trace);
            for c in 0..200 {
                let (plan, first) = moves::propose(&base, &guide, &t, &mut Rng::new(3, 0, c));
                let resumed = sim::score_from(&plan, &t, Some(&trace), first, f64::INFINITY);
                let full = sim::score_from(&plan, &t, None, 0, f64::INFINITY);
                assert_eq!(resumed, full, "candidate {c}, first change at {first}");
                // A cut-off run gives up exactly when the full run is worse.
                let cut = sim::score_from(&plan, &t, Some(&trace), first, score.makespan);
                assert_eq!(cut.is_none(), full.unwrap().makespan > score.makespan);
                // Re-tracing keeps snapshots that resume to the same scores.
                let (s2, t2) = sim::retrace(&plan, &t, &trace, first);
                assert_eq!(Some(s2), full);
                assert_eq!(sim::score_from(&plan, &t, Some(&t2), plan.units.len(), f64::INFINITY), full);
            }
            // Under a limit on heads in flight below the parent's, a resumed candidate gives up exactly when
            // the full run does (the snapshot carries the heads held resident).
            let mut limited = tables(&p, &tm, machine, &costs);
            limited.heads_limit = score.heads.saturating_sub(1).max(1);
            let mut over = 0;
            for c in 0..200 {
                let (plan, first) = moves::propose(&base, &guide, &t, &mut Rng::new(5, 1, c));
                let resumed = sim::score_from(&plan, &limited, Some(&trace), first, f64::INFINITY);
                let full = sim::score_from(&plan, &limited, None, 0, f64::INFINITY);
                assert_eq!(resumed, full, "candidate {c} under a limit of {}", limited.heads_limit);
                let heads = sim::score_from(&plan, &t, None, 0, f64::INFINITY).unwrap().heads;
                assert_eq!(full.is_none(), heads > limited.heads_limit, "candidate {c}");
                over += u32::from(full.is_none());
            }
            assert!(over > 0, "no candidate went over the limit: the check above tested nothing");
        }
    }

    /// Every move yields a plan that still covers every active tile once (the order checks).
    #[test]
    fn moves_keep_plans_complete() {
        for (p, _, tm, machine, costs) in cases() {
            let t = tables(&p, &tm, machine, &costs);
            let mut plan = seeds::list_seeds(&t).swap_remove(2).1;
            for c in 0..300 {
                let (_, trace) = sim::trace(&plan, &t, 4);
                let guide = moves::Guide::new(&plan, &trace);
                let (next, first) = moves::propose(&plan, &guide, &t, &mut Rng::new(9, c, 0));
                assert!(first <= next.units.len());
                assert!(plan.units[..first].iter().zip(&next.units).all(|(a, b)| a == b), "changed before {first}");
                let (order, _) = sim::assign_ranks(&next, &t);
                order.check(&p, &tm).unwrap_or_else(|e| panic!("move {c}: {e}"));
                plan = next;
            }
        }
    }

    #[test]
    fn plans_survive_the_trip_through_an_order() {
        for (p, mask, tm, machine, costs) in cases() {
            let t = tables(&p, &tm, machine, &costs);
            for kind in ScheduleKind::ALL {
                let Ok(s) = kind.build(p, mask.clone(), tm.clone(), machine, &costs) else { continue };
                let plan = Plan::from_order(s.order(), &tm);
                let back = plan.to_order_unranked(&t);
                for (a, b) in s.units().iter().zip(&back.units) {
                    let strip = |u: &dag_model::Unit| u.visits.iter().map(|v| (v.kv, v.q)).collect::<Vec<_>>();
                    assert_eq!(strip(a), strip(b), "{kind:?}");
                }
            }
        }
    }

    #[test]
    fn a_zero_budget_is_refused() {
        let (p, mask, tm, machine, costs) = cases().swap_remove(0);
        let config = SearchConfig { iterations: Some(0), ..SearchConfig::default() };
        let err = search(p, mask, tm, machine, &costs, &config, &|_| false).unwrap_err();
        assert_eq!(err, SearchError::ZeroBudget { iterations: 0 });
    }
}
