//! Agentic sessions end to end: the real binary runs the sample agentic trace against the
//! embedded simulator with its prefix cache on. Subagents start after the reply that forks
//! them, a joining turn waits for them, each task's completion time is on the request that
//! completed it, the cached share rises turn by turn, and the SLAs on the per-session metrics
//! are judged. A hostile trace is refused with its file and line.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

const TRACE: &str = "scenarios/data/agentic_tasks.jsonl";

/// Runs `stage` on the sample trace; (results.json, requests.jsonl rows).
fn run(stage: &str) -> (Value, Vec<Value>) {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join(TRACE);
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.kdl");
    let text = format!(
        "scenario \"agents\" {{ seed 5 }}\n\
         target \"sim\" {{ timeout \"30s\"; decode-base \"1ms\"; prefix-cache #true; prefix-cache-block 16 }}\n\
         dataset \"tasks\" {{ agentic \"{}\" max-tokens=20 }}\n{stage}\n\
         sla {{\n    assert \"session.max < 600s\"\n    assert \"turn_ttft.max < 600s\"\n}}\n",
        trace.display()
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

fn n(r: &Value, key: &str) -> u64 {
    r[key].as_u64().unwrap_or_else(|| panic!("{key} in {r}"))
}

/// Each task's rows (by index), in scheduled order.
fn tasks(rows: &[Value]) -> BTreeMap<u64, Vec<&Value>> {
    let mut by: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for r in rows {
        assert!(r["error"].is_null(), "{r}");
        by.entry(n(r, "index")).or_default().push(r);
    }
    for rs in by.values_mut() {
        rs.sort_by_key(|r| n(r, "scheduled_ns"));
    }
    by
}

#[test]
fn subagents_fork_and_join_and_the_cache_share_rises_by_turn() {
    // Two arrivals: each task of the file once (file order, no sampling).
    let (results, rows) =
        run("stage \"open\" { dataset \"tasks\"; arrival \"poisson\" rate=10; requests 2 }");
    let by = tasks(&rows);
    assert_eq!(by.len(), 2);
    // The first task: the root's 3 turns and two subagents of 2 turns; the second: 4 turns.
    let sizes: Vec<usize> = by.values().map(Vec::len).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 11);
    assert!(sizes.contains(&7) && sizes.contains(&4), "{sizes:?}");
    for rs in by.values() {
        let start = n(rs[0], "scheduled_ns");
        // Exactly one request completed the task, and its time runs from the task's start.
        let completing: Vec<&&Value> = rs.iter().filter(|r| !r["task_ns"].is_null()).collect();
        assert_eq!(completing.len(), 1, "{rs:?}");
        let c = completing[0];
        assert_eq!(n(c, "task_ns"), n(c, "done_ns") - start);
        if rs.len() != 7 {
            continue;
        }
        // The fork: both subagents' first turns (turn 0, after the root's first) start once
        // the root's first reply is done.
        let root0 = rs[0];
        let firsts: Vec<&&Value> = rs[1..].iter().filter(|r| n(r, "turn") == 0).collect();
        assert_eq!(firsts.len(), 2);
        for f in &firsts {
            assert!(
                n(f, "scheduled_ns") >= n(root0, "done_ns"),
                "{f} before {root0}"
            );
        }
        // The join: the root's turn 1 is due 50 ms (its tool wait) after the later of the two
        // subagents' last replies.
        let mut turn1: Vec<&&Value> = rs.iter().filter(|r| n(r, "turn") == 1).collect();
        turn1.sort_by_key(|r| n(r, "scheduled_ns"));
        let join = turn1.pop().unwrap();
        let last_subagent = turn1.iter().map(|r| n(r, "done_ns")).max().unwrap();
        assert!(
            n(join, "scheduled_ns") >= last_subagent + 50_000_000,
            "{join}"
        );
    }
    let stage = &results["stages"][0];
    // The per-session metrics: one task time per task, later turns' TTFT.
    assert_eq!(stage["latency"]["session_ms"]["count"], 2);
    assert_eq!(stage["latency"]["turn_ttft_ms"]["count"], 11 - 4);
    // The prompt is the conversation so far: the prefix cache serves more of it turn by turn.
    let shares: Vec<f64> = stage["per_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cached_share"].as_f64().unwrap())
        .collect();
    assert_eq!(shares.len(), 4);
    assert!(shares.windows(2).all(|w| w[0] < w[1]), "{shares:?}");
    // `per_turn` is the root sessions' turns (3 and 4); the subagents' 4 turns are counted by
    // depth instead, and their rows say so.
    let root_turns: u64 = stage["per_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| n(t, "sent"))
        .sum();
    assert_eq!(root_turns, 7);
    let depths = stage["per_depth"].as_array().unwrap();
    assert_eq!(depths.len(), 1, "{depths:?}");
    assert_eq!((n(&depths[0], "depth"), n(&depths[0], "sent")), (1, 4));
    assert_eq!(depths[0]["ttft_ms"]["count"], 4, "{}", depths[0]);
    let deep = rows.iter().filter(|r| r["depth"] == 1).count();
    assert_eq!(deep, 4);
    // The SLAs on them were judged on those samples.
    let verdicts = results["sla"].as_array().unwrap();
    assert_eq!(verdicts.len(), 2);
    for v in verdicts {
        assert_eq!(v["outcome"], "pass", "{v}");
    }
}

#[test]
fn a_closed_loop_worker_runs_one_whole_task_at_a_time() {
    let (_, rows) = run(
        "stage \"closed\" { dataset \"tasks\"; arrival \"concurrency\" clients=1; requests 3 }",
    );
    let by = tasks(&rows);
    assert_eq!(by.len(), 3);
    let spans: Vec<(u64, u64)> = by
        .values()
        .map(|rs| {
            let done = rs.iter().map(|r| n(r, "done_ns")).max().unwrap();
            (n(rs[0], "scheduled_ns"), done)
        })
        .collect();
    // Subagents included: the next task starts only once the whole previous one is done.
    for w in spans.windows(2) {
        assert!(w[1].0 >= w[0].1, "{spans:?}");
    }
}

#[test]
fn a_trace_with_a_cycle_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.jsonl"),
        "{\"id\": \"a\", \"turns\": [{\"text\": \"go\", \"fork\": [\"b\"]}]}\n\
         {\"id\": \"b\", \"turns\": [{\"text\": \"go\", \"fork\": [\"a\"]}]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("s.kdl"),
        "target \"sim\"\ndataset \"d\" { agentic \"t.jsonl\" }\nstage \"s\" { dataset \"d\"; arrival \"poisson\" rate=1; requests 1 }\n",
    )
    .unwrap();
    let out = crate::support::command()
        .arg("plan")
        .arg(dir.path().join("s.kdl"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("t.jsonl:1"), "{err}");
    assert!(err.contains("cycle of forks"), "{err}");
}

