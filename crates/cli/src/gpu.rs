//! Everything that touches the CUDA toolchain and the GPU: finding nvcc, probing the device, writing a
//! generated program, building it (once per kernel configuration, cached by content), running the harness and
//! reading its one JSON line.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use codegen::{Arch, BuildEnv, Generated, KernelConfig, MainLoop};
use serde::{Deserialize, Serialize};

use crate::args::ArchArg;
use crate::exit::{CheckFailed, Unavailable, bad_input};

/// The CUDA compiler: `nvcc` on PATH, else `$CUDA_HOME/bin/nvcc`.
pub fn find_nvcc() -> Result<PathBuf> {
    if let Some(path) = env::var_os("PATH") {
        for dir in env::split_paths(&path) {
            let candidate = dir.join("nvcc");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    if let Some(home) = env::var_os("CUDA_HOME") {
        let candidate = Path::new(&home).join("bin").join("nvcc");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(anyhow::Error::new(Unavailable(
        "nvcc not found on PATH or under $CUDA_HOME/bin; install the CUDA toolkit (13.0) or set CUDA_HOME".into(),
    )))
}

/// The GPU this machine has, as `nvidia-smi` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    pub name: String,
    /// Compute capability, e.g. "9.0".
    pub compute_cap: String,
    pub driver: String,
    /// The card's UUID ("GPU-…"), which tells two cards of one kind apart (a calibration carried to another card);
    /// none where nvidia-smi does not give it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

impl Device {
    /// A Hopper GPU (compute capability 9.x): the sm90 main loop and sm_90a builds run on it.
    pub fn is_hopper(&self) -> bool {
        self.compute_cap.starts_with("9.")
    }

    /// The architecture the portable main loop is built for on this device: sm_90a on Hopper, sm_80 otherwise.
    pub fn arch(&self) -> Arch {
        if self.is_hopper() { Arch::Sm90a } else { Arch::Sm80 }
    }
}

/// What the generated programs are built as: the main loop, its targets, and where its extra headers are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub main_loop: MainLoop,
    pub archs: Vec<Arch>,
    pub env: BuildEnv,
}

impl Target {
    /// The target of a GPU command on `device`: `--arch`, else the sm90 main loop on Hopper and the portable one
    /// elsewhere. The sm90 main loop on another GPU, or without the CUTLASS headers, is unavailable (exit 3).
    pub fn for_device(arch: Option<ArchArg>, device: &Device) -> Result<Target> {
        let main_loop = match arch {
            Some(arch) => arch.main_loop(),
            None if device.is_hopper() => MainLoop::Sm90,
            None => MainLoop::Sm80,
        };
        match main_loop {
            MainLoop::Sm80 => Ok(Target { main_loop, archs: vec![device.arch()], env: BuildEnv::default() }),
            MainLoop::Sm90 => {
                if !device.is_hopper() {
                    return Err(anyhow::Error::new(Unavailable(format!(
                        "the sm90 main loop needs a Hopper GPU (compute capability 9.0); {} is {}; use --arch sm80",
                        device.name, device.compute_cap
                    ))));
                }
                Target::sm90()
            }
        }
    }

    /// The target of `dashc codegen` (no GPU to ask): the portable loop for sm_80 and sm_90a, or the sm90 loop.
    /// The sm90 loop's headers are not looked up yet: `with_headers` does that, once the shape is known to be one
    /// the kernels implement, so that a shape no headers could build is refused as bad input (exit 2) rather
    /// than as a missing toolchain (exit 3).
    pub fn for_codegen(arch: ArchArg) -> Target {
        match arch {
            ArchArg::Sm80 => {
                Target { main_loop: MainLoop::Sm80, archs: vec![Arch::Sm80, Arch::Sm90a], env: BuildEnv::default() }
            }
            ArchArg::Sm90 => Target { main_loop: MainLoop::Sm90, archs: vec![Arch::Sm90a], env: BuildEnv::default() },
        }
    }

    /// This target with the headers its main loop includes: the CUTLASS/CuTe headers for the sm90 loop (missing
    /// ones are `Unavailable`, exit 3), none for the portable loop.
    pub fn with_headers(self) -> Result<Target> {
        match self.main_loop {
            MainLoop::Sm80 => Ok(self),
            MainLoop::Sm90 => {
                let include = find_cutlass()?;
                Ok(Target { env: BuildEnv { cutlass_include: Some(include.to_string_lossy().into_owned()) }, ..self })
            }
        }
    }

    fn sm90() -> Result<Target> {
        Target::for_codegen(ArchArg::Sm90).with_headers()
    }

    /// "sm90 (sm_90a)", for reports.
    pub fn describe(&self) -> String {
        let archs: Vec<&str> = self.archs.iter().map(|a| a.name()).collect();
        format!("{} ({})", self.main_loop.name(), archs.join(", "))
    }
}

/// A costs file describes the main loop it was calibrated on (`dq_writers`: the portable loop's 0, the sm90 loop's
/// writers); predicting the other loop's runs with it would be silently wrong, so a GPU command refuses (exit 2).
/// Likewise a file of the sm90 loop from before its deferred dQ (`dq_deferred` false), for the tiles (`block_m`)
/// that defer it, and one from before its K/V load beside the dK/dV epilogue (`kv_load_overlap`, head dim 64):
/// its costs may be right, but the simulator would time the old epilogue. (`validate --from-raw` does not ask:
/// there the costs file says which kernel the measurements are of.)
pub fn check_costs_main_loop(
    costs: &schedulers::CostModel,
    path: &Path,
    target: &Target,
    block_m: u32,
    head_dim: u32,
) -> Result<()> {
    if costs.dq_writers == target.main_loop.dq_writers() {
        if costs.dq_deferred != target.main_loop.dq_deferred(block_m) {
            return Err(bad_input(format!(
                "costs file {} was calibrated on the sm90 main loop before its deferred dQ (it has no \
                 \"dq_deferred\": true); calibrate again with this dashc",
                path.display()
            )));
        }
        let overlap = target.main_loop.kv_load_overlap(block_m, head_dim);
        if costs.kv_load_overlap != overlap {
            return Err(bad_input(format!(
                "costs file {} (head dim {head_dim}) says \"kv_load_overlap\": {}, but this dashc's sm90 kernel \
                 {} the next K/V beside the dK/dV epilogue; calibrate again with this dashc",
                path.display(),
                costs.kv_load_overlap,
                if overlap { "loads" } else { "does not load" }
            )));
        }
        return Ok(());
    }
    let calibrated_on = if costs.dq_writers == 0 { "sm80" } else { "sm90" };
    Err(bad_input(format!(
        "costs file {} was calibrated on the {calibrated_on} main loop, this run builds the {} one; \
         calibrate with --arch {}, or run with --arch {calibrated_on}",
        path.display(),
        target.main_loop.name(),
        target.main_loop.name()
    )))
}

/// [`check_costs_main_loop`] for a run's setup, where it has a costs file (its entry for the setup's tiles).
pub fn check_setup_costs(setup: &crate::setup::Setup, target: &Target) -> Result<()> {
    match &setup.calibrated {
        Some(c) => {
            check_costs_main_loop(&setup.costs, &c.path, target, setup.problem.block_m(), setup.problem.head_dim())
        }
        None => Ok(()),
    }
}

/// The CUTLASS/CuTe headers the sm90 main loop includes: `$CUTLASS_INCLUDE`, else the copy that
/// `kernels/fetch-cutlass.sh` unpacks under `target/cutlass/` of the working directory. Absolute, since the
/// build runs in another folder. Missing headers are `Unavailable` (exit code 3).
pub fn find_cutlass() -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match env::var_os("CUTLASS_INCLUDE") {
        Some(dir) => vec![PathBuf::from(dir)],
        None => vec![PathBuf::from("target/cutlass/cutlass_library/source/include")],
    };
    for dir in candidates {
        if dir.join("cute").join("tensor.hpp").is_file() && dir.join("cutlass").is_dir() {
            return std::path::absolute(&dir).with_context(|| format!("resolving {}", dir.display()));
        }
    }
    Err(anyhow::Error::new(Unavailable(codegen::CodegenError::MissingCutlass.to_string())))
}

/// Probes the first GPU; no driver or no GPU is `Unavailable` (exit code 3).
pub fn probe_device() -> Result<Device> {
    let out = Command::new("nvidia-smi")
        .args(["--query-gpu=name,compute_cap,driver_version,uuid", "--format=csv,noheader"])
        .output();
    let unavailable = |why: String| anyhow::Error::new(Unavailable(format!("no NVIDIA GPU available: {why}")));
    let out = out.map_err(|e| unavailable(format!("cannot run nvidia-smi ({e})")))?;
    if !out.status.success() {
        // nvidia-smi prints some failures (no driver loaded) on stdout.
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let said = if stderr.is_empty() { String::from_utf8_lossy(&out.stdout).trim().to_string() } else { stderr };
        let status = out.status.code().map_or("a signal".to_string(), |c| format!("exit {c}"));
        let said = if said.is_empty() { String::new() } else { format!(": {}", said.replace('\n', "; ")) };
        return Err(unavailable(format!("nvidia-smi failed ({status}){said}")));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().ok_or_else(|| unavailable("nvidia-smi lists no GPU".into()))?;
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() < 3 {
        return Err(unavailable(format!("unexpected nvidia-smi output '{line}'")));
    }
    Ok(Device {
        name: fields[0].to_string(),
        compute_cap: fields[1].to_string(),
        driver: fields[2].to_string(),
        uuid: fields.get(3).filter(|u| u.starts_with("GPU-")).map(|u| u.to_string()),
    })
}

/// Writes the generated files into `dir` (created if needed).
pub fn write_generated(dir: &Path, generated: &Generated) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| bad_input(format!("cannot create {}: {e}", dir.display())))?;
    for file in &generated.files {
        let path = dir.join(&file.path);
        fs::write(&path, &file.contents).map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))?;
    }
    let cmd = format!("{}\n", generated.nvcc);
    fs::write(dir.join("nvcc-command.txt"), cmd).with_context(|| format!("writing {}", dir.display()))?;
    Ok(())
}

