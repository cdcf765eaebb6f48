//! `infermeter compare BASELINE.json CURRENT.json`: is the current run a regression?
//! Exit 0 when no watched metric is worse beyond the tolerance, 1 when one is, 2 when the two
//! runs did not apply the same plan (unless `--allow-different-plans`) or an input is unreadable.
//! `--plot FILE.svg` also draws both runs' latency profiles together (exit codes unchanged).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::report::fail;
use crate::exit;
use crate::report::{
    compare, compare_plot_path, compare_profile_svgs, read_results, render_compare_markdown,
    render_compare_text,
};
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

pub fn run(args: &CompareArgs) -> i32 {
    let (baseline, current) = match (read_results(&args.baseline), read_results(&args.current)) {
        (Ok(b), Ok(c)) => (b, c),
        (Err(e), _) | (_, Err(e)) => return fail(&e, exit::INVALID),
    };
    if baseline.plan_hash != current.plan_hash && !args.allow_different_plans {
        eprintln!(
            "error: the runs used different plans (baseline {} vs current {}), so their numbers \
             are not comparable; rerun with the same scenario and seed, or pass \
             --allow-different-plans",
            baseline.plan_hash, current.plan_hash
        );
        return exit::INVALID;
    }
    if let Some(file) = &args.plot
        && let Err(code) = write_plots(file, &baseline, &current)
    {
        return code;
    }
    let cmp = compare(&baseline, &current, args.tolerance.0);
    let out = match args.format {
        CompareFormat::Text => render_compare_text(&cmp),
        CompareFormat::Markdown => {
            let template = match &args.template {
                Some(p) => match std::fs::read_to_string(p) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        eprintln!("error: failed to read template {}: {e}", p.display());
                        return exit::INVALID;
                    }
                },
                None => None,
            };
            match render_compare_markdown(&cmp, template.as_deref()) {
                Ok(md) => md,
                Err(e) => return fail(&e, exit::INVALID),
            }
        }
    };
    print!("{out}");
    if cmp.regressed() {
        eprintln!("regression: {}", cmp.regressions.join("; "));
        exit::SLA_FAILED
    } else {
        exit::OK
    }
}

/// Writes `compare --plot`'s SVGs; an I/O or drawing failure is an invalid invocation.
fn write_plots(
    file: &std::path::Path,
    baseline: &crate::report::Results,
    current: &crate::report::Results,
) -> Result<(), i32> {
    let svgs = compare_profile_svgs(baseline, current).map_err(|e| fail(&e, exit::INVALID))?;
    if svgs.is_empty() {
        eprintln!(
            "warning: --plot: the runs share no latency profile (sweep or search), so there is \
             nothing to draw"
        );
        return Ok(());
    }
    for (i, (group, svg)) in svgs.iter().enumerate() {
        let path = compare_plot_path(file, i, group);
        if let Err(e) = std::fs::write(&path, svg) {
            eprintln!("error: failed to write {}: {e}", path.display());
            return Err(exit::INVALID);
        }
        eprintln!("profile plot ({group}): {}", path.display());
    }
    Ok(())
}
