//! The Markdown report: [`ReportView`](super::ReportView) and the raw results rendered through
//! minijinja with strict undefined behaviour (a typo in a template is an error, not an empty
//! cell), within a fuel budget (a template that loops forever runs out instead of hanging the
//! run). [`check_template`] tries a user's template before the run, so a broken one costs no
//! benchmark.
//!
//! Every value a template prints is escaped for GitHub-flavoured Markdown (see
//! [`super::templates`]): names, ids and messages come from the scenario, the server and
//! results files, and report.md is posted as a pull-request comment. `{{ x|code }}` prints a
//! value as code; `{{ x|safe }}` prints it as it is (a user's template may ask for that).

use minijinja::value::Serde;
use minijinja::{ErrorKind, Value, context};

use super::ReportError;
use super::profile::profiles;
use super::templates::environment;
use super::view::build_view;
use crate::results::Results;

/// The built-in report template.
pub const REPORT_TEMPLATE: &str = include_str!("../../templates/report.md.j2");
/// The built-in comparison template.
pub const COMPARE_TEMPLATE: &str = include_str!("../../templates/compare.md.j2");

/// A report template and the name its errors show (its file, as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportTemplate {
    pub name: String,
    pub text: String,
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
    let template = template.map(|text| ReportTemplate {
        name: "report template".into(),
        text: text.to_string(),
    });
    render_report(results, template.as_ref(), plot_files)
}

/// Like [`render_markdown_with_plots`], with a named template (its errors name the file).
pub fn render_report(
    results: &Results,
    template: Option<&ReportTemplate>,
    plot_files: &[String],
) -> Result<String, ReportError> {
    let mut env = environment();
    let (name, text) = match template {
        Some(t) => (t.name.clone(), t.text.clone()),
        None => (
            "templates/report.md.j2 (built in)".into(),
            REPORT_TEMPLATE.into(),
        ),
    };
    env.add_template_owned(name.clone(), text)?;
    let view = build_view(results, plot_files);
    let out = env.get_template(&name)?.render(context! {
        view => Value::from(Serde(&view)),
        results => Value::from(Serde(results)),
        profiles => Value::from(Serde(&profiles(results))),
        plot_files => Value::from(Serde(plot_files)),
        searches => Value::from(Serde(&results.searches)),
    })?;
    Ok(out)
}

/// The built-in pull-request comment template.
pub const PR_COMMENT_TEMPLATE: &str = include_str!("../../templates/report.pr.md.j2");

/// The report as a pull-request comment: the verdict, the SLA table, untrusted stages'
/// reasons, the profiles' knees, a folded table of latency per stage and one line of
/// provenance, linking nothing (a comment cannot reach the run's files). With `template`, that
/// report template instead, without its images, and the line naming the artifacts.
pub fn render_pr_comment(
    results: &Results,
    template: Option<&ReportTemplate>,
) -> Result<String, ReportError> {
    if let Some(t) = template {
        let mut md = render_report(results, Some(t), &[])?;
        if !md.ends_with('\n') {
            md.push('\n');
        }
        md.push_str(
            "\n<sub>Plots, the full report (`report.html`) and `results.json` are in this run's \
             artifacts.</sub>\n",
        );
        return Ok(md);
    }
    let built_in = ReportTemplate {
        name: "templates/report.pr.md.j2 (built in)".into(),
        text: PR_COMMENT_TEMPLATE.into(),
    };
    render_report(results, Some(&built_in), &[])
}