/// The folder where a configuration is built: one per (variant, architecture).
/// Trace builds live beside their timing builds, with a `_trace` suffix.
pub fn build_dir(work_dir: &Path, config: &KernelConfig) -> PathBuf {
    let archs: Vec<&str> = config.archs.iter().map(|a| a.name()).collect();
    let trace = if config.trace { "_trace" } else { "" };
    work_dir.join(format!("{}_{}{trace}", config.variant_name(), archs.join("+")))
}

/// Renders and builds every configuration at once, one nvcc process each (a build takes tens of seconds and
/// uses one core), so that the runs that follow find their binaries ready.
pub fn prebuild(nvcc: &Path, work_dir: &Path, configs: &[KernelConfig], env: &BuildEnv) -> Result<()> {
    let templates = codegen::Templates::embedded();
    let jobs: Vec<(PathBuf, Generated)> = configs
        .iter()
        .map(|config| {
            let files = codegen::render_sources(config, &templates, &codegen::Provenance::default())
                .map_err(|e| bad_input(e.to_string()))?;
            let generated = Generated {
                files,
                nvcc: codegen::nvcc_command(config, env).map_err(|e| bad_input(e.to_string()))?,
                binary: codegen::BINARY.to_string(),
                schedule_file: codegen::SCHEDULE_FILE.to_string(),
            };
            Ok((build_dir(work_dir, config), generated))
        })
        .collect::<Result<_>>()?;
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(dir, generated)| {
                scope.spawn(move || -> Result<()> {
                    write_generated(dir, generated)?;
                    build(nvcc, dir, generated)?;
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().expect("build thread does not panic"))
    })
}

