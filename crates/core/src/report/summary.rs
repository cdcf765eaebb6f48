//! The few lines `infermeter run` prints when it ends: verdict, one row per stage, each
//! sweep's or search's knee and SLA-compliant maximum with its points' verdicts, and the SLA
//! verdicts. Plain text that reads the same in a terminal and in a CI log; with colour
//! on, the outcome words and marks are coloured (ANSI), nothing else changes. Names, the
//! target, reasons and notes come from the scenario, the server and results files: each is
//! shown through [`crate::escape::terminal`] (no escape sequence, no line of its own).

use std::fmt::Write as _;

use crate::escape::terminal as t;
use crate::metrics::LatencyMetric as L;
use crate::results::Results;

/// Renders the end-of-run summary, without colour.
pub fn render_summary_text(r: &Results) -> String {
    render_summary_text_with(r, false)
}

/// The width validity reasons are wrapped to.
const WRAP: usize = 100;

/// `text` in an ANSI colour when `on`: green, red, yellow or magenta by outcome word.
fn paint(text: &str, word: &str, on: bool) -> String {
    if !on {
        return text.to_string();
    }
    let code = match word {
        "PASSED" | "pass" => "32",
        "FAILED" | "fail" => "31",
        "INCONCLUSIVE" | "inconclusive" => "33",
        _ => "35",
    };
    format!("\x1b[1;{code}m{text}\x1b[0m")
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word stays
/// whole on its own line).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Renders the end-of-run summary; `color` paints the outcome words.
pub fn render_summary_text_with(r: &Results, color: bool) -> String {
    let mut out = String::new();
    let h = super::headline(r);
    let _ = writeln!(
        out,
        "\n{}  {}  (plan {}, seed {}, target {} · {})\n  {}",
        paint(h.word, h.word, color),
        t(&r.scenario),
        r.plan_hash,
        r.seed,
        t(&r.target.endpoint),
        t(&r.target.model),
        t(&h.detail)
    );
    for line in r
        .target
        .network
        .iter()
        .flat_map(super::network::summary_lines)
    {
        let _ = writeln!(out, "{}", t(&line));
    }
    let answer = r.target.answer();
    let pooled = !answer.generates();
    if pooled {
        // A pooling API's answer comes whole: no TTFT, ITL or output to show.
        let _ = writeln!(
            out,
            "\n{:<16} {:>7} {:>7} {:>6} {:>8} {:>9} {:>11} {:>17} {:>10}  trusted",
            "stage",
            "sent",
            "ok",
            "failed",
            "req/s",
            "inputs/s",
            "in tok/s",
            "E2E p50/p99 ms",
            "lag p99 ms"
        );
    } else {
        header(&mut out);
    }
    for s in &r.stages {
        if pooled {
            pooled_row(&mut out, s);
            stage_notes(&mut out, s);
        } else {
            stage_lines(&mut out, s, answer.streams());
        }
        for (key, value) in super::spec::rows(s, r.telemetry.as_ref()) {
            let _ = writeln!(out, "    {key}: {}", t(&value));
        }
        super::urls::summary_lines(&mut out, r.target.routes.as_ref(), s);
    }
    profile_lines(&mut out, r, color);
    super::configs::summary_lines(&mut out, r);
    if !r.sla.is_empty() {
        sla_lines(&mut out, r, color);
    }
    super::mlperf::summary_lines(&mut out, r);
    out.push('\n');
    out
}

/// The table's header for a generation API.
fn header(out: &mut String) {
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
        "lag p99 ms"
    );
}

/// A pooling API's stage row: inputs and prompt tokens per second, E2E.
fn pooled_row(out: &mut String, s: &crate::metrics::StageSummary) {
    let e2e = &s.latency[L::E2e];
    let _ = writeln!(
        out,
        "{:<16} {:>7} {:>7} {:>6} {:>8.1} {:>9.1} {:>11.0} {:>17} {:>10.3}  {}",
        truncate(&t(&s.name), 16),
        s.requests.sent,
        s.requests.ok,
        s.requests.failed,
        s.throughput.requests_per_s,
        s.throughput.inputs_per_s.unwrap_or(0.0),
        s.throughput.input_tokens_per_s,
        if e2e.count > 0 {
            format!("{:.1} / {:.1}", e2e.p50, e2e.p99)
        } else {
            "–".to_string()
        },
        s.client.send_lag_ms.p99,
        if s.validity.trusted { "yes" } else { "NO" },
    );
}

/// A distribution's p99 to one decimal, or a dash when it has no sample.
fn one(d: crate::metrics::Dist) -> String {
    if d.count > 0 {
        format!("{:.1}", d.p99)
    } else {
        "–".to_string()
    }
}

