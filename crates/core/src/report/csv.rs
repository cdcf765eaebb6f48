//! `stages.csv`: one row per stage with its counts, throughputs, every latency figure and
//! the client's health, for spreadsheets. RFC 4180: comma-separated, a header row, fields
//! with a comma, quote or line break quoted; numbers as they are stored (ms, per second).

use std::fmt::Write as _;

use crate::metrics::{Dist, Metric, MetricSet, Summarised};
use crate::protocol::Answer;
use crate::results::Results;

const FIGURES: [&str; 9] = [
    "count", "p50", "p90", "p95", "p99", "p999", "max", "min", "mean",
];

/// A text cell: names and reasons come from the scenario and the server, so they are
/// escaped against formula injection as well as quoted (see [`crate::escape::csv_cell`]).
fn field(s: &str) -> String {
    crate::escape::csv_cell(s)
}

fn figures(d: &Dist) -> [String; 9] {
    // A distribution with no sample has no percentiles: an empty cell, not a 0 a spreadsheet
    // would average in.
    let v = |x: f64| {
        if d.count == 0 {
            String::new()
        } else {
            x.to_string()
        }
    };
    [
        d.count.to_string(),
        v(d.p50),
        v(d.p90),
        v(d.p95),
        v(d.p99),
        v(d.p999),
        v(d.max),
        v(d.min),
        v(d.mean),
    ]
}

/// The columns a generation API has and a pooling API does not (it generates nothing): its
/// output, the part of it spent reasoning, and the requests whose reasoning left no answer.
const GENERATED: [&str; 4] = [
    "output_tokens_per_s",
    "output_tokens",
    "reasoning_tokens",
    "answer_starved",
];

/// The columns only a pooling API has, after `input_tokens`.
const POOLED: [&str; 2] = ["inputs_per_s", "inputs"];

/// The header row: the stage, its counts and rates, every figure of every distribution `api`
/// has, the client's health.
fn header(answer: Answer) -> Vec<String> {
    let generates = answer.generates();
    let mut header: Vec<String> = [
        "stage",
        "profile_group",
        "offered_load",
        "sent",
        "ok",
        "failed",
        "wall_time_s",
        "requests_per_s",
        "output_tokens_per_s",
        "input_tokens_per_s",
        "goodput_per_s",
        "goodput_ratio",
        "achieved_send_rate_per_s",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "answer_starved",
    ]
    .iter()
    .filter(|c| generates || !GENERATED.contains(c))
    .map(|s| s.to_string())
    .collect();
    if !generates {
        header.extend(POOLED.map(String::from));
    }
    // Every distribution a stage keeps, by its key in `latency` (`ttft_ms` → `ttft_p50_ms`).
    for m in Summarised::metrics().filter(|m| Metric::Latency(*m).applies_to(answer)) {
        for f in FIGURES {
            let base = m.key().trim_end_matches("_ms");
            header.push(if f == "count" {
                format!("{base}_count")
            } else {
                format!("{base}_{f}_ms")
            });
        }
    }
    header.extend(
        [
            "send_lag_p50_ms",
            "send_lag_p99_ms",
            "send_lag_max_ms",
            "client_cpu_percent",
            "trusted",
            "validity_reasons",
        ]
        .map(String::from),
    );
    header
}

/// The answer-quality columns, last, in a run where a stage checks its answers (so a run
/// without `quality` keeps its columns as they were): shares in percent, empty when the
/// stage checked or scored none; the judge's mean score on its scale, and the agreement with
/// the baseline's answers, empty without a judge or a baseline.
const QUALITY: [&str; 12] = [
    "accuracy_percent",
    "accuracy_low_percent",
    "accuracy_high_percent",
    "scored",
    "repetition_rate_percent",
    "empty_rate_percent",
    "judge_score",
    "judge_score_low",
    "judge_score_high",
    "agreement_percent",
    "agreement_low_percent",
    "agreement_high_percent",
];

/// The shape columns, last, in a run with a shaped sweep (`shapes "128/32" …`), so that other
/// runs keep their columns as they were: the point's shape and its two lengths, empty on a
/// stage that is no shaped point.
const SHAPE: [&str; 3] = ["shape", "shape_input_tokens", "shape_output_tokens"];

/// A stage's shape cells, in the order of [`SHAPE`].
fn shape_cells(s: &crate::metrics::StageSummary) -> [String; 3] {
    let Some(shape) = s.profile.as_ref().and_then(|p| p.point.shape.as_deref()) else {
        return Default::default();
    };
    let (input, output) = shape.split_once('/').unwrap_or_default();
    [field(shape), field(input), field(output)]
}

