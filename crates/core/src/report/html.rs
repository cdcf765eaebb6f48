//! `report.html`: the report as one self-contained page — the same view model as report.md
//! (run metadata and provenance, the SLA table with outcomes and intervals, every stage with
//! its validity reasons, tables and plots, the latency profiles) with every SVG inline, no
//! network, no external asset, and `compare`'s output against the scenario's baseline when
//! there is one. Rendered through minijinja with HTML auto-escaping; its one inline script
//! only records each plot's laid-out size (for the browser test) and changes nothing shown.

use std::collections::BTreeMap;

use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value, context};

use super::compare::Comparison;
use super::distribution::distribution_svg;
use super::plots::{render_plots, stage_verdicts};
use super::view::build_view;
use super::{ReportError, profile_svg, profiles};
use crate::results::Results;

/// The built-in HTML template.
pub const HTML_TEMPLATE: &str = include_str!("../../templates/report.html.j2");

/// A baseline to show the run against: its results and `compare`'s verdict.
#[derive(Debug, Clone, Copy)]
pub struct HtmlBaseline<'a> {
    pub results: &'a Results,
    pub comparison: &'a Comparison,
}

/// `text` escaped for HTML, with the little Markdown the view's strings use made into tags:
/// `` `code` ``, `**strong**`, and the `<sub>` around intervals.
fn md(text: &str) -> Value {
    let escaped = crate::escape::html(text);
    let mut out = String::with_capacity(escaped.len() + 16);
    let mut code = false;
    let mut strong = false;
    let mut rest = escaped.as_str();
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("**") {
            out.push_str(if strong { "</strong>" } else { "<strong>" });
            strong = !strong;
            rest = &rest[2..];
        } else if c == '`' {
            out.push_str(if code { "</code>" } else { "<code>" });
            code = !code;
            rest = &rest[1..];
        } else if let Some(r) = rest.strip_prefix("&lt;sub&gt;") {
            out.push_str("<sub>");
            rest = r;
        } else if let Some(r) = rest.strip_prefix("&lt;/sub&gt;") {
            out.push_str("</sub>");
            rest = r;
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if code {
        out.push_str("</code>");
    }
    if strong {
        out.push_str("</strong>");
    }
    Value::from_safe_string(out)
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    // Every value from outside through the one HTML escape (control characters and bidi
    // overrides shown, secrets masked), not only minijinja's.
    env.set_formatter(|out, _state, value| {
        let text = match value.as_str() {
            Some(s) if value.is_safe() => return out.write_str(s).map_err(Into::into),
            Some(s) => crate::escape::html(s),
            None => crate::escape::html(&value.to_string()),
        };
        out.write_str(&text).map_err(Into::into)
    });
    env.add_filter("md", |s: String| md(&s));
    env
}

/// The page for `results`, against `baseline` when given.
pub fn render_html(
    results: &Results,
    baseline: Option<HtmlBaseline<'_>>,
) -> Result<String, ReportError> {
    let plots = render_plots(results)?;
    let names: Vec<String> = plots.iter().map(|(n, _)| n.clone()).collect();
    let mut svgs: BTreeMap<String, Value> = plots
        .into_iter()
        .map(|(n, svg)| (n, Value::from_safe_string(svg)))
        .collect();
    // The configurations' plot is the page's only (no file of its own): its rows are one
    // run's, read beside the table.
    if let Some(svg) = super::configs_svg(results) {
        svgs.insert(
            super::CONFIGS_PLOT.to_string(),
            Value::from_safe_string(svg),
        );
    }
    let view = build_view(results, &names);
    // Telemetry's server plot of each stage that has one, shown with the stage.
    let server: BTreeMap<String, String> = results
        .stages
        .iter()
        .map(|s| (s.name.clone(), super::server_timeline_file_name(&s.name)))
        .filter(|(_, file)| svgs.contains_key(file))
        .collect();
    let groups = profiles(results);
    let mut overlays: Vec<(String, Value)> = Vec::new();
    if let Some(b) = baseline {
        for s in &results.stages {
            let Some(base) = b.results.stages.iter().find(|x| x.name == s.name) else {
                continue;
            };
            let verdicts = stage_verdicts(results, &s.name);
            let title = format!("{}: latency distribution, baseline and current", s.name);
            if let Some(svg) =
                distribution_svg(&title, &[("baseline", base), ("current", s)], &verdicts)?
            {
                overlays.push((s.name.clone(), Value::from_safe_string(svg)));
            }
        }
        let base_groups = profiles(b.results);
        for g in &groups {
            if let Some(bg) = base_groups
                .iter()
                .find(|x| x.group == g.group && x.axis == g.axis)
            {
                let svg = profile_svg(&[("baseline", bg), ("current", g)])?;
                overlays.push((format!("profile {}", g.group), Value::from_safe_string(svg)));
            }
        }
    }
    let env = environment();
    let tmpl = env.template_from_str(HTML_TEMPLATE)?;
    Ok(tmpl.render(context! {
        view => Value::from(Serde(&view)),
        results => Value::from(Serde(results)),
        profiles => Value::from(Serde(&groups)),
        svgs => svgs,
        server_plots => server,
        searches => Value::from(Serde(&results.searches)),
        frontiers => Value::from(Serde(&super::frontier_views(results))),
        cmp => baseline.map(|b| Value::from(Serde(b.comparison))),
        baseline_started => baseline.map(|b| b.results.started_at.clone()),
        overlays => overlays,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_markdown_becomes_tags_and_everything_else_is_escaped() {
        let v = md("`abc` **x** 12 <sub>[1, 2]</sub> <script>");
        assert_eq!(
            v.as_str().unwrap(),
            "<code>abc</code> <strong>x</strong> 12 <sub>[1, 2]</sub> &lt;script&gt;"
        );
    }
}
