//! Waiting for a model server to come up (`infermeter wait`): a server that loads a model for
//! minutes first refuses connections, then often answers 503 while loading. [`wait_ready`]
//! polls `/health` at the server's root and `{base}/models` until the server lists models
//! (the one asked for, when given), reporting each attempt to the caller, and gives up at a
//! deadline or when cancelled.

mod options;
mod probe;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use options::{WaitError, WaitOptions};
pub use probe::State;

/// One attempt, as reported to the caller.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// 1-based.
    pub n: u32,
    pub elapsed: Duration,
    pub state: State,
}

/// The server is ready.
#[derive(Debug, Clone)]
pub struct Ready {
    /// The base URL waited on (with `/v1` added when it was bare).
    pub url: String,
    /// What `/models` listed.
    pub models: Vec<String>,
    pub waited: Duration,
    pub attempts: u32,
}

impl Ready {
    /// The models listed, as a line shows them: the first 20, each cut at 200 characters, and
    /// how many more (a server's list cannot make the line longer than a few kilobytes).
    pub fn shown_models(&self) -> String {
        probe::shown_list(&self.models)
    }
}

/// Polls until the server is ready, the timeout passes, or `cancel` fires. The timeout ends
/// the wait whatever the interval: an attempt still in flight at the deadline (a server that
/// accepts and never answers) is abandoned, and no pause runs past it.
pub async fn wait_ready(
    opts: &WaitOptions,
    cancel: &CancellationToken,
    on: &mut (dyn FnMut(&Attempt) + Send),
) -> Result<Ready, WaitError> {
    let endpoints = probe::Endpoints::new(&opts.url)?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Each probe must end well before the next one is due, whatever the server does.
    let per_request = opts
        .interval
        .clamp(Duration::from_secs(1), Duration::from_secs(10));
    let http = reqwest::Client::builder()
        .connect_timeout(per_request)
        .timeout(per_request)
        .build()
        .map_err(WaitError::Client)?;
    let start = Instant::now();
    let deadline = tokio::time::Instant::from_std(start) + opts.timeout;
    let url = || endpoints.base.clone();
    let mut last = String::from("no attempt was answered before the timeout");
    for n in 1.. {
        let state = tokio::select! {
            s = probe::once(&http, &endpoints, opts) => s,
            () = cancel.cancelled() => State::Cancelled,
            () = tokio::time::sleep_until(deadline) => {
                return Err(not_ready(url(), start, n, last));
            }
        };
        let elapsed = start.elapsed();
        let attempt = Attempt { n, elapsed, state };
        match &attempt.state {
            State::Ready { models } => {
                let models = models.clone();
                on(&attempt);
                return Ok(Ready {
                    url: url(),
                    models,
                    waited: elapsed,
                    attempts: n,
                });
            }
            State::Cancelled => {
                return Err(WaitError::Interrupted {
                    url: url(),
                    last: "interrupted before the server answered".into(),
                });
            }
            other => last = other.to_string(),
        }
        on(&attempt);
        tokio::select! {
            () = tokio::time::sleep(opts.interval) => {}
            () = tokio::time::sleep_until(deadline) => {
                return Err(not_ready(url(), start, n, last));
            }
            () = cancel.cancelled() => {
                return Err(WaitError::Interrupted { url: url(), last });
            }
        }
    }
    unreachable!("`1..` does not end")
}

fn not_ready(url: String, start: Instant, attempts: u32, last: String) -> WaitError {
    WaitError::NotReady {
        url,
        waited: start.elapsed(),
        attempts,
        last,
    }
}
