//! `compare`'s rows for speculative decoding: a stage's acceptance rate and mean acceptance
//! length as the server counted them in each run. They are readings of the server's counters,
//! not distributions of samples, so each is compared as a point against the tolerance (basis
//! `point`), as a throughput without rounds is; a drop beyond it is a regression. Only where
//! both runs have the figure: a run without a draft model has no row.

use super::compare_change::{CompareOptions, MetricChange, classify_point};
use super::numbers::num;
use crate::metrics::{Metric, TelemetryMetric, Worse};
use crate::results::Results;
use crate::telemetry::telemetry_metric;

/// The stage's speculative-decoding changes from `baseline` to `current`.
pub(super) fn changes(
    baseline: &Results,
    current: &Results,
    stage: &str,
    opts: &CompareOptions,
) -> Vec<MetricChange> {
    let (Some(bt), Some(ct)) = (&baseline.telemetry, &current.telemetry) else {
        return Vec::new();
    };
    [
        TelemetryMetric::SpecAcceptanceRate,
        TelemetryMetric::SpecAcceptanceLength,
    ]
    .into_iter()
    .filter_map(|m| {
        let b = telemetry_metric(bt, stage, m, None)?;
        let c = telemetry_metric(ct, stage, m, None)?;
        Some(change(Metric::Telemetry(m), b, c, opts))
    })
    .collect()
}

fn change(metric: Metric, b: f64, c: f64, opts: &CompareOptions) -> MetricChange {
    let name = metric.to_string();
    let tol = opts.tolerances.of(&name);
    let lower_is_better = metric.def().worse == Worse::Higher;
    let verdict = classify_point(metric, b, c, lower_is_better, tol);
    let pct = (b != 0.0).then(|| (c - b) / b * 100.0);
    MetricChange {
        metric: name,
        metric_ref: (metric, None),
        unit: metric.kind().unit(),
        baseline: Some(b),
        current: Some(c),
        change: pct,
        change_unit: "%",
        interval: None,
        tolerance_pct: tol * 100.0,
        basis: "point",
        verdict,
        baseline_text: num(b),
        current_text: num(c),
        change_text: pct.map_or_else(|| "–".into(), |p| format!("{p:+.1} %")),
        icon: verdict.icon(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::compare_change::Change;
    use super::*;

    #[test]
    fn a_drop_in_acceptance_is_worse_a_rise_better() {
        let m = Metric::Telemetry(TelemetryMetric::SpecAcceptanceRate);
        let opts = CompareOptions::default();
        assert_eq!(change(m, 0.7, 0.6, &opts).verdict, Change::Worse);
        assert_eq!(change(m, 0.6, 0.7, &opts).verdict, Change::Better);
        assert_eq!(change(m, 0.70, 0.71, &opts).verdict, Change::Same);
        let c = change(m, 0.5, 0.6, &opts);
        assert_eq!(c.change_text, "+20.0 %");
    }
}
