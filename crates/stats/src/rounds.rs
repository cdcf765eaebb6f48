//! Repeated rounds of one scenario: the median of the rounds' values (one p95 per round, say)
//! and a distribution-free interval for the median from their order statistics, the sign-test
//! interval. With few rounds the confidence asked for may be out of reach: the widest interval,
//! [min, max], is then given with the confidence it does have (5 rounds: 1 − 2/2⁵ = 93.75 %).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::binomial::{Ranks, check_confidence, order_statistic_ranks};
use super::error::StatsError;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoundsInterval {
    /// The median of the rounds (the mean of the middle two for an even count).
    pub median: f64,
    pub low: f64,
    pub high: f64,
    /// Confidence achieved: P(low ≤ true median ≤ high) = P(l ≤ B < u), B ~ Binomial(k, ½).
    /// Below the one asked for when `meets_requested` is false.
    pub confidence: f64,
    pub meets_requested: bool,
    pub rounds: usize,
}

/// The median of `values` with an interval at `confidence` (in [0.5, 1)), or the widest one
/// there is with these few rounds. `None` for no rounds; an error for a NaN or infinite value.
pub fn rounds_median(
    values: &[f64],
    confidence: f64,
) -> Result<Option<RoundsInterval>, StatsError> {
    check_confidence(confidence)?;
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(StatsError::NotFinite { index });
    }
    if values.is_empty() {
        return Ok(None);
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let k = sorted.len();
    let median = if k % 2 == 1 {
        sorted[k / 2]
    } else {
        // Halves first, so two values near f64::MAX do not overflow.
        sorted[k / 2 - 1] / 2.0 + sorted[k / 2] / 2.0
    };
    let (low, high, achieved, meets) = match order_statistic_ranks(k as u64, 0.5, confidence)? {
        Ranks::Interval {
            low,
            high,
            confidence,
        } => (low as usize, high as usize, confidence, true),
        // [min, max] misses the true median when all k rounds fall on one side of it.
        Ranks::Insufficient { .. } => (1, k, 1.0 - 2.0 * 0.5f64.powi(k as i32), false),
    };
    Ok(Some(RoundsInterval {
        median,
        low: sorted[low - 1],
        high: sorted[high - 1],
        confidence: achieved,
        meets_requested: meets,
        rounds: k,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(values: &[f64]) -> RoundsInterval {
        rounds_median(values, 0.95).unwrap().unwrap()
    }

    #[test]
    fn five_rounds_give_min_max_at_93_75_percent() {
        let r = rounds(&[12.0, 10.0, 11.0, 14.0, 13.0]);
        assert_eq!((r.median, r.low, r.high), (12.0, 10.0, 14.0));
        assert_eq!(r.confidence, 0.9375);
        assert!(!r.meets_requested);
        assert_eq!(r.rounds, 5);
    }

    #[test]
    fn enough_rounds_meet_the_confidence() {
        // 6 rounds: [min, max] at 1 − 2/64 = 96.9 %.
        let r = rounds(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0]);
        assert_eq!((r.median, r.low, r.high), (3.5, 1.0, 6.0));
        assert!((r.confidence - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
        assert!(r.meets_requested);
        // 20 rounds: ranks 6 and 15, as the median table says.
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        let r = rounds(&values);
        assert_eq!((r.low, r.high, r.median), (6.0, 15.0, 10.5));
    }

    #[test]
    fn one_round_and_none() {
        let r = rounds(&[7.0]);
        assert_eq!(
            (r.median, r.low, r.high, r.confidence),
            (7.0, 7.0, 7.0, 0.0)
        );
        assert!(rounds_median(&[], 0.95).unwrap().is_none());
        assert!(matches!(
            rounds_median(&[1.0, f64::NAN], 0.95),
            Err(StatsError::NotFinite { index: 1 })
        ));
        assert!(rounds_median(&[1.0], 1.0).is_err());
        let huge = rounds(&[f64::MAX, f64::MAX]);
        assert_eq!(huge.median, f64::MAX);
    }
}
