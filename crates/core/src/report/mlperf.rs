//! The MLPerf verdict of a run with a preset (docs/sla.md, "MLPerf presets"): one line, and
//! each rule beside what the run measured, for the terminal, report.md and the HTML report.
//! Read off results.json's `mlperf`; nothing is recomputed here.

use serde::Serialize;

use super::numbers::num;
use crate::results::Results;
use crate::sla::mlperf::Qualification;

/// The verdict and its rules, every value a display string (the templates escape them).
#[derive(Debug, Clone, Serialize)]
pub struct MlperfView {
    /// `MLPerf llama3.1-8b server: qualifies`, or why not.
    pub line: String,
    pub qualifies: bool,
    /// `require=#true`: not qualifying fails the run.
    pub required: bool,
    pub stage: String,
    pub rules: Vec<MlperfRuleRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MlperfRuleRow {
    pub rule: String,
    pub bound: String,
    pub measured: String,
    pub met: bool,
}

/// The view of `results.mlperf`; `None` without a preset.
pub fn mlperf_view(results: &Results) -> Option<MlperfView> {
    let q = results.mlperf.as_ref()?;
    Some(MlperfView {
        line: q.line(),
        qualifies: q.qualifies,
        required: q.required,
        stage: q.stage.clone(),
        rules: rules(q),
    })
}

fn rules(q: &Qualification) -> Vec<MlperfRuleRow> {
    let (b, m) = (&q.bounds, &q.measured);
    let upper = |v: Option<f64>| v.map_or_else(|| "too few samples".into(), |v| num(v) + " ms");
    let under = |v: Option<f64>, bound: f64| v.is_some_and(|v| v <= bound);
    vec![
        MlperfRuleRow {
            rule: "duration".into(),
            bound: format!("≥ {} s", num(b.min_duration_s)),
            measured: format!("{} s", num(m.duration_s)),
            met: m.duration_s >= b.min_duration_s,
        },
        MlperfRuleRow {
            rule: "queries".into(),
            bound: format!("≥ {}", b.min_queries),
            measured: m.queries.to_string(),
            met: m.queries >= b.min_queries,
        },
        MlperfRuleRow {
            rule: format!("TTFT p99 ({:.0} % upper bound)", b.confidence * 100.0),
            bound: format!("≤ {} ms", num(b.ttft_p99_ms)),
            measured: upper(m.ttft_p99_upper_ms),
            met: under(m.ttft_p99_upper_ms, b.ttft_p99_ms),
        },
        MlperfRuleRow {
            rule: format!("TPOT p99 ({:.0} % upper bound)", b.confidence * 100.0),
            bound: format!("≤ {} ms", num(b.tpot_p99_ms)),
            measured: upper(m.tpot_p99_upper_ms),
            met: under(m.tpot_p99_upper_ms, b.tpot_p99_ms),
        },
    ]
}

/// The terminal summary's line.
pub(super) fn summary_lines(out: &mut String, results: &Results) {
    use std::fmt::Write as _;
    let Some(q) = results.mlperf.as_ref() else {
        return;
    };
    let required = if q.required {
        " (required: the run fails)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\n{}{}",
        crate::escape::terminal(&q.line()),
        if q.fails_gate() { required } else { "" }
    );
}