/// The task indices of a shard's rows of `stage`, each with its row count.
fn shard_tasks(dir: &Path, stage: &str) -> BTreeMap<u64, usize> {
    let mut by = BTreeMap::new();
    for line in std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap()
        .lines()
    {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["stage"] == stage {
            *by.entry(n(&r, "index")).or_insert(0) += 1;
        }
    }
    by
}

#[test]
fn shards_split_whole_tasks_and_merge_their_times() {
    let sim = crate::support::SimProcess::start(&["--jitter", "0", "--prefix-cache"]);
    let tmp = tempfile::tempdir().unwrap();
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join(TRACE);
    let scenario = crate::support::scenario(
        tmp.path(),
        "agents.kdl",
        &format!(
            "scenario \"agents\" {{ seed 5 }}\n\
             target \"{}\" {{ timeout \"30s\" }}\n\
             dataset \"tasks\" {{ agentic \"{}\" max-tokens=8 }}\n\
             stage \"open\" {{ dataset \"tasks\"; arrival \"constant\" rate=20; requests 6 }}\n\
             stage \"closed\" {{ dataset \"tasks\"; arrival \"concurrency\" clients=3; requests 5 }}\n",
            sim.base_url,
            trace.display()
        ),
    );
    let dirs: Vec<_> = (0..2)
        .map(|i| tmp.path().join(format!("shard-{i}")))
        .collect();
    for (i, d) in dirs.iter().enumerate() {
        let out = crate::support::run(
            &scenario,
            d,
            &["--shard", &format!("{i}/2"), "--requests-jsonl"],
        );
        assert!(
            out.status.code().is_some_and(|c| c != 2 && c != 3),
            "{}",
            crate::support::text(&out).1
        );
    }
    for (stage, tasks) in [("open", 6u64), ("closed", 5)] {
        let (a, b) = (shard_tasks(&dirs[0], stage), shard_tasks(&dirs[1], stage));
        // Every task on exactly one shard, with all its sessions' turns there.
        assert!(a.keys().all(|k| !b.contains_key(k)), "{a:?} {b:?}");
        let all: Vec<u64> = a
            .keys()
            .chain(b.keys())
            .copied()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(all, (0..tasks).collect::<Vec<_>>());
        for rows in a.values().chain(b.values()) {
            assert!(matches!(rows, 7 | 4), "{a:?} {b:?}");
        }
    }
    let merged = tmp.path().join("merged");
    let files: Vec<String> = dirs
        .iter()
        .map(|d| d.join("results.json").display().to_string())
        .collect();
    let out = crate::support::infermeter(&[
        "merge",
        &files[0],
        &files[1],
        "--out",
        merged.to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::support::text(&out).1
    );
    let m = crate::support::results(&merged);
    assert_eq!(
        crate::support::stage(&m, "open")["latency"]["session_ms"]["count"],
        6
    );
    assert_eq!(
        crate::support::stage(&m, "closed")["latency"]["session_ms"]["count"],
        5
    );
    let turns = crate::support::stage(&m, "open")["per_turn"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(turns, 4);
}

#[test]
fn generated_tasks_run_with_their_forks_and_waits() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("gen.kdl");
    std::fs::write(
        &scenario,
        "scenario \"gen\" { seed 3 }\n\
         target \"sim\" { timeout \"30s\"; decode-base \"1ms\"; prefix-cache #true; prefix-cache-block 16 }\n\
         dataset \"tasks\" {\n\
             agentic tasks=6 fork-chance=0.5 depth=2 {\n\
                 turns \"uniform\" min=2 max=4\n\
                 fan-out 1 2\n\
                 tool-ms \"uniform\" min=5 max=30\n\
                 input-tokens \"uniform\" min=20 max=60\n\
                 output-tokens 8\n\
             }\n\
         }\n\
         stage \"agents\" { dataset \"tasks\"; arrival \"poisson\" rate=10; requests 6 }\n",
    )
    .unwrap();
    let plan = crate::support::infermeter(&["plan", scenario.to_str().unwrap()]);
    let (text, err) = crate::support::text(&plan);
    assert!(plan.status.success(), "{err}");
    assert!(text.contains("agentic generated, 6 tasks"), "{text}");
    let out = dir.path().join("out");
    let run = crate::support::run(&scenario, &out, &["--requests-jsonl", "--no-plots"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        crate::support::text(&run).1
    );
    let r = crate::support::results(&out);
    let stage = &r["stages"][0];
    assert_eq!(stage["latency"]["session_ms"]["count"], 6);
    assert_eq!(stage["requests"]["failed"], 0);
    // Every request is a turn of one of the six tasks, each completed once.
    let rows: Vec<Value> = std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len() as u64, n(&stage["requests"], "sent"));
    let by = tasks(&rows);
    assert_eq!(by.len(), 6);
    assert!(
        by.values()
            .all(|rs| rs.iter().filter(|r| !r["task_ns"].is_null()).count() == 1)
    );
    // Fresh synthetic texts: nothing cached on first turns, the conversation so far after.
    let shares: Vec<f64> = stage["per_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cached_share"].as_f64().unwrap())
        .collect();
    assert_eq!(shares[0], 0.0, "{shares:?}");
    assert!(shares[1..].iter().all(|&s| s > 0.0), "{shares:?}");
}

