//! The deterministic build against the atomic one, where the FP32 reference does not run (seqlen above 4096 by
//! default): both variants dump dQ, dK and dV of the same seeded inputs (`harness --dump DIR`), and dashc compares
//! them.
//!
//! The two builds share every line but the dQ reduction, so this checks that reduction (the part the schedule
//! drives), not the shared code: a bug in both builds (the mask, a scale, dK/dV) is invisible here; the FP32
//! reference up to seqlen 4096 covers it. Neither can it see the order of the adds (the atomic build has none);
//! bitwise repeatability covers that.
//!
//! - dQ is scored per (batch, head, Q tile) block, worst block against [`DQ_TILE_TOLERANCE`]. A whole-tensor score
//!   would hide a tile that lost every add (one tile of 4096 is 1.6e-2 of the norm); per block, one lost
//!   contribution among 128 is about 1e-1, while a correct kernel differs only by FP32 add order before the bf16
//!   rounding.
//! - dK and dV take the same arithmetic path in both builds, so they should agree to rounding or exactly; their
//!   whole-tensor distance must stay within [`DKDV_TOLERANCE`].
//!
//! Both tolerances are estimates made before the check first ran on the GPU: the first runs must show correct
//! kernels far below them.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;

/// The file names `harness --dump` writes, one per output.
pub const DUMPED_OUTPUTS: [&str; 3] = ["dq.bf16", "dk.bf16", "dv.bf16"];
/// Largest relative L2 distance of one dQ block (batch, head, Q tile) from the atomic build's.
pub const DQ_TILE_TOLERANCE: f64 = 1e-2;
/// Largest relative L2 distance of dK, and of dV, from the atomic build's.
pub const DKDV_TOLERANCE: f64 = 1e-3;

/// The layout of the dumped dQ, [batch, seqlen_q, heads, head_dim], and its Q tile height.
#[derive(Debug, Clone, Copy)]
pub struct DqShape {
    pub batch: usize,
    pub seqlen_q: usize,
    pub heads: usize,
    pub head_dim: usize,
    pub block_m: usize,
}

/// How far the deterministic outputs lie from the atomic ones (relative L2, the atomic build's as reference).
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    /// The worst (batch, head, Q tile) block of dQ.
    pub worst_tile_rel_l2_dq: f64,
    /// dQ as a whole (for reference; the verdict uses the worst block).
    pub rel_l2_dq: f64,
    pub rel_l2_dk: f64,
    pub rel_l2_dv: f64,
    pub dq_tile_tolerance: f64,
    pub dkdv_tolerance: f64,
    pub ok: bool,
    /// Why there is no comparison (a missing or malformed dump): then `ok` is false and the distances are NaN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Agreement {
    /// A comparison that could not be made: it fails.
    pub fn failed(error: String) -> Self {
        Agreement {
            worst_tile_rel_l2_dq: f64::NAN,
            rel_l2_dq: f64::NAN,
            rel_l2_dk: f64::NAN,
            rel_l2_dv: f64::NAN,
            dq_tile_tolerance: DQ_TILE_TOLERANCE,
            dkdv_tolerance: DKDV_TOLERANCE,
            ok: false,
            error: Some(error),
        }
    }

    /// The "vs atomic" cell of the `run` and `bench` tables: the worst distance, flagged past a tolerance.
    pub fn table_cell(&self) -> String {
        if self.ok { format!("{:.1e}", self.worst()) } else { format!("{:.1e} FAIL", self.worst()) }
    }

    /// The largest of the distances, NaN if any is NaN.
    pub fn worst(&self) -> f64 {
        let all = [self.worst_tile_rel_l2_dq, self.rel_l2_dk, self.rel_l2_dv];
        if all.iter().any(|x| x.is_nan()) { f64::NAN } else { all.into_iter().fold(0.0, f64::max) }
    }
}

/// Compares the dumps in `det_dir` with those in `atomic_dir`.
pub fn compare_dumps(det_dir: &Path, atomic_dir: &Path, dq: DqShape) -> Result<Agreement> {
    let read = |dir: &Path, name: &str| {
        let path = dir.join(name);
        fs::read(&path).with_context(|| format!("reading the output dump {}", path.display()))
    };
    let (dq_det, dq_atomic) = (read(det_dir, DUMPED_OUTPUTS[0])?, read(atomic_dir, DUMPED_OUTPUTS[0])?);
    let (worst_tile, whole_dq) = dq_distances(&dq_det, &dq_atomic, dq).context("comparing dq.bf16")?;
    let mut dkdv = [0.0; 2];
    for (slot, name) in dkdv.iter_mut().zip(&DUMPED_OUTPUTS[1..]) {
        *slot = rel_l2_bf16(&read(det_dir, name)?, &read(atomic_dir, name)?)
            .with_context(|| format!("comparing {name}"))?;
    }
    let [dk, dv] = dkdv;
    // NaN compares false, so a NaN anywhere fails.
    let ok = worst_tile <= DQ_TILE_TOLERANCE && dk <= DKDV_TOLERANCE && dv <= DKDV_TOLERANCE;
    Ok(Agreement {
        worst_tile_rel_l2_dq: worst_tile,
        rel_l2_dq: whole_dq,
        rel_l2_dk: dk,
        rel_l2_dv: dv,
        dq_tile_tolerance: DQ_TILE_TOLERANCE,
        dkdv_tolerance: DKDV_TOLERANCE,
        ok,
        error: None,
    })
}

