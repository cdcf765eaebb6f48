//! Metrics per target URL when a target lists several (`target { url "…"; url "…" }`):
//! counts, tokens, the prefix-cache share and the TTFT/E2E distributions (with their whole
//! histograms, so shards merge) of the requests each URL served. A record's URL is its index
//! in the target's list ([`RequestRecord::url`]); a stage whose records name none reports
//! nothing. Memory is bounded by the target's URL count (at most 64): 2 histograms each.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record::RequestRecord;
use super::slice::SliceFigures;
use super::turns::Tally;

/// The requests one URL of the target served in a stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UrlSummary {
    /// The URL's index in the target's list (`results.urls`).
    pub url: u16,
    /// Its requests' figures (members of the URL's object).
    #[serde(flatten)]
    pub figures: SliceFigures,
}

/// Folds records by the URL they went to.
#[derive(Default)]
pub(super) struct UrlAggregator {
    urls: Vec<Tally>,
}

/// URL indices with their own figures: the scenario allows no more.
const MAX_URLS: usize = 64;

impl UrlAggregator {
    pub(super) fn record(&mut self, r: &RequestRecord) {
        let Some(k) = r.url.map(usize::from).filter(|k| *k < MAX_URLS) else {
            return;
        };
        Tally::slot(&mut self.urls, k).record(r);
    }

    /// Takes in another aggregator's URLs.
    pub(super) fn merge(&mut self, other: &UrlAggregator) {
        Tally::merge_slots(&mut self.urls, &other.urls);
    }

    pub(super) fn finish(self) -> Vec<UrlSummary> {
        self.urls
            .iter()
            .enumerate()
            .map(|(k, u)| UrlSummary {
                url: k as u16,
                figures: SliceFigures::of(u),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::LatencyMetric;

    fn rec(url: Option<u16>, ok: bool, cached: u32) -> RequestRecord {
        RequestRecord {
            url,
            scheduled_ns: 1_000_000,
            done_ns: 21_000_000,
            first_token_ns: Some(6_000_000),
            input_tokens: 100,
            output_tokens: 10,
            cached_tokens: Some(cached),
            error: (!ok).then_some(super::super::ErrorKind::Timeout),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn a_stage_with_one_url_reports_nothing() {
        let mut a = UrlAggregator::default();
        a.record(&rec(None, true, 0));
        assert!(a.finish().is_empty());
    }

    #[test]
    fn folds_by_url() {
        let mut a = UrlAggregator::default();
        a.record(&rec(Some(0), true, 0));
        a.record(&rec(Some(1), true, 80));
        a.record(&rec(Some(1), true, 40));
        a.record(&rec(Some(1), false, 0));
        let s = a.finish();
        assert_eq!(s.len(), 2);
        let (s0, s1) = (&s[0].figures, &s[1].figures);
        assert_eq!((s1.sent, s1.ok, s1.failed), (3, 2, 1));
        assert_eq!(s1.cached_tokens, 120);
        assert_eq!(s1.cached_share, Some(0.6));
        assert_eq!(s0.cached_share, Some(0.0));
        let ttft = s1.latency[LatencyMetric::Ttft];
        assert_eq!(ttft.count, 2);
        assert!((ttft.p50 - 5.0).abs() < 0.1);
    }
}
