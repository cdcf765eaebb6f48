//! File-backed workloads: ShareGPT sampling rules, JSONL prompts, trace replays with shared
//! prefix blocks, and RAG context, compiled from scenarios over the fixtures in
//! scenarios/data/ and run against the embedded simulator.

use std::path::{Path, PathBuf};

use infermeter_core::dataset::{DataItem, DatasetSource, LoadReport, Prompt};
use infermeter_core::plan::{Plan, compile};
use infermeter_core::scenario::parse_str;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/data")
}

/// Compiles a scenario whose relative paths resolve against the fixtures directory.
fn plan_of(body: &str) -> Result<Plan, String> {
    let text = format!("scenario \"t\" {{ seed 5 }}\ntarget \"sim\"\n{body}\n");
    let path = fixtures().join("test.kdl");
    let scenario = parse_str(&path, &text, &[]).map_err(|e| format!("{e:?}"))?;
    compile(&scenario).map_err(|e| e.to_string())
}

fn items_of(plan: &Plan) -> (&Vec<DataItem>, &LoadReport) {
    match &plan.datasets[0].source {
        DatasetSource::Items { items, load, .. } => (items, load),
        other => panic!("not an item data set: {other:?}"),
    }
}

const SHAREGPT_STAGE: &str =
    "stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 5 }";

#[test]
fn sharegpt_follows_vllm_filter_rules() {
    let plan = plan_of(&format!(
        "dataset \"d\" {{ sharegpt \"sharegpt_small.json\" count=100 }}\n{SHAREGPT_STAGE}"
    ))
    .unwrap();
    let (items, load) = items_of(&plan);
    assert_eq!(load.records, 12);
    assert_eq!(items.len(), 5, "{load:?}");
    let skipped: Vec<(&str, u64)> = load.skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        skipped,
        vec![
            ("fewer_than_2_turns", 3),
            ("output_under_4_tokens", 1),
            ("prompt_over_1024_tokens", 1),
            ("prompt_under_4_tokens", 1),
            ("total_over_2048_tokens", 1),
        ]
    );
    for it in items {
        assert!(it.input_tokens >= 4 && it.input_tokens <= 1024);
        assert!(it.output_tokens >= 4 && it.input_tokens + it.output_tokens <= 2048);
    }
    assert_eq!(load.sha256.len(), 64);
    let text = infermeter_core::plan::render_text(&plan);
    assert!(text.contains("prompt_over_1024_tokens 1"), "{text}");

    // Overridden rules keep what the defaults dropped.
    let relaxed = plan_of(&format!(
        "dataset \"d\" {{ sharegpt \"sharegpt_small.json\" count=100 max-prompt-tokens=2000 max-total-tokens=4000 min-prompt-tokens=1 min-output-tokens=1 }}\n{SHAREGPT_STAGE}"
    ))
    .unwrap();
    let (items, load) = items_of(&relaxed);
    assert_eq!(items.len(), 9, "{load:?}");
}

#[test]
fn sharegpt_sampling_is_seeded_and_json_equals_jsonl() {
    let take = |file: &str, count: u32| {
        let plan = plan_of(&format!(
            "dataset \"d\" {{ sharegpt \"{file}\" count={count} }}\n{SHAREGPT_STAGE}"
        ))
        .unwrap();
        items_of(&plan).0.clone()
    };
    let a = take("sharegpt_small.json", 3);
    assert_eq!(a.len(), 3);
    assert_eq!(a, take("sharegpt_small.json", 3));
    assert_eq!(a, take("sharegpt_small.jsonl", 3));
    // A larger sample contains the smaller one, in the same order (a seeded shuffle).
    assert_eq!(&take("sharegpt_small.json", 5)[..3], &a[..]);
}

#[test]
fn jsonl_prompts_messages_and_pass_through_fields() {
    let plan = plan_of(&format!(
        "dataset \"d\" {{ jsonl \"prompts.jsonl\" max-tokens=40 }}\n{SHAREGPT_STAGE}"
    ))
    .unwrap();
    let (items, load) = items_of(&plan);
    assert_eq!(load.records, 4);
    assert_eq!(items.len(), 4);
    assert_eq!(
        items.iter().map(|i| i.output_tokens).collect::<Vec<_>>(),
        vec![32, 16, 64, 40]
    );
    assert_eq!(items[1].extra["temperature"], serde_json::json!(0.2));
    assert_eq!(items[2].extra["top_p"], serde_json::json!(0.9));
    let factory = plan.prompt_factory(&fixtures()).unwrap();
    let stage = &plan.stages[0];
    let r = plan.request(stage, 1);
    let p = factory.prompt(stage.dataset, r.input_tokens, r.item);
    let Prompt::Messages(ms) = p else {
        panic!("expected messages, got {p:?}")
    };
    assert_eq!(ms.len(), 2);
    assert_eq!(ms[0].role, "system");
}

