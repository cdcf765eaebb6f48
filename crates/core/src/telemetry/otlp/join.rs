//! The server's spans joined to the client's requests by trace id: per request, the server's
//! queue, prefill, decode, TTFT and E2E beside the client's TTFT and E2E, so that every part
//! has exact percentiles (HDR histograms of per-request values, not stage means from
//! Prometheus buckets), and what lies outside the server is measured request by request.

use std::collections::HashMap;
use std::sync::Mutex;

use hdrhistogram::Histogram;

use super::types::{MAX_SPANS, ReceiveStats, ServerSpan};
use crate::metrics::{Attribution, AttributionSource, RequestRecord, ServerDist, rest_of};
use crate::protocol::TraceContext;

/// The client's TTFT and E2E of each successful request (µs), by trace id, kept for the join
/// while the run lasts: at most [`MAX_SPANS`], like the spans.
#[derive(Default)]
pub struct ClientTimes(Mutex<HashMap<u128, (Option<u64>, u64)>>);

impl ClientTimes {
    /// Notes a finished request (on its stage's collector thread).
    pub fn note(&self, rec: &RequestRecord) {
        let Some(trace) = rec.trace.filter(|_| rec.ok()) else {
            return;
        };
        if let Ok(mut m) = self.0.lock()
            && m.len() < MAX_SPANS
        {
            let ttft = rec.ttft_ns().map(|ns| ns / 1_000);
            m.insert(trace.trace_id, (ttft, rec.e2e_ns() / 1_000));
        }
    }
}

/// One stage's joined requests.
struct Acc {
    queue: Histogram<u64>,
    prefill: Histogram<u64>,
    decode: Histogram<u64>,
    ttft: Histogram<u64>,
    e2e: Histogram<u64>,
    outside_ttft: Histogram<u64>,
    outside_e2e: Histogram<u64>,
    client_ttft: Histogram<u64>,
    client_e2e: Histogram<u64>,
}

/// µs, 1 µs to a day, 3 significant digits; a longer value is recorded as a day.
fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 86_400_000_000, 3)
        .unwrap_or_else(|_| unreachable!("the bounds are valid"))
}

impl Acc {
    fn new() -> Acc {
        Acc {
            queue: hist(),
            prefill: hist(),
            decode: hist(),
            ttft: hist(),
            e2e: hist(),
            outside_ttft: hist(),
            outside_e2e: hist(),
            client_ttft: hist(),
            client_e2e: hist(),
        }
    }

    fn add(&mut self, s: &ServerSpan, client: (Option<u64>, u64)) {
        let us = |secs: f64| (secs * 1e6).round() as u64;
        for (h, v) in [
            (&mut self.queue, s.queue_s),
            (&mut self.prefill, s.prefill_s),
            (&mut self.decode, s.decode_s),
            (&mut self.ttft, s.ttft_s),
            (&mut self.e2e, s.e2e_s),
        ] {
            if let Some(v) = v {
                h.saturating_record(us(v));
            }
        }
        let (client_ttft, client_e2e) = client;
        self.client_e2e.saturating_record(client_e2e);
        if let Some(c) = client_ttft {
            self.client_ttft.saturating_record(c);
            if let Some(t) = s.ttft_s {
                self.outside_ttft.saturating_record(c.saturating_sub(us(t)));
            }
        }
        if let Some(e) = s.e2e_s {
            self.outside_e2e
                .saturating_record(client_e2e.saturating_sub(us(e)));
        }
    }

    fn attribution(&self) -> Attribution {
        let some = |h: &Histogram<u64>| (!h.is_empty()).then(|| ServerDist::of_us(h));
        let ttft = some(&self.ttft);
        let (queue, prefill) = (some(&self.queue), some(&self.prefill));
        Attribution {
            source: AttributionSource::Spans,
            server: None,
            client_ttft_ms: ServerDist::of_us(&self.client_ttft),
            server_ttft_ms: ttft,
            queue_ms: queue,
            prefill_ms: prefill,
            server_other_ms: rest_of(ttft, &[queue, prefill]),
            decode_ms: some(&self.decode),
            server_tpot_ms: None,
            client_tpot_ms: None,
            server_e2e_ms: some(&self.e2e),
            client_e2e_ms: some(&self.client_e2e),
            outside_ms: some(&self.outside_ttft),
            outside_e2e_ms: some(&self.outside_e2e),
            server_requests: Some(self.client_e2e.len()),
        }
    }
}

/// Each stage's attribution from the spans, over the requests that both succeeded on the
/// client and have a server span; by stage name (`names[n]` is the name of the stage round
/// numbered `n` in the trace ids: a stage's rounds are joined together).
pub fn join(
    spans: &HashMap<u128, ServerSpan>,
    client: &ClientTimes,
    run: u64,
    names: &[String],
) -> HashMap<String, Attribution> {
    let Ok(client) = client.0.lock() else {
        return HashMap::new();
    };
    let mut stages: HashMap<&str, Acc> = HashMap::new();
    for (trace_id, span) in spans {
        let req = TraceContext::request_of(*trace_id, run);
        let name = req.and_then(|r| names.get(usize::from(r.stage)));
        let (Some(name), Some(c)) = (name, client.get(trace_id)) else {
            continue;
        };
        stages.entry(name).or_insert_with(Acc::new).add(span, *c);
    }
    stages
        .into_iter()
        .map(|(stage, acc)| (stage.to_string(), acc.attribution()))
        .collect()
}

/// A note on what the receiver saw, when anything was dropped or refused.
pub fn stats_note(stats: &ReceiveStats, joined: u64, ok: u64) -> String {
    let mut note = format!(
        "OTLP receiver: {} server spans kept, {joined} of {ok} successful requests joined",
        stats.kept
    );
    let mut dropped = Vec::new();
    for (n, what) in [
        (stats.unknown, "of unknown traces"),
        (stats.duplicates, "duplicated"),
        (stats.dropped, "past the cap"),
        (stats.refused, "bodies refused"),
    ] {
        if n > 0 {
            dropped.push(format!("{n} {what}"));
        }
    }
    if !dropped.is_empty() {
        note.push_str(&format!(" ({} ignored)", dropped.join(", ")));
    }
    note
}
