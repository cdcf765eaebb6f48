//! Whether the started server is ready, by the block's `ready`: the target's model list (the
//! same probe as `infermeter wait`, [`crate::ready::wait_ready`]), a path at the server's root
//! answering 2xx, or a line of its log. And, before it is started, whether something already
//! answers where it is to listen (whose answers would count as the new server's).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::error::ServerError;
use super::log::Log;
use super::spec::Readiness;
use crate::ready::{WaitOptions, wait_ready};

/// Where the server is to answer, from the scenario's target.
#[derive(Debug, Clone)]
pub struct Target {
    /// The target's base URLs (`http://127.0.0.1:8000/v1`).
    pub urls: Vec<String>,
    /// The model the target asks for, which the model list must name.
    pub model: Option<String>,
    /// The API key the target sends.
    pub api_key: Option<String>,
}

/// Pause between two readiness probes.
const INTERVAL: Duration = Duration::from_millis(250);

/// What the last probe found, for the error when the time runs out.
pub(super) type Last = Arc<Mutex<String>>;

/// Returns once the server is ready (or never: the caller bounds the wait), noting in `last`
/// what each probe found.
pub(super) async fn until_ready(ready: &Readiness, target: &Target, log: &Log, last: &Last) {
    let note = |s: String| *last.lock().unwrap_or_else(PoisonError::into_inner) = s;
    match ready {
        Readiness::Log(text) => {
            note(format!("no line with `{text}` yet"));
            log.ready_seen.cancelled().await;
        }
        Readiness::Models => {
            for url in &target.urls {
                let opts = WaitOptions {
                    url: url.clone(),
                    model: target.model.clone(),
                    // The caller's deadline ends the wait; this one never comes first.
                    timeout: Duration::from_secs(365 * 24 * 3600),
                    interval: INTERVAL,
                    api_key: target.api_key.clone(),
                };
                let mut on = |a: &crate::ready::Attempt| note(a.state.to_string());
                if let Err(e) = wait_ready(&opts, &CancellationToken::new(), &mut on).await {
                    note(e.to_string());
                    std::future::pending::<()>().await;
                }
            }
        }
        Readiness::Path(path) => {
            for url in &target.urls {
                let at = crate::protocol::join(&crate::protocol::server_root(url), path);
                path_answers(&at, &note).await;
            }
        }
    }
}

/// Polls `GET url` until it answers 2xx.
async fn path_answers(url: &str, note: &(dyn Fn(String) + Sync)) {
    // reqwest is built without a default TLS provider: the process installs one, as
    // `wait_ready` does (an https target).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Ok(http) = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
    else {
        note("cannot build an HTTP client".into());
        return std::future::pending().await;
    };
    loop {
        match http.get(url).send().await {
            Ok(r) if r.status().is_success() => return,
            Ok(r) => note(format!("{url} answered {}", r.status().as_u16())),
            Err(e) => note(format!(
                "{url}: {}",
                crate::redact::secrets(&infermeter_words::error_chain(&e))
            )),
        }
        tokio::time::sleep(INTERVAL).await;
    }
}

/// An error when something already accepts connections at one of the target's addresses.
pub(super) async fn port_free(target: &Target) -> Result<(), ServerError> {
    for u in &target.urls {
        let Ok(parsed) = url::Url::parse(u) else {
            continue;
        };
        let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
            continue;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let connect = tokio::net::TcpStream::connect((host, port));
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), connect).await {
            return Err(ServerError::PortInUse {
                address: format!("{host}:{port}"),
            });
        }
    }
    Ok(())
}
