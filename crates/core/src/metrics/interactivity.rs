//! Interactivity: how fast one user sees the answer stream, against what the server delivers
//! in all (per GPU when the target declares its GPUs). Figures of a finished stage read off
//! its TPOT and NTPOT distributions, so they cost the client nothing while it sends, and a
//! sweep's frontier: each point's (tokens/s per user, tokens/s per GPU) with the points that
//! another beats on both marked dominated. Definitions and sources: docs/metrics.md,
//! "Interactivity".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{LatencyMetric, PointKind, StageSummary, knee_load, pareto, sweep_points};

/// `1000 / p` for a positive percentile `p` of `metric` in ms: tokens per second.
fn per_token_rate(stage: &StageSummary, metric: LatencyMetric) -> Option<f64> {
    let d = stage.latency.get(metric)?;
    (d.count > 0 && d.p90 > 0.0).then(|| 1000.0 / d.p90)
}

/// Tokens/s per user: 1 / p90 of TPOT (the decode speed a slow-tail user still sees, as
/// InferenceX's interactivity and MLPerf Endpoints' `tps_per_user`).
pub fn tokens_per_s_user(stage: &StageSummary) -> Option<f64> {
    per_token_rate(stage, LatencyMetric::Tpot)
}

/// E2E-normalised interactivity: 1 / p90 of E2E ÷ output tokens (NTPOT), AIPerf's
/// `e2e_normalized_interactivity`: the wait for the first token counts too.
pub fn e2e_normalized(stage: &StageSummary) -> Option<f64> {
    per_token_rate(stage, LatencyMetric::Ntpot)
}

/// Output tokens/s over the target's declared GPUs; `None` when it declares none.
pub fn output_per_gpu(stage: &StageSummary) -> Option<f64> {
    let gpus = stage.planned.gpus.filter(|&g| g > 0)?;
    Some(stage.throughput.output_tokens_per_s / f64::from(gpus))
}

/// A sweep's points in the plane of tokens/s per user against tokens/s per GPU, with its
/// Pareto front: what `results.json` keeps as `frontiers[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Frontier {
    /// The sweep (its stage's name, as the points' `profile.group`).
    pub group: String,
    /// The target's declared GPUs; without them the y axis is the whole target's output
    /// throughput (`output_tokens_per_s`), per GPU otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    /// A shaped sweep's shape, `"128/32"` (input/output tokens), whose points these are.
    /// *Added in 0.3.0.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// The sweep's points with a TPOT figure, in load order.
    pub points: Vec<FrontierPoint>,
    /// The load of the sweep's knee (the profile table's knee, `metrics::knee_load`), when
    /// reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<f64>,
}

/// One point of a [`Frontier`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct FrontierPoint {
    /// Its stage's name in `stages`.
    pub stage: String,
    /// Its nominal load: the offered rate, else the clients.
    pub load: f64,
    pub tokens_per_s_user: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_normalized_interactivity: Option<f64>,
    pub output_tokens_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_s_gpu: Option<f64>,
    /// No other point is at least as good on both axes and better on one.
    pub on_front: bool,
    /// When dominated: the stage of a point that beats it (the one furthest ahead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dominated_by: Option<String>,
}

impl FrontierPoint {
    /// Its y coordinate: per GPU when declared, else the whole target's.
    pub fn y(&self) -> f64 {
        self.output_tokens_per_s_gpu
            .unwrap_or(self.output_tokens_per_s)
    }
}

/// The frontier of every sweep among `stages` with at least one point that has a TPOT figure
/// (a sweep of a pooling API has none).
pub fn frontiers(stages: &[StageSummary]) -> Vec<Frontier> {
    let mut groups: Vec<&str> = Vec::new();
    for s in stages {
        if let Some(p) = &s.profile
            && p.point.kind == PointKind::Sweep
            && !groups.contains(&p.point.group.as_str())
        {
            groups.push(&p.point.group);
        }
    }
    groups
        .into_iter()
        .filter_map(|g| frontier(stages, g))
        .collect()
}

/// The frontier of sweep `group`; `None` when none of its points has a TPOT figure.
pub fn frontier(stages: &[StageSummary], group: &str) -> Option<Frontier> {
    let sweep = sweep_points(stages, group);
    let mut points: Vec<FrontierPoint> = sweep
        .iter()
        .filter_map(|s| {
            Some(FrontierPoint {
                stage: s.name.clone(),
                load: s.profile.as_ref().map_or(0.0, |p| p.load()),
                tokens_per_s_user: tokens_per_s_user(s)?,
                e2e_normalized_interactivity: e2e_normalized(s),
                output_tokens_per_s: s.throughput.output_tokens_per_s,
                output_tokens_per_s_gpu: output_per_gpu(s),
                on_front: true,
                dominated_by: None,
            })
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    let xy: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.tokens_per_s_user, p.y()))
        .collect();
    let names: Vec<String> = points.iter().map(|p| p.stage.clone()).collect();
    for (p, d) in points.iter_mut().zip(pareto::dominators(&xy)) {
        p.on_front = d.is_none();
        p.dominated_by = d.map(|j| names[j].clone());
    }
    Some(Frontier {
        group: group.to_string(),
        gpus: sweep.first().and_then(|s| s.planned.gpus),
        shape: sweep
            .first()
            .and_then(|s| s.profile.as_ref()?.point.shape.clone()),
        points,
        knee: knee_load(&sweep),
    })
}

#[cfg(test)]
#[path = "interactivity_tests.rs"]
mod tests;
