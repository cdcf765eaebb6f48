//! Typed readers for single values (string, integer, number, bool, duration, rate): each checks
//! the value's type and range and, on failure, records a problem under the value's span and
//! returns `None` so that decoding goes on.

use kdl::KdlValue;

use super::ctx::{Ctx, Val};
use crate::units::{Burstiness, Duration, Rate};

impl Ctx<'_> {
    fn wrong_type(&mut self, v: &Val, what: &str, expected: &str, help: Option<String>) {
        self.error(
            v.span,
            format!("wrong type for `{what}`"),
            format!("expected {expected}, got {}", v.shown()),
            help,
        );
    }

    pub fn string(&mut self, v: &Val, what: &str) -> Option<String> {
        match &v.value {
            KdlValue::String(s) => Some(s.clone()),
            _ => {
                self.wrong_type(v, what, "a string", Some("quote it: \"…\"".into()));
                None
            }
        }
    }

    /// A non-empty string.
    pub fn name_string(&mut self, v: &Val, what: &str) -> Option<String> {
        let s = self.string(v, what)?;
        if s.trim().is_empty() {
            self.error(v.span, format!("empty `{what}`"), "must not be empty", None);
            return None;
        }
        Some(s)
    }

    /// A whole number in `min..=max`.
    pub fn uint(&mut self, v: &Val, what: &str, min: u64, max: u64) -> Option<u64> {
        let KdlValue::Integer(i) = v.value else {
            let help = match v.value {
                KdlValue::String(ref s) if s.trim().parse::<u64>().is_ok() => {
                    Some(format!("remove the quotes: {}", s.trim()))
                }
                _ => None,
            };
            self.wrong_type(v, what, &format!("a whole number ≥ {min}"), help);
            return None;
        };
        if i < min as i128 || i > max as i128 {
            let range = if max == u64::MAX {
                format!("≥ {min}")
            } else {
                format!("between {min} and {max}")
            };
            self.error(
                v.span,
                format!("`{what}` out of range"),
                format!("must be {range}, got {i}"),
                None,
            );
            return None;
        }
        Some(i as u64)
    }

    /// A whole number, negative too, in `min..=max`.
    pub fn int(&mut self, v: &Val, what: &str, min: i64, max: i64) -> Option<i64> {
        let KdlValue::Integer(i) = v.value else {
            self.wrong_type(v, what, "a whole number", None);
            return None;
        };
        if i < i128::from(min) || i > i128::from(max) {
            self.error(
                v.span,
                format!("`{what}` out of range"),
                format!("must be between {min} and {max}, got {i}"),
                None,
            );
            return None;
        }
        Some(i as i64)
    }

    pub fn u32_at_least(&mut self, v: &Val, what: &str, min: u32) -> Option<u32> {
        self.uint(v, what, min as u64, u32::MAX as u64)
            .map(|n| n as u32)
    }

    /// Any finite number (integers included).
    pub fn number(&mut self, v: &Val, what: &str) -> Option<f64> {
        let n = match v.value {
            KdlValue::Integer(i) => i as f64,
            KdlValue::Float(f) if f.is_finite() => f,
            _ => {
                self.wrong_type(v, what, "a number", None);
                return None;
            }
        };
        Some(n)
    }

    /// A finite number `≥ min` (or `> min` when `strict`).
    pub fn number_min(&mut self, v: &Val, what: &str, min: f64, strict: bool) -> Option<f64> {
        let n = self.number(v, what)?;
        if n < min || (strict && n == min) {
            let op = if strict { ">" } else { "≥" };
            self.error(
                v.span,
                format!("`{what}` out of range"),
                format!("must be {op} {min}, got {n}"),
                None,
            );
            return None;
        }
        Some(n)
    }

    pub fn boolean(&mut self, v: &Val, what: &str) -> Option<bool> {
        match &v.value {
            KdlValue::Bool(b) => Some(*b),
            KdlValue::String(s) if matches!(s.as_str(), "true" | "false" | "yes" | "no") => {
                let fix = if matches!(s.as_str(), "true" | "yes") {
                    "#true"
                } else {
                    "#false"
                };
                self.wrong_type(
                    v,
                    what,
                    "#true or #false",
                    Some(format!("KDL 2 writes booleans with a #: {fix}")),
                );
                None
            }
            _ => {
                self.wrong_type(v, what, "#true or #false", None);
                None
            }
        }
    }

    pub fn duration(&mut self, v: &Val, what: &str) -> Option<Duration> {
        match &v.value {
            KdlValue::String(s) => match s.parse::<Duration>() {
                Ok(d) => Some(d),
                Err(e) => {
                    self.error(v.span, format!("invalid duration for `{what}`"), e.0, None);
                    None
                }
            },
            KdlValue::Integer(_) | KdlValue::Float(_) => {
                let n = v.value.to_string();
                self.wrong_type(
                    v,
                    what,
                    "a duration like \"250ms\"",
                    Some(format!(
                        "durations need a unit: write \"{n}s\" or \"{n}ms\""
                    )),
                );
                None
            }
            _ => {
                self.wrong_type(v, what, "a duration like \"250ms\"", None);
                None
            }
        }
    }

    /// A duration that is not zero.
    pub fn positive_duration(&mut self, v: &Val, what: &str) -> Option<Duration> {
        let d = self.duration(v, what)?;
        if d == Duration::ZERO {
            self.error(
                v.span,
                format!("`{what}` is zero"),
                "must be longer than 0s",
                None,
            );
            return None;
        }
        Some(d)
    }

    /// A gamma arrival's `burstiness`: a number > 0.
    pub fn burstiness(&mut self, v: &Val) -> Option<Burstiness> {
        let n = self.number(v, "burstiness")?;
        match Burstiness::new(n) {
            Ok(b) => Some(b),
            Err(e) => {
                self.error(v.span, "`burstiness` out of range", e.0, None);
                None
            }
        }
    }

    pub fn rate(&mut self, v: &Val, what: &str) -> Option<Rate> {
        let r = match &v.value {
            KdlValue::Integer(i) => Rate::new(*i as f64),
            KdlValue::Float(f) => Rate::new(*f),
            KdlValue::String(s) => s.parse::<Rate>(),
            _ => {
                self.wrong_type(v, what, "a rate like 20 or \"600/m\"", None);
                return None;
            }
        };
        match r {
            Ok(r) => Some(r),
            Err(e) => {
                self.error(
                    v.span,
                    format!("invalid rate for `{what}`"),
                    e.0,
                    Some("a rate is requests per second > 0, e.g. 20, 2.5 or \"600/m\"".into()),
                );
                None
            }
        }
    }
}
