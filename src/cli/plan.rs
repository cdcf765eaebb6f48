//! `infermeter plan FILE`: compile a scenario and show exactly what would be sent and when,
//! with the plan hash that identifies the workload in every result.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::values::parse_param;
use crate::app::{self, PlanFormat as Shown, TargetOverride};
use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A readable summary per stage.
    Text,
    /// The whole plan, every request recipe included (streamed).
    Json,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The scenario file (KDL); `-` reads it from standard input.
    pub scenario: PathBuf,

    /// As for `run`: replace the target's URL (the hash stays the same).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// As for `run`: replace the model (the hash changes with it).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: PlanFormat,

    /// Override a scenario param (repeatable), e.g. `--param rate=50`.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
}

pub fn run(args: PlanArgs) -> Result<(), Error> {
    super::signals::exit_on_signals();
    let (path, text) = super::common::scenario_source(args.scenario)?;
    let target = TargetOverride {
        url: args.url,
        model: args.model,
    };
    let (plan, needs) =
        app::compile_plan_with_needs(&path, text.as_deref(), &args.params, &target)?;
    let format = match args.format {
        PlanFormat::Text => Shown::Text,
        PlanFormat::Json => Shown::Json,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    app::write_plan(&plan, &needs, format, &mut out)?;
    for row in needs.short() {
        eprintln!("warning: {}", app::need_warning(row));
    }
    Ok(())
}
