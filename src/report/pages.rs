//! The report's other forms, written beside report.md: `report.html` (self-contained, plots
//! inline), `report.pr.md` (a pull-request comment: no links that leave the artifact) and
//! `stages.csv` (per-stage metrics for spreadsheets).

use std::path::{Path, PathBuf};

use super::compare::Comparison;
use super::{
    CSV_FILE, HTML_FILE, HtmlBaseline, ReportError, render_html, render_pr_comment, stages_csv,
};
use crate::results::Results;

/// The pull-request comment's file name.
pub const PR_COMMENT_FILE: &str = "report.pr.md";

/// Writes report.html, report.pr.md and stages.csv into `dir`, each atomically; returns them.
/// `baseline` is the scenario's baseline with `compare`'s verdict, shown in the HTML.
pub fn write_pages(
    results: &Results,
    dir: &Path,
    template: Option<&super::ReportTemplate>,
    baseline: Option<&(Results, Comparison)>,
) -> Result<Vec<PathBuf>, ReportError> {
    let html = render_html(
        results,
        baseline.map(|(r, c)| HtmlBaseline {
            results: r,
            comparison: c,
        }),
    )?;
    let pr = render_pr_comment(results, template)?;
    let csv = stages_csv(results);
    let mut written = Vec::new();
    for (name, text) in [(HTML_FILE, html), (PR_COMMENT_FILE, pr), (CSV_FILE, csv)] {
        let path = dir.join(name);
        crate::results::write_atomic(&path, text.as_bytes())
            .map_err(|e| ReportError::io(&path, e))?;
        written.push(path);
    }
    Ok(written)
}
