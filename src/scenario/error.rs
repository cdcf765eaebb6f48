//! The scenario error type: either the file could not be read, or it is invalid, in which case
//! every problem found is carried as its own diagnostic with a span in the file and a hint.

use std::path::PathBuf;
use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum ScenarioError {
    #[error("failed to read scenario file `{}`", path.display())]
    #[diagnostic(code(infermeter::scenario::io))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not a valid scenario ({})", path.display(), count_problems(problems.len()))]
    #[diagnostic(code(infermeter::scenario::invalid))]
    Invalid {
        path: PathBuf,
        #[related]
        problems: Vec<Problem>,
    },
}

fn count_problems(n: usize) -> String {
    if n == 1 {
        "1 problem".into()
    } else {
        format!("{n} problems")
    }
}

impl ScenarioError {
    /// The individual problems of an invalid scenario (empty for an I/O error).
    pub fn problems(&self) -> &[Problem] {
        match self {
            ScenarioError::Io { .. } => &[],
            ScenarioError::Invalid { problems, .. } => problems,
        }
    }
}

/// One thing wrong with a scenario, pointing at where it is written.
#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[error("{message}")]
pub struct Problem {
    pub message: String,
    #[source_code]
    pub src: NamedSource<Arc<str>>,
    /// `None` only for problems that come from the command line (`--param`) with nothing in the
    /// file to point at.
    #[label("{label}")]
    pub span: Option<SourceSpan>,
    pub label: String,
    #[help]
    pub help: Option<String>,
}

/// The candidate closest to `word`, if any is close enough to be a plausible typo.
pub fn did_you_mean<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let word_lc = word.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (c, strsim::jaro_winkler(&word_lc, &c.to_lowercase())))
        .filter(|(c, score)| *score >= 0.8 || close_edit(&word_lc, c))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// Short words score low on Jaro-Winkler even for one-letter typos; accept a small edit distance.
fn close_edit(word: &str, candidate: &str) -> bool {
    let d = strsim::damerau_levenshtein(word, &candidate.to_lowercase());
    let len = candidate.chars().count();
    d <= 1.max(len / 4) && d < len
}

/// `help` text for a did-you-mean, or a list of the valid names when nothing is close.
pub(crate) fn suggest(word: &str, candidates: &[&str], what: &str) -> String {
    match did_you_mean(word, candidates.iter().copied()) {
        Some(s) => format!("did you mean `{s}`?"),
        None if candidates.is_empty() => format!("no {what} is allowed here"),
        None => format!(
            "expected one of: {}",
            candidates
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names = ["duration", "requests", "dataset", "arrival"];
        assert_eq!(did_you_mean("durtion", names), Some("duration"));
        assert_eq!(did_you_mean("reqests", names), Some("requests"));
        assert_eq!(did_you_mean("Dataset", names), Some("dataset"));
        assert_eq!(did_you_mean("zebra", names), None);
        assert_eq!(did_you_mean("x", ["rate", "clients"]), None);
        assert_eq!(did_you_mean("rat", ["rate", "clients"]), Some("rate"));
    }
}
