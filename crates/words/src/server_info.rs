//! What a server says about itself, kept in a result's provenance: plain data that the
//! client fills (from the preflight's `GET /v1/models` and the engine probes, see
//! `client::probe_server`) and that results and reports only read. Answers are bounded,
//! secret-named fields masked, long strings (a chat template) cut.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the model list is kept in [`ServerInfo::endpoints`].
pub const MODELS_PATH: &str = "/v1/models";
/// Strings longer than this (a chat template, a system prompt) are cut.
const MAX_STRING: usize = 512;

/// What the server said about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerInfo {
    /// The `server` response header, from the first answer that had one (`uvicorn`,
    /// `llama.cpp`, `infermeter-sim/0.2.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_header: Option<String>,
    /// Each endpoint that answered 2xx with JSON, by path (`/v1/models`, `/version`,
    /// `/props`, `/get_server_info`): its answer, with secret-named fields masked and strings
    /// over 512 characters cut.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, serde_json::Value>,
}

impl ServerInfo {
    /// What a `/v1/models` answer said: its `server` header and, when `body` is given and is
    /// JSON, the list itself.
    pub fn from_models(server_header: Option<String>, body: Option<&[u8]>) -> ServerInfo {
        let mut info = ServerInfo {
            server_header: server_header.map(|h| cut(h.trim())),
            endpoints: BTreeMap::new(),
        };
        if let Some(v) = body.and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok()) {
            info.endpoints.insert(MODELS_PATH.to_string(), scrub(v));
        }
        info
    }

    /// `other`'s answers added to these (this one's header first).
    pub fn merge(mut self, other: ServerInfo) -> ServerInfo {
        if self.server_header.is_none() {
            self.server_header = other.server_header;
        }
        for (path, v) in other.endpoints {
            self.endpoints.entry(path).or_insert(v);
        }
        self
    }

    /// A one-line summary: `vLLM 0.8.5`, `llama.cpp (build 4567)`, `SGLang 0.4.6`, or the
    /// server header; `None` when nothing identified the server.
    pub fn summary(&self) -> Option<String> {
        let str_at = |path: &str, key: &str| {
            self.endpoints
                .get(path)
                .and_then(|v| v.get(key))
                .and_then(|v| match v {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
        };
        let mut parts = Vec::new();
        if let Some(h) = &self.server_header {
            parts.push(h.clone());
        }
        if let Some(v) = str_at("/version", "version") {
            parts.push(format!("version {v}"));
        }
        if let Some(v) = str_at("/get_server_info", "version") {
            parts.push(format!("SGLang-style server info, version {v}"));
        }
        if self.endpoints.contains_key("/props") {
            let build = str_at("/props", "build_info");
            parts.push(match build {
                Some(b) => format!("llama.cpp-style props ({b})"),
                None => "llama.cpp-style props".into(),
            });
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// A fact a server's answers establish: its name (`engine`, `engine_version`,
/// `max_model_len`), its value, and the answer it came from (`/version`, `server header`).
pub type ServerFact = (&'static str, String, &'static str);

impl ServerInfo {
    /// The infrastructure facts its answers establish, each from the first answer that gives
    /// it: the engine and its version (the simulator by its header; SGLang by
    /// `/get_server_info`; llama.cpp by `/props`; vLLM by `/version`) and the context length
    /// (vLLM's `max_model_len` in the model list, SGLang's `context_length`, llama.cpp's
    /// `n_ctx`). Values are the scrubbed, cut strings the answers held.
    pub fn facts(&self) -> Vec<ServerFact> {
        let at = |path: &str, keys: &[&str]| {
            let mut v = self.endpoints.get(path)?;
            for k in keys {
                v = match k.parse::<usize>() {
                    Ok(i) => v.get(i)?,
                    Err(_) => v.get(*k)?,
                };
            }
            match v {
                serde_json::Value::String(s) if !s.is_empty() => Some(cut(s)),
                serde_json::Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        };
        let header = self.server_header.as_deref().unwrap_or_default();
        let mut engine: Option<ServerFact> = None;
        let mut version: Option<ServerFact> = None;
        if let Some(v) = header.strip_prefix("infermeter-sim/") {
            engine = Some(("engine", "infermeter-sim".into(), "server header"));
            version = Some(("engine_version", cut(v), "server header"));
        }
        let probes: [(&str, &str, &[&str]); 3] = [
            ("/get_server_info", "SGLang", &["version"]),
            ("/props", "llama.cpp", &["build_info"]),
            ("/version", "vLLM", &["version"]),
        ];
        for (path, name, key) in probes {
            if engine.is_none() && self.endpoints.contains_key(path) {
                engine = Some(("engine", name.into(), path));
                version = at(path, key).map(|v| ("engine_version", v, path));
            }
        }
        let context = [
            (MODELS_PATH, &["data", "0", "max_model_len"][..]),
            ("/get_server_info", &["context_length"][..]),
            ("/props", &["default_generation_settings", "n_ctx"][..]),
        ]
        .into_iter()
        .find_map(|(path, keys)| at(path, keys).map(|v| ("max_model_len", v, path)));
        [engine, version, context].into_iter().flatten().collect()
    }
}

/// Special tokens are named like secrets but are not: `bos_token: "<s>"`.
const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "pad_token",
    "unk_token",
    "sep_token",
    "cls_token",
    "mask_token",
];

/// A field whose string value may be a secret (`api_key`, `hf_token`, `admin_password`).
fn secret_field(key: &str) -> bool {
    crate::redact::is_secret_name(key) && !SPECIAL_TOKENS.contains(&key)
}

pub fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_STRING {
        return s.to_string();
    }
    s.chars().take(MAX_STRING).chain(['…']).collect()
}

/// Masks the values of secret-named fields (SGLang's server info lists its `api_key`) and
/// cuts long strings.
pub fn scrub(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if secret_field(&k) && v.is_string() {
                        Value::String(crate::redact::MASK.to_string())
                    } else {
                        scrub(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(scrub).collect()),
        Value::String(s) => Value::String(cut(&crate::redact::secrets(&s))),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_list_and_the_probes_merge_into_one_description() {
        let models = ServerInfo::from_models(
            Some("uvicorn".into()),
            Some(br#"{"data":[{"id":"m","api_key":"sk-9"}]}"#),
        );
        assert_eq!(models.endpoints[MODELS_PATH]["data"][0]["api_key"], "***");
        let probed = ServerInfo {
            server_header: Some("other".into()),
            endpoints: [(
                "/version".to_string(),
                serde_json::json!({"version": "0.8.5"}),
            )]
            .into_iter()
            .collect(),
        };
        let all = models.merge(probed);
        assert_eq!(all.server_header.as_deref(), Some("uvicorn"));
        assert_eq!(all.endpoints.len(), 2);
        assert_eq!(all.summary().unwrap(), "uvicorn, version 0.8.5");
        // vLLM as its answers say it: /version, and the context length in the model list.
        let vllm = ServerInfo::from_models(
            Some("uvicorn".into()),
            Some(br#"{"data":[{"id":"m","max_model_len":2048}]}"#),
        )
        .merge(ServerInfo {
            server_header: None,
            endpoints: [(
                "/version".to_string(),
                serde_json::json!({"version": "0.32.0"}),
            )]
            .into_iter()
            .collect(),
        });
        assert_eq!(
            vllm.facts(),
            vec![
                ("engine", "vLLM".to_string(), "/version"),
                ("engine_version", "0.32.0".to_string(), "/version"),
                ("max_model_len", "2048".to_string(), MODELS_PATH),
            ]
        );
        // A hostile server's version: cut like every string it sends (markup is escaped where
        // it is shown, by the report and the terminal).
        let hostile = ServerInfo {
            server_header: None,
            endpoints: [(
                "/version".to_string(),
                serde_json::json!({"version": format!("<img src=x>{}", "9".repeat(5000))}),
            )]
            .into_iter()
            .collect(),
        };
        let version = &hostile.facts()[1].1;
        assert_eq!(version.chars().count(), MAX_STRING + 1, "{version}");
        assert!(ServerInfo::default().facts().is_empty());
        // Not JSON, or no body: the header alone.
        let bare = ServerInfo::from_models(None, Some(b"<html>"));
        assert!(bare.endpoints.is_empty() && bare.summary().is_none());
    }

    #[test]
    fn secrets_are_masked_and_long_strings_cut() {
        let v = serde_json::json!({
            "api_key": "sk-123",
            "model_path": "m",
            "nested": [{"hf_token": "hf_abc", "chat_template": "x".repeat(2000)}],
            "admin_api_key": null,
            "bos_token": "<s>",
            "max_total_num_tokens": 4096,
        });
        let s = scrub(v);
        assert_eq!(s["api_key"], "***");
        assert_eq!(s["model_path"], "m");
        assert_eq!(s["nested"][0]["hf_token"], "***");
        assert_eq!(
            s["nested"][0]["chat_template"]
                .as_str()
                .unwrap()
                .chars()
                .count(),
            MAX_STRING + 1
        );
        assert!(s["admin_api_key"].is_null());
        assert_eq!(s["bos_token"], "<s>");
        assert_eq!(s["max_total_num_tokens"], 4096);
    }
}
