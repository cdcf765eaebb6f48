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
