//! The ecosystem's formats, through the real binary against the simulator: the llm-d
//! Benchmark Report v0.2.1 (validated against its JSON Schema, kept in `schemas/llm-d/`) and
//! the per-request rows as Parquet (read back with a real Parquet reader), both written by a
//! run that asks for them and by `infermeter report --format` from a saved run.

use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

use crate::support::*;

/// A secret-shaped string in a stage name: every writer must mask it.
const SECRET: &str = "sk-proj-AbCdEf0123456789xyz";

fn scenario_text() -> String {
    format!(
        r#"
scenario "formats"
target "sim" {{ decode-base "1ms"; prefill-per-token "0ms"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 6; }} }}
stage "closed \"quoted\" <b>&amp; {SECRET}" {{ dataset "d"; arrival "concurrency" clients=2; requests 12; }}
stage "open" {{ dataset "d"; arrival "constant" rate=200; requests 10; }}
report {{ llm-d #true; parquet #true; }}
infra {{ gpu-model "H100 SXM"; gpu-count 8; replicas 2; }}
"#
    )
}

fn schema() -> jsonschema::Validator {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/llm-d/benchmark-report-v0.2.1.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

/// Every line of an llm-d report file, each validated against the schema.
fn llmd_reports(text: &str) -> Vec<serde_json::Value> {
    let validator = schema();
    text.lines()
        .map(|line| {
            let report: serde_json::Value = serde_json::from_str(line).expect("a JSON document");
            let errors: Vec<String> = validator
                .iter_errors(&report)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{errors:#?}\n{line}");
            report
        })
        .collect()
}

/// Every row of a Parquet file, by column name, and its row-group count.
fn parquet_rows(path: &Path) -> (Vec<Vec<(String, Field)>>, usize) {
    let reader = SerializedFileReader::new(File::open(path).unwrap()).expect("a Parquet file");
    let groups = reader.metadata().num_row_groups();
    let rows = reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            row.unwrap()
                .get_column_iter()
                .map(|(n, f)| (n.clone(), f.clone()))
                .collect()
        })
        .collect();
    (rows, groups)
}

fn cell<'a>(row: &'a [(String, Field)], name: &str) -> &'a Field {
    &row.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

fn run_formats() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", &scenario_text());
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    (dir, out)
}

#[test]
fn a_run_that_asks_writes_the_llmd_report_and_parquet_and_report_renders_them_again() {
    let (_dir, out) = run_formats();
    let results = results(&out);
    check_llmd(&out, &results);
    check_parquet(&out, &results);
}

