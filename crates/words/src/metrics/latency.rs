//! The latency metrics, one row each: what the vocabulary says of every metric
//! ([`MetricDef`]), how one request is measured for it, where a stage keeps it and how its
//! samples may be read. Adding a latency metric is adding a variant and its row here (and its
//! line in `docs/metrics.md`): the histograms, summaries, `results.json` (and its schema), the
//! SLA grammar, `compare`, the CSV and the reports follow from the row.

use super::def::{Aggregation, ApiScope, LateClient, MetricDef, MetricKind, Percentile, Worse};
use super::record::RequestRecord;

/// The latency metrics a stage keeps a histogram of, in the order every list of them follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LatencyMetric {
    Ttft,
    Itl,
    Tpot,
    E2e,
    Ntpot,
    Ttfa,
    SendLag,
    Session,
    TurnTtft,
}

impl LatencyMetric {
    pub const ALL: [LatencyMetric; 9] = [
        LatencyMetric::Ttft,
        LatencyMetric::Itl,
        LatencyMetric::Tpot,
        LatencyMetric::E2e,
        LatencyMetric::Ntpot,
        LatencyMetric::Ttfa,
        LatencyMetric::SendLag,
        LatencyMetric::Session,
        LatencyMetric::TurnTtft,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn spec(self) -> &'static LatencySpec {
        &LATENCY[self as usize]
    }

    pub fn def(self) -> &'static MetricDef {
        &self.spec().def
    }

    /// Its key in `latency` and `histograms` (and `client` for send lag): `ttft_ms`…
    pub fn key(self) -> &'static str {
        self.def().key
    }

    /// As SLAs write it: `ttft`.
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// As reports title it: `TTFT`.
    pub fn label(self) -> &'static str {
        self.def().label
    }

    /// Required in `results.json`: a metric of schema 2 that every API has (the streamed
    /// ones are absent from a pooling API's stages, the later ones from older results).
    pub fn always_written(self) -> bool {
        !self.spec().optional && self.def().scope == ApiScope::All
    }

    /// What request `r` contributes to the metric's histogram.
    pub fn measure(self, r: &RequestRecord) -> Sample<'_> {
        (self.spec().measure)(r)
    }

    /// What request `r` contributes net of what the client may have added (see
    /// [`LatencySpec::net`]); nothing for a metric without a net measure.
    pub fn measure_net<'a>(self, r: &'a RequestRecord, read: &dyn Fn(u64) -> u64) -> Sample<'a> {
        self.spec().net.map_or(Sample::None, |f| f(r, read))
    }
}

/// What one request contributes to a latency metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample<'a> {
    /// Nothing (a failed request, or one without the events the metric needs).
    None,
    /// One value, in nanoseconds.
    Ns(u64),
    /// One value per gap, in microseconds.
    GapsUs(&'a [u32]),
    /// A net sample's gaps (µs) between events read from `first_ns` on: each less a bound on
    /// how late the client read the event that ends it (`measure::record_net`). As measured,
    /// the gaps themselves.
    ReadGapsUs { gaps: &'a [u32], first_ns: u64 },
}

/// Everything a latency metric is, besides its vocabulary entry.
#[derive(Debug, Clone, Copy)]
pub struct LatencySpec {
    pub def: MetricDef,
    /// A stage's `latency` keeps its distribution (else only its histogram: send lag's
    /// figures are the client's health, `client.send_lag_ms`).
    pub summary: bool,
    /// Each turn index of multi-turn sessions keeps it too.
    pub per_turn: bool,
    /// A request gives many samples that move together (ITL's gaps): its intervals count
    /// requests, not samples.
    pub clustered: bool,
    /// `compare` watches its p50, p95 and p99 by default.
    pub watched: bool,
    /// Added after schema 2: absent from older results, so written only once it has a
    /// sample, and not required by the schema.
    pub optional: bool,
    /// The aggregations an SLA may read.
    pub aggregations: &'static [Aggregation],
    /// Said of its `latency` entry in the JSON Schema.
    pub schema_note: Option<&'static str>,
    /// What one request contributes.
    pub measure: fn(&RequestRecord) -> Sample<'_>,
    /// For a metric a late client can raise: what one request contributes net of what the
    /// client may have added, given a bound on how late the client read an event at an
    /// instant (`read(t)`, ns): measured from the actual send (or the earlier event read), less
    /// that bound for the event that ends it. A lower bound on what the server took: reading
    /// the earlier event late only shortened the span. `None` for the others.
    pub net: Option<NetMeasure>,
}

/// See [`LatencySpec::net`].
pub type NetMeasure = for<'a> fn(&'a RequestRecord, &dyn Fn(u64) -> u64) -> Sample<'a>;

