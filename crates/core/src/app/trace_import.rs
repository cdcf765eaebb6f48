//! `infermeter import dynamo-agentic TRACE -o tasks.jsonl`: an agent trace in another tool's
//! format written as an `agentic` data set, checked by the same loader a run uses before the
//! file is put in place (so a converted file always loads).

use std::path::Path;

use crate::dataset::{DatasetError, Imported, Tokenizer, import_dynamo_agentic, load_agentic};
use crate::error::Error;

/// Converts the Dynamo agentic Mooncake trace `input` into `out` (refused when it exists,
/// unless `force`); what it converted.
pub fn import_agentic_trace(input: &Path, out: &Path, force: bool) -> Result<Imported, Error> {
    if out.exists() && !force {
        return Err(Error::usage(
            format!("{} exists", out.display()),
            "pass --force to overwrite it, or choose another -o FILE",
        ));
    }
    let bad = |source: DatasetError| Error::Import {
        path: input.to_path_buf(),
        source,
    };
    let mut text = Vec::new();
    let imported = import_dynamo_agentic(input, &mut text).map_err(bad)?;
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let io = |source: std::io::Error| Error::Io {
        action: "write the converted trace to",
        path: out.to_path_buf(),
        source,
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    std::io::Write::write_all(&mut tmp, &text).map_err(io)?;
    // What a run would refuse (a cycle of forks, too many sessions in a task), refused now.
    let shown = out.display().to_string();
    load_agentic(tmp.path(), &shown, None, 1, 0, &Tokenizer::cl100k_base()).map_err(bad)?;
    tmp.persist(out).map_err(|e| io(e.error))?;
    Ok(imported)
}
