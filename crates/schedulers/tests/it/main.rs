//! Integration tests of the schedulers crate: the paper's closed forms, the theory's properties, and the
//! cross-checks between the explicit graph, the implicit evaluation and the simulator.

mod closed_forms;
mod common;
mod errors;
mod properties;
mod search;
mod split;