#[test]
fn a_dynamo_agentic_trace_imports_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tasks.jsonl");
    let trace =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/data/dynamo_agentic_small.jsonl");
    let import = |extra: &[&str]| {
        let mut args = vec![
            "import",
            "dynamo-agentic",
            trace.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        crate::support::infermeter(&args)
    };
    let done = import(&[]);
    let (text, err) = crate::support::text(&done);
    assert!(done.status.success(), "{err}");
    assert!(
        text.contains("8 requests as 4 sessions in 2 tasks"),
        "{text}"
    );
    // Refused without --force once the file exists.
    assert_eq!(import(&[]).status.code(), Some(2));
    assert!(import(&["--force"]).status.success());
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let main = &lines[0];
    assert_eq!(main["id"], "main");
    assert_eq!(
        main["turns"][0]["fork"],
        serde_json::json!(["explore-a", "explore-b"])
    );
    assert_eq!(
        main["turns"][1]["join"],
        serde_json::json!(["explore-a", "explore-b"])
    );
    // `delay` + `tool_wait_ms`; the new text is what the prompt grew by.
    assert_eq!(main["turns"][1]["wait_ms"], 45);
    assert_eq!(main["turns"][1]["input_tokens"], 1900 - 1200 - 80);
    // The converted file runs.
    let scenario = dir.path().join("s.kdl");
    std::fs::write(
        &scenario,
        "target \"sim\" { timeout \"30s\"; decode-base \"1ms\" }\n\
         dataset \"d\" { agentic \"tasks.jsonl\" }\n\
         stage \"s\" { dataset \"d\"; arrival \"poisson\" rate=20; requests 2 }\n",
    )
    .unwrap();
    let results = dir.path().join("out");
    let run = crate::support::run(&scenario, &results, &["--no-plots"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        crate::support::text(&run).1
    );
    let r = crate::support::results(&results);
    assert_eq!(r["stages"][0]["requests"]["sent"], 8);
    assert_eq!(r["stages"][0]["latency"]["session_ms"]["count"], 2);
}

#[test]
fn what_an_agentic_graph_cannot_say_is_refused_at_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tasks.jsonl");
    let cases = [
        // A subagent waiting on two parents.
        (
            "{\"request_id\": \"a\", \"session_id\": \"A\", \"input_length\": 10}\n\
             {\"request_id\": \"b\", \"session_id\": \"B\", \"input_length\": 10}\n\
             {\"request_id\": \"c\", \"session_id\": \"C\", \"input_length\": 10, \"wait_for\": [\"a\", \"b\"]}\n",
            3,
            "one parent",
        ),
        // A join on a session it did not fork.
        (
            "{\"request_id\": \"a\", \"session_id\": \"A\", \"input_length\": 10}\n\
             {\"request_id\": \"b\", \"session_id\": \"B\", \"input_length\": 10}\n\
             {\"request_id\": \"a2\", \"session_id\": \"A\", \"input_length\": 30, \"wait_for\": [\"b\"]}\n",
            3,
            "this session forked",
        ),
        (
            "{\"request_id\": \"a\", \"input_length\": 10, \"wait_for\": [\"ghost\"]}\n",
            1,
            "no row",
        ),
        (
            "{\"request_id\": \"a\", \"input_length\": 10}\n{\"request_id\": \"a\", \"input_length\": 10}\n",
            2,
            "used again",
        ),
        ("{\"request_id\": \"a\"}\n", 1, "input_length"),
        ("[1, 2]\n", 1, "not a Dynamo agentic row"),
    ];
    for (text, line, want) in cases {
        let trace = dir.path().join("t.jsonl");
        std::fs::write(&trace, text).unwrap();
        let o = crate::support::infermeter(&[
            "import",
            "dynamo-agentic",
            trace.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let (_, err) = crate::support::text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("t.jsonl:{line}")), "{want}: {err}");
        assert!(err.contains(want), "{want}: {err}");
        assert!(!out.exists(), "nothing written on a refusal");
    }
    // A cycle the rows allow (each session's first request waits for the other's) is refused
    // by the loader a run uses, before anything is written.
    let trace = dir.path().join("cycle.jsonl");
    std::fs::write(
        &trace,
        "{\"request_id\": \"a\", \"session_id\": \"A\", \"input_length\": 10, \"wait_for\": [\"b\"]}\n\
         {\"request_id\": \"b\", \"session_id\": \"B\", \"input_length\": 10, \"wait_for\": [\"a\"]}\n",
    )
    .unwrap();
    let o = crate::support::infermeter(&[
        "import",
        "dynamo-agentic",
        trace.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let (_, err) = crate::support::text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cycle of forks"), "{err}");
    assert!(!out.exists());
}
