//! Why a scenario cannot be written from the flags given.

use crate::scenario::ScenarioError;

#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("{flag} {value}: {reason}")]
    Value {
        flag: &'static str,
        value: String,
        reason: String,
    },
    #[error("{flag} needs a value")]
    MissingValue { flag: String },
    #[error("{flag} {value} is not supported; supported: {supported}")]
    Unsupported {
        flag: &'static str,
        value: String,
        supported: &'static str,
    },
    #[error("--sla {expr:?}: {reason}")]
    Sla { expr: String, reason: String },
    /// The written text does not parse: a value the flags let through that the scenario
    /// language rejects.
    #[error("the scenario written from these flags is invalid")]
    Invalid(#[source] Box<ScenarioError>),
}
