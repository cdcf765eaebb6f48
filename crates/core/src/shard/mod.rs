//! Compiled [`Plan`] → one shard of it: the stage of a distributed run that decides what a
//! load generator sends. Shard `I` of `N` keeps the plan (and so its hash) and marks every
//! stage with its [`Slice`]: open-loop requests (and sessions) whose index is `I` modulo `N`,
//! each at its planned offset from the stage start that all shards agree on; closed-loop
//! workers and request indices numbered the same way (remainders go to the first shards).
//! The shards' union is then exactly the plan.
//!
//! What cannot be split faithfully is refused, every problem listed with the scenario node it
//! comes from and the fix ([`ShardError`]); nothing is ever run approximately.
//!
//! Entry point: [`slice()`].

#[cfg(test)]
mod tests;

use crate::plan::{EndpointPlan, Load, Plan, Slice};

/// Why a plan cannot be run as shards: every problem, each naming its node and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the plan cannot be split into shards:\n{}", problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
pub struct ShardError {
    pub problems: Vec<String>,
}

/// Makes `plan` the `slice`'s shard, or says why it cannot be split faithfully. Telemetry is
/// sampled by shard 0 alone (it describes the one server all shards load), and only shard 0
/// resets the server's cache (`reset-cache`).
pub fn slice(mut plan: Plan, slice: Slice) -> Result<Plan, ShardError> {
    let mut problems = Vec::new();
    if slice.count == 0 || slice.index >= slice.count {
        problems.push(format!(
            "shard {}/{}: the index must be below the count (0-based, e.g. 0/{} … {}/{})",
            slice.index,
            slice.count,
            slice.count.max(1),
            slice.count.max(1) - 1,
            slice.count.max(1)
        ));
    }
    if matches!(plan.target.endpoint, EndpointPlan::Sim(_)) {
        problems.push(
            "`target`: the embedded simulator would start once per shard, N servers at 1/N of \
             the load each; run `infermeter sim` once and point `target \"http://…\"` at it"
                .to_string(),
        );
    }
    problems.extend(run_settings(plan.target.run));
    if plan.warmup_until.is_some() {
        problems.push(
            "`warmup until=\"stable\"`: each shard would end its warm-up when its own latencies \
             settle, so the stages after it would not start together; give the warm-up a \
             fixed `duration` or `requests`"
                .to_string(),
        );
    }
    for s in &plan.stages {
        if matches!(s.load, Load::Search(_)) {
            problems.push(format!(
                "stage \"{}\": a search chooses each probe from the previous probe's result, \
                 which only the merged shards know; shard a fixed-rate stage or a `profile` \
                 sweep of fixed rates instead",
                s.name
            ));
        }
        if s.rounds > 1 {
            problems.push(format!(
                "stage \"{}\": {} rounds: a round's histograms are not kept, so rounds cannot \
                 be merged exactly across shards; run each round as its own distributed run \
                 (`rounds 1`, or leave out `--rounds`)",
                s.name, s.rounds
            ));
        }
        if s.until_decided.is_some() {
            problems.push(format!(
                "stage \"{}\": `until-decided` stops when the stage's numbers decide its \
                 assertions, which only the merged shards know; give it a fixed `requests` or \
                 `duration`",
                s.name
            ));
        }
    }
    sla_problems(&plan, &mut problems);
    if !problems.is_empty() {
        return Err(ShardError { problems });
    }
    for s in plan.warmup.iter_mut().chain(plan.stages.iter_mut()) {
        s.slice = slice;
    }
    if slice.index != 0 {
        plan.telemetry = None;
        // One reset before each step, from shard 0, inside the barrier's lead time.
        plan.target.run.reset_cache = None;
    }
    Ok(plan)
}

/// The assertions a sharded run cannot judge as one process would.
fn sla_problems(plan: &Plan, problems: &mut Vec<String>) {
    for a in plan.sla.iter().filter(|a| a.abort_on_fail) {
        problems.push(format!(
            "`assert \"{}\" abort-on-fail=#true`: a shard would abort on its own slice's numbers \
             while the others go on; drop `abort-on-fail` (the merged result judges every \
             assertion)",
            a.assertion.expr
        ));
    }
    for a in plan.sla.iter().filter(|a| a.assertion.on_steady_window()) {
        problems.push(format!(
            "`assert \"{}\"`: each shard finds its own steady-state window from its own share of \
             the load, and the merged result keeps no window to judge it on; judge it on the \
             whole stage (drop the window), or run the stage in one process",
            a.assertion.expr
        ));
    }
}

/// What of the target's run settings a shard cannot carry out as one process would.
fn run_settings(run: crate::protocol::RunSettings) -> Vec<String> {
    let mut problems = Vec::new();
    if run.cache_salt {
        problems.push(
            "`target { cache-salt #true }`: each shard would draw its own salt, so a prefix \
             that requests on different shards share in the plan would not be shared at the \
             server as it is in one process; drop `cache-salt` (with `reset-cache` for a cold \
             cache)"
                .to_string(),
        );
    }
    if run.network.is_some() {
        problems.push(
            "`target { network … }`: each shard would run its own shaping proxy with the same \
             seeded draws, and the merged result could account for one of them only; run the \
             emulation unsharded, or shape the link outside infermeter (tc netem)"
                .to_string(),
        );
    }
    problems
}
