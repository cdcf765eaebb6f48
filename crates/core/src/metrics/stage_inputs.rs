//! What the runner gives a stage's aggregator besides the records: the objectives that
//! define goodput, and the stage's clock and the client's own figures.

use super::summary::LoopDelay;

/// Per-request service-level objectives that define goodput. A request is "good" when it
/// succeeded and met every objective that is set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GoodputSlo {
    pub ttft_ns: Option<u64>,
    pub tpot_ns: Option<u64>,
    /// Applies to the request's largest inter-token gap.
    pub itl_ns: Option<u64>,
    pub e2e_ns: Option<u64>,
}

/// What the runner knows about the stage besides the records.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageClock {
    /// From the stage start to the last response (or the end of draining).
    pub wall_ns: u64,
    /// The planned sending span of an open-loop stage (last scheduled offset).
    pub planned_span_ns: Option<u64>,
    /// Process CPU time used during the stage.
    pub cpu_ns: u64,
    pub cores: u32,
    /// Peak resident memory of the client process at the stage's end, in bytes.
    pub peak_rss_bytes: u64,
    /// Share of the client's CPUs' time the hypervisor stole during the stage, where known.
    pub steal_share: Option<f64>,
    /// Idle CPUs were kept polling during the stage (`--poll-idle`).
    pub poll_idle: bool,
    /// What the client's CPUs were doing during the stage (Linux).
    pub host: super::HostLoad,
    /// How late the client's loop woke for its probe timer during the stage, where measured.
    pub loop_delay: Option<LoopDelay>,
    /// A closed loop's clients' idle and total time between their first and last sends, in
    /// ns, summed over clients (see `ClientHealth::closed_loop_idle_percent`).
    pub closed_idle: Option<(u64, u64)>,
}
