//! Making the target reachable before the clock starts: the in-process simulator on its own
//! thread (so its CPU time is not the client's and it does not share the client's runtime), the
//! model name, a reachability check (and that the target's URL is its API's base, not the
//! server's root or the API's whole path), and a warm connection pool — each network wait with a
//! deadline, and each returning at once on an interrupt.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread;

use reqwest::StatusCode;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::cpu::ThreadId;
use super::error::RunError;
use crate::files::MAX_MODEL_LIST_BYTES;
use crate::protocol::Api;
use crate::server_info::ServerInfo;
use crate::sim::{SimConfig, SimError};
use crate::units::Duration;

/// The simulator running on its own thread; stops when dropped.
pub struct InProcessSim {
    pub base_url: String,
    pub thread: Option<ThreadId>,
    stop: Option<oneshot::Sender<()>>,
    join: Option<thread::JoinHandle<()>>,
}

impl InProcessSim {
    pub fn start(config: SimConfig) -> Result<Self, RunError> {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let join = super::cpu::spawn_with_runtime("infermeter-sim".into(), move |rt, tid| {
            let rt = match rt {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(SimError::Serve(e)));
                    return;
                }
            };
            rt.block_on(async move {
                let addr = SocketAddr::from(([127, 0, 0, 1], 0));
                match crate::sim::start(config, addr).await {
                    Ok(handle) => {
                        let _ = ready_tx.send(Ok((handle.base_url(), tid)));
                        let _ = stop_rx.await;
                        let _ = handle.shutdown().await;
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            });
        })
        .map_err(RunError::SimThread)?;
        let (base_url, tid) = ready_rx
            .recv()
            .map_err(|_| RunError::Sim(SimError::Panicked))?
            .map_err(RunError::Sim)?;
        Ok(InProcessSim {
            base_url,
            thread: tid,
            stop: Some(stop_tx),
            join: Some(join),
        })
    }
}

impl Drop for InProcessSim {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(join) = self.join.take() {
            let _ = join.join();
        }
    }
}

#[derive(serde::Deserialize)]
struct ModelList {
    #[serde(default)]
    data: Vec<ModelEntry>,
}

#[derive(serde::Deserialize)]
struct ModelEntry {
    id: String,
}

/// The longest model id taken from a server's list (bytes): a real one is a name or a path,
/// far shorter.
const MAX_LISTED_MODEL_ID: usize = 1024;

/// The longest the pool warm-up waits (or the target's timeout, when shorter): connections it
/// could not open in that time are opened by the stage's first requests instead.
pub const WARM_POOL_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Asks `GET {base}/models`: proves the target is reachable before the clock starts, and
/// names the model when the scenario did not. A server without the endpoint is tolerated when
/// the model is known. Waits at most `timeout` (the target's) for the whole answer; `None`
/// when `interrupt` was cancelled first.
/// Also returns what the answer says about the server (its `server` header and the model
/// list, for the result's provenance), as a task: with the model known, the list is read
/// beside the run, so a server slow to send it delays nothing.
/// Before that, and when `/models` answers 404, checks that `base_url` is the base of `api`
/// (see [`ends_in_api_path`] and [`serves_api`]).
pub async fn preflight(
    http: &reqwest::Client,
    base_url: &str,
    model: Option<&str>,
    api: Api,
    timeout: Duration,
    interrupt: &CancellationToken,
) -> Result<Option<(String, JoinHandle<ServerInfo>)>, RunError> {
    ends_in_api_path(base_url, api)?;
    let url = crate::protocol::join(base_url, "/models");
    let lookup = lookup_model(http, base_url, &url, model, api);
    tokio::select! {
        biased;
        _ = interrupt.cancelled() => Ok(None),
        answer = tokio::time::timeout(timeout.as_std(), lookup) => match answer {
            Ok(found) => found.map(Some),
            Err(_) => Err(RunError::NoAnswer {
                url: crate::redact::secrets(&url).into_owned(),
                timeout,
            }),
        },
    }
}

