//! `infermeter compare BASELINE.json CURRENT.json [MORE.json…]`: is the current run a
//! regression, beyond the noise? Exit 0 when no watched metric is shown worse beyond its
//! tolerance, 1 when one is, 4 when none is but some could not be decided and
//! `--inconclusive inconclusive` asks to say so, 2 when the runs did not apply the same plan
//! (unless `--allow-different-plans`), share no stage, or an input is unreadable. With more
//! than two results, the newest is compared with the one before it and a trend table shows
//! them all in time order. `--plot FILE.svg` also draws both runs' latency profiles.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::report::read_template;
use crate::error::Error;
use crate::report::{
    CompareOptions, Tolerances, compare, compare_plot_path, compare_svgs, render_compare_markdown,
    render_compare_text, trend,
};
use crate::results::{Results, read_results};
use crate::sla::Metric;
use crate::units::Percent;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Markdown,
    Text,
    /// The comparison (and trend) as JSON, for dashboards.
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UndecidedAs {
    /// Exit 0 unless a regression is shown (undecided metrics are listed).
    Pass,
    /// Exit 1 when a metric is undecided: no regression may go unnoticed.
    Fail,
    /// Exit 4 when a metric is undecided.
    Inconclusive,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline run's results.json, then the current run's; more runs give a trend (the
    /// newest is compared with the one before it).
    #[arg(required = true, num_args = 2.., value_name = "RESULTS.json")]
    pub results: Vec<PathBuf>,
    /// How much a metric may move before it counts as changed: `5%` for every metric, or
    /// `METRIC=PERCENT` for one (`ttft.p95=10%`, or `itl=15%` for all of ITL's). Repeatable.
    /// Default: the scenario's `report { tolerance … }` recorded with the newest run, else 5%.
    #[arg(long, value_name = "[METRIC=]PERCENT", value_parser = parse_tolerance)]
    pub tolerance: Vec<(Option<String>, f64)>,
    /// Confidence of the change intervals.
    #[arg(long, value_name = "PERCENT", default_value = "95%", value_parser = parse_confidence)]
    pub confidence: f64,
    /// What a metric whose change cannot be decided (its interval straddles the tolerance)
    /// does to the exit code.
    #[arg(long, value_enum, default_value_t = UndecidedAs::Pass)]
    pub inconclusive: UndecidedAs,
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
    /// Compare even when the plan hashes differ (the workloads are not the same).
    #[arg(long)]
    pub allow_different_plans: bool,
    /// A minijinja template to use instead of the built-in one (markdown format).
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Draw both runs together: their latency profiles (sweeps, searches) and each shared
    /// stage's latency distributions. The first plot goes to FILE, the others beside it as
    /// FILE-stem-NAME.svg (NAME: a profile group, or stage-STAGE-latency).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// `5%` or `ttft.p95=10%`.
fn parse_tolerance(s: &str) -> Result<(Option<String>, f64), String> {
    let (metric, value) = match s.split_once('=') {
        Some((m, v)) => (Some(m.trim().to_string()), v),
        None => (None, s),
    };
    if let Some(m) = &metric {
        let base = m.split('.').next().unwrap_or(m);
        if Metric::from_name(base).is_none() {
            return Err(format!("unknown metric `{m}` (e.g. ttft.p95=10%)"));
        }
    }
    let p = value.parse::<Percent>().map_err(|e| e.to_string())?;
    Ok((metric, p.0))
}

fn parse_confidence(s: &str) -> Result<f64, String> {
    let p = s.parse::<Percent>().map_err(|e| e.to_string())?.0;
    if (0.5..1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("{s} is not from 50% to below 100%"))
    }
}

pub fn run(args: &CompareArgs) -> Result<(), Error> {
    let mut runs = Vec::with_capacity(args.results.len());
    for path in &args.results {
        let r = read_results(path)?;
        if !r.complete {
            return Err(Error::usage(
                format!(
                    "{} is the result of a run that did not finish (\"complete\": false): {}",
                    path.display(),
                    r.error.as_deref().unwrap_or("no reason given")
                ),
                "compare the results of finished runs",
            ));
        }
        runs.push(r);
    }
    // The scenario's (recorded with the newest run), then the command line's.
    let newest = runs
        .iter()
        .max_by(|a, b| a.started_at.cmp(&b.started_at))
        .map(|r| r.compare_tolerances.clone())
        .unwrap_or_default();
    let mut tolerances = Tolerances::new(newest.default.unwrap_or(0.05));
    tolerances.metrics = newest.metrics;
    for (metric, value) in &args.tolerance {
        match metric {
            Some(m) => {
                tolerances.metrics.insert(m.clone(), *value);
            }
            None => tolerances.default = *value,
        }
    }
    let opts = CompareOptions {
        tolerances,
        confidence: args.confidence,
    };
    let trend = (runs.len() > 2).then(|| trend(runs.clone(), &opts));
    let (baseline, current) = match &trend {
        // The trend sorted them by start time: compare the newest with the one before.
        Some(_) => {
            let mut sorted = runs.clone();
            sorted.sort_by(|a, b| a.started_at.cmp(&b.started_at));
            let n = sorted.len();
            (sorted[n - 2].clone(), sorted[n - 1].clone())
        }
        None => (runs[0].clone(), runs[1].clone()),
    };
    if baseline.plan_hash != current.plan_hash && !args.allow_different_plans {
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
    let template = match args.format {
        CompareFormat::Markdown => read_template(args.template.as_deref())?,
        CompareFormat::Text | CompareFormat::Json => None,
    };
    let cmp = trend
        .as_ref()
        .map_or_else(|| compare(&baseline, &current, &opts), |t| t.latest.clone());
    if cmp.common_stages() == 0 {
        return Err(Error::usage(
            "the two runs have no stage in common, so there is nothing to compare",
            "compare runs of the same scenario (stage names must match)",
        ));
    }
    if let Some(file) = &args.plot {
        write_plots(file, &baseline, &current)?;
    }
    let out = match args.format {
        CompareFormat::Text => render_compare_text(&cmp, trend.as_ref()),
        CompareFormat::Markdown => {
            render_compare_markdown(&cmp, trend.as_ref(), template.as_deref())?
        }
        CompareFormat::Json => {
            let value = match &trend {
                Some(t) => serde_json::to_string_pretty(t),
                None => serde_json::to_string_pretty(&cmp),
            };
            value.map_err(|e| Error::Io {
                action: "write the comparison as JSON to",
                path: "standard output".into(),
                source: e.into(),
            })? + "\n"
        }
    };
    print!("{out}");
    if cmp.regressed() {
        return Err(Error::Regressed {
            metrics: cmp.regressions.clone(),
        });
    }
    if !cmp.undecided.is_empty() {
        match args.inconclusive {
            UndecidedAs::Pass => {}
            UndecidedAs::Fail => {
                return Err(Error::Regressed {
                    metrics: cmp.undecided.clone(),
                });
            }
            UndecidedAs::Inconclusive => {
                return Err(Error::CompareInconclusive {
                    metrics: cmp.undecided.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Writes `compare --plot`'s SVGs.
fn write_plots(file: &std::path::Path, baseline: &Results, current: &Results) -> Result<(), Error> {
    let svgs = compare_svgs(baseline, current)?;
    if svgs.is_empty() {
        eprintln!(
            "warning: --plot: the runs share no latency profile and no stage with latency \
             samples, so there is nothing to draw"
        );
        return Ok(());
    }
    for (i, (group, svg)) in svgs.iter().enumerate() {
        let path = compare_plot_path(file, i, group);
        crate::results::write_atomic(&path, svg.as_bytes()).map_err(|source| Error::Io {
            action: "write",
            path: path.clone(),
            source,
        })?;
        eprintln!("plot ({group}): {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_are_a_default_or_per_metric() {
        assert_eq!(parse_tolerance("5%"), Ok((None, 0.05)));
        assert_eq!(
            parse_tolerance("ttft.p95=10%"),
            Ok((Some("ttft.p95".into()), 0.1))
        );
        assert!(parse_tolerance("bogus=5%").is_err());
        assert!(parse_tolerance("5").is_err());
    }
}
