//! The throughput of what users would pick instead, measured on this project's GPU (one NVIDIA H200, 132 SMs,
//! 2026-11-22; `shared/reference/anchors.md`, which also has cuDNN): attention-backward TFLOPS on the paper's 24
//! configurations.

/// One row of the anchors table.
pub struct Anchor {
    pub head_dim: u32,
    pub causal: bool,
    pub seqlen: u32,
    pub batch: u32,
    /// FlashAttention-4 (SM90 backward), non-deterministic.
    pub fa4: f64,
    /// FlashAttention-4 with `deterministic=True` (the spt schedule for causal masks).
    pub fa4_deterministic: f64,
    /// FlashAttention-2 through PyTorch SDPA.
    pub fa2: f64,
}

pub const ANCHORS: [Anchor; 24] = [
    Anchor { head_dim: 64, causal: false, seqlen: 512, batch: 32, fa4: 259.0, fa4_deterministic: 225.0, fa2: 187.0 },
    Anchor { head_dim: 64, causal: false, seqlen: 1024, batch: 16, fa4: 325.0, fa4_deterministic: 317.0, fa2: 227.0 },
    Anchor { head_dim: 64, causal: false, seqlen: 2048, batch: 8, fa4: 412.0, fa4_deterministic: 439.0, fa2: 243.0 },
    Anchor { head_dim: 64, causal: false, seqlen: 4096, batch: 4, fa4: 473.0, fa4_deterministic: 487.0, fa2: 265.0 },
    Anchor { head_dim: 64, causal: false, seqlen: 8192, batch: 2, fa4: 507.0, fa4_deterministic: 487.0, fa2: 278.0 },
    Anchor { head_dim: 64, causal: false, seqlen: 16384, batch: 1, fa4: 502.0, fa4_deterministic: 504.0, fa2: 285.0 },
    Anchor { head_dim: 64, causal: true, seqlen: 512, batch: 32, fa4: 151.0, fa4_deterministic: 123.0, fa2: 105.0 },
    Anchor { head_dim: 64, causal: true, seqlen: 1024, batch: 16, fa4: 254.0, fa4_deterministic: 201.0, fa2: 166.0 },
    Anchor { head_dim: 64, causal: true, seqlen: 2048, batch: 8, fa4: 321.0, fa4_deterministic: 327.0, fa2: 202.0 },
    Anchor { head_dim: 64, causal: true, seqlen: 4096, batch: 4, fa4: 412.0, fa4_deterministic: 409.0, fa2: 223.0 },
    Anchor { head_dim: 64, causal: true, seqlen: 8192, batch: 2, fa4: 471.0, fa4_deterministic: 469.0, fa2: 252.0 },
    Anchor { head_dim: 64, causal: true, seqlen: 16384, batch: 1, fa4: 518.0, fa4_deterministic: 488.0, fa2: 270.0 },
    Anchor { head_dim: 128, causal: false, seqlen: 512, batch: 32, fa4: 235.0, fa4_deterministic: 224.0, fa2: 176.0 },
    Anchor { head_dim: 128, causal: false, seqlen: 1024, batch: 16, fa4: 353.0, fa4_deterministic: 328.0, fa2: 226.0 },
    Anchor { head_dim: 128, causal: false, seqlen: 2048, batch: 8, fa4: 441.0, fa4_deterministic: 427.0, fa2: 258.0 },
    Anchor { head_dim: 128, causal: false, seqlen: 4096, batch: 4, fa4: 533.0, fa4_deterministic: 515.0, fa2: 285.0 },
    Anchor { head_dim: 128, causal: false, seqlen: 8192, batch: 2, fa4: 566.0, fa4_deterministic: 555.0, fa2: 299.0 },
    Anchor { head_dim: 128, causal: false, seqlen: 16384, batch: 1, fa4: 584.0, fa4_deterministic: 568.0, fa2: 306.0 },
    Anchor { head_dim: 128, causal: true, seqlen: 512, batch: 32, fa4: 140.0, fa4_deterministic: 120.0, fa2: 124.0 },
    Anchor { head_dim: 128, causal: true, seqlen: 1024, batch: 16, fa4: 234.0, fa4_deterministic: 228.0, fa2: 178.0 },
    Anchor { head_dim: 128, causal: true, seqlen: 2048, batch: 8, fa4: 395.0, fa4_deterministic: 323.0, fa2: 211.0 },
    Anchor { head_dim: 128, causal: true, seqlen: 4096, batch: 4, fa4: 437.0, fa4_deterministic: 424.0, fa2: 246.0 },
    Anchor { head_dim: 128, causal: true, seqlen: 8192, batch: 2, fa4: 523.0, fa4_deterministic: 488.0, fa2: 276.0 },
    Anchor { head_dim: 128, causal: true, seqlen: 16384, batch: 1, fa4: 594.0, fa4_deterministic: 521.0, fa2: 306.0 },
];

/// What the anchor columns of a table are, printed under it: the anchors' FA4 steps carry host time that a
/// training loop's would not (bench/NOTES.md, runs 263-269), which on the short rows is most of the difference.
pub const ANCHORS_NOTE: &str = "FA4 det / FA4 / FA2: shared/reference/anchors.md (one H200, 2026-11-22), timed by \
anchors.py, which launches each step from Python and waits for it: the GPU's idle time while Python launches \
FA4's kernels counts in its step (0.1-0.8 ms). With steps queued ahead of the GPU, as in training, FA4 is close to \
dashc on the short rows; FA4_GAPLESS=1 bash bench/scripts/fa4-interleaved-run.sh times it both ways (docs/gpu.md).";

/// The anchor row of a configuration, if it is one of the 24.
pub fn anchor(head_dim: u32, causal: bool, seqlen: u32, batch: u32) -> Option<&'static Anchor> {
    ANCHORS.iter().find(|a| a.head_dim == head_dim && a.causal == causal && a.seqlen == seqlen && a.batch == batch)
}
