use std::fmt;

use schedulers::{LaunchPolicy, Mask, Problem};

use crate::CodegenError;

/// The mask kinds the kernel implements element-wise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelMask {
    Full,
    Causal,
}

impl KernelMask {
    pub fn name(self) -> &'static str {
        match self {
            KernelMask::Full => "full",
            KernelMask::Causal => "causal",
        }
    }

    /// The kernel mask that implements `mask`, if any.
    pub fn of(mask: &Mask) -> Result<Self, CodegenError> {
        match mask {
            Mask::Full => Ok(KernelMask::Full),
            Mask::Causal => Ok(KernelMask::Causal),
            other => Err(CodegenError::UnsupportedMask { mask: other.name().to_string() }),
        }
    }
}

/// Which backward main loop the program runs. The schedule machinery (schedule data, dQ semaphores,
/// pre/post-processing, harness) is the same for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MainLoop {
    /// The portable path: `mma.sync`, `ldmatrix`, `cp.async` (`bwd_mainloop_sm80.cuh`); runs on sm_80 and later.
    Sm80,
    /// The Hopper path: TMA, `wgmma`, warp specialization and dQ writer warps (`bwd_mainloop_sm90.cuh`);
    /// sm_90a only, built with the CUTLASS/CuTe headers. Runs the in-order and the persistent launch.
    Sm90,
}

impl MainLoop {
    pub fn name(self) -> &'static str {
        match self {
            MainLoop::Sm80 => "sm80",
            MainLoop::Sm90 => "sm90",
        }
    }

    /// How the main loop adds dQ, as the cost model counts it (`CostModel::dq_writers`): the portable loop's
    /// computing threads add after each visit (0); the sm90 loop has two writer warps (`kDqStages` in its
    /// template; a codegen test ties the two), one per FP32 staging buffer with its default tiles. (Its 80-row
    /// tiles stage half partials in three buffers, which the model does not describe: it has no costs for them.)
    pub fn dq_writers(self) -> u32 {
        match self {
            MainLoop::Sm80 => 0,
            MainLoop::Sm90 => 2,
        }
    }

    /// Whether a visit's dQ partial is staged with the next visit of its KV tile (`CostModel::dq_deferred`): the
    /// sm90 loop's deferred dQ, which keeps its two consumer warpgroups out of lockstep. Not with its 80-row tiles
    /// (`KernelConfig::is_transposed_dq`, the only sm90 build with block_m 80): one dS buffer, dQ within the visit.
    pub fn dq_deferred(self, block_m: u32) -> bool {
        self == MainLoop::Sm90 && block_m != 80
    }

    /// Whether the next K/V load runs beside the dK/dV epilogue (`CostModel::kv_load_overlap`): the sm90 loop's
    /// `kDkvThroughDs`, where one of the two dS buffers (block_n x block_m) holds dK and dV (two block_n x
    /// head_dim tiles), so K/V go back to the producer before the epilogue. Head dim 64 at 128-row tiles; not at
    /// head dim 128 (64-row tiles), nor without the deferred dQ's second dS buffer.
    pub fn kv_load_overlap(self, block_m: u32, head_dim: u32) -> bool {
        self.dq_deferred(block_m) && 2 * head_dim <= block_m
    }

    /// The launch the GPU commands use with this main loop when none is asked for. The sm90 loop's persistent
    /// launch measured faster than its in-order one on 22 of the paper's 24 configurations, whole backward
    /// (bench/NOTES.md runs 57-60: by 0.1% to 8.5%; the other two, hd128 causal 8192 and 16384, 0.7% to 1% slower,
    /// within the run-to-run spread). The portable loop launches a CTA per unit and has no persistent launch.
    pub fn default_launch(self) -> LaunchPolicy {
        match self {
            MainLoop::Sm80 => LaunchPolicy::InOrder,
            MainLoop::Sm90 => LaunchPolicy::Persistent,
        }
    }
}

/// A GPU architecture the program is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    /// Ampere and later through the portable path (what runs on Hopper too, via the sm_90a build).
    Sm80,
    /// Hopper with the architecture-specific features enabled (wgmma, setmaxnreg, vector red).
    Sm90a,
}

impl Arch {
    pub fn name(self) -> &'static str {
        match self {
            Arch::Sm80 => "sm_80",
            Arch::Sm90a => "sm_90a",
        }
    }

    /// The nvcc `-gencode` flag for this architecture.
    pub fn gencode(self) -> &'static str {
        match self {
            Arch::Sm80 => "-gencode=arch=compute_80,code=sm_80",
            Arch::Sm90a => "-gencode=arch=compute_90a,code=sm_90a",
        }
    }

    /// Opt-in dynamic shared memory per block, in bytes.
    pub fn max_dynamic_smem(self) -> u32 {
        match self {
            Arch::Sm80 => 166_912,
            Arch::Sm90a => 232_448,
        }
    }
}

/// The compile-time switches of one kernel build. Everything else (shape, schedule) is read at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelConfig {
    pub head_dim: u32,
    pub block_m: u32,
    pub block_n: u32,
    pub mask: KernelMask,
    /// Ordered dQ reduction through semaphores (true) or atomic adds in any order (false).
    pub deterministic: bool,
    /// Per-visit timestamps (a hook for measured Gantt charts); off for timing runs.
    pub trace: bool,
    /// The main loop: portable or Hopper.
    pub main_loop: MainLoop,
    /// Targets, each gets one `-gencode`; the order is kept. The Hopper main loop builds for sm_90a alone.
    pub archs: Vec<Arch>,
}

