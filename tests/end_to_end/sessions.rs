//! Multi-turn sessions end to end: the real binary against the embedded simulator, with
//! synthetic sessions (history from the data set and from the server) and ShareGPT
//! conversations; every session's turns, their growing prompts and the per-turn metrics.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// Runs `body` (datasets and stages) and returns (results.json, requests.jsonl rows).
fn run(body: &str) -> (Value, Vec<Value>) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/data");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.kdl");
    let text = format!(
        "scenario \"sessions\" {{ seed 9 }}\ntarget \"sim\" {{ timeout \"30s\"; decode-base \"1ms\" }}\n{}\n",
        body.replace("FIXTURES", &fixtures.display().to_string())
    );
    std::fs::write(&scenario, text).unwrap();
    let out = dir.path().join("out");
    let output = crate::support::command()
        .args([
            "run",
            "-q",
            "--no-plots",
            "--requests-jsonl",
            "--untrusted",
            "judge",
            "--out",
        ])
        .arg(&out)
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let results =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let rows = std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (results, rows)
}

/// The rows of each session (by index), in turn order.
fn sessions(rows: &[Value]) -> BTreeMap<u64, Vec<&Value>> {
    let mut by: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for r in rows {
        assert!(r["error"].is_null(), "{r}");
        by.entry(r["index"].as_u64().unwrap()).or_default().push(r);
    }
    for turns in by.values_mut() {
        turns.sort_by_key(|r| r["turn"].as_u64().unwrap());
    }
    by
}

fn field(r: &Value, key: &str) -> u64 {
    r[key].as_u64().unwrap()
}