fn bf16_at(bytes: &[u8], i: usize) -> f64 {
    f32::from_bits(u32::from(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]])) << 16) as f64
}

/// ||a - b|| / ||b||: 0 when both are 0, NaN when b is 0 and a is not.
fn relative(diff2: f64, norm2: f64) -> f64 {
    if norm2 > 0.0 {
        (diff2 / norm2).sqrt()
    } else if diff2 == 0.0 {
        0.0
    } else {
        f64::NAN
    }
}

fn check_sizes(a: &[u8], b: &[u8]) -> Result<()> {
    if a.len() != b.len() {
        bail!("the two dumps differ in size ({} and {} bytes)", a.len(), b.len());
    }
    if !a.len().is_multiple_of(2) {
        bail!("a bf16 dump of {} bytes is not a whole number of values", a.len());
    }
    Ok(())
}

/// ||a - b|| / ||b|| over two raw little-endian bf16 arrays of the same length, summed in f64. NaN when either
/// holds a NaN or an infinity, or when b is all zeros and a is not.
fn rel_l2_bf16(a: &[u8], b: &[u8]) -> Result<f64> {
    check_sizes(a, b)?;
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for i in 0..a.len() / 2 {
        let (x, y) = (bf16_at(a, i), bf16_at(b, i));
        if !x.is_finite() || !y.is_finite() {
            return Ok(f64::NAN);
        }
        diff += (x - y) * (x - y);
        norm += y * y;
    }
    Ok(relative(diff, norm))
}

