//! Metrics of agentic subagents by depth (`per_depth`): a subagent's turns are numbered from 0
//! in its own session, so they are kept out of the per-turn table (`per_turn` is the root
//! session's turns: the conversation the agent's user sees grow, turn by turn) and folded
//! here instead, one entry per depth of the task's graph (1: a subagent the root forked, 2: one
//! a subagent forked, …): counts, tokens, the prefix cache's share and the TTFT/E2E
//! distributions with their whole histograms (so shards merge). A record's depth is
//! [`RequestRecord::depth`]; a stage without subagents reports nothing. Memory is bounded by
//! the data set's nesting (at most `dataset::MAX_DEPTH`): 2 histograms per depth.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dist::Dist;
use super::histograms::TurnHistograms;
use super::measure::dist;
use super::per_metric::{PerMetric, PerTurn};
use super::record::RequestRecord;
use super::turns::Tally;
use super::urls::UrlSummary;

/// The turns of a stage's subagents at one depth. *Added in schema 3.*
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DepthSummary {
    /// 1 for the subagents a task's root session forked, 2 for those they forked, …
    pub depth: u8,
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
    /// TTFT and E2E over the depth's ok turns (members of the depth's object).
    #[serde(flatten)]
    pub latency: PerMetric<Dist, PerTurn>,
    /// Their histograms whole (µs), so that shards' results merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<TurnHistograms>,
}

impl DepthSummary {
    /// The same figures keyed as a URL's, to be merged as URLs' are.
    pub fn as_url(&self) -> UrlSummary {
        UrlSummary {
            url: u16::from(self.depth),
            sent: self.sent,
            ok: self.ok,
            failed: self.failed,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cached_tokens: self.cached_tokens,
            cached_share: self.cached_share,
            latency: self.latency,
            histograms: self.histograms.clone(),
        }
    }

    /// Back from [`as_url`](Self::as_url).
    pub fn from_url(u: UrlSummary) -> DepthSummary {
        DepthSummary {
            depth: u8::try_from(u.url).unwrap_or(u8::MAX),
            sent: u.sent,
            ok: u.ok,
            failed: u.failed,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_tokens: u.cached_tokens,
            cached_share: u.cached_share,
            latency: u.latency,
            histograms: u.histograms,
        }
    }
}

/// Folds subagents' records by depth.
#[derive(Default)]
pub(super) struct DepthAggregator {
    /// Depth 1 first.
    depths: Vec<Tally>,
}

/// Depths with their own figures: deeper than any data set may nest.
const MAX_DEPTHS: usize = 16;

impl DepthAggregator {
    pub(super) fn record(&mut self, r: &RequestRecord) {
        let k = usize::from(r.depth);
        if k == 0 || k > MAX_DEPTHS {
            return;
        }
        Tally::slot(&mut self.depths, k - 1).record(r);
    }

    pub(super) fn finish(self) -> Vec<DepthSummary> {
        self.depths
            .iter()
            .enumerate()
            .filter(|(_, t)| t.sent > 0)
            .map(|(k, t)| DepthSummary {
                depth: (k + 1) as u8,
                sent: t.sent,
                ok: t.ok,
                failed: t.failed,
                input_tokens: t.input_tokens,
                output_tokens: t.output_tokens,
                cached_tokens: t.cached_tokens,
                cached_share: t.cached_share(),
                latency: PerMetric::from_fn(|m| dist(&t.hists[m as usize])),
                histograms: TurnHistograms::encode(|m| &t.hists[m as usize]).ok(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::LatencyMetric;

    fn rec(depth: u8, turn: u32, ok: bool) -> RequestRecord {
        RequestRecord {
            depth,
            turn,
            scheduled_ns: 1_000_000,
            done_ns: 21_000_000,
            first_token_ns: Some(6_000_000),
            input_tokens: 100,
            output_tokens: 10,
            cached_tokens: Some(50),
            error: (!ok).then_some(super::super::ErrorKind::Timeout),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn subagents_fold_by_depth_and_the_root_is_not_here() {
        let mut a = DepthAggregator::default();
        a.record(&rec(0, 3, true));
        assert!(DepthAggregator::default().finish().is_empty());
        a.record(&rec(1, 0, true));
        a.record(&rec(1, 1, false));
        a.record(&rec(2, 0, true));
        let s = a.finish();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].depth, s[0].sent, s[0].ok, s[0].failed), (1, 2, 1, 1));
        assert_eq!((s[1].depth, s[1].sent), (2, 1));
        assert_eq!(s[0].cached_share, Some(0.5));
        assert_eq!(s[0].latency[LatencyMetric::Ttft].count, 1);
        let back = DepthSummary::from_url(s[1].as_url());
        assert_eq!(back, s[1]);
    }
}
