//! The vocabulary every part of infermeter speaks: the API kinds and their wire bodies
//! ([`protocol`]), units and their formatting ([`units`]), the metrics and the per-request
//! record ([`metrics`]), secret masking ([`redact`]), escaping for where text goes
//! ([`escape`]), bounded reads and atomic writes ([`files`]), exit codes ([`exit`]) and what a
//! server says of itself ([`server_info`]).
//!
//! It sits below every other crate, so the simulator, the client, telemetry and reports name
//! a metric or an API without depending on the aggregator (see `docs/architecture.md`).

pub mod escape;
pub mod exit;
pub mod files;
pub mod metrics;
pub mod protocol;
pub mod redact;
pub mod server_info;
pub mod units;

/// `e` and its sources as one line, `: ` between them, without repeating a cause that its
/// parent's message already includes (some errors print their source inline). Every error
/// written as one line (a problem of a list, a coordinator's refusal, a CLI error) is written
/// by this.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(inner) = cur {
        let text = inner.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = inner.source();
    }
    out
}
