//! Baseline comparison that knows noise: per stage and watched metric, the change from a
//! baseline run with its confidence interval (`sla::shift`: a bootstrap of the percentiles from
//! the two runs' histograms, across rounds when both ran several, proportions for error rates),
//! and a verdict — worse or better only when the whole interval lies beyond the tolerance,
//! the same when it lies within it, inconclusive when it straddles. Results without histograms
//! (an older format) are compared on their point values. Rendered as text, Markdown
//! (`templates/compare.md.j2`) or JSON; several runs also give a trend table in time order.

use serde::Serialize;

use super::compare_change::{
    Change, CompareOptions, ERROR_RATE_NOISE_PP, MetricChange, Tolerances, classify_point,
};
use super::flagged::Flagged;
use super::numbers::num;
use crate::metrics::{
    Aggregation, CountMetric, LatencyMetric, Metric, Percentile, StageSummary, Worse,
};
use crate::protocol::Answer;
use crate::results::Results;
use crate::sla::{Shift, latency_dist, observe, shift};

#[derive(Debug, Clone, Serialize)]
pub struct StageComparison {
    pub name: String,
    /// Both runs' numbers for this stage were trusted.
    pub trusted: bool,
    pub metrics: Vec<MetricChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub scenario: String,
    pub baseline_plan_hash: String,
    pub current_plan_hash: String,
    pub same_plan: bool,
    /// The infrastructure facts the runs differ in (`engine_version 0.6.3 → 0.7.0`), from
    /// their `provenance.infra`; empty when they agree or either recorded none.
    pub infra_differences: Vec<String>,
    pub baseline_started_at: String,
    pub current_started_at: String,
    /// The default tolerance, in percent.
    pub tolerance_pct: f64,
    pub tolerances: Tolerances,
    pub confidence: f64,
    pub stages: Vec<StageComparison>,
    /// Stages present in only one of the runs.
    pub only_in_baseline: Vec<String>,
    pub only_in_current: Vec<String>,
    /// Every metric worse beyond tolerance.
    pub regressions: Vec<Flagged>,
    /// Every metric whose change could not be decided.
    pub undecided: Vec<Flagged>,
    /// Per URL, for stages both runs spread over several URLs: descriptive, never gating
    /// (empty otherwise; always written, so a template may read it).
    pub urls: Vec<super::UrlComparison>,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        !self.regressions.is_empty()
    }

    /// Stages both runs have.
    pub fn common_stages(&self) -> usize {
        self.stages.len()
    }
}

/// The watched metrics of `api`'s results (the metrics it has: no TTFT for an API answered
/// whole): (metric, aggregation, lower is better): the p50, p95 and p99 of the latency metrics
/// the vocabulary marks watched, then throughputs and the error rate.
fn watched(answer: Answer) -> Vec<(Metric, Option<Aggregation>, bool)> {
    let mut out = all_watched();
    out.retain(|(m, _, _)| m.applies_to(answer));
    out
}

/// Every watched metric of any API.
fn all_watched() -> Vec<(Metric, Option<Aggregation>, bool)> {
    let lower_is_better = |m: Metric| m.def().worse == Worse::Higher;
    let mut out = Vec::new();
    for m in LatencyMetric::ALL.into_iter().filter(|m| m.spec().watched) {
        for p in [Percentile::P50, Percentile::P95, Percentile::P99] {
            let m = Metric::Latency(m);
            out.push((m, Some(Aggregation::Percentile(p)), lower_is_better(m)));
        }
    }
    for m in [
        CountMetric::RequestThroughput,
        CountMetric::OutputThroughput,
        CountMetric::InputThroughput,
        CountMetric::InputsRate,
        CountMetric::ErrorRate,
    ] {
        let m = Metric::Count(m);
        out.push((m, None, lower_is_better(m)));
    }
    out
}

/// For results without histograms: whether the stage's distribution has enough samples for a
/// point comparison of the percentile to mean something — at least ten beyond it (p50: 20,
/// p95: 200, p99: 1,000). A p99 of 60 requests is their slowest one.
fn enough_samples(metric: Metric, agg: Option<Aggregation>, stage: &StageSummary) -> bool {
    match (agg, latency_dist(metric, stage)) {
        (Some(Aggregation::Percentile(p)), Some(d)) => d.count >= min_samples(p),
        _ => true,
    }
}

/// Samples a percentile needs for a point comparison: ten beyond it.
pub fn min_samples(p: Percentile) -> u64 {
    (10.0 / (1.0 - p.value() / 100.0)).round() as u64
}

/// The verdict of an interval `[low, high]` of a change against ±`tol`, for a metric where
/// lower is better (or higher, `lower_is_better` false).
fn classify_interval(low: f64, high: f64, tol: f64, lower_is_better: bool) -> Change {
    let (worse, better) = if lower_is_better {
        (low > tol, high < -tol)
    } else {
        (high < -tol, low > tol)
    };
    if worse {
        Change::Worse
    } else if better {
        Change::Better
    } else if low >= -tol && high <= tol {
        Change::Same
    } else {
        Change::Inconclusive
    }
}

