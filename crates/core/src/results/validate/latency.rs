//! The validator's rules for a stage's latencies: each distribution in order and counted by
//! the ok requests, every stored histogram decoding to as many samples as its summary says,
//! and the same for the latencies net of the client.

use super::Checker;
use crate::metrics::{Dist, LatencyMetric, StageSummary};

impl Checker {
    pub(super) fn latency(&mut self, at: &str, s: &StageSummary) {
        for (m, d) in s.latency.iter() {
            let at = format!("{at}.latency.{}", m.key());
            self.dist(&at, d);
            // ITL counts gaps, many to a request; every other metric one sample at most.
            if m != LatencyMetric::Itl {
                self.at_most(
                    &format!("{at}.count"),
                    d.count,
                    s.requests.ok,
                    "the ok requests",
                );
            }
        }
    }

    pub(super) fn dist(&mut self, at: &str, d: &Dist) {
        self.count(&format!("{at}.count"), d.count);
        let figures = [
            ("min", d.min),
            ("p50", d.p50),
            ("p90", d.p90),
            ("p95", d.p95),
            ("p99", d.p99),
            ("p999", d.p999),
            ("max", d.max),
        ];
        for (name, v) in figures.iter().copied().chain([("mean", d.mean)]) {
            self.non_negative(&format!("{at}.{name}"), v);
            if d.count == 0 && v != 0.0 {
                self.fail(
                    format!("{at}.{name}"),
                    v,
                    "a distribution without samples is all 0",
                );
            }
        }
        // Percentiles of one distribution are in order (a hair of rounding allowed).
        let slack = |v: f64| v.abs() * 1e-9;
        for pair in figures.windows(2) {
            let ((a, x), (b, y)) = (pair[0], pair[1]);
            if x > y + slack(y) {
                self.fail(format!("{at}.{a}"), x, format!("above {b} ({y})"));
            }
        }
        if d.count > 0 && (d.mean < d.min - slack(d.min) || d.mean > d.max + slack(d.max)) {
            self.fail(format!("{at}.mean"), d.mean, "outside min..=max");
        }
    }

    /// Every stored histogram decodes and holds the samples its summary counts.
    pub(super) fn histograms(&mut self, at: &str, s: &StageSummary) {
        let Some(h) = &s.histograms else { return };
        for (m, text) in h.iter() {
            let field = format!("{at}.histograms.{}", m.key());
            let want = match m {
                LatencyMetric::SendLag => Some(s.requests.sent),
                m => s.latency.get(m).map(|d| d.count),
            };
            let got = if text.is_empty() {
                0
            } else {
                match crate::stats::hist::decode(text) {
                    Ok(h) => h.len(),
                    Err(e) => {
                        self.fail(
                            field,
                            super::json(text),
                            format!("does not decode: {}", super::error_chain(&e)),
                        );
                        continue;
                    }
                }
            };
            if let Some(want) = want.filter(|w| *w != got) {
                self.fail(
                    field,
                    super::json(text),
                    format!("holds {got} samples, its summary counts {want}"),
                );
            }
        }
    }

    /// The latencies net of the client: each a distribution of at most the ok requests (a
    /// clustered metric's, of their gaps), its histogram holding as many samples as it
    /// counts; the least wall time a punctual client could have taken, a duration.
    pub(super) fn client_net(&mut self, at: &str, s: &StageSummary) {
        let Some(net) = &s.client_net else { return };
        for (m, d) in net.latency.iter() {
            let field = format!("{at}.client_net.latency.{}", m.key());
            self.dist(&field, d);
            if !m.spec().clustered {
                let ok = s.requests.ok;
                self.at_most(&format!("{field}.count"), d.count, ok, "the ok requests");
            }
        }
        if let Some(served) = net.served_s {
            self.non_negative(&format!("{at}.client_net.served_s"), served);
        }
        let Some(h) = &net.histograms else { return };
        for (m, text) in h.iter() {
            let field = format!("{at}.client_net.histograms.{}", m.key());
            let want = net.latency.get(m).map_or(0, |d| d.count);
            self.histogram(field, text, want);
        }
    }

    /// One stored histogram: it decodes and holds `want` samples.
    pub(super) fn histogram(&mut self, field: String, text: &str, want: u64) {
        let got = match text.is_empty() {
            true => Ok(0),
            false => crate::stats::hist::decode(text).map(|h| h.len()),
        };
        match got {
            Ok(n) if n == want => {}
            Ok(n) => self.fail(
                field,
                super::json(text),
                format!("holds {n} samples, its summary counts {want}"),
            ),
            Err(e) => self.fail(
                field,
                super::json(text),
                format!("does not decode: {}", super::error_chain(&e)),
            ),
        }
    }
}
