//! Distributed runs as library calls, as [`run_scenario`](super::run_scenario) serves one
//! process: [`start_coordinator`] compiles the whole plan and serves its barrier and result
//! collection (`infermeter coordinate`, or shard 0 with `run --coordinator-listen`);
//! [`Shard::join`] makes a run one shard of such a run (its barrier is the coordinator's
//! client), and [`Shard::verdict`] sends its result and waits for the merged gate, which
//! [`merged_gate`] turns into the run's outcome; [`merge_results`] merges shards' results
//! files after the fact (`infermeter merge`). See docs/distributed.md.
//!
//! Every call that talks to a coordinator goes through here, so what a coordinator accepts
//! (and from whom) is settled in one place: every call carries the run's token
//! ([`shard_token`](crate::app::shard_token),
//! [`coordinator_token`](crate::app::coordinator_token)); a shard exits 0 only when its own
//! run completed and the coordinator's verdict names that run, its plan and the result it
//! sent ([`shard_gate`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Outcome, RunReport, RunSettings, TargetOverride, load_scenario};
use crate::coordinate::{
    Client, ClientConfig, Coordinator, CoordinatorConfig, MAX_LEAD, RefusalLog, Token, Verdict,
};
use crate::error::Error;
use crate::merge::MergeOptions;
use crate::plan::Slice;
use crate::report::WriteOptions;
use crate::results::{Results, read_results};
use crate::sla::SlaOutcome;

/// How long a coordinator waits, and what skew it tolerates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoordinatorTiming {
    /// How long a stage's start waits for its last shard after the first arrived (and the
    /// merge for the last result after the first came).
    pub wait: Duration,
    /// The first stage's wait instead: shards start as their machines do.
    pub start_wait: Duration,
    /// A stage starts this long after every shard has arrived.
    pub lead: Duration,
    /// A merged stage is untrusted when a shard started further than this from the agreed
    /// instant.
    pub max_skew: Duration,
}

impl Default for CoordinatorTiming {
    fn default() -> Self {
        CoordinatorTiming {
            wait: Duration::from_secs(60),
            start_wait: Duration::from_secs(600),
            lead: Duration::from_millis(500),
            max_skew: Duration::from_millis(5),
        }
    }
}

/// Everything [`start_coordinator`] needs.
#[derive(Debug, Clone)]
pub struct CoordinatorSettings {
    /// The scenario every shard runs, loaded as the shards load it (see [`load_scenario`]).
    pub scenario: PathBuf,
    pub scenario_text: Option<String>,
    pub params: Vec<(String, String)>,
    pub target: TargetOverride,
    pub listen: SocketAddr,
    pub shards: u32,
    /// Where the merged results.json, report and JUnit go.
    pub out: PathBuf,
    /// Shard 0's own results.json when it hosts the coordinator, which the merge must not
    /// overwrite.
    pub shard_out: Option<PathBuf>,
    pub timing: CoordinatorTiming,
    /// The run's token, which every call must carry.
    pub token: Token,
    /// Cancelled (a signal): merge what has come and publish the verdict now.
    pub interrupt: CancellationToken,
    /// Told of every refused request (without the token presented).
    pub on_refusal: Option<RefusalLog>,
}

/// A distributed run's merged result, as a coordinator or `merge` ends with it.
#[derive(Debug)]
pub struct MergedRun {
    /// `None` when no shard sent one.
    pub results: Option<Results>,
    pub verdict: Verdict,
    /// The files written, results.json first.
    pub files: Vec<PathBuf>,
}

impl MergedRun {
    /// The merged gate: see [`merged_gate`].
    pub fn check(&self) -> Result<(), Error> {
        merged_gate(&self.verdict)
    }
}

/// A coordinator serving on its own thread.
pub struct RunningCoordinator {
    inner: Coordinator,
}

impl RunningCoordinator {
    /// The address it serves on (the port chosen when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// The most a shard's result may weigh, in bytes: larger ones are refused as they arrive.
    pub fn result_cap(&self) -> u64 {
        self.inner.result_cap
    }

    /// Blocks until the run is merged and its verdict served.
    pub fn wait(self) -> Result<MergedRun, Error> {
        let outcome = self.inner.wait()?;
        Ok(MergedRun {
            results: outcome.results,
            verdict: outcome.verdict,
            files: outcome.files,
        })
    }
}

