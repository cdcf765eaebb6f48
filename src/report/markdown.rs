//! The Markdown report: [`ReportView`] and the raw results rendered through minijinja with
//! strict undefined behaviour (a typo in a template is an error, not an empty cell).

use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior, Value, context, syntax::SyntaxConfig};

use super::ReportError;
use super::view::build_view;
use crate::results::Results;

/// The built-in report template.
pub const REPORT_TEMPLATE: &str = include_str!("../../templates/report.md.j2");
/// The built-in comparison template.
pub const COMPARE_TEMPLATE: &str = include_str!("../../templates/compare.md.j2");

/// An environment with the house settings: strict undefined, block tags on their own lines
/// leave no blank lines behind, the file's final newline kept, no auto-escaping (the output is Markdown, not HTML).
pub(crate) fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    if let Ok(syntax) = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env
}

/// Renders `template` (or the built-in one) with `view` (display strings) and `results` (the
/// raw results) in its context.
pub fn render_markdown(results: &Results, template: Option<&str>) -> Result<String, ReportError> {
    render_markdown_with_plots(results, template, &[])
}

/// Like [`render_markdown`], linking the named plot files (as written by
/// [`super::write_plots`], relative to the report).
pub fn render_markdown_with_plots(
    results: &Results,
    template: Option<&str>,
    plot_files: &[String],
) -> Result<String, ReportError> {
    let mut env = environment();
    env.add_template_owned("report.md", template.unwrap_or(REPORT_TEMPLATE).to_string())?;
    let view = build_view(results, plot_files);
    let out = env.get_template("report.md")?.render(context! {
        view => Value::from(Serde(&view)),
        results => Value::from(Serde(results)),
        profiles => Value::from(Serde(&super::profiles(results))),
        plot_files => Value::from(Serde(plot_files)),
        searches => Value::from(Serde(&results.searches)),
    })?;
    Ok(out)
}

/// The report as a pull-request comment: the Markdown report without its images (a comment
/// cannot reach files in the run's directory, so it links none), closed by a line naming
/// the files to look for in the run's artifacts.
pub fn render_pr_comment(results: &Results, template: Option<&str>) -> Result<String, ReportError> {
    let mut md = render_markdown_with_plots(results, template, &[])?;
    if !md.ends_with('\n') {
        md.push('\n');
    }
    md.push_str(
        "\n<sub>Plots, the full report (`report.html`) and `results.json` are in this run's \
         artifacts.</sub>\n",
    );
    Ok(md)
}
