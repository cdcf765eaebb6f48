//! The small value syntaxes `infermeter new` takes: a token length (`512` or `256..1024`) and
//! a data set (`sharegpt`, `sharegpt:PATH`, `jsonl:PATH`).

use super::{Data, Length};
use crate::hub::{HfFile, HubError};

/// A `--input-tokens`, `--output-tokens` or `--dataset` value that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("`{0}` is not a token count ≥ 1")]
    TokenCount(String),
    #[error("{min}..{max}: the minimum is above the maximum")]
    Range { min: u32, max: u32 },
    #[error(transparent)]
    Hub(#[from] Box<HubError>),
    #[error("jsonl needs a file: --dataset jsonl:prompts.jsonl")]
    NoFile,
    #[error("`{0}` is not a data set kind; write sharegpt, sharegpt:PATH or jsonl:PATH")]
    Kind(String),
}

/// `N` (fixed) or `MIN..MAX` (uniform, inclusive), each ≥ 1.
pub fn parse_length(s: &str) -> Result<Length, FlagError> {
    let n = |t: &str| -> Result<u32, FlagError> {
        match t.trim().parse::<u32>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(FlagError::TokenCount(t.to_string())),
        }
    };
    match s.split_once("..") {
        Some((a, b)) => {
            let (min, max) = (n(a)?, n(b.trim_start_matches('='))?);
            if min > max {
                return Err(FlagError::Range { min, max });
            }
            Ok(Length::Uniform(min, max))
        }
        None => n(s).map(Length::Fixed),
    }
}

/// `sharegpt` (the Hub's ShareGPT file, fetched with `infermeter dataset fetch sharegpt`),
/// `sharegpt:PATH` or `jsonl:PATH`; PATH may be an `hf://datasets/…` reference.
pub fn parse_dataset(s: &str) -> Result<Data, FlagError> {
    let (kind, path) = match s.split_once(':') {
        // `hf://…` alone is a ShareGPT file; `C:\…` does not occur on the platforms we build.
        Some(("hf", _)) => ("sharegpt", s),
        Some((k, p)) => (k, p),
        None => (s, ""),
    };
    if path.starts_with("hf://") {
        HfFile::parse(path).map_err(Box::new)?;
    }
    match (kind, path) {
        ("sharegpt", "") => Ok(Data::ShareGpt {
            path: HfFile::sharegpt().uri(),
            output_tokens: None,
        }),
        ("sharegpt", p) => Ok(Data::ShareGpt {
            path: p.to_string(),
            output_tokens: None,
        }),
        ("jsonl", "") => Err(FlagError::NoFile),
        ("jsonl", p) => Ok(Data::Jsonl {
            path: p.to_string(),
            max_tokens: None,
        }),
        (other, _) => Err(FlagError::Kind(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_datasets() {
        assert_eq!(parse_length("512").unwrap(), Length::Fixed(512));
        assert_eq!(
            parse_length("256..1024").unwrap(),
            Length::Uniform(256, 1024)
        );
        assert!(parse_length("0").is_err());
        assert!(parse_length("9..3").is_err());
        assert!(
            matches!(parse_dataset("sharegpt"), Ok(Data::ShareGpt { path, .. }) if path.starts_with("hf://datasets/anon8231489123/"))
        );
        assert!(
            matches!(parse_dataset("jsonl:p.jsonl"), Ok(Data::Jsonl { path, .. }) if path == "p.jsonl")
        );
        assert!(
            matches!(parse_dataset("hf://datasets/o/n/x.json"), Ok(Data::ShareGpt { path, .. }) if path == "hf://datasets/o/n/x.json")
        );
        assert!(parse_dataset("csv:x").is_err());
    }
}
