//! MLPerf Inference presets (`mlperf "llama3.1-8b" scenario="server"`): each benchmark's p99
//! TTFT and TPOT bounds for the Server scenario and its interactive variant, defined once here,
//! and the rules a run must meet to *qualify* as a Server run under them — LoadGen's minimum
//! duration, its minimum query count and its early-stopping test on both percentiles. The
//! bounds themselves become ordinary SLA assertions (the scenario layer adds them); this file
//! judges only admissibility, which gates nothing unless the scenario says `require=#true`.
//! Sources and what "qualifies" means here: docs/sla.md, "MLPerf presets".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::metrics::{HistogramCodec, LatencyMetric, StageSummary};

/// LoadGen's `*.Server.min_duration` (mlperf.conf): 600 000 ms.
pub const MIN_DURATION_S: f64 = 600.0;

/// LoadGen's `min_query_count` for the Server scenario: mlperf.conf does not set it for any
/// LLM, so LoadGen's default (`test_settings.h`) holds.
pub const MIN_QUERIES: u64 = 100;

/// The confidence of LoadGen's early-stopping test (`results.cc`, `EarlyStopping`: 0.99,
/// tolerance 0) and so of the upper bound the percentile rule reads.
pub const EARLY_STOPPING_CONFIDENCE: f64 = 0.99;

/// The percentile every MLPerf LLM Server bound is on (`*.Server.target_latency_percentile`).
pub const PERCENTILE: f64 = 0.99;

/// One benchmark's bounds, in ms: `(ttft, tpot)` for Server and, where MLPerf has one, the
/// interactive variant (mlperf.conf's `NAME-interactive`).
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// As written in a scenario (mlperf.conf spells `llama3.1` as `llama3_1`).
    pub name: &'static str,
    pub server: (f64, f64),
    pub interactive: Option<(f64, f64)>,
}

/// Every preset, from mlcommons/inference `loadgen/mlperf.conf` (`*.Server.ttft_latency`,
/// `*.Server.tpot_latency`) as of MLPerf Inference v6.0.
pub const PRESETS: [Preset; 6] = [
    Preset {
        name: "llama3.1-8b",
        server: (2000.0, 100.0),
        interactive: Some((500.0, 30.0)),
    },
    Preset {
        name: "llama2-70b",
        server: (2000.0, 200.0),
        interactive: Some((450.0, 40.0)),
    },
    Preset {
        name: "llama3.1-405b",
        server: (6000.0, 175.0),
        interactive: Some((4500.0, 80.0)),
    },
    Preset {
        name: "mixtral-8x7b",
        server: (2000.0, 200.0),
        interactive: None,
    },
    Preset {
        name: "deepseek-r1",
        server: (2000.0, 80.0),
        interactive: Some((1500.0, 15.0)),
    },
    Preset {
        name: "gpt-oss-120b",
        server: (3000.0, 80.0),
        interactive: Some((2000.0, 15.0)),
    },
];

/// The preset called `name`.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Which of a benchmark's latency settings a run is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MlperfScenario {
    Server,
    Interactive,
}

impl MlperfScenario {
    pub const ALL: [MlperfScenario; 2] = [MlperfScenario::Server, MlperfScenario::Interactive];

    pub fn as_str(self) -> &'static str {
        match self {
            MlperfScenario::Server => "server",
            MlperfScenario::Interactive => "interactive",
        }
    }

    pub fn from_name(name: &str) -> Option<MlperfScenario> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl Preset {
    /// The `(ttft, tpot)` bounds in ms for `scenario`; `None` for an interactive variant the
    /// benchmark does not have.
    pub fn bounds(&self, scenario: MlperfScenario) -> Option<(f64, f64)> {
        match scenario {
            MlperfScenario::Server => Some(self.server),
            MlperfScenario::Interactive => self.interactive,
        }
    }
}

/// What the plan carries of a scenario's preset: the stage it is judged on and its bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlperfRule {
    pub benchmark: String,
    pub scenario: MlperfScenario,
    pub stage: String,
    pub ttft_ms: f64,
    pub tpot_ms: f64,
    /// `require=#true`: a run that does not qualify fails the gate (exit 1).
    pub require: bool,
    /// `smoke=#true`: a short run that is not meant to qualify, and says so.
    pub smoke: bool,
}

/// The bounds a run is held to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MlperfBounds {
    pub ttft_p99_ms: f64,
    pub tpot_p99_ms: f64,
    pub min_duration_s: f64,
    pub min_queries: u64,
    /// The confidence of the early-stopping test (0.99).
    pub confidence: f64,
}

/// What the run measured on the preset's stage.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MlperfMeasured {
    pub duration_s: f64,
    /// Requests sent (LoadGen's queries issued).
    pub queries: u64,
    /// The one-sided 99 % upper bound of the p99 (ms), absent when the samples are too few
    /// for one (fewer than 459) or there were none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99_upper_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_p99_upper_ms: Option<f64>,
}

