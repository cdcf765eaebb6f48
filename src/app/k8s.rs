//! [`write_manifests`]: `infermeter k8s` as one function — load and compile the scenario,
//! refuse a plan that cannot be split into the shards asked for (here, not in N pods), and
//! write the ConfigMap, Secret (a new coordinator token), Service and Indexed Job of its
//! distributed run (see `k8s::manifests`).

use std::path::{Path, PathBuf};

use crate::coordinate::{TOKEN_ENV, Token};
use crate::error::Error;
use crate::k8s::{K8sOptions, PodSecret, bundle, manifests};
use crate::plan::Slice;

/// Checks that the scenario at `scenario` can run as `opts.shards` shards and writes its
/// manifests into `out`; returns the files written.
pub fn write_manifests(
    scenario: &Path,
    opts: &K8sOptions,
    out: &Path,
) -> Result<Vec<PathBuf>, Error> {
    let loaded = crate::scenario::load(scenario, &opts.params)?;
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
    let bundle = bundle(scenario, &loaded)?;
    Ok(manifests(opts, &bundle, &pod_secrets())?.write(&opts.name, out)?)
}

/// What every pod of the run must know and nobody else: a new coordinator token, which the
/// pods read from the run's Secret as `INFERMETER_COORDINATOR_TOKEN`.
fn pod_secrets() -> Vec<PodSecret> {
    let token = Token::generate();
    vec![PodSecret::new(TOKEN_ENV, token.expose())]
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
