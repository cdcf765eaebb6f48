//! SLA assertions: parse (`ttft.p95 < 200ms`), check against the metric's kind, evaluate
//! against a stage summary, produce verdicts.

mod verdict;

pub use verdict::*;
