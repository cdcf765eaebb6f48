//! Axes: a linear or log scale over a data range, and ticks that never overlap — 1-2-5 per
//! decade on a log axis (thinned to decades, then to every other decade, when labels would
//! touch), "nice" 1-2-5 steps on a linear one.

/// How data maps onto an axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear { lo: f64, hi: f64 },
    Log { lo: f64, hi: f64 },
}

/// One tick: where, and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub value: f64,
    pub label: String,
}

impl Scale {
    /// The range as drawn.
    pub fn bounds(self) -> (f64, f64) {
        match self {
            Scale::Linear { lo, hi } | Scale::Log { lo, hi } => (lo, hi),
        }
    }

    pub fn is_log(self) -> bool {
        matches!(self, Scale::Log { .. })
    }

    /// `v` as a fraction of the axis, 0 at `lo`, 1 at `hi` (outside for values outside).
    pub fn frac(self, v: f64) -> f64 {
        match self {
            Scale::Linear { lo, hi } => {
                if hi > lo {
                    (v - lo) / (hi - lo)
                } else {
                    0.5
                }
            }
            Scale::Log { lo, hi } => {
                let v = v.max(lo * 1e-6).max(f64::MIN_POSITIVE);
                if hi > lo {
                    (v.ln() - lo.ln()) / (hi.ln() - lo.ln())
                } else {
                    0.5
                }
            }
        }
    }

    /// A linear axis over `lo..hi` snapped outwards to nice steps (`from_zero` starts it at 0
    /// when every value is positive).
    pub fn linear(lo: f64, hi: f64, from_zero: bool) -> Scale {
        let (mut lo, mut hi) = finite_range(lo, hi);
        if from_zero && lo >= 0.0 {
            lo = 0.0;
        }
        if hi <= lo {
            hi = if lo == 0.0 { 1.0 } else { lo + lo.abs() * 0.1 };
        }
        let step = nice_step((hi - lo) / 10.0);
        Scale::Linear {
            lo: (lo / step).floor() * step,
            hi: (hi / step).ceil() * step,
        }
    }

    /// A log axis over `lo..hi` snapped outwards to 1-2-5 values; `lo` is floored at
    /// `hi / 1e6` and at a positive value.
    pub fn log(lo: f64, hi: f64) -> Scale {
        let (lo, hi) = finite_range(lo, hi);
        let hi = hi.max(1e-9);
        let lo = lo.max(hi / 1e6).max(1e-9);
        Scale::Log {
            lo: one_two_five_below(lo),
            hi: one_two_five_above(hi.max(lo * 1.0001)),
        }
    }

    /// Log when the data spans at least a decade and is positive, linear otherwise (a log
    /// axis over less than a decade has too few ticks to read).
    pub fn auto(lo: f64, hi: f64) -> Scale {
        if lo > 0.0 && hi / lo >= 10.0 {
            Scale::log(lo, hi)
        } else {
            Scale::linear(lo, hi, true)
        }
    }

    /// Ticks with labels that fit `length` pixels when each label takes about `label_px`.
    pub fn ticks(self, length: f64, label_px: impl Fn(&str) -> f64) -> Vec<Tick> {
        match self {
            Scale::Linear { lo, hi } => linear_ticks(lo, hi, length, &label_px),
            Scale::Log { lo, hi } => log_ticks(lo, hi, length, &label_px),
        }
    }
}

fn finite_range(lo: f64, hi: f64) -> (f64, f64) {
    let lo = if lo.is_finite() { lo } else { 0.0 };
    let hi = if hi.is_finite() { hi } else { lo + 1.0 };
    if hi < lo { (hi, lo) } else { (lo, hi) }
}

/// The 1, 2 or 5 × 10^k nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let n = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * p
}

fn one_two_five_below(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    let m = v / p * (1.0 + 1e-9);
    let n = if m >= 5.0 {
        5.0
    } else if m >= 2.0 {
        2.0
    } else {
        1.0
    };
    n * p
}

fn one_two_five_above(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    let m = v / p * (1.0 - 1e-9);
    let n = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * p
}

/// `1500` → `1500`, `20000` → `20k`, `0.05` → `0.05`, `2.5` → `2.5`: short and exact for
/// 1-2-5 values.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 && (v / 1000.0).fract().abs() < 1e-9 {
        return format!("{}k", trim(v / 1000.0));
    }
    trim(v)
}

