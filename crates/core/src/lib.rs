//! infermeter: benchmark-as-code for LLM inference servers.
//!
//! The pipeline runs in one direction (see `docs/architecture.md`):
//! `scenario` (KDL → [`scenario::Scenario`]) → `plan` ([`plan::Plan`]) → `runner`
//! (stream of [`metrics::RequestRecord`]) → `metrics` → `sla` → `report`.
//! Each stage is one module with one public entry point; plain data flows between them.

pub mod app;
pub mod arrival;
pub mod client;
pub mod coordinate;
pub mod dataset;
pub mod error;
pub mod hooks;
pub mod hub;
pub mod k8s;
pub mod merge;
pub mod metrics;
pub mod plan;
pub mod ready;
pub mod report;
pub mod results;
pub mod runner;
pub mod scaffold;
pub mod scenario;
pub mod server;
pub mod shard;
pub mod sla;
pub mod telemetry;

// The crates below the library, re-exported under the names the library's modules use.
pub use infermeter_sim as sim;
pub use infermeter_stats as stats;
pub use infermeter_words::{escape, exit, files, protocol, redact, server_info, units};

pub use app::{RunReport, RunSettings, run_scenario};
pub use error::Error;
