//! The shaping proxy's account (`target.network`) as the summary line and report.md show
//! it: the link asked for, what it carried, and how far past its plan the proxy delivered.

use super::view_rows::{KeyValue, kv};
use crate::metrics::NetworkSummary;

/// `25ms ± 5ms one way, 100Mbit, 0.1% loss`: the link as the scenario states it.
pub fn link(n: &NetworkSummary) -> String {
    let s = &n.shape;
    let mut parts = vec![format!("{} one way", s.delay)];
    if s.jitter.as_nanos() > 0 {
        parts[0] = format!("{} + up to {} jitter one way", s.delay, s.jitter);
    }
    if let Some(b) = s.bandwidth {
        parts.push(format!("{b} each way per connection"));
    }
    if s.loss.0 > 0.0 {
        parts.push(format!(
            "{} loss ({} ms late each)",
            s.loss, n.retransmit_ms
        ));
    }
    parts.join(", ")
}

/// What the proxy carried: segments and bytes each way, losses.
fn carried(n: &NetworkSummary) -> String {
    format!(
        "{} connections; {} segments ({} B) up, {} segments ({} B) down; {} lost",
        n.connections, n.segments_up, n.bytes_up, n.segments_down, n.bytes_down, n.lost
    )
}

/// The proxy's overshoot past its plan.
fn overshoot(n: &NetworkSummary) -> String {
    let o = &n.overshoot_ms;
    format!(
        "{:.1} / {:.1} / {:.1} ms (p50 / p99 / max)",
        o.p50, o.p99, o.max
    )
}

/// The summary's line under the header, and the note when there is one.
pub fn summary_lines(n: &NetworkSummary) -> Vec<String> {
    let mut lines = vec![format!(
        "  network: {}; planned {:.1} ms mean per segment, proxy overshoot {}",
        link(n),
        n.planned_delay_mean_ms,
        overshoot(n)
    )];
    if let Some(note) = &n.note {
        lines.push(format!("    note: {note}"));
    }
    lines
}

/// report.md's rows of the network section.
pub fn rows(n: &NetworkSummary) -> Vec<KeyValue> {
    let mut rows = vec![
        kv("emulated link", link(n)),
        kv("carried", carried(n)),
        kv(
            "planned time in the proxy",
            format!("{:.1} ms mean per segment", n.planned_delay_mean_ms),
        ),
        kv("proxy overshoot", overshoot(n)),
        kv("schedule", format!("`{}`", n.schedule)),
    ];
    if let Some(note) = &n.note {
        rows.push(kv("note", note.clone()));
    }
    rows
}
