//! infermeter as a library: [`run_scenario`] runs a scenario file end to end — load, compile,
//! run, evaluate the SLAs, write `results.json`, the report, plots and JUnit — and returns a
//! typed [`RunReport`]; everything `infermeter run` does except parsing arguments and
//! printing. Progress goes to the caller's [`Observer`]; every failure is one [`Error`], whose
//! exit code is chosen in [`crate::exit`] alone.
//!
//! Every other command has its entry point here too, so the CLI only parses, calls one of
//! these and renders: [`compare_results`] (`compare`), [`start_coordinator`], [`Shard`] and
//! [`merge_results`] (distributed runs: `coordinate`, `run --shard … --coordinator`,
//! `merge`), [`write_manifests`] (`k8s`), [`render_saved`] (`report`), [`compile_plan`] and
//! [`write_plan`] (`plan`), [`validate`] (`validate`), [`fetch_dataset`] (`dataset fetch`),
//! [`scenario_text`] and [`write_new_file`] (`new`, `import`). What the CLI shows of their results is
//! re-exported beside them.
//!
//! ```no_run
//! use std::sync::Arc;
//! use infermeter_core::app::{RunSettings, run_scenario};
//!
//! let settings = RunSettings::new("scenarios/quickstart.kdl");
//! let report = run_scenario(&settings, Arc::new(())).expect("the run could be carried out");
//! println!("passed: {}, exit code {}", report.results.passed, report.exit_code());
//! ```

mod agreement;
mod assemble;
mod compare;
mod compare_configs;
mod distributed;
mod inputs;
mod k8s;
mod load;
mod needs;
mod outcome;
mod outputs;
mod plan;
mod provenance;
mod run;
mod saved;
mod server;
mod settings;
mod setup;
mod token;
mod trace_import;

pub use crate::error::Error;
pub use crate::hub::Recipe;
pub use crate::server::kill_all as kill_started_servers;
pub use compare::{
    CompareFormat, CompareReport, CompareSettings, Tolerance, UndecidedAs, compare_results,
};
pub use distributed::{
    CoordinatorSettings, CoordinatorTiming, MergeSettings, MergedRun, RunningCoordinator, Shard,
    ShardSettings, merge_results, merged_gate, shard_gate, start_coordinator,
};
pub use inputs::ReportInputs;
pub use k8s::{manifest_name, write_manifests};
pub use load::{TargetOverride, load_scenario};
pub use needs::{AssertionNeed, Needs, Reach, Standing, warning as need_warning};
pub use outcome::{Outcome, RunReport};
pub use plan::{
    PlanFormat, Validated, compile_plan, compile_plan_with_needs, validate, write_plan,
};
pub use provenance::{build_commit, set_build_commit};
pub use run::run_scenario;
pub use saved::{RenderSettings, convert_saved, read_template, render_saved, write_text};
pub use server::SERVER_LOG;
pub use settings::RunSettings;
pub use setup::{
    DatasetSource, FetchedDataset, fetch_dataset, fetch_recipe, scenario_text, write_new_file,
};
pub use token::{CoordinatorToken, coordinator_token, shard_token};
pub use trace_import::import_agentic_trace;

// What callers pass in and the CLI shows, from the stages that own it.
pub use crate::coordinate::{Refusal, RefusalLog, TOKEN_ENV, Token, Verdict};
pub use crate::hub::{FetchEvent, Fetched};
pub use crate::k8s::K8sOptions;
pub use crate::plan::Slice;
pub use crate::report::{Output, render_summary_text, render_summary_text_with, report_formats};
pub use crate::runner::{CpuSpec, Observer, StageProgress};
pub use crate::sla::{InconclusiveAs, Untrusted, Window};

// Getting started, served by the stages themselves: the simulator (`sim`), scenarios from
// flags or another tool's command line (`new`, `import`), waiting for a server (`wait`), the
// JSON Schemas (`schema`).
pub use crate::ready::{Attempt, WaitOptions, wait_ready};
pub use crate::results::json_schema as results_schema;
pub use crate::scaffold::vllm::import as import_vllm;
pub use crate::scaffold::{
    Data, Draft, Length, Limit, Load, ScaffoldError, parse_dataset, parse_length, shell_line,
};
pub use crate::scenario::json_schema as scenario_schema;
pub use crate::sim::{OutputLenDist, SimConfig, TraceOptions, start_with_trace as start_sim};
