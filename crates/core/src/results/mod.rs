//! `results.json`: the model of a run's result ([`Results`], a versioned public contract read
//! by the SLA evaluator's baselines, the reports, `compare` and merges) and its file: read with
//! a clear error, written atomically.

mod file;
mod infra;
mod model;
mod provenance;
mod schema;
mod shards;
mod validate;

pub(crate) use file::write_atomic;
#[cfg(feature = "parquet")]
pub(crate) use file::write_atomic_with;
pub use file::{
    ParseError, RESULTS_FILE, ResultsError, migrate, parse_results, read_results, read_unvalidated,
    write_results,
};
pub use infra::{Fact, Infra, K8S_NODE_ENV};
pub(crate) use infra::{differences as infra_differences, gather as gather_infra};
pub use model::{CompareTolerances, RESULTS_SCHEMA_VERSION, Results, SlaPolicy, TargetInfo};
pub use provenance::{BuildInfo, HostInfo, Provenance, StartedServer};
pub use schema::json_schema;
pub use shards::{ShardRecord, ShardStart, Sharding};
pub use validate::{Inconsistent, MAX_COUNT, Problem, validate};