async fn lookup_model(
    http: &reqwest::Client,
    base_url: &str,
    url: &str,
    model: Option<&str>,
    api: Api,
) -> Result<(String, JoinHandle<ServerInfo>), RunError> {
    let shown = || crate::redact::secrets(url).into_owned();
    let resp = http
        .get(url)
        .send()
        .await
        .map_err(|source| RunError::Unreachable {
            url: crate::redact::secrets(base_url).into_owned(),
            // Its message would repeat the URL, credentials and all.
            source: source.without_url(),
        })?;
    let header = resp
        .headers()
        .get(reqwest::header::SERVER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if resp.status() == StatusCode::NOT_FOUND {
        // No model list here, and perhaps no API either (a base URL without its `/v1`). The
        // answer is read first, so that the check's request can reuse its connection.
        let _ = crate::files::read_answer(resp, MAX_CHECK_ANSWER_BYTES).await;
        serves_api(http, base_url, api).await?;
        return match model {
            Some(m) => {
                let info = ServerInfo::from_models(header, None);
                Ok((m.to_string(), tokio::spawn(std::future::ready(info))))
            }
            None => Err(RunError::NoModel {
                url: shown(),
                problem: format!("answered {}", StatusCode::NOT_FOUND),
            }),
        };
    }
    if let Some(m) = model {
        // The model is known: the list is read only for the provenance, beside the run, and
        // nothing about it can fail or hold up the run.
        let ok = resp.status().is_success();
        let read = tokio::spawn(async move {
            let body = crate::files::read_answer(resp, MAX_MODEL_LIST_BYTES)
                .await
                .ok();
            ServerInfo::from_models(header, body.as_deref().filter(|_| ok))
        });
        return Ok((m.to_string(), read));
    }
    listed_model(resp, header, shown).await
}

/// The model named first in the list `resp` holds (the scenario named none), and what the
/// list says about the server.
async fn listed_model(
    resp: reqwest::Response,
    header: Option<String>,
    shown: impl Fn() -> String,
) -> Result<(String, JoinHandle<ServerInfo>), RunError> {
    if !resp.status().is_success() {
        return Err(RunError::NoModel {
            url: shown(),
            problem: format!("answered {}", resp.status()),
        });
    }
    let body = match crate::files::read_answer(resp, MAX_MODEL_LIST_BYTES).await {
        Ok(body) => body,
        Err(crate::files::AnswerError::TooLarge(_)) => {
            return Err(RunError::NoModel {
                url: shown(),
                problem: format!(
                    "sent a model list larger than {} MiB",
                    MAX_MODEL_LIST_BYTES >> 20
                ),
            });
        }
        Err(crate::files::AnswerError::Read(e)) => {
            return Err(RunError::NoModel {
                url: shown(),
                problem: format!("broke off its model list ({e})"),
            });
        }
    };
    let info = ServerInfo::from_models(header, Some(&body));
    let list: ModelList = match serde_json::from_slice(&body) {
        Ok(l) => l,
        Err(e) => {
            return Err(RunError::NoModel {
                url: shown(),
                problem: format!("did not return a model list ({e})"),
            });
        }
    };
    let model = first_model(list, shown)?;
    Ok((model, tokio::spawn(std::future::ready(info))))
}

/// The most of a 404's answer read while checking the base URL: what it says fits in a few
/// hundred bytes, and the rest is not needed.
const MAX_CHECK_ANSWER_BYTES: usize = 64 << 10;

/// Refuses a base URL that ends in `api`'s own path (`…/v1/chat/completions`): every request
/// adds the path again, and gets a 404. No request is sent.
fn ends_in_api_path(base_url: &str, api: Api) -> Result<(), RunError> {
    match crate::protocol::api_path_in(base_url) {
        Some((found, likely)) if found == api => Err(RunError::EndsInApiPath {
            url: crate::redact::secrets(base_url).into_owned(),
            api: api.as_str(),
            path: api.path(),
            likely: crate::redact::secrets(&likely).into_owned(),
        }),
        _ => Ok(()),
    }
}

/// One request, sent when `/models` answered 404: `POST {base}{api path}` with an empty JSON
/// object, which no server generates anything for. A 404 that is not the API's own error (an
/// OpenAI-style `{"error": …}` body, such as an unknown model's) says nothing serves the API
/// there, and the run stops before its first request with the likely base URL. Anything else
/// (a 400 for the empty body, a 401, a 405, no answer at all) lets the run go on as before:
/// the check only catches the wrong base, never a server that serves at another one.
async fn serves_api(http: &reqwest::Client, base_url: &str, api: Api) -> Result<(), RunError> {
    let url = crate::protocol::join(base_url, api.path());
    let Ok(resp) = http.post(&url).body("{}").send().await else {
        return Ok(());
    };
    if resp.status() != StatusCode::NOT_FOUND {
        return Ok(());
    }
    let body = crate::files::read_answer(resp, MAX_CHECK_ANSWER_BYTES)
        .await
        .unwrap_or_default();
    if api_error(&body) {
        return Ok(());
    }
    Err(RunError::NotApiBase {
        url: crate::redact::secrets(base_url).into_owned(),
        path: api.path(),
        likely: crate::protocol::likely_base(base_url)
            .map(|u| crate::redact::secrets(&u).into_owned()),
    })
}

/// Whether a body is an OpenAI-compatible error (`{"error": …}`, or vLLM's older
/// `{"object": "error", …}`): the API answered, whatever its status.
fn api_error(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|v| {
        v.get("error").is_some()
            || v.get("object").and_then(serde_json::Value::as_str) == Some("error")
    })
}

