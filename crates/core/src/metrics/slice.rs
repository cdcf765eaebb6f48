//! The figures of a slice of a stage's requests — those one URL served (`per_url`), the turns
//! of subagents at one depth (`per_depth`): counts, tokens, the prefix cache's share and the
//! TTFT/E2E distributions with their whole histograms (so shards merge). Defined once here;
//! [`super::UrlSummary`] and [`super::DepthSummary`] flatten it beside their key, so their
//! JSON is one object each, as before.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dist::Dist;
use super::histograms::HistogramCodec;
use super::histograms::TurnHistograms;
use super::measure::dist;
use super::per_metric::{PerMetric, PerTurn};
use super::turns::Tally;

/// A slice's requests, summarised. *Added in schema 3.*
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SliceFigures {
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// Prompt tokens of the ok requests.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens the server said it served from its prefix cache, over the ok requests.
    pub cached_tokens: u64,
    /// `cached_tokens` over `input_tokens`, 0..=1; absent when no response said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_share: Option<f64>,
    /// TTFT and E2E over the slice's ok requests (members of the slice's object).
    #[serde(flatten)]
    pub latency: PerMetric<Dist, PerTurn>,
    /// Their histograms whole (µs), so that shards' results merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<TurnHistograms>,
}

impl SliceFigures {
    /// The figures of one slot's tally.
    pub(super) fn of(t: &Tally) -> SliceFigures {
        SliceFigures {
            sent: t.sent,
            ok: t.ok,
            failed: t.failed,
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
            cached_tokens: t.cached_tokens,
            cached_share: t.cached_share(),
            latency: PerMetric::from_fn(|m| dist(&t.hists[m as usize])),
            histograms: TurnHistograms::encode(|m| &t.hists[m as usize]).ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::{DepthSummary, LatencyMetric, RequestRecord, UrlSummary};
    use super::*;

    /// The members `per_url[]` and `per_depth[]` entries had when each struct spelled its
    /// fields out (schema 3 as released): the shared struct must not move one.
    const URL_KEYS: &[&str] = &[
        "url",
        "sent",
        "ok",
        "failed",
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "cached_share",
        "ttft_ms",
        "e2e_ms",
        "histograms",
    ];

    fn figures() -> SliceFigures {
        let mut slots = Vec::new();
        let t = Tally::slot(&mut slots, 0);
        t.record(&RequestRecord {
            scheduled_ns: 1_000_000,
            done_ns: 21_000_000,
            first_token_ns: Some(6_000_000),
            input_tokens: 100,
            output_tokens: 10,
            cached_tokens: Some(40),
            ..RequestRecord::default()
        });
        SliceFigures::of(t)
    }

    fn keys(v: &serde_json::Value) -> BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    }

    fn schema_keys(schema: &schemars::Schema) -> BTreeSet<String> {
        let v = serde_json::to_value(schema).unwrap();
        keys(&v["properties"])
    }

    #[test]
    fn a_url_and_a_depth_serialize_the_members_they_always_had() {
        let f = figures();
        assert_eq!(f.latency[LatencyMetric::Ttft].count, 1);
        assert_eq!(f.cached_share, Some(0.4));
        let url = UrlSummary {
            url: 1,
            figures: f.clone(),
        };
        let depth = DepthSummary {
            depth: 2,
            figures: f,
        };
        let want: BTreeSet<String> = URL_KEYS.iter().map(|k| k.to_string()).collect();
        let u = serde_json::to_value(&url).unwrap();
        assert_eq!(keys(&u), want);
        let mut want_depth = want.clone();
        want_depth.remove("url");
        want_depth.insert("depth".into());
        let d = serde_json::to_value(&depth).unwrap();
        assert_eq!(keys(&d), want_depth);
        // Both read back whole, and their schemas name the same members.
        assert_eq!(serde_json::from_value::<UrlSummary>(u).unwrap(), url);
        assert_eq!(serde_json::from_value::<DepthSummary>(d).unwrap(), depth);
        assert_eq!(schema_keys(&schemars::schema_for!(UrlSummary)), want);
        assert_eq!(
            schema_keys(&schemars::schema_for!(DepthSummary)),
            want_depth
        );
    }
}
