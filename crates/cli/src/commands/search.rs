//! `dashc search`: search for a schedule of low simulated makespan, show it beside the built-ins with its
//! certificate (lower bounds and the gap to them), and optionally save it (docs/schedule-file.md).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::ProgressBar;
use schedulers::{EvaluationSummary, HeadsLimit, ProblemBounds, Progress, ScheduleKind, evaluate};
use serde::Serialize;

use crate::args::SearchArgs;
use crate::exit::bad_input;
use crate::output::{ProblemJson, SCHEMA_VERSION, header, num, table, write_file};
use crate::progress;
use crate::searching::{self, Budget, DEFAULT_SEARCH_SECS, SEARCH, schedule_file_text};
use crate::setup::Setup;

#[derive(Serialize)]
struct BudgetJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    secs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<u64>,
}

#[derive(Serialize)]
struct SearchInfo {
    seed: u64,
    budget: BudgetJson,
    /// Candidate moves evaluated (repeat with `--iterations` this and the same seed for the same result).
    iterations: u64,
    improvements: u64,
    candidates_per_round: u64,
    builtin_seeds: bool,
    /// The starting point the result descends from.
    origin: String,
    /// The most (batch, head) pairs in flight the search kept to (`--max-heads-in-flight`); null for `any`.
    max_heads_in_flight: Option<u32>,
}

#[derive(Serialize)]
struct ResultJson {
    schedule: &'static str,
    /// Makespan and this schedule's own bounds (work / P, longest unit, critical path).
    #[serde(flatten)]
    summary: EvaluationSummary,
    /// Bounds that hold for every schedule of the problem.
    problem_bounds: ProblemBounds,
    /// The largest of all bounds, and how far the makespan is above it.
    certified_bound: f64,
    certified_gap_percent: f64,
}

#[derive(Serialize)]
struct BuiltinJson {
    schedule: &'static str,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    makespan: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    heads_in_flight: Option<u32>,
}

#[derive(Serialize)]
struct BestBuiltinJson {
    schedule: &'static str,
    makespan: f64,
    /// How much lower the searched makespan is, in percent of the built-in's.
    improvement_percent: f64,
}

#[derive(Serialize)]
struct SeedJson {
    name: String,
    makespan: f64,
    heads_in_flight: u32,
    /// Whether it kept to the limit on heads in flight (a start over it is not searched from).
    within_limit: bool,
}

#[derive(Serialize)]
struct SearchJson<'a> {
    schema_version: u32,
    command: &'static str,
    problem: ProblemJson<'a>,
    search: SearchInfo,
    result: ResultJson,
    builtins: Vec<BuiltinJson>,
    best_builtin: Option<BestBuiltinJson>,
    seeds: Vec<SeedJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    saved_to: Option<String>,
}