/// Builds the program in `dir` unless a binary built from identical sources is already there. Returns the
/// build log (ptxas's register and spill report).
pub fn build(nvcc: &Path, dir: &Path, generated: &Generated) -> Result<String> {
    let stamp_path = dir.join(".build-stamp");
    let stamp = build_stamp(nvcc, generated);
    let binary = dir.join(&generated.binary);
    if binary.is_file() && fs::read_to_string(&stamp_path).ok().as_deref() == Some(stamp.as_str()) {
        return fs::read_to_string(dir.join("build.log")).or_else(|_| Ok(String::new()));
    }
    let out = Command::new(nvcc)
        .args(&generated.nvcc.args)
        .current_dir(dir)
        .output()
        .with_context(|| format!("running {}", nvcc.display()))?;
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    fs::write(dir.join("build.log"), &log)?;
    if !out.status.success() {
        let first_error = log.lines().find(|l| l.contains("error")).unwrap_or("see build.log").to_string();
        return Err(anyhow::Error::new(CheckFailed(format!("nvcc failed in {}: {first_error}", dir.display()))));
    }
    fs::write(&stamp_path, stamp)?;
    Ok(log)
}

/// A fingerprint of what a build depends on: the compiler path, the command and every source file (the
/// schedule file is data the binary reads, so it is left out).
fn build_stamp(nvcc: &Path, generated: &Generated) -> String {
    // FNV-1a: stable across runs and platforms, unlike the standard library's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    feed(nvcc.to_string_lossy().as_bytes());
    feed(generated.nvcc.to_string().as_bytes());
    for f in generated.files.iter().filter(|f| f.path != generated.schedule_file) {
        feed(f.path.as_bytes());
        feed(f.contents.as_bytes());
    }
    format!("{h:016x}\n")
}

