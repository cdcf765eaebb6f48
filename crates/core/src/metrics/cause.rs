//! Why a client fell behind its schedule, told apart from what the machine reported during the
//! stage ([`HostLoad`], read from Linux's `/proc` by the runner): the client at the end of its
//! own capacity, other processes contending for its CPUs, the hypervisor stealing their time,
//! or idle CPUs slow to wake. One cause is named, with the fix that fits it ([`LagCause`]).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the client's CPUs were doing during a stage. Each figure is `None` where it could not
/// be read (not Linux).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HostLoad {
    /// Share of the time of the CPUs the client may run on that went to running anything
    /// (user, system, interrupts), 0..=1.
    pub busy_share: Option<f64>,
    /// Share of the time of those CPUs that went to other processes: `busy_share` less the
    /// client's own CPU time.
    pub others_share: Option<f64>,
    /// Times a thread of the client was descheduled against its will, per second.
    pub involuntary_per_s: Option<f64>,
    /// Tasks runnable on the machine (`procs_running`), over the stage's samples.
    pub run_queue_mean: Option<f64>,
    pub run_queue_max: Option<u32>,
}

/// What the cause is decided from, besides the host's load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagInputs {
    pub host: HostLoad,
    /// The client's own CPU time over the stage's wall time, in cores (1.5 = one and a half).
    pub own_cores: f64,
    /// Cores the client may use.
    pub cores: u32,
    /// Share of the client's CPUs' time the hypervisor stole, where known.
    pub steal_share: Option<f64>,
    /// Above this, steal is a cause.
    pub max_steal_share: f64,
    pub send_lag_p99_ms: f64,
    /// Idle CPUs were kept polling (`--poll-idle`).
    pub poll_idle: bool,
}

/// The client uses this share of its cores or more: it is at the end of its capacity.
pub const CAPACITY_SHARE: f64 = 0.8;
/// Other processes take this share of the client's CPUs' time or more: contention.
pub const CONTENTION_SHARE: f64 = 0.25;
/// The longest send lag (p99) waking an idle CPU can explain: leaving a sleep state, or a
/// halted vCPU being run again, takes tens to hundreds of microseconds, not milliseconds.
pub const WAKE_UP_MAX_MS: f64 = 2.0;
/// Machines busier than this share are not idle enough for wake-up latency to be the cause.
pub const IDLE_BUSY_SHARE: f64 = 0.5;

/// Why the client fell behind its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LagCause {
    /// The client itself used nearly all of its cores.
    Capacity { cpu_percent: f64, cores: u32 },
    /// Other processes ran on the client's CPUs.
    Contention {
        others_percent: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_queue: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        involuntary_per_s: Option<f64>,
    },
    /// The hypervisor ran something else on the client's CPUs.
    Steal { percent: f64 },
    /// The CPUs were mostly idle, and an idle CPU is slow to wake.
    WakeUp,
    /// None of these was measured (not Linux), or none applies.
    Unknown {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        busy_percent: Option<f64>,
    },
}

/// The one cause that applies, checked in this order: the client's own capacity (then nothing
/// else could have had the CPUs), other processes, the hypervisor, idle CPUs waking.
pub fn lag_cause(i: &LagInputs) -> LagCause {
    let cores = f64::from(i.cores.max(1));
    if i.own_cores >= CAPACITY_SHARE * cores {
        return LagCause::Capacity {
            cpu_percent: i.own_cores * 100.0,
            cores: i.cores,
        };
    }
    let h = i.host;
    let crowded = h
        .run_queue_mean
        .is_some_and(|q| q > cores + i.own_cores.ceil());
    if let Some(others) = h.others_share
        && (others >= CONTENTION_SHARE || crowded)
    {
        return LagCause::Contention {
            others_percent: others * 100.0,
            run_queue: h.run_queue_mean,
            involuntary_per_s: h.involuntary_per_s,
        };
    }
    if let Some(steal) = i.steal_share.filter(|s| *s > i.max_steal_share) {
        return LagCause::Steal {
            percent: steal * 100.0,
        };
    }
    let idle = h.busy_share.is_none_or(|b| b < IDLE_BUSY_SHARE);
    if !i.poll_idle && idle && i.send_lag_p99_ms <= WAKE_UP_MAX_MS {
        return LagCause::WakeUp;
    }
    LagCause::Unknown {
        busy_percent: h.busy_share.map(|b| b * 100.0),
    }
}

impl LagCause {
    /// Its name in `results.json`.
    pub fn name(&self) -> &'static str {
        match self {
            LagCause::Capacity { .. } => "capacity",
            LagCause::Contention { .. } => "contention",
            LagCause::Steal { .. } => "steal",
            LagCause::WakeUp => "wake_up",
            LagCause::Unknown { .. } => "unknown",
        }
    }
}

