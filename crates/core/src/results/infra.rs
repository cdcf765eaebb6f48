//! The infrastructure a result ran on (`provenance.infra`): the engine and its version, the
//! context length, the GPUs, replicas, the client's Kubernetes node, and whatever else the
//! scenario's `infra` block declares. A shared baseline is comparable only on the same
//! infrastructure, so each fact says where it came from, and `compare` names the facts two
//! runs differ in. *Added in schema 3.*

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::server_info::ServerInfo;
use crate::telemetry::TelemetryReport;

/// Every fact, by name (`engine`, `engine_version`, `gpu_model`, …; a declared `fact`'s own
/// name).
pub type Infra = BTreeMap<String, Fact>;

/// One fact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fact {
    pub value: String,
    /// Where it came from: `declared` (the scenario's `infra` block), an endpoint of the
    /// server (`/version`, `/v1/models`, `/props`, `/get_server_info`, `server header`),
    /// `nvml` or `dcgm` (GPU telemetry), `kubernetes` (the pod's downward API).
    pub source: String,
    /// What the scenario declared, where the server or telemetry said otherwise (their
    /// value is `value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<String>,
}

/// The environment variables a Kubernetes Job of `infermeter k8s` sets from the downward API.
pub const K8S_NODE_ENV: &str = "INFERMETER_K8S_NODE";

/// The facts of a run: what the server and telemetry said, over what the scenario declared
/// (kept beside a value they contradict), and the client's node when run in a Job.
pub fn gather(
    declared: &[(String, String)],
    server: Option<&ServerInfo>,
    telemetry: Option<&TelemetryReport>,
) -> Infra {
    let mut facts: Infra = declared
        .iter()
        .map(|(k, v)| (k.clone(), fact(v, "declared")))
        .collect();
    let mut found: Vec<(String, String, String)> = server
        .map(ServerInfo::facts)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v, s)| (k.to_string(), v, s.to_string()))
        .collect();
    found.extend(gpus(telemetry));
    if let Some(node) = std::env::var(K8S_NODE_ENV).ok().filter(|n| !n.is_empty()) {
        found.push((
            "client_node".into(),
            crate::server_info::cut(&node),
            "kubernetes".into(),
        ));
    }
    for (name, value, source) in found {
        let declared = facts
            .get(&name)
            .map(|f| f.value.clone())
            .filter(|d| !d.eq_ignore_ascii_case(&value));
        facts.insert(
            name,
            Fact {
                value,
                source,
                declared,
            },
        );
    }
    facts
}

fn fact(value: &str, source: &str) -> Fact {
    Fact {
        value: value.to_string(),
        source: source.to_string(),
        declared: None,
    }
}

/// The GPUs telemetry saw: their model names (distinct, in order) and how many, from the
/// first source that saw any.
fn gpus(telemetry: Option<&TelemetryReport>) -> Vec<(String, String, String)> {
    let Some(t) = telemetry else {
        return Vec::new();
    };
    let Some(first) = t.gpus.first() else {
        return Vec::new();
    };
    let same: Vec<_> = t.gpus.iter().filter(|g| g.source == first.source).collect();
    let mut names: Vec<&str> = Vec::new();
    for g in &same {
        if !names.contains(&g.name.as_str()) {
            names.push(&g.name);
        }
    }
    let source = if first.source == "nvml" {
        "nvml"
    } else {
        "dcgm"
    };
    vec![
        (
            "gpu_model".into(),
            crate::server_info::cut(&names.join(", ")),
            source.into(),
        ),
        ("gpu_count".into(), same.len().to_string(), source.into()),
    ]
}

/// The facts `a` and `b` both know and differ in, and those only one knows: `engine_version
/// 0.6.3 → 0.7.0`, `gpu_model H100 → (unknown)`. Empty when either run recorded none.
pub fn differences(a: &Infra, b: &Infra) -> Vec<String> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (x, y) = (a.get(name), b.get(name));
            let shown = |f: Option<&Fact>| f.map_or("(unknown)".to_string(), |f| f.value.clone());
            (x.map(|f| &f.value) != y.map(|f| &f.value))
                .then(|| format!("{name} {} → {}", shown(x), shown(y)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_overrides_a_declaration_and_keeps_it() {
        let info = ServerInfo {
            server_header: None,
            endpoints: [(
                "/version".to_string(),
                serde_json::json!({"version": "0.7.0"}),
            )]
            .into_iter()
            .collect(),
        };
        let declared = vec![
            ("engine_version".to_string(), "0.6.3".to_string()),
            ("gpu_model".to_string(), "H100".to_string()),
        ];
        let f = gather(&declared, Some(&info), None);
        assert_eq!(f["engine"].value, "vLLM");
        assert_eq!(f["engine_version"].value, "0.7.0");
        assert_eq!(f["engine_version"].declared.as_deref(), Some("0.6.3"));
        assert_eq!(f["gpu_model"].source, "declared");
        let mut other = f.clone();
        other.remove("gpu_model");
        other.get_mut("engine_version").unwrap().value = "0.6.3".into();
        assert_eq!(
            differences(&f, &other),
            vec!["engine_version 0.7.0 → 0.6.3", "gpu_model H100 → (unknown)"]
        );
        assert!(differences(&f, &Infra::new()).is_empty());
    }
}
