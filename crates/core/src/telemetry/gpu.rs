//! The GPU device abstraction: one reading of one GPU ([`GpuReading`]), the [`GpuDevice`] trait
//! that NVML implements (and a scriptable [`FakeGpu`] for tests), and the throttle-reason bit
//! names shared by NVML and dcgm-exporter (both report NVML's `nvmlClocksThrottleReason*` mask).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Below this SM-clock / max-SM-clock ratio a busy GPU counts as throttled.
pub const THROTTLE_CLOCK_RATIO: f64 = 0.9;

/// A device query failed (unsupported on this GPU, driver error…); the field is left empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DeviceError(pub String);

/// One GPU as a sampler reads it. Each query may fail independently (e.g. the energy counter
/// exists only on Volta and newer), so a failed query leaves its field empty rather than
/// losing the whole sample. Calls may block (NVML): call them off the async runtime.
pub trait GpuDevice {
    /// Stable identifier within its source: the NVML index, or dcgm's `gpu` label.
    fn id(&self) -> String;
    fn name(&self) -> String;
    fn temperature_c(&self) -> Result<f64, DeviceError>;
    fn sm_clock_mhz(&self) -> Result<f64, DeviceError>;
    fn max_sm_clock_mhz(&self) -> Result<f64, DeviceError>;
    fn mem_clock_mhz(&self) -> Result<f64, DeviceError>;
    fn max_mem_clock_mhz(&self) -> Result<f64, DeviceError>;
    /// Active throttle reasons as names (see [`throttle_reason_names`]); empty when none.
    fn throttle_reasons(&self) -> Result<Vec<String>, DeviceError>;
    fn power_w(&self) -> Result<f64, DeviceError>;
    /// Energy consumed since the driver was loaded, in millijoules (monotonic until reset).
    fn total_energy_mj(&self) -> Result<u64, DeviceError>;
    /// `(used, total)` frame-buffer memory in MiB.
    fn memory_mib(&self) -> Result<(f64, f64), DeviceError>;
    fn utilization_pct(&self) -> Result<f64, DeviceError>;

    /// Every query once; failures leave `None`.
    fn read(&self) -> GpuReading {
        let mem = self.memory_mib().ok();
        GpuReading {
            temp_c: self.temperature_c().ok(),
            sm_clock_mhz: self.sm_clock_mhz().ok(),
            sm_clock_max_mhz: self.max_sm_clock_mhz().ok(),
            mem_clock_mhz: self.mem_clock_mhz().ok(),
            mem_clock_max_mhz: self.max_mem_clock_mhz().ok(),
            throttle_reasons: self.throttle_reasons().ok(),
            power_w: self.power_w().ok(),
            energy_mj: self.total_energy_mj().ok(),
            mem_used_mib: mem.map(|m| m.0),
            mem_total_mib: mem.map(|m| m.1),
            util_pct: self.utilization_pct().ok(),
        }
    }
}

/// One reading of one GPU, from NVML or dcgm-exporter. `None` = not available from the source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuReading {
    pub temp_c: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    pub sm_clock_max_mhz: Option<f64>,
    pub mem_clock_mhz: Option<f64>,
    pub mem_clock_max_mhz: Option<f64>,
    /// `None` when the source cannot tell; `Some([])` when no reason is active.
    pub throttle_reasons: Option<Vec<String>>,
    pub power_w: Option<f64>,
    /// Total-energy counter in millijoules.
    pub energy_mj: Option<u64>,
    pub mem_used_mib: Option<f64>,
    pub mem_total_mib: Option<f64>,
    pub util_pct: Option<f64>,
}

impl GpuReading {
    /// SM clock / max SM clock, when both are known and the max is positive.
    pub fn clock_ratio(&self) -> Option<f64> {
        match (self.sm_clock_mhz, self.sm_clock_max_mhz) {
            (Some(c), Some(m)) if m > 0.0 => Some(c / m),
            _ => None,
        }
    }

    /// Throttle reasons that limit a working GPU: everything but `gpu_idle` (and `none`).
    pub fn limiting_reasons(&self) -> Vec<String> {
        self.throttle_reasons
            .iter()
            .flatten()
            .filter(|r| !is_benign_reason(r))
            .cloned()
            .collect()
    }

    /// Throttled: a limiting reason is set, or the clock ratio is below
    /// [`THROTTLE_CLOCK_RATIO`] while the GPU is not idle. An idle GPU drops its clocks by
    /// design (the driver reports `gpu_idle`), which is not a slowdown of the benchmark.
    pub fn is_throttled(&self) -> bool {
        if !self.limiting_reasons().is_empty() {
            return true;
        }
        let idle = self
            .throttle_reasons
            .iter()
            .flatten()
            .any(|r| r == "gpu_idle");
        !idle && self.clock_ratio().is_some_and(|r| r < THROTTLE_CLOCK_RATIO)
    }
}

fn is_benign_reason(r: &str) -> bool {
    r == "gpu_idle" || r == "none"
}

/// NVML's `nvmlClocksThrottleReason*` bits (also `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`).
const THROTTLE_BITS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// Names of the set bits of a throttle-reason mask; unknown bits become `bit_0x…`.
pub fn throttle_reason_names(mask: u64) -> Vec<String> {
    let mut names: Vec<String> = THROTTLE_BITS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, n)| (*n).to_string())
        .collect();
    let known: u64 = THROTTLE_BITS.iter().map(|(b, _)| b).fold(0, |a, b| a | b);
    let unknown = mask & !known;
    for i in 0..64 {
        let bit = 1u64 << i;
        if unknown & bit != 0 {
            names.push(format!("bit_{bit:#x}"));
        }
    }
    names
}

