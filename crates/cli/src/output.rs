//! Shared pieces of the text and JSON outputs.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::Result;
use dag_model::{Mask, ProblemSpec};
use schedulers::{CostModel, EvaluationSummary, Machine};
use serde::Serialize;

use crate::exit::bad_input;
use crate::setup::{Outcome, Setup};

/// Version of every JSON document dashc writes; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// The problem part of every JSON output.
#[derive(Serialize)]
pub struct ProblemJson<'a> {
    #[serde(flatten)]
    pub spec: ProblemSpec,
    pub m_tiles: u32,
    pub n_tiles: u32,
    pub mask: &'a Mask,
    pub active_tiles_per_head: u64,
    pub machine: Machine,
    pub costs: CostModel,
    pub ideal: bool,
}

impl<'a> ProblemJson<'a> {
    pub fn of(s: &'a Setup) -> Self {
        ProblemJson {
            spec: s.problem.spec(),
            m_tiles: s.problem.m_tiles(),
            n_tiles: s.problem.n_tiles(),
            mask: &s.mask,
            active_tiles_per_head: s.tile_mask.active_tiles(),
            machine: s.machine,
            costs: s.costs,
            ideal: s.ideal,
        }
    }
}

/// What a command keeps of one evaluation: the schedule's name, its summary numbers and command-specific
/// extras (the schedule itself is dropped, as it can take hundreds of megabytes).
pub struct Kept<T> {
    pub name: String,
    pub summary: EvaluationSummary,
    pub extra: T,
}

impl<T> Kept<T> {
    pub fn of(e: &schedulers::Evaluation, extra: T) -> Kept<T> {
        Kept { name: e.schedule.name().to_string(), summary: e.summary(), extra }
    }
}

/// One entry of a `results` array: an evaluated or a skipped schedule.
#[derive(Serialize)]
pub struct ResultJson<'a, T: Serialize> {
    pub schedule: &'a str,
    pub mask: &'static str,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub summary: Option<&'a EvaluationSummary>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub extra: Option<&'a T>,
}

/// The `--json` document of `bounds` and `simulate`: the problem and one result per schedule.
#[derive(Serialize)]
struct ResultsDoc<'a, T: Serialize> {
    schema_version: u32,
    command: &'static str,
    problem: ProblemJson<'a>,
    results: Vec<ResultJson<'a, T>>,
}

/// Prints the `--json` document of a command whose results are per-schedule evaluations.
pub fn print_results_json<T: Serialize>(
    command: &'static str,
    setup: &Setup,
    outcomes: &[Outcome<Kept<T>>],
) -> Result<()> {
    let doc = ResultsDoc {
        schema_version: SCHEMA_VERSION,
        command,
        problem: ProblemJson::of(setup),
        results: outcomes.iter().map(|o| result_json(setup, o)).collect(),
    };
    outln!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

pub fn result_json<'a, T: Serialize>(setup: &Setup, outcome: &'a Outcome<Kept<T>>) -> ResultJson<'a, T> {
    match outcome {
        Outcome::Done(k) => ResultJson {
            schedule: &k.name,
            mask: setup.mask.name(),
            status: "ok",
            reason: None,
            summary: Some(&k.summary),
            extra: Some(&k.extra),
        },
        Outcome::Skipped { schedule, reason } => ResultJson {
            schedule,
            mask: setup.mask.name(),
            status: "skipped",
            reason: Some(reason),
            summary: None,
            extra: None,
        },
    }
}

/// Writes to standard output. A failed write (stdout redirected to a full disk) becomes an error that exits 2,
/// as a failed write to a named file does, where `print!` would panic. A closed pipe never gets here: the
/// restored SIGPIPE ends the process at that write (`main`).
pub fn write_stdout(args: std::fmt::Arguments<'_>) -> Result<()> {
    use std::io::Write as _;
    std::io::stdout().lock().write_fmt(args).map_err(stdout_error)
}

/// Flushes standard output, reporting a failure as `write_stdout` does: what is still buffered at exit would
/// otherwise be lost without a word.
pub fn flush_stdout() -> Result<()> {
    use std::io::Write as _;
    std::io::stdout().flush().map_err(stdout_error)
}

fn stdout_error(e: std::io::Error) -> anyhow::Error {
    bad_input(format!("cannot write to standard output: {e}"))
}

