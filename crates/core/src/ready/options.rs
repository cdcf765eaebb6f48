//! What to wait for, and what goes wrong waiting: what the prober and the loop share.

use std::time::Duration;

/// What to wait for.
#[derive(Debug, Clone)]
pub struct WaitOptions {
    /// The OpenAI-compatible base URL (`http://host:8000/v1`); a bare `http://host:port`
    /// means `…/v1`.
    pub url: String,
    /// Wait until `/models` lists this model too.
    pub model: Option<String>,
    /// Give up after this long.
    pub timeout: Duration,
    /// Pause between attempts.
    pub interval: Duration,
    /// Sent as a bearer token (a server started with `--api-key`).
    pub api_key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error("`{url}` is not an http(s) URL{}", did_you_mean(likely.as_deref()))]
    BadUrl {
        url: String,
        /// What it probably meant (`crate::protocol::likely_base`).
        likely: Option<String>,
    },
    #[error("{url} was not ready after {}s ({attempts} attempts); last: {last}", waited.as_secs())]
    NotReady {
        url: String,
        waited: Duration,
        attempts: u32,
        last: String,
    },
    #[error("interrupted while waiting for {url}; last: {last}")]
    Interrupted { url: String, last: String },
    #[error("failed to build the HTTP client")]
    Client(#[source] reqwest::Error),
}

/// `; did you mean URL?`, or nothing without a guess.
fn did_you_mean(likely: Option<&str>) -> String {
    likely.map_or_else(String::new, |u| format!("; did you mean {u}?"))
}