/// A distributed run's merged result gets its llm-d report when `merge --llm-d` asks: one
/// valid document per stage, its counts the merged stage's (both shards' requests), the
/// secret-shaped stage name masked as everywhere else.
#[test]
fn merge_writes_the_merged_llmd_report_when_asked() {
    let sim = SimProcess::start(&["--decode-base", "1ms", "--prefill-per-token", "0ms"]);
    let dir = tempfile::tempdir().unwrap();
    let text = scenario_text().replace(
        r#"target "sim" { decode-base "1ms"; prefill-per-token "0ms"; }"#,
        &format!(r#"target "{}""#, sim.base_url),
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("shard-{i}")))
        .collect();
    for (i, out) in shards.iter().enumerate() {
        let o = run(&path, out, &["--shard", &format!("{i}/2")]);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    }
    let merged = dir.path().join("merged");
    let files: Vec<String> = shards
        .iter()
        .map(|d| d.join("results.json").display().to_string())
        .collect();
    let o = infermeter(&[
        "merge",
        &files[0],
        &files[1],
        "--out",
        merged.to_str().unwrap(),
        "--no-plots",
        "--llm-d",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let written = std::fs::read_to_string(merged.join("llm-d-report.jsonl")).unwrap();
    assert!(!written.contains(SECRET), "{written}");
    let reports = llmd_reports(&written);
    let stages = results(&merged)["stages"].as_array().unwrap().clone();
    assert_eq!(reports.len(), stages.len());
    assert_eq!(stages[0]["requests"]["sent"], 12, "both shards' requests");
    // Without the flag, no llm-d report.
    let plain = dir.path().join("plain");
    let o = infermeter(&[
        "merge",
        &files[0],
        &files[1],
        "--out",
        plain.to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(!plain.join("llm-d-report.jsonl").exists());
}

/// The run's llm-d reports: valid, one per stage, their figures the stage's; rendered again
/// the same from the saved results.
fn check_llmd(out: &Path, results: &serde_json::Value) {
    let stages = results["stages"].as_array().unwrap();

    let written = std::fs::read_to_string(out.join("llm-d-report.jsonl")).unwrap();
    assert!(!written.contains(SECRET), "{written}");
    let reports = llmd_reports(&written);
    assert_eq!(reports.len(), 2, "one report per stage");
    for (i, (report, stage)) in reports.iter().zip(stages).enumerate() {
        assert_eq!(report["version"], "0.2.1");
        // The engine the simulator said it is, on the GPUs the scenario declared.
        let engine = &report["scenario"]["stack"][0]["standardized"];
        assert_eq!(engine["kind"], "inference_engine", "{report}");
        assert_eq!(engine["tool"], "infermeter-sim");
        assert_eq!(engine["replicas"], 2);
        assert_eq!(engine["accelerator"]["model"], "H100 SXM");
        assert_eq!(engine["accelerator"]["count"], 8);
        let load = &report["scenario"]["load"];
        assert_eq!(load["metadata"]["cfg_id"], results["plan_hash"]);
        assert_eq!(load["standardized"]["tool"], "infermeter");
        assert_eq!(load["standardized"]["stage"], i);
        let agg = &report["results"]["request_performance"]["aggregate"];
        assert_eq!(agg["requests"]["total"], stage["requests"]["sent"]);
        assert_eq!(agg["requests"]["failures"], stage["requests"]["failed"]);
        assert_eq!(
            agg["latency"]["time_to_first_token"]["p99"],
            stage["latency"]["ttft_ms"]["p99"]
        );
        assert_eq!(agg["latency"]["time_to_first_token"]["units"], "ms");
        assert_eq!(
            agg["throughput"]["request_rate"]["mean"],
            stage["throughput"]["requests_per_s"]
        );
        let input = agg["requests"]["input_length"]["mean"].as_f64().unwrap();
        assert!(input >= 16.0, "{input}");
        assert_eq!(report["run"]["eid"], reports[0]["run"]["eid"]);
    }
    assert_ne!(reports[0]["run"]["uid"], reports[1]["run"]["uid"]);
    assert_eq!(
        reports[0]["scenario"]["load"]["standardized"]["concurrency"],
        2
    );
    assert_eq!(
        reports[1]["scenario"]["load"]["standardized"]["rate_qps"],
        200.0
    );

    // The saved run renders the same reports again.
    let again = infermeter(&[
        "report",
        out.join("results.json").to_str().unwrap(),
        "--format",
        "llm-d",
    ]);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    assert_eq!(text(&again).0, written);
}

/// The run's Parquet: one row per request, as requests.jsonl has them; converted the same
/// again from the saved run.
fn check_parquet(out: &Path, results: &serde_json::Value) {
    let jsonl = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 22);
    assert!(!jsonl.contains(SECRET), "requests.jsonl shows the secret");
    let (rows, groups) = parquet_rows(&out.join("requests.parquet"));
    assert_eq!(groups, 1);
    assert_eq!(rows.len(), lines.len());
    for (row, line) in rows.iter().zip(&lines) {
        let Field::Str(stage) = cell(row, "stage") else {
            panic!("stage is text");
        };
        assert!(!stage.contains(SECRET), "{stage}");
        assert_eq!(
            cell(row, "sent_ns"),
            &Field::Long(line["sent_ns"].as_i64().unwrap())
        );
        assert_eq!(
            cell(row, "scheduled_ns"),
            &Field::Long(line["scheduled_ns"].as_i64().unwrap())
        );
        assert_eq!(
            cell(row, "e2e_ms"),
            &Field::Double(line["e2e_ms"].as_f64().unwrap())
        );
        assert_eq!(
            cell(row, "output_tokens"),
            &Field::Long(line["output_tokens"].as_i64().unwrap())
        );
        assert_eq!(cell(row, "error"), &Field::Null);
        assert_eq!(cell(row, "status"), &Field::Long(200));
        assert_eq!(
            cell(row, "model"),
            &Field::Str(results["target"]["model"].as_str().unwrap().to_string())
        );
        // Six output tokens: five gaps between chunks.
        assert!(matches!(cell(row, "itl_mean_ms"), Field::Double(_)));
        assert!(matches!(cell(row, "itl_max_ms"), Field::Double(_)));
    }
    let open = rows
        .iter()
        .filter(|r| cell(r, "stage") == &Field::Str("open".into()))
        .count();
    assert_eq!(open, 10);

    // And `report --format parquet` converts the saved rows the same way.
    let copy = out.join("copy.parquet");
    let o = infermeter(&[
        "report",
        out.join("results.json").to_str().unwrap(),
        "--format",
        "parquet",
        "--out",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(parquet_rows(&copy).0, rows);
}

#[test]
fn parquet_needs_a_file_and_the_runs_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        r#"
target "sim" { decode-base "1ms"; prefill-per-token "0ms"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 4; }
"#,
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(!out.join("llm-d-report.jsonl").exists(), "not asked for");
    assert!(!out.join("requests.parquet").exists(), "not asked for");
    let results = out.join("results.json");
    let report = |extra: &[&str]| {
        let mut args = vec!["report", results.to_str().unwrap(), "--format", "parquet"];
        args.extend_from_slice(extra);
        infermeter(&args)
    };
    // Binary: not shown on the terminal.
    let o = report(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("--out"), "{}", describe(&o));
    // No requests.jsonl beside the results: nothing to convert.
    let o = report(&["--out", dir.path().join("r.parquet").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("requests.jsonl"), "{}", describe(&o));
    assert!(!dir.path().join("r.parquet").exists());
    // A broken row is named by its line, and no file is left behind.
    std::fs::write(out.join("requests.jsonl"), "{\"stage\": 1}\n").unwrap();
    let o = report(&["--out", dir.path().join("r.parquet").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("line 1"), "{}", describe(&o));
    assert!(!dir.path().join("r.parquet").exists());
}

#[test]
fn every_saved_results_version_renders_a_valid_llmd_report() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results");
    for name in [
        "baseline.json",
        "v2.json",
        "sim-profile.json",
        "sim-telemetry.json",
    ] {
        let o = infermeter(&[
            "report",
            data.join(name).to_str().unwrap(),
            "--format",
            "llm-d",
        ]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", describe(&o));
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(data.join(name)).unwrap()).unwrap();
        let reports = llmd_reports(&text(&o).0);
        assert_eq!(
            reports.len(),
            saved["stages"].as_array().unwrap().len(),
            "{name}"
        );
    }
}
