//! The files a run writes into its output directory, each named once: [`OUTPUTS`] holds one
//! entry per file — its name, who writes it, what `infermeter report --format` calls it, and
//! what a later run over the same directory does with this run's copy. The writers
//! ([`write_reports`](super::write_reports)), `infermeter report`'s re-rendering, and the
//! app's collision checks and stale-run marking (docs/results.md) all walk this table, so a
//! file added here is written, re-rendered, checked and cleared everywhere. Plots are named
//! per stage and profile group instead ([`is_plot_file`]). The rows marked `asked` are written
//! only when a run asks for them (`requests.jsonl`, the llm-d Benchmark Report, Parquet).

use std::path::Path;

use super::{Comparison, ReportError, ReportTemplate};
use crate::results::{RESULTS_FILE, Results};

/// `report.md`'s name in the output directory.
pub const REPORT_FILE: &str = "report.md";
/// `junit.xml`'s name in the output directory.
pub const JUNIT_FILE: &str = "junit.xml";
/// The self-contained report page's name in the output directory.
pub const HTML_FILE: &str = "report.html";
/// The pull-request comment's name in the output directory.
pub const PR_COMMENT_FILE: &str = "report.pr.md";
/// The per-stage CSV's name in the output directory.
pub const CSV_FILE: &str = "stages.csv";
/// `requests.jsonl`'s name in the output directory.
pub const REQUESTS_FILE: &str = "requests.jsonl";
/// The llm-d Benchmark Reports' name in the output directory (one per stage, one a line).
pub const LLMD_FILE: &str = "llm-d-report.jsonl";
/// The per-URL CSV's name (a target with several URLs).
pub const URLS_CSV_FILE: &str = "urls.csv";
/// `requests.jsonl` as Parquet: its name in the output directory.
pub const PARQUET_FILE: &str = "requests.parquet";
/// Each judged answer, for `compare`'s agreement (docs/quality.md): its name in the output
/// directory.
pub const ANSWERS_FILE: &str = "answers.jsonl";

/// One file of a run's output directory (plots aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    Results,
    Report,
    Junit,
    Html,
    PrComment,
    Csv,
    Requests,
    LlmD,
    Parquet,
    UrlsCsv,
    Answers,
}

/// Who writes an output.
#[derive(Clone, Copy)]
pub enum Writer {
    /// `results::write_results`: the placeholder before the first request, the result after
    /// the last.
    Results,
    /// Rendered from the results (by [`write_reports`](super::write_reports) after a run,
    /// by `infermeter report` from a saved one).
    Rendered(fn(&Rendering<'_>) -> Result<String, ReportError>),
    /// The runner, one row per request, when asked for (`--requests-jsonl`).
    Runner,
    /// Converted from the run's `requests.jsonl` (the path given), streamed into the file at
    /// the second path (by [`write_reports`](super::write_reports) after a run, by
    /// `infermeter report` from a saved one).
    FromRequests(fn(&Results, &Path, &Path) -> Result<(), ReportError>),
}

/// What a run that starts over a directory does with the earlier run's copy, before its
/// first request (see docs/results.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// Replaced by this run's placeholder (`"complete": false`); a run that stops before it
    /// has a plan marks the earlier one stale instead and keeps its figures.
    Marked,
    /// Removed, so that no earlier verdict is read as this run's.
    Removed,
}

/// One row of [`OUTPUTS`].
pub struct OutputFile {
    pub output: Output,
    /// The file's name in the output directory.
    pub name: &'static str,
    pub writer: Writer,
    /// Its name for `infermeter report --format`, when that re-renders it.
    pub format: Option<&'static str>,
    pub stale: Stale,
    /// Written only when the scenario or the command line asks for it
    /// ([`WriteOptions::extra`](super::WriteOptions)), not by every run.
    pub asked: bool,
}

/// Everything a rendered output is made from.
#[derive(Clone, Copy)]
pub struct Rendering<'a> {
    pub results: &'a Results,
    /// A user's report template (report.md, and the pull-request comment).
    pub template: Option<&'a ReportTemplate>,
    /// The plot files beside the report, which it links.
    pub plots: &'a [String],
    /// The scenario's baseline and `compare`'s verdict against it (report.html).
    pub baseline: Option<&'a (Results, Comparison)>,
}