#[test]
fn malformed_jsonl_lines_are_reported_with_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("{\"prompt\": \"ok\"}\n\n{not json}\n", ":3:"),
        ("{\"prompt\": \"ok\"}\n{\"text\": \"x\"}\n", ":2:"),
        ("{\"prompt\": 5}\n", ":1:"),
        ("{\"messages\": [{\"role\": \"user\"}]}\n", ":1:"),
        ("{\"prompt\": \"ok\", \"max_tokens\": -3}\n", ":1:"),
        ("", "no prompt"),
        // Tool calling and structured output: shapes a server would refuse.
        (
            "{\"prompt\": \"ok\"}\n{\"prompt\": \"ok\", \"tools\": {}}\n",
            ":2: `tools` must be",
        ),
        (
            "{\"prompt\": \"ok\", \"tools\": [{\"type\": \"function\"}]}\n",
            "`tools` must be",
        ),
        ("{\"prompt\": \"ok\", \"tools\": [7]}\n", "`tools` must be"),
        (
            "{\"prompt\": \"ok\", \"tool_choice\": 3}\n",
            "`tool_choice` must be",
        ),
        (
            "{\"prompt\": \"ok\", \"response_format\": \"json\"}\n",
            "`response_format` must be",
        ),
    ];
    for (text, want) in cases {
        let file = dir.path().join("bad.jsonl");
        std::fs::write(&file, text).unwrap();
        let err = plan_of(&format!(
            "dataset \"d\" {{ jsonl \"{}\" }}\n{SHAREGPT_STAGE}",
            file.display()
        ))
        .unwrap_err();
        assert!(err.contains(want), "{text:?}: {err}");
    }
    // A tool set past the size cap is refused, naming its size.
    let file = dir.path().join("huge.jsonl");
    let name = "n".repeat(300 << 10);
    std::fs::write(
        &file,
        format!("{{\"prompt\": \"ok\", \"tools\": [{{\"type\": \"x\", \"d\": \"{name}\"}}]}}\n"),
    )
    .unwrap();
    let err = plan_of(&format!(
        "dataset \"d\" {{ jsonl \"{}\" }}\n{SHAREGPT_STAGE}",
        file.display()
    ))
    .unwrap_err();
    assert!(err.contains(":1: `tools` takes 307"), "{err}");
    // A broken ShareGPT array names its line too; a missing file its path.
    let file = dir.path().join("bad.json");
    std::fs::write(
        &file,
        "[\n{\"conversations\": []},\n{\"conversations\": 7}\n]",
    )
    .unwrap();
    let err = plan_of(&format!(
        "dataset \"d\" {{ sharegpt \"{}\" }}\n{SHAREGPT_STAGE}",
        file.display()
    ))
    .unwrap_err();
    assert!(err.contains("bad.json:3"), "{err}");
    let err = plan_of(&format!(
        "dataset \"d\" {{ jsonl \"nope.jsonl\" }}\n{SHAREGPT_STAGE}"
    ))
    .unwrap_err();
    assert!(err.contains("nope.jsonl"), "{err}");
}

const TRACE: &str = "dataset \"d\" { trace \"mooncake_small.jsonl\" }";

#[test]
fn trace_replay_keeps_inter_arrival_times_and_exact_lengths() {
    let plan = plan_of(&format!(
        "{TRACE}\nstage \"r\" {{ dataset \"d\"; arrival \"trace\" speedup=2.0; requests 100 }}"
    ))
    .unwrap();
    let stage = &plan.stages[0];
    let ms: Vec<u64> = stage
        .offsets()
        .expect("open loop expected")
        .map(|n| n / 1_000_000)
        .collect();
    assert_eq!(ms, vec![0, 125, 300, 500, 650, 1050]);
    let factory = plan.prompt_factory(&fixtures()).unwrap();
    let inputs = [1200, 1100, 600, 1300, 300, 520];
    let outputs = [20, 30, 10, 25, 15, 12];
    let texts: Vec<String> = (0..6)
        .map(|i| {
            let r = plan.request(stage, i);
            assert_eq!(r.input_tokens, inputs[i as usize]);
            assert_eq!(r.output_tokens, outputs[i as usize]);
            let text = factory
                .prompt(stage.dataset, r.input_tokens, r.item)
                .as_text()
                .to_string();
            assert_eq!(
                factory.tokenizer().count(&text),
                inputs[i as usize] as usize
            );
            text
        })
        .collect();
    // Rows 0 and 1 share hash ids 1, 2: their first 1024 tokens are the same bytes.
    let prefix = |t: &str, words: usize| t.split(' ').take(words).collect::<Vec<_>>().join(" ");
    assert_eq!(prefix(&texts[0], 1024), prefix(&texts[1], 1024));
    assert_ne!(prefix(&texts[0], 1025), prefix(&texts[1], 1025));
    // Row 3 has row 0's ids: row 0 is a prefix of it. Row 2 shares nothing with row 0.
    assert!(texts[3].starts_with(&texts[0]));
    assert_ne!(prefix(&texts[2], 4), prefix(&texts[0], 4));

    // A window and a start pick rows by trace time.
    let plan = plan_of(&format!(
        "{TRACE}\nstage \"r\" {{ dataset \"d\"; arrival \"trace\" start=\"500ms\" window=\"900ms\"; requests 100 }}"
    ))
    .unwrap();
    let stage = &plan.stages[0];
    let offsets: Vec<u64> = stage.offsets().expect("open loop expected").collect();
    assert_eq!(offsets, vec![0, 400_000_000, 700_000_000]);
    assert_eq!(plan.request(stage, 0).input_tokens, 600);
}

