//! The timeline file: predicted (from `simulate --timeline`) or measured (from a GPU trace) segments of every
//! SM, in one documented format (docs/timeline-format.md) that `gantt --timeline` draws.

use dag_model::{Mask, ProblemSpec};
use schedulers::{CostModel, Difference, Machine, Segment, SegmentKind, first_difference};
use serde::{Deserialize, Serialize};

use crate::args::MAX_SMS;
use crate::output::SCHEMA_VERSION;
use crate::setup::Setup;

pub const FORMAT: &str = "dashc-timeline";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineFile {
    pub format: String,
    pub schema_version: u32,
    /// "predicted" (simulated) or "measured" (a GPU trace).
    pub source: String,
    /// "tile-compute" for uncalibrated predictions, "us" for calibrated ones and measurements.
    pub time_unit: String,
    pub problem: ProblemSpec,
    pub mask: Mask,
    pub machine: Machine,
    /// The cost model of a prediction; absent in measured traces and in files written before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub costs: Option<CostModel>,
    pub schedules: Vec<TimelineSchedule>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineSchedule {
    pub schedule: String,
    pub makespan: f64,
    /// The best lower bound, when known (predictions).
    pub best_bound: Option<f64>,
    pub segments: Vec<SegmentJson>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentJson {
    pub sm: u32,
    pub unit: u32,
    pub bh: u32,
    pub kv: u32,
    /// The dQ tile; absent for dK/dV reductions.
    pub q: Option<u32>,
    pub kind: SegmentKind,
    pub start: f64,
    pub end: f64,
}

impl From<&Segment> for SegmentJson {
    fn from(s: &Segment) -> Self {
        SegmentJson {
            sm: s.sm,
            unit: s.unit,
            bh: s.bh,
            kv: s.kv,
            q: (s.q != u32::MAX).then_some(s.q),
            kind: s.kind,
            start: s.start,
            end: s.end,
        }
    }
}

impl TimelineFile {
    pub fn predicted(setup: &Setup, schedules: Vec<TimelineSchedule>) -> TimelineFile {
        TimelineFile {
            format: FORMAT.to_string(),
            schema_version: SCHEMA_VERSION,
            source: "predicted".to_string(),
            time_unit: setup.time_unit().to_string(),
            problem: setup.problem.spec(),
            mask: setup.mask.clone(),
            machine: setup.machine,
            costs: Some(setup.costs),
            schedules,
        }
    }
}

/// Time units a timeline may use: uncalibrated predictions count in tiles' compute, calibrated predictions and
/// GPU traces in microseconds (or the raw nanoseconds / cycles a trace was taken in).
pub const TIME_UNITS: [&str; 4] = ["tile-compute", "us", "ns", "cycles"];

/// The axis label of a time unit.
pub fn time_unit_label(unit: &str) -> &str {
    match unit {
        "tile-compute" => "tile-compute units",
        "us" => "µs",
        other => other,
    }
}

impl TimelineFile {
    /// Reads and checks a timeline file; every defect is a one-line bad-input error naming the file.
    pub fn load(path: &std::path::Path) -> anyhow::Result<TimelineFile> {
        let invalid = |why: String| crate::exit::bad_input(format!("invalid timeline file {}: {why}", path.display()));
        let text = read_maybe_gzipped(path)
            .map_err(|e| crate::exit::bad_input(format!("cannot read timeline file {}: {e}", path.display())))?;
        let file: TimelineFile = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        file.check().map_err(invalid)?;
        Ok(file)
    }

    /// What a reader may rely on beyond the JSON shape: known format, version, source and unit; a valid
    /// problem; and segments that lie on the machine's SMs with finite, ordered times.
    fn check(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!("format is '{}', expected '{FORMAT}'", self.format));
        }
        if self.schema_version != SCHEMA_VERSION {
            return Err(format!(
                "schema_version {} is not supported (this dashc reads {SCHEMA_VERSION})",
                self.schema_version
            ));
        }
        if !matches!(self.source.as_str(), "predicted" | "measured") {
            return Err(format!("source is '{}', expected 'predicted' or 'measured'", self.source));
        }
        if !TIME_UNITS.contains(&self.time_unit.as_str()) {
            return Err(format!("time_unit is '{}', expected one of {}", self.time_unit, TIME_UNITS.join(", ")));
        }
        let problem = dag_model::Problem::new(self.problem).map_err(|e| format!("problem: {e}"))?;
        if !(1..=MAX_SMS).contains(&self.machine.sms) {
            // A chart draws one lane per SM: a count no GPU has would only exhaust memory.
            return Err(format!("machine.sms must be between 1 and {MAX_SMS} (got {})", self.machine.sms));
        }
        if self.schedules.is_empty() {
            return Err("it holds no schedule".into());
        }
        for (i, s) in self.schedules.iter().enumerate() {
            if s.schedule.is_empty() {
                return Err(format!("schedule {i} has an empty name"));
            }
            if self.schedules[..i].iter().any(|o| o.schedule == s.schedule) {
                return Err(format!("schedule '{}' appears twice", s.schedule));
            }
            let time_ok = |x: f64| x.is_finite() && x >= 0.0;
            if !time_ok(s.makespan) || s.best_bound.is_some_and(|b| !time_ok(b)) {
                return Err(format!("schedule '{}': makespan and best_bound must be finite and >= 0", s.schedule));
            }
            for (k, seg) in s.segments.iter().enumerate() {
                let at = || format!("schedule '{}', segment {k}", s.schedule);
                if seg.sm >= self.machine.sms {
                    return Err(format!("{}: sm {} is outside the machine's {} SMs", at(), seg.sm, self.machine.sms));
                }
                if seg.bh >= problem.bh_count() {
                    return Err(format!(
                        "{}: bh {} is outside the problem's {} heads",
                        at(),
                        seg.bh,
                        problem.bh_count()
                    ));
                }
                if !time_ok(seg.start) || !seg.end.is_finite() || seg.end < seg.start {
                    return Err(format!(
                        "{}: start {} and end {} must be finite with 0 <= start <= end",
                        at(),
                        seg.start,
                        seg.end
                    ));
                }
                // The makespan is the last segment's end (dashc writes it so, predicted or measured): a segment
                // past it is a damaged file, and would stretch the chart's time axis over nothing.
                if seg.end > s.makespan * (1.0 + 1e-9) + 1e-9 {
                    return Err(format!("{}: end {} is past the schedule's makespan {}", at(), seg.end, s.makespan));
                }
            }
        }
        Ok(())
    }
}

