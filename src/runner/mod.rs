//! Executes a [`Plan`](crate::plan::Plan): starts the target (the in-process simulator when
//! the plan says so), runs warm-up and stages in order — open-loop stages from their schedule,
//! closed-loop stages with N workers — and streams every request's record into its stage's
//! aggregator.
//!
//! Entry point: [`run`].

mod body;
mod collect;
mod cpu;
mod hooked;
mod progress;
mod run;
mod search;
mod session;
mod stage;
mod target;
mod telemetry;
mod timer;
mod warmup;

pub use cpu::PollIdle;
pub use progress::ProgressMode;
pub use run::{RunError, RunOptions, RunOutput, StageDecision, run};
pub use search::next_rate;
