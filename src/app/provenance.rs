//! Gathers a run's [`Provenance`]: the build (commit from `build.rs`), the command line with
//! secrets masked, the scenario's effective params, tags and file hash, the host (host name
//! unless opted out, CPU, kernel, OS) and the server's self-description from the runner.

use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::redact::{MASK, is_secret_name, secrets};
use crate::results::{BuildInfo, HostInfo, Provenance};
use crate::scenario::{ParamValue, Scenario};
use crate::server_info::ServerInfo;

/// The commit infermeter was built from (`build.rs` asks git; `unknown` without a checkout).
pub const BUILD_COMMIT: &str = env!("INFERMETER_COMMIT");

pub(super) struct Gathered<'a> {
    pub scenario: &'a Scenario,
    pub command_line: &'a [String],
    pub hostname: bool,
    pub started_at: SystemTime,
    pub server: Option<ServerInfo>,
}

pub(super) fn gather(g: Gathered<'_>) -> Provenance {
    let s = g.scenario;
    Provenance {
        build: BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: BUILD_COMMIT.to_string(),
        },
        command_line: redact_args(g.command_line),
        params: s
            .params
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    ParamValue::Int(i) => serde_json::Value::from(*i),
                    ParamValue::Float(f) => serde_json::Value::from(*f),
                    ParamValue::Bool(b) => serde_json::Value::from(*b),
                    ParamValue::String(_) if is_secret_name(k) => MASK.into(),
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
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The command line with every secret masked: the value after a flag named like a secret
/// (`--api-key VALUE`, `--api-key=VALUE`), the value of a `NAME=VALUE` or `NAME: VALUE`
/// argument (a param, a header) whose name is, and URL credentials anywhere.
pub fn redact_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut mask_next = false;
    for a in args {
        if mask_next {
            mask_next = false;
            out.push(MASK.to_string());
            continue;
        }
        if let Some(flag) = a.strip_prefix("--") {
            match flag.split_once('=') {
                Some((name, _)) if is_secret_name(name) => {
                    out.push(format!("--{name}={MASK}"));
                    continue;
                }
                // `--param=api_key=…`: the value is what may hold a secret.
                Some((name, value)) => {
                    out.push(format!("--{name}={}", redact_value(value)));
                    continue;
                }
                None if is_secret_name(flag) => {
                    mask_next = true;
                    out.push(a.clone());
                    continue;
                }
                None => {}
            }
        }
        out.push(redact_value(a));
    }
    out
}

/// One argument (or a flag's value) with a secret-named pair's value and URL credentials
/// masked.
fn redact_value(arg: &str) -> String {
    mask_pair(arg, '=')
        .or_else(|| mask_pair(arg, ':'))
        .unwrap_or_else(|| secrets(arg).into_owned())
}

/// `NAME=VALUE` (or `NAME: VALUE`) with the value masked when the name is a secret's.
fn mask_pair(arg: &str, sep: char) -> Option<String> {
    let (name, _) = arg.split_once(sep)?;
    let name = name.trim_start_matches('-');
    // A URL's scheme (`http:`) is not a name.
    if name.is_empty() || arg[name.len()..].starts_with("://") || !is_secret_name(name) {
        return None;
    }
    let head = &arg[..arg.find(sep)?];
    Some(format!(
        "{head}{sep}{}{MASK}",
        if sep == ':' { " " } else { "" }
    ))
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

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn secrets_on_the_command_line_are_masked() {
        let got = redact_args(&args(&[
            "infermeter",
            "run",
            "s.kdl",
            "--api-key",
            "sk-1",
            "--api-key=sk-2",
            "--param",
            "rate=5",
            "--param",
            "api_key=sk-3",
            "--header",
            "Authorization: Bearer sk-4",
            "--param",
            "url=http://user:pw@host/v1",
            "--param=hf_token=hf-5",
            "--url=http://u:pw2@h/v1",
            "--out",
            "dir",
        ]));
        let text = got.join(" ");
        for s in ["sk-1", "sk-2", "sk-3", "sk-4", "pw", "hf-5", "pw2"] {
            assert!(!text.contains(s), "{s} in {text}");
        }
        assert!(text.contains("--api-key *** --api-key=***"), "{text}");
        assert!(text.contains("rate=5"), "{text}");
        assert!(text.contains("api_key=***"), "{text}");
        assert!(text.contains("Authorization: ***"), "{text}");
        assert!(text.contains("--out dir"), "{text}");
        assert!(text.contains("--param=hf_token=***"), "{text}");
    }

    #[test]
    fn the_host_is_described() {
        let h = host(false);
        assert!(h.hostname.is_none());
        assert!(h.cpus >= 1 && !h.arch.is_empty() && !h.os.is_empty());
    }
}
