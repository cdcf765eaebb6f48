//! A shard's side of the coordinator: the clock estimate (NTP-style: the least-delayed of a
//! few round trips, its offset taken at the midpoint, its error half the round trip), the
//! barrier the runner waits at before each step, the upload of the shard's result and the
//! wait for the merged verdict.
//!
//! Every call carries the run's token and has a deadline, and every wait ends at once when
//! the interrupt is cancelled (a signal). A coordinator not yet up (a pod still starting) is
//! retried until [`ClientConfig::connect_wait`] is over; once it has answered, for 30 s only
//! (it does not come back). A release that names a start further than [`MAX_LEAD`] ahead is
//! refused, and a verdict counts only when it names the run this shard joined, its plan, and
//! the very result it sent.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::error::CoordinateError;
use super::token::Token;
use super::wire::{Arrive, Release, Time, Verdict};
use crate::results::Results;
use crate::runner::{AgreedStart, Barrier, BarrierError, BarrierFuture};

/// Round trips per clock estimate.
const CLOCK_SAMPLES: usize = 8;
/// The furthest ahead a coordinator may set a step's start (`--lead` is at most this): a
/// start a day away is a broken or hostile coordinator, not a plan.
pub const MAX_LEAD: Duration = Duration::from_secs(60);
/// How long a coordinator that has answered before is retried when it stops accepting
/// connections: it keeps its run in memory, so it does not come back.
const RECONNECT_WAIT: Duration = Duration::from_secs(30);
/// What a barrier or verdict wait may take beyond the coordinator's own deadline.
const MARGIN: Duration = Duration::from_secs(60);

/// How a shard reaches its coordinator.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `http://host:port`.
    pub url: String,
    pub shard: u32,
    /// N of `--shard I/N`.
    pub count: u32,
    pub token: Token,
    /// How long to keep retrying a coordinator that does not answer yet.
    pub connect_wait: Duration,
    /// The longest the first step's barrier may hold a shard (the coordinator's
    /// `--start-wait` and `--lead`, plus a margin).
    pub first_barrier_wait: Duration,
    /// The longest a later step's barrier may hold a shard (`--wait` and `--lead`, plus a
    /// margin).
    pub barrier_wait: Duration,
    /// The longest to wait for the merged verdict after sending the result.
    pub verdict_wait: Duration,
    /// Cancelled (a signal): every wait ends at once.
    pub interrupt: CancellationToken,
}

impl ClientConfig {
    /// The defaults, for the coordinator's default timing (`wait` 60 s, `start_wait` 10 min,
    /// `lead` 500 ms); see [`ClientConfig::with_timing`].
    pub fn new(url: impl Into<String>, shard: u32, count: u32, token: Token) -> Self {
        ClientConfig {
            url: url.into().trim_end_matches('/').to_string(),
            shard,
            count,
            token,
            connect_wait: Duration::from_secs(600),
            first_barrier_wait: Duration::from_secs(600) + MARGIN,
            barrier_wait: Duration::from_secs(60) + MARGIN,
            verdict_wait: Duration::from_secs(60) + MARGIN,
            interrupt: CancellationToken::new(),
        }
    }

    /// The waits for a coordinator that waits `wait` for a late shard (and a last result),
    /// `start_wait` for the first step, and starts steps `lead` after their release.
    pub fn with_timing(mut self, wait: Duration, start_wait: Duration, lead: Duration) -> Self {
        self.first_barrier_wait = start_wait + lead + MARGIN;
        self.barrier_wait = wait + lead + MARGIN;
        self.verdict_wait = wait + MARGIN;
        self
    }
}

/// What the shard has learnt of its run: the run id the coordinator released its steps
/// under, and the digest of the result it sent.
#[derive(Debug, Default)]
struct Learnt {
    run_id: Option<String>,
    sent: Option<String>,
    answered: bool,
}

