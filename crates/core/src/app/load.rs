//! The scenario a run (or a plan) starts from: the file, or text the caller read (standard
//! input for `-`), parsed with the params, then the command line's target overrides
//! (`--url`, `--model`) applied after parsing and before compiling.
//!
//! The overrides act as if the file said so: `--url` replaces the target (a `target "sim"`
//! becomes that URL) and, like any endpoint, is not part of the plan hash, so a run against a
//! different server still compares with its baseline; `--model` is the model every request
//! names, so it is part of the workload and of the hash, exactly as a `model` line would be.
//!
//! Once loaded, the scenario's secrets are registered with [`crate::redact`] (see
//! [`register_secrets`]), so that no output the run writes shows them, whatever carries them
//! there.

use std::path::Path;

use crate::error::Error;
use crate::scenario::{Endpoint, ParamValue, Scenario, Spanned};

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
            // The same suggestion as `wait`'s for the same mistake (`HOST:PORT`).
            let help = match crate::protocol::likely_base(url) {
                Some(likely) => format!(
                    "did you mean --url {}? (the server's OpenAI-compatible base URL)",
                    crate::redact::secrets(&likely)
                ),
                None => "give the server's OpenAI-compatible base URL, e.g. \
                         http://127.0.0.1:8000/v1"
                    .into(),
            };
            return Err(Error::usage(
                format!("--url {}: not an http(s) URL", crate::redact::secrets(url)),
                help,
            ));
        }
        if scenario.target.run.network.is_some()
            && url
                .get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        {
            return Err(Error::usage(
                format!(
                    "--url {}: network shaping needs an http target",
                    crate::redact::secrets(url)
                ),
                "the scenario's `network` proxy cannot carry TLS with the server's name; give a \
                 plain http URL, or remove `network` from the target",
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
    register_secrets(&scenario);
    Ok(scenario)
}

/// Registers every secret the scenario holds or names: the value of each param named like a
/// secret (or marked `secret=#true`), each secret-named header's value, the API key's
/// variable's value, the server's variables given by reference, the target URL's credentials
/// and secret query values.
fn register_secrets(scenario: &Scenario) {
    use crate::redact;
    for (name, value) in &scenario.params {
        if let ParamValue::String(v) = value
            && redact::is_secret_name(name)
        {
            redact::register(v);
        }
    }
    let request = &scenario.target.request;
    for (name, value) in &request.headers {
        redact::register_header(name, value);
    }
    if let Some(var) = &request.api_key_env {
        redact::register_env(var);
    }
    // An LLM judge's key (docs/quality.md) is as secret as the target's.
    let judges = scenario
        .datasets
        .iter()
        .filter_map(|d| d.quality.as_ref()?.judge.as_ref());
    for var in judges.filter_map(|j| j.api_key_env.as_ref()) {
        redact::register_env(var);
    }
    // What the server is given by reference is a secret, wherever the server writes it.
    for e in scenario.server.iter().flat_map(|s| &s.env) {
        if let crate::server::EnvValue::FromEnv(var) = &e.value {
            redact::register_env(var);
        }
    }
    match &scenario.target.endpoint {
        Endpoint::Url(url) => redact::register_url(&url.value),
        Endpoint::Urls(routes) => routes
            .urls
            .iter()
            .for_each(|u| redact::register_url(&u.url)),
        Endpoint::Sim(_) => {}
    }
}
