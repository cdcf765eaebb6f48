//! The scenario error type: either the file could not be read, or it is invalid, in which case
//! every problem found is carried as its own diagnostic with a span in the file and a hint.

use std::path::PathBuf;
use std::sync::Arc;

use miette::SpanContents;
use miette::{Diagnostic, MietteError, MietteSpanContents, NamedSource, SourceCode, SourceSpan};

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
    pub src: NamedSource<Snippets>,
    /// `None` only for problems that come from the command line (`--param`) with nothing in the
    /// file to point at.
    #[label("{label}")]
    pub span: Option<SourceSpan>,
    pub label: String,
    #[help]
    pub help: Option<String>,
}

/// The most of a problem's message, label or hint kept (user text quoted in them is cut).
pub const MAX_TEXT: usize = 300;
/// The most of the file one problem points at; a longer span is cut to its start.
pub const MAX_SPAN: usize = 160;
/// The most of the file's text a diagnostic quotes around its span.
pub const MAX_QUOTE: usize = 240;
/// The most problems reported for one file; the rest are counted.
pub const MAX_PROBLEMS: usize = 50;

/// A scenario's text as diagnostics quote it: the lines around a problem, but never more than
/// `MAX_QUOTE` (240) bytes of them, so a 1 MiB file on one line (binary garbage, minified data)
/// gives a diagnostic of a few lines, not of a megabyte.
#[derive(Debug, Clone)]
pub struct Snippets(pub Arc<str>);

impl SourceCode for Snippets {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let text: &str = &self.0;
        let full = text.read_span(span, context_lines_before, context_lines_after)?;
        if full.data().len() <= MAX_QUOTE {
            return Ok(full);
        }
        // A window on the span's own lines, cut around it at character boundaries.
        let start = floor_boundary(text, span.offset());
        let end = floor_boundary(text, span.offset() + span.len()).max(start);
        let line_start = text[..start].rfind(['\n', '\r']).map_or(0, |i| i + 1);
        let line_end = text[end..]
            .find(['\n', '\r'])
            .map_or(text.len(), |i| end + i);
        let room = MAX_QUOTE.saturating_sub(end - start) / 2;
        let from = floor_boundary(text, start.saturating_sub(room)).max(line_start);
        let to = floor_boundary(text, end + room).min(line_end).max(end);
        let line = newlines(&text[..from]);
        Ok(Box::new(MietteSpanContents::new_named(
            full.name().unwrap_or_default().to_string(),
            &text.as_bytes()[from..to],
            SourceSpan::new(from.into(), to - from),
            line,
            from - line_start,
            newlines(&text[from..to]) + 1,
        )))
    }
}

/// Line breaks as miette counts them (`\r\n` is one).
fn newlines(s: &str) -> usize {
    s.matches('\n').count() + s.matches('\r').count() - s.matches("\r\n").count()
}

fn floor_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `text` cut to [`MAX_TEXT`] characters, with `…` when it was longer.
pub(crate) fn bounded(text: String) -> String {
    if text.len() <= MAX_TEXT {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_TEXT).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// `span` inside `text`, at most [`MAX_SPAN`] bytes long, on character boundaries.
pub(crate) fn bounded_span(text: &str, span: SourceSpan) -> SourceSpan {
    let start = floor_boundary(text, span.offset());
    let end = floor_boundary(text, span.offset() + span.len().min(MAX_SPAN)).max(start);
    SourceSpan::new(start.into(), end - start)
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
