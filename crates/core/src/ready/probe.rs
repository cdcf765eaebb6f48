//! One readiness probe: `GET /health` at the server's root (vLLM, SGLang, TGI and llama.cpp
//! answer it; 503 while a model loads; absent on some servers, which is fine) and
//! `GET {base}/models` (every OpenAI-compatible server), read into a [`State`].

use std::fmt;

use reqwest::StatusCode;

use super::options::{WaitError, WaitOptions};

/// What one attempt found.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Nothing listens yet (or the connection failed): the error's text.
    Unreachable(String),
    /// The server answers but is not ready: which endpoint said what.
    NotReady { endpoint: &'static str, status: u16 },
    /// `/models` wants an API key this command did not send.
    Unauthorized,
    /// `/models` answered something that is not a model list.
    NotAList(String),
    /// The server is up but does not list the model asked for.
    ModelMissing { model: String, listed: Vec<String> },
    /// Ready: these models are listed.
    Ready { models: Vec<String> },
    /// Interrupted during the attempt.
    Cancelled,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::Unreachable(e) => write!(f, "not reachable ({e})"),
            State::NotReady { endpoint, status } => {
                write!(f, "{endpoint} answered {status} (still loading?)")
            }
            State::Unauthorized => f.write_str(
                "/models answered 401: the server wants an API key (pass --api-key-env NAME)",
            ),
            State::NotAList(e) => write!(f, "/models did not return a model list ({e})"),
            State::ModelMissing { model, listed } => write!(
                f,
                "up, but model `{model}` is not listed (listed: {})",
                if listed.is_empty() {
                    "none".to_string()
                } else {
                    shown_list(listed)
                }
            ),
            State::Ready { models } => write!(f, "ready; models: {}", shown_list(models)),
            State::Cancelled => f.write_str("interrupted"),
        }
    }
}

/// The models a line shows; the rest are counted.
const SHOWN_MODELS: usize = 20;

/// The longest model id a line shows whole (in characters).
const SHOWN_ID_CHARS: usize = 200;

/// The first [`SHOWN_MODELS`] ids, each cut at [`SHOWN_ID_CHARS`], and how many more: a line
/// a server's list cannot make longer than a few kilobytes.
pub(super) fn shown_list(models: &[String]) -> String {
    let mut shown: Vec<String> = models
        .iter()
        .take(SHOWN_MODELS)
        .map(|m| {
            if m.chars().count() > SHOWN_ID_CHARS {
                m.chars().take(SHOWN_ID_CHARS).chain(['…']).collect()
            } else {
                m.clone()
            }
        })
        .collect();
    if models.len() > SHOWN_MODELS {
        shown.push(format!("… and {} more", models.len() - SHOWN_MODELS));
    }
    shown.join(", ")
}

/// The two URLs a probe asks.
pub(super) struct Endpoints {
    pub(super) base: String,
    health: String,
    models: String,
}

impl Endpoints {
    pub(super) fn new(url: &str) -> Result<Endpoints, WaitError> {
        let bad = || WaitError::BadUrl {
            url: url.to_string(),
            likely: crate::protocol::likely_base(url),
        };
        // A bare `http://host:port` means `…/v1`, as `run`'s suggestion says.
        let base = crate::protocol::api_base(url).ok_or_else(bad)?;
        let parsed = reqwest::Url::parse(url).map_err(|_| bad())?;
        let origin = parsed.origin().ascii_serialization();
        Ok(Endpoints {
            models: crate::protocol::join(&base, "/models"),
            health: format!("{origin}/health"),
            base,
        })
    }
}

#[derive(serde::Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(serde::Deserialize)]
struct ModelEntry {
    id: String,
}

pub(super) async fn once(http: &reqwest::Client, e: &Endpoints, opts: &WaitOptions) -> State {
    // A failing /health (503 while loading) overrides whatever /models says; a missing one
    // (404, 405) says nothing.
    match http.get(&e.health).send().await {
        Err(err) => return State::Unreachable(short(&err)),
        Ok(r) => {
            let s = r.status();
            if !s.is_success() && s != StatusCode::NOT_FOUND && s != StatusCode::METHOD_NOT_ALLOWED
            {
                return State::NotReady {
                    endpoint: "/health",
                    status: s.as_u16(),
                };
            }
        }
    }
    let mut req = http.get(&e.models);
    if let Some(key) = &opts.api_key {
        req = req.bearer_auth(key);
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(err) => return State::Unreachable(short(&err)),
    };
    match resp.status() {
        s if s.is_success() => {}
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => return State::Unauthorized,
        s => {
            return State::NotReady {
                endpoint: "/models",
                status: s.as_u16(),
            };
        }
    }
    let body = match crate::files::read_answer(resp, crate::files::MAX_MODEL_LIST_BYTES).await {
        Ok(body) => body,
        Err(crate::files::AnswerError::Read(err)) => return State::NotAList(short(&err)),
        Err(e) => return State::NotAList(e.to_string()),
    };
    let models: Vec<String> = match serde_json::from_slice::<ModelList>(&body) {
        Ok(list) => list.data.into_iter().map(|m| m.id).collect(),
        Err(err) => return State::NotAList(err.to_string()),
    };
    match &opts.model {
        Some(m) if !models.iter().any(|x| x == m) => State::ModelMissing {
            model: m.clone(),
            listed: models,
        },
        _ if models.is_empty() => State::NotAList("it lists no model".into()),
        _ => State::Ready { models },
    }
}

/// The innermost cause ("Connection refused (os error 111)"), not reqwest's whole chain.
fn short(err: &reqwest::Error) -> String {
    let mut cur: &dyn std::error::Error = err;
    while let Some(next) = cur.source() {
        cur = next;
    }
    if err.is_timeout() {
        "timed out".into()
    } else {
        cur.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_server_url_means_v1() {
        let e = Endpoints::new("http://127.0.0.1:8000").unwrap();
        assert_eq!(e.models, "http://127.0.0.1:8000/v1/models");
        assert_eq!(e.health, "http://127.0.0.1:8000/health");
        let e = Endpoints::new("https://h.example/openai/v1/").unwrap();
        assert_eq!(e.models, "https://h.example/openai/v1/models");
        assert_eq!(e.health, "https://h.example/health");
        let e = Endpoints::new("127.0.0.1:8000").err().unwrap();
        assert_eq!(
            e.to_string(),
            "`127.0.0.1:8000` is not an http(s) URL; did you mean http://127.0.0.1:8000/v1?"
        );
    }
}
