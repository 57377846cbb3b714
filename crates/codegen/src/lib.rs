//! Turns a validated schedule and a kernel configuration into the sources of a self-checking CUDA program:
//! the attention backward (the portable `mma.sync` main loop, or the Hopper one: TMA, `wgmma`, warp
//! specialization), its pre/post-processing, a reference forward and
//! backward, a host harness, the schedule as a data file the kernel reads at run time, and the exact nvcc
//! command that builds it.
//!
//! This crate is a pure function of its inputs. It does no I/O: the templates are embedded in the binary
//! (or handed in as strings by the caller), and the generated files come back as values; writing them,
//! running nvcc and running the program is the CLI's job. Its outputs are deterministic: the same schedule
//! and configuration give byte-identical files.
//!
//! The schedule is data, not code: the generated sources depend only on the [`KernelConfig`] (head dim, tile
//! sizes, mask kind, determinism), so one build runs every schedule of that configuration; the schedule
//! file (format: `docs/schedule-data.md`) carries the units, their visit order and the dQ ranks.

mod config;
mod data;
mod error;
mod generate;
mod templates;

pub use config::{Arch, KernelConfig, KernelMask, MainLoop};
pub use data::{DataLaunch, DataUnit, DataVisit, ScheduleData};
pub use error::CodegenError;
pub use generate::{
    BINARY, BuildEnv, Generated, GeneratedFile, NvccCommand, Provenance, SCHEDULE_FILE, generate, nvcc_command,
    render_sources,
};
pub use templates::{TEMPLATE_NAMES, Templates};

/// Version of the generator, written into the header of every generated file.
pub const TOOL_VERSION: &str = concat!("dashc-codegen ", env!("CARGO_PKG_VERSION"));

#[cfg(test)]
mod tests;