/// Compiles the scenario's whole plan (and reads its baseline) and starts its coordinator.
pub fn start_coordinator(settings: &CoordinatorSettings) -> Result<RunningCoordinator, Error> {
    let scenario = load_scenario(
        &settings.scenario,
        settings.scenario_text.as_deref(),
        &settings.params,
        &settings.target,
    )?;
    super::server::refuse_distributed(&scenario, "coordinate")?;
    let plan = crate::plan::compile(&scenario).map_err(|source| Error::Plan {
        path: settings.scenario.clone(),
        source,
    })?;
    let baseline_path = scenario
        .report
        .baseline
        .as_ref()
        .map(|p| scenario.source.base_dir().join(p));
    let mut read = vec![("the scenario", settings.scenario.as_path())];
    read.extend(baseline_path.as_deref().map(|b| ("the baseline", b)));
    read.extend(
        settings
            .shard_out
            .as_deref()
            .map(|p| ("this shard's own result", p)),
    );
    super::outputs::refuse_overwrite_dir(
        &settings.out,
        &read,
        "write the merged result into a directory of its own (--out, --merged-out DIR)",
    )?;
    let baseline = match &baseline_path {
        Some(path) => Some(read_results(path).map_err(Error::Baseline)?),
        None => None,
    };
    let t = settings.timing;
    if t.lead > MAX_LEAD {
        return Err(Error::usage(
            format!("--lead {:?} is beyond {} s", t.lead, MAX_LEAD.as_secs()),
            "shards refuse a start further ahead than that: use a shorter --lead",
        ));
    }
    let mut cfg = CoordinatorConfig::new(
        settings.listen,
        settings.shards,
        Arc::new(plan),
        settings.out.clone(),
        settings.token.clone(),
    );
    cfg.interrupt = settings.interrupt.clone();
    cfg.on_refusal = settings.on_refusal.clone();
    cfg.wait = t.wait;
    cfg.start_wait = t.start_wait;
    cfg.lead = t.lead;
    cfg.merge.max_skew_ms = t.max_skew.as_secs_f64() * 1e3;
    cfg.merge.baseline = baseline;
    let inner = crate::coordinate::serve(cfg)?;
    Ok(RunningCoordinator { inner })
}

/// Where a shard's coordinator is, and whether this shard serves it.
#[derive(Debug, Clone)]
pub struct ShardSettings {
    /// The coordinator's URL (`http://host:port`).
    pub coordinator: String,
    /// The run's token (see [`shard_token`](crate::app::shard_token)).
    pub token: Token,
    /// Shard 0 also serves the coordinator on this address (the other shards ignore it).
    pub listen: Option<SocketAddr>,
    /// Where shard 0's coordinator writes the merged result [default: the run's `OUT/merged`].
    pub merged_out: Option<PathBuf>,
    pub timing: CoordinatorTiming,
    /// Told of every request shard 0's coordinator refuses.
    pub on_refusal: Option<RefusalLog>,
}

/// This process's part of a distributed run: the coordinator's client, and the coordinator
/// itself on shard 0 when it serves one.
pub struct Shard {
    client: Client,
    hosted: Option<RunningCoordinator>,
    interrupt: CancellationToken,
}

/// How long a shard that stopped early tries to hand its (partial) result over.
const STOPPED_SUBMIT: Duration = Duration::from_secs(5);

impl Shard {
    /// Makes the run `settings` describes (its `shard` set) a shard of the run coordinated
    /// at `shard.coordinator`: its steps start at the instants agreed there. Shard 0 with
    /// `listen` first starts that coordinator, from the same scenario. Every wait for the
    /// coordinator ends when `settings.interrupt` is cancelled, so set that first.
    pub fn join(settings: &mut RunSettings, shard: &ShardSettings) -> Result<Shard, Error> {
        let Some(slice) = settings.shard else {
            return Err(Error::usage(
                "a coordinated run needs its shard",
                "pass --shard I/N with --coordinator",
            ));
        };
        let t = shard.timing;
        let mut cfg = ClientConfig::new(
            shard.coordinator.clone(),
            slice.index,
            slice.count,
            shard.token.clone(),
        )
        .with_timing(t.wait, t.start_wait, t.lead);
        cfg.interrupt = settings.interrupt.clone();
        let client = Client::new(cfg)?;
        let hosted = match shard.listen {
            Some(listen) if slice.index == 0 => Some(host(settings, shard, listen, slice)?),
            _ => None,
        };
        settings.barrier = Some(Arc::new(client.clone()) as Arc<dyn crate::runner::Barrier>);
        Ok(Shard {
            client,
            hosted,
            interrupt: settings.interrupt.clone(),
        })
    }

    /// Sends this shard's result and, when its own run completed, waits for the merged run's
    /// verdict (which names where the merged result went) and checks that it is this run's.
    /// `None` for a shard that stopped early: its result is handed over if the coordinator
    /// takes it within a few seconds, and its exit is its own ([`shard_gate`]).
    pub fn verdict(&self, report: &RunReport) -> Result<Option<Verdict>, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        if !matches!(report.outcome, Outcome::Completed) || self.interrupt.is_cancelled() {
            let submit = self.client.detached(STOPPED_SUBMIT);
            let _ = runtime.block_on(async {
                tokio::time::timeout(STOPPED_SUBMIT, submit.submit(&report.results)).await
            });
            return Ok(None);
        }
        runtime.block_on(self.client.submit(&report.results))?;
        Ok(Some(runtime.block_on(
            self.client.verdict(&report.results.plan_hash),
        )?))
    }

    /// Waits for the coordinator this shard serves, if it serves one, to finish.
    pub fn close(self) -> Result<(), Error> {
        match self.hosted {
            Some(coordinator) => coordinator.wait().map(drop),
            None => Ok(()),
        }
    }
}

