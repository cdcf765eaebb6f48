//! [`compare_results`]: the whole of `infermeter compare` as one function — read the runs
//! (finished ones only), settle the tolerances (the scenario's, recorded with the newest run,
//! then the caller's), make the trend when there are more than two, refuse runs of different
//! plans or without a shared stage, draw the plots — and a [`CompareReport`] whose
//! [`check`](CompareReport::check) says what the comparison comes to (a regression, an
//! undecided metric counted as the caller says) and which [`render`](CompareReport::render)s
//! as text, Markdown or JSON.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::Error;
use crate::metrics::Agreement;
use crate::report::{
    CompareOptions, Comparison, Tolerances, Trend, compare, compare_plot_path, compare_svgs,
    render_agreement_markdown, render_agreement_text, render_compare_markdown, render_compare_text,
    trend,
};
use crate::results::{Results, read_results, write_atomic};
use crate::sla::{Metric, Window};
use crate::units::Percent;

/// What a metric whose change cannot be decided does to the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UndecidedAs {
    /// Nothing: only a regression shown fails (undecided metrics are listed).
    #[default]
    Pass,
    /// A regression: no regression may go unnoticed.
    Fail,
    /// Its own verdict, inconclusive (exit 4).
    Inconclusive,
}

/// How a comparison is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFormat {
    Text,
    /// Through `templates/compare.md.j2`, or the caller's template.
    Markdown,
    /// The comparison (and trend), for dashboards.
    Json,
}

/// How much a metric may move before it counts as changed: `5%` for every metric,
/// `ttft.p95=10%` for one, `itl=15%` for all of a metric's aggregations.
#[derive(Debug, Clone, PartialEq)]
pub struct Tolerance {
    /// `None`: every metric.
    pub metric: Option<String>,
    /// A fraction (0.05 = 5 %).
    pub fraction: f64,
}

/// A [`Tolerance`] that does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToleranceError {
    #[error("unknown metric `{0}` (e.g. ttft.p95=10%)")]
    UnknownMetric(String),
    #[error(transparent)]
    Percent(#[from] crate::units::UnitError),
}

impl FromStr for Tolerance {
    type Err = ToleranceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (metric, value) = match s.split_once('=') {
            Some((m, v)) => (Some(m.trim().to_string()), v),
            None => (None, s),
        };
        if let Some(m) = &metric {
            let base = m.split('.').next().unwrap_or(m);
            if Metric::from_name(base).is_none() {
                return Err(ToleranceError::UnknownMetric(m.clone()));
            }
        }
        let fraction = value.parse::<Percent>()?.0;
        Ok(Tolerance { metric, fraction })
    }
}

/// Everything [`compare_results`] needs.
#[derive(Debug, Clone)]
pub struct CompareSettings {
    /// The baseline's results.json, then the current run's; more make a trend (the newest
    /// is compared with the one before it).
    pub results: Vec<PathBuf>,
    /// Tolerances over the scenario's; later ones win.
    pub tolerances: Vec<Tolerance>,
    /// Confidence of the change intervals.
    pub confidence: f64,
    pub undecided: UndecidedAs,
    /// Compare even when the plan hashes differ.
    pub allow_different_plans: bool,
    /// A Markdown template replacing the built-in one, read before anything is written.
    pub template: Option<PathBuf>,
    /// Draw both runs together: the first plot here, the others beside it.
    pub plot: Option<PathBuf>,
    /// Compare each stage's steady-state window instead of the whole stage.
    pub window: Window,
    /// `--min-agreement`: the share of identical answers (a fraction) below which the
    /// current run counts as regressed (docs/quality.md).
    pub min_agreement: Option<f64>,
    /// Two configurations of one run (`--configs A B`): its stages on each, compared as two
    /// runs (`compare_configs.rs`).
    pub configs: Option<(String, String)>,
}

impl CompareSettings {
    /// Settings with every default, for `results`.
    pub fn new(results: Vec<PathBuf>) -> Self {
        CompareSettings {
            results,
            tolerances: Vec::new(),
            confidence: 0.95,
            undecided: UndecidedAs::Pass,
            allow_different_plans: false,
            template: None,
            plot: None,
            window: Window::Stage,
            min_agreement: None,
            configs: None,
        }
    }
}

/// A comparison that was carried out.
#[derive(Debug, Clone)]
pub struct CompareReport {
    /// The newest run against the one before it.
    pub comparison: Comparison,
    /// Every run in time order, with more than two.
    pub trend: Option<Trend>,
    /// With `plot`: each plot written, with what it shows (empty: nothing to draw).
    pub plots: Option<Vec<(String, PathBuf)>>,
    /// The answers of the two runs paired by prompt, when either kept its answers.
    pub agreement: Option<Agreement>,
    template: Option<String>,
    undecided: UndecidedAs,
}

