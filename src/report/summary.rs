//! The few lines `infermeter run` prints when it ends: verdict, one row per stage, and the
//! SLA verdicts. Plain text that reads the same in a terminal and in a CI log.

use std::fmt::Write as _;

use crate::results::Results;

/// Renders the end-of-run summary.
pub fn render_summary_text(r: &Results) -> String {
    let mut out = String::new();
    let h = super::headline(r);
    let _ = writeln!(
        out,
        "\n{}  {}  (plan {}, seed {}, target {} · {})\n  {}",
        h.word, r.scenario, r.plan_hash, r.seed, r.target.endpoint, r.target.model, h.detail
    );
    let _ = writeln!(
        out,
        "\n{:<16} {:>7} {:>7} {:>6} {:>8} {:>9} {:>17} {:>15} {:>10} {:>9}  trusted",
        "stage",
        "sent",
        "ok",
        "failed",
        "req/s",
        "out tok/s",
        "TTFT p50/p99 ms",
        "ITL p50/p99 ms",
        "E2E p99 ms",
        "lag p99"
    );
    for s in &r.stages {
        let l = &s.latency;
        let _ = writeln!(
            out,
            "{:<16} {:>7} {:>7} {:>6} {:>8.1} {:>9.0} {:>17} {:>15} {:>10.1} {:>9.3}  {}",
            truncate(&s.name, 16),
            s.requests.sent,
            s.requests.ok,
            s.requests.failed,
            s.throughput.requests_per_s,
            s.throughput.output_tokens_per_s,
            format!("{:.1} / {:.1}", l.ttft_ms.p50, l.ttft_ms.p99),
            format!("{:.1} / {:.1}", l.itl_ms.p50, l.itl_ms.p99),
            l.e2e_ms.p99,
            s.client.send_lag_ms.p99,
            if s.validity.trusted { "yes" } else { "NO" },
        );
        for reason in &s.validity.reasons {
            let _ = writeln!(out, "    ! {reason}");
        }
        for note in &s.notes {
            let _ = writeln!(out, "    note: {note}");
        }
        if s.requests.retried > 0 {
            let _ = writeln!(
                out,
                "    retried on a fresh connection: {} (the server closed reused connections)",
                s.requests.retried
            );
        }
        if let Some(line) = super::attribution::sentence(s) {
            let _ = writeln!(out, "    {line}");
        }
        if !s.requests.errors.is_empty() {
            let errors: Vec<String> = s
                .requests
                .errors
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            let _ = writeln!(out, "    errors: {}", errors.join(", "));
        }
    }
    if !r.sla.is_empty() {
        let _ = writeln!(out, "\nSLA");
        for v in &r.sla {
            // Unitless metrics (a ratio, a count) have no unit to print.
            let with_unit = |n: f64| match v.unit.as_str() {
                "" => fmt_num(n),
                unit => format!("{} {unit}", fmt_num(n)),
            };
            let interval = v.interval.map_or_else(String::new, |i| {
                format!(" [{}, {}]", fmt_num(i.low), fmt_num(i.high))
            });
            let _ = writeln!(
                out,
                "  {} {:<32} {:<16} observed {}{interval} (threshold {})",
                super::mark(v.outcome),
                v.expr,
                v.stage.as_deref().unwrap_or("all"),
                with_unit(v.observed),
                with_unit(v.threshold),
            );
            if v.outcome == crate::sla::SlaOutcome::Inconclusive {
                let why = v.note.as_deref().unwrap_or("undecided");
                let more = v.more.map_or_else(String::new, |m| {
                    format!(
                        "; about {} more {} would likely decide it",
                        m.count,
                        m.of.noun()
                    )
                });
                let _ = writeln!(out, "      undecided: {why}{more}");
            } else if v.outcome == crate::sla::SlaOutcome::Fail
                && let Some(why) = &v.note
            {
                let _ = writeln!(out, "      {why}");
            }
        }
        if let Some(i) = r.sla.iter().find_map(|v| v.interval) {
            let _ = writeln!(
                out,
                "  [low, high]: {:.0} % confidence intervals",
                i.confidence.min(r.sla_policy.confidence) * 100.0
            );
        }
    }
    out.push('\n');
    out
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v == 0.0 || v.abs() >= 0.01 {
        format!("{v:.2}")
    } else {
        // A threshold written in µs must not print as 0.00 ms.
        super::view::num(v)
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}
