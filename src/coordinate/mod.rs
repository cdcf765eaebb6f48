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
//! Entry points: [`serve`] (the server) and [`Client`] (a shard's side, a
//! [`runner::Barrier`](crate::runner::Barrier)).

mod client;
mod config;
mod error;
mod server;
mod wire;

pub use client::{Client, ClientConfig};
pub use config::CoordinatorConfig;
pub use error::CoordinateError;
pub use server::{Coordinator, CoordinatorOutcome, serve};
pub use wire::{Release, Status, Verdict, verdict_of};
