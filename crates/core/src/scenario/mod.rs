//! KDL scenario file → typed, validated [`Scenario`] with source spans.
//!
//! Entry point: [`load`]. All problems in a file are reported at once, each with a span and a
//! hint, as one [`ScenarioError`] (a `miette::Diagnostic`). The language is described in
//! `docs/scenario.md`.

mod body;
mod ctx;
mod dataset;
mod depth;
mod error;
mod header;
mod images;
mod infra;
mod judge;
mod labels;
mod lengths;
mod mlperf;
mod model;
mod named_files;
mod network;
mod params;
mod parse;
mod priority_as;
mod profile;
mod quality;
mod refs;
mod report;
mod route;
mod schema;
mod server;
mod server_config;
mod session;
mod session_state;
mod settings;
mod shapes;
mod sim_target;
mod sla_block;
mod stage;
mod syntax;
mod target;
mod telemetry;
mod unparsed;
mod until;
mod values;
mod warmup;
mod workload;
mod workload_model;
mod written;

pub use depth::MAX_DEPTH;
pub use error::{MAX_PROBLEMS, Problem, ScenarioError, Snippets, did_you_mean};
pub use header::{header_name_problem, header_value_problem};
pub use model::*;
pub use parse::{load, parse_str};
pub use profile::expand_range;
pub use schema::json_schema;
pub use session::SessionSpec;
pub use warmup::{DEFAULT_CHECK_EVERY, DEFAULT_UNTIL_MAX};
pub use workload_model::*;
pub use written::{ParamValue, Spanned};