/// Each profile group's answer (knee, SLA-compliant maximum) and its points' verdicts, marked
/// as in the SLA lines; a point past the knee that does not gate is in brackets.
fn profile_lines(out: &mut String, r: &Results, color: bool) {
    let groups = super::profiles(r);
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nProfiles");
    for g in &groups {
        let _ = writeln!(out, "  {} `{}`: {}", g.kind, t(&g.group), g.answer);
        let points: Vec<String> = g
            .rows
            .iter()
            .map(|row| {
                let mark = paint(super::mark_word(row.outcome), row.outcome, color);
                let knee = if row.knee { " knee" } else { "" };
                let point = format!("{} {mark}{knee}", super::numbers::short(row.load));
                if row.gates {
                    point
                } else {
                    format!("({point})")
                }
            })
            .collect();
        let _ = writeln!(out, "    points ({}): {}", g.axis, points.join("  "));
        if g.rows.iter().any(|row| !row.gates) {
            let _ = writeln!(out, "    (…): {}", crate::sla::NOT_GATING);
        }
        if let Some(f) = r.frontiers.iter().find(|f| f.group == g.group) {
            let _ = writeln!(out, "    {}", super::frontier_line(f));
        }
        if let Some(line) = super::profile_quality::accuracy_line(g) {
            let _ = writeln!(out, "    {line}");
        }
    }
}

/// A stage's row of the table, and its reasons, notes and errors under it. Answers that
/// came whole (`stream #false`) have no TTFT or ITL, and a figure without a sample (every
/// request failed) has no value: a dash, never 0.0.
fn stage_lines(out: &mut String, s: &crate::metrics::StageSummary, streams: bool) {
    let l = &s.latency;
    let pair = |m: L| {
        if streams && l[m].count > 0 {
            format!("{:.1} / {:.1}", l[m].p50, l[m].p99)
        } else {
            "–".to_string()
        }
    };
    let _ = writeln!(
        out,
        "{:<16} {:>7} {:>7} {:>6} {:>8.1} {:>9.0} {:>17} {:>15} {:>10} {:>10.3}  {}",
        truncate(&t(&s.name), 16),
        s.requests.sent,
        s.requests.ok,
        s.requests.failed,
        s.throughput.requests_per_s,
        s.throughput.output_tokens_per_s,
        pair(L::Ttft),
        pair(L::Itl),
        one(l[L::E2e]),
        s.client.send_lag_ms.p99,
        if s.validity.trusted { "yes" } else { "NO" },
    );
    stage_notes(out, s);
}

/// A stage's reasons, notes and errors, under its row.
fn stage_notes(out: &mut String, s: &crate::metrics::StageSummary) {
    for reason in &s.validity.reasons {
        for (i, line) in wrap(&t(reason), WRAP - 6).iter().enumerate() {
            let _ = writeln!(out, "    {} {line}", if i == 0 { "!" } else { " " });
        }
    }
    if let Some(u) = &s.until_decided {
        let _ = writeln!(out, "    {}", until_sentence(u));
    }
    if let Some(line) = steady_sentence(s) {
        let _ = writeln!(out, "    {line}");
    }
    if let Some(line) = super::quality::sentence(s) {
        let _ = writeln!(out, "    {line}");
    }
    if let Some(w) = super::quality::warning(s) {
        let _ = writeln!(out, "    ! {w}");
    }
    if let Some(line) = sessions_sentence(s) {
        let _ = writeln!(out, "    {line}");
    }
    group_lines(out, s);
    for note in &s.notes {
        let _ = writeln!(out, "    note: {}", t(note));
    }
    if let Some(line) = super::workload::ttfa_sentence(s) {
        let _ = writeln!(out, "    {line}");
    }
    // The workload's own figures (reasoning, tool calls, images), as report.md shows them.
    for (key, value) in super::workload::rows(s) {
        let _ = writeln!(out, "    {key}: {value}");
    }
    if s.requests.retried > 0 {
        let _ = writeln!(
            out,
            "    retried on a fresh connection: {} (the server closed reused connections)",
            s.requests.retried
        );
    }
    if let Some(line) = super::attribution::sentence(s) {
        let _ = writeln!(out, "    {}", t(&line));
    }
    error_lines(out, s);
}

