//! Shards' results → one result: the stage of a distributed run that turns N load
//! generators' `results.json` into the run's. Histograms are added (exact, to the bucket),
//! counts summed, rates taken over the union of the shards' wall windows, every shard's
//! validity carried into the merged one, and the SLAs judged again on the merged stages with
//! the run's policy. Inputs of different plans, duplicate shards or missing ones are refused
//! with every problem listed ([`MergeError`]); a coordinator that stopped waiting for a lost
//! shard merges what came with `allow_missing`, and the result says it is partial.
//!
//! Entry point: [`merge`].

mod error;
mod slices;
mod stage;
#[cfg(test)]
mod tests;

use infermeter_words::error_chain;
use std::collections::BTreeMap;

use crate::metrics::StageSummary;
use crate::results::{RESULTS_SCHEMA_VERSION, Results, ShardRecord, Sharding};
use crate::sla::{self, SlaOutcome};
pub use error::StageMergeError;
use stage::{Part, Rules, merge_stage};

/// Default bound on a shard's start skew (measured offset plus clock error), in ms: beyond it
/// the shards' open-loop schedules are misaligned by more than a typical send lag budget.
pub const DEFAULT_MAX_SKEW_MS: f64 = 5.0;

/// How to merge.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// Merge even when some shards' results are missing (the result is then partial, every
    /// stage untrusted and `shards.missing` set); otherwise a missing shard is refused.
    pub allow_missing: bool,
    /// A stage whose shards started further than this from the agreed instant (offset plus
    /// clock error, in ms) is untrusted.
    pub max_skew_ms: f64,
    /// The run's baseline, for `baseline` thresholds.
    pub baseline: Option<Results>,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            allow_missing: false,
            max_skew_ms: DEFAULT_MAX_SKEW_MS,
            baseline: None,
        }
    }
}

/// Why shards' results cannot be merged: every problem.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot merge these results:\n{}", problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
pub struct MergeError {
    pub problems: Vec<String>,
}

