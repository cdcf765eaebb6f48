//! Intervals for samples that are not independent: the latencies of a steady-state window, in
//! the order the requests were sent. Requests that overlap in a busy server share its queue, so
//! one slow second makes several neighbours slow (positive autocorrelation), and an interval
//! that counts every request as independent (order statistics, z·sd/√n) is too narrow.
//!
//! Sectioning (batch means with the centre taken from all the data; Asmussen & Glynn,
//! *Stochastic Simulation*, 2007, §IV.5): the samples are cut, in time order, into `b`
//! contiguous batches; each batch's own figure (its quantile, or its mean) is one value, and
//! batches long beside the correlation time are nearly independent of each other. The
//! interval is the whole window's figure ± t(b − 1)·s/√b, with `s` the standard deviation of
//! the batch figures: their spread carries the correlation that the naive interval leaves out.
//! `scripts/steady-state.sh` measures its coverage on autocorrelated data beside the naive one.

use super::binomial::check_confidence;
use super::error::StatsError;
use super::normal::z;

/// At most this many batches: more would make each too short to outlast the correlation.
pub const MAX_BATCHES: usize = 20;
/// At least this many: t(b − 1) grows fast below it (t₀.₉₇₅(4) = 2.78).
pub const MIN_BATCHES: usize = 5;

/// A figure's interval over batches, or how many samples would give one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BatchCi {
    Interval {
        low: f64,
        high: f64,
        /// Batches the interval was built from.
        batches: usize,
    },
    /// Too few samples for [`MIN_BATCHES`] batches that each hold enough to estimate the
    /// figure; `needed` would do.
    Insufficient { needed: u64 },
}

/// Samples a batch needs to estimate quantile `q` (`None`: the mean): five beyond the
/// quantile on the short side, so that a batch's p99 is not its maximum.
pub fn batch_size_for(q: Option<f64>) -> usize {
    match q {
        Some(q) => (5.0 / q.min(1.0 - q)).ceil().max(10.0) as usize,
        None => 10,
    }
}

/// The batch interval of quantile `q` (`None`: the mean) of `values`, taken in the order
/// given (time order), around `centre` (the whole window's figure).
pub fn batch_interval(
    values: &[f64],
    q: Option<f64>,
    centre: f64,
    confidence: f64,
) -> Result<BatchCi, StatsError> {
    check_confidence(confidence)?;
    if let Some(q) = q
        && !(q > 0.0 && q < 1.0)
    {
        return Err(StatsError::OutOfRange {
            name: "quantile",
            value: q,
        });
    }
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(StatsError::NotFinite { index });
    }
    let per = batch_size_for(q);
    let batches = (values.len() / per).min(MAX_BATCHES);
    if batches < MIN_BATCHES {
        return Ok(BatchCi::Insufficient {
            needed: (per * MIN_BATCHES) as u64,
        });
    }
    let len = values.len() / batches;
    let figures: Vec<f64> = (0..batches)
        .map(|i| {
            // The last batch takes the remainder, so no sample is left out.
            let end = if i + 1 == batches {
                values.len()
            } else {
                (i + 1) * len
            };
            figure(&values[i * len..end], q)
        })
        .collect();
    batch_interval_of(&figures, centre, confidence)
}

/// The interval around `centre` from the batches' own figures (in time order): what
/// [`batch_interval`] does once it has cut its batches, for a caller that holds its samples
/// as batches already (the steady-state window's time slices). Fewer than [`MIN_BATCHES`]
/// figures give [`BatchCi::Insufficient`] with `needed` 0: more samples would not help.
pub fn batch_interval_of(
    figures: &[f64],
    centre: f64,
    confidence: f64,
) -> Result<BatchCi, StatsError> {
    check_confidence(confidence)?;
    if let Some(index) = figures.iter().position(|v| !v.is_finite()) {
        return Err(StatsError::NotFinite { index });
    }
    let batches = figures.len();
    if batches < MIN_BATCHES {
        return Ok(BatchCi::Insufficient { needed: 0 });
    }
    let b = batches as f64;
    let mean = figures.iter().sum::<f64>() / b;
    let var = figures.iter().map(|f| (f - mean).powi(2)).sum::<f64>() / (b - 1.0);
    let half = t_quantile(confidence, batches - 1)? * var.sqrt() / b.sqrt();
    Ok(BatchCi::Interval {
        low: centre - half,
        high: centre + half,
        batches,
    })
}

