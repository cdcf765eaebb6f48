//! `infermeter compare BASELINE.json CURRENT.json [MORE.json…]`: is the current run a
//! regression, beyond the noise? Exit 0 when no watched metric is shown worse beyond its
//! tolerance (undecided ones are listed, and a note on stderr says what they do to the exit
//! code), 1 when one is, 4 when none is but some could not be decided and
//! `--inconclusive inconclusive` asks to say so, 2 when the runs did not apply the same plan
//! (unless `--allow-different-plans`), share no stage, or an input is unreadable. With more
//! than two results, the newest is compared with the one before it and a trend table shows
//! them all in time order. `--plot FILE.svg` also draws both runs' latency profiles. The
//! policy is [`crate::app::compare_results`]'s.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::values::{percent_confidence, share};
use crate::app::{self, CompareSettings, Tolerance};
use crate::error::Error;

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
    #[arg(required = true, num_args = 1.., value_name = "RESULTS.json")]
    pub results: Vec<PathBuf>,
    /// How much a metric may move before it counts as changed: `5%` for every metric, or
    /// `METRIC=PERCENT` for one (`ttft.p95=10%`, or `itl=15%` for all of ITL's). Repeatable.
    /// Default: the scenario's `report { tolerance … }` recorded with the newest run, else 5%.
    #[arg(long, value_name = "[METRIC=]PERCENT")]
    pub tolerance: Vec<Tolerance>,
    /// Confidence of the change intervals.
    #[arg(long, value_name = "PERCENT", default_value = "95%", value_parser = percent_confidence)]
    pub confidence: f64,
    /// What a metric whose change cannot be decided (its interval straddles the tolerance)
    /// does to the exit code: `pass` exits 0 (no regression was shown), `fail` 1,
    /// `inconclusive` 4.
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
    /// Compare each stage's steady-state window (ramp and drain left out) instead of the
    /// whole stage; a stage without a window is refused.
    #[arg(long, value_enum, default_value_t = WindowArg::Stage)]
    pub window: WindowArg,
    /// The least share of identical answers (`99%` or `0.99`) the current run may give to
    /// the baseline's prompts: shown under it is a regression (exit 1), possibly under it
    /// undecided. Needs both runs' answers.jsonl (a data set with a `quality` block).
    #[arg(long, value_name = "SHARE", value_parser = share)]
    pub min_agreement: Option<f64>,
    /// Compare two server configurations of one run (its `config` lines): `RUN.json
    /// --configs A B` pairs each stage on A (`chat@A`) with its copy on B (`chat@B`).
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub configs: Option<Vec<String>>,
}

/// Which requests of each stage `compare` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WindowArg {
    /// The whole stage.
    Stage,
    /// The stage's steady-state window.
    Steady,
}

pub fn run(args: &CompareArgs) -> Result<(), Error> {
    let format = match args.format {
        CompareFormat::Markdown => app::CompareFormat::Markdown,
        CompareFormat::Text => app::CompareFormat::Text,
        CompareFormat::Json => app::CompareFormat::Json,
    };
    let settings = CompareSettings {
        tolerances: args.tolerance.clone(),
        confidence: args.confidence,
        undecided: match args.inconclusive {
            UndecidedAs::Pass => app::UndecidedAs::Pass,
            UndecidedAs::Fail => app::UndecidedAs::Fail,
            UndecidedAs::Inconclusive => app::UndecidedAs::Inconclusive,
        },
        allow_different_plans: args.allow_different_plans,
        // The template only shapes Markdown.
        template: args
            .template
            .clone()
            .filter(|_| format == app::CompareFormat::Markdown),
        plot: args.plot.clone(),
        window: match args.window {
            WindowArg::Stage => app::Window::Stage,
            WindowArg::Steady => app::Window::Steady,
        },
        min_agreement: args.min_agreement,
        configs: args
            .configs
            .as_ref()
            .and_then(|c| Some((c.first()?.clone(), c.get(1)?.clone()))),
        ..CompareSettings::new(args.results.clone())
    };
    let report = app::compare_results(&settings)?;
    if let Some(plots) = &report.plots {
        if plots.is_empty() {
            errln!(
                "warning: --plot: the runs share no latency profile and no stage with latency \
                 samples, so there is nothing to draw"
            );
        }
        for (group, path) in plots {
            errln!(
                "plot ({}): {}",
                crate::escape::terminal(group),
                path.display()
            );
        }
    }
    crate::cli::console::out_text(&report.render(format)?, false);
    let undecided = report.comparison.undecided.len();
    if undecided > 0 && !report.comparison.regressed() && args.inconclusive == UndecidedAs::Pass {
        // The verdict line says INCONCLUSIVE; say why the exit code is 0 all the same.
        errln!(
            "note: {undecided} metric(s) undecided: no regression shown, none ruled out; exit 0 \
             (--inconclusive inconclusive exits 4 for this, --inconclusive fail 1)"
        );
    }
    report.check()
}