/// Compares the runs `settings` names. `Err` when they cannot be compared (an unreadable or
/// unfinished result, different plans, no shared stage, a template or plot that cannot be
/// read or written); otherwise the report, whose [`CompareReport::check`] is the verdict.
pub fn compare_results(settings: &CompareSettings) -> Result<CompareReport, Error> {
    let mut read = settings
        .results
        .iter()
        .map(|p| read_finished(p).and_then(|r| in_window(r, settings.window, p)))
        .collect::<Result<Vec<_>, Error>>()?;
    let mut paths: Vec<&Path> = settings.results.iter().map(PathBuf::as_path).collect();
    if let Some((a, b)) = &settings.configs {
        let ([run], [path]) = (read.as_slice(), paths.as_slice()) else {
            return Err(Error::usage(
                "--configs compares two configurations of one run",
                "give one results.json with --configs A B",
            ));
        };
        let (a, b) = super::compare_configs::split(run, a, b)?;
        paths = vec![*path, *path];
        read = vec![a, b];
    }
    let mut runs: Vec<(Results, &Path)> = read.into_iter().zip(paths).collect();
    let results: Vec<Results> = runs.iter().map(|(r, _)| r.clone()).collect();
    let opts = CompareOptions {
        tolerances: tolerances(&results, &settings.tolerances),
        confidence: settings.confidence,
    };
    let trend = (runs.len() > 2).then(|| trend(results, &opts));
    if trend.is_some() {
        // The trend sorted them by start time: compare the newest with the one before.
        runs.sort_by(|a, b| a.0.started_at.cmp(&b.0.started_at));
        let last = runs.len().saturating_sub(2);
        runs.drain(..last);
    }
    let mut runs = runs.into_iter();
    let (Some((baseline, base_path)), Some((current, cur_path))) = (runs.next(), runs.next())
    else {
        return Err(Error::usage(
            "compare needs two results at least",
            "give the baseline's results.json, then the current run's",
        ));
    };
    if baseline.plan_hash != current.plan_hash && !settings.allow_different_plans {
        return Err(Error::usage(
            format!(
                "the runs used different plans (baseline {} vs current {}), so their numbers \
                 are not comparable",
                baseline.plan_hash, current.plan_hash
            ),
            "rerun with the same scenario and seed, or pass --allow-different-plans",
        ));
    }
    // Read before anything is written, so a bad template changes nothing.
    let template = super::read_template(settings.template.as_deref())?.map(|t| t.text);
    let mut comparison = trend
        .as_ref()
        .map_or_else(|| compare(&baseline, &current, &opts), |t| t.latest.clone());
    let agreement = super::agreement::agreement_of(
        (base_path, &baseline),
        (cur_path, &current),
        settings.confidence,
        opts.tolerances.of("accuracy"),
    )?;
    if let Some(a) = &agreement {
        super::agreement::flag(&mut comparison, a, settings.min_agreement);
    }
    super::agreement::gateable(agreement.as_ref(), settings.min_agreement)?;
    if comparison.common_stages() == 0 {
        return Err(Error::usage(
            "the two runs have no stage in common, so there is nothing to compare",
            "compare runs of the same scenario (stage names must match)",
        ));
    }
    let plots = match &settings.plot {
        Some(file) => Some(write_plots(file, &baseline, &current, settings)?),
        None => None,
    };
    Ok(CompareReport {
        comparison,
        trend,
        plots,
        agreement,
        template,
        undecided: settings.undecided,
    })
}

impl CompareReport {
    /// `Ok` when no watched metric is shown worse beyond its tolerance and the undecided
    /// ones count as a pass; otherwise the error that says which (and so the exit code).
    pub fn check(&self) -> Result<(), Error> {
        let c = &self.comparison;
        if c.regressed() {
            return Err(Error::Regressed {
                metrics: c.regressions.clone(),
            });
        }
        if c.undecided.is_empty() {
            return Ok(());
        }
        match self.undecided {
            UndecidedAs::Pass => Ok(()),
            UndecidedAs::Fail => Err(Error::Regressed {
                metrics: c.undecided.clone(),
            }),
            UndecidedAs::Inconclusive => Err(Error::CompareInconclusive {
                metrics: c.undecided.clone(),
            }),
        }
    }

