//! `infermeter run`'s flags for one shard of a distributed run (see docs/distributed.md).

use std::path::PathBuf;

use clap::Args;

use super::super::coordinate::TimingArgs;
use super::super::values::parse_shard;
use crate::app::Slice;

#[derive(Debug, Args)]
pub struct ShardArgs {
    /// Run shard I (0-based) of N of the plan: its share of every stage's requests and
    /// clients, each request at its planned offset (see docs/distributed.md).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Slice>,

    /// The coordinator of the distributed run (`http://host:port`): each stage starts at the
    /// instant agreed there, the result is sent there, and the exit code is the merged gate's.
    #[arg(long, value_name = "URL", requires = "shard")]
    pub coordinator: Option<String>,

    /// A file holding the run's coordinator token (as `coordinate --token-file` wrote it);
    /// without it the token is read from `INFERMETER_COORDINATOR_TOKEN`. Never pass the token
    /// itself as an argument.
    #[arg(long, value_name = "FILE", requires = "coordinator")]
    pub coordinator_token_file: Option<PathBuf>,

    /// Shard 0 also serves the coordinator on this address (the other shards ignore it), so
    /// that one Indexed Job needs no other process.
    #[arg(long, value_name = "ADDR", requires = "coordinator")]
    pub coordinator_listen: Option<std::net::SocketAddr>,

    /// Where shard 0's coordinator writes the merged result [default: OUT/merged].
    #[arg(long, value_name = "DIR", requires = "coordinator_listen")]
    pub merged_out: Option<PathBuf>,

    #[command(flatten)]
    pub timing: TimingArgs,
}
