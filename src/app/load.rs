//! The scenario a run (or a plan) starts from: the file, or text the caller read (standard
//! input for `-`), parsed with the params, then the command line's target overrides
//! (`--url`, `--model`) applied after parsing and before compiling.
//!
//! The overrides act as if the file said so: `--url` replaces the target (a `target "sim"`
//! becomes that URL) and, like any endpoint, is not part of the plan hash, so a run against a
//! different server still compares with its baseline; `--model` is the model every request
//! names, so it is part of the workload and of the hash, exactly as a `model` line would be.

use std::path::Path;

use crate::error::Error;
use crate::scenario::{Endpoint, Scenario, Spanned};

/// `--url` / `--model`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetOverride {
    /// An OpenAI-compatible base URL replacing the scenario's target.
    pub url: Option<String>,
    /// The model every request names (a simulator target also serves it under that name).
    pub model: Option<String>,
}

/// Parses `text` (or reads `path` when there is none) and applies `overrides`.
pub fn load_scenario(
    path: &Path,
    text: Option<&str>,
    params: &[(String, String)],
    overrides: &TargetOverride,
) -> Result<Scenario, Error> {
    let mut scenario = match text {
        Some(t) => crate::scenario::parse_str(path, t, params)?,
        None => crate::scenario::load(path, params)?,
    };
    if let Some(url) = &overrides.url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::usage(
                format!("--url {url}: not an http(s) URL"),
                "give the server's OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1",
            ));
        }
        // No span: the value came from the command line, not from the file.
        scenario.target.endpoint = Endpoint::Url(Spanned::new(url.clone(), (0, 0)));
    }
    if let Some(model) = &overrides.model {
        scenario.target.request.model = Some(model.clone());
        if let Endpoint::Sim(sim) = &mut scenario.target.endpoint {
            sim.model = model.clone();
        }
    }
    Ok(scenario)
}
