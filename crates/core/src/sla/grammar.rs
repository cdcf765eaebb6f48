//! The typed form of an SLA assertion (`ttft.p95 < 200ms`): metric, aggregation, operator and
//! threshold as enums, each with its canonical unit, so evaluation never re-reads text. The
//! metrics and aggregations are the vocabulary's (`metrics::Metric`).

use std::fmt;

pub use crate::metrics::{Aggregation, Metric, MetricKind, Percentile};
use crate::protocol::LabelRef;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
        }
    }

    /// Whether `observed OP threshold` holds. `==` allows a relative 1e-9 so that a value that
    /// went through a unit conversion still compares equal.
    pub fn holds(self, observed: f64, threshold: f64) -> bool {
        match self {
            Op::Lt => observed < threshold,
            Op::Le => observed <= threshold,
            Op::Gt => observed > threshold,
            Op::Ge => observed >= threshold,
            Op::Eq => {
                (observed - threshold).abs() <= 1e-9 * observed.abs().max(threshold.abs()).max(1.0)
            }
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// The right-hand side of an assertion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A fixed value in the metric's canonical unit ([`MetricKind::unit`]).
    Absolute(f64),
    /// The baseline's value of the same stage and metric, times `factor`.
    Baseline { factor: f64 },
}

/// Which requests of a stage an assertion is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Window {
    /// The whole stage, ramp and drain included.
    #[default]
    Stage,
    /// The stage's steady-state window (`metrics::SteadyState`): written
    /// `ttft.p99[window=steady]`, or `window "steady"` in an `sla` block.
    Steady,
}

impl Window {
    /// The closed vocabulary, as written in `[window=…]` and `window "…"`.
    pub const ALL: [Window; 2] = [Window::Stage, Window::Steady];

    pub fn as_str(self) -> &'static str {
        match self {
            Window::Stage => "stage",
            Window::Steady => "steady",
        }
    }

    pub fn from_name(name: &str) -> Option<Window> {
        Window::ALL.into_iter().find(|w| w.as_str() == name)
    }
}

/// One parsed SLA assertion, e.g. `ttft.p95 < 200ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    /// The text as written (trimmed), reported back in verdicts.
    pub expr: String,
    pub metric: Metric,
    /// `None` exactly for metrics that are single numbers (throughputs, rates).
    pub aggregation: Option<Aggregation>,
    pub op: Op,
    pub threshold: Threshold,
    /// Judged on the whole stage or on its steady-state window (`[window=steady]`).
    pub window: Window,
    /// Judged on one label's requests only (`[model=lora-sql]`, `[class=interactive]`).
    /// Boxed: most assertions have none, and an assertion travels in the run's error.
    pub label: Option<Box<LabelRef>>,
    /// On the best of the server's configurations (`best.goodput_rate > 5/s`): judged once,
    /// after the run, on the winner's figure (`sla::rank_configs`), never on a stage.
    pub best: bool,
}

/// The figures a `best.` assertion and the ranking of configurations may name: the ones
/// where more is better, each one number per configuration.
pub const BEST_FIGURES: [&str; 6] = [
    "goodput_rate",
    "request_throughput",
    "output_throughput",
    "input_throughput",
    "sla_max_rate",
    "sla_max_clients",
];

impl Assertion {
    /// Judged on the stage's steady-state window rather than the whole stage.
    pub fn on_steady_window(&self) -> bool {
        self.window == Window::Steady
    }

    /// The assertion judged on `window`, its text saying so (`ttft.p99[window=steady] <
    /// 200ms`) so that a verdict, and the plan's JSON read back, carry it: what an `sla`
    /// block's `window "steady"` does to each assertion that names no window of its own.
    pub fn in_window(mut self, window: Window) -> Assertion {
        if window == self.window || window == Window::Stage {
            return self;
        }
        // The metric reference is the text's first word: a name, dots and its aggregation.
        let cut = self
            .expr
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(self.expr.len());
        if let Some(rest) = self.expr[cut..].strip_prefix('[') {
            // It names its own window; the block's default does not override it. A label
            // selector alone takes the block's window beside it.
            if rest.split(']').next().is_some_and(|s| s.contains("window")) {
                return self;
            }
            self.expr = format!("{}[window={},{rest}", &self.expr[..cut], window.as_str());
            self.window = window;
            return self;
        }
        self.expr = format!(
            "{}[window={}]{}",
            &self.expr[..cut],
            window.as_str(),
            &self.expr[cut..]
        );
        self.window = window;
        self
    }

    /// The assertion judged on one label's requests, its text saying so
    /// (`ttft.p95[class=interactive] < 300ms`): what a class's own `sla` block does to each
    /// of its assertions. An error when the assertion selects a label already.
    pub fn with_label(mut self, on: LabelRef) -> Result<Assertion, LabelError> {
        if let Some(had) = &self.label {
            return Err(LabelError::Selects(had.to_string()));
        }
        if !matches!(self.metric, Metric::Latency(_) | Metric::Count(_)) {
            return Err(LabelError::NotPerLabel {
                metric: self.metric.to_string(),
                by: on.by.to_string(),
            });
        }
        let cut = self
            .expr
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(self.expr.len());
        self.expr = match self.expr[cut..].strip_prefix('[') {
            Some(rest) => format!("{}[{on},{rest}", &self.expr[..cut]),
            None => format!("{}[{on}]{}", &self.expr[..cut], &self.expr[cut..]),
        };
        self.label = Some(Box::new(on));
        Ok(self)
    }

    /// The unit of the threshold and of the observed value.
    pub fn unit(&self) -> &'static str {
        self.metric.kind().unit()
    }

    /// `ttft.p95` / `error_rate`: the metric as it is named in reports.
    pub fn metric_ref(&self) -> String {
        match self.aggregation {
            Some(a) => format!("{}.{a}", self.metric),
            None => self.metric.to_string(),
        }
    }
}

/// Why an assertion cannot be put on one label's requests ([`Assertion::with_label`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error("the assertion already selects `{0}`")]
    Selects(String),
    #[error("`{metric}` is not measured per {by}")]
    NotPerLabel { metric: String, by: String },
}

impl fmt::Display for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

/// An assertion with where it applies: a scenario-level one (every stage) or a stage's own,
/// and whether failing it stops the run at once.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScopedAssertion {
    /// Serialised as the text as written.
    #[serde(rename = "expr")]
    pub assertion: Assertion,
    /// `None`: evaluated on every measured stage.
    pub stage: Option<String>,
    pub abort_on_fail: bool,
    /// On a sweep, judge every point's verdict in the gate, past the knee too
    /// (`every-point=#true`); without it a point past the knee is reported but does not gate.
    /// Left out of the plan's JSON when false, so the hash of a plan without it is unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every_point: bool,
}

impl ScopedAssertion {
    /// A scenario-level assertion that does not abort.
    pub fn everywhere(assertion: Assertion) -> Self {
        ScopedAssertion {
            assertion,
            stage: None,
            abort_on_fail: false,
            every_point: false,
        }
    }

    /// An assertion on stage `stage` only.
    pub fn on(assertion: Assertion, stage: impl Into<String>) -> Self {
        ScopedAssertion {
            assertion,
            stage: Some(stage.into()),
            abort_on_fail: false,
            every_point: false,
        }
    }
}

/// Serialised as the text as written, so a plan's JSON (and its hash) holds the expression.
impl serde::Serialize for Assertion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.expr)
    }
}

impl<'de> serde::Deserialize<'de> for Assertion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Assertion {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Assertion".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}
