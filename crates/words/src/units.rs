//! Small value types with explicit units (durations, rates, percentages), each parsed from and
//! printed as the text a user writes in a scenario, e.g. `"250ms"`, `"20/s"`, `"1%"`.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a unit-carrying value could not be parsed. The message is a lowercase fragment that
/// names what was expected, so callers can put it under a span.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

/// A non-negative length of time written with a unit: `"250ms"`, `"1.5s"`, `"2m"`, `"1h"`,
/// `"800us"`. A bare number is rejected so that `timeout 60` cannot mean seconds to one reader
/// and milliseconds to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub const ZERO: Duration = Duration(std::time::Duration::ZERO);

    pub fn from_secs_f64(s: f64) -> Self {
        Duration(std::time::Duration::from_secs_f64(s))
    }
    pub fn from_millis(ms: u64) -> Self {
        Duration(std::time::Duration::from_millis(ms))
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0.as_secs_f64() * 1e3
    }
    pub fn as_std(self) -> std::time::Duration {
        self.0
    }
    pub fn as_nanos(self) -> u64 {
        self.0.as_nanos().min(u64::MAX as u128) as u64
    }
}

const DURATION_UNITS: &[(&str, f64)] = &[
    ("ns", 1e-9),
    ("us", 1e-6),
    ("µs", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("m", 60.0),
    ("h", 3600.0),
];

/// Splits `"12.5ms"` into `(12.5, "ms")`.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+' || *c == 'e'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // `e` is ambiguous with no unit that starts with it, but guard `1e` style garbage.
    let (num, unit) = s.split_at(end);
    let n: f64 = num.parse().ok()?;
    Some((n, unit.trim()))
}

impl FromStr for Duration {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hint = || {
            UnitError(format!(
                "`{s}` is not a duration; write a number with a unit: ns, us, ms, s, m or h (e.g. \"250ms\", \"2m\")"
            ))
        };
        let (n, unit) = split_number(s).ok_or_else(hint)?;
        if unit.is_empty() {
            return Err(UnitError(format!(
                "`{s}` has no unit; write e.g. \"{s}s\" or \"{s}ms\""
            )));
        }
        let scale = DURATION_UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, f)| *f)
            .ok_or_else(hint)?;
        if !n.is_finite() || n < 0.0 {
            return Err(UnitError(format!("`{s}` is negative; a duration is ≥ 0")));
        }
        let secs = n * scale;
        if secs > 1e9 {
            return Err(UnitError(format!("`{s}` is too long")));
        }
        Ok(Duration::from_secs_f64(secs))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        if ns == 0 {
            return f.write_str("0s");
        }
        // Largest unit that shows the value exactly with at most three decimals.
        for (unit, per) in [
            ("h", 3_600_000_000_000u128),
            ("m", 60_000_000_000),
            ("s", 1_000_000_000),
            ("ms", 1_000_000),
            ("us", 1_000),
        ] {
            if ns >= per && (ns * 1000).is_multiple_of(per) {
                let v = ns as f64 / per as f64;
                return write!(f, "{}{unit}", trim_float(v));
            }
        }
        write!(f, "{ns}ns")
    }
}

/// A count with its noun, singular for one: `counted(1, "core", "cores")` → `1 core`,
/// `counted(4, "core", "cores")` → `4 cores`.
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `1.500` → `1.5`, `2.000` → `2`.
pub fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration with a unit: ns, us, ms, s, m or h, e.g. \"250ms\" or \"2m\".",
            "pattern": "^[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)$"
        })
    }
}

/// A request rate in requests per second. Written as a number (`20`, `2.5`) or with an explicit
/// unit (`"20/s"`, `"600/m"`). Always finite and > 0.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Rate(pub f64);

impl Rate {
    pub fn per_sec(self) -> f64 {
        self.0
    }
    /// Checks a plain number of requests per second.
    pub fn new(v: f64) -> Result<Self, UnitError> {
        if !v.is_finite() || v <= 0.0 {
            return Err(UnitError(format!(
                "rate must be a number of requests per second > 0, got {v}"
            )));
        }
        Ok(Rate(v))
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (n, unit) = split_number(s).ok_or_else(|| {
            UnitError(format!(
                "`{s}` is not a rate; write requests per second, e.g. 20 or \"20/s\" or \"600/m\""
            ))
        })?;
        let per_sec = match unit {
            "" | "/s" | "req/s" | "rps" => n,
            "/m" | "req/m" => n / 60.0,
            "/h" | "req/h" => n / 3600.0,
            _ => {
                return Err(UnitError(format!(
                    "`{s}` has an unknown rate unit `{unit}`; use /s, /m or /h"
                )));
            }
        };
        Rate::new(per_sec)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s", trim_float(self.0))
    }
}

