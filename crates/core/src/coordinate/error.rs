//! What goes wrong serving or reaching a coordinator.

use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum CoordinateError {
    #[error("the coordinator cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to start the coordinator's runtime")]
    Runtime(#[source] std::io::Error),
    #[error("the coordinator's thread panicked")]
    Panicked,
    #[error("failed to write the merged result")]
    Write(#[source] crate::report::ReportError),
    #[error("the coordinator at {url} {what}")]
    Request {
        url: String,
        what: String,
        #[source]
        source: Option<reqwest::Error>,
    },
    /// A verdict that is not about this shard's run: another run's, another plan's, or one
    /// merged without the result this shard sent. The shard does not exit with it.
    #[error(
        "the coordinator at {url} answered with a verdict that is not this shard's run's: {why}"
    )]
    Unbound { url: String, why: String },
    #[error("interrupted while waiting for the coordinator at {url}")]
    Interrupted { url: String },
}