/// The worst per-block and the whole-tensor relative L2 distance of two dQ dumps laid out as `shape` says.
fn dq_distances(a: &[u8], b: &[u8], shape: DqShape) -> Result<(f64, f64)> {
    check_sizes(a, b)?;
    let DqShape { batch, seqlen_q, heads, head_dim, block_m } = shape;
    let values = batch * seqlen_q * heads * head_dim;
    if a.len() != 2 * values {
        bail!(
            "the dumps hold {} values, the shape {batch} x {seqlen_q} x {heads} x {head_dim} has {values}",
            a.len() / 2
        );
    }
    let m_tiles = seqlen_q.div_ceil(block_m);
    // (diff², norm²) per (batch, head, Q tile), in layout order [batch, seqlen, heads, head_dim].
    let mut blocks = vec![(0.0f64, 0.0f64); batch * heads * m_tiles];
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for bi in 0..batch {
        for s in 0..seqlen_q {
            for h in 0..heads {
                let block = &mut blocks[(bi * heads + h) * m_tiles + s / block_m];
                let row = ((bi * seqlen_q + s) * heads + h) * head_dim;
                for i in row..row + head_dim {
                    let (x, y) = (bf16_at(a, i), bf16_at(b, i));
                    if !x.is_finite() || !y.is_finite() {
                        return Ok((f64::NAN, f64::NAN));
                    }
                    let d2 = (x - y) * (x - y);
                    block.0 += d2;
                    block.1 += y * y;
                    diff += d2;
                    norm += y * y;
                }
            }
        }
    }
    let mut worst = 0.0f64;
    for &(d2, n2) in &blocks {
        let r = relative(d2, n2);
        if r.is_nan() {
            return Ok((f64::NAN, relative(diff, norm)));
        }
        worst = worst.max(r);
    }
    Ok((worst, relative(diff, norm)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf16_bytes(values: &[f32]) -> Vec<u8> {
        // Truncation is exact for the values used here (few mantissa bits).
        values.iter().flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes()).collect()
    }

    #[test]
    fn identical_dumps_are_zero_apart() {
        let a = bf16_bytes(&[1.0, -2.0, 0.5, 3.0]);
        assert_eq!(rel_l2_bf16(&a, &a).unwrap(), 0.0);
    }

    #[test]
    fn distance_is_relative_to_the_second_array() {
        let a = bf16_bytes(&[3.0, 4.0]);
        let b = bf16_bytes(&[0.0, 4.0]);
        // ||a - b|| = 3, ||b|| = 4.
        assert!((rel_l2_bf16(&a, &b).unwrap() - 0.75).abs() < 1e-12);
    }

    #[test]
    fn non_finite_values_give_nan() {
        let a = bf16_bytes(&[1.0, f32::NAN]);
        let b = bf16_bytes(&[1.0, 1.0]);
        assert!(rel_l2_bf16(&a, &b).unwrap().is_nan());
        let inf = bf16_bytes(&[1.0, f32::INFINITY]);
        assert!(rel_l2_bf16(&b, &inf).unwrap().is_nan());
    }

    #[test]
    fn zero_reference_is_nan_unless_both_are_zero() {
        let zero = bf16_bytes(&[0.0, 0.0]);
        assert_eq!(rel_l2_bf16(&zero, &zero).unwrap(), 0.0);
        assert!(rel_l2_bf16(&bf16_bytes(&[1.0, 0.0]), &zero).unwrap().is_nan());
    }

    #[test]
    fn size_mismatch_is_an_error() {
        assert!(rel_l2_bf16(&bf16_bytes(&[1.0]), &bf16_bytes(&[1.0, 2.0])).is_err());
        assert!(rel_l2_bf16(&[0u8; 3], &[0u8; 3]).is_err());
    }

    // batch 1, seqlen 4, 2 heads, head dim 2, Q tiles of 2 rows: 4 blocks of 4 values each.
    const SHAPE: DqShape = DqShape { batch: 1, seqlen_q: 4, heads: 2, head_dim: 2, block_m: 2 };

    #[test]
    fn a_lost_tile_fails_per_block_though_the_whole_tensor_is_close() {
        // 4 blocks of equal norm; block (head 1, tile 1) zeroed in the deterministic dump.
        let atomic: Vec<f32> = vec![1.0; 16];
        let mut det = atomic.clone();
        for s in 2..4 {
            for d in 0..2 {
                det[(s * 2 + 1) * 2 + d] = 0.0;
            }
        }
        let (worst, whole) = dq_distances(&bf16_bytes(&det), &bf16_bytes(&atomic), SHAPE).unwrap();
        assert_eq!(worst, 1.0);
        assert!((whole - 0.5).abs() < 1e-12, "{whole}");
        // In a large tensor the same loss is a small whole-tensor distance: only the block score sees it.
        assert!(worst > DQ_TILE_TOLERANCE);
    }

    #[test]
    fn dq_shape_must_match_the_dump() {
        let v = bf16_bytes(&[1.0; 8]);
        assert!(dq_distances(&v, &v, SHAPE).is_err());
    }

    #[test]
    fn worst_propagates_nan() {
        let mut a = Agreement::failed("x".into());
        assert!(a.worst().is_nan());
        a.worst_tile_rel_l2_dq = 0.0;
        a.rel_l2_dk = 0.0;
        assert!(a.worst().is_nan(), "dV is still NaN");
        a.rel_l2_dv = 1e-4;
        assert_eq!(a.worst(), 1e-4);
    }

    fn write_dumps(dir: &Path, dq: &[f32], dk: &[f32], dv: &[f32]) {
        fs::create_dir_all(dir).unwrap();
        for (name, values) in DUMPED_OUTPUTS.iter().zip([dq, dk, dv]) {
            fs::write(dir.join(name), bf16_bytes(values)).unwrap();
        }
    }

    #[test]
    fn compare_dumps_checks_every_output_against_its_tolerance() {
        let root = std::env::temp_dir().join(format!("dashc-agreement-{}", std::process::id()));
        let (det, atomic) = (root.join("det"), root.join("atomic"));
        let dq: Vec<f32> = (0..16).map(|i| 1.0 + i as f32).collect();
        write_dumps(&atomic, &dq, &[4.0, 0.0], &[1.0, 1.0]);
        write_dumps(&det, &dq, &[4.0, 0.0], &[1.0, 1.0]);
        let same = compare_dumps(&det, &atomic, SHAPE).unwrap();
        assert!(same.ok);
        assert_eq!(same.worst(), 0.0);
        // dK off by 1 in 4: 25% apart, far past its tolerance; dQ still agrees.
        write_dumps(&det, &dq, &[4.0, 1.0], &[1.0, 1.0]);
        let off = compare_dumps(&det, &atomic, SHAPE).unwrap();
        assert!(!off.ok);
        assert!((off.rel_l2_dk - 0.25).abs() < 1e-12);
        assert_eq!(off.worst_tile_rel_l2_dq, 0.0);
        // A missing dump is an error, not a pass.
        fs::remove_file(det.join("dv.bf16")).unwrap();
        assert!(compare_dumps(&det, &atomic, SHAPE).is_err());
        fs::remove_dir_all(&root).unwrap();
    }
}
