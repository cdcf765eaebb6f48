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
}