#[test]
fn azure_trace_csv_replays_its_timestamps() {
    let plan = plan_of(
        "dataset \"d\" { trace \"azure_small.csv\" }\nstage \"r\" { dataset \"d\"; arrival \"trace\" speedup=4.0 window=\"1s\"; requests 100 }",
    )
    .unwrap();
    let offsets: Vec<u64> = plan.stages[0]
        .offsets()
        .expect("open loop expected")
        .collect();
    assert_eq!(offsets, vec![0, 50_099_500, 105_352_500, 204_852_500]);
    let r = plan.request(&plan.stages[0], 2);
    assert_eq!((r.input_tokens, r.output_tokens), (879, 22));
}

#[test]
fn trace_arrival_needs_a_trace_dataset() {
    let err = plan_of(
        "dataset \"d\" { jsonl \"prompts.jsonl\" }\nstage \"r\" { dataset \"d\"; arrival \"trace\"; requests 3 }",
    )
    .unwrap_err();
    assert!(err.contains("needs a `trace` data set"), "{err}");
}

#[test]
fn rag_context_inflates_prompts_exactly() {
    let plan = plan_of(
        "dataset \"d\" { synthetic { input-tokens 100; output-tokens 8 }\n shared-prefix groups=3 tokens=64\n retrieved chunks=5 tokens=128 corpus=50 }\nstage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 12 }",
    )
    .unwrap();
    let stage = &plan.stages[0];
    let factory = plan.prompt_factory(&fixtures()).unwrap();
    let mut prefixes = std::collections::BTreeSet::new();
    for i in 0..12 {
        let r = plan.request(stage, i);
        assert_eq!(r.input_tokens, 64 + 100 + 5 * 128);
        let text = factory
            .prompt(stage.dataset, r.input_tokens, r.item)
            .as_text()
            .to_string();
        assert_eq!(factory.tokenizer().count(&text), r.input_tokens as usize);
        prefixes.insert(text.split(' ').take(64).collect::<Vec<_>>().join(" "));
    }
    assert!(
        prefixes.len() <= 3 && prefixes.len() >= 2,
        "{}",
        prefixes.len()
    );
}

#[test]
fn example_scenarios_run_against_the_simulator() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    for name in [
        "sharegpt",
        "jsonl-prompts",
        "trace-replay",
        "rag-context",
        "hooks",
        "multi-turn",
    ] {
        let dir = out.path().join(name);
        let status = crate::support::command()
            .args([
                "run",
                "-q",
                "--no-plots",
                "--requests-jsonl",
                "--untrusted",
                "judge",
            ])
            // These examples show data sets, with too few requests to decide their SLAs.
            .args(["--inconclusive", "pass"])
            .arg("--out")
            .arg(&dir)
            .arg(root.join(format!("scenarios/{name}.kdl")))
            .status()
            .unwrap();
        assert!(status.success(), "{name}: {status}");
        let rows = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
        let rows: Vec<serde_json::Value> = rows
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!rows.is_empty(), "{name}");
        assert!(rows.iter().all(|r| r["error"].is_null()), "{name}");
        if name == "trace-replay" {
            // The replay keeps the trace's gaps; the bound only catches gross errors (the
            // machine is shared), the plan test above checks the schedule exactly.
            let mut sent: Vec<(u64, u64)> = rows
                .iter()
                .filter(|r| r["stage"] == "replay")
                .map(|r| {
                    (
                        r["scheduled_ns"].as_u64().unwrap(),
                        r["sent_ns"].as_u64().unwrap(),
                    )
                })
                .collect();
            sent.sort();
            let planned: Vec<u64> = sent.iter().map(|s| s.0 / 1_000_000).collect();
            assert_eq!(planned, vec![0, 125, 300, 500, 650, 1050]);
            for (scheduled, actual) in sent {
                assert!(
                    actual.abs_diff(scheduled) < 250_000_000,
                    "{scheduled} {actual}"
                );
            }
        }
    }
}
