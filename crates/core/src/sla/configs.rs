//! Which of the server's configurations is best (docs/server.md, "Which configuration is
//! best"). Each configuration gets one figure — a search's or sweep's SLA-compliant maximum
//! (`sla_max_rate`, `sla_max_clients`), or a stage's rate (`goodput_rate` by default) with its
//! interval — and one verdict, the gate's on its stages. Only a configuration decided to meet
//! every SLA can win: an undecided one may yet fail, so it is never called best. The winner is
//! the highest figure among those; when its interval overlaps the runner-up's, the ranking
//! says "not separated" rather than claim a difference the data does not show.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::curve::curve_range;
use super::evaluate::{Context, judge_one};
use super::grammar::{Assertion, BEST_FIGURES, Metric, Op, ScopedAssertion, Threshold, Window};
use super::verdict::{Across, SlaOutcome, SlaVerdict, VerdictInterval};
use crate::metrics::{LatencyMetric, Percentile, SearchSummary, StageSummary};

/// `configs` of results.json: the configurations ranked by one figure. *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigRanking {
    /// The figure ranked by, a metric's name (`goodput_rate`, `sla_max_rate`, …).
    pub by: String,
    /// The stage (or sweep, or search) of the scenario the figure is read from, without its
    /// configuration's suffix.
    pub stage: String,
    /// The configuration with the highest figure among those decided to meet every SLA;
    /// `null` when none is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<String>,
    /// Whether the best's figure is apart from the runner-up's (their intervals do not
    /// overlap); `null` without a decided runner-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separated: Option<bool>,
    /// The winner and why, in a sentence.
    pub why: String,
    /// One row per configuration, in the order they ran.
    pub rows: Vec<ConfigRow>,
}

/// One configuration's figure, verdict and position in the throughput–latency plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigRow {
    pub config: String,
    /// The figure, in its metric's unit; `null` when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<f64>,
    /// Where the figure lies: its confidence interval, or the range undecided points leave a
    /// curve's maximum in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<FigureInterval>,
    /// The gate's verdicts on the configuration's stages as one: failed when one failed,
    /// undecided when none failed and one was undecided, passed otherwise.
    pub verdict: SlaOutcome,
    /// Whether it can be called best: it passed and its figure is decided.
    pub decided: bool,
    /// The server's start-up time on this configuration, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_ms: Option<f64>,
    /// Completed requests/s of the stage the figure was read from (a curve's answer point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<f64>,
    /// That stage's E2E p50 and p95, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_p95_ms: Option<f64>,
    /// On the Pareto front of throughput against E2E p95: no other configuration has more of
    /// the one and no more of the other.
    pub pareto: bool,
    /// Why the figure or the verdict is what it is, when the numbers do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where a figure lies: a confidence interval (with its coverage and what it is built
/// from), or a curve's range (neither).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FigureInterval {
    pub low: f64,
    pub high: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across: Option<Across>,
}

impl ConfigRow {
    fn bounds(&self) -> Option<(f64, f64)> {
        match (self.interval, self.figure) {
            (Some(i), _) => Some((i.low, i.high)),
            (None, Some(f)) => Some((f, f)),
            _ => None,
        }
    }
}

/// What the run's stages say, read once for every ranking.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    pub stages: &'a [StageSummary],
    pub searches: &'a [SearchSummary],
    /// The gate's verdicts on the stages and curves (none of `best.`).
    pub verdicts: &'a [SlaVerdict],
}

/// The configurations, in the order their stages ran; empty without a `server` block's
/// configurations.
pub fn config_names(stages: &[StageSummary]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in stages.iter().filter_map(|s| s.server.as_ref()) {
        if !names.contains(&s.config) {
            names.push(s.config.clone());
        }
    }
    names
}

/// The ranking results.json keeps: by the first `best.` assertion's figure and stage, else by
/// the first search's or sweep's SLA-compliant maximum, else by `goodput_rate`. `None` without
/// configurations.
pub fn rank_configs(
    assertions: &[ScopedAssertion],
    run: RunFacts<'_>,
    cx: &Context<'_>,
) -> Option<ConfigRanking> {
    let first = assertions.iter().find(|a| a.assertion.best);
    let by = first.map_or_else(|| default_figure(run.stages), |a| a.assertion.metric);
    rank_by(by, first.and_then(|a| a.stage.as_deref()), run, cx)
}

