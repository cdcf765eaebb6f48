//! What the machine was doing around the client during a stage, read from Linux's `/proc`:
//! the time of the CPUs the client may run on (busy, stolen by the hypervisor), its threads'
//! involuntary context switches, and the run queue (`procs_running`). From these the lag's
//! cause is told apart (`metrics::lag_cause`). Elsewhere each reads as absent.

use std::fs;

use crate::metrics::HostLoad;

/// Clock ticks of the CPUs the client may use, summed over them (`/proc/stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq: running anything.
    pub busy: u64,
    /// Time the hypervisor ran something else while these CPUs wanted to run.
    pub steal: u64,
    pub total: u64,
    /// CPUs summed.
    pub cpus: u32,
}

impl CpuTimes {
    /// Now, for the CPUs in this process's affinity mask; `None` where `/proc/stat` or the
    /// mask cannot be read (not Linux).
    pub fn now() -> Option<CpuTimes> {
        let allowed = super::cpu::allowed_cpus()?;
        let stat = fs::read_to_string("/proc/stat").ok()?;
        Some(parse_cpu_times(&stat, |cpu| allowed.contains(&cpu)))
    }

    /// The share of time stolen between `earlier` and `self` (0..=1); `None` when no time
    /// passed.
    pub fn steal_share_since(&self, earlier: &CpuTimes) -> Option<f64> {
        self.share_since(earlier, |t| t.steal)
    }

    /// The share of time these CPUs were busy between `earlier` and `self` (0..=1).
    pub fn busy_share_since(&self, earlier: &CpuTimes) -> Option<f64> {
        self.share_since(earlier, |t| t.busy)
    }

    fn share_since(&self, earlier: &CpuTimes, part: impl Fn(&CpuTimes) -> u64) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total).filter(|t| *t > 0)?;
        let part = part(self).saturating_sub(part(earlier));
        Some((part as f64 / total as f64).min(1.0))
    }
}

/// Sums the `cpuN` lines of `/proc/stat` that `wanted` accepts.
fn parse_cpu_times(stat: &str, wanted: impl Fn(usize) -> bool) -> CpuTimes {
    let mut t = CpuTimes::default();
    for line in stat.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(cpu) = fields
            .next()
            .and_then(|f| f.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if !wanted(cpu) {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest time is already in user).
        let mut times = [0u64; 8];
        let mut n = 0;
        for (slot, f) in times.iter_mut().zip(fields) {
            match f.parse() {
                Ok(v) => {
                    *slot = v;
                    n += 1;
                }
                Err(_) => break,
            }
        }
        if n == 8 {
            let [user, nice, system, idle, iowait, irq, softirq, steal] = times;
            t.busy += user + nice + system + irq + softirq;
            t.steal += steal;
            t.total += user + nice + system + idle + iowait + irq + softirq + steal;
            t.cpus += 1;
        }
    }
    t
}

/// Tasks runnable now on the whole machine: the `procs_running` of `/proc/stat`, read from
/// the shorter `/proc/loadavg` (its fourth field, `running/total`).
pub fn running_tasks() -> Option<u32> {
    parse_running(&fs::read_to_string("/proc/loadavg").ok()?)
}

fn parse_running(loadavg: &str) -> Option<u32> {
    let field = loadavg.split_ascii_whitespace().nth(3)?;
    field.split_once('/')?.0.parse().ok()
}

/// Involuntary context switches of every thread of this process so far.
pub fn involuntary_switches() -> Option<u64> {
    let mut total = 0;
    let mut seen = false;
    for entry in fs::read_dir("/proc/self/task").ok()?.flatten() {
        // A thread that ended since the listing is simply not counted.
        if let Ok(status) = fs::read_to_string(entry.path().join("status"))
            && let Some(n) = parse_involuntary(&status)
        {
            total += n;
            seen = true;
        }
    }
    seen.then_some(total)
}

fn parse_involuntary(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()
}

/// The machine at one instant: the client's CPUs' times and its threads' switches.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostSample {
    pub cpus: Option<CpuTimes>,
    pub involuntary: Option<u64>,
}

impl HostSample {
    pub fn now() -> HostSample {
        HostSample {
            cpus: CpuTimes::now(),
            involuntary: involuntary_switches(),
        }
    }
}

/// The run queue sampled while a stage runs (a few times a second, from the collector).
#[derive(Debug, Clone, Copy, Default)]
pub struct RunQueueSamples {
    sum: u64,
    n: u64,
    max: u32,
}

impl RunQueueSamples {
    /// Adds a sample, when there is one.
    pub fn extend(&mut self, running: Option<u32>) {
        if let Some(n) = running {
            self.add(n);
        }
    }

    pub fn add(&mut self, running: u32) {
        self.sum += u64::from(running);
        self.n += 1;
        self.max = self.max.max(running);
    }

    /// Mean and most, when any sample was taken.
    pub fn summary(&self) -> Option<(f64, u32)> {
        (self.n > 0).then(|| (self.sum as f64 / self.n as f64, self.max))
    }
}

