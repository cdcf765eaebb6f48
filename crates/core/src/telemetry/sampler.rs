//! The running sampler: one dedicated thread per NVML source (NVML calls block) and one tokio
//! task per Prometheus endpoint, each sampling every `interval` and taking an extra reading at
//! every stage boundary. Nothing here touches the request hot path: the runner only sends
//! stage names on channels.

use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};

use super::config::{SourceConfig, TelemetryConfig};
use super::error::{ScrapeError, TelemetryError};
use super::gpu::GpuDevice;
use super::kind::PrometheusKind;
use super::nvml::{GpuOpenError, open_nvml};
use super::prometheus::{PromOutcome, probe_all, run_prometheus};
use super::record::GpuRecorder;
use super::report::{GpuPoint, StageTelemetry, TelemetryReport};
use super::source::{Msg, Recent, StartAck, push_recent, push_warning};
use super::stability::{StabilityRule, StabilityVerdict, assess_stability};

/// How long a stage waits for the sources' starting points (a scrape's own timeout is 1–5 s).
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens the GPUs of an `nvml` source (in the sampling thread); the error says what is missing.
pub type GpuOpener =
    Box<dyn FnOnce(Option<&[u32]>) -> Result<Vec<Box<dyn GpuDevice>>, GpuOpenError> + Send>;

fn real_nvml() -> GpuOpener {
    Box::new(|devices| {
        open_nvml(devices).map(|v| {
            v.into_iter()
                .map(|d| Box::new(d) as Box<dyn GpuDevice>)
                .collect()
        })
    })
}

pub struct Telemetry;

impl Telemetry {
    /// Starts every configured source. Fails only when a `required` source is unavailable;
    /// an optional one becomes a warning. Blocks briefly: NVML initialisation and one probe
    /// scrape per endpoint (at most a few seconds, on a helper thread, so it is safe to call
    /// from inside any tokio runtime). Sampling tasks run on `rt`.
    pub fn start(config: &TelemetryConfig, rt: &Handle) -> Result<TelemetryHandle, TelemetryError> {
        Self::start_with_gpus(config, rt, real_nvml)
    }

    /// [`Telemetry::start`] from async code: the blocking start-up runs on the blocking pool,
    /// so the calling runtime (even a single-threaded one) keeps serving its own tasks.
    pub async fn start_async(config: TelemetryConfig) -> Result<TelemetryHandle, TelemetryError> {
        Self::start_async_with_gpus(config, real_nvml).await
    }

    /// [`Telemetry::start_async`] with another way to open `nvml` sources.
    pub async fn start_async_with_gpus(
        config: TelemetryConfig,
        opener: impl Fn() -> GpuOpener + Send + 'static,
    ) -> Result<TelemetryHandle, TelemetryError> {
        let rt = Handle::current();
        tokio::task::spawn_blocking(move || Self::start_with_gpus(&config, &rt, opener))
            .await
            .map_err(|e| TelemetryError::Died(e.to_string()))?
    }

    /// [`Telemetry::start`] with another way to open `nvml` sources (tests use fakes).
    pub fn start_with_gpus(
        config: &TelemetryConfig,
        rt: &Handle,
        opener: impl Fn() -> GpuOpener,
    ) -> Result<TelemetryHandle, TelemetryError> {
        if config.interval.as_std().is_zero() {
            return Err(TelemetryError::Invalid("interval must be > 0".into()));
        }
        let started = Instant::now();
        let interval = config.interval.as_std();
        let recent: Recent = Arc::default();
        let warnings: Arc<Mutex<Vec<String>>> = Arc::default();
        let mut handle = TelemetryHandle {
            started,
            interval_s: config.interval.as_secs_f64(),
            senders: Vec::new(),
            sources: Vec::new(),
            marks: Mutex::new(Vec::new()),
            warnings: Arc::clone(&warnings),
            recent: Arc::clone(&recent),
        };

        let urls: Vec<String> = config
            .sources
            .iter()
            .filter_map(|s| match s {
                SourceConfig::Prometheus { url, .. } => Some(url.to_string()),
                SourceConfig::Nvml { .. } => None,
            })
            .collect();
        let mut probes = probe_all(&urls)?.into_iter();

        for source in &config.sources {
            match source {
                SourceConfig::Nvml { devices, required } => {
                    handle.add_nvml(opener(), devices.clone(), *required, interval)?;
                }
                SourceConfig::Prometheus {
                    url,
                    required,
                    kind,
                } => {
                    let probe = probes.next().unwrap_or(Err(ScrapeError::NotProbed));
                    if let Err(reason) = probe {
                        if *required {
                            return Err(TelemetryError::PrometheusUnavailable {
                                url: crate::redact::secrets(&url.to_string()).into_owned(),
                                reason,
                            });
                        }
                        push_warning(
                            &warnings,
                            format!(
                                "telemetry source `prometheus \"{url}\"` unreachable, not sampled: {reason}"
                            ),
                        );
                        continue;
                    }
                    handle.add_prometheus(rt, url.to_string(), *kind, interval);
                }
            }
        }
        Ok(handle)
    }
}

