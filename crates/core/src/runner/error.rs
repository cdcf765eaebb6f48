//! What goes wrong in a run: what stops it from starting ([`RunError`]) and what goes wrong
//! without stopping it ([`RunProblem`]), in a file of their own so the stage, target and
//! telemetry parts report them without importing the run back.

use std::path::PathBuf;

use crate::client::ClientError;
use crate::dataset::DatasetError;
use crate::hooks::HookError;
use crate::plan::PlanError;
use crate::sim::SimError;
use crate::telemetry::TelemetryError;
use crate::units::Duration;

/// Something that went wrong during the run without stopping it.
#[derive(Debug, thiserror::Error)]
pub enum RunProblem {
    #[error("failed to write {}", path.display())]
    RequestsJsonl {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("internal error: the collector of stage `{0}` panicked; its numbers are lost")]
    CollectorPanicked(String),
    #[error("search `{stage}` could not plan its next probe")]
    Probe {
        stage: String,
        #[source]
        source: PlanError,
    },
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("failed to start the embedded simulator")]
    Sim(#[source] SimError),
    #[error("failed to start the simulator thread")]
    SimThread(#[source] std::io::Error),
    /// `network { … }`: the shaping proxy could not start.
    #[error("failed to start the network shaping proxy")]
    Netem(#[source] std::io::Error),
    /// `network { … }` on a URL the proxy cannot stand in for (https; the scenario check
    /// refuses it first).
    #[error("network shaping needs an http target, not {url}")]
    NetemUrl { url: String },
    /// One URL of a target that lists several failed its preflight (`source` names it).
    #[error(
        "URL {index} of the target's {count} is not ready; start that server, or remove its \
         `url` from the target"
    )]
    Replica {
        index: usize,
        count: usize,
        #[source]
        source: Box<RunError>,
    },
    #[error("cannot reach the target at {url}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The target's URL ends in the path of the API it is asked for, which every request
    /// would add again (`…/v1/chat/completions/chat/completions`).
    #[error(
        "{url} ends in the {api} API's path {path}, which every request adds to the base URL; \
         did you mean {likely}?"
    )]
    EndsInApiPath {
        url: String,
        api: &'static str,
        path: &'static str,
        likely: String,
    },
    /// The server answers 404 for the API's path below the target's URL: it is not the API's
    /// base (`http://host:8000` for vLLM's `http://host:8000/v1`).
    #[error("{url} answers 404 for {path}; {}", base_hint(likely.as_deref()))]
    NotApiBase {
        url: String,
        path: &'static str,
        likely: Option<String>,
    },
    #[error("the target did not answer GET {url} within {timeout} (the target's timeout)")]
    NoAnswer { url: String, timeout: Duration },
    #[error("GET {url} {problem}; name the model with `model \"…\"` in the target")]
    NoModel { url: String, problem: String },
    #[error("failed to prepare the prompts")]
    Dataset(#[from] DatasetError),
    #[error("the hooks of data set `{dataset}` do not compile")]
    Hooks {
        dataset: String,
        #[source]
        source: HookError,
    },
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("telemetry source `prometheus \"sim\"` needs the embedded simulator as the target")]
    SimMetricsWithoutSim,
    /// A required telemetry source is unavailable (or telemetry could not start).
    #[error(transparent)]
    Telemetry(#[from] TelemetryError),
    #[error("failed to create {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What a [`RunError::NotApiBase`] suggests: the likely base, or what a base looks like.
fn base_hint(likely: Option<&str>) -> String {
    match likely {
        Some(u) => format!("did you mean {u}?"),
        None => "give the server's OpenAI-compatible base URL, the part before the API's path \
                 (most servers serve it at …/v1)"
            .into(),
    }
}