/// The default figure: a search's or sweep's maximum when the run has one, else goodput.
fn default_figure(stages: &[StageSummary]) -> Metric {
    let name = match stages.iter().find_map(|s| s.profile.as_ref()) {
        Some(p) if p.point.offered_rate_per_s.is_none() => "sla_max_clients",
        Some(_) => "sla_max_rate",
        None => "goodput_rate",
    };
    Metric::from_name(name).unwrap_or(Metric::Count(crate::metrics::CountMetric::GoodputRate))
}

/// The configurations ranked by `by`, read from stage `stage` (a scenario stage's name), or
/// from the first stage that has the figure.
pub fn rank_by(
    by: Metric,
    stage: Option<&str>,
    run: RunFacts<'_>,
    cx: &Context<'_>,
) -> Option<ConfigRanking> {
    let names = config_names(run.stages);
    let first = names.first()?;
    let base = match stage {
        Some(s) => s.to_string(),
        None => source_stage(by, first, run.stages)?,
    };
    let mut rows: Vec<ConfigRow> = names.iter().map(|c| row(by, &base, c, run, cx)).collect();
    mark_pareto(&mut rows);
    let (best, separated) = winner(&rows);
    let why = why(by, best.as_deref(), separated, &rows);
    Some(ConfigRanking {
        by: by.name().to_string(),
        stage: base,
        best,
        separated,
        why,
        rows,
    })
}

/// The scenario stage a figure is read from by default: the first profile group for a curve
/// figure, else the first stage that is no profile's point.
fn source_stage(by: Metric, config: &str, stages: &[StageSummary]) -> Option<String> {
    let suffix = format!("@{config}");
    let name = if by.curve().is_some() {
        stages
            .iter()
            .find_map(|s| s.profile.as_ref())
            .map(|p| p.point.group.clone())
    } else {
        stages
            .iter()
            .find(|s| s.profile.is_none() && s.name.ends_with(&suffix))
            .map(|s| s.name.clone())
    }?;
    Some(name.strip_suffix(&suffix).unwrap_or(&name).to_string())
}

fn row(by: Metric, base: &str, config: &str, run: RunFacts<'_>, cx: &Context<'_>) -> ConfigRow {
    let suffix = format!("@{config}");
    let on: Vec<SlaVerdict> = run
        .verdicts
        .iter()
        .filter(|v| v.gates && v.stage.as_deref().is_some_and(|s| s.ends_with(&suffix)))
        .cloned()
        .collect();
    let verdict = combined(&on);
    let named = format!("{base}{suffix}");
    let mut r = ConfigRow {
        config: config.to_string(),
        figure: None,
        interval: None,
        verdict,
        decided: false,
        startup_ms: startup_ms(config, run.stages),
        throughput: None,
        e2e_p50_ms: None,
        e2e_p95_ms: None,
        pareto: false,
        note: None,
    };
    let shown = match by.curve() {
        Some(curve) => match curve_range(curve, &named, run.stages, run.searches, run.verdicts) {
            Ok((low, high, note)) => {
                r.figure = Some(low);
                r.note = note;
                if high > low {
                    r.interval = Some(FigureInterval {
                        low,
                        high,
                        confidence: None,
                        across: None,
                    });
                }
                // No point met the SLAs: there is no figure to win with.
                r.decided = verdict == SlaOutcome::Pass && high <= low && low > 0.0;
                answer_point(&named, low, run.stages)
            }
            Err(why) => {
                r.note = Some(why);
                None
            }
        },
        None => match run.stages.iter().find(|s| s.name == named) {
            Some(stage) => {
                let v = judge_one(&probe(by), stage, cx);
                if v.unobserved {
                    r.note = v.note;
                } else {
                    r.figure = Some(v.observed);
                    r.interval = v.interval.map(|i: VerdictInterval| FigureInterval {
                        low: i.low,
                        high: i.high,
                        confidence: Some(i.confidence),
                        across: Some(i.across),
                    });
                    r.decided = verdict == SlaOutcome::Pass;
                }
                Some(stage)
            }
            None => {
                r.note = Some(format!("stage `{named}` has no results (it did not run)"));
                None
            }
        },
    };
    if let Some(stage) = shown {
        r.throughput = Some(stage.throughput.requests_per_s);
        if let Some(d) = stage
            .latency
            .get(LatencyMetric::E2e)
            .filter(|d| d.count > 0)
        {
            r.e2e_p50_ms = Some(d.get(super::grammar::Aggregation::Percentile(Percentile::P50)));
            r.e2e_p95_ms = Some(d.get(super::grammar::Aggregation::Percentile(Percentile::P95)));
        }
    }
    r
}

