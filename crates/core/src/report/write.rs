//! Writes every output of a run into one directory, each file atomically (a temporary file
//! renamed over the old one): `results.json` first, then the rendered files in the order of
//! [`OUTPUTS`] (report.md and the step summary, junit.xml, report.html, report.pr.md,
//! stages.csv, and when asked for the llm-d Benchmark Report and requests.parquet, the latter
//! converted from the run's requests.jsonl), the plots last — so a plot that cannot be written (or drawn) loses none of the
//! others, and a problem with one file does not stop the next.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::ReportError;
use super::markdown::ReportTemplate;
use super::outputs::{OUTPUTS, Output, Rendering};
use super::plots::{draw_plots, save_plots};
use crate::results::{RESULTS_FILE, Results, write_atomic, write_results};

#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// A user template replacing `templates/report.md.j2`.
    pub template: Option<ReportTemplate>,
    pub plots: bool,
    pub junit: bool,
    /// Where to append the Markdown report too (GitHub's step summary).
    pub step_summary: Option<PathBuf>,
    /// The scenario's baseline and `compare`'s verdict against it, shown in report.html.
    pub baseline: Option<Box<(Results, super::Comparison)>>,
    /// The outputs written only when asked for ([`OutputFile::asked`](super::OutputFile))
    /// that this run asked for: the llm-d Benchmark Report, Parquet.
    pub extra: Vec<Output>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            template: None,
            plots: true,
            junit: true,
            step_summary: None,
            baseline: None,
            extra: Vec::new(),
        }
    }
}

/// What [`write_reports`] did: the files written, and what could not be.
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub problems: Vec<ReportError>,
}

/// Writes results.json (pretty) and then everything [`write_reports`] writes. Returns the
/// files written, results.json first, or the first problem (after trying every file).
pub fn write_all(
    results: &Results,
    out_dir: &Path,
    opts: &WriteOptions,
) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(out_dir).map_err(|e| ReportError::io(out_dir, e))?;
    let json_path = out_dir.join(RESULTS_FILE);
    write_results(results, &json_path)?;
    let written = write_reports(results, out_dir, opts);
    match written.problems.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(std::iter::once(json_path).chain(written.files).collect()),
    }
}

/// Writes every output [`OUTPUTS`] renders from the results into `out_dir` (report.md,
/// junit.xml, report.html, report.pr.md, stages.csv, and those of `opts.extra`), appends the
/// report to the step summary when there is one, and writes the plots; every file is tried,
/// whatever happened to the others. `results.json` is the caller's (see [`write_all`]).
pub fn write_reports(results: &Results, out_dir: &Path, opts: &WriteOptions) -> Written {
    let mut w = Written::default();
    // Drawn first, so the report links exactly the plots there are; written last.
    let (plots, drawn) = if opts.plots {
        draw_plots(results)
    } else {
        (Vec::new(), Vec::new())
    };
    w.problems.extend(drawn);
    let names: Vec<String> = plots.iter().map(|p| p.file.clone()).collect();
    let rendering = Rendering {
        results,
        template: opts.template.as_ref(),
        plots: &names,
        baseline: opts.baseline.as_deref(),
    };
    for file in &OUTPUTS {
        if file.output == Output::Junit && !opts.junit
            || file.asked && !opts.extra.contains(&file.output)
        {
            continue;
        }
        let path = out_dir.join(file.name);
        let rows = out_dir.join(Output::Requests.name());
        if let Some(converted) = file.output.convert(results, &rows, &path) {
            match converted {
                Ok(()) => w.files.push(path),
                Err(e) => w.problems.push(e),
            }
            continue;
        }
        let Some(rendered) = file.output.render(&rendering) else {
            continue;
        };
        let text = match rendered {
            Ok(text) => text,
            Err(e) => {
                w.problems.push(e);
                continue;
            }
        };
        // urls.csv of a target with one URL: nothing to say, no file.
        if text.is_empty() && file.output == Output::UrlsCsv {
            continue;
        }
        match write_atomic(&path, text.as_bytes()) {
            Ok(()) => w.files.push(path),
            Err(e) => w.problems.push(ReportError::io(&path, e)),
        }
        if file.output == Output::Report
            && let Some(summary) = &opts.step_summary
            && let Err(e) = append(summary, &text)
        {
            w.problems.push(e);
        }
    }
    let (saved, failed) = save_plots(&plots, out_dir);
    w.files.extend(saved);
    w.problems.extend(failed);
    w
}

fn append(path: &Path, text: &str) -> Result<(), ReportError> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| ReportError::io(path, e))?;
    // Image links are relative to the run directory, which a step summary cannot reach.
    // The step summary is a file of the user's, not one of the run's: scrubbed here.
    let text: String = crate::redact::secrets(text)
        .lines()
        .filter(|l| !l.starts_with("!["))
        .map(|l| format!("{l}\n"))
        .collect();
    f.write_all(text.as_bytes())
        .and_then(|_| f.write_all(b"\n"))
        .map_err(|e| ReportError::io(path, e))
}
