//! infermeter: benchmark-as-code for LLM inference servers.
//!
//! The pipeline runs in one direction (see `docs/architecture.md`):
//! `scenario` (KDL → [`scenario::Scenario`]) → `plan` ([`plan::Plan`]) → `runner`
//! (stream of [`metrics::RequestRecord`]) → `metrics` → `sla` → `report`.
//! Each stage is one module with one public entry point; plain data flows between them.

pub mod app;
pub mod arrival;
pub mod cli;
pub mod client;
pub mod coordinate;
pub mod dataset;
pub mod error;
pub mod escape;
pub mod exit;
pub mod files;
pub mod hooks;
pub mod hub;
pub mod k8s;
pub mod merge;
pub mod metrics;
pub mod plan;
pub mod protocol;
pub mod ready;
pub mod redact;
pub mod report;
pub mod results;
pub mod runner;
pub mod scaffold;
pub mod scenario;
pub mod server_info;
pub mod shard;
pub mod sim;
pub mod sla;
pub mod stats;
pub mod telemetry;
pub mod units;

pub use app::{RunReport, RunSettings, run_scenario};
pub use error::Error;