/// The harness's JSON line (the fields dashc reads; see kernels/templates/harness.cu).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HarnessResult {
    pub status: String,
    pub schedule: String,
    pub variant: String,
    pub device: String,
    pub sm_count: u32,
    pub deterministic: bool,
    pub units: u64,
    pub visits: u64,
    pub time_ms: Times,
    pub tflops: Tflops,
    pub check: Check,
    pub finite: bool,
    pub poison_ok: bool,
    pub repeatable: bool,
    pub repeat_runs: u32,
    pub main_kernel: KernelResources,
    /// The SM clock while the timed runs executed; none where NVML could not be opened (and from harnesses
    /// built before it was recorded).
    #[serde(default)]
    pub clocks: Option<Clocks>,
    /// Every timed whole backward in order (ms); none from harnesses before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_reps: Option<Vec<f64>>,
    pub spin_error: SpinError,
}

/// NVML's SM clock, sampled once per timed whole backward while it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Clocks {
    pub sm_mhz_median: f64,
    pub sm_mhz_min: f64,
    pub samples: u32,
    /// Samples taken while a power or thermal limit held the clock down (NVML's clock-event reasons).
    pub limited: u32,
    /// The board's power draw (NVML, watts), median over the same samples; none from harnesses before it was
    /// recorded or where NVML gives no reading.
    #[serde(default)]
    pub power_w_median: Option<f64>,
}

/// The fewest timed whole backwards from which a result's rested and sustained figures are read (`--reps`).
pub const SERIES_MIN_REPS: usize = 30;

impl HarnessResult {
    /// A passing result's whole-backward TFLOPS over its first five timed runs ("rested") and over the last third
    /// of them ("sustained"), where it timed at least [`SERIES_MIN_REPS`]. Near its power limit a GPU runs the
    /// first tens of ms of load about 10% faster than what follows (bench/NOTES.md runs 138-142); the median of a
    /// short series mixes the two.
    pub fn rested_and_sustained(&self) -> Option<(f64, f64)> {
        if self.status != "ok" {
            return None;
        }
        let reps = self.total_reps.as_ref().filter(|v| v.len() >= SERIES_MIN_REPS && v.iter().all(|x| *x > 0.0))?;
        let tflop_ms = self.tflops.total? * self.time_ms.total_median?; // the FLOPs, in TFLOP x ms
        let median = |v: &[f64]| quantile(v.to_vec(), 0.5);
        Some((tflop_ms / median(&reps[..5]), tflop_ms / median(&reps[reps.len() * 2 / 3..])))
    }
}

