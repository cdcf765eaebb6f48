//! `infermeter run SCENARIO`: parse, compile, run, evaluate the SLAs, write the results and
//! report, print a summary, and exit 0 (all SLAs met), 1 (an SLA failed), 2 (invalid
//! scenario) or 3 (the run could not be carried out).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::Args;
use tokio_util::sync::CancellationToken;

use super::common::{parse_param, render};
use crate::exit;
use crate::metrics::{PointKind, StageSummary, ValidityRules};
use crate::report::{self, Results, TargetInfo, WriteOptions};
use crate::runner::{self, ProgressMode, RunOptions, StageDecision};
use crate::scenario::Scenario;
use crate::sla::{self, Assertion, SlaVerdict};
use crate::units;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (KDL).
    pub scenario: PathBuf,

    /// Directory for results.json, report.md, plots and junit.xml
    /// [default: results/<scenario>-<UTC time>]
    #[arg(long, short, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Override a scenario param (repeatable), e.g. `--param rate=50`.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,

    /// Also write a JUnit XML file here (one test case per SLA assertion).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Render report.md with this minijinja template instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,

    /// Write one JSON row per request to requests.jsonl in the output directory.
    #[arg(long)]
    pub requests_jsonl: bool,

    /// Do not write SVG plots.
    #[arg(long)]
    pub no_plots: bool,

    /// Flag a stage as untrusted when the client's send lag p99 exceeds this.
    #[arg(long, value_name = "DURATION", default_value = "1ms")]
    pub max_send_lag: units::Duration,

    /// Flag a stage as untrusted when the hypervisor steals more than this share (percent) of
    /// the client's CPU time (`steal` in /proc/stat; cloud VMs with busy neighbours).
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, value_parser = percent)]
    pub max_steal: f64,

    /// Keep idle CPUs polling instead of sleeping for the run: holds /dev/cpu_dma_latency at 0,
    /// as cyclictest and tuned's latency-performance profile do. A sleeping CPU (on a VM, a
    /// halted vCPU) takes tens of microseconds to wake, which lands in send lag and TTFT. Costs
    /// power: the CPUs never idle. Needs write access to /dev/cpu_dma_latency (root); without
    /// it the run goes on with a warning, and no stage records `poll_idle`.
    #[arg(long)]
    pub poll_idle: bool,

    /// No progress output; only the final summary.
    #[arg(long, short)]
    pub quiet: bool,

    /// Progress as plain lines every few seconds, even on a terminal.
    #[arg(long, conflicts_with = "quiet")]
    pub progress_lines: bool,
}

