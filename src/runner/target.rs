//! Making the target reachable before the clock starts: the in-process simulator on its own
//! thread (so its CPU time is not the client's and it does not share the client's runtime), the
//! model name, a reachability check, and a warm connection pool.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread;

use tokio::sync::oneshot;

use super::cpu::ThreadId;
use super::run::RunError;
use crate::sim::{SimConfig, SimError};

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
        let join = thread::Builder::new()
            .name("infermeter-sim".into())
            .spawn(move || {
                let tid = ThreadId::current();
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
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

/// Asks `GET {base}/models`: proves the target is reachable before the clock starts, and
/// names the model when the scenario did not. A server without the endpoint is tolerated when
/// the model is known.
pub async fn preflight(
    http: &reqwest::Client,
    base_url: &str,
    model: Option<&str>,
) -> Result<String, RunError> {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let resp = http
        .get(&url)
        .send()
        .await
        .map_err(|source| RunError::Unreachable {
            url: base_url.to_string(),
            source,
        })?;
    if let Some(m) = model {
        return Ok(m.to_string());
    }
    if !resp.status().is_success() {
        return Err(RunError::NoModel {
            url,
            problem: format!("answered {}", resp.status()),
        });
    }
    let list: ModelList = match resp.json().await {
        Ok(l) => l,
        Err(e) => {
            return Err(RunError::NoModel {
                url,
                problem: format!("did not return a model list ({e})"),
            });
        }
    };
    match list.data.into_iter().next() {
        Some(m) => Ok(m.id),
        None => Err(RunError::NoModel {
            url,
            problem: "lists no model".into(),
        }),
    }
}

/// Opens up to `n` keep-alive connections so the first requests of a stage do not pay for
/// connection set-up.
pub async fn warm_pool(http: &reqwest::Client, base_url: &str, n: usize) {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let gets = (0..n).map(|_| async {
        if let Ok(r) = http.get(&url).send().await {
            let _ = r.bytes().await;
        }
    });
    futures_util::future::join_all(gets).await;
}