/// Refuses timelines that cannot share one chart: each file, named by `name`, must be of the first file's
/// problem, mask and machine (as far as the format records them) and in its time unit. The one-line message
/// names both files and the first field that differs.
pub fn check_comparable(files: &[(&str, &TimelineFile)]) -> anyhow::Result<()> {
    let Some(&(first_name, first)) = files.first() else { return Ok(()) };
    for &(name, file) in &files[1..] {
        let (a, b) = (first.time_unit.as_str(), file.time_unit.as_str());
        if a != b {
            let hint = if a == "tile-compute" || b == "tile-compute" {
                "; predict with `dashc simulate ... --costs FILE --timeline FILE` so that both are in µs"
            } else {
                ""
            };
            return Err(crate::exit::bad_input(format!(
                "timelines {first_name} and {name} cannot share a time axis: time_unit is {a} in {first_name} but \
                 {b} in {name}{hint}"
            )));
        }
        if let Some(Difference { field, left, right }) =
            first_difference((&first.problem, &first.mask, first.machine), (&file.problem, &file.mask, file.machine))
        {
            return Err(crate::exit::bad_input(format!(
                "timelines {first_name} and {name} are not of one problem: {field} is {left} in {first_name} but \
                 {right} in {name}"
            )));
        }
    }
    Ok(())
}

/// The text of `path`, gunzipped if its name ends in `.gz`; where `path` does not exist but `path.gz` does, that
/// one's: the validation folders under bench/results keep their traces compressed, and their raw files name the
/// uncompressed JSON.
fn read_maybe_gzipped(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut gz = path.as_os_str().to_owned();
    gz.push(".gz");
    let gz = std::path::PathBuf::from(gz);
    let compressed = if path.extension().is_some_and(|e| e == "gz") {
        Some(path)
    } else if !path.exists() && gz.exists() {
        Some(gz.as_path())
    } else {
        None
    };
    match compressed {
        Some(file) => {
            let mut text = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(file)?).read_to_string(&mut text)?;
            Ok(text)
        }
        None => std::fs::read_to_string(path),
    }
}