/// A share written as a percentage (`"1%"`, `"99.5%"`), stored as a fraction in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Percent(pub f64);

impl FromStr for Percent {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let Some(num) = t.strip_suffix('%') else {
            return Err(UnitError(format!(
                "`{s}` is not a percentage; write e.g. \"1%\""
            )));
        };
        let n: f64 = num
            .trim()
            .parse()
            .map_err(|_| UnitError(format!("`{s}` is not a percentage; write e.g. \"1%\"")))?;
        if !(0.0..=100.0).contains(&n) {
            return Err(UnitError(format!("`{s}` is outside 0%..100%")));
        }
        Ok(Percent(n / 100.0))
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", trim_float(self.0 * 100.0))
    }
}

/// A link's rate in bits per second, written as networking tools write it: `"100Mbit"`,
/// `"1Gbit"`, `"512kbit"`, `"10Mbps"` (bits), or in bytes with a slash: `"12.5MB/s"`,
/// `"1MiB/s"`. Always a whole number of bits per second ≥ 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bandwidth(u64);

/// The units a [`Bandwidth`] may carry, with their bits per second.
const BANDWIDTH_UNITS: &[(&str, f64)] = &[
    ("bit", 1.0),
    ("kbit", 1e3),
    ("Kbit", 1e3),
    ("Mbit", 1e6),
    ("Gbit", 1e9),
    ("bps", 1.0),
    ("kbps", 1e3),
    ("Kbps", 1e3),
    ("Mbps", 1e6),
    ("Gbps", 1e9),
    ("B/s", 8.0),
    ("kB/s", 8e3),
    ("KB/s", 8e3),
    ("MB/s", 8e6),
    ("GB/s", 8e9),
    ("KiB/s", 8.0 * 1024.0),
    ("MiB/s", 8.0 * 1024.0 * 1024.0),
    ("GiB/s", 8.0 * 1024.0 * 1024.0 * 1024.0),
];

impl Bandwidth {
    /// Checks a whole number of bits per second.
    pub fn from_bits_per_sec(bits: u64) -> Result<Self, UnitError> {
        if bits == 0 {
            return Err(UnitError("a bandwidth must be more than 0".into()));
        }
        Ok(Bandwidth(bits))
    }
    pub fn bits_per_sec(self) -> u64 {
        self.0
    }
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
}

impl FromStr for Bandwidth {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hint = || {
            UnitError(format!(
                "`{s}` is not a bandwidth; write a number with a unit: bit, kbit, Mbit, Gbit (or Mbps, MB/s), e.g. \"100Mbit\""
            ))
        };
        let (n, unit) = split_number(s).ok_or_else(hint)?;
        if unit.is_empty() {
            return Err(UnitError(format!(
                "`{s}` has no unit; write e.g. \"{s}Mbit\""
            )));
        }
        let scale = BANDWIDTH_UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, f)| *f)
            .ok_or_else(hint)?;
        let bits = n * scale;
        if !bits.is_finite() || bits > 1e15 {
            return Err(UnitError(format!("`{s}` is too large")));
        }
        if bits < 1.0 {
            return Err(UnitError(format!(
                "`{s}` is not more than 0; a bandwidth is at least 1bit"
            )));
        }
        Bandwidth::from_bits_per_sec(bits.round() as u64)
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, per) in [("Gbit", 1e9), ("Mbit", 1e6), ("kbit", 1e3)] {
            let v = self.0 as f64 / per;
            if v >= 1.0 {
                return write!(f, "{}{unit}", trim_float((v * 1000.0).round() / 1000.0));
            }
        }
        write!(f, "{}bit", self.0)
    }
}

/// Written and read as its text (`"100Mbit"`).
impl Serialize for Bandwidth {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Bandwidth {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Bandwidth {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Bandwidth".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "bits per second with a unit, e.g. \"100Mbit\""
        })
    }
}

/// The shape of gamma inter-arrival times (vLLM's `--burstiness`): 1 is Poisson, < 1
/// burstier, > 1 more regular. Always finite and > 0: checked where it is made, so the schedule
/// can use it as the gamma's shape as it is. Written and serialised as a plain number.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Burstiness(f64);

