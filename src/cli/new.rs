//! `infermeter new [flags]`: writes a commented, valid scenario from the flags a vLLM or
//! guidellm user already knows (see [`crate::app::scenario_text`]), to stdout or `-o FILE`.

mod args;

use std::path::Path;

pub use args::NewArgs;

use crate::app;
use crate::app::{Data, Draft, Length, Limit, Load, ScaffoldError};
use crate::error::Error;
use crate::units;

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
    let data = data(&args)?;
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
            app::shell_line(&words)
        )],
        ..Draft::default()
    };
    write_out(&draft, args.out.as_deref(), args.force)
}

/// A flag whose value cannot be written into a scenario.
fn bad(flag: &'static str, value: String, reason: &str) -> Error {
    Error::from(ScaffoldError::Value {
        flag,
        value,
        reason: reason.into(),
    })
}

/// The prompts the flags ask for: synthetic lengths, or a file with its one output length.
fn data(args: &NewArgs) -> Result<Data, Error> {
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
    Ok(data)
}

/// Checks the draft and writes it to `out` (refusing to overwrite without `force`) or stdout.
pub(super) fn write_out(draft: &Draft, out: Option<&Path>, force: bool) -> Result<(), Error> {
    let text = app::scenario_text(draft, out.unwrap_or(Path::new("<stdout>")))?;
    let Some(path) = out else {
        out!("{text}");
        return Ok(());
    };
    app::write_new_file(path, &text, force)?;
    errln!(
        "wrote {p}; check it with `infermeter plan {p}`, run it with `infermeter run {p}`",
        p = path.display()
    );
    Ok(())
}
