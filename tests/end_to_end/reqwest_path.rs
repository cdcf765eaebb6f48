//! The client's reqwest path (taken for https and whenever a proxy variable is set), through
//! the real binary: with `http_proxy` set and the simulator's address under `NO_PROXY`,
//! reqwest sends directly, so a streamed and a whole-answer API both go through the path the
//! plain-HTTP tests never reach — its retry, trace context and error accounting included.

use crate::support::*;

fn scenario_for(dir: &std::path::Path, url: &str, api: &str) -> std::path::PathBuf {
    scenario(
        dir,
        &format!("{api}.kdl"),
        &format!(
            "scenario \"reqwest-{api}\"\n\
             target \"{url}\" {{ api \"{api}\"; timeout \"10s\" }}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 16; output-tokens 6; }} }}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"constant\" rate=50; requests 12; }}\n"
        ),
    )
}

#[test]
fn a_proxied_target_is_measured_through_reqwest_streamed_and_whole() {
    let sim = SimProcess::start(&["--decode-base", "1ms", "--prefill-per-token", "0ms"]);
    let dir = tempfile::tempdir().unwrap();
    for api in ["chat", "embeddings"] {
        let path = scenario_for(dir.path(), &sim.base_url, api);
        let out = dir.path().join(api);
        let o = command()
            .args([
                "run",
                path.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .args([
                "--quiet",
                "--no-plots",
                "--requests-jsonl",
                "--untrusted",
                "judge",
            ])
            .env("http_proxy", closed_port_url())
            .env("NO_PROXY", "127.0.0.1,localhost")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{api}: {}", describe(&o));
        let r = results(&out);
        let s = stage(&r, "s");
        assert_eq!(s["requests"]["ok"], 12, "{api}: {s}");
        let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
        assert_eq!(rows.lines().count(), 12);
        for row in rows.lines() {
            let row: serde_json::Value = serde_json::from_str(row).unwrap();
            let id = row["trace_id"].as_str().unwrap_or_default();
            assert_eq!(id.len(), 32, "{api}: a trace id on every request: {row}");
        }
    }
}
