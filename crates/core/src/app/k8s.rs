//! [`write_manifests`]: `infermeter k8s` as one function — load and compile the scenario,
//! refuse a plan that cannot be split into the shards asked for (here, not in N pods), and
//! write the ConfigMap, Secret (a new coordinator token, and the secret params: never an
//! argument), Service and Indexed Job of its distributed run (see `k8s::manifests`).

use std::path::{Path, PathBuf};

use crate::coordinate::{TOKEN_ENV, Token};
use crate::error::Error;
use crate::k8s::{K8sOptions, PodSecret};
use crate::plan::Slice;

/// Checks that the scenario at `scenario` can run as `opts.shards` shards and writes its
/// manifests into `out`; returns the files written.
pub fn write_manifests(
    scenario: &Path,
    opts: &K8sOptions,
    out: &Path,
) -> Result<Vec<PathBuf>, Error> {
    let loaded = crate::scenario::load(scenario, &opts.params)?;
    super::server::refuse_distributed(&loaded, "k8s")?;
    let plan = crate::plan::compile(&loaded).map_err(|source| Error::Plan {
        path: scenario.to_path_buf(),
        source,
    })?;
    // Refused here, not in N pods.
    crate::shard::slice(
        plan,
        Slice {
            index: 0,
            count: opts.shards,
        },
    )?;
    let (opts, params) = secret_params(opts);
    let mut secrets = pod_secrets();
    secrets.extend(params);
    write(scenario, &loaded, &opts, &secrets, out)
}

/// Bundles the scenario's files and writes the manifests.
#[cfg(feature = "k8s")]
fn write(
    scenario: &Path,
    loaded: &crate::scenario::Scenario,
    opts: &K8sOptions,
    secrets: &[PodSecret],
    out: &Path,
) -> Result<Vec<PathBuf>, Error> {
    let bundle = crate::k8s::bundle(scenario, loaded)?;
    Ok(crate::k8s::manifests(opts, &bundle, secrets)?.write(&opts.name, out)?)
}

/// Without the `k8s` feature: refused, after the scenario was checked.
#[cfg(not(feature = "k8s"))]
fn write(
    _scenario: &Path,
    _loaded: &crate::scenario::Scenario,
    _opts: &K8sOptions,
    _secrets: &[PodSecret],
    _out: &Path,
) -> Result<Vec<PathBuf>, Error> {
    Err(crate::k8s::K8sError::NotBuilt.into())
}

/// What every pod of the run must know and nobody else: a new coordinator token, which the
/// pods read from the run's Secret as `INFERMETER_COORDINATOR_TOKEN`.
fn pod_secrets() -> Vec<PodSecret> {
    let token = Token::generate();
    vec![PodSecret::new(TOKEN_ENV, token.expose())]
}

/// `opts` with its secret params (named like a secret or marked, or holding a secret-shaped
/// value) taken out of the pods' arguments: each travels in the run's Secret instead, as
/// `INFERMETER_PARAM_NAME`, which the shards read with `--param-env NAME=INFERMETER_PARAM_NAME`.
fn secret_params(opts: &K8sOptions) -> (K8sOptions, Vec<PodSecret>) {
    let mut opts = opts.clone();
    let mut secrets = Vec::new();
    let (secret, plain): (Vec<_>, Vec<_>) =
        std::mem::take(&mut opts.params)
            .into_iter()
            .partition(|(name, value)| {
                crate::redact::is_secret_name(name)
                    || matches!(crate::redact::secrets(value), std::borrow::Cow::Owned(_))
            });
    opts.params = plain;
    for (name, value) in secret {
        let env: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        let env = format!("INFERMETER_PARAM_{env}");
        opts.run_args.push(format!("--param-env={name}={env}"));
        secrets.push(PodSecret::new(env, value));
    }
    (opts, secrets)
}

/// The objects' base name when none is given: the scenario file's name, lower-cased, other
/// characters than letters and digits made `-`, at most 40 characters.
pub fn manifest_name(scenario: &Path) -> String {
    let stem = scenario
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let slug: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    slug.trim_matches('-').to_string()
}