/// The stage's per-model or per-class rows, and whether priority was honoured.
fn group_lines(out: &mut String, s: &crate::metrics::StageSummary) {
    let first = super::groups::first_label(s);
    for g in super::groups::group_rows(s) {
        let priority = if g.priority.is_empty() {
            String::new()
        } else {
            format!(" (priority {})", g.priority)
        };
        let mut line = format!(
            "{} {}{priority}: {} sent, {} failed, {} req/s, {first} p50 {} p95 {} ms, E2E p95 {} ms",
            g.by, g.label, g.sent, g.failed, g.requests_per_s, g.first_p50, g.first_p95, g.e2e_p95
        );
        for (name, cell) in [("accuracy", &g.accuracy), ("judge", &g.judge)] {
            if !cell.is_empty() {
                line.push_str(&format!(" · {name} {cell}"));
            }
        }
        let _ = writeln!(out, "    {}", t(&line));
    }
    if let Some(line) = super::groups::priority_sentence(s) {
        for (i, l) in wrap(&t(&line), WRAP - 6).iter().enumerate() {
            let _ = writeln!(out, "    {}{l}", if i == 0 { "" } else { "  " });
        }
    }
}

/// The stage's failures by kind, and what a `response_id_*` one means.
fn error_lines(out: &mut String, s: &crate::metrics::StageSummary) {
    if s.requests.errors.is_empty() {
        return;
    }
    let errors: Vec<String> = s
        .requests
        .errors
        .iter()
        .map(|(k, v)| format!("{}: {v}", t(k)))
        .collect();
    let _ = writeln!(out, "    errors: {}", errors.join(", "));
    if s.requests
        .errors
        .keys()
        .any(|k| k.starts_with("response_id_"))
    {
        let _ = writeln!(
            out,
            "    response_id_*: a response carried no id a later turn could send back as \
             previous_response_id (missing, over {} bytes, or not printable ASCII): does \
             the server store responses? Drop state=\"previous-response-id\" to resend \
             the history instead",
            crate::protocol::MAX_ID_BYTES
        );
    }
}

/// "sessions: task time p50/p95 4.1 / 6.0 s (12 tasks), turn TTFT p95 80.2 ms, cached by turn
/// 0 % → 41 % → 77 %" (the root sessions' turns), then each depth of subagents: a multi-turn
/// stage's per-session figures, those it has.
pub(crate) fn sessions_sentence(s: &crate::metrics::StageSummary) -> Option<String> {
    if s.per_turn.is_empty() && s.per_depth.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    let task = s.latency[L::Session];
    if task.count > 0 {
        parts.push(format!(
            "task time p50/p95 {:.2} / {:.2} s ({} tasks)",
            task.p50 / 1e3,
            task.p95 / 1e3,
            task.count
        ));
    }
    let turn = s.latency[L::TurnTtft];
    if turn.count > 0 {
        parts.push(format!("turn TTFT p95 {:.1} ms", turn.p95));
    }
    let cached: Vec<String> = s
        .per_turn
        .iter()
        .take(8)
        .map_while(|t| t.cached_share.map(|c| format!("{:.0} %", 100.0 * c)))
        .collect();
    if !cached.is_empty() {
        parts.push(format!("cached by turn {}", cached.join(" → ")));
    }
    // Subagents by depth: "subagents depth 1: 24 turns, TTFT p95 41.0 ms, cached 63 %".
    for d in &s.per_depth {
        let ttft = d.figures.latency[L::Ttft];
        let mut line = format!("subagents depth {}: {} turns", d.depth, d.figures.sent);
        if ttft.count > 0 {
            line.push_str(&format!(", TTFT p95 {:.1} ms", ttft.p95));
        }
        if let Some(c) = d.figures.cached_share {
            line.push_str(&format!(", cached {:.0} %", 100.0 * c));
        }
        parts.push(line);
    }
    (!parts.is_empty()).then(|| format!("sessions: {}", parts.join(", ")))
}

/// "steady 4–10 s (ramp 4.0 s, drain 1.3 s): 38.2 req/s, TTFT p50/p99 12.0 / 45.1 ms, E2E
/// p99 160.2 ms (whole stage: TTFT p99 120.4 ms)": the window beside the whole stage.
pub(crate) fn steady_sentence(s: &crate::metrics::StageSummary) -> Option<String> {
    let w = s.steady.as_ref()?;
    let l = &w.latency;
    // A pooling API's answers come whole: no TTFT to show, so none is printed as 0.
    let (ttft, whole_ttft) = if l[L::Ttft].count > 0 {
        (
            format!(
                "TTFT p50/p99 {:.1} / {:.1} ms, ",
                l[L::Ttft].p50,
                l[L::Ttft].p99
            ),
            format!("TTFT p99 {:.1} ms, ", s.latency[L::Ttft].p99),
        )
    } else {
        (String::new(), String::new())
    };
    Some(format!(
        "steady {:.0}–{:.0} s (ramp {:.1} s, drain {:.1} s; {} requests): {:.1} req/s, {ttft}E2E \
         p99 {:.1} ms (whole stage: {whole_ttft}E2E p99 {:.1} ms)",
        w.from_s,
        w.to_s,
        w.from_s,
        (s.wall_time_s - w.to_s).max(0.0),
        w.requests.sent,
        w.throughput.requests_per_s,
        l[L::E2e].p99,
        s.latency[L::E2e].p99,
    ))
}

