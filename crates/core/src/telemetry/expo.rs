//! A parser for the Prometheus text exposition format (0.0.4, and the OpenMetrics text that
//! servers send with it): sample lines only, which is all the normaliser needs.
//!
//! Why our own: `prometheus-parse` 0.2.5 (the common crate) matches metric names with `\w+`,
//! so it silently drops every `vllm:…`, `sglang:…` and `llamacpp:…` sample (colons are legal
//! in names), and splits labels on `,` and `=` even inside quoted values; `openmetrics-parser`
//! is LGPL-3.0. The grammar is small: `name{label="value",…} value [timestamp] [# exemplar]`.

use std::collections::BTreeMap;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Every sample that parsed, and the lines that did not (1-based number, reason).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    pub bad_lines: Vec<(usize, LineError)>,
}

/// Why a sample line does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("expected a metric name")]
    NoName,
    #[error("expected a space before the value of `{0}`")]
    NoSpace(String),
    #[error("missing value for `{0}`")]
    NoValue(String),
    #[error("`{value}` is not a number (metric `{metric}`)")]
    NotANumber { value: String, metric: String },
    #[error("`{timestamp}` is not a timestamp (metric `{metric}`)")]
    NotATimestamp { timestamp: String, metric: String },
    #[error("unexpected text after the sample of `{0}`")]
    Trailing(String),
    #[error("expected a label name")]
    NoLabelName,
    #[error("expected `=` after label `{0}`")]
    NoEquals(String),
    #[error("expected a quoted value for label `{0}`")]
    NoQuote(String),
    #[error("unterminated value for label `{0}`")]
    Unterminated(String),
    #[error("expected `,` or `}}` after label `{0}`")]
    NoSeparator(String),
}

impl Exposition {
    /// Samples with this exact name.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }

    /// Sum over every label set of the first of `names` that is present. Servers renamed
    /// metrics across versions (`vllm:gpu_cache_usage_perc` → `vllm:kv_cache_usage_perc`).
    pub fn sum_first(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| {
            let mut it = self.named(n).peekable();
            it.peek()?;
            Some(it.map(|s| s.value).sum())
        })
    }

    /// Mean over every label set of the first of `names` that is present.
    pub fn mean_first(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| {
            let v: Vec<f64> = self.named(n).map(|s| s.value).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
    }
}

/// Parses an exposition text; never fails as a whole (bad lines are listed).
pub fn parse_exposition(text: &str) -> Exposition {
    let mut out = Exposition::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_sample(line) {
            Ok(s) => out.samples.push(s),
            Err(e) => out.bad_lines.push((i + 1, e)),
        }
    }
    out
}

fn is_name_char(c: char, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':' || (!first && c.is_ascii_digit())
}

fn parse_sample(line: &str) -> Result<Sample, LineError> {
    let name_end = line
        .char_indices()
        .find(|&(i, c)| !is_name_char(c, i == 0))
        .map(|(i, _)| i)
        .unwrap_or(line.len());
    if name_end == 0 {
        return Err(LineError::NoName);
    }
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, tail) = parse_labels(after)?;
        labels = parsed;
        rest = tail;
    }
    if !rest.starts_with([' ', '\t']) {
        return Err(LineError::NoSpace(name));
    }
    // Drop an OpenMetrics exemplar (`# {…} v`) before splitting value and timestamp.
    let rest = rest.split(" # ").next().unwrap_or(rest);
    let mut fields = rest.split_whitespace();
    let Some(value_text) = fields.next() else {
        return Err(LineError::NoValue(name));
    };
    let Some(value) = parse_value(value_text) else {
        return Err(LineError::NotANumber {
            value: value_text.to_string(),
            metric: name,
        });
    };
    if let Some(ts) = fields.next()
        && ts.parse::<f64>().is_err()
    {
        return Err(LineError::NotATimestamp {
            timestamp: ts.to_string(),
            metric: name,
        });
    }
    if fields.next().is_some() {
        return Err(LineError::Trailing(name));
    }
    Ok(Sample {
        name,
        labels,
        value,
    })
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// Parses `a="x",b="y"}` (after the opening brace); returns the labels and the text after `}`.
fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), LineError> {
    let mut labels = BTreeMap::new();
    let mut rest = s.trim_start();
    loop {
        if let Some(tail) = rest.strip_prefix('}') {
            return Ok((labels, tail));
        }
        let key_end = rest
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_ascii_alphanumeric() || c == '_') || (i == 0 && c.is_ascii_digit())
            })
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        if key_end == 0 {
            return Err(LineError::NoLabelName);
        }
        let key = &rest[..key_end];
        rest = rest[key_end..].trim_start();
        rest = rest
            .strip_prefix('=')
            .ok_or_else(|| LineError::NoEquals(key.to_string()))?
            .trim_start();
        rest = rest
            .strip_prefix('"')
            .ok_or_else(|| LineError::NoQuote(key.to_string()))?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err(LineError::Unterminated(key.to_string())),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err(LineError::Unterminated(key.to_string())),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.insert(key.to_string(), value);
        rest = rest[close + 1..].trim_start();
        if let Some(tail) = rest.strip_prefix(',') {
            rest = tail.trim_start();
        } else if !rest.starts_with('}') {
            return Err(LineError::NoSeparator(key.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_colons_labels_and_special_values() {
        let text = r#"# HELP vllm:num_requests_running Number of requests
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="a,b=c \"q\""} 3.0
plain 1e3 1700000000000
le{le="+Inf"} +Inf
nan NaN
om_total 5 # {trace_id="x"} 1.0
"#;
        let e = parse_exposition(text);
        assert!(e.bad_lines.is_empty(), "{:?}", e.bad_lines);
        assert_eq!(e.samples.len(), 5);
        let s = &e.samples[0];
        assert_eq!(s.name, "vllm:num_requests_running");
        assert_eq!(s.labels["model_name"], "a,b=c \"q\"");
        assert_eq!(s.labels["engine"], "0");
        assert_eq!(s.value, 3.0);
        assert_eq!(e.samples[1].value, 1000.0);
        assert_eq!(e.samples[2].value, f64::INFINITY);
        assert!(e.samples[3].value.is_nan());
        assert_eq!(e.samples[4].value, 5.0);
    }

    #[test]
    fn bad_lines_are_listed_not_fatal() {
        let e = parse_exposition("ok 1\nbroken{a=\"x\" 2\nnovalue\n9bad 1\nx{a=\"1\",} 7\n");
        assert_eq!(e.samples.len(), 2, "trailing comma in labels is legal");
        assert_eq!(
            e.bad_lines.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
    }

    #[test]
    fn sums_and_means_over_label_sets() {
        let e = parse_exposition("a{e=\"0\"} 1\na{e=\"1\"} 3\nb 2\n");
        assert_eq!(e.sum_first(&["missing", "a"]), Some(4.0));
        assert_eq!(e.mean_first(&["a"]), Some(2.0));
        assert_eq!(e.sum_first(&["missing"]), None);
    }
}
