//! `RequestRecord` stream → per-stage [`StageSummary`] (HDR histograms, counters, goodput),
//! and the metric vocabulary every later stage names metrics by ([`Metric`], `vocab.rs`).
//!
//! Entry point: [`StageAggregator`].

// The vocabulary's part of the metrics (what a metric is, the per-request record) lives in
// `infermeter-words`, below every crate that names a metric.
use infermeter_words::metrics::{def, latency, per_metric, record, vocab};

mod aggregate;
mod answers;
mod attribution;
mod burst;
mod cause;
mod curve;
mod depths;
mod dist;
mod flags;
mod groups;
mod histograms;
pub mod interactivity;
mod intervals;
mod judge;
mod look;
mod measure;
mod net;
mod network;
pub mod pareto;
mod payload;
mod priority;
mod profile;
mod quality;
mod rounds;
mod saturation;
mod slice;
mod spec;
mod stage_inputs;
mod stage_server;
mod steady;
mod steady_slices;
mod summary;
mod timeline;
mod tokens;
mod turns;
mod until;
mod urls;
mod validity;

pub use aggregate::StageAggregator;
pub use answers::{
    Agreement, AnswerIndex, AnswerRow, AnswersError, KEPT_ANSWER_BYTES, PairedAccuracy,
    PairingRules, StageAgreement, agreement, answer_hash, read_answers,
};
pub use attribution::{
    Attribution, AttributionSource, PercentileBuckets, ServerDist, rest_of, tpot_note,
};
pub use cause::{HostLoad, LagCause, LagInputs, lag_cause};
pub use curve::{KNEE_MIN_GAIN, KNEE_TTFT_FACTOR, knee, knee_load, scheduled_load, sweep_points};
pub use depths::DepthSummary;
pub use dist::{Bound, Dist, Figure, IntervalMethod, Intervals};
pub use flags::{Distortion, Flag, FlagKind, Moves};
pub use groups::priority_check;
pub use histograms::{HistogramCodec, StageHistograms, TurnHistograms};
pub use interactivity::{Frontier, FrontierPoint, frontier, frontiers};
pub use intervals::{median_of_rounds, rounds_intervals, sample_intervals, sample_intervals_of};
pub use judge::{JUDGE_MIN_SCORED, JudgeCost, JudgeTally};
pub use look::{DecidedBy, LookOutcome, LookVerdict, PrefixLook};
pub use measure::{dist, dist_with_intervals, metric_dist};
pub use net::{ClientNet, NetHistograms};
pub use network::{NetworkSummary, NetworkTally, Overshoot};
pub use payload::Payload;
pub use per_metric::{MetricSet, Net, PerMetric, PerTurn, PerTurnRecorded, Recorded, Summarised};
pub use priority::{PairOutcome, PriorityCheck, PriorityPair};
pub use profile::{LoadPoint, PointKind, ProbeResult, ProfilePoint, SearchSummary};
pub use quality::{AgreementTally, Quality};
pub use record::*;
pub use rounds::merge_rounds;
pub use saturation::SATURATION_RATIO;
pub use slice::SliceFigures;
pub use spec::{DraftCounts, SPEC_COUNT_TOLERANCE, SPEC_RATE_TOLERANCE, disagreement};
pub use stage_inputs::{GoodputSlo, StageClock};
pub use stage_server::StageServer;
pub use steady::{MIN_WINDOW_S, SMOOTH_S, STEADY_RATIO, steady_window};
pub use steady_slices::{BASE_WIDTH_NS, MAX_BYTES, MAX_SLICES};
pub use summary::*;
pub use turns::{MAX_TURN_INDICES, TurnSummary, cached_share};
pub use until::{Pending, UntilDecided, UntilStop};
pub use urls::UrlSummary;
pub use validity::{StageFacts, ValidityRules};
pub use vocab::{
    Aggregation, ApiScope, CountMetric, CurveMetric, LateClient, LatencyMetric, LatencySpec,
    Metric, MetricDef, MetricKind, Percentile, Sample, Shape, TelemetryMetric, Worse,
};
