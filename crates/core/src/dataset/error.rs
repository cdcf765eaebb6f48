//! Errors of the dataset module: loading tokenizers and preparing prompt factories.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("failed to load tokenizer file `{path}`: {reason}")]
    TokenizerFile { path: PathBuf, reason: String },
    #[error(
        "tokenizer file `{path}` needs the `hf-tokenizers` feature; rebuild infermeter with default features or use tokenizer \"cl100k_base\" / \"o200k_base\""
    )]
    HfTokenizersDisabled { path: PathBuf },
    #[error(
        "tokenizer `{tokenizer}` encodes only {found} of the built-in words as single tokens (at least {needed} are needed for synthetic prompts)"
    )]
    TooFewWords {
        tokenizer: String,
        found: usize,
        needed: usize,
    },
    #[error("{}{}: {reason}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    File {
        path: PathBuf,
        /// 1-based line, when the problem is on one.
        line: Option<u64>,
        reason: String,
    },
    #[error("failed to read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to tokenize text with `{tokenizer}`: {reason}")]
    Encode { tokenizer: String, reason: String },
}
