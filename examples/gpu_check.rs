//! Prints every NVML reading infermeter's telemetry takes, for each GPU, or a clear line when
//! NVML is unavailable. Run with `scripts/gpu-check.sh`.

use infermeter_core::telemetry::{GpuDevice, open_nvml};

fn main() {
    let devices = match open_nvml(None) {
        Ok(d) => d,
        Err(reason) => {
            println!("no NVML: {reason} (no NVIDIA GPU or driver on this machine)");
            return;
        }
    };
    println!("NVML: {} device(s)", devices.len());
    for d in &devices {
        let r = d.read();
        println!("GPU {} — {}", d.id(), d.name());
        println!("  temperature_c        {:?}", r.temp_c);
        println!(
            "  sm_clock_mhz         {:?} / max {:?}",
            r.sm_clock_mhz, r.sm_clock_max_mhz
        );
        println!("  clock_ratio          {:?}", r.clock_ratio());
        println!(
            "  mem_clock_mhz        {:?} / max {:?}",
            r.mem_clock_mhz, r.mem_clock_max_mhz
        );
        println!("  throttle_reasons     {:?}", r.throttle_reasons);
        println!("  throttled            {}", r.is_throttled());
        println!("  power_w              {:?}", r.power_w);
        println!("  total_energy_mj      {:?}", r.energy_mj);
        println!(
            "  memory_mib           {:?} / {:?}",
            r.mem_used_mib, r.mem_total_mib
        );
        println!("  utilization_pct      {:?}", r.util_pct);
    }
}
