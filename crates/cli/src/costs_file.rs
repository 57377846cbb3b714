//! The calibrated cost file (`dashc-costs`, docs/calibration.md): costs in microseconds fitted from GPU traces
//! by `dashc calibrate`, one entry per (head dim, tile sizes, kernel variant), all for one GPU.

use std::path::Path;

use anyhow::Result;
use schedulers::CostModel;
use schedulers::calibrate::Fit;
use serde::{Deserialize, Serialize};

use crate::exit::bad_input;
use crate::output::SCHEMA_VERSION;

pub const FORMAT: &str = "dashc-costs";

/// The schema of a costs file whose entries have a memory roof or memory probes (`CostsFile::new`).
pub const ROOF_SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostsFile {
    pub format: String,
    pub schema_version: u32,
    /// The GPU the traces came from, as nvidia-smi names it.
    pub gpu: String,
    /// The card's UUID, where nvidia-smi gave it (files written before it was recorded, and refits of kept
    /// traces, have none): `validate` says when its measurements ran on another card of the same kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_uuid: Option<String>,
    pub time_unit: String,
    /// Tool version, date and commit of the calibration run.
    pub created_by: String,
    /// The launch the calibration traces ran with (`calibrate --launch`) where it is not in-order; absent means
    /// in-order (written only for the persistent launch, so that in-order files stay readable by earlier
    /// versions, whose reader refuses unknown fields). Under the persistent one the unit start is the compute side's move from one
    /// unit to the next (docs/calibration.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced_launch: Option<schedulers::LaunchPolicy>,
    pub entries: Vec<CostsEntry>,
}

/// The costs of one kernel build.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostsEntry {
    pub head_dim: u32,
    pub block_m: u32,
    pub block_n: u32,
    /// "det" (semaphore-ordered dQ); the only variant the model describes.
    pub variant: String,
    pub costs: CostModel,
    /// The statistics behind the costs.
    pub fit: Fit,
    /// The traced runs the fit pooled: the calibration set (validation must not judge on these).
    pub calibrated_on: Vec<CalibrationRun>,
    /// The memory probes the roof (`costs.memory_roof`) was fitted on; empty where the calibration had none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_probes: Vec<ProbeRun>,
}

/// One traced memory probe (`calibrate --memory-probes`): not pooled into the phase costs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProbeRun {
    pub mask: String,
    pub batch: u32,
    pub heads: u32,
    pub seqlen: u32,
    pub schedule: String,
    pub launch: schedulers::LaunchPolicy,
    /// `schedulers::dram_bytes` of the probe's problem.
    pub dram_bytes: f64,
    /// The simulator's prediction under the fitted phase costs, before the roof (µs).
    pub simulated_us: f64,
    /// The trace's makespan (µs): what the roof is fitted on, as the phase costs are fitted on trace stamps.
    pub trace_makespan_us: f64,
    /// The trace build's main-kernel time (median, ms) where the GPU ran it; absent in a refit of kept traces. Not
    /// used by the fit: kept to show how far the makespan is from the kernel time `validate` measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced_main_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CalibrationRun {
    pub mask: String,
    pub batch: u32,
    pub heads: u32,
    pub seqlen: u32,
    pub schedule: String,
    /// Main-kernel time of the trace build (median, ms), and the trace's own makespan (µs).
    pub traced_main_ms: Option<f64>,
    pub trace_makespan_us: f64,
}

impl CostsFile {
    /// The launch the calibration traces ran with.
    pub fn traced_launch(&self) -> schedulers::LaunchPolicy {
        self.traced_launch.unwrap_or(schedulers::LaunchPolicy::InOrder)
    }

    pub fn new(gpu: &str, created_by: String, entries: Vec<CostsEntry>) -> CostsFile {
        // A file with a memory roof is schema 2, so that an older dashc refuses it instead of predicting without
        // the roof (its reader would skip the unknown `memory_roof` field); without one it stays readable by them.
        let roofed = entries.iter().any(|e| e.costs.memory_roof.is_some() || !e.memory_probes.is_empty());
        CostsFile {
            format: FORMAT.into(),
            schema_version: if roofed { ROOF_SCHEMA_VERSION } else { SCHEMA_VERSION },
            gpu: gpu.into(),
            gpu_uuid: None,
            time_unit: "us".into(),
            created_by,
            traced_launch: None,
            entries,
        }
    }