/// `end − sent − read(end)`: the span from the actual send to an event, less how late the
/// client may have read the event.
fn net_ns(r: &RequestRecord, end: Option<u64>, read: &dyn Fn(u64) -> u64) -> Option<u64> {
    let end = end?;
    Some(end.saturating_sub(r.sent_ns).saturating_sub(read(end)))
}

const fn latency(
    name: &'static str,
    label: &'static str,
    key: &'static str,
    late_client: LateClient,
    measure: fn(&RequestRecord) -> Sample<'_>,
) -> LatencySpec {
    LatencySpec {
        def: MetricDef {
            name,
            label,
            key,
            kind: MetricKind::Latency,
            worse: Worse::Higher,
            late_client,
            from_output_tokens: false,
            scope: ApiScope::Streamed,
            example: "200ms",
        },
        summary: true,
        per_turn: false,
        clustered: false,
        watched: true,
        optional: false,
        aggregations: &Aggregation::ALL,
        schema_note: None,
        measure,
        net: None,
    }
}

/// With its net measure.
const fn net(mut spec: LatencySpec, net: NetMeasure) -> LatencySpec {
    spec.net = Some(net);
    spec
}

/// Only successful requests have latencies (send lag aside).
fn ok_ns(r: &RequestRecord, ns: Option<u64>) -> Sample<'_> {
    match ns {
        Some(v) if r.ok() => Sample::Ns(v),
        _ => Sample::None,
    }
}

/// `(E2E − TTFT) / (output tokens − 1)`, for two output tokens or more.
pub fn tpot_ns(r: &RequestRecord) -> Option<u64> {
    let n = u64::from(r.output_tokens);
    let ttft = r.ttft_ns().filter(|_| n >= 2)?;
    Some(r.e2e_ns().saturating_sub(ttft) / (n - 1))
}

/// Computed from output token counts, which may be estimates.
const fn on_output_tokens(mut spec: LatencySpec) -> LatencySpec {
    spec.def.from_output_tokens = true;
    spec
}

/// Measured for every API, a pooling API's whole answer included (the latency metrics are
/// the streaming APIs' by default).
const fn every_api(mut spec: LatencySpec) -> LatencySpec {
    spec.def.scope = ApiScope::All;
    spec
}

/// A threshold other than `200ms` for hints.
const fn example(mut spec: LatencySpec, example: &'static str) -> LatencySpec {
    spec.def.example = example;
    spec
}

