//! The attention-backward problem as a scheduling object: the problem shape, its block mask and the task DAG
//! of a given visit/accumulation order.
//!
//! This crate does no I/O and knows nothing of CUDA, of the command line or of particular schedules. It answers
//! one question precisely: given a problem, a mask and an order (which unit visits which tiles in which order,
//! and which rank each contribution takes on its dQ tile), what is the DAG and how long is its critical path?
//! See `docs/model.md` for the model.

mod dag;
mod error;
mod mask;
mod order;
mod problem;

pub use dag::{CriticalPath, TaskGraph, Weights, critical_path};
pub use error::ModelError;
pub use mask::{Mask, TileMask};
pub use order::{Order, OrderDefect, Unit, Visit, quantize};
pub use problem::{Problem, ProblemSpec, default_blocks};
