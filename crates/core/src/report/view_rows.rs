//! The rows of a stage's view: its load, latencies, throughput, reasoning, client health and
//! turns, each as display-ready strings (split from `view.rs`, which assembles them).

use super::numbers::{num, short};
use crate::metrics::{Bound, ClientHealth, Dist, Figure, LatencyMetric, Metric, StageSummary};
use crate::protocol::Answer;
use serde::Serialize;

/// What the stage was asked to send, and what it sent.
pub(super) fn load_rows(s: &StageSummary) -> Vec<KeyValue> {
    let p = &s.planned;
    // A multi-turn stage's arrivals are sessions (its later turns follow the replies), and
    // its send rate counts first turns: say so rather than call them requests.
    let (rate, units) = if s.per_turn.is_empty() {
        ("req/s", "requests")
    } else {
        ("sessions/s", "sessions")
    };
    let planned = match (p.rate_per_s, p.clients) {
        (Some(r), _) => format!("{} at {} {rate}", p.arrival, short(r)),
        (None, Some(c)) => format!("{} with {c} clients", p.arrival),
        (None, None) => p.arrival.to_string(),
    };
    let bound = match (p.requests, p.duration_s) {
        (Some(n), Some(d)) => format!("{n} {units}, {} s", short(d)),
        (Some(n), None) => format!("{n} {units}"),
        (None, Some(d)) => format!("{} s", short(d)),
        (None, None) => "–".into(),
    };
    let r = &s.requests;
    vec![
        kv("planned", planned),
        kv("bound", bound),
        kv(
            "achieved send rate",
            format!("{} {rate}", num(s.throughput.achieved_rate_per_s)),
        ),
        kv(
            "requests",
            format!("{} sent · {} ok · {} failed", r.sent, r.ok, r.failed),
        ),
        kv("wall time", format!("{} s", num(s.wall_time_s))),
    ]
}

/// One row per latency distribution the stage keeps and its API has, TTFA only where it
/// differs from TTFT and a metric added after schema 2 only where measured (older results do
/// not have it).
pub(super) fn latency_rows(s: &StageSummary, answer: Answer) -> Vec<LatencyRow> {
    s.latency
        .iter()
        .filter(|(m, _)| Metric::Latency(*m).applies_to(answer))
        .filter(|(m, _)| *m != LatencyMetric::Ttfa || super::workload::ttfa_differs(s))
        .filter(|(m, d)| !m.spec().optional || d.count > 0)
        .map(|(m, d)| latency_row(label(s, m, d), d))
        .collect()
}

/// A metric's label, saying so when its figures rest on estimated output counts (the server
/// sent no count: the streamed text was re-tokenized).
pub(super) fn label(s: &StageSummary, m: LatencyMetric, d: &Dist) -> String {
    let estimated = s.tokens.tpot_estimated.min(d.count);
    if m.def().from_output_tokens && estimated > 0 {
        format!("{} (estimated for {estimated} of {})", m.label(), d.count)
    } else {
        m.label().to_string()
    }
}

/// The stage's rates, each where its API has it: output tokens for a generation API, inputs
/// for a pooling one.
pub(super) fn throughput_rows(s: &StageSummary, answer: Answer) -> Vec<KeyValue> {
    let t = &s.throughput;
    let mut rows = vec![kv("requests", format!("{} req/s", num(t.requests_per_s)))];
    if answer.generates() {
        rows.push(kv(
            "output tokens",
            format!("{} tok/s", num(t.output_tokens_per_s)),
        ));
    }
    if let Some(n) = t.inputs_per_s {
        rows.push(kv("inputs", format!("{} inputs/s", num(n))));
    }
    rows.extend([
        kv(
            "input tokens",
            format!("{} tok/s", num(t.input_tokens_per_s)),
        ),
        kv("goodput", format!("{} req/s", num(t.goodput_per_s))),
        kv(
            "goodput share",
            format!("{} %", num(t.goodput_ratio * 100.0)),
        ),
        kv("tokens counted", tokens_counted(&s.tokens)),
    ]);
    rows.extend(super::workload::rows(s).into_iter().map(|(k, v)| kv(k, v)));
    rows
}

