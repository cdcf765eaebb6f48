//! The rate search: probes a stage's load at chosen rates, each a short open-loop Poisson
//! stage run with the ordinary stage machinery, and asks the caller's verdict (its SLAs) on
//! each. Bracketing doubles the rate from `from` until a probe fails (or `to` passes), then
//! bisection halves the bracket until `(fail − pass) / pass ≤ tolerance`, within the caps on
//! probes and time.

use std::sync::Arc;
use std::time::Instant;

use super::collect::RowSink;
use super::run::StageDecision;
use super::stage::{StageRef, StageRunner};
use crate::metrics::{ProbeResult, SearchSummary, StageSummary};
use crate::plan::{Plan, StagePlan, probe_stage};
use crate::scenario::SearchSpec;

/// What the search ran: every probe's summary (in order) and the search's summary.
pub(super) struct SearchOutput {
    pub probes: Vec<StageSummary>,
    pub summary: SearchSummary,
    pub error: Option<String>,
}

/// Chooses the next rate from what is known; `None` when the search is over (with why).
pub fn next_rate(
    spec: &SearchSpec,
    pass: Option<f64>,
    fail: Option<f64>,
    probed: usize,
) -> Result<f64, &'static str> {
    let (from, to) = (spec.from.per_sec(), spec.to.per_sec());
    let capped = probed >= spec.max_probes as usize;
    match (pass, fail) {
        (None, None) if capped => Err("max_probes"),
        (None, None) => Ok(from),
        (None, Some(_)) => Err("lower_bound_fails"),
        (Some(p), None) if p >= to => Err("upper_bound_passes"),
        (Some(_), None) if capped => Err("max_probes"),
        (Some(p), None) => Ok((p * 2.0).min(to)),
        (Some(p), Some(f)) if (f - p) / p <= spec.tolerance => Err("converged"),
        (Some(_), Some(_)) if capped => Err("max_probes"),
        (Some(p), Some(f)) => Ok((p + f) / 2.0),
    }
}

impl StageRunner<'_> {
    pub(super) async fn run_search(
        &self,
        search: &StagePlan,
        spec: &SearchSpec,
        sink: &mut Option<RowSink>,
        verdict: &mut (dyn FnMut(&StageSummary) -> StageDecision + Send),
    ) -> SearchOutput {
        let started = Instant::now();
        let (mut pass, mut fail) = (None::<f64>, None::<f64>);
        let mut out = SearchOutput {
            probes: Vec::new(),
            summary: SearchSummary {
                group: search.name.clone(),
                tolerance: spec.tolerance,
                from: spec.from.per_sec(),
                to: spec.to.per_sec(),
                ..SearchSummary::default()
            },
            error: None,
        };
        let stop = loop {
            if self.opts.interrupt.is_cancelled() {
                break "interrupted";
            }
            let rate = match next_rate(spec, pass, fail, out.probes.len()) {
                Ok(r) => r,
                Err(why) => break why,
            };
            if started.elapsed() >= spec.max_time.as_std() {
                break "max_time";
            }
            let probe = match probe_stage(search, spec, rate) {
                Ok(p) => p,
                Err(e) => {
                    out.error = Some(e.to_string());
                    break "error";
                }
            };
            let mut plan: Plan = (*self.plan).clone();
            plan.stages.push(probe);
            let index = plan.stages.len() - 1;
            let runner = StageRunner {
                plan: Arc::new(plan),
                client: self.client.clone(),
                template: self.template.clone(),
                factory: self.factory.clone(),
                base_url: self.base_url.clone(),
                cpu: self.cpu.clone(),
                opts: self.opts,
            };
            let (mut summary, err) = runner.run_stage(StageRef::Stage(index), sink).await;
            out.error = out.error.or(err);
            let mut point = runner.plan.stages[index]
                .profile
                .clone()
                .unwrap_or_default();
            point.assess(&summary);
            summary.profile = Some(point.clone());
            let failed = match verdict(&summary) {
                StageDecision::Failed(why) => why,
                StageDecision::Abort(why) => vec![why],
                StageDecision::Continue => Vec::new(),
            };
            let passed = failed.is_empty();
            let offered = point.offered_rate_per_s.unwrap_or(rate);
            if passed {
                pass = Some(pass.map_or(offered, |p: f64| p.max(offered)));
            } else {
                fail = Some(fail.map_or(offered, |f: f64| f.min(offered)));
            }
            if let Some(p) = summary.profile.as_mut() {
                p.passed = Some(passed);
            }
            out.summary.probes.push(ProbeResult {
                stage: summary.name.clone(),
                rate_per_s: offered,
                passed,
                saturated: point.saturated,
                client_bound: point.client_bound,
                ttft_p99_ms: summary.latency.ttft_ms.p99,
                itl_p99_ms: summary.latency.itl_ms.p99,
                output_tokens_per_s: summary.throughput.output_tokens_per_s,
                requests_per_s: summary.throughput.requests_per_s,
                failed,
            });
            out.probes.push(summary);
        };
        out.summary.stop_reason = stop.to_string();
        out.summary.answer_rate_per_s = pass;
        out.summary.bracket_low = pass;
        out.summary.bracket_high = fail;
        out.summary.elapsed_s = started.elapsed().as_secs_f64();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Duration, Rate};

    fn spec() -> SearchSpec {
        SearchSpec {
            from: Rate(1.0),
            to: Rate(100.0),
            tolerance: 0.05,
            max_probes: 30,
            max_time: Duration::from_secs_f64(60.0),
            probe: Duration::from_secs_f64(1.0),
        }
    }

    /// Drives `next_rate` against a server whose SLAs hold below `capacity`.
    fn simulate(s: &SearchSpec, capacity: f64) -> (Option<f64>, Option<f64>, &'static str, usize) {
        let (mut pass, mut fail, mut n) = (None, None, 0);
        loop {
            match next_rate(s, pass, fail, n) {
                Err(why) => return (pass, fail, why, n),
                Ok(r) => {
                    n += 1;
                    if r <= capacity {
                        pass = Some(pass.map_or(r, |p: f64| p.max(r)));
                    } else {
                        fail = Some(fail.map_or(r, |f: f64| f.min(r)));
                    }
                }
            }
        }
    }

    #[test]
    fn converges_within_tolerance_on_a_step_function() {
        for capacity in [1.5, 7.0, 33.3, 99.0] {
            let (pass, fail, why, n) = simulate(&spec(), capacity);
            let (p, f) = (pass.unwrap(), fail.unwrap());
            assert_eq!(why, "converged");
            assert!(p <= capacity && capacity < f, "{p} {capacity} {f}");
            assert!((f - p) / p <= 0.05);
            assert!(n < 20, "{n} probes");
        }
    }

    #[test]
    fn bounds_and_caps_end_the_search() {
        assert_eq!(simulate(&spec(), 500.0).2, "upper_bound_passes");
        let (pass, _, why, n) = simulate(&spec(), 0.5);
        assert_eq!((pass, why, n), (None, "lower_bound_fails", 1));
        let capped = SearchSpec {
            max_probes: 4,
            ..spec()
        };
        let (_, _, why, n) = simulate(&capped, 33.3);
        assert_eq!((why, n), ("max_probes", 4));
    }
}
