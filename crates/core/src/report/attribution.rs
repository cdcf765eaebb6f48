//! "Where the latency went": a stage's client TTFT beside the server's own account of it
//! (`StageSummary::attribution`), as a small Markdown table for `report.md` and one sentence
//! for the terminal summary.

use serde::Serialize;

use super::numbers::num;
use crate::metrics::{Attribution, AttributionSource, ServerDist, StageSummary};

/// One row of the table: a part of the request's time.
#[derive(Debug, Serialize)]
pub struct AttributionRow {
    pub part: &'static str,
    pub count: String,
    pub mean: String,
    pub p50: String,
    pub p90: String,
    pub p99: String,
}

/// Where the figures come from, for the table's caption.
pub fn source_text(a: &Attribution) -> String {
    match a.source {
        AttributionSource::Timings => {
            "the server's per-request timings (llama.cpp `timings`)".to_string()
        }
        AttributionSource::Prometheus => format!(
            "the server's latency histograms over the stage ({}); their percentiles are \
             interpolated within buckets, their means exact",
            a.server.as_deref().unwrap_or("prometheus")
        ),
        AttributionSource::Spans => "the server's own span of each request (OTLP, joined by \
             trace id); every percentile is of per-request values"
            .to_string(),
    }
}

/// The table's rows, in the order a request spends them.
pub fn rows(a: &Attribution) -> Vec<AttributionRow> {
    if a.client_ttft_ms.count == 0 {
        return whole_rows(a);
    }
    let outside = match a.source {
        AttributionSource::Timings => {
            "outside the prompt processing (slot wait, HTTP, network, client)"
        }
        AttributionSource::Prometheus | AttributionSource::Spans => {
            "outside the engine (HTTP, API server, network, client)"
        }
    };
    let parts: [(&'static str, Option<&ServerDist>); 12] = [
        ("TTFT, client", Some(&a.client_ttft_ms)),
        ("TTFT, server", a.server_ttft_ms.as_ref()),
        ("queued in the server", a.queue_ms.as_ref()),
        ("prefill", a.prefill_ms.as_ref()),
        (OTHER, a.server_other_ms.as_ref()),
        (outside, a.outside_ms.as_ref()),
        ("decode", a.decode_ms.as_ref()),
        ("TPOT, client", a.client_tpot_ms.as_ref()),
        ("TPOT, server", a.server_tpot_ms.as_ref()),
        ("E2E, client", a.client_e2e_ms.as_ref()),
        ("E2E, server", a.server_e2e_ms.as_ref()),
        ("E2E outside the engine", a.outside_e2e_ms.as_ref()),
    ];
    // The llama.cpp prompt time is both the server's TTFT and its prefill: shown once.
    let skip_prefill = a.source == AttributionSource::Timings;
    let remainder =
        |part: &str| part == OTHER || part == outside || part.starts_with("E2E outside");
    shown(
        parts
            .into_iter()
            .filter(|(part, _)| !(skip_prefill && *part == "prefill")),
        remainder,
    )
}

/// The rows of a stage whose answers came whole (a pooling API, `stream #false`): no first
/// token, so its E2E is split: the server's E2E, its queue, prefill and decode, the rest in
/// the server, and what lies outside it.
fn whole_rows(a: &Attribution) -> Vec<AttributionRow> {
    let rest = e2e_rest(a);
    let parts: [(&'static str, Option<&ServerDist>); 7] = [
        ("E2E, client", a.client_e2e_ms.as_ref()),
        ("E2E, server", a.server_e2e_ms.as_ref()),
        ("queued in the server", a.queue_ms.as_ref()),
        ("prefill", a.prefill_ms.as_ref()),
        ("decode", a.decode_ms.as_ref()),
        (OTHER, rest.as_ref()),
        ("E2E outside the engine", a.outside_e2e_ms.as_ref()),
    ];
    shown(parts.into_iter(), |part| {
        part == OTHER || part.starts_with("E2E outside")
    })
}

/// The rows of the parts that are there; a remainder (elsewhere, outside) below zero is the
/// measured parts' noise, not time spent: left out rather than shown negative.
fn shown<'a>(
    parts: impl Iterator<Item = (&'static str, Option<&'a ServerDist>)>,
    remainder: impl Fn(&str) -> bool,
) -> Vec<AttributionRow> {
    parts
        .filter(|(part, d)| !(remainder(part) && d.is_some_and(|d| d.mean < 0.0)))
        .filter_map(|(part, d)| d.map(|d| row(part, d)))
        .collect()
}

/// The server's E2E beside its queue, prefill and decode (means only), for answers that came
/// whole.
fn e2e_rest(a: &Attribution) -> Option<ServerDist> {
    crate::metrics::rest_of(a.server_e2e_ms, &[a.queue_ms, a.prefill_ms, a.decode_ms])
}

/// A percentile from a Prometheus histogram shows the bucket it fell in, not the interpolated
/// point inside it: that is all the server's buckets say.
fn row(part: &'static str, d: &ServerDist) -> AttributionRow {
    let p = |v: Option<f64>, bucket: Option<[Option<f64>; 2]>| match (v, bucket) {
        (_, Some([Some(lo), Some(hi)])) if lo <= 0.0 => format!("≤ {}", num(hi)),
        (_, Some([Some(lo), Some(hi)])) => format!("{}–{}", num(lo), num(hi)),
        (_, Some([Some(lo), None])) => format!("> {}", num(lo)),
        (Some(v), _) => num(v),
        (None, _) => "–".to_string(),
    };
    let b = d.buckets;
    AttributionRow {
        part,
        count: d.count.to_string(),
        mean: num(d.mean),
        p50: p(d.p50, b.map(|b| b.p50)),
        p90: p(d.p90, b.map(|b| b.p90)),
        p99: p(d.p99, b.map(|b| b.p99)),
    }
}

/// The server's TTFT beside the parts it reports (queue, prefill), in the table.
const OTHER: &str = "elsewhere in the server (vLLM: input processing, engine hand-offs)";

/// One line: "TTFT mean 503 ms: 494 queued in the server, 8.62 prefill, 0.41 elsewhere in the
/// server, 0.25 outside"; the parts add up to the whole (their means do, exactly). Answers
/// that came whole split their E2E the same way ("E2E mean 12.0 ms: …").
pub fn sentence(s: &StageSummary) -> Option<String> {
    let a = s.attribution.as_ref()?;
    let whole = a.client_ttft_ms.count == 0;
    let mut parts = Vec::new();
    if let Some(q) = &a.queue_ms {
        parts.push(format!("{} queued in the server", num(q.mean)));
    }
    if let Some(p) = &a.prefill_ms {
        let what = match a.source {
            AttributionSource::Timings => "prompt processing",
            AttributionSource::Prometheus | AttributionSource::Spans => "prefill",
        };
        parts.push(format!("{} {what}", num(p.mean)));
    }
    let (label, client, rest, outside) = if whole {
        if let Some(d) = &a.decode_ms {
            parts.push(format!("{} decode", num(d.mean)));
        }
        let client = a.client_e2e_ms.as_ref()?;
        ("E2E", client.mean, e2e_rest(a), a.outside_e2e_ms)
    } else {
        let c = a.client_ttft_ms.mean;
        ("TTFT", c, a.server_other_ms, a.outside_ms)
    };
    // The remainders are differences of measured means: one below zero is the others'
    // measurement noise, not time spent, and is left out rather than shown negative.
    if let Some(r) = rest.filter(|r| r.mean >= 0.0) {
        parts.push(format!("{} elsewhere in the server", num(r.mean)));
    }
    if let Some(o) = outside.filter(|o| o.mean >= 0.0) {
        parts.push(format!("{} outside", num(o.mean)));
    }
    if parts.is_empty() {
        return None;
    }
    let mut line = format!("{label} mean {} ms: {}", num(client), parts.join(", "));
    if let (Some(c), Some(sv)) = (&a.client_tpot_ms, &a.server_tpot_ms) {
        line.push_str(&format!(
            "; TPOT mean {} ms{} (server {})",
            num(c.mean),
            if s.tokens.tpot_estimated > 0 {
                " on estimated output counts"
            } else {
                ""
            },
            num(sv.mean)
        ));
    }
    let by = match a.source {
        AttributionSource::Timings => "llama.cpp timings",
        AttributionSource::Prometheus => "server histograms",
        AttributionSource::Spans => "server spans",
    };
    Some(format!("{line} [{by}]"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::rest_of;

    fn mean(m: f64) -> ServerDist {
        ServerDist {
            count: 40,
            mean: m,
            ..ServerDist::default()
        }
    }

    /// A stage whose TTFT means (ms) are the client's, the server's, its queue's and its
    /// prefill's, the remainders derived as the aggregator derives them.
    fn stage(client: f64, server: f64, queue: f64, prefill: f64) -> StageSummary {
        let (client, server) = (mean(client), mean(server));
        let (queue, prefill) = (mean(queue), mean(prefill));
        let a = Attribution {
            source: AttributionSource::Prometheus,
            client_ttft_ms: client,
            server_ttft_ms: Some(server),
            queue_ms: Some(queue),
            prefill_ms: Some(prefill),
            server_other_ms: rest_of(Some(server), &[Some(queue), Some(prefill)]),
            outside_ms: Some(client.mean_minus(&server)),
            ..Attribution::default()
        };
        StageSummary {
            attribution: Some(a),
            ..StageSummary::default()
        }
    }

    /// The figures vLLM gave on CPU when the line read "70.7 ms: 0.014 queued, 21.3 prefill,
    /// 35.3 outside" (56.6 in all): the server's 14.1 ms around its queue and prefill were
    /// missing.
    #[test]
    fn the_parts_of_the_ttft_add_up_to_the_whole() {
        let s = stage(70.7, 35.4, 0.014, 21.3);
        let line = sentence(&s).unwrap();
        let (whole, parts) = line.split_once(" ms: ").unwrap();
        let whole: f64 = whole.trim_start_matches("TTFT mean ").parse().unwrap();
        let parts = parts.split(" [").next().unwrap();
        let sum: f64 = parts
            .split(", ")
            .map(|p| p.split(' ').next().unwrap().parse::<f64>().unwrap())
            .sum();
        // Each part is rounded to 3 significant digits: they add up to within that.
        assert!((sum - whole).abs() < 0.1, "{sum} vs {whole}: {line}");
        assert!(line.contains("14.1 elsewhere in the server"), "{line}");
        let rows = rows(s.attribution.as_ref().unwrap());
        assert!(rows.iter().any(|r| r.part == OTHER && r.mean == "14.1"));
    }

    /// A remainder below zero (the server's parts measured a hair over its whole) is noise,
    /// not time: left out, never printed as "-0.023 elsewhere in the server".
    #[test]
    fn a_negative_remainder_is_not_shown() {
        let s = stage(50.0, 20.0, 5.0, 15.023);
        assert!(
            s.attribution
                .as_ref()
                .unwrap()
                .server_other_ms
                .as_ref()
                .unwrap()
                .mean
                < 0.0
        );
        let line = sentence(&s).unwrap();
        assert!(
            !line.contains("elsewhere") && !line.contains(" -"),
            "{line}"
        );
        assert!(line.contains("30.0 outside"), "{line}");
        let rows = rows(s.attribution.as_ref().unwrap());
        assert!(rows.iter().all(|r| r.part != OTHER), "{rows:?}");
    }

    /// The pooling stage: "TTFT mean 0 ms … -17.4 outside". Answers that came whole
    /// split their E2E: no TTFT row or figure, no negative remainder.
    #[test]
    fn answers_that_came_whole_split_their_e2e() {
        let a = Attribution {
            source: AttributionSource::Prometheus,
            client_ttft_ms: ServerDist::default(),
            queue_ms: Some(mean(5.0)),
            prefill_ms: Some(mean(12.0)),
            server_e2e_ms: Some(mean(17.4)),
            client_e2e_ms: Some(mean(18.0)),
            outside_e2e_ms: Some(mean(0.6)),
            ..Attribution::default()
        };
        let s = StageSummary {
            attribution: Some(a),
            ..StageSummary::default()
        };
        let line = sentence(&s).unwrap();
        assert!(line.starts_with("E2E mean 18.0 ms: 5.00 queued"), "{line}");
        assert!(
            line.contains("0.400 elsewhere in the server, 0.600 outside"),
            "{line}"
        );
        assert!(!line.contains("TTFT") && !line.contains(" -"), "{line}");
        let rows = rows(s.attribution.as_ref().unwrap());
        assert!(rows.iter().all(|r| !r.part.contains("TTFT")), "{rows:?}");
        assert_eq!(rows[0].part, "E2E, client");
        assert!(
            rows.iter().any(|r| r.part == OTHER && r.mean == "0.400"),
            "{rows:?}"
        );
    }
}
