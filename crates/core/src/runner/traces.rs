//! The run's side of trace context: the run's random trace-id part and each stage round's
//! number (which every request's `traceparent` carries, see `protocol::TraceContext`), the
//! OTLP exporter (`otlp`) fed from the collectors, and the OTLP receiver (`otlp-receive`)
//! whose spans are joined to the requests once the last stage is over and laid over the
//! stages' "where the time went".

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use crate::metrics::{Attribution, RequestRecord, StageSummary};
use crate::plan::Plan;
use crate::protocol::Grouping;
use crate::telemetry::otlp::{
    ClientTimes, OtlpExporter, OtlpReceiver, SpanFacts, SpanOf, join, stats_note,
};

/// The run's trace context and where its spans go.
pub(super) struct Traces {
    /// The random high half of every trace id of the run.
    pub run: u64,
    /// What failed at start (the exporter, the receiver's address), said at the end.
    warnings: Vec<String>,
    next: AtomicU16,
    /// Each stage round's name, by its number.
    names: Mutex<Vec<String>>,
    export: Option<Arc<OtlpExporter>>,
    receive: Option<(OtlpReceiver, Arc<ClientTimes>, Duration)>,
}

/// What a stage's collector does with each finished request's record.
pub struct StageSpans {
    export: Option<Arc<OtlpExporter>>,
    client: Option<Arc<ClientTimes>>,
    stage: String,
    sessions: bool,
    /// The models (or adapters) of the stage's `model` split, by label index; empty without one.
    models: Vec<String>,
    /// The stage's clock start, set once sending begins.
    t0: Arc<OnceLock<Instant>>,
    wall: OnceLock<SystemTime>,
}

impl StageSpans {
    /// Exports the request's span and notes its times for the join (collector thread).
    pub(super) fn note(&self, rec: &RequestRecord) {
        if let Some(c) = &self.client {
            c.note(rec);
        }
        let Some(export) = &self.export else {
            return;
        };
        let Some(t0) = self.t0.get() else {
            return;
        };
        let wall = *self.wall.get_or_init(|| SystemTime::now() - t0.elapsed());
        let model = rec
            .labels
            .get(Grouping::Model)
            .and_then(|i| self.models.get(usize::from(i)))
            .map(String::as_str);
        let span = SpanOf {
            stage: &self.stage,
            sessions: self.sessions,
            model,
        };
        export.record(span, rec, wall);
    }
}

impl Traces {
    /// `None` when the plan's requests carry no trace context. Starts the receiver (which
    /// must listen before the server sends) and builds the exporter; either failing is a
    /// telemetry warning, not the run's end.
    pub(super) async fn start(plan: &Plan, model: &str, base_urls: &[&str]) -> Option<Traces> {
        let mut warnings = Vec::new();
        let config = plan.telemetry.clone().unwrap_or_default();
        if !config.trace_context {
            return None;
        }
        let run = loop {
            // Never 0: an all-zero trace id is invalid.
            let r = rand::random::<u64>();
            if r != 0 {
                break r;
            }
        };
        let export = config.otlp.as_ref().and_then(|o| {
            OtlpExporter::start(o, span_facts(plan, model, base_urls))
                .map_err(|e| warnings.push(e.to_string()))
                .ok()
                .map(Arc::new)
        });
        let receive = match &config.otlp_receive {
            Some(r) => match OtlpReceiver::start(&r.listen, run).await {
                Ok(rx) => {
                    tracing::info!("receiving OTLP traces on {}", rx.addr());
                    Some((rx, Arc::new(ClientTimes::default()), r.wait.as_std()))
                }
                Err(e) => {
                    warnings.push(format!("{e}: {}", e.source));
                    None
                }
            },
            None => None,
        };
        Some(Traces {
            run,
            next: AtomicU16::new(0),
            names: Mutex::new(Vec::new()),
            export,
            receive,
            warnings,
        })
    }

    /// The next stage round's number (what its requests' trace ids carry), and what its
    /// collector does with their records.
    pub(super) fn stage(
        &self,
        plan: &Plan,
        stage: &crate::plan::StagePlan,
        t0: Arc<OnceLock<Instant>>,
    ) -> (u16, Option<StageSpans>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut names) = self.names.lock() {
            names.push(stage.name.clone());
        }
        let client = self.receive.as_ref().map(|(_, c, _)| c.clone());
        let spans = (self.export.is_some() || client.is_some()).then(|| StageSpans {
            export: self.export.clone(),
            client,
            stage: crate::redact::secrets(&stage.name).into_owned(),
            sessions: plan.session_plan(stage).is_some(),
            models: stage
                .groups
                .iter()
                .find(|g| g.by == Grouping::Model)
                .map(|g| g.labels.iter().map(|l| l.name.clone()).collect())
                .unwrap_or_default(),
            t0,
            wall: OnceLock::new(),
        });
        (n, spans)
    }

    /// After the last stage: the last spans exported, the server's spans waited for (until
    /// every successful request has one, or the receiver's `wait`), joined and laid over the
    /// stages; what went wrong, as telemetry warnings.
    pub(super) async fn finish(self, summaries: &mut [&mut StageSummary]) -> Vec<String> {
        let mut warnings = self.warnings;
        if let Some(export) = self.export
            && let Ok(e) = Arc::try_unwrap(export)
        {
            let warned = tokio::task::spawn_blocking(move || e.finish()).await;
            if let Ok(Some(why)) = warned {
                warnings.push(why);
            }
        }
        let Some((rx, client, wait)) = self.receive else {
            return warnings;
        };
        let ok: u64 = summaries.iter().map(|s| s.requests.ok).sum();
        rx.wait_for(ok, wait).await;
        let (spans, stats) = rx.finish().await;
        let names = self.names.lock().map(|n| n.clone()).unwrap_or_default();
        let mut by_name = join(&spans, &client, self.run, &names);
        let mut joined = 0;
        for s in summaries.iter_mut() {
            if let Some(a) = by_name.remove(&s.name) {
                joined += a.server_requests.unwrap_or(0);
                lay_over(s, a);
            }
        }
        let note = stats_note(&stats, joined, ok);
        for s in summaries.iter_mut() {
            s.notes.push(note.clone());
        }
        warnings
    }
}

/// The spans' attribution replaces one from Prometheus buckets (its percentiles are exact)
/// but keeps the client's TPOT beside the server's, which spans do not give.
fn lay_over(s: &mut StageSummary, mut a: Attribution) {
    let tpot = &s.latency[crate::metrics::LatencyMetric::Tpot];
    a.client_tpot_ms = (tpot.count > 0).then(|| crate::metrics::ServerDist::of_dist(tpot));
    s.attribution = Some(a);
}

/// Each target URL's host and port, its model and the API's operation name.
fn span_facts(plan: &Plan, model: &str, base_urls: &[&str]) -> SpanFacts {
    let server = |base_url: &str| {
        let url = url::Url::parse(base_url).ok();
        let host = url.as_ref().and_then(|u| u.host_str().map(str::to_string));
        let port = url.and_then(|u| u.port_or_known_default());
        (host.unwrap_or_default(), port.unwrap_or(0))
    };
    SpanFacts {
        model: model.to_string(),
        operation: plan.target.request.api.kind().otlp_operation(),
        servers: base_urls.iter().map(|u| server(u)).collect(),
    }
}
