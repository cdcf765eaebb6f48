//! Why one stage's shards cannot be merged exactly: a histogram that will not read or add.

use crate::stats::StatsError;

#[derive(Debug, thiserror::Error)]
pub enum StageMergeError {
    #[error("shard {shard}: stage `{stage}`: histogram {key}")]
    Unreadable {
        shard: u32,
        stage: String,
        key: &'static str,
        #[source]
        source: StatsError,
    },
    #[error(
        "shard {shard}: stage `{stage}` has no histograms (a result from before they were kept \
         cannot be merged exactly)"
    )]
    NoHistograms { shard: u32, stage: String },
    #[error("shard {shard}: {key}")]
    Add {
        shard: u32,
        key: &'static str,
        #[source]
        source: hdrhistogram::AdditionError,
    },
    #[error("{stage}")]
    Encode {
        stage: String,
        #[source]
        source: StatsError,
    },
    #[error("shard {shard}: stage `{stage}`: turn {turn} has no readable histograms")]
    TurnUnreadable {
        shard: u32,
        stage: String,
        turn: u32,
    },
    #[error("stage `{stage}`: the shards' {field} add up to more than 2^64")]
    Overflow { stage: String, field: String },
    #[error("turn {turn}")]
    TurnAdd {
        turn: u32,
        #[source]
        source: hdrhistogram::AdditionError,
    },
    #[error("shard {shard}: stage `{stage}`: URL {url} has no readable histograms")]
    UrlUnreadable { shard: u32, stage: String, url: u16 },
    #[error("URL {url}")]
    UrlAdd {
        url: u16,
        #[source]
        source: hdrhistogram::AdditionError,
    },
    #[error(
        "shard {shard}: stage `{stage}`: the turns of subagents at depth {depth} have no \
         readable histograms"
    )]
    DepthUnreadable {
        shard: u32,
        stage: String,
        depth: u16,
    },
    #[error("subagent depth {depth}")]
    DepthAdd {
        depth: u16,
        #[source]
        source: hdrhistogram::AdditionError,
    },
}