fn gpu_loop(
    devs: &[Box<dyn GpuDevice>],
    rx: &std_mpsc::Receiver<Msg>,
    started: Instant,
    interval: std::time::Duration,
    recent: &Recent,
) -> GpuRecorder {
    let mut rec = GpuRecorder::new("nvml");
    let read = || {
        let frame: Vec<_> = devs.iter().map(|d| (d.id(), d.name(), d.read())).collect();
        (started.elapsed().as_secs_f64(), frame)
    };
    let mut next = Instant::now();
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(Msg::StageStarted(name, ack)) => {
                let (t, f) = read();
                rec.stage_started(&name, t, &f);
                ack.done();
            }
            Ok(Msg::StageEnded(name)) => {
                let (t, f) = read();
                rec.stage_ended(&name, t, &f);
            }
            Ok(Msg::Finish) | Err(std_mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std_mpsc::RecvTimeoutError::Timeout) => {
                let (t, f) = read();
                for (id, _, r) in &f {
                    let p = GpuPoint {
                        t_s: t,
                        reading: r.clone(),
                    };
                    push_recent(recent, format!("nvml/{id}"), p);
                }
                rec.sample(t, &f);
                next += interval;
                // A stalled driver call must not cause a burst of catch-up samples.
                let now = Instant::now();
                if next < now {
                    next = now + interval;
                }
            }
        }
    }
    rec
}

enum Sender {
    Thread(std_mpsc::Sender<Msg>),
    Task(mpsc::UnboundedSender<Msg>),
}

impl Sender {
    /// False when the source already stopped (it has nothing left to record).
    fn send(&self, m: Msg) -> bool {
        match self {
            Sender::Thread(tx) => tx.send(m).is_ok(),
            Sender::Task(tx) => tx.send(m).is_ok(),
        }
    }
}

enum SourceDone {
    Gpu(oneshot::Receiver<GpuRecorder>),
    Prometheus(tokio::task::JoinHandle<PromOutcome>),
}

struct StageMark {
    name: String,
    start_s: f64,
    end_s: Option<f64>,
}

/// The running sampler. Dropping it stops the sources without a report.
pub struct TelemetryHandle {
    started: Instant,
    interval_s: f64,
    senders: Vec<Sender>,
    sources: Vec<SourceDone>,
    marks: Mutex<Vec<StageMark>>,
    warnings: Arc<Mutex<Vec<String>>>,
    recent: Recent,
}