fn compare_metric(
    (metric, agg, lower_is_better): (Metric, Option<Aggregation>, bool),
    base: &StageSummary,
    cur: &StageSummary,
    opts: &CompareOptions,
) -> MetricChange {
    let name = match agg {
        Some(a) => format!("{metric}.{a}"),
        None => metric.to_string(),
    };
    let tol = opts.tolerances.of(&name);
    let unit = metric.kind().unit();
    let b = observe(metric, agg, base).ok();
    let c = observe(metric, agg, cur).ok();
    let point_pct = match (b, c) {
        (Some(b), Some(c)) if b != 0.0 => Some((c - b) / b * 100.0),
        _ => None,
    };
    let watched = Watched {
        metric,
        agg,
        lower_is_better,
        tol,
        baseline: b,
        point_pct,
    };
    let j = watched.judge(shift(metric, agg, base, cur, opts.confidence), base, cur);
    let text = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{} {unit}", num(v)));
    MetricChange {
        metric: name,
        metric_ref: (metric, agg),
        unit,
        baseline: b,
        current: c,
        change: j.change,
        change_unit: j.change_unit,
        interval: j.interval,
        tolerance_pct: tol * 100.0,
        basis: j.basis,
        verdict: j.verdict,
        baseline_text: text(b),
        current_text: text(c),
        change_text: j.change_text(agg),
        icon: j.verdict.icon(),
    }
}

/// One watched metric of a stage, with what its verdict is judged against.
struct Watched {
    metric: Metric,
    agg: Option<Aggregation>,
    lower_is_better: bool,
    /// The relative tolerance, as a fraction.
    tol: f64,
    baseline: Option<f64>,
    /// The relative change of the point values, in percent.
    point_pct: Option<f64>,
}

/// What [`Watched::judge`] makes of a shift: the [`MetricChange`] fields its verdict rests on.
struct Judged {
    verdict: Change,
    change: Option<f64>,
    change_unit: &'static str,
    interval: Option<[f64; 2]>,
    basis: &'static str,
}

impl Watched {
    fn judge(&self, shift: Option<Shift>, base: &StageSummary, cur: &StageSummary) -> Judged {
        let judged = |verdict, change, change_unit, interval, basis| Judged {
            verdict,
            change,
            change_unit,
            interval,
            basis,
        };
        let (tol, lower) = (self.tol, self.lower_is_better);
        match shift {
            None => judged(Change::NotComparable, None, "%", None, "point"),
            Some(Shift::Relative {
                estimate,
                low,
                high,
                across,
                ..
            }) => judged(
                classify_interval(low, high, tol, lower),
                Some(estimate * 100.0),
                "%",
                Some([low * 100.0, high * 100.0]),
                if across == crate::sla::Across::Rounds {
                    "rounds"
                } else {
                    "bootstrap"
                },
            ),
            Some(Shift::Points {
                estimate,
                low,
                high,
                ..
            }) => {
                // The tolerance is relative to the baseline's rate, but never finer than the
                // noise floor of a rate.
                let floor = (self.baseline.unwrap_or(0.0) * tol).max(ERROR_RATE_NOISE_PP);
                let verdict = classify_interval(low, high, floor, lower);
                judged(
                    verdict,
                    Some(estimate),
                    "pp",
                    Some([low, high]),
                    "proportions",
                )
            }
            Some(Shift::TooFew { .. }) => judged(
                Change::Inconclusive,
                self.point_pct,
                "%",
                None,
                "too few samples",
            ),
            Some(Shift::Point { baseline, current }) => {
                let (metric, agg) = (self.metric, self.agg);
                let enough = enough_samples(metric, agg, base) && enough_samples(metric, agg, cur);
                let verdict = if enough {
                    classify_point(metric, baseline, current, lower, tol)
                } else {
                    Change::NotComparable
                };
                judged(verdict, self.point_pct, "%", None, "point")
            }
        }
    }
}

impl Judged {
    /// The change as the tables show it, with its interval or why it has none.
    fn change_text(&self, agg: Option<Aggregation>) -> String {
        let change_unit = self.change_unit;
        match (self.change, self.interval) {
            (Some(c), Some([lo, hi])) => format!("{c:+.1} {change_unit} [{lo:+.1}, {hi:+.1}]"),
            (Some(c), None) if self.basis == "too few samples" => {
                format!("{c:+.1} % (too few samples)")
            }
            (Some(c), None) => match agg {
                Some(Aggregation::Percentile(q)) if self.verdict == Change::NotComparable => {
                    format!("{c:+.1} % (under {} samples)", min_samples(q))
                }
                _ => format!("{c:+.1} %"),
            },
            (None, _) => "–".into(),
        }
    }
}

fn compare_stage(
    base: &StageSummary,
    cur: &StageSummary,
    answer: Answer,
    opts: &CompareOptions,
) -> StageComparison {
    StageComparison {
        name: cur.name.clone(),
        trusted: base.validity.trusted && cur.validity.trusted,
        metrics: watched(answer)
            .into_iter()
            .map(|w| compare_metric(w, base, cur, opts))
            .collect(),
    }
}