/// Whether a run qualifies under its preset, and why not (results.json's `mlperf`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Qualification {
    pub benchmark: String,
    pub scenario: MlperfScenario,
    pub stage: String,
    pub qualifies: bool,
    /// Each rule the run misses, as a sentence fragment ("duration 60 s < 600 s").
    pub reasons: Vec<String>,
    pub bounds: MlperfBounds,
    pub measured: MlperfMeasured,
    /// `require=#true`: not qualifying failed the gate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub smoke: bool,
}

impl Qualification {
    /// The verdict as one line: `MLPerf llama3.1-8b server: qualifies`, or `… does not
    /// qualify (smoke run), because: duration 60 s < 600 s; …`.
    pub fn line(&self) -> String {
        let head = format!("MLPerf {} {}", self.benchmark, self.scenario.as_str());
        if self.qualifies {
            return format!("{head}: qualifies");
        }
        let smoke = if self.smoke { " (smoke run)" } else { "" };
        format!(
            "{head}: does not qualify{smoke}, because: {}",
            self.reasons.join("; ")
        )
    }

    /// A run held to `require=#true` that does not qualify.
    pub fn fails_gate(&self) -> bool {
        self.required && !self.qualifies
    }

    /// The rule this verdict was reached under, to judge it again on other figures (a
    /// distributed run's merged stages).
    pub fn rule(&self) -> MlperfRule {
        MlperfRule {
            benchmark: self.benchmark.clone(),
            scenario: self.scenario,
            stage: self.stage.clone(),
            ttft_ms: self.bounds.ttft_p99_ms,
            tpot_ms: self.bounds.tpot_p99_ms,
            require: self.required,
            smoke: self.smoke,
        }
    }
}

/// Judges `rule` on its stage among `stages` (the first of that name; a stage run in rounds
/// is judged on its merged figures).
pub fn qualify(rule: &MlperfRule, stages: &[StageSummary]) -> Qualification {
    let bounds = MlperfBounds {
        ttft_p99_ms: rule.ttft_ms,
        tpot_p99_ms: rule.tpot_ms,
        min_duration_s: MIN_DURATION_S,
        min_queries: MIN_QUERIES,
        confidence: EARLY_STOPPING_CONFIDENCE,
    };
    let stage = stages.iter().find(|s| s.name == rule.stage);
    let mut reasons = Vec::new();
    let measured = match stage {
        None => {
            reasons.push(format!("stage `{}` did not run", rule.stage));
            MlperfMeasured::default()
        }
        Some(s) => measure(s, &bounds, &mut reasons),
    };
    Qualification {
        benchmark: rule.benchmark.clone(),
        scenario: rule.scenario,
        stage: rule.stage.clone(),
        qualifies: reasons.is_empty(),
        reasons,
        bounds,
        measured,
        required: rule.require,
        smoke: rule.smoke,
    }
}

fn measure(s: &StageSummary, b: &MlperfBounds, reasons: &mut Vec<String>) -> MlperfMeasured {
    let m = MlperfMeasured {
        duration_s: s.wall_time_s,
        queries: s.requests.sent,
        ttft_p99_upper_ms: p99_upper_ms(s, LatencyMetric::Ttft),
        tpot_p99_upper_ms: p99_upper_ms(s, LatencyMetric::Tpot),
    };
    if m.duration_s < b.min_duration_s {
        reasons.push(format!(
            "duration {} s < {} s",
            round(m.duration_s),
            b.min_duration_s
        ));
    }
    if m.queries < b.min_queries {
        reasons.push(format!("{} queries < {}", m.queries, b.min_queries));
    }
    if s.requests.failed > 0 {
        // LoadGen has no notion of a failed query: every one must be answered.
        reasons.push(format!("{} queries failed", s.requests.failed));
    }
    for (name, upper, bound) in [
        ("TTFT", m.ttft_p99_upper_ms, b.ttft_p99_ms),
        ("TPOT", m.tpot_p99_upper_ms, b.tpot_p99_ms),
    ] {
        match upper {
            None => reasons.push(format!(
                "{name} p99: too few samples for early stopping (at least {} needed)",
                min_samples()
            )),
            Some(u) if u > bound => reasons.push(format!(
                "{name} p99 early-stopping bound {} ms > {bound} ms",
                round(u)
            )),
            Some(_) => {}
        }
    }
    m
}

/// The one-sided upper bound of the stage's p99 of `metric` at the early-stopping confidence:
/// the (1 + c)/2 two-sided helper at c' = 2c − 1 gives exactly c on the upper side.
fn p99_upper_ms(s: &StageSummary, metric: LatencyMetric) -> Option<f64> {
    let h = s.histograms.as_ref()?.decode(metric)?.ok()?;
    // Histograms hold µs.
    p99_upper(&h).map(|us| us / 1000.0)
}

