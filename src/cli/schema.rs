//! `infermeter schema scenario`: prints the JSON Schema of a data model.

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    /// The typed scenario a KDL file decodes to (also `schemas/scenario.schema.json`).
    Scenario,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which schema to print.
    #[arg(value_enum)]
    pub kind: SchemaKind,
}

pub fn run(args: SchemaArgs) -> Result<(), crate::error::Error> {
    match args.kind {
        SchemaKind::Scenario => print!("{}", crate::scenario::json_schema()),
    }
    Ok(())
}