/// An assertion that reads `by` off a stage with its interval; its threshold is never used.
fn probe(by: Metric) -> Assertion {
    Assertion {
        expr: format!("{by} >= 0"),
        metric: by,
        aggregation: None,
        op: Op::Ge,
        threshold: Threshold::Absolute(0.0),
        window: Window::Stage,
        label: None,
        best: false,
    }
}

/// The point of a curve whose load is its answer: where the configuration's throughput and
/// latency are read for the plane.
fn answer_point<'a>(
    group: &str,
    load: f64,
    stages: &'a [StageSummary],
) -> Option<&'a StageSummary> {
    stages.iter().rev().find(|s| {
        s.profile
            .as_ref()
            .is_some_and(|p| p.point.group == group && (p.load() - load).abs() < 1e-9)
    })
}

fn combined(verdicts: &[SlaVerdict]) -> SlaOutcome {
    if verdicts.iter().any(|v| v.outcome == SlaOutcome::Fail) {
        SlaOutcome::Fail
    } else if verdicts
        .iter()
        .any(|v| v.outcome == SlaOutcome::Inconclusive)
    {
        SlaOutcome::Inconclusive
    } else {
        SlaOutcome::Pass
    }
}

/// The start-up time of the configuration's server: of its first stage that started it.
fn startup_ms(config: &str, stages: &[StageSummary]) -> Option<f64> {
    let of = || {
        stages
            .iter()
            .filter_map(|s| s.server.as_ref())
            .filter(|s| s.config == config)
    };
    of().find(|s| s.restarted)
        .or_else(|| of().next())
        .map(|s| s.startup_ms)
}

