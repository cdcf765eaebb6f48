//! Executes a [`Plan`](crate::plan::Plan): starts the target (the in-process simulator when
//! the plan says so), runs warm-up and stages in order — open-loop stages from their schedule,
//! closed-loop stages with N workers, searches probe by probe — and streams every request's
//! record into its stage's aggregator. Prints nothing: progress goes to the caller's
//! [`Observer`].
//!
//! Entry point: [`run`]. Files: `run.rs` sets up and walks the stages, `stage.rs` runs one,
//! `send.rs` is the path of one request, `shards.rs` the per-CPU shards of `--cpus N`
//! (`shard_stage.rs` a stage sent by them), `session.rs` multi-turn sessions (`agent.rs`
//! agentic tasks), `search.rs` rate and concurrency searches, `options.rs` what the caller
//! passes in.

mod agent;
mod answers;
mod barrier;
mod collect;
mod counters;
mod cpu;
mod cpus;
mod error;
mod fold;
mod host;
mod judge;
mod kept;
mod labels;
mod load;
mod netem;
mod options;
mod prefix;
mod probe;
mod reset;
mod route;
mod run;
mod search;
mod send;
mod server;
mod session;
mod session_tools;
mod shard_stage;
mod shards;
mod stage;
mod stage_plan;
mod switch;
mod target;
mod telemetry;
mod temp;
mod timer;
mod tokens;
mod traces;
mod until;
mod warmup;

pub use barrier::{
    AgreedStart, Barrier, BarrierError, BarrierFuture, Interrupted, StepStart, Unsynchronised,
};
pub use cpu::PollIdle;
pub use cpus::{CpuSpec, CpusError, restrict as restrict_cpus};
pub use error::{RunError, RunProblem};
pub use options::{LiveCheck, LiveJudgement, Observer, RunOptions, StageDecision, StageProgress};
pub use run::{RunOutput, Stop, run};
pub use shards::Shards;
pub use switch::{ServerSwitch, SwitchFuture, Switched};