pub fn run(args: RunArgs) -> i32 {
    let scenario = match crate::scenario::load(&args.scenario, &args.params) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}", render(&e));
            return exit::INVALID;
        }
    };
    let plan = match crate::plan::compile(&scenario) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!("error: {}: {e}", args.scenario.display());
            return exit::INVALID;
        }
    };
    // Assertions were checked when the scenario loaded; parsing again cannot fail.
    let assertions: Vec<(Assertion, Option<String>, bool)> = plan
        .sla
        .iter()
        .filter_map(|a| {
            sla::parse(&a.expr)
                .ok()
                .map(|p| (p, a.stage.clone(), a.abort_on_fail))
        })
        .collect();
    let base_dir = scenario.source.base_dir();
    let baseline = match &scenario.report.baseline {
        Some(path) => match report::read_results(&base_dir.join(path)) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("error: cannot read the scenario's baseline: {e}");
                return exit::INVALID;
            }
        },
        None => None,
    };
    let template = match args
        .template
        .clone()
        .or_else(|| scenario.report.template.as_ref().map(|t| base_dir.join(t)))
    {
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("error: cannot read template {}: {e}", path.display());
                return exit::INVALID;
            }
        },
        None => None,
    };
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir(&scenario));
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!("error: cannot create {}: {e}", out_dir.display());
        return exit::RUN_ERROR;
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("infermeter-client")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return exit::RUN_ERROR;
        }
    };
    // Held until this function returns: the whole run, stages and report.
    let poll_idle = args.poll_idle.then(|| match runner::PollIdle::hold() {
        Ok(held) => Some(held),
        Err(e) => {
            eprintln!(
                "warning: --poll-idle: cannot write /dev/cpu_dma_latency ({e}); idle CPUs may \
                 sleep, run as root for it"
            );
            None
        }
    });
    let interrupt = CancellationToken::new();
    let opts = RunOptions {
        base_dir: base_dir.clone(),
        progress: if args.quiet {
            ProgressMode::Quiet
        } else if args.progress_lines {
            ProgressMode::Lines
        } else {
            ProgressMode::Auto
        },
        requests_jsonl: (args.requests_jsonl || scenario.report.requests_jsonl)
            .then(|| out_dir.join("requests.jsonl")),
        validity: ValidityRules {
            max_send_lag_p99_ms: args.max_send_lag.as_millis_f64(),
            max_steal_share: args.max_steal / 100.0,
            ..ValidityRules::default()
        },
        interrupt: interrupt.clone(),
        interrupt_grace: Duration::from_secs(2),
        poll_idle: matches!(poll_idle, Some(Some(_))),
    };
    let mut abort_check = |stage: &StageSummary| match &stage.profile {
        Some(p) if p.kind == PointKind::Probe => {
            let failed = sla::probe_failures(&assertions, &p.group, stage, baseline.as_ref());
            if failed.is_empty() {
                StageDecision::Continue
            } else {
                StageDecision::Failed(failed)
            }
        }
        _ => abort_decision(&assertions, stage, baseline.as_ref()),
    };
    let outcome = runtime.block_on(async {
        let ctrl_c = interrupt.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("interrupted: stopping, waiting briefly for in-flight requests…");
                ctrl_c.cancel();
            }
        });
        runner::run(plan.clone(), opts, &mut abort_check).await
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    let output = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::RUN_ERROR;
        }
    };

    let pairs: Vec<(Assertion, Option<String>)> = assertions
        .iter()
        .map(|(a, s, _)| (a.clone(), s.clone()))
        .collect();
    let (pairs, judged) = sla::profile_inputs(&pairs, &output.stages, &output.searches);
    let verdicts = sla::evaluate_with(
        &pairs,
        &judged,
        baseline.as_ref(),
        output.telemetry.as_ref(),
    );
    let sla_ok = verdicts.iter().all(|v| v.passed);
    let results = Results {
        schema_version: report::RESULTS_SCHEMA_VERSION,
        scenario: plan.scenario.clone(),
        description: plan.description.clone(),
        plan_hash: plan.hash.clone(),
        seed: plan.seed,
        passed: sla_ok && !output.interrupted,
        interrupted: output.interrupted,
        error: output.error.clone(),
        infermeter_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: rfc3339(output.started_at),
        target: TargetInfo {
            endpoint: output.endpoint.clone(),
            api: format!("{:?}", plan.target.api).to_lowercase(),
            model: output.model.clone(),
            tokenizer: output.tokenizer.clone(),
        },
        warmup: output.warmup.clone(),
        stages: output.stages.clone(),
        sla: verdicts,
        telemetry: output.telemetry.clone(),
        searches: output.searches.clone(),
    };
    if let Some(t) = &results.telemetry {
        for w in &t.warnings {
            eprintln!("warning: telemetry: {w}");
        }
    }
    let write_opts = WriteOptions {
        template,
        plots: !args.no_plots,
        ..WriteOptions::default()
    };
    let mut code = if output.interrupted && output.error.as_deref() == Some("interrupted (Ctrl-C)")
    {
        exit::RUN_ERROR
    } else if results.passed {
        exit::OK
    } else {
        exit::SLA_FAILED
    };
    match report::write_all(&results, &out_dir, &write_opts) {
        Ok(_) => {}
        Err(e) => {
            eprintln!("error: {e}");
            code = exit::RUN_ERROR;
        }
    }
    if let Some(path) = &args.junit
        && let Err(e) = report::write_junit(&results, path)
    {
        eprintln!("error: {e}");
        code = exit::RUN_ERROR;
    }
    print!("{}", report::render_summary_text(&results));
    println!("results: {}", out_dir.join(report::RESULTS_FILE).display());
    println!("report:  {}", out_dir.join(report::REPORT_FILE).display());
    code
}

/// Stops the run after a stage when an `abort-on-fail` assertion failed on it.
fn abort_decision(
    assertions: &[(Assertion, Option<String>, bool)],
    stage: &StageSummary,
    baseline: Option<&Results>,
) -> StageDecision {
    for (a, scope, abort) in assertions {
        // Telemetry metrics are known only once the sampler has finished, after the run.
        if !abort || a.metric.is_telemetry() || scope.as_ref().is_some_and(|s| s != &stage.name) {
            continue;
        }
        let v: SlaVerdict = sla::evaluate_one(a, stage, baseline);
        if !v.passed {
            return StageDecision::Abort(format!(
                "aborted: `{}` failed on stage `{}` (observed {:.3} {}, threshold {:.3} {})",
                v.expr, stage.name, v.observed, v.unit, v.threshold, v.unit
            ));
        }
    }
    StageDecision::Continue
}

fn default_out_dir(scenario: &Scenario) -> PathBuf {
    let stamp = rfc3339(SystemTime::now()).replace([':', '-'], "");
    Path::new("results").join(format!(
        "{}-{}",
        slug(&scenario.name),
        stamp.trim_end_matches('Z')
    ))
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// UTC time as RFC 3339 (`2026-11-29T10:45:00Z`), without a date crate.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{s}` is not a number (a percentage, e.g. 5)"))?;
    if (0.0..=100.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not between 0 and 100"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_948_135);
        assert_eq!(rfc3339(t), "2026-11-29T10:28:55Z");
    }

    #[test]
    fn steal_threshold_is_a_percentage() {
        assert_eq!(percent("5"), Ok(5.0));
        assert_eq!(percent("12.5%"), Ok(12.5));
        assert!(percent("150").is_err());
        assert!(percent("lots").unwrap_err().contains("not a number"));
    }
}
