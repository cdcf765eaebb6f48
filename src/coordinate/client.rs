//! A shard's side of the coordinator: the clock estimate (NTP-style: the least-delayed of a
//! few round trips, its offset taken at the midpoint, its error half the round trip), the
//! barrier the runner waits at before each step, the upload of the shard's result and the
//! wait for the merged verdict. Every call has a deadline; a coordinator not yet up (a pod
//! still starting) is retried until [`ClientConfig::connect_wait`] is over.

use std::time::{Duration, Instant, SystemTime};

use super::error::CoordinateError;
use super::wire::{Arrive, Release, Time, Verdict};
use crate::results::Results;
use crate::runner::{AgreedStart, Barrier, BarrierError, BarrierFuture};

/// Round trips per clock estimate.
const CLOCK_SAMPLES: usize = 8;

/// How a shard reaches its coordinator.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `http://host:port`.
    pub url: String,
    pub shard: u32,
    /// How long to keep retrying a coordinator that does not answer yet.
    pub connect_wait: Duration,
    /// The longest a barrier may hold a shard (the coordinator's own wait, plus margin).
    pub barrier_wait: Duration,
    /// The longest to wait for the merged verdict after sending the result.
    pub verdict_wait: Duration,
}

impl ClientConfig {
    pub fn new(url: impl Into<String>, shard: u32) -> Self {
        ClientConfig {
            url: url.into().trim_end_matches('/').to_string(),
            shard,
            connect_wait: Duration::from_secs(600),
            barrier_wait: Duration::from_secs(900),
            verdict_wait: Duration::from_secs(900),
        }
    }
}

/// A shard's client of the coordinator.
#[derive(Debug, Clone)]
pub struct Client {
    cfg: ClientConfig,
    http: reqwest::Client,
}

/// Coordinator clock minus this clock, and the estimate's error bound (ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockEstimate {
    pub offset_ns: i64,
    pub error_ns: u64,
}

fn unix_ns(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_nanos().min(i64::MAX as u128) as i64,
        Err(e) => -(e.duration().as_nanos().min(i64::MAX as u128) as i64),
    }
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Result<Client, CoordinateError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| CoordinateError::Request {
                url: cfg.url.clone(),
                what: "cannot be reached: the HTTP client did not start".into(),
                source: Some(e),
            })?;
        Ok(Client { cfg, http })
    }

    fn err(&self, what: impl Into<String>, source: Option<reqwest::Error>) -> CoordinateError {
        CoordinateError::Request {
            url: self.cfg.url.clone(),
            what: what.into(),
            source,
        }
    }

    /// Sends `req` (rebuilt each try), retrying connection failures until `connect_wait` is
    /// over; an HTTP error status is final, with the coordinator's message.
    async fn send(
        &self,
        what: &str,
        timeout: Duration,
        req: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, CoordinateError> {
        let give_up = Instant::now() + self.cfg.connect_wait;
        let mut pause = Duration::from_millis(100);
        loop {
            match req().timeout(timeout).send().await {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) => {
                    let status = resp.status();
                    let body = resp.text().await.unwrap_or_default();
                    return Err(self.err(format!("refused {what} ({status}): {body}"), None));
                }
                Err(e) if e.is_connect() && Instant::now() + pause < give_up => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(self.err(format!("did not answer {what}"), Some(e))),
            }
        }
    }

    /// Estimates the coordinator's clock against this one from the least-delayed round trip.
    pub async fn clock(&self) -> Result<ClockEstimate, CoordinateError> {
        let url = format!("{}/v1/time", self.cfg.url);
        let mut best: Option<(u64, i64)> = None;
        for _ in 0..CLOCK_SAMPLES {
            let (t0, m0) = (SystemTime::now(), Instant::now());
            let resp = self
                .send("the clock", Duration::from_secs(5), || self.http.get(&url))
                .await?;
            let time: Time = resp
                .json()
                .await
                .map_err(|e| self.err("sent a malformed time", Some(e)))?;
            let rtt = m0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
            let mid = unix_ns(t0).saturating_add((rtt / 2) as i64);
            if best.is_none_or(|(r, _)| rtt < r) {
                best = Some((rtt, time.unix_ns.saturating_sub(mid)));
            }
        }
        let (rtt, offset_ns) = best.unwrap_or_default();
        Ok(ClockEstimate {
            offset_ns,
            error_ns: rtt / 2,
        })
    }

    async fn arrive(
        &self,
        step: u32,
        stage: &str,
        plan_hash: &str,
    ) -> Result<AgreedStart, CoordinateError> {
        let clock = self.clock().await?;
        let url = format!("{}/v1/barrier", self.cfg.url);
        let body = Arrive {
            shard: self.cfg.shard,
            step,
            stage: stage.to_string(),
            plan_hash: plan_hash.to_string(),
        };
        let resp = self
            .send("the barrier", self.cfg.barrier_wait, || {
                self.http.post(&url).json(&body)
            })
            .await?;
        let r: Release = resp
            .json()
            .await
            .map_err(|e| self.err("sent a malformed release", Some(e)))?;
        let local = i128::from(r.start_unix_ns) - i128::from(clock.offset_ns);
        let at = if local >= 0 {
            SystemTime::UNIX_EPOCH + Duration::from_nanos(local.min(i128::from(u64::MAX)) as u64)
        } else {
            SystemTime::UNIX_EPOCH
        };
        Ok(AgreedStart {
            at,
            agreed_unix_ns: i128::from(r.start_unix_ns),
            clock_offset_ns: clock.offset_ns,
            clock_error_ns: clock.error_ns,
            missing: r.missing,
        })
    }

    /// Sends this shard's result.
    pub async fn submit(&self, results: &Results) -> Result<(), CoordinateError> {
        let url = format!("{}/v1/results", self.cfg.url);
        let body = serde_json::to_vec(results)
            .map_err(|e| self.err(format!("cannot be sent the result: {e}"), None))?;
        self.send("the result", Duration::from_secs(120), || {
            self.http
                .post(&url)
                .header("content-type", "application/json")
                .body(body.clone())
        })
        .await
        .map(|_| ())
    }

    /// Waits for the merged run's verdict.
    pub async fn verdict(&self) -> Result<Verdict, CoordinateError> {
        let url = format!("{}/v1/verdict?shard={}", self.cfg.url, self.cfg.shard);
        let resp = self
            .send("the verdict", self.cfg.verdict_wait, || self.http.get(&url))
            .await?;
        resp.json()
            .await
            .map_err(|e| self.err("sent a malformed verdict", Some(e)))
    }
}

impl Barrier for Client {
    fn wait<'a>(&'a self, step: u32, stage: &'a str, plan_hash: &'a str) -> BarrierFuture<'a> {
        Box::pin(async move {
            self.arrive(step, stage, plan_hash)
                .await
                .map_err(BarrierError::new)
        })
    }
}
