//! An agentic run's requests, as a server sees them and as the rows say, through the real
//! binary against a server written for the test that records every request's `traceparent`
//! and `x-request-id`: the sample trace forks two subagents, whose turns are numbered from 0 in
//! their own sessions like the root's and share the task's index, yet every request of the run
//! carries a trace id of its own. The rows' `depth` reaches `requests.parquet`, read back with a
//! real Parquet reader.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

use crate::support::raw_server::{After, Post, RawServer, ok_response};
use crate::support::{describe, run, scenario};

const TRACE: &str = "scenarios/data/agentic_tasks.jsonl";

/// (traceparent, x-request-id) of every generation request, in arrival order.
type Log = Arc<Mutex<Vec<(String, String)>>>;

fn recording(log: &Log) -> RawServer {
    let log = log.clone();
    RawServer::start(true, move |p: &mut Post<'_>| {
        let parent = p.header("traceparent").unwrap_or_default();
        let id = p.header("x-request-id").unwrap_or_default();
        log.lock().unwrap().push((parent, id));
        p.read_body();
        if p.write(&ok_response("done", 4)) {
            After::KeepAlive
        } else {
            After::Close
        }
    })
}

/// Every row of a Parquet file: (index, turn, depth, trace_id).
fn parquet_rows(path: &Path) -> Vec<(i64, i64, i64, String)> {
    let reader = SerializedFileReader::new(File::open(path).unwrap()).expect("a Parquet file");
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            let get = |name: &str| {
                row.get_column_iter()
                    .find(|(n, _)| n.as_str() == name)
                    .map(|(_, f)| f.clone())
                    .unwrap_or_else(|| panic!("no column {name}"))
            };
            let long = |name: &str| match get(name) {
                Field::Long(v) => v,
                other => panic!("{name}: {other:?}"),
            };
            let Field::Str(trace) = get("trace_id") else {
                panic!("trace_id is text");
            };
            (long("index"), long("turn"), long("depth"), trace)
        })
        .collect()
}

#[test]
fn every_request_of_an_agentic_run_carries_its_own_trace_id_and_its_depth() {
    let log: Log = Log::default();
    let server = recording(&log);
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join(TRACE);
    let dir = tempfile::tempdir().unwrap();
    // Two stages, three arrivals each: the forking task twice per stage (index 0 and 2).
    let text = format!(
        "scenario \"agent-ids\" {{ seed 3 }}\n\
         target \"{}\" {{ model \"m\"; timeout \"30s\" }}\n\
         dataset \"tasks\" {{ agentic \"{}\" max-tokens=8 }}\n\
         stage \"one\" {{ dataset \"tasks\"; arrival \"concurrency\" clients=3; requests 3 }}\n\
         stage \"two\" {{ dataset \"tasks\"; arrival \"concurrency\" clients=3; requests 3 }}\n\
         report {{ parquet #true }}\n",
        server.base_url,
        trace.display()
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert!(o.status.success(), "{}", describe(&o));

    // Tasks 0 (root 3 turns, two subagents of 2), 1 (4 turns), 0 again: 18 requests a stage.
    let seen = log.lock().unwrap().clone();
    assert_eq!(seen.len(), 36, "{seen:?}");
    let mut ids = BTreeSet::new();
    for (parent, id) in &seen {
        let parts: Vec<&str> = parent.split('-').collect();
        assert_eq!(parts.len(), 4, "a traceparent: {parent:?}");
        assert_eq!(parts[1], id, "x-request-id is the trace id");
        assert!(ids.insert(parts[1].to_string()), "trace id {id} sent twice");
    }
    let spans: BTreeSet<&str> = seen.iter().map(|(p, _)| &p[36..52]).collect();
    assert_eq!(spans.len(), seen.len(), "every request has its own span id");

    // The rows name the same ids, and the subagents' rows their depth, in both files.
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let row_ids: BTreeSet<String> = rows
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(row_ids, ids);
    let table = parquet_rows(&out.join("requests.parquet"));
    assert_eq!(table.len(), rows.len());
    let mut by_depth: BTreeMap<i64, usize> = BTreeMap::new();
    for (row, line) in table.iter().zip(&rows) {
        let depth = line["depth"].as_i64().unwrap_or(0);
        assert_eq!(row.0, line["index"].as_i64().unwrap());
        assert_eq!(row.1, line["turn"].as_i64().unwrap());
        assert_eq!(row.2, depth, "{line}");
        assert_eq!(row.3, line["trace_id"].as_str().unwrap());
        *by_depth.entry(depth).or_default() += 1;
    }
    // Per stage: 2 forking tasks × (3 root turns + 4 subagent turns) + 4 turns.
    assert_eq!(by_depth, BTreeMap::from([(0, 2 * 10), (1, 2 * 8)]));
}
