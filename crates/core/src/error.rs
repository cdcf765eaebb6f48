//! The one error type of every command and of [`crate::app::run_scenario`], and the only
//! place that chooses a process exit code ([`Error::exit_code`]; the codes themselves are the
//! contract in [`crate::exit`]). Outcomes that are not failures of infermeter itself — an SLA
//! that failed, a regression `compare` found, a run that was interrupted — are variants too,
//! so that a command's whole result is one `Result<(), Error>`.
//!
//! Every variant keeps its cause as `#[source]`; the CLI renders the chain with miette.

use std::path::PathBuf;

use miette::Diagnostic;

use crate::exit;
use crate::hub::HubError;
use crate::plan::PlanError;
use crate::ready::WaitError;
use crate::report::{Flagged, ReportError};
use crate::results::ResultsError;
use crate::runner::{RunError, RunProblem, Unsynchronised};
use crate::scaffold::ScaffoldError;
use crate::scenario::ScenarioError;
use crate::server::ServerError;
use crate::sim::SimError;
use crate::sla::Abort;

#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum Error {
    /// The scenario file could not be read or is invalid (every problem, with spans).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Scenario(#[from] ScenarioError),

    #[error("{}: the scenario cannot be compiled into a plan", path.display())]
    Plan {
        path: PathBuf,
        #[source]
        source: PlanError,
    },

    #[error("{}: cannot import the agent trace", path.display())]
    #[diagnostic(help("see docs/datasets.md, \"Importing agent traces\""))]
    Import {
        path: PathBuf,
        #[source]
        source: crate::dataset::DatasetError,
    },

    #[error("cannot read the scenario's baseline")]
    #[diagnostic(help("the `baseline` path in `report {{ … }}` is relative to the scenario"))]
    Baseline(#[source] ResultsError),

    /// A results file given on the command line could not be read.
    #[error(transparent)]
    Input(#[from] ResultsError),

    #[error("failed to read template {}", path.display())]
    Template {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The command line asks for something that cannot be done as asked.
    #[error("{message}")]
    #[diagnostic(help("{help}"))]
    Usage { message: String, help: String },

    /// The run could not start or be carried out.
    #[error(transparent)]
    Run(#[from] RunError),

    /// `--shard`: the plan cannot be split faithfully (every reason, each with its fix).
    #[error(transparent)]
    Shard(#[from] crate::shard::ShardError),

    /// A shard lost its coordinator (or never reached it): the rest of its run could not be
    /// synchronised with the other shards, so it stopped.
    #[error(transparent)]
    Unsynchronised(#[from] Unsynchronised),

    /// The coordinator of a distributed run failed (its port, its results directory).
    #[error(transparent)]
    Coordinate(#[from] crate::coordinate::CoordinateError),

    /// `merge` refused its inputs (different plans, duplicate or missing shards: every problem).
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),

    /// `k8s` could not build the manifests (files too large for a ConfigMap, say).
    #[error(transparent)]
    K8s(#[from] crate::k8s::K8sError),

    /// A distributed run's merged result lacks shards (killed or lost): its numbers are not the
    /// whole plan's.
    #[error("partial result: no result from shard(s) {}", missing.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))]
    #[diagnostic(help(
        "the merged result marks every stage untrusted; see `shards.missing` in results.json"
    ))]
    Partial { missing: Vec<u32> },

    #[error("failed to start the async runtime")]
    Runtime(#[source] std::io::Error),

    /// Something failed during a run without stopping it (a `requests.jsonl` write, say).
    #[error(transparent)]
    RunProblem(#[from] RunProblem),

    /// Writing a report, plot or JUnit file failed.
    #[error(transparent)]
    Report(#[from] ReportError),

    #[error("failed to {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The simulator could not start or serve.
    #[error(transparent)]
    Sim(#[from] SimError),

    /// A Hub data set file could not be named or fetched (`infermeter dataset fetch`).
    #[error(transparent)]
    Hub(Box<HubError>),

    /// The server the scenario's `server` block starts failed: it could not start, was not
    /// ready in time, or exited during the run (with its last log lines).
    #[error(transparent)]
    Server(#[from] crate::server::ServerError),

    /// The server never became ready (`infermeter wait`).
    #[error(transparent)]
    Wait(#[from] WaitError),

    /// A scenario could not be written from the flags (`infermeter new`, `import`).
    #[error(transparent)]
    Scaffold(#[from] ScaffoldError),

    /// The run completed and at least one SLA assertion failed (or was undecided under
    /// `--inconclusive fail`).
    #[error("{}", sla_failed(*failed, *undecided))]
    SlaFailed { failed: usize, undecided: usize },

    /// No assertion failed but some could not be decided, and the policy reports that.
    #[error("{undecided} SLA assertion(s) undecided{}", untrusted_suffix(*untrusted))]
    Inconclusive { undecided: usize, untrusted: usize },

    /// An `abort-on-fail` assertion failed and stopped the run.
    #[error("{0}")]
    Aborted(Abort),

    /// The scenario's `mlperf` preset says `require=#true` and the run does not qualify: the
    /// verdict line says why.
    #[error("{0}")]
    NotQualified(String),

    /// Ctrl-C or a signal stopped the run; what was measured is in the results.
    #[error("the run was interrupted")]
    Interrupted,

    /// The run measured everything but could not finish: each cause (a file that could not be
    /// written, say) is listed.
    #[error("the run finished with {} problem(s): {}", causes.len(), causes.join("; "))]
    Incomplete { causes: Vec<String> },

    /// `compare` found metrics that regressed beyond the tolerance.
    #[error("regression: {}", joined(metrics))]
    Regressed { metrics: Vec<Flagged> },

    /// `compare` found no regression, but could not rule one out for these metrics.
    #[error("inconclusive: {}", joined(metrics))]
    CompareInconclusive { metrics: Vec<Flagged> },
}

fn joined(metrics: &[Flagged]) -> String {
    let shown: Vec<String> = metrics.iter().map(Flagged::to_string).collect();
    shown.join("; ")
}

fn sla_failed(failed: usize, undecided: usize) -> String {
    match (failed, undecided) {
        (f, 0) => format!("{f} SLA assertion(s) failed"),
        (0, u) => format!("{u} SLA assertion(s) undecided, counted as failed"),
        (f, u) => format!("{f} SLA assertion(s) failed, {u} undecided"),
    }
}

fn untrusted_suffix(untrusted: usize) -> String {
    match untrusted {
        0 => String::new(),
        1 => ", 1 stage untrusted".into(),
        n => format!(", {n} stages untrusted"),
    }
}

/// Boxed: a Hub error is large, and every `Result<_, Error>` would carry its size.
impl From<HubError> for Error {
    fn from(e: HubError) -> Self {
        Error::Hub(Box::new(e))
    }
}

impl Error {
    /// The process exit code for this error: the only place one is chosen.
    pub fn exit_code(&self) -> i32 {
        if waited_for_input(self) {
            // A signal ended a read of a FIFO or terminal (see `crate::files`): interrupted,
            // whichever input it was.
            return exit::RUN_ERROR;
        }
        match self {
            Error::SlaFailed { .. }
            | Error::Aborted(_)
            | Error::Regressed { .. }
            | Error::NotQualified(_) => exit::SLA_FAILED,
            Error::Inconclusive { .. } | Error::CompareInconclusive { .. } => exit::INCONCLUSIVE,
            Error::Scenario(_)
            | Error::Plan { .. }
            | Error::Import { .. }
            | Error::Baseline(_)
            | Error::Input(_)
            | Error::Template { .. }
            | Error::Usage { .. }
            | Error::Shard(_)
            | Error::Merge(_)
            | Error::K8s(_) => exit::INVALID,
            Error::Hub(e) if matches!(**e, HubError::BadUri { .. }) => exit::INVALID,
            // Knowable before starting anything, as `validate` knows it.
            Error::Server(ServerError::NotFound { .. }) => exit::INVALID,
            Error::Sim(SimError::Config(_))
            | Error::Report(ReportError::Template { .. } | ReportError::RequestRow { .. })
            | Error::Wait(WaitError::BadUrl { .. })
            | Error::Scaffold(_) => exit::INVALID,
            Error::Run(_)
            | Error::RunProblem(_)
            | Error::Runtime(_)
            | Error::Report(_)
            | Error::Io { .. }
            | Error::Sim(_)
            | Error::Hub(_)
            | Error::Wait(_)
            | Error::Server(_)
            | Error::Interrupted
            | Error::Incomplete { .. }
            | Error::Unsynchronised(_)
            | Error::Coordinate(_)
            | Error::Partial { .. } => exit::RUN_ERROR,
        }
    }

    /// A usage error with a hint.
    pub fn usage(message: impl Into<String>, help: impl Into<String>) -> Self {
        Error::Usage {
            message: message.into(),
            help: help.into(),
        }
    }

    /// The error and its causes as one line (`a: b: c`), leaving out a cause whose text its
    /// parent already shows.
    pub fn chain(&self) -> String {
        chain(self)
    }
}

/// Whether `e` was caused by a read that a signal stopped waiting for: an I/O error of kind
/// `Interrupted`, which only [`crate::files::read_text`] returns (std retries `EINTR`).
fn waited_for_input(e: &Error) -> bool {
    std::iter::successors(Some(e as &dyn std::error::Error), |e| e.source()).any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::Interrupted)
    })
}

pub use infermeter_words::error_chain as chain;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_contract() {
        assert_eq!(
            Error::SlaFailed {
                failed: 1,
                undecided: 0
            }
            .exit_code(),
            1
        );
        let undecided = Error::Inconclusive {
            undecided: 2,
            untrusted: 1,
        };
        assert_eq!(undecided.exit_code(), 4);
        assert_eq!(
            undecided.to_string(),
            "2 SLA assertion(s) undecided, 1 stage untrusted"
        );
        assert_eq!(Error::Regressed { metrics: vec![] }.exit_code(), 1);
        assert_eq!(Error::usage("x", "y").exit_code(), 2);
        assert_eq!(Error::Interrupted.exit_code(), 3);
        let io = Error::Io {
            action: "write",
            path: "r.json".into(),
            source: std::io::Error::from_raw_os_error(28),
        };
        assert_eq!(io.exit_code(), 3);
        // The OS cause is part of the message.
        assert!(
            io.chain().contains("No space left on device"),
            "{}",
            io.chain()
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer: {0}")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(chain(&e), "outer: inner");
    }
}