/// In the order of [`LatencyMetric`].
const LATENCY: [LatencySpec; LatencyMetric::COUNT] = {
    use LateClient::{Either, Raises};
    [
        net(
            LatencySpec {
                per_turn: true,
                ..latency("ttft", "TTFT", "ttft_ms", Raises, |r| ok_ns(r, r.ttft_ns()))
            },
            |r, read| ok_ns(r, net_ns(r, r.first_token_ns, read)),
        ),
        net(
            LatencySpec {
                clustered: true,
                ..latency("itl", "ITL", "itl_ms", Either, |r| {
                    if r.ok() {
                        Sample::GapsUs(&r.itl_us)
                    } else {
                        Sample::None
                    }
                })
            },
            |r, _| match r.first_token_ns {
                Some(first_ns) if r.ok() => Sample::ReadGapsUs {
                    gaps: &r.itl_us,
                    first_ns,
                },
                _ => Sample::None,
            },
        ),
        net(
            on_output_tokens(latency("tpot", "TPOT", "tpot_ms", Either, |r| {
                ok_ns(r, tpot_ns(r))
            })),
            |r, read| {
                let n = u64::from(r.output_tokens);
                let first = r.first_token_ns.filter(|_| n >= 2);
                let span = first.and_then(|f| net_ns(r, Some(r.done_ns), read).map(|e| (f, e)));
                // The span from the first token's read to the last's, less the last read's
                // bound: `net_ns` measures from the send, so the send-to-first part comes off.
                ok_ns(
                    r,
                    span.map(|(f, e)| e.saturating_sub(f.saturating_sub(r.sent_ns)) / (n - 1)),
                )
            },
        ),
        every_api(net(
            LatencySpec {
                per_turn: true,
                ..latency("e2e", "E2E", "e2e_ms", Raises, |r| {
                    ok_ns(r, Some(r.e2e_ns()))
                })
            },
            |r, read| ok_ns(r, net_ns(r, Some(r.done_ns), read)),
        )),
        net(
            on_output_tokens(latency("ntpot", "NTPOT", "ntpot_ms", Raises, |r| {
                let n = u64::from(r.output_tokens);
                ok_ns(r, (n >= 1).then(|| r.e2e_ns() / n))
            })),
            |r, read| {
                let n = u64::from(r.output_tokens);
                let e2e = net_ns(r, Some(r.done_ns), read);
                ok_ns(r, e2e.filter(|_| n >= 1).map(|v| v / n.max(1)))
            },
        ),
        net(
            LatencySpec {
                watched: false,
                schema_note: Some(
                    "Time to the first answer token, when it differs from TTFT (reasoning models).",
                ),
                ..latency("ttfa", "TTFA", "ttfa_ms", Raises, |r| {
                    ok_ns(
                        r,
                        r.first_answer_ns.map(|t| t.saturating_sub(r.scheduled_ns)),
                    )
                })
            },
            |r, read| ok_ns(r, net_ns(r, r.first_answer_ns, read)),
        ),
        every_api(example(
            LatencySpec {
                summary: false,
                watched: false,
                aggregations: &[
                    Aggregation::Percentile(Percentile::P50),
                    Aggregation::Percentile(Percentile::P99),
                    Aggregation::Max,
                ],
                // Every request, failed ones included: the client's lateness is not the
                // server's.
                ..latency("send_lag", "send lag", "send_lag_ms", Raises, |r| {
                    Sample::Ns(r.send_lag_ns())
                })
            },
            "1ms",
        )),
        example(
            LatencySpec {
                watched: false,
                optional: true,
                schema_note: Some(
                    "An agentic task's completion time: from its first turn's scheduled instant \
                     to the end of its last reply, over all its sessions and subagents; one \
                     sample per task whose every turn succeeded.",
                ),
                ..latency("session", "task time", "session_ms", Raises, |r| {
                    ok_ns(r, r.task_ns)
                })
            },
            "60s",
        ),
        net(
            LatencySpec {
                watched: false,
                optional: true,
                schema_note: Some(
                    "TTFT of sessions' later turns (turn 1 on), whose prompts carry the \
                     conversation so far: what an agent's user waits for at each step.",
                ),
                ..latency("turn_ttft", "turn TTFT", "turn_ttft_ms", Raises, |r| {
                    ok_ns(r, r.ttft_ns().filter(|_| r.turn > 0))
                })
            },
            |r, read| ok_ns(r, net_ns(r, r.first_token_ns, read).filter(|_| r.turn > 0)),
        ),
    ]
};