/// Merges shards' results, each named (its file, say) for the messages.
pub fn merge(inputs: Vec<(String, Results)>, opts: &MergeOptions) -> Result<Results, MergeError> {
    let mut inputs = inputs;
    let mut problems = Vec::new();
    if inputs.is_empty() {
        problems.push("no results given".to_string());
        return Err(MergeError { problems });
    }
    let mut owners: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut counts: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (name, r) in &inputs {
        // A shard whose counts do not add up would make a merged result that does not either.
        if let Err(e) = crate::results::validate(r) {
            problems.push(format!("{name}: {e}"));
        }
        if !r.complete {
            problems.push(format!(
                "{name}: an unfinished run ({}); merge the shards' final results",
                r.error.as_deref().unwrap_or("no verdict yet")
            ));
        }
        match &r.shards {
            None => problems.push(format!(
                "{name}: not a shard's result (run with `--shard I/N`)"
            )),
            Some(s) => {
                counts.entry(s.count).or_default().push(name.clone());
                for rec in &s.shards {
                    owners.entry(rec.index).or_default().push(name.clone());
                }
            }
        }
    }
    problems.extend(disagreements(&inputs));
    if counts.len() > 1 {
        let list: Vec<String> = counts
            .iter()
            .map(|(n, names)| format!("{n} shards ({})", names.join(", ")))
            .collect();
        problems.push(format!("different shard counts: {}", list.join(" vs ")));
    }
    let count = counts.keys().next().copied().unwrap_or(0);
    for (index, names) in &owners {
        if names.len() > 1 {
            problems.push(format!(
                "shard {index} given {} times ({})",
                names.len(),
                names.join(", ")
            ));
        }
        if *index >= count && counts.len() == 1 {
            problems.push(format!("shard {index} of {count} does not exist"));
        }
    }
    let missing: Vec<u32> = (0..count).filter(|i| !owners.contains_key(i)).collect();
    if !missing.is_empty() && !opts.allow_missing && counts.len() == 1 {
        problems.push(format!(
            "missing shard(s) {} of {count}",
            missing
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !problems.is_empty() {
        return Err(MergeError { problems });
    }
    inputs.sort_by_key(|(_, r)| shard_index(r));
    let results: Vec<Results> = inputs.into_iter().map(|(_, r)| r).collect();
    assemble(results, count, missing, opts).map_err(|e| MergeError {
        problems: vec![error_chain(&e)],
    })
}

/// The inputs' plans or SLA policies, when they are not all the same.
fn disagreements(inputs: &[(String, Results)]) -> Vec<String> {
    let by = |f: &dyn Fn(&Results) -> String| {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, r) in inputs {
            m.entry(f(r)).or_default().push(name.clone());
        }
        m
    };
    let mut problems = Vec::new();
    let hashes = by(&|r| r.plan_hash.clone());
    if hashes.len() > 1 {
        let list: Vec<String> = hashes
            .iter()
            .map(|(h, names)| format!("{h} ({})", names.join(", ")))
            .collect();
        problems.push(format!(
            "results of different plans: {}; every shard must run the same scenario, params \
             and seed",
            list.join(" vs ")
        ));
    }
    let policies = by(&|r| serde_json::to_string(&r.sla_policy).unwrap_or_default());
    if policies.len() > 1 {
        problems.push(format!(
            "the shards judged under different SLA policies ({}); run them with the same \
             --confidence, --inconclusive and --untrusted",
            policies.keys().cloned().collect::<Vec<_>>().join(" vs ")
        ));
    }
    problems
}

fn shard_index(r: &Results) -> u32 {
    r.shards
        .as_ref()
        .and_then(|s| s.shards.iter().map(|x| x.index).min())
        .unwrap_or(u32::MAX)
}

/// The merged result of checked inputs, sorted by shard.
fn assemble(
    inputs: Vec<Results>,
    count: u32,
    missing: Vec<u32>,
    opts: &MergeOptions,
) -> Result<Results, StageMergeError> {
    let first = &inputs[0];
    let records: Vec<&ShardRecord> = inputs
        .iter()
        .flat_map(|r| r.shards.iter().flat_map(|s| &s.shards))
        .collect();
    let policy = first.sla_policy;
    let set = ShardSet {
        inputs: &inputs,
        count,
        missing: &missing,
        confidence: policy.confidence,
        max_skew_ms: opts.max_skew_ms,
    };
    let (warmup, stages) = set.stages()?;
    let assertions = first
        .shards
        .as_ref()
        .map(|s| s.assertions.clone())
        .unwrap_or_default();
    // Telemetry describes the server, which shard 0 alone sampled.
    let telemetry = inputs
        .iter()
        .find(|r| shard_index(r) == 0)
        .and_then(|r| r.telemetry.clone());
    let cx = sla::Context {
        baseline: opts.baseline.as_ref().map(Results::baseline),
        telemetry: telemetry.as_ref(),
        policy: sla::Policy {
            confidence: policy.confidence,
            untrusted: policy.untrusted,
            intervals: true,
        },
    };
    let mut verdicts = sla::judge_run(&assertions, &stages, &[], &cx);
    let frontiers = crate::metrics::frontiers(&stages);
    verdicts.extend(sla::priority_inversions(&stages, &cx));
    let gate = sla::gate(&verdicts, policy.inconclusive);
    let errors = run_errors(&records, &missing, count);
    let stopped_early = !missing.is_empty() || records.iter().any(|r| r.interrupted);
    // Each shard judged its own share of the load; the run qualifies (or not) on the whole.
    let mlperf = first
        .mlperf
        .as_ref()
        .map(|q| sla::mlperf::qualify(&q.rule(), &stages));
    let unqualified = mlperf.as_ref().is_some_and(|q| q.fails_gate());
    Ok(Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario: first.scenario.clone(),
        description: first.description.clone(),
        plan_hash: first.plan_hash.clone(),
        seed: first.seed,
        passed: gate.outcome == SlaOutcome::Pass && !stopped_early && !unqualified,
        outcome: gate.outcome,
        sla_policy: policy,
        compare_tolerances: first.compare_tolerances.clone(),
        interrupted: stopped_early,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        complete: inputs.iter().all(|r| r.complete),
        infermeter_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: inputs
            .iter()
            .map(|r| r.started_at.clone())
            .min()
            .unwrap_or_default(),
        target: first.target.clone(),
        warmup,
        stages,
        sla: verdicts,
        telemetry,
        searches: Vec::new(),
        frontiers,
        provenance: merged_provenance(&inputs),
        configs: None,
        mlperf,
        shards: Some(Sharding {
            count,
            shards: records.into_iter().cloned().collect(),
            missing,
            max_skew_ms: Some(opts.max_skew_ms),
            assertions,
        }),
    })
}

/// The checked inputs of a merge, sorted by shard, and what their stages are merged under.
struct ShardSet<'a> {
    inputs: &'a [Results],
    count: u32,
    missing: &'a [u32],
    confidence: f64,
    max_skew_ms: f64,
}

