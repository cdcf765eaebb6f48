//! `infermeter import vllm -- ARGS…`: the scenario a `vllm bench serve` command line
//! describes (see [`crate::app::import_vllm`]); every flag that did not carry over is listed on
//! stderr and at the top of the file. `infermeter import dynamo-agentic TRACE -o FILE`: an agent
//! trace as an `agentic` data set ([`crate::app::import_agentic_trace`]).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::error::Error;

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub from: ImportFrom,
}

#[derive(Debug, Subcommand)]
pub enum ImportFrom {
    /// From `vllm bench serve` (or benchmarks/benchmark_serving.py) arguments, given after
    /// `--`: infermeter import vllm -o gate.kdl -- --model M --request-rate 10 --num-prompts 200
    Vllm(VllmArgs),
    /// From NVIDIA Dynamo's agentic Mooncake replay rows (`request_id`, `session_id`,
    /// `wait_for`, `tool_wait_ms`, …) to an `agentic` data set:
    /// infermeter import dynamo-agentic trace.jsonl -o tasks.jsonl
    DynamoAgentic(AgenticArgs),
}

#[derive(Debug, Args)]
pub struct AgenticArgs {
    /// The Dynamo agentic trace (JSONL, one request a line).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,

    /// Write the `agentic` data set to FILE.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,

    /// Overwrite FILE when it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct VllmArgs {
    /// Write the scenario to FILE instead of stdout.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Overwrite FILE when it exists.
    #[arg(long)]
    pub force: bool,

    /// The scenario's name [default: the -o file's name, else "vllm-bench"].
    #[arg(long)]
    pub name: Option<String>,

    /// The `vllm bench serve` arguments (a leading `vllm bench serve` is skipped).
    #[arg(last = true, required = true, value_name = "VLLM_ARGS")]
    pub args: Vec<String>,
}

pub fn run(args: ImportArgs) -> Result<(), Error> {
    let v = match args.from {
        ImportFrom::Vllm(v) => v,
        ImportFrom::DynamoAgentic(a) => {
            let done = crate::app::import_agentic_trace(&a.trace, &a.out, a.force)?;
            outln!(
                "wrote {}: {} requests as {} sessions in {} tasks (dataset {{ agentic \"…\" }})",
                a.out.display(),
                done.rows,
                done.sessions,
                done.tasks
            );
            return Ok(());
        }
    };
    let mut draft = crate::app::import_vllm(&v.args)?;
    if let Some(name) = v.name.clone().or_else(|| {
        v.out
            .as_deref()
            .and_then(std::path::Path::file_stem)
            .map(|s| s.to_string_lossy().into_owned())
    }) {
        draft.name = name;
    }
    for note in draft.notes.iter().filter(|n| n.starts_with("  - ")) {
        errln!("note: {}", &note[4..]);
    }
    super::new::write_out(&draft, v.out.as_deref(), v.force)
}
