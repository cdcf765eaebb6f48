//! How a request sent through reqwest (https targets, proxies) failed, in the error kinds
//! the own HTTP/1.1 path uses (docs/metrics.md): whether it may be retried, and what it
//! counts as.

use crate::metrics::ErrorKind;

/// The first attempt provably never reached the server: no byte of a response came back
/// because the connection was closed or reset under the request (a pooled connection the
/// server had closed after its previous response, as llama-server does after every stream),
/// or the request could not be written at all. A refused or timed-out connection is not this.
pub(super) fn never_answered(e: &reqwest::Error) -> bool {
    if e.is_timeout() || e.is_connect() {
        return false;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled())
        {
            return true;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            )
        {
            return true;
        }
        source = err.source();
    }
    false
}

/// A request that got no usable response: `timeout`, `connect` (no connection was made),
/// `protocol` (hyper could not read what came back) or `stream_broken` (the connection
/// dropped before an answer).
pub(super) fn send_error(e: &reqwest::Error) -> ErrorKind {
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_connect() || e.is_builder() {
        ErrorKind::Connect
    } else if unusable(e) {
        ErrorKind::Protocol
    } else {
        ErrorKind::StreamBroken
    }
}

/// hyper refused what the server sent: a head it cannot parse (or too large), a broken body
/// framing (reported as invalid data).
pub(super) fn unusable(e: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(err) = source {
        if err
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_parse)
            || err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidData)
        {
            return true;
        }
        source = err.source();
    }
    false
}