/// Starts shard 0's own coordinator.
fn host(
    settings: &RunSettings,
    shard: &ShardSettings,
    listen: SocketAddr,
    slice: Slice,
) -> Result<RunningCoordinator, Error> {
    let out = shard.merged_out.clone().unwrap_or_else(|| {
        settings
            .out_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("results"))
            .join("merged")
    });
    start_coordinator(&CoordinatorSettings {
        scenario: settings.scenario.clone(),
        scenario_text: settings.scenario_text.clone(),
        params: settings.params.clone(),
        target: settings.target.clone(),
        listen,
        shards: slice.count,
        out,
        shard_out: settings
            .out_dir
            .as_ref()
            .map(|d| d.join(crate::results::RESULTS_FILE)),
        timing: shard.timing,
        token: shard.token.clone(),
        interrupt: settings.interrupt.clone(),
        on_refusal: shard.on_refusal.clone(),
    })
}

/// A shard's exit: its own run's when that stopped early (interrupted, unsynchronised: exit 3
/// whatever any coordinator says), else the merged gate of the verdict about its run.
pub fn shard_gate(report: &RunReport, verdict: Option<&Verdict>) -> Result<(), Error> {
    match (&report.outcome, verdict) {
        (Outcome::Completed, Some(v)) => merged_gate(v),
        (Outcome::Completed, None) => Err(Error::Incomplete {
            causes: vec!["no verdict of the merged run".into()],
        }),
        _ => report.check(),
    }
}

/// The exit of a merged distributed run: partial or stopped early (exit 3), else its gate.
pub fn merged_gate(v: &Verdict) -> Result<(), Error> {
    if !v.missing.is_empty() {
        return Err(Error::Partial {
            missing: v.missing.clone(),
        });
    }
    if v.interrupted {
        return Err(Error::Incomplete {
            causes: vec![
                v.error
                    .clone()
                    .unwrap_or_else(|| "a shard stopped early".into()),
            ],
        });
    }
    match (v.outcome, &v.not_qualified) {
        (SlaOutcome::Fail, _) => Err(Error::SlaFailed {
            failed: v.failed,
            undecided: v.undecided,
        }),
        (_, Some(line)) => Err(Error::NotQualified(line.clone())),
        (SlaOutcome::Pass, None) => Ok(()),
        (SlaOutcome::Inconclusive, None) => Err(Error::Inconclusive {
            undecided: v.undecided,
            untrusted: v.untrusted,
        }),
    }
}

/// Everything [`merge_results`] needs.
#[derive(Debug, Clone)]
pub struct MergeSettings {
    /// The shards' results.json files (one per shard).
    pub results: Vec<PathBuf>,
    /// Where the merged results.json, report, plots and JUnit go.
    pub out: PathBuf,
    /// Merge even when shards are missing (the result is then partial).
    pub allow_missing: bool,
    pub max_skew: Duration,
    /// The baseline run for `baseline` thresholds.
    pub baseline: Option<PathBuf>,
    pub plots: bool,
    /// Also write the llm-d Benchmark Report (`--llm-d`).
    pub llm_d: bool,
}

/// Merges the shards' results files into one result and writes it with its reports.
pub fn merge_results(settings: &MergeSettings) -> Result<MergedRun, Error> {
    let mut read: Vec<(&str, &Path)> = settings
        .results
        .iter()
        .map(|p| ("a shard's result", p.as_path()))
        .collect();
    read.extend(settings.baseline.as_deref().map(|b| ("the baseline", b)));
    super::outputs::refuse_overwrite_dir(
        &settings.out,
        &read,
        "merge into a directory of its own (--out DIR), not a shard's",
    )?;
    let inputs = settings
        .results
        .iter()
        .map(|p| Ok((p.display().to_string(), read_results(p)?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let baseline = match &settings.baseline {
        Some(p) => Some(read_results(p).map_err(Error::Baseline)?),
        None => None,
    };
    let opts = MergeOptions {
        allow_missing: settings.allow_missing,
        max_skew_ms: settings.max_skew.as_secs_f64() * 1e3,
        baseline,
    };
    let merged = crate::merge::merge(inputs, &opts)?;
    let write = WriteOptions {
        plots: settings.plots,
        extra: settings
            .llm_d
            .then_some(crate::report::Output::LlmD)
            .into_iter()
            .collect(),
        ..WriteOptions::default()
    };
    let files = crate::report::write_all(&merged, &settings.out, &write)?;
    Ok(MergedRun {
        verdict: crate::coordinate::verdict_of(&merged, None),
        results: Some(merged),
        files,
    })
}
