//! `infermeter new [flags]`: writes a commented, valid scenario from the flags a vLLM or
//! guidellm user already knows (see [`crate::scaffold`]), to stdout or `-o FILE`.

use std::path::{Path, PathBuf};

use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use crate::error::Error;
use crate::protocol::{Api, REGISTRY};
use crate::scaffold::{self, Data, Draft, Length, Limit, Load, ScaffoldError};
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
    #[arg(long, value_name = "N|MIN..MAX", value_parser = scaffold::parse_length, conflicts_with = "dataset")]
    pub input_tokens: Option<Length>,

    /// Output length in tokens (sent as max_tokens): N, or MIN..MAX [default: 128].
    #[arg(long, value_name = "N|MIN..MAX", value_parser = scaffold::parse_length)]
    pub output_tokens: Option<Length>,

    /// Prompts from a file instead: sharegpt (the Hub's ShareGPT file, see `dataset fetch`),
    /// sharegpt:PATH or jsonl:PATH; PATH may be hf://datasets/OWNER/NAME/FILE.
    #[arg(long, value_name = "KIND[:PATH]", value_parser = scaffold::parse_dataset)]
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

pub fn run(args: NewArgs) -> Result<(), Error> {
    let name = args
        .name
        .clone()
        .or_else(|| {
            args.out
                .as_deref()
                .and_then(Path::file_stem)
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "benchmark".into());
    let bad = |flag: &'static str, value: String, reason: &str| {
        Error::from(ScaffoldError::Value {
            flag,
            value,
            reason: reason.into(),
        })
    };
    let mut data = args.dataset.clone().unwrap_or(Data::Synthetic {
        input: args.input_tokens.unwrap_or(Length::Fixed(1024)),
        output: args.output_tokens.unwrap_or(Length::Fixed(128)),
    });
    match (&mut data, args.output_tokens) {
        (Data::ShareGpt { output_tokens, .. }, Some(Length::Fixed(n))) => *output_tokens = Some(n),
        (Data::Jsonl { max_tokens, .. }, Some(Length::Fixed(n))) => *max_tokens = Some(n),
        (Data::ShareGpt { .. } | Data::Jsonl { .. }, Some(l)) => {
            return Err(bad(
                "--output-tokens",
                format!("{l:?}"),
                "a file data set takes one fixed output length",
            ));
        }
        _ => {}
    }
    let load = match (args.concurrency, args.rate, args.burstiness) {
        (Some(0), ..) => {
            return Err(bad(
                "--concurrency",
                "0".into(),
                "needs at least one client",
            ));
        }
        (Some(_), _, Some(b)) => {
            return Err(bad(
                "--burstiness",
                b.to_string(),
                "needs an open-loop --rate",
            ));
        }
        (Some(n), ..) => Load::Concurrency(n),
        (None, rate, burstiness) => Load::Rate {
            rate: rate.map_or(5.0, units::Rate::per_sec),
            burstiness: burstiness.unwrap_or(units::Burstiness::POISSON),
        },
    };
    let limit = match (args.requests, args.duration) {
        (Some(0), _) => return Err(bad("--requests", "0".into(), "send at least one request")),
        (Some(n), _) => Limit::Requests(n),
        (None, Some(d)) => Limit::Duration(d),
        (None, None) => Limit::Duration(units::Duration::from_millis(60_000)),
    };
    let words: Vec<String> = std::env::args().skip(1).collect();
    let draft = Draft {
        name,
        seed: args.seed,
        url: args.url.clone(),
        model: args.model.clone(),
        api: args.api,
        load,
        data,
        limit,
        warmup: args.warmup,
        slas: args.slas.clone(),
        notes: vec![format!(
            "Written by: infermeter {}",
            scaffold::shell_line(&words)
        )],
        ..Draft::default()
    };
    write_out(&draft, args.out.as_deref(), args.force)
}

/// Checks the draft and writes it to `out` (refusing to overwrite without `force`) or stdout.
pub(super) fn write_out(draft: &Draft, out: Option<&Path>, force: bool) -> Result<(), Error> {
    let shown = out.unwrap_or(Path::new("<stdout>"));
    let text = scaffold::finish(draft, shown).map_err(|e| match e {
        ScaffoldError::Invalid(s) => Error::Scenario(*s),
        other => other.into(),
    })?;
    let Some(path) = out else {
        print!("{text}");
        return Ok(());
    };
    if path.exists() && !force {
        return Err(Error::usage(
            format!("{} exists", path.display()),
            "pass --force to overwrite it, or choose another -o FILE",
        ));
    }
    std::fs::write(path, &text).map_err(|source| Error::Io {
        action: "write the scenario to",
        path: path.to_path_buf(),
        source,
    })?;
    eprintln!(
        "wrote {p}; check it with `infermeter plan {p}`, run it with `infermeter run {p}`",
        p = path.display()
    );
    Ok(())
}

/// `--api`: the registered API kinds, each with its path as help.
fn api_parser() -> impl TypedValueParser<Value = Api> {
    let names = REGISTRY
        .iter()
        .map(|a| PossibleValue::new(a.as_str()).help(a.path()));
    // The parser accepts only registered names.
    PossibleValuesParser::new(names).map(|name| Api::from_name(&name).unwrap_or_default())
}
