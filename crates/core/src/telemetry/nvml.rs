//! The real [`GpuDevice`]: NVML through `nvml-wrapper`, which loads `libnvidia-ml.so.1` at run
//! time, so the binary builds and runs on machines without a GPU (opening then fails fast).
//! Built with the `nvml` feature (on by default); without it an `nvml` source is refused when
//! the sampler opens it, as on a machine without the driver.

#[cfg(feature = "nvml")]
pub use real::{NvmlGpu, open_nvml};
#[cfg(not(feature = "nvml"))]
pub use unbuilt::{NvmlGpu, open_nvml};

/// Why NVML's GPUs could not be opened; shown as a lowercase fragment saying what is
/// missing.
#[derive(Debug, thiserror::Error)]
pub enum GpuOpenError {
    #[error("NVML could not be initialised ({0})")]
    Init(String),
    #[error("NVML could not count devices ({0})")]
    Count(String),
    #[error("NVML found no GPU")]
    NoGpu,
    #[error("GPU index {index} does not exist (NVML found {count} device(s): 0..{})", count - 1)]
    NoSuchIndex { index: u32, count: u32 },
    #[error("GPU {index} could not be opened ({error})")]
    Open { index: u32, error: String },
    #[error("this build of infermeter has no NVML support (built without the `nvml` feature)")]
    NotBuilt,
}

#[cfg(feature = "nvml")]
mod real {
    use std::sync::Arc;

    use nvml_wrapper::Nvml;
    use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

    use super::GpuOpenError;
    use crate::telemetry::gpu::{DeviceError, GpuDevice, throttle_reason_names};

    /// One NVML device. Holds the library handle and looks the device up per call (a cheap
    /// handle lookup) because `nvml_wrapper::Device` borrows the `Nvml` it came from.
    pub struct NvmlGpu {
        nvml: Arc<Nvml>,
        index: u32,
        name: String,
    }

    /// Opens NVML and the selected devices (all when `devices` is `None`).
    pub fn open_nvml(devices: Option<&[u32]>) -> Result<Vec<NvmlGpu>, GpuOpenError> {
        let nvml = Nvml::init().map_err(|e| GpuOpenError::Init(e.to_string()))?;
        let nvml = Arc::new(nvml);
        let count = nvml
            .device_count()
            .map_err(|e| GpuOpenError::Count(e.to_string()))?;
        if count == 0 {
            return Err(GpuOpenError::NoGpu);
        }
        let indices: Vec<u32> = match devices {
            Some(list) => list.to_vec(),
            None => (0..count).collect(),
        };
        let mut out = Vec::with_capacity(indices.len());
        for index in indices {
            if index >= count {
                return Err(GpuOpenError::NoSuchIndex { index, count });
            }
            let dev = nvml
                .device_by_index(index)
                .map_err(|e| GpuOpenError::Open {
                    index,
                    error: e.to_string(),
                })?;
            let name = dev.name().unwrap_or_else(|_| format!("GPU {index}"));
            out.push(NvmlGpu {
                nvml: Arc::clone(&nvml),
                index,
                name,
            });
        }
        Ok(out)
    }

    impl NvmlGpu {
        fn with<T>(
            &self,
            f: impl FnOnce(&nvml_wrapper::Device<'_>) -> Result<T, nvml_wrapper::error::NvmlError>,
        ) -> Result<T, DeviceError> {
            let dev = self
                .nvml
                .device_by_index(self.index)
                .map_err(|e| DeviceError(e.to_string()))?;
            f(&dev).map_err(|e| DeviceError(e.to_string()))
        }
    }

    impl GpuDevice for NvmlGpu {
        fn id(&self) -> String {
            self.index.to_string()
        }
        fn name(&self) -> String {
            self.name.clone()
        }
        fn temperature_c(&self) -> Result<f64, DeviceError> {
            self.with(|d| d.temperature(TemperatureSensor::Gpu).map(f64::from))
        }
        fn sm_clock_mhz(&self) -> Result<f64, DeviceError> {
            self.with(|d| d.clock_info(Clock::SM).map(f64::from))
        }
        fn max_sm_clock_mhz(&self) -> Result<f64, DeviceError> {
            self.with(|d| d.max_clock_info(Clock::SM).map(f64::from))
        }
        fn mem_clock_mhz(&self) -> Result<f64, DeviceError> {
            self.with(|d| d.clock_info(Clock::Memory).map(f64::from))
        }
        fn max_mem_clock_mhz(&self) -> Result<f64, DeviceError> {
            self.with(|d| d.max_clock_info(Clock::Memory).map(f64::from))
        }
        fn throttle_reasons(&self) -> Result<Vec<String>, DeviceError> {
            self.with(|d| {
                d.current_throttle_reasons()
                    .map(|r| throttle_reason_names(r.bits()))
            })
        }
        fn power_w(&self) -> Result<f64, DeviceError> {
            // NVML reports milliwatts.
            self.with(|d| d.power_usage().map(|mw| f64::from(mw) / 1000.0))
        }
        fn total_energy_mj(&self) -> Result<u64, DeviceError> {
            self.with(|d| d.total_energy_consumption())
        }
        fn memory_mib(&self) -> Result<(f64, f64), DeviceError> {
            const MIB: f64 = 1024.0 * 1024.0;
            self.with(|d| {
                d.memory_info()
                    .map(|m| (m.used as f64 / MIB, m.total as f64 / MIB))
            })
        }
        fn utilization_pct(&self) -> Result<f64, DeviceError> {
            self.with(|d| d.utilization_rates().map(|u| f64::from(u.gpu)))
        }
    }
}

#[cfg(not(feature = "nvml"))]
mod unbuilt {
    use super::GpuOpenError;
    use crate::telemetry::gpu::{DeviceError, GpuDevice};

    /// No NVML device can exist in a build without the `nvml` feature.
    pub enum NvmlGpu {}

    /// Always [`GpuOpenError::NotBuilt`].
    pub fn open_nvml(_devices: Option<&[u32]>) -> Result<Vec<NvmlGpu>, GpuOpenError> {
        Err(GpuOpenError::NotBuilt)
    }

    impl GpuDevice for NvmlGpu {
        fn id(&self) -> String {
            match *self {}
        }
        fn name(&self) -> String {
            match *self {}
        }
        fn temperature_c(&self) -> Result<f64, DeviceError> {
            match *self {}
        }
        fn sm_clock_mhz(&self) -> Result<f64, DeviceError> {
            match *self {}
        }
        fn max_sm_clock_mhz(&self) -> Result<f64, DeviceError> {
            match *self {}
        }
        fn mem_clock_mhz(&self) -> Result<f64, DeviceError> {
            match *self {}
        }
        fn max_mem_clock_mhz(&self) -> Result<f64, DeviceError> {
            match *self {}
        }
        fn throttle_reasons(&self) -> Result<Vec<String>, DeviceError> {
            match *self {}
        }
        fn power_w(&self) -> Result<f64, DeviceError> {
            match *self {}
        }
        fn total_energy_mj(&self) -> Result<u64, DeviceError> {
            match *self {}
        }
        fn memory_mib(&self) -> Result<(f64, f64), DeviceError> {
            match *self {}
        }
        fn utilization_pct(&self) -> Result<f64, DeviceError> {
            match *self {}
        }
    }
}
