//! What to sample and how often: plain data, filled from the scenario's `telemetry { … }` node
//! (parsing it is the scenario module's job; the intended syntax is in `docs/telemetry.md`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::kind::PrometheusKind;
use crate::units::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Time between two samples of every source (default 1s).
    #[serde(default = "default_interval")]
    pub interval: Duration,
    #[serde(default)]
    pub sources: Vec<SourceConfig>,
    /// Every request carries a W3C `traceparent` and an `x-request-id` (default on; written
    /// only when off, so plans that never named it hash as before).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub trace_context: bool,
    /// Where a span per request is exported (OTLP over HTTP, protobuf), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<OtlpExport>,
    /// Where infermeter receives the server's spans during the run, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp_receive: Option<OtlpReceive>,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// `otlp "http://collector:4318"`: the collector's base URL; spans go to its `/v1/traces`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct OtlpExport {
    pub url: String,
}

impl OtlpExport {
    /// The traces endpoint: the URL as given when it already names `/v1/traces`.
    pub fn traces_url(&self) -> String {
        let base = self.url.trim_end_matches('/');
        if base.ends_with("/v1/traces") {
            base.to_string()
        } else {
            format!("{base}/v1/traces")
        }
    }
}

/// `otlp-receive "127.0.0.1:4318" [wait="10s"]`: where the receiver listens, and how long
/// after the last stage it waits for spans still to come (servers export in batches).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct OtlpReceive {
    pub listen: String,
    #[serde(default = "default_wait")]
    pub wait: Duration,
}

/// vLLM's batch span processor exports every 5 s: twice that, and a margin.
pub fn default_wait() -> Duration {
    Duration::from_millis(12_000)
}

fn default_interval() -> Duration {
    Duration::from_millis(1000)
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            interval: default_interval(),
            sources: Vec::new(),
            trace_context: true,
            otlp: None,
            otlp_receive: None,
        }
    }
}

/// One telemetry source. `required` makes the run fail (exit 3) when the source is unavailable
/// at start; otherwise that is a warning in the report and the source's series stays empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum SourceConfig {
    /// Local GPUs through NVML.
    Nvml {
        /// GPU indices to sample; all when absent.
        #[serde(default)]
        devices: Option<Vec<u32>>,
        #[serde(default)]
        required: bool,
    },
    /// A Prometheus text endpoint: vLLM, SGLang, llama.cpp (`--metrics`) or dcgm-exporter.
    Prometheus {
        url: MetricsUrl,
        #[serde(default)]
        required: bool,
        /// Detected from metric names when absent.
        #[serde(default)]
        kind: Option<PrometheusKind>,
    },
}

impl SourceConfig {
    pub fn required(&self) -> bool {
        match self {
            SourceConfig::Nvml { required, .. } | SourceConfig::Prometheus { required, .. } => {
                *required
            }
        }
    }

    /// How the source is named in messages and in the report: `nvml` or the URL.
    pub fn label(&self) -> String {
        match self {
            SourceConfig::Nvml { .. } => "nvml".into(),
            SourceConfig::Prometheus { url, .. } => {
                crate::redact::secrets(&url.to_string()).into_owned()
            }
        }
    }
}

/// Where a Prometheus source is scraped: a URL, or the in-process simulator's own `/metrics`
/// (written `"sim"` in a scenario, and so in the plan's JSON), which the runner resolves to a
/// URL once the simulator is listening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsUrl {
    Sim,
    Url(String),
}

impl MetricsUrl {
    /// How a scenario writes the simulator's metrics.
    pub const SIM: &'static str = "sim";

    /// The URL to scrape; `None` while it still names the simulator.
    pub fn url(&self) -> Option<&str> {
        match self {
            MetricsUrl::Sim => None,
            MetricsUrl::Url(u) => Some(u),
        }
    }
}

impl std::fmt::Display for MetricsUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetricsUrl::Sim => f.write_str(Self::SIM),
            MetricsUrl::Url(u) => f.write_str(u),
        }
    }
}

impl From<String> for MetricsUrl {
    fn from(s: String) -> Self {
        if s == Self::SIM {
            MetricsUrl::Sim
        } else {
            MetricsUrl::Url(s)
        }
    }
}

impl From<&str> for MetricsUrl {
    fn from(s: &str) -> Self {
        MetricsUrl::from(s.to_string())
    }
}

impl Serialize for MetricsUrl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MetricsUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(MetricsUrl::from)
    }
}

impl JsonSchema for MetricsUrl {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MetricsUrl".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_kebab_case_sources() {
        let c: TelemetryConfig = serde_json::from_str(
            r#"{"sources":[{"type":"nvml"},
                {"type":"prometheus","url":"http://h:8000/metrics","required":true,"kind":"dcgm-exporter"}]}"#,
        )
        .unwrap();
        assert_eq!(c.interval, Duration::from_millis(1000));
        assert_eq!(
            c.sources[0],
            SourceConfig::Nvml {
                devices: None,
                required: false
            }
        );
        assert!(c.sources[1].required());
        assert_eq!(c.sources[1].label(), "http://h:8000/metrics");
        assert!(serde_json::from_str::<TelemetryConfig>(r#"{"interval":"1s","bogus":1}"#).is_err());
    }
}
