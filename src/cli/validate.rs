//! `infermeter validate FILE...`: parses each scenario and prints `ok` or its diagnostics.

use std::path::PathBuf;

use clap::Args;

use super::common::{parse_param, render};
use crate::scenario;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Override a declared param, e.g. `--param rate=40` (repeatable).
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
}

pub fn run(args: ValidateArgs) -> i32 {
    let mut code = crate::exit::OK;
    for file in &args.files {
        match scenario::load(file, &args.params) {
            Ok(s) => println!(
                "ok  {}  ({} datasets, {} stages)",
                file.display(),
                s.datasets.len(),
                s.stages.len()
            ),
            Err(e) => {
                eprintln!("{}", render(&e));
                code = crate::exit::INVALID;
            }
        }
    }
    code
}