/// Tries `template` before a run: it must parse, and render `sample` (results shaped like the
/// run's, with every number zero) without an undefined name, an unknown filter, test,
/// function or method, and within its fuel. Other failures are left to the real render, since
/// they may come from the sample's zeros (a division, say) rather than from the template.
pub fn check_template(template: &ReportTemplate, sample: &Results) -> Result<(), ReportError> {
    match render_report(sample, Some(template), &[]) {
        Ok(_) => Ok(()),
        Err(ReportError::Template { source, .. }) if !is_template_fault(source.kind()) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Errors that come from the template whatever the numbers.
fn is_template_fault(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::SyntaxError
            | ErrorKind::UndefinedError
            | ErrorKind::UnknownFilter
            | ErrorKind::UnknownTest
            | ErrorKind::UnknownFunction
            | ErrorKind::UnknownMethod
            | ErrorKind::TemplateNotFound
            | ErrorKind::BadEscape
            | ErrorKind::InvalidDelimiter
            | ErrorKind::TooManyArguments
            | ErrorKind::MissingArgument
            | ErrorKind::OutOfFuel
    )
}

#[cfg(test)]
mod tests {
    use super::super::templates::configure;
    use super::*;
    use crate::report::TEMPLATE_FUEL;
    use minijinja::Environment;

    fn sample() -> Results {
        serde_json::from_str(include_str!("../../../../tests/data/results/current.json")).unwrap()
    }

    fn named(text: &str) -> ReportTemplate {
        ReportTemplate {
            name: "t/custom.md.j2".into(),
            text: text.into(),
        }
    }

    #[test]
    fn values_are_escaped_and_the_views_own_marks_kept() {
        assert_eq!(
            super::super::templates::view_text(
                "12 ms <sub>[1, 2]</sub> `cl100k_base` **x** <img src=x>|@a"
            ),
            "12 ms <sub>\\[1, 2\\]</sub> `cl100k_base` **x** &lt;img src=x&gt;\\|@\u{200d}a"
        );
        // A value's own backticks give a code span at most, its text escaped.
        assert_eq!(
            super::super::templates::view_text("a`<b>|c`d"),
            "a<code>&lt;b&gt;\\|c</code>d"
        );
        let t =
            named("{{ results.scenario }} {{ results.scenario|code }} {{ results.scenario|safe }}");
        let mut r = sample();
        r.scenario = "<b>x</b>".into();
        assert_eq!(
            render_report(&r, Some(&t), &[]).unwrap(),
            "&lt;b&gt;x&lt;/b&gt; `<b>x</b>` <b>x</b>"
        );
    }

    #[test]
    fn a_template_that_loops_forever_runs_out_of_fuel() {
        let t = named(
            "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}",
        );
        let err = render_report(&sample(), Some(&t), &[]).unwrap_err();
        assert!(crate::error::chain(&err).contains("fuel"), "{err}");
        assert!(check_template(&t, &sample()).is_err());
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_expression() {
        let t = named("# {{ results.scenario }}\n\n{{ results.stages[0].nope }}\n");
        let err = check_template(&t, &sample()).unwrap_err();
        let msg = crate::error::chain(&err);
        assert!(msg.contains("t/custom.md.j2"), "{msg}");
        assert!(msg.contains("line 3"), "{msg}");
        assert!(msg.contains("nope"), "{msg}");
        assert!(check_template(&named("{% if %}"), &sample()).is_err());
    }

    #[test]
    fn an_undefined_name_is_named_in_a_release_build_too() {
        // As a release build starts: minijinja's debug mode off.
        let mut env = Environment::new();
        env.set_debug(false);
        configure(&mut env);
        env.add_template("t/mine.md.j2", "# x\n{{ nosuch }}\n")
            .unwrap();
        let err = env
            .get_template("t/mine.md.j2")
            .unwrap()
            .render(context! {})
            .unwrap_err();
        let msg = crate::error::chain(&ReportError::from(err));
        assert!(msg.contains("t/mine.md.j2"), "{msg}");
        assert!(msg.contains("line 2"), "{msg}");
        assert!(msg.contains("`nosuch` is undefined"), "{msg}");
    }

    #[test]
    fn the_built_in_template_is_far_within_its_fuel() {
        let mut env = environment();
        env.set_fuel(Some(TEMPLATE_FUEL / 100));
        env.add_template("r", REPORT_TEMPLATE).unwrap();
        let r = sample();
        let view = build_view(&r, &[]);
        env.get_template("r")
            .unwrap()
            .render(context! {
                view => Value::from(Serde(&view)),
                results => Value::from(Serde(&r)),
                profiles => Value::from(Serde(&super::super::profiles(&r))),
                plot_files => Value::from(Serde(&Vec::<String>::new())),
                searches => Value::from(Serde(&r.searches)),
            })
            .unwrap();
    }
}
