//! The two streaming accumulators a stage's telemetry figures are made of: [`Stat`] (count,
//! mean, min and max of a gauge) and [`CounterDelta`] (a Prometheus counter's increase, a
//! decrease counted as a restart from zero).

/// Count, mean, min and max of the values that were present.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stat {
    n: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Stat {
    pub(super) fn push(&mut self, v: Option<f64>) {
        let Some(v) = v.filter(|v| v.is_finite()) else {
            return;
        };
        if self.n == 0 {
            self.min = v;
            self.max = v;
        }
        self.n += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
    pub(super) fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
    pub(super) fn min(&self) -> Option<f64> {
        (self.n > 0).then_some(self.min)
    }
    pub(super) fn max(&self) -> Option<f64> {
        (self.n > 0).then_some(self.max)
    }
}

/// Increase of a Prometheus counter; a decrease is a restart from zero (as `rate()` does).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CounterDelta {
    last: Option<f64>,
    increase: f64,
    /// Consecutive readings seen (an increase needs one).
    pairs: u64,
    /// Times the counter went back.
    pub(super) resets: u32,
}

impl CounterDelta {
    pub(super) fn push(&mut self, v: Option<f64>) {
        let Some(v) = v.filter(|v| v.is_finite()) else {
            return;
        };
        if let Some(l) = self.last {
            self.pairs += 1;
            if v < l {
                self.resets = self.resets.saturating_add(1);
            }
            self.increase += if v >= l { v - l } else { v };
        }
        self.last = Some(v);
    }
    /// The increase, once two readings of this counter were seen.
    pub(super) fn increase(&self) -> Option<f64> {
        (self.pairs > 0).then_some(self.increase)
    }
    /// `None` until two readings were seen.
    pub(super) fn get(&self, samples: u64) -> Option<f64> {
        (self.last.is_some() && samples >= 2).then_some(self.increase)
    }
}
