//! A metric a comparison flags, as typed data: what `compare` lists as regressed or undecided,
//! and what its exit error carries.

use serde::Serialize;

use crate::sla::{Aggregation, Metric};

/// A watched metric a comparison flags (worse beyond its tolerance, or undecided): on which
/// stage, which metric (as the SLA grammar names it), and its change as shown. Shown — and
/// serialised — as `stage: metric (change)`, e.g. `load: ttft.p95 (+12.5 % [+8.1, +17.0])`.
#[derive(Debug, Clone, PartialEq)]
pub struct Flagged {
    pub stage: String,
    pub metric: Metric,
    pub aggregation: Option<Aggregation>,
    /// The change as the comparison shows it (`+12.5 % [+8.1, +17.0]`).
    pub change: String,
}

impl std::fmt::Display for Flagged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.stage, self.metric)?;
        if let Some(a) = self.aggregation {
            write!(f, ".{a}")?;
        }
        write!(f, " ({})", self.change)
    }
}

impl Serialize for Flagged {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sla::Percentile;

    #[test]
    fn a_flagged_metric_is_shown_and_serialised_as_one_line() {
        let f = Flagged {
            stage: "load".into(),
            metric: Metric::Latency(crate::metrics::LatencyMetric::Ttft),
            aggregation: Some(Aggregation::Percentile(Percentile::P95)),
            change: "+12.5 % [+8.1, +17.0]".into(),
        };
        assert_eq!(f.to_string(), "load: ttft.p95 (+12.5 % [+8.1, +17.0])");
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            "\"load: ttft.p95 (+12.5 % [+8.1, +17.0])\""
        );
        let rate = Flagged {
            metric: Metric::Count(crate::metrics::CountMetric::ErrorRate),
            aggregation: None,
            ..f
        };
        assert_eq!(rate.to_string(), "load: error_rate (+12.5 % [+8.1, +17.0])");
    }
}