/// One batch's figure: its mean, or its quantile `q` (the ⌈q·n⌉-th smallest, as the
/// histograms read it).
fn figure(batch: &[f64], q: Option<f64>) -> f64 {
    match q {
        None => batch.iter().sum::<f64>() / batch.len() as f64,
        Some(q) => {
            let mut sorted = batch.to_vec();
            sorted.sort_by(f64::total_cmp);
            let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
            sorted[rank - 1]
        }
    }
}

/// The two-sided Student-t quantile for `confidence` with `df` degrees of freedom, by the
/// Cornish-Fisher expansion around the normal one (Abramowitz & Stegun 26.7.5): within 0.1 %
/// of the exact value for df ≥ 4 at the confidences a gate uses.
pub fn t_quantile(confidence: f64, df: usize) -> Result<f64, StatsError> {
    let z = z(confidence)?;
    let v = df.max(1) as f64;
    let (z2, z3) = (z * z, z * z * z);
    let (z5, z7, z9) = (z3 * z2, z3 * z2 * z2, z3 * z3 * z3);
    let g1 = (z3 + z) / 4.0;
    let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
    let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
    let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
    Ok(z + g1 / v + g2 / v.powi(2) + g3 / v.powi(3) + g4 / v.powi(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, want) in [(4, 2.776), (9, 2.262), (19, 2.093), (100, 1.984)] {
            let t = t_quantile(0.95, df).unwrap();
            assert!((t - want).abs() < 0.003, "df {df}: {t} vs {want}");
        }
        assert!((t_quantile(0.99, 19).unwrap() - 2.861).abs() < 0.005);
    }

    #[test]
    fn too_few_samples_say_how_many_would_do() {
        let values: Vec<f64> = (0..100).map(f64::from).collect();
        // A p99 batch needs 500 samples; five of them 2,500.
        assert_eq!(
            batch_interval(&values, Some(0.99), 99.0, 0.95).unwrap(),
            BatchCi::Insufficient { needed: 2_500 }
        );
        // The mean needs ten a batch: 100 give ten batches.
        let BatchCi::Interval { low, high, batches } =
            batch_interval(&values, None, 49.5, 0.95).unwrap()
        else {
            panic!("no interval");
        };
        assert_eq!(batches, 10);
        assert!(low < 49.5 && 49.5 < high);
    }

    #[test]
    fn a_trend_widens_the_interval_that_shuffled_data_keeps_narrow() {
        // The same values, once in a slow drift (correlated neighbours), once interleaved.
        let drift: Vec<f64> = (0..2_000).map(|i| f64::from(i / 100)).collect();
        // 7,919 is prime to 2,000: a permutation that spreads each level over the run.
        let shuffled: Vec<f64> = (0..2_000).map(|i| drift[(i * 7_919) % 2_000]).collect();
        let width = |v: &[f64]| match batch_interval(v, Some(0.5), 10.0, 0.95).unwrap() {
            BatchCi::Interval { low, high, .. } => high - low,
            BatchCi::Insufficient { .. } => panic!("insufficient"),
        };
        assert!(width(&drift) > 3.0 * width(&shuffled));
    }

    #[test]
    fn hostile_inputs_are_refused() {
        assert!(batch_interval(&[1.0, f64::NAN], None, 1.0, 0.95).is_err());
        assert!(batch_interval(&[1.0; 100], Some(1.5), 1.0, 0.95).is_err());
        assert!(batch_interval(&[1.0; 100], Some(f64::NAN), 1.0, 0.95).is_err());
        assert!(batch_interval(&[1.0; 100], None, 1.0, 1.0).is_err());
        assert_eq!(
            batch_interval(&[], None, 0.0, 0.95).unwrap(),
            BatchCi::Insufficient { needed: 50 }
        );
    }
}
