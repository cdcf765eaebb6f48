//! `infermeter compare BASELINE.json CURRENT.json`: is the current run a regression?
//! Exit 0 when no watched metric is worse beyond the tolerance, 1 when one is, 2 when the two
//! runs did not apply the same plan (unless `--allow-different-plans`) or an input is unreadable.
//! `--plot FILE.svg` also draws both runs' latency profiles together (exit codes unchanged).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::report::read_template;
use crate::error::Error;
use crate::report::{
    compare, compare_plot_path, compare_profile_svgs, render_compare_markdown, render_compare_text,
};
use crate::results::{Results, read_results};
use crate::units::Percent;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Markdown,
    Text,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline run's results.json.
    pub baseline: PathBuf,
    /// The current run's results.json.
    pub current: PathBuf,
    /// How much a metric may move before it counts as better or worse, e.g. 5%.
    #[arg(long, default_value = "5%", value_parser = parse_percent)]
    pub tolerance: Percent,
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
    /// Compare even when the plan hashes differ (the workloads are not the same).
    #[arg(long)]
    pub allow_different_plans: bool,
    /// A minijinja template to use instead of the built-in one (markdown format).
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Draw both runs' latency profiles (sweeps, searches) on one SVG; further shared
    /// profile groups go beside it as FILE-stem-GROUP.svg.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

fn parse_percent(s: &str) -> Result<Percent, String> {
    s.parse::<Percent>().map_err(|e| e.to_string())
}

pub fn run(args: &CompareArgs) -> Result<(), Error> {
    let baseline = read_results(&args.baseline)?;
    let current = read_results(&args.current)?;
    for (path, r) in [(&args.baseline, &baseline), (&args.current, &current)] {
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
    }
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
        CompareFormat::Text => None,
    };
    if let Some(file) = &args.plot {
        write_plots(file, &baseline, &current)?;
    }
    let cmp = compare(&baseline, &current, args.tolerance.0);
    let out = match args.format {
        CompareFormat::Text => render_compare_text(&cmp),
        CompareFormat::Markdown => render_compare_markdown(&cmp, template.as_deref())?,
    };
    print!("{out}");
    if cmp.regressed() {
        Err(Error::Regressed {
            metrics: cmp.regressions.clone(),
        })
    } else {
        Ok(())
    }
}

/// Writes `compare --plot`'s SVGs.
fn write_plots(file: &std::path::Path, baseline: &Results, current: &Results) -> Result<(), Error> {
    let svgs = compare_profile_svgs(baseline, current)?;
    if svgs.is_empty() {
        eprintln!(
            "warning: --plot: the runs share no latency profile (sweep or search), so there is \
             nothing to draw"
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
        eprintln!("profile plot ({group}): {}", path.display());
    }
    Ok(())
}
