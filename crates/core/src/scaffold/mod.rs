//! Writing scenarios from command-line flags: [`Draft`] is a scenario as a benchmark command
//! line describes it, [`Draft::to_kdl`] writes it as a commented KDL file, [`finish`] checks
//! that file with the scenario parser, and [`vllm::import`] reads a `vllm bench serve`
//! command line into a draft (noting every flag it could not carry over). `infermeter new`
//! and `infermeter import vllm` are thin callers of this.

mod draft;
mod error;
mod flags;
mod gate;
pub mod vllm;
mod vllm_flags;

pub use draft::{Data, Draft, Length, Limit, Load, Scalar};
pub use error::ScaffoldError;
pub use flags::{FlagError, parse_dataset, parse_length};
pub use vllm::shell_line;

use std::path::Path;

/// The draft as KDL text, parsed back with [`crate::scenario::parse_str`] (as `validate`
/// would, without opening data set files) so that nothing invalid is ever written. `path`
/// names the file in diagnostics.
pub fn finish(draft: &Draft, path: &Path) -> Result<String, ScaffoldError> {
    for s in &draft.slas {
        crate::sla::parse(s).map_err(|e| ScaffoldError::Sla {
            expr: s.clone(),
            reason: e.to_string(),
        })?;
    }
    if let Some(url) = &draft.url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(ScaffoldError::Value {
            flag: "--url",
            value: url.clone(),
            reason: "expected an http(s) URL such as http://127.0.0.1:8000/v1".into(),
        });
    }
    let text = draft.to_kdl();
    crate::scenario::parse_str(path, &text, &[])
        .map_err(|e| ScaffoldError::Invalid(Box::new(e)))?;
    Ok(text)
}
