//! Scraping a Prometheus endpoint: the start-up probe, and the sampling task that feeds the
//! server (vLLM, SGLang, llama.cpp) or GPU (dcgm-exporter) recorder. An endpoint that stops
//! answering mid-run gives one warning per outage; its series simply has a gap or ends.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use super::error::{ScrapeError, TelemetryError};
use super::expo::{Exposition, parse_exposition};
use super::kind::{PrometheusKind, detect_kind};
use super::normalize::{Normalized, normalize};
use super::record::{GpuFrame, GpuRecorder, ServerRecorder};
use super::report::GpuPoint;
use super::source::{Msg, Recent, push_recent, push_warning};

/// How long the start-up probe waits for each endpoint.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What a Prometheus source recorded.
pub(crate) struct PromOutcome {
    pub server: Option<ServerRecorder>,
    pub gpus: Option<GpuRecorder>,
}

fn client(timeout: Duration) -> Result<reqwest::Client, ScrapeError> {
    // reqwest is built with `rustls-no-provider`: a provider must be installed first. A second
    // install fails harmlessly.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(ScrapeError::Client)
}

async fn scrape(client: &reqwest::Client, url: &str) -> Result<Exposition, ScrapeError> {
    let resp = client.get(url).send().await.map_err(|e| {
        if e.is_connect() {
            ScrapeError::Connect(e.without_url())
        } else if e.is_timeout() {
            ScrapeError::Timeout
        } else {
            ScrapeError::Request(e.without_url())
        }
    })?;
    let status = resp.status();
    if !status.is_success() {
        return Err(ScrapeError::Status(status));
    }
    let body = crate::files::read_answer(resp, MAX_EXPOSITION)
        .await
        .map_err(|e| match e {
            crate::files::AnswerError::TooLarge(limit) => ScrapeError::TooLarge(limit),
            crate::files::AnswerError::Read(e) => ScrapeError::Body(e),
        })?;
    Ok(parse_exposition(&String::from_utf8_lossy(&body)))
}

/// The most of one `/metrics` page read: vLLM's, with every histogram and a few LoRA
/// adapters, is a few hundred kilobytes; a page that goes on past this is a failed scrape.
pub const MAX_EXPOSITION: usize = 16 << 20;

/// Scrapes every URL once, on a helper thread with its own runtime so that the caller may
/// itself be inside a (single-threaded) runtime. One result per URL, in order.
pub(crate) fn probe_all(urls: &[String]) -> Result<Vec<Result<(), ScrapeError>>, TelemetryError> {
    if urls.is_empty() {
        return Ok(Vec::new());
    }
    let urls = urls.to_vec();
    let thread = std::thread::Builder::new()
        .name("infermeter-probe".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(ScrapeError::Runtime)?;
            rt.block_on(async {
                let client = client(PROBE_TIMEOUT)?;
                let probes = urls.iter().map(|u| {
                    let client = &client;
                    async move { scrape(client, u).await.map(|_| ()) }
                });
                Ok(futures_util::future::join_all(probes).await)
            })
        })
        .map_err(TelemetryError::Spawn)?;
    thread
        .join()
        .map_err(|_| TelemetryError::Died("the probe thread panicked".into()))?
        .map_err(TelemetryError::Probe)
}

/// Per-source state that outlives one scrape.
struct Source {
    url: String,
    kind: Option<PrometheusKind>,
    server: Option<ServerRecorder>,
    gpus: Option<GpuRecorder>,
    warnings: Arc<Mutex<Vec<String>>>,
    recent: Recent,
    /// In an outage: the failure was already reported.
    down: bool,
    unknown_warned: bool,
}

