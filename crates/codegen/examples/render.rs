//! Renders the sources of one kernel configuration into a directory, for compile checks
//! (`kernels/compile-check.sh`) before a schedule is involved. The library does no I/O; this example does.
//!
//! Usage: render OUT_DIR HEAD_DIM BLOCK_M BLOCK_N full|causal det|nondet|trace [sm80|sm90]
//! (`trace`: the deterministic variant with per-task timestamps, as `dashc calibrate` builds it; the main loop
//! defaults to sm80, the portable one)

use std::process::ExitCode;

use codegen::{Arch, KernelConfig, KernelMask, MainLoop, Provenance, Templates, render_sources};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 6 && args.len() != 7 {
        eprintln!("usage: render OUT_DIR HEAD_DIM BLOCK_M BLOCK_N full|causal det|nondet|trace [sm80|sm90]");
        return ExitCode::from(2);
    }
    let number = |s: &str| s.parse::<u32>().ok();
    let (Some(head_dim), Some(block_m), Some(block_n)) = (number(&args[1]), number(&args[2]), number(&args[3])) else {
        eprintln!("head dim and tile sizes must be numbers");
        return ExitCode::from(2);
    };
    let mask = match args[4].as_str() {
        "full" => KernelMask::Full,
        "causal" => KernelMask::Causal,
        other => {
            eprintln!("unknown mask {other}");
            return ExitCode::from(2);
        }
    };
    let (deterministic, trace) = match args[5].as_str() {
        "det" => (true, false),
        "nondet" => (false, false),
        "trace" => (true, true),
        other => {
            eprintln!("unknown variant {other} (det, nondet or trace)");
            return ExitCode::from(2);
        }
    };
    let (main_loop, archs) = match args.get(6).map(String::as_str) {
        None | Some("sm80") => (MainLoop::Sm80, vec![Arch::Sm80, Arch::Sm90a]),
        Some("sm90") => (MainLoop::Sm90, vec![Arch::Sm90a]),
        Some(other) => {
            eprintln!("unknown main loop {other} (sm80 or sm90)");
            return ExitCode::from(2);
        }
    };
    let config = KernelConfig { head_dim, block_m, block_n, mask, deterministic, trace, main_loop, archs };
    let files = match render_sources(&config, &Templates::embedded(), &Provenance::default()) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("render failed: {e}");
            return ExitCode::from(2);
        }
    };
    let dir = std::path::Path::new(&args[0]);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        return ExitCode::from(2);
    }
    for f in files {
        if let Err(e) = std::fs::write(dir.join(&f.path), f.contents) {
            eprintln!("cannot write {}: {e}", f.path);
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