/// A scripted GPU for tests: each [`GpuDevice::read`] pops the next queued reading (the last
/// one repeats). Share the queue through [`FakeGpu::feeder`] to add readings mid-run.
#[derive(Debug, Clone)]
pub struct FakeGpu {
    id: String,
    queue: Arc<Mutex<VecDeque<GpuReading>>>,
    last: Arc<Mutex<GpuReading>>,
}

impl FakeGpu {
    pub fn new(id: &str, readings: Vec<GpuReading>) -> Self {
        FakeGpu {
            id: id.to_string(),
            queue: Arc::new(Mutex::new(readings.into())),
            last: Arc::new(Mutex::new(GpuReading::default())),
        }
    }

    /// A handle that appends readings to this fake's queue.
    pub fn feeder(&self) -> Arc<Mutex<VecDeque<GpuReading>>> {
        Arc::clone(&self.queue)
    }

    fn current(&self) -> GpuReading {
        self.last.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

fn missing<T>(v: Option<T>, what: &str) -> Result<T, DeviceError> {
    v.ok_or_else(|| DeviceError(format!("{what} not supported by the fake")))
}

impl GpuDevice for FakeGpu {
    fn id(&self) -> String {
        self.id.clone()
    }
    fn name(&self) -> String {
        "Fake GPU".into()
    }
    fn temperature_c(&self) -> Result<f64, DeviceError> {
        missing(self.current().temp_c, "temperature")
    }
    fn sm_clock_mhz(&self) -> Result<f64, DeviceError> {
        missing(self.current().sm_clock_mhz, "sm clock")
    }
    fn max_sm_clock_mhz(&self) -> Result<f64, DeviceError> {
        missing(self.current().sm_clock_max_mhz, "max sm clock")
    }
    fn mem_clock_mhz(&self) -> Result<f64, DeviceError> {
        missing(self.current().mem_clock_mhz, "mem clock")
    }
    fn max_mem_clock_mhz(&self) -> Result<f64, DeviceError> {
        missing(self.current().mem_clock_max_mhz, "max mem clock")
    }
    fn throttle_reasons(&self) -> Result<Vec<String>, DeviceError> {
        missing(self.current().throttle_reasons, "throttle reasons")
    }
    fn power_w(&self) -> Result<f64, DeviceError> {
        missing(self.current().power_w, "power")
    }
    fn total_energy_mj(&self) -> Result<u64, DeviceError> {
        missing(self.current().energy_mj, "energy")
    }
    fn memory_mib(&self) -> Result<(f64, f64), DeviceError> {
        let c = self.current();
        missing(c.mem_used_mib.zip(c.mem_total_mib), "memory")
    }
    fn utilization_pct(&self) -> Result<f64, DeviceError> {
        missing(self.current().util_pct, "utilization")
    }

    fn read(&self) -> GpuReading {
        // Advance the script once per read, then answer every query from that reading.
        if let (Ok(mut q), Ok(mut last)) = (self.queue.lock(), self.last.lock())
            && let Some(next) = q.pop_front()
        {
            *last = next;
        }
        self.current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(clock: f64, reasons: &[&str]) -> GpuReading {
        GpuReading {
            sm_clock_mhz: Some(clock),
            sm_clock_max_mhz: Some(2000.0),
            throttle_reasons: Some(reasons.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn throttling_from_clock_ratio_and_reasons() {
        assert!(!reading(1980.0, &[]).is_throttled());
        assert!(reading(1700.0, &[]).is_throttled(), "ratio 0.85 < 0.9");
        assert!(reading(1980.0, &["sw_power_cap"]).is_throttled());
        assert!(
            !reading(300.0, &["gpu_idle"]).is_throttled(),
            "idle downclock"
        );
        assert!(reading(300.0, &["gpu_idle", "hw_slowdown"]).is_throttled());
        assert_eq!(reading(1000.0, &[]).clock_ratio(), Some(0.5));
        let unknown = GpuReading {
            sm_clock_mhz: Some(1000.0),
            ..Default::default()
        };
        assert_eq!(unknown.clock_ratio(), None);
        assert!(!unknown.is_throttled());
    }

    #[test]
    fn throttle_masks_decode_to_names() {
        assert!(throttle_reason_names(0).is_empty());
        assert_eq!(throttle_reason_names(0x1), vec!["gpu_idle"]);
        assert_eq!(
            throttle_reason_names(0x4 | 0x40),
            vec!["sw_power_cap", "hw_thermal_slowdown"]
        );
        assert_eq!(throttle_reason_names(0x1000), vec!["bit_0x1000"]);
    }

    #[test]
    fn fake_advances_once_per_read_and_repeats_the_last() {
        let f = FakeGpu::new("0", vec![reading(1000.0, &[]), reading(1500.0, &[])]);
        assert_eq!(f.read().sm_clock_mhz, Some(1000.0));
        assert_eq!(f.read().sm_clock_mhz, Some(1500.0));
        assert_eq!(f.read().sm_clock_mhz, Some(1500.0));
        assert_eq!(f.read().power_w, None);
    }
}
