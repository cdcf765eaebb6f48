//! `infermeter wait URL… [--timeout 10m] [--model NAME]`: blocks until the server (each of
//! them, in turn, within the one timeout) answers and lists its models (see [`crate::app::wait_ready`]), with a progress line whenever what it says
//! changes and every ten seconds; exit 0 when ready, 3 when it never is or on Ctrl-C.

use std::time::Duration;

use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::app::{Attempt, WaitOptions, wait_ready};
use crate::error::Error;
use crate::units;

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The server's OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (a bare
    /// http://HOST:PORT means …/v1); several (a target's replicas) are waited for in turn,
    /// all within --timeout.
    #[arg(required = true, num_args = 1..)]
    pub url: Vec<String>,

    /// Give up after this long (exit 3).
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub timeout: units::Duration,

    /// Also wait until /models lists this model.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// Pause between attempts.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub interval: units::Duration,

    /// Send the API key in this environment variable as a bearer token.
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
}

pub fn run(args: WaitArgs) -> Result<(), Error> {
    let api_key = match &args.api_key_env {
        Some(name) => Some(std::env::var(name).map_err(|_| {
            Error::usage(
                format!("--api-key-env {name}: the variable is not set"),
                "export it, or leave --api-key-env out for a server without a key",
            )
        })?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let cancel = CancellationToken::new();
    runtime.block_on(async { cancel_on_signals(&cancel) });
    let start = std::time::Instant::now();
    for url in &args.url {
        let opts = WaitOptions {
            url: url.clone(),
            model: args.model.clone(),
            timeout: args.timeout.as_std().saturating_sub(start.elapsed()),
            interval: args.interval.as_std().max(Duration::from_millis(100)),
            api_key: api_key.clone(),
        };
        wait_one(&runtime, &opts, &cancel)?;
    }
    Ok(())
}

/// Waits for one URL, saying what it answers as it goes, then that it is ready.
fn wait_one(
    runtime: &tokio::runtime::Runtime,
    opts: &WaitOptions,
    cancel: &CancellationToken,
) -> Result<(), Error> {
    let mut shown: Option<(String, Duration)> = None;
    let mut on = |a: &Attempt| {
        // What the server answered is shown on one line, escapes and all as text.
        let text = crate::escape::terminal(&a.state.to_string());
        let due = shown.as_ref().is_none_or(|(last, at)| {
            last != &text || a.elapsed.saturating_sub(*at) >= Duration::from_secs(10)
        });
        if due {
            errln!("[{:>4}s] {text}", a.elapsed.as_secs());
            shown = Some((text, a.elapsed));
        }
    };
    let ready = runtime.block_on(wait_ready(opts, cancel, &mut on))?;
    outln!(
        "ready: {} after {:.1}s ({} attempt(s)); models: {}",
        crate::escape::terminal(&ready.url),
        ready.waited.as_secs_f64(),
        ready.attempts,
        crate::escape::terminal(&ready.shown_models())
    );
    Ok(())
}

/// Ctrl-C and SIGTERM (a cancelled CI job) stop the wait with exit 3.
fn cancel_on_signals(cancel: &CancellationToken) {
    let c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            c.cancel();
        }
    });
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            let c = cancel.clone();
            tokio::spawn(async move {
                if term.recv().await.is_some() {
                    c.cancel();
                }
            });
        }
    }
}