/// Every file of a run's output directory, in the order they are written.
pub const OUTPUTS: [OutputFile; 11] = [
    OutputFile {
        output: Output::Results,
        name: RESULTS_FILE,
        writer: Writer::Results,
        format: None,
        stale: Stale::Marked,
        asked: false,
    },
    OutputFile {
        output: Output::Report,
        name: REPORT_FILE,
        writer: Writer::Rendered(|r| super::render_report(r.results, r.template, r.plots)),
        format: Some("markdown"),
        stale: Stale::Removed,
        asked: false,
    },
    OutputFile {
        output: Output::Junit,
        name: JUNIT_FILE,
        writer: Writer::Rendered(|r| Ok(super::junit_xml(r.results))),
        format: None,
        stale: Stale::Removed,
        asked: false,
    },
    OutputFile {
        output: Output::Html,
        name: HTML_FILE,
        writer: Writer::Rendered(render_html),
        format: Some("html"),
        stale: Stale::Removed,
        asked: false,
    },
    OutputFile {
        output: Output::PrComment,
        name: PR_COMMENT_FILE,
        writer: Writer::Rendered(|r| super::render_pr_comment(r.results, r.template)),
        format: Some("pr-comment"),
        stale: Stale::Removed,
        asked: false,
    },
    OutputFile {
        output: Output::Csv,
        name: CSV_FILE,
        writer: Writer::Rendered(|r| Ok(super::stages_csv(r.results))),
        format: Some("csv"),
        stale: Stale::Removed,
        asked: false,
    },
    OutputFile {
        output: Output::Requests,
        name: REQUESTS_FILE,
        writer: Writer::Runner,
        format: None,
        stale: Stale::Removed,
        asked: true,
    },
    OutputFile {
        output: Output::LlmD,
        name: LLMD_FILE,
        writer: Writer::Rendered(|r| Ok(super::llmd_report(r.results))),
        format: Some("llm-d"),
        stale: Stale::Removed,
        asked: true,
    },
    OutputFile {
        output: Output::Parquet,
        name: PARQUET_FILE,
        writer: Writer::FromRequests(super::requests_parquet),
        format: Some("parquet"),
        stale: Stale::Removed,
        asked: true,
    },
    // Written only when the target lists several URLs (its text is empty otherwise).
    OutputFile {
        output: Output::UrlsCsv,
        name: URLS_CSV_FILE,
        writer: Writer::Rendered(|r| Ok(super::urls::urls_csv(r.results))),
        format: Some("urls-csv"),
        stale: Stale::Removed,
        asked: false,
    },
    // Written by the runner when a stage's data set has a `quality` block.
    OutputFile {
        output: Output::Answers,
        name: ANSWERS_FILE,
        writer: Writer::Runner,
        format: None,
        stale: Stale::Removed,
        asked: true,
    },
];

impl Output {
    /// This output's row of [`OUTPUTS`].
    pub fn file(self) -> &'static OutputFile {
        // The table lists the variants in their declared order (a test holds it).
        &OUTPUTS[self as usize]
    }

    /// The file's name in the output directory.
    pub fn name(self) -> &'static str {
        self.file().name
    }

    /// The output `infermeter report --format NAME` renders.
    pub fn from_format(name: &str) -> Option<Output> {
        OUTPUTS
            .iter()
            .find(|f| f.format == Some(name))
            .map(|f| f.output)
    }

    /// Renders this output from `r`; `None` when it is not rendered from results.
    pub fn render(self, r: &Rendering<'_>) -> Option<Result<String, ReportError>> {
        match self.file().writer {
            Writer::Rendered(render) => Some(render(r)),
            Writer::Results | Writer::Runner | Writer::FromRequests(_) => None,
        }
    }

    /// Whether this output is converted from a run's `requests.jsonl` rather than rendered
    /// from its results.
    pub fn from_requests(self) -> bool {
        matches!(self.file().writer, Writer::FromRequests(_))
    }

    /// Writes this output into `out` from the `requests.jsonl` at `rows`; `None` when it is
    /// not converted from the requests.
    pub fn convert(
        self,
        results: &Results,
        rows: &Path,
        out: &Path,
    ) -> Option<Result<(), ReportError>> {
        match self.file().writer {
            Writer::FromRequests(convert) => Some(convert(results, rows, out)),
            Writer::Results | Writer::Runner | Writer::Rendered(_) => None,
        }
    }
}

/// The `--format` names `infermeter report` takes, in table order.
pub fn report_formats() -> impl Iterator<Item = &'static str> {
    OUTPUTS.iter().filter_map(|f| f.format)
}

/// Whether `name` (a file name in a run's directory) is one of the run's plots.
pub fn is_plot_file(name: &str) -> bool {
    name.ends_with(".svg") && (name.starts_with("stage-") || name.starts_with("profile-"))
}

/// Every plot file a run with `results` may have: per stage its distribution, timeline and
/// server plot, then one per profile group.
pub fn plot_files(results: &Results) -> Vec<String> {
    results
        .stages
        .iter()
        .flat_map(|s| {
            [
                super::cdf_file_name(&s.name),
                super::timeline_file_name(&s.name),
                super::server_timeline_file_name(&s.name),
            ]
        })
        .chain(super::profiles(results).into_iter().map(|g| g.plot))
        .collect()
}

fn render_html(r: &Rendering<'_>) -> Result<String, ReportError> {
    let baseline = r.baseline.map(|(results, comparison)| super::HtmlBaseline {
        results,
        comparison,
    });
    super::render_html(r.results, baseline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_has_its_own_name_and_format() {
        for (i, a) in OUTPUTS.iter().enumerate() {
            assert_eq!(a.output as usize, i, "{} is out of order", a.name);
            for b in &OUTPUTS[i + 1..] {
                assert_ne!(a.name, b.name);
                assert!(a.format.is_none() || a.format != b.format);
            }
            assert!(!is_plot_file(a.name), "{} reads as a plot", a.name);
        }
        assert_eq!(Output::from_format("pr-comment"), Some(Output::PrComment));
        assert_eq!(
            report_formats().collect::<Vec<_>>(),
            [
                "markdown",
                "html",
                "pr-comment",
                "csv",
                "llm-d",
                "parquet",
                "urls-csv"
            ]
        );
    }
}
