//! Getting started, as library calls: a Hub data set file fetched into the local cache
//! ([`fetch_dataset`], `infermeter dataset fetch`), a benchmark's question set fetched and
//! converted into a scored data set's JSONL ([`fetch_recipe`], `dataset fetch gsm8k|mmlu`),
//! and a scenario written from a draft
//! ([`scenario_text`], [`write_new_file`]: `infermeter new` and `import`).

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::hub::{Converted, FetchEvent, Fetched, HfFile, HubConfig, Recipe};
use crate::scaffold::{Draft, ScaffoldError};

/// Which data set file to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatasetSource {
    /// The ShareGPT file vLLM's serving benchmark uses, at `revision`.
    ShareGpt { revision: String },
    /// Any file of a Hub data set repository.
    Hub {
        repo: String,
        path: String,
        revision: String,
    },
}

/// A data set file in the cache: the `hf://` reference a scenario names it by, and where it is.
#[derive(Debug, Clone)]
pub struct FetchedDataset {
    pub uri: String,
    pub file: Fetched,
}

/// Fetches `source` into the Hub cache (resumable, checksummed; configured from the `HF_…`
/// environment), telling `on_event` how it goes.
pub fn fetch_dataset(
    source: &DatasetSource,
    retries: u32,
    on_event: &mut dyn FnMut(FetchEvent),
) -> Result<FetchedDataset, Error> {
    let file = match source {
        DatasetSource::ShareGpt { revision } => HfFile::new(
            crate::hub::SHAREGPT.0,
            crate::hub::SHAREGPT.1,
            Some(revision),
        ),
        DatasetSource::Hub {
            repo,
            path,
            revision,
        } => HfFile::new(repo, path, Some(revision)),
    }?;
    let config = HubConfig::from_env();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let fetched = runtime.block_on(crate::hub::fetch(&config, &file, retries, on_event))?;
    Ok(FetchedDataset {
        uri: file.uri(),
        file: fetched,
    })
}

/// A recipe's question set in JSONL: fetched from the Hub into the cache (or read from
/// `from`, a local copy of the same file, Parquet or JSONL) and converted into `out`, which
/// must not exist unless `force`. The fetched file, when one was.
pub fn fetch_recipe(
    recipe: Recipe,
    revision: &str,
    from: Option<&Path>,
    (out, force): (&Path, bool),
    retries: u32,
    on_event: &mut dyn FnMut(FetchEvent),
) -> Result<(Option<FetchedDataset>, Converted), Error> {
    if out.exists() && !force {
        return Err(Error::usage(
            format!("{} exists", out.display()),
            "pass --force to overwrite it, or choose another --out FILE",
        ));
    }
    let (fetched, input) = match from {
        Some(p) => (None, p.to_path_buf()),
        None => {
            let file = recipe.file(revision)?;
            let source = DatasetSource::Hub {
                repo: file.repo,
                path: file.path,
                revision: file.revision,
            };
            let f = fetch_dataset(&source, retries, on_event)?;
            let path = f.file.path.clone();
            (Some(f), path)
        }
    };
    let converted = recipe.convert(&input, out).map_err(|e| {
        Error::usage(
            infermeter_words::error_chain(&e),
            format!(
                "give the {} test split as the Hub has it (Parquet), or a JSONL copy with its \
                 fields",
                recipe.name()
            ),
        )
    })?;
    Ok((fetched, converted))
}

/// The scenario `draft` describes, checked with the scenario parser; `shown` names it in
/// diagnostics.
pub fn scenario_text(draft: &Draft, shown: &Path) -> Result<String, Error> {
    crate::scaffold::finish(draft, shown).map_err(|e| match e {
        ScaffoldError::Invalid(s) => Error::Scenario(*s),
        other => other.into(),
    })
}

/// Writes `text` to a new file at `path`; one that exists is refused unless `force`.
pub fn write_new_file(path: &Path, text: &str, force: bool) -> Result<PathBuf, Error> {
    if path.exists() && !force {
        return Err(Error::usage(
            format!("{} exists", path.display()),
            "pass --force to overwrite it, or choose another -o FILE",
        ));
    }
    // A scenario is meant for git: no secret in it, whatever carried one there.
    let text = crate::redact::secrets(text);
    std::fs::write(path, text.as_bytes()).map_err(|source| Error::Io {
        action: "write the scenario to",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(path.to_path_buf())
}
