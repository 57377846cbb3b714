//! `codegen`, `run` and `bench` without a GPU: codegen writes a complete program; run and bench say clearly
//! that the toolchain or the GPU is missing (exit code 3) before doing any work.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{dashc, fails_with, stderr};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dashc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn codegen_writes_sources_schedule_data_and_the_nvcc_command() {
    let dir = scratch("codegen");
    let out = dashc(&[
        "codegen",
        "--seqlen",
        "1000",
        "--batch",
        "2",
        "--heads",
        "3",
        "--mask",
        "causal",
        "--schedule",
        "descending",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for file in
        ["harness.cu", "bwd_mainloop_sm80.cuh", "schedule.cuh", "bwd_params.h", "schedule.txt", "nvcc-command.txt"]
    {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let data = std::fs::read_to_string(dir.join("schedule.txt")).unwrap();
    assert!(data.starts_with("dashc-schedule 1\nname descending\nproblem 2 3 3 1000 1000 128 64 128 causal\n"));
    let nvcc = std::fs::read_to_string(dir.join("nvcc-command.txt")).unwrap();
    assert!(nvcc.contains("-gencode=arch=compute_80,code=sm_80") && nvcc.contains("code=sm_90a"), "{nvcc}");
    let params = std::fs::read_to_string(dir.join("bwd_params.h")).unwrap();
    assert!(params.contains("kDeterministic = true"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn codegen_refuses_what_the_kernel_does_not_implement() {
    let dir = scratch("codegen-bad");
    let d = dir.to_str().unwrap();
    fails_with(&["codegen", "--schedule", "all", "-o", d], 2, "codegen renders one schedule");
    fails_with(&["codegen", "--head-dim", "96", "--schedule", "naive", "-o", d], 2, "head dim 96 is not supported");
    fails_with(
        &["codegen", "--mask", "sliding-window", "--window-left", "64", "--schedule", "naive", "-o", d],
        2,
        "mask sliding-window is not supported by the generated kernel",
    );
    fails_with(&["codegen", "--mask", "causal", "--schedule", "shift", "-o", d], 2, "shift needs a full mask");
}

/// Runs dashc with a PATH holding only `bin` (and no CUDA_HOME).
fn dashc_with_path(bin: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dashc")).args(args).env_clear().env("PATH", bin).output().expect("dashc runs")
}

#[test]
fn run_and_bench_without_nvcc_or_gpu_exit_3() {
    let empty = scratch("no-toolchain");
    std::fs::create_dir_all(&empty).unwrap();
    for args in [&["run", "--seqlen", "1024"][..], &["bench"][..]] {
        let out = dashc_with_path(&empty, args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("nvcc not found on PATH or under $CUDA_HOME/bin"), "{}", stderr(&out));
    }
    // A compiler but no driver: the GPU probe fails before anything is built.
    let fake = scratch("fake-nvcc");
    std::fs::create_dir_all(&fake).unwrap();
    let nvcc = fake.join("nvcc");
    std::fs::write(&nvcc, "#!/bin/sh\nexit 0\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = dashc_with_path(&fake, &["run", "--seqlen", "1024"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("no NVIDIA GPU available"), "{}", stderr(&out));
    assert_eq!(stderr(&out).trim_end().lines().count(), 1);
    std::fs::remove_dir_all(&empty).unwrap();
    std::fs::remove_dir_all(&fake).unwrap();
}

#[test]
fn bench_lists_must_not_be_empty() {
    fails_with(&["bench", "--seqlens", ""], 2, "--seqlens is empty");
    fails_with(&["bench", "--seqlens", "100"], 2, "--seqlens: 100 does not divide --tokens 16384");
}