/// The SLA verdicts, one line each (and why, when undecided or failed).
/// "until-decided: decided after 143 requests (4.2 s, 5 looks); at most 20000".
pub(crate) fn until_sentence(u: &crate::metrics::UntilDecided) -> String {
    use crate::metrics::UntilStop;
    let max = match (u.max_requests, u.max_s) {
        (Some(n), _) => format!("at most {n} requests"),
        (None, Some(s)) => format!("at most {s:.0} s"),
        (None, None) => "no maximum".to_string(),
    };
    let how = match u.stopped {
        UntilStop::Decided => format!(
            "decided after {} requests ({:.1} s, {} looks{}); in-flight requests then drained",
            u.stopped_at_requests,
            u.stopped_at_s,
            u.looks,
            match (u.decided_by, &u.prefix) {
                (Some(crate::metrics::DecidedBy::Prefix), Some(p)) => format!(
                    ", on the first {} requests in send order, all completed",
                    p.requests
                ),
                _ => String::new(),
            }
        ),
        UntilStop::MaxReached => format!(
            "not decided within its maximum ({} requests, {:.1} s)",
            u.stopped_at_requests, u.stopped_at_s
        ),
        UntilStop::Interrupted => format!(
            "stopped before it was decided ({} requests, {:.1} s)",
            u.stopped_at_requests, u.stopped_at_s
        ),
    };
    format!("until-decided: {how}; {max}; verdicts on confidence sequences")
}

fn sla_lines(out: &mut String, r: &Results, color: bool) {
    let _ = writeln!(out, "\nSLA");
    for v in &r.sla {
        // Unitless metrics (a ratio, a count) have no unit to print.
        let with_unit = |n: f64| match v.unit() {
            "" => fmt_num(n),
            unit => format!("{} {unit}", fmt_num(n)),
        };
        let interval = v.interval.map_or_else(String::new, |i| {
            format!(" [{}, {}]", fmt_num(i.low), fmt_num(i.high))
        });
        // A verdict that observed nothing says so, never "observed 0.00 ms".
        let observed = super::absence(r, v).map_or_else(
            || format!("observed {}", with_unit(v.observed)),
            str::to_string,
        );
        let _ = writeln!(
            out,
            "  {} {:<32} {:<16} {observed}{interval} (threshold {})",
            paint(super::mark(v.outcome), v.outcome.as_str(), color),
            v.assertion.to_string(),
            t(v.stage.as_deref().unwrap_or("all")),
            with_unit(v.threshold),
        );
        if !v.gates {
            let _ = writeln!(out, "      {}", crate::sla::NOT_GATING);
        }
        if v.outcome == crate::sla::SlaOutcome::Inconclusive {
            let why = v.note.as_deref().unwrap_or("undecided");
            let more = v.more.map_or_else(String::new, |m| format!("; {m}"));
            let _ = writeln!(out, "      undecided: {}{more}", t(why));
        } else if let Some(why) = &v.note
            && (v.outcome == crate::sla::SlaOutcome::Fail
                || v.basis
                    .as_ref()
                    .is_some_and(|b| *b != crate::sla::Basis::Numbers))
        {
            // A failure says why; a pass says so when a flag on its stage was weighed.
            let _ = writeln!(out, "      {}", t(why));
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

fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v == 0.0 || v.abs() >= 0.01 {
        format!("{v:.2}")
    } else {
        // A threshold written in µs must not print as 0.00 ms.
        super::numbers::num(v)
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_wrap_at_word_boundaries() {
        let text = "send lag p99 1.9 ms above 1 ms: the client could not keep up with the schedule, so latency includes its own delay";
        let lines = wrap(text, 40);
        assert!(lines.len() > 2);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert_eq!(lines.join(" "), text, "no word cut");
    }

    #[test]
    fn colour_only_when_asked() {
        assert_eq!(paint("PASSED", "PASSED", false), "PASSED");
        assert_eq!(paint("FAILED", "FAILED", true), "\x1b[1;31mFAILED\x1b[0m");
    }
}
