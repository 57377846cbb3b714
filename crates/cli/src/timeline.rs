//! The timeline file: predicted (from `simulate --timeline`) or measured (from a GPU trace) segments of every
//! SM, in one documented format (docs/timeline-format.md) that `gantt --timeline` draws.

use dag_model::{Mask, ProblemSpec};
use schedulers::{Machine, Segment, SegmentKind};
use serde::{Deserialize, Serialize};

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
            time_unit: "tile-compute".to_string(),
            problem: setup.problem.spec(),
            mask: setup.mask.clone(),
            machine: setup.machine,
            schedules,
        }
    }
}
