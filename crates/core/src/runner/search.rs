//! Running a rate or concurrency search: probes (short open-loop Poisson stages at chosen
//! rates, or short closed-loop stages at chosen client counts) run with the ordinary stage
//! machinery, the caller's verdict (its SLAs) on each, and the next load chosen by
//! [`crate::arrival::next_load`] until it says the search is over.

use std::time::Instant;

use super::error::RunProblem;
use super::fold::RowSink;
use super::options::StageDecision;
use super::stage::{StageCall, StageRunner};
use crate::arrival::{SearchAxis, SearchSpec, StopReason, next_load};
use crate::metrics::{LatencyMetric, ProbeResult, ProfilePoint, SearchSummary, StageSummary};
use crate::plan::{StagePlan, probe_stage};

/// What the search ran: every probe's summary (in order) and the search's summary.
pub(super) struct SearchOutput {
    pub probes: Vec<StageSummary>,
    pub summary: SearchSummary,
    pub problems: Vec<RunProblem>,
}

impl SearchOutput {
    fn new(search: &StagePlan, spec: &SearchSpec) -> Self {
        SearchOutput {
            probes: Vec::new(),
            summary: SearchSummary {
                group: search.name.clone(),
                tolerance: spec.tolerance,
                from: spec.from.per_sec(),
                to: spec.to.per_sec(),
                concurrency: spec.axis == SearchAxis::Concurrency,
                ..SearchSummary::default()
            },
            problems: Vec::new(),
        }
    }
}

/// A probe as the search summary records it: its load, verdict and deciding figures.
fn probe_result(
    summary: &StageSummary,
    point: &ProfilePoint,
    offered: f64,
    failed: Vec<String>,
) -> ProbeResult {
    ProbeResult {
        stage: summary.name.clone(),
        rate_per_s: match point.point.clients {
            Some(_) => summary.throughput.requests_per_s,
            None => offered,
        },
        clients: point.point.clients,
        passed: failed.is_empty(),
        saturated: point.saturated,
        client_bound: point.client_bound,
        ttft_p99_ms: summary.latency[LatencyMetric::Ttft].p99,
        itl_p99_ms: summary.latency[LatencyMetric::Itl].p99,
        output_tokens_per_s: summary.throughput.output_tokens_per_s,
        requests_per_s: summary.throughput.requests_per_s,
        failed,
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
        let mut out = SearchOutput::new(search, spec);
        let stop = loop {
            if self.opts.interrupt.is_cancelled() {
                break StopReason::Interrupted;
            }
            let rate = match next_load(spec, pass, fail, out.probes.len()) {
                Ok(r) => r,
                Err(why) => break why,
            };
            if started.elapsed() >= spec.max_time.as_std() {
                break StopReason::MaxTime;
            }
            let probe = match probe_stage(search, spec, rate) {
                Ok(p) => p,
                Err(source) => {
                    out.problems.push(RunProblem::Probe {
                        stage: search.name.clone(),
                        source,
                    });
                    break StopReason::Error;
                }
            };
            let (mut summary, problem, _) = self
                .run_stage(
                    &probe,
                    0,
                    sink,
                    None,
                    StageCall {
                        position: Some((out.probes.len() + 1, spec.max_probes as usize)),
                        ..StageCall::default()
                    },
                )
                .await;
            out.problems.extend(problem);
            let mut point = ProfilePoint::planned(probe.profile.clone().unwrap_or_default());
            point.assess(&summary);
            summary.profile = Some(point.clone());
            let failed = match verdict(&summary) {
                StageDecision::Failed(why) => why,
                StageDecision::Abort(why) => vec![why.to_string()],
                StageDecision::Continue => Vec::new(),
            };
            let passed = failed.is_empty();
            let offered = point
                .point
                .offered_rate_per_s
                .or(point.point.clients.map(f64::from))
                .unwrap_or(rate);
            if passed {
                pass = Some(pass.map_or(offered, |p: f64| p.max(offered)));
            } else {
                fail = Some(fail.map_or(offered, |f: f64| f.min(offered)));
            }
            if let Some(p) = summary.profile.as_mut() {
                p.passed = Some(passed);
            }
            out.summary
                .probes
                .push(probe_result(&summary, &point, offered, failed));
            out.probes.push(summary);
        };
        out.summary.stop_reason = stop;
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
