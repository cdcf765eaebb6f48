//! Why a scenario cannot become a plan. The parser has already checked syntax and references, so
//! these name the stage or dataset rather than carry spans.

use crate::arrival::ArrivalError;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("scenario `{0}` has no stage; add at least one `stage`")]
    NoStages(String),
    #[error("{stage} uses dataset `{dataset}`, which is not declared (declared: {declared})")]
    UnknownDataset {
        /// "stage `x`" or "warmup".
        stage: String,
        dataset: String,
        declared: String,
    },
    #[error("dataset `{dataset}`: {which}: {reason}")]
    BadLength {
        dataset: String,
        which: &'static str,
        reason: crate::dataset::LengthError,
    },
    #[error("stage `{stage}`: {detail} schedules no request; raise the rate or the duration")]
    NoArrivals { stage: String, detail: String },
    #[error("{stage}: {reason}")]
    BadStage { stage: String, reason: String },
    #[error("stage `{stage}`: {source}")]
    Arrival {
        stage: String,
        #[source]
        source: ArrivalError,
    },
    #[error("dataset `{dataset}`: {source}")]
    Dataset {
        dataset: String,
        #[source]
        source: crate::dataset::DatasetError,
    },
    #[error(
        "dataset `{dataset}` has {what}, which the {api} API cannot carry: it sends one \
         prompt string, so every message but the last would be dropped; set api \"{}\" in \
         the target",
        crate::protocol::Api::conversational()
    )]
    NeedsChat {
        dataset: String,
        what: &'static str,
        api: crate::protocol::Api,
    },
    #[error(
        "dataset `{dataset}` has hooks, which the {api} API does not run: its requests are \
         texts answered whole, with no prompt to mutate or answer to validate; remove `hooks`"
    )]
    HooksOnPooled {
        dataset: String,
        api: crate::protocol::Api,
    },
    #[error(
        "dataset `{dataset}`'s judge is `url \"sim\"`, the embedded simulator the target runs, \
         and the target is no simulator: give the judge its own URL (docs/quality.md)"
    )]
    JudgeSimWithoutSim { dataset: String },
    #[error(
        "dataset `{dataset}` has a `quality` block, and the {api} API generates no answer to \
         judge; remove `quality`"
    )]
    QualityOnPooled {
        dataset: String,
        api: crate::protocol::Api,
    },
    #[error("dataset `{dataset}`: {source}")]
    Hub {
        dataset: String,
        // Boxed: a Hub error is large, and every plan error would carry its size.
        #[source]
        source: Box<crate::hub::HubError>,
    },
    #[error("dataset `{dataset}` has no usable record ({detail}); relax its filters")]
    EmptyDataset { dataset: String, detail: String },
    #[error("dataset `{dataset}`: cannot read its hooks file {}", path.display())]
    HooksFile {
        dataset: String,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("dataset `{dataset}`: its hooks do not compile")]
    Hooks {
        dataset: String,
        #[source]
        source: crate::hooks::HookError,
    },
    #[error(
        "dataset `{dataset}`: its agentic shape can generate {turns} turns, more than the {} \
         a plan may hold; lower `tasks`, `turns`, `fan-out` or `depth`",
        crate::dataset::MAX_GENERATED_TURNS
    )]
    AgenticTooLarge { dataset: String, turns: u64 },
    #[error("dataset `{dataset}`: session: {detail}")]
    Session { dataset: String, detail: String },
    #[error("failed to serialize the plan for hashing")]
    Hash(#[source] std::io::Error),
}