impl KernelConfig {
    /// The configuration a schedule's problem and mask call for, with the given main loop: the portable one
    /// built for both architectures, the Hopper one for sm_90a.
    pub fn for_problem(
        problem: &Problem,
        mask: &Mask,
        deterministic: bool,
        main_loop: MainLoop,
    ) -> Result<Self, CodegenError> {
        let archs = match main_loop {
            MainLoop::Sm80 => vec![Arch::Sm80, Arch::Sm90a],
            MainLoop::Sm90 => vec![Arch::Sm90a],
        };
        let config = KernelConfig {
            head_dim: problem.head_dim(),
            block_m: problem.block_m(),
            block_n: problem.block_n(),
            mask: KernelMask::of(mask)?,
            deterministic,
            trace: false,
            main_loop,
            archs,
        };
        config.check()?;
        Ok(config)
    }

    /// Checks that the kernel template supports this configuration on every target.
    pub fn check(&self) -> Result<(), CodegenError> {
        if !matches!(self.head_dim, 64 | 128) {
            return Err(CodegenError::UnsupportedHeadDim { head_dim: self.head_dim });
        }
        if (!matches!(self.block_m, 64 | 128) && !self.is_transposed_dq()) || !matches!(self.block_n, 64 | 128) {
            return Err(CodegenError::UnsupportedTile { block_m: self.block_m, block_n: self.block_n });
        }
        if self.archs.is_empty() {
            return Err(CodegenError::NoArch);
        }
        if self.main_loop == MainLoop::Sm90 {
            if self.archs != [Arch::Sm90a] {
                return Err(CodegenError::Sm90Arch);
            }
            // The two consumer warpgroups split the 128 KV rows of dK/dV.
            if self.block_n != 128 {
                return Err(CodegenError::UnsupportedTile { block_m: self.block_m, block_n: self.block_n });
            }
        }
        let needed = self.smem_bytes();
        for &arch in &self.archs {
            if needed > arch.max_dynamic_smem() {
                return Err(CodegenError::SharedMemory {
                    block_m: self.block_m,
                    block_n: self.block_n,
                    head_dim: self.head_dim,
                    needed,
                    arch: arch.name(),
                    limit: arch.max_dynamic_smem(),
                });
            }
        }
        Ok(())
    }

    /// The Hopper loop's 80-row query tiles (head dim 128, full mask; FlashAttention-4's tile there): dQ is
    /// computed transposed, with one dS buffer and three half staging buffers (`BwdConfig::kTransposedDq`).
    pub fn is_transposed_dq(&self) -> bool {
        self.main_loop == MainLoop::Sm90
            && self.block_m == 80
            && self.head_dim == 128
            && self.block_n == 128
            && self.mask == KernelMask::Full
    }

    /// Dynamic shared memory of the main kernel. Portable loop: mirrors `BwdConfig::kSmemBytes` in its template:
    /// K and V tiles, two stages of Q and dO, P and dS (all bf16), two stages of LSE and D, the schedule
    /// reader's ring of 4 visit entries and two flags (48 bytes with padding). Hopper loop: `SharedStorage` in its
    /// template: K, V, two stages of Q and dO, two dS tiles (no P), two FP32 dQ staging tiles, LSE and D, and
    /// under 256 bytes of visit slots and mbarriers; with transposed dQ (80-row tiles) one dS tile and three
    /// FP32 staging tiles of half a partial each.
    pub fn smem_bytes(&self) -> u32 {
        let (d, bm, bn) = (self.head_dim, self.block_m, self.block_n);
        let bf16_elems = 2 * bn * d + 4 * bm * d + 2 * bm * bn;
        match self.main_loop {
            MainLoop::Sm80 => bf16_elems * 2 + 4 * bm * 4 + 48,
            MainLoop::Sm90 => {
                // No P tile, two dS tiles: the bf16 count is the same. Two FP32 dQ staging tiles. The struct is
                // 1 KiB aligned, so its size rounds up to a multiple of 1 KiB.
                let small = (4 * bm * 4 + 256).div_ceil(1024) * 1024;
                if self.is_transposed_dq() {
                    (bf16_elems - bm * bn) * 2 + 3 * (bm * d / 2) * 4 + small
                } else {
                    bf16_elems * 2 + 2 * bm * d * 4 + small
                }
            }
        }
    }

    /// A short name such as `hd128_m64_n128_full_det` (portable loop) or `sm90_hd128_m64_n128_full_det`, used
    /// in file headers and reports.
    pub fn variant_name(&self) -> String {
        format!(
            "{}hd{}_m{}_n{}_{}_{}",
            if self.main_loop == MainLoop::Sm90 { "sm90_" } else { "" },
            self.head_dim,
            self.block_m,
            self.block_n,
            self.mask.name(),
            if self.deterministic { "det" } else { "nondet" }
        )
    }
}

impl fmt::Display for KernelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let archs: Vec<&str> = self.archs.iter().map(|a| a.name()).collect();
        write!(f, "{} ({}{})", self.variant_name(), archs.join(", "), if self.trace { ", trace" } else { "" })
    }
}