    /// Reads and checks a cost file; every defect is a one-line bad-input error naming the file.
    pub fn load(path: &Path) -> Result<CostsFile> {
        let invalid = |why: String| bad_input(format!("invalid costs file {}: {why}", path.display()));
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad_input(format!("cannot read costs file {}: {e}", path.display())))?;
        let file: CostsFile = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if file.format != FORMAT {
            return Err(invalid(format!("format is '{}', expected '{FORMAT}'", file.format)));
        }
        if file.schema_version != SCHEMA_VERSION && file.schema_version != ROOF_SCHEMA_VERSION {
            return Err(invalid(format!(
                "schema_version {} is not supported (this dashc reads {SCHEMA_VERSION} and {ROOF_SCHEMA_VERSION})",
                file.schema_version
            )));
        }
        if file.time_unit != "us" {
            return Err(invalid(format!("time_unit is '{}', expected 'us'", file.time_unit)));
        }
        if file.entries.is_empty() {
            return Err(invalid("it holds no entry".into()));
        }
        for e in &file.entries {
            e.costs.check().map_err(|err| invalid(format!("entry {}: {err}", e.key())))?;
        }
        Ok(file)
    }

    /// The entry for a kernel build, or a bad-input error that says what the file holds.
    pub fn entry(&self, path: &Path, head_dim: u32, block_m: u32, block_n: u32) -> Result<&CostsEntry> {
        self.entries
            .iter()
            .find(|e| e.head_dim == head_dim && e.block_m == block_m && e.block_n == block_n && e.variant == "det")
            .ok_or_else(|| {
                let have: Vec<String> = self.entries.iter().map(CostsEntry::key).collect();
                bad_input(format!(
                    "costs file {} has no entry for head dim {head_dim}, tiles {block_m}x{block_n}, det (it has {}); \
                     run dashc calibrate for this configuration",
                    path.display(),
                    have.join(", ")
                ))
            })
    }

    /// Refuses a file calibrated on another GPU than `device`.
    pub fn check_gpu(&self, path: &Path, device: &str) -> Result<()> {
        if self.gpu != device {
            return Err(bad_input(format!(
                "costs file {} was calibrated on '{}', this GPU is '{device}'; run dashc calibrate here",
                path.display(),
                self.gpu
            )));
        }
        Ok(())
    }

    /// Writes the file under a temporary name and renames it, so that no half-written file is left.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_atomic(path, &(serde_json::to_string_pretty(self)? + "\n"))
    }
}

impl CostsEntry {
    pub fn key(&self) -> String {
        format!("head dim {}, tiles {}x{}, {}", self.head_dim, self.block_m, self.block_n, self.variant)
    }
}

/// Writes `text` to `path` through a temporary file in the same folder and a rename.
pub fn write_atomic(path: &Path, text: &str) -> Result<()> {
    write_atomic_bytes(path, text.as_bytes())
}

pub fn write_atomic_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&tmp, bytes).map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        bad_input(format!("cannot write {}: {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedulers::calibrate::{Samples, stat};

    fn entry(head_dim: u32) -> CostsEntry {
        let s = Samples {
            compute_full: vec![5.0; 10],
            reduce: vec![2.0; 10],
            waiters: vec![
                schedulers::calibrate::Waiter {
                    compute_start: 0.0,
                    arrival: 5.0,
                    reduce_start: 6.3,
                    pred_release: 6.0,
                    pred_sm: 0,
                    sm: 1,
                };
                10
            ],
            unit_load: vec![1.0; 10],
            unit_finish: vec![0.5; 10],
            ..Samples::default()
        };
        let fit = s.fit().unwrap();
        assert_eq!(fit.compute_full, stat(&[5.0; 10]));
        CostsEntry {
            head_dim,
            block_m: 64,
            block_n: 128,
            variant: "det".into(),
            costs: fit.costs,
            fit,
            calibrated_on: vec![CalibrationRun {
                mask: "full".into(),
                batch: 8,
                heads: 16,
                seqlen: 2048,
                schedule: "naive".into(),
                traced_main_ms: Some(1.5),
                trace_makespan_us: 1490.0,
            }],
            memory_probes: Vec::new(),
        }
    }

    #[test]
    fn round_trip_and_mismatches() {
        let dir = std::env::temp_dir().join(format!("dashc-costs-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("costs.json");
        let mut roofed = entry(128);
        roofed.costs.memory_roof = Some(schedulers::MemoryRoof { bandwidth: 2.9e6, exponent: 3.0 });
        roofed.memory_probes.push(ProbeRun {
            mask: "causal".into(),
            batch: 64,
            heads: 16,
            seqlen: 256,
            schedule: "symmetric-shift".into(),
            launch: schedulers::LaunchPolicy::Persistent,
            dram_bytes: 5.4e8,
            simulated_us: 150.0,
            trace_makespan_us: 210.0,
            traced_main_ms: Some(0.213),
        });
        let file = CostsFile::new("NVIDIA H200", "test".into(), vec![roofed]);
        file.save(&path).unwrap();
        let back = CostsFile::load(&path).unwrap();
        assert_eq!(back.schema_version, ROOF_SCHEMA_VERSION, "a file with a roof is schema 2");
        assert_eq!(back.entries[0].costs, file.entries[0].costs);
        assert_eq!(back.entries[0].calibrated_on, file.entries[0].calibrated_on);
        assert_eq!(back.entries[0].memory_probes, file.entries[0].memory_probes);
        // A file without a roof (older, or calibrated with --memory-probes none) writes no such fields.
        CostsFile::new("NVIDIA H200", "test".into(), vec![entry(128)]).save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("memory_roof") && !text.contains("memory_probes"), "{text}");
        assert!(text.contains("\"schema_version\": 1"), "without a roof the file stays schema 1: {text}");
        assert_eq!(CostsFile::load(&path).unwrap().entries[0].costs.memory_roof, None);
        file.save(&path).unwrap();
        assert!(back.entry(&path, 128, 64, 128).is_ok());
        let err = back.entry(&path, 64, 128, 128).unwrap_err().to_string();
        assert!(err.contains("no entry for head dim 64") && err.contains("head dim 128, tiles 64x128"), "{err}");
        assert!(back.check_gpu(&path, "NVIDIA H200").is_ok());
        assert!(back.check_gpu(&path, "NVIDIA H100 80GB HBM3").unwrap_err().to_string().contains("calibrated on"));
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1);
        std::fs::write(&path, "{\"format\": \"dashc-costs\"}").unwrap();
        assert!(CostsFile::load(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
