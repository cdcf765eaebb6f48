//! The command line: one file per subcommand, each a thin caller of the library that returns
//! `Result<(), Error>`; [`main`] parses arguments, runs the command, prints its error and
//! returns the error's exit code (see [`infermeter_core::Error::exit_code`]).

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::error::Error;

// First, so that every subcommand's module sees its macros (`out!`, `outln!`, `errln!`).
#[macro_use]
mod console;

mod color;
mod common;
mod compare;
mod coordinate;
mod dataset;
mod import;
mod k8s;
mod merge;
mod new;
mod plan;
mod progress;
mod report;
mod run;
pub mod schema;
mod signals;
pub mod sim;
mod sim_help;
pub mod validate;
mod values;
mod wait;

pub use compare::CompareArgs;
pub use report::ReportArgs;
pub use run::RunArgs;

/// Benchmark-as-code for LLM inference servers.
///
/// Write a KDL scenario, check it into git, and run it: infermeter compiles it into a
/// deterministic plan, drives an OpenAI-compatible server (or its embedded simulator), measures
/// every token, checks the SLAs, writes a report, and exits non-zero when an SLA fails.
///
/// Exit codes: 0 all SLAs met · 1 an SLA failed (or `compare` found a regression, or a run
/// that must qualify under its MLPerf preset does not) · 2 invalid scenario or usage · 3 the
/// run could not be carried out · 4 the gate is inconclusive (an assertion its samples could
/// not decide; `compare` exits 4 only with `--inconclusive inconclusive`).
#[derive(Debug, Parser)]
#[command(name = "infermeter", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// A param, header or query parameter whose value is secret (repeatable): its value is
    /// masked in every file and line infermeter writes, like an `api_key`'s.
    #[arg(long = "secret", value_name = "NAME", global = true)]
    pub secrets: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario: send its load, measure, check its SLAs, write results and report.
    Run(Box<RunArgs>),
    /// Check scenario files without running them; exits 2 when any is invalid.
    Validate(validate::ValidateArgs),
    /// Serve the embedded OpenAI-compatible simulator until Ctrl-C.
    Sim(Box<sim::SimArgs>),
    /// Compile a scenario and print its plan (what is sent, when) and the plan hash.
    Plan(plan::PlanArgs),
    /// Re-render the Markdown report of a past run from its results.json.
    Report(ReportArgs),
    /// Compare two runs of the same plan; exit 1 when the current one regressed.
    ///
    /// Exit codes: 0 no watched metric is shown worse beyond its tolerance · 1 one is · 2 the
    /// runs cannot be compared (different plans, no shared stage, an unreadable or unfinished
    /// result) · 4 none is worse but one is undecided, with `--inconclusive inconclusive` only.
    /// By default an undecided metric (its change neither shown within the tolerance nor beyond
    /// it, as a zero error rate in both runs of a few hundred requests is) is listed and exits
    /// 0: no regression was shown.
    Compare(CompareArgs),
    /// Print the JSON Schema of a data model.
    Schema(schema::SchemaArgs),
    /// Serve the barrier and result collection of a distributed run, merge, exit with its gate.
    Coordinate(Box<coordinate::CoordinateArgs>),
    /// Merge the shards' results of a distributed run into one result, report and JUnit.
    Merge(merge::MergeArgs),
    /// Write the Kubernetes manifests of a distributed run (Indexed Job, Service, ConfigMap).
    K8s(Box<k8s::K8sArgs>),
    /// Write a commented, valid scenario from flags (--url, --model, --rate, --sla, …).
    New(Box<new::NewArgs>),
    /// Write the scenario another tool's command line describes (vllm bench serve).
    Import(import::ImportArgs),
    /// Wait until a server answers and lists its models; exits 3 when it never does.
    Wait(wait::WaitArgs),
    /// Data set files: fetch ShareGPT or any Hugging Face Hub file into the local cache.
    Dataset(dataset::DatasetArgs),
}

/// Parses the command line, runs the command, and returns the exit code.
pub fn main() -> i32 {
    // Before anything is parsed, so that even an argument error shows no secret.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    crate::redact::register_env_secrets();
    crate::redact::register_args(&args);
    let parsed = sim_help::with_defaults(Cli::command())
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return common::print_args_error(&e),
    };
    match run(cli.command) {
        Ok(()) => crate::exit::OK,
        Err(e) => {
            common::print_error(&e);
            e.exit_code()
        }
    }
}

fn run(command: Command) -> Result<(), Error> {
    match command {
        Command::Run(args) => run::run(*args),
        Command::Validate(args) => validate::run(args),
        Command::Sim(args) => sim::run(*args),
        Command::Plan(args) => plan::run(args),
        Command::Report(args) => report::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Schema(args) => schema::run(args),
        Command::Coordinate(args) => coordinate::run(*args),
        Command::Merge(args) => merge::run(args),
        Command::K8s(args) => k8s::run(*args),
        Command::New(args) => new::run(*args),
        Command::Import(args) => import::run(args),
        Command::Wait(args) => wait::run(args),
        Command::Dataset(args) => dataset::run(args),
    }
}
