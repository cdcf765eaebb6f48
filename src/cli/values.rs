//! Value parsers of the flags several commands share — `--param NAME=VALUE`, `--shard I/N`,
//! percentages and confidences — each failing with a typed [`ValueError`], which clap shows
//! under the flag.

use crate::app::Slice;
use crate::units::{Percent, UnitError};

/// A flag's value that does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("expected NAME=VALUE, got `{0}`")]
    Param(String),
    #[error("expected I/N (shard I of N, 0-based, e.g. 0/4), got `{0}`")]
    Shard(String),
    #[error("shard {index}/{count}: the index must be below the count (0 … {})", count.max(&1) - 1)]
    ShardIndex { index: u32, count: u32 },
    #[error("`{0}` is not a number (a percentage, e.g. 5)")]
    NotPercent(String),
    #[error("{0} is not between 0 and 100")]
    PercentRange(f64),
    #[error("{0} is not from 50% to below 100%")]
    Confidence(String),
    #[error(transparent)]
    Unit(#[from] UnitError),
}

/// Splits `NAME=VALUE` at the first `=`.
pub fn parse_param(s: &str) -> Result<(String, String), ValueError> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(ValueError::Param(s.to_string())),
    }
}

/// `I/N`: shard I (0-based) of N.
pub fn parse_shard(s: &str) -> Result<Slice, ValueError> {
    let bad = || ValueError::Shard(s.to_string());
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let index: u32 = i.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(ValueError::ShardIndex { index, count });
    }
    Ok(Slice { index, count })
}

/// A percentage from 0 to 100 (`5`, `12.5%`).
pub fn percent(s: &str) -> Result<f64, ValueError> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| ValueError::NotPercent(s.to_string()))?;
    if (0.0..=100.0).contains(&v) {
        Ok(v)
    } else {
        Err(ValueError::PercentRange(v))
    }
}

/// `compare --min-agreement`: a share, as a percentage with its `%` (`99%`) or a fraction
/// (`0.99`), as a fraction.
pub fn share(s: &str) -> Result<f64, ValueError> {
    if s.ends_with('%') {
        return Ok(percent(s)? / 100.0);
    }
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        Ok(v) => Err(ValueError::PercentRange(v * 100.0)),
        Err(_) => Err(ValueError::NotPercent(s.to_string())),
    }
}

/// `run --confidence`: a confidence from 50 % to below 100 % (`95`, `95%`), as a fraction.
pub fn confidence(s: &str) -> Result<f64, ValueError> {
    in_confidence_range(s, percent(s)? / 100.0)
}

/// `compare --confidence`: a percentage with its `%` (`95%`), from 50 % to below 100 %, as a
/// fraction.
pub fn percent_confidence(s: &str) -> Result<f64, ValueError> {
    in_confidence_range(s, s.parse::<Percent>()?.0)
}

fn in_confidence_range(s: &str, v: f64) -> Result<f64, ValueError> {
    if (0.5..1.0).contains(&v) {
        Ok(v)
    } else {
        Err(ValueError::Confidence(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_threshold_is_a_percentage() {
        assert_eq!(percent("5"), Ok(5.0));
        assert_eq!(percent("12.5%"), Ok(12.5));
        assert!(percent("150").is_err());
        assert!(
            percent("lots")
                .unwrap_err()
                .to_string()
                .contains("not a number")
        );
    }

    #[test]
    fn shards_and_confidences() {
        assert_eq!(parse_shard("1/4"), Ok(Slice { index: 1, count: 4 }));
        assert_eq!(
            parse_shard("4/4").unwrap_err().to_string(),
            "shard 4/4: the index must be below the count (0 … 3)"
        );
        assert_eq!(confidence("90"), Ok(0.9));
        assert!(confidence("40%").is_err());
        assert_eq!(percent_confidence("99%"), Ok(0.99));
        assert!(percent_confidence("99").is_err());
        assert!(parse_param("=x").is_err());
    }
}