/// Compares `current` against `baseline`.
pub fn compare(baseline: &Results, current: &Results, opts: &CompareOptions) -> Comparison {
    let mut stages = Vec::new();
    let mut regressions = Vec::new();
    let mut undecided = Vec::new();
    // Each label of a split stage is compared as a stage of its own (`mixed[model=lora]`).
    let base_stages = super::groups::with_labels(&baseline.stages);
    for cur in &super::groups::with_labels(&current.stages) {
        let Some(base) = base_stages.iter().find(|b| b.name == cur.name) else {
            continue;
        };
        let mut sc = compare_stage(base, cur, current.target.answer(), opts);
        sc.metrics.extend(super::compare_spec::changes(
            baseline, current, &cur.name, opts,
        ));
        for m in &sc.metrics {
            let line = Flagged {
                stage: sc.name.clone(),
                metric: m.metric_ref.0,
                aggregation: m.metric_ref.1,
                change: m.change_text.clone(),
            };
            match m.verdict {
                Change::Worse => regressions.push(line),
                Change::Inconclusive => undecided.push(line),
                _ => {}
            }
        }
        stages.push(sc);
    }
    let names = |r: &Results| r.stages.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    let (base_names, cur_names) = (names(baseline), names(current));
    Comparison {
        scenario: current.scenario.clone(),
        baseline_plan_hash: baseline.plan_hash.clone(),
        current_plan_hash: current.plan_hash.clone(),
        same_plan: baseline.plan_hash == current.plan_hash,
        infra_differences: match (&baseline.provenance, &current.provenance) {
            (Some(a), Some(b)) => crate::results::infra_differences(&a.infra, &b.infra),
            _ => Vec::new(),
        },
        baseline_started_at: baseline.started_at.clone(),
        current_started_at: current.started_at.clone(),
        tolerance_pct: opts.tolerances.default * 100.0,
        tolerances: opts.tolerances.clone(),
        confidence: opts.confidence,
        stages,
        only_in_baseline: base_names
            .iter()
            .filter(|n| !cur_names.contains(n))
            .cloned()
            .collect(),
        only_in_current: cur_names
            .iter()
            .filter(|n| !base_names.contains(n))
            .cloned()
            .collect(),
        regressions,
        undecided,
        urls: super::compare_urls(baseline, current),
    }
}

/// Several runs in time order: each watched metric's values across them, and the comparison of
/// the newest with the one before it (the nightly trend).
#[derive(Debug, Clone, Serialize)]
pub struct Trend {
    /// Start times, oldest first.
    pub runs: Vec<String>,
    pub rows: Vec<TrendRow>,
    pub latest: Comparison,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrendRow {
    pub stage: String,
    pub metric: String,
    pub unit: &'static str,
    /// One per run, oldest first (`None`: the run lacks the stage or the value).
    pub values: Vec<Option<f64>>,
}

/// The trend of `runs` (at least two), which it sorts by start time.
pub fn trend(mut runs: Vec<Results>, opts: &CompareOptions) -> Trend {
    runs.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    let n = runs.len();
    let latest = compare(&runs[n - 2], &runs[n - 1], opts);
    let mut rows = Vec::new();
    for stage in &runs[n - 1].stages {
        for (metric, agg, _) in watched(runs[n - 1].target.answer()) {
            let name = match agg {
                Some(a) => format!("{metric}.{a}"),
                None => metric.to_string(),
            };
            let values = runs
                .iter()
                .map(|r| {
                    let s = r.stages.iter().find(|s| s.name == stage.name)?;
                    observe(metric, agg, s).ok()
                })
                .collect();
            rows.push(TrendRow {
                stage: stage.name.clone(),
                metric: name,
                unit: metric.kind().unit(),
                values,
            });
        }
    }
    Trend {
        runs: runs.iter().map(|r| r.started_at.clone()).collect(),
        rows,
        latest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_worse_only_when_its_whole_interval_is() {
        assert_eq!(classify_interval(0.08, 0.20, 0.05, true), Change::Worse);
        assert_eq!(
            classify_interval(0.01, 0.20, 0.05, true),
            Change::Inconclusive
        );
        assert_eq!(classify_interval(-0.03, 0.04, 0.05, true), Change::Same);
        assert_eq!(classify_interval(-0.30, -0.10, 0.05, true), Change::Better);
        // Throughput: higher is better.
        assert_eq!(classify_interval(-0.30, -0.10, 0.05, false), Change::Worse);
    }

    #[test]
    fn tolerances_fall_back_from_metric_to_default() {
        let mut t = Tolerances::new(0.05);
        t.metrics.insert("ttft.p99".into(), 0.2);
        t.metrics.insert("itl".into(), 0.1);
        assert_eq!(t.of("ttft.p99"), 0.2);
        assert_eq!(t.of("ttft.p95"), 0.05);
        assert_eq!(t.of("itl.p50"), 0.1);
        assert_eq!(t.of("error_rate"), 0.05);
    }
}
