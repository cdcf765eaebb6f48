//! A saved run's files rendered again (`infermeter report`): any output the table of outputs
//! renders from results ([`Output`]), from its `results.json`, linking the plots that sit
//! where the report will be read, or converts from its `requests.jsonl` (Parquet,
//! [`convert_saved`]); and the report templates every command reads the same way.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::report::{Output, Rendering, ReportTemplate, plot_files};
use crate::results::{read_results, write_atomic};

/// Everything [`render_saved`] needs.
#[derive(Debug, Clone)]
pub struct RenderSettings {
    /// The run's results.json.
    pub results: PathBuf,
    /// What to render: an output rendered from results (report.md, report.html, …).
    pub output: Output,
    /// A report template replacing the built-in one.
    pub template: Option<PathBuf>,
    /// Where the rendering will be written (`None`: shown, beside the results): the plots
    /// beside it are linked.
    pub out: Option<PathBuf>,
}

/// Renders `settings.output` from a saved result.
pub fn render_saved(settings: &RenderSettings) -> Result<String, Error> {
    if let Some(out) = &settings.out {
        let mut inputs = vec![("the results rendered", settings.results.as_path())];
        inputs.extend(settings.template.as_deref().map(|t| ("the template", t)));
        super::outputs::refuse_overwrite(
            &[("--out".to_string(), out.clone())],
            &inputs,
            "write the report to a file of its own (--out FILE)",
        )?;
    }
    let results = read_results(&settings.results)?;
    let template = read_template(settings.template.as_deref())?;
    // Link the plots that sit next to where the report will be read.
    let beside = settings.out.as_deref().unwrap_or(&settings.results);
    let dir = beside.parent().map(Path::to_path_buf).unwrap_or_default();
    let plots: Vec<String> = plot_files(&results)
        .into_iter()
        .filter(|f| dir.join(f).is_file())
        .collect();
    let rendering = Rendering {
        results: &results,
        template: template.as_ref(),
        plots: &plots,
        baseline: None,
    };
    match settings.output.render(&rendering) {
        Some(rendered) => Ok(rendered?),
        None => Err(Error::usage(
            format!("{} is not rendered from results", settings.output.name()),
            "render report.md, report.html, report.pr.md or stages.csv",
        )),
    }
}

/// Writes `settings.output`, an output converted from a run's per-request rows (Parquet), into
/// `settings.out` from the `requests.jsonl` beside the saved `results.json`.
pub fn convert_saved(settings: &RenderSettings) -> Result<(), Error> {
    let name = settings
        .output
        .file()
        .format
        .unwrap_or(settings.output.name());
    let Some(out) = &settings.out else {
        return Err(Error::usage(
            format!("--format {name} writes a binary file, not text to show"),
            "name the file with --out FILE",
        ));
    };
    let dir = settings.results.parent().unwrap_or(Path::new(""));
    let rows = dir.join(Output::Requests.name());
    super::outputs::refuse_overwrite(
        &[("--out".to_string(), out.clone())],
        &[
            ("the results rendered", settings.results.as_path()),
            ("the requests converted", rows.as_path()),
        ],
        "write it to a file of its own (--out FILE)",
    )?;
    let results = read_results(&settings.results)?;
    if !rows.is_file() {
        return Err(Error::usage(
            format!(
                "{} has no {} beside it, which --format {name} is converted from",
                settings.results.display(),
                Output::Requests.name()
            ),
            "run the scenario with --requests-jsonl (or `report { parquet #true }`)",
        ));
    }
    match settings.output.convert(&results, &rows, out) {
        Some(converted) => Ok(converted?),
        None => Err(Error::usage(
            format!("{} is not converted from requests", settings.output.name()),
            "render it without --format parquet",
        )),
    }
}

/// Writes `text` to `path`, atomically.
pub fn write_text(path: &Path, text: &str) -> Result<(), Error> {
    write_atomic(path, text.as_bytes()).map_err(|source| Error::Io {
        action: "write",
        path: path.to_path_buf(),
        source,
    })
}

/// A template file, named by its path, when one is given.
pub fn read_template(path: Option<&Path>) -> Result<Option<ReportTemplate>, Error> {
    path.map(|p| {
        crate::files::read_regular_text(p, crate::files::MAX_TEXT_FILE)
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