/// The stage's host load between two samples: `own_cpu_ns` of the client's CPU time over
/// `wall_ns`, the rest of the busy time being other processes'.
pub fn host_load(
    start: &HostSample,
    end: &HostSample,
    own_cpu_ns: u64,
    wall_ns: u64,
    run_queue: Option<(f64, u32)>,
) -> HostLoad {
    let cpus = start.cpus.zip(end.cpus);
    let busy_share = cpus.and_then(|(a, b)| b.busy_share_since(&a));
    let others_share = cpus.zip(busy_share).and_then(|((_, b), busy)| {
        let capacity = wall_ns as f64 * f64::from(b.cpus);
        (capacity > 0.0).then(|| (busy - own_cpu_ns as f64 / capacity).clamp(0.0, 1.0))
    });
    let secs = wall_ns as f64 / 1e9;
    let involuntary_per_s = start
        .involuntary
        .zip(end.involuntary)
        .filter(|_| secs > 0.0)
        .map(|(a, b)| b.saturating_sub(a) as f64 / secs);
    HostLoad {
        busy_share,
        others_share,
        involuntary_per_s,
        run_queue_mean: run_queue.map(|q| q.0),
        run_queue_max: run_queue.map(|q| q.1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  30 0 10 100 0 0 0 12 0 0
cpu0 10 0 5 50 0 0 0 2 0 0
cpu1 20 0 5 50 0 0 0 10 0 0
intr 12345
procs_running 3
";

    #[test]
    fn cpu_times_count_only_the_allowed_cpus() {
        let one = parse_cpu_times(STAT, |c| c == 1);
        assert_eq!(
            one,
            CpuTimes {
                busy: 25,
                steal: 10,
                total: 85,
                cpus: 1
            }
        );
        let both = parse_cpu_times(STAT, |_| true);
        assert_eq!(
            (both.busy, both.steal, both.total, both.cpus),
            (40, 12, 152, 2)
        );
        // Truncated or garbled lines are skipped, not half-counted.
        let torn = parse_cpu_times("cpu0 1 2 3\ncpu1 x 0 0 0 0 0 0 0\n", |_| true);
        assert_eq!(torn, CpuTimes::default());
    }

    #[test]
    fn shares_over_an_interval() {
        let a = CpuTimes {
            busy: 100,
            steal: 10,
            total: 1000,
            cpus: 2,
        };
        let b = CpuTimes {
            busy: 400,
            steal: 60,
            total: 1500,
            cpus: 2,
        };
        assert_eq!(b.steal_share_since(&a), Some(0.1));
        assert_eq!(b.busy_share_since(&a), Some(0.6));
        assert_eq!(a.busy_share_since(&a), None, "no time passed");
    }

    #[test]
    fn the_run_queue_and_switches_parse_from_their_files() {
        assert_eq!(parse_running("4.37 4.64 6.10 7/151 22634\n"), Some(7));
        assert_eq!(parse_running("4.37 4.64"), None);
        assert_eq!(parse_running("1 2 3 x/151 9"), None);
        let status = "Name:\tinfermeter\nvoluntary_ctxt_switches:\t150\n\
                      nonvoluntary_ctxt_switches:\t42\n";
        assert_eq!(parse_involuntary(status), Some(42));
        assert_eq!(parse_involuntary("Name:\tx\n"), None);
        let mut q = RunQueueSamples::default();
        assert_eq!(q.summary(), None);
        for n in [2, 4, 9] {
            q.add(n);
        }
        assert_eq!(q.summary(), Some((5.0, 9)));
    }

    #[test]
    fn others_are_the_busy_time_the_client_did_not_use() {
        let start = HostSample {
            cpus: Some(CpuTimes {
                busy: 0,
                steal: 0,
                total: 0,
                cpus: 2,
            }),
            involuntary: Some(10),
        };
        // Two seconds on two CPUs at 100 ticks a second: 400 ticks, 360 busy.
        let end = HostSample {
            cpus: Some(CpuTimes {
                busy: 360,
                steal: 0,
                total: 400,
                cpus: 2,
            }),
            involuntary: Some(810),
        };
        // The client itself used half a core: a quarter of the two CPUs' time.
        let load = host_load(&start, &end, 1_000_000_000, 2_000_000_000, Some((6.0, 9)));
        assert_eq!(load.busy_share, Some(0.9));
        assert!((load.others_share.unwrap() - 0.65).abs() < 1e-9, "{load:?}");
        assert_eq!(load.involuntary_per_s, Some(400.0));
        assert_eq!(load.run_queue_mean, Some(6.0));
        // Nothing read, nothing said.
        let blind = host_load(&HostSample::default(), &HostSample::default(), 1, 2, None);
        assert_eq!(blind, HostLoad::default());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn reads_this_machine() {
        let t = CpuTimes::now().expect("linux has /proc/stat");
        assert!(t.total > 0 && t.busy <= t.total && t.cpus >= 1);
        assert!(running_tasks().is_some());
        assert!(involuntary_switches().is_some());
    }
}