/// A shard's client of the coordinator.
#[derive(Debug, Clone)]
pub struct Client {
    cfg: ClientConfig,
    http: reqwest::Client,
    /// This process's id: the coordinator admits one process per shard index.
    instance: String,
    learnt: Arc<Mutex<Learnt>>,
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
        let instance: [u8; 16] = rand::random();
        Ok(Client {
            cfg,
            http,
            instance: hex(&instance),
            learnt: Arc::new(Mutex::new(Learnt::default())),
        })
    }

    /// This client with its own interrupt, never cancelled, and at most `wait` of retries:
    /// for handing over the result of a shard that was interrupted.
    pub fn detached(&self, wait: Duration) -> Client {
        let mut c = self.clone();
        c.cfg.interrupt = CancellationToken::new();
        c.cfg.connect_wait = wait;
        c
    }

    fn err(&self, what: impl Into<String>, source: Option<reqwest::Error>) -> CoordinateError {
        CoordinateError::Request {
            url: self.cfg.url.clone(),
            what: what.into(),
            source,
        }
    }

    fn learnt(&self) -> std::sync::MutexGuard<'_, Learnt> {
        self.learnt.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `?shard=I&instance=ID`: who asks.
    fn who(&self) -> String {
        format!("shard={}&instance={}", self.cfg.shard, self.instance)
    }

    /// Sends `req` (rebuilt each try) with the token, retrying connection failures until
    /// `connect_wait` is over (30 s once the coordinator has answered); an HTTP error status
    /// is final, with the coordinator's message. The interrupt ends it at once.
    async fn send(
        &self,
        what: &str,
        timeout: Duration,
        req: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, CoordinateError> {
        let interrupted = || CoordinateError::Interrupted {
            url: self.cfg.url.clone(),
        };
        let window = if self.learnt().answered {
            RECONNECT_WAIT
        } else {
            self.cfg.connect_wait
        };
        let give_up = Instant::now() + window;
        let mut pause = Duration::from_millis(100);
        loop {
            let attempt = req()
                .header(reqwest::header::AUTHORIZATION, self.cfg.token.bearer())
                .timeout(timeout)
                .send();
            let sent = tokio::select! {
                biased;
                _ = self.cfg.interrupt.cancelled() => return Err(interrupted()),
                r = attempt => r,
            };
            match sent {
                Ok(resp) if resp.status().is_success() => {
                    self.learnt().answered = true;
                    return Ok(resp);
                }
                Ok(resp) => {
                    let status = resp.status();
                    // Only what is shown is read: a refusal says why in a line, and a peer
                    // that streams without end must not fill the memory.
                    let body = match crate::files::read_answer(resp, 64 << 10).await {
                        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                        Err(e) => format!("({e})"),
                    };
                    let body = super::refusal::printable(&body, 2_000);
                    return Err(self.err(format!("refused {what} ({status}): {body}"), None));
                }
                Err(e) if e.is_connect() && Instant::now() + pause < give_up => {
                    tokio::select! {
                        biased;
                        _ = self.cfg.interrupt.cancelled() => return Err(interrupted()),
                        _ = tokio::time::sleep(pause) => {}
                    }
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
            count: self.cfg.count,
            instance: self.instance.clone(),
            step,
            stage: stage.to_string(),
            plan_hash: plan_hash.to_string(),
        };
        let hold = if step == 0 {
            self.cfg.first_barrier_wait
        } else {
            self.cfg.barrier_wait
        };
        let resp = self
            .send("the barrier", hold, || self.http.post(&url).json(&body))
            .await?;
        let r: Release = resp
            .json()
            .await
            .map_err(|e| self.err("sent a malformed release", Some(e)))?;
        self.accept(&r, &clock)?;
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

    /// Checks a release: the same run as every earlier one, and a start within
    /// [`MAX_LEAD`] of the coordinator's now.
    fn accept(&self, r: &Release, clock: &ClockEstimate) -> Result<(), CoordinateError> {
        let now = i128::from(unix_ns(SystemTime::now())) + i128::from(clock.offset_ns);
        let ahead = i128::from(r.start_unix_ns) - now;
        let bound = (MAX_LEAD + Duration::from_nanos(clock.error_ns)).as_nanos() as i128;
        if ahead > bound {
            return Err(self.err(
                format!(
                    "named a start {:.0} s away; a coordinator starts a step within {} s",
                    ahead as f64 / 1e9,
                    MAX_LEAD.as_secs()
                ),
                None,
            ));
        }
        let mut learnt = self.learnt();
        match &learnt.run_id {
            Some(id) if *id != r.run_id => Err(self.err(
                "released a step of another run (its run id changed)".to_string(),
                None,
            )),
            Some(_) => Ok(()),
            None => {
                learnt.run_id = Some(r.run_id.clone());
                Ok(())
            }
        }
    }

    /// Sends this shard's result.
    pub async fn submit(&self, results: &Results) -> Result<(), CoordinateError> {
        let url = format!("{}/v1/results?{}", self.cfg.url, self.who());
        let body = serde_json::to_vec(results)
            .map_err(|e| self.err(format!("cannot be sent the result: {e}"), None))?;
        self.learnt().sent = Some(hex(&Sha256::digest(&body)));
        self.send("the result", Duration::from_secs(120), || {
            self.http
                .post(&url)
                .header("content-type", "application/json")
                .body(body.clone())
        })
        .await
        .map(|_| ())
    }

    /// Waits for the merged run's verdict and checks that it is this shard's run's: the run
    /// it joined, the plan `plan_hash`, and the result it sent, merged.
    pub async fn verdict(&self, plan_hash: &str) -> Result<Verdict, CoordinateError> {
        let url = format!("{}/v1/verdict?{}", self.cfg.url, self.who());
        let resp = self
            .send("the verdict", self.cfg.verdict_wait, || self.http.get(&url))
            .await?;
        let v: Verdict = resp
            .json()
            .await
            .map_err(|e| self.err("sent a malformed verdict", Some(e)))?;
        let learnt = self.learnt();
        let why = if learnt.run_id.is_none() || v.run_id != learnt.run_id {
            Some("it is not the run this shard joined".to_string())
        } else if v.plan_hash.as_deref() != Some(plan_hash) {
            Some(format!("it is not of plan {plan_hash}"))
        } else if learnt.sent.is_none() || v.your_result != learnt.sent {
            Some("it does not name the result this shard sent".to_string())
        } else if !v.merged.contains(&self.cfg.shard) {
            Some("this shard's result is not among those merged".to_string())
        } else {
            None
        };
        match why {
            Some(why) => Err(CoordinateError::Unbound {
                url: self.cfg.url.clone(),
                why,
            }),
            None => Ok(v),
        }
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
