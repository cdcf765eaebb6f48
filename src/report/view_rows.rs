//! The rows of a stage's view: its load, latencies, throughput, reasoning, client health and
//! turns, each as display-ready strings (split from `view.rs`, which assembles them).

use super::numbers::{num, short};
use super::view::{KeyValue, LatencyRow, TurnRow, kv, latency_row, ttfa_differs};
use crate::metrics::{ClientHealth, Dist, LatencyMetric, Metric, StageSummary};
use crate::protocol::Answer;

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
        .filter(|(m, _)| *m != LatencyMetric::Ttfa || ttfa_differs(s))
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
    rows.extend(reasoning_rows(&s.tokens, s.requests.ok));
    rows
}

/// What a reasoning model spent: the reasoning tokens where a server reported them, and the
/// requests whose reasoning used the whole output budget and gave no answer.
pub(super) fn reasoning_rows(t: &crate::metrics::Tokens, ok: u64) -> Vec<KeyValue> {
    let mut rows = Vec::new();
    if t.reasoning_reported > 0 {
        rows.push(kv(
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
        rows.push(kv(
            "answer-starved",
            format!(
                "{} of {ok} ok requests reasoned until max_tokens ran out and gave no answer \
                 (not counted as good): raise the stage's output length or lower the target's \
                 reasoning-effort",
                t.answer_starved
            ),
        ));
    }
    if t.tool_round_trips > 0 {
        rows.push(kv(
            "tool round trips",
            format!(
                "{} (session turns that answered tool calls with tool results)",
                t.tool_round_trips
            ),
        ));
    }
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
            format!("{} % of one core ({} cores)", num(c.cpu_percent), c.cores),
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
