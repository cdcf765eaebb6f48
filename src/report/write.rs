//! Writes every output of a run into one directory, each file atomically (a temporary file
//! renamed over the old one): `results.json` first, then the report (report.md, report.html,
//! report.pr.md, stages.csv), JUnit and the step summary, the plots last — so a plot that
//! cannot be written (or drawn) loses none of the others, and a problem with one file does not
//! stop the next.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::ReportError;
use super::junit::write_junit;
use super::markdown::{ReportTemplate, render_report};
use super::plots::{draw_plots, save_plots};
use crate::results::{RESULTS_FILE, Results, write_atomic, write_results};

pub const REPORT_FILE: &str = "report.md";
pub const JUNIT_FILE: &str = "junit.xml";

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
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            template: None,
            plots: true,
            junit: true,
            step_summary: None,
            baseline: None,
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

/// Writes report.md and junit.xml into `out_dir`, appends the report to the step summary when
/// there is one, and writes the plots; every file is tried, whatever happened to the others.
/// `results.json` is the caller's (see [`write_all`]).
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
    match render_report(results, opts.template.as_ref(), &names) {
        Ok(mut md) => {
            let fragment = super::telemetry::telemetry_markdown(results, &names);
            if !fragment.is_empty() {
                if !md.ends_with("\n\n") {
                    md.push('\n');
                }
                md.push_str(&fragment);
            }
            let md_path = out_dir.join(REPORT_FILE);
            match write_atomic(&md_path, md.as_bytes()) {
                Ok(()) => w.files.push(md_path),
                Err(e) => w.problems.push(ReportError::io(&md_path, e)),
            }
            if let Some(summary) = &opts.step_summary
                && let Err(e) = append(summary, &md)
            {
                w.problems.push(e);
            }
        }
        Err(e) => w.problems.push(e),
    }
    if opts.junit {
        let path = out_dir.join(JUNIT_FILE);
        match write_junit(results, &path) {
            Ok(()) => w.files.push(path),
            Err(e) => w.problems.push(e),
        }
    }
    match super::pages::write_pages(
        results,
        out_dir,
        opts.template.as_ref(),
        opts.baseline.as_deref(),
    ) {
        Ok(files) => w.files.extend(files),
        Err(e) => w.problems.push(e),
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
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("!["))
        .map(|l| format!("{l}\n"))
        .collect();
    f.write_all(text.as_bytes())
        .and_then(|_| f.write_all(b"\n"))
        .map_err(|e| ReportError::io(path, e))
}
