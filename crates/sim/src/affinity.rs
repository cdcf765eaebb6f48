//! `session-header "x-session-id"`: the simulator reads a router's session-affinity header
//! and counts, on `/metrics`, the requests that carried one and the distinct sessions it saw
//! (`infermeter_sim_affinity_requests_total`, `infermeter_sim_affinity_sessions`). Behind
//! several URLs, each simulator counts only the sessions routed to it: a by-session route
//! shows each session at one simulator, a round-robin one at several.
//!
//! The header is the client's, so it is untrusted: a value longer than [`MAX_VALUE`] bytes
//! is counted as a request without a session, values are kept only as 64-bit hashes, and at
//! most [`MAX_SESSIONS`] distinct ones are kept (later new ones are counted as overflow).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{HeaderMap, HeaderName};

/// The longest value counted as a session id.
const MAX_VALUE: usize = 256;
/// The most distinct sessions remembered.
const MAX_SESSIONS: usize = 100_000;

pub(crate) struct Affinity {
    header: HeaderName,
    requests: AtomicU64,
    sessions: Mutex<HashSet<u64>>,
    overflow: AtomicU64,
}

impl Affinity {
    /// `None` when `name` is not a header name (the config's validation says so first).
    pub(crate) fn new(name: &str) -> Option<Affinity> {
        Some(Affinity {
            header: HeaderName::from_bytes(name.as_bytes()).ok()?,
            requests: AtomicU64::new(0),
            sessions: Mutex::new(HashSet::new()),
            overflow: AtomicU64::new(0),
        })
    }

    /// Counts one generation request's session, if it names one.
    pub(crate) fn observe(&self, headers: &HeaderMap) {
        let Some(value) = headers.get(&self.header) else {
            return;
        };
        let bytes = value.as_bytes();
        if bytes.is_empty() || bytes.len() > MAX_VALUE {
            return;
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut h = DefaultHasher::new();
        bytes.hash(&mut h);
        let id = h.finish();
        if let Ok(mut seen) = self.sessions.lock()
            && !seen.contains(&id)
        {
            if seen.len() < MAX_SESSIONS {
                seen.insert(id);
            } else {
                self.overflow.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The counters in Prometheus' text format.
    pub(crate) fn render(&self, out: &mut String) {
        use std::fmt::Write;
        let sessions = self.sessions.lock().map_or(0, |s| s.len());
        let rows = [
            (
                "infermeter_sim_affinity_requests_total",
                "counter",
                "Generation requests that carried the session-affinity header.",
                self.requests.load(Ordering::Relaxed),
            ),
            (
                "infermeter_sim_affinity_sessions",
                "gauge",
                "Distinct session ids seen in the session-affinity header.",
                sessions as u64,
            ),
            (
                "infermeter_sim_affinity_sessions_overflow_total",
                "counter",
                "New session ids not remembered because too many were seen.",
                self.overflow.load(Ordering::Relaxed),
            ),
        ];
        for (name, kind, help, value) in rows {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {value}");
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-session-id", HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn counts_requests_and_distinct_sessions() {
        let a = Affinity::new("x-session-id").unwrap();
        for v in ["a", "b", "a", "a"] {
            a.observe(&with(v));
        }
        a.observe(&HeaderMap::new());
        a.observe(&with(&"x".repeat(MAX_VALUE + 1)));
        let mut out = String::new();
        a.render(&mut out);
        assert!(
            out.contains("infermeter_sim_affinity_requests_total 4\n"),
            "{out}"
        );
        assert!(
            out.contains("infermeter_sim_affinity_sessions 2\n"),
            "{out}"
        );
    }
}
