//! CPU time of the client: the process's CPU time minus that of the in-process simulator's
//! thread, read from `/proc` (Linux). Elsewhere it reads 0 and the CPU check is skipped. Also
//! the process's CPUs, its peak memory, and `--poll-idle`.

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

/// Starts thread `name` with a current-thread runtime of its own (or why it could not be
/// built) and runs `body` on it with the thread's id: the in-process simulator, the network
/// proxy and each `--cpus` shard run so, each off the others' runtimes.
pub(super) fn spawn_with_runtime<R: Send + 'static>(
    name: String,
    body: impl FnOnce(std::io::Result<tokio::runtime::Runtime>, Option<ThreadId>) -> R + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<R>> {
    std::thread::Builder::new().name(name).spawn(move || {
        let tid = ThreadId::current();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        body(rt, tid)
    })
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

/// Keeps idle CPUs polling instead of sleeping while held: writes 0 to the kernel's PM QoS
/// interface, `/dev/cpu_dma_latency`, whose request lasts as long as the file stays open (what
/// cyclictest and tuned's latency-performance profile do). A CPU woken from a sleep state, or
/// on a VM from a halted vCPU, takes tens of microseconds to run the thread a timer or a packet
/// woke; that delay lands in send lag and TTFT.
#[derive(Debug)]
pub struct PollIdle {
    _request: fs::File,
}

impl PollIdle {
    /// Takes the request; fails without write access to `/dev/cpu_dma_latency` (root).
    pub fn hold() -> std::io::Result<PollIdle> {
        Self::hold_at(std::path::Path::new("/dev/cpu_dma_latency"))
    }

    fn hold_at(path: &std::path::Path) -> std::io::Result<PollIdle> {
        use std::io::Write;
        let mut file = fs::OpenOptions::new().write(true).open(path)?;
        // The interface takes a native-endian s32: the largest wake-up latency allowed, in µs.
        file.write_all(&0i32.to_ne_bytes())?;
        Ok(PollIdle { _request: file })
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

#[cfg(target_os = "linux")]
pub(super) fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for this process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect(),
        )
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn allowed_cpus() -> Option<Vec<usize>> {
    None
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

    #[test]
    fn poll_idle_writes_a_zero_latency_request_and_reports_failure() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cpu_dma_latency");
        std::fs::write(&file, b"").unwrap();
        let held = PollIdle::hold_at(&file).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), 0i32.to_ne_bytes());
        drop(held);
        assert!(PollIdle::hold_at(&dir.path().join("missing")).is_err());
    }
}