/// `1200 in · 400 out (from usage 10, …)`: every source that counted a request, the
/// estimates named as such.
fn tokens_counted(t: &crate::metrics::Tokens) -> String {
    let sources = [
        (t.from_usage, "from usage"),
        (t.from_timings, "from the server's timings"),
        (t.from_tokenize, "estimated by the server's /tokenize"),
        (t.from_tokenizer, "estimated by the scenario's tokenizer"),
    ];
    let mut parts: Vec<String> = sources
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    parts.push(format!("{} mismatched", t.mismatched));
    format!("{} in · {} out ({})", t.input, t.output, parts.join(", "))
}

pub(super) fn client_rows(c: &ClientHealth) -> Vec<KeyValue> {
    [
        kv(
            LatencyMetric::SendLag.label(),
            format!(
                "p50 {} ms · p99 {} ms · max {} ms",
                num(c.send_lag_ms.p50),
                num(c.send_lag_ms.p99),
                num(c.send_lag_ms.max)
            ),
        ),
        kv(
            "CPU",
            format!(
                "{} % of one core ({})",
                num(c.cpu_percent),
                crate::units::counted(c.cores, "core", "cores")
            ),
        ),
    ]
    .into_iter()
    // Known on Linux only: the share of the client's CPU time a hypervisor took.
    .chain(
        c.steal_percent
            .map(|p| kv("CPU steal", format!("{} %", num(p)))),
    )
    .chain(
        c.poll_idle
            .then(|| kv("idle CPUs", "kept polling (--poll-idle)".to_string())),
    )
    .collect()
}

pub(super) fn turn_rows(s: &StageSummary) -> Vec<TurnRow> {
    s.per_turn
        .iter()
        .map(|t| {
            let (ttft, e2e) = (
                t.latency[LatencyMetric::Ttft],
                t.latency[LatencyMetric::E2e],
            );
            TurnRow {
                turn: t.turn,
                sent: t.sent,
                ok: t.ok,
                input_tokens: num(t.mean_input_tokens),
                cached: t
                    .cached_share
                    .map_or_else(|| "–".to_string(), |c| format!("{} %", num(100.0 * c))),
                ttft_p50: num(ttft.p50),
                ttft_p99: num(ttft.p99),
                e2e_p50: num(e2e.p50),
                e2e_p99: num(e2e.p99),
            }
        })
        .collect()
}

#[derive(Debug, Serialize)]
pub struct KeyValue {
    pub key: &'static str,
    pub value: String,
}

#[derive(Debug, Serialize)]
pub struct TurnRow {
    pub turn: u32,
    pub sent: u64,
    pub ok: u64,
    pub input_tokens: String,
    /// The prefix cache's share of the turn's prompt tokens (`–` when no response said).
    pub cached: String,
    pub ttft_p50: String,
    pub ttft_p99: String,
    pub e2e_p50: String,
    pub e2e_p99: String,
}

#[derive(Debug, Serialize)]
pub struct LatencyRow {
    /// The metric's label; for one computed from output counts some of which are estimates,
    /// followed by how many (`TPOT (estimated for 3 of 40)`).
    pub metric: String,
    pub count: String,
    pub p50: String,
    pub p90: String,
    pub p95: String,
    pub p99: String,
    pub p999: String,
    pub max: String,
    pub mean: String,
}

pub(super) fn latency_row(metric: String, d: &Dist) -> LatencyRow {
    let f = |v: f64| {
        if d.count == 0 {
            "–".to_string()
        } else {
            num(v)
        }
    };
    // A figure with its interval under it; "n < N" when too few samples for one.
    let ci = |fig: Figure| {
        let v = f(fig.of(d));
        match d.intervals.map(|iv| iv.get(fig)) {
            _ if d.count == 0 => v,
            Some(Bound::Interval { low, high, .. }) => {
                format!("{v} <sub>[{}, {}]</sub>", num(low), num(high))
            }
            Some(Bound::Insufficient { needed, .. }) if needed > 0 => {
                format!("{v} <sub>(n < {needed})</sub>")
            }
            _ => v,
        }
    };
    LatencyRow {
        metric,
        count: d.count.to_string(),
        p50: ci(Figure::P50),
        p90: ci(Figure::P90),
        p95: ci(Figure::P95),
        p99: ci(Figure::P99),
        p999: ci(Figure::P999),
        max: f(d.max),
        mean: ci(Figure::Mean),
    }
}

pub(super) fn kv(key: &'static str, value: String) -> KeyValue {
    KeyValue { key, value }
}