/// The `q` quantile of `v` (linear interpolation between order statistics; `q` = 0.5 is the median); NaN when `v`
/// is empty.
pub fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let x = q * (v.len() - 1) as f64;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Times {
    pub total_median: Option<f64>,
    pub main_median: Option<f64>,
    pub total_min: Option<f64>,
    pub main_min: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tflops {
    pub total: Option<f64>,
    pub main: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub ran: bool,
    pub rel_l2_dq: Option<f64>,
    pub rel_l2_dk: Option<f64>,
    pub rel_l2_dv: Option<f64>,
    pub tolerance: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelResources {
    pub registers: u32,
    pub local_bytes: u64,
    pub smem_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpinError {
    pub code: i32,
    pub unit: i64,
    pub bh: i64,
    pub q_tile: i64,
    pub wanted_rank: i64,
    pub seen: i64,
}

/// Options passed through to the harness.
#[derive(Debug, Clone)]
pub struct HarnessOptions {
    pub reps: u32,
    /// `Some(true)` forces the FP32 reference check, `Some(false)` skips it, `None` lets the harness decide
    /// (it runs when both sequence lengths are at most 4096).
    pub check: Option<bool>,
    pub seed: u64,
    /// Seconds before the whole harness is killed; a semaphore wait inside it times out far sooner.
    pub timeout_secs: u32,
    /// Trace builds: where the harness writes the stamps (docs/trace-format.md).
    pub trace: Option<PathBuf>,
    /// An existing directory where the harness writes dQ, dK and dV (raw bf16, `agreement::DUMPED_OUTPUTS`).
    pub dump: Option<PathBuf>,
    /// Milliseconds of rest before the timed runs (the harness's `--idle-ms`; 0: none).
    pub idle_ms: u32,
}

/// Runs the harness in `dir` on `schedule_file` and parses its JSON line. A harness that reports a failed
/// check still returns its result (the caller decides); one that cannot run is an error.
pub fn run_harness(
    dir: &Path,
    generated: &Generated,
    schedule_file: &str,
    opts: &HarnessOptions,
) -> Result<HarnessResult> {
    let mut cmd = Command::new("timeout");
    // The harness runs inside `dir`, so it is named relative to it: a relative work dir stays correct.
    cmd.arg(opts.timeout_secs.to_string()).arg(Path::new(".").join(&generated.binary)).arg(schedule_file);
    cmd.args(["--reps", &opts.reps.to_string(), "--seed", &opts.seed.to_string()]);
    match opts.check {
        Some(true) => {
            cmd.arg("--check");
        }
        Some(false) => {
            cmd.arg("--no-check");
        }
        None => {}
    }
    if let Some(path) = &opts.trace {
        cmd.arg("--trace").arg(path);
    }
    if let Some(dir) = &opts.dump {
        cmd.arg("--dump").arg(dir);
    }
    if opts.idle_ms > 0 {
        cmd.args(["--idle-ms", &opts.idle_ms.to_string()]);
    }
    let out = cmd.current_dir(dir).output().with_context(|| format!("running the harness in {}", dir.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(3) => return Err(anyhow::Error::new(Unavailable(format!("harness: {}", stderr.trim())))),
        Some(124) => {
            return Err(anyhow::Error::new(CheckFailed(format!(
                "the harness in {} ran past {} s and was killed",
                dir.display(),
                opts.timeout_secs
            ))));
        }
        _ => {}
    }
    let line = stdout.lines().rev().find(|l| l.trim_start().starts_with('{'));
    let Some(line) = line else {
        return Err(anyhow::Error::new(CheckFailed(format!(
            "the harness printed no result ({}): {}",
            describe_exit(out.status),
            stderr.trim().replace('\n', "; ")
        ))));
    };
    serde_json::from_str(line).with_context(|| format!("reading the harness result line: {line}"))
}

/// How a child process ended, in words: "exit code 1", or the signal that killed it.
fn describe_exit(status: std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    status.to_string()
}

/// Checks a generated configuration is supported, turning codegen's refusal into bad input.
/// Refuses (exit 2), before any toolchain or GPU probe, a problem that no main loop's kernel supports: a bad head
/// dim is bad input whatever the machine has.
pub fn check_kernel_support(problem: &dag_model::Problem, mask: &dag_model::Mask, deterministic: bool) -> Result<()> {
    let mut first_error = None;
    for main_loop in [MainLoop::Sm80, MainLoop::Sm90] {
        match KernelConfig::for_problem(problem, mask, deterministic, main_loop).map(|_| ()) {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(bad_input(first_error.map_or_else(String::new, |e| e.to_string())))
}

pub fn kernel_config(
    problem: &dag_model::Problem,
    mask: &dag_model::Mask,
    deterministic: bool,
    target: &Target,
) -> Result<KernelConfig> {
    let mut config = KernelConfig::for_problem(problem, mask, deterministic, target.main_loop)
        .map_err(|e| bad_input(e.to_string()))?;
    config.archs = target.archs.clone();
    config.check().map_err(|e| bad_input(e.to_string()))?;
    Ok(config)
}

#[cfg(all(test, unix))]
mod tests {
    use super::describe_exit;
    use std::process::Command;

    #[test]
    fn a_child_s_end_is_told_in_words() {
        let exited = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
        assert_eq!(describe_exit(exited), "exit code 3");
        let killed = Command::new("sh").args(["-c", "kill -9 $$"]).status().unwrap();
        assert_eq!(describe_exit(killed), "killed by signal 9");
    }
}