/// The CSV of every stage of `results` (the warm-up excluded), in run order; a stage split by
/// `model` or `class` is followed by a row per label, its stage named `stage[model=NAME]`.
pub fn stages_csv(results: &Results) -> String {
    let answer = results.target.answer();
    let quality = results.stages.iter().any(|s| s.quality.is_some());
    let mut header = header(answer);
    if quality {
        header.extend(QUALITY.map(String::from));
    }
    let shaped = results
        .stages
        .iter()
        .any(|s| s.profile.as_ref().is_some_and(|p| p.point.shape.is_some()));
    if shaped {
        header.extend(SHAPE.map(String::from));
    }
    let mut out = header.join(",");
    out.push_str("\r\n");
    let extra = Extra { quality };
    for s in &results.stages {
        stage_row(&mut out, answer, s, &s.name, extra);
        if shaped {
            push_cells(&mut out, &shape_cells(s));
        }
        out.push_str("\r\n");
        for g in &s.groups {
            let name = format!("{}[{}={}]", s.name, g.by, g.label);
            stage_row(&mut out, answer, &g.summary, &name, extra);
            // A label's row is its stage's share of the same point.
            if shaped {
                push_cells(&mut out, &shape_cells(s));
            }
            out.push_str("\r\n");
        }
    }
    out
}

/// A stage's quality cells, in the order of [`QUALITY`].
fn quality_cells(s: &crate::metrics::StageSummary) -> [String; 12] {
    let pct = |v: Option<f64>| v.map(|v| (v * 100.0).to_string()).unwrap_or_default();
    let Some(q) = &s.quality else {
        return Default::default();
    };
    let interval = q.accuracy_interval;
    let share = |n| {
        q.share_of_checked(n)
            .map(|v| v.to_string())
            .unwrap_or_default()
    };
    let plain = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let judge = q.judge.as_ref();
    let judged = judge.and_then(|j| j.interval);
    let agreement = q.agreement.as_ref();
    let agreed = agreement.and_then(|a| a.interval);
    [
        pct(q.accuracy),
        pct(interval.map(|i| i[0])),
        pct(interval.map(|i| i[1])),
        q.scored.to_string(),
        share(q.repetitive),
        share(q.empty),
        plain(judge.and_then(|j| j.mean)),
        plain(judged.map(|i| i[0])),
        plain(judged.map(|i| i[1])),
        pct(agreement.and_then(|a| a.share)),
        pct(agreed.map(|i| i[0])),
        pct(agreed.map(|i| i[1])),
    ]
}

/// The optional column sets a row has before the shape's (which the caller adds).
#[derive(Clone, Copy)]
struct Extra {
    quality: bool,
}

/// `cells` after a row's last one.
fn push_cells(out: &mut String, cells: &[String]) {
    for c in cells {
        out.push(',');
        out.push_str(c);
    }
}

/// One row, without its line end: `s`'s figures under `name`.
fn stage_row(
    out: &mut String,
    answer: Answer,
    s: &crate::metrics::StageSummary,
    name: &str,
    extra: Extra,
) {
    let generates = answer.generates();
    let t = &s.throughput;
    let (group, load) = match &s.profile {
        Some(p) => (p.point.group.clone(), super::short(p.load())),
        None => (String::new(), String::new()),
    };
    let mut row: Vec<(&str, String)> = vec![
        ("", field(name)),
        ("", field(&group)),
        ("", load),
        ("", s.requests.sent.to_string()),
        ("", s.requests.ok.to_string()),
        ("", s.requests.failed.to_string()),
        ("", s.wall_time_s.to_string()),
        ("", t.requests_per_s.to_string()),
        (GENERATED[0], t.output_tokens_per_s.to_string()),
        ("", t.input_tokens_per_s.to_string()),
        ("", t.goodput_per_s.to_string()),
        ("", t.goodput_ratio.to_string()),
        ("", t.achieved_rate_per_s.to_string()),
        ("", s.tokens.input.to_string()),
        (GENERATED[1], s.tokens.output.to_string()),
        (GENERATED[2], s.tokens.reasoning.to_string()),
        (GENERATED[3], s.tokens.answer_starved.to_string()),
    ];
    row.retain(|(c, _)| generates || !GENERATED.contains(c));
    let mut row: Vec<String> = row.into_iter().map(|(_, v)| v).collect();
    if !generates {
        row.push(t.inputs_per_s.map(|v| v.to_string()).unwrap_or_default());
        row.push(s.tokens.inputs.to_string());
    }
    for (_, d) in s
        .latency
        .iter()
        .filter(|(m, _)| Metric::Latency(*m).applies_to(answer))
    {
        row.extend(figures(d));
    }
    let c = &s.client;
    row.extend([
        c.send_lag_ms.p50.to_string(),
        c.send_lag_ms.p99.to_string(),
        c.send_lag_ms.max.to_string(),
        c.cpu_percent.to_string(),
        s.validity.trusted.to_string(),
        field(&s.validity.reasons.join("; ")),
    ]);
    if extra.quality {
        row.extend(quality_cells(s));
    }
    let _ = write!(out, "{}", row.join(","));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_and_quotes_are_quoted() {
        assert_eq!(field("a"), "a");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
    }
}
