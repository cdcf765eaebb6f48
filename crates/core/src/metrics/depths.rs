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

use super::record::RequestRecord;
use super::slice::SliceFigures;
use super::turns::Tally;

/// The turns of a stage's subagents at one depth. *Added in schema 3.*
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DepthSummary {
    /// 1 for the subagents a task's root session forked, 2 for those they forked, …
    pub depth: u8,
    /// Its turns' figures (members of the depth's object), as a URL's.
    #[serde(flatten)]
    pub figures: SliceFigures,
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

    /// Takes in another aggregator's depths.
    pub(super) fn merge(&mut self, other: &DepthAggregator) {
        Tally::merge_slots(&mut self.depths, &other.depths);
    }

    pub(super) fn finish(self) -> Vec<DepthSummary> {
        self.depths
            .iter()
            .enumerate()
            .filter(|(_, t)| t.sent > 0)
            .map(|(k, t)| DepthSummary {
                depth: (k + 1) as u8,
                figures: SliceFigures::of(t),
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
        let (f0, f1) = (&s[0].figures, &s[1].figures);
        assert_eq!((s[0].depth, f0.sent, f0.ok, f0.failed), (1, 2, 1, 1));
        assert_eq!((s[1].depth, f1.sent), (2, 1));
        assert_eq!(f0.cached_share, Some(0.5));
        assert_eq!(f0.latency[LatencyMetric::Ttft].count, 1);
    }
}
