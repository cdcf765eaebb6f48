//! The figures only some workloads have, each shown only where its stage has that workload:
//! a reasoning model's tokens and answer-starved requests, tool calls and round trips, the
//! images sent and the vision tokens they cost. One list of rows for report.md and
//! report.html (the throughput table) and for the terminal summary (a line each), so the two
//! never disagree. Every value is a number infermeter counted: nothing the server wrote.

use super::numbers::num;
use crate::metrics::{LatencyMetric, StageSummary};

/// The stage's workload rows, in the order a request meets them; none for a plain stage.
pub(super) fn rows(s: &StageSummary) -> Vec<(&'static str, String)> {
    let (t, ok) = (&s.tokens, s.requests.ok);
    let mut rows = Vec::new();
    if t.reasoning_reported > 0 {
        rows.push((
            "reasoning tokens",
            format!(
                "{} of {} out ({} %; reported by {} requests)",
                t.reasoning,
                t.output,
                num(t.reasoning as f64 / t.output.max(1) as f64 * 100.0),
                t.reasoning_reported
            ),
        ));
    }
    if t.answer_starved > 0 {
        rows.push((
            "answer-starved",
            format!(
                "{} of {ok} ok requests reasoned until max_tokens ran out and gave no answer \
                 (not counted as good): raise the stage's output length or lower the target's \
                 reasoning-effort",
                t.answer_starved
            ),
        ));
    }
    if t.tool_answers > 0 {
        rows.push((
            "tool calls",
            format!(
                "{} in {} of {ok} ok answers ({} per answer that called)",
                t.tool_calls,
                t.tool_answers,
                num(t.tool_calls as f64 / t.tool_answers as f64)
            ),
        ));
    }
    if t.tool_round_trips > 0 {
        rows.push((
            "tool round trips",
            format!(
                "{} (session turns that answered tool calls with tool results)",
                t.tool_round_trips
            ),
        ));
    }
    rows.extend(image_rows(s));
    rows
}

/// The images sent (with their size) and, where the server's usage counted the prompt, the
/// vision tokens they cost.
fn image_rows(s: &StageSummary) -> Vec<(&'static str, String)> {
    let Some(p) = s.payload.as_ref().filter(|p| p.images > 0) else {
        return Vec::new();
    };
    let mut rows = vec![(
        "images",
        format!(
            "{} sent ({} per request; {} megapixels, {} KiB encoded in all)",
            p.images,
            num(p.images as f64 / p.requests.max(1) as f64),
            num(p.image_pixels as f64 / 1e6),
            num(p.image_bytes as f64 / 1024.0)
        ),
    )];
    if let Some(per) = p.vision_tokens_per_image {
        rows.push((
            "vision tokens",
            format!(
                "{} per image ({} over {} images of {} ok requests: the server's prompt count \
                 less the text's)",
                num(per),
                p.vision_tokens,
                p.vision_images,
                p.vision_requests
            ),
        ));
    }
    rows
}

/// "TTFA p50/p99 40.1 / 52.3 ms (first answer token, after reasoning; TTFT p50/p99 …)": for
/// the terminal summary, whose table has TTFT only; report.md has TTFA in its latency table.
/// Only where it differs from TTFT (a model that reasons before answering).
pub(super) fn ttfa_sentence(s: &StageSummary) -> Option<String> {
    if !ttfa_differs(s) {
        return None;
    }
    let (a, t) = (
        &s.latency[LatencyMetric::Ttfa],
        &s.latency[LatencyMetric::Ttft],
    );
    Some(format!(
        "TTFA p50/p99 {:.1} / {:.1} ms (the first answer token, after reasoning; TTFT p50/p99 \
         {:.1} / {:.1} ms; {} of {} ok requests answered)",
        a.p50, a.p99, t.p50, t.p99, a.count, s.requests.ok
    ))
}

/// TTFA is worth a row only for models that reason before answering: otherwise every request's
/// first answer token is its first token and the row repeats TTFT.
pub(super) fn ttfa_differs(s: &StageSummary) -> bool {
    let (a, t) = (
        &s.latency[LatencyMetric::Ttfa],
        &s.latency[LatencyMetric::Ttft],
    );
    a.count > 0 && (a.p50, a.p99, a.max, a.mean) != (t.p50, t.p99, t.max, t.mean)
}
