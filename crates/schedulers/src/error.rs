use dag_model::{ModelError, OrderDefect};
use thiserror::Error;

/// Why a schedule cannot be built, validated or simulated.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ScheduleError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("invalid schedule: {0}")]
    Defect(#[from] OrderDefect),
    #[error("{schedule} needs {needs} (got {got}); {hint}")]
    NotApplicable { schedule: &'static str, needs: &'static str, got: String, hint: &'static str },
    #[error("the machine must have at least one SM")]
    NoSms,
    #[error("cost {name} must be a finite number from 0 to {:e} (got {})", crate::cost::MAX_COST, shown(*value))]
    BadCost { name: &'static str, value: f64 },
    #[error("memory roof: {name} must be {range} (got {})", shown(*value))]
    BadMemoryRoof { name: &'static str, range: &'static str, value: f64 },
    #[error("dq-writers must be at most {max} (got {got})")]
    TooManyDqWriters { got: u32, max: u32 },
    #[error("dq-deferred defers the staging of the dQ writers' partials: it needs dq-writers of at least 1 (got 0)")]
    DeferredWithoutWriters,
    #[error(
        "kv-load-overlap overlaps the next K/V load with the dK/dV epilogue of the dQ writers' loop: it needs \
         dq-writers of at least 1 (got 0)"
    )]
    KvLoadOverlapWithoutWriters,
    #[error(
        "deadlock on {sms} SMs ({launch} launch): unit {unit} (bh {bh}) waits for rank {rank} of {tile_kind} tile {tile}, \
         whose rank {next} belongs to unit {holder}, which {holder_state}"
    )]
    Deadlock {
        sms: u32,
        launch: &'static str,
        unit: usize,
        bh: u32,
        tile_kind: &'static str,
        tile: u32,
        rank: u32,
        next: u32,
        holder: usize,
        holder_state: &'static str,
    },
}

/// A number as a message shows it: huge ones in exponent form, not as hundreds of digits.
fn shown(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e9 { format!("{v:e}") } else { v.to_string() }
}