/// The model a run takes from a server's list: its first, when short enough to name in
/// every output.
fn first_model(list: ModelList, shown: impl Fn() -> String) -> Result<String, RunError> {
    match list.data.into_iter().next() {
        // It names the model in every output: a server's megabyte id would fill them all.
        Some(m) if m.id.len() > MAX_LISTED_MODEL_ID => Err(RunError::NoModel {
            url: shown(),
            problem: format!(
                "lists first a model id of {} bytes (at most {MAX_LISTED_MODEL_ID} are taken \
                 from a list)",
                m.id.len()
            ),
        }),
        Some(m) => Ok(m.id),
        None => Err(RunError::NoModel {
            url: shown(),
            problem: "lists no model".into(),
        }),
    }
}

/// Opens up to `n` keep-alive connections so the first requests of a stage do not pay for
/// connection set-up. Gives up after `limit`, or at once when `interrupt` is cancelled: it
/// only saves time, so a server slow to answer it must not cost more.
pub async fn warm_pool(
    client: &crate::client::Client,
    base_url: &str,
    n: usize,
    limit: std::time::Duration,
    interrupt: &CancellationToken,
) {
    let gets = client.warm(base_url, n);
    tokio::select! {
        _ = interrupt.cancelled() => {}
        _ = tokio::time::timeout(limit, gets) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_apis_own_error_makes_a_404_an_answer_of_the_api() {
        assert!(api_error(
            br#"{"error":{"message":"The model `x` does not exist"}}"#
        ));
        assert!(api_error(br#"{"object":"error","message":"x","code":404}"#));
        for body in [
            &b""[..],
            br#"{"detail":"Not Found"}"#,
            b"404 page not found",
            b"<html><body>Not Found</body></html>",
            br#"["error"]"#,
        ] {
            assert!(!api_error(body), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn a_url_ending_in_its_apis_path_is_refused_without_a_request() {
        let e = ends_in_api_path("http://h:8000/v1/chat/completions/", Api::CHAT).unwrap_err();
        assert!(
            e.to_string().ends_with("did you mean http://h:8000/v1?"),
            "{e}"
        );
        // Another API's path is left to the server to answer for.
        assert!(ends_in_api_path("http://h:8000/v1/chat/completions", Api::EMBEDDINGS).is_ok());
        assert!(ends_in_api_path("http://h:8000/v1", Api::CHAT).is_ok());
        assert!(ends_in_api_path("http://h:8000", Api::CHAT).is_ok());
    }
}
