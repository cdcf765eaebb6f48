//! How a latency is recorded (a histogram of microseconds with fixed bounds, so recording never
//! reallocates) and read back as a [`Dist`] in milliseconds, with its confidence intervals.
//! The stage, its turns and the server's attribution all record so.

use hdrhistogram::Histogram;

use super::dist::Dist;
use super::intervals::{sample_intervals, sample_intervals_of};
use super::latency::{LatencyMetric, Sample};

/// Largest recordable latency: one day in microseconds; larger values are clamped. Fixed
/// bounds mean recording never reallocates.
pub(super) const MAX_US: u64 = 86_400_000_000;

/// A latency histogram as every stage and turn metric records it (µs, 3 significant digits).
pub(super) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds")
}

pub(super) fn small_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 2).expect("valid histogram bounds")
}

/// Adds `other`'s counts to `h`: exact, as every histogram here has the same bounds (adding
/// fails only for a value beyond them, which none records).
pub(super) fn absorb(h: &mut Histogram<u64>, other: &Histogram<u64>) {
    let _ = h.add(other);
}

pub(super) fn us(ns: u64) -> u64 {
    ns / 1_000
}

/// A histogram of microseconds as a distribution in milliseconds.
pub fn dist(h: &Histogram<u64>) -> Dist {
    if h.is_empty() {
        return Dist::default();
    }
    let ms = |v: u64| v as f64 / 1e3;
    Dist {
        count: h.len(),
        p50: ms(h.value_at_quantile(0.50)),
        p90: ms(h.value_at_quantile(0.90)),
        p95: ms(h.value_at_quantile(0.95)),
        p99: ms(h.value_at_quantile(0.99)),
        p999: ms(h.value_at_quantile(0.999)),
        max: ms(h.max()),
        min: ms(h.min()),
        mean: h.mean() / 1e3,
        intervals: None,
    }
}

/// Records what one request contributes to a latency metric (see [`LatencyMetric::measure`]).
pub(super) fn record(h: &mut Histogram<u64>, sample: Sample<'_>) {
    match sample {
        Sample::None => {}
        Sample::Ns(ns) => h.saturating_record(us(ns)),
        Sample::GapsUs(gaps) | Sample::ReadGapsUs { gaps, .. } => {
            for &gap in gaps {
                h.saturating_record(u64::from(gap));
            }
        }
    }
}

/// Records a net sample: [`Sample::ReadGapsUs`]'s gaps each less the bound `read` gives the
/// read that ends it (the instants rebuilt from the first event and the gaps, without
/// allocating); any other sample as it is.
pub(super) fn record_net(h: &mut Histogram<u64>, sample: Sample<'_>, read: &dyn Fn(u64) -> u64) {
    let Sample::ReadGapsUs { gaps, first_ns } = sample else {
        return record(h, sample);
    };
    let mut at = first_ns;
    for &gap in gaps {
        let gap_ns = u64::from(gap) * 1_000;
        at = at.saturating_add(gap_ns);
        h.saturating_record(us(gap_ns.saturating_sub(read(at))));
    }
}

/// A latency metric's distribution with its confidence intervals, from its histogram and the
/// stage's successful requests: a clustered metric's samples (ITL's gaps) come many to a
/// request and move together, so its intervals count requests.
pub fn metric_dist(metric: LatencyMetric, h: &Histogram<u64>, confidence: f64, ok: u64) -> Dist {
    if metric.spec().clustered {
        Dist {
            intervals: sample_intervals_of(h, confidence, ok),
            ..dist(h)
        }
    } else {
        dist_with_intervals(h, confidence)
    }
}

/// [`dist`] with the confidence intervals of its percentiles and mean.
pub fn dist_with_intervals(h: &Histogram<u64>, confidence: f64) -> Dist {
    Dist {
        intervals: sample_intervals(h, confidence),
        ..dist(h)
    }
}
