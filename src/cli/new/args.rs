//! `infermeter new`'s flags.

use std::path::PathBuf;

use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use crate::app::{Data, Length, parse_dataset, parse_length};
use crate::protocol::{Api, REGISTRY};
use crate::units;

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The scenario's name [default: the -o file's name, else "benchmark"].
    #[arg(long)]
    pub name: Option<String>,

    /// The server's OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 [default: the
    /// embedded simulator].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// The model to ask for [default: the first one the server lists].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// Which API to call.
    #[arg(long, value_parser = api_parser(), default_value_t = Api::default())]
    pub api: Api,

    /// Open loop: requests per second, Poisson arrivals (vLLM's --request-rate) [default: 5].
    #[arg(long, value_name = "RATE", conflicts_with = "concurrency")]
    pub rate: Option<units::Rate>,

    /// Gamma arrivals instead of Poisson: < 1 burstier, > 1 more regular (vLLM's --burstiness).
    #[arg(long, value_name = "B")]
    pub burstiness: Option<units::Burstiness>,

    /// Closed loop: this many clients, each sending its next request when its last one ends
    /// (vLLM's --max-concurrency without a rate).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u32>,

    /// Prompt length in tokens: N, or MIN..MAX for a uniform spread [default: 1024].
    #[arg(long, value_name = "N|MIN..MAX", value_parser = parse_length, conflicts_with = "dataset")]
    pub input_tokens: Option<Length>,

    /// Output length in tokens (sent as max_tokens): N, or MIN..MAX [default: 128].
    #[arg(long, value_name = "N|MIN..MAX", value_parser = parse_length)]
    pub output_tokens: Option<Length>,

    /// Prompts from a file instead: sharegpt (the Hub's ShareGPT file, see `dataset fetch`),
    /// sharegpt:PATH or jsonl:PATH; PATH may be hf://datasets/OWNER/NAME/FILE.
    #[arg(long, value_name = "KIND[:PATH]", value_parser = parse_dataset)]
    pub dataset: Option<Data>,

    /// How long the stage sends [default: 60s].
    #[arg(long, value_name = "DURATION", conflicts_with = "requests")]
    pub duration: Option<units::Duration>,

    /// How many requests the stage sends (vLLM's --num-prompts).
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,

    /// An SLA assertion the gate checks, e.g. "ttft.p95 < 200ms" (repeatable) [default:
    /// "error_rate < 1%"].
    #[arg(long = "sla", value_name = "EXPR")]
    pub slas: Vec<String>,

    /// The scenario's seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Warm-up requests sent first and left out of the metrics (0 for none).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub warmup: u64,

    /// Write the scenario to FILE instead of stdout.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Overwrite FILE when it exists.
    #[arg(long)]
    pub force: bool,
}

/// `--api`: the registered API kinds, each with its path as help.
fn api_parser() -> impl TypedValueParser<Value = Api> {
    let names = REGISTRY
        .iter()
        .map(|a| PossibleValue::new(a.as_str()).help(a.path()));
    // The parser accepts only registered names.
    PossibleValuesParser::new(names).map(|name| Api::from_name(&name).unwrap_or_default())
}