    /// The comparison (and trend) as `format` shows it; Markdown through the settings'
    /// template, when one was given.
    pub fn render(&self, format: CompareFormat) -> Result<String, Error> {
        let (c, t) = (&self.comparison, self.trend.as_ref());
        let a = self.agreement.as_ref();
        Ok(match format {
            CompareFormat::Text => {
                render_compare_text(c, t)
                    + a.map(render_agreement_text).unwrap_or_default().as_str()
            }
            CompareFormat::Markdown => {
                render_compare_markdown(c, t, self.template.as_deref())?
                    + a.map(render_agreement_markdown)
                        .unwrap_or_default()
                        .as_str()
            }
            CompareFormat::Json => {
                // The agreement is one more key beside the comparison's (or the trend's).
                let value = match t {
                    Some(t) => serde_json::to_value(t),
                    None => serde_json::to_value(c),
                }
                .map(|mut v| {
                    if let (Some(obj), Some(a)) = (v.as_object_mut(), a) {
                        obj.insert("agreement".into(), serde_json::json!(a));
                    }
                    v
                })
                .and_then(|v| serde_json::to_string_pretty(&v));
                value.map_err(|e| Error::Io {
                    action: "write the comparison as JSON to",
                    path: "standard output".into(),
                    source: e.into(),
                })? + "\n"
            }
        })
    }
}

/// A result to compare: readable, and of a run that finished.
/// The run with each stage replaced by its steady-state window (`--window steady`); a stage
/// without one is refused, naming it, rather than compared whole under the window's name.
fn in_window(mut r: Results, window: Window, path: &Path) -> Result<Results, Error> {
    if window == Window::Stage {
        return Ok(r);
    }
    for s in &mut r.stages {
        let Some(view) = s.steady_view() else {
            return Err(Error::usage(
                format!(
                    "stage `{}` of {} has no steady-state window",
                    s.name,
                    path.display()
                ),
                "compare whole stages (drop --window steady), or run the stage long enough \
                 for its load to hold steady (docs/metrics.md, \"Steady state\")",
            ));
        };
        *s = view;
    }
    Ok(r)
}

fn read_finished(path: &Path) -> Result<Results, Error> {
    let r = read_results(path)?;
    if r.complete {
        return Ok(r);
    }
    Err(Error::usage(
        format!(
            "{} is the result of a run that did not finish (\"complete\": false): {}",
            path.display(),
            r.error.as_deref().unwrap_or("no reason given")
        ),
        "compare the results of finished runs",
    ))
}

/// The scenario's tolerances (recorded with the newest run), then the caller's.
fn tolerances(runs: &[Results], given: &[Tolerance]) -> Tolerances {
    let newest = runs
        .iter()
        .max_by(|a, b| a.started_at.cmp(&b.started_at))
        .map(|r| r.compare_tolerances.clone())
        .unwrap_or_default();
    let mut tolerances = Tolerances::new(newest.default.unwrap_or(0.05));
    tolerances.metrics = newest.metrics;
    for t in given {
        match &t.metric {
            Some(m) => {
                tolerances.metrics.insert(m.clone(), t.fraction);
            }
            None => tolerances.default = t.fraction,
        }
    }
    tolerances
}

/// Writes `--plot`'s SVGs: the first to `file`, the others beside it; none when one of them
/// would be written over an input (a results file, the template).
fn write_plots(
    file: &Path,
    baseline: &Results,
    current: &Results,
    settings: &CompareSettings,
) -> Result<Vec<(String, PathBuf)>, Error> {
    let plots: Vec<(String, PathBuf, String)> = compare_svgs(baseline, current)?
        .into_iter()
        .enumerate()
        .map(|(i, (group, svg))| {
            let path = compare_plot_path(file, i, &group);
            (group, path, svg)
        })
        .collect();
    let outputs: Vec<(String, PathBuf)> = plots
        .iter()
        .map(|(group, path, _)| (format!("the plot of {group}"), path.clone()))
        .collect();
    let mut inputs: Vec<(&str, &Path)> = settings
        .results
        .iter()
        .map(|p| ("a result compared", p.as_path()))
        .collect();
    inputs.extend(settings.template.as_deref().map(|t| ("the template", t)));
    super::outputs::refuse_overwrite(
        &outputs,
        &inputs,
        "give --plot a file name of its own (FILE.svg, not a results file)",
    )?;
    let mut written = Vec::new();
    for (group, path, svg) in plots {
        write_atomic(&path, svg.as_bytes()).map_err(|source| Error::Io {
            action: "write",
            path: path.clone(),
            source,
        })?;
        written.push((group, path));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_are_a_default_or_per_metric() {
        let t = |s: &str| s.parse::<Tolerance>();
        let per = |m: Option<&str>, fraction| Tolerance {
            metric: m.map(str::to_string),
            fraction,
        };
        assert_eq!(t("5%"), Ok(per(None, 0.05)));
        assert_eq!(t("ttft.p95=10%"), Ok(per(Some("ttft.p95"), 0.1)));
        assert!(t("bogus=5%").is_err());
        assert!(t("5").is_err());
    }
}