pub fn run(args: SearchArgs) -> Result<()> {
    if args.shape.split_tail {
        // The search and its comparison are of whole schedules: the split is applied to built-ins after they are
        // built, and the search neither splits its own result nor compares with split built-ins.
        return Err(bad_input(
            "dashc search does not evaluate split tails: to see the search beside the split built-ins, run \
             `dashc bounds --schedule all,search --split-tail` with the same shape",
        ));
    }
    searching::check_save_path(args.save_schedule.as_deref())?;
    let mut shape = args.shape.clone();
    if shape.search.budget_secs.is_none() && shape.search.iterations.is_none() {
        shape.search.budget_secs = Some(DEFAULT_SEARCH_SECS);
    }
    if args.seed.is_some() {
        shape.search.search_seed = args.seed;
    }
    // `--schedule` names the built-ins to compare with (and start from); the search itself is implied.
    if crate::setup::parse_schedules(&shape.schedule)?.2 {
        return Err(bad_input(
            "dashc search: --schedule names the built-ins to compare with and start from (or all); the search \
             itself always runs, so leave `search` out of the list",
        ));
    }
    shape.schedule = format!("{},{SEARCH}", shape.schedule);
    let setup = Setup::from_args(&shape)?;
    let mut req = setup.search.clone().expect("the search was asked for above");
    // Without the built-ins as starts, their width is no limit to hold the list seeds to (they all spread the
    // heads): unless a limit was given, there is none, and the output says so.
    let default_lifted = args.no_builtin_seeds && shape.search.max_heads_in_flight.is_none();
    if default_lifted {
        req.heads_in_flight = HeadsLimit::Any;
    }
    let builtins = if setup.schedule_file.is_some() { ScheduleKind::ALL.to_vec() } else { setup.schedules.clone() };

    // --progress prints every change of the printed makespan; without it, where stderr is a terminal, a line
    // shows the rounds. A line per change, not per improvement: most improvements late in a search are below the
    // makespan's rounding, and a line for each would repeat the same makespan many times.
    let shown = Mutex::new(String::new());
    let bar = if args.progress { ProgressBar::hidden() } else { progress::spinner() };
    bar.set_message(searching::STARTING);
    let on_round = |p: &Progress, t: Duration| {
        bar.set_message(searching::round(p, req.budget));
        if !args.progress {
            return;
        }
        let makespan = num(p.makespan);
        let mut last = shown.lock().unwrap_or_else(PoisonError::into_inner);
        if *last != makespan {
            eprintln!("{:>9.3} s  iteration {:>8}  makespan {makespan}", t.as_secs_f64(), p.iterations);
            *last = makespan;
        }
    };
    let started = Instant::now();
    let result = searching::run(&setup, &req, builtins, !args.no_builtin_seeds, &on_round);
    bar.finish_and_clear();
    let result = result?;
    let elapsed = started.elapsed();
    let eval = evaluate(result.schedule.clone(), &setup.costs, false)?;
    if let Some(path) = &args.save_schedule {
        write_file(path, &schedule_file_text(&eval, &setup.costs))?;
    }

    let bound_any = result.problem_bounds.best();
    let certified = bound_any.max(eval.bounds.best());
    let gap = |makespan: f64, bound: f64| if bound > 0.0 { (makespan / bound - 1.0) * 100.0 } else { 0.0 };
    let best_builtin = result.best_builtin().map(|(kind, makespan)| BestBuiltinJson {
        schedule: kind.name(),
        makespan,
        improvement_percent: if makespan > 0.0 { (1.0 - eval.makespan() / makespan) * 100.0 } else { 0.0 },
    });

    if args.json {
        let doc = SearchJson {
            schema_version: SCHEMA_VERSION,
            command: "search",
            problem: ProblemJson::of(&setup),
            search: SearchInfo {
                seed: req.seed,
                budget: match req.budget {
                    Budget::Secs(s) => BudgetJson { secs: Some(s), iterations: None },
                    Budget::Iterations(n) => BudgetJson { secs: None, iterations: Some(n) },
                },
                iterations: result.iterations,
                improvements: result.improvements,
                candidates_per_round: schedulers::CANDIDATES_PER_ROUND,
                builtin_seeds: !args.no_builtin_seeds,
                origin: result.origin.clone(),
                max_heads_in_flight: result.heads_limit,
            },
            result: ResultJson {
                schedule: SEARCH,
                summary: eval.summary(),
                problem_bounds: result.problem_bounds,
                certified_bound: certified,
                certified_gap_percent: gap(eval.makespan(), certified),
            },
            builtins: result
                .builtins
                .iter()
                .map(|b| match &b.makespan {
                    Ok(m) => BuiltinJson {
                        schedule: b.kind.name(),
                        status: "ok",
                        makespan: Some(*m),
                        reason: None,
                        heads_in_flight: Some(b.heads_in_flight),
                    },
                    Err(r) => BuiltinJson {
                        schedule: b.kind.name(),
                        status: "skipped",
                        makespan: None,
                        reason: Some(r.clone()),
                        heads_in_flight: None,
                    },
                })
                .collect(),
            best_builtin,
            seeds: result
                .seeds
                .iter()
                .map(|s| SeedJson {
                    name: s.name.clone(),
                    makespan: s.makespan,
                    heads_in_flight: s.heads_in_flight,
                    within_limit: s.within_limit,
                })
                .collect(),
            saved_to: args.save_schedule.as_ref().map(|p| p.display().to_string()),
        };
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }

    out!("{}", header(&setup));
    outln!();
    outln!(
        "search: {} iterations in {:.1} s (seed {}), {} improvements, from {}",
        result.iterations,
        elapsed.as_secs_f64(),
        req.seed,
        result.improvements,
        result.origin
    );
    let limit_flag = match result.heads_limit {
        Some(n) => format!("--max-heads-in-flight {n}"),
        None => "--max-heads-in-flight any".to_string(),
    };
    let seeds_flag = if args.no_builtin_seeds { " --no-builtin-seeds" } else { "" };
    if !result.searched {
        // What a search would need: the fewest heads any start has (a built-in as built is a result, not a start).
        let fewest = result.seeds.iter().min_by_key(|s| s.heads_in_flight);
        let needs = fewest.map_or(String::new(), |s| {
            format!(
                "; a search needs --max-heads-in-flight {} or more (its fewest start: {})",
                s.heads_in_flight, s.name
            )
        });
        outln!("  nothing was searched: no start kept to the limit on heads in flight ({limit_flag}){needs}");
    } else if result.iterations == 0 {
        let spent = match req.budget {
            // The stop is asked only after a round, and the first round comes after the starts are built, which
            // no budget cuts short: say where the time went when that alone outlasts the budget.
            Budget::Secs(limit) if elapsed.as_secs_f64() > limit => format!(
                " (building and scoring the starting schedules took {:.1} s of it, more than the {limit} s asked for)",
                elapsed.as_secs_f64()
            ),
            _ => String::new(),
        };
        outln!("  the budget ended before the first round{spent}: the result is the best start");
    } else {
        outln!(
            "  the same schedule again: --iterations {} --search-seed {} {limit_flag}{seeds_flag}",
            result.iterations,
            req.seed
        );
    }
    outln!();
    let summary = eval.summary();
    let mut rows = vec![vec![
        SEARCH.to_string(),
        num(eval.makespan()),
        format!("{:.2}%", gap(eval.makespan(), bound_any)),
        String::new(),
        summary.heads_in_flight.to_string(),
    ]];
    let mut builtins: Vec<(&'static str, f64, u32)> = result
        .builtins
        .iter()
        .filter_map(|b| b.makespan.as_ref().ok().map(|&m| (b.kind.name(), m, b.heads_in_flight)))
        .collect();
    builtins.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (name, m, heads) in &builtins {
        rows.push(vec![
            name.to_string(),
            num(*m),
            format!("{:.2}%", gap(*m, bound_any)),
            format!("{:+.2}%", (m / eval.makespan() - 1.0) * 100.0),
            heads.to_string(),
        ]);
    }
    out!("{}", table(&["schedule", "makespan", "above bound", "vs search", "heads in flight"], &rows));
    let why_none = if default_lifted {
        "--no-builtin-seeds and no --max-heads-in-flight"
    } else if req.heads_in_flight == HeadsLimit::Builtins {
        "no built-in schedule applies to take the width from"
    } else {
        "--max-heads-in-flight any"
    };
    match result.heads_limit {
        Some(limit) => outln!(
            "heads in flight: the search kept to at most {limit} (--max-heads-in-flight; the model has no L2, \
             docs/search.md)"
        ),
        None => outln!(
            "heads in flight: no limit ({why_none}); schedules spread over many heads ran far slower than \
             simulated on an H100 (docs/search.md)"
        ),
    }
    for b in &result.builtins {
        if let Err(reason) = &b.makespan {
            outln!("{}: skipped, {}", b.kind.name(), setup.in_ideal_terms(reason));
        }
    }
    outln!();
    let pb = &result.problem_bounds;
    outln!(
        "bound, any whole-column schedule: {} = max(work / P {}, longest column {}, column packing {}, reduction chain {})",
        num(bound_any),
        num(pb.work),
        num(pb.longest_column),
        num(pb.column_packing),
        num(pb.reduction_chain)
    );
    let b = &eval.bounds;
    outln!(
        "certificate: makespan {} >= best bound {} (this schedule: work / P {}, longest unit {}, critical path {}): gap {:.2}%",
        num(eval.makespan()),
        num(certified),
        num(b.work),
        num(b.longest_unit),
        num(b.critical_path),
        gap(eval.makespan(), certified)
    );
    if let Some(best) = &best_builtin {
        outln!(
            "best built-in: {} {}; search is {:.2}% lower",
            best.schedule,
            num(best.makespan),
            best.improvement_percent
        );
    }
    if let Some(path) = &args.save_schedule {
        // On stderr, as every other command's note of a file written: stdout is the result.
        eprintln!("schedule written to {}", path.display());
    }
    Ok(())
}