/// Two header lines describing the problem, machine and costs.
pub fn header(s: &Setup) -> String {
    let p = &s.problem;
    let mut out = String::new();
    let mask = match &s.mask {
        Mask::SlidingWindow { left, right } => {
            let side = |x: &Option<u32>| x.map_or("inf".to_string(), |v| v.to_string());
            format!("sliding-window (left {}, right {})", side(left), side(right))
        }
        Mask::Document { lens, causal } => {
            let docs = if lens.len() == 1 { "1 doc".to_string() } else { format!("{} docs", lens.len()) };
            format!("document ({docs}, {})", if *causal { "causal" } else { "bidirectional" })
        }
        Mask::Blocks { pairs } => format!("blocks ({} listed)", pairs.len()),
        m => m.name().to_string(),
    };
    if s.ideal {
        let _ = writeln!(
            out,
            "idealized: N = {} tiles per head, m = {} heads, P = {} SMs, mask {mask}",
            p.n_tiles(),
            p.heads(),
            s.machine.sms
        );
    } else {
        let kv = if p.kv_heads() != p.heads() { format!(" (kv heads {})", p.kv_heads()) } else { String::new() };
        let seq = if p.seqlen_q() != p.seqlen_k() {
            format!("seqlen q {} / k {}", p.seqlen_q(), p.seqlen_k())
        } else {
            format!("seqlen {}", p.seqlen_q())
        };
        let _ = writeln!(
            out,
            "batch {} x heads {}{kv}, {seq}, head dim {}, tiles {}x{} ({} q x {} kv per head), mask {mask}",
            p.batch(),
            p.heads(),
            p.head_dim(),
            p.block_m(),
            p.block_n(),
            p.m_tiles(),
            p.n_tiles()
        );
    }
    // Rounded as every other number printed (a calibrated cost has sixteen digits, most of them noise).
    let c = &s.costs;
    let mut costs = format!("compute {}", num(c.compute));
    if let Some(cp) = c.compute_partial {
        let _ = write!(costs, ", partial tiles {}", num(cp));
    }
    if c.scale_by_fraction {
        costs.push_str(" x unmasked fraction");
    }
    let _ = write!(costs, ", reduce {}, handoff {}", num(c.reduce), num(c.handoff));
    if c.unit_start > 0.0 || c.unit_finish > 0.0 {
        let _ = write!(costs, ", unit start {} / finish {}", num(c.unit_start), num(c.unit_finish));
    }
    if p.group() > 1 {
        let _ = write!(costs, ", dk/dv reduce {}", num(c.dkv_reduce));
    }
    costs.push_str(&model_switches(c));
    costs.push_str(&roof_note(c));
    let _ = writeln!(
        out,
        "machine: {} SMs, {} launch; costs: {costs} ({})",
        s.machine.sms,
        s.machine.launch.name(),
        match &s.calibrated {
            Some(c) => format!("µs, calibrated on {} from {}", c.gpu, c.path.display()),
            None => "time unit: one full tile's compute".to_string(),
        }
    );
    out
}

/// The cost model's poll cost and switches, as a suffix of a costs line ("" when none is on): each changes the
/// makespans, so a saved table or chart must show which were on.
pub fn model_switches(c: &CostModel) -> String {
    let mut out = String::new();
    if c.poll > 0.0 {
        let _ = write!(out, ", poll {}", num(c.poll));
    }
    let switches: Vec<String> = [
        c.kernel_epilogues.then(|| "kernel epilogues".to_string()),
        (c.dq_writers > 0).then(|| format!("{} dQ writers", c.dq_writers)),
        c.dq_deferred.then(|| "deferred dQ".to_string()),
        c.kv_load_overlap.then(|| "K/V load overlap".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !switches.is_empty() {
        let _ = write!(out, ", with {}", switches.join(", "));
    }
    out
}

/// Where the costs have a memory roof: a suffix that says so and that it joins only the predictions compared
/// with a GPU (`run`, `bench`, `validate`), not the simulations, timelines and bounds a table or chart shows.
pub fn roof_note(c: &CostModel) -> String {
    match c.memory_roof {
        // Calibrated costs count in µs, so the bandwidth is in bytes/µs: 1e6 of them make a TB/s.
        Some(roof) => format!(
            "; memory roof {:.2} TB/s, in the predictions compared with a GPU only (docs/calibration.md)",
            roof.bandwidth / 1e6
        ),
        None => String::new(),
    }
}

/// Renders rows as a left-aligned first column and right-aligned numeric columns.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i == 0 {
                let _ = write!(out, "{cell:<w$}");
            } else {
                let _ = write!(out, "  {cell:>w$}");
            }
        }
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push('\n');
    };
    line(headers.to_vec(), &mut out);
    for row in rows {
        line(row.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// A number for a table: up to 4 significant decimals, no trailing zeros.
pub fn num(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let s = if x.abs() >= 1000.0 { format!("{x:.1}") } else { format!("{x:.4}") };
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Refuses (bad input) an output file that could not be written, before the work that produces it: its folder
/// must exist and take a new file (tried, then removed), or the file must exist and open for writing (untouched).
pub fn check_writable(path: &Path) -> Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(bad_input(format!("cannot write {}: folder {} does not exist", path.display(), parent.display())));
    }
    let cannot = |e: std::io::Error| bad_input(format!("cannot write {}: {e}", path.display()));
    if path.exists() {
        fs::OpenOptions::new().append(true).open(path).map_err(cannot)?;
    } else {
        fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(cannot)?;
        fs::remove_file(path).map_err(cannot)?;
    }
    Ok(())
}

/// `check_writable` for each output path given, before any work: a command that fails at its last file after
/// minutes of work, having written the others, leaves a half-done result. `-` (stdout) is not a path.
pub fn check_outputs<'a>(paths: impl IntoIterator<Item = Option<&'a Path>>) -> Result<()> {
    for path in paths.into_iter().flatten() {
        if path.as_os_str() != "-" {
            check_writable(path)?;
        }
    }
    Ok(())
}

/// Writes `text` to `path`, turning an unwritable path into a bad-input error.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text).map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))
}
