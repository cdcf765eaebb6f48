//! Speculative decoding in the reports: the stage's acceptance as the server counted it (its
//! `/metrics` over the stage, per draft position too) and as its responses reported it
//! (llama.cpp's `timings`). One list of rows for report.md and report.html (the throughput
//! table) and for the terminal summary (a line each), so the two never disagree. Every value
//! is a number formatted here; the notes are infermeter's own text.

use super::numbers::num;
use crate::metrics::StageSummary;
use crate::telemetry::{SpecSource, SpecStageSummary, TelemetryReport};

fn pct(v: f64) -> String {
    format!("{} %", num(v * 100.0))
}

/// The stage's speculative-decoding rows; none for a stage without any.
pub(super) fn rows(
    s: &StageSummary,
    telemetry: Option<&TelemetryReport>,
) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    let servers: Vec<&SpecStageSummary> = telemetry
        .and_then(|t| t.stage(&s.name))
        .map(|t| t.servers.iter().filter_map(|v| v.spec.as_ref()).collect())
        .unwrap_or_default();
    for spec in servers {
        rows.extend(server_rows(spec));
    }
    if let Some(c) = &s.spec
        && let Some(rate) = c.acceptance_rate()
    {
        rows.push((
            "draft acceptance (responses)",
            format!(
                "{} of {} draft tokens in {} responses (timings)",
                pct(rate),
                c.draft_tokens,
                c.requests
            ),
        ));
    }
    rows
}

fn server_rows(spec: &SpecStageSummary) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    let source = match spec.source {
        SpecSource::Counters => "the server's counters",
        SpecSource::Gauges => "the server's gauges, averaged",
    };
    let mut parts = Vec::new();
    if let Some(rate) = spec.acceptance_rate {
        let of = spec
            .draft_tokens
            .map(|d| format!(" of {} draft tokens", num(d)))
            .unwrap_or_default();
        parts.push(format!("{}{of}", pct(rate)));
    }
    if let Some(length) = spec.acceptance_length {
        let steps = spec
            .drafts
            .map(|d| format!(" over {} steps", num(d)))
            .unwrap_or_default();
        parts.push(format!(
            "mean acceptance length {} tokens/step{steps}",
            num(length)
        ));
    }
    if !parts.is_empty() {
        rows.push((
            "draft acceptance (server)",
            format!("{} ({source})", parts.join(" · ")),
        ));
    }
    if !spec.acceptance_rate_per_position.is_empty() {
        let by_pos: Vec<String> = spec
            .acceptance_rate_per_position
            .iter()
            .map(|r| pct(*r))
            .collect();
        rows.push(("acceptance by draft position", by_pos.join(" · ")));
    }
    if spec.counter_resets > 0 {
        rows.push((
            "draft counters reset",
            format!(
                "{} times during the stage (a server restart?): counted from zero there",
                spec.counter_resets
            ),
        ));
    }
    for n in &spec.notes {
        rows.push(("draft counters", n.clone()));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::DraftCounts;

    #[test]
    fn rows_show_both_sources_and_the_notes() {
        let spec = SpecStageSummary {
            source: SpecSource::Counters,
            drafts: Some(496.0),
            draft_tokens: Some(1984.0),
            accepted_tokens: Some(1437.0),
            acceptance_rate: Some(0.7243),
            acceptance_length: Some(3.897),
            acceptance_rate_per_position: vec![0.913, 0.796],
            counter_resets: 1,
            notes: vec!["a note".into()],
        };
        let server = server_rows(&spec);
        assert_eq!(
            server[0].1,
            "72.4 % of 1984 draft tokens · mean acceptance length 3.90 tokens/step over 496 \
             steps (the server's counters)"
        );
        assert_eq!(server[1].1, "91.3 % · 79.6 %");
        assert!(server.iter().any(|r| r.1 == "a note"));
        let s = StageSummary {
            spec: Some(DraftCounts {
                requests: 40,
                draft_tokens: 1984,
                accepted_tokens: 1437,
            }),
            ..StageSummary::default()
        };
        let responses = rows(&s, None);
        assert_eq!(responses.len(), 1);
        assert!(
            responses[0].1.starts_with("72.4 % of 1984"),
            "{responses:?}"
        );
        assert!(rows(&StageSummary::default(), None).is_empty());
    }
}
