//! The scenario's tokenizer: tiktoken's built-in encodings (embedded, offline, shared process-wide
//! singletons) or a Hugging Face `tokenizer.json` (behind the `hf-tokenizers` feature). Building
//! one costs 0.1–0.5 s, so build it once and clone the handle: clones share the encoder.

use std::fmt;
use std::path::Path;
#[cfg(feature = "hf-tokenizers")]
use std::sync::Arc;

use tiktoken_rs::CoreBPE;

use super::DatasetError;
use super::TokenizerSpec;

/// A loaded tokenizer. Cheap to clone.
#[derive(Clone)]
pub struct Tokenizer {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    Tiktoken {
        name: &'static str,
        bpe: &'static CoreBPE,
    },
    #[cfg(feature = "hf-tokenizers")]
    Hf {
        name: String,
        tokenizer: Arc<tokenizers::Tokenizer>,
    },
}

impl Tokenizer {
    /// Loads the tokenizer a scenario names; a file path is resolved against `base_dir`.
    pub fn load(spec: &TokenizerSpec, base_dir: &Path) -> Result<Tokenizer, DatasetError> {
        match spec {
            TokenizerSpec::Cl100kBase => Ok(Tokenizer::cl100k_base()),
            TokenizerSpec::O200kBase => Ok(Tokenizer::o200k_base()),
            TokenizerSpec::File(path) => load_file(&base_dir.join(path)),
        }
    }

    pub fn cl100k_base() -> Tokenizer {
        Tokenizer {
            inner: Inner::Tiktoken {
                name: "cl100k_base",
                bpe: tiktoken_rs::cl100k_base_singleton(),
            },
        }
    }

    pub fn o200k_base() -> Tokenizer {
        Tokenizer {
            inner: Inner::Tiktoken {
                name: "o200k_base",
                bpe: tiktoken_rs::o200k_base_singleton(),
            },
        }
    }

    /// `cl100k_base`, `o200k_base`, or the file name of a `tokenizer.json`.
    pub fn name(&self) -> &str {
        match &self.inner {
            Inner::Tiktoken { name, .. } => name,
            #[cfg(feature = "hf-tokenizers")]
            Inner::Hf { name, .. } => name,
        }
    }

    /// Number of tokens in `text`, special-token text counted as ordinary text and no
    /// BOS/EOS added (what a server's `usage.prompt_tokens` counts, less any chat template).
    pub fn count(&self, text: &str) -> usize {
        self.try_count(text).unwrap_or(0)
    }

    /// Like [`count`](Self::count), but says when a Hugging Face tokenizer fails.
    pub fn try_count(&self, text: &str) -> Result<usize, DatasetError> {
        match &self.inner {
            Inner::Tiktoken { bpe, .. } => Ok(bpe.encode_ordinary(text).len()),
            #[cfg(feature = "hf-tokenizers")]
            Inner::Hf { name, tokenizer } => tokenizer
                .encode_fast(text, false)
                .map(|e| e.len())
                .map_err(|e| DatasetError::Encode {
                    tokenizer: name.clone(),
                    reason: e.to_string(),
                }),
        }
    }

    /// Whether this tokenizer's pre-tokenizer is known to split at every space before a word,
    /// so that a text of N single-token words is exactly N tokens without checking.
    pub(crate) fn splits_words(&self) -> bool {
        matches!(self.inner, Inner::Tiktoken { .. })
    }
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Tokenizer").field(&self.name()).finish()
    }
}

#[cfg(feature = "hf-tokenizers")]
fn load_file(path: &Path) -> Result<Tokenizer, DatasetError> {
    let failed = |reason: String| DatasetError::TokenizerFile {
        path: path.to_path_buf(),
        reason,
    };
    // Read by us, not the tokenizers crate: a regular file only, within a bound (a
    // tokenizer.json is a few megabytes; a FIFO or `/dev/zero` must not hang or fill memory).
    let text = crate::files::read_regular_text(path, crate::files::MAX_TEXT_FILE)
        .map_err(|e| failed(e.to_string()))?;
    let tokenizer: tokenizers::Tokenizer = text.parse().map_err(|e| failed(format!("{e}")))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(Tokenizer {
        inner: Inner::Hf {
            name,
            tokenizer: Arc::new(tokenizer),
        },
    })
}

#[cfg(not(feature = "hf-tokenizers"))]
fn load_file(path: &Path) -> Result<Tokenizer, DatasetError> {
    Err(DatasetError::HfTokenizersDisabled {
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_encodings_count_tokens() {
        let cl = Tokenizer::load(&TokenizerSpec::Cl100kBase, Path::new(".")).unwrap();
        let o2 = Tokenizer::load(&TokenizerSpec::O200kBase, Path::new(".")).unwrap();
        assert_eq!(cl.name(), "cl100k_base");
        assert_eq!(o2.name(), "o200k_base");
        assert_eq!(cl.count(""), 0);
        assert_eq!(cl.count("hello world"), 2);
        assert_eq!(o2.count("hello world"), 2);
        // Special-token text is plain text, never a control token.
        assert!(cl.count("<|endoftext|>") > 1);
    }

    #[test]
    fn a_missing_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = Tokenizer::load(
            &TokenizerSpec::File("nope/tokenizer.json".into()),
            dir.path(),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("tokenizer.json"), "{msg}");
    }

    #[cfg(feature = "hf-tokenizers")]
    #[test]
    fn loads_a_hugging_face_tokenizer_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tokenizer.json"),
            super::super::words::test_hf_json(),
        )
        .unwrap();
        let tok =
            Tokenizer::load(&TokenizerSpec::File("tokenizer.json".into()), dir.path()).unwrap();
        assert_eq!(tok.name(), "tokenizer.json");
        assert_eq!(tok.count("the and for"), 3);
        let garbage = dir.path().join("bad.json");
        std::fs::write(&garbage, "{ not json").unwrap();
        let err = Tokenizer::load(&TokenizerSpec::File(garbage), dir.path()).unwrap_err();
        assert!(err.to_string().contains("bad.json"));
    }
}
