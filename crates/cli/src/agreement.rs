//! The deterministic build against the atomic one, where the FP32 reference does not run (seqlen above 4096 by
//! default): both variants dump dQ, dK and dV of the same seeded inputs (`harness --dump DIR`), and the relative L2
//! distance of each deterministic output from its atomic counterpart must stay within the harness tolerance.
//! The two differ only in the order of the FP32 dQ adds, so a correct kernel lands far below it (about 1e-3 and
//! less); a broken reduction order, a lost add or an unwritten tile does not.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;

/// The file names `harness --dump` writes, one per output.
pub const DUMPED_OUTPUTS: [&str; 3] = ["dq.bf16", "dk.bf16", "dv.bf16"];

/// How far the deterministic outputs lie from the atomic ones: ||det - atomic|| / ||atomic|| per output.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    pub rel_l2_dq: f64,
    pub rel_l2_dk: f64,
    pub rel_l2_dv: f64,
    pub tolerance: f64,
    pub ok: bool,
}

impl Agreement {
    pub fn worst(&self) -> f64 {
        self.rel_l2_dq.max(self.rel_l2_dk).max(self.rel_l2_dv)
    }
}

/// Compares the dumps in `det_dir` with those in `atomic_dir`.
pub fn compare_dumps(det_dir: &Path, atomic_dir: &Path, tolerance: f64) -> Result<Agreement> {
    let mut rel = [0.0; 3];
    for (slot, name) in rel.iter_mut().zip(DUMPED_OUTPUTS) {
        let read = |dir: &Path| {
            let path = dir.join(name);
            fs::read(&path).with_context(|| format!("reading the output dump {}", path.display()))
        };
        *slot = rel_l2_bf16(&read(det_dir)?, &read(atomic_dir)?).with_context(|| format!("comparing {name}"))?;
    }
    let [dq, dk, dv] = rel;
    // NaN compares false, so a NaN anywhere fails the check.
    let ok = rel.iter().all(|&r| r <= tolerance);
    Ok(Agreement { rel_l2_dq: dq, rel_l2_dk: dk, rel_l2_dv: dv, tolerance, ok })
}

/// ||a - b|| / ||b|| over two raw little-endian bf16 arrays of the same length, summed in f64. NaN when either
/// holds a NaN or an infinity, or when b is all zeros and a is not.
pub fn rel_l2_bf16(a: &[u8], b: &[u8]) -> Result<f64> {
    if a.len() != b.len() {
        bail!("the two dumps differ in size ({} and {} bytes)", a.len(), b.len());
    }
    if !a.len().is_multiple_of(2) {
        bail!("a bf16 dump of {} bytes is not a whole number of values", a.len());
    }
    let value = |pair: &[u8]| f32::from_bits(u32::from(u16::from_le_bytes([pair[0], pair[1]])) << 16) as f64;
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (x, y) in a.chunks_exact(2).zip(b.chunks_exact(2)) {
        let (x, y) = (value(x), value(y));
        if !x.is_finite() || !y.is_finite() {
            return Ok(f64::NAN);
        }
        diff += (x - y) * (x - y);
        norm += y * y;
    }
    Ok(if norm > 0.0 {
        (diff / norm).sqrt()
    } else if diff == 0.0 {
        0.0
    } else {
        f64::NAN
    })
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

    fn write_dumps(dir: &Path, dq: &[f32], dk: &[f32], dv: &[f32]) {
        fs::create_dir_all(dir).unwrap();
        for (name, values) in DUMPED_OUTPUTS.iter().zip([dq, dk, dv]) {
            fs::write(dir.join(name), bf16_bytes(values)).unwrap();
        }
    }

    #[test]
    fn compare_dumps_checks_every_output_against_the_tolerance() {
        let root = std::env::temp_dir().join(format!("dashc-agreement-{}", std::process::id()));
        let (det, atomic) = (root.join("det"), root.join("atomic"));
        write_dumps(&atomic, &[1.0, 2.0], &[4.0, 0.0], &[1.0, 1.0]);
        write_dumps(&det, &[1.0, 2.0], &[4.0, 0.0], &[1.0, 1.0]);
        let same = compare_dumps(&det, &atomic, 2e-2).unwrap();
        assert!(same.ok);
        assert_eq!(same.worst(), 0.0);
        // dK off by 1 in 4: 25% apart, far past 2e-2; the other outputs still agree.
        write_dumps(&det, &[1.0, 2.0], &[4.0, 1.0], &[1.0, 1.0]);
        let off = compare_dumps(&det, &atomic, 2e-2).unwrap();
        assert!(!off.ok);
        assert!((off.rel_l2_dk - 0.25).abs() < 1e-12);
        assert_eq!(off.rel_l2_dq, 0.0);
        // A missing dump is an error, not a pass.
        fs::remove_file(det.join("dv.bf16")).unwrap();
        assert!(compare_dumps(&det, &atomic, 2e-2).is_err());
        fs::remove_dir_all(&root).unwrap();
    }
}