impl ShardSet<'_> {
    /// The merged warm-up and stages, in plan order: that of the longest list of stages (a
    /// shard that stopped early ran fewer).
    fn stages(&self) -> Result<(Option<StageSummary>, Vec<StageSummary>), StageMergeError> {
        let names: Vec<String> = self
            .inputs
            .iter()
            .map(|r| r.stages.iter().map(|s| s.name.clone()).collect::<Vec<_>>())
            .max_by_key(Vec::len)
            .unwrap_or_default();
        let mut stages = Vec::with_capacity(names.len());
        for name in &names {
            if let Some(s) = self.merge(name, &|r| r.stages.iter().find(|s| &s.name == name))? {
                stages.push(s);
            }
        }
        let warmup = match self.inputs[0].warmup.as_ref().map(|w| w.name.clone()) {
            Some(name) => self.merge(&name, &|r| r.warmup.as_ref())?,
            None => None,
        };
        Ok((warmup, stages))
    }

    /// The stage `name` merged from the shards that ran it (`get` finds it in a result).
    fn merge(
        &self,
        name: &str,
        get: &dyn Fn(&Results) -> Option<&StageSummary>,
    ) -> Result<Option<StageSummary>, StageMergeError> {
        let mut parts = Vec::new();
        let mut absent = Vec::new();
        for r in self.inputs {
            let rec = r.shards.as_ref().and_then(|s| s.shards.first());
            let index = rec.map_or(0, |x| x.index);
            match get(r) {
                Some(summary) => parts.push(Part {
                    index,
                    summary,
                    start: rec.and_then(|x| x.starts.iter().find(|s| s.stage == name)),
                    coordinated: rec.is_some_and(|x| x.coordinated),
                }),
                None => absent.push(index),
            }
        }
        if parts.is_empty() {
            return Ok(None);
        }
        let rules = Rules {
            confidence: self.confidence,
            max_skew_ms: self.max_skew_ms,
            missing: self.missing,
            absent,
            count: self.count,
        };
        merge_stage(&parts, &rules).map(Some)
    }
}

/// The shards' own errors, after the missing shards when some are.
fn run_errors(records: &[&ShardRecord], missing: &[u32], count: u32) -> Vec<String> {
    let mut errors: Vec<String> = records
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("shard {}: {e}", r.index)))
        .collect();
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(u32::to_string).collect();
        errors.insert(
            0,
            format!(
                "partial: no result from shard(s) {} of {count}",
                list.join(", ")
            ),
        );
    }
    errors
}

/// The first shard's provenance (build, command line, host), spanning every shard's wall
/// window; each shard's own `results.json` keeps its own host and times.
fn merged_provenance(inputs: &[Results]) -> Option<crate::results::Provenance> {
    let mut with = inputs.iter().filter_map(|r| r.provenance.as_ref());
    let mut merged = with.next()?.clone();
    for p in with {
        if p.started_at < merged.started_at {
            merged.started_at = p.started_at.clone();
        }
        if p.ended_at > merged.ended_at {
            merged.ended_at = p.ended_at.clone();
        }
    }
    Some(merged)
}
