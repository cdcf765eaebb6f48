//! The coordinator of a distributed run, and its client: the barrier where shards agree when
//! each step (warm-up, each stage and round) starts, the clock they agree on, and the
//! collection of their results into the merged one (`merge`), whose gate every shard exits
//! with. Served by `infermeter coordinate`, or by shard 0 (`run --coordinator-listen`), the
//! rank-0 pattern of Kubernetes Indexed Jobs.
//!
//! Every wait has a deadline: a step is released [`CoordinatorConfig::wait`] after its first
//! shard arrived even if some never do (they are listed as missing), results are merged that
//! long after the first one came (or after the last stage's planned end), and the merged
//! result then says it is partial.
//!
//! Nobody else can feed it: every call carries the run's [`Token`]; each shard index joins
//! once, from one process of the same plan and shard count; each shard's result is accepted
//! once, read within a cap sized from the plan, checked by the shared validator and against
//! the shard's slice of the plan; and a shard exits with a verdict only when it names the run
//! it joined and the result it sent.
//!
//! Entry points: [`serve`] (the server) and [`Client`] (a shard's side, a
//! [`runner::Barrier`](crate::runner::Barrier)).

mod admit;
mod client;
mod config;
mod error;
mod handlers;
mod refusal;
mod server;
mod state;
mod token;
mod wire;

pub use admit::result_cap;
pub use client::{Client, ClientConfig, MAX_LEAD};
pub use config::CoordinatorConfig;
pub use error::CoordinateError;
pub use refusal::{Refusal, RefusalLog};
pub use server::{Coordinator, CoordinatorOutcome, serve};
pub use token::{MIN_TOKEN_LEN, TOKEN_ENV, Token, TokenError};
pub use wire::{Release, Status, Verdict, verdict_of};