/// The cause and the fix that fits it.
impl fmt::Display for LagCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LagCause::Capacity { cpu_percent, cores } => write!(
                f,
                "the client was at the end of its capacity (it used {cpu_percent:.0}% of its \
                 {}): give it more CPUs (`--cpus`) or split the load over shards \
                 (`--shard`)",
                crate::units::counted(*cores, "core", "cores")
            ),
            LagCause::Contention {
                others_percent,
                run_queue,
                involuntary_per_s,
            } => {
                let mut seen = Vec::new();
                if let Some(q) = run_queue {
                    seen.push(format!("{q:.1} tasks runnable on average"));
                }
                if let Some(n) = involuntary_per_s {
                    seen.push(format!("its threads preempted {n:.0} times a second"));
                }
                let seen = if seen.is_empty() {
                    String::new()
                } else {
                    format!(", {}", seen.join(", "))
                };
                write!(
                    f,
                    "CPU contention: other processes used {others_percent:.0}% of the client's \
                     CPUs{seen}; stop them, lower their priority (`nice -n 19 …`), or keep \
                     them off the client's CPUs (pin the server elsewhere and give the client \
                     its own with `--cpus`)"
                )
            }
            LagCause::Steal { percent } => write!(
                f,
                "the hypervisor stole {percent:.1}% of the client's CPU time: use a dedicated \
                 host"
            ),
            LagCause::WakeUp => f.write_str(
                "the client's CPUs were mostly idle, and idle CPUs sleep between sends; as root, \
                 --poll-idle keeps them polling",
            ),
            LagCause::Unknown { busy_percent } => match busy_percent {
                Some(b) => write!(
                    f,
                    "no cause was measured (the client's CPUs were {b:.0}% busy, none of it \
                     enough to explain the lag); look for what else stalls the machine"
                ),
                None => f.write_str(
                    "the cause could not be measured on this system (no /proc); look for \
                     other load on the machine",
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> LagInputs {
        LagInputs {
            host: HostLoad {
                busy_share: Some(0.1),
                others_share: Some(0.02),
                involuntary_per_s: Some(3.0),
                run_queue_mean: Some(1.2),
                run_queue_max: Some(3),
            },
            own_cores: 0.08,
            cores: 2,
            steal_share: Some(0.0),
            max_steal_share: 0.01,
            send_lag_p99_ms: 1.4,
            poll_idle: false,
        }
    }

    #[test]
    fn one_core_is_one_core() {
        let one = LagCause::Capacity {
            cpu_percent: 98.0,
            cores: 1,
        };
        assert!(one.to_string().contains("of its 1 core)"), "{one}");
        let two = LagCause::Capacity {
            cpu_percent: 198.0,
            cores: 2,
        };
        assert!(two.to_string().contains("of its 2 cores)"), "{two}");
    }

    #[test]
    fn a_quiet_machine_with_a_small_lag_is_waking_idle_cpus() {
        assert_eq!(lag_cause(&inputs()), LagCause::WakeUp);
        assert!(lag_cause(&inputs()).to_string().contains("--poll-idle"));
        // Kept polling, the wake-up is not the cause.
        let polled = LagInputs {
            poll_idle: true,
            ..inputs()
        };
        assert!(matches!(lag_cause(&polled), LagCause::Unknown { .. }));
    }

    /// The machine: 190 ms lags with other builds running were blamed on sleeping
    /// CPUs.
    #[test]
    fn a_long_lag_on_a_busy_machine_is_contention_not_wake_up() {
        let busy = LagInputs {
            host: HostLoad {
                busy_share: Some(0.97),
                others_share: Some(0.85),
                involuntary_per_s: Some(420.0),
                run_queue_mean: Some(6.5),
                run_queue_max: Some(11),
            },
            send_lag_p99_ms: 190.0,
            ..inputs()
        };
        let cause = lag_cause(&busy);
        assert!(matches!(cause, LagCause::Contention { .. }), "{cause:?}");
        let text = cause.to_string();
        assert!(text.contains("85%") && text.contains("nice"), "{text}");
        assert!(!text.contains("--poll-idle"), "{text}");
        // A long queue alone says so too, when the others' share is lower.
        let queued = LagInputs {
            host: HostLoad {
                others_share: Some(0.15),
                run_queue_mean: Some(5.0),
                ..busy.host
            },
            ..busy
        };
        assert!(matches!(lag_cause(&queued), LagCause::Contention { .. }));
    }

    #[test]
    fn steal_capacity_and_the_unknown_are_told_apart() {
        let stolen = LagInputs {
            steal_share: Some(0.06),
            send_lag_p99_ms: 12.0,
            ..inputs()
        };
        assert_eq!(lag_cause(&stolen), LagCause::Steal { percent: 6.0 });
        assert!(lag_cause(&stolen).to_string().contains("dedicated host"));
        let full = LagInputs {
            own_cores: 1.9,
            ..stolen
        };
        let cause = lag_cause(&full);
        assert!(
            matches!(cause, LagCause::Capacity { cores: 2, .. }),
            "{cause:?}"
        );
        assert!(cause.to_string().contains("--cpus"));
        // A long lag on an otherwise quiet machine: no cause measured, and none invented.
        let odd = LagInputs {
            send_lag_p99_ms: 40.0,
            ..inputs()
        };
        assert!(matches!(lag_cause(&odd), LagCause::Unknown { .. }));
        // Without /proc nothing is known but the lag: a small one may still be a wake-up.
        let blind = LagInputs {
            host: HostLoad::default(),
            steal_share: None,
            send_lag_p99_ms: 30.0,
            ..inputs()
        };
        assert!(lag_cause(&blind).to_string().contains("no /proc"));
    }
}