#[test]
fn synthetic_three_turn_sessions_grow_turn_over_turn() {
    let (results, rows) = run(r#"
dataset "chat" {
    synthetic { input-tokens 40; output-tokens 12 }
    session turns=3 think-time="20ms"
}
stage "open" { dataset "chat"; arrival "poisson" rate=20; requests 4 }
stage "closed" { dataset "chat"; arrival "concurrency" clients=2; requests 3 }
"#);
    for (stage, count) in [("open", 4), ("closed", 3)] {
        let stage_rows: Vec<Value> = rows
            .iter()
            .filter(|r| r["stage"] == stage)
            .cloned()
            .collect();
        let by = sessions(&stage_rows);
        assert_eq!(by.len(), count, "{stage}");
        for turns in by.values() {
            let idx: Vec<u64> = turns.iter().map(|r| field(r, "turn")).collect();
            assert_eq!(idx, vec![0, 1, 2], "{stage}");
            // The simulator's usage counts the whole history: 40 new tokens and a 12-token
            // reply per earlier turn, plus its chat template.
            let input: Vec<u64> = turns.iter().map(|r| field(r, "input_tokens")).collect();
            assert!(input[0] >= 40 && input[0] < 60, "{input:?}");
            assert!(input[1] >= input[0] + 52, "{input:?}");
            assert!(input[2] >= input[1] + 52, "{input:?}");
            assert!(
                turns
                    .iter()
                    .all(|r| !r["token_mismatch"].as_bool().unwrap())
            );
            // A later turn leaves after the previous reply and the think time.
            for w in turns.windows(2) {
                assert!(field(w[1], "scheduled_ns") >= field(w[0], "done_ns") + 20_000_000);
            }
        }
        let summary = results["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == stage)
            .unwrap();
        assert_eq!(field(&summary["requests"], "sent"), 3 * count as u64);
        let per_turn = summary["per_turn"].as_array().unwrap();
        assert_eq!(per_turn.len(), 3);
        for (k, t) in per_turn.iter().enumerate() {
            assert_eq!(field(t, "turn"), k as u64);
            assert_eq!(field(t, "ok"), count as u64);
            assert_eq!(field(&t["ttft_ms"], "count"), count as u64);
            assert_eq!(field(&t["e2e_ms"], "count"), count as u64);
        }
        let mean = |k: usize| per_turn[k]["mean_input_tokens"].as_f64().unwrap();
        assert!(mean(0) < mean(1) && mean(1) < mean(2));
    }
}

#[test]
fn sharegpt_conversations_replay_turn_by_turn() {
    let (results, rows) = run(r#"
dataset "conv" {
    sharegpt "FIXTURES/sharegpt_multiturn.json" count=10
    session
}
stage "s" { dataset "conv"; arrival "concurrency" clients=1; requests 3 }
"#);
    let by = sessions(&rows);
    // 3 conversations pass vLLM's first-turn rules (one is too short): 3, 2 and 2 turns (the
    // third breaks the human/gpt alternation after its second turn).
    let mut lengths: Vec<usize> = by.values().map(Vec::len).collect();
    lengths.sort();
    assert_eq!(lengths, vec![2, 2, 3]);
    for turns in by.values() {
        for w in turns.windows(2) {
            assert!(field(w[1], "input_tokens") > field(w[0], "input_tokens"));
        }
        assert!(
            turns
                .iter()
                .all(|r| !r["token_mismatch"].as_bool().unwrap())
        );
    }
    let per_turn = results["stages"][0]["per_turn"].as_array().unwrap();
    let sent: Vec<u64> = per_turn.iter().map(|t| field(t, "sent")).collect();
    assert_eq!(sent, vec![3, 3, 1]);
}

#[test]
fn server_history_carries_the_received_replies() {
    // Every turn asks for 60 output tokens, while the data set's replies are 15 to 35 tokens:
    // under history "server" the next turn grows by the 60 tokens received, under "dataset"
    // by the shorter recorded reply.
    let growth = |history: &str| -> BTreeMap<u64, u64> {
        let (_, rows) = run(&format!(
            r#"
dataset "conv" {{
    sharegpt "FIXTURES/sharegpt_multiturn.json" count=10 output-tokens=60
    session turns=2 history="{history}"
}}
stage "s" {{ dataset "conv"; arrival "concurrency" clients=1; requests 3 }}
"#
        ));
        sessions(&rows)
            .into_iter()
            .map(|(i, t)| {
                assert_eq!(t.len(), 2);
                assert_eq!(field(t[0], "output_tokens"), 60);
                (i, field(t[1], "input_tokens") - field(t[0], "input_tokens"))
            })
            .collect()
    };
    let server = growth("server");
    let dataset = growth("dataset");
    assert_eq!(server.len(), 3);
    for (i, s) in &server {
        let d = dataset[i];
        assert!(*s >= 60, "session {i}: server history grew by {s}");
        assert!(*s > d + 15, "session {i}: server {s}, dataset {d}");
    }
}

#[test]
fn progress_counts_every_turn_of_every_session() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.kdl");
    std::fs::write(
        &scenario,
        r#"scenario "progress" { seed 9 }
target "sim" { timeout "30s"; decode-base "1ms" }
dataset "chat" {
    synthetic { input-tokens 40; output-tokens 12 }
    session turns=3 think-time="20ms"
}
stage "open" { dataset "chat"; arrival "poisson" rate=20; requests 4 }
stage "closed" { dataset "chat"; arrival "concurrency" clients=2; requests 3 }
"#,
    )
    .unwrap();
    let output = crate::support::command()
        .args([
            "run",
            "--progress-lines",
            "--no-plots",
            "--untrusted",
            "judge",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Each stage's closing line: turns done out of sessions × turns.
    assert!(stderr.contains("[open] 12/12 done"), "{stderr}");
    assert!(stderr.contains("[closed] 9/9 done"), "{stderr}");
    // The open stage's arrivals are sessions, and the report says so.
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("poisson at 20 sessions/s"), "{md}");
    assert!(md.contains("bound 4 sessions"), "{md}");
    let plan = crate::support::infermeter(&["plan", scenario.to_str().unwrap()]);
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("poisson 20/s (sessions)"), "{plan}");
    assert!(plan.contains("sessions  4"), "{plan}");
}
