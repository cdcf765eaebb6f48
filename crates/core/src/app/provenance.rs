//! Gathers a run's [`Provenance`]: the build (the commit the program recorded), the command line with
//! secrets masked, the scenario's effective params, tags and file hash, the host (host name
//! unless opted out, CPU, kernel, OS) and the server's self-description from the runner.

use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::redact::{MASK, is_secret_name, secrets};
use crate::results::{BuildInfo, HostInfo, Provenance};
use crate::scenario::{ParamValue, Scenario};
use crate::server_info::ServerInfo;

/// The commit the program was built from, as the program says ([`set_build_commit`]).
static BUILD_COMMIT: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Records the commit the program running the library was built from (the `infermeter`
/// binary passes what its `build.rs` asked git), for every result's provenance. The first
/// call wins; without one the commit is `unknown`.
pub fn set_build_commit(commit: &'static str) {
    let _ = BUILD_COMMIT.set(commit);
}

/// The commit [`set_build_commit`] recorded, `unknown` when none was.
pub fn build_commit() -> &'static str {
    BUILD_COMMIT.get().copied().unwrap_or("unknown")
}

pub(super) struct Gathered<'a> {
    pub scenario: &'a Scenario,
    pub command_line: &'a [String],
    pub hostname: bool,
    pub started_at: SystemTime,
    pub server: Option<ServerInfo>,
    pub telemetry: Option<&'a crate::telemetry::TelemetryReport>,
}

pub(super) fn gather(g: Gathered<'_>) -> Provenance {
    let s = g.scenario;
    let infra = crate::results::gather_infra(&s.infra, g.server.as_ref(), g.telemetry);
    Provenance {
        build: BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: build_commit().to_string(),
        },
        command_line: crate::redact::command_line(g.command_line),
        params: s
            .params
            .iter()
            .map(|(k, v)| {
                // A secret's value is masked whatever its type (a true/false is no secret).
                let v = match v {
                    ParamValue::Bool(b) => serde_json::Value::from(*b),
                    _ if is_secret_name(k) => MASK.into(),
                    ParamValue::Int(i) => serde_json::Value::from(*i),
                    ParamValue::Float(f) => serde_json::Value::from(*f),
                    ParamValue::String(t) => secrets(t).into_owned().into(),
                };
                (k.clone(), v)
            })
            .collect(),
        tags: s.tags.clone(),
        scenario_file: s.source.path.display().to_string(),
        scenario_sha256: hex(&Sha256::digest(s.source.text.as_bytes())),
        started_at: crate::units::rfc3339(g.started_at),
        ended_at: crate::units::rfc3339(SystemTime::now()),
        host: host(g.hostname),
        server: g
            .server
            .filter(|i| i.server_header.is_some() || !i.endpoints.is_empty()),
        started_server: None,
        infra,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn host(with_name: bool) -> HostInfo {
    HostInfo {
        hostname: with_name.then(hostname).flatten(),
        cpu_model: cpu_model().unwrap_or_else(|| "unknown".into()),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        kernel: kernel().unwrap_or_else(|| std::env::consts::OS.to_string()),
        os: os_name().unwrap_or_else(|| std::env::consts::OS.to_string()),
        arch: std::env::consts::ARCH.to_string(),
    }
}

fn read_small(path: &str) -> Option<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(256 * 1024)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

fn hostname() -> Option<String> {
    let name = read_small("/proc/sys/kernel/hostname")
        .or_else(|| read_small("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())?;
    let name = name.trim().to_string();
    (!name.is_empty()).then_some(name)
}

fn cpu_model() -> Option<String> {
    let info = read_small("/proc/cpuinfo")?;
    info.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "model name" | "Model" | "Hardware" | "cpu model")
                .then(|| v.trim().to_string())
        })
        .filter(|m| !m.is_empty())
}

fn kernel() -> Option<String> {
    let ostype = read_small("/proc/sys/kernel/ostype")?;
    let release = read_small("/proc/sys/kernel/osrelease")?;
    Some(format!("{} {}", ostype.trim(), release.trim()))
}

fn os_name() -> Option<String> {
    let text = read_small("/etc/os-release")?;
    text.lines().find_map(|l| {
        let v = l.strip_prefix("PRETTY_NAME=")?;
        Some(v.trim().trim_matches('"').to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_described() {
        let h = host(false);
        assert!(h.hostname.is_none());
        assert!(h.cpus >= 1 && !h.arch.is_empty() && !h.os.is_empty());
    }
}
