//! The rate and concurrency searches: probe a stage's load at chosen rates (short open-loop
//! Poisson stages) or client counts (short closed-loop stages), run with the ordinary stage
//! machinery, and ask the caller's verdict (its SLAs) on each. Bracketing doubles the load from
//! `from` until a probe fails (or `to` passes), then bisection halves the bracket until
//! `(fail − pass) / pass ≤ tolerance` (or, for client counts, the bracket is adjacent), within
//! the caps on probes and time.

use std::sync::Arc;
use std::time::Instant;

use super::collect::RowSink;
use super::run::StageDecision;
use super::stage::{StageRef, StageRunner};
use crate::metrics::{ProbeResult, SearchSummary, StageSummary};
use crate::plan::{Plan, StagePlan, probe_stage};
use crate::scenario::{SearchAxis, SearchSpec};

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

/// [`next_rate`] over whole client counts: doubling from `from`, bisection down to adjacent
/// counts (or the tolerance, whichever comes first).
pub fn next_clients(
    spec: &SearchSpec,
    pass: Option<u32>,
    fail: Option<u32>,
    probed: usize,
) -> Result<u32, &'static str> {
    let from = (spec.from.0.round() as u32).max(1);
    let to = (spec.to.0.round() as u32).max(from);
    let capped = probed >= spec.max_probes as usize;
    match (pass, fail) {
        (None, None) if capped => Err("max_probes"),
        (None, None) => Ok(from),
        (None, Some(_)) => Err("lower_bound_fails"),
        (Some(p), None) if p >= to => Err("upper_bound_passes"),
        (Some(_), None) if capped => Err("max_probes"),
        (Some(p), None) => Ok(p.saturating_mul(2).min(to)),
        (Some(p), Some(f)) if f <= p + 1 => Err("converged"),
        (Some(p), Some(f)) if f64::from(f - p) / f64::from(p) <= spec.tolerance => Err("converged"),
        (Some(_), Some(_)) if capped => Err("max_probes"),
        (Some(p), Some(f)) => Ok(p + (f - p) / 2),
    }
}

/// The next load on the search's axis.
fn next_load(
    spec: &SearchSpec,
    pass: Option<f64>,
    fail: Option<f64>,
    probed: usize,
) -> Result<f64, &'static str> {
    match spec.axis {
        SearchAxis::Rate => next_rate(spec, pass, fail, probed),
        SearchAxis::Concurrency => {
            let whole = |v: Option<f64>| v.map(|x| x.round() as u32);
            next_clients(spec, whole(pass), whole(fail), probed).map(f64::from)
        }
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
                concurrency: spec.axis == SearchAxis::Concurrency,
                ..SearchSummary::default()
            },
            error: None,
        };
        let stop = loop {
            if self.opts.interrupt.is_cancelled() {
                break "interrupted";
            }
            let rate = match next_load(spec, pass, fail, out.probes.len()) {
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
            let offered = point
                .offered_rate_per_s
                .or(point.clients.map(f64::from))
                .unwrap_or(rate);
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
                rate_per_s: match point.clients {
                    Some(_) => summary.throughput.requests_per_s,
                    None => offered,
                },
                clients: point.clients,
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
        if spec.axis == SearchAxis::Concurrency {
            out.summary.answer_clients = pass.map(|p| p.round() as u32);
        } else {
            out.summary.answer_rate_per_s = pass;
        }
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
            axis: SearchAxis::Rate,
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

    /// Drives `next_clients` against a server whose SLAs hold up to `capacity` clients.
    fn simulate_clients(
        s: &SearchSpec,
        capacity: u32,
    ) -> (Option<u32>, Option<u32>, &'static str, Vec<u32>) {
        let (mut pass, mut fail, mut probes) = (None, None, Vec::new());
        loop {
            match next_clients(s, pass, fail, probes.len()) {
                Err(why) => return (pass, fail, why, probes),
                Ok(c) => {
                    probes.push(c);
                    if c <= capacity {
                        pass = Some(pass.map_or(c, |p: u32| p.max(c)));
                    } else {
                        fail = Some(fail.map_or(c, |f: u32| f.min(c)));
                    }
                }
            }
        }
    }

    fn clients_spec(from: u32, to: u32, tolerance: f64) -> SearchSpec {
        SearchSpec {
            from: Rate(f64::from(from)),
            to: Rate(f64::from(to)),
            axis: SearchAxis::Concurrency,
            tolerance,
            ..spec()
        }
    }

    #[test]
    fn client_search_finds_the_exact_count_with_a_tiny_tolerance() {
        let s = clients_spec(1, 256, 0.001);
        for capacity in [1, 2, 3, 4, 5, 7, 13, 100, 255] {
            let (pass, fail, why, probes) = simulate_clients(&s, capacity);
            assert_eq!(why, "converged", "{capacity}: {probes:?}");
            assert_eq!(pass, Some(capacity), "{probes:?}");
            assert_eq!(fail, Some(capacity + 1), "{probes:?}");
            // Whole counts only, never the same one twice.
            let mut seen = probes.clone();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), probes.len(), "{probes:?}");
            assert!(probes.len() <= 17, "{probes:?}");
        }
        // Doubling from `from`: 1, 2, 4, 8 then bisection between 4 and 8.
        let (_, _, _, probes) = simulate_clients(&s, 5);
        assert_eq!(probes, [1, 2, 4, 8, 6, 5]);
    }

    #[test]
    fn client_search_bounds_tolerance_and_caps() {
        let s = clients_spec(2, 64, 0.001);
        assert_eq!(simulate_clients(&s, 100).2, "upper_bound_passes");
        assert_eq!(simulate_clients(&s, 64).0, Some(64));
        let (pass, _, why, probes) = simulate_clients(&s, 1);
        assert_eq!((pass, why, probes), (None, "lower_bound_fails", vec![2]));
        // A 25 % tolerance stops once the bracket is within it.
        let (pass, fail, why, _) = simulate_clients(&clients_spec(1, 256, 0.25), 100);
        let (p, f) = (pass.unwrap(), fail.unwrap());
        assert_eq!(why, "converged");
        assert!(
            p <= 100 && 100 < f && f64::from(f - p) / f64::from(p) <= 0.25,
            "{p}..{f}"
        );
        let capped = SearchSpec {
            max_probes: 3,
            ..clients_spec(1, 256, 0.001)
        };
        assert_eq!(simulate_clients(&capped, 50).2, "max_probes");
        assert_eq!(simulate_clients(&capped, 50).3.len(), 3);
    }
}