impl TelemetryHandle {
    /// Starts an `nvml` source's sampling thread, which opens the GPUs itself (NVML calls
    /// block); waits until they are open. An optional source that cannot open them becomes a
    /// warning.
    fn add_nvml(
        &mut self,
        open: GpuOpener,
        devices: Option<Vec<u32>>,
        required: bool,
        interval: std::time::Duration,
    ) -> Result<(), TelemetryError> {
        let (tx, rx) = std_mpsc::channel();
        let (done_tx, done_rx) = oneshot::channel();
        let (ready_tx, ready_rx) = std_mpsc::sync_channel(1);
        let recent = Arc::clone(&self.recent);
        let started = self.started;
        std::thread::Builder::new()
            .name("infermeter-nvml".into())
            .spawn(move || {
                let devs = match open(devices.as_deref()) {
                    Ok(d) => {
                        let _ = ready_tx.send(Ok(()));
                        d
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let rec = gpu_loop(&devs, &rx, started, interval, &recent);
                let _ = done_tx.send(rec);
            })
            .map_err(TelemetryError::Spawn)?;
        match ready_rx.recv() {
            Ok(Ok(())) => {
                self.senders.push(Sender::Thread(tx));
                self.sources.push(SourceDone::Gpu(done_rx));
            }
            Ok(Err(reason)) if required => {
                return Err(TelemetryError::NvmlUnavailable { reason });
            }
            Ok(Err(reason)) => push_warning(
                &self.warnings,
                format!("telemetry source `nvml` unavailable, not sampled: {reason}"),
            ),
            Err(_) => {
                return Err(TelemetryError::Died("the NVML thread died".into()));
            }
        }
        Ok(())
    }

    /// Starts a (probed, reachable) Prometheus source's sampling task on `rt`.
    fn add_prometheus(
        &mut self,
        rt: &Handle,
        url: String,
        kind: Option<PrometheusKind>,
        interval: std::time::Duration,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = rt.spawn(run_prometheus(
            url,
            kind,
            rx,
            self.started,
            interval,
            Arc::clone(&self.warnings),
            Arc::clone(&self.recent),
        ));
        self.senders.push(Sender::Task(tx));
        self.sources.push(SourceDone::Prometheus(task));
    }

    /// Seconds since telemetry started: the time base of every series.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    pub fn stage_started(&self, name: &str) {
        self.start_stage(name, &Arc::default());
    }

    /// Like [`stage_started`](Self::stage_started), and returns once every source has read its
    /// starting point (at most a few seconds): a stage that started sending before would find
    /// its first requests counted in the servers' baseline.
    pub async fn stage_started_read(&self, name: &str) {
        let ack = Arc::new(StartAck::default());
        let want = self.start_stage(name, &ack);
        ack.wait(want, START_WAIT).await;
    }

    /// Marks the start and tells the sources; how many were told.
    fn start_stage(&self, name: &str, ack: &Arc<StartAck>) -> usize {
        if let Ok(mut m) = self.marks.lock() {
            m.push(StageMark {
                name: name.to_string(),
                start_s: self.elapsed_s(),
                end_s: None,
            });
        }
        self.senders
            .iter()
            .filter(|s| s.send(Msg::StageStarted(name.to_string(), ack.clone())))
            .count()
    }

    pub fn stage_ended(&self, name: &str) {
        if let Ok(mut m) = self.marks.lock()
            && let Some(mark) = m
                .iter_mut()
                .rev()
                .find(|k| k.name == name && k.end_s.is_none())
        {
            mark.end_s = Some(self.elapsed_s());
        }
        for s in &self.senders {
            s.send(Msg::StageEnded(name.to_string()));
        }
    }

    /// Recent GPU points per `source/device`, oldest first.
    pub fn recent_gpu_points(&self) -> Vec<(String, Vec<GpuPoint>)> {
        self.recent
            .lock()
            .map(|m| {
                m.iter()
                    .map(|(k, q)| (k.clone(), q.iter().cloned().collect()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The warm-up rule on the recent GPU points, or on `recent_ttfts_ms` without GPU data.
    pub fn stability(&self, rule: &StabilityRule, recent_ttfts_ms: &[f64]) -> StabilityVerdict {
        let recent = self.recent_gpu_points();
        let views: Vec<(&str, &[GpuPoint])> = recent
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        assess_stability(rule, &views, recent_ttfts_ms)
    }

    /// Stops every source and assembles the report.
    pub async fn finish(mut self) -> TelemetryReport {
        for s in &self.senders {
            s.send(Msg::Finish);
        }
        let marks = self
            .marks
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default();
        let mut report = TelemetryReport {
            interval_s: self.interval_s,
            stages: marks
                .iter()
                .map(|m| StageTelemetry {
                    name: m.name.clone(),
                    start_s: m.start_s,
                    end_s: m.end_s,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        // Every source got the same messages in the same order, so its k-th stage is the
        // k-th mark.
        for source in std::mem::take(&mut self.sources) {
            let (gpu, server) = match source {
                SourceDone::Gpu(rx) => match rx.await {
                    Ok(rec) => (Some(rec), None),
                    Err(_) => continue,
                },
                SourceDone::Prometheus(task) => match task.await {
                    Ok(out) => (out.gpus, out.server),
                    Err(e) => {
                        push_warning(&self.warnings, format!("a telemetry task failed: {e}"));
                        continue;
                    }
                },
            };
            if let Some(rec) = gpu {
                let (series, stages) = rec.finish();
                report.gpus.extend(series);
                for (stage, (_, sums)) in report.stages.iter_mut().zip(stages) {
                    stage.gpus.extend(sums);
                }
            }
            if let Some(rec) = server {
                let (series, stages) = rec.finish();
                report.servers.push(series);
                for (stage, (_, sum)) in report.stages.iter_mut().zip(stages) {
                    stage.servers.push(sum);
                }
            }
        }
        for stage in &report.stages {
            for g in &stage.gpus {
                if g.energy_counter_resets > 0 {
                    report.warnings.push(format!(
                        "stage `{}`: the energy counter of GPU {} ({}) went back {} time(s); \
                         those intervals were estimated from power draw",
                        stage.name, g.device, g.source, g.energy_counter_resets
                    ));
                }
            }
        }
        let mut warnings = self.warnings.lock().map(|w| w.clone()).unwrap_or_default();
        warnings.append(&mut report.warnings);
        report.warnings = warnings;
        report
    }
}
