//! What the caller tells the runner beyond the plan: where files resolve, what to watch, how to
//! stop, and the [`Observer`] that hears about progress (the runner prints nothing itself).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::metrics::{StageSummary, ValidityRules};
use crate::sla::Abort;

/// Judges a stage while it runs, from its summary so far (about once a second, on the stage's
/// collector thread, never on a request's path): the caller's `abort-on-fail` assertions, with
/// their minimum sample count and grace period, and whether an `until-decided` stage's
/// assertions are decided (asked once the stage has sent its minimum: the summary then has
/// its `until_decided` record and histograms).
pub type LiveCheck = Arc<dyn Fn(&StageSummary) -> LiveJudgement + Send + Sync>;

/// What a live check says of a running stage.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveJudgement {
    /// An assertion failed: the stage stops sending, what is in flight is cancelled after the
    /// interrupt grace, and the run ends as aborted.
    pub abort: Option<Abort>,
    /// Every assertion holding an `until-decided` stage open is decided: it stops sending,
    /// drains what is in flight (for its drain timeout), and the run goes on.
    pub decided: bool,
    /// On an `until-decided` stage: the verdict of each assertion holding it open, as the
    /// look judged it (the complete prefix's at the stop are kept in `results.json`).
    pub verdicts: Vec<crate::metrics::LookVerdict>,
}

/// How to run, beyond what the plan says.
pub struct RunOptions {
    /// The scenario's directory: data set and tokenizer paths resolve against it.
    pub base_dir: PathBuf,
    /// Told when each stage starts and how it progresses.
    pub observer: Arc<dyn Observer>,
    /// Write one JSON row per request here.
    pub requests_jsonl: Option<PathBuf>,
    /// Write one JSON row per judged answer here (`answers.jsonl`, a data set with a
    /// `quality` block).
    pub answers_jsonl: Option<PathBuf>,
    /// A baseline run's answers by prompt: each judged answer is marked identical to the
    /// baseline's or not (`agreement`), where the baseline answered the same prompt.
    pub agree_with: Option<std::sync::Arc<crate::metrics::AnswerIndex>>,
    pub validity: ValidityRules,
    /// Cancelled on Ctrl-C or a signal: stop sending, give in-flight requests
    /// `interrupt_grace`, then stop.
    pub interrupt: CancellationToken,
    pub interrupt_grace: Duration,
    /// Idle CPUs were kept polling for the run (`--poll-idle`, held by the caller); recorded
    /// in every stage's client health.
    pub poll_idle: bool,
    /// A shard of a distributed run: where it agrees with the others when each step starts.
    pub barrier: Option<Arc<dyn super::Barrier>>,
    /// A run whose stages name server configurations: what restarts the server between them.
    pub server_switch: Option<Arc<dyn super::ServerSwitch>>,
    /// Dispatchers per open-loop stage, each following an interleaved slice of its schedule
    /// (`--cpus`: one per CPU); 0 or 1 is one.
    pub dispatchers: usize,
    /// `--cpus N` with N > 1: the run's shards, one per CPU, each a pinned thread with a
    /// runtime of its own; each open- or closed-loop stage is sent by all of them, each with
    /// its own dispatcher, pools and counters (see `Shards`). `None`: stages are sent on the
    /// caller's runtime (by `dispatchers` dispatchers).
    pub shards: Option<Arc<super::shards::Shards>>,
    /// Checked while each measured stage runs (not the warm-up, not search probes).
    pub live_check: Option<LiveCheck>,
    /// For tests only: every open-loop request is held this long past its scheduled instant
    /// before it is sent, as a starved client would hold it, so that a test can make a
    /// stage's client untrusted on any machine; a closed loop's client waits that long
    /// between reading an answer and preparing its next request (a stalled client, idle).
    /// Zero (the default) in every real run; the
    /// CLI sets it from `INFERMETER_TEST_SEND_LAG_MS` in debug builds only.
    pub test_send_lag: Duration,
    /// For tests only: the share of the client's CPU time the hypervisor is taken to have
    /// stolen during every stage, in place of what `/proc/stat` says, so that a test can
    /// flag steal on any machine. `None` in every real run; the CLI sets it from
    /// `INFERMETER_TEST_STEAL_PERCENT` in debug builds only.
    pub test_steal_share: Option<f64>,
    /// For tests only: a task blocks its runtime worker this long about every
    /// 300 ms (`runner::probe::STALL_EVERY`) while each measured stage runs, as a starved or
    /// descheduled client's event loop stalls (run with `--cpus 1`, one worker, and the whole
    /// loop stalls): reads come late while sends keep their pace. Zero in every real run; the
    /// CLI sets it from `INFERMETER_TEST_READ_STALL_MS` in debug builds only.
    pub test_read_stall: Duration,
}

/// What the caller decides after each stage (an `abort-on-fail` assertion may stop the run).
#[derive(Debug, Clone, PartialEq)]
pub enum StageDecision {
    Continue,
    /// Stop the run: this assertion failed on this stage.
    Abort(Abort),
    /// The stage failed these SLAs but the run goes on: a search probe's "fail" verdict.
    Failed(Vec<String>),
}

/// Hears about the run as it goes. Implemented by the caller: the CLI draws progress bars or
/// prints lines; a library user may count, log, or ignore (`()` ignores everything).
pub trait Observer: Send + Sync {
    /// A stage (or the warm-up, or a search probe) starts; `total` is the number of requests
    /// it will send when that is known ahead. The returned tracker is fed from the stage's
    /// collector thread, never from a request task.
    fn stage_started(&self, name: &str, total: Option<u64>) -> Box<dyn StageProgress>;

    /// [`Observer::stage_started`] with how long the plan says the stage sends, when it says
    /// (an open-loop schedule's span, a duration bound), so that a console's first ETA comes
    /// from the plan rather than from the first second's completions. By default the same as
    /// `stage_started`.
    fn stage_planned(
        &self,
        name: &str,
        total: Option<u64>,
        _sending: Option<std::time::Duration>,
    ) -> Box<dyn StageProgress> {
        self.stage_started(name, total)
    }

    /// Something the user should know that does not stop the run (a telemetry source that is
    /// unavailable, `--poll-idle` without permission).
    fn warning(&self, _message: &str) {}
}

/// Progress of one stage, fed every few milliseconds from its collector thread.
pub trait StageProgress: Send {
    /// Requests finished so far (failed ones included), failures, and the median so far of
    /// when answers begin, with its label (TTFT; E2E for an API answered whole).
    fn update(&mut self, done: u64, failed: u64, p50: (&'static str, f64));
    /// Whether it shows anything: when not, `update` is not called (the median it is given
    /// costs a walk over a histogram, a hundred times a second).
    fn shows(&self) -> bool {
        true
    }
    /// The stage's sending and draining are over.
    fn finish(self: Box<Self>);
}

impl Observer for () {
    fn stage_started(&self, _: &str, _: Option<u64>) -> Box<dyn StageProgress> {
        Box::new(())
    }
}

impl StageProgress for () {
    fn update(&mut self, _: u64, _: u64, _: (&'static str, f64)) {}
    fn shows(&self) -> bool {
        false
    }
    fn finish(self: Box<Self>) {}
}