impl Burstiness {
    /// Poisson arrivals' burstiness.
    pub const POISSON: Burstiness = Burstiness(1.0);

    /// Checks a shape.
    pub fn new(v: f64) -> Result<Self, UnitError> {
        match v {
            v if !v.is_finite() => Err(UnitError(format!("must be a finite number, got {v}"))),
            v if v <= 0.0 => Err(UnitError(format!("must be > 0, got {v}"))),
            v => Ok(Burstiness(v)),
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl FromStr for Burstiness {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| UnitError(format!("`{s}` is not a number")))?;
        Burstiness::new(v)
    }
}

impl fmt::Display for Burstiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl Serialize for Burstiness {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Burstiness {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Burstiness::new(f64::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A plain number in the schema, as the field was before it had a type.
impl JsonSchema for Burstiness {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        f64::schema_name()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        f64::json_schema(g)
    }
}

/// UTC time as RFC 3339 (`2026-11-29T10:45:00Z`), without a date crate.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_count_of_one_is_singular() {
        assert_eq!(super::counted(1u32, "core", "cores"), "1 core");
        assert_eq!(super::counted(0u32, "core", "cores"), "0 cores");
        assert_eq!(super::counted(16u64, "core", "cores"), "16 cores");
    }

    use super::*;

    #[test]
    fn bandwidths_parse_in_bits_and_bytes() {
        for (text, bits) in [
            ("100Mbit", 100_000_000),
            ("1Gbit", 1_000_000_000),
            ("512kbit", 512_000),
            ("10Mbps", 10_000_000),
            ("1MB/s", 8_000_000),
            ("1MiB/s", 8 * 1024 * 1024),
        ] {
            let b: Bandwidth = text.parse().unwrap();
            assert_eq!(b.bits_per_sec(), bits, "{text}");
        }
        assert_eq!(
            "100Mbit".parse::<Bandwidth>().unwrap().to_string(),
            "100Mbit"
        );
        for bad in ["0Mbit", "100", "fast", "-1Mbit", "1e30Gbit", "100Mbyte"] {
            assert!(bad.parse::<Bandwidth>().is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_round_trip() {
        for (text, ms) in [
            ("250ms", 250.0),
            ("1.5s", 1500.0),
            ("2m", 120_000.0),
            ("1h", 3_600_000.0),
            ("800us", 0.8),
        ] {
            let d: Duration = text.parse().unwrap();
            assert!((d.as_millis_f64() - ms).abs() < 1e-9, "{text}");
            assert_eq!(d.to_string(), text);
        }
    }

    #[test]
    fn durations_need_units() {
        assert!("60".parse::<Duration>().unwrap_err().0.contains("no unit"));
        assert!("5 parsecs".parse::<Duration>().is_err());
        assert!("-1s".parse::<Duration>().is_err());
        assert!("".parse::<Duration>().is_err());
    }

    #[test]
    fn burstiness_is_finite_and_positive() {
        assert_eq!("0.5".parse::<Burstiness>().unwrap().get(), 0.5);
        assert_eq!(Burstiness::POISSON.to_string(), "1");
        for bad in ["0", "-1", "inf", "NaN", "x", ""] {
            assert!(bad.parse::<Burstiness>().is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<Burstiness>("0").is_err());
        let b: Burstiness = serde_json::from_str("0.25").unwrap();
        assert_eq!(serde_json::to_string(&b).unwrap(), "0.25");
    }

    #[test]
    fn rates_and_percents() {
        assert_eq!("600/m".parse::<Rate>().unwrap().per_sec(), 10.0);
        assert_eq!("20".parse::<Rate>().unwrap().per_sec(), 20.0);
        assert!("0".parse::<Rate>().is_err());
        assert!("5/fortnight".parse::<Rate>().is_err());
        assert_eq!("1%".parse::<Percent>().unwrap().0, 0.01);
        assert_eq!(Percent(0.995).to_string(), "99.5%");
        assert!("101%".parse::<Percent>().is_err());
        assert!("5".parse::<Percent>().is_err());
    }

    #[test]
    fn rfc3339_dates() {
        use std::time::{Duration, SystemTime};
        assert_eq!(
            super::rfc3339(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00Z"
        );
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_948_135);
        assert_eq!(super::rfc3339(t), "2026-11-29T10:28:55Z");
    }
}
