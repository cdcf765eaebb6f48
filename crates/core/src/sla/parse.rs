//! A small hand-written parser for SLA assertions, in the spirit of k6's threshold grammar.
//! Every error carries a byte span inside the expression and a hint, so the scenario layer can
//! shift the span to the file position and show it under the text.
//!
//! ```text
//! assertion   ::= ws ( "best." )? metric_ref ws op ws rhs ws EOF  ; best.: on the best configuration
//! metric_ref  ::= METRIC ( "." aggregation )? selectors?  ; aggregation required iff METRIC is a latency
//! selectors   ::= "[" selector ( "," selector )* "]"
//! selector    ::= "window" "=" ( "steady" | "stage" )    ; once; not on ITL, telemetry or curves
//!               | ( "model" | "class" ) "=" LABEL         ; once; latencies and counted figures
//! LABEL       ::= ( ALNUM | "." | "_" | "-" | "/" | ":" )+   ; a stage's model or class
//! METRIC      ::= "ttft" | "itl" | "tpot" | "e2e" | "ntpot" | "ttfa" | "send_lag"     ; latency
//!               | "error_rate" | "goodput"                                             ; percent
//!               | "request_throughput" | "goodput_rate"                                ; req/s
//!               | "output_throughput" | "input_throughput"                             ; tok/s
//! aggregation ::= "mean" | "max" | "min" | "p" NUMBER   ; p50 p90 p95 p99 p99.9 (p999 = p99.9)
//! op          ::= "<" | "<=" | ">" | ">=" | "=="
//! rhs         ::= NUMBER ws UNIT
//!               | "baseline" ( ws "*" ws NUMBER )?
//! UNIT        ::= "ms" | "s" | "m" | "us" | "µs"          ; latency, stored in ms
//!               | "%"                                     ; percent, stored in percent
//!               | "req/s" | "tok/s"
//! NUMBER      ::= DIGIT+ ( "." DIGIT+ )?
//! ws          ::= ( " " | "\t" )*
//! ```

use super::grammar::{
    Aggregation, Assertion, Metric, MetricKind, Op, Percentile, Threshold, Window,
};
use super::parse_error::{
    SlaError, SlaErrorKind, agg_list, check_windowed, example_op, example_value, metric_list,
    unit_hint, unknown_metric,
};
use crate::protocol::{Grouping, LabelRef, valid_label};

/// Parses one assertion, e.g. `ttft.p95 < 200ms` or `ttft.p95 < baseline * 1.10`.
pub fn parse(expr: &str) -> Result<Assertion, SlaError> {
    let mut p = Parser { s: expr, pos: 0 };
    p.skip_ws();
    if p.pos == expr.len() {
        return Err(SlaError::new(
            SlaErrorKind::Empty,
            (0, 0),
            "empty assertion".into(),
            "write e.g. `ttft.p95 < 200ms`".into(),
        ));
    }
    let best = p.best_prefix();
    let (metric, aggregation) = p.metric_ref()?;
    if let Some(at) = best {
        check_best(metric, at, p.pos)?;
    }
    let (window, label) = p.selectors(metric)?;
    p.skip_ws();
    let op = p.op()?;
    p.skip_ws();
    let threshold = p.rhs(metric)?;
    p.skip_ws();
    if p.pos < expr.len() {
        let len = expr.len() - p.pos;
        return Err(SlaError::new(
            SlaErrorKind::TrailingInput,
            (p.pos, len),
            format!("unexpected `{}` after the threshold", &expr[p.pos..]),
            "an assertion is one comparison; write one assertion per line".into(),
        ));
    }
    Ok(Assertion {
        expr: expr.trim_matches([' ', '\t']).to_string(),
        metric,
        aggregation,
        op,
        threshold,
        window,
        label,
        best: best.is_some(),
    })
}

/// A `best.` assertion names a figure of the ranking (more is better, one number per
/// configuration), never a latency or a share.
fn check_best(metric: Metric, at: usize, end: usize) -> Result<(), SlaError> {
    if super::grammar::BEST_FIGURES.contains(&metric.name()) {
        return Ok(());
    }
    Err(SlaError::new(
        SlaErrorKind::UnknownMetric,
        (at, end - at),
        format!("`best.{metric}` is not a figure configurations are ranked by"),
        format!(
            "figures: {}",
            super::grammar::BEST_FIGURES
                .map(|f| format!("best.{f}"))
                .join(", ")
        ),
    ))
}

/// Text to assertion is this parser's (the grammar's types do not know it), for `str::parse`
/// and the plan's JSON.
impl std::str::FromStr for Assertion {
    type Err = SlaError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// Consumes bytes while `pred` holds; only ASCII predicates are used, so the returned
    /// bounds are always char boundaries.
    fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> (usize, usize) {
        let start = self.pos;
        while self.peek().is_some_and(&pred) {
            self.pos += 1;
        }
        (start, self.pos)
    }

