//! Merging the stage's slices — its URLs (`per_url`) and its subagents' depths (`per_depth`) —
//! like the stage: histograms added, counts and tokens summed. Every shard routes by the plan,
//! so URL `k` is the same server in each; depth `d` is the same place in every task graph. An
//! error names the slice in its own words (a URL, a subagent depth).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::error::StageMergeError;
use crate::metrics::HistogramCodec;
use crate::metrics::{
    DepthSummary, LatencyMetric, PerMetric, SliceFigures, StageSummary, TurnHistograms, UrlSummary,
    cached_share, dist,
};

/// One shard's stage: its index and its summary.
pub(super) type Shard<'a> = (u32, &'a StageSummary);

/// Which slices are merged: what the result calls them and what an error calls one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slices {
    Url,
    Depth,
}

impl Slices {
    fn key(self) -> &'static str {
        match self {
            Slices::Url => "per_url",
            Slices::Depth => "per_depth",
        }
    }

    fn unreadable(self, shard: u32, stage: &str, at: u16) -> StageMergeError {
        let stage = stage.to_string();
        match self {
            Slices::Url => StageMergeError::UrlUnreadable {
                shard,
                stage,
                url: at,
            },
            Slices::Depth => StageMergeError::DepthUnreadable {
                shard,
                stage,
                depth: at,
            },
        }
    }

    fn add(self, at: u16, source: hdrhistogram::AdditionError) -> StageMergeError {
        match self {
            Slices::Url => StageMergeError::UrlAdd { url: at, source },
            Slices::Depth => StageMergeError::DepthAdd { depth: at, source },
        }
    }
}

/// The target's URLs, merged.
pub(super) fn per_url(shards: &[Shard<'_>]) -> Result<Vec<UrlSummary>, StageMergeError> {
    let merged = merge(shards, Slices::Url, |s| {
        s.per_url.iter().map(|u| (u.url, &u.figures)).collect()
    })?;
    Ok(merged
        .into_iter()
        .map(|(url, figures)| UrlSummary { url, figures })
        .collect())
}

/// Subagents' depths, merged.
pub(super) fn per_depth(shards: &[Shard<'_>]) -> Result<Vec<DepthSummary>, StageMergeError> {
    let merged = merge(shards, Slices::Depth, |s| {
        s.per_depth
            .iter()
            .map(|d| (u16::from(d.depth), &d.figures))
            .collect()
    })?;
    Ok(merged
        .into_iter()
        .map(|(depth, figures)| DepthSummary {
            depth: u8::try_from(depth).unwrap_or(u8::MAX),
            figures,
        })
        .collect())
}

/// One slice being merged: its figures so far and its histograms.
type Acc = (SliceFigures, [Histogram<u64>; LatencyMetric::COUNT]);

fn empty() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 86_400_000_000, 3).expect("valid histogram bounds")
}

/// The slices (`of` a shard's stage, each keyed), merged, in key order.
fn merge(
    shards: &[Shard<'_>],
    kind: Slices,
    of: impl for<'a> Fn(&'a StageSummary) -> Vec<(u16, &'a SliceFigures)>,
) -> Result<Vec<(u16, SliceFigures)>, StageMergeError> {
    let mut slices: BTreeMap<u16, Acc> = BTreeMap::new();
    for &(shard, summary) in shards {
        for (at, u) in of(summary) {
            let entry = slices
                .entry(at)
                .or_insert_with(|| (SliceFigures::default(), std::array::from_fn(|_| empty())));
            add_counts(&mut entry.0, u, || StageMergeError::Overflow {
                stage: summary.name.clone(),
                field: format!("{}[{at}] counts", kind.key()),
            })?;
            for (m, _) in u.latency.iter() {
                let Some(Ok(h)) = u.histograms.as_ref().and_then(|h| h.decode(m)) else {
                    return Err(kind.unreadable(shard, &summary.name, at));
                };
                entry.1[m as usize]
                    .add(&h)
                    .map_err(|source| kind.add(at, source))?;
            }
        }
    }
    Ok(slices
        .into_iter()
        .map(|(at, (mut u, hists))| {
            let said = u64::from(u.cached_share.is_some());
            u.cached_share = cached_share(said, u.cached_tokens, u.input_tokens);
            u.latency = PerMetric::from_fn(|m| dist(&hists[m as usize]));
            u.histograms = TurnHistograms::encode(|m| &hists[m as usize]).ok();
            (at, u)
        })
        .collect())
}

/// `u`'s counts and tokens added to `e`'s; `overflow` when a sum passes 2^64.
fn add_counts(
    e: &mut SliceFigures,
    u: &SliceFigures,
    overflow: impl Fn() -> StageMergeError,
) -> Result<(), StageMergeError> {
    let sum = |a: u64, b: u64| a.checked_add(b).ok_or_else(&overflow);
    e.sent = sum(e.sent, u.sent)?;
    e.ok = sum(e.ok, u.ok)?;
    e.failed = sum(e.failed, u.failed)?;
    e.input_tokens = sum(e.input_tokens, u.input_tokens)?;
    e.output_tokens = sum(e.output_tokens, u.output_tokens)?;
    e.cached_tokens = sum(e.cached_tokens, u.cached_tokens)?;
    // Whether any response said: kept as a share, recomputed at the end.
    e.cached_share = e.cached_share.or(u.cached_share);
    Ok(())
}
