//! SLA assertions: parse (`ttft.p95 < 200ms`), check against the metric's kind, evaluate
//! against a stage summary, produce verdicts. See `docs/sla.md`.

mod evaluate;
mod grammar;
mod parse;
mod profile;
mod telemetry;
mod verdict;

pub use evaluate::*;
pub use grammar::*;
pub use parse::*;
pub use profile::{probe_failures, profile_inputs};
pub use telemetry::observe_with;
pub use verdict::*;
