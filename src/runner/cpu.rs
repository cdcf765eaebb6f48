//! CPU time of the client: the process's CPU time minus that of the in-process simulator's
//! thread, read from `/proc` (Linux). Elsewhere it reads 0 and the CPU check is skipped.

use std::fs;

/// Clock ticks per second of `/proc/*/stat` times. 100 on every Linux platform Rust targets.
const TICKS_PER_SEC: u64 = 100;

/// `utime + stime` in nanoseconds from a `/proc/.../stat` line.
fn stat_cpu_ns(path: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    // The command name (field 2) may contain spaces; fields after it are space-separated.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    // Field 3 is `state`; utime and stime are fields 14 and 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) * (1_000_000_000 / TICKS_PER_SEC))
}

/// Identifies a thread whose CPU time is not the client's (the in-process simulator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadId(u32);

impl ThreadId {
    /// The calling thread's id, on Linux.
    pub fn current() -> Option<ThreadId> {
        let link = fs::read_link("/proc/thread-self").ok()?;
        link.file_name()?.to_str()?.parse().ok().map(ThreadId)
    }
}

/// Reads the client's CPU time.
#[derive(Debug, Clone, Default)]
pub struct CpuClock {
    excluded: Vec<ThreadId>,
}

impl CpuClock {
    pub fn new(excluded: Vec<ThreadId>) -> Self {
        CpuClock { excluded }
    }

    /// Client CPU time so far in nanoseconds (0 where `/proc` is unavailable).
    pub fn now_ns(&self) -> u64 {
        let total = stat_cpu_ns("/proc/self/stat").unwrap_or(0);
        let excluded: u64 = self
            .excluded
            .iter()
            .filter_map(|t| stat_cpu_ns(&format!("/proc/self/task/{}/stat", t.0)))
            .sum();
        total.saturating_sub(excluded)
    }
}

/// Peak resident set size of this process in bytes (`VmHWM`), 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    let Ok(status) = fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn reads_growing_cpu_time() {
        let clock = CpuClock::default();
        let before = clock.now_ns();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed().as_millis() < 100 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(clock.now_ns() > before);
        assert!(ThreadId::current().is_some());
        assert!(peak_rss_bytes() > 1024 * 1024);
    }
}