fn trim(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let s = if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        let digits = (-v.abs().log10().floor()) as usize + 3;
        format!("{v:.digits$}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

/// Whether labels at these pixel positions leave a gap of at least `gap` between neighbours.
fn fits(ticks: &[Tick], pos: impl Fn(f64) -> f64, label_px: &dyn Fn(&str) -> f64) -> bool {
    ticks.windows(2).all(|w| {
        let room = (pos(w[1].value) - pos(w[0].value)).abs();
        room >= (label_px(&w[0].label) + label_px(&w[1].label)) / 2.0 + 6.0
    })
}

fn linear_ticks(lo: f64, hi: f64, length: f64, label_px: &dyn Fn(&str) -> f64) -> Vec<Tick> {
    if hi <= lo {
        return vec![Tick {
            value: lo,
            label: tick_label(lo),
        }];
    }
    let pos = |v: f64| (v - lo) / (hi - lo) * length;
    let mut want = 8.0;
    loop {
        let step = nice_step((hi - lo) / want);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        let ticks: Vec<Tick> = (first..=last)
            .map(|i| {
                let v = i as f64 * step;
                // `3 * 0.1` is 0.30000000000000004: round to the step's precision.
                let v = (v / step).round() * step;
                Tick {
                    value: v,
                    label: tick_label(v),
                }
            })
            .collect();
        if want <= 2.0 || fits(&ticks, pos, label_px) {
            return ticks;
        }
        want -= 1.0;
    }
}

fn log_ticks(lo: f64, hi: f64, length: f64, label_px: &dyn Fn(&str) -> f64) -> Vec<Tick> {
    let pos = |v: f64| (v.ln() - lo.ln()) / (hi.ln() - lo.ln()) * length;
    let d0 = lo.log10().floor() as i32;
    let d1 = hi.log10().ceil() as i32;
    let candidates: [&[f64]; 2] = [&[1.0, 2.0, 5.0], &[1.0]];
    for mantissas in candidates {
        let ticks = decade_ticks(d0, d1, 1, mantissas, lo, hi);
        if ticks.len() >= 2 && fits(&ticks, pos, label_px) {
            return ticks;
        }
    }
    for every in 2..=6 {
        let ticks = decade_ticks(d0, d1, every, &[1.0], lo, hi);
        if fits(&ticks, pos, label_px) {
            return ticks;
        }
    }
    decade_ticks(d0, d1, 6, &[1.0], lo, hi)
}

fn decade_ticks(d0: i32, d1: i32, every: i32, mantissas: &[f64], lo: f64, hi: f64) -> Vec<Tick> {
    let mut out = Vec::new();
    for d in d0..=d1 {
        if d.rem_euclid(every) != 0 {
            continue;
        }
        for m in mantissas {
            let v = m * 10f64.powi(d);
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                out.push(Tick {
                    value: v,
                    label: tick_label(v),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn px(s: &str) -> f64 {
        s.len() as f64 * 6.6
    }

    #[test]
    fn log_axes_snap_to_one_two_five_and_label_without_overlap() {
        let s = Scale::log(480.0, 810.0 * 12.0);
        assert_eq!(s.bounds(), (200.0, 10_000.0));
        let ticks = s.ticks(300.0, px);
        let labels: Vec<&str> = ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["200", "500", "1000", "2000", "5000", "10k"]);
        // Six decades in 200 px: decades only, then every other one.
        let wide = Scale::log(0.01, 9_000.0).ticks(120.0, px);
        assert!(wide.len() >= 2 && wide.len() <= 4, "{wide:?}");
        assert!(wide.iter().all(|t| t.value.log10().fract().abs() < 1e-9));
    }

    #[test]
    fn narrow_ranges_read_linear() {
        assert!(!Scale::auto(500.0, 800.0).is_log());
        assert!(Scale::auto(5.0, 800.0).is_log());
        let s = Scale::auto(500.0, 800.0);
        assert_eq!(s.bounds(), (0.0, 800.0));
        let t = Scale::linear(0.0, 0.3, true).ticks(500.0, px);
        assert!(t.iter().any(|t| t.label == "0.3"), "{t:?}");
    }

    #[test]
    fn labels_are_short_and_exact() {
        assert_eq!(tick_label(20_000.0), "20k");
        assert_eq!(tick_label(1500.0), "1500");
        assert_eq!(tick_label(0.05), "0.05");
        assert_eq!(tick_label(0.0002), "0.0002");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(0.0), "0");
    }

    #[test]
    fn degenerate_ranges_do_not_panic() {
        for (lo, hi) in [
            (0.0, 0.0),
            (5.0, 5.0),
            (f64::NAN, 1.0),
            (1.0, f64::INFINITY),
            (-1.0, -2.0),
        ] {
            let _ = Scale::auto(lo, hi).ticks(200.0, px);
            let _ = Scale::log(lo, hi).ticks(200.0, px);
        }
    }
}
