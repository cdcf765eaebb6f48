//! `infermeter schema scenario|results`: prints the JSON Schema of a data model, the same
//! text as the files checked in under `schemas/`.

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    /// The typed scenario a KDL file decodes to (also `schemas/scenario.schema.json`).
    Scenario,
    /// `results.json`, the versioned contract of a run (also `schemas/results.schema.json`).
    Results,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which schema to print.
    #[arg(value_enum)]
    pub kind: SchemaKind,
}

pub fn run(args: SchemaArgs) -> Result<(), crate::error::Error> {
    match args.kind {
        SchemaKind::Scenario => out!("{}", crate::app::scenario_schema()),
        SchemaKind::Results => out!("{}", crate::app::results_schema()),
    }
    Ok(())
}