/// The best decided row and whether it is apart from the runner-up.
fn winner(rows: &[ConfigRow]) -> (Option<String>, Option<bool>) {
    let mut decided: Vec<&ConfigRow> = rows
        .iter()
        .filter(|r| r.decided && r.figure.is_some())
        .collect();
    decided.sort_by(|a, b| {
        b.figure
            .partial_cmp(&a.figure)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let Some(best) = decided.first() else {
        return (None, None);
    };
    let separated = decided.get(1).and_then(|second| {
        let (low, _) = best.bounds()?;
        let (_, high) = second.bounds()?;
        Some(low > high)
    });
    (Some(best.config.clone()), separated)
}

/// Marks the rows no other row beats on both throughput and E2E p95.
fn mark_pareto(rows: &mut [ConfigRow]) {
    let points: Vec<Option<(f64, f64)>> = rows
        .iter()
        .map(|r| r.throughput.zip(r.e2e_p95_ms))
        .collect();
    for (i, r) in rows.iter_mut().enumerate() {
        let Some((t, l)) = points[i] else {
            continue;
        };
        r.pareto = !points.iter().enumerate().any(|(j, p)| {
            p.is_some_and(|(t2, l2)| j != i && t2 >= t && l2 <= l && (t2 > t || l2 < l))
        });
    }
}

fn why(by: Metric, best: Option<&str>, separated: Option<bool>, rows: &[ConfigRow]) -> String {
    let undecided: Vec<&str> = rows
        .iter()
        .filter(|r| r.verdict == SlaOutcome::Inconclusive)
        .map(|r| r.config.as_str())
        .collect();
    let Some(best) = best else {
        return if undecided.is_empty() {
            format!("no configuration met every SLA with a {by} to rank")
        } else {
            format!(
                "no configuration was decided to meet every SLA ({} undecided: an undecided \
                 configuration is never called best)",
                undecided.join(", ")
            )
        };
    };
    let decided = rows.iter().filter(|r| r.decided).count();
    let base = format!(
        "{best} has the highest {by} of the {decided} configuration{} decided to meet every SLA",
        if decided == 1 { "" } else { "s" }
    );
    match separated {
        Some(true) => format!("{base}, separated from the runner-up"),
        Some(false) => format!(
            "{base}, but not separated from the runner-up: their intervals overlap, so the data \
             does not show it is better"
        ),
        None => base,
    }
}

/// The verdicts of the `best.` assertions: each on the ranking by its own figure, judged on
/// the winner's interval — passed when all of it meets the threshold, failed when none of it
/// does and no undecided configuration could still meet it, undecided otherwise.
pub fn judge_best(
    assertions: &[ScopedAssertion],
    run: RunFacts<'_>,
    cx: &Context<'_>,
) -> Vec<SlaVerdict> {
    assertions
        .iter()
        .filter(|a| a.assertion.best)
        .map(|a| {
            let ranking = rank_by(a.assertion.metric, a.stage.as_deref(), run, cx);
            best_verdict(&a.assertion, ranking.as_ref())
        })
        .collect()
}

fn best_verdict(a: &Assertion, ranking: Option<&ConfigRanking>) -> SlaVerdict {
    let threshold = match a.threshold {
        Threshold::Absolute(v) => v,
        Threshold::Baseline { .. } => 0.0,
    };
    let mut v = SlaVerdict {
        assertion: a.clone(),
        stage: None,
        observed: 0.0,
        threshold,
        passed: false,
        outcome: SlaOutcome::Fail,
        interval: None,
        more: None,
        basis: None,
        note: None,
        gates: true,
        unobserved: false,
    };
    let Some(ranking) = ranking else {
        v.note = Some("the run has no server configurations to rank".into());
        v.unobserved = true;
        return v;
    };
    if matches!(a.threshold, Threshold::Baseline { .. }) {
        v.note = Some("`best.` takes a fixed threshold, not a baseline".into());
        return v;
    }
    let best = ranking
        .best
        .as_ref()
        .and_then(|b| ranking.rows.iter().find(|r| &r.config == b));
    let could = ranking.rows.iter().any(|r| {
        r.verdict == SlaOutcome::Inconclusive
            && r.bounds()
                .is_some_and(|(_, high)| a.op.holds(high, threshold))
    });
    let outcome = match best.and_then(|r| r.bounds().map(|b| (r, b))) {
        Some((r, (low, high))) => {
            v.observed = r.figure.unwrap_or(low);
            v.interval = r.interval.and_then(|i| {
                Some(VerdictInterval {
                    low: i.low,
                    high: i.high,
                    confidence: i.confidence?,
                    across: i.across?,
                    sequential: false,
                })
            });
            v.note = Some(format!("best configuration: {}", r.config));
            match (a.op.holds(low, threshold), a.op.holds(high, threshold)) {
                (true, true) => SlaOutcome::Pass,
                (false, false) if !could => SlaOutcome::Fail,
                _ => SlaOutcome::Inconclusive,
            }
        }
        None => {
            v.unobserved = true;
            v.note = Some(ranking.why.clone());
            if could
                || ranking
                    .rows
                    .iter()
                    .any(|r| r.verdict == SlaOutcome::Inconclusive)
            {
                SlaOutcome::Inconclusive
            } else {
                SlaOutcome::Fail
            }
        }
    };
    v.set_outcome(outcome);
    v
}

/// Whether `name` is a figure configurations can be ranked by.
pub fn is_best_figure(name: &str) -> bool {
    BEST_FIGURES.contains(&name)
}

#[cfg(test)]
#[path = "configs_tests.rs"]
mod tests;
