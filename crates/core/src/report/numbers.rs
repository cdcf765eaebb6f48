//! How a report writes a number: as many decimals as its size deserves.

/// A number with as many decimals as its size deserves: 1234 · 123 · 12.3 · 1.23 · 0.123.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    if a >= 100.0 || v == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// [`num`] without trailing zeros (`1.00` → `1`), for thresholds people typed.
pub fn short(v: f64) -> String {
    let s = num(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
