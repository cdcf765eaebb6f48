//! `infermeter report RESULTS.json`: re-renders the report of a past run — Markdown (linking
//! the plots beside it), the self-contained HTML page, the pull-request comment, or the
//! per-stage CSV.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::Error;
use crate::report::{
    ReportTemplate, cdf_file_name, profiles, render_html, render_pr_comment, render_report,
    stages_csv, timeline_file_name,
};
use crate::results::read_results;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The results.json of a run.
    pub results: PathBuf,
    /// A minijinja template to use instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Write the report here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// What to render: the Markdown report, the self-contained HTML page (plots inline), the
    /// pull-request comment (Markdown without links out of the run's directory), or the
    /// per-stage metrics as CSV.
    #[arg(long, value_enum, default_value_t = ReportFormat::Markdown)]
    pub format: ReportFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Markdown,
    Html,
    PrComment,
    Csv,
}

pub fn run(args: &ReportArgs) -> Result<(), Error> {
    let results = read_results(&args.results)?;
    let template = read_report_template(args.template.as_deref())?;
    // Link the plots that sit next to where the report will be read.
    let report_dir = match &args.out {
        Some(out) => out.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => args
            .results
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    };
    let plots: Vec<String> = results
        .stages
        .iter()
        .flat_map(|s| [cdf_file_name(&s.name), timeline_file_name(&s.name)])
        .chain(profiles(&results).into_iter().map(|g| g.plot))
        .filter(|f| report_dir.join(f).is_file())
        .collect();
    let md = match args.format {
        ReportFormat::Markdown => render_report(&results, template.as_ref(), &plots)?,
        ReportFormat::Html => render_html(&results, None)?,
        ReportFormat::PrComment => render_pr_comment(&results, template.as_ref())?,
        ReportFormat::Csv => stages_csv(&results),
    };
    match &args.out {
        Some(out) => crate::results::write_atomic(out, md.as_bytes()).map_err(|source| Error::Io {
            action: "write",
            path: out.clone(),
            source,
        }),
        None => {
            print!("{md}");
            Ok(())
        }
    }
}

/// A template file's text, when one is given.
pub(crate) fn read_template(path: Option<&Path>) -> Result<Option<String>, Error> {
    Ok(read_report_template(path)?.map(|t| t.text))
}

/// A template file, named by its path, when one is given.
pub(crate) fn read_report_template(path: Option<&Path>) -> Result<Option<ReportTemplate>, Error> {
    path.map(|p| {
        crate::files::read_text(p, crate::files::MAX_TEXT_FILE)
            .map(|text| ReportTemplate {
                name: p.display().to_string(),
                text,
            })
            .map_err(|source| Error::Template {
                path: p.to_path_buf(),
                source,
            })
    })
    .transpose()
}