    /// The extent of the "word" at the cursor for error spans: up to whitespace or an operator.
    fn word_len(&self) -> usize {
        let rest = &self.s[self.pos..];
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_whitespace() || matches!(c, '<' | '>' | '=' | '!'))
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        end.max(rest.chars().next().map_or(0, char::len_utf8))
    }

    /// `best.` before the metric: the assertion is on the best configuration. Returns where
    /// the metric starts, for an error's span.
    fn best_prefix(&mut self) -> Option<usize> {
        if self.s[self.pos..].starts_with("best.") {
            self.pos += "best.".len();
            return Some(self.pos);
        }
        None
    }

    fn metric_ref(&mut self) -> Result<(Metric, Option<Aggregation>), SlaError> {
        // Telemetry metrics are dotted names (`gpu.temp.max`), not metric + aggregation.
        let dotted = self.s[self.pos..]
            .bytes()
            .take_while(|&b| is_ident(b) || b == b'.')
            .count();
        if let Some(m) = Metric::from_name(&self.s[self.pos..self.pos + dotted])
            && m.is_telemetry()
        {
            self.pos += dotted;
            return Ok((m, None));
        }
        let (start, end) = self.take_while(is_ident);
        if start == end {
            let len = self.word_len();
            return Err(SlaError::new(
                SlaErrorKind::UnknownMetric,
                (start, len),
                "expected a metric name".into(),
                format!("metrics: {}", metric_list()),
            ));
        }
        let name = &self.s[start..end];
        let metric =
            Metric::from_name(name).ok_or_else(|| unknown_metric(name, (start, end - start)))?;
        let aggregation = if self.peek() == Some(b'.') {
            self.pos += 1;
            let (a_start, a_end) = self.take_while(|b| is_ident(b) || b == b'.');
            Some(self.aggregation(metric, a_start, a_end)?)
        } else {
            None
        };
        match aggregation {
            None if metric.needs_aggregation() => Err(SlaError::new(
                SlaErrorKind::MissingAggregation,
                (start, end - start),
                format!("`{metric}` is a latency distribution and needs an aggregation"),
                format!(
                    "write e.g. `{metric}.p95`; aggregations: {}",
                    agg_list(metric)
                ),
            )),
            _ => Ok((metric, aggregation)),
        }
    }

    /// `[window=steady]`, `[model=NAME]`, `[class=NAME]` after the metric reference, if any.
    fn selectors(&mut self, metric: Metric) -> Result<(Window, Option<Box<LabelRef>>), SlaError> {
        if self.peek() != Some(b'[') {
            return Ok((Window::Stage, None));
        }
        let open = self.pos;
        let Some(close) = self.s[open..].find(']').map(|i| open + i) else {
            return Err(SlaError::new(
                SlaErrorKind::BadSelector,
                (open, self.s.len() - open),
                "unclosed `[`".into(),
                "write e.g. `ttft.p99[window=steady] < 200ms`".into(),
            ));
        };
        let mut window = None;
        let mut label = None;
        let mut at = open + 1;
        for item in self.s[open + 1..close].split(',') {
            let span = (at, item.len().max(1));
            at += item.len() + 1;
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let (key, value) = (
                key.trim_matches([' ', '\t']),
                value.trim_matches([' ', '\t']),
            );
            let bad = |message: String, hint: &str| {
                SlaError::new(SlaErrorKind::BadSelector, span, message, hint.into())
            };
            if let Some(by) = Grouping::from_name(key) {
                if label.is_some() {
                    return Err(bad(
                        format!("a second label selector `{key}`"),
                        "select one model or one class",
                    ));
                }
                if !valid_label(value) {
                    return Err(bad(
                        format!("invalid {by} name `{value}`"),
                        "letters, digits and . _ - / :",
                    ));
                }
                if !matches!(metric, Metric::Latency(_) | Metric::Count(_)) {
                    return Err(bad(
                        format!("`{metric}` is not measured per {by}"),
                        "select a label on a latency or a counted figure",
                    ));
                }
                label = Some(Box::new(LabelRef {
                    by,
                    name: value.to_string(),
                }));
                continue;
            }
            if key != "window" {
                return Err(bad(
                    format!("unknown selector `{key}`"),
                    "selectors: window=steady, window=stage, model=NAME, class=NAME",
                ));
            }
            if window.is_some() {
                return Err(bad("`window` given twice".into(), "keep one `window=`"));
            }
            let Some(w) = Window::from_name(value) else {
                return Err(bad(
                    format!("unknown window `{value}`"),
                    "windows: steady (the steady-state window), stage (the whole stage)",
                ));
            };
            window = Some(w);
        }
        self.pos = close + 1;
        let window = window.unwrap_or_default();
        if window == Window::Steady {
            check_windowed(metric, (open, close + 1 - open))?;
        }
        Ok((window, label))
    }

    fn aggregation(
        &self,
        metric: Metric,
        start: usize,
        end: usize,
    ) -> Result<Aggregation, SlaError> {
        let text = &self.s[start..end];
        let span = (start - 1, end - start + 1);
        if !metric.needs_aggregation() {
            return Err(SlaError::new(
                SlaErrorKind::UnexpectedAggregation,
                span,
                format!("`{metric}` is a single number and takes no aggregation"),
                format!(
                    "write `{metric} {} …` without `.{text}`",
                    example_op(metric)
                ),
            ));
        }
        let agg = match text {
            "mean" | "avg" => Some(Aggregation::Mean),
            "max" => Some(Aggregation::Max),
            "min" => Some(Aggregation::Min),
            _ => None,
        };
        let agg = match (agg, text.strip_prefix('p')) {
            (Some(a), _) => a,
            (None, Some(num)) if !num.is_empty() => {
                // `p999` is how results.json spells p99.9; accept it as the same thing.
                let value = if num == "999" {
                    Some(99.9)
                } else {
                    parse_number(num)
                };
                let Some(value) = value else {
                    return Err(SlaError::new(
                        SlaErrorKind::UnknownAggregation,
                        (start, end - start),
                        format!("`{text}` is not a percentile"),
                        format!("aggregations: {}", agg_list(metric)),
                    ));
                };
                match Percentile::from_value(value) {
                    Some(p) => Aggregation::Percentile(p),
                    None => {
                        return Err(SlaError::new(
                            SlaErrorKind::UnsupportedPercentile,
                            (start, end - start),
                            format!("percentile `{text}` is not recorded"),
                            format!("supported: {}", agg_list(metric)),
                        ));
                    }
                }
            }
            _ => {
                let len = if end > start {
                    end - start
                } else {
                    self.s[start..].chars().next().map_or(0, char::len_utf8)
                };
                return Err(SlaError::new(
                    SlaErrorKind::UnknownAggregation,
                    (start, len),
                    format!("unknown aggregation `{text}`"),
                    format!("aggregations: {}", agg_list(metric)),
                ));
            }
        };
        if !metric.supported_aggregations().contains(&agg) {
            return Err(SlaError::new(
                SlaErrorKind::UnsupportedPercentile,
                (start, end - start),
                format!("`{metric}` does not record `{agg}`"),
                format!("supported: {}", agg_list(metric)),
            ));
        }
        Ok(agg)
    }

    fn op(&mut self) -> Result<Op, SlaError> {
        let rest = &self.s.as_bytes()[self.pos..];
        let (op, len) = match rest {
            [b'<', b'=', ..] => (Some(Op::Le), 2),
            [b'>', b'=', ..] => (Some(Op::Ge), 2),
            [b'=', b'=', ..] => (Some(Op::Eq), 2),
            [b'<', ..] => (Some(Op::Lt), 1),
            [b'>', ..] => (Some(Op::Gt), 1),
            [b'!', b'=', ..] => (None, 2),
            [b'=', ..] => (None, 1),
            _ => (None, 0),
        };
        match (op, len) {
            (Some(op), len) => {
                self.pos += len;
                Ok(op)
            }
            (None, 0) => {
                let len = self.word_len();
                let message = if self.pos == self.s.len() {
                    "missing comparison operator".to_string()
                } else {
                    format!(
                        "expected an operator, found `{}`",
                        &self.s[self.pos..self.pos + len]
                    )
                };
                Err(SlaError::new(
                    SlaErrorKind::MissingOperator,
                    (self.pos, len),
                    message,
                    "operators: <, <=, >, >=, ==".into(),
                ))
            }
            (None, len) => Err(SlaError::new(
                SlaErrorKind::BadOperator,
                (self.pos, len),
                format!(
                    "unsupported operator `{}`",
                    &self.s[self.pos..self.pos + len]
                ),
                "operators: <, <=, >, >=, == (use `==` for equality)".into(),
            )),
        }
    }

    fn rhs(&mut self, metric: Metric) -> Result<Threshold, SlaError> {
        if self.pos == self.s.len() {
            return Err(SlaError::new(
                SlaErrorKind::MissingValue,
                (self.pos, 0),
                "missing threshold after the operator".into(),
                format!("write e.g. `{}`", example_value(metric)),
            ));
        }
        if let Some(baseline) = self.baseline() {
            return baseline;
        }
        let value = self.number(
            "threshold",
            &format!("write e.g. `{}`", example_value(metric)),
        )?;
        let num_end = self.pos;
        self.skip_ws();
        let (u_start, u_end) = self.take_while(|b| !b.is_ascii_whitespace());
        // The unit token may contain non-ASCII (`µs`): extend to a char boundary.
        let mut u_end = u_end;
        while !self.s.is_char_boundary(u_end) {
            u_end += 1;
        }
        self.pos = u_end;
        let unit = &self.s[u_start..u_end];
        let kind = metric.kind();
        if unit.is_empty() && kind.unit_optional() {
            return Ok(Threshold::Absolute(value));
        }
        if unit == "%" && kind == MetricKind::Number {
            return Ok(Threshold::Absolute(value / 100.0));
        }
        if unit.is_empty() {
            return Err(SlaError::new(
                SlaErrorKind::MissingUnit,
                (num_end, 0),
                format!("threshold for `{metric}` has no unit"),
                unit_hint(metric),
            ));
        }
        let Some((unit_kind, scale)) = unit_scale(unit) else {
            return Err(SlaError::new(
                SlaErrorKind::UnknownUnit,
                (u_start, u_end - u_start),
                format!("unknown unit `{unit}`"),
                unit_hint(metric),
            ));
        };
        if unit_kind != kind {
            return Err(SlaError::new(
                SlaErrorKind::UnitMismatch,
                (u_start, u_end - u_start),
                format!("`{unit}` does not fit `{metric}`"),
                unit_hint(metric),
            ));
        }
        Ok(Threshold::Absolute(value * scale))
    }

    /// `baseline` or `baseline * 1.10`: a threshold relative to the baseline's figure; `None`
    /// where the threshold is not one.
    fn baseline(&mut self) -> Option<Result<Threshold, SlaError>> {
        let rest = &self.s[self.pos..];
        let word_ends = !rest.as_bytes().get(8).is_some_and(|&b| is_ident(b));
        if !(rest.starts_with("baseline") && word_ends) {
            return None;
        }
        self.pos += 8;
        let save = self.pos;
        self.skip_ws();
        if self.peek() != Some(b'*') {
            self.pos = save;
            return Some(Ok(Threshold::Baseline { factor: 1.0 }));
        }
        self.pos += 1;
        self.skip_ws();
        let factor = self.number("baseline factor", "write e.g. `baseline * 1.10`");
        Some(factor.map(|factor| Threshold::Baseline { factor }))
    }

    fn number(&mut self, what: &str, hint: &str) -> Result<f64, SlaError> {
        let (start, end) = self.take_while(|b| b.is_ascii_digit() || b == b'.');
        let text = &self.s[start..end];
        match parse_number(text) {
            Some(v) => Ok(v),
            None => {
                self.pos = start;
                let len = if text.is_empty() {
                    self.word_len()
                } else {
                    text.len()
                };
                let found = &self.s[start..start + len];
                Err(SlaError::new(
                    SlaErrorKind::BadNumber,
                    (start, len),
                    if found.is_empty() {
                        format!("missing {what}")
                    } else {
                        format!("`{found}` is not a valid {what}")
                    },
                    hint.to_string(),
                ))
            }
        }
    }
}

