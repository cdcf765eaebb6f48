//! What the coordinator tells of the requests it refuses, without the token a caller presented,
//! and text a peer sent made fit for a terminal and a log line.

use std::net::SocketAddr;
use std::sync::Arc;

/// Told of every request the coordinator refuses (at most the first 50, then a note that
/// the rest are only counted in `/v1/status`), without the token a caller presented.
#[derive(Clone)]
pub struct RefusalLog(Arc<dyn Fn(&Refusal) + Send + Sync>);

impl RefusalLog {
    pub fn new(log: impl Fn(&Refusal) + Send + Sync + 'static) -> Self {
        RefusalLog(Arc::new(log))
    }

    pub(crate) fn tell(&self, refusal: &Refusal) {
        (self.0)(refusal)
    }
}

impl std::fmt::Debug for RefusalLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RefusalLog")
    }
}

/// A request the coordinator refused.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub peer: Option<SocketAddr>,
    /// `POST /v1/results`.
    pub request: String,
    pub status: u16,
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let peer = self
            .peer
            .map_or_else(|| "an unknown peer".to_string(), |p| p.to_string());
        write!(
            f,
            "refused {} from {peer} ({}): {}",
            self.request,
            self.status,
            printable(&self.why, 400)
        )
    }
}

/// Text a peer sent (a stage name, an error body), fit for a terminal and a log line: at most
/// `max` characters, then the house terminal escape (controls shown, secrets masked).
pub(crate) fn printable(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", crate::escape::terminal(&text[..cut])),
        None => crate::escape::terminal(text),
    }
}