/// The one-sided upper bound of the p99 of `h` at the early-stopping confidence, in its unit.
fn p99_upper(h: &hdrhistogram::Histogram<u64>) -> Option<f64> {
    let confidence = 2.0 * EARLY_STOPPING_CONFIDENCE - 1.0;
    let (_, upper) = crate::stats::one_sided_bounds(h, PERCENTILE, confidence).ok()?;
    upper
}

/// The fewest samples whose largest bounds the p99 at the early-stopping confidence:
/// the smallest n with 0.99ⁿ ≤ 0.01, LoadGen's `h` for no query over the bound (459).
pub fn min_samples() -> u64 {
    let n = (1.0 - EARLY_STOPPING_CONFIDENCE).ln() / PERCENTILE.ln();
    n.ceil() as u64
}

fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_the_bounds_of_mlperf_conf() {
        let b = |n: &str, s| preset(n).unwrap().bounds(s);
        assert_eq!(
            b("llama3.1-8b", MlperfScenario::Server),
            Some((2000.0, 100.0))
        );
        assert_eq!(
            b("llama3.1-8b", MlperfScenario::Interactive),
            Some((500.0, 30.0))
        );
        assert_eq!(
            b("gpt-oss-120b", MlperfScenario::Interactive),
            Some((2000.0, 15.0))
        );
        assert_eq!(b("mixtral-8x7b", MlperfScenario::Interactive), None);
        assert!(preset("llama3_1-8b").is_none());
    }

    #[test]
    fn early_stopping_needs_459_samples_with_none_over() {
        assert_eq!(min_samples(), 459);
    }

    /// LoadGen's Server test (`early_stopping.cc`, tolerance 0): with `t` of `n` queries over
    /// the bound, it passes when P(at most t over | each over with probability 1 %) < 1 %.
    fn loadgen_passes(n: u64, t: u64) -> bool {
        let (p, q) = (0.01f64, 0.99f64);
        let mut cdf = 0.0;
        let mut log_choose = 0.0f64;
        for k in 0..=t {
            if k > 0 {
                log_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
            }
            cdf += (log_choose + k as f64 * p.ln() + (n - k) as f64 * q.ln()).exp();
        }
        cdf < 1.0 - EARLY_STOPPING_CONFIDENCE
    }

    #[test]
    fn the_upper_bound_decides_as_loadgen_early_stopping() {
        let bound = 1000.0;
        for (n, t) in [
            (300, 0),
            (458, 0),
            (459, 0),
            (460, 0),
            (700, 1),
            (800, 2),
            (1000, 3),
            (1000, 4),
            (2000, 10),
            (5000, 35),
            (5000, 40),
        ] {
            let mut h =
                hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
            h.record_n(500, n - t).unwrap();
            if t > 0 {
                h.record_n(2000, t).unwrap();
            }
            let ours = p99_upper(&h).is_some_and(|u| u <= bound);
            assert_eq!(ours, loadgen_passes(n, t), "n {n}, t {t}");
        }
    }

    /// Where the binomial's tails turn to a normal approximation (large n) too: LoadGen's
    /// largest passing count of queries over the bound passes here, one more does not.
    #[test]
    fn the_largest_count_over_the_bound_is_loadgens() {
        let mut disagree = Vec::new();
        for n in (459..100_000).step_by(4_973) {
            let t = (0..n).take_while(|&t| loadgen_passes(n, t)).last().unwrap();
            for t in [t, t + 1] {
                let mut h =
                    hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
                h.record_n(500, n - t).unwrap();
                if t > 0 {
                    h.record_n(2000, t).unwrap();
                }
                let ours = p99_upper(&h).is_some_and(|u| u <= 1000.0);
                if ours != loadgen_passes(n, t) {
                    disagree.push((n, t));
                }
            }
        }
        assert!(disagree.is_empty(), "{disagree:?}");
    }

    #[test]
    fn the_line_says_why_not() {
        let q = Qualification {
            benchmark: "llama3.1-8b".into(),
            scenario: MlperfScenario::Server,
            stage: "s".into(),
            qualifies: false,
            reasons: vec!["duration 60 s < 600 s".into(), "30 queries < 100".into()],
            bounds: MlperfBounds {
                ttft_p99_ms: 2000.0,
                tpot_p99_ms: 100.0,
                min_duration_s: 600.0,
                min_queries: 100,
                confidence: 0.99,
            },
            measured: MlperfMeasured::default(),
            required: false,
            smoke: true,
        };
        assert_eq!(
            q.line(),
            "MLPerf llama3.1-8b server: does not qualify (smoke run), because: \
             duration 60 s < 600 s; 30 queries < 100"
        );
        assert!(!q.fails_gate());
    }
}
