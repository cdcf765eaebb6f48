//! Writes every output of a run into one directory: `results.json` first, then the report
//! (report.md, report.html, report.pr.md, stages.csv) and JUnit, then the plots.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::ReportError;
use super::junit::write_junit;
use super::markdown::render_markdown_with_plots;
use super::plots::write_plots;
use crate::results::{RESULTS_FILE, Results, write_results};

pub const REPORT_FILE: &str = "report.md";
pub const JUNIT_FILE: &str = "junit.xml";

#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// A user template replacing `templates/report.md.j2` (its text, not its path).
    pub template: Option<String>,
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

/// Writes results.json (pretty), report.md, plots and junit.xml into `out_dir`, and appends the
/// report to the step summary when there is one. Returns the files written, results.json first.
pub fn write_all(
    results: &Results,
    out_dir: &Path,
    opts: &WriteOptions,
) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(out_dir).map_err(|e| ReportError::io(out_dir, e))?;
    let mut written = Vec::new();

    let json_path = out_dir.join(RESULTS_FILE);
    write_results(results, &json_path)?;
    written.push(json_path);

    let plots = if opts.plots {
        write_plots(results, out_dir)?
    } else {
        Vec::new()
    };
    let plot_names: Vec<String> = plots
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let telemetry_plots = if opts.plots {
        super::telemetry::write_telemetry_plots(results, out_dir)?
    } else {
        Vec::new()
    };
    let telemetry_plot_names: Vec<String> = telemetry_plots
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut md = render_markdown_with_plots(results, opts.template.as_deref(), &plot_names)?;
    let fragment = super::telemetry::telemetry_markdown(results, &telemetry_plot_names);
    if !fragment.is_empty() {
        if !md.ends_with("\n\n") {
            md.push('\n');
        }
        md.push_str(&fragment);
    }
    let md_path = out_dir.join(REPORT_FILE);
    std::fs::write(&md_path, &md).map_err(|e| ReportError::io(&md_path, e))?;
    written.push(md_path);
    written.extend(super::pages::write_pages(
        results,
        out_dir,
        opts.template.as_deref(),
        opts.baseline.as_deref(),
    )?);
    written.extend(plots);
    written.extend(telemetry_plots);

    if opts.junit {
        let path = out_dir.join(JUNIT_FILE);
        write_junit(results, &path)?;
        written.push(path);
    }
    if let Some(summary) = &opts.step_summary {
        append(summary, &md)?;
    }
    Ok(written)
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