/// `12`, `12.5`; rejects `1.`, `.5`, `1.2.3` and anything non-finite.
fn parse_number(text: &str) -> Option<f64> {
    let mut parts = text.split('.');
    let int = parts.next()?;
    let frac = parts.next();
    let ok = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
        && parts.next().is_none();
    if !ok {
        return None;
    }
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A threshold's unit: the kind of metric it fits and its factor to the metric's own unit.
fn unit_scale(unit: &str) -> Option<(MetricKind, f64)> {
    Some(match unit {
        "ms" => (MetricKind::Latency, 1.0),
        "s" => (MetricKind::Latency, 1e3),
        // `server_startup < 5m`: a server's start-up is counted in minutes.
        "m" => (MetricKind::Latency, 60e3),
        "us" | "µs" => (MetricKind::Latency, 1e-3),
        "%" => (MetricKind::Percent, 1.0),
        // `20/s`: requests are what a rate counts unless it says tokens.
        "req/s" | "/s" => (MetricKind::ReqPerSec, 1.0),
        "tok/s" => (MetricKind::TokPerSec, 1.0),
        "inputs/s" => (MetricKind::InputsPerSec, 1.0),
        "°C" | "C" => (MetricKind::Celsius, 1.0),
        "W" => (MetricKind::Watts, 1.0),
        "J" => (MetricKind::Joules, 1.0),
        "tok/J" => (MetricKind::TokPerJoule, 1.0),
        _ => return None,
    })
}