enum Event<'a> {
    Sample,
    Started(&'a str),
    Ended(&'a str),
}

impl Source {
    fn normalized(&mut self, t: f64, e: Result<Exposition, ScrapeError>) -> Option<Normalized> {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                if !self.down {
                    push_warning(
                        &self.warnings,
                        format!(
                            "telemetry source `prometheus \"{}\"`: scrape failed at {t:.1}s ({err}); \
                             its series has no data until it answers again",
                            self.url
                        ),
                    );
                }
                self.down = true;
                return None;
            }
        };
        if self.down {
            push_warning(
                &self.warnings,
                format!(
                    "telemetry source `prometheus \"{}\"` answered again at {t:.1}s",
                    self.url
                ),
            );
            self.down = false;
        }
        if self.kind.is_none() {
            self.kind = detect_kind(&e);
        }
        let Some(kind) = self.kind else {
            if !self.unknown_warned {
                push_warning(
                    &self.warnings,
                    format!(
                        "telemetry source `prometheus \"{}\"`: no vLLM, SGLang, llama.cpp or \
                         dcgm-exporter metrics found; set `kind` if the names are custom",
                        self.url
                    ),
                );
                self.unknown_warned = true;
            }
            return None;
        };
        Some(normalize(kind, &e))
    }

    fn record(&mut self, t: f64, n: Option<Normalized>, ev: Event<'_>) {
        let is_dcgm = self.kind == Some(PrometheusKind::DcgmExporter);
        // Series are named by the source's URL, which results and reports show.
        let shown = crate::redact::secrets(&self.url).into_owned();
        // Recorders exist from the first event on, so stage bookkeeping stays aligned with
        // the handle's marks even when early scrapes failed.
        if is_dcgm || self.kind.is_none() {
            let gpus = self.gpus.get_or_insert_with(|| GpuRecorder::new(&shown));
            let frame: Vec<_> = n
                .as_ref()
                .map(|n| {
                    n.gpus
                        .iter()
                        .map(|(id, (model, r))| (id.clone(), model.clone(), r.clone()))
                        .collect()
                })
                .unwrap_or_default();
            if matches!(ev, Event::Sample) {
                for (id, _, r) in &frame {
                    let p = GpuPoint {
                        t_s: t,
                        reading: r.clone(),
                    };
                    push_recent(&self.recent, format!("{shown}/{id}"), p);
                }
            }
            feed_gpu(gpus, t, &frame, &ev);
        }
        if !is_dcgm {
            let kind = self.kind;
            let server = self
                .server
                .get_or_insert_with(|| ServerRecorder::new(&shown, kind));
            server.kind = server.kind.or(kind);
            let (r, latency) = match n {
                Some(n) => (n.server, n.latency),
                None => (None, None),
            };
            match ev {
                Event::Sample => server.sample(t, r.as_ref()),
                Event::Started(name) => {
                    server.stage_started(name, t, r.as_ref());
                    server.stage_edge(name, latency, true);
                }
                Event::Ended(name) => {
                    server.stage_ended(name, t, r.as_ref());
                    server.stage_edge(name, latency, false);
                }
            }
        }
    }

    fn outcome(self) -> PromOutcome {
        match self.kind {
            Some(PrometheusKind::DcgmExporter) => PromOutcome {
                server: None,
                gpus: self.gpus,
            },
            // Kind never known: keep the (empty) server recorder so stages line up.
            _ => PromOutcome {
                server: self.server,
                gpus: None,
            },
        }
    }
}

fn feed_gpu(gpus: &mut GpuRecorder, t: f64, frame: &GpuFrame, ev: &Event<'_>) {
    match ev {
        Event::Sample => gpus.sample(t, frame),
        Event::Started(name) => gpus.stage_started(name, t, frame),
        Event::Ended(name) => gpus.stage_ended(name, t, frame),
    }
}

/// The sampling task of one endpoint; returns when told to finish or when the handle is gone.
pub(crate) async fn run_prometheus(
    url: String,
    kind: Option<PrometheusKind>,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    started: Instant,
    interval: Duration,
    warnings: Arc<Mutex<Vec<String>>>,
    recent: Recent,
) -> PromOutcome {
    let timeout = interval.clamp(Duration::from_secs(1), Duration::from_secs(5));
    let mut src = Source {
        url,
        kind,
        server: None,
        gpus: None,
        warnings,
        recent,
        down: false,
        unknown_warned: false,
    };
    let client = match client(timeout) {
        Ok(c) => c,
        Err(e) => {
            push_warning(&src.warnings, e.to_string());
            return src.outcome();
        }
    };
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let msg = tokio::select! {
            _ = tick.tick() => None,
            m = rx.recv() => Some(m),
        };
        let ev = match &msg {
            None => Event::Sample,
            Some(Some(Msg::StageStarted(n, _))) => Event::Started(n),
            Some(Some(Msg::StageEnded(n))) => Event::Ended(n),
            Some(Some(Msg::Finish)) | Some(None) => break,
        };
        // A point is timed when its scrape was sent: the server's state at that moment, and
        // never later than the server was up to answer it.
        let t = started.elapsed().as_secs_f64();
        let scraped = scrape(&client, &src.url).await;
        let n = src.normalized(t, scraped);
        src.record(t, n, ev);
        if let Some(Some(Msg::StageStarted(_, ack))) = &msg {
            ack.done();
        }
    }
    src.outcome()
}
