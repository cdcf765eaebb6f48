//! SLA assertions: parse (`ttft.p95 < 200ms`), check against the metric's kind, evaluate
//! against a stage summary on the value's confidence interval, produce verdicts — pass, fail
//! or inconclusive — and the gate's outcome from them. See `docs/sla.md`.

mod abort;
mod change;
mod configs;
mod credit;
mod curve;
mod decided;
mod evaluate;
mod grammar;
pub mod mlperf;
mod need;
mod observe;
mod parse;
mod parse_error;
mod policy;
mod prefix;
mod priority;
mod profile;
mod sequential;
mod spread;
mod stall;
mod telemetry;
mod trust;
mod verdict;

pub use abort::{Abort, AbortRule, abort_verdict};
pub use change::{Shift, shift};
pub use configs::{
    ConfigRanking, ConfigRow, FigureInterval, RunFacts, config_names, is_best_figure, judge_best,
    rank_by, rank_configs,
};
pub use curve::{NOT_GATING, SlaMax, judge_run, point_outcome};
pub use decided::{all_decided, decided, held_verdicts};
pub use evaluate::*;
pub use grammar::*;
pub use need::{Need, fewest_to_pass, more_needed};
pub use observe::{Unobserved, View, latency_dist, observe};
pub use parse::*;
pub use parse_error::{SlaError, SlaErrorKind, check_windowed};
pub use policy::{Policy, Untrusted};
pub use priority::priority_inversions;
pub use profile::{probe_failures, profile_inputs};
pub use sequential::decides_stage;
pub use spread::{Spread, decide, spread, spread_in};
pub use telemetry::observe_with;
pub use verdict::*;
