//! Where a data set file named in a scenario is read from: a path relative to the scenario's
//! directory, or an `hf://datasets/…` reference resolved through the local Hub cache (never
//! downloaded here: `infermeter dataset fetch` does that, so compiling a plan stays offline).

use std::path::{Path, PathBuf};

use super::PlanError;
use crate::hub::{HfFile, HubCache};

/// The file `written` names, for the data set `dataset`.
pub(super) fn resolve(
    base_dir: &Path,
    written: &Path,
    dataset: &str,
) -> Result<PathBuf, PlanError> {
    let text = written.to_string_lossy();
    if !HfFile::is_uri(&text) {
        return Ok(base_dir.join(written));
    }
    let hub = |source| PlanError::Hub {
        dataset: dataset.to_string(),
        source: Box::new(source),
    };
    let file = HfFile::parse(&text).map_err(hub)?;
    HubCache::from_env().resolve(&file).map_err(hub)
}
